#!/bin/sh
# report_test.sh: the report as a user sees it. Writes demo results of four
# devices (report/kcs_fixtures.py) with a planted regression against a
# baseline, checks that the comparison classifies it (exit status 3), then
# opens the pages in headless Chromium: they load, no image is broken, the
# key tables are there; the screenshot is kept under the build folder.
# Without Chromium it fails: there is no skip that passes.
# usage: tests/report_test.sh build/kcs   (the runner's folder holds the outputs)
set -u
python=${KCS_PYTHON:-/usr/bin/python3} # configure.py passes the Python it found with matplotlib
source=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "$(dirname "$1")" && pwd)/report-test
rm -rf "$out"
mkdir -p "$out"
$python "$source/report/kcs_fixtures.py" "$out" > /dev/null || { echo "FAIL: fixtures"; exit 1; }
$python "$source/report/kcs_report.py" "$out/demo-new.json" --baseline "$out/demo-baseline.json" \
    --cases "$source/cases" --output "$out/html" > "$out/report.log" 2>&1
status=$?
if [ $status -ne 3 ]; then
    cat "$out/report.log"
    echo "FAIL: the planted regression gave exit status $status, not 3"
    exit 1
fi
grep -qi "regressed" "$out/report.log" || { cat "$out/report.log"; echo "FAIL: no regression reported"; exit 1; }
grep -qi "slower" "$out/report.log" || { cat "$out/report.log"; echo "FAIL: no slowdown reported"; exit 1; }
echo "ok: the planted regression and slowdown are classified (exit 3)"
# No Chromium fails here too (browser_check.py says so): tools/setup.sh
# installs it, and a check that could not run has not passed.
$python "$source/report/browser_check.py" "$out/html/index.html" "$out/screenshot.png" ||
    { echo "FAIL: browser check"; exit 1; }
echo "ok: screenshot $out/screenshot.png"
