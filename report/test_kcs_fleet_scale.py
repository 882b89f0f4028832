"""Tests of the fleet merge on many simulated nodes (report/kcs_fleet.py, tools/fleet_simulate.py):
a card planted among fifty nodes is the one named, read by worker processes or not; the index
links to a page for every node and lists only the devices with something to look at; a broken
file is named and the rest merged; failures beyond the cap are counted; results of cases that
no case file holds (kcs probe's) show like any other; the nesting measured before parsing is
check_depth's. Speed is measured (docs/fleet.md), never asserted here.

    /usr/bin/python3 -m unittest discover -s report -p 'test_kcs_fleet_scale.py'
"""

import contextlib
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import unittest

import kcs_fixtures as fx
import kcs_fleet
import kcs_results

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import fleet_simulate  # noqa: E402

GPU = fx.device("cuda:0", "NVIDIA H100 80GB HBM3", "CUDA", "550.54.15", "CUDA runtime 12.4", 85e9,
                details="uuid=GPU-0b6e1d2c-0000-0000-0000-000000000000; pci_bus_id=0000:18:00.0")
CASES = ("sumsq/f64-n93", "sumsq/f32-n1000", "softmax/f32-cols33")


def node_document():
    """A node's results as a medium-level run writes them: an H100 and POCL, three hashed cases
    each, one of them timed with its repeats; a skip of no device."""
    devices = [GPU, fx.POCL]
    results = []
    for device in devices:
        kernel = "blocked" if device is GPU else "gpu-strided-tree"
        for number, case in enumerate(CASES):
            timed = number == 0
            # 20 repeats, too few for block medians: every simulated peer repeats these very
            # times, and the block medians of copies tie, which the rank test cannot order.
            samples = fx.noisy_samples(2e-4, seed=number + 17 * (device is GPU), count=20) if timed else None
            entry = fx.result(case, device, kernel, median=2e-4 if timed else None, samples=samples)
            entry["output_hashes"] = {"s": f"{number:02d}{device['backend'][:2].encode().hex()}" + "a" * 58}
            results.append(entry)
    results.append(fx.result("sumsq/f64-n100000000", None, None, status="skip",
                             message="tagged large and --skip-large was given"))
    document = fx.document(devices, results)
    # Made with --determinism (the medium level): peers' bits are compared (docs/runner.md, "Peers: one rule").
    document["options"]["determinism"] = True
    return document


