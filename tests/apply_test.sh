#!/bin/sh
# apply_test.sh: the numpy round trip of docs/take-away.md, on the reference
# and on every OpenCL device, and each class of bad input to `kcs apply`.
# usage: tests/apply_test.sh build/kcs
set -u
kcs=$(realpath "$1")
python=${KCS_PYTHON:-/usr/bin/python3} # configure.py passes the Python it found with matplotlib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

$python -c "
import numpy as np
rng = np.random.default_rng(7)
np.save('x.npy', rng.standard_normal(1000003))
np.save('x32.npy', rng.standard_normal(7).astype(np.float32))
np.save('fortran.npy', np.asfortranarray(np.ones((3, 4))))
np.save('complex.npy', np.ones(7, dtype=np.complex64))
np.save('big_endian.npy', np.ones(7, dtype='>f8'))
x = np.load('x.npy')
np.save('s.npy', np.float64(np.sum(np.square(x.astype(np.longdouble)))))
np.save('wrong_s.npy', np.float64(np.sum(np.square(x[:-1].astype(np.longdouble)))))
# gemm with alpha = 0 and beta = 1 is C, and A is not read (docs/gemm.md); numpy's 0 * A @ B + C
# is NaN where A holds a NaN: expected values that disagree with the definition.
a = rng.standard_normal((4, 3)).astype(np.float32); a[1, 2] = np.nan
b = rng.standard_normal((3, 5)).astype(np.float32)
c = rng.standard_normal((4, 5)).astype(np.float32)
np.save('a.npy', a); np.save('b.npy', b); np.save('c.npy', c)
np.save('numpy_c_out.npy', (0 * a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32))
# assign's idx is an integer output: its expected values may be int32 (or int64)
points = rng.standard_normal((50, 3)).astype(np.float32)
anchors = rng.standard_normal((4, 3)).astype(np.float32)
d = ((points.astype(np.float64)[:, None] - anchors.astype(np.float64)[None]) ** 2).sum(axis=2)
np.save('points.npy', points); np.save('anchors.npy', anchors)
np.save('idx32.npy', d.argmin(axis=1).astype(np.int32)); np.save('dist.npy', d.min(axis=1).astype(np.float32))
" || { echo "FAIL: numpy could not make the inputs"; exit 1; }
head -c 100 x32.npy > truncated.npy

# The round trip: reference, then every OpenCL device this machine has.
backends="reference:0"
for device in $("$kcs" devices --backend opencl 2>/dev/null | awk '/^opencl:[0-9]/ {print $1}'); do
    backends="$backends $device"
