#!/bin/sh
# warm_up_test.sh: `kcs run --benchmark --warm-up S` times each kernel after S
# seconds of untimed runs (docs/runner.md, "Warm-up"), so that a GPU whose
# clocks drop under sustained load is timed at the clocks it sustains. The
# saboteur's `throttles` kernel (tests/saboteur_faults.c: the reference's f64
# GEMM of 160^3, tests/compare-cases) reports 1 ms a run, and 4 ms from its
# 20th run in the process on. With the default single warm-up run its 5 timed
# repeats are runs 3 to 7, all at 1 ms; with --warm-up 2 (2 s of wall time:
# hundreds of runs, well over 20 even with a fraction of a core) every timed
# repeat is at 4 ms. The times are the saboteur's model, not measured, so a
# busy host changes nothing the test reads.
# usage: tests/warm_up_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
timed="$saboteur run --cases $source/tests/compare-cases --backend saboteur --kernel throttles --benchmark --min-time 0 --min-repeats 5 --no-save --quiet"
$timed --results cold.json > cold.log 2>&1 || { cat cold.log; echo "FAIL: the run without --warm-up"; exit 1; }
$timed --warm-up 2 --results warm.json > warm.log 2>&1 || { cat warm.log; echo "FAIL: the run with --warm-up 2"; exit 1; }
"$python" - cold.json warm.json <<'PY'
import json, sys
def timed(path):
    doc = json.load(open(path))
    rows = [r for r in doc["results"] if r["kernel"] == "throttles"]
    assert len(rows) == 1 and rows[0]["status"] == "pass", f"{path}: one passing throttles row, got {rows}"
    samples = rows[0]["timing"]["kernel"]["samples_s"]
    assert len(samples) == 5, f"{path}: 5 timed repeats, got {len(samples)}"
    busy = rows[0]["timing"]["kernel"].get("busy_fraction")
    assert isinstance(busy, float) and busy > 0, f"{path}: timing.kernel.busy_fraction written, got {busy!r}"
    return doc["options"]["warm_up_seconds"], samples
cold_option, cold = timed(sys.argv[1])
warm_option, warm = timed(sys.argv[2])
assert cold_option == 0 and warm_option == 2, f"options.warm_up_seconds: {cold_option} and {warm_option}"
print(f"timed repeats: {cold} s without --warm-up, {warm} s with --warm-up 2")
assert all(abs(s - 1e-3) < 1e-9 for s in cold), f"without --warm-up, runs 3 to 7 are the fast ones (1 ms): {cold}"
assert all(abs(s - 4e-3) < 1e-9 for s in warm), f"after --warm-up 2, every timed run is a throttled one (4 ms): {warm}"
PY
status=$?
[ $status -eq 0 ] && echo "warm-up: a kernel that slows down after 20 runs is timed slow after --warm-up 2, fast without"
exit $status
