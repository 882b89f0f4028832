#!/usr/bin/env python3
"""kcs_torch_peers: PyTorch, eager and torch.compile, as peer rows of a kcs results file, timed and
checked the way kcs times and checks its own kernels (docs/peers.md).

    python3 report/kcs_torch_peers.py [--kcs build/kcs] [--results kcs-results.json] [--output FILE]
        [--variants eager,compile] [--min-time S] [--min-repeats N] [--max-repeats N]
        [--device N] [--cases DIR] [--work-dir DIR] [--keep-files] [PATTERN...]

Run it with a python3 that imports torch (PyTorch is not one of kcs's dependencies), after `kcs run
--benchmark` has written the results file: for every perf case of the patterns (every perf case
without them) whose op PyTorch has, it

- makes the case's inputs on the GPU, bit for bit as kcs makes them (docs/inputs.md: the
  counter-based generator, computed here on int64 tensors; `generate` below);
- runs the op in its PyTorch form (OPS below says which form for each op, with the accumulation
  and matmul settings), eager and compiled (torch.compile, mode "default", dynamic=False);
- checks the outputs against kcs's oracle and bound with `kcs check` (the same checker as every
  kcs row): the whole output where it is small or depends on every input (sumsq, energy, reduce,
  update), else a seeded subset of whole rows and columns, larger than kcs run's own sample;
- times a pass as harness/suite.c times a kernel: one warm-up run (more until --warm-up seconds,
  as `kcs run --warm-up`: docs/runner.md, "Warm-up"), then repeats until both
  --min-repeats and --min-time, at most --max-repeats, each on the next of up to 64 copies of the
  inputs (enough copies to pass 512 MiB, so no repeat finds its data in L2), each between two CUDA
  events behind a hold (kcs's own hold kernel, which keeps the stream busy until the host has
  queued the run: `HeldStreamTimer` says how); median, quartiles, extremes;
- writes one result per case and variant, backend "pytorch", kernel "torch-eager" or
  "torch-compile", kernel_library "PyTorch", into the results file (in place, or the whole file with
  the rows to --output), with the device ceiling and fraction of the kcs rows of the same case on
  the same card; `kcs_report.py` then shows them in the peers table beside cuBLAS, CUB and kcs.

A failed check is a fail row and is not timed, as kcs times only passes. A case whose op has no
PyTorch form here (or whose inputs the generator here does not make) is a skip row with the
reason. `--device cpu` runs on the CPU with wall-clock timing: for trying the runner without a GPU
only, not kcs's method.

Stopped by SIGTERM (`timeout`, Slurm at a job's time limit) or SIGINT (^C), it writes the rows of
the cases it finished and says where it stopped ("stopped" in the file's "pytorch_peers"), so that
a call that ran out of time keeps what it measured; the exit status is then 1.

Exit status: 0 every row passed or was skipped with its reason; 1 a row failed its check or had an
error, or the run was stopped; 2 usage or bad input (an option, a results file that cannot be read or written, kcs not
found, a pattern that matches no perf case); 3 PyTorch cannot run here: it cannot be imported, or
has no CUDA device (the message says which and with which python); nothing is written.
"""

import argparse
import datetime
import importlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kcs_results import ResultsError, device_uuid, load_results, summary_counts  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_TORCH = 0, 1, 2, 3
REPOSITORY = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
BACKEND = "pytorch"
LIBRARY = "PyTorch"
KERNELS = {"eager": "torch-eager", "compile": "torch-compile"}
COMPILE_MODE = "default"  # torch.compile's mode: no CUDA graphs, no max-autotune

# harness/suite.c: below this many bytes of inputs and outputs a case is timed on copies in
# rotation, at most this many, so that no repeat finds its data in the L2 left by the one before.
ROTATION_BYTES = 512 << 20
MAX_ROTATION_COPIES = 64
# The checked subset of an output too large to check whole (whole rows and columns, so that every
# element checked has all of its inputs): this many rows (and, for a GEMM, columns), or elements.
CHECKED_ROWS = 64
CHECKED_ELEMENTS = 1 << 16


class UsageError(Exception):
    """Bad input or usage: exit 2 with the message."""


class Unsupported(Exception):
    """A case this runner has no PyTorch form or inputs for: a skip row with the reason."""


# ---- the cases: `kcs list --json` ---------------------------------------------------------------

def _named(value, text=False):
    """{name: value} from a {name: value} object or a [{"name", "value"}] list (either spelling of
    `kcs list --json`'s sizes and params)."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = [(v.get("name"), v.get("value", v.get("text"))) for v in value if isinstance(v, dict)]
    else:
        return {}
    return {str(k): (str(v) if text else float(v)) for k, v in items if k is not None}


def parse_distribution(text):
    """'uniform lo=-1 hi=1 seed=5' -> {'distribution': 'uniform', 'params': {'lo': '-1', 'hi': '1'},
    'seed': 5} (the case file's spelling of an input, docs/case-format.md)."""
    words = str(text).split()
    if not words:
        raise UsageError(f"an input with no distribution: {text!r}")
    params = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    seed = params.pop("seed", None)
    return {"distribution": words[0], "params": params, "seed": int(seed, 0) if seed is not None else None}


def _input_spec(value):
    """An input's distribution from `kcs list --json`: its text, or an object naming it."""
    if isinstance(value, str):
        return parse_distribution(value)
    if not isinstance(value, dict):
        raise UsageError(f"an input that is neither a text nor an object: {value!r}")
    if any(k in value for k in ("text", "spec")):
        return parse_distribution(value.get("text", value.get("spec")))
    name = value.get("distribution", value.get("kind", value.get("generator")))
    if isinstance(name, dict):
        return _input_spec(name)
    seed = value.get("seed")
    return {"distribution": str(name), "params": {k: str(v) for k, v in _named(value.get("params"), text=True).items()},
            "seed": int(seed) if seed is not None else None}


def case_from_json(entry):
    """One case of `kcs list --json` as this runner uses it: name, op, dtype, sizes, params, inputs
    ({name: distribution}), tags, file, line, bound_tight."""
    inputs = entry.get("inputs") or {}
    if isinstance(inputs, list):
        inputs = {str(i.get("name")): i for i in inputs if isinstance(i, dict)}
    tags = entry.get("tags") or []
    expect = entry.get("expect")
    return {"name": str(entry.get("name", entry.get("case"))), "op": str(entry["op"]), "dtype": str(entry["dtype"]),
            "sizes": _named(entry.get("sizes")), "params": _named(entry.get("params"), text=True),
            "inputs": {str(k): _input_spec(v) for k, v in inputs.items()},
            "tags": tags.split() if isinstance(tags, str) else [str(t) for t in tags],
            "file": entry.get("file"), "line": entry.get("line"), "bound_tight": entry.get("bound_tight") or None,
            "expect": expect.get("source") if isinstance(expect, dict) else expect}


def list_cases(kcs, cases_dir, patterns, perf_only=True):
    """The perf cases the patterns select (every case they select, with perf_only false), from `kcs
    list --json`: the runner's own parse of the case files, the only one (docs/runner.md)."""
    where = ["--cases", cases_dir] if cases_dir else []
    try:
        listed = subprocess.run([kcs, "list", "--json"] + where + patterns, capture_output=True, text=True)
    except OSError as error:
        raise UsageError(f"cannot run {kcs}: {error.strerror or error} (build it first: ninja, or "
                         f"tools/gpu-check.sh on a GPU machine; or give --kcs)") from error
    if listed.returncode not in (0, 1):
        raise UsageError(f"{kcs} list --json: exit {listed.returncode}: {listed.stderr.strip()}")
    try:
        data = json.loads(listed.stdout)
    except ValueError as error:
        raise UsageError(f"{kcs} list --json: not JSON: {error}") from error
    entries = data.get("cases", []) if isinstance(data, dict) else data
    cases = [case_from_json(entry) for entry in entries]
    perf = [c for c in cases if "perf" in c["tags"] or not perf_only]
    if not perf:
        raise UsageError(f"no {'perf ' if perf_only else ''}case matches {' '.join(patterns) or 'the case files'}")
    return perf


# ---- inputs: docs/inputs.md's generator, on int64 arrays ------------------------------------------
#
# The same code runs on NumPy arrays (the tests, under /usr/bin/python3) and on torch tensors (the
# GPU): int64 arithmetic wraps modulo 2^64 in both, and a right shift is arithmetic in both, so
# every unsigned shift is masked. Every float operation is one IEEE operation in f64 (an eager
# torch op or a NumPy ufunc, neither contracting into a fused multiply-add), as in
# harness/generator.c, built with -ffp-contract=off.

MASK64 = (1 << 64) - 1


def _signed(value):
    """An unsigned 64-bit constant as the int64 with the same bits."""
    value &= MASK64
    return value - (1 << 64) if value >> 63 else value


GOLDEN_GAMMA, MIX_1, MIX_2 = 0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb


def _mix_int(z):
    z = ((z ^ (z >> 30)) * MIX_1) & MASK64
    z = ((z ^ (z >> 27)) * MIX_2) & MASK64
    return z ^ (z >> 31)


def fnv1a(text):
    """kcs_string_hash: the 64-bit FNV-1a hash of the text's UTF-8 bytes."""
    value = 0xcbf29ce484222325
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001b3) & MASK64
    return value


def _shift_right(z, bits):
    """z >> bits as on uint64, for int64 z."""
    return (z >> bits) & ((1 << (64 - bits)) - 1)


def random_bits(seed, counters):
    """kcs_random_bits(seed, counter) for every counter of an int64 array (as int64 bits)."""
    key = _mix_int((seed ^ 0x6a09e667f3bcc909) & MASK64)
    z = counters * _signed(GOLDEN_GAMMA) + _signed(key + GOLDEN_GAMMA)  # key + (counter + 1) * gamma
    z = (z ^ _shift_right(z, 30)) * _signed(MIX_1)
    z = (z ^ _shift_right(z, 27)) * _signed(MIX_2)
    return z ^ _shift_right(z, 31)


