"""The fleet report: many results files of one kcs job (a Slurm job array, one task per node or
GPU: docs/fleet.md) merged into one view of the fleet.

    /usr/bin/python3 report/kcs_fleet.py RESULTS_DIR_OR_FILES... [--output DIR] [--json FILE]
                                         [--expect-tasks N]

A member of the fleet is one results file (one array task); a device is a device of a member
(member "results-2", device "cuda:0"), so that two tasks on one host, or two GPUs of a node,
stay apart. What it finds:

- Peers, disagreement and stragglers, by the runner's one rule (docs/runner.md, "Peers: one
  rule"): peers are devices of one identity (backend, name, platform, driver, runtime) run by one
  kcs build (revision and comparability record). A group of peers that ran a case with one
  kernel is judged once: within one results file the fleet takes the verdicts its run wrote
  ("agreement", "speed"); a group that spans several files (several hosts or tasks) is judged
  by report/kcs_peers.py, the rule's Python twin, over all its members (_judge_peers is the one
  place either happens). So a device's verdict in a run's results and in a fleet report of that
  run are the same; merged with more peers, the rule is applied to the larger group.
  Disagreement: peers whose kernel was proved deterministic (--determinism) must return the
  same bits ("output_hashes", {output name: sha256 hex}); the devices outside a strict majority
  are the odd ones out, every device where there is none (undecided). A check within the bound
  says nothing here: a flipped last bit passes every bound and is what silent data corruption
  looks like. The first differing element is known only where one run held both devices: its
  runner reran the case on both and recorded it in "agreement"; each odd device's entry is
  shown as "located". Stragglers: a device whose kernel median exceeds the median of its peers'
  medians by more than the group's noise (largest relative interquartile range) and 10%.
- The matrix: a row per device, a column per case; each cell the worst status over the case's
  kernels, the largest fraction of the bound used and the largest time ratio to the peers'
  median. Disagreeing devices come first, then stragglers, then devices with failures.
- Missing members: with --expect-tasks N, results-0.json .. results-(N-1).json must all be
  there (a task whose node died writes nothing); each one missing is named.
- Kernel rows that ran nothing: where a member left its runner's `kcs devices` listing beside
  its results (devices-<index>.txt, as tools/fleet.sh does), every kernel row listed for a
  device must have passed or failed at least one case on it: the levels promise every kernel
  at least once (docs/fleet.md). Only ops and dtypes the member ran cases of count: a test-only
  op (scale) has no case that any level could select.

Writes OUTPUT/index.html (jinja2, report/templates/fleet.html, self-contained) and a JSON summary
(--json, default OUTPUT/fleet.json) whose layout is at the top of docs/fleet.md. Results files
are read and checked by kcs_results.load_results; output hashes are checked here.

Exit status: 0 the fleet agrees, every result passed or was skipped, nothing missing; 3 a
disagreement, a failure or error, a missing member or a kernel row that ran nothing; 4 only
stragglers; 2 bad input (an unreadable or malformed results file, a bad option, no results).
"""

import argparse
import datetime
import glob
import json
import math
import os
import re
import sys
from collections import defaultdict

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kcs_peers  # noqa: E402
from kcs_results import ResultsError, first_difference_text, kernel_timing, load_results, outcome  # noqa: E402

EXIT_OK, EXIT_BAD_INPUT, EXIT_CORRECTNESS, EXIT_SPEED = 0, 2, 3, 4
SCHEMA, VERSION = "kcs-fleet", 1
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
MEMBER_INDEX = re.compile(r"^results-(\d+)(?:\.[A-Za-z0-9_-]+)?\.json$")
# How bad each outcome is, for a matrix cell that holds several kernels' results.
SEVERITY = {"fail": 5, "xpass": 5, "error": 4, "pass": 2, "xfail": 2, "xerror": 2, "skip": 1, "xskip": 1}
KERNEL_LINE = re.compile(r"^\s+kernel (\S+) (\S+) ([^:]+):")
DEVICE_LINE = re.compile(r"^(\S+:\d+)\s")


