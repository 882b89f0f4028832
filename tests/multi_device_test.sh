#!/bin/sh
# multi_device_test.sh: a run over several devices at once (docs/runner.md,
# "All devices at once", "Identical devices must agree", "Stragglers"), on the
# four identical replica devices of build/kcs-saboteur (tests/replica_backend.c:
# replica:2 flips one bit of one output, replica:3 does its work eight times).
#   1. replica:2 beside honest replicas is named as disagreeing, with the case,
#      kernel and output, and the run fails; the odd one out is named too. The
#      rerun names the first differing element (its index, coordinates in a
#      matrix, both values and bits: the majority's is an honest replica's
#      saved output, the deviant's that with its lowest bit flipped) and says
#      the deviation reproduced; its folder is gone after the run.
#   1b. a deviation that stops (KCS_REPLICA_FLIPS) is called intermittent and
#      is still a disagreement; past the run's reruns, a group says why it
#      was not located.
#   2. two honest replicas agree on every case (--determinism proves their
#      kernels deterministic) and the run passes; two kernels of one case that
#      compute other bits (gemm's `loop` and `wide`) are two groups, each agreeing.
#   3. replica:3 timed beside an honest one is flagged as a straggler; the
#      honest pair alone is not.
#   4. the workers of two lanes run at once: each replica's kernel waits for
#      another's to start (KCS_REPLICA_RENDEZVOUS), so they pass only when
#      they overlap, and fail with --jobs 1.
#   4b. one card seen by two backends is one lane: replicas at one PCI address
#      (KCS_REPLICA_PCI) share a lane even with --jobs, and the results record
#      the address; timing with the default lanes, the lane of the devices
#      that share the host's cores runs alone: a host replica meets no other
#      (KCS_REPLICA_RENDEZVOUS) with --benchmark, and does without it.
#   5. a hang in one lane (the saboteur's hanging kernel) costs that unit only:
#      the other lane's results and the rest of the hanging lane's are there.
#   6. the results file is in case order, then device order, whatever order
#      the lanes finished in.
#   7. a skip or error of a case itself (tagged large under --skip-large, a
#      golden file missing), which belongs to no device, is recorded once
#      however many lanes meet it: the results file is one that kcs's own
#      report and fleet merge read, and the fleet counts the skip as no failure.
# usage: tests/multi_device_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
cp -r "$source/tests/replica-cases" cases
mkdir matrix many
cat > matrix/gemm.md <<'CASES'
# A GEMM whose output has rows and columns

```kcs-case
case: f32-7x5
op: gemm
dtype: f32
sizes: m=7 n=5 k=3
input a: normal
input b: normal
input c: normal
expect: oracle
```
CASES
for n in 11 12 13 14 15; do
    printf '```kcs-case\ncase: f32-n%s\nop: scale\ndtype: f32\nsizes: n=%s\nparams: alpha=2\ninput x: normal\nexpect: oracle\n```\n\n' $n $n
done > many/scale.md
fail() { echo "FAIL: $*"; cat run.log; exit 1; }
run_in() { folder=$1; shift; "$saboteur" run --cases "$folder" --no-save --time-limit 20 "$@" > run.log 2>&1; }
run() { run_in cases "$@"; }

# 1. a flipped bit on one of three identical devices
run --backend replica --device 0 --device 1 --device 2 --jobs 3 --determinism --results flip.json \
    && fail "a disagreement did not fail the run"
grep -q '^DISAGREE scale/f64-n65536 loop: replica:2 computed other bits than the majority of its identical peers, e.g. replica:0 in y' run.log \
    || fail "replica:2 was not named as disagreeing on scale/f64-n65536"
grep -q '^ODD ONE OUT scale/f64-n65536: replica:2 loop' run.log || fail "replica:2 was not named the odd one out"
"$python" - flip.json <<'PY' || { cat run.log; exit 1; }
import json, sys
data = json.load(open(sys.argv[1]))
verdicts = {v["case"]: v for v in data["agreement"]}
assert len(verdicts) == 2, verdicts
for case, verdict in verdicts.items():
    assert verdict["verdict"] == "disagree", verdict
    assert [d["device"] for d in verdict["differing"]] == ["replica:2"], verdict
    assert verdict["differing"][0]["outputs"] == "y" and verdict["differing"][0]["majority"], verdict
    assert sorted(verdict["devices"]) == ["replica:0", "replica:1", "replica:2"], verdict