class NumpyArrays:
    """The array operations the generator needs, on NumPy (bf16 as its bits, '<u2')."""

    def __init__(self):
        import numpy
        self.np = numpy

    def counters(self, count):
        return self.np.arange(count, dtype=self.np.int64)

    def f64(self, array):
        return array.astype(self.np.float64)

    def frexp(self, x):
        return self.np.frexp(x)

    def sqrt(self, x):
        return self.np.sqrt(x)

    def full(self, count, value):
        return self.np.full(count, value, dtype=self.np.float64)

    def where(self, condition, a, b):
        return self.np.where(condition, a, b)

    def any(self, condition):
        return bool(condition.any())

    def isnan(self, x):
        return self.np.isnan(x)

    def f32(self, x):
        return x.astype(self.np.float32)

    def f32_bits(self, f):
        return f.view(self.np.int32)

    def f32_from_bits(self, bits):
        return bits.view(self.np.float32)

    def narrow(self, f, dtype):
        if dtype == "f16":
            return f.astype(self.np.float16)
        if dtype == "bf16":  # docs/npy.md's f32_to_bf16: to nearest, ties to even
            u = f.view(self.np.uint32).astype(self.np.uint64)
            rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(self.np.uint16)
            return self.np.where(self.np.isnan(f), ((u >> 16) | 0x40).astype(self.np.uint16), rounded)
        raise Unsupported(f"inputs of dtype {dtype} are made only with PyTorch here")

    def int32(self, x):
        return x.astype(self.np.int32)


class TorchArrays:
    """The same operations on torch tensors on one device (all but the normal distribution's, which
    is made with NumPy: generate)."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def counters(self, count):
        return self.torch.arange(count, dtype=self.torch.int64, device=self.device)

    def from_numpy(self, array):
        return self.torch.from_numpy(array).to(self.device)

    def f64(self, tensor):
        return tensor.to(self.torch.float64)

    def full(self, count, value):
        return self.torch.full((count,), value, dtype=self.torch.float64, device=self.device)

    def where(self, condition, a, b):
        return self.torch.where(condition, a, b)

    def isnan(self, x):
        return self.torch.isnan(x)

    def f32(self, x):
        return x.to(self.torch.float32)

    def f32_bits(self, f):
        return f.view(self.torch.int32)

    def f32_from_bits(self, bits):
        return bits.view(self.torch.float32)

    def narrow(self, f, dtype):
        return f.to(TORCH_DTYPES[dtype](self.torch))

    def int32(self, x):
        return x.to(self.torch.int32)


def _unit(xp, bits):
    """kcs_unit_interval: (bits >> 11) * 2^-53, exactly."""
    return xp.f64(_shift_right(bits, 11)) * 2.0 ** -53


def _number(params, name, default=None):
    text = params.get(name)
    if text is None:
        if default is None:
            raise Unsupported(f"the distribution needs {name}")
        return default
    return float(text)


def _portable_log(xp, x):
    """kcs_portable_log: ln x from frexp and a series in atanh, the same operations in the same order."""
    ln2_high, ln2_low = float.fromhex("0x1.62e42fefa3800p-1"), float.fromhex("0x1.ef35793c76730p-45")
    m, e = xp.frexp(x)
    small = m < 0.70710678118654752
    m = xp.where(small, m * 2.0, m)
    e = xp.f64(e) - xp.where(small, 1.0, 0.0)
    t = (m - 1.0) / (m + 1.0)
    t2 = t * t
    series = t2 * 0.0
    for k in range(12, 0, -1):
        series = (series + 1.0 / (2 * k + 1)) * t2
    ln_m = 2.0 * t + (2.0 * t) * series
    return e * ln2_high + (e * ln2_low + ln_m)


def _values(xp, spec, seed, count):
    """Element i of the distribution as an f64 array (docs/inputs.md's table)."""
    kind, params = spec["distribution"], spec["params"]
    index = xp.counters(count)
    if kind == "uniform":
        lo, hi = _number(params, "lo", 0.0), _number(params, "hi", 1.0)
        return (hi - lo) * _unit(xp, random_bits(seed, index)) + lo
    if kind == "ramp":
        return xp.f64(index) * _number(params, "step", 1.0) + _number(params, "start", 0.0)
    if kind == "constant":
        return xp.full(count, _number(params, "value"))
    if kind == "integers":
        lo, hi = _number(params, "lo"), _number(params, "hi")
        span = int(hi - lo) + 1
        if not 0 < span < (1 << 31):
            raise Unsupported(f"integers lo={lo:g} hi={hi:g}: a range of {span} values (this runner makes up to 2^31)")
        bits = random_bits(seed, index)
        low_product = (bits & 0xFFFFFFFF) * span  # below 2^63: both factors below 2^32 and 2^31
        pick = (_shift_right(bits, 32) * span + _shift_right(low_product, 32)) >> 32  # floor(bits * span / 2^64)
        return xp.f64(pick) + lo
    if kind == "normal":
        mean, stddev = _number(params, "mean", 0.0), _number(params, "stddev", 1.0)
        result, pending = xp.full(count, mean), None
        for attempt in range(64):  # Marsaglia's polar method, attempt j on counters 128 i + 2 j (+ 1)
            counter = index * 128 + 2 * attempt
            u = 2.0 * _unit(xp, random_bits(seed, counter)) - 1.0
            v = 2.0 * _unit(xp, random_bits(seed, counter + 1)) - 1.0
            s = u * u + v * v
            accepted = (s > 0.0) & (s < 1.0)
            if pending is not None:
                accepted = accepted & pending
            safe = xp.where(accepted, s, 0.5)
            value = mean + stddev * (u * xp.sqrt(-2.0 * _portable_log(xp, safe) / safe))
            result = xp.where(accepted, value, result)
            pending = ~accepted if pending is None else pending & ~accepted
            if not xp.any(pending):
                break
        return result
    raise Unsupported(f"inputs of the {kind} distribution are not made here (docs/inputs.md; this runner makes "
                      "uniform, ramp, constant, integers and normal)")


def _round_to_odd_f32(xp, values):
    """values (f64) rounded to f32 toward zero, with the last bit set where that was inexact: rounding
    this to a type of 22 bits or fewer (f16, bf16, FP8) to nearest gives the correctly rounded value
    (Boldo and Melquiond 2008), which rounding through f32 to nearest would not at a tie it makes."""
    f = xp.f32(values)
    back = xp.f64(f)
    inexact = (back != values) & ~xp.isnan(values)
    bits = xp.f32_bits(f)
    toward_zero = xp.where(inexact & (abs(back) > abs(values)), bits - 1, bits)
    return xp.f32_from_bits(xp.where(inexact, toward_zero | 1, toward_zero))


def generate(xp, spec, case_name, input_name, count, dtype):
    """The input's count elements as kcs makes them, in its storage dtype ('i32' for an integer input).
    A normal input's values are made with NumPy, on the host, whatever xp is: its square root is
    IEEE's, correctly rounded, where PyTorch's on the CPU (MKL's) is not always."""
    seed = spec["seed"] if spec.get("seed") is not None else fnv1a(f"{case_name}:{input_name}")
    if spec["distribution"] == "normal" and not isinstance(xp, NumpyArrays):
        values = xp.from_numpy(_values(NumpyArrays(), spec, seed, count))
    else:
        values = _values(xp, spec, seed, count)
    return rounded(xp, values, dtype)


def rounded(xp, values, dtype):
    """f64 values rounded once to dtype, to nearest even (integers exact)."""
    if dtype == "f64":
        return values
    if dtype == "f32":
        return xp.f32(values)
    if dtype == "i32":
        return xp.int32(values)
    return xp.narrow(_round_to_odd_f32(xp, values), dtype)


# ---- the ops: arrays, PyTorch form, checked subset -------------------------------------------------

TORCH_DTYPES = {"f64": lambda t: t.float64, "f32": lambda t: t.float32, "f16": lambda t: t.float16,
                "bf16": lambda t: t.bfloat16, "fp8_e4m3": lambda t: t.float8_e4m3fn,
                "fp8_e5m2": lambda t: t.float8_e5m2, "i32": lambda t: t.int32}
ITEM_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "i32": 4}