class Simulated(unittest.TestCase):
    def folder(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        return folder

    def simulate(self, nodes, *options, document=None):
        """A folder of nodes simulated from one node's results (fleet_simulate.py's own main)."""
        folder = self.folder()
        real = os.path.join(folder, "real.json")
        with open(real, "w") as handle:
            json.dump(document or node_document(), handle)
        output = os.path.join(folder, "fleet")
        with contextlib.redirect_stdout(io.StringIO()):
            fleet_simulate.main([real, "--nodes", str(nodes), "--output", output, *options])
        return output

    def merge(self, folder, jobs=1):
        return kcs_fleet.Fleet(kcs_fleet.results_paths([folder]), jobs=jobs)

    def test_a_planted_card_among_fifty_nodes_is_the_one_named(self):
        fleet_folder = self.simulate(50, "--gpus-per-node", "4", "--flip", "17:cuda:1", "--slow", "33:opencl:0:3")
        fleet = self.merge(fleet_folder)
        self.assertEqual(len(fleet.device_list), 200)
        # Every hashed case of the planted card, and nothing else, disagrees with 99 peers.
        self.assertEqual(sorted(d["case"] for d in fleet.disagreements), sorted(CASES))
        for entry in fleet.disagreements:
            self.assertEqual(entry["odd_devices"], ["results-17/cuda:1"], entry["case"])
            self.assertTrue(entry["decided"])
            self.assertEqual((entry["peers"], entry["majority_count"]), (100, 99))
            self.assertEqual(len(entry["majority_devices"]), kcs_fleet.DEVICES_NAMED)
        # The slowed card straggles on its one timed case, alone.
        self.assertEqual([(s["device"], s["case"]) for s in fleet.stragglers], [("results-33/opencl:0", CASES[0])])
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_CORRECTNESS)
        self.assertEqual([d.id for d in fleet.ordered_devices()[:2]], ["results-17/cuda:1", "results-33/opencl:0"])
        # Cards are told apart by the uuids the simulation gave them.
        self.assertEqual(len({d.card for d in fleet.device_list}), 200)
        self.assertTrue(all(d.card.startswith("GPU-") for d in fleet.device_list))
        # Read by two worker processes, the fleet is the same.
        parallel = self.merge(fleet_folder, jobs=2)
        for key in ("disagreements", "stragglers", "devices", "failures", "hashes", "verdict", "members"):
            self.assertEqual(parallel.summary()[key], fleet.summary()[key], key)

    def test_the_index_links_to_a_page_for_every_node_and_names_only_devices_with_problems(self):
        fleet = self.merge(self.simulate(50, "--gpus-per-node", "2", "--flip", "8:opencl:0"))
        output = self.folder()
        index, summary = kcs_fleet.write_report(fleet, output, os.path.join(output, "fleet.json"))
        with open(index, encoding="utf-8") as handle:
            page = handle.read()
        pages = re.findall(r'href="(nodes/[^"#]+)"', page)
        self.assertEqual(sorted(set(pages)), sorted(f"nodes/results-{i}.html" for i in range(50)))
        for link in set(pages):
            self.assertTrue(os.path.isfile(os.path.join(output, link)), link)
        self.assertEqual(sorted(os.listdir(os.path.join(output, "nodes"))), sorted(p[6:] for p in set(pages)))
        self.assertIn('<td class="odd">results-8/opencl:0</td>', page)
        self.assertIn('href="nodes/results-8.html#results-8/opencl:0"', page)
        # No device x case matrix: a device with nothing to look at is on its node's page only.
        self.assertNotIn("results-9/cuda:0", page)
        with open(os.path.join(output, "nodes", "results-9.html"), encoding="utf-8") as handle:
            self.assertIn('id="results-9/cuda:0"', handle.read())
        with open(os.path.join(output, "nodes", "results-8.html"), encoding="utf-8") as handle:
            node = handle.read()
        planted = node.split('id="results-8/opencl:0"')[1]
        self.assertIn("Disagrees with its peers", planted)
        self.assertEqual(summary["devices"][0]["page"], "nodes/results-8.html")

    def test_a_broken_file_is_named_its_cause_given_and_the_rest_merged(self):
        fleet_folder = self.simulate(12, "--broken", "4", "--flip", "7:cuda:0")
        output = self.folder()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = kcs_fleet.main([fleet_folder, "--output", output, "--expect-tasks", "12", "--jobs", "1"])
        self.assertEqual(status, kcs_fleet.EXIT_BAD_INPUT)
        self.assertRegex(err.getvalue(), r"results-4\.json: not valid JSON")
        self.assertIn("DISAGREES: sumsq/f64-n93", out.getvalue())  # the others were merged
        with open(os.path.join(output, "fleet.json")) as handle:
            summary = json.load(handle)
        self.assertEqual(len(summary["members"]), 11)
        self.assertEqual([b["file"] for b in summary["bad_inputs"]], [os.path.join(fleet_folder, "results-4.json")])
        self.assertEqual(summary["missing"], [])  # present, though unreadable: named once, as bad input
        self.assertEqual(summary["exit_status"], kcs_fleet.EXIT_BAD_INPUT)
        self.assertIn("1 unreadable or malformed results file", summary["verdict"])
        with open(os.path.join(output, "index.html"), encoding="utf-8") as handle:
            self.assertIn("results-4.json", handle.read().split('id="bad-inputs"')[1].split("<h2")[0])

    def test_failures_beyond_those_kept_are_counted(self):
        document = node_document()
        for number in range(kcs_fleet.FAILURES_KEPT + 10):
            entry = fx.result(f"sumsq/f64-n{number + 1000}", GPU, "blocked", status="fail",
                              message=f"out[0]: failure {number}")
            document["results"].append(entry)
        document["summary"] = fx.runner_summary(document["results"])
        fleet = self.merge(self.simulate(3, document=document))
        device = fleet.devices["results-1/cuda:0"]
        self.assertEqual((len(device.failures), device.failure_count), (kcs_fleet.FAILURES_KEPT, 30))
        self.assertEqual(fleet.failure_total(), 90)
        self.assertIn("90 failed or errors", fleet.verdict()[1])
        output = self.folder()
        kcs_fleet.write_report(fleet, output, os.path.join(output, "fleet.json"))
        with open(os.path.join(output, "nodes", "results-1.html"), encoding="utf-8") as handle:
            self.assertIn("... and 10 more", handle.read())

    def test_results_of_cases_no_case_file_holds_show_like_any_other(self):
        """kcs probe writes items named probe/<kernel>: a failure is named with its message."""
        document = node_document()
        message = "card GPU-0b6e1d2c: SM 17, output slice 3 of 132: hash differs from the recorded one"
        for kernel, status in (("gemm-tensor", "fail"), ("softmax", "pass")):
            entry = fx.result(f"probe/{kernel}", GPU, kernel, status=status,
                              message=message if status == "fail" else "")
            entry.pop("file")
            document["results"].append(entry)
        document["summary"] = fx.runner_summary(document["results"])
        fleet = self.merge(self.simulate(2, document=document))
        self.assertIn("probe/gemm-tensor", fleet.cases)
        self.assertEqual([(d.id, f["case"], f["message"]) for d, f in fleet.failures()],
                         [("results-0/cuda:0", "probe/gemm-tensor", message),
                          ("results-1/cuda:0", "probe/gemm-tensor", message)])
        self.assertEqual(fleet.devices["results-0/cuda:0"].ops["probe"], [2, 1, 0, 0.01])
        output = self.folder()
        kcs_fleet.write_report(fleet, output, os.path.join(output, "fleet.json"))
        with open(os.path.join(output, "nodes", "results-0.html"), encoding="utf-8") as handle:
            self.assertIn(f"probe/gemm-tensor [gemm-tensor]: fail: {message}", handle.read())