class FleetError(Exception):
    """Bad input to the merge: the message names the file and the cause."""


# ---- reading ---------------------------------------------------------------------------------

def results_paths(inputs):
    """Results files from files and folders (a folder: its results-*.json, in task order)."""
    paths = []
    for item in inputs:
        if os.path.isdir(item):
            found = glob.glob(os.path.join(item, "results-*.json"))
            paths += sorted(found, key=lambda p: (member_index(p) is None, member_index(p) or 0, p))
        elif os.path.exists(item):
            paths.append(item)
        else:
            raise FleetError(f"{item}: no such file or folder")
    if not paths:
        raise FleetError(f"no results files in {', '.join(inputs)} (a task writes results-<array index>.json)")
    return paths


def member_index(path):
    """The array index of results-<index>.json, else None."""
    match = MEMBER_INDEX.match(os.path.basename(path))
    return int(match.group(1)) if match else None


def check_hashes(run):
    """Refuses a result whose "output_hashes" is not {output name: 64 lowercase hex digits}."""
    problems = []
    for number, result in enumerate(run.results):
        hashes = result.get("output_hashes")
        if hashes is None:
            continue
        where = f"results[{number}] ({result['case']}, {result.get('device')} {result.get('kernel')})"
        if not isinstance(hashes, dict):
            problems.append(f"{where}: output_hashes is not an object")
            continue
        for name, digest in hashes.items():
            if not isinstance(digest, str) or not SHA256_HEX.match(digest):
                problems.append(f"{where}: output_hashes[{name!r}] is not a sha256 in hex: {str(digest)[:80]!r}")
    if problems:
        raise FleetError(f"{run.path}: malformed output hashes:\n" + "\n".join(f"  {run.path}: {p}" for p in problems))


def kernels_listed(path):
    """{device id: {(op, dtype, kernel)}} from a `kcs devices` listing; None when absent."""
    if not os.path.exists(path):
        return None
    listed, device = {}, None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = DEVICE_LINE.match(line)
            if match:
                device = match.group(1)
                listed.setdefault(device, set())
            match = KERNEL_LINE.match(line)
            if match and device:
                listed[device].add((match.group(1), match.group(2), match.group(3).strip()))
    return listed


# ---- the fleet -------------------------------------------------------------------------------

class Device:
    """One device of one member: its record, its results, what the fleet found about it."""

    def __init__(self, member, record):
        self.member, self.record = member, record
        self.id = f"{member.label}/{record['id']}"
        self.host = str(member.run.machine.get("hostname") or "?")
        self.name = str(record.get("name") or record["id"])
        self.backend = str(record.get("backend") or "")
        run = member.run
        build = (str(run.kcs.get("revision") or ""),) + tuple(sorted(run.comparability.items()))
        # Peers share this (docs/runner.md, "Peers: one rule"): the runner's identity, and the build.
        self.model = (kcs_peers.identity(record), build)
        self.results = []
        self.disagrees, self.undecided, self.straggles, self.unexercised = [], [], [], []

    def model_text(self):
        record = self.record
        return (f"{self.name} ({self.backend}, {record.get('platform') or ''}, driver "
                f"{record.get('driver_version') or ''}, runtime {record.get('runtime_version') or ''}, "
                f"kcs {self.model[1][0] or '?'})")

    def counts(self):
        counts = defaultdict(int)
        for result in self.results:
            counts[outcome(result)] += 1
        return counts

    def failing(self):
        return sum(1 for r in self.results if SEVERITY.get(outcome(r), 0) >= SEVERITY["error"])


class Member:
    """One results file: one array task."""

    def __init__(self, path):
        self.path = path
        self.index = member_index(path)
        self.label = os.path.splitext(os.path.basename(path))[0]
        self.run = load_results(path, self.label)
        check_hashes(self.run)
        folder = os.path.dirname(path)
        suffix = self.label[len("results"):] if self.label.startswith("results") else "-" + self.label
        self.listing_path = os.path.join(folder, f"devices{suffix}.txt")
        self.listed = kernels_listed(self.listing_path)


