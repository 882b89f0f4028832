#!/bin/sh
# take_away_unfinished_test.sh: a kernel that crashes or hangs leaves what a
# failure leaves (docs/take-away.md): its case's inputs and expected values
# saved, a replay command printed after its ERROR line, and both in the
# results file as "saved"; the replay command reproduces the crash and the
# hang outside the suite. A failure's outputs folder is recorded too, and
# --save-all writes into a folder named for what it holds.
# usage: tests/take_away_unfinished_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
failures=0
fail() { echo "FAIL: $*"; cat run.log; failures=$((failures + 1)); }
case=sumsq/f64-n93
"$saboteur" run --cases "$source/cases" --golden "$source/golden" --backend saboteur \
    --kernel 'crashes' --time-limit 3 --save-failures saved --results crash.json "$case" > run.log 2>&1
grep -A2 "^ERROR  *$case  *saboteur:0 crashes" run.log | grep -q "replay: .* apply sumsq .*--kernel crashes" ||
    fail "no replay command after the crash's ERROR line"
"$saboteur" run --cases "$source/cases" --golden "$source/golden" --backend saboteur \
    --kernel 'hangs' --time-limit 3 --save-failures saved --results hang.json "$case" > run.log 2>&1
grep -A2 "^ERROR  *$case  *saboteur:0 hangs" run.log | grep -q "replay: .* apply sumsq .*--kernel hangs" ||
    fail "no replay command after the hang's ERROR line"
"$kcs" run --cases "$source/cases" --golden "$source/golden" --backend reference --save-all \
    --results all.json "$case" > run.log 2>&1 || fail "the reference run with --save-all"
[ -f "kcs-saved/$case/reference-0-blocked-pairwise/s.npy" ] || fail "--save-all did not write into kcs-saved/"
[ ! -e kcs-failures ] || fail "--save-all wrote into kcs-failures/, which holds no failure"
# The results files name what was saved and how to replay it; the files are there.
"$python" - crash.json hang.json all.json > check.log 2>&1 <<'PY' || { cat check.log; fail "saved entries"; }
import json, os, sys
for path in sys.argv[1:]:
    saved = json.load(open(path))["results"][0].get("saved")
    assert saved, f"{path}: no 'saved'"
    assert os.path.isfile(os.path.join(saved["case_folder"], "x.npy")), f"{path}: no inputs in {saved}"
    assert os.path.isfile(os.path.join(saved["case_folder"], "expected.s.npy")), f"{path}: no expected values"
    unfinished = "crash" in path or "hang" in path
    assert (saved["outputs_folder"] is None) == unfinished, f"{path}: outputs folder {saved['outputs_folder']}"
    assert " apply sumsq " in saved["replay"] and "--input x=" in saved["replay"], saved["replay"]
    with open(path.replace(".json", ".replay"), "w") as out:
        out.write(saved["replay"] + "\n")
PY
# The replays reproduce: the crash dies of its signal, the hang is still running when stopped.
sh crash.replay > replay.log 2>&1
status=$?
[ "$status" -gt 128 ] || { cat replay.log; fail "the crash's replay exited $status, not by a signal"; }
timeout 3 sh hang.replay > replay.log 2>&1
status=$?
[ "$status" -eq 124 ] || { cat replay.log; fail "the hang's replay exited $status, not by the timeout"; }
sh all.replay > replay.log 2>&1 || { cat replay.log; fail "the passing case's replay failed"; }
[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "take-away of unfinished units: crash and hang saved with replay commands that reproduce them"
