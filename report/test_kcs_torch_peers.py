"""Tests of the PyTorch peer rows without PyTorch or a GPU: the input generator on NumPy, the checked
subsets, the timing loop and the hold (with a simulated device), the rows written into a results
file, the report's peers table with them, and the exit status where PyTorch cannot be imported.

    /usr/bin/python3 -m unittest discover -s report -p 'test_*.py'

tests/torch_peers_test.sh checks, with build/kcs, what needs the runner: the generator against
kcs's own inputs and `kcs check` read back as kcs run reports it.
"""

import contextlib
import copy
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import unittest

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kcs_fixtures as fx  # noqa: E402
import kcs_report  # noqa: E402
import kcs_torch_peers as peers  # noqa: E402
from kcs_views import card_of as kcs_views_card  # noqa: E402
from kcs_results import ResultsError, results_from_data, summary_counts  # noqa: E402

SCRIPT = os.path.join(HERE, "kcs_torch_peers.py")
MASK = (1 << 64) - 1


def reference_bits(seed, counter):
    """docs/inputs.md's bits(seed, counter), in Python's unbounded integers."""
    def mix(z):
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
        return z ^ (z >> 31)
    return mix((mix(seed ^ 0x6a09e667f3bcc909) + (counter + 1) * 0x9e3779b97f4a7c15) & MASK)


def case(name, op, dtype, sizes, params=None, inputs=None):
    """A case as the runner lists it."""
    return {"name": name, "op": op, "dtype": dtype, "sizes": sizes, "params": params or {},
            "inputs": {k: peers.parse_distribution(v) for k, v in (inputs or {}).items()}, "tags": ["perf"],
            "file": "cases/x.md", "line": 1, "bound_tight": None, "expect": "oracle"}