def result_identity(result):
    return (result["case"], result.get("backend") or "", result.get("kernel") or "", result.get("dtype") or "")


class Fleet:
    def __init__(self, paths, expect_tasks=None):
        self.minimum_effect = kcs_peers.MINIMUM_EFFECT
        self.members = []
        labels = set()
        for path in paths:
            member = Member(path)
            if member.label in labels:
                raise FleetError(f"{path}: a second results file named {member.label}: members must differ")
            labels.add(member.label)
            self.members.append(member)
        self.missing = []
        if expect_tasks is not None:
            present = {m.index for m in self.members}
            self.missing = [f"results-{i}.json" for i in range(expect_tasks) if i not in present]
        self.devices = {}
        self.unhashed = 0
        self.hashed = 0
        for member in self.members:
            for record in member.run.devices.values():
                device = Device(member, record)
                self.devices[device.id] = device
            for result in member.run.results:
                if result.get("device") is None:
                    continue
                device = self.devices[f"{member.label}/{result['device']}"]
                device.results.append(result)
                if result["status"] in ("pass", "fail"):
                    if isinstance(result.get("output_hashes"), dict):
                        self.hashed += 1
                    else:
                        self.unhashed += 1
        # A result of no device is a problem found before any device ran the case (an error) or a
        # skip of the case itself (tagged large under --skip-large, a backend without a device):
        # only the first kind fails the fleet, as it fails the run.
        no_device = [(m.label, r) for m in self.members for r in m.run.results if r.get("device") is None]
        self.early_errors = [(label, r) for label, r in no_device
                             if SEVERITY.get(outcome(r), 0) >= SEVERITY["error"]]
        self.cases = sorted({r["case"] for d in self.devices.values() for r in d.results}
                            | {r["case"] for _, r in no_device})
        self.disagreements, self.stragglers, self.time_ratio, self.groups = self._judge_peers()
        self.unexercised = self._find_unexercised()
        self.revisions = sorted({str(m.run.kcs.get("revision") or "?") for m in self.members})

    def peer_groups(self):
        """{(model, case, kernel): [(device, result)]}: the results of one case and kernel on peers."""
        groups = defaultdict(list)
        for device in self.devices.values():
            for result in device.results:
                groups[(device.model, result["case"], result.get("kernel") or "")].append((device, result))
        return groups

    def _judge_peers(self):
        """(disagreements, stragglers, {(device id,) + result_identity: time ratio to its peers'
        median}, {verdict: how many groups}) by the one rule (docs/runner.md, "Peers: one rule"),
        group of peers by group: within one results file as its run wrote them, across files by
        kcs_peers over the whole group. The one place the fleet judges devices against peers."""
        disagreements, stragglers, ratios = [], [], {}
        counts = {kcs_peers.AGREE: 0, kcs_peers.DISAGREE: 0, kcs_peers.NOT_COMPARED: 0}
        for key, members in sorted(self.peer_groups().items(), key=lambda item: item[0][1:]):
            _, case, kernel = key
            run = members[0][0].member.run
            one_file = all(device.member is members[0][0].member for device, _ in members)
            hashed = [(d, r) for d, r in members
                      if r["status"] in ("pass", "fail") and isinstance(r.get("output_hashes"), dict)]
            timed = [(d, r, kernel_timing(r)) for d, r in members if kernel_timing(r)]
            agreement_recorded = one_file and "agreement" in run.data
            verdict = (recorded_agreement(run, case, kernel, hashed) if agreement_recorded
                       else judged_agreement(hashed))
            if verdict:
                counts[verdict["verdict"]] += 1
                if verdict["verdict"] == kcs_peers.DISAGREE:
                    disagreements.append(self._disagreement(case, kernel, hashed, verdict, agreement_recorded))
            speed_recorded = one_file and "speed" in run.data
            speeds = recorded_speed(run, case, kernel, timed) if speed_recorded else judged_speed(timed)
            for (device, result, timing), speed in zip(timed, speeds):
                if speed is None:
                    continue
                ratios[(device.id,) + result_identity(result)] = speed["ratio"]
                if speed["straggler"]:
                    entry = {"device": device.id, "host": device.host, "case": case,
                             "backend": result.get("backend") or "", "kernel": kernel,
                             "dtype": result.get("dtype") or "", "model": device.model_text(),
                             "median_s": timing["median_s"], "peer_median_s": speed["peer_median_s"],
                             "ratio": speed["ratio"], "threshold": speed["threshold"], "peers": speed["peers"],
                             "judged_by": "run" if speed_recorded else "fleet",
                             "reason": f"{speed['ratio']:.2f}x the median of its {speed['peers']} "
                                       f"peer{'s' if speed['peers'] != 1 else ''}' medians, beyond their noise and "
                                       f"the minimum effect ({speed['threshold']:.0%})"}
                    stragglers.append(entry)
                    device.straggles.append(entry)
        return disagreements, stragglers, ratios, counts

    def _disagreement(self, case, kernel, hashed, verdict, recorded):
        """A disagreeing group's entry; its odd devices learn of it."""
        by_id = {device.id: (device, result) for device, result in hashed}
        odd = [by_id[ident][0] for ident in verdict["odd"]]
        majority = [by_id[ident] for ident in verdict["majority"]]
        by_answer = defaultdict(list)
        for device, result in hashed:
            by_answer[tuple(sorted(result["output_hashes"].items()))].append(device)
        answers = sorted(by_answer.items(), key=lambda item: -len(item[1]))
        _, first = hashed[0]
        entry = {"case": case, "backend": first.get("backend") or "", "kernel": kernel,
                 "dtype": first.get("dtype") or "", "model": odd[0].model_text(), "decided": verdict["decided"],
                 "peers": len(hashed), "odd_devices": [d.id for d in odd],
                 "majority_devices": [d.id for d, _ in majority],
                 "majority_hashes": dict(majority[0][1]["output_hashes"]) if majority else None,
                 "answers": [{"devices": [d.id for d in devices], "hashes": dict(answer)}
                             for answer, devices in answers],
                 "judged_by": "run" if recorded else "fleet",
                 "located": [located for d in odd for located in self._located(d, case, kernel)]}
        for device in odd:
            (device.disagrees if verdict["decided"] else device.undecided).append(entry)
        return entry

    @staticmethod
    def _located(device, case, kernel):
        """What device's own run found rerunning its disagreement on case and kernel: the first
        differing element from a peer in the same run (docs/results.md), as text."""
        found = []
        for verdict in device.member.run.data.get("agreement") or []:
            if not isinstance(verdict, dict) or verdict.get("case") != case or verdict.get("kernel") != kernel:
                continue
            for differing in verdict.get("differing") or []:
                if isinstance(differing, dict) and differing.get("device") == device.record["id"]:
                    text = first_difference_text(differing)
                    if text:
                        found.append({"device": device.id, "text": text})
        return found

    def _find_unexercised(self):
        found = []
        for member in self.members:
            if member.listed is None:
                continue
            # Only ops and dtypes that this member ran cases of: a kernel row of a test-only op
            # (scale) has no case in cases/, and no level can reach it.
            checked = {(r["op"], r.get("dtype") or "") for r in member.run.results}
            for device_id, rows in sorted(member.listed.items()):
                device = self.devices.get(f"{member.label}/{device_id}")
                ran = {(r["op"], r.get("dtype") or "", r.get("kernel") or "")
                       for r in (device.results if device else []) if r["status"] in ("pass", "fail")}
                for op, dtype, kernel in sorted(r for r in rows - ran if r[:2] in checked):
                    entry = {"device": f"{member.label}/{device_id}", "op": op, "dtype": dtype, "kernel": kernel}
                    found.append(entry)
                    if device:
                        device.unexercised.append(entry)
        return found

    def ordered_devices(self):
        """Disagreeing devices first, then undecided, stragglers, failing, the rest; by id within."""
        def rank(device):
            return (0 if device.disagrees else 1 if device.undecided else 2 if device.straggles
                    else 3 if device.failing() or device.unexercised else 4, device.id)
        return sorted(self.devices.values(), key=rank)

    def cell(self, device, case):
        results = [r for r in device.results if r["case"] == case]
        if not results:
            return None
        worst = max(results, key=lambda r: SEVERITY.get(outcome(r), 0))
        fractions = [r["accuracy"]["fraction_of_bound"] for r in results
                     if r.get("accuracy") and isinstance(r["accuracy"].get("fraction_of_bound"), (int, float))]
        ratios = [self.time_ratio[(device.id,) + result_identity(r)] for r in results
                  if (device.id,) + result_identity(r) in self.time_ratio]
        return {"outcome": outcome(worst), "kernels": len(results),
                "fraction": max(fractions) if fractions else None,
                "ratio": max(ratios) if ratios else None,
                "disagrees": any(e["case"] == case for e in device.disagrees + device.undecided),
                "straggles": any(e["case"] == case for e in device.straggles),
                "message": "; ".join(f"{r.get('kernel')}: {r['message']}" for r in results if r["message"])}

    def failures(self):
        return [(d, r) for d in self.ordered_devices() for r in d.results
                if SEVERITY.get(outcome(r), 0) >= SEVERITY["error"]]

    def verdict(self):
        """(exit status, one line)."""
        problems = []
        if self.disagreements:
            problems.append(f"{len(self.disagreements)} disagreement{'s' if len(self.disagreements) != 1 else ''}")
        failed = len(self.failures()) + len(self.early_errors)
        if failed:
            problems.append(f"{failed} failed or errors")
        if self.missing:
            problems.append(f"{len(self.missing)} missing results file{'s' if len(self.missing) != 1 else ''}")
        if self.unexercised:
            problems.append(f"{len(self.unexercised)} kernel rows ran nothing")
        if problems:
            return EXIT_CORRECTNESS, "FLEET FAILED: " + ", ".join(problems)
        if self.stragglers:
            return EXIT_SPEED, f"FLEET SLOW: {len(self.stragglers)} straggling kernel results"
        return EXIT_OK, "FLEET OK: every device agrees with its peers and passed"

    def summary(self):
        status, line = self.verdict()
        devices = []
        for device in self.ordered_devices():
            counts = device.counts()
            devices.append({"id": device.id, "member": device.member.label, "host": device.host,
                            "device": device.record["id"], "backend": device.backend, "name": device.name,
                            "model": device.model_text(), "results": len(device.results),
                            "outcomes": dict(sorted(counts.items())),
                            "disagrees": bool(device.disagrees), "undecided": bool(device.undecided),
                            "straggler": bool(device.straggles), "unexercised_kernels": len(device.unexercised)})
        return {"schema": SCHEMA, "version": VERSION, "verdict": line, "exit_status": status,
                "members": [{"label": m.label, "file": m.path, "host": m.run.machine.get("hostname"),
                             "revision": m.run.kcs.get("revision"), "created": m.run.created,
                             "command": m.run.command} for m in self.members],
                "missing": self.missing, "revisions": self.revisions,
                "hashes": {"results_with": self.hashed, "results_without": self.unhashed},
                "devices": devices, "disagreements": self.disagreements, "stragglers": self.stragglers,
                "unexercised_kernels": self.unexercised,
                "failures": [{"device": d.id, "case": r["case"], "kernel": r.get("kernel"), "status": r["status"],
                              "message": r["message"]} for d, r in self.failures()]
                + [{"device": None, "member": label, "case": r["case"], "kernel": None, "status": r["status"],
                    "message": r["message"]} for label, r in self.early_errors],
                "peer_groups": dict(self.groups),
                "rule": {"definition": "docs/runner.md, Peers: one rule", "minimum_effect": self.minimum_effect}}


