#!/bin/sh
# opencl_ceilings_test.sh: an OpenCL device gets a measured GEMM ceiling,
# from kcs's own tuned f32 GEMM (opencl/ceilings.c), said how in the
# ceilings' method; and where that kernel cannot run (here: its program
# fails to build) the GEMM ceiling is left out with the reason, while the
# other ceilings and the run itself still stand.
# usage: tests/opencl_ceilings_test.sh build/kcs
set -u
kcs=$(realpath "$1")
python=${KCS_PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; cat run.log; failures=$((failures + 1)); }

if ! "$kcs" devices --backend opencl 2>/dev/null | grep -q "^opencl:"; then
    echo "SKIP: no OpenCL device here"
    exit 0
fi

# ceiling FILE CHECK: runs a Python CHECK on the first device's ceilings, c.
ceiling() {
    "$python" -c "import json, sys
c = json.load(open(sys.argv[1]))['devices'][0]['ceilings']
sys.exit(0 if ($2) else 1)" "$1"
}

"$kcs" run --ceilings --backend opencl --device 0 --no-save --results measured.json sumsq/f64-n7 > run.log 2>&1 ||
    fail "a run with --ceilings failed (exit $?)"
grep -q "^ceilings opencl:0: .*, SGEMM [0-9.]* [kMGT]\?FLOP/s" run.log || fail "no SGEMM ceiling on the console"
ceiling measured.json "c.get('gemm_flops_per_s', 0) > 0" || fail "no gemm_flops_per_s in the results"
ceiling measured.json "\"GEMM: kcs's own f32 packed-128x128\" in c['method']" ||
    fail "the method does not say how the GEMM ceiling was measured"
[ $failures -eq 0 ] && echo "ok: the GEMM ceiling is measured with kcs's own kernel, and said how"
before=$failures

KCS_OPENCL_BUILD_OPTIONS="-DKCS_GEMM_TILE_K=not_a_number" "$kcs" run --ceilings --backend opencl --device 0 \
    --no-save --results broken.json sumsq/f64-n7 > run.log 2>&1 || fail "a GEMM that cannot build failed the run"
grep -q "^2 passed, 0 failed, 0 skipped" run.log || fail "the run did not go on"
ceiling broken.json "'gemm_flops_per_s' not in c and c.get('copy_bytes_per_s', 0) > 0 and c.get('fma_flops_per_s', 0) > 0" ||
    fail "a GEMM that cannot run must leave its ceiling out and the others in"
ceiling broken.json "'GEMM: not measured (0)' in c['method'] and 'CL_BUILD_PROGRAM_FAILURE' in c['method']" ||
    fail "the method does not say why the GEMM ceiling is missing"
[ $failures -eq "$before" ] && echo "ok: a GEMM that cannot run leaves its ceiling out, says why, and fails nothing"

[ $failures -eq 0 ] || exit 1
