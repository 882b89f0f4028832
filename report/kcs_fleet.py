"""The fleet report: many results files of one kcs job (a Slurm job array, one task per node or
GPU: docs/fleet.md) merged into one view of the fleet.

    /usr/bin/python3 report/kcs_fleet.py RESULTS_DIR_OR_FILES... [--output DIR] [--json FILE]
                                         [--expect-tasks N] [--jobs N] [--history DIR [--history-keep K]]
                                         [--no-digests]
    /usr/bin/python3 report/kcs_fleet.py --digest RESULTS... [--digest-output FILE]

A member of the fleet is one results file (one array task); a device is a device of a member
(member "results-2", device "cuda:0"), so that two tasks on one host, or two GPUs of a node,
stay apart. What it finds:

- Peers, disagreement and stragglers, by the runner's one rule (docs/runner.md, "Peers: one
  rule"): peers are devices of one identity (backend, name, platform, driver, runtime) run by one
  kcs build (revision and comparability record). A group of peers that ran a case with one
  kernel is judged once: within one results file the fleet takes the verdicts its run wrote
  ("agreement", "speed"); a group that spans several files (several hosts or tasks) is judged
  by report/kcs_peers.py, the rule's Python twin, over all its members (Fleet._judge_peers is
  the one place either happens). So a device's verdict in a run's results and in a fleet report
  of that run are the same; merged with more peers, the rule is applied to the larger group.
  Disagreement: peers whose kernel was proved deterministic (--determinism) must return the
  same bits ("output_hashes", {output name: sha256 hex}); the devices outside a strict majority
  are the odd ones out, every device where there is none (undecided). A check within the bound
  says nothing here: a flipped last bit passes every bound and is what silent data corruption
  looks like. The first differing element is known only where one run held both devices: its
  runner reran the case on both and recorded it in "agreement"; each odd device's entry is
  shown as "located". Stragglers: a device whose kernel median exceeds the median of its peers'
  medians by more than the group's noise (largest relative interquartile range) and 10%.
- Failures and errors, of a device or of a case before any device ran it. Any case counts, a
  case of cases/*.md or not (kcs probe's "probe/<kernel>" items are results like any other).
- Missing members: with --expect-tasks N, results-0.json .. results-(N-1).json must all be
  there (a task whose node died writes nothing); each one missing is named.
- Kernel rows that ran nothing: where a member left its runner's `kcs devices` listing beside
  its results (devices-<index>.txt, as tools/fleet.sh does), every kernel row listed for a
  device must have passed or failed at least one case on it: the levels promise every kernel
  at least once (docs/fleet.md). Only ops and dtypes the member ran cases of count: a test-only
  op (scale) has no case that any level could select.

Digests: the reduction of a results file can be made on its node (--digest, which
tools/fleet.sh task runs after its run) and written beside the file as results-<index>.digest
(JSON: the reduction, what reduced it, the file's name, size, mtime_ns and sha256). The merge
then folds the digest instead of parsing the file: a thousand nodes of 8 GPUs at the medium
level (10 MB and 8,000 results each) cannot be parsed on two cores within a minute, and their
digests (a few hundred KB each) can be folded. A digest is used only where it was made by this
reduction (REDUCTION_VERSION, FAILURES_KEPT) of the file as it is now (name, size, mtime_ns) and
of the same kernel listing; otherwise the file is reduced here, as without a digest, and the
report says why the digest was not used (stale, other version, malformed). The reduction is
_reduce_member's in either case: a digest carries it, encoded exactly. A digest whose results
file is gone is named, the member not merged (the results file is what the merge checks a digest
against and what the pages name), and fails the fleet as a missing member does.

The merge streams: each results file is read, checked and folded in, then let go, so that memory
grows with the distinct cases and devices, not with the files' text. Kept per device: its outcome
counts, per op counts, its first FAILURES_KEPT failures (and how many more), what the verdicts
found about it. Kept per model, case, backend, kernel and dtype: each distinct answer (the output
hashes) with the numbers of the devices that gave it, whether every one of them was proved
deterministic, each timed device's kernel timing summary (timing_summary), and what the file's
own run wrote of the group ("agreement", "speed"), used where the group lies in that one file.
Files without a digest are read by --jobs worker processes (read_member), each returning only
that reduction of its file; digests are read in this process. A file that cannot be read or is malformed is named
with its cause and left out; the others are merged, the report is written, and the exit status
is 2.

Writes OUTPUT/index.html (report/templates/fleet.html: the verdict, what disagrees, straggles,
fails or changed, counts per model, a link to each node's page), OUTPUT/nodes/<task>.html (one
small page per array task, report/templates/fleet_node.html: its devices, their problems and,
with --history, each card's timeline) and a JSON summary (--json, default OUTPUT/fleet.json)
whose layout is in docs/fleet.md. With --history DIR, a compact summary of this merge is written
to DIR/<UTC timestamp>.json and compared with the earlier ones kept there (kcs_fleet_history.py).

Exit status: 0 the fleet agrees, every result passed or was skipped, nothing missing; 3 a
disagreement, a failure or error, a missing member (or one whose results are gone, its digest
left) or a kernel row that ran nothing; 4 only stragglers; 2 bad input (an unreadable or
malformed results file, a bad option, no results). With --digest: 0 every digest written, 2 one
or more not (each named with its cause).
"""

import argparse
import contextlib
import ctypes
import datetime
import functools
import gc
import glob
import hashlib
import json
import math
import multiprocessing
import os
import re
import sys
from array import array
from collections import defaultdict
from itertools import chain

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kcs_peers  # noqa: E402
from kcs_results import (MAX_DEPTH, ResultsError, check_depth, checked_results, device_uuid,  # noqa: E402
                         first_difference_text, kernel_timing, outcome, results_from_data)

EXIT_OK, EXIT_BAD_INPUT, EXIT_CORRECTNESS, EXIT_SPEED = 0, 2, 3, 4
SCHEMA, VERSION = "kcs-fleet", 4
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
HEX_DIGITS = b"0123456789abcdef"
_TEXT, _SHA256_LENGTH = frozenset((str,)), frozenset((64,))
_INT, _PAIR = frozenset((int,)), frozenset((2,))
MEMBER_INDEX = re.compile(r"^results-(\d+)(?:\.[A-Za-z0-9_-]+)?\.json$")
# How bad each outcome is, for a summary that holds several kernels' results.
SEVERITY = {"fail": 5, "xpass": 5, "error": 4, "pass": 2, "xfail": 2, "xerror": 2, "skip": 1, "xskip": 1}
KERNEL_LINE = re.compile(r"^\s+kernel (\S+) (\S+) ([^:]+):")
DEVICE_LINE = re.compile(r"^(\S+:\d+)\s")
NOT_QUOTE_OR_BRACKET = bytes(b for b in range(256) if b not in b'"[]{}')
# What is kept, and shown, of lists that grow with the fleet.
FAILURES_KEPT = 20      # failures and errors kept per device (and per member, of no device); the rest counted
DEVICES_NAMED = 20      # devices named per answer of the majority (the odd ones are all named)
INDEX_ROWS = 200        # rows of each table of index.html; the rest are on the node pages and in the JSON


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


def nesting_depth(data):
    """How deep the JSON text (bytes) nests arrays and objects, brackets inside strings not
    counted: what kcs_results.check_depth measures, in C and numpy loops (check_depth's token
    loop in Python takes longer than parsing the file). Escaped backslashes and quotes are
    dropped first, left to right as a reader pairs them, so that every remaining quote opens or
    closes a string; then only quotes and brackets are kept, and a bracket with an even number
    of quotes before it is outside every string."""
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = numpy.frombuffer(data.translate(None, NOT_QUOTE_OR_BRACKET), dtype=numpy.uint8)
    quote = marks == 0x22
    inside = numpy.bitwise_xor.accumulate(quote.view(numpy.uint8))  # 1 from a string's opening quote on
    outside = marks[(inside | quote.view(numpy.uint8)) == 0]
    if not len(outside):
        return 0
    steps = numpy.where((outside | 0x20) == 0x7b, numpy.int32(1), numpy.int32(-1))  # '[' | 0x20 is '{'
    return int(numpy.cumsum(steps, dtype=numpy.int64).max())


def read_results(path, label):
    """kcs_results.load_results, its checks and messages (read_document)."""
    return results_from_data(read_document(path), path, label)