def determinism_of(device, result):
    """What a result's run proved of its kernel's bits (kcs_peers; agreement.c's determinism_of)."""
    if device.member.run.options.get("determinism") is not True:
        return kcs_peers.NOT_PROVED
    return kcs_peers.NONDETERMINISTIC if "nondeterministic" in (result.get("message") or "") else kcs_peers.PROVED


def judged_agreement(hashed):
    """The rule's verdict on a group of peers' answers ([(device, result)]): None for fewer than
    two, else {"verdict", "decided", "odd": [device id], "majority": [device id]}."""
    verdicts = kcs_peers.judge_agreement([(d.model, r["output_hashes"], determinism_of(d, r)) for d, r in hashed])
    if not verdicts or verdicts[0].verdict == kcs_peers.ALONE:
        return None
    return {"verdict": verdicts[0].verdict, "decided": verdicts[0].decided,
            "odd": [d.id for (d, _), v in zip(hashed, verdicts) if v.differs],
            "majority": [d.id for (d, _), v in zip(hashed, verdicts)
                         if v.verdict == kcs_peers.DISAGREE and v.decided and not v.differs]}


def recorded_agreement(run, case, kernel, hashed):
    """What the run wrote of this group's agreement, as judged_agreement says it; None where it
    wrote nothing of it."""
    ids = {d.record["id"]: d.id for d, _ in hashed}
    for entry in run.data.get("agreement") or []:
        if (not isinstance(entry, dict) or entry.get("case") != case or entry.get("kernel") != kernel
                or not set(entry.get("devices") or []) & set(ids)):
            continue
        verdict = entry.get("verdict")
        if verdict not in (kcs_peers.AGREE, kcs_peers.DISAGREE, kcs_peers.NOT_COMPARED):
            return None
        differing = [d for d in entry.get("differing") or [] if isinstance(d, dict)]
        odd = [ids[d.get("device")] for d in differing if d.get("device") in ids]
        decided = verdict == kcs_peers.DISAGREE and all(d.get("majority") is True for d in differing)
        return {"verdict": verdict, "decided": decided, "odd": odd,
                "majority": [ids[i] for i in entry.get("devices") or [] if i in ids and ids[i] not in odd]
                if decided else []}
    return None


