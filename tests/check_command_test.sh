#!/bin/sh
# check_command_test.sh: `kcs check` on outputs computed with NumPy, for every op of
# the build (docs/take-away.md): a correct output passes, and the same output
# with one element moved beyond its bound (read from --errors) fails, naming
# that element. Each op's NumPy computation is its own file beside its
# descriptor, ops/<op>.numpy.py (found by that glob: a new op brings its own, and
# an op of the build without one fails here). Also: sizes from the shapes,
# int64 for integer outputs, and each class of bad input refused with exit
# status 2.
# usage: tests/check_command_test.sh build/kcs
set -u
kcs=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
python=${KCS_PYTHON:-/usr/bin/python3} # configure.py passes the Python it found
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# The ops this build has, from its own usage message for an unknown op.
ops=$("$kcs" check no-such-op --input x=none.npy --actual y=none.npy 2>&1 | sed -n 's/.*(known: \(.*\)).*/\1/p' |
      tr -d ',')
[ -n "$ops" ] || { echo "FAIL: kcs check did not list the ops"; exit 1; }

KCS="$kcs" OPS="$ops" ROOT="$root" $python - <<'EOF'
import glob, os, runpy, subprocess, sys, zlib
import numpy as np

kcs, ops = os.environ["KCS"], os.environ["OPS"].split()
failures = []

# Each ops/*.numpy.py gives `makers`: op name -> function(rng) -> (inputs, parameters,
# outputs), the outputs computed in float64 or long double and rounded once to their type.
makers, maker_files = {}, {}
for path in sorted(glob.glob(os.path.join(os.environ["ROOT"], "ops", "*.numpy.py"))):
    name = os.path.relpath(path, os.environ["ROOT"])
    found = runpy.run_path(path).get("makers")
    if not isinstance(found, dict) or not found:
        failures.append(f"{name}: defines no `makers` dict of op name -> function(rng)")
        continue
    for op, maker in found.items():
        if op in makers:
            failures.append(f"{name}: a maker for {op}, which {maker_files[op]} makes too")
        makers[op], maker_files[op] = maker, name
for op in sorted(set(makers) - set(ops)):
    failures.append(f"{maker_files[op]}: a maker for {op}, which is no op of this build (known: {' '.join(ops)})")

