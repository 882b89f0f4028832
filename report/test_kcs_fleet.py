"""Tests of the fleet merge (report/kcs_fleet.py) on results files written here: who is named as
disagreeing, when there is no majority, who is a peer, stragglers, which groups take the run's
verdicts and which the rule's (report/kcs_peers.py, whose own test holds it to the shared
fixture), missing members, bad hashes. tests/fleet_slurm_test.sh checks the same on real runs
under Slurm, tests/peers_test.sh the fleet's verdicts against the runner's on one run's results.

    /usr/bin/python3 -m unittest discover -s report -p 'test_kcs_fleet.py'
"""

import contextlib
import copy
import io
import json
import os
import random
import shutil
import tempfile
import unittest

import kcs_fixtures as fx
import kcs_fleet
import kcs_results

GPU = fx.device("cuda:0", "NVIDIA H100 80GB HBM3", "CUDA", "550.54", "12.4", 80 << 30)
A, B = "a" * 64, "b" * 64


def member(hashes, driver="550.54", median=None, seed=0, determinism=True):
    """One task's results: sumsq/f64-n93 on one H100, with output s hashed as given, run with
    --determinism unless told (the rule compares only bits proved deterministic)."""
    gpu = dict(GPU, driver_version=driver)
    samples = None
    if median is not None:
        rng = random.Random(seed)
        samples = [median * (1 + 0.01 * rng.random()) for _ in range(50)]
    entry = fx.result("sumsq/f64-n93", gpu, "blocked", median=median, samples=samples)
    if hashes is not None:
        entry["output_hashes"] = {"s": hashes}
    document = fx.document([gpu], [entry])
    document["options"]["determinism"] = determinism
    return document


def located_disagreement():
    """One task's results of a node with three H100s, cuda:2's output s differing from the others'
    (A, A, B), and the agreement its runner wrote after rerunning the case on cuda:2 and cuda:0: the
    first differing element, both values and the rerun's verdict ("intermittent")."""
    gpus = [dict(GPU, id=f"cuda:{i}", index=i) for i in range(3)]
    results = []
    for gpu, answer in zip(gpus, (A, A, B)):
        entry = fx.result("sumsq/f64-n93", gpu, "blocked")
        entry["output_hashes"] = {"s": answer}
        results.append(entry)
    document = fx.document(gpus, results)
    document["options"]["determinism"] = True
    document["agreement"] = [{
        "case": "sumsq/f64-n93", "kernel": "blocked", "identity": "cuda", "verdict": "disagree",
        "devices": ["cuda:0", "cuda:1", "cuda:2"],
        "differing": [{"device": "cuda:2", "outputs": "s", "peer": "cuda:0", "majority": True,
                       "rerun": "intermittent", "peer_reproduced": True,
                       "first_difference": {"output": "s", "index": 0, "dtype": "f64", "value": "30.600000000000001",
                                            "peer_value": "30.600000000000001", "bits": "0x403e99999999999a",
                                            "peer_bits": "0x403e999999999999"}}]}]
    return document


def node(medians, hashes=None, determinism=True, recorded=None):
    """One task's results of a node with one H100 per median: sumsq/f64-n93 timed on each (and
    hashed as given); with recorded, the "agreement", "speed" and "stragglers" its run wrote."""
    gpus = [dict(GPU, id=f"cuda:{i}", index=i) for i in range(len(medians))]
    results = []
    for i, (gpu, median) in enumerate(zip(gpus, medians)):
        entry = fx.result("sumsq/f64-n93", gpu, "blocked", median=median, spread=0.01)
        entry["output_hashes"] = {"s": (hashes or [A] * len(medians))[i]}
        results.append(entry)
    document = fx.document(gpus, results)
    document["options"]["determinism"] = determinism
    if recorded:
        document.update(recorded)
    return document