def read_document(path):
    """A results file parsed, as kcs_results.load_results reads one, with its messages, and
    with the nesting measured first by nesting_depth: only a file nested too deeply goes through
    check_depth (which names the line and column)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        text = data.decode("utf-8")
    except OSError as error:
        raise ResultsError(f"{path}: cannot read: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise ResultsError(f"{path}: not valid JSON: not UTF-8 text ({error.reason} at byte "
                           f"{error.start})") from error
    if not text or text.isspace():  # not text.strip(), without its copy of the text
        raise ResultsError(f"{path}: empty file{' (only white space)' if text else ''}: not a results file "
                           "(a run that was stopped before it wrote its results leaves one)")
    if nesting_depth(data) > MAX_DEPTH:
        check_depth(text, path)
    del data
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ResultsError(f"{path}: not valid JSON: {error}") from error
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested too deeply to read: not a results file") from None
    del text
    return document


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


def check_hashes_alike(digests):
    """True where every one of digests (a file's output hashes) is a text of 64 lowercase hex
    digits, looked at all at once: then check_hashes would refuse none of them. False where it
    must look (it names what it refuses; SHA256_HEX decides)."""
    if not (_TEXT.issuperset(map(type, digests)) and _SHA256_LENGTH.issuperset(map(len, digests))):
        return False
    try:
        return not "".join(digests).encode("ascii").translate(None, HEX_DIGITS)
    except UnicodeEncodeError:
        return False


def kernels_listed(path):
    """{device id: {(op, dtype, kernel)}} from a `kcs devices` listing; None when absent."""
    if not os.path.exists(path):
        return None
    listed, device = {}, None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = DEVICE_LINE.match(line)
                if match:
                    device = match.group(1)
                    listed.setdefault(device, set())
                match = KERNEL_LINE.match(line)
                if match and device:
                    listed[device].add((match.group(1), match.group(2), match.group(3).strip()))
    except OSError as error:
        raise FleetError(f"{path}: cannot read the kernel listing: {error.strerror or error}") from error
    return listed


def timing_summary(kernel):
    """What the rule and the history read of a kernel timing (kcs_results.kernel_timing): median,
    quartiles and repeats (the rule needs no repeats themselves: none are kept)."""
    return {key: kernel[key] for key in ("median_s", "lower_quartile_s", "upper_quartile_s", "repeats")
            if key in kernel}


def compact_failure(result):
    """A failed or erring result as the pages and the JSON show it."""
    explanation = result.get("explanation")
    return {"case": result["case"], "backend": result.get("backend"), "kernel": result.get("kernel"),
            "dtype": result.get("dtype"), "status": result["status"], "outcome": outcome(result),
            "message": result["message"],
            "explanation": {"text": explanation["text"]} if isinstance(explanation, dict) else None}


# ---- one results file, reduced ---------------------------------------------------------------

def read_member(path, label, digests=True):
    """One results file read, checked (kcs_results, check_hashes) and reduced to what the merge
    keeps of it: a dict of the member's records, each device's counts, failures (the first
    FAILURES_KEPT) and kernel rows that ran nothing, each group of its devices' answers (output
    hashes) and each timed result's summary. Or ("bad", the cause, why its digest was not used
    or None) for a file that cannot be used. Runs in a worker process (--jobs): what it returns
    is all that travels.

    With digests, the reduction is taken from the file's digest (digest_path, written by
    write_digest on the node) where there is one, valid and made of this very file; else the
    file is reduced here, and "digest_unused" says why the digest was not used. "from_digest"
    is the digest's path or None; neither key is part of the reduction."""
    unused = None
    digest = digest_path(path) if digests else None
    if digest is not None and os.path.exists(digest):
        try:
            reduction = read_digest(digest, path, label)
        except DigestUnused as why:
            unused = {"file": digest, "reason": why.reason, "cause": str(why)}
        else:
            reduction["from_digest"], reduction["digest_unused"] = digest, None
            return reduction
    try:
        reduction = _reduce_member(path, label)
    except (ResultsError, FleetError) as error:
        return ("bad", str(error), unused)
    reduction["from_digest"], reduction["digest_unused"] = None, unused
    return reduction


def listing_path(path, label):
    """The `kcs devices` listing its task left beside a results file: devices-<index>.txt for
    results-<index>.json (devices-<index>.<name>.txt for results-<index>.<name>.json)."""
    suffix = label[len("results"):] if label.startswith("results") else "-" + label
    return os.path.join(os.path.dirname(path), f"devices{suffix}.txt")


def _reduce_member(path, label):
    """read_member's work, raising ResultsError or FleetError for a file that cannot be used.
    One pass over the results: each is reduced as kcs_results.checked_results hands it over,
    checked; what is made of a file refused at the end of that pass goes with it."""
    run, results = checked_results(read_document(path), path, label)
    devices, position, models, slots = [], {}, [], []

    def add_device(record):
        number = position[str(record["id"])] = len(devices)
        device = {"record": {key: record.get(key) for key in DEVICE_FIELDS}, "uuid": device_uuid(record),
                  "results": 0, "hashed": 0, "outcomes": defaultdict(int), "ops": {}, "failures": [],
                  "failure_count": 0, "unexercised": []}
        devices.append(device)
        # The groups' identities within the file (the build is the file's): each device's.
        model = kcs_peers.identity(device["record"])
        models.append(same.setdefault(model, model))
        slots.append((device, device["outcomes"], device["ops"], set(), [0]))
        return number

    timings, cases, checked, same = [], set(), set(), {}
    for record in run.devices.values():
        add_device(record)
    # (device identity, case, backend, kernel, dtype) -> [every answer proved deterministic,
    # {answer: [device positions]}], in the order the file first gives each.
    answers = {}
    deterministic = run.options.get("determinism") is True
    written_speed = recorded_speed(run) if "speed" in run.data else None
    early_errors, early_error_count, unhashed, hashes_alike = [], 0, 0, True
    digests = []
    cases_add, checked_add, same_setdefault, digests_extend = cases.add, checked.add, same.setdefault, digests.extend
    failing, skipped = SEVERITY["error"], SEVERITY["skip"]
    for result in results:
        get = result.get
        hashes = get("output_hashes")
        if hashes is not None:
            if type(hashes) is dict:
                digests_extend(hashes.values())  # their form: check_hashes_alike, once for the file
            else:
                hashes_alike = False  # check_hashes decides, after this loop
                if not isinstance(hashes, dict):
                    hashes = None  # (a file check_hashes refuses: what this loop makes of it goes)
        case, op_name, status = result["case"], result["op"], result["status"]
        kernel, dtype = get("kernel") or "", get("dtype") or ""
        cases_add(case)
        checked_add((op_name, dtype))
        kind = outcome(result) if get("expected") else status
        severity = SEVERITY.get(kind, 0)
        device_id = get("device")
        if device_id is None:
            # A problem found before any device ran the case (an error) or a skip of the case
            # itself (tagged large under --skip-large, a backend without a device): only the
            # first kind fails the fleet, as it fails the run.
            if severity >= failing:
                early_error_count += 1
                if len(early_errors) < FAILURES_KEPT:
                    early_errors.append(compact_failure(result))
            continue
        number = position.get(device_id)
        if number is None:  # a device the file does not list (kcs_results describes it by its id)
            number = add_device(result["device_record"])
        device, outcomes, ops, ran, hashed = slots[number]
        outcomes[kind] += 1
        op = ops.get(op_name)
        if op is None:
            op = ops[op_name] = [0, 0, 0, None]
        op[0] += 1
        if severity >= failing:
            op[1] += 1
            device["failure_count"] += 1
            if len(device["failures"]) < FAILURES_KEPT:
                device["failures"].append(compact_failure(result))
        elif severity == skipped:
            op[2] += 1
        accuracy = result["accuracy"]  # a dict or None (kcs_results), its numbers floats
        if accuracy:
            fraction = accuracy.get("fraction_of_bound")
            if type(fraction) is float and (op[3] is None or fraction > op[3] or
                                             (math.isnan(fraction) and not math.isnan(op[3]))):
                op[3] = fraction
        # A result's identity: what its peers ran. One object for equal identities and answers
        # (several devices ran them): the worker's pickle of this file names each once.
        identity = (case, get("backend") or "", kernel, dtype)
        identity = same_setdefault(identity, identity)
        if result["timing"] is not None:
            timing = kernel_timing(result)
            if timing:
                recorded = None
                if written_speed is not None:
                    recorded = written_speed.get((case, kernel, device_id))
                timings.append((number, identity, timing_summary(timing), recorded))
        if status != "pass" and status != "fail":
            continue
        ran.add((op_name, dtype, kernel))
        if hashes is None:
            unhashed += 1
            continue
        hashed[0] += 1
        answer = tuple(sorted(hashes.items()))
        key = (models[number],) + identity
        group = answers.get(key)
        if group is None:
            group = answers[key] = [True, {}]
        if group[0] and determinism_of(deterministic, result) != kcs_peers.PROVED:
            group[0] = False
        numbers = group[1].get(answer)
        if numbers is None:
            numbers = group[1][same_setdefault(answer, answer)] = []
        numbers.append(number)
    # The loop ran to its end: the file passed kcs_results' checks. Its hashes' form next.
    if not (hashes_alike and check_hashes_alike(digests)):
        check_hashes(run)
    del digests
    listed = kernels_listed(listing_path(path, label))
    for device, slot in zip(devices, slots):
        device["results"], device["hashed"] = sum(device["outcomes"].values()), slot[4][0]
    located = []  # what the run found rerunning a disagreement of its own devices (docs/results.md)
    for verdict in run.data.get("agreement") or []:
        if not isinstance(verdict, dict):
            continue
        for differing in verdict.get("differing") or []:
            number = position.get(str(differing.get("device"))) if isinstance(differing, dict) else None
            text = first_difference_text(differing) if number is not None else ""
            if text:
                located.append((number, verdict.get("case"), verdict.get("kernel"), text))
    unexercised = []
    if listed is not None:
        # Only ops and dtypes that this member ran cases of: a kernel row of a test-only op
        # (scale) has no case in cases/, and no level can reach it.
        for device_id, rows in sorted(listed.items()):
            number = position.get(device_id)
            for op, dtype, kernel in sorted(r for r in rows - (slots[number][3] if number is not None else set())
                                             if r[:2] in checked):
                entry = {"device": f"{label}/{device_id}", "op": op, "dtype": dtype, "kernel": kernel}
                unexercised.append(entry)
                if number is not None:
                    devices[number]["unexercised"].append(entry)
    # What the run wrote of each group's agreement, where it wrote an "agreement" (None: nothing);
    # a group it wrote nothing of is left out (Fleet reads it as None).
    agreement = None
    if "agreement" in run.data:
        written, agreement = recorded_agreements(run), {}
        for key, group in answers.items():
            if (key[1], key[3]) in written:
                verdict = recorded_agreement(written, key[1], key[3],
                                             [n for numbers in group[1].values() for n in numbers], devices)
                if verdict is not None:
                    agreement[key] = verdict
    # Each result points at its run and the run at its results: unlinked, the file's objects go
    # when this returns, without the cyclic collector (Fleet turns it off while it reads).
    run.data = run.results = None
    return {"path": path, "label": label, "host": run.machine.get("hostname"), "revision": run.kcs.get("revision"),
            "created": run.created, "command": run.command, "listed": listed is not None,
            "build": (str(run.kcs.get("revision") or ""),) + tuple(sorted(run.comparability.items())),
            "devices": devices, "answers": answers, "timings": timings, "unhashed": unhashed, "cases": cases,
            "early_errors": early_errors, "early_error_count": early_error_count, "located": located,
            "unexercised": unexercised, "agreement": agreement, "speed_recorded": written_speed is not None}