hashes = {(r["case"], r["device"]): r["output_hashes"]["y"] for r in data["results"]}
assert hashes[("scale/f32-n1001", "replica:0")] == hashes[("scale/f32-n1001", "replica:1")]
assert hashes[("scale/f32-n1001", "replica:0")] != hashes[("scale/f32-n1001", "replica:2")]
PY
ls kcs-rerun.* > /dev/null 2>&1 && fail "the reruns' folder was left behind"
# the first differing element, checked against an honest replica's own output
"$saboteur" run --cases cases --backend replica --device 0 --save-all --save-failures saved \
    --results saved.json > save.log 2>&1 || { cat save.log; fail "an honest replica's outputs could not be saved"; }
"$saboteur" run --cases matrix --backend replica --device 0 --save-all --save-failures saved \
    --results saved.json > save.log 2>&1 || { cat save.log; fail "an honest replica's gemm outputs could not be saved"; }
run_in matrix --backend replica --device 0 --device 1 --device 2 --jobs 3 --determinism --results matrix.json \
    && fail "a disagreement in a matrix did not fail the run"
cp run.log matrix.log
"$python" - flip.json matrix.json saved <<'PY' || { cat run.log matrix.log; exit 1; }
import json, sys
import numpy as np
def element(path, index):
    return np.load(path).reshape(-1)[index]
def check(results, case, output, index, coordinates, saved, fmt):
    verdict = [v for v in json.load(open(results))["agreement"] if v["case"] == case and v["kernel"] == "loop"][0]
    entry = verdict["differing"][0]
    assert entry["rerun"] == "reproduced" and entry["peer_reproduced"], entry
    found = entry["first_difference"]
    assert (found["output"], found["index"]) == (output, index), found
    assert found.get("coordinates") == coordinates, found
    honest = element(saved, index)
    as_stored = {"Q": np.float64, "I": np.float32}[fmt]
    bits = int(np.array(honest, dtype=as_stored).view({"Q": np.uint64, "I": np.uint32}[fmt]))
    assert int(found["peer_bits"], 16) == bits and int(found["bits"], 16) == bits ^ 1, (found, hex(bits))
    flipped = np.array(bits ^ 1, dtype={"Q": np.uint64, "I": np.uint32}[fmt]).view(as_stored)
    assert as_stored(float(found["peer_value"])) == honest, (found, honest)
    assert as_stored(float(found["value"])) == flipped, (found, flipped)
check(sys.argv[1], "scale/f64-n65536", "y", 32768, None, sys.argv[3] + "/scale/f64-n65536/replica-0-loop/y.npy", "Q")
check(sys.argv[1], "scale/f32-n1001", "y", 500, None, sys.argv[3] + "/scale/f32-n1001/replica-0-loop/y.npy", "I")
check(sys.argv[2], "gemm/f32-7x5", "c_out", 17, [3, 2], sys.argv[3] + "/gemm/f32-7x5/replica-0-loop/c_out.npy", "I")
PY
grep -q '^    first differing element: c_out\[17\] (3, 2) f32: replica:0 has .* (0x[0-9a-f]*), replica:2 has .* (0x[0-9a-f]*); the rerun reproduced its bits$' \
    matrix.log || fail "the console did not name the first differing element of the matrix"

# 1b. an intermittent deviation (two flips: the run and its determinism run), and the limit of reruns
echo 2 > flips
KCS_REPLICA_FLIPS=$work/flips run --backend replica --device 0 --device 1 --device 2 --jobs 3 --determinism \
    --results once.json 'scale/f64-n65536' && fail "an intermittent disagreement did not fail the run"
grep -q '^    first differing element not found: the reruns of replica:2 and replica:0 computed the same bits (intermittent: its rerun did not reproduce the bits of the run)$' \
    run.log || fail "a deviation that stopped was not called intermittent"
run_in many --backend replica --device 0 --device 1 --device 2 --jobs 3 --determinism --results many.json \
    && fail "five disagreements did not fail the run"
test "$(grep -c '^    first differing element: y\[' run.log)" = 4 || fail "not four groups located within the 8 reruns"
grep -q '^    first differing element not sought: it needs 2 kernel runs and 0 of the run.s 8 for locating differences are left$' \
    run.log || fail "the fifth group did not say why it was not located"
