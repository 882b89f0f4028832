#!/bin/bash
# probe_gpu.sh: the probe's checks and figures on a machine with two GPUs of
# one model (docs/fleet.md, "The probe": what was measured and how).
#
#     [PROBE_SECTIONS="2 5 6 7"] tools/probe_gpu.sh DEPS OUT
#
# DEPS as for tools/gpu-check.sh (the unpacked -dev packages); OUT a folder
# for what comes back: probe-gpu.log (everything printed), the record, the
# results files of the planted flip and of the long run, and the fleet
# report's summary of the flip. In order:
#   1. each card alone, its first cycle checked by each op's oracle (32 blocks a launch);
#   2. a record made on card 0, card 1 compared with it;
#   3. both cards against the record, a bit flip planted in block 7 of card 1
#      (probability 0.2 a launch): every flip named with SM and slice, card 0 passes;
#      the fleet report over that results file, with a history whose earlier run is a healthy
#      run of both cards just before: the history names card 1 as changed since then;
#   4. both cards without a record: decided by their majority;
#   5. the cost of a step call and of a cycle: 5000 steps of a 1 ms and of a 50 us
#      budget, and 5 whole cycles, on card 0;
#   6. the anneal loop (examples/anneal.c, n = 10^6, d = 128, m = 1024) without the
#      probe and with a step every iteration (budgets 50 us and 1 ms), in
#      alternating rounds: medians of the iterations' wall times;
#   7. the probe level of tools/fleet.sh on both cards, timed (the prolog);
#   8. 60 s of steps on both cards, no flips: the false flags;
#   9. compute-sanitizer's memcheck and racecheck over a cycle of the probe's kernels.
# PROBE_SECTIONS picks some of them (default: all); 3 and 4 need two cards, and
# 5 to 9 the record of 2.
set -u
cd "$(dirname "$0")/.."
root=$PWD
deps=$(realpath "$1")
out=$2
exec > >(tee "$out/probe-gpu.log") 2>&1
export CPATH="$deps/usr/include" LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
started=$(date +%s)
elapsed() { echo "[$(($(date +%s) - started)) s]"; }
nvidia-smi --query-gpu=index,name,driver_version,temperature.gpu,clocks.sm --format=csv,noheader
date -u +%FT%TZ
python3 configure.py --no-werror --opencl-include "$deps/usr/include" > /tmp/configure.log 2>&1 || { cat /tmp/configure.log; exit 1; }
ninja build/kcs build/examples/anneal > /tmp/build.log 2>&1 || { tail -60 /tmp/build.log; exit 1; }
grep -E "(probe|anneal)\.(c|cu).*warning" /tmp/build.log | head; echo "built $(elapsed)"
kcs=$root/build/kcs
cards=$(nvidia-smi -L | grep -c '^GPU')
sections=" ${PROBE_SECTIONS:-1 2 3 4 5 6 7 8 9} "
want() { case $sections in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
work=/tmp/probe-gpu
mkdir -p $work
record=$out/h100.record

if want 1; then
echo "== 1. each card alone: the oracle decides its first cycle (32 blocks a launch) $(elapsed)"
for d in $(seq 0 $((cards - 1))); do
    timeout 120 $kcs probe --backend cuda --device $d --oracle-blocks 32 --results $work/alone-$d.json
    echo "exit $?"
done

fi
if want 2; then
echo "== 2. a record on card 0; card 1 compared with it $(elapsed)"
timeout 120 $kcs probe --backend cuda --device 0 --record $record --results $work/record.json; echo "exit $?"
head -n 12 $record | cut -c1-150
timeout 60 $kcs probe --backend cuda --device 1 --expected $record --cycles 2 --results $work/card1.json; echo "exit $?"

fi
if want 3 && [ "$cards" -ge 2 ]; then
echo "== 3. both cards against the record, flips planted in block 7 of card 1 $(elapsed)"
# First a healthy run of both cards, merged into a fresh history: the earlier run that the
# flipped run's merge compares each card with.
rm -rf $work/history
timeout 120 $kcs probe --backend cuda --device all --expected $record --cycles 3 --results $out/healthy.json \
    > $work/healthy.log; echo "healthy exit $?"
grep -E '^cuda:' $work/healthy.log | cut -c1-200
python3 report/kcs_fleet.py $out/healthy.json --output $work/fleet-healthy --json $out/fleet-healthy.json \
    --history $work/history | tail -3
echo "healthy fleet exit ${PIPESTATUS[0]}"
sleep 1   # the history names its summaries by time
timeout 120 $kcs probe --backend cuda --device all --expected $record --cycles 3 --inject-flip 7:0.2:42:cuda:1 \
    --results $out/flip.json > $work/flip.log
echo "exit $?"
cat $work/flip.log | cut -c1-260
injected=$(grep '^cuda:1 ' $work/flip.log | sed -n 's/.*; \([0-9]*\) flips injected.*/\1/p')
named=$(grep -c '^  MISMATCH cuda:1: .*\[injected\]' $work/flip.log)
others=$(grep '^  MISMATCH ' $work/flip.log | grep -vc '^  MISMATCH cuda:1: .*\[injected\]')
echo "flips injected on cuda:1: $injected; named: $named (the first $((16)) of each step are named); other blocks named: $others"
python3 report/kcs_fleet.py $out/flip.json --output $work/fleet --json $out/fleet-flip.json \
    --history $work/history | tail -12
echo "fleet exit ${PIPESTATUS[0]}"
# What the history says: the cards changed since the healthy run, and what changed.
python3 - $out/fleet-flip.json <<'PY'
import json, sys
fleet = json.load(open(sys.argv[1]))
history = fleet.get("history") or {}
print(f"history: compared with {history.get('compared')}; {len(history.get('changed', []))} card(s) changed")
for device in history.get("changed", []):
    kinds = sorted({change["kind"] for change in device["changes"]})
    print(f"  changed: {device['device']} (card {device['card']}) since {device['since']}: {', '.join(kinds)};"
          f" first: {device['changes'][0]['text'][:160]}")
PY
cp -r $work/fleet $out/fleet-flip-report 2>/dev/null

fi
if want 4 && [ "$cards" -ge 2 ]; then
echo "== 4. both cards, no record: their majority $(elapsed)"
timeout 120 $kcs probe --backend cuda --device all --results $work/majority.json; echo "exit $?"

fi
if want 5; then
echo "== 5. a step call, a step and a cycle on card 0 $(elapsed)"
for budget in 0.001 0.00005; do
    timeout 120 $kcs probe --backend cuda --device 0 --expected $record --steps 5000 --budget $budget \
        --results $work/steps.json; echo "exit $?"
done
timeout 120 $kcs probe --backend cuda --device 0 --expected $record --cycles 6 --results $work/cycles.json; echo "exit $?"

fi
if want 6; then
echo "== 6. the anneal loop without and with the probe, alternating rounds $(elapsed)"
for round in 1 2 3; do
    for probe in none 0.00005 0.001; do
        option=""
        [ $probe = none ] || option="--probe $probe"
        timeout 120 build/examples/anneal --backend cuda --iterations 40 --compare 0 --async $option \
            > $work/anneal-$probe-$round.log 2>&1
        echo "anneal $probe round $round: exit $? $(grep -E '^(probe|iterations)' $work/anneal-$probe-$round.log | tr '\n' ' ')"
    done
done
python3 - $work <<'PY'
import glob, re, statistics, sys
runs = {}
for path in sorted(glob.glob(sys.argv[1] + "/anneal-*-*.log")):
    probe = path.rsplit("/", 1)[1].split("-")[1]
    walls = [float(m) for m in re.findall(r"^iteration (?:[1-9]\d*): .* wall ([0-9.]+) ms", open(path).read(), re.M)]
    if walls:
        runs.setdefault(probe, []).append(statistics.median(walls))
base = statistics.median(runs.get("none", [float("nan")]))
for probe, medians in sorted(runs.items()):
    m = statistics.median(medians)
    print(f"anneal iteration, probe {probe}: run medians {', '.join(f'{x:.3f}' for x in medians)} ms; "
          f"median {m:.3f} ms, {100 * (m / base - 1):+.2f}% against no probe")
PY

fi
if want 7; then
echo "== 7. the fleet's probe level on every card ($cards), timed $(elapsed)"
TIMEFORMAT="probe level on $cards cards: %R s wall"
for i in 1 2 3; do
    time tools/fleet.sh level probe --kcs $kcs --expected $record --results $work/level.json -- --backend cuda --quiet
    echo "exit $?"
done

fi
if want 8; then
echo "== 8. 60 s of steps on both cards, no flips planted $(elapsed)"
timeout 120 $kcs probe --backend cuda --device all --expected $record --duration 60 --budget 0.001 \
    --results $out/duration.json; echo "exit $?"

fi
if want 9; then
echo "== 9. compute-sanitizer memcheck and racecheck over a cycle $(elapsed)"
sanitizer=$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/compute-sanitizer
for tool in memcheck racecheck; do
    timeout 200 $sanitizer --tool $tool --error-exitcode 99 $kcs probe --backend cuda --device 0 --expected $record \
        --oracle-blocks 1 --results $work/sanitize.json > $work/$tool.log 2>&1
    echo "$tool: exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^cuda:0" $work/$tool.log | cut -c1-200
done
fi
nvidia-smi --query-gpu=index,temperature.gpu,clocks.sm --format=csv,noheader
echo "done $(elapsed)"
