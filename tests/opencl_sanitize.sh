#!/bin/sh
# opencl_sanitize.sh: every OpenCL kernel of kcs on small cases under Oclgrind
# (tests/oclgrind_run.sh): `ninja opencl-sanitize`, part of `ninja check`.
#   1. The kernels as devices build them, under the memory-access, data-race
#      and API checks, on the cases tagged `sanitize`, each case folder's in
#      one run.
#   2. The kernels built unoptimised, under those checks and the
#      uninitialised-value check, on the cases tagged `sanitize-unoptimised`:
#      one small case for each op and dtype, each kernel row of it in a run of
#      its own, so that no buffer of the run is created after another was
#      released (Oclgrind's shadow of a recycled buffer is wrong:
#      tests/oclgrind_run.sh).
# The cases come from the case files of cases/ and tests/cases/ (the
# test-only ops'), by their tags (docs/case-format.md), so an op's own case
# file says which of its cases the simulator runs: a new op brings its own,
# and this script names none. Fails when Oclgrind reports anything, when a
# case fails (the simulator is a conforming OpenCL 1.2 device, so a wrong
# result is a finding too), or when some OpenCL kernel row passed no case in
# one of the passes: a new kernel or variant needs a case of its op and dtype
# with that pass's tag.
#
#     tests/opencl_sanitize.sh build/kcs WORK_FOLDER
#
# Oclgrind interprets every work-item, thousands of times slower than a CPU
# device, so the tagged cases are the small ones that still take each kernel
# through its paths: ragged tails, several work-groups, long softmax rows,
# the online merge, attention masks, empty sizes, NaN and inf, f16 and bf16
# into outputs of their type and of f32 (each build of a program). An access outside a buffer is reported whatever it reads or
# writes: the runner's own checks see it only when it changes a result or the
# 256-byte guard after each of the case's buffers.
set -u
runner=$1
work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
python=${KCS_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
failures=0

# The folders of cases: the suite's and the test-only ops' (tests/cases).
folders="$root/cases $root/tests/cases"

# check PASS NAME CASE_FOLDER ARGUMENT...: one run of PASS (optimised or
# unoptimised) under Oclgrind, of the folder's cases that the runner's
# ARGUMENTs select (--tag, case names, --kernel); its results go to
# WORK/PASS/NAME.json.
check() {
    pass=$1 name=$2 folder=$3
    shift 3
    option=""
    [ "$pass" = unoptimised ] && option=--unoptimised
    # shellcheck disable=SC2086 # the option is a word or nothing
    sh "$root/tests/oclgrind_run.sh" $option "$work/$pass/$name.log" "$runner" run --cases "$folder" \
        --backend opencl --in-process --no-save --results "$work/$pass/$name.json" "$@" \
        > "$work/$pass/$name.out" 2>&1 ||
        { cat "$work/$pass/$name.out"; echo "FAIL: $pass, $*: see above"; failures=$((failures + 1)); }
}

# check_each_row CASE_FOLDER CASE: the case in the unoptimised pass, each OpenCL kernel row of
# its op and dtype in a run of its own. In one run the rows share the backend's scratch buffers,
# which grow (a released buffer, a new one) when a later row needs more; Oclgrind 21.10 then
# keeps the smaller buffer's record of what was written and reports, wrongly, values the later
# row wrote past it (tests/oclgrind_run.sh). A run of its own also starts each row's scratch as
# never written, so a row that reads what only an earlier row wrote is reported.
check_each_row() {
    folder=$1 case=$2
    op_dtype=$("$runner" list --cases "$folder" --tag sanitize-unoptimised "$case" | awk 'NR == 1 { print $2, $3 }')
    rows=$(awk -v op_dtype="$op_dtype" '$1 == "kernel" && $2 " " $3 == op_dtype { sub(":", "", $4); print $4 }' \
        "$work/devices.log")
    [ -n "$rows" ] ||
        { echo "FAIL: unoptimised, $case: no OpenCL kernel row of $op_dtype"; failures=$((failures + 1)); }
    for row in $rows; do
        check unoptimised "$(echo "$case" | tr / -)-$row" "$folder" --tag sanitize-unoptimised "$case" --kernel "$row"
    done
}

rm -rf "$work/optimised" "$work/unoptimised" # results of an earlier run must not count
mkdir -p "$work/optimised" "$work/unoptimised"
oclgrind "$runner" devices --backend opencl > "$work/devices.log" 2>&1
for folder in $folders; do
    name=$(echo "${folder#"$root"/}" | tr / -) # cases, tests-cases
    # The folder's cases of each pass, by their tags (names in the first column).
    for tag in sanitize sanitize-unoptimised; do
        "$runner" list --cases "$folder" --tag "$tag" > "$work/$name.$tag" 2>&1 ||
            { cat "$work/$name.$tag"; echo "FAIL: kcs list --cases $folder --tag $tag"; failures=$((failures + 1)); }
    done
    [ -s "$work/$name.sanitize" ] && check optimised "$name" "$folder" --tag sanitize
    for case in $(awk '{ print $1 }' "$work/$name.sanitize-unoptimised"); do
        check_each_row "$folder" "$case"
    done
done

# Every kernel row the OpenCL backend has must have passed a case in each pass.
for pass in optimised:sanitize unoptimised:sanitize-unoptimised; do
    "$python" - "$work/devices.log" "${pass%:*}" "${pass#*:}" "$work/${pass%:*}"/*.json <<'PY' ||
import json
import re
import sys

rows = set(re.findall(r"^\s+kernel (\S+) (\S+) ([^:\s]+):", open(sys.argv[1]).read(), re.M))
ran = set()
for path in sys.argv[4:]:
    for result in json.load(open(path))["results"]:
        if result["backend"] == "opencl" and result["status"] == "pass":
            ran.add((result["op"], result["dtype"], result["kernel"]))
if not rows:
    sys.exit("no OpenCL kernel rows listed by kcs devices under Oclgrind")
missing = sorted(rows - ran)
for op, dtype, kernel in missing:
    print(f"FAIL: OpenCL kernel {op} {dtype} {kernel} passed no case under Oclgrind, {sys.argv[2]}: "
          f"if no case of {op} {dtype} tagged {sys.argv[3]} reaches it, tag one in its case file")
print(f"{len(rows) - len(missing)} of {len(rows)} OpenCL kernel rows passed under Oclgrind, {sys.argv[2]}")
sys.exit(1 if missing else 0)
PY
        failures=$((failures + 1))
done

if [ $failures -ne 0 ]; then
    echo "opencl-sanitize: $failures failed"
    exit 1
fi
tail -1 "$work/optimised/cases.out"
echo "opencl-sanitize: every OpenCL kernel ran its cases under Oclgrind, nothing reported"