ls kcs-rerun.* > /dev/null 2>&1 && fail "the reruns' folder was left behind"

# 2. two honest identical devices agree
run --backend replica --device 0 --device 1 --jobs 2 --determinism --results honest.json \
    || fail "two honest replicas failed"
grep -q 'agreement of identical devices: 2 of 2 case-kernel groups agree bit for bit' run.log \
    || fail "two honest replicas did not agree"
grep -q 'DISAGREE\|ODD ONE OUT' run.log && fail "an honest pair was called different"
# 2b. two kernels of one case are two groups: gemm/f32-7x5's `loop` and `wide`
#     rows compute other bits (asserted), which pooled would be a disagreement
run_in matrix --backend replica --device 0 --device 1 --jobs 2 --determinism --results kernels.json \
    || fail "two honest replicas running two kernels of one case failed"
grep -q 'agreement of identical devices: 2 of 2 case-kernel groups agree bit for bit' run.log \
    || fail "the two kernels of one case were not two agreeing groups"
"$python" - kernels.json <<'PY' || { cat run.log; exit 1; }
import json, sys
hashes = {(r["kernel"], r["device"]): r["output_hashes"]["c_out"] for r in json.load(open(sys.argv[1]))["results"]}
assert hashes[("loop", "replica:0")] == hashes[("loop", "replica:1")], hashes
assert hashes[("wide", "replica:0")] == hashes[("wide", "replica:1")], hashes
assert hashes[("loop", "replica:0")] != hashes[("wide", "replica:0")], "loop and wide computed the same bits"
PY

# 3. a straggler, and no straggler in an honest pair (two lanes at most: the
#    machine that runs ninja check has two cores, and other tests share them)
run --backend replica --device 0 --device 3 --jobs 2 --benchmark --min-time 0.05 --results slow.json \
    || fail "the timed run failed"
grep -q '^STRAGGLER scale/f64-n65536 loop: replica:3 took' run.log || fail "replica:3 was not flagged as a straggler"
grep -q '^STRAGGLER.*replica:[01]' run.log && fail "an honest replica was flagged as a straggler"
run --backend replica --device 0 --device 1 --jobs 2 --benchmark --min-time 0.05 --results pair.json \
    || fail "the honest timed run failed"
grep -q '^STRAGGLER' run.log && fail "an honest pair had a straggler"

# 4. lanes run at once: each kernel waits for another replica's
mkdir meet
KCS_REPLICA_RENDEZVOUS=$work/meet run --backend replica --device 0 --device 1 --jobs 2 'scale/f32-n1001' \
    --results meet.json || fail "two lanes did not run their kernels at the same time"
rm -rf meet && mkdir meet
KCS_REPLICA_RENDEZVOUS=$work/meet run --backend replica --device 0 --device 1 --jobs 1 'scale/f32-n1001' \
    --results alone.json && fail "with --jobs 1 the lanes still overlapped"
grep -q 'no other replica ran a kernel at the same time' run.log || fail "--jobs 1 failed for another reason"

# 4b. lanes by card, and the host lane alone when timing
KCS_REPLICA_PCI=0000:01:00.0,0000:01:00.0,,0000:02:00.0 run --backend replica --device 0 --device 1 --device 3 \
    --jobs 3 'scale/f32-n1001' --results card.json || fail "replicas of one card failed"
grep -q '^\[[0-9]/2\] scale/f32-n1001 on card 0000:01:00.0 ' run.log || fail "replica:0 and replica:1 were not one lane"
grep -q '^\[[0-9]/2\] scale/f32-n1001 on replica:3 ' run.log || fail "replica:3 was not a lane of its own"
grep -q ' on replica:1 ' run.log && fail "replica:1 had a lane of its own beside its card's"
"$python" - card.json <<'PY' || { cat run.log; exit 1; }
import json, sys
devices = {d["id"]: d["details"] for d in json.load(open(sys.argv[1]))["devices"]}
assert "pci_bus_id=0000:01:00.0" in devices["replica:0"] and "pci_bus_id=0000:02:00.0" in devices["replica:3"], devices
PY
rm -rf meet && mkdir meet
KCS_REPLICA_HOST=0 KCS_REPLICA_RENDEZVOUS=$work/meet run --backend replica --device 0 --device 1 --device 3 \
    'scale/f32-n1001' --results together.json || fail "without --benchmark the host lane did not run beside the others"