def determinism_of(deterministic, result):
    """What a result's run proved of its kernel's bits (kcs_peers; agreement.c's determinism_of):
    deterministic is whether the run was made with --determinism."""
    if not deterministic:
        return kcs_peers.NOT_PROVED
    return kcs_peers.NONDETERMINISTIC if "nondeterministic" in (result.get("message") or "") else kcs_peers.PROVED


def recorded_agreements(run):
    """{(case, kernel): [the run's "agreement" entries of it]}, in the run's order."""
    found = defaultdict(list)
    for entry in run.data.get("agreement") or []:
        if isinstance(entry, dict):
            found[(entry.get("case"), entry.get("kernel"))].append(entry)
    return found


def recorded_agreement(written, case, kernel, numbers, devices):
    """What the run wrote of the agreement of a group of its devices (the positions numbers, in
    devices), as Fleet._judge_peers judges one: {"verdict", "decided", "odd": [position]}, or
    None where it wrote nothing of it."""
    ids = {str(devices[n]["record"]["id"]): n for n in numbers}
    for entry in written.get((case, kernel), []):
        if not set(str(i) for i in entry.get("devices") or []) & set(ids):
            continue
        verdict = entry.get("verdict")
        if verdict not in (kcs_peers.AGREE, kcs_peers.DISAGREE, kcs_peers.NOT_COMPARED):
            return None
        differing = [d for d in entry.get("differing") or [] if isinstance(d, dict)]
        odd = [ids[str(d.get("device"))] for d in differing if str(d.get("device")) in ids]
        decided = verdict == kcs_peers.DISAGREE and all(d.get("majority") is True for d in differing)
        return {"verdict": verdict, "decided": decided, "odd": odd}
    return None


def recorded_speed(run):
    """{(case, kernel, device id): what the run wrote of that timing ("speed"), as
    kcs_peers.SpeedVerdict's fields}."""
    written = {}
    for entry in run.data.get("speed") or []:
        if not isinstance(entry, dict):
            continue
        members = [m for m in entry.get("devices") or [] if isinstance(m, dict)]
        for member in members:
            written[(entry.get("case"), entry.get("kernel"), str(member.get("device")))] = {
                "peers": len(members) - 1, "peer_median_s": member.get("peer_median_s"),
                "threshold": entry.get("threshold"), "ratio": member.get("ratio"),
                "straggler": member.get("straggler") is True}
    return written


def _read_member(pair):
    return read_member(*pair)


def keep_freed_memory():
    """Asks the C library to keep the memory this process frees rather than give it back to the
    system (glibc's mallopt: no trimming of the heap, and blocks of up to 32 MiB, a file's text,
    from the heap too). Reading a results file makes tens of megabytes of objects that go when
    it is reduced, and as many for the next file: memory given back is faulted in again page by
    page, which cost the merge a tenth of its time. Peak memory stays that of the largest file.
    Where the C library has no mallopt, nothing changes. Inherited by the workers (forked)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-1, 1 << 30)   # M_TRIM_THRESHOLD
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD, at its largest


def default_jobs():
    """Worker processes that read files: the CPUs this process may use, at most 8."""
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:
        return max(1, min(8, os.cpu_count() or 1))


# ---- digests: a results file reduced on its node ---------------------------------------------
#
# A digest is read_member's reduction of one results file, written as JSON beside the file by
# the node that ran it (tools/fleet.sh task: `kcs_fleet.py --digest RESULTS`), so that the merge
# folds reductions instead of parsing every file: parsing a medium-level file of 8 GPUs (8,000
# results, 10 MB) takes longer than folding its reduction, and a node has the time to spare.
# The reduction is made by _reduce_member, the one home of the checks and of what is kept; a
# digest only carries it, encoded (encode_reduction) and decoded (decode_reduction) exactly.
# The merge uses a digest only when it was made by this reduction (REDUCTION_VERSION: its code; and
# FAILURES_KEPT) of the very file beside it (name, size, mtime_ns) and of the same kernel
# listing; otherwise it reduces the file itself and says why (DigestUnused).

DIGEST_SCHEMA, DIGEST_VERSION = "kcs-fleet-digest", 1
# What _reduce_member keeps and how: the sha256 of the code that makes the reduction (this file,
# the checks of kcs_results and the peers rule of kcs_peers), so that no digest made by other code
# is taken for one made by this, with no version to remember to bump. A change to any of them,
# a comment's included, has the merge reduce the files themselves until the nodes run it too.
def _reduction_code_digest():
    code = hashlib.sha256()
    for name in ("kcs_fleet.py", "kcs_results.py", "kcs_peers.py"):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "rb") as source:
            code.update(source.read())
    return code.hexdigest()[:16]


REDUCTION_VERSION = _reduction_code_digest()
FAILURE_KEYS = ("case", "backend", "kernel", "dtype", "status", "outcome", "message", "explanation")
SPEED_KEYS = ("peers", "peer_median_s", "threshold", "ratio", "straggler")
UNEXERCISED_KEYS = ("device", "op", "dtype", "kernel")
DEVICE_KEYS = ("record", "uuid", "results", "hashed", "outcomes", "ops", "failures", "failure_count", "unexercised")


class DigestUnused(Exception):
    """A digest the merge does not use; reason is "stale" (its results file or listing changed
    since), "other version" or "malformed", the message names the file and the cause."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


