#!/bin/sh
# compare_test.sh: what the comparison of real runs (docs/comparing.md) promises
# on this machine whatever else it runs, as `ninja check` runs it beside the
# other tests. One interleave (report/kcs_interleave.py) times, round by round,
# the saboteur's slows-down kernel (tests/compare-cases: the reference's f64
# GEMM of 160^3) three times: "base", "same" (the same again) and "slower"
# (KCS_SABOTEUR_SLOWDOWN=1.1: 10% slower). Then, compared round by round:
# - the identical rerun, both ways round, is never SLOWER nor REGRESSED (exit 0);
# - the planted slowdown is never "same" nor "faster", and the baseline against
#   it never "same" nor "slower";
# - a planted failure is REGRESSED (exit 3), whatever the speed;
# - a device renamed " (rev 2)" is named as unmatched without --map (exit 2),
#   and its planted failure is found with --map (exit 3).
# None of this depends on a quiet machine: a load that moves the timings makes
# a verdict "unclear", which every assertion accepts except where it names a
# wrong direction. Whether the slowdown is found (SLOWER) is
# tests/compare_timing_test.sh's question (`ninja timing-check`).
# usage: tests/compare_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
failures=0
fail() { echo "FAIL: $*"; cat compare.log 2>/dev/null; failures=$((failures + 1)); }
timed="$saboteur run --cases $source/tests/compare-cases --backend saboteur --kernel slows-down --benchmark --min-time 0.05 --no-save --quiet"
"$python" "$source/report/kcs_interleave.py" --rounds 20 --output runs base="$timed" same="$timed" \
    slower="KCS_SABOTEUR_SLOWDOWN=1.1 $timed" > interleave.log 2>&1 ||
    { cat interleave.log; echo "FAIL: the interleaved runs"; exit 1; }
# compare NEW BASELINE [options...]: exit status in $got, the output in compare.log
compare() {
    new=$1 old=$2
    shift 2
    "$python" "$source/report/kcs_report.py" "$new" --baseline "$old" --output html "$@" > compare.log 2>&1
    got=$?
}
# speed_is NEW BASELINE VERDICT...: the one comparison's speed is one of the verdicts, judged round
# by round; exit 0 for "same" and "unclear", 4 for "slower" (nothing else differs).
speed_is() {
    side=$1 against=$2
    shift 2
    compare "runs/$side.json" "runs/$against.json"
    # "  speed:       0 slower, 0 faster, 1 same, 0 unclear, 0 untimed (...)": the one counted
    verdict=$(sed -n 's/^  speed: *//p' compare.log | tr ',' '\n' | awk '$1 == 1 { print $2 }')
    case " $* " in *" $verdict "*) ;; *) fail "$side against $against: speed '$verdict', not one of: $*"; return ;; esac
    want=0
    [ "$verdict" = slower ] && want=4
    [ "$got" -eq $want ] || fail "$side against $against: exit $got, not $want for '$verdict'"
    grep -q "^  interleaved: .* speed judged round by round" compare.log ||
        fail "$side against $against: not judged round by round"
    echo "$side against $against: $verdict: $(reason "runs/$against.json" "runs/$side.json")"
}
# reason BASELINE NEW: why the comparison judged the kernel's speed as it did (for the log)
reason() {
    PYTHONPATH="$source/report" "$python" - "$@" <<'PY'
import sys
from kcs_compare import Comparison
from kcs_results import load_results
print(Comparison(load_results(sys.argv[1]), [load_results(sys.argv[2])]).rows[0]["reason"])
PY
}
speed_is same base same unclear
speed_is base same same unclear
speed_is slower base slower unclear
speed_is base slower faster unclear
# A planted failure (a pass that now fails) is REGRESSED against both reruns, exit 3.
for side in same slower; do
    "$python" - "runs/$side.json" "runs/$side-failing.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
result = data["results"][0]
result["status"], result["message"] = "fail", "planted failure"
data["summary"]["passed"] -= 1
data["summary"]["failed"] += 1
json.dump(data, open(sys.argv[2], "w"))
PY
    compare "runs/$side-failing.json" runs/base.json
    [ "$got" -eq 3 ] && grep -q "^  REGRESSED: timed/f64-160 .*pass -> fail (planted failure)" compare.log ||
        fail "a planted failure beside '$side' is not REGRESSED with exit 3 (exit $got)"
done
# The same results on a device renamed " (rev 2)", one of them now failing.
"$python" - runs/base.json renamed.json <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for device in data["devices"]:
    device["name"] += " (rev 2)"
result = data["results"][0]
result["status"], result["message"] = "fail", "planted failure"
data["summary"]["passed"] -= 1
data["summary"]["failed"] += 1
json.dump(data, open(sys.argv[2], "w"))
PY
compare renamed.json runs/base.json
[ "$got" -eq 2 ] && grep -q "nothing in the baseline matched device saboteur:0 .* (rev 2)" compare.log ||
    fail "without --map, the renamed device is not named as unmatched with exit 2 (exit $got)"
compare renamed.json runs/base.json --map saboteur:0=saboteur:0
[ "$got" -eq 3 ] && grep -q "REGRESSED: timed/f64-160 .*planted failure" compare.log ||
    fail "the failure on the renamed device is not found with --map (exit $got)"
[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "comparison: an identical rerun is not slower, a 10% slowdown is not same or faster, a planted failure regressed, a renamed device is named"