class FleetTest(unittest.TestCase):
    def merge(self, documents, expect=None, names=None):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        for index, document in enumerate(documents):
            name = names[index] if names else f"results-{index}.json"
            with open(os.path.join(folder, name), "w") as handle:
                json.dump(document, handle)
        return kcs_fleet.Fleet(kcs_fleet.results_paths([folder]), expect)

    def test_the_odd_device_out_is_named_by_majority(self):
        fleet = self.merge([member(A), member(B), member(A)])
        self.assertEqual([d["odd_devices"] for d in fleet.disagreements], [["results-1/cuda:0"]])
        self.assertTrue(fleet.disagreements[0]["decided"])
        self.assertEqual(fleet.ordered_devices()[0].id, "results-1/cuda:0")
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_CORRECTNESS)

    def test_the_first_differing_element_comes_from_the_run_that_held_both(self):
        """A member with three GPUs whose runner reran its disagreement: the fleet shows the
        element, both values and the rerun's verdict for the odd device; a member alone has none."""
        document = located_disagreement()
        fleet = self.merge([document, member(A)])
        entry = fleet.disagreements[0]
        self.assertEqual(entry["odd_devices"], ["results-0/cuda:2"])
        self.assertEqual([located["device"] for located in entry["located"]], ["results-0/cuda:2"])
        text = entry["located"][0]["text"]
        self.assertIn("s[0] f64: cuda:0 has 30.600000000000001 (0x403e999999999999), cuda:2 has", text)
        self.assertIn("intermittent", text)
        self.assertEqual(self.merge([member(A), member(B), member(A)]).disagreements[0]["located"], [])

    def test_two_that_differ_have_no_majority(self):
        fleet = self.merge([member(A), member(B)])
        self.assertEqual(fleet.disagreements[0]["odd_devices"], ["results-0/cuda:0", "results-1/cuda:0"])
        self.assertFalse(fleet.disagreements[0]["decided"])

    def test_another_driver_is_not_a_peer(self):
        fleet = self.merge([member(A), member(A), member(B, driver="560.28")])
        self.assertEqual(fleet.disagreements, [])
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_OK)

    def test_bits_not_proved_deterministic_are_not_compared(self):
        """A run without --determinism proves nothing of the bits: as the runner says "not
        compared" within a run, the fleet does across runs, and says how many groups."""
        fleet = self.merge([member(A), member(B, determinism=False), member(A)])
        self.assertEqual(fleet.disagreements, [])
        self.assertEqual(fleet.groups, {"agree": 0, "disagree": 0, "not compared": 1})
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_OK)
        nondeterministic = member(B)
        nondeterministic["results"][0]["message"] = "nondeterministic: s[0] was 1 in the first run and 2 in the second"
        self.assertEqual(self.merge([member(A), nondeterministic, member(A)]).disagreements, [])

    def test_a_plurality_is_no_majority(self):
        fleet = self.merge([member(A), member(A), member(B), member("c" * 64)])
        self.assertEqual(len(fleet.disagreements[0]["odd_devices"]), 4)
        self.assertFalse(fleet.disagreements[0]["decided"])

    def test_a_tenfold_slower_device_straggles_and_equal_ones_do_not(self):
        fleet = self.merge([member(A, median=1e-3, seed=1), member(A, median=1e-2, seed=2),
                            member(A, median=1e-3, seed=3)])
        self.assertEqual([s["device"] for s in fleet.stragglers], ["results-1/cuda:0"])
        self.assertEqual(fleet.stragglers[0]["judged_by"], "fleet")
        self.assertEqual(fleet.stragglers[0]["peers"], 2)
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_SPEED)
        fleet = self.merge([member(A, median=1e-3, seed=s) for s in range(3)])
        self.assertEqual(fleet.stragglers, [])

    def test_the_threshold_is_the_rule_s_and_has_no_option(self):
        """8% slower is within the rule's minimum effect of 10%; 12% is beyond it (the samples'
        spread is 1%). The fleet's former rule took 5%, and a rank test, by option."""
        for slower, straggles in ((1.08, False), (1.12, True)):
            fleet = self.merge([member(A, median=1e-3, seed=1), member(A, median=1e-3 * slower, seed=2)])
            self.assertEqual(bool(fleet.stragglers), straggles, slower)
        with contextlib.redirect_stderr(io.StringIO()) as said:
            self.assertEqual(kcs_fleet.main(["--min-effect", "0.05", "x"]), kcs_fleet.EXIT_BAD_INPUT)
        self.assertIn("unrecognized arguments: --min-effect", said.getvalue())

    def test_a_group_within_one_file_takes_the_verdicts_its_run_wrote(self):
        """Two GPUs of one node: the run wrote that cuda:1 straggles and disagrees. The fleet shows
        that, even where the timings and hashes it holds would not say so (a runner of another
        version may have judged): it aggregates, it does not judge a run's groups again."""
        recorded = {"agreement": [{"case": "sumsq/f64-n93", "kernel": "blocked", "identity": "cuda", "verdict": "disagree",
                                   "devices": ["cuda:0", "cuda:1"],
                                   "differing": [{"device": "cuda:1", "outputs": "s", "peer": "cuda:0",
                                                  "majority": True}]}],
                    "speed": [{"case": "sumsq/f64-n93", "kernel": "blocked", "identity": "cuda", "threshold": 0.1,
                               "devices": [{"device": "cuda:0", "median_s": 1e-3, "peer_median_s": 1e-3, "ratio": 1.0,
                                            "straggler": False},
                                           {"device": "cuda:1", "median_s": 1e-3, "peer_median_s": 1e-3, "ratio": 1.5,
                                            "straggler": True}]}]}
        fleet = self.merge([node([1e-3, 1e-3], recorded=recorded)])
        self.assertEqual([(s["device"], s["judged_by"]) for s in fleet.stragglers], [("results-0/cuda:1", "run")])
        self.assertEqual([d["odd_devices"] for d in fleet.disagreements], [["results-0/cuda:1"]])
        self.assertEqual(fleet.disagreements[0]["judged_by"], "run")
        # A file without the runner's comparisons (an older runner) is judged by the rule.
        fleet = self.merge([node([1e-3, 2e-3], hashes=[A, B])])
        self.assertEqual([(s["device"], s["judged_by"]) for s in fleet.stragglers], [("results-0/cuda:1", "fleet")])
        self.assertEqual(fleet.disagreements[0]["odd_devices"], ["results-0/cuda:0", "results-0/cuda:1"])

    def test_a_group_across_files_is_judged_over_all_its_peers(self):
        """Two nodes of two GPUs: within node 1, cuda:1 is 1.5x its one peer and its run said so;
        over all four, the peers' median is 1.5 ms, and it is no straggler. The fleet judges the
        larger group by the same rule; node 0's cuda:0 at 3 ms straggles against the three others."""
        slow_peer = {"speed": [{"case": "sumsq/f64-n93", "kernel": "blocked", "identity": "cuda", "threshold": 0.1,
                                "devices": [{"device": "cuda:0", "median_s": 1e-3, "peer_median_s": 1.5e-3,
                                             "ratio": 1 / 1.5, "straggler": False},
                                            {"device": "cuda:1", "median_s": 1.5e-3, "peer_median_s": 1e-3,
                                             "ratio": 1.5, "straggler": True}]}],
                     "agreement": [], "stragglers": []}
        fleet = self.merge([node([3e-3, 1.5e-3]), node([1e-3, 1.5e-3], recorded=slow_peer)])
        self.assertEqual([(s["device"], s["judged_by"], s["peers"]) for s in fleet.stragglers],
                         [("results-0/cuda:0", "fleet", 3)])
        self.assertEqual(fleet.time_ratio[("results-1/cuda:1", "sumsq/f64-n93", "cuda", "blocked", "f64")], 1.0)

    def test_a_missing_task_is_named(self):
        fleet = self.merge([member(A), member(A)], expect=3)
        self.assertEqual(fleet.missing, ["results-2.json"])
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_CORRECTNESS)

    def test_a_part_file_belongs_to_its_task(self):
        fleet = self.merge([member(A), member(A), member(A)], expect=2,
                           names=["results-0.json", "results-1.json", "results-1.extra.json"])
        self.assertEqual(fleet.missing, [])
        self.assertIn("results-1.extra/cuda:0", fleet.devices)

    def test_a_malformed_hash_is_named_and_its_file_left_out(self):
        fleet = self.merge([member("not hex"), member(A)])
        self.assertEqual(len(fleet.bad_inputs), 1)
        self.assertRegex(fleet.bad_inputs[0][1], r"results-0\.json.*not a sha256")
        self.assertEqual([m.label for m in fleet.members], ["results-1"])
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_BAD_INPUT)

    def test_hashes_looked_at_at_once_pass_only_what_each_passes(self):
        """check_hashes_alike (all of a file's digests at once) passes no digest that check_hashes
        refuses, and where it cannot tell, check_hashes decides and names each."""
        odd = [A, A.upper(), A[:63], A + "0", A + "\n", "g" * 64, "\u00e9" * 64, "", 7, None, ["a"], A[:32] + " " * 32]
        for digest in odd:
            with self.subTest(digest=digest):
                run = kcs_results.Run("f.json", {"results": [{"case": "c", "output_hashes": {"s": digest}}]}, "f")
                try:
                    kcs_fleet.check_hashes(run)
                    refused = False
                except kcs_fleet.FleetError:
                    refused = True
                if kcs_fleet.check_hashes_alike([digest]):
                    self.assertFalse(refused)
        self.assertTrue(kcs_fleet.check_hashes_alike([A, B, "0123456789abcdef" * 4]))
        self.assertFalse(kcs_fleet.check_hashes_alike([A, A + "\n"]))  # SHA256_HEX's "$" passes this one

    def test_hashes_not_an_object_are_named(self):
        for hashes in ("a" * 64, ["a" * 64], 7):
            document = member(A)
            document["results"][0]["output_hashes"] = hashes
            fleet = self.merge([document, member(A)])
            self.assertRegex(fleet.bad_inputs[0][1], r"results-0\.json: .*output_hashes is not an object")

    def test_a_malformed_result_is_named_before_a_malformed_hash(self):
        document = member("not hex")
        document["results"][0]["status"] = "passed"
        fleet = self.merge([document, member(A)])
        self.assertRegex(fleet.bad_inputs[0][1], r"results-0\.json: malformed results file.*\n.*status: 'passed'")
        self.assertNotIn("sha256", fleet.bad_inputs[0][1])

    def test_a_failure_fails_the_fleet(self):
        document = member(A)
        failed = copy.deepcopy(document)
        failed["results"][0]["status"] = "fail"
        failed["summary"] = fx.runner_summary(failed["results"])
        fleet = self.merge([document, failed, document])
        self.assertEqual([(d.id, r["status"]) for d, r in fleet.failures()], [("results-1/cuda:0", "fail")])

    def test_the_fleet_page_says_what_explains_a_failure(self):
        document = member(A)
        failed = copy.deepcopy(document)
        failed["results"][0]["status"] = "fail"
        failed["results"][0]["explanation"] = {"text": "unexplained: none of the 5 models of sumsq for f64 fits"}
        failed["summary"] = fx.runner_summary(failed["results"])
        fleet = self.merge([document, failed])
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        index, _ = kcs_fleet.write_report(fleet, folder, os.path.join(folder, "fleet.json"))
        with open(index, encoding="utf-8") as handle:
            self.assertIn("<strong>explained:</strong> unexplained: none of the 5 models of sumsq", handle.read())

    def test_a_case_skipped_before_any_device_does_not_fail_the_fleet(self):
        """A large case under --skip-large (tools/fleet.sh's medium level) and a backend without a
        device are skips of no device: not failures. A case that could not be prepared is."""
        def with_no_device(status, message, backend=None):
            document = member(A)
            entry = fx.result("sumsq/f64-n100000000", None, None, status=status, message=message)
            entry["backend"] = backend
            document["results"].append(entry)
            document["summary"] = fx.runner_summary(document["results"])
            return document
        skipped = with_no_device("skip", "tagged large and --skip-large was given")
        no_cuda = with_no_device("skip", "no cuda device: no CUDA-capable device is detected", backend="cuda")
        fleet = self.merge([skipped, no_cuda, skipped])
        self.assertEqual(fleet.early_errors, [])
        self.assertEqual(fleet.verdict()[0], kcs_fleet.EXIT_OK, fleet.verdict()[1])
        self.assertIn("sumsq/f64-n100000000", fleet.cases)
        broken = with_no_device("error", "cases/sumsq.md:40: golden/MANIFEST: not found")
        fleet = self.merge([skipped, broken])
        self.assertEqual([(label, r["status"]) for label, r in fleet.early_errors], [("results-1", "error")])
        self.assertEqual(fleet.verdict(), (kcs_fleet.EXIT_CORRECTNESS, "FLEET FAILED: 1 failed or errors"))

    def test_the_page_and_json_name_the_odd_device(self):
        fleet = self.merge([member(A), member(B), member(A)])
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        index, summary = kcs_fleet.write_report(fleet, folder, os.path.join(folder, "fleet.json"))
        with open(index, encoding="utf-8") as handle:
            page = handle.read()
        self.assertIn('<td class="odd">results-1/cuda:0</td>', page)
        with open(os.path.join(folder, "fleet.json")) as handle:
            self.assertEqual(json.load(handle)["disagreements"][0]["odd_devices"], ["results-1/cuda:0"])


if __name__ == "__main__":
    unittest.main()
