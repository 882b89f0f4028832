#!/bin/sh
# fleet_slurm_test.sh: the fleet job on a real Slurm (docs/fleet.md). It starts
# a single-node Slurm on this machine (munged, slurmctld and slurmd as root,
# with a generated slurm.conf, its state, spool, logs, munge key and pid files
# all under one mktemp folder, on free ports), submits a 3-task array through
# tools/fleet.sh submit --wait (each task: the quick level on the reference
# and POCL, then the saboteur's faults-on-demand GEMM, timed, with
# --determinism: bits are compared only where proved deterministic, docs/runner.md
# "Peers: one rule"), and checks the
# merged fleet report (each member folded from the digest its task wrote): task 1's saboteur device, identical to its peers but
# for one flipped bit, is named as disagreeing and task 2's, ten times slower,
# as a straggler, in the JSON summary and the HTML; nothing else is. The tasks
# run one after another, so load from outside the test that falls on one honest
# task can make it a true straggler: then, and only then, the array runs again
# (at most 3 attempts, each in a folder of its own; the 2-minute limit counts
# the attempt that passed, not those discarded). Then
# submit without --wait: a 2-task array held (--sbatch --hold) so that submit
# must return its job id while no task has run, released, and collected by
# the merge job that submit queued behind it (its report has both tasks). Every
# daemon is stopped by its process id in a trap, and the test fails if any is
# left. Not root, or no Slurm or munge installed (tools/setup.sh installs
# slurm-wlm and munge): it prints SKIP with the reason and checks nothing.
# usage: tests/fleet_slurm_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
python=${KCS_PYTHON:-/usr/bin/python3}
source=$(cd "$(dirname "$0")/.." && pwd)
kcs=$(realpath "$1")
saboteur=$(realpath "$(dirname "$1")/kcs-saboteur")
started=$(date +%s)

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root: slurmd must run as root to start jobs as their user"
    exit 0
fi
for tool in munged slurmctld slurmd sbatch sinfo squeue; do
    if ! command -v "$tool" > /dev/null 2>&1; then
        echo "SKIP: no $tool here (tools/setup.sh installs the Debian packages slurm-wlm and munge)"
        exit 0
    fi
done

work=$(mktemp -d /tmp/kcs-fleet-slurm.XXXXXX)
chmod 700 "$work"
daemons=""  # "name:pid" of every daemon this test started
stepds_before=$(pgrep -x slurmstepd | sort || true)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

stop_daemons() {
    for entry in $daemons; do
        kill -TERM "${entry#*:}" 2>/dev/null
    done
    for entry in $daemons; do
        pid=${entry#*:}
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "FAIL: ${entry%%:*} (pid $pid) ignored SIGTERM for 5 s; killed"
            kill -KILL "$pid" 2>/dev/null
            failures=$((failures + 1))
        fi
    done
    # Job steps this test's slurmd started (slurmstepd detaches from it): none may outlive it.
    # A step still closing its job when slurmd stopped takes a moment to exit: 10 s at most.
    new_stepds() {
        for pid in $(pgrep -x slurmstepd | sort); do
            case " $(echo $stepds_before) " in *" $pid "*) continue ;; esac
            echo "$pid"
        done
    }
    for _ in $(seq 100); do [ -z "$(new_stepds)" ] && break; sleep 0.1; done
    for pid in $(new_stepds); do
        echo "FAIL: slurmstepd (pid $pid) was left running; killed"
        kill -KILL "$pid" 2>/dev/null
        failures=$((failures + 1))
    done
    daemons=""
}
finish() {
    stop_daemons
    [ "$failures" -eq 0 ] || { for log in "$work"/*.log "$work"/fleet-*/*.log; do
        [ -f "$log" ] && { echo "--- $log"; tail -20 "$log"; }; done; }
    rm -rf "$work"
}
trap 'finish; exit $((failures > 0))' EXIT
trap 'exit 1' INT TERM