def judged_speed(timed):
    """The rule's verdicts on a group of peers' timings ([(device, result, kernel timing)]), one
    per timing: None where not judged, else {"peers", "peer_median_s", "threshold", "ratio", "straggler"}."""
    verdicts = kcs_peers.judge_speed([(d.model, t.get("median_s"), t.get("lower_quartile_s"),
                                       t.get("upper_quartile_s")) for d, _, t in timed])
    return [None if v is None else v._asdict() for v in verdicts]


def recorded_speed(run, case, kernel, timed):
    """What the run wrote of these timings ("speed"), as judged_speed says it."""
    written = {}
    for entry in run.data.get("speed") or []:
        if not isinstance(entry, dict) or entry.get("case") != case or entry.get("kernel") != kernel:
            continue
        members = [m for m in entry.get("devices") or [] if isinstance(m, dict)]
        for member in members:
            written[member.get("device")] = {"peers": len(members) - 1, "peer_median_s": member.get("peer_median_s"),
                                             "threshold": entry.get("threshold"), "ratio": member.get("ratio"),
                                             "straggler": member.get("straggler") is True}
    return [written.get(d.record["id"]) for d, _, _ in timed]


# ---- the page --------------------------------------------------------------------------------

def fmt_fraction(value):
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.2g}"


