#!/bin/sh
# probe_command_test.sh: `kcs probe` end to end on the reference and on the replica
# devices (docs/fleet.md, "The probe"): a lone device decided by the oracle;
# a record written and compared with, every flip that --inject-flip plants
# named with its kernel, slice and cpu, and no block it did not flip; a
# record of another device not used, and said so; a malformed record and bad
# options refused with exit 2 and the cause; four identical replicas, one of
# them flipping bits, decided by the majority, that one and only it named,
# by `kcs probe` and by the fleet report of its results file; steps after
# the first cycle by --steps and --duration; tools/fleet.sh's probe level.
# usage: tests/probe_command_test.sh build/kcs
set -u
kcs=$(realpath "$1")
kcs_saboteur=$(dirname "$kcs")/kcs-saboteur
source=$(cd "$(dirname "$0")/.." && pwd)
python=${KCS_PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; cat run.log; failures=$((failures + 1)); }
# expect STATUS TEXT KCS ARGS...: runs KCS with ARGS, wants exit STATUS and TEXT in its output.
expect() {
    want=$1 text=$2 runner=$3
    shift 3
    "$runner" "$@" > run.log 2>&1
    got=$?
    [ "$got" -eq "$want" ] || fail "kcs $*: exit $got, not $want"
    grep -qF -- "$text" run.log || fail "kcs $*: no '$text' in its output"
}
# named_flips LOG DEVICE: checks that DEVICE's MISMATCH lines are all injected flips and that
# their count is the count of flips its line says were injected; prints that count.
named_flips() {
    injected=$(grep "^$2 " "$1" | sed -n 's/.*; \([0-9]*\) flips injected.*/\1/p')
    named=$(grep -c "^  MISMATCH $2: .*\[injected\]" "$1")
    others=$(grep "^  MISMATCH $2: " "$1" | grep -vc "\[injected\]")
    [ -n "$injected" ] && [ "$injected" -gt 0 ] || { fail "$2: no flips injected"; echo 0; return; }
    [ "$named" -eq "$injected" ] || fail "$2: $injected flips injected, $named named"
    [ "$others" -eq 0 ] || fail "$2: $others blocks named that it did not flip"
    echo "$named"
}

# A lone device without a record: the oracle decides, and passes it.
expect 0 "reference:0 (host" "$kcs" probe --backend reference --results lone.json
grep -q "^reference:0 .*: pass by oracle: 32 launches" run.log || fail "the lone device did not pass by the oracle"
"$python" - lone.json <<'PY' || fail "the results file of a lone device"
import json, sys
data = json.load(open(sys.argv[1]))
cases = sorted(r["case"] for r in data["results"])
assert cases == ["probe/gemm-fma", "probe/gemm-tensor", "probe/softmax", "probe/sumsq"], cases
for r in data["results"]:
    assert r["status"] == "pass" and r["device"] == "reference:0" and r["expected_from"] == "oracle", r
    assert len(r["output_hashes"]["slices"]) == 64, r
    assert r["timing"]["kernel"]["repeats"] == 8, r["timing"]  # one sample a launch of the cycle
PY

# A record, then a run against it with flips planted in block 2: each one named, nothing else.
expect 0 "wrote record.txt from reference:0" "$kcs" probe --backend reference --record record.txt --results r.json
grep -q "^launch gemm-tensor 0 [0-9a-f]\{16\} [0-9a-f]\{16\} [0-9a-f]\{16\} [0-9a-f]\{16\}$" record.txt ||
    fail "the record has no launch line of four hashes"
expect 0 "pass by record" "$kcs" probe --backend reference --expected record.txt --cycles 2 --results r.json
expect 1 "MISMATCH by record" "$kcs" probe --backend reference --expected record.txt --cycles 3 \
    --inject-flip 2:0.3:11 --results flips.json
cp run.log flips.log
count=$(named_flips flips.log reference:0)
grep -q "^  MISMATCH reference:0: [a-z-]* slice [0-9]* (chunk [0-7], block 2) on cpu 0, hash [0-9a-f]\{16\} not [0-9a-f]\{16\} (record) \[injected\]" flips.log ||
    fail "a flip is not named with its kernel, slice, chunk, block and cpu"
"$python" - flips.json "$count" <<'PY' || fail "the results file of a run with flips"
import json, sys
data, named = json.load(open(sys.argv[1])), int(sys.argv[2])
failed = [r for r in data["results"] if r["status"] == "fail"]
assert failed, "no failed probe result"
for r in failed:
    assert "block 2) on cpu 0" in r["message"] and "[injected]" in r["message"], r["message"]
assert sum(r["accuracy"]["failures"] for r in data["results"]) == named, (named, data["results"])
PY