done
case "$backends" in *opencl*) ;; *) echo "SKIP the OpenCL round trip: no OpenCL device here";; esac
for target in $backends; do
    backend=${target%:*}
    device=${target#*:}
    out="out-$backend-$device"
    "$kcs" apply sumsq --size n=1000003 --input x=x.npy --expected s=s.npy --backend "$backend" \
        --device "$device" --output-dir "$out" > "$out.log" 2>&1 ||
        { cat "$out.log"; fail "apply on $target"; continue; }
    grep -q "^PASS" "$out.log" || fail "apply on $target did not report PASS"
    $python -c "
import numpy as np, sys
x = np.load('x.npy')
exact = float(np.sum(np.square(x.astype(np.longdouble))))
s = float(np.load('$out/s.npy'))
sys.exit(0 if abs(s - exact) <= 1e-12 * exact else 1)" || fail "$target result differs from numpy's"
    echo "ok: round trip through $target"
done

# A wrong expected value is reported as outside the bound (exit 1); the size comes from x's shape.
"$kcs" apply sumsq --input x=x.npy --expected s=wrong_s.npy --output-dir wrong > wrong.log 2>&1
[ $? -eq 1 ] && grep -q "^FAIL" wrong.log || fail "a wrong expected value was not caught"

# --errors writes each element's error and bound.
"$kcs" apply sumsq --input x=x.npy --expected s=s.npy --errors errors --output-dir out > errors.log 2>&1 &&
    [ -s errors/error.s.npy ] && [ -s errors/bound.s.npy ] || { cat errors.log; fail "--errors wrote nothing"; }

# Integer expected values as int32 (assign's idx), with every size from the shapes.
"$kcs" apply assign --input x=points.npy --input a=anchors.npy --expected idx=idx32.npy --expected dist=dist.npy \
    --output-dir assign > assign.log 2>&1 && grep -q "^PASS" assign.log ||
    { cat assign.log; fail "assign with int32 expected indices did not pass"; }

# Expected values that disagree with the definition (gemm alpha = 0 with a NaN in A): the output
# is C, which is right, and the message says so rather than calling it a copy of input c.
"$kcs" apply gemm --param alpha=0 --param beta=1 --input a=a.npy --input b=b.npy --input c=c.npy \
    --expected c_out=numpy_c_out.npy --output-dir alpha0 > alpha0.log 2>&1
if [ $? -ne 1 ] || grep -q "copy of input c" alpha0.log || ! grep -q "what the op defines" alpha0.log; then
    cat alpha0.log
    fail "gemm alpha = 0: the correct copy of c was blamed, or the given expected values were not questioned"
fi

# Each class of bad input: exit status 2 and a message naming the cause.
expect_refused() {
    words=$1
    shift
    "$kcs" apply "$@" > refused.log 2>&1
    status=$?
    if [ $status -ne 2 ] || ! grep -q -- "$words" refused.log; then
        cat refused.log
        fail "expected exit 2 and '$words' for: $*"
    else
        echo "ok: refused ($words)"
    fi
}
expect_refused "needs f64 of shape (7,)" sumsq --size n=7 --dtype f64 --input x=x32.npy
expect_refused "size n=8, but x32.npy has shape (7,), which makes n=7" sumsq --size n=8 --input x=x32.npy
expect_refused "Fortran-ordered" sumsq --size n=12 --input x=fortran.npy
expect_refused "truncated\|past the end" sumsq --size n=7 --input x=truncated.npy
expect_refused "c8\|complex\|unsupported" sumsq --size n=7 --input x=complex.npy
expect_refused "byte order\|big-endian" sumsq --size n=7 --input x=big_endian.npy
expect_refused "cannot\|No such file" sumsq --size n=7 --input x=missing.npy
expect_refused "unknown op" frobnicate --size n=7 --input x=x32.npy
expect_refused "no input 'y'" sumsq --size n=7 --input y=x32.npy
expect_refused "reduce needs size m: give --size m=VALUE" reduce --input x=points.npy --input idx=idx32.npy
expect_refused "gemm needs --input c=FILE.npy" gemm --input a=a.npy --input b=b.npy
expect_refused "no output 'y'" sumsq --input x=x32.npy --expected y=s.npy
expect_refused "errors needs --expected" sumsq --input x=x32.npy --errors e
expect_refused "no backend 'vulkan'" sumsq --size n=7 --input x=x32.npy --backend vulkan
expect_refused "not a regular file" sumsq --size n=7 --dtype f64 --input x=/dev/zero
mkfifo fifo.npy
expect_refused "not a regular file" sumsq --size n=7 --dtype f64 --input x=fifo.npy
expect_refused "not a whole number" sumsq --size n=6.5 --input x=x32.npy
expect_refused "size n was given twice" sumsq --size n=7 --size n=8 --input x=x32.npy
expect_refused "input x was given twice" sumsq --size n=7 --input x=x32.npy --input x=x32.npy

# Nothing given is ever written over, and nothing that exists without --overwrite
# (docs/take-away.md): an input named like the output, reached by a symlink, expected
# values in the output folder, an earlier result, --errors files; each refused before
# anything is written, the files unchanged.
$python -c "
import numpy as np
np.save('out.npy', np.arange(-3, 4, dtype=np.float32))
np.save('relu_expected.npy', np.maximum(np.arange(-3, 4), 0).astype(np.float64))" || fail "numpy"
cp out.npy out.kept && ln -s out.npy link.npy && mkdir -p kept && cp relu_expected.npy kept/out.npy
unchanged() { cmp -s out.npy out.kept && cmp -s kept/out.npy relu_expected.npy || fail "a given file changed: $*"; }
expect_refused "the output ./out.npy is the file given as --input x=out.npy" relu --input x=out.npy --output-dir .
unchanged "--output-dir . over the input"
expect_refused "the output ./out.npy is the file given as --input x=out.npy" relu --input x=out.npy --output-dir . \
    --overwrite
unchanged "--overwrite over the input"
expect_refused "is the file given as --input x=link.npy" relu --input x=link.npy --output-dir .
cp out.npy out.kept.npy
expect_refused "the output kept/out.npy is the file given as --expected out=kept/out.npy" relu --input x=out.kept.npy \
    --expected out=kept/out.npy --output-dir kept
expect_refused "the output kept/out.npy is the file given as --expected out=kept/out.npy" relu --input x=out.kept.npy \
    --expected out=kept/out.npy --output-dir kept --overwrite
unchanged "--overwrite over the expected values"
"$kcs" apply relu --input x=out.npy --expected out=relu_expected.npy --errors relu-errors --output-dir relu \
    > relu.log 2>&1 || { cat relu.log; fail "relu into a new folder"; }
cp relu/out.npy relu.first
expect_refused "the output relu/out.npy exists (an earlier result?): give --overwrite" relu --input x=out.npy \
    --output-dir relu
expect_refused "errors: the error file relu-errors/error.out.npy exists (an earlier result?)" relu --input x=out.npy \
    --expected out=relu_expected.npy --errors relu-errors --output-dir relu-2
[ ! -e relu-2 ] || fail "a refused apply made its output folder"
"$kcs" apply relu --input x=out.npy --expected out=relu_expected.npy --errors relu-errors --output-dir relu \
    --overwrite > relu.log 2>&1 || { cat relu.log; fail "--overwrite did not replace an earlier result"; }
"$kcs" check relu --input x=out.npy --actual out=relu/out.npy --errors relu-errors > relu.log 2>&1
[ $? -eq 2 ] && grep -q "errors: the error file relu-errors/error.out.npy exists" relu.log ||
    { cat relu.log; fail "kcs check --errors wrote over an existing file"; }
cp relu/out.npy relu/error.out.npy
"$kcs" check relu --input x=out.npy --actual out=relu/error.out.npy --errors relu --overwrite > relu.log 2>&1
[ $? -eq 2 ] && grep -q "is the file given as --actual out=relu/error.out.npy" relu.log ||
    { cat relu.log; fail "kcs check --errors --overwrite wrote over the file it checks"; }
cmp -s relu/error.out.npy relu.first || fail "kcs check changed the file it checks"
# A folder option naming a file is refused before the kernel runs; an empty file name is no file.
expect_refused "--output-dir out.kept is a file, not a folder" relu --input x=out.npy --output-dir out.kept
grep -q "^ran " refused.log && fail "the kernel ran before --output-dir was found to be a file"
expect_refused "--errors out.kept is a file, not a folder" relu --input x=out.npy --expected out=relu_expected.npy \
    --errors out.kept --output-dir relu-3
expect_refused "--input needs NAME=FILE.npy" relu --input x=

if [ $failures -ne 0 ]; then
    echo "$failures failed"
    exit 1
fi
echo "apply round trip and bad inputs: all passed"
