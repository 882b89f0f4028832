#!/bin/sh
# take_away_test.sh: a failing case leaves its .npy files and a replay
# command that reproduces the failure outside the suite (docs/take-away.md).
# Uses the saboteur build (kcs-saboteur beside the runner), whose kernels
# fail on purpose. usage: tests/take_away_test.sh build/kcs
set -u
kcs_saboteur=$(cd "$(dirname "$1")" && pwd)/kcs-saboteur
[ -x "$kcs_saboteur" ] || { echo "FAIL: no $kcs_saboteur"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$kcs_saboteur" run --backend saboteur --save-failures saved --results results.json --time-limit 5 \
    sumsq/f64-n93 > run.log 2>&1
[ $? -eq 1 ] || { cat run.log; echo "FAIL: the saboteurs did not fail"; exit 1; }
dir=saved/sumsq/f64-n93
for file in x.npy expected.s.npy bound.s.npy saboteur-0-drops-last-element/s.npy; do
    [ -s "$dir/$file" ] || { cat run.log; echo "FAIL: $dir/$file was not written"; exit 1; }
done
replay=$(grep -A2 "drops-last-element" run.log | sed -n 's/^ *replay: //p' | head -n 1)
[ -n "$replay" ] || { cat run.log; echo "FAIL: no replay command printed"; exit 1; }
sh -c "$replay" > replay.log 2>&1
status=$?
if [ $status -ne 1 ] || ! grep -q "^FAIL" replay.log; then
    cat replay.log
    echo "FAIL: the replay (exit $status) did not reproduce the failure"
    exit 1
fi
grep -q "^worst element: s\[0\]" replay.log || { cat replay.log; echo "FAIL: no worst element"; exit 1; }
echo "ok: the failing case left its .npy files, and its replay command reproduced the failure"
