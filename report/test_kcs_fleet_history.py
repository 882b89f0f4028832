"""Tests of the fleet's history across runs (report/kcs_fleet_history.py, kcs_fleet.py --history):
three merges of one node of two identical GPUs, a card changing between them: its outputs, then
a probe failure, then a slower kernel. The changed card is named with the date since which it
changed, its peer is not, its node page shows its timeline; the folder keeps the newest K; a
broken summary is named.

    /usr/bin/python3 -m unittest discover -s report -p 'test_kcs_fleet_history.py'
"""

import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

import kcs_fixtures as fx
import kcs_fleet
import kcs_fleet_history

A, B = "a" * 64, "b" * 64
CARDS = ("GPU-11111111-0000-0000-0000-000000000000", "GPU-22222222-0000-0000-0000-000000000000")


def node(answers=(A, A), medians=(1e-3, 1e-3), probe=("pass", "pass"), seed=0):
    """One node's results: two H100s (cuda:0, cuda:1), each with sumsq/f64-n93 hashed as given,
    a timed softmax of the given median and a probe item (a case no case file holds)."""
    gpus = [fx.device(f"cuda:{i}", "NVIDIA H100 80GB HBM3", "CUDA", "550.54.15", "CUDA runtime 12.4", 85e9,
                      details=f"uuid={CARDS[i]}; pci_bus_id=0000:{0x18 + i:02x}:00.0") for i in (0, 1)]
    results = []
    for i, gpu in enumerate(gpus):
        entry = fx.result("sumsq/f64-n93", gpu, "blocked")
        entry["output_hashes"] = {"s": answers[i]}
        results.append(entry)
        samples = fx.noisy_samples(medians[i], seed=seed * 10 + i, count=20)
        results.append(fx.result("softmax/f32-cols1000", gpu, "online", median=medians[i], samples=samples))
        message = "" if probe[i] == "pass" else f"card {CARDS[i]}: SM 41, output slice 9: hash differs"
        results.append(fx.result("probe/gemm-tensor", gpu, "gemm-tensor", status=probe[i], message=message))
    document = fx.document(gpus, results, hostname="gpu-node-1")
    # Made with --determinism (the medium level): the peers' bits are compared (docs/runner.md).
    document["options"]["determinism"] = True
    return document


class HistoryTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder)
        self.history = os.path.join(self.folder, "history")

    def merge(self, document, *options):
        """kcs_fleet.main on this node's results alone, with the history; (status, summary, output)."""
        results = os.path.join(self.folder, "results")
        os.makedirs(results, exist_ok=True)
        with open(os.path.join(results, "results-0.json"), "w") as handle:
            json.dump(document, handle)
        output = os.path.join(self.folder, "report")
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            status = kcs_fleet.main([results, "--output", output, "--history", self.history, "--jobs", "1", *options])
        self.err = err.getvalue()
        self.out = out.getvalue()
        with open(os.path.join(output, "fleet.json")) as handle:
            return status, json.load(handle), output

    def changed(self, summary):
        return {entry["device"]: [(c["kind"], c["case"]) for c in entry["changes"]]
                for entry in summary["history"]["changed"]}

    def test_a_card_that_changes_is_named_with_the_date_since_it_changed(self):
        status, first, _ = self.merge(node(seed=1))
        self.assertEqual(status, kcs_fleet.EXIT_OK)
        self.assertEqual(first["history"]["compared"], [])
        since_first = first["history"]["created"]

        # cuda:1's outputs change: two peers that differ have no majority, and the fleet names
        # both; the history names the one whose outputs are not its own earlier ones.
        status, second, _ = self.merge(node(answers=(A, B), seed=2))
        self.assertEqual(status, kcs_fleet.EXIT_CORRECTNESS)
        self.assertEqual(second["disagreements"][0]["odd_devices"], ["results-0/cuda:0", "results-0/cuda:1"])
        self.assertFalse(second["disagreements"][0]["decided"])
        self.assertEqual(self.changed(second), {"results-0/cuda:1": [("outputs", "sumsq/f64-n93")]})
        self.assertEqual(second["history"]["changed"][0]["since_run"], since_first)
        self.assertEqual(second["history"]["changed"][0]["card"], CARDS[1])
        since_second = second["history"]["created"]

        # cuda:1 fails its probe and cuda:0's kernel takes half as long again: each is named for
        # its own change, with the date of the latest run in which it did not show it; cuda:1's
        # outputs are still not those of the first run.
        status, third, output = self.merge(node(answers=(A, B), medians=(1.5e-3, 1e-3), probe=("pass", "fail"),
                                                seed=3))
        changed = self.changed(third)
        self.assertEqual(changed, {"results-0/cuda:0": [("slower", "softmax/f32-cols1000")],
                                   "results-0/cuda:1": [("outputs", "sumsq/f64-n93"), ("fails", None)]})
        by_device = {entry["device"]: entry for entry in third["history"]["changed"]}
        self.assertEqual(by_device["results-0/cuda:0"]["since_run"], since_second)
        self.assertEqual([c["since_run"] for c in by_device["results-0/cuda:1"]["changes"]], [since_first, since_second])
        self.assertEqual(third["history"]["compared"], [first["history"]["created"], second["history"]["created"]])
        self.assertIn(f"card {CARDS[1]}: SM 41, output slice 9: hash differs",
                      json.dumps(third["failures"]))

        with open(os.path.join(output, "index.html"), encoding="utf-8") as handle:
            changes = handle.read().split('id="changed"')[1].split("<h2")[0]
        self.assertIn(f"<td>{kcs_fleet_history.display_date(since_second)}</td>", changes)
        self.assertIn("results-0/cuda:0", changes)
        with open(os.path.join(output, "nodes", "results-0.html"), encoding="utf-8") as handle:
            page = handle.read()
        timeline = page.split('id="results-0/cuda:0"')[1].split("Timeline of card")[1].split("</table>")[0]
        self.assertEqual(timeline.count("<tr>"), 1 + 3)  # a heading and three runs, this one last
        self.assertIn("(this merge)", timeline)
        self.assertIn("1.5 ms", timeline)
        self.assertIn("softmax/f32-cols1000 [online] median", timeline)

    def test_the_newest_summaries_are_kept_and_a_broken_one_is_named(self):
        for seed in range(3):
            self.merge(node(seed=seed), "--history-keep", "2")
        names = sorted(os.listdir(self.history))
        self.assertEqual(len(names), 2)
        self.assertIn("2 summaries kept, at most the newest 2", self.out)
        broken = os.path.join(self.history, "20200101T000000.000000Z.json")
        with open(broken, "w") as handle:
            handle.write('{"schema": "kcs-fleet-history", "version": 1, "cards": [')
        status, summary, _ = self.merge(node(seed=4), "--history-keep", "3")
        self.assertEqual(status, kcs_fleet.EXIT_BAD_INPUT)
        self.assertIn("20200101T000000.000000Z.json: cannot read", self.err)
        self.assertIn("1 unreadable history summary", summary["verdict"])
        self.assertEqual(len(summary["history"]["compared"]), 2)  # the two good ones still count
        self.assertEqual(len(os.listdir(self.history)), 3)  # the oldest, the broken one, removed

    def test_a_summary_is_compact(self):
        """A card that passed, agreed and was untimed costs its counts; a timed result its times."""
        self.merge(node(seed=5))
        [name] = os.listdir(self.history)
        with open(os.path.join(self.history, name)) as handle:
            summary = json.load(handle)
        self.assertEqual(len(summary["models"]), 1)
        model = next(iter(summary["models"].values()))
        self.assertEqual(list(model["answers"]), ["sumsq/f64-n93\tcuda\tblocked\tf64"])
        for card in summary["cards"]:
            self.assertEqual((card["problems"], card["answers"], card["missing"]), ({}, {}, []))
            self.assertEqual(list(card["times"]), ["softmax/f32-cols1000\tcuda\tonline\tf32"])


if __name__ == "__main__":
    unittest.main()
