#!/bin/sh
# hang_limit_test.sh: without --time-limit, a hanging kernel is stopped
# within its unit's limit derived from the case's size (runner/time_limit.c,
# docs/runner.md "Isolation"), not after a fixed ten minutes.
#
#   sh tests/hang_limit_test.sh build/kcs
#
# 1. The saboteur kernel that never returns, on a small sumsq case: the
#    run records the error "no progress for 60 s" (the floor) within 90 s,
#    and goes on with the next kernel (slows-down, which passes).
# 2. The same kernel on a case of 10^7 doubles (a case file written here):
#    while it hangs, the heartbeat names a limit that follows the rule:
#    60 s + 10 x (bytes / 10^8 + flops / 10^9), the bytes and flops being
#    those the results file records for the case. The run is stopped at the
#    first heartbeat.
# Both run at once: the test takes about 65 s, nearly all of it waiting.
set -u
kcs=$(realpath "$1")
saboteur=$(dirname "$kcs")/kcs-saboteur
python=${KCS_PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
small=
fail() { echo "FAIL: $*"; [ -z "$small" ] || kill "$small" 2>/dev/null; exit 1; }

# 1, in the background.
case=sumsq/f64-n93
start=$(date +%s)
timeout 120 "$saboteur" run --backend saboteur --kernel '[hs][al]*' --no-save --results small.json "$case" \
    > small.log 2>&1 &
small=$!

# 2. The case's bytes and flops, from a run on the reference.
mkdir cases
cat > cases/big.md <<'CASE'
# A sum of squares of 10^7 doubles: big enough that its unit's limit exceeds the floor.

```kcs-case
case: f64-n10000000
op: sumsq
dtype: f64
sizes: n=10^7
input x: uniform lo=-1 hi=1
expect: oracle
```
CASE
"$kcs" run --cases cases --backend reference --no-save --results big.json > big.log 2>&1 || { cat big.log; fail "the reference run of the big case failed"; }
want=$("$python" -c '
import json, sys
r = next(r for r in json.load(open("big.json"))["results"] if r["device"])
print(round(60 + 10 * (r["bytes"] / 1e8 + r["flops"] / 1e9)))')
timeout 15 "$saboteur" run --cases cases --backend saboteur --kernel hangs --no-save --results hang.json > hang.log 2>&1
said=$(sed -n 's/.*still running big\/f64-n10000000 on saboteur:0 hangs: .* (the time limit is \([0-9]*\) s).*/\1/p' hang.log | head -1)
[ -n "$said" ] || { cat hang.log; fail "no heartbeat naming the time limit of the big case's hung unit"; }
[ "$said" -ge $((want - 1)) ] && [ "$said" -le $((want + 1)) ] ||
    fail "the big case's hung unit has a limit of $said s; the rule gives $want s"
[ "$want" -gt 60 ] || fail "the big case's rule gives $want s, no more than the floor"
echo "a hung unit of 10^7 doubles: limit $said s (the rule: $want s)"

wait $small
status=$?
took=$(($(date +%s) - start))
[ "$status" -ne 124 ] || { cat small.log; fail "the hang was not stopped within 120 s"; }
grep -q "^ERROR  *$case  *saboteur:0 hangs  *no progress for 60 s (the unit's time limit, from the case's size" small.log ||
    { cat small.log; fail "no ERROR line for the hang with its derived 60 s limit"; }
[ "$took" -le 90 ] || fail "the hang took $took s to be stopped, more than its 60 s limit allows"
grep -q "^PASS  *$case  *saboteur:0 " small.log || { cat small.log; fail "nothing ran after the hang"; }
echo "a hung unit of a small case: stopped after $took s (limit 60 s), and the run went on"
echo "hang_limit: all checks passed"
