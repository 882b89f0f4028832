#!/bin/sh
# compare_timing_test.sh: the comparison (docs/comparing.md) finds a real 10%
# slowdown on this machine (`ninja timing-check`, not part of `ninja check`).
# The saboteur's slows-down kernel (tests/compare-cases: the reference's f64
# GEMM of 160^3) is timed in 20 interleaved rounds (report/kcs_interleave.py)
# as it is and 10% slower (KCS_SABOTEUR_SLOWDOWN=1.1); compared round by round,
# the slower side must be named SLOWER (exit 4). The load of the machine is
# common to both halves of a round, so a busy host does not hide it (measured
# on the 2-core VM with two busy loops per core beside it: SLOWER in every
# attempt); rounds whose pace moved by more than 20% are left out, and where
# too few remain the verdict is "unclear", so the test makes up to three
# attempts and fails naming each one's reason. It never passes unchecked.
# usage: tests/compare_timing_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
timed="$saboteur run --cases $source/tests/compare-cases --backend saboteur --kernel slows-down --benchmark --min-time 0.05 --no-save --quiet"
: > attempts.log
for attempt in 1 2 3; do
    "$python" "$source/report/kcs_interleave.py" --rounds 20 --output runs base="$timed" \
        slower="KCS_SABOTEUR_SLOWDOWN=1.1 $timed" > interleave.log 2>&1 ||
        { cat interleave.log; echo "FAIL: the interleaved runs"; exit 1; }
    "$python" "$source/report/kcs_report.py" runs/slower.json --baseline runs/base.json --output html > compare.log 2>&1
    got=$?
    why=$(PYTHONPATH="$source/report" "$python" - runs/base.json runs/slower.json <<'PY'
import sys
from kcs_compare import Comparison
from kcs_results import load_results
print(Comparison(load_results(sys.argv[1]), [load_results(sys.argv[2])]).rows[0]["reason"])
PY
)
    echo "attempt $attempt: exit $got: $why" >> attempts.log
    if [ $got -eq 4 ] && grep -q "^  SLOWER: timed/f64-160 \[saboteur slows-down on saboteur:0" compare.log; then
        cat attempts.log
        echo "comparison: a 10% slowdown timed in interleaved rounds is SLOWER (attempt $attempt of 3)"
        exit 0
    fi
done
cat compare.log attempts.log
echo "FAIL: the 10% slowdown was not named SLOWER in 3 attempts of 20 interleaved rounds"
exit 1
