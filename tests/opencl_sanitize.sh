#!/bin/sh
# opencl_sanitize.sh: every OpenCL kernel of kcs on small cases under Oclgrind
# (tests/oclgrind_run.sh): `ninja opencl-sanitize`, part of `ninja check`.
#   1. The kernels as devices build them, under the memory-access, data-race
#      and API checks, on the cases of the first list below, in one run.
#   2. The kernels built unoptimised, under those checks and the
#      uninitialised-value check, on the second list: one small case for each
#      op and dtype, each kernel row of it in a run of its own, so that no
#      buffer of the run is created after another was released (Oclgrind's
#      shadow of a recycled buffer is wrong: tests/oclgrind_run.sh).
# Fails when Oclgrind reports anything, when a case fails (the simulator is a
# conforming OpenCL 1.2 device, so a wrong result is a finding too), or when
# some OpenCL kernel row passed no case in one of the passes: a new kernel or
# variant needs a case in the lists below (names as the runner takes them: one
# without a wildcard is a prefix, so softmax/f32-cols1 is cols1 and cols1000).
#
#     tests/opencl_sanitize.sh build/kcs WORK_FOLDER
#
# Oclgrind interprets every work-item, thousands of times slower than a CPU
# device, so the cases are the small ones that still take each kernel through
# its paths: ragged tails, several work-groups, rows held partly in local
# memory, the online merge, attention masks. An access outside a buffer is
# reported whatever it reads or writes: the runner's own checks see it only
# when it changes a result or the 256-byte guard after each of the case's
# buffers.
set -u
runner=$1
work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
python=${KCS_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
failures=0

# Pass 1. Every kernel row once at least (each row runs every case of its op that it supports):
#   sumsq      a few elements; 93 and 4096 (ragged and whole groups and chunks, f16 and bf16 too); NaN and inf
#   elementwise 93 elements (a vector tail; in f16 and bf16 too); special values
#   gemm       empty sizes; tiles cut ragged in every transpose; alpha = 0 and beta = 0 with NaN;
#              f16 and bf16 into a C_out of their type and of f32 (each build of gemm.cl)
#   softmax    1 to 1000 columns (work-items of the register and online kernels, a
#              partial vector), NaN rows, attention masks (empty pieces in the
#              merge), rows of 20001 held partly in local memory; f16 and
#              bf16 on ragged (33) and whole-vector (64) rows
#   anneal     assign, reduce, update and energy on their small cases (assign-f32-small: d = 8,
#              the shortlist's vector loads)
cases="sumsq/f32-n7 sumsq/f64-n93 sumsq/f64-n4096 sumsq/f64-nan sumsq/f32-inf sumsq/f16-n93 sumsq/bf16-n4096
elementwise/add-f32-n93 elementwise/add-f64-special elementwise/mul-f32-n93 elementwise/mul-f64-n93
elementwise/relu-f32-n93 elementwise/relu-f64-n93 elementwise/sigmoid-f32-n93 elementwise/sigmoid-f64-n93
elementwise/add-f32-special elementwise/sigmoid-f64-special
elementwise/add-f16-n93 elementwise/mul-bf16-n93 elementwise/relu-f16-special elementwise/sigmoid-bf16-n93
elementwise/add-bf16-ties elementwise/mul-f16-n93 elementwise/relu-bf16-n93 elementwise/sigmoid-f16-n93
gemm/f32-m0 gemm/f32-k0 gemm/f32-1x1x1 gemm/f32-nn-37x29x19 gemm/f64-nt-37x29x19
gemm/f32-tn-37x29x19 gemm/f64-tt-37x29x19 gemm/f32-alpha0-nan-a gemm/f32-beta0-nan-c
gemm/f16-nt-37x29x19 gemm/f16-tt-37x29x19-f32-out gemm/bf16-tn-37x29x19 gemm/bf16-beta0-nan-c-f32-out
gemm/f16-k0 gemm/f16-alpha0-nan-a
softmax/f32-cols1 softmax/f32-cols33 softmax/f64-cols33 softmax/f32-cols1000 softmax/f64-cols1000
softmax/f32-nan softmax/f64-masked softmax/f32-causal-64 softmax/f64-one-entry-64
softmax/f32-masked-start-1000 softmax/f32-long-rows softmax/f16-cols33 softmax/bf16-cols33
softmax/f16-causal-64 softmax/bf16-causal-64
anneal/assign-f32-d1 anneal/assign-f16-d13 anneal/assign-f32-small anneal/reduce-f32-small anneal/reduce-f32-empty-anchors
anneal/reduce-f16-extremes anneal/update-f32-basic anneal/energy-f32-n0 anneal/energy-f32-nan"

# Pass 2, unoptimised: one small case for each op and dtype (every variant of it runs, each in a
# process of its own).
unoptimised_cases="sumsq/f32-n7 sumsq/f64-n7 sumsq/f16-n7 sumsq/bf16-n7 elementwise/add-f32-n7 elementwise/add-f64-n7
elementwise/mul-f32-n7 elementwise/mul-f64-n7 elementwise/relu-f32-n7 elementwise/relu-f64-n7
elementwise/sigmoid-f32-n7 elementwise/sigmoid-f64-n7 elementwise/add-f16-n7 elementwise/add-bf16-n7
elementwise/mul-f16-n7 elementwise/mul-bf16-n7 elementwise/relu-f16-n7 elementwise/relu-bf16-n7
elementwise/sigmoid-f16-n7 elementwise/sigmoid-bf16-n7 gemm/f32-1x1x1 gemm/f64-1x1x1 gemm/f16-k0
gemm/bf16-nn-37x29x19
softmax/f32-cols33 softmax/f64-cols33 softmax/f16-cols33 softmax/bf16-cols33
anneal/assign-f32-d1 anneal/assign-f16-ramp-on-anchors
anneal/reduce-f32-small anneal/reduce-f16-extremes anneal/update-f32-basic anneal/energy-f32-nan"

# The test-only op's kernel (tests/cases) too, in both passes.
test_op_cases="scale/scale-f32-n93 scale/scale-f64-n93"

# check PASS NAME CASE_FOLDER CASE...: the cases in one run of PASS (optimised
# or unoptimised) under Oclgrind; its results go to WORK/PASS/NAME.json.
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
    op_dtype=$("$runner" list --cases "$folder" "$case" | awk 'NR == 1 { print $2, $3 }')
    rows=$(awk -v op_dtype="$op_dtype" '$1 == "kernel" && $2 " " $3 == op_dtype { sub(":", "", $4); print $4 }' \
        "$work/devices.log")
    [ -n "$rows" ] || { echo "FAIL: unoptimised, $case: no OpenCL kernel row of $op_dtype"; failures=$((failures + 1)); }
    for row in $rows; do
        check unoptimised "$(echo "$case" | tr / -)-$row" "$folder" "$case" --kernel "$row"
    done
}