def digest_path(results_path):
    """Where a results file's digest lies: beside it, results-<index>.digest for
    results-<index>.json (the merge's file discovery takes only *.json)."""
    return os.path.splitext(results_path)[0] + ".digest"


def file_stamp(path):
    """{"name", "size", "mtime_ns"} of a file, or None where there is none: what a digest
    records of the files it was made from, and the merge compares."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return {"name": os.path.basename(path), "size": status.st_size, "mtime_ns": status.st_mtime_ns}


def write_digest(path, output=None):
    """Reduces the results file path (_reduce_member, as the merge would) and writes the digest
    to output (default digest_path(path)), atomically: a merge reads the old one or the new one.
    Returns the digest's path; FleetError (the cause named) where the file cannot be reduced or
    changed while it was read, and then no digest is left at output (the merge will reduce the
    file itself and name what is wrong with it)."""
    output = output or digest_path(path)
    label = os.path.splitext(os.path.basename(path))[0]
    try:
        before = file_stamp(path)
        if before is None:
            raise FleetError(f"{path}: no such file")
        listing = file_stamp(listing_path(path, label))
        checksum = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                checksum.update(block)
        reduction = _reduce_member(path, label)
        if file_stamp(path) != before or file_stamp(listing_path(path, label)) != listing:
            raise FleetError(f"{path}: changed while its digest was made: none written")
    except (ResultsError, FleetError, OSError) as error:
        with contextlib.suppress(FileNotFoundError):
            os.remove(output)
        if isinstance(error, OSError):
            raise FleetError(f"{path}: cannot read: {error.strerror or error}") from error
        raise FleetError(str(error)) from error
    document = {"schema": DIGEST_SCHEMA, "version": DIGEST_VERSION,
                "reduction_version": REDUCTION_VERSION, "failures_kept": FAILURES_KEPT,
                "results": dict(before, sha256=checksum.hexdigest()), "listing": listing,
                "reduction": encode_reduction(reduction)}
    partial = f"{output}.{os.getpid()}.partial"
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(document, handle, separators=(",", ":"))
        os.replace(partial, output)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise FleetError(f"{output}: cannot write the digest: {error.strerror or error}") from error
    return output


def read_digest(digest, path, label):
    """The reduction of the results file path (label) from its digest; DigestUnused where the
    digest is not of this file as it is now, of another reduction, or malformed."""
    try:
        with open(digest, "rb") as handle:
            document = json.loads(handle.read())
    except OSError as error:
        raise DigestUnused("malformed", f"{digest}: cannot read: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:
        raise DigestUnused("malformed", f"{digest}: not valid JSON: {error}") from None
    if not isinstance(document, dict) or document.get("schema") != DIGEST_SCHEMA:
        raise DigestUnused("malformed", f'{digest}: not a digest (no "schema": "{DIGEST_SCHEMA}")')
    made = (document.get("version"), document.get("reduction_version"), document.get("failures_kept"))
    if made != (DIGEST_VERSION, REDUCTION_VERSION, FAILURES_KEPT):
        raise DigestUnused("other version", f"{digest}: made by another version (digest {made[0]!r}, reduction "
                           f"{made[1]!r}, failures kept {made[2]!r}; this merge: {DIGEST_VERSION}, "
                           f"{REDUCTION_VERSION}, {FAILURES_KEPT})")
    results = document.get("results")
    now = file_stamp(path)
    if not isinstance(results, dict) or {k: results.get(k) for k in ("name", "size", "mtime_ns")} != now:
        raise DigestUnused("stale", f"{digest}: not of {os.path.basename(path)} as it is now (digest: "
                           f"{_stamp_text(results)}; the file: {_stamp_text(now)})")
    listing = file_stamp(listing_path(path, label))
    if document.get("listing") != listing:
        raise DigestUnused("stale", f"{digest}: its kernel listing changed since (digest: "
                           f"{_stamp_text(document.get('listing'))}; now: {_stamp_text(listing)})")
    try:
        return decode_reduction(document.get("reduction"), path, label)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
        raise DigestUnused("malformed", f"{digest}: malformed reduction: {type(error).__name__}: {error}") from None


def _stamp_text(stamp):
    if not isinstance(stamp, dict):
        return "none"
    return f"{stamp.get('name')}, {stamp.get('size')} bytes, mtime_ns {stamp.get('mtime_ns')}"


def encode_reduction(reduction):
    """_reduce_member's reduction as JSON data (decode_reduction makes it again, exactly): its
    tuples as lists, its dict keys that are tuples as rows, in the same order."""
    def rows(mapping):
        return None if mapping is None else [list(key) + [value] for key, value in mapping.items()]
    return {"label": reduction["label"], "host": reduction["host"], "revision": reduction["revision"],
            "created": reduction["created"], "command": reduction["command"], "listed": reduction["listed"],
            "build": [reduction["build"][0], [list(pair) for pair in reduction["build"][1:]]],
            "devices": reduction["devices"],
            "answers": [list(key) + [proved, [[[list(pair) for pair in answer], numbers]
                                              for answer, numbers in by_answer.items()]]
                        for key, (proved, by_answer) in reduction["answers"].items()],
            "timings": [[number] + list(identity) + [summary, recorded]
                        for number, identity, summary, recorded in reduction["timings"]],
            "unhashed": reduction["unhashed"], "cases": sorted(reduction["cases"]),
            "early_errors": reduction["early_errors"], "early_error_count": reduction["early_error_count"],
            "located": [list(entry) for entry in reduction["located"]], "unexercised": reduction["unexercised"],
            "agreement": rows(reduction["agreement"]), "speed_recorded": reduction["speed_recorded"]}


def decode_reduction(data, path, label):
    """encode_reduction's data as _reduce_member's reduction of path (label), each part checked
    for what the merge and its pages read of it: KeyError, TypeError, ValueError or IndexError
    where it is not. A digest of another label (a renamed file) is refused."""
    if data["label"] != label:
        raise ValueError(f"made of {data['label']!r}, not {label!r}")
    devices = _list(data["devices"])
    for device in devices:
        _keys(device, DEVICE_KEYS, "device")
        _text(_dict(device["record"])["id"])
        for key in ("results", "hashed", "failure_count"):
            _int(device[key])
        outcomes = defaultdict(int)
        for kind, count in _dict(device["outcomes"]).items():
            outcomes[kind] = _int(count)
        device["outcomes"] = outcomes
        for counts in _dict(device["ops"]).values():
            if len(_list(counts)) != 4 or not all(type(n) is int for n in counts[:3]):
                raise ValueError(f"op counts {counts!r}")
        _failures(device["failures"])
        _unexercised(device["unexercised"])
    count = len(devices)
    answers = {}
    # The bulk of a digest: its checks by the types of whole rows at once (in C loops).
    for row in _list(data["answers"]):
        key = tuple(row[:5])
        if len(row) != 7 or type(row[5]) is not bool or not _TEXT.issuperset(map(type, key)):
            raise ValueError(f"an answers row that is not 5 texts, true or false, answers: {str(row)[:80]}")
        group = answers[key] = [row[5], {}]
        for answer, numbers in row[6]:
            answer = tuple(map(tuple, answer))
            if not (_PAIR.issuperset(map(len, answer)) and _TEXT.issuperset(map(type, chain.from_iterable(answer)))):
                raise ValueError(f"an answer that is not [output, hash] texts: {str(answer)[:80]}")
            group[1][answer] = _positions(numbers, count)
    timings = []
    for number, case, backend, kernel, dtype, summary, recorded in _list(data["timings"]):
        _dict(summary)
        if recorded is not None:
            _keys(recorded, SPEED_KEYS, "speed")
        timings.append((_position(number, count), (_text(case), _text(backend), _text(kernel), _text(dtype)),
                        summary, recorded))
    agreement = None
    if data["agreement"] is not None:
        agreement = {}
        for *key, verdict in _list(data["agreement"]):
            if len(key) != 5:
                raise ValueError("an agreement row of other than 5 keys")
            _keys(verdict, ("verdict", "decided", "odd"), "agreement")
            _positions(verdict["odd"], count, none=True)  # none odd: the group agrees
            agreement[tuple(map(_text, key))] = verdict
    build = data["build"]
    located = [(_position(n, count), case, kernel, _text(text)) for n, case, kernel, text in _list(data["located"])]
    _failures(data["early_errors"])
    _unexercised(data["unexercised"])
    return {"path": path, "label": label, "host": data["host"], "revision": data["revision"],
            "created": data["created"], "command": data["command"], "listed": _bool(data["listed"]),
            "build": (_text(build[0]),) + tuple((_text(k), _text(v)) for k, v in build[1]),
            "devices": devices, "answers": answers, "timings": timings, "unhashed": _int(data["unhashed"]),
            "cases": set(map(_text, data["cases"])), "early_errors": data["early_errors"],
            "early_error_count": _int(data["early_error_count"]), "located": located,
            "unexercised": data["unexercised"], "agreement": agreement,
            "speed_recorded": _bool(data["speed_recorded"])}


def _kind(value, kind, what):
    if type(value) is not kind:
        raise TypeError(f"{what} expected, got {type(value).__name__}: {str(value)[:60]}")
    return value


def _text(value):
    return _kind(value, str, "text")


def _int(value):
    return _kind(value, int, "a count")


def _bool(value):
    return _kind(value, bool, "true or false")


def _list(value):
    return _kind(value, list, "a list")


def _dict(value):
    return _kind(value, dict, "an object")


def _keys(value, keys, what):
    if set(_dict(value)) != set(keys):
        raise ValueError(f"a {what} entry with keys {sorted(value)}, not {sorted(keys)}")
    return value


def _position(number, count):
    if type(number) is not int or not 0 <= number < count:
        raise ValueError(f"device position {number!r} of {count} devices")
    return number


def _positions(numbers, count, none=False):
    if not (type(numbers) is list and (numbers or none) and _INT.issuperset(map(type, numbers))
            and min(numbers, default=0) >= 0 and max(numbers, default=0) < count):
        raise ValueError(f"device positions {str(numbers)[:60]} of {count} devices")
    return numbers


def _failures(failures):
    for failure in _list(failures):
        _keys(failure, FAILURE_KEYS, "failure")
        if failure["explanation"] is not None:
            _text(_dict(failure["explanation"])["text"])


def _unexercised(entries):
    for entry in _list(entries):
        _keys(entry, UNEXERCISED_KEYS, "unexercised kernel")


# ---- the fleet -------------------------------------------------------------------------------

DEVICE_FIELDS = ("id", "backend", "name", "platform", "driver_version", "runtime_version")


class Member:
    """One results file (one array task, or a further step of one): what the pages say of it."""

    def __init__(self, reduction):
        self.path, self.label = reduction["path"], reduction["label"]
        self.index = member_index(self.path)
        self.host = reduction["host"]
        self.revision = reduction["revision"]
        self.created = reduction["created"]
        self.command = reduction["command"]
        self.listed = reduction["listed"]
        self.speed_recorded = reduction["speed_recorded"]
        self.agreement_recorded = reduction["agreement"] is not None
        # The task a member belongs to: results-3.json and results-3.saboteur.json are task 3.
        self.task = f"results-{self.index}" if self.index is not None else self.label


class Device:
    """One device of one member: its identity, counts of its results, what the fleet found
    about it. Its results themselves are not kept (the merge streams)."""

    def __init__(self, member, reduction, number, model):
        self.member, self.number, self.model = member, number, model
        self.record = reduction["record"]
        self.id = f"{member.label}/{self.record['id']}"
        self.host = str(member.host or "?")
        self.name = str(self.record.get("name") or self.record["id"])
        self.backend = str(self.record.get("backend") or "")
        self.uuid = reduction["uuid"]
        self.card = None  # its identity across runs (Fleet._name_cards)
        self.result_count, self.hashed_count = reduction["results"], reduction["hashed"]
        self.outcomes = dict(reduction["outcomes"])
        self.ops = reduction["ops"]  # op -> [results, failed or errors, skipped, largest fraction of the bound]
        self.failures, self.failure_count = reduction["failures"], reduction["failure_count"]
        self.unexercised = reduction["unexercised"]
        self.disagrees, self.undecided, self.straggles = [], [], []
        self.largest_ratio = None
        self.changes = []  # what the history found (kcs_fleet_history)

    def model_text(self):
        record = self.record
        return (f"{self.name} ({self.backend}, {record.get('platform') or ''}, driver "
                f"{record.get('driver_version') or ''}, runtime {record.get('runtime_version') or ''}, "
                f"kcs {self.model[1][0] or '?'})")

    def counts(self):
        return self.outcomes

    def failing(self):
        return self.failure_count

    def problems(self):
        return bool(self.disagrees or self.undecided or self.straggles or self.failure_count or self.unexercised)


def orphan_digests(paths):
    """The digests in the folders of paths whose results file is gone: a task wrote its results
    and they were lost or deleted since. Named, not merged: a digest is used only beside the
    file it was made of, which the merge checks it against and the pages name."""
    orphans = []
    for folder in sorted({os.path.dirname(path) for path in paths}):
        for digest in sorted(glob.glob(os.path.join(folder, "*.digest"))):
            if not os.path.exists(os.path.splitext(digest)[0] + ".json"):
                orphans.append(digest)
    return orphans


class Fleet:
    """The merge of many results files, read one at a time (see the module's docstring)."""

    def __init__(self, paths, expect_tasks=None, jobs=1, digests=True):
        self.minimum_effect = kcs_peers.MINIMUM_EFFECT
        self.members, self.bad_inputs = [], []
        self.devices, self.device_list = {}, []
        self.models = {}
        self.answers = {}    # (model, case, backend, kernel, dtype) -> {answer: array of device numbers}
        self.unproved = set()  # the keys of groups with an answer not proved deterministic
        self.timings = {}    # the same key -> [(device number, timing_summary, what its run wrote or None)]
        self.member_of = {}  # the same key -> the number of its one member (results file), or -1 for several
        self.recorded = {}   # the same key -> what its member's run wrote of its agreement (absent: nothing)
        self._located = {}   # (device number, case, kernel) -> [first differing element, as text]
        self.hashed = self.unhashed = 0
        self.early_errors, self.early_error_count = [], 0
        self.unexercised = []
        self.history = None
        # Where each member's reduction came from: its digest (made on its node), or this merge.
        self.from_digests = self.reduced_here = 0
        self.digests_unused = []  # {"file", "reason", "cause"} of each digest not used
        self.orphan_digests = orphan_digests(paths)
        cases, labels, pairs = set(), set(), []
        for path in paths:
            label = os.path.splitext(os.path.basename(path))[0]
            if label in labels:
                self.bad_inputs.append((path, f"{path}: a second results file named {label}: members must differ"))
            else:
                labels.add(label)
                pairs.append((path, label))
        # Parsing a file makes hundreds of thousands of containers, each allocation counting
        # towards a collection of every object kept so far: the collector is off while files are
        # read (read_member unlinks what would be cycles), in the workers too (they fork from here).
        collecting = gc.isenabled()
        gc.disable()
        keep_freed_memory()
        try:
            # A member with a digest is read here: decoding one costs less than sending its
            # reduction from a worker would. Workers read and check the files without one, in
            # order; this process folds each member in the order of paths as it comes.
            here = [digests and os.path.exists(digest_path(path)) for path, _ in pairs]
            elsewhere = [(path, label, digests) for (path, label), has_digest in zip(pairs, here) if not has_digest]
            with contextlib.ExitStack() as stack:
                if jobs > 1 and len(elsewhere) >= 2 * jobs:
                    pool = stack.enter_context(multiprocessing.get_context("fork").Pool(jobs))
                    reduced = pool.imap(_read_member, elsewhere, chunksize=1)
                else:
                    here = [True] * len(pairs)
                for (path, label), has_digest in zip(pairs, here):
                    self._fold(path, read_member(path, label, digests) if has_digest else next(reduced), cases)
        finally:
            if collecting:
                gc.enable()
        self.missing = []
        if expect_tasks is not None:
            present = {m.index for m in self.members}
            broken = {member_index(path) for path, _ in self.bad_inputs}
            self.missing = [f"results-{i}.json" for i in range(expect_tasks) if i not in present and i not in broken]
        self.cases = sorted(cases)
        self.disagreements, self.stragglers, self.groups = self._judge_peers()
        self.revisions = sorted({str(m.revision or "?") for m in self.members})
        self._name_cards()

    def _fold(self, path, reduction, cases):
        """One member's reduction (read_member: from its digest or its file) added to the fleet."""
        if isinstance(reduction, tuple):
            self.bad_inputs.append((path, reduction[1]))
            if reduction[2] is not None:
                self.digests_unused.append(reduction[2])
            return
        if reduction["from_digest"] is not None:
            self.from_digests += 1
        else:
            self.reduced_here += 1
            if reduction["digest_unused"] is not None:
                self.digests_unused.append(reduction["digest_unused"])
        member = Member(reduction)
        self.members.append(member)
        numbers = []
        for device_reduction in reduction["devices"]:
            record = device_reduction["record"]
            # Peers share this (docs/runner.md, "Peers: one rule"): the runner's identity, and the build.
            model = (kcs_peers.identity(record), reduction["build"])
            model = self.models.setdefault(model, model)
            device = Device(member, device_reduction, len(self.device_list), model)
            self.devices[device.id] = device
            self.device_list.append(device)
            numbers.append(device.number)
        cases.update(reduction["cases"])
        answers, member_of, models, this = self.answers, self.member_of, self.models, len(self.members) - 1
        first = numbers[0] if numbers else 0  # a member's device numbers follow on from its first
        for (identity, *result), (proved, by_answer) in reduction["answers"].items():
            key = (models[(identity, reduction["build"])],) + tuple(result)
            group = answers.get(key)
            if group is None:
                group = answers[key] = {}
            for answer, positions in by_answer.items():
                devices = group.get(answer)
                if devices is None:
                    devices = group[answer] = array("I")
                devices.extend(map(first.__add__, positions))
            if not proved:
                self.unproved.add(key)
            if member_of.setdefault(key, this) != this:
                member_of[key] = -1
        self.hashed += sum(device["hashed"] for device in reduction["devices"])
        self.unhashed += reduction["unhashed"]
        for position, identity, summary, recorded in reduction["timings"]:
            number = numbers[position]
            key = (self.device_list[number].model,) + identity
            self.timings.setdefault(key, []).append((number, summary, recorded))
            if member_of.setdefault(key, this) != this:
                member_of[key] = -1
        for (identity, *result), verdict in (reduction["agreement"] or {}).items():
            if verdict is not None:
                verdict = dict(verdict, odd=[numbers[n] for n in verdict["odd"]])
            key = (self.models[(identity, reduction["build"])],) + tuple(result)
            self.recorded[key] = verdict
        for position, case, kernel, text in reduction["located"]:
            device = self.device_list[numbers[position]]
            self._located.setdefault((device.number, case, kernel), []).append({"device": device.id, "text": text})
        self.early_errors += [(member.label, failure) for failure in reduction["early_errors"]]
        self.early_error_count += reduction["early_error_count"]
        self.unexercised += reduction["unexercised"]


    # -- the verdicts --------------------------------------------------------------------------

    def _judge_peers(self):
        """(disagreements, stragglers, {verdict: how many groups}) by the one rule (docs/runner.md,
        "Peers: one rule"), group of peers by group: within one results file as its run wrote
        them, across files by kcs_peers over the whole group. The one place the fleet judges
        devices against peers."""
        counts = {kcs_peers.AGREE: 0, kcs_peers.DISAGREE: 0, kcs_peers.NOT_COMPARED: 0}
        disagreements, stragglers = [], []
        self.ratios = {}  # the timings' key -> array of each timing's ratio to its peers' median (NaN: not judged)
        for key, group in sorted(self.answers.items(), key=lambda item: item[0][1:]):
            member = self.member_of[key]
            recorded = member >= 0 and self.members[member].agreement_recorded
            if recorded:
                verdict = self.recorded.get(key)
                if verdict is not None:
                    verdict = dict(verdict, odd=set(verdict["odd"]))
            else:
                kind, majority = kcs_peers.judge_group_agreement({answer: len(numbers) for answer, numbers
                                                                  in group.items()}, key not in self.unproved)
                verdict = None
                if kind != kcs_peers.ALONE:
                    verdict = {"verdict": kind, "decided": kind == kcs_peers.DISAGREE and majority is not None,
                               "odd": set(n for answer, numbers in group.items() for n in numbers
                                          if majority is None or answer != majority)
                               if kind == kcs_peers.DISAGREE else set()}
            if verdict is None:
                continue
            counts[verdict["verdict"]] += 1
            if verdict["verdict"] == kcs_peers.DISAGREE:
                disagreements.append(self._disagreement(key, group, verdict, recorded))
        for key, timed in sorted(self.timings.items(), key=lambda item: item[0][1:]):
            member = self.member_of[key]
            recorded = member >= 0 and self.members[member].speed_recorded
            if recorded:
                speeds = [written for _, _, written in timed]
            else:
                judged = [(n, t) for n, t, _ in timed if kcs_peers._is_timed(kcs_peers._number(t.get("median_s")))]
                noise = kcs_peers.group_noise([(float(t["median_s"]), t.get("lower_quartile_s"),
                                                t.get("upper_quartile_s")) for _, t in judged])
                verdicts = dict(zip((n for n, _ in judged),
                                    kcs_peers.judge_group_speed([float(t["median_s"]) for _, t in judged], noise)))
                speeds = [None if verdicts.get(n) is None else verdicts[n]._asdict() for n, _, _ in timed]
            _, case, backend, kernel, dtype = key
            ratios = self.ratios[key] = array("d", [math.nan] * len(timed))
            for place, ((number, timing, _), speed) in enumerate(zip(timed, speeds)):
                if speed is None:
                    continue
                device = self.device_list[number]
                ratio = speed["ratio"]
                if isinstance(ratio, (int, float)):
                    ratios[place] = ratio
                if isinstance(ratio, (int, float)) and (device.largest_ratio is None or ratio > device.largest_ratio):
                    device.largest_ratio = ratio
                if not speed["straggler"]:
                    continue
                peers = speed["peers"]
                entry = {"device": device.id, "host": device.host, "case": case, "backend": backend,
                         "kernel": kernel, "dtype": dtype, "model": device.model_text(),
                         "median_s": timing["median_s"], "peer_median_s": speed["peer_median_s"],
                         "ratio": ratio, "threshold": speed["threshold"], "peers": peers,
                         "judged_by": "run" if recorded else "fleet",
                         "reason": f"{ratio:.2f}x the median of its {peers} peer{'s' if peers != 1 else ''}' "
                                   f"medians, beyond their noise and the minimum effect ({speed['threshold']:.0%})"}
                stragglers.append(entry)
                device.straggles.append(entry)
        return disagreements, stragglers, counts

    @property
    def time_ratio(self):
        """{(device id, case, backend, kernel, dtype): its timing's ratio to its peers' median} of
        every judged timing: made when asked (8 bytes a timing are kept, not this dict)."""
        return {(self.device_list[number].id,) + key[1:]: ratio
                for key, timed in self.timings.items()
                for (number, _, _), ratio in zip(timed, self.ratios[key]) if not math.isnan(ratio)}

    def _disagreement(self, key, group, verdict, recorded):
        """A disagreeing group's entry ({answer: device numbers}); its odd devices learn of it."""
        _, case, backend, kernel, dtype = key
        odd = verdict["odd"]
        answers = sorted(group.items(), key=lambda item: -len(item[1]))
        majority = None
        if verdict["decided"]:
            majority = next((answer for answer, numbers in answers if any(n not in odd for n in numbers)), None)
        majority_numbers = [n for n in group[majority] if n not in odd] if majority is not None else []
        odd_devices = [(self.device_list[n], answer) for answer, numbers in answers for n in numbers if n in odd]
        entry = {"case": case, "backend": backend, "kernel": kernel, "dtype": dtype,
                 "model": (odd_devices[0][0] if odd_devices else self.device_list[answers[0][1][0]]).model_text(),
                 "decided": verdict["decided"], "peers": sum(len(numbers) for numbers in group.values()),
                 "odd_devices": [d.id for d, _ in odd_devices],
                 "majority_devices": [self.device_list[n].id for n in majority_numbers[:DEVICES_NAMED]],
                 "majority_count": len(majority_numbers),
                 "majority_hashes": dict(majority) if majority is not None else None,
                 "answers": [{"count": len(numbers), "hashes": dict(answer),
                              "devices": [self.device_list[n].id for n in
                                          (numbers if answer != majority else numbers[:DEVICES_NAMED])]}
                             for answer, numbers in answers],
                 "judged_by": "run" if recorded else "fleet",
                 "located": [located for d, _ in odd_devices
                             for located in self._located.get((d.number, case, kernel), [])]}
        for device, answer in odd_devices:
            (device.disagrees if verdict["decided"] else device.undecided).append((entry, dict(answer)))
        return entry

    def _name_cards(self):
        """Each device's identity across runs, for the history: its uuid where its record gives
        one, else host/device id; where two devices of this merge would share one (several tasks
        on one host, a file copied), the member's label is added."""
        base = {d.id: d.uuid or f"{d.host}/{d.record['id']}" for d in self.device_list}
        counts = defaultdict(int)
        for name in base.values():
            counts[name] += 1
        for device in self.device_list:
            name = base[device.id]
            device.card = name if counts[name] == 1 else f"{name} in {device.member.label}"

    # -- views ---------------------------------------------------------------------------------

    def ordered_devices(self):
        """Disagreeing devices first, then undecided, stragglers, failing, the rest; by id within."""
        def rank(device):
            return (0 if device.disagrees else 1 if device.undecided else 2 if device.straggles
                    else 3 if device.failing() or device.unexercised else 4, device.id)
        return sorted(self.device_list, key=rank)

    def failures(self):
        """(device, failure) for each failure kept (FAILURES_KEPT a device), devices in page order."""
        return [(d, f) for d in self.ordered_devices() for f in d.failures]

    def failure_total(self):
        """Every failure and error, of devices and of no device, kept or only counted."""
        return sum(d.failure_count for d in self.device_list) + self.early_error_count

    def tasks(self):
        """{task: [members]} in the order the members were read; a task is one node page."""
        tasks = {}
        for member in self.members:
            tasks.setdefault(member.task, []).append(member)
        return tasks

    def results_gone(self):
        """The digests left without their results file, but for those --expect-tasks already
        names as missing: each is a member the fleet lost (fails it, as a missing one does)."""
        missing = set(self.missing)
        return [d for d in self.orphan_digests
                if os.path.basename(os.path.splitext(d)[0]) + ".json" not in missing]

    def digest_summary(self):
        """How many members came from their digests, how many were reduced here, and why each
        digest not used was not (fleet.json's "digests")."""
        return {"from_digests": self.from_digests, "reduced_here": self.reduced_here,
                "not_used": self.digests_unused, "results_gone": self.orphan_digests}

    def verdict(self):
        """(exit status, one line)."""
        problems = []
        if self.disagreements:
            problems.append(f"{len(self.disagreements)} disagreement{'s' if len(self.disagreements) != 1 else ''}")
        failed = self.failure_total()
        if failed:
            problems.append(f"{failed} failed or errors")
        if self.missing:
            problems.append(f"{len(self.missing)} missing results file{'s' if len(self.missing) != 1 else ''}")
        if self.unexercised:
            problems.append(f"{len(self.unexercised)} kernel rows ran nothing")
        gone = self.results_gone()
        if gone:
            problems.append(f"{len(gone)} results file{'s' if len(gone) != 1 else ''} gone, a digest left")
        if self.bad_inputs:
            problems.append(f"{len(self.bad_inputs)} unreadable or malformed results file"
                            f"{'s' if len(self.bad_inputs) != 1 else ''}")
        history_bad = self.history.bad_inputs if self.history is not None else []
        if history_bad:
            problems.append(f"{len(history_bad)} unreadable history summar{'ies' if len(history_bad) != 1 else 'y'}")
        if problems:
            status = EXIT_BAD_INPUT if self.bad_inputs or history_bad else EXIT_CORRECTNESS
            return status, "FLEET FAILED: " + ", ".join(problems)
        if self.stragglers:
            return EXIT_SPEED, f"FLEET SLOW: {len(self.stragglers)} straggling kernel results"
        return EXIT_OK, "FLEET OK: every device agrees with its peers and passed"

    def summary(self):
        status, line = self.verdict()
        devices = []
        for device in self.ordered_devices():
            devices.append({"id": device.id, "member": device.member.label, "task": device.member.task,
                            "page": node_page(device.member.task), "host": device.host,
                            "device": device.record["id"], "backend": device.backend, "name": device.name,
                            "model": device.model_text(), "uuid": device.uuid, "card": device.card,
                            "results": device.result_count, "outcomes": dict(sorted(device.outcomes.items())),
                            "failures": device.failure_count,
                            "disagrees": bool(device.disagrees), "undecided": bool(device.undecided),
                            "straggler": bool(device.straggles), "unexercised_kernels": len(device.unexercised),
                            "changed": bool(device.changes)})
        summary = {
            "schema": SCHEMA, "version": VERSION, "verdict": line, "exit_status": status,
            "members": [{"label": m.label, "file": m.path, "task": m.task, "host": m.host, "revision": m.revision,
                         "created": m.created, "command": m.command} for m in self.members],
            "bad_inputs": [{"file": path, "error": error} for path, error in self.bad_inputs],
            "missing": self.missing, "revisions": self.revisions,
            "hashes": {"results_with": self.hashed, "results_without": self.unhashed},
            "devices": devices, "disagreements": self.disagreements, "stragglers": self.stragglers,
            "unexercised_kernels": self.unexercised,
            "failures": [dict(f, device=d.id) for d, f in self.failures()]
            + [dict(f, device=None, member=label) for label, f in self.early_errors],
            "failures_total": self.failure_total(),
            "limits": {"failures_kept_per_device": FAILURES_KEPT, "majority_devices_named": DEVICES_NAMED},
            "digests": self.digest_summary(), "peer_groups": dict(self.groups),
            "rule": {"definition": "docs/runner.md, Peers: one rule", "minimum_effect": self.minimum_effect}}
        if self.history is not None:
            summary["history"] = self.history.summary()
        return summary


# ---- the pages -------------------------------------------------------------------------------

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


def node_page(task):
    """The node page of a task, relative to the index: nodes/<task>.html, the name kept to
    letters, digits, '.', '_' and '-'."""
    return "nodes/" + re.sub(r"[^A-Za-z0-9._-]", "_", task) + ".html"


@functools.lru_cache(maxsize=None)
def pages():
    """The pages' templates, made when the first page is written: a node writing its digest
    (--digest) needs no jinja2."""
    import jinja2
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")),
        autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(fraction=fmt_fraction, ratio=fmt_ratio, time=fmt_time, node_page=node_page)
    return environment


def write_report(fleet, output_dir, json_path):
    """index.html, a page per task under nodes/ (pages of tasks no longer in the fleet are
    removed) and the JSON summary; (index path, summary)."""
    os.makedirs(os.path.join(output_dir, "nodes"), exist_ok=True)
    summary = fleet.summary()
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    devices = fleet.ordered_devices()
    problem_devices = [d for d in devices if d.problems() or d.changes]
    by_model = defaultdict(lambda: {"devices": 0, "tasks": set(), "results": 0, "problems": 0})
    for device in fleet.device_list:
        model = by_model[device.model_text()]
        model["devices"] += 1
        model["tasks"].add(device.member.task)
        model["results"] += device.result_count
        model["problems"] += bool(device.problems())
    tasks = fleet.tasks()
    devices_of = defaultdict(list)
    for device in fleet.device_list:
        devices_of[device.member.task].append(device)
    page = pages().get_template("fleet.html").render(
        fleet=fleet, summary=summary, generated=generated, problem_devices=problem_devices,
        models=sorted(by_model.items()), tasks=tasks, troubled={d.member.task for d in problem_devices},
        rows=INDEX_ROWS, named=DEVICES_NAMED)
    index = os.path.join(output_dir, "index.html")
    with open(index, "w", encoding="utf-8") as handle:
        handle.write(page)
    node_template = pages().get_template("fleet_node.html")
    written = set()
    for task, members in tasks.items():
        path = os.path.join(output_dir, node_page(task))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(node_template.render(fleet=fleet, task=task, members=members, devices=devices_of[task],
                                              verdict=summary["verdict"], generated=generated, kept=FAILURES_KEPT))
        written.add(os.path.basename(path))
    for name in os.listdir(os.path.join(output_dir, "nodes")):
        if name.endswith(".html") and name not in written:
            os.remove(os.path.join(output_dir, "nodes", name))
    with open(json_path, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1, allow_nan=False, default=str)
        handle.write("\n")
    return index, summary


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="kcs_fleet.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Merge the results files of a kcs fleet job (one per array task) into a fleet report: "
                    "devices whose outputs disagree with identical peers, stragglers, failures, with a page "
                    "per node and, with --history, what changed since earlier runs (docs/fleet.md).",
        epilog="""\
Exit status:
  0  every device agrees with its peers, every result passed or was skipped
  2  bad input: a bad option, no results files, an unreadable or malformed one (each
     such file is named and left out; the report of the others is still written), an
     unreadable history summary
  3  a disagreement, a failure or error, a missing results file (--expect-tasks), one
     gone (its digest left) or a kernel row that ran no case
  4  only stragglers
What the history finds (--history) is shown, and changes no exit status.""")
    parser.add_argument("inputs", nargs="+", metavar="RESULTS",
                        help="results files, or folders of results-<array index>.json")
    parser.add_argument("--output", metavar="DIR", default="fleet-report",
                        help="folder for index.html and nodes/ (default: fleet-report)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="the JSON summary (default: OUTPUT/fleet.json)")
    parser.add_argument("--expect-tasks", type=int, default=None, metavar="N",
                        help="results-0.json .. results-(N-1).json must all be present")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="processes that read results files at once (default: the CPUs this process may "
                             "use, at most 8; 1 reads them here)")
    parser.add_argument("--history", metavar="DIR", default=None,
                        help="folder of this fleet's summaries by date: this merge's is written to "
                             "DIR/<UTC timestamp>.json and compared with the earlier ones")
    parser.add_argument("--history-keep", type=int, default=None, metavar="K",
                        help="summaries kept in the history folder, the newest (default 30); older ones are "
                             "deleted")
    parser.add_argument("--digest", action="store_true",
                        help="merge nothing: reduce each results file given and write its digest beside it "
                             "(results-<i>.json: results-<i>.digest), which a later merge folds instead of "
                             "the file; a node runs this after its task (tools/fleet.sh task)")
    parser.add_argument("--no-digests", action="store_true",
                        help="reduce every results file here, its digest (if any) not read")
    parser.add_argument("--digest-output", metavar="FILE", default=None,
                        help="with --digest and one results file: write its digest here instead (the merge "
                             "looks for it beside the results file)")
    return parser.parse_args(argv)