class NestingTest(unittest.TestCase):
    """nesting_depth is check_depth's measure, without its loop in Python."""

    @staticmethod
    def tokens_depth(text):
        depth = deepest = 0
        for match in kcs_results._TOKEN.finditer(text):
            token = match.group()
            if token in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif token in "]}":
                depth -= 1
        return deepest

    def test_brackets_quotes_and_backslashes_in_strings_do_not_count(self):
        rng = random.Random(5)
        pieces = ['[', ']', '{', '}', '"', '\\', '\\\\', '\\"', 'a', ' ', '\n', 'é']

        def value(depth):
            kind = rng.random()
            if depth > 8 or kind < 0.3:
                return "".join(rng.choice(pieces) for _ in range(rng.randrange(8)))
            if kind < 0.6:
                return [value(depth + 1) for _ in range(rng.randrange(4))]
            return {"".join(rng.choice(pieces) for _ in range(3)): value(depth + 1) for _ in range(rng.randrange(4))}

        for _ in range(300):
            text = json.dumps(value(0), ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
            self.assertEqual(kcs_fleet.nesting_depth(text.encode()), self.tokens_depth(text), text)

    def test_a_file_nested_too_deeply_is_refused_naming_where(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, "results-0.json")
        with open(path, "w") as handle:
            handle.write('{"schema": "kcs-results", "deep": ' + "[" * 70 + "]" * 70 + "}")
        with self.assertRaisesRegex(kcs_results.ResultsError, r"results-0\.json:1:\d+: JSON nested deeper than 64"):
            kcs_fleet.read_results(path, "results-0")


if __name__ == "__main__":
    unittest.main()