class Array:
    """One input or output of a case: its name, shape and storage dtype."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(int(s) for s in shape), dtype

    @property
    def count(self):
        return math.prod(self.shape)

    @property
    def bytes(self):
        return self.count * ITEM_BYTES[self.dtype]


def _size(case, name):
    if name not in case["sizes"]:
        raise Unsupported(f"the case gives no size {name}")
    return int(case["sizes"][name])


def _param(case, name, default=None):
    return case["params"].get(name, default)


class Subset:
    """Which part of a case's outputs `kcs check` is given: per input and output a function taking
    the whole array to that part, the part's shape for each output, and where the part's element i
    (flat) is in the whole output."""

    def __init__(self, pick_input, pick_output, part_shape, place, elements, whole):
        self.pick_input, self.pick_output, self.part_shape = pick_input, pick_output, part_shape
        self.place, self.elements, self.whole = place, elements, whole


def everything(arrays_out):
    """The whole of every output."""
    total = sum(a.count for a in arrays_out)
    return Subset(lambda name, a: a, lambda name, a: a, lambda array: array.shape, lambda output, index: index,
                  total, True)


def chosen(total, wanted, seed):
    """Up to wanted distinct indices below total, sorted, first and last always among them."""
    import random
    if total <= wanted:
        return list(range(total))
    return sorted({0, total - 1} | set(random.Random(seed).sample(range(1, total - 1), wanted - 2)))


def gemm_arrays(case):
    m, n, k = _size(case, "m"), _size(case, "n"), _size(case, "k")
    dtype = case["dtype"]
    c_dtype = _param(case, "c_dtype", dtype)
    transa, transb = _param(case, "transa", "N").upper() == "T", _param(case, "transb", "N").upper() == "T"
    return ([Array("a", (k, m) if transa else (m, k), dtype), Array("b", (n, k) if transb else (k, n), dtype),
             Array("c", (m, n), c_dtype)], [Array("c_out", (m, n), c_dtype)])


def gemm_form(case, torch):
    dtype, mode = case["dtype"], _param(case, "mode", "")
    transa, transb = _param(case, "transa", "N").upper() == "T", _param(case, "transb", "N").upper() == "T"
    alpha, beta = float(_param(case, "alpha", "1")), float(_param(case, "beta", "0"))
    c_dtype = _param(case, "c_dtype", dtype)
    settings = {"torch.backends.cuda.matmul.allow_tf32": mode == "tf32",
                "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": False,
                "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": False}
    if dtype.startswith("fp8"):
        if transa or not transb or alpha != 1 or beta != 0:
            raise Unsupported("torch._scaled_mm takes A row-major and B column-major (transa=N transb=T), "
                              "alpha = 1 and beta = 0; this case asks for another form")
        if not hasattr(torch, "_scaled_mm"):
            raise Unsupported(f"PyTorch {torch.__version__} has no torch._scaled_mm")
        out_dtype = TORCH_DTYPES[c_dtype](torch)
        scales = [float(_param(case, "a_scale", "1")), float(_param(case, "b_scale", "1"))]

        def scaled(a, b, c, scale_a, scale_b):
            return torch._scaled_mm(a, b.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)
        return (scaled, "torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype) (FP8 in, f32 accumulation)",
                settings, scales)
    if c_dtype != dtype:
        raise Unsupported(f"c_dtype={c_dtype} with {dtype} inputs: no PyTorch form chosen here")

    def operands(a, b):
        return (a.t() if transa else a), (b.t() if transb else b)
    if alpha == 1 and beta == 0:
        def matmul(a, b, c):
            x, y = operands(a, b)
            return x @ y
        text = f"{'a.t()' if transa else 'a'} @ {'b.t()' if transb else 'b'}"
        return matmul, text, settings, []

    def addmm(a, b, c):
        x, y = operands(a, b)
        return torch.addmm(c, x, y, beta=beta, alpha=alpha)
    return addmm, "torch.addmm(c, a, b, beta=beta, alpha=alpha)", settings, []


def gemm_subset(case, seed):
    (a, b, c), (out,) = gemm_arrays(case)
    m, n = out.shape
    transa, transb = _param(case, "transa", "N").upper() == "T", _param(case, "transb", "N").upper() == "T"
    if m * n <= CHECKED_ELEMENTS:
        return everything([out])
    rows, cols = chosen(m, CHECKED_ROWS, seed), chosen(n, CHECKED_ROWS, seed + 1)

    def pick_input(name, array):
        if name == "a":
            return array[:, rows] if transa else array[rows, :]
        if name == "b":
            return array[cols, :] if transb else array[:, cols]
        return array[rows, :][:, cols]
    return Subset(pick_input, lambda name, array: array[rows, :][:, cols], lambda array: (len(rows), len(cols)),
                  lambda output, index: rows[index // len(cols)] * n + cols[index % len(cols)],
                  len(rows) * len(cols), False)


def softmax_arrays(case):
    shape = (_size(case, "rows"), _size(case, "cols"))
    return [Array("x", shape, case["dtype"])], [Array("y", shape, case["dtype"])]


def softmax_form(case, torch):
    return (lambda x: torch.softmax(x, dim=-1)), "torch.softmax(x, dim=-1)", {}, []


def row_subset(arrays_out, rows_total, per_row, seed, rows_wanted=None, keep_inputs=()):
    """Whole rows (CHECKED_ROWS unless rows_wanted says) of every input and output but those in
    keep_inputs (given whole)."""
    rows_wanted = rows_wanted or CHECKED_ROWS
    if rows_total <= rows_wanted:
        return everything(arrays_out)
    rows = chosen(rows_total, rows_wanted, seed)
    return Subset(lambda name, array: array if name in keep_inputs else array[rows],
                  lambda name, array: array[rows], lambda array: (len(rows),) + array.shape[1:],
                  lambda output, index: rows[index // per_row] * per_row + index % per_row,
                  len(rows) * per_row * len(arrays_out), False)


def softmax_subset(case, seed):
    _, outputs = softmax_arrays(case)
    return row_subset(outputs, _size(case, "rows"), _size(case, "cols"), seed)


def sumsq_arrays(case):
    return [Array("x", (_size(case, "n"),), case["dtype"])], [Array("s", (), case["dtype"])]


def sumsq_form(case, torch):
    # docs/sumsq.md: the sum is carried in f64 (f32 for 16-bit inputs), then rounded to the type.
    dtype = TORCH_DTYPES[case["dtype"]](torch)
    carried = "f32" if case["dtype"] in ("f16", "bf16") else "f64"
    accumulate = TORCH_DTYPES[carried](torch)
    return ((lambda x: torch.linalg.vector_norm(x, dtype=accumulate).square().to(dtype)),
            f"torch.linalg.vector_norm(x, dtype={carried}).square() rounded to {case['dtype']} (sum carried in "
            f"{carried})", {}, [])


def elementwise_arrays(case):
    shape = (_size(case, "n"),)
    names = ("x", "y") if case["op"] in ("add", "mul") else ("x",)
    return [Array(n, shape, case["dtype"]) for n in names], [Array("out", shape, case["dtype"])]


def elementwise_form(case, torch):
    forms = {"add": (lambda x, y: x + y, "x + y"), "mul": (lambda x, y: x * y, "x * y"),
             "relu": (torch.relu, "torch.relu(x)"), "sigmoid": (torch.sigmoid, "torch.sigmoid(x)")}
    function, text = forms[case["op"]]
    return function, text, {}, []


def elementwise_subset(case, seed):
    n = _size(case, "n")
    if n <= CHECKED_ELEMENTS:
        return everything(elementwise_arrays(case)[1])
    picked = chosen(n, CHECKED_ELEMENTS, seed)
    return Subset(lambda name, array: array[picked], lambda name, array: array[picked],
                  lambda array: (len(picked),), lambda output, index: picked[index], len(picked), False)


def assign_arrays(case):
    n, d, m = _size(case, "n"), _size(case, "d"), _size(case, "m")
    return ([Array("x", (n, d), case["dtype"]), Array("a", (m, d), "f32")],
            [Array("idx", (n,), "i32"), Array("dist", (n,), "f32")])


def assign_form(case, torch):
    # docs/anneal.md forbids the expanded form for the distance, and allows it for a shortlist: the
    # nearest anchor by one GEMM, as examples/anneal_torch.py finds it, then its distance as a sum of
    # squared differences.
    def assign(x, a):
        points = x.float()
        scores = (points * points).sum(1, keepdim=True) - 2.0 * (points @ a.t()) + (a * a).sum(1)[None, :]
        idx = scores.argmin(1)
        dist = ((points - a[idx]) ** 2).sum(1)
        return idx.to(torch.int32), dist
    return (assign, "argmin of |x|^2 - 2 x a^T + |a|^2 (f32 GEMM, TF32 off), then dist = ((x - a[idx])**2).sum(1)",
            {"torch.backends.cuda.matmul.allow_tf32": False}, [])


def assign_subset(case, seed):
    return row_subset(assign_arrays(case)[1], _size(case, "n"), 1, seed, rows_wanted=4096, keep_inputs=("a",))


def reduce_arrays(case):
    n, d, m = _size(case, "n"), _size(case, "d"), _size(case, "m")
    return ([Array("x", (n, d), case["dtype"]), Array("idx", (n,), "i32")],
            [Array("count", (m,), "i32"), Array("mean", (m, d), "f32"), Array("var", (m, d), "f32")])


def reduce_form(case, torch):
    m = _size(case, "m")

    def reduce(x, idx):
        points, anchor = x.float(), idx.long()
        count = torch.bincount(anchor, minlength=m)
        divisor = count.clamp_min(1).to(torch.float32)[:, None]
        mean = torch.zeros(m, points.shape[1], device=x.device).index_add_(0, anchor, points) / divisor
        deviation = points - mean[anchor]
        var = torch.zeros_like(mean).index_add_(0, anchor, deviation * deviation) / divisor
        return count.to(torch.int32), mean, var
    return (reduce, "bincount(idx); index_add_ of x / count; index_add_ of (x - mean[idx])^2 / count (two passes)",
            {}, [])


def update_arrays(case):
    m, d = _size(case, "m"), _size(case, "d")
    return ([Array("a", (m, d), "f32"), Array("v", (m, d), "f32"), Array("mean", (m, d), "f32"),
             Array("count", (m,), "i32")], [Array("a_next", (m, d), "f32"), Array("v_next", (m, d), "f32")])


def update_form(case, torch):
    momentum = float(_param(case, "momentum"))
    step = float(_param(case, "learning_rate")) * float(_param(case, "temperature"))

    def update(a, v, mean, count):
        decayed = momentum * v
        v_next = torch.where(count[:, None] > 0, decayed + (mean - a), decayed)
        return a + step * v_next, v_next
    return update, "v' = where(count > 0, mu v + (mean - a), mu v); a' = a + (lr T) v'", {}, []


def energy_arrays(case):
    return [Array("dist", (_size(case, "n"),), "f32")], [Array("e", (), "f32")]


def energy_form(case, torch):
    return ((lambda dist: dist.to(torch.float64).mean().to(torch.float32)),
            "dist.to(float64).mean() rounded to f32 (sum carried in f64)", {}, [])


def whole(arrays):
    return lambda case, seed: everything(arrays(case)[1])


# Per op: (its arrays, its PyTorch form, the part of its outputs checked).
OPS = {"gemm": (gemm_arrays, gemm_form, gemm_subset),
       "softmax": (softmax_arrays, softmax_form, softmax_subset),
       "sumsq": (sumsq_arrays, sumsq_form, whole(sumsq_arrays)),
       "add": (elementwise_arrays, elementwise_form, elementwise_subset),
       "mul": (elementwise_arrays, elementwise_form, elementwise_subset),
       "relu": (elementwise_arrays, elementwise_form, elementwise_subset),
       "sigmoid": (elementwise_arrays, elementwise_form, elementwise_subset),
       "assign": (assign_arrays, assign_form, assign_subset),
       "reduce": (reduce_arrays, reduce_form, whole(reduce_arrays)),
       "update": (update_arrays, update_form, whole(update_arrays)),
       "energy": (energy_arrays, energy_form, whole(energy_arrays))}


def case_arrays(case):
    """(inputs, outputs) of a case, as Arrays; Unsupported for an op without a form here."""
    if case["op"] not in OPS:
        raise Unsupported(f"no PyTorch form of {case['op']} here (kcs_torch_peers.OPS)")
    return OPS[case["op"]][0](case)


def rotation_copies(arrays):
    """harness/suite.c's rotation_copies: how many sets of buffers the timed repeats rotate among."""
    total = sum(a.bytes for a in arrays)
    if total == 0 or total >= ROTATION_BYTES:
        return 1
    return min(MAX_ROTATION_COPIES, -(-ROTATION_BYTES // total))


# ---- kcs check ------------------------------------------------------------------------------------

def save_npy(path, array):
    """A NumPy array (bf16 and FP8 as their bits, docs/npy.md) as .npy."""
    import numpy
    array = numpy.asarray(array)
    numpy.save(path, array if array.flags["C_CONTIGUOUS"] else numpy.array(array, order="C"))


WORST = re.compile(r"^worst element: (\w+)\[([0-9, ]*)\] expected (\S+), got (\S+), error (\S+), bound (\S+)$")
VERDICT = re.compile(r"^(PASS|FAIL): (\d+) elements checked, (\S+) of the bound used(?:; (.*))?$")
MORE_OUTSIDE = re.compile(r"and (\d+) more of \d+ checked elements outside their bound")


def read_check(text, outputs, subset):
    """(status, message, accuracy, explanation) from `kcs check`'s output: the verdict, the worst
    element (placed in the case's whole output), how many elements were outside the bound."""
    status, message, accuracy, explanation = None, "", {}, None
    for line in text.splitlines():
        worst = WORST.match(line)
        verdict = VERDICT.match(line)
        if worst:
            name, coordinates = worst.group(1), [int(c) for c in worst.group(2).split(",") if c.strip()]
            position = next((i for i, a in enumerate(outputs) if a.name == name), 0)
            index = 0
            for coordinate, extent in zip(coordinates, subset.part_shape(outputs[position]) or (1,)):
                index = index * extent + coordinate
            accuracy["worst"] = {"output": position, "index": subset.place(position, index),
                                 "expected": float(worst.group(3)), "actual": float(worst.group(4)),
                                 "error": float(worst.group(5)), "bound": float(worst.group(6))}
        elif verdict:
            status = "pass" if verdict.group(1) == "PASS" else "fail"
            checked, used = int(verdict.group(2)), float(verdict.group(3))
            message = verdict.group(4) or ""
            more = MORE_OUTSIDE.search(message)
            failures = 0 if status == "pass" else 1 + (int(more.group(1)) if more else 0)
            accuracy.update({"checked": checked, "failures": failures, "unwritten": 0, "fraction_of_bound": used})
        elif line.startswith("explained: "):
            text_of = line[len("explained: "):]
            verdict_of = ("unexplained" if text_of.startswith("unexplained") else
                          "consistent" if text_of.startswith("consistent with") else "not explained")
            explanation = {"text": text_of, "verdict": verdict_of}
    return status, message, accuracy, explanation


def run_check(kcs, case, arrays_in, arrays_out, parts_in, parts_out, subset, folder, inputs_folder=None):
    """Writes the checked parts of the inputs and outputs (NumPy arrays, subset's picks) as .npy
    under folder (the inputs under inputs_folder where given, once for every variant) and runs `kcs
    check` on them: (status, message, accuracy, explanation, command)."""
    os.makedirs(folder, exist_ok=True)
    command = [kcs, "check", case["op"], "--dtype", case["dtype"]]
    for array, value in zip(arrays_in, parts_in):
        path = os.path.join(inputs_folder or folder, f"{array.name}.npy")
        if not os.path.exists(path):
            save_npy(path, value)
        command += ["--input", f"{array.name}={path}"]
    for array, value in zip(arrays_out, parts_out):
        path = os.path.join(folder, f"out.{array.name}.npy")
        save_npy(path, value)
        command += ["--actual", f"{array.name}={path}"]
    for name, value in sorted(case["params"].items()):
        command += ["--param", f"{name}={value}"]
    errors = os.path.join(folder, "errors")
    checked = subprocess.run(command + ["--errors", errors], capture_output=True, text=True)
    if checked.returncode not in (0, 1):
        return "error", f"kcs check: exit {checked.returncode}: {checked.stderr.strip()}", None, None, command
    status, message, accuracy, explanation = read_check(checked.stdout, arrays_out, subset)
    if status is None or (status == "pass") != (checked.returncode == 0):
        return ("error", f"kcs check: exit {checked.returncode}, and its output says no verdict this runner reads: "
                f"{checked.stdout.strip()[-300:]}", None, None, command)
    if case["op"] != "assign":  # assign's idx is judged by its near-tie rule, not by error over bound
        histogram = fraction_histogram(errors, arrays_out)
        if sum(histogram["counts"]) + histogram["above"] == accuracy["checked"] and \
                histogram["above"] == accuracy["failures"]:
            accuracy["fraction_histogram"] = histogram
    return status, message, accuracy, explanation, command


def fraction_histogram(errors, arrays_out):
    """The checker's fraction_histogram (docs/results.md) from `kcs check --errors`' per-element
    errors and bounds: counts[i] the elements with 2^(u-1) < error/bound <= 2^u for u = -20..0,
    counts[0] also every fraction below (0 where the error is 0), above the elements outside."""
    import numpy
    counts, above = numpy.zeros(21, dtype=numpy.int64), 0
    for array in arrays_out:
        error = numpy.load(os.path.join(errors, f"error.{array.name}.npy")).ravel()
        bound = numpy.load(os.path.join(errors, f"bound.{array.name}.npy")).ravel()
        with numpy.errstate(divide="ignore", invalid="ignore"):
            used = numpy.where(error == 0, 0.0, error / bound)
        used = numpy.where(numpy.isnan(used), numpy.inf, used)
        above += int((used > 1).sum())
        inside = used[used <= 1]
        small = inside <= 2.0 ** -20
        counts[0] += int(small.sum())
        mantissa, exponent = numpy.frexp(inside[~small])  # used = mantissa 2^exponent, mantissa in [0.5, 1)
        upper = numpy.where(mantissa == 0.5, exponent - 1, exponent)
        counts += numpy.bincount(upper + 20, minlength=21)[:21]
    return {"log2_upper": list(range(-20, 1)), "counts": [int(c) for c in counts], "above": above}


# ---- timing: kcs's method with PyTorch --------------------------------------------------------------

def quantile(ordered, q):
    """harness/suite.c's quantile: linear between order statistics."""
    position = q * (len(ordered) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(ordered) - 1)
    weight = position - below
    return ordered[below] * (1.0 - weight) + ordered[above] * weight


def timing_figures(samples, copies, kept=1000):
    """A timing object as kcs_timing_from_samples and harness/results.c write it."""
    ordered = sorted(samples)
    return {"repeats": len(samples), "rotated_copies": copies, "median_s": quantile(ordered, 0.5),
            "lower_quartile_s": quantile(ordered, 0.25), "upper_quartile_s": quantile(ordered, 0.75),
            "min_s": ordered[0], "max_s": ordered[-1], "samples_s": list(samples[:kept])}


def timed_enough(count, total, options):
    """harness/suite.c's timed_enough."""
    return count >= options.max_repeats or (count >= options.min_repeats and total >= options.min_time)


# kcs's hold kernel (cuda/backend.cu, kcs_hold_stream) in PTX: one thread that spins until the host
# sets flags[0] in pinned memory, or gives up after limit_ns and sets flags[1]. PyTorch has no such
# kernel; CudaDriverHold loads this through the CUDA driver API. nanosleep needs sm_70 (PTX 6.3).
HOLD_PTX = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry kcs_hold_stream(.param .u64 flags_param, .param .u64 limit_param)
{
    .reg .pred stop;
    .reg .b32 flag;
    .reg .b64 flags, limit, start, now, waited;
    ld.param.u64 flags, [flags_param];
    ld.param.u64 limit, [limit_param];
    mov.u64 start, %globaltimer;
wait:
    ld.volatile.global.b32 flag, [flags];
    setp.ne.b32 stop, flag, 0;
    @stop bra done;
    mov.u64 now, %globaltimer;
    sub.u64 waited, now, start;
    setp.gt.u64 stop, waited, limit;
    @stop bra gave_up;
    nanosleep.u32 1000;
    bra wait;
gave_up:
    mov.b32 flag, 1;
    st.volatile.global.b32 [flags+4], flag;
done:
    ret;
}
"""


class DriverError(Exception):
    """The CUDA driver API refused a step of CudaDriverHold's set-up (the run falls back to SleepHeldTimer)."""


class CudaDriverHold:
    """kcs's hold kernel on PyTorch's current stream: HOLD_PTX loaded with cuModuleLoadData into
    the context PyTorch made current, launched with cuLaunchKernel (libcuda through ctypes, so that
    PyTorch needs nothing built), released by the host writing flags[0] of a pinned tensor (under
    unified addressing the device reads pinned host memory at the host's address). Gives up after
    LIMIT_NS, as kcs's hold_limit_ns. libcuda: the driver library, or a stand-in (the tests)."""

    LIMIT_NS = 100 * 1000 * 1000
    PAIRS = 3  # flag pairs, as kcs's KCS_CUDA_HOLDS: one for a run on its own, two for chunks back to back

    def __init__(self, torch, libcuda=None):
        import ctypes
        self.ctypes, self.torch = ctypes, torch
        self.lib = libcuda if libcuda is not None else ctypes.CDLL("libcuda.so.1")
        torch.zeros(1, device="cuda")  # PyTorch's context made, and current on this thread
        context = ctypes.c_void_p()
        self.check("cuCtxGetCurrent", self.lib.cuCtxGetCurrent(ctypes.byref(context)))
        if not context.value:
            raise DriverError("no current CUDA context (PyTorch has not used the device yet)")
        module, self.function = ctypes.c_void_p(), ctypes.c_void_p()
        self.check("cuModuleLoadData", self.lib.cuModuleLoadData(ctypes.byref(module),
                                                                 ctypes.c_char_p(HOLD_PTX.encode())))
        self.module = module
        self.check("cuModuleGetFunction", self.lib.cuModuleGetFunction(ctypes.byref(self.function), module,
                                                                       ctypes.c_char_p(b"kcs_hold_stream")))
        self.flags = torch.zeros(2 * self.PAIRS, dtype=torch.int32, pin_memory=True)
        self.address = self.flags.data_ptr()
        self.held = None
        # the launch's parameters for each pair: its flags' address, the limit
        self.arguments = [(ctypes.c_uint64(self.address + 8 * pair), ctypes.c_uint64(self.LIMIT_NS))
                          for pair in range(self.PAIRS)]
        self.parameters = [(ctypes.c_void_p * 2)(*(ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in arguments))
                           for arguments in self.arguments]

    def check(self, name, result):
        if result != 0:
            raise DriverError(f"{name} returned CUDA error {result}")

    def flag(self, pair, index):
        return self.ctypes.c_int32.from_address(self.address + 8 * pair + 4 * index)

    def queue(self, pair=0):
        """The hold on flag pair `pair`, on the current stream, its flags cleared first."""
        self.flag(pair, 1).value = 0
        self.flag(pair, 0).value = 0
        one = self.ctypes.c_uint(1)
        stream = self.ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        self.check("cuLaunchKernel", self.lib.cuLaunchKernel(self.function, one, one, one, one, one, one,
                                                             self.ctypes.c_uint(0), stream, self.parameters[pair],
                                                             None))
        self.held = pair

    def release(self):
        """Lets the hold queued last end."""
        if self.held is not None:
            self.flag(self.held, 0).value = 1
            self.held = None

    def gave_up(self, pair=0):
        return self.flag(pair, 1).value != 0


class HeldStreamTimer:
    """One run between two CUDA events with the stream held while the host queues it, exactly as
    cuda/backend.cu's timer ("Timing") does: its hold kernel (CudaDriverHold) queued first, the
    start event behind it, the run's launches, the host's release, the stop event. The clock starts
    with every launch of the run already queued, so the host's work (PyTorch's dispatch,
    torch.compile's guards, cuBLAS choosing its kernel) does not count, and the device goes from
    one run's kernels to the hold and the next run with no idle time the host's pace decides: as
    kcs's rows. A hold that gives up (a run that waits for the device inside its timed region) is
    counted as not held; after GIVE_UPS_ALLOWED in a row the runs are timed without one, as kcs's."""

    GIVE_UPS_ALLOWED = 3
    CHUNK = 16  # repeats a chunk back to back, as cuda/backend.cu's back_to_back_chunk

    def __init__(self, torch, hold):
        self.torch, self.hold = torch, hold
        self.start, self.stop = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        self.give_ups, self.not_held = 0, 0
        # two chunks' events: [chunk][repeat] = (start, stop)
        self.chunk_events = [[tuple(torch.cuda.Event(enable_timing=True) for _ in range(2))
                              for _ in range(self.CHUNK)] for _ in range(2)]
        self.why_not_back_to_back = ""

    def run(self, launch):
        """(seconds of the run on the device, what launch() returned)."""
        held = self.give_ups < self.GIVE_UPS_ALLOWED
        if held:
            self.hold.queue()
        self.start.record()
        try:
            result = launch()
        finally:
            if held:
                self.hold.release()
        self.stop.record()
        self.stop.synchronize()
        if held and self.hold.gave_up():
            self.give_ups += 1
            self.not_held += 1
        elif held:
            self.give_ups = 0
        else:
            self.not_held += 1
        return self.start.elapsed_time(self.stop) / 1e3, result

    def back_to_back(self, count, launch):
        """The seconds of count repeats, launch(r) making repeat r, queued back to back as kcs's CUDA
        backend queues them (cuda/backend.cu, "Back to back"): in chunks of CHUNK repeats, each chunk
        behind a hold of its own and each repeat between two events of the chunk's, the chunk's hold
        released once all its repeats are queued, and only then the chunk before it waited for and read.
        While the device runs one chunk the host queues the next, so that where the host queues a repeat
        faster than the device runs one the device never idles between repeats, and no host work falls
        between a repeat's events. None where a hold gave up (a run that waits for the device while it
        is held; why_not_back_to_back says so): the caller then times the runs one at a time."""
        if self.give_ups >= self.GIVE_UPS_ALLOWED:
            self.why_not_back_to_back = f"{self.give_ups} holds in a row gave up"
            return None
        seconds, waiting, chunk = [None] * count, None, 0
        for first in range(0, count, self.CHUNK):
            events, pair, queued = self.chunk_events[chunk % 2], 1 + chunk % 2, min(self.CHUNK, count - first)
            self.hold.queue(pair)
            try:
                for r in range(queued):
                    events[r][0].record()
                    launch(first + r)
                    events[r][1].record()
            finally:
                self.hold.release()
            ready = waiting is None or self.read_chunk(waiting, seconds)
            waiting, chunk = (pair, first, queued, events), chunk + 1
            if not ready:
                break
        ready = self.read_chunk(waiting, seconds) and ready
        return seconds if ready else None

    def read_chunk(self, chunk, seconds):
        """Waits for a queued chunk and writes its repeats' seconds; False where its hold gave up."""
        pair, first, queued, events = chunk
        events[queued - 1][1].synchronize()
        if self.hold.gave_up(pair):
            self.give_ups += 1
            self.why_not_back_to_back = ("a run waited for the device while its repeats were held (the hold gave "
                                         f"up after {CudaDriverHold.LIMIT_NS // 1000000} ms)")
            return False
        self.give_ups = 0
        for r in range(queued):
            seconds[first + r] = events[r][0].elapsed_time(events[r][1]) / 1e3
        return True

    def notes(self):
        return {"hold": "kcs's hold kernel (cuda/backend.cu), released by the host once the run is queued",
                "runs_not_held": self.not_held}


class SleepHeldTimer:
    """The fallback where CudaDriverHold cannot be set up (no libcuda to load, a driver that
    refuses the PTX): the start event waits behind torch.cuda._sleep, a kernel that spins for a
    number of clock cycles, and each run proves that it held: the host's time from queueing the hold to queueing the stop event
    must be shorter than the hold lasted on the device (measured by an event before it). A run that
    outlasts its hold is run again with a hold twice as long (up to MAX_HOLD_S; the longest kept is
    reported); one that outlasts even that is kept and counted as not held, as kcs keeps a run
    whose hold gave up. Its cost: the device idles for the hold, at least 0.2 ms a run and as long
    as the slowest queueing seen, so the card runs cooler than under kcs's back-to-back runs. On an
    H200 (2026-11-28, one call, --warm-up 0.3) the holds had grown to 1.7 ms, and PyTorch's cuBLAS
    calls ran at the idle card's clocks: f16 GEMM 4096^3 0.185 ms against 0.213 ms for kcs's
    cuBLAS row (the same library) and DGEMM 2.28 against 2.51 ms, 13% and 10% faster. The notes of
    every row say which timer timed it."""

    FIRST_HOLD_S = 2e-4
    MAX_HOLD_S = 0.05

    def __init__(self, torch):
        self.torch, self.why_not = torch, "not tried"
        self.before, self.start, self.stop = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        self.hold_s, self.longest_hold_s, self.not_held, self.rerun = self.FIRST_HOLD_S, 0.0, 0, 0
        self.cycles_per_s = None
        if not hasattr(torch.cuda, "_sleep"):
            return  # every run is then timed without a hold, and counted as not held
        cycles = 1 << 20
        torch.cuda.synchronize()
        spans = []
        for _ in range(3):
            self.before.record()
            torch.cuda._sleep(cycles)
            self.start.record()
            self.start.synchronize()
            spans.append(self.before.elapsed_time(self.start) / 1e3)
        self.cycles_per_s = cycles / sorted(spans)[1]

    def run(self, launch):
        """(seconds of the run on the device, what launch() returned)."""
        while self.cycles_per_s is None:
            self.start.record()
            result = launch()
            self.stop.record()
            self.stop.synchronize()
            self.not_held += 1
            return self.start.elapsed_time(self.stop) / 1e3, result
        while True:
            cycles = int(self.hold_s * self.cycles_per_s)
            queued = time.perf_counter()
            self.before.record()
            self.torch.cuda._sleep(cycles)
            self.start.record()
            result = launch()
            self.stop.record()
            host_s = time.perf_counter() - queued
            self.stop.synchronize()
            held_s = self.before.elapsed_time(self.start) / 1e3
            seconds = self.start.elapsed_time(self.stop) / 1e3
            self.longest_hold_s = max(self.longest_hold_s, held_s)
            if host_s < held_s:
                return seconds, result
            if self.hold_s >= self.MAX_HOLD_S:
                self.not_held += 1
                return seconds, result
            self.hold_s = min(2 * self.hold_s, self.MAX_HOLD_S)
            self.rerun += 1

    def notes(self):
        return {"hold": "torch.cuda._sleep before the start event, proven longer than the host's queueing "
                        f"(kcs's hold could not be set up: {self.why_not})",
                "longest_hold_s": self.longest_hold_s, "runs_rerun_with_a_longer_hold": self.rerun,
                "runs_not_held": self.not_held}


class WallClock:
    """--device cpu: the host's clock around each run (not kcs's method; for trying the runner)."""

    def run(self, launch):
        started = time.perf_counter()
        result = launch()
        return time.perf_counter() - started, result

    def notes(self):
        return {"hold": "none: wall clock on the CPU (--device cpu), not kcs's method"}


def held_stream_timer(torch, libcuda=None):
    """HeldStreamTimer with kcs's hold, or SleepHeldTimer saying why that could not be set up
    (libcuda: as CudaDriverHold takes it)."""
    try:
        hold = CudaDriverHold(torch, libcuda)
    except (OSError, AttributeError, DriverError) as why:  # AttributeError: a libcuda without the function
        timer = SleepHeldTimer(torch)
        timer.why_not = f"{type(why).__name__}: {why}"
        return timer
    return HeldStreamTimer(torch, hold)


def repeats_wanted(count, total, estimate, options):
    """harness/suite.c's repeats_wanted: how many more repeats to queue at once, enough by the estimate
    (seconds a repeat) to reach both the count and the time, at least one, at most what max_repeats
    leaves."""
    by_time = math.ceil((options.min_time - total) / estimate) if estimate > 0 else 1
    left = options.max_repeats - count
    return max(1, min(left, max(options.min_repeats - count, by_time)))


def time_runs(function, sets, clock, options):
    """harness/suite.c's time_kernel: an untimed run on the first set, a warm-up on the sets in turn
    until options.warm_up seconds of run time or of wall time (its warm_up), then repeats on the sets
    in turn until timed_enough; each set's output is kept until its set comes round again, so that
    every set has an output buffer of its own, as kcs's rotated sets do. Where the clock can queue
    repeats back to back (HeldStreamTimer.back_to_back) and options.one_by_one is not set, the warm-up
    after its first timed run and the timed repeats are queued so (docs/runner.md, "Back to back"); a
    clock that cannot for this function (a hold that gave up) times them one at a time, saying why."""
    copies = len(sets)
    kept = [None] * copies

    def repeat(slot):
        kept[slot] = None  # its memory goes to this repeat's output
        kept[slot] = function(*sets[slot])

    def one_alone(slot):
        kept[slot] = None
        seconds, kept[slot] = clock.run(lambda: function(*sets[slot]))
        return seconds

    queue = getattr(clock, "back_to_back", None)
    one_by_one_because = ""
    if queue is not None and getattr(options, "one_by_one", False):
        queue, one_by_one_because = None, "--one-by-one"

    def queued(first, count):
        """count repeats back to back on the sets from `first` on; None (and queue given up) where the clock
        cannot."""
        nonlocal queue, one_by_one_because
        seconds = queue(count, lambda r: repeat((first + r) % copies))
        if seconds is None:
            queue, one_by_one_because = None, clock.why_not_back_to_back
        return seconds

    kept[0] = function(*sets[0])
    warm_up, warmed, runs, started = getattr(options, "warm_up", 0.0), 0.0, 1, time.perf_counter()
    while warmed < warm_up and time.perf_counter() - started < warm_up:
        if queue is not None and runs > 1:  # the first timed one alone: the estimate
            per_run = warmed / (runs - 1)
            count = min(options.max_repeats, math.ceil((warm_up - warmed) / per_run)) if per_run > 0 else 1
            seconds = queued(runs, count)
            if seconds is not None:
                warmed, runs = warmed + sum(seconds), runs + count
                continue
        warmed, runs = warmed + one_alone(runs % copies), runs + 1
    estimate = warmed / (runs - 1) if runs > 1 else 0.0
    samples, total, loop_started = [], 0.0, time.perf_counter()
    while not timed_enough(len(samples), total, options):
        if queue is not None:
            count = repeats_wanted(len(samples), total, total / len(samples) if samples else estimate, options)
            seconds = queued(len(samples) + 1, count)
            if seconds is None:  # time them all one at a time
                samples, total, loop_started = [], 0.0, time.perf_counter()
                continue
        else:
            seconds = [one_alone((len(samples) + 1) % copies)]
        samples += seconds
        total += sum(seconds)
    figures = timing_figures(samples, copies)
    loop_seconds = time.perf_counter() - loop_started
    if loop_seconds > 0:  # the repeats' time over the loop's: what the host's pace leaves idle, as kcs writes it
        figures["busy_fraction"] = total / loop_seconds
    figures["back_to_back"] = queue is not None
    if one_by_one_because:
        figures["one_by_one_because"] = one_by_one_because
    return figures


# ---- running a case ---------------------------------------------------------------------------------

def to_numpy(torch, tensor, dtype):
    """A tensor as NumPy, bf16 and FP8 as their bits (docs/npy.md)."""
    import numpy
    tensor = tensor.detach().contiguous().cpu()
    if dtype == "bf16":
        return tensor.view(torch.int16).numpy().view(numpy.uint16)
    if dtype.startswith("fp8"):
        return tensor.view(torch.uint8).numpy()
    return tensor.numpy()


def apply_settings(torch, settings):
    """Sets each 'torch.backends...' attribute; returns the old values, for restore_settings."""
    old = {}
    for path, value in settings.items():
        owner_path, _, attribute = path.rpartition(".")
        owner = torch
        for part in owner_path.split(".")[1:]:
            owner = getattr(owner, part)
        if hasattr(owner, attribute):
            old[path] = getattr(owner, attribute)
            setattr(owner, attribute, value)
    return old


def make_inputs(torch, device, case, arrays_in):
    """The case's inputs on the device, as kcs makes them."""
    xp = TorchArrays(torch, device)
    tensors = []
    for array in arrays_in:
        spec = case["inputs"].get(array.name)
        if spec is None:
            raise Unsupported(f"the case list gives no distribution for input {array.name}")
        tensors.append(generate(xp, spec, case["name"], array.name, array.count, array.dtype).reshape(array.shape))
    return tensors


class Row:
    """What one variant of one case came to: status, message, accuracy, timing, notes."""

    def __init__(self, case, variant, status, message="", accuracy=None, explanation=None, timing=None, notes=None):
        self.case, self.variant, self.status, self.message = case, variant, status, message
        self.accuracy, self.explanation, self.timing, self.notes = accuracy, explanation, timing, notes or {}


def run_case(torch, device, case, options, clock, work_dir):
    """Every variant of one case: [Row]."""
    variants = options.variants
    try:
        arrays_in, arrays_out = case_arrays(case)
        _, form_of, subset_of = OPS[case["op"]]
        function, text, settings, scalars = form_of(case, torch)
        if device.type == "cpu" and case["dtype"].startswith("fp8"):
            raise Unsupported("FP8 GEMM (torch._scaled_mm) needs a CUDA device")
        inputs = make_inputs(torch, device, case, arrays_in)
        extra = [torch.tensor(s, dtype=torch.float32, device=device) for s in scalars]
        subset = subset_of(case, fnv1a(case["name"] + ":peers") & 0x7FFFFFFF)
        parts_in = [to_numpy(torch, subset.pick_input(a.name, t), a.dtype) for a, t in zip(arrays_in, inputs)]
    except Unsupported as why:
        return [Row(case, v, "skip", f"not measured: {why}") for v in variants]
    except Exception as error:  # out of memory making the inputs: the rows say so, the run goes on
        return [Row(case, v, "error", f"making the inputs: {type(error).__name__}: {error}"[:500]) for v in variants]
    folder = os.path.join(work_dir, case["name"].replace("/", "--"))
    rows = []
    old = apply_settings(torch, settings)
    try:
        for variant in variants:
            rows.append(run_variant(torch, case, variant, function, text, settings, inputs, extra, arrays_in,
                                    arrays_out, subset, parts_in, options, clock, folder))
    finally:
        apply_settings(torch, old)
        if not options.keep_files:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def run_variant(torch, case, variant, function, text, settings, inputs, extra, arrays_in, arrays_out, subset, parts_in,
                options, clock, case_folder):
    """One variant: compile (torch.compile), run once, check with kcs check, time if it passed."""
    notes = {"form": text, "settings": {k.rsplit(".", 1)[-1]: v for k, v in settings.items()},
             "torch_version": torch.__version__}
    if variant == "compile":
        torch._dynamo.reset()  # each case compiled afresh: no recompilation limit reached, no stale guards
        run = torch.compile(function, mode=None, dynamic=False, fullgraph=True)
        notes["compile"] = {"mode": COMPILE_MODE, "dynamic": False, "fullgraph": True}
    else:
        run = function
    folder = os.path.join(case_folder, variant)
    try:
        started = time.perf_counter()
        outputs = run(*inputs, *extra)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        if inputs[0].device.type == "cuda":
            torch.cuda.synchronize()
        notes["first_call_s"] = time.perf_counter() - started
        parts_out = [to_numpy(torch, subset.pick_output(a.name, t), a.dtype) for a, t in zip(arrays_out, outputs)]
        del outputs
        notes["checked"] = ("every output element" if subset.whole else
                            f"{subset.elements} output elements (whole rows and columns, seeded)")
        status, message, accuracy, explanation, command = run_check(
            options.kcs, case, arrays_in, arrays_out, parts_in, parts_out, subset, folder, case_folder)
        notes["check_command"] = " ".join(command)
        if status != "pass":
            return Row(case, variant, status, message, accuracy, explanation, None, notes)
        copies = rotation_copies(arrays_in + arrays_out)
        sets = [list(inputs) + extra] + [[t.clone() for t in inputs] + extra for _ in range(copies - 1)]
        timing = time_runs(run, sets, clock, options)
        del sets
        notes.update(clock.notes())
        return Row(case, variant, "pass", "", accuracy, None, timing, notes)
    except Exception as error:  # an out-of-memory, a compile error, an op PyTorch refuses: the row says so
        message = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        return Row(case, variant, "error", message[:500], None, None, None, notes)
    finally:
        if inputs[0].device.type == "cuda":
            torch.cuda.empty_cache()


# ---- the results file -----------------------------------------------------------------------------

def _whole(value):
    return int(value) if isinstance(value, float) and value.is_integer() else value


def torch_device_record(torch, device, kcs_devices):
    """The devices[] entry of the PyTorch rows, with the ceilings kcs measured on the same card in
    this run (the CUDA device of the same uuid, else the only one of the same name)."""
    if device.type == "cpu":
        return {"id": f"{BACKEND}:0", "backend": BACKEND, "index": 0, "name": "CPU",
                "platform": f"PyTorch {torch.__version__}",
                "vendor": "", "driver_version": "", "runtime_version": f"PyTorch {torch.__version__}",
                "details": "device=cpu; timed by the wall clock, not kcs's method", "memory_bytes": 0,
                "shares_host_cores": True, "ceilings": None}, None
    index = device.index if device.index is not None else torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    uuid = str(getattr(properties, "uuid", "") or "").lower()  # as kcs writes it: GPU-, lower-case hex
    uuid = "GPU-" + uuid[4:] if uuid.startswith("gpu-") else "GPU-" + uuid if uuid else ""
    cuda_devices = [d for d in kcs_devices if d.get("backend") == "cuda"]
    twin = next((d for d in cuda_devices if uuid and (device_uuid(d) or "").lower() == uuid.lower()), None)
    if twin is None and not uuid:  # a PyTorch that tells no uuid: the only CUDA device of its name
        named = [d for d in cuda_devices if d.get("name") == properties.name]
        twin = named[0] if len(named) == 1 else None
        uuid = (device_uuid(twin) or "") if twin else ""
    elif twin is not None:
        uuid = device_uuid(twin)  # its spelling, which the report matches cards by
    try:
        import triton
        compiler = f", Triton {triton.__version__}"
    except ImportError:
        compiler = ""
    details = (f"compute_capability={properties.major}.{properties.minor}; "
               f"sm_count={properties.multi_processor_count}; "
               + (f"uuid={uuid}; " if uuid else "") + f"l2_bytes={getattr(properties, 'L2_cache_size', 0)}; "
               f"torch.compile mode={COMPILE_MODE}" + (f"; same card as {twin['id']}" if twin else ""))
    ceilings = None
    if twin and twin.get("ceilings"):
        ceilings = dict(twin["ceilings"])
        ceilings["method"] = f"kcs's, measured on {twin['id']} (the same card) in the run these rows were added to"
    record = {"id": f"{BACKEND}:{index}", "backend": BACKEND, "index": index, "name": properties.name,
              "platform": f"PyTorch {torch.__version__}", "vendor": "NVIDIA",
              "driver_version": (twin or {}).get("driver_version", ""),
              "runtime_version": f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}{compiler}",
              "details": details, "memory_bytes": properties.total_memory, "shares_host_cores": False,
              "ceilings": ceilings}
    return record, twin


def same_card_results(document, case_name, twin):
    """The kcs results of a case on the card of twin (its uuid; its id where it has none)."""
    if twin is None:
        return []
    devices = {d["id"]: d for d in document.get("devices") or [] if isinstance(d, dict) and "id" in d}
    uuid = device_uuid(twin)
    return [r for r in document.get("results") or [] if r.get("case") == case_name and r.get("backend") != BACKEND
            and (device_uuid(devices.get(r.get("device"))) == uuid if uuid else r.get("device") == twin["id"])]


def result_entry(row, device_id, document, twin, arrays):
    """One results[] entry for a Row, in the schema of docs/results.md; the case's facts, bytes,
    flops and the ceiling it is held to come from kcs's results of the same case (any device for
    the facts, the same card for the ceiling), else from the case list."""
    case = row.case
    others = [r for r in document.get("results") or [] if r.get("case") == case["name"] and r.get("backend") != BACKEND]
    facts = next((r for r in others if r.get("bytes") is not None), others[0] if others else {})
    entry = {"case": case["name"], "file": facts.get("file", case.get("file")),
             "line": facts.get("line", case.get("line")),
             "op": case["op"], "dtype": case["dtype"],
             "sizes": facts.get("sizes", {k: _whole(v) for k, v in case["sizes"].items()}),
             "params": facts.get("params", case["params"]), "tags": facts.get("tags", case["tags"])}
    if facts.get("bound_tight") or case.get("bound_tight"):
        entry["bound_tight"] = facts.get("bound_tight") or case.get("bound_tight")
    checked = (row.accuracy or {}).get("checked")
    entry.update({"expected_from": "oracle" if row.notes.get("checked", "").startswith("every") or checked is None
                  else f"oracle, sample of {checked}",
                  "backend": BACKEND, "device": device_id, "kernel": KERNELS[row.variant], "kernel_library": LIBRARY,
                  "status": row.status, "message": row.message,
                  "bytes": facts.get("bytes", sum(a.bytes for a in arrays) if arrays else None),
                  "flops": facts.get("flops")})
    if row.accuracy:
        entry["accuracy"] = row.accuracy
    if row.explanation:
        entry["explanation"] = row.explanation
    if row.timing:
        median = row.timing["median_s"]
        timing = {"kernel": row.timing, "end_to_end": None}
        for measure in ("bytes", "flops"):
            if isinstance(entry.get(measure), (int, float)):
                timing[f"kernel_{measure}_per_s"] = entry[measure] / median
        same_card = sorted(same_card_results(document, case["name"], twin), key=lambda r: r.get("device") != twin["id"])
        held_to = next((r["timing"]["ceiling"] for r in same_card  # the CUDA device's own first
                        if isinstance((r.get("timing") or {}).get("ceiling"), dict)), None)
        if held_to:
            ceiling = {k: held_to[k] for k in ("kind", "ceiling_key", "measure") if k in held_to}
            amount = entry.get(held_to.get("measure") or "bytes")
            if isinstance(amount, (int, float)):
                ceiling["achieved_per_s"] = amount / median
                rate = held_to.get("ceiling_per_s")
                if isinstance(rate, (int, float)) and rate > 0:
                    ceiling["ceiling_per_s"] = rate
                    ceiling["fraction"] = ceiling["achieved_per_s"] / rate
            timing["ceiling"] = ceiling
        entry["timing"] = timing
    entry["pytorch"] = row.notes
    return entry


def merged(document, record, entries, run_notes):
    """The results document with the PyTorch device and rows in it: a rerun's rows replace the
    earlier ones of the same case, kernel and device; each row goes after the last result of its
    case (the runner's order: by case, then device); the summary is recounted."""
    document = dict(document)
    devices = [d for d in document.get("devices") or [] if d.get("id") != record["id"]]
    document["devices"] = devices + [record]
    new_keys = {(e["case"], e["kernel"], e["device"]) for e in entries}
    results = [r for r in document.get("results") or []
               if (r.get("case"), r.get("kernel"), r.get("device")) not in new_keys or r.get("backend") != BACKEND]
    for entry in entries:
        last = max((i for i, r in enumerate(results) if r.get("case") == entry["case"]), default=len(results) - 1)
        results.insert(last + 1, entry)
    document["results"] = results
    document["summary"] = dict(document.get("summary") or {}, **summary_counts(results))
    document["pytorch_peers"] = run_notes
    return document


def new_document(argv):
    """A results file of its own, for rows written where no kcs results file is."""
    import platform
    return {"schema": "kcs-results", "version": 2,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": {"hostname": platform.node(), "os": platform.system(), "kernel": platform.release(),
                        "architecture": platform.machine(), "cpu": platform.processor(), "cores": os.cpu_count()},
            "kcs": {"revision": "", "compiler": ""}, "command": list(argv), "options": {},
            "devices": [], "results": [], "agreement": [], "odd_one_out": [], "stragglers": []}