def write_digests(args):
    """--digest: each results file's digest written (write_digest); 0, or 2 where one could not
    be (named, with its cause: the merge then reduces that file itself)."""
    if not args.digest:
        print("kcs_fleet: --digest-output needs --digest", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.digest_output and len(args.inputs) != 1:
        print("kcs_fleet: --digest-output takes one results file", file=sys.stderr)
        return EXIT_BAD_INPUT
    status = EXIT_OK
    for path in args.inputs:
        try:
            print(write_digest(path, args.digest_output))
        except FleetError as error:
            print(f"kcs_fleet: no digest: {error}", file=sys.stderr)
            status = EXIT_BAD_INPUT
    return status


def main(argv=None):
    import kcs_fleet_history  # here, not at the top: it imports this module
    try:
        args = parse_arguments(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_BAD_INPUT
    if args.digest or args.digest_output:
        return write_digests(args)
    try:
        if args.expect_tasks is not None and args.expect_tasks < 1:
            raise FleetError("--expect-tasks needs a count >= 1")
        if args.history_keep is not None and (args.history is None or args.history_keep < 1):
            raise FleetError("--history-keep needs --history and a count >= 1")
        if args.jobs is not None and args.jobs < 1:
            raise FleetError("--jobs needs a count >= 1")
        fleet = Fleet(results_paths(args.inputs), args.expect_tasks,
                      jobs=args.jobs if args.jobs is not None else default_jobs(), digests=not args.no_digests)
    except (FleetError, ResultsError) as error:
        print(f"kcs_fleet: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path, error in fleet.bad_inputs:
        print(f"kcs_fleet: left out: {error}", file=sys.stderr)
    history = None
    if args.history:
        try:
            history = kcs_fleet_history.History(args.history, args.history_keep or kcs_fleet_history.KEEP)
            history.compare(fleet)
        except kcs_fleet_history.HistoryError as error:
            print(f"kcs_fleet: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        for path, error in history.bad_inputs:
            print(f"kcs_fleet: history: left out: {error}", file=sys.stderr)
    json_path = args.json or os.path.join(args.output, "fleet.json")
    try:
        index, summary = write_report(fleet, args.output, json_path)
        if history is not None:
            written, removed = history.record(fleet)
    except OSError as error:
        print(f"kcs_fleet: cannot write the fleet report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except kcs_fleet_history.HistoryError as error:
        print(f"kcs_fleet: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    shown = 0
    for entry in fleet.disagreements:
        shown += 1
        if shown > INDEX_ROWS:
            print(f"... and {len(fleet.disagreements) - INDEX_ROWS} more disagreements ({json_path})")
            break
        who = ", ".join(entry["odd_devices"][:DEVICES_NAMED])
        more = len(entry["odd_devices"]) - DEVICES_NAMED
        print(f"DISAGREES: {entry['case']} [{entry['backend']} {entry['kernel']}] on {entry['model']}: {who}"
              + (f" and {more} more" if more > 0 else "")
              + ("" if entry["decided"] else " (no majority among the peers)"))
        for located in entry["located"][:DEVICES_NAMED]:
            print(f"    first differing element, {located['device']}: {located['text']}")
    for entry in fleet.stragglers[:INDEX_ROWS]:
        print(f"STRAGGLER: {entry['device']} {entry['case']} [{entry['backend']} {entry['kernel']}]: {entry['reason']}")
    if len(fleet.stragglers) > INDEX_ROWS:
        print(f"... and {len(fleet.stragglers) - INDEX_ROWS} more straggling results ({json_path})")
    failures = fleet.failures()
    for device, failure in failures[:INDEX_ROWS]:
        print(f"{failure['status'].upper()}: {device.id} {failure['case']} [{failure['kernel']}]: {failure['message']}")
    for label, failure in fleet.early_errors[:INDEX_ROWS]:
        print(f"{failure['status'].upper()}: {label} {failure['case']}: {failure['message']}")
    listed = min(len(failures), INDEX_ROWS) + min(len(fleet.early_errors), INDEX_ROWS)
    if fleet.failure_total() > listed:
        print(f"... and {fleet.failure_total() - listed} more failures or errors (the node pages, {json_path})")
    for name in fleet.missing:
        print(f"MISSING: {name} (its task wrote no results)")
    for entry in fleet.unexercised[:INDEX_ROWS]:
        print(f"UNEXERCISED: {entry['device']} kernel {entry['op']} {entry['dtype']} {entry['kernel']}: ran no case")
    for path, _ in fleet.bad_inputs:
        print(f"BAD INPUT: {path} (left out; the cause is above)")
    for digest in fleet.orphan_digests:
        print(f"RESULTS GONE: {digest} is left, its results file is not (the member is not merged)")
    for unused in fleet.digests_unused[:INDEX_ROWS]:
        print(f"DIGEST NOT USED ({unused['reason']}): {unused['cause']}; the results file was reduced here")
    if len(fleet.digests_unused) > INDEX_ROWS:
        print(f"... and {len(fleet.digests_unused) - INDEX_ROWS} more digests not used ({json_path})")
    print(f"members: {fleet.from_digests} from their digests, {fleet.reduced_here} reduced here")
    if history is not None:
        for device in [d for d in fleet.device_list if d.changes][:INDEX_ROWS]:
            print(f"CHANGED: {device.id} ({device.card}) since {device.changes[0]['since']}: "
                  f"{'; '.join(change['text'] for change in device.changes[:3])}")
        print(f"history: {written} ({history.kept_text(removed)})")
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