# Two free TCP ports, held open together while they are chosen so that they differ.
ports=$("$python" -c '
import socket
held = [socket.socket() for _ in range(2)]
for s in held: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))')
controller_port=${ports% *} node_port=${ports#* }
node=$(hostname -s)
cpus=$(nproc)

# munge: a key of our own, its socket, pid and logs in the folder.
mkdir -p "$work/munge" "$work/state" "$work/spool"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 2> /dev/null
chmod 400 "$work/munge/munge.key"
munged -F --force --socket="$work/munge/socket" --key-file="$work/munge/munge.key" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed" \
    > "$work/munged.out" 2>&1 &
daemons="$daemons munged:$!"

cat > "$work/slurm.conf" <<CONF
# A one-node Slurm for tests/fleet_slurm_test.sh; everything under $work.
ClusterName=kcsfleettest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$controller_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=256 State=UNKNOWN
PartitionName=fleet Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

for _ in $(seq 50); do [ -S "$work/munge/socket" ] && break; sleep 0.1; done
[ -S "$work/munge/socket" ] || { fail "munged did not create its socket in 5 s"; exit 1; }
slurmctld -D -i -f "$SLURM_CONF" > "$work/slurmctld.out" 2>&1 &
daemons="$daemons slurmctld:$!"
slurmd -D -f "$SLURM_CONF" -N "$node" > "$work/slurmd.out" 2>&1 &
daemons="$daemons slurmd:$!"

# The node must come up idle within 30 s.
state=""
for _ in $(seq 60); do
    state=$(sinfo -h -n "$node" -o %T 2> /dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
[ "$state" = idle ] || { fail "the node is '$state', not idle, 30 s after slurmd started"; exit 1; }
echo "slurm up in $(($(date +%s) - started)) s (controller port $controller_port, node port $node_port)"

# The tasks: the quick level on the reference, and POCL where there is an OpenCL
# device; then the saboteur's faults-on-demand GEMM of 96^3 (about 0.5 ms),
# timed: task 1 flips one bit of it, task 2 makes it ten times slower.
backends=reference
"$kcs" devices 2>/dev/null | grep -q '^opencl:' && backends=reference,opencl
mkdir -p "$work/cases"
cat > "$work/cases/timed.md" <<'CASES'
# A timed f64 GEMM of 96^3 on the saboteur's host device (about 0.5 ms, in the
# cache): the faults-on-demand row flips a bit or slows down in one task.

```kcs-case
case: f64-96
op: gemm
dtype: f64
sizes: m=96 n=96 k=96
input a: uniform lo=-1 hi=1
input b: uniform lo=-1 hi=1
input c: uniform lo=-1 hi=1

expect: oracle
tags: perf
```
CASES
cat > "$work/extra-step.sh" <<STEP
case \$FLEET_TASK in
1) export KCS_SABOTEUR_FLIP_BIT=1 ;;
2) export KCS_SABOTEUR_SLOWDOWN=10 ;;
esac
exec "$saboteur" run --cases "$work/cases" --backend saboteur --kernel faults-on-demand --benchmark \
    --determinism --min-time 0.3 --no-save --quiet --results "\$FLEET_OUTPUT/results-\$FLEET_TASK.saboteur.json"
STEP
discarded=0
for attempt in 1 2 3; do
attempt_started=$(date +%s)
fleet=$work/fleet-$attempt
# 90 s for the whole array: each task takes a few seconds.
timeout 90 "$source/tools/fleet.sh" submit --nodes 3 --level quick --output "$fleet" --time 00:05:00 \
    --kcs "$kcs" --extra-step "sh $work/extra-step.sh" --wait -- --backend "$backends" --quiet \
    > "$work/submit.log" 2>&1
merged=$?
echo "attempt $attempt: array run and merged in $(($(date +%s) - attempt_started)) s; the merge exited $merged"
[ "$merged" -eq 3 ] || fail "the merge exited $merged, not 3 (a disagreement): $(tail -5 "$work/submit.log")"

