#!/bin/sh
# ceiling_selection_test.sh: a run measures only the ceilings its timed cases
# are judged against (runner/devices.c, kcs_ceilings_wanted; docs/runner.md,
# "Ceilings"), since every GEMM mode's rate costs seconds that a run of one
# copy-bound kernel does not need.
#
# The replica backend (tests/replica_backend.c) with KCS_REPLICA_CEILINGS=FILE
# writes one line per measure_ceilings call naming the rates it was asked for,
# and fills those at 1e12 per second. Checked:
#   1. a copy-bound perf case asks for the copy alone; the results list the
#      other rates as not measured in this run, and the case gets its fraction
#   2. a GEMM perf case asks for its mode's rate (f32: SGEMM, mode=tf32: TF32),
#      two together for both, and nothing else
#   3. --all-ceilings asks for every rate, as does `kcs devices --ceilings`
#   4. a benchmark that times nothing on a device (no perf case selected, or
#      the perf case left out by --skip-large) measures nothing there, and a
#      run without --benchmark none at all
#   5. with a worker per device (--jobs 2) the first worker measures both
#      devices, once each, and the other lane's results are held to the
#      ceilings it passed on (its D line, runner/worker.c)
# usage: tests/ceiling_selection_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
mkdir cases
cat > cases/scale.md <<'CASES'
# A copy-bound perf case, and one that is never timed

```kcs-case
case: f64-n4096
op: scale
dtype: f64
sizes: n=4096
params: alpha=3
input x: normal
expect: oracle
tags: perf
```

```kcs-case
case: f32-n1001
op: scale
dtype: f32
sizes: n=1001
params: alpha=-0.1
input x: normal
expect: oracle
```
CASES
cat > cases/gemm.md <<'CASES'
# GEMM perf cases of two modes, and one tagged large

```kcs-case
case: f32-9x7x5
op: gemm
dtype: f32
sizes: m=9 n=7 k=5
input a: normal
input b: normal
input c: normal
expect: oracle
tags: perf
```

```kcs-case
case: f32-tf32-9x7x5
op: gemm
dtype: f32
sizes: m=9 n=7 k=5
params: mode=tf32
input a: normal
input b: normal
input c: normal
expect: oracle
tags: perf
```

```kcs-case
case: f32-large-8x8x8
op: gemm
dtype: f32
sizes: m=8 n=8 k=8
params: mode=tf32
input a: normal
input b: normal
input c: normal
expect: oracle
tags: perf large
```
CASES
failures=0
fail() { echo "FAIL: $*"; cat run.log; failures=$((failures + 1)); }
all="copy_bytes_per_s host_to_device_bytes_per_s fma_flops_per_s gemm_flops_per_s gemm_tf32_flops_per_s \
gemm_f16_flops_per_s gemm_bf16_flops_per_s gemm_f64_flops_per_s gemm_fp8_e4m3_flops_per_s"

# run NAME OPTIONS...: a replica run that records what it asked for in NAME.asked
run() {
    name=$1
    shift
    rm -f "$name.asked"
    KCS_REPLICA_CEILINGS="$work/$name.asked" "$saboteur" run --cases cases --backend replica --no-save \
        --min-time 0.01 --min-repeats 3 --time-limit 60 --results "$name.json" "$@" > run.log 2>&1 ||
        fail "kcs run $* exited $?"
}

# asked NAME EXPECTED: NAME.asked holds exactly the lines EXPECTED (sorted)
asked() {
    got=$(sort "$1.asked" 2>/dev/null)
    [ "$got" = "$(printf '%s\n' "$2" | sort)" ] || fail "$1 asked for
$got
where it should have asked for
$2"
}

# results NAME CHECK: runs a Python CHECK on the results file, with d its
# devices by id and r its results as (case, device) -> result
results() {
    "$python" -c "import json, sys
data = json.load(open(sys.argv[1]))
d = {x['id']: x for x in data['devices']}
r = {(x['case'], x['device']): x for x in data['results']}
sys.exit(0 if ($2) else 1)" "$1.json" || fail "$1.json: $2"
}

# 1. the copy alone for a copy-bound case
run copy --device 0 --benchmark scale/f64-n4096
asked copy "replica:0 copy_bytes_per_s"
grep -q "^ceilings replica:0: copy 1 TB/s (only those the timed cases need; --all-ceilings measures every one)$" \
    run.log || fail "the console does not say that only the copy was measured"
results copy "d['replica:0']['ceilings']['copy_bytes_per_s'] == 1e12 and 'gemm_flops_per_s' not in d['replica:0']['ceilings']"
results copy "sorted(d['replica:0']['ceilings']['not_measured_in_this_run']) == sorted('$all'.split()[1:])"
results copy "r[('scale/f64-n4096', 'replica:0')]['timing']['ceiling']['ceiling_per_s'] == 1e12"
results copy "r[('scale/f64-n4096', 'replica:0')]['timing']['ceiling']['fraction'] > 0"

# 2. a GEMM case asks for its mode's rate
run sgemm --device 0 --benchmark gemm/f32-9x7x5
asked sgemm "replica:0 gemm_flops_per_s"
run tf32 --device 0 --benchmark gemm/f32-tf32-9x7x5
asked tf32 "replica:0 gemm_tf32_flops_per_s"
run modes --device 0 --benchmark --skip-large gemm scale/f32-n1001
asked modes "replica:0 gemm_flops_per_s gemm_tf32_flops_per_s"
results modes "'copy_bytes_per_s' in d['replica:0']['ceilings']['not_measured_in_this_run']"

# 3. every rate with --all-ceilings, with or without --benchmark, and from kcs devices --ceilings
run every --device 0 --benchmark --all-ceilings scale/f64-n4096
asked every "replica:0 $all"
results every "'not_measured_in_this_run' not in d['replica:0']['ceilings']"
run every_untimed --device 0 --all-ceilings scale/f32-n1001
asked every_untimed "replica:0 $all"
rm -f devices.asked
KCS_REPLICA_CEILINGS="$work/devices.asked" "$saboteur" devices --ceilings --backend replica --device 0 > run.log 2>&1 ||
    fail "kcs devices --ceilings exited $?"
asked devices "replica:0 $all"

# 4. nothing timed on the device: nothing measured
run untimed --device 0 --benchmark scale/f32-n1001
[ -e untimed.asked ] && fail "a benchmark of an untimed case measured ceilings: $(cat untimed.asked)"
grep -q "^ceilings replica:0: none measured: no case this run times runs on it$" run.log ||
    fail "the console does not say why no ceiling was measured"
results untimed "d['replica:0']['ceilings'] is None"
run large --device 0 --benchmark --skip-large gemm/f32-large-8x8x8 scale/f32-n1001
[ -e large.asked ] && fail "a perf case left out by --skip-large had its ceiling measured: $(cat large.asked)"
run plain --device 0 scale/f64-n4096
[ -e plain.asked ] && fail "a run without --benchmark measured ceilings: $(cat plain.asked)"

# 5. two lanes: the first worker measures both devices, the second lane uses what it passed on
run lanes --device 0 --device 1 --jobs 2 --benchmark scale/f64-n4096
asked lanes "replica:0 copy_bytes_per_s
replica:1 copy_bytes_per_s"
results lanes "all(r[('scale/f64-n4096', i)]['timing']['ceiling']['ceiling_per_s'] == 1e12 for i in ('replica:0', 'replica:1'))"
results lanes "'gemm_flops_per_s' in d['replica:1']['ceilings']['not_measured_in_this_run']"

[ $failures -eq 0 ] || exit 1
echo "ok: each run measured only the ceilings its timed cases are judged against, all with --all-ceilings"
