#!/bin/sh
# report_test.sh: the report as a user sees it. Writes demo results of four
# devices (report/kcs_fixtures.py) and checks the comparison's exit status and
# one-line verdict as a CI gate reads them: a planted failure and slowdown
# against the baseline is a correctness regression (3); the baseline's build
# rerun on another machine is no regression (0); the rerun with one 20 ms
# kernel 10% slower is speed only (4); a malformed results file is bad input
# (2) with a message naming it. Then it opens the pages in headless Chromium
# in a 1280 px window: they load, no image is broken, no table is wider than
# the window, the key tables are there; the comparison's pages and two whole
# H100 suite runs overlaid (fixtures) must draw the rooflines, the peers table
# and the overlay. Last, real runner output: a small `kcs run --benchmark` of
# the perf cases that are not large, on the reference and POCL (the reference
# alone where this machine has no OpenCL device), must give a report that draws
# a roofline of each device and the peers table, whatever of the results
# schema's optional fields this runner writes. Then the op pages' case fields:
# `kcs list --json` lists test_kcs_report.py's case file as that test's
# stand-in says, refuses a block with a key given twice, and the report woven
# with this runner shows its facts and its reason. The screenshots are kept under
# the build folder. Without Chromium it fails: there is no skip that passes.
# usage: tests/report_test.sh build/kcs   (the runner's folder holds the outputs)
set -u
python=${KCS_PYTHON:-/usr/bin/python3} # configure.py passes the Python it found with matplotlib
source=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "$(dirname "$1")" && pwd)/report-test
runner=$(realpath "$1") # lists the case files for the op pages (kcs list --json)
rm -rf "$out"
mkdir -p "$out"
$python "$source/report/kcs_fixtures.py" "$out" > /dev/null || { echo "FAIL: fixtures"; exit 1; }

# compare NAME WANTED VERDICT: compares demo-NAME.json with the baseline and
# checks the exit status and the verdict line; the pages go to $out/html-NAME.
compare() {
    $python "$source/report/kcs_report.py" "$out/demo-$1.json" --baseline "$out/demo-baseline.json" \
        --cases "$source/cases" --kcs "$runner" --output "$out/html-$1" > "$out/$1.log" 2>&1
    status=$?
    if [ $status -ne "$2" ]; then
        cat "$out/$1.log"
        echo "FAIL: demo-$1.json against the baseline gave exit status $status, not $2"
        exit 1
    fi
    grep -q "^verdict: $3" "$out/$1.log" || { cat "$out/$1.log"; echo "FAIL: demo-$1.json: no verdict '$3'"; exit 1; }
    echo "ok: demo-$1.json: $(grep '^verdict:' "$out/$1.log")"
}
compare new 3 "REGRESSED"
grep -q "^  REGRESSED: sumsq/f64-n93" "$out/new.log" || { cat "$out/new.log"; echo "FAIL: regression not named"; exit 1; }
grep -q "^  SLOWER: sumsq/f64-n1000003" "$out/new.log" || { cat "$out/new.log"; echo "FAIL: slowdown not named"; exit 1; }
grep -q "^  EXPECTED: sumsq/f32-n4096" "$out/new.log" || { cat "$out/new.log"; echo "FAIL: expected failure not named"; exit 1; }
grep -q "^  ONLY IN THE NEW RESULTS: case sumsq/f64-n4097" "$out/new.log" ||
    { cat "$out/new.log"; echo "FAIL: a case on one side only is not named"; exit 1; }
grep -q "^  NOW SKIPPED: sumsq/f64-n100000000" "$out/new.log" ||
    { cat "$out/new.log"; echo "FAIL: a pass that became a skip is not named"; exit 1; }
compare rerun 0 "no regression"
compare slower 4 "SLOWER"
grep -q "^  SLOWER: sumsq/f64-n100000000 \[opencl" "$out/slower.log" ||
    { cat "$out/slower.log"; echo "FAIL: the 10% slowdown is not named"; exit 1; }
sed 's/"status": "pass"/"status": "passed"/' "$out/demo-rerun.json" > "$out/demo-bad.json"
$python "$source/report/kcs_report.py" "$out/demo-bad.json" --output "$out/html-bad" > "$out/bad.log" 2>&1
status=$?
if [ $status -ne 2 ] || ! grep -q "demo-bad.json: results\[0\] (case 'sumsq/f64-n0' on reference:0): status: 'passed'" "$out/bad.log"; then
    cat "$out/bad.log"
    echo "FAIL: a malformed results file gave exit status $status (not 2) or no message naming the file and the result"
    exit 1
fi
echo "ok: a malformed results file: exit 2, $(head -1 "$out/bad.log")"

# No Chromium fails here too (browser_check.py says so): tools/setup.sh
# installs it, and a check that could not run has not passed.
$python "$source/report/browser_check.py" "$out/html-new/index.html" "$out/screenshot.png" \
    --require roofline,peers,overlay || { echo "FAIL: browser check"; exit 1; }
echo "ok: screenshot $out/screenshot.png"

# Two runs of a whole suite on an H100 machine, overlaid: the index stays under
# 1 MB (the embedded PNGs of old made it 1.6 to 2.7 MB).
$python "$source/report/kcs_report.py" "$out/perf-a.json" "$out/perf-b.json" --cases "$source/cases" \
    --kcs "$runner" --output "$out/html-perf" > "$out/perf.log" 2>&1 || { cat "$out/perf.log"; echo "FAIL: the perf report"; exit 1; }