class GeneratorTests(unittest.TestCase):
    xp = peers.NumpyArrays()

    def test_bits_are_splitmix64_indexed_by_the_counter(self):
        counters = [0, 1, 2, 93, 2 ** 31, 2 ** 40 + 7, 128 * 10 ** 8 + 127, 2 ** 62 + 5]
        for seed in (0, 1, peers.fnv1a("sumsq/f64-n7:x"), MASK):
            got = peers.random_bits(seed, numpy.array(counters, dtype=numpy.int64))
            self.assertEqual([int(g) & MASK for g in got], [reference_bits(seed, c) for c in counters])

    def test_fnv1a_is_the_standard_64_bit_hash(self):
        self.assertEqual(peers.fnv1a(""), 0xcbf29ce484222325)
        self.assertEqual(peers.fnv1a("a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(peers.fnv1a("foobar"), 0x85944171f73967e8)

    def test_integers_are_the_top_of_the_128_bit_product(self):
        for span in (1, 1024, 2001, 2 ** 31 - 1):
            spec = peers.parse_distribution(f"integers lo=-5 hi={span - 6} seed=9")
            got = peers.generate(self.xp, spec, "c", "x", 4000, "i32")
            want = [-5 + (reference_bits(9, i) * span >> 64) for i in range(4000)]
            self.assertEqual(got.tolist(), want)
            self.assertEqual(got.dtype, numpy.int32)

    def test_uniform_is_lo_plus_width_times_the_unit(self):
        spec = peers.parse_distribution("uniform lo=-8 hi=8")
        got = peers.generate(self.xp, spec, "softmax/f32-x", "x", 1000, "f64")
        seed = peers.fnv1a("softmax/f32-x:x")
        want = [-8.0 + 16.0 * ((reference_bits(seed, i) >> 11) * 2.0 ** -53) for i in range(1000)]
        self.assertEqual(got.tolist(), want)
        self.assertTrue(((got >= -8) & (got < 8)).all())

    def test_16_bit_inputs_are_rounded_once_from_the_double(self):
        # Just above a midpoint of f16 (or bf16) by less than f32 resolves: rounding to f32 first makes
        # it the midpoint, which then rounds to even, down; rounded once it goes up.
        rng = random.Random(5)
        for dtype, bits in (("f16", 11), ("bf16", 8)):
            values = []
            for _ in range(2000):
                top = rng.randrange(1 << (bits - 1), 1 << bits)
                exponent = rng.randrange(-12, 12)
                midpoint = (top + 0.5) * 2.0 ** (exponent - bits)
                values.append(rng.choice((1, -1)) * midpoint * (1 + rng.choice((2 ** -40, -2 ** -40, 0.0))))
            values = numpy.array(values)
            got = self.xp.narrow(peers._round_to_odd_f32(self.xp, values), dtype)
            got_f64 = (got.astype(numpy.float64) if dtype == "f16" else
                       (got.astype(numpy.uint32) << 16).view(numpy.float32).astype(numpy.float64))
            for value, result in zip(values, got_f64):
                mantissa, exponent = math.frexp(value)
                want = round(mantissa * 2 ** bits) * 2.0 ** (exponent - bits)  # ties to even, once
                self.assertEqual(result, want, f"{dtype} of {value!r}")
            naive = self.xp.narrow(values.astype(numpy.float32), dtype)
            self.assertFalse((naive == got).all(), "the values were meant to tell the two roundings apart")

    def test_an_unknown_distribution_is_not_made(self):
        with self.assertRaisesRegex(peers.Unsupported, "special"):
            peers.generate(self.xp, peers.parse_distribution("special fraction=0.5"), "c", "x", 4, "f32")


class CaseListTests(unittest.TestCase):
    def test_json_cases_in_either_spelling(self):
        listed = peers.case_from_json({"name": "gemm/x", "op": "gemm", "dtype": "f32",
                                       "sizes": [{"name": "m", "value": 4}], "params": {"mode": "tf32"},
                                       "inputs": [{"name": "a", "distribution": "uniform",
                                                   "params": {"lo": -1, "hi": 1}, "seed": 3},
                                                  {"name": "b", "text": "normal stddev=2"}],
                                       "tags": "perf large", "file": "cases/gemm.md", "line": 9})
        self.assertEqual(listed["sizes"], {"m": 4.0})
        self.assertEqual(listed["params"], {"mode": "tf32"})
        self.assertEqual(listed["inputs"]["a"], {"distribution": "uniform", "params": {"lo": "-1", "hi": "1"}, "seed": 3})
        self.assertEqual(listed["inputs"]["b"], {"distribution": "normal", "params": {"stddev": "2"}, "seed": None})
        self.assertEqual(listed["tags"], ["perf", "large"])

    def test_json_cases_as_kcs_list_writes_them(self):
        # The layout of `kcs list --json` (docs/runner.md): numbers as numbers, the seed as decimal text
        # (64 bits do not survive a JSON reader's doubles), the list under "cases".
        text = json.dumps({"schema": "kcs-cases", "version": 1, "cases_dir": "cases", "problems": [], "cases": [
            {"name": "sumsq/f16-n100000000", "file": "cases/sumsq.md", "line": 300, "op": "sumsq", "dtype": "f16",
             "sizes": {"n": 100000000}, "params": {},
             "inputs": [{"name": "x", "distribution": "uniform", "params": {"lo": -0.03125, "hi": 0.03125},
                         "seed": str(peers.fnv1a("sumsq/f16-n100000000:x"))}],
             "expect": "oracle", "sample": 0, "tags": ["perf", "large"], "bound_tight": None}]})
        listed = peers.case_from_json(json.loads(text)["cases"][0])
        spec = listed["inputs"]["x"]
        self.assertEqual(spec["seed"], peers.fnv1a("sumsq/f16-n100000000:x"))
        self.assertEqual((float(spec["params"]["lo"]), float(spec["params"]["hi"])), (-0.03125, 0.03125))
        xp = peers.NumpyArrays()
        self.assertEqual(peers.generate(xp, spec, "renamed", "x", 50, "f16").tobytes(),
                         peers.generate(xp, peers.parse_distribution("uniform lo=-0.03125 hi=0.03125"),
                                        "sumsq/f16-n100000000", "x", 50, "f16").tobytes())


class SubsetTests(unittest.TestCase):
    def setUp(self):
        self.saved = peers.CHECKED_ELEMENTS, peers.CHECKED_ROWS
        peers.CHECKED_ELEMENTS, peers.CHECKED_ROWS = 16, 5

    def tearDown(self):
        peers.CHECKED_ELEMENTS, peers.CHECKED_ROWS = self.saved

    def test_gemm_parts_are_the_gemm_of_the_picked_rows_and_columns(self):
        rng = numpy.random.default_rng(1)
        for transa in ("N", "T"):
            for transb in ("N", "T"):
                c = case("gemm/t", "gemm", "f64", {"m": 23, "n": 17, "k": 9}, {"transa": transa, "transb": transb})
                (a_spec, b_spec, c_spec), (out_spec,) = peers.gemm_arrays(c)
                a, b = rng.standard_normal(a_spec.shape), rng.standard_normal(b_spec.shape)
                product = (a.T if transa == "T" else a) @ (b.T if transb == "T" else b)
                subset = peers.gemm_subset(c, seed=3)
                part_a, part_b = subset.pick_input("a", a), subset.pick_input("b", b)
                part = (part_a.T if transa == "T" else part_a) @ (part_b.T if transb == "T" else part_b)
                picked = subset.pick_output("c_out", product)
                numpy.testing.assert_allclose(part, picked, rtol=1e-14)
                self.assertEqual(picked.shape, subset.part_shape(out_spec))
                self.assertEqual(subset.elements, 25)
                for flat in (0, 7, 24):  # the part's element, found in the whole output
                    self.assertEqual(product.ravel()[subset.place(0, flat)], picked.ravel()[flat])

    def test_chosen_rows_include_the_first_and_last(self):
        rows = peers.chosen(1000, 64, seed=4)
        self.assertEqual(len(set(rows)), 64)
        self.assertEqual((rows[0], rows[-1]), (0, 999))
        self.assertEqual(rows, sorted(rows))
        self.assertEqual(peers.chosen(10, 64, seed=4), list(range(10)))
        for seed in range(20):  # one row left out of 65: still 64 distinct rows, first and last among them
            rows = peers.chosen(65, 64, seed)
            self.assertEqual((len(set(rows)), rows[0], rows[-1]), (64, 0, 64))

    def test_worst_element_is_placed_in_the_whole_output(self):
        c = case("softmax/t", "softmax", "f32", {"rows": 40, "cols": 3})
        subset = peers.softmax_subset(c, seed=2)
        rows = peers.chosen(40, 5, 2)
        text = ("checked softmax f32 (rows=5 cols=3) against the oracle\n"
                "worst element: y[2, 1] expected 0.25, got 0.375, error 0.125, bound 1e-07\n"
                "FAIL: 15 elements checked, 1.25e+06 of the bound used; y[2, 1]: expected 0.25, got 0.375 "
                "(and 3 more of 15 checked elements outside their bound)\n"
                "explained: unexplained: none of the 2 models of softmax for f32 fits\n")
        status, message, accuracy, explanation = peers.read_check(text, peers.softmax_arrays(c)[1], subset)
        self.assertEqual(status, "fail")
        self.assertEqual(accuracy["worst"]["index"], rows[2] * 3 + 1)
        self.assertEqual((accuracy["checked"], accuracy["failures"]), (15, 4))
        self.assertEqual(explanation["verdict"], "unexplained")
        self.assertIn("more of 15", message)


class SimulatedDevice:
    """A device and host clock for HeldStreamTimer: events stamp the device's time, a sleep or a
    kernel occupies the device, queueing a launch costs the host host_cost seconds."""

    def __init__(self, host_cost, kernel_s):
        self.device_s = self.host_s = 0.0
        self.host_cost, self.kernel_s = host_cost, kernel_s
        device = self

        class Event:
            def __init__(self, enable_timing=True):
                self.at = 0.0

            def record(self):
                self.at = device.device_s = max(device.device_s, device.host_s)

            def synchronize(self):
                device.host_s = max(device.host_s, self.at)

            def elapsed_time(self, later):
                return (later.at - self.at) * 1e3

        class Cuda:
            @staticmethod
            def _sleep(cycles):
                device.device_s = max(device.device_s, device.host_s) + cycles / 1e9

            @staticmethod
            def synchronize():
                device.host_s = max(device.host_s, device.device_s)

        Cuda.Event = Event
        self.torch = type("torch", (), {"cuda": Cuda})

    def launch(self):
        self.host_s += self.host_cost
        self.device_s = max(self.device_s, self.host_s) + self.kernel_s
        return "output"

    def clock(self):
        return self.host_s


class TimingTests(unittest.TestCase):
    def test_quartiles_and_rotation_as_harness_suite_c(self):
        figures = peers.timing_figures([4.0, 1.0, 3.0, 2.0, 10.0], 7)
        self.assertEqual((figures["median_s"], figures["lower_quartile_s"], figures["upper_quartile_s"]), (3.0, 2.0, 4.0))
        self.assertEqual((figures["min_s"], figures["max_s"], figures["repeats"], figures["rotated_copies"]),
                         (1.0, 10.0, 5, 7))
        self.assertEqual(figures["samples_s"], [4.0, 1.0, 3.0, 2.0, 10.0])  # in timed order
        arrays = [peers.Array("x", (1 << 18,), "f32")]  # 1 MiB: as many copies as kcs takes, 64 at most
        self.assertEqual(peers.rotation_copies(arrays), 64)
        self.assertEqual(peers.rotation_copies([peers.Array("x", (100 << 20,), "i32")]), 2)
        self.assertEqual(peers.rotation_copies([peers.Array("x", (50 << 20,), "f64"),
                                                peers.Array("y", (50 << 20,), "f64")]), 1)

    def test_repeats_rotate_after_a_warm_up_until_count_and_time(self):
        options = type("Options", (), {"min_repeats": 3, "min_time": 0.01, "max_repeats": 1000})
        calls = []

        class Clock:
            def run(self, launch):
                return 0.004, launch()

        figures = peers.time_runs(lambda name: calls.append(name) or name, [["s0"], ["s1"], ["s2"]], Clock(), options)
        self.assertEqual(calls, ["s0", "s1", "s2", "s0"])  # the warm-up, then 3 runs reaching 0.012 s
        self.assertEqual((figures["repeats"], figures["rotated_copies"]), (3, 3))
        options.max_repeats, options.min_time, calls[:] = 5, 100.0, []
        self.assertEqual(peers.time_runs(lambda name: name, [["s0"]], Clock(), options)["repeats"], 5)

    def test_the_busy_fraction_is_the_repeats_time_over_the_loops(self):
        options = type("Options", (), {"min_repeats": 4, "min_time": 0.0, "max_repeats": 1000, "warm_up": 0.0})
        host = {"now": 0.0}

        class Clock:  # each repeat: 3 ms on the device, 1 ms of the host's own between repeats
            def run(self, launch):
                host["now"] += 0.004
                return 0.003, launch()

        real_clock = peers.time.perf_counter
        peers.time.perf_counter = lambda: host["now"]
        try:
            figures = peers.time_runs(lambda name: name, [["s0"]], Clock(), options)
        finally:
            peers.time.perf_counter = real_clock
        self.assertAlmostEqual(figures["busy_fraction"], 0.75)

    def test_a_warm_up_of_seconds_runs_until_them_before_the_timed_runs(self):
        options = type("Options", (), {"min_repeats": 2, "min_time": 0.0, "max_repeats": 1000, "warm_up": 0.01})
        calls, timed = [], []

        class Clock:
            def run(self, launch):
                timed.append(len(calls))
                return 0.004, launch()

        # The warm-up also ends at as much wall time; the host's clock stands still here, so that a loaded
        # host pausing the test for 10 ms cannot end it early.
        real_clock = peers.time.perf_counter
        peers.time.perf_counter = lambda: 0.0
        try:
            figures = peers.time_runs(lambda name: calls.append(name) or name, [["s0"], ["s1"]], Clock(), options)
            # one untimed run, 3 warm-up runs timed by the clock to pass 0.01 s, then the 2 timed repeats
            self.assertEqual(calls, ["s0", "s1", "s0", "s1", "s1", "s0"])
            self.assertEqual(figures["repeats"], 2)
            options.warm_up, calls[:] = 0.0, []
            peers.time_runs(lambda name: calls.append(name) or name, [["s0"], ["s1"]], Clock(), options)
            self.assertEqual(calls, ["s0", "s1", "s0"])  # without: the one warm-up run
        finally:
            peers.time.perf_counter = real_clock

    def run_held(self, host_cost, kernel_s, runs=1):
        simulated = SimulatedDevice(host_cost, kernel_s)
        timer = object.__new__(peers.SleepHeldTimer)
        timer.why_not = "a test"
        timer.torch = simulated.torch
        timer.before, timer.start, timer.stop = (simulated.torch.cuda.Event() for _ in range(3))
        timer.hold_s, timer.longest_hold_s, timer.not_held, timer.rerun = timer.FIRST_HOLD_S, 0.0, 0, 0
        timer.cycles_per_s = 1e9
        real_clock = peers.time.perf_counter
        peers.time.perf_counter = simulated.clock
        try:
            samples = [timer.run(simulated.launch) for _ in range(runs)]
        finally:
            peers.time.perf_counter = real_clock
        return samples, timer

    def test_a_hold_longer_than_the_launch_leaves_the_kernel_alone(self):
        samples, timer = self.run_held(host_cost=5e-5, kernel_s=1e-5, runs=3)
        for seconds, result in samples:
            self.assertAlmostEqual(seconds, 1e-5)
            self.assertEqual(result, "output")
        self.assertEqual((timer.rerun, timer.not_held), (0, 0))

    def test_a_launch_that_outlasts_the_hold_is_rerun_with_a_longer_one(self):
        samples, timer = self.run_held(host_cost=7e-4, kernel_s=1e-5)
        self.assertAlmostEqual(samples[0][0], 1e-5)  # not 7e-4 - hold + 1e-5
        self.assertEqual(timer.rerun, 2)  # 0.2 ms, 0.4 ms, then 0.8 ms held
        self.assertAlmostEqual(timer.hold_s, 8e-4)

    def test_a_launch_longer_than_the_longest_hold_is_kept_and_counted(self):
        samples, timer = self.run_held(host_cost=0.2, kernel_s=1e-5)
        self.assertEqual(timer.not_held, 1)
        self.assertAlmostEqual(samples[0][0], 0.2 - peers.SleepHeldTimer.MAX_HOLD_S + 1e-5)
        self.assertEqual(timer.notes()["runs_not_held"], 1)


class QueuedDevice:
    """A device that runs what the host queues, in order: events, kernels, and kcs's hold, which
    keeps everything behind it waiting until the host releases it. Queueing a launch costs the
    host host_cost seconds; a kernel takes kernel_s on the device."""

    def __init__(self, host_cost, kernel_s, gives_up=False):
        self.host_s, self.device_s, self.items, self.done = 0.0, 0.0, [], 0
        self.host_cost, self.kernel_s, self.gives_up, self.holds = host_cost, kernel_s, gives_up, 0
        device = self

        class Event:
            def __init__(self, enable_timing=True):
                self.at = None

            def record(self):
                device.items.append(["event", device.host_s, self])

            def synchronize(self):
                device.run()
                device.host_s = max(device.host_s, self.at)

            def elapsed_time(self, later):
                return (later.at - self.at) * 1e3

        self.torch = type("torch", (), {"cuda": type("cuda", (), {"Event": Event})})
        self.hold = self

    def run(self):
        """Runs the queue as far as it can go: up to a hold not yet released."""
        while self.done < len(self.items):
            kind, queued, what = self.items[self.done]
            start = max(self.device_s, queued)
            if kind == "hold":
                if what is None:
                    return
                self.device_s = max(start, what)
            elif kind == "kernel":
                self.device_s = start + what
            else:
                what.at = self.device_s = start
            self.done += 1

    def launch(self):
        self.host_s += self.host_cost
        self.items.append(["kernel", self.host_s, self.kernel_s])
        return "output"

    # the hold, as CudaDriverHold's queue, release and gave_up
    def queue(self, pair=0):
        self.holds += 1
        self.items.append(["hold", self.host_s, None])

    def release(self):
        next(item for item in reversed(self.items) if item[0] == "hold")[2] = self.host_s

    def gave_up(self, pair=0):
        return self.gives_up

    def kernel_spans(self):
        """(start, end) on the device of every kernel run so far, in order."""
        self.run()
        spans, device_s = [], 0.0
        for kind, queued, what in self.items[:self.done]:
            start = max(device_s, queued)
            if kind == "hold":
                device_s = max(start, what)
            elif kind == "kernel":
                spans.append((start, start + what))
                device_s = start + what
            else:
                device_s = start
        return spans


class FakeDriver:
    """libcuda's functions that CudaDriverHold calls, recording them; fails `failing` with 218."""

    def __init__(self, failing=None):
        self.calls, self.failing = [], failing

    def __getattr__(self, name):
        def function(*arguments):
            self.calls.append((name, arguments))
            if name == self.failing:
                return 218
            if name in ("cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction"):
                arguments[0]._obj.value = 0x1000 + len(self.calls)  # the handle it makes
            return 0
        return function


class FakeTorchForHold:
    """What CudaDriverHold asks of torch: a CUDA tensor, a pinned one (ctypes memory), the stream."""

    def __init__(self):
        import ctypes
        self.pinned = (ctypes.c_int32 * (2 * peers.CudaDriverHold.PAIRS))()
        pinned = self.pinned

        class Tensor:
            def data_ptr(self):
                return ctypes.addressof(pinned)

        self.int32 = "int32"
        self.zeros = lambda *shape, **kinds: Tensor()
        stream = type("Stream", (), {"cuda_stream": 0xBEEF})
        self.cuda = type("cuda", (), {"current_stream": staticmethod(lambda: stream),
                                      "Event": lambda enable_timing=True: None})


class KcsHoldTest(unittest.TestCase):
    """The timer with kcs's hold (HeldStreamTimer, CudaDriverHold): the time is the device's alone
    however long the host takes to queue, and the hold is launched as kcs's."""

    def test_the_run_is_timed_from_its_first_kernel_however_slow_the_queueing(self):
        device = QueuedDevice(host_cost=5e-4, kernel_s=1e-5)
        timer = peers.HeldStreamTimer(device.torch, device)
        for _ in range(3):
            seconds, result = timer.run(device.launch)
            self.assertAlmostEqual(seconds, 1e-5)  # not 5e-4 + 1e-5: the hold covered the queueing
            self.assertEqual(result, "output")
        self.assertEqual((device.holds, timer.not_held), (3, 0))
        self.assertIn("kcs's hold kernel", timer.notes()["hold"])

    def test_after_three_holds_given_up_the_runs_are_timed_without_and_counted(self):
        device = QueuedDevice(host_cost=5e-4, kernel_s=1e-5, gives_up=True)
        timer = peers.HeldStreamTimer(device.torch, device)
        for _ in range(5):
            timer.run(device.launch)
        self.assertEqual((device.holds, timer.not_held), (3, 5))
        seconds, _ = timer.run(device.launch)
        self.assertAlmostEqual(seconds, 5e-4 + 1e-5)  # unheld: the host's queueing counts

    def test_the_hold_is_launched_as_kcs_launches_it_and_released_through_pinned_memory(self):
        import ctypes
        driver, torch = FakeDriver(), FakeTorchForHold()
        hold = peers.CudaDriverHold(torch, driver)
        names = [name for name, _ in driver.calls]
        self.assertEqual(names, ["cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction"])
        self.assertIn(b".entry kcs_hold_stream", driver.calls[1][1][1].value)
        self.assertEqual(driver.calls[2][1][2].value, b"kcs_hold_stream")
        torch.pinned[0], torch.pinned[1] = 7, 7
        hold.queue()
        name, arguments = driver.calls[-1]
        self.assertEqual(name, "cuLaunchKernel")
        self.assertEqual([a.value for a in arguments[1:7]], [1] * 6)  # one block of one thread
        self.assertEqual((arguments[7].value, arguments[8].value), (0, 0xBEEF))  # PyTorch's stream
        parameters = arguments[9]
        self.assertEqual(ctypes.c_uint64.from_address(parameters[0]).value, ctypes.addressof(torch.pinned))
        self.assertEqual(ctypes.c_uint64.from_address(parameters[1]).value, peers.CudaDriverHold.LIMIT_NS)
        self.assertEqual(list(torch.pinned[:2]), [0, 0])  # both flags cleared before the launch
        self.assertFalse(hold.gave_up())
        hold.release()
        self.assertEqual(torch.pinned[0], 1)
        torch.pinned[1] = 1
        self.assertTrue(hold.gave_up())
        torch.pinned[4], torch.pinned[5] = 7, 7
        hold.queue(2)  # a chunk's hold, back to back: flags 4 and 5
        parameters = driver.calls[-1][1][9]
        self.assertEqual(ctypes.c_uint64.from_address(parameters[0]).value, ctypes.addressof(torch.pinned) + 16)
        self.assertEqual((list(torch.pinned[4:]), hold.gave_up(2)), ([0, 0], False))
        hold.release()
        self.assertEqual(list(torch.pinned), [1, 1, 0, 0, 1, 0])

    def test_back_to_back_the_device_never_idles_where_the_host_queues_faster(self):
        device = QueuedDevice(host_cost=2e-5, kernel_s=1e-4)
        timer = peers.HeldStreamTimer(device.torch, device)
        launched = []
        seconds = timer.back_to_back(40, lambda r: launched.append(r) or device.launch())
        self.assertEqual(launched, list(range(40)))
        self.assertEqual(len(seconds), 40)
        for s in seconds:
            self.assertAlmostEqual(s, 1e-4)
        self.assertEqual(device.holds, 3)  # chunks of 16, 16 and 8, each behind a hold of its own
        spans = device.kernel_spans()
        gaps = [later[0] - earlier[1] for earlier, later in zip(spans, spans[1:])]
        self.assertAlmostEqual(max(gaps), 0.0)  # from the first repeat to the last, no idle time
        one_by_one = QueuedDevice(host_cost=2e-5, kernel_s=1e-4)
        alone = peers.HeldStreamTimer(one_by_one.torch, one_by_one)
        for _ in range(3):
            alone.run(one_by_one.launch)
        spans = one_by_one.kernel_spans()
        self.assertGreater(min(b[0] - a[1] for a, b in zip(spans, spans[1:])), 1e-5)  # one at a time: idle between

    def test_back_to_back_no_host_time_counts_where_the_host_is_slower(self):
        device = QueuedDevice(host_cost=5e-4, kernel_s=1e-5)
        timer = peers.HeldStreamTimer(device.torch, device)
        seconds = timer.back_to_back(20, lambda r: device.launch())
        for s in seconds:
            self.assertAlmostEqual(s, 1e-5)  # the idle time falls on the holds, between chunks

    def test_back_to_back_gives_up_with_its_hold_and_time_runs_goes_one_at_a_time(self):
        device = QueuedDevice(host_cost=2e-5, kernel_s=1e-4, gives_up=True)
        timer = peers.HeldStreamTimer(device.torch, device)
        self.assertIsNone(timer.back_to_back(20, lambda r: device.launch()))
        self.assertIn("waited for the device", timer.why_not_back_to_back)
        options = type("Options", (), {"min_repeats": 4, "min_time": 0.0, "max_repeats": 1000, "warm_up": 0.0})
        figures = peers.time_runs(lambda: device.launch(), [[]], timer, options)
        self.assertFalse(figures["back_to_back"])
        self.assertIn("waited for the device", figures["one_by_one_because"])
        self.assertEqual(figures["repeats"], 4)

    def test_time_runs_queues_back_to_back_on_the_sets_in_turn_unless_one_by_one(self):
        options = type("Options", (), {"min_repeats": 5, "min_time": 0.0, "max_repeats": 1000, "warm_up": 0.0,
                                       "one_by_one": False})
        calls, queued = [], []

        class Clock:
            why_not_back_to_back = ""

            def run(self, launch):
                return 0.001, launch()

            def back_to_back(self, count, launch):
                queued.append(count)
                for r in range(count):
                    launch(r)
                return [0.002] * count

        function = lambda name: calls.append(name) or name
        figures = peers.time_runs(function, [["s0"], ["s1"], ["s2"]], Clock(), options)
        self.assertEqual(calls, ["s0", "s1", "s2", "s0", "s1", "s2"])  # the untimed run, then 5 on the sets in turn
        self.assertEqual((queued, figures["samples_s"], figures["back_to_back"]), ([5], [0.002] * 5, True))
        self.assertNotIn("one_by_one_because", figures)
        options.min_repeats, options.min_time, options.warm_up, queued[:] = 1, 0.05, 0.02, []
        figures = peers.time_runs(function, [["s0"]], Clock(), options)
        # warm-up: one alone (1 ms), then 19 back to back (2 ms each); timed: 0.05 s at the warm-up's mean
        # of 1.95 ms a run, 26 of them
        self.assertEqual((queued, figures["repeats"]), ([19, 26], 26))
        options.one_by_one, queued[:] = True, []
        figures = peers.time_runs(function, [["s0"]], Clock(), options)
        self.assertEqual((queued, figures["back_to_back"], figures["one_by_one_because"]), ([], False, "--one-by-one"))
        self.assertEqual(figures["samples_s"], [0.001] * 50)

    def test_a_driver_that_refuses_the_hold_leaves_the_sleep_timer_saying_why(self):
        torch = SimulatedDevice(1e-5, 1e-5).torch
        torch.zeros = lambda *shape, **kinds: None
        timer = peers.held_stream_timer(torch, FakeDriver(failing="cuModuleLoadData"))
        self.assertIsInstance(timer, peers.SleepHeldTimer)
        self.assertIn("cuModuleLoadData returned CUDA error 218", timer.notes()["hold"])
        self.assertIsInstance(peers.held_stream_timer(FakeTorchForHold(), FakeDriver()), peers.HeldStreamTimer)


def torch_row(case_name, op, dtype, sizes, kernel, median, status="pass", fraction=0.5, params=None):
    """A Row as run_variant returns it, timed when it passed."""
    listed = case(case_name, op, dtype, sizes, params)
    accuracy = {"checked": 4096, "failures": 0 if status == "pass" else 3, "unwritten": 0,
                "fraction_of_bound": fraction,
                "worst": {"output": 0, "index": 5, "expected": 1.0, "actual": 1.0, "error": 0.0, "bound": 1e-7}}
    timing = peers.timing_figures([median * (1 + d) for d in (-0.01, 0, 0.01, 0.02, -0.02)], 2) \
        if status == "pass" else None
    return peers.Row(listed, kernel, status, "" if status == "pass" else "y[5]: outside", accuracy, None, timing,
                     {"form": "torch.softmax(x, dim=-1)", "checked": "4096 output elements"})


class ResultsFileTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The H100 suite as its results file holds it, made once (a quarter of a second); each test
        # reads its own copy from the text.
        cls.suite_text = json.dumps(fx.perf_suite(seed=1), default=str)

    def setUp(self):
        self.doc = json.loads(self.suite_text)
        self.cuda = next(d for d in self.doc["devices"] if d["id"] == "cuda:0")
        self.record = {"id": "pytorch:0", "backend": "pytorch", "index": 0, "name": self.cuda["name"],
                       "platform": "PyTorch 2.11.0+cu130", "vendor": "NVIDIA", "driver_version": "",
                       "runtime_version": "PyTorch 2.11.0+cu130, CUDA 13.0", "memory_bytes": 85e9,
                       "details": "uuid=GPU-5ad8e6b4-0c1f-4b7e-9a52-3f0e1d2c4b6a", "shares_host_cores": False,
                       "ceilings": dict(self.cuda["ceilings"])}
        kcs_rows = [r for r in self.doc["results"] if r["case"] == "softmax/f32-32768x1024" and r["device"] == "cuda:0"]
        self.kcs_best = min(r["timing"]["kernel"]["median_s"] for r in kcs_rows)
        self.rows = [torch_row("softmax/f32-32768x1024", "softmax", "f32", {"rows": 32768, "cols": 1024}, "eager",
                               self.kcs_best * 1.3),
                     torch_row("softmax/f32-32768x1024", "softmax", "f32", {"rows": 32768, "cols": 1024}, "compile",
                               self.kcs_best * 0.8),
                     torch_row("gemm/f32-4096", "gemm", "f32", {"m": 4096, "n": 4096, "k": 4096}, "eager", 1.0,
                               status="fail", fraction=3.1),
                     peers.Row(case("gemm/fp8_e4m3-4096", "gemm", "fp8_e4m3", {"m": 4096, "n": 4096, "k": 4096}),
                               "eager", "skip", "not measured: torch._scaled_mm missing")]

    def entries(self, rows=None):
        out = []
        for row in rows or self.rows:
            arrays = sum(peers.case_arrays(row.case), []) if row.case["op"] != "gemm" or \
                not row.case["dtype"].startswith("fp8") else []
            out.append(peers.nonfinite_as_text(peers.result_entry(row, "pytorch:0", self.doc, self.cuda, arrays)))
        return out

    def test_rows_join_the_file_as_a_valid_results_file(self):
        merged = peers.merged(self.doc, self.record, self.entries(), {"torch_version": "2.11.0+cu130"})
        run = results_from_data(copy.deepcopy(merged), "merged.json")  # raises on anything malformed
        self.assertEqual(merged["summary"], dict(self.doc["summary"], **summary_counts(merged["results"])))
        self.assertEqual(len(merged["results"]), len(self.doc["results"]) + 4)
        self.assertIn("pytorch:0", run.devices)
        # Each row right after the last result of its case, the runner's order.
        results = merged["results"]
        for entry in self.entries():
            position = next(i for i, r in enumerate(results) if r["backend"] == "pytorch" and r["case"] == entry["case"]
                            and r["kernel"] == entry["kernel"])
            own_case = [i for i, r in enumerate(results) if r["case"] == entry["case"] and r["backend"] != "pytorch"]
            self.assertGreater(position, max(own_case, default=-1))
            if not own_case:  # a case kcs did not run: at the end
                self.assertGreaterEqual(position, len(self.doc["results"]))
        compiled = next(r for r in results if r["kernel"] == "torch-compile")
        self.assertEqual((compiled["kernel_library"], compiled["backend"], compiled["expected_from"]),
                         ("PyTorch", "pytorch", "oracle, sample of 4096"))
        # Held to the ceiling of kcs's rows of the case on the same card, at the fraction its median reaches.
        kcs_ceiling = next(r for r in results if r["case"] == compiled["case"] and r["device"] == "cuda:0")
        kcs_ceiling = kcs_ceiling["timing"]["ceiling"]
        ceiling = compiled["timing"]["ceiling"]
        self.assertEqual((ceiling["kind"], ceiling["ceiling_per_s"]), (kcs_ceiling["kind"], kcs_ceiling["ceiling_per_s"]))
        self.assertAlmostEqual(ceiling["fraction"], compiled["bytes"] / compiled["timing"]["kernel"]["median_s"] /
                               kcs_ceiling["ceiling_per_s"])
        failed = next(r for r in results if r["case"] == "gemm/f32-4096" and r["backend"] == "pytorch")
        self.assertEqual(failed["status"], "fail")
        self.assertNotIn("timing", failed)  # as kcs, only a pass is timed

    def test_the_pytorch_device_is_the_card_of_the_cuda_device_of_its_uuid(self):
        import types
        for told in ("5AD8E6B4-0C1F-4B7E-9A52-3F0E1D2C4B6A", "GPU-5ad8e6b4-0c1f-4b7e-9a52-3f0e1d2c4b6a", ""):
            properties = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0,
                                               multi_processor_count=132, uuid=told, L2_cache_size=50 << 20,
                                               total_memory=85e9)
            torch = types.SimpleNamespace(
                __version__="2.11.0+cu130", version=types.SimpleNamespace(cuda="13.0"),
                cuda=types.SimpleNamespace(get_device_properties=lambda index: properties, current_device=lambda: 0))
            record, twin = peers.torch_device_record(torch, types.SimpleNamespace(type="cuda", index=0),
                                                     self.doc["devices"])
            self.assertEqual(twin["id"], "cuda:0", told)
            self.assertEqual(kcs_views_card(record), kcs_views_card(self.cuda))
            self.assertEqual(record["ceilings"]["copy_bytes_per_s"], self.cuda["ceilings"]["copy_bytes_per_s"])
            self.assertIn("measured on cuda:0 (the same card)", record["ceilings"]["method"])
            self.assertEqual(record["id"], "pytorch:0")
        properties.uuid = "00000000-0000-0000-0000-000000000000"  # another card: no ceilings borrowed
        record, twin = peers.torch_device_record(torch, types.SimpleNamespace(type="cuda", index=0), self.doc["devices"])
        self.assertIsNone(twin)
        self.assertIsNone(record["ceilings"])

    def test_a_rerun_replaces_its_rows(self):
        once = peers.merged(self.doc, self.record, self.entries(), {})
        twice = peers.merged(once, self.record, self.entries(self.rows[:2]), {})
        self.assertEqual(len(twice["results"]), len(once["results"]))
        self.assertEqual(sum(1 for d in twice["devices"] if d["id"] == "pytorch:0"), 1)
        results_from_data(copy.deepcopy(twice), "twice.json")

    def test_a_malformed_document_leaves_the_file_as_it_was(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "kcs-results.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(self.doc, handle)
            broken = peers.merged(self.doc, self.record, self.entries(), {})
            broken["results"][-1]["status"] = "fine"
            with self.assertRaises(ResultsError):
                peers.write_document(path, broken)
            with open(path, encoding="utf-8") as handle:
                self.assertEqual(json.load(handle), self.doc)
            self.assertEqual(sorted(os.listdir(folder)), ["kcs-results.json"])
            peers.write_document(path, peers.merged(self.doc, self.record, self.entries(), {}))
            with open(path, encoding="utf-8") as handle:
                self.assertEqual(len(json.load(handle)["results"]), len(self.doc["results"]) + 4)

    def report_of(self, doc):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "run.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(doc, handle)
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                status = kcs_report.main([path, "--output", os.path.join(folder, "out")])
            self.assertEqual(status, 0, out.getvalue())
            with open(os.path.join(folder, "out", "index.html"), encoding="utf-8") as handle:
                index = handle.read()
            with open(os.path.join(folder, "out", "softmax.html"), encoding="utf-8") as handle:
                return index, handle.read()

    def test_the_peers_table_shows_pytorch_and_names_every_peer_ahead_of_kcs(self):
        merged = peers.merged(self.doc, self.record, self.entries(), {})
        model = kcs_report.Model([results_from_data(copy.deepcopy(merged), "merged.json")])
        tables = {table["case"]: table for table in model.peers()}
        softmax = tables["softmax/f32-32768x1024"]
        names = {(r["latest"]["device"], r["latest"]["kernel"]) for r in softmax["rows"]}
        self.assertIn(("pytorch:0", "torch-eager"), names)
        compiled = next(r for r in softmax["rows"] if r["latest"]["kernel"] == "torch-compile")
        self.assertTrue(compiled["is_peer"])  # the fastest library row on the card: PyTorch's
        self.assertEqual(compiled["card"], next(r for r in softmax["rows"] if r["latest"]["device"] == "cuda:0")["card"])
        # Ahead: the compiled row (0.8 of kcs's best), not the eager one (1.3).
        ahead = softmax["ahead"]
        self.assertEqual([entry["row"]["latest"]["kernel"] for entry in ahead], ["torch-compile"])
        self.assertAlmostEqual(ahead[0]["kcs_speed"], 0.8, places=6)
        self.assertEqual(ahead[0]["kcs"]["speed"]["median"], self.kcs_best)
        # cuBLAS ahead of kcs's tiled GEMM in the fixture (0.885 and 0.84 of the f32 GEMM rate).
        gemm = tables["gemm/f32-4096"]["ahead"]
        self.assertEqual([(e["row"]["library"], e["kcs"]["latest"]["kernel"]) for e in gemm], [("cuBLAS", "tiled")])
        medians = {r["kernel"]: r["timing"]["kernel"]["median_s"] for r in self.doc["results"]
                   if r["case"] == "gemm/f32-4096" and r["device"] == "cuda:0"}
        self.assertAlmostEqual(gemm[0]["kcs_speed"], medians["cublas"] / medians["tiled"])
        index, page = self.report_of(merged)
        part = index[index.index('id="peers-ahead"'):]
        part = part[:part.index("</div>")]
        self.assertIn(f"{sum(1 for t in tables.values() if t['ahead'])} perf cases where a library row ran faster", part)
        self.assertIn("<code>softmax/f32-32768x1024</code>", part)
        self.assertIn("PyTorch <code>torch-compile</code>", part)
        self.assertIn("kcs at <strong>0.80</strong> of its speed", part)
        self.assertIn("cuBLAS <code>cublas</code>", part)
        self.assertNotIn("torch-eager", part)
        table = index[index.index('id="peers"'):]
        self.assertIn('torch-compile <span class="tag library">PyTorch</span>', table)
        self.assertIn('id="peers-ahead"', page)
        self.assertIn("PyTorch <code>torch-compile</code>", page)

    def test_a_peer_ahead_whose_loop_kept_the_device_less_busy_says_so(self):
        entries = self.entries()
        compiled = next(e for e in entries if e["kernel"] == "torch-compile")
        compiled["timing"]["kernel"]["busy_fraction"] = 0.62
        doc = copy.deepcopy(self.doc)
        kcs_best = min((r for r in doc["results"] if r["case"] == "softmax/f32-32768x1024" and r["device"] == "cuda:0"),
                       key=lambda r: r["timing"]["kernel"]["median_s"])
        kcs_best["timing"]["kernel"]["busy_fraction"] = 0.97
        merged = peers.merged(doc, self.record, entries, {})
        model = kcs_report.Model([results_from_data(copy.deepcopy(merged), "merged.json")])
        ahead = next(t for t in model.peers() if t["case"] == "softmax/f32-32768x1024")["ahead"]
        self.assertEqual(ahead[0]["busy"], (0.62, 0.97))
        index, _ = self.report_of(merged)
        part = index[index.index('id="peers-ahead"'):]
        self.assertIn("its timing kept the device busy 0.62 of the time, kcs's 0.97", part)
        kcs_best["timing"]["kernel"]["busy_fraction"] = 0.64  # within BUSY_APART: not named
        merged = peers.merged(doc, self.record, entries, {})
        model = kcs_report.Model([results_from_data(copy.deepcopy(merged), "merged.json")])
        self.assertIsNone(next(t for t in model.peers() if t["case"] == "softmax/f32-32768x1024")["ahead"][0]["busy"])

    def test_a_peer_ahead_whose_repeats_were_timed_otherwise_says_so(self):
        entries = self.entries()
        compiled = next(e for e in entries if e["kernel"] == "torch-compile")
        compiled["timing"]["kernel"]["back_to_back"] = False
        doc = copy.deepcopy(self.doc)
        kcs_best = min((r for r in doc["results"] if r["case"] == "softmax/f32-32768x1024" and r["device"] == "cuda:0"),
                       key=lambda r: r["timing"]["kernel"]["median_s"])
        kcs_best["timing"]["kernel"]["back_to_back"] = True
        merged = peers.merged(doc, self.record, entries, {})
        model = kcs_report.Model([results_from_data(copy.deepcopy(merged), "merged.json")])
        ahead = next(t for t in model.peers() if t["case"] == "softmax/f32-32768x1024")["ahead"]
        self.assertEqual(ahead[0]["timed"], ("one at a time", "back to back"))
        index, _ = self.report_of(merged)
        part = index[index.index('id="peers-ahead"'):]
        self.assertIn("its repeats were timed one at a time, kcs's back to back", part)
        compiled["timing"]["kernel"]["back_to_back"] = True  # the same way: not named
        merged = peers.merged(doc, self.record, entries, {})
        model = kcs_report.Model([results_from_data(copy.deepcopy(merged), "merged.json")])
        self.assertIsNone(next(t for t in model.peers() if t["case"] == "softmax/f32-32768x1024")["ahead"][0]["timed"])

    def test_a_case_only_a_library_timed_on_a_card_is_named_too(self):
        doc = copy.deepcopy(self.doc)
        doc["results"] = [r for r in doc["results"] if not (r["case"] == "softmax/f32-32768x1024"
                                                               and r["device"] in ("cuda:0", "opencl:1"))]
        merged = peers.merged(doc, self.record, self.entries(self.rows[:2]), {})
        index, _ = self.report_of(merged)
        part = index[index.index('id="peers-ahead"'):]
        part = part[:part.index("</div>")]
        self.assertIn("or where kcs timed none there", part)
        self.assertIn("PyTorch <code>torch-compile</code> (pytorch:0)", part)
        self.assertIn("no kcs row timed on this card", part)
        self.assertNotIn("kcs at", part[:part.index("cuBLAS")])


class StopTests(unittest.TestCase):
    """A SIGTERM or SIGINT mid-run keeps the rows of the cases finished and says where it stopped."""

    def test_a_signal_in_a_case_keeps_the_cases_before_it(self):
        import signal
        cases = [{"name": f"op/case-{i}"} for i in range(4)]
        for number in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=number):
                def rows_of(case, number=number):
                    yield case["name"] + " eager"
                    if case["name"] == "op/case-2":
                        os.kill(os.getpid(), number)  # arrives here, as from `timeout` or a ^C
                    yield case["name"] + " compiled"

                before = signal.getsignal(number)
                rows, stopped = peers.rows_until_stopped(cases, rows_of)
                self.assertEqual(rows, ["op/case-0 eager", "op/case-0 compiled", "op/case-1 eager",
                                        "op/case-1 compiled"])
                self.assertEqual(stopped, {"signal": signal.Signals(number).name, "case": "op/case-2",
                                           "cases_done": 2, "cases": 4})
                self.assertIs(signal.getsignal(number), before, "the handler was not given back")

    def test_a_signal_while_a_row_is_timed_stops_the_run_not_only_the_row(self):
        import signal
        case = {"name": "softmax/f32-8x8", "op": "softmax", "dtype": "f32"}
        options = type("Options", (), {"min_repeats": 3, "min_time": 0.0, "max_repeats": 1000, "warm_up": 0.0,
                                       "variants": ["eager"], "keep_files": False, "kcs": "kcs"})
        calls = []

        def timed(*arguments):
            calls.append(len(calls))
            if len(calls) == 2:
                os.kill(os.getpid(), signal.SIGTERM)  # `timeout` while the row is timed
            return None

        class Clock:
            def run(self, launch):
                return 1e-3, launch()

            def notes(self):
                return {}

        class FakeTensor:
            device = type("Device", (), {"type": "cpu"})

        class Subset:
            whole, elements = True, 64

        class FakeTorchForRun:
            __version__ = "2.11.0"

        real_check = peers.run_check
        peers.run_check = lambda *arguments: ("pass", "", {}, None, ["kcs", "check"])
        try:
            with tempfile.TemporaryDirectory() as folder:
                rows, stopped = peers.rows_until_stopped(
                    [case, dict(case, name="softmax/f32-8x9")],
                    lambda c: peers.run_variant(FakeTorchForRun(), c, "eager", timed, "form", {}, [FakeTensor()], [],
                                                [], [], Subset(), [], options, Clock(), folder) and [c["name"]])
        finally:
            peers.run_check = real_check
        self.assertEqual((rows, stopped["case"], stopped["cases_done"]), ([], "softmax/f32-8x8", 0))
        self.assertEqual(len(calls), 2)  # nothing ran after the signal

    def test_no_signal_no_stop(self):
        rows, stopped = peers.rows_until_stopped([{"name": "a"}, {"name": "b"}], lambda case: iter([case["name"]]))
        self.assertEqual((rows, stopped), (["a", "b"], None))


class CommandTests(unittest.TestCase):
    """The runner where PyTorch cannot run: exit 3, the reason, nothing written."""

    def run_with(self, torch_source, *arguments):
        with tempfile.TemporaryDirectory() as folder:
            os.makedirs(os.path.join(folder, "fake", "torch"))
            with open(os.path.join(folder, "fake", "torch", "__init__.py"), "w", encoding="utf-8") as handle:
                handle.write(torch_source)
            env = dict(os.environ, PYTHONPATH=os.path.join(folder, "fake"))
            done = subprocess.run([sys.executable, SCRIPT, *arguments], cwd=folder, env=env, capture_output=True,
                                  text=True)
            left = sorted(os.listdir(folder))
        return done.returncode, done.stdout + done.stderr, left

    def test_no_pytorch_exits_3_naming_the_python(self):
        status, out, left = self.run_with("raise ImportError(\"No module named 'torch'\")\n")
        self.assertEqual(status, 3, out)
        self.assertIn("PyTorch cannot be imported by " + sys.executable, out)
        self.assertIn("No module named 'torch'", out)
        self.assertEqual(left, ["fake"])

    def test_pytorch_without_a_gpu_exits_3(self):
        status, out, left = self.run_with("__version__ = '2.11.0+cpu'\nclass version:\n    cuda = None\n"
                                          "class cuda:\n    @staticmethod\n    def is_available():\n"
                                          "        return False\n")
        self.assertEqual(status, 3, out)
        self.assertIn("PyTorch 2.11.0+cpu (CUDA None) imported by", out)
        self.assertIn("sees no CUDA device", out)
        self.assertEqual(left, ["fake"])

    def test_bad_options_exit_2(self):
        status, out, _ = self.run_with("raise ImportError('unreachable')\n", "--variants", "eager,jit")
        self.assertEqual(status, 2, out)
        self.assertIn("--variants", out)


if __name__ == "__main__":
    unittest.main()
