#!/bin/sh
# stop_signal_test.sh: a run stopped by SIGTERM (Slurm at a job's time limit,
# `timeout`) or by ^C (SIGINT to its process group) ends at once and writes
# what it has (runner/worker.c, "A stop"): the results of the units that
# finished, the unit in progress as an error naming the signal, exit 1, and
# no worker left running. Without this, a node whose job ran out of time left
# no results file at all, and the fleet's merge saw only a missing member.
# usage: tests/stop_signal_test.sh build/kcs
set -u
kcs=$(realpath "$1")
kcs_saboteur=$(dirname "$kcs")/kcs-saboteur
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
case=sumsq/f64-n93

# stop NAME SIGNAL NUMBER: runs the saboteur's kernels on $case (one of them, "hangs",
# never returns) in a process group of its own, waits until the runner says it
# is still running "hangs", sends SIGNAL (to the runner, or to the whole group
# for INT, as a terminal's ^C does), and checks what the run left.
# send SIGNAL PID [group]: the signal to the process, or to its process group
# (the shell's kill cannot name a group in every sh).
send() {
    /usr/bin/python3 -c 'import os, signal, sys
pid, number = int(sys.argv[2]), getattr(signal, "SIG" + sys.argv[1])
(os.killpg if sys.argv[3:] == ["group"] else os.kill)(pid, number)' "$@"
}

# running RESULTS: the ids of the processes (a runner, its workers) whose command names RESULTS
# (read from /proc: no procps needed).
running() {
    /usr/bin/python3 -c 'import os, sys
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        words = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if b"--results" in words and sys.argv[1].encode() in words:
        print(pid)' "$1"
}

stop() {
    name=$1 signal=$2 number=$3
    setsid "$kcs_saboteur" run --backend saboteur --time-limit 60 --no-save --results "$work/$name.json" "$case" \
        > "$name.log" 2>&1 &
    runner=$!
    waited=0
    until grep -q "still running $case on saboteur:0 hangs" "$name.log"; do
        sleep 1
        waited=$((waited + 1))
        [ $waited -lt 40 ] || { fail "$name: no heartbeat of the hung unit in 40 s"; cat "$name.log"; send KILL "$runner" group; return; }
    done
    if [ "$signal" = INT ]; then send INT "$runner" group; else send "$signal" "$runner"; fi
    sent=$(date +%s)
    wait "$runner"
    status=$?
    took=$(($(date +%s) - sent))
    [ "$status" -eq 1 ] || fail "$name: exit $status after SIG$signal, not 1"
    [ "$took" -le 10 ] || fail "$name: the run took $took s to end after SIG$signal"
    grep -q "kcs: stopped by signal $number" "$name.log" || fail "$name: no 'stopped by signal $number' line"
    left=$(running "$work/$name.json") # the whole path: another run of this test may be running too
    [ -z "$left" ] || { fail "$name: workers still run: $left"; for pid in $left; do send KILL "$pid"; done; }
    /usr/bin/python3 - "$name.json" "$number" <<'EOF' || fail "$name: the results file (above)"
import json, sys
path, number = sys.argv[1], sys.argv[2]
results = json.load(open(path))["results"]
hung = [r for r in results if r.get("kernel") == "hangs"]
assert len(hung) == 1 and hung[0]["status"] == "error", hung
assert f"stopped by signal {number}" in hung[0]["message"], hung[0]["message"]
finished = [r for r in results if r.get("kernel") not in (None, "hangs")]
assert finished and all(r["status"] in ("pass", "fail") for r in finished), finished
assert not any("died of signal" in (r.get("message") or "") for r in results), results
print(f"{path}: {len(finished)} finished units kept, the hung one an error: {hung[0]['message']}")
EOF
}

stop term TERM 15
stop interrupt INT 2

[ "$failures" -eq 0 ] || exit 1
echo "a stopped run writes what it has"
