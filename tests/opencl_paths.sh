#!/bin/sh
# opencl_paths.sh: every OpenCL kernel row, on every case but the large,
# again under what the default run on this machine never reaches
# (docs/runner.md, "Compilation paths" and "Launch plans"):
#   pocl-loops     POCL_WORK_GROUP_METHOD=loops: POCL's other way of running
#                  a work-group's work-items, compiled anew (POCL devices);
#   pocl-avx2      POCL_KERNELLIB_NAME=avx2, where the CPU has AVX-512 and
#                  POCL's default is its avx512 kernel library: the library
#                  most CPUs without AVX-512 take;
#   gpu-plans      KCS_OPENCL_PLAN_AS: the launch plans of a 132-unit GPU with
#                  48 KiB of local memory and 256 work-items a group (an
#                  H100 under NVIDIA's OpenCL), so that a 2-core CPU runs
#                  the branches only a large device takes.
# Each must pass, with expectations/known-bugs.txt as `ninja check` uses it: a
# canary expected to fail on POCL's default path passes on the others, since
# their driver version names the setting. Then the proof that the plans
# matter: a mutant of the one-launch 16-bit sum of squares broken only beyond
# 768 work-groups (tests/opencl-mutants/sumsq-one-launch-sign-beyond-768.mutant)
# must fail its 3 x 10^6-element cases under gpu-plans; the default plans' outcome
# is printed (on a 2-core POCL they pass it: the blind spot this closes).
#
#     tests/opencl_paths.sh build/kcs build/mutants
set -u
runner=$1
mutants=$2
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
gpu_plans="compute_units=132 type=gpu local_memory=49152 max_work_group=256"

"$runner" devices --backend opencl > "$work/devices" 2>&1
if ! grep -q "^opencl:" "$work/devices"; then
    cat "$work/devices"
    echo "FAIL: no OpenCL device: nothing to run under other paths (tools/setup.sh installs POCL)"
    exit 1
fi
pocl=0
grep -q "^opencl:.*\[Portable Computing Language\]" "$work/devices" && pocl=1

# run_path NAME VARIABLE=VALUE: every OpenCL row, every case but the large, in that environment
run_path() {
    name=$1 setting=$2
    start=$(date +%s)
    env "$setting" "$runner" run --backend opencl --skip-large --no-save --quiet \
        --expectations "$root/expectations/known-bugs.txt" --results "$work/$name.json" > "$work/$name.log" 2>&1
    status=$?
    summary=$(tail -n 1 "$work/$name.log")
    echo "$name ($setting): $summary, $(($(date +%s) - start)) s"
    if [ $status -ne 0 ]; then
        grep -E "^(FAIL|ERROR|XPASS)|^kcs:" "$work/$name.log" | head -n 20
        fail "$name: kcs run exited $status"
    fi
    case "$summary" in
    "0 passed"*) fail "$name: nothing passed: nothing was checked" ;;
    *" passed, "*) ;;
    *) fail "$name: no summary line" ;;
    esac
}

if [ $pocl -eq 1 ]; then
    run_path pocl-loops POCL_WORK_GROUP_METHOD=loops
    if grep -qw avx512f /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo; then
        run_path pocl-avx2 POCL_KERNELLIB_NAME=avx2
    else
        echo "pocl-avx2: not run: this CPU has no AVX-512, so POCL's default library is already one without it"
    fi
else
    echo "pocl-loops, pocl-avx2: not run: no POCL device here"
fi
run_path gpu-plans "KCS_OPENCL_PLAN_AS=$gpu_plans"

mutant="$mutants/kcs-sumsq-one-launch-sign-beyond-768"
cases="sumsq/f16-n3000017 sumsq/bf16-n3000017"
[ -x "$mutant" ] || fail "no $mutant (configure.py builds one runner per tests/opencl-mutants/*.mutant)"
# shellcheck disable=SC2086  # case names are single words
if [ -x "$mutant" ]; then
    KCS_OPENCL_PLAN_AS=$gpu_plans "$mutant" run --backend opencl --kernel gpu-strided-tree --no-save \
        --results "$work/mutant.json" $cases > "$work/mutant.log" 2>&1
    # every result of the two cases fails, on every OpenCL device, and there is one at least per case
    echo "sumsq one-launch mutant under gpu-plans: $(grep -c "^FAIL" "$work/mutant.log") results failed," \
        "$(grep -c "^PASS" "$work/mutant.log") passed"
    for case in $cases; do
        grep -q "^FAIL  $case " "$work/mutant.log" && ! grep -q "^PASS  $case " "$work/mutant.log" ||
            { cat "$work/mutant.log"; fail "the mutant broken beyond 768 work-groups passed $case under gpu-plans"; }
    done
    "$mutant" run --backend opencl --kernel gpu-strided-tree --no-save --results "$work/mutant.json" $cases \
        > "$work/mutant-default.log" 2>&1
    echo "sumsq one-launch mutant under each device's own plans: $(grep -c "^FAIL" "$work/mutant-default.log")" \
        "results failed, $(grep -c "^PASS" "$work/mutant-default.log") passed"
fi
[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "OpenCL paths: every row passed under each path run, and the plans of a large GPU catch the one-launch mutant"