def run(args):
    result = subprocess.run([kcs, "check"] + args, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr

for op in ops:
    if op not in makers:
        failures.append(f"{op}: no NumPy computation for this op: add ops/{op}.numpy.py (ops/sumsq.numpy.py says how)")
        continue
    # Each op's own generator, from its name: one op's data does not depend on which others there are.
    inputs, params, outputs = makers[op](np.random.default_rng(zlib.crc32(op.encode())))
    os.makedirs(op, exist_ok=True)
    args = [op]
    for name, value in inputs.items():
        np.save(f"{op}/{name}.npy", value)
        args += ["--input", f"{name}={op}/{name}.npy"]
    for param in params:
        args += ["--param", param]
    for name, value in outputs.items():
        np.save(f"{op}/{name}.npy", value)
    # No --size anywhere: every size comes from the shapes.
    good = args + [a for name in outputs for a in ("--actual", f"{name}={op}/{name}.npy")]
    status, text = run(good + ["--errors", f"{op}/errors"])
    if status != 0 or "PASS" not in text:
        failures.append(f"{op}: the NumPy output did not pass (exit {status}):\n{text}")
        continue
    # Plant one element beyond its bound, in the first output.
    name, value = next(iter(outputs.items()))
    value = np.array(value)
    k = value.size // 2
    flat = value.reshape(-1)
    bound = np.load(f"{op}/errors/bound.{name}.npy").reshape(-1)[k]
    if np.issubdtype(value.dtype, np.integer):
        flat[k] = flat[k] - 1 if flat[k] > 0 else flat[k] + 1
    else:
        step = max(8 * bound, 4 * abs(float(np.spacing(flat[k].astype(value.dtype)))))  # spacing is negative below 0
        flat[k] = flat[k] + value.dtype.type(step)
    np.save(f"{op}/{name}.wrong.npy", value)
    bad = args + [a for other in outputs for a in
                  ("--actual", f"{other}={op}/{other}.wrong.npy" if other == name else f"{other}={op}/{other}.npy")]
    status, text = run(bad)
    # an element is named by its coordinates where the output has two or more dimensions
    element = f"{name}[{', '.join(str(int(i)) for i in np.unravel_index(k, value.shape))}]" if value.ndim else f"{name}[0]"
    if status != 1 or "FAIL" not in text or element not in text:
        failures.append(f"{op}: {element} moved by {step if not np.issubdtype(value.dtype, np.integer) else 1} "
                        f"(bound {bound:.3g}) was not caught naming {element} (exit {status}):\n{text}")
        continue
    print(f"ok: {op}: the NumPy output passes, and {element} moved beyond its bound fails")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
EOF
[ $? -eq 0 ] || exit 1

# The NumPy matmul of docs/take-away.md, exactly as it is written there.
$python -c "
import numpy as np
rng = np.random.default_rng(7)
a = rng.standard_normal((300, 200)).astype(np.float32)
b = rng.standard_normal((200, 100)).astype(np.float32)
np.save('a.npy', a)
np.save('b.npy', b)
np.save('c.npy', np.zeros((300, 100), np.float32))  # gemm's C: beta = 0 leaves it unread
np.save('c_out.npy', a @ b)"
"$kcs" check gemm --input a=a.npy --input b=b.npy --input c=c.npy --actual c_out=c_out.npy \
    --errors errors > matmul.log 2>&1 && grep -q "^PASS" matmul.log ||
    { cat matmul.log; echo "FAIL: the NumPy matmul of docs/take-away.md did not pass"; exit 1; }
$python -c "
import numpy as np
used = np.load('errors/error.c_out.npy') / np.load('errors/bound.c_out.npy')
print('worst fraction of the bound:', used.max(), 'at', np.unravel_index(used.argmax(), used.shape))" \
    > fraction.log 2>&1 && grep -q "worst fraction of the bound: 0\." fraction.log ||
    { cat fraction.log; echo "FAIL: the errors of the NumPy matmul could not be read back"; exit 1; }
echo "ok: the NumPy matmul of docs/take-away.md passes ($(cat fraction.log))"

# Bad input: exit status 2 and a message in the command line's words.
fails=0
expect_refused() {
    words=$1
    shift
    "$kcs" check "$@" > refused.log 2>&1
    status=$?
    if [ $status -ne 2 ] || ! grep -q -- "$words" refused.log; then
        cat refused.log
        echo "FAIL: expected exit 2 and '$words' for: kcs check $*"
        fails=$((fails + 1))
    else
        echo "ok: refused ($words)"
    fi
}
g="--input a=gemm/a.npy --input b=gemm/b.npy --param transb=T --param alpha=0.5 --param beta=2"
expect_refused "gemm needs --input c=FILE.npy" gemm --input a=gemm/a.npy --input b=gemm/b.npy \
    --actual c_out=gemm/c_out.npy
expect_refused "k=4, but gemm/a.npy has shape (7, 5), which makes k=5" gemm $g --input c=gemm/c.npy --size k=4 \
    --actual c_out=gemm/c_out.npy
expect_refused "gemm/a.npy has shape (7, 5), so m=7, but update/a.npy has shape (6, 5), so m=6" gemm \
    --input a=gemm/a.npy --input b=gemm/b.npy --input c=update/a.npy --param transb=T --actual c_out=gemm/c_out.npy
expect_refused "has no output 'y'" gemm $g --input c=gemm/c.npy --actual y=gemm/c_out.npy
expect_refused "assign needs --actual dist=FILE.npy" assign --input x=assign/x.npy --input a=assign/a.npy \
    --actual idx=assign/idx.npy
expect_refused "actual y: sumsq/x.npy holds f64 of shape (1001,), but softmax with these sizes writes f32 of shape (9, 33)" \
    softmax --input x=softmax/x.npy --actual y=sumsq/x.npy
$python -c "import numpy as np; np.save('y64.npy', np.load('softmax/y.npy').astype(np.float64))"
expect_refused "actual y: y64.npy holds f64 of shape (9, 33), but softmax with these sizes writes f32" softmax \
    --input x=softmax/x.npy --actual y=y64.npy
expect_refused "give the op's inputs" softmax --actual y=softmax/y.npy
# A 3-D input to a 2-D op says so, rather than asking for a size.
$python -c "
import numpy as np
np.save('x3d.npy', np.zeros((2, 3, 4), np.float32))
np.save('object.npy', np.array([1, 'a'], dtype=object), allow_pickle=True)
np.save('bits16.npy', np.arange(7, dtype=np.uint16)); np.save('bits8.npy', np.arange(7, dtype=np.uint8))
np.save('bits16_out.npy', np.arange(7, dtype=np.uint16))"
expect_refused "input x: x3d.npy has 3 dimensions, shape (2, 3, 4), but softmax's x has 2, (rows, cols)" softmax \
    --input x=x3d.npy --actual y=x3d.npy
expect_refused "'<u2' (the bits of bf16 values) and '|u1' (the bytes of fp8_e4m3 or fp8_e5m2 values)" relu \
    --input x=object.npy --actual out=object.npy
# uint16 and uint8 are bf16 and FP8 bits only when --dtype asks for them.
expect_refused "--input x=bits16.npy holds uint16 ('<u2'), which kcs reads as the bits of bf16 values" relu \
    --input x=bits16.npy --actual out=bits16_out.npy
expect_refused "only when asked: give --dtype bf16" relu --input x=bits16.npy --actual out=bits16_out.npy
expect_refused "give --dtype fp8_e4m3 or --dtype fp8_e5m2" gemm --input a=bits8.npy --input b=bits8.npy \
    --input c=bits8.npy --actual c_out=bits8.npy
expect_refused "but --dtype is f32" relu --dtype f32 --input x=x3d.npy --actual out=bits16_out.npy
expect_refused "size n=-1 is negative" relu --size n=-1 --input x=bits16.npy --actual out=bits16_out.npy
expect_refused "unknown dtype 'f128' (known: f16, bf16, f32, f64, i32, i64, fp8_e4m3, fp8_e5m2)" relu --dtype f128 \
    --input x=bits16.npy --actual out=bits16_out.npy
"$kcs" check relu --dtype bf16 --input x=bits16.npy --actual out=bits16_out.npy > bits.log 2>&1 ||
    { cat bits.log; echo "FAIL: uint16 with --dtype bf16 was not read as bf16 bits"; fails=$((fails + 1)); }
# An FP8 GEMM whose C is bf16 (c_dtype=bf16): C's uint16 is read as bf16 bits, as c_dtype says
# (PyTorch's _scaled_mm peer gives exactly this); with c_dtype=f32 the same file is refused.
$python -c "
import numpy as np
np.save('fp8_a.npy', np.full((4, 16), 0x38, np.uint8)); np.save('fp8_b.npy', np.full((4, 16), 0x40, np.uint8))
np.save('fp8_c.npy', np.zeros((4, 4), np.uint16))
np.save('fp8_out.npy', np.full((4, 4), np.array([32.0], np.float32).view(np.uint32)[0] >> 16, np.uint16))"
fp8="--dtype fp8_e4m3 --input a=fp8_a.npy --input b=fp8_b.npy --input c=fp8_c.npy --actual c_out=fp8_out.npy
    --param transb=T --param beta=0"
"$kcs" check gemm $fp8 --param c_dtype=bf16 > fp8.log 2>&1 && grep -q "expected 32, got 32" fp8.log ||
    { cat fp8.log; echo "FAIL: an FP8 GEMM's bf16 C (c_dtype=bf16) was not read as bf16 bits"; fails=$((fails + 1)); }
expect_refused "but --dtype is fp8_e4m3" gemm $fp8 --param c_dtype=f32

# Exact expected values (docs/take-away.md): the exact float64 product of two float32 arrays is
# rounded to float32 (saying so), as mul's bound is measured from the correctly rounded product,
# so NumPy's float32 product passes; one ulp off still fails. sumsq's bound is measured from
# the exact value: its expected values are taken as they are, with no note.
$python -c "
import numpy as np
rng = np.random.default_rng(4)
x, y = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
np.save('mul_x.npy', x); np.save('mul_y.npy', y)
exact = x.astype(np.float64) * y.astype(np.float64)
assert (exact != (x * y).astype(np.float64)).any()
np.save('mul_exact.npy', exact); np.save('mul_out.npy', x * y)
off = x * y; off[10] = np.nextafter(off[10], np.float32(np.inf)); np.save('mul_off.npy', off)
s = np.float32(np.sum(np.square(x.astype(np.longdouble))))
np.save('sumsq_exact.npy', np.float64(np.sum(np.square(x.astype(np.longdouble))))); np.save('sumsq_s.npy', s)"
"$kcs" check mul --input x=mul_x.npy --input y=mul_y.npy --actual out=mul_out.npy --expected out=mul_exact.npy \
    > exact.log 2>&1
[ $? -eq 0 ] && grep -q "^expected out: [0-9]* of the 1000 values in mul_exact.npy are not f32 values: rounded to f32" \
    exact.log || { cat exact.log; echo "FAIL: exact expected products failed NumPy's correctly rounded float32 product"; fails=$((fails + 1)); }
"$kcs" check mul --input x=mul_x.npy --input y=mul_y.npy --actual out=mul_off.npy --expected out=mul_exact.npy \
    > exact.log 2>&1
[ $? -eq 1 ] && grep -q "^FAIL.*out\[10\]" exact.log || { cat exact.log; echo "FAIL: a product one ulp off passed"; fails=$((fails + 1)); }
"$kcs" apply mul --input x=mul_x.npy --input y=mul_y.npy --expected out=mul_exact.npy --output-dir mul_apply > exact.log 2>&1
[ $? -eq 0 ] && grep -q "rounded to f32" exact.log || { cat exact.log; echo "FAIL: apply with exact expected products"; fails=$((fails + 1)); }
"$kcs" check sumsq --input x=mul_x.npy --actual s=sumsq_s.npy --expected s=sumsq_exact.npy > exact.log 2>&1
[ $? -eq 0 ] && ! grep -q "rounded to" exact.log || { cat exact.log; echo "FAIL: sumsq's exact expected value was rounded or failed"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "ok: exact expected values are rounded to the type where the bound is measured from it, and only there"

# Zero-element outputs: nothing compared is no pass (exit 1, as kcs run's), naming the shapes and the files.
$python -c "
import numpy as np
for shape in ((0, 16), (8, 0)):
    np.save('x%dx%d.npy' % shape, np.zeros(shape, np.float32))
np.save('e0.npy', np.zeros(0, np.float32)); np.save('e0_64.npy', np.zeros(0))"
expect_nothing_compared() {
    words=$1
    shift
    "$kcs" "$@" > empty.log 2>&1
    status=$?
    if [ $status -ne 1 ] || ! grep -q "^FAIL: 0 elements checked: nothing was compared" empty.log ||
        ! grep -qF -- "$words" empty.log || grep -q "^PASS" empty.log; then
        cat empty.log
        echo "FAIL: expected exit 1, 'nothing was compared' and '$words' for: kcs $*"
        fails=$((fails + 1))
    else
        echo "ok: nothing compared is no pass ($words)"
    fi
}
expect_nothing_compared "y has shape (0, 16)); the files with no element: x=x0x16.npy (0, 16), y=x0x16.npy (0, 16)" \
    check softmax --input x=x0x16.npy --actual y=x0x16.npy
expect_nothing_compared "softmax with rows=8 cols=0 has no output element (y has shape (8, 0))" \
    check softmax --input x=x8x0.npy --actual y=x8x0.npy
expect_nothing_compared "out has shape (0,)" check relu --input x=e0.npy --actual out=e0.npy
expect_nothing_compared "out has shape (0,)" check relu --input x=e0.npy --actual out=e0.npy --expected out=e0_64.npy
$python -c "import numpy as np; np.save('e0x16_64.npy', np.zeros((0, 16)))"
expect_nothing_compared "y has shape (0, 16)" apply softmax --input x=x0x16.npy --expected y=e0x16_64.npy --output-dir z
# Explanations (docs/explaining.md): a pass is never explained, a failure always is, in one line;
# --model judges against a declared model and says so; the refusals name their cause.
"$kcs" check softmax --input x=softmax/x.npy --actual y=softmax/y.npy --explain > explain-pass.log 2>&1
{ [ $? -eq 0 ] && grep -q "^not explained: the outputs are within the op's own bound" explain-pass.log; } ||
    { cat explain-pass.log; echo "FAIL: --explain on a pass must say it explains nothing"; fails=$((fails + 1)); }
$python -c "import numpy as np; np.save('y-off.npy', (np.load('softmax/y.npy') * np.float32(1.01)).astype(np.float32))"
"$kcs" check softmax --input x=softmax/x.npy --actual y=y-off.npy > explain-fail.log 2>&1
{ [ $? -eq 1 ] && grep -q "^explained: \(consistent with\|unexplained\)" explain-fail.log; } ||
    { cat explain-fail.log; echo "FAIL: a failure must be explained in one line"; fails=$((fails + 1)); }
"$kcs" check softmax --input x=softmax/x.npy --actual y=y-off.npy --explain > explain-models.log 2>&1
# every model that applies to f32 (the 16-bit ones do not), each one of those --model list names
models=$(sed -n 's/.*none of the \([0-9]*\) models of softmax for f32 fits.*/\1/p' explain-models.log)
"$kcs" check softmax --model list > model-list.log
listed=$(grep '^  \(fits\|no  \) ' explain-models.log | awk '{print $2}')
[ -n "$models" ] && [ "$(echo "$listed" | wc -l)" -eq "$models" ] &&
    echo "$listed" | while read -r name; do grep -q "^$name " model-list.log || exit 1; done ||
    { cat explain-models.log; echo "FAIL: --explain must list every model of softmax that applies ($models)"; fails=$((fails + 1)); }
expect_refused "has no model 'softmax-no-such'" softmax --input x=softmax/x.npy --actual y=softmax/y.npy \
    --model softmax-no-such
expect_refused "--model and --expected both say what to judge against" softmax --input x=softmax/x.npy \
    --actual y=softmax/y.npy --model softmax-no-such --expected y=softmax/y.npy
[ $fails -eq 0 ] || exit 1
echo "kcs check on every op and its bad inputs: all passed"