def fmt_ratio(value):
    return "" if value is None else f"{value:.2f}x"


def fmt_time(seconds):
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


PAGES = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                       "templates")),
                           autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.StrictUndefined,
                           trim_blocks=True, lstrip_blocks=True)
PAGES.filters.update(fraction=fmt_fraction, ratio=fmt_ratio, time=fmt_time)


def write_report(fleet, output_dir, json_path):
    os.makedirs(output_dir, exist_ok=True)
    summary = fleet.summary()
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = PAGES.get_template("fleet.html").render(fleet=fleet, summary=summary, generated=generated,
                                                   devices=fleet.ordered_devices())
    index = os.path.join(output_dir, "index.html")
    with open(index, "w", encoding="utf-8") as handle:
        handle.write(page)
    with open(json_path, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1, allow_nan=False, default=str)
        handle.write("\n")
    return index, summary


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="kcs_fleet.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Merge the results files of a kcs fleet job (one per array task) into a fleet report: "
                    "a device x case matrix, devices whose outputs disagree with identical peers, stragglers "
                    "(docs/fleet.md).",
        epilog="""\
Exit status:
  0  every device agrees with its peers, every result passed or was skipped
  2  bad input: a bad option, no results files, an unreadable or malformed one
  3  a disagreement, a failure or error, a missing results file (--expect-tasks) or a
     kernel row that ran no case
  4  only stragglers""")
    parser.add_argument("inputs", nargs="+", metavar="RESULTS",
                        help="results files, or folders of results-<array index>.json")
    parser.add_argument("--output", metavar="DIR", default="fleet-report",
                        help="folder for index.html (default: fleet-report)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="the JSON summary (default: OUTPUT/fleet.json)")
    parser.add_argument("--expect-tasks", type=int, default=None, metavar="N",
                        help="results-0.json .. results-(N-1).json must all be present")
    return parser.parse_args(argv)


def main(argv=None):
    try:
        args = parse_arguments(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_BAD_INPUT
    try:
        if args.expect_tasks is not None and args.expect_tasks < 1:
            raise FleetError("--expect-tasks needs a count >= 1")
        fleet = Fleet(results_paths(args.inputs), args.expect_tasks)
    except (FleetError, ResultsError) as error:
        print(f"kcs_fleet: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    json_path = args.json or os.path.join(args.output, "fleet.json")
    try:
        index, summary = write_report(fleet, args.output, json_path)
    except OSError as error:
        print(f"kcs_fleet: cannot write the fleet report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for entry in fleet.disagreements:
        who = ", ".join(entry["odd_devices"])
        print(f"DISAGREES: {entry['case']} [{entry['backend']} {entry['kernel']}] on {entry['model']}: {who}"
              + ("" if entry["decided"] else " (no majority among the peers)"))
        for located in entry["located"]:
            print(f"    first differing element, {located['device']}: {located['text']}")
    for entry in fleet.stragglers:
        print(f"STRAGGLER: {entry['device']} {entry['case']} [{entry['backend']} {entry['kernel']}]: {entry['reason']}")
    for device, result in fleet.failures():
        print(f"{result['status'].upper()}: {device.id} {result['case']} [{result.get('kernel')}]: {result['message']}")
    for label, result in fleet.early_errors:
        print(f"{result['status'].upper()}: {label} {result['case']}: {result['message']}")
    for name in fleet.missing:
        print(f"MISSING: {name} (its task wrote no results)")
    for entry in fleet.unexercised:
        print(f"UNEXERCISED: {entry['device']} kernel {entry['op']} {entry['dtype']} {entry['kernel']}: ran no case")
    if fleet.members and not fleet.hashed:
        print("WARNING: no result records output hashes: agreement between devices was not checked")
    elif fleet.groups[kcs_peers.NOT_COMPARED]:
        print(f"NOTE: {fleet.groups[kcs_peers.NOT_COMPARED]} groups of peers were not compared bit for bit: a kernel "
              "not proved deterministic (run with --determinism: the medium and full levels do)")
    print(f"{len(fleet.members)} results files, {len(fleet.devices)} devices, {len(fleet.cases)} cases: "
          f"{summary['verdict']}")
    print(index)
    return summary["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
