#!/bin/sh
# flush_to_zero_test.sh: an OpenCL device says whether it may flush f32
# subnormals (CL_DEVICE_SINGLE_FP_CONFIG without CL_FP_DENORM, or
# -cl-denorms-are-zero in KCS_OPENCL_BUILD_OPTIONS), the results file records
# it, and gemm's subnormal cases are checked with the bound that says
# (docs/gemm.md, "Flush to zero"): they pass on the device either way.
# The C side (a flushing gemm passes where the device flushes and fails
# where it keeps subnormals) is tests/saboteur_gemm_test.c.
# usage: tests/flush_to_zero_test.sh build/kcs
set -u
kcs=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
devices=$("$kcs" devices --backend opencl 2>/dev/null | grep '^opencl:[0-9]')
if [ -z "$devices" ]; then
    echo "SKIP: no OpenCL device here"
    exit 0
fi
echo "$devices" | grep -v -q "f32_subnormals=" &&
    { echo "$devices"; echo "FAIL: an OpenCL device does not say whether it flushes f32 subnormals"; exit 1; }
flushing=$(KCS_OPENCL_BUILD_OPTIONS=-cl-denorms-are-zero "$kcs" devices --backend opencl 2>/dev/null |
           grep '^opencl:[0-9]')
echo "$flushing" | grep -v -q "f32_subnormals=may flush" &&
    { echo "$flushing"; echo "FAIL: -cl-denorms-are-zero did not make a device say it may flush"; exit 1; }
cases="gemm/f32-subnormal-products gemm/f32-products-near-underflow gemm/f32-subnormal-a"
for options in "" "-cl-denorms-are-zero"; do
    KCS_OPENCL_BUILD_OPTIONS=$options "$kcs" run --backend opencl --no-save --results results.json $cases \
        > run.log 2>&1 ||
        { cat run.log; echo "FAIL: gemm's subnormal cases on OpenCL with build options '$options'"; exit 1; }
    grep -q "f32_subnormals=" results.json ||
        { echo "FAIL: the results file does not record whether the device flushes"; exit 1; }
    echo "ok: gemm's subnormal cases pass on OpenCL with build options '$options'"
done
echo "flush to zero on OpenCL: all passed"