def write_document(path, document):
    """Writes the document beside path and renames it over path once load_results has read it back
    as a valid results file, so that a failed write leaves the old file as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1, allow_nan=False, default=_json_number)
        handle.write("\n")
    try:
        load_results(temporary)
    except ResultsError:
        os.unlink(temporary)
        raise
    os.replace(temporary, path)


def _json_number(value):
    raise TypeError(f"not JSON: {value!r}")


def nonfinite_as_text(value):
    """JSON has no NaN or infinity: the runner writes them as "nan", "inf", "-inf"; so does this."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: nonfinite_as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [nonfinite_as_text(v) for v in value]
    return value


# ---- the command ----------------------------------------------------------------------------------

def kcs_best(document, case_name, twin):
    """(kernel, median) of the fastest timed kcs row of a case on the card (kcs's own kernels, no
    library), or None."""
    timed = [r for r in same_card_results(document, case_name, twin) if r.get("status") == "pass"
             and not r.get("kernel_library")
             and isinstance(((r.get("timing") or {}).get("kernel") or {}).get("median_s"), (int, float))]
    best = min(timed, key=lambda r: r["timing"]["kernel"]["median_s"], default=None)
    return (best["kernel"], best["timing"]["kernel"]["median_s"]) if best else None


def line_of(entry, best):
    """The console line of a row, as kcs prints its own."""
    label = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP", "error": "ERROR"}[entry["status"]]
    where = f"{entry['device']} {entry['kernel']}"
    text = f"{label:5} {entry['case']:40} {where:28} "
    if entry["status"] != "pass":
        return text + entry["message"]
    used = entry["accuracy"]["fraction_of_bound"]
    median = entry["timing"]["kernel"]["median_s"]
    text += f"{used:.3g} of bound, {median * 1e3:.4f} ms"
    fraction = (entry["timing"].get("ceiling") or {}).get("fraction")
    if fraction is not None:
        text += f" ({fraction:.3g} of {entry['timing']['ceiling'].get('kind')})"
    if best:
        text += f"; kcs's best {best[0]} {best[1] * 1e3:.4f} ms: " + (
            f"PyTorch ahead, x{best[1] / median:.3g}" if median < best[1] else f"kcs ahead, x{median / best[1]:.3g}")
    first = entry.get("pytorch", {}).get("first_call_s")
    if entry["kernel"] == KERNELS["compile"] and first is not None:
        text += f"; compiled and first run in {first:.1f} s"
    return text


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="kcs_torch_peers.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="PyTorch eager and torch.compile as peer rows of a kcs results file, timed and checked by "
                    "kcs's method (docs/peers.md).",
        epilog="exit status: 0 every row passed or was skipped with its reason; 1 a row failed its check or had an "
               "error; 2 usage or bad input; 3 PyTorch cannot run here (not importable, or no CUDA device): nothing "
               "written")
    parser.add_argument("patterns", nargs="*", metavar="PATTERN", help="case patterns, as kcs list takes them")
    parser.add_argument("--kcs", default=os.path.join(REPOSITORY, "build", "kcs"),
                        help="the kcs runner (default: %(default)s)")
    parser.add_argument("--cases", default=None, metavar="DIR", help="case files folder (default: kcs's own)")
    parser.add_argument("--results", default="kcs-results.json", metavar="FILE",
                        help="kcs run's results file: the rows are added to it (a new one is made where none is; "
                             "default: %(default)s)")
    parser.add_argument("--output", default=None, metavar="FILE",
                        help="write the results file with the rows here instead, leaving --results as it is")
    parser.add_argument("--variants", default="eager,compile", help="eager, compile or both (default: %(default)s)")
    parser.add_argument("--min-repeats", type=int, default=10, metavar="N", help="timed runs at least (default 10)")
    parser.add_argument("--min-time", type=float, default=0.5, metavar="S", help="seconds of timed runs at least "
                                                                                 "(default 0.5)")
    parser.add_argument("--max-repeats", type=int, default=1000, metavar="N", help="timed runs at most (default 1000)")
    parser.add_argument("--warm-up", type=float, default=0.0, metavar="S",
                        help="untimed runs before the timed ones: one, and more until S seconds (default 0: one), "
                             "as kcs run --warm-up")
    parser.add_argument("--one-by-one", action="store_true",
                        help="time each repeat on its own, the device idle while the host waits for it and queues "
                             "the next, as kcs run --one-by-one (default: back to back, docs/runner.md)")
    parser.add_argument("--device", default="0", help="CUDA device index, or cpu (wall clock; not kcs's method)")
    parser.add_argument("--work-dir", default="kcs-torch-peers", metavar="DIR",
                        help="where the checked arrays are written for kcs check (default: %(default)s, removed "
                             "when empty)")
    parser.add_argument("--keep-files", action="store_true", help="keep the .npy files given to kcs check")
    args = parser.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not args.variants or any(v not in KERNELS for v in args.variants):
        parser.error(f"--variants: eager, compile or eager,compile, not {','.join(args.variants)!r}")
    if args.min_repeats < 1 or args.max_repeats < args.min_repeats or args.min_time < 0:
        parser.error("--min-repeats must be at least 1, --max-repeats at least --min-repeats, --min-time not negative")
    if not 0 <= args.warm_up <= 60:
        parser.error("--warm-up needs seconds from 0 to 60, as kcs run's")
    return args