rm -rf "$work/optimised" "$work/unoptimised" # results of an earlier run must not count
mkdir -p "$work/optimised" "$work/unoptimised"
oclgrind "$runner" devices --backend opencl > "$work/devices.log" 2>&1
# shellcheck disable=SC2086 # the case lists are words
check optimised cases "$root/cases" $cases
# shellcheck disable=SC2086
check optimised test-op "$root/tests/cases" $test_op_cases
for case in $unoptimised_cases; do
    check_each_row "$root/cases" "$case"
done
for case in $test_op_cases; do
    check_each_row "$root/tests/cases" "$case"
done

# Every kernel row the OpenCL backend has must have passed a case in each pass.
for pass in optimised unoptimised; do
    "$python" - "$work/devices.log" "$pass" "$work/$pass"/*.json <<'PY' ||
import json
import re
import sys

rows = set(re.findall(r"^\s+kernel (\S+) (\S+) ([^:\s]+):", open(sys.argv[1]).read(), re.M))
ran = set()
for path in sys.argv[3:]:
    for result in json.load(open(path))["results"]:
        if result["backend"] == "opencl" and result["status"] == "pass":
            ran.add((result["op"], result["dtype"], result["kernel"]))
if not rows:
    sys.exit("no OpenCL kernel rows listed by kcs devices under Oclgrind")
missing = sorted(rows - ran)
for op, dtype, kernel in missing:
    print(f"FAIL: OpenCL kernel {op} {dtype} {kernel} passed no case under Oclgrind, {sys.argv[2]}: "
          f"add one to that pass's list in tests/opencl_sanitize.sh")
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