summary="$fleet/report/fleet.json"
page="$fleet/report/index.html"
[ -f "$summary" ] && [ -f "$page" ] || { fail "no fleet report in $fleet/report"; exit 1; }
"$python" - "$summary" "$backends" <<'PY'
import json, sys
summary, backends = json.load(open(sys.argv[1])), sys.argv[2].split(",")
problems = []
members = sorted(m["label"] for m in summary["members"])
want = sorted([f"results-{i}" for i in range(3)] + [f"results-{i}.saboteur" for i in range(3)])
if members != want:
    problems.append(f"members {members}, not {want}")
if summary["missing"]:
    problems.append(f"missing {summary['missing']}")
odd = [(d["case"], d["kernel"], d["odd_devices"], d["decided"]) for d in summary["disagreements"]]
if odd != [("timed/f64-96", "faults-on-demand", ["results-1.saboteur/saboteur:0"], True)]:
    problems.append(f"disagreements {odd}, not task 1's saboteur alone on timed/f64-96")
slow = sorted({s["device"] for s in summary["stragglers"]})
planted_only = ["results-2.saboteur/saboteur:0"]
honest_slow = slow != planted_only and planted_only[0] in slow
if slow != planted_only and not honest_slow:
    problems.append(f"stragglers {slow}, not task 2's saboteur alone")
if summary["failures"] or summary["unexercised_kernels"]:
    problems.append(f"failures {summary['failures'][:3]}, unexercised kernels {summary['unexercised_kernels'][:3]}")
if summary["hashes"]["results_with"] == 0:
    problems.append("no result had output hashes")
# each task wrote the digest of each of its results files, and the merge folded those
if (summary["digests"]["from_digests"], summary["digests"]["reduced_here"], summary["digests"]["not_used"]) != (6, 0, []):
    problems.append(f"digests {summary['digests']}, not each of the 6 members from its task's digest")
devices = {d["id"]: d for d in summary["devices"]}
for i in range(3):
    for backend in backends:
        if f"results-{i}/{backend}:0" not in devices:
            problems.append(f"no device results-{i}/{backend}:0")
if summary["devices"][0]["id"] != "results-1.saboteur/saboteur:0":
    problems.append(f"the first device is {summary['devices'][0]['id']}, not the disagreeing one")
for line in problems:
    print("  " + line)
if honest_slow and not problems:
    print(f"  an honest task was slower than its peers ({slow}): load from outside the test")
    sys.exit(2)
sys.exit(1 if problems else 0)
PY
verdict=$?
if [ "$verdict" -eq 2 ] && [ "$attempt" -lt 3 ]; then
    discarded=$((discarded + $(date +%s) - attempt_started))
    continue
