"""Tests of the fleet merge's digests (report/kcs_fleet.py: write_digest, read_digest): a merge
that folds the digests its nodes wrote is the merge that reads the results files, to the byte
of its JSON and pages (but for the count of where each member came from); a digest that is not
of the file beside it as it is now (rewritten, its listing changed, renamed), of another
version of the reduction, or malformed is not used, is named with its cause, and the file is
reduced instead; a digest whose results file is gone is named and fails the fleet; a file that
cannot be reduced gets no digest.

    /usr/bin/python3 -m unittest discover -s report -p 'test_kcs_fleet_digest.py'
"""

import contextlib
import copy
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import unittest

import kcs_fixtures as fx
import kcs_fleet
import test_kcs_fleet as flat
import test_kcs_fleet_history as history_test

A, B = flat.A, flat.B
# A `kcs devices` listing for results-0 (history_test.node's two H100s): one kernel row that no
# case ran, which the merge names.
LISTING = """cuda:0       NVIDIA H100 80GB HBM3 [CUDA] driver 550.54.15
             kernel sumsq f64 blocked: the blocked sum
             kernel sumsq f64 never-run: a row no case took
cuda:1       NVIDIA H100 80GB HBM3 [CUDA] driver 550.54.15
             kernel sumsq f64 blocked: the blocked sum
"""


def fleet_documents():
    """{file name: results document} of a small fleet with something of every kind to report:
    a no-majority pair within a node, a probe item failing, a straggler judged by the rule
    (results-0); a node whose run wrote its agreement and located the odd GPU's first differing
    element (results-1); a failure with its explanation (results-2); a disagreement across
    files and a straggler among them (results-3); a case that erred before any device ran it
    (results-4); a further step's file of task 2 (results-2.extra); a node whose run wrote that
    its two GPUs agree (results-5: a verdict with no odd device, which its digest carries; the
    fleet judges the group anew, its peers being in other files too)."""
    documents = {"results-0.json": history_test.node(answers=(A, B), medians=(1e-3, 3e-3), probe=("fail", "pass"))}
    located = flat.located_disagreement()
    documents["results-1.json"] = located
    failed = flat.member(A, median=1e-3, seed=1)
    failed["results"][0]["status"] = "fail"
    failed["results"][0]["explanation"] = {"text": "unexplained: none of the 5 models of sumsq for f64 fits"}
    failed["summary"] = fx.runner_summary(failed["results"])
    documents["results-2.json"] = failed
    documents["results-3.json"] = flat.member(B, median=1e-2, seed=2)
    erred = flat.member(A, median=1e-3, seed=3)
    entry = fx.result("sumsq/f64-n100000000", None, None, status="error", message="golden/MANIFEST: not found")
    erred["results"].append(entry)
    erred["summary"] = fx.runner_summary(erred["results"])
    documents["results-4.json"] = erred
    documents["results-2.extra.json"] = flat.member(A, median=1e-3, seed=4)
    agreed = {"agreement": [{"case": "sumsq/f64-n93", "kernel": "blocked", "identity": "cuda", "verdict": "agree",
                             "devices": ["cuda:0", "cuda:1"], "differing": []}]}
    documents["results-5.json"] = flat.node([1e-3, 1e-3], recorded=agreed)
    return documents


class DigestTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)

    def fleet_folder(self, name="fleet", documents=None):
        folder = os.path.join(self.root, name)
        os.makedirs(folder)
        for file_name, document in (documents or fleet_documents()).items():
            with open(os.path.join(folder, file_name), "w") as handle:
                json.dump(document, handle)
        with open(os.path.join(folder, "devices-0.txt"), "w") as handle:
            handle.write(LISTING)
        return folder

    def digest_all(self, folder):
        """kcs_fleet.py --digest on every results file of folder, as each task does."""
        paths = kcs_fleet.results_paths([folder])
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(kcs_fleet.main(["--digest"] + paths), kcs_fleet.EXIT_OK)
        self.assertEqual(out.getvalue().split(), [kcs_fleet.digest_path(p) for p in paths])
        return paths

    def run_merge(self, folder, *options):
        """kcs_fleet.main on folder: (status, fleet.json, the index and node pages {name: text})."""
        output = os.path.join(self.root, "report-" + str(len(os.listdir(self.root))))
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
            status = kcs_fleet.main([folder, "--output", output, "--jobs", "1", *options])
        self.out = out.getvalue()
        with open(os.path.join(output, "fleet.json")) as handle:
            summary = json.load(handle)
        pages = {}
        for name in ["index.html"] + ["nodes/" + n for n in sorted(os.listdir(os.path.join(output, "nodes")))]:
            with open(os.path.join(output, name), encoding="utf-8") as handle:
                pages[name] = handle.read()
        return status, summary, pages

    @staticmethod
    def without_sources(summary, pages):
        """The report but for where its members came from and when it was made."""
        summary = dict(summary)
        del summary["digests"]
        if "history" in summary:
            summary["history"] = {k: v for k, v in summary["history"].items() if k not in ("folder", "created")}
        stripped = {}
        for name, page in pages.items():
            page = re.sub(r'<div id="digests">.*?</div>', "", page, flags=re.S)
            # the page's time (to the minute) and the history's of this merge (to the second)
            stripped[name] = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC", "", page)
        return summary, stripped

    def test_the_merge_of_digests_is_the_merge_of_the_files(self):
        """Every kind of finding, the history included (an earlier run in which results-0's
        cuda:1 agreed and passed): the report from the digests is the report from the files."""
        folder = self.fleet_folder()
        paths = self.digest_all(folder)
        earlier = self.fleet_folder("earlier", {"results-0.json": history_test.node()})
        history = os.path.join(self.root, "history")
        self.run_merge(earlier, "--history", history)
        shutil.copytree(history, history + "-earlier")
        raw = self.run_merge(folder, "--no-digests", "--history", history)
        self.assertIn("members: 0 from their digests, 7 reduced here", self.out)
        shutil.rmtree(history)
        shutil.copytree(history + "-earlier", history)  # the history as the first merge found it
        digested = self.run_merge(folder, "--history", history)
        self.assertIn("members: 7 from their digests, 0 reduced here", self.out)
        self.assertEqual(digested[1]["digests"], {"from_digests": 7, "reduced_here": 0, "not_used": [],
                                                  "results_gone": []})
        self.assertEqual(raw[0], kcs_fleet.EXIT_CORRECTNESS)
        self.assertEqual(digested[0], raw[0])
        summary, pages = self.without_sources(*raw[1:])
        self.assertEqual(self.without_sources(*digested[1:]), (summary, pages))
        # What the fixture was made to hold is there, or the comparison above proves little.
        self.assertEqual([d["odd_devices"] for d in summary["disagreements"]],
                         [["results-0/cuda:0", "results-0/cuda:1"], ["results-1/cuda:2", "results-3/cuda:0"]])
        self.assertTrue(any(d["located"] for d in summary["disagreements"]))
        self.assertEqual(sorted(s["device"] for s in summary["stragglers"]), ["results-0/cuda:1", "results-3/cuda:0"])
        self.assertEqual([(f["device"], f["case"]) for f in summary["failures"]],
                         [("results-0/cuda:0", "probe/gemm-tensor"), ("results-2/cuda:0", "sumsq/f64-n93"),
                          (None, "sumsq/f64-n100000000")])
        self.assertEqual([u["kernel"] for u in summary["unexercised_kernels"]], ["never-run"])
        self.assertEqual({c["device"]: sorted(x["kind"] for x in c["changes"]) for c in summary["history"]["changed"]},
                         {"results-0/cuda:0": ["fails"], "results-0/cuda:1": ["outputs", "slower"]})
        self.assertIn("<strong>explained:</strong> unexplained: none of the 5 models", pages["index.html"])
        # Each reduction from its digest is the reduction of its file, object for object.
        for path in paths:
            label = os.path.splitext(os.path.basename(path))[0]
            reduced = kcs_fleet.read_member(path, label, digests=False)
            from_digest = kcs_fleet.read_member(path, label)
            self.assertEqual(from_digest.pop("from_digest"), kcs_fleet.digest_path(path))
            for reduction in (reduced, from_digest):
                reduction.pop("from_digest", None)
                reduction.pop("digest_unused")
            self.assertEqual(from_digest, reduced, path)

    def test_members_with_digests_and_without_are_folded_in_order(self):
        """Digests are read in the merge's process, files without one by two workers: the
        members come out in the order of their files, as when all are read in one process."""
        folder = self.fleet_folder()
        paths = self.digest_all(folder)
        for path in paths[1:3] + paths[4:]:
            os.remove(kcs_fleet.digest_path(path))
        alone = kcs_fleet.Fleet(paths, jobs=1, digests=False).summary()
        fleet = kcs_fleet.Fleet(paths, jobs=2)
        self.assertEqual((fleet.from_digests, fleet.reduced_here), (2, 5))
        summary = fleet.summary()
        self.assertEqual(summary.pop("digests")["not_used"], [])
        alone.pop("digests")
        self.assertEqual(summary, alone)

    def test_a_digest_records_the_file_it_was_made_of(self):
        folder = self.fleet_folder()
        path = os.path.join(folder, "results-3.json")
        elsewhere = os.path.join(self.root, "elsewhere.digest")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(kcs_fleet.main(["--digest", path, "--digest-output", elsewhere]), kcs_fleet.EXIT_OK)
        self.assertFalse(os.path.exists(kcs_fleet.digest_path(path)))
        with open(elsewhere) as handle:
            digest = json.load(handle)
        with open(path, "rb") as handle:
            checksum = hashlib.sha256(handle.read()).hexdigest()
        status = os.stat(path)
        self.assertEqual(digest["results"], {"name": "results-3.json", "size": status.st_size,
                                             "mtime_ns": status.st_mtime_ns, "sha256": checksum})
        self.assertEqual((digest["schema"], digest["version"], digest["reduction_version"], digest["failures_kept"]),
                         (kcs_fleet.DIGEST_SCHEMA, kcs_fleet.DIGEST_VERSION, kcs_fleet.REDUCTION_VERSION,
                          kcs_fleet.FAILURES_KEPT))
        self.assertIsNone(digest["listing"])
        with contextlib.redirect_stderr(io.StringIO()) as said:
            self.assertEqual(kcs_fleet.main(["--digest", path, path, "--digest-output", elsewhere]),
                             kcs_fleet.EXIT_BAD_INPUT)
        self.assertIn("--digest-output takes one results file", said.getvalue())
        # The merge looks for digests beside their files only: results-<i>.digest is no member.
        self.digest_all(folder)
        self.assertEqual(len(kcs_fleet.results_paths([folder])), 7)

    def assert_not_used(self, folder, name, reason, cause):
        """The merge of folder reduced name's file itself, named its digest with reason and a
        cause matching cause, and its report is that of the files as they are now."""
        status, summary, pages = self.run_merge(folder)
        digest = os.path.join(folder, name.replace(".json", ".digest"))
        self.assertEqual(summary["digests"]["from_digests"], 6)
        self.assertEqual(summary["digests"]["reduced_here"], 1)
        self.assertEqual([(u["file"], u["reason"]) for u in summary["digests"]["not_used"]], [(digest, reason)])
        self.assertRegex(summary["digests"]["not_used"][0]["cause"], "^" + re.escape(digest) + ": " + cause)
        self.assertIn(f"DIGEST NOT USED ({reason}): {digest}", self.out)
        self.assertIn(reason + ": <code>" + digest, pages["index.html"])
        raw = self.run_merge(folder, "--no-digests")
        self.assertEqual(self.without_sources(summary, pages), self.without_sources(*raw[1:]))
        self.assertEqual(status, raw[0])
        return summary

    def test_a_digest_of_results_rewritten_since_is_stale(self):
        """results-3 gave B when its digest was made, A now: the fleet must see A (no disagreement
        of results-3 left), from the file."""
        folder = self.fleet_folder()
        self.digest_all(folder)
        path = os.path.join(folder, "results-3.json")
        before = os.stat(path)
        with open(path, "w") as handle:
            json.dump(flat.member(A, median=1e-2, seed=2), handle)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1000))  # a later write, whatever the clock
        summary = self.assert_not_used(folder, "results-3.json", "stale", "not of results-3.json as it is now")
        self.assertFalse(any("results-3/cuda:0" in d["odd_devices"] for d in summary["disagreements"]))

    def test_a_file_touched_since_its_digest_is_stale_too(self):
        """Only the size and the modification time are compared (a checksum would cost the merge
        a read of every file): the same bytes, a later time, and the digest is not used."""
        folder = self.fleet_folder()
        self.digest_all(folder)
        path = os.path.join(folder, "results-2.json")
        os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 1))
        self.assert_not_used(folder, "results-2.json", "stale", "not of results-2.json")

    def test_a_digest_made_before_its_listing_changed_is_stale(self):
        folder = self.fleet_folder()
        self.digest_all(folder)
        with open(os.path.join(folder, "devices-0.txt"), "a") as handle:
            handle.write("             kernel sumsq f64 another: one more row\n")
        summary = self.assert_not_used(folder, "results-0.json", "stale", "its kernel listing changed since")
        self.assertEqual(sorted(u["kernel"] for u in summary["unexercised_kernels"]), ["another", "never-run"])

    def test_a_digest_of_another_reduction_is_not_used(self):
        for key, value in (("reduction_version", "0" * 16), ("version", 0),
                           ("failures_kept", kcs_fleet.FAILURES_KEPT - 1)):
            with self.subTest(key=key):
                folder = self.fleet_folder(f"fleet-{key}")
                self.digest_all(folder)
                self.edit_digest(os.path.join(folder, "results-1.digest"), lambda d: d.update({key: value}))
                self.assert_not_used(folder, "results-1.json", "other version", "made by another version")

    @staticmethod
    def edit_digest(digest, change):
        """Changes a digest's data in place, its time kept (a digest is not compared by its time)."""
        with open(digest) as handle:
            data = json.load(handle)
        change(data)
        with open(digest, "w") as handle:
            json.dump(data, handle)

    def test_a_truncated_or_malformed_digest_is_named_and_the_file_used(self):
        def truncate(digest):
            with open(digest, "r+b") as handle:
                handle.truncate(os.path.getsize(digest) // 2)

        def write(text):
            def change(digest):
                with open(digest, "w") as handle:
                    handle.write(text)
            return change

        def edit(change):
            return lambda digest: self.edit_digest(digest, change)

        cases = {
            "truncated": (truncate, "not valid JSON: "),
            "empty": (write(""), "not valid JSON: "),
            "not a digest": (write('{"schema": "kcs-results"}'), 'not a digest'),
            "a position past the devices": (edit(lambda d: d["reduction"]["answers"][0][6][0][1].append(7)),
                                            "malformed reduction: ValueError: device position"),
            "a position not a whole number": (edit(lambda d: d["reduction"]["answers"][0][6][0][1].__setitem__(0, 0.0)),
                                              "malformed reduction: ValueError: device positions"),
            "a hash that is a number": (edit(lambda d: d["reduction"]["answers"][0][6][0][0][0].__setitem__(1, 5)),
                                        "malformed reduction: ValueError: an answer that is not"),
            "a timing of a device not listed": (edit(lambda d: d["reduction"]["timings"][0].__setitem__(0, 1)),
                                                "malformed reduction: ValueError: device position 1 of 1"),
            "a device without its counts": (edit(lambda d: d["reduction"]["devices"][0].pop("outcomes")),
                                            "malformed reduction: ValueError: a device entry with keys"),
            "a count that is text": (edit(lambda d: d["reduction"]["devices"][0].update(results="5")),
                                     "malformed reduction: TypeError: a count expected"),
            "a failure without its message": (
                edit(lambda d: d["reduction"]["devices"][0]["failures"][0].pop("message")),
                "malformed reduction: ValueError: a failure entry"),
            "no reduction": (edit(lambda d: d.pop("reduction")), "malformed reduction: TypeError"),
            "of another file's label": (edit(lambda d: d["reduction"].update(label="results-9")),
                                        "malformed reduction: ValueError: made of 'results-9'"),
        }
        for what, (spoil, cause) in cases.items():
            with self.subTest(what):
                folder = self.fleet_folder("fleet-" + re.sub("[^a-z]", "-", what))
                self.digest_all(folder)
                spoil(os.path.join(folder, "results-2.digest"))
                self.assert_not_used(folder, "results-2.json", "malformed", cause)

    def test_a_digest_whose_results_are_gone_is_named_and_fails_the_fleet(self):
        """Not merged from the digest: a digest is used only beside the file it is checked
        against, and which the pages and the JSON name as the member's. Named once: as missing
        where --expect-tasks expects it, else as a results file gone."""
        folder = self.fleet_folder()
        self.digest_all(folder)
        os.remove(os.path.join(folder, "results-4.json"))
        os.remove(os.path.join(folder, "results-2.json"))
        digests = [os.path.join(folder, "results-2.digest"), os.path.join(folder, "results-4.digest")]
        status, summary, pages = self.run_merge(folder)
        self.assertEqual(summary["digests"]["results_gone"], digests)
        self.assertNotIn("results-4", [m["label"] for m in summary["members"]])
        self.assertEqual(summary["digests"]["from_digests"], 5)
        self.assertIn("2 results files gone, a digest left", summary["verdict"])
        self.assertEqual(status, kcs_fleet.EXIT_CORRECTNESS)
        self.assertIn(f"RESULTS GONE: {digests[1]} is left", self.out)
        self.assertIn(f"<li><code>{digests[1]}</code></li>", pages["index.html"].split('id="results-gone"')[1])
        # Task 2 is not missing: its further step's file (results-2.extra.json) is there.
        status, summary, _ = self.run_merge(folder, "--expect-tasks", "5")
        self.assertEqual(summary["missing"], ["results-4.json"])
        self.assertIn("1 missing results file,", summary["verdict"])
        self.assertIn("1 results file gone, a digest left", summary["verdict"])

    def test_a_file_that_cannot_be_reduced_gets_no_digest(self):
        """And an earlier digest of it goes: the merge then names the file's own problem."""
        folder = self.fleet_folder()
        self.digest_all(folder)
        path = os.path.join(folder, "results-3.json")
        broken = copy.deepcopy(flat.member("not hex"))
        with open(path, "w") as handle:
            json.dump(broken, handle)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as said:
            self.assertEqual(kcs_fleet.main(["--digest", path]), kcs_fleet.EXIT_BAD_INPUT)
        self.assertRegex(said.getvalue(), r"no digest: .*results-3\.json: malformed output hashes")
        self.assertFalse(os.path.exists(kcs_fleet.digest_path(path)))
        status, summary, _ = self.run_merge(folder)
        self.assertEqual(status, kcs_fleet.EXIT_BAD_INPUT)
        self.assertEqual([b["file"] for b in summary["bad_inputs"]], [path])
        self.assertEqual((summary["digests"]["from_digests"], summary["digests"]["not_used"]), (6, []))


if __name__ == "__main__":
    unittest.main()
