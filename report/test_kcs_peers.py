"""The peers rule in Python (report/kcs_peers.py) held to its fixture, every JSON file of
tests/peers-fixture/: each device's identity text, each speed verdict (peers, peers' median,
threshold, straggler: exactly) and each agreement verdict (groups, majority, who is named, why not
compared). harness/agreement_test.c holds the runner's rule to the same files.

    /usr/bin/python3 -m unittest discover -s report -p 'test_kcs_peers.py'
"""

import glob
import json
import os
import unittest

import kcs_peers

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "peers-fixture")


def fixture_files():
    paths = sorted(glob.glob(os.path.join(FIXTURE, "*.json")))
    if not paths:
        raise AssertionError(f"{FIXTURE}: no *.json fixture")
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            yield os.path.relpath(path), json.load(handle)


class FixtureTest(unittest.TestCase):
    def identities(self, path, document):
        found = {}
        for name, device in document.get("devices", {}).items():
            found[name] = kcs_peers.identity(device)
            self.assertEqual(found[name], device["identity"], f"{path}: device {name}")
        return found

    def test_speed_verdicts(self):
        cases = 0
        for path, document in fixture_files():
            identities = self.identities(path, document)
            for case in document.get("speed", []):
                where = f"{path}: {case['about']}"
                timings = case["timings"]
                verdicts = kcs_peers.judge_speed([(identities[t["device"]], t.get("median_s"),
                                                   t.get("lower_quartile_s"), t.get("upper_quartile_s"))
                                                  for t in timings])
                for timing, verdict in zip(timings, verdicts):
                    device = timing["device"]
                    self.assertIn(device, case["expected"], f"{where}: no expected verdict for {device}")
                    want = case["expected"][device]
                    if want is None:
                        self.assertIsNone(verdict, f"{where}: {device} was judged; the fixture says it is not")
                        continue
                    self.assertIsNotNone(verdict, f"{where}: {device} was not judged")
                    got = {"peers": verdict.peers, "peer_median_s": verdict.peer_median_s,
                           "threshold": verdict.threshold, "straggler": verdict.straggler}
                    self.assertEqual(got, want, f"{where}: {device}")
                cases += 1
        self.assertGreaterEqual(cases, 5)  # a fixture that lost its cases would pass everything

    def test_agreement_verdicts(self):
        cases = 0
        for path, document in fixture_files():
            identities = self.identities(path, document)
            for case in document.get("agreement", []):
                where = f"{path}: {case['about']}"
                answers = case["answers"]
                verdicts = kcs_peers.judge_agreement([(identities[a["device"]], a["hashes"], a["determinism"])
                                                      for a in answers])
                groups, alone = [], []
                for g, verdict in enumerate(verdicts):
                    if verdict.group != g:
                        continue
                    if verdict.verdict == kcs_peers.ALONE:
                        alone.append(answers[g]["device"])
                        continue
                    members = [m for m, v in enumerate(verdicts) if v.group == g]
                    group = {"devices": [answers[m]["device"] for m in members], "verdict": verdict.verdict}
                    if verdict.verdict == kcs_peers.DISAGREE:
                        group["decided"] = verdict.decided
                        group["differs"] = [answers[m]["device"] for m in members if verdicts[m].differs]
                    if verdict.verdict == kcs_peers.NOT_COMPARED:
                        group["because"] = answers[verdict.because]["device"]
                    groups.append(group)
                self.assertEqual(groups, case["expected"]["groups"], where)
                self.assertEqual(alone, case["expected"]["alone"], where)
                cases += 1
        self.assertGreaterEqual(cases, 5)


class RuleTest(unittest.TestCase):
    def test_a_value_that_is_not_a_number_is_no_timing(self):
        verdicts = kcs_peers.judge_speed([("x", "nan", None, None), ("x", float("inf"), 1.0, 1.0),
                                          ("x", True, 1.0, 1.0), ("x", 1.0, 1.0, 1.0)])
        self.assertEqual(verdicts, [None, None, None, None])


if __name__ == "__main__":
    unittest.main()