def import_torch(device_text):
    """(torch, device), or (None, why it cannot run here)."""
    try:
        importlib.import_module("numpy")  # the .npy files for kcs check
        import torch
    except ImportError as error:
        return None, (f"PyTorch cannot be imported by {sys.executable} (Python {sys.version.split()[0]}): {error}. "
                      "Run this with a python3 that has torch and numpy; PyTorch is not one of kcs's dependencies")
    if device_text == "cpu":
        return torch, torch.device("cpu")
    if not torch.cuda.is_available():
        return None, (f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) imported by {sys.executable} sees no "
                      "CUDA device: kcs's method times on a GPU (--device cpu tries the runner on the CPU)")
    try:
        index = int(device_text)
    except ValueError:
        return None, f"--device {device_text}: a CUDA device index or cpu"
    if not 0 <= index < torch.cuda.device_count():
        return None, f"--device {index}: PyTorch sees {torch.cuda.device_count()} CUDA device(s)"
    torch.cuda.set_device(index)
    return torch, torch.device("cuda", index)


class Stopped(BaseException):
    """A signal asked the run to stop (rows_until_stopped). A BaseException, as KeyboardInterrupt
    is: the `except Exception` that turns a variant's failure into an error row must not catch it,
    or a signal that arrives while a row is timed would only end that row and the run would go on."""