size=$(wc -c < "$out/html-perf/index.html")
[ "$size" -lt 1000000 ] || { echo "FAIL: index.html of two suite runs is $size bytes, not under 1 MB"; exit 1; }
$python "$source/report/browser_check.py" "$out/html-perf/index.html" "$out/screenshot-perf.png" \
    --require roofline,peers,overlay || { echo "FAIL: browser check of two suite runs overlaid"; exit 1; }
echo "ok: two suite runs overlaid, index.html $size bytes, screenshot $out/screenshot-perf.png"

# Real runner output: the perf cases that are not large, timed briefly.
backends=reference
if "$1" devices --backend opencl 2>/dev/null | grep -q '^opencl:'; then
    backends=reference,opencl
else
    echo "note: no OpenCL device here: real runner output from the reference alone"
fi
"$1" run --benchmark --backend "$backends" --min-time 0.02 --min-repeats 3 --no-save --quiet \
    --results "$out/real.json" 'anneal/update-f32-1024x128' 'anneal/energy-f32-n1000000' 'gemm/f32-512' \
    > "$out/real-run.log" 2>&1 || { cat "$out/real-run.log"; echo "FAIL: kcs run --benchmark"; exit 1; }
$python "$source/report/kcs_report.py" "$out/real.json" --kcs "$runner" --output "$out/html-real" > "$out/real.log" 2>&1 ||
    { cat "$out/real.log"; echo "FAIL: the report of real runner output"; exit 1; }
rooflines=$(grep -o '<svg class="roofline"' "$out/html-real/index.html" | wc -l)
wanted=$(echo "$backends" | tr ',' '\n' | wc -l)
[ "$rooflines" -eq "$wanted" ] || { echo "FAIL: $rooflines rooflines for the $wanted devices of $backends"; exit 1; }
$python "$source/report/browser_check.py" "$out/html-real/index.html" "$out/screenshot-real.png" \
    --require roofline,peers || { echo "FAIL: browser check of real runner output"; exit 1; }
echo "ok: real runner output ($backends): $rooflines rooflines, screenshot $out/screenshot-real.png"

# The op pages' case fields are the runner's (kcs list --json), not a second
# parser's: the runner lists report/test_kcs_report.py's case file as that
# test's stand-in says (seeds and paths aside), with its cases at the fences'
# lines, and refuses a block with a key given twice; the report woven with
# this runner shows the runner's facts and, for that block, its reason.
mkdir -p "$out/listed/cases"
$python - "$source/report" "$out/listed/cases" "$1" <<'PY' || { echo "FAIL: kcs list --json"; exit 1; }
import json, os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from test_kcs_report import CASE_FIELDS, CASE_FILE, fence_lines
cases, kcs = sys.argv[2], sys.argv[3]
twice = "\n```kcs-case\ncase: f64-twice\nop: sumsq\ndtype: f64\nsizes: n=5\nsizes: n=6\ninput x: normal\nexpect: golden\n```\n"
with open(os.path.join(cases, "sumsq.md"), "w", encoding="utf-8") as handle:
    handle.write(CASE_FILE + twice)
done = subprocess.run([kcs, "list", "--json", "--cases", cases], capture_output=True, text=True)
assert done.returncode == 1, (done.returncode, done.stderr)  # a problem in a case file, as kcs list says
listing = json.loads(done.stdout)
assert listing["schema"] == "kcs-cases" and listing["version"] == 1, listing
fields = [{key: value for key, value in case.items() if key not in ("file", "line")} for case in listing["cases"]]
for case in fields:
    for given in case["inputs"]:
        assert given.pop("seed").isdigit(), given
assert fields == CASE_FIELDS, (fields, CASE_FIELDS)
assert [case["line"] for case in listing["cases"]] == fence_lines(CASE_FILE), listing["cases"]
line = len(CASE_FILE.splitlines()) + 7  # the second sizes line
problems = [(p["line"], p["case"], p["message"]) for p in listing["problems"]]
assert problems == [(line, "sumsq/f64-twice", "key 'sizes' given twice")], problems
PY
$python "$source/report/kcs_report.py" "$out/demo-new.json" --cases "$out/listed/cases" --kcs "$1" \
    --output "$out/html-listed" > "$out/listed.log" 2>&1 || { cat "$out/listed.log"; echo "FAIL: the report woven by kcs list"; exit 1; }
grep -q "WARNING: .*sumsq.md:[0-9]*: key 'sizes' given twice" "$out/listed.log" ||
    { cat "$out/listed.log"; echo "FAIL: the report did not warn of the refused block"; exit 1; }
grep -q '<span class="facts">f64 · n=93 · x: uniform lo=-1 hi=1 · expect golden</span>' "$out/html-listed/sumsq.html" ||
    { echo "FAIL: the op page does not show the runner's facts of sumsq/f64-n93"; exit 1; }
grep -q "not read as a case: line [0-9]*: key &#39;sizes&#39; given twice" "$out/html-listed/sumsq.html" ||
    { echo "FAIL: the op page does not say why the runner refused a block"; exit 1; }
echo "ok: case fields from kcs list --json, a refused block named on its op page"
