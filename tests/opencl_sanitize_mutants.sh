#!/bin/sh
# opencl_sanitize_mutants.sh: the proof that `ninja opencl-sanitize` catches
# what it is there to catch. Each mutant (tests/opencl-mutants/, a real kernel
# with one mistake planted, built as build/mutants/kcs-NAME) runs one case
# through the same Oclgrind invocation as tests/opencl_sanitize.sh
# (tests/oclgrind_run.sh, in the same pass), which must fail with Oclgrind's
# report of the mistake; the unmutated kernels pass that case clean there:
#   sumsq-unrolled-past-the-end  reads past the end of a global buffer, beyond
#                                the harness's guard; under Oclgrind the result
#                                is still right, so only the report shows it
#   softmax-past-held-vectors    reads and writes past a local buffer
#   softmax-missing-barrier      a data race in local memory; on POCL it passes
#                                every case, as work-items of a group run in turn
#   softmax-private-past-the-end reads past a private array (as issue 18's
#                                gemm example, i < 8 made i <= 8); every output
#                                stays right, and only the unoptimised pass
#                                sees the access
#   reduce-tile-total-unwritten  the tile sort leaves the tile's total unwritten,
#                                which the statistics kernel reads: the
#                                uninitialised-value check, a process per row
# If Oclgrind stops reporting any of them, this fails.
#
#     tests/opencl_sanitize_mutants.sh build/mutants WORK_FOLDER
set -u
mutants=$1
work=$2/mutants
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The tag of a pass of tests/opencl_sanitize.sh: its cases are those tagged so.
pass_tag() {
    if [ "$1" = unoptimised ]; then echo sanitize-unoptimised; else echo sanitize; fi
}

# expect_caught PASS MUTANT CASE VARIANT KERNEL REPORT...: the mutant's run of
# kernel variant VARIANT in PASS (optimised or unoptimised) fails with each
# REPORT (the start of a line of Oclgrind's log) from the OpenCL kernel
# function KERNEL. CASE must carry that pass's tag, so that
# tests/opencl_sanitize.sh runs the real kernels on it and they pass it clean.
expect_caught() {
    pass=$1 mutant=$2 case=$3 variant=$4 kernel=$5 before=$failures
    shift 5
    tag=$(pass_tag "$pass")
    "$mutants/kcs-$mutant" list --tag "$tag" "$case" 2>&1 | awk '{ print $1 }' | grep -qx "$case" ||
        fail "$case is not tagged $tag: tests/opencl_sanitize.sh must show that the real kernels pass it clean"
    option=""
    [ "$pass" = unoptimised ] && option=--unoptimised
    # shellcheck disable=SC2086 # the option is a word or nothing
    if sh "$root/tests/oclgrind_run.sh" $option "$work/$mutant.log" "$mutants/kcs-$mutant" run --backend opencl \
        --kernel "$variant" --in-process --no-save --results "$work/$mutant.json" "$case" > "$work/$mutant.out" 2>&1
    then
        fail "$mutant on $case: Oclgrind reported nothing"
        cat "$work/$mutant.out"
        return
    fi
    grep -q "Kernel: $kernel\$" "$work/$mutant.log" || fail "$mutant on $case: no report from kernel $kernel"
    for report in "$@"; do
        grep -q "^$report" "$work/$mutant.log" || fail "$mutant on $case: no '$report' in Oclgrind's log"
    done
    [ $failures -eq "$before" ] && echo "ok: $mutant ($pass, $case): Oclgrind reports in $kernel: $*"
}

expect_caught optimised sumsq-unrolled-past-the-end sumsq/f64-n93 gpu-strided-tree kcs_sumsq_groups_f64 \
    "Invalid read of size 8 at global memory address"
expect_caught optimised softmax-past-held-vectors softmax/f32-long-rows group-registers \
    kcs_softmax_registers_local_f32 \
    "Invalid read of size 16 at local memory address" "Invalid write of size 16 at local memory address"
expect_caught optimised softmax-missing-barrier softmax/f32-cols33 group-registers \
    kcs_softmax_registers_f32_v4 \
    "Read-write data race at local memory address"
expect_caught unoptimised softmax-private-past-the-end softmax/f32-cols33 group-registers \
    kcs_softmax_registers_f32_v4 \
    "Invalid read of size 16 at private memory address"
expect_caught unoptimised reduce-tile-total-unwritten anneal/reduce-f32-small sorted-welford \
    kcs_reduce_welford_f32 \
    "Uninitialized value"

if [ $failures -ne 0 ]; then
    echo "opencl-sanitize mutants: $failures failed"
    exit 1
fi
echo "opencl-sanitize mutants: each planted mistake reported"
