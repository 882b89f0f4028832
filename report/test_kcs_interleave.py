"""Tests of interleaved comparisons: report/kcs_interleave.py (rounds run in rotating order and
merged into one results file per side) and the round-by-round speed rule of kcs_compare.py
(classify_paired), on timings made up with a known machine load and a known slowdown.

    /usr/bin/python3 -m unittest discover -s report -p 'test_*.py'
"""

import copy
import json
import os
import random
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kcs_fixtures as fx  # noqa: E402
import kcs_interleave  # noqa: E402
from kcs_compare import Comparison, Options, classify_paired  # noqa: E402
from kcs_results import ResultsError, results_from_data  # noqa: E402

HOST = fx.device("reference:0", "host x86_64 (2 cores)", "host", "6.1", "gcc 12", 8e9)


def rounds(loads, factor=1.0, seed=0, pace=66e-6, kernel=2.4e-3, repeats=20):
    """A side's kernel timing over interleaved rounds: each round's repeats scattered by 1% around
    kernel x factor x that round's machine load, and the pace by the same load."""
    rng = random.Random(seed)
    samples, medians, paces = [], [], []
    for load in loads:
        these = [kernel * factor * load * (1 + rng.gauss(0, 0.01)) for _ in range(repeats)]
        samples += these
        medians.append(sorted(these)[repeats // 2])
        paces.append(pace * load * (1 + rng.gauss(0, 0.01)))
    timing = fx.figures(samples)
    timing.update(round_medians_s=medians, round_pace_medians_s=paces,
                  pace_median_s=sorted(paces)[len(paces) // 2])
    return timing


def busy(count, seed):
    """A machine's load over count rounds: quiet (1.0) or busy (1.8, as the 2-core VM measured) for
    a few rounds at a time, the busy load itself varying by 10%."""
    rng = random.Random(seed)
    loads, level = [], 1.0
    for _ in range(count):
        if rng.random() < 0.3:
            level = 1.0 if level > 1.4 else 1.8
        loads.append(level * (1 + rng.uniform(-0.05, 0.05)) if level > 1.4 else level)
    return loads


class PairedRuleTests(unittest.TestCase):
    def test_an_identical_kernel_under_a_changing_load_is_same_both_ways(self):
        for seed in range(20):
            loads = busy(20, seed)
            # The two halves of a round see nearly the same machine: within 2%.
            jitter = random.Random(100 + seed)
            other = [load * (1 + jitter.uniform(-0.02, 0.02)) for load in loads]
            old, new = rounds(loads, seed=seed), rounds(other, seed=50 + seed)
            for first, second in ((old, new), (new, old)):
                speed = classify_paired(first, second)
                self.assertEqual(speed.verdict, "same", f"seed {seed}: {speed.reason}")

    def test_a_ten_percent_slowdown_under_a_changing_load_is_slower(self):
        for seed in range(20):
            loads = busy(20, seed)
            jitter = random.Random(100 + seed)
            other = [load * (1 + jitter.uniform(-0.02, 0.02)) for load in loads]
            speed = classify_paired(rounds(loads, seed=seed), rounds(other, 1.10, seed=50 + seed))
            self.assertEqual(speed.verdict, "slower", f"seed {seed}: {speed.reason}")
        loads = busy(20, 3)
        old, new = rounds(loads, seed=1), rounds(loads, 1.10, seed=2)
        speed = classify_paired(old, new)
        self.assertEqual(speed.verdict, "slower", speed.reason)
        self.assertAlmostEqual(speed.ratio, 1.10, delta=0.01)
        self.assertIn("20 of 20 rounds slower", speed.reason)
        self.assertAlmostEqual(speed.p, 2 / 2 ** 20)
        back = classify_paired(new, old)
        self.assertEqual(back.verdict, "faster", back.reason)
        self.assertAlmostEqual(back.ratio * speed.ratio, 1.0)  # in logarithms: either way the same change

    def test_rounds_whose_pace_moved_are_left_out(self):
        loads = [1.0] * 20
        shifted = [1.8 if index < 13 else 1.0 for index in range(20)]   # 13 rounds of a busier new half
        old, new = rounds(loads, seed=1), rounds(shifted, 1.10, seed=2)
        speed = classify_paired(old, new)
        self.assertEqual(speed.verdict, "unclear", speed.reason)
        self.assertIn("only 7 interleaved round(s) to judge by, and a sign test needs 8", speed.reason)
        self.assertIn("13 round(s) left out: the pace moved by more than 20%", speed.reason)
        # A pace within the limit keeps the round: 15% busier is judged.
        new = rounds([1.15 if index < 13 else 1.0 for index in range(20)], 1.10, seed=2)
        self.assertNotIn("left out", classify_paired(old, new).reason)

    def test_a_change_needs_the_rounds_to_lean_one_way(self):
        # 10% slower in 9 of 12 rounds and 10% faster in 3: beyond the minimum effect, but a sign
        # test of 9 against 3 is p = 0.15.
        old = rounds([1.0] * 12, seed=1)
        new = copy.deepcopy(old)
        new["round_medians_s"] = [m * (0.9 if index % 4 == 0 else 1.1) for index, m in
                                  enumerate(old["round_medians_s"])]
        speed = classify_paired(old, new)
        self.assertEqual(speed.verdict, "unclear", speed.reason)
        self.assertIn("only 9 of 12 rounds slower", speed.reason)

    def test_rounds_that_disagree_are_not_same(self):
        old = rounds([1.0] * 12, seed=1)
        new = copy.deepcopy(old)
        new["round_medians_s"] = [m * (0.9 if index % 2 else 1.1) for index, m in enumerate(old["round_medians_s"])]
        speed = classify_paired(old, new)
        self.assertEqual(speed.verdict, "unclear", speed.reason)
        self.assertIn("the rounds disagree", speed.reason)

    def test_too_few_repeats_and_untimed(self):
        old = rounds([1.0] * 10, repeats=1, seed=1)
        self.assertIn("too few repeats", classify_paired(old, rounds([1.0] * 10, seed=2), Options(min_repeats=20))[2])
        self.assertEqual(classify_paired(None, old).verdict, "untimed")


def interleaved_document(kernel_timing, side, interleave_id="abc123", rounds_count=20):
    doc = fx.document([HOST], [fx.result("gemm/f64-160", HOST, "blocked", line=5, median=1e-3)])
    doc["results"][0]["timing"]["kernel"] = kernel_timing
    doc["interleaved"] = {"id": interleave_id, "rounds": rounds_count, "side": side, "sides": ["base", "new"]}
    return doc


class ComparisonTests(unittest.TestCase):
    def comparison(self, old, new):
        return Comparison(results_from_data(json.loads(json.dumps(old)), "base.json", "base.json"),
                          [results_from_data(json.loads(json.dumps(new)), "new.json", "new.json")])

    def test_sides_of_one_interleave_are_judged_round_by_round(self):
        loads = busy(20, 3)
        old = interleaved_document(rounds(loads, seed=1), "base")
        new = interleaved_document(rounds(loads, 1.10, seed=2), "new")
        comparison = self.comparison(old, new)
        self.assertEqual(comparison.rows[0]["speed"], "slower", comparison.rows[0]["reason"])
        self.assertIn("interleaved rounds", comparison.rows[0]["reason"])
        self.assertIn("  interleaved: new.json and the baseline are sides of one interleave of 20 rounds",
                      "\n".join(comparison.summary_lines()))
        self.assertEqual(comparison.verdict()[0], 4)
        # Files of two interleaves, or a file of one against a plain run: two separate runs.
        for other in ({"id": "def456", "rounds": 20}, {"id": "abc123", "rounds": 19}, None):
            changed = copy.deepcopy(new)
            if other:
                changed["interleaved"].update(other)
            else:
                del changed["interleaved"]
            comparison = self.comparison(old, changed)
            self.assertNotIn("interleaved rounds", comparison.rows[0]["reason"])
            self.assertNotIn("  interleaved:", "\n".join(comparison.summary_lines()))


def round_document(status, samples, pace, message="", extra_case=False):
    """One round's results file as the runner writes it."""
    entry = fx.result("gemm/f64-160", HOST, "blocked", status, line=5, message=message,
                      median=samples and sorted(samples)[len(samples) // 2], samples=samples)
    if status == "pass":
        entry["timing"]["kernel"]["pace_median_s"] = pace
    results = [entry]
    if extra_case:
        results.append(fx.result("gemm/f64-7", HOST, "blocked", line=30))
    return fx.document([HOST], results)


class MergeTests(unittest.TestCase):
    def test_rounds_are_merged_into_one_results_file(self):
        documents = [round_document("pass", [1e-3, 1.1e-3, 1.2e-3], 60e-6),
                     round_document("fail", None, None, message="sum differs", extra_case=True),
                     round_document("pass", [2e-3, 2.1e-3, 2.2e-3], 110e-6)]
        merged = kcs_interleave.merge_rounds(documents, {"id": "x1", "rounds": 3, "side": "new",
                                                         "sides": ["old", "new"]})
        run = results_from_data(json.loads(json.dumps(merged)), "merged.json")  # a valid results file
        self.assertEqual(run.summary_mismatches(), [])
        self.assertEqual(merged["interleaved"], {"id": "x1", "rounds": 3, "side": "new", "sides": ["old", "new"]})
        first, added = merged["results"]
        # The worst status any round gave, saying that the rounds disagreed.
        self.assertEqual(first["status"], "fail")
        self.assertEqual(first["message"], "sum differs (statuses over the 3 interleaved rounds: pass 2, fail 1)")
        self.assertEqual(merged["summary"]["failed"], 1)
        # A result only one round has is kept, its other rounds absent.
        self.assertEqual(added["case"], "gemm/f64-7")
        self.assertIn("absent 2", added["message"])
        kernel = first["timing"]["kernel"]
        self.assertEqual(kernel["samples_s"], [1e-3, 1.1e-3, 1.2e-3, 2e-3, 2.1e-3, 2.2e-3])
        self.assertEqual(kernel["repeats"], 6)
        self.assertAlmostEqual(kernel["median_s"], 1.6e-3)
        self.assertEqual((kernel["min_s"], kernel["max_s"]), (1e-3, 2.2e-3))
        self.assertEqual(kernel["round_medians_s"], [1.1e-3, None, 2.1e-3])
        self.assertEqual(kernel["round_pace_medians_s"], [60e-6, None, 110e-6])
        self.assertAlmostEqual(kernel["pace_median_s"], 85e-6)
        self.assertAlmostEqual(first["timing"]["kernel_flops_per_s"], first["flops"] / 1.6e-3)
        self.assertAlmostEqual(first["timing"]["ceiling"]["achieved_per_s"], first["flops"] / 1.6e-3)

    def test_rounds_rotate(self):
        sides = [("a", "1"), ("b", "2"), ("c", "3")]
        self.assertEqual([[name for name, _ in kcs_interleave.round_order(sides, r)] for r in range(4)],
                         [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]])

    def test_the_command_line(self):
        with tempfile.TemporaryDirectory() as folder:
            template = os.path.join(folder, "round.json")
            with open(template, "w", encoding="utf-8") as handle:
                json.dump(round_document("pass", [1e-3, 1.1e-3], 60e-6), handle)
            copy_it = f"sh -c 'cp {template} \"$2\"' copy"
            out = os.path.join(folder, "out")
            status = kcs_interleave.main(["--rounds", "3", "--output", out, f"old={copy_it}", f"new={copy_it}"])
            self.assertEqual(status, 0)
            self.assertEqual(sorted(os.listdir(os.path.join(out, "rounds")))[:2], ["new-01.json", "new-01.log"])
            with open(os.path.join(out, "old.json"), encoding="utf-8") as handle:
                merged = json.load(handle)
            for median in merged["results"][0]["timing"]["kernel"]["round_medians_s"]:
                self.assertAlmostEqual(median, 1.05e-3)
            self.assertEqual(kcs_interleave.main(["--output", out, "old=true", f"new={copy_it}"]), 1)
            for bad in (["old=x"], ["old=kcs run --results r.json", "new=y"], ["old=x", "old=y"],
                        ["o/d=x", "new=y"], ["--rounds", "0", "old=x", "new=y"]):
                self.assertEqual(kcs_interleave.main(["--output", out] + bad), 2, bad)


class ResultsFileTests(unittest.TestCase):
    def test_interleave_fields_are_checked(self):
        good = interleaved_document(rounds([1.0] * 3), "base", rounds_count=3)
        results_from_data(json.loads(json.dumps(good)))
        for change, message in ((lambda d: d["interleaved"].update(id=""), "interleaved: id"),
                                (lambda d: d["interleaved"].update(rounds=0), "interleaved: rounds"),
                                (lambda d: d.update(interleaved=[1]), "interleaved: not an object"),
                                (lambda d: d["results"][0]["timing"]["kernel"].update(round_medians_s=["x"]),
                                 "round_medians_s[0]: not a number"),
                                (lambda d: d["results"][0]["timing"]["kernel"].update(round_pace_medians_s=[-1]),
                                 "round_pace_medians_s[0]: not a time or null")):
            bad = json.loads(json.dumps(good))
            change(bad)
            with self.assertRaisesRegex(ResultsError, re.escape(message)):
                results_from_data(bad, "bad.json")


if __name__ == "__main__":
    unittest.main()