def _stop(signal_number, frame):
    raise Stopped(signal_number)


def rows_until_stopped(cases, rows_of_case):
    """Every row rows_of_case(case) yields, case by case, until SIGTERM or SIGINT: returns the rows
    and None, or the rows of the cases finished and {"signal", "case" (the one in progress, or
    null between the last and the write), "cases_done", "cases"}. A stopped case's own rows are left
    out: it was not run to its end. A case's rows join in one step (finished.append), so that a
    signal between any two steps leaves each case wholly in or wholly out."""
    finished, stopped = [], None
    handlers = {number: signal.signal(number, _stop) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        for case in cases:
            finished.append(list(rows_of_case(case)))
    except Stopped as stop:
        done = len(finished)
        stopped = {"signal": signal.Signals(stop.args[0]).name,
                   "case": cases[done]["name"] if done < len(cases) else None, "cases_done": done,
                   "cases": len(cases)}
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    return [row for rows in finished for row in rows], stopped


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_arguments(argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    torch, device = import_torch(args.device)
    if torch is None:
        print(f"kcs_torch_peers: not run: {device}", file=sys.stderr)
        return EXIT_NO_TORCH
    try:
        if os.path.exists(args.results):
            load_results(args.results)  # refuses a malformed file before any work
            with open(args.results, encoding="utf-8") as handle:
                document = json.load(handle)
        else:
            document = new_document([sys.executable, sys.argv[0]] + argv)
        cases = list_cases(args.kcs, args.cases, args.patterns)
    except (ResultsError, UsageError) as error:
        print(f"kcs_torch_peers: {error}", file=sys.stderr)
        return EXIT_USAGE
    record, twin = torch_device_record(torch, device, document.get("devices") or [])
    clock = held_stream_timer(torch) if device.type == "cuda" else WallClock()
    print(f"kcs_torch_peers: PyTorch {torch.__version__} on {record['id']} ({record['name']})"
          + (f", the card of {twin['id']}" if twin else ", matched to no kcs device of the results file")
          + f"; {len(cases)} perf cases, variants {', '.join(args.variants)}", flush=True)
    started = time.perf_counter()

    def entries_of(case):
        for row in run_case(torch, device, case, args, clock, args.work_dir):
            try:
                arrays = sum(case_arrays(case), [])
            except Unsupported:
                arrays = []
            entry = nonfinite_as_text(result_entry(row, record["id"], document, twin, arrays))
            print(line_of(entry, kcs_best(document, case["name"], twin)), flush=True)
            yield entry

    entries, stopped = rows_until_stopped(cases, entries_of)
    try:
        os.rmdir(args.work_dir)
    except OSError:
        pass  # kept files, or a folder that was there before
    run_notes = {"command": [sys.executable, sys.argv[0]] + argv, "torch_version": torch.__version__,
                 "compile_mode": COMPILE_MODE,
                 "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "options": {"min_repeats": args.min_repeats, "min_seconds": args.min_time,
                             "max_repeats": args.max_repeats, "warm_up_seconds": args.warm_up,
                             "one_by_one": args.one_by_one, "variants": args.variants}}
    if stopped:
        run_notes["stopped"] = stopped
        print(f"kcs_torch_peers: stopped by {stopped['signal']} in {stopped['case']}: the rows of the "
              f"{stopped['cases_done']} of {stopped['cases']} cases done are written", file=sys.stderr, flush=True)
    target = args.output or args.results
    try:
        write_document(target, merged(document, record, entries, run_notes))
    except (OSError, ResultsError) as error:
        print(f"kcs_torch_peers: cannot write {target}: {error}", file=sys.stderr)
        return EXIT_USAGE
    counts = {s: sum(1 for e in entries if e["status"] == s) for s in ("pass", "fail", "skip", "error")}
    print(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped, {counts['error']} errors "
          f"in {time.perf_counter() - started:.0f} s; rows written to {target}")
    return EXIT_FAILED if counts["fail"] or counts["error"] or stopped else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
