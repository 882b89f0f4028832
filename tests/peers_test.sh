#!/bin/sh
# peers_test.sh: the runner and the fleet report reach the same peer and
# straggler verdicts on the same data (docs/runner.md, "Peers: one rule").
# Real runs of build/kcs-saboteur on the four identical replica devices
# (tests/replica_backend.c: replica:2 flips one bit of its output, replica:3
# does its work eight times; a replica's clock counts the elements it
# processed, so the timings are the same in every run), with --determinism
# and --benchmark:
#   1. one run over all four: the runner names replica:2 as disagreeing and
#      replica:3 as a straggler. The fleet report on that results file shows
#      the same devices, groups and ratios; and on a copy without the run's
#      comparisons ("agreement", "speed", "stragglers"), which the fleet must
#      then judge itself by report/kcs_peers.py, the same again: the C rule
#      and the Python rule agree on real results, not only on the fixture.
#   2. the same four devices as two runs of two (replica:0 with replica:3,
#      replica:1 with replica:2), two results files as two hosts of a fleet:
#      each run judges its pair (replica:2 and replica:1 differ with no
#      majority), and the fleet, judging the group across the files by the
#      same rule over all four, names what the single run of all four named.
# usage: tests/peers_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
cp -r "$source/tests/replica-cases" cases
fail() { echo "FAIL: $*"; cat run.log 2>/dev/null; exit 1; }
run() {
    results=$1
    shift
    "$saboteur" run --cases cases --no-save --time-limit 20 --backend replica --determinism --benchmark \
        --min-time 0.02 --results "$results" "$@" > run.log 2>&1
}

# 1. one run of all four
run all.json --device 0 --device 1 --device 2 --device 3 --jobs 2 && fail "a disagreement did not fail the run"
grep -q '^DISAGREE scale/f64-n65536 loop: replica:2' run.log || fail "the run did not name replica:2"
grep -q '^STRAGGLER scale/f64-n65536 loop: replica:3' run.log || fail "the run did not name replica:3"
mkdir one one-unjudged
cp all.json one/results-0.json
"$python" - all.json one-unjudged/results-0.json <<'PY' || fail "could not strip the run's comparisons"
import json, sys
data = json.load(open(sys.argv[1]))
for key in ("agreement", "speed", "stragglers", "odd_one_out"):
    del data[key]
json.dump(data, open(sys.argv[2], "w"))
PY

# 2. the same four as two runs of two
run pair-0.json --device 0 --device 3 --jobs 2
run pair-1.json --device 1 --device 2 --jobs 2 && fail "the pair with replica:2 did not fail"
mkdir two
cp pair-0.json two/results-0.json
cp pair-1.json two/results-1.json

"$python" - "$source/report" all.json one one-unjudged two <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import kcs_fleet, kcs_peers

def replica(device_id):
    """'replica:2' of 'replica:2' or 'results-1/replica:2'."""
    return device_id.split("/")[-1]

run = json.load(open(sys.argv[2]))
problems = []
# The run's verdicts, by replica.
run_odd = sorted({(v["case"], d["device"], v["verdict"] == "disagree" and d["majority"])
                  for v in run["agreement"] for d in v.get("differing", [])})
run_groups = sorted((v["case"], v["kernel"], v["verdict"], tuple(sorted(v["devices"]))) for v in run["agreement"])
run_slow = sorted((s["case"], s["device"]) for s in run["stragglers"])
run_ratios = {(g["case"], d["device"]): d["ratio"] for g in run["speed"] for d in g["devices"]}
if run_odd != [("scale/f32-n1001", "replica:2", True), ("scale/f64-n65536", "replica:2", True)]:
    problems.append(f"the run's disagreements are {run_odd}")
if run_slow != [("scale/f64-n65536", "replica:3")]:
    problems.append(f"the run's stragglers are {run_slow}")
identities = {kcs_peers.identity(d) for d in run["devices"]}
if {v["identity"] for v in run["agreement"]} != identities or len(identities) != 1:
    problems.append(f"the run's identity {[v['identity'] for v in run['agreement']]} is not kcs_peers'"
                    f" {sorted(identities)}")

for folder, judged_by in ((sys.argv[3], "run"), (sys.argv[4], "fleet"), (sys.argv[5], "fleet")):
    fleet = kcs_fleet.Fleet(kcs_fleet.results_paths([folder]))
    odd = sorted({(e["case"], replica(d), e["decided"]) for e in fleet.disagreements for d in e["odd_devices"]})
    slow = sorted((s["case"], replica(s["device"])) for s in fleet.stragglers)
    ratios = {(case, replica(device)): ratio for (device, case, _, _, _), ratio in fleet.time_ratio.items()}
    who = {e["judged_by"] for e in fleet.disagreements + fleet.stragglers}
    if odd != run_odd:
        problems.append(f"{folder}: the fleet's disagreements are {odd}, the run's {run_odd}")
    if slow != run_slow:
        problems.append(f"{folder}: the fleet's stragglers are {slow}, the run's {run_slow}")
    if ratios != run_ratios:
        problems.append(f"{folder}: the fleet's time ratios are {ratios}, the run's {run_ratios}")
    if who != {judged_by}:
        problems.append(f"{folder}: judged by {who}, not {judged_by}")
    counts = {verdict: sum(1 for v in run["agreement"] if v["verdict"] == verdict)
              for verdict in ("agree", "disagree", "not compared")}
    if fleet.groups != counts:
        problems.append(f"{folder}: the fleet counts groups {fleet.groups}, the run {counts}")
    print(f"{folder}: {len(odd)} disagreeing, {len(slow)} straggling, as the run of all four (judged by {judged_by})")
for line in problems:
    print("  " + line)
sys.exit(1 if problems else 0)
PY
[ $? -eq 0 ] || fail "the fleet and the runner disagree on the same data"
# Each pair's own run judged only its pair: replica:1 and replica:2 without a majority.
"$python" - pair-1.json <<'PY' || fail "the pair's run did not judge its pair alone"
import json, sys
verdicts = json.load(open(sys.argv[1]))["agreement"]
assert all(v["verdict"] == "disagree" for v in verdicts), verdicts
assert all(sorted(d["device"] for d in v["differing"]) == ["replica:1", "replica:2"] for v in verdicts), verdicts
assert all(not d["majority"] for v in verdicts for d in v["differing"]), verdicts
PY
echo "peers: the runner and the fleet report name the same disagreeing device and straggler, in one run and across two"