# The fleet's probe level (tools/fleet.sh): kcs probe against the record, exiting as it does.
sh "$source/tools/fleet.sh" level probe --kcs "$kcs" --results level.json --expected record.txt -- --backend reference \
    > run.log 2>&1 || fail "tools/fleet.sh level probe failed against the record"
grep -q "^reference:0 .*: pass by record" run.log || fail "the probe level did not compare with the record"
KCS_PROBE_RECORD=record.txt sh "$source/tools/fleet.sh" level probe --kcs "$kcs" --results level.json -- \
    --backend reference --inject-flip 0:1:4 > run.log 2>&1
[ $? -eq 1 ] || fail "the probe level passed a device with flipped bits"
grep -q "MISMATCH by record" run.log || fail "the probe level did not take KCS_PROBE_RECORD"

# A record of another device is not used: the first cycle falls back to the oracle, and says why.
sed 's/^device .*/device another card/' record.txt > another.txt
expect 0 "pass by oracle" "$kcs" probe --backend reference --expected another.txt --results r.json

# Bad input: exit 2, naming the file, its line and the cause.
sed 's/^launch softmax 3 \([0-9a-f]*\) /launch softmax 3 \1x /' record.txt > bad.txt
expect 2 "bad.txt:" "$kcs" probe --backend reference --expected bad.txt --results r.json
grep -q "bad.txt:[0-9]*: hash 1 of softmax chunk 3 is not 16 hex digits" run.log || fail "the bad hash is not named"
expect 2 "no 'end' line" "$kcs" probe --backend reference --expected "$(head -n 20 record.txt > cut.txt; echo cut.txt)" \
    --results r.json
expect 2 "cannot read the probe's record" "$kcs" probe --backend reference --expected absent.txt --results r.json
expect 2 "--inject-flip needs BLOCK:PROBABILITY:SEED" "$kcs" probe --backend reference --inject-flip 2:2:1 --results r.json
expect 2 "--inject-flip block 9: reference:0 has 4 blocks" "$kcs" probe --backend reference --inject-flip 9:0.5:1 \
    --results r.json
expect 2 "--device needs 'all' or device indices" "$kcs" probe --backend reference --device one --results r.json
expect 2 "there is no reference:3" "$kcs" probe --backend reference --device 3 --results r.json
expect 2 "give one of --cycles, --steps and --duration" "$kcs" probe --backend reference --steps 2 --duration 1
expect 2 "no backend 'tpu'" "$kcs" probe --backend tpu

# Four identical replicas, replica:2 flipping bits of block 3: the majority names it, only it.
expect 1 "replica:2 (replica card): MISMATCH by majority" "$kcs_saboteur" probe --backend replica \
    --inject-flip 3:0.5:5:replica:2 --results replicas.json
cp run.log replicas.log
count=$(named_flips replicas.log replica:2)
for healthy in 0 1 3; do
    grep -q "^replica:$healthy (replica card): pass by majority: 32 launches" replicas.log ||
        fail "replica:$healthy was not passed by the majority"
done
grep -q "^  MISMATCH replica:2: .*(majority) \[injected\]: 3 of 4 identical devices agree on another hash" replicas.log ||
    fail "the majority's mismatch does not say how many agreed"
# The fleet report of those results names replica:2, and only it, where it flipped.
"$python" "$source/report/kcs_fleet.py" replicas.json --output fleet --json fleet.json > fleet.log 2>&1
[ $? -eq 3 ] || { cat fleet.log; fail "the fleet report did not fail the replicas"; }
"$python" - fleet.json <<'PY' || fail "the fleet report's disagreements"
import json, sys
fleet = json.load(open(sys.argv[1]))
assert fleet["disagreements"], "no disagreement"
for d in fleet["disagreements"]:
    assert d["case"].startswith("probe/") and d["odd_devices"] == ["replicas/replica:2"], d
    assert sorted(d["majority_devices"]) == ["replicas/replica:0", "replicas/replica:1", "replicas/replica:3"], d
PY

# Steps after the first cycle, by count and by time, compared on the device with what it established.
expect 0 "pass by majority" "$kcs_saboteur" probe --backend replica --device 0,1,3 --steps 5 --budget 0.5 \
    --results r.json
grep -q "^replica:0 .*; 5 steps after it in" run.log || fail "--steps 5 did not run 5 steps"
expect 0 "pass by oracle" "$kcs" probe --backend reference --duration 0.3 --results r.json
grep -q "^reference:0 .*; [0-9]* steps after it in 0\.[3-9]" run.log || fail "--duration 0.3 did not step for 0.3 s"

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "probe_command_test: all passed"
