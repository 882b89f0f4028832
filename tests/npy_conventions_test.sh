#!/bin/sh
# npy_conventions_test.sh: the bf16 ('<u2') and FP8 ('|u1') .npy conventions
# of docs/npy.md, with the page's own code run as it is written there.
#
#   sh tests/npy_conventions_test.sh build/kcs
#
# The NumPy block: f32_to_bf16 inverts bf16_to_f32 on every one of the 65536
# bf16 patterns (NaNs stay NaNs) and rounds ties to even; an array written
# with it goes through `kcs apply relu --dtype bf16` and comes back '<u2'
# with the right bits, and `kcs check` passes it. FP8 bytes written with
# NumPy: a gemm of e4m3 ones passes as fp8_e4m3 and fails as fp8_e5m2 (the
# same bytes are other values there: the file cannot say which). The PyTorch
# block, where PyTorch is installed: save_bf16, load_bf16, save_fp8 and
# load_fp8 round-trip exactly, and kcs checks PyTorch's bf16 ReLU and its FP8
# matmul written with them.
set -u
kcs=$(realpath "$1")
python=${KCS_PYTHON:-/usr/bin/python3}
page=$(realpath docs/npy.md)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# The fenced blocks of the page whose info string is "python numpy" and "python torch".
block() { awk -v info="$1" '/^```/ { if (inside) exit; if ($0 == "```" info) { inside = 1; next } } inside' "$page"; }
block "python numpy" > page_numpy.py
block "python torch" > page_torch.py
[ -s page_numpy.py ] && [ -s page_torch.py ] || { echo "FAIL: docs/npy.md lacks its python numpy or python torch block"; exit 1; }

KCS="$kcs" $python - <<'EOF' || exit 1
import os, subprocess, sys
import numpy as np
sys.path.insert(0, ".")
from page_numpy import bf16_to_f32, f32_to_bf16

kcs = os.environ["KCS"]
def run(*args):
    done = subprocess.run([kcs, *args], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr

bits = np.arange(65536, dtype="<u2")
wide = bf16_to_f32(bits)
back = f32_to_bf16(wide)
nan = np.isnan(wide)
assert wide.dtype == np.float32 and back.dtype == np.dtype("<u2")
assert np.array_equal(back[~nan], bits[~nan]), "f32_to_bf16 does not invert bf16_to_f32"
assert np.isnan(bf16_to_f32(back[nan])).all(), "a NaN did not stay a NaN"
# ties to even: 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7, and goes to 1 (even)
assert f32_to_bf16(np.float32(1 + 2**-8)) == 0x3F80 and f32_to_bf16(np.float32(1 + 3 * 2**-8)) == 0x3F82

x = f32_to_bf16(np.random.default_rng(5).standard_normal(1001).astype(np.float32))
np.save("x.npy", x)
status, text = run("apply", "relu", "--dtype", "bf16", "--input", "x=x.npy", "--output-dir", "out")
assert status == 0, text
out = np.load("out/out.npy")
assert out.dtype == np.dtype("<u2"), out.dtype
assert np.array_equal(out, np.where(bf16_to_f32(x) < 0, 0, x)), "kcs's bf16 relu came back with other bits"
status, text = run("check", "relu", "--dtype", "bf16", "--input", "x=x.npy", "--actual", "out=out/out.npy")
assert status == 0 and "PASS" in text, text
print("ok: bf16 as '<u2' through NumPy, kcs apply and kcs check")

# FP8 bytes: 0x38 is 1.0 in e4m3 and 0.5 in e5m2.
np.save("a.npy", np.full((2, 4), 0x38, np.uint8))
np.save("b.npy", np.full((4, 3), 0x38, np.uint8))
np.save("c.npy", np.zeros((2, 3), np.float32))
np.save("c_out.npy", np.full((2, 3), 4, np.float32))
gemm = ["check", "gemm", "--input", "a=a.npy", "--input", "b=b.npy", "--input", "c=c.npy", "--param",
        "c_dtype=f32", "--actual", "c_out=c_out.npy"]
status, text = run(*gemm, "--dtype", "fp8_e4m3")
assert status == 0 and "PASS" in text, text
status, text = run(*gemm, "--dtype", "fp8_e5m2")
assert status == 1 and "FAIL" in text, text
print("ok: FP8 bytes as '|u1': e4m3 ones pass as fp8_e4m3 and fail as fp8_e5m2")
EOF

if ! $python -c "import torch" 2> /dev/null; then
    echo "npy_conventions: the PyTorch block not run: no PyTorch for $python"
    echo "npy_conventions: all checks passed"
    exit 0
fi
KCS="$kcs" $python - <<'EOF' || exit 1
import os, subprocess, sys
import numpy as np
import torch
sys.path.insert(0, ".")
from page_torch import save_bf16, load_bf16, save_fp8, load_fp8

kcs = os.environ["KCS"]
def run(*args):
    done = subprocess.run([kcs, *args], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr

torch.manual_seed(3)
x = torch.randn(1000).to(torch.bfloat16)
save_bf16("x.npy", x)
assert np.load("x.npy").dtype == np.dtype("<u2")
assert torch.equal(load_bf16("x.npy").view(torch.int16), x.view(torch.int16))
save_bf16("out.npy", torch.relu(x))
status, text = run("check", "relu", "--dtype", "bf16", "--input", "x=x.npy", "--actual", "out=out.npy")
assert status == 0 and "PASS" in text, text
status, text = run("apply", "relu", "--dtype", "bf16", "--input", "x=x.npy", "--output-dir", "out_torch")
assert status == 0, text
assert torch.equal(load_bf16("out_torch/out.npy").view(torch.int16), torch.relu(x).view(torch.int16))

for dtype, name in ((torch.float8_e4m3fn, "fp8_e4m3"), (torch.float8_e5m2, "fp8_e5m2")):
    a, b = (torch.rand(8, 32) * 2).to(dtype), (torch.rand(32, 5) * 2).to(dtype)
    save_fp8("a.npy", a)
    save_fp8("b.npy", b)
    assert np.load("a.npy").dtype == np.dtype("|u1")
    assert torch.equal(load_fp8("a.npy", dtype).view(torch.uint8), a.view(torch.uint8))
    np.save("c.npy", np.zeros((8, 5), np.float32))
    np.save("c_out.npy", (a.float() @ b.float()).numpy())
    status, text = run("check", "gemm", "--dtype", name, "--param", "c_dtype=f32", "--input", "a=a.npy",
                       "--input", "b=b.npy", "--input", "c=c.npy", "--actual", "c_out=c_out.npy")
    assert status == 0 and "PASS" in text, (name, text)
print("ok: the PyTorch block: bf16 and FP8 round trips, kcs checks PyTorch's bf16 relu and FP8 matmuls")
EOF
echo "npy_conventions: all checks passed"
