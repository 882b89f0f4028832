#!/bin/sh
# check_usage_test.sh: `kcs check OP` and `kcs apply OP` name the op's arrays
# (runner/op_arrays.c): asked for help, or given no arrays, they list the
# names its inputs and outputs go by, with their shapes in its sizes, and its
# sizes, parameters and dtypes; every op of the build gets that list.
# usage: tests/check_usage_test.sh build/kcs
set -u
kcs=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; cat out.log; failures=$((failures + 1)); }
# expect STATUS LINE ARGS...: runs kcs with ARGS, wants exit STATUS and LINE (a whole line) in its output.
expect() {
    want=$1 line=$2
    shift 2
    "$kcs" "$@" > out.log 2>&1
    got=$?
    [ "$got" -eq "$want" ] || fail "kcs $*: exit $got, not $want"
    grep -qxF -- "$line" out.log || fail "kcs $*: no line '$line'"
}
expect 0 "  inputs   x (rows, cols)   (--input NAME=FILE.npy)" check softmax --help
expect 0 "  outputs  y (rows, cols)   (--actual NAME=FILE.npy)" check softmax --help
expect 2 "  inputs   a (m, k), b (k, n), c (m, n)   (--input NAME=FILE.npy)" check gemm
expect 2 "  outputs  c_out (m, n)   (--actual NAME=FILE.npy)" check gemm
expect 2 "  sizes    m, n, k   (from the shapes, or --size NAME=VALUE)" check gemm
expect 2 "  outputs  idx (n,), dist (n,)   (--actual NAME=FILE.npy)" check assign --input x=x.npy
expect 2 "  outputs  a_next (m, d), v_next (m, d)   (--actual NAME=FILE.npy)" check update
expect 2 "  outputs  s ()   (--actual NAME=FILE.npy)" check sumsq
expect 0 "  outputs  out (n,)   (written as NAME.npy)" apply relu --help
expect 2 "  inputs   x (n,), y (n,)   (--input NAME=FILE.npy)" apply add

# Every op of the build: its inputs and outputs listed.
ops=$("$kcs" check no-such-op --input x=none.npy --actual y=none.npy 2>&1 | sed -n 's/.*(known: \(.*\)).*/\1/p' |
      tr -d ',')
[ -n "$ops" ] || fail "kcs check did not list the ops"
for op in $ops; do
    "$kcs" check "$op" > out.log 2>&1
    grep -q "^  inputs   [a-z].* (--input NAME=FILE.npy)$" out.log || fail "kcs check $op lists no inputs"
    grep -q "^  outputs  [a-z].* (--actual NAME=FILE.npy)$" out.log || fail "kcs check $op lists no outputs"
done
[ "$failures" -eq 0 ] || exit 1
echo "check_usage: every op's arrays listed ($(echo $ops | wc -w) ops)"