fi
[ "$verdict" -eq 0 ] || fail "the fleet summary (above)"
break
done
"$python" - "$page" <<'PY' || fail "the fleet page (above)"
import html.parser, sys
class Cells(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.table, self.cells, self.text = None, [], None
    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.table = dict(attrs).get("class")
        if tag == "td" and dict(attrs).get("class") == "odd":
            self.text = ""
    def handle_data(self, data):
        if self.text is not None:
            self.text += data
    def handle_endtag(self, tag):
        if tag == "td" and self.text is not None:
            self.cells.append((self.table, self.text.strip()))
            self.text = None
text = open(sys.argv[1], encoding="utf-8").read()
page = Cells()
page.feed(text)
problems = []
if page.cells != [("disagreements", "results-1.saboteur/saboteur:0")]:
    problems.append(f"the disagreements table names {page.cells}, not results-1.saboteur/saboteur:0 alone")
if "results-2.saboteur/saboteur:0" not in text.split('id="stragglers"')[1].split("<h2")[0]:
    problems.append("the stragglers section does not name results-2.saboteur/saboteur:0")
if 'id="end"' not in text:
    problems.append("the page has no footer: cut short")
for line in problems:
    print("  " + line)
sys.exit(1 if problems else 0)
PY
[ "$failures" -eq 0 ] || tail -30 "$work/submit.log"

# Without --wait: submit returns the array's job id at once (the array is held,
# so nothing has run when it returns), and the merge job it queued collects.
# Each task runs the medium level (--skip-large) on a node of two lanes (two of
# the saboteur's replica devices, a lane each): the case tagged large is
# skipped by both lanes and must be recorded once, and the merge must read the
# file and count that skip as no failure.
mkdir -p "$work/medium"
cat > "$work/medium/scale.md" <<'CASES'
# One case the medium level runs, one it skips (tagged large)

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
CASES
timeout 20 "$source/tools/fleet.sh" submit --nodes 2 --level medium --output "$work/later" --time 00:05:00 \
    --kcs "$saboteur" --sbatch --hold -- --cases "$work/medium" --backend replica --device 0 --device 1 --jobs 2 \
    > "$work/later.log" 2>&1
submitted=$?
job=$(sed -n 's/^fleet.sh: submitted job array \([0-9][0-9]*\)$/\1/p' "$work/later.log")
merge_job=$(sed -n 's/^fleet.sh: the merge, job \([0-9][0-9]*\), writes .*/\1/p' "$work/later.log")
if [ "$submitted" -ne 0 ] || [ -z "$job" ] || [ -z "$merge_job" ]; then
    fail "submit without --wait exited $submitted without naming the array and the merge: $(cat "$work/later.log")"
else
    ls "$work/later"/results-*.json > /dev/null 2>&1 && fail "a held task had run when submit returned"
    squeue -h -j "$job" -o %r 2> /dev/null | grep -q -i held || fail "the array $job was not held when submit returned"
    scontrol release "$job" > /dev/null 2>&1 || fail "could not release the array $job"
    for _ in $(seq 120); do
        [ -z "$(squeue -h -j "$job,$merge_job" 2> /dev/null)" ] && break
        sleep 0.5
    done
    [ -z "$(squeue -h -j "$job,$merge_job" 2> /dev/null)" ] || fail "the array or its merge still queued after 60 s"
    "$python" - "$work/later/report/fleet.json" <<'PY' || fail "the merge job's report (above; $work/later/merge.log)"
import json, sys
summary = json.load(open(sys.argv[1]))
members = sorted(m["label"] for m in summary["members"])
problems = []
if members != ["results-0", "results-1"]:
    problems.append(f"members {members}, not results-0 and results-1")
# one case ran, so the other kernel rows ran nothing: that is the verdict's only complaint
if summary["missing"] or summary["failures"] or summary["disagreements"]:
    problems.append(f"verdict {summary['verdict']!r}, missing {summary['missing']}, failures {summary['failures']}")
devices = sorted(d["id"] for d in summary["devices"])
want = [f"results-{i}/replica:{d}" for i in range(2) for d in range(2)]
if devices != want:
    problems.append(f"devices {devices}, not two lanes' replicas in each task: {want}")
for member in summary["members"]:
    results = json.load(open(member["file"]))["results"]
    skips = [r for r in results if r["device"] is None]
    if [(r["case"], r["status"]) for r in skips] != [("scale/f32-large", "skip")]:
        problems.append(f"{member['file']}: the results of no device are {skips}, not the large case's skip once")
if summary["digests"]["from_digests"] != 2 or summary["digests"]["not_used"]:
    problems.append(f"digests {summary['digests']}, not both members from their tasks' digests")
if any(m["file"] and "later" not in m["file"] for m in summary["members"]):
    problems.append("the merge read another folder's results")
for line in problems:
    print("  " + line)
sys.exit(1 if problems else 0)
PY
fi
[ -z "$(squeue -h 2> /dev/null)" ] || fail "jobs left in the queue: $(squeue -h)"

stop_daemons
elapsed=$(($(date +%s) - started - discarded))
[ "$elapsed" -le 120 ] || fail "took $elapsed s (less $discarded s of discarded attempts), over the 2 minutes it is allowed"
[ "$failures" -eq 0 ] && echo "fleet on Slurm: the flipped bit and the straggler named, every daemon stopped, $elapsed s"