rm -rf meet && mkdir meet
KCS_REPLICA_HOST=0 KCS_REPLICA_RENDEZVOUS=$work/meet run --backend replica --device 0 --device 1 --device 3 \
    --benchmark --min-time 0.01 'scale/f32-n1001' --results apart.json && fail "timing, the host lane ran beside the others"
"$python" - apart.json <<'PY' || { cat run.log; exit 1; }
import json, sys
by = {r["device"]: r for r in json.load(open(sys.argv[1]))["results"] if r["device"]}
assert "no other replica ran a kernel at the same time" in by["replica:0"]["message"], by["replica:0"]
assert by["replica:1"]["status"] == by["replica:3"]["status"] == "pass", by
PY

# 5. a hang in one lane costs that unit only
"$saboteur" run --backend saboteur,reference --jobs 2 --kernel '*' --time-limit 3 --no-save --results hang.json \
    'sumsq/f64-n93' > run.log 2>&1
"$python" - hang.json <<'PY' || { cat run.log; exit 1; }
import json, sys
data = json.load(open(sys.argv[1]))
by = {(r["device"], r["kernel"]): r for r in data["results"] if r["device"]}
assert by[("reference:0", "blocked-pairwise")]["status"] == "pass", by.keys()
hung = [r for r in data["results"] if "no progress for 3 s" in r["message"]]
assert len(hung) == 1 and hung[0]["device"] == "saboteur:0", [r["message"] for r in data["results"]]
after = [k for (d, k) in by if d == "saboteur:0"]
assert after.index(hung[0]["kernel"]) < len(after) - 1, "nothing ran on the saboteur lane after its hang"
# 6. case order, then device order
order = [(r["case"], r["device"]) for r in data["results"]]
devices = [d["id"] for d in data["devices"]]
key = [(c, -1 if d is None else devices.index(d)) for c, d in order]
assert key == sorted(key), order
PY

# 7. what belongs to no device, once over two lanes
mkdir skips
cat > skips/scale.md <<'CASES'
# A case that runs, one tagged large, one whose golden file is missing

```kcs-case
case: f32-n100
op: scale
dtype: f32
sizes: n=100
params: alpha=2
input x: normal
expect: oracle
```

```kcs-case
case: f32-large
op: scale
dtype: f32
sizes: n=101
params: alpha=2
input x: normal
expect: oracle
tags: large
```

```kcs-case
case: f32-golden
op: scale
dtype: f32
sizes: n=102
params: alpha=2
input x: normal
expect: golden
```
CASES
run_in skips --backend replica --device 0 --device 1 --jobs 2 --skip-large --golden "$work/no-golden" \
    --results skips.json && fail "a missing golden file did not fail the run"
grep -q '^2 passed, 1 failed, 1 skipped' run.log || fail "the summary did not count the case's skip and error once each"
"$python" - skips.json "$source/report" <<'PY' || { cat run.log; exit 1; }
import json, os, shutil, sys, tempfile
sys.path.insert(0, sys.argv[2])
import kcs_fleet, kcs_results
data = json.load(open(sys.argv[1]))
no_device = [(r["case"], r["status"]) for r in data["results"] if r["device"] is None]
assert no_device == [("scale/f32-large", "skip"), ("scale/f32-golden", "error")], no_device
assert sorted(r["device"] for r in data["results"] if r["device"]) == ["replica:0", "replica:1"], data["results"]
kcs_results.load_results(sys.argv[1])  # refuses a case, backend, kernel and device twice
folder = tempfile.mkdtemp()
try:
    data["results"] = [r for r in data["results"] if r["case"] != "scale/f32-golden"]
    for task in (0, 1):
        json.dump(data, open(os.path.join(folder, f"results-{task}.json"), "w"))
    fleet = kcs_fleet.Fleet(kcs_fleet.results_paths([folder]), 2)
    assert fleet.early_errors == [] and fleet.verdict()[0] == kcs_fleet.EXIT_OK, fleet.verdict()
finally:
    shutil.rmtree(folder)
PY
echo "several devices at once: disagreement, agreement, stragglers, overlap, a hang and skips of no device checked"
