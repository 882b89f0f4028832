"""Reading kcs results files (docs/results.md, schema versions 1 and 2) for the report.

load_results() checks a file before anything reads it and refuses a malformed one with every
problem named (the file, where in it, what is wrong): JSON nested deeper than MAX_DEPTH (checked
on the raw text, so that no parser recurses into it), a missing required field, a status that is
not one of STATUSES, a timing or accuracy figure that is not a number, an expectation without
its reason, a result that is not an object, the same result twice. Nothing is dropped quietly:
what the report cannot read it does not half-show.

It then turns the "nan"/"inf"/"-inf" strings that JSON forces on the runner back into floats,
and attaches to each result its device record, so that the rest of the report never looks a
device up by id again. Version 2 adds to each timing the runner's "ceiling" (which ceiling of the
device bounds the op, and the fraction of it reached), may add "samples_s" (every timed repeat)
to a timing, a top-level "comparability" object (how the run was built) and, to a result that an
expectations file listed, "expected" (docs/expectations.md). A side of an interleaved comparison
(kcs_interleave.py) adds a top-level "interleaved" object and, to each kernel timing, the median
(and pace) of each round. Optional in version 2, and "not
recorded" where a file lacks them: a check's "fraction_histogram" (how many checked elements used
each power-of-two fraction of their bound), a result's "bound_tight" (why its case uses nearly all
of its bound by construction) and "kernel_library" (the vendor library a kernel row calls: cuBLAS,
CUB), and a device's "gemm_flops_per_s" ceiling on OpenCL.

A result's outcome (outcome()) is its status read with its expectation, and the counts
(summary_counts()) are the runner's: a met expectation of a failure or error counts as passed,
an unexpected pass as failed.
"""

import json
import math
import operator
import os
import re

SCHEMA = "kcs-results"
VERSIONS = (1, 2)
MAX_DEPTH = 64  # a results file nests about six deep; anything near this is not one

STATUSES = ("pass", "fail", "error", "skip")
EXPECTED_OUTCOMES = ("fail", "error", "skip")

# A result's status read with its expectation, and what the runner's summary counts it as.
OUTCOMES = ("pass", "fail", "error", "skip", "xfail", "xerror", "xskip", "xpass")
COUNTED_AS = {"pass": "passed", "xfail": "passed", "xerror": "passed", "fail": "failed", "xpass": "failed",
              "skip": "skipped", "xskip": "skipped", "error": "errors"}
SUMMARY_KEYS = ("passed", "failed", "skipped", "errors", "expected", "unexpected_passes")

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf,
              "+inf": math.inf, "infinity": math.inf, "-infinity": -math.inf}
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')


class ResultsError(Exception):
    """A results file that cannot be read, is not a kcs results file of a known version, or is
    malformed; the message names the file and, for each problem, where it is and what it is."""


def number(value):
    """A JSON number, or one of the strings the runner writes for NaN and infinities, as a float.
    None (absent) stays None; anything else that is not a number becomes NaN. (For fields the
    checks below have already accepted; use strict_number() on untrusted values.)"""
    if value is None:
        return None
    try:
        return strict_number(value)
    except ValueError:
        return math.nan


def strict_number(value):
    """A JSON number or "nan"/"inf"/"-inf" as a float; raises ValueError for anything else
    (a boolean, another string, an object)."""
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits
            raise ValueError(f"not a number: {_short(value)} (too large for a double)") from None
    if isinstance(value, str) and value.strip().lower() in _NONFINITE:
        return _NONFINITE[value.strip().lower()]
    raise ValueError(f"not a number: {_short(value)}")


def _short(value):
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_depth(text, path, limit=MAX_DEPTH):
    """Raises ResultsError when the JSON text nests arrays and objects deeper than limit, naming
    the line and column where it does; brackets inside strings do not count."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, match.start()) + 1
                column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
                raise ResultsError(f"{path}:{line}:{column}: JSON nested deeper than {limit} levels "
                                   f"(a kcs results file nests about six): not a results file")
        elif token in "]}":
            depth -= 1


class _Problems:
    """The problems found in one file, each as 'where: what'."""

    SHOWN = 20

    def __init__(self, path):
        self.path, self.items = path, []

    def add(self, where, what):
        self.items.append(f"{where}: {what}" if where else what)

    def raise_if_any(self):
        if not self.items:
            return
        lines = [f"{self.path}: malformed results file ({len(self.items)} problem"
                 f"{'' if len(self.items) == 1 else 's'}):"]
        lines += [f"  {self.path}: {item}" for item in self.items[:self.SHOWN]]
        if len(self.items) > self.SHOWN:
            lines.append(f"  ... and {len(self.items) - self.SHOWN} more")
        raise ResultsError("\n".join(lines))


class Run:
    """One results file: its top-level records, devices by id, and results in file order."""

    def __init__(self, path, data, label):
        self.path = path
        self.label = label
        self.data = data
        self.version = data.get("version")
        self.created = str(data.get("created") or "")
        self.machine = data.get("machine") or {}
        self.kcs = data.get("kcs") or {}
        self.command = data.get("command") or []
        self.options = data.get("options") or {}
        self.summary = data.get("summary") or {}
        comparability = data.get("comparability") or {}
        self.comparability = {str(k): ("" if v is None else str(v)) for k, v in comparability.items()}
        self.devices = {}
        for device in data.get("devices") or []:
            self.devices[str(device["id"])] = device
        self.results = list(data["results"])

    def counts(self):
        """The runner's summary counts, recounted from the results (summary_counts)."""
        return summary_counts(self.results)

    def summary_mismatches(self):
        """'passed: the file's summary says 2, its results count 1' for each count that the
        file's "summary" gives and the results do not add up to."""
        counts = self.counts()
        return [f"{key}: the file's summary says {int(self.summary[key])}, its results count {counts[key]}"
                for key in SUMMARY_KEYS if key in self.summary and int(self.summary[key]) != counts[key]]


def _check_numbers(problems, where, mapping, keys, times=False):
    """Each of keys present in mapping must be a number (or a non-finite string), not negative
    when it is a time; converts them in place."""
    for key in keys:
        if key in mapping and mapping[key] is not None:
            try:
                mapping[key] = strict_number(mapping[key])
            except ValueError as error:
                problems.add(where, f"{key}: {error}")
                continue
            if times and mapping[key] < 0:
                problems.add(where, f"{key}: a time cannot be negative ({mapping[key]!r})")


_TIMING_KEYS = ("repeats", "rotated_copies", "median_s", "lower_quartile_s", "upper_quartile_s", "min_s", "max_s",
                "pace_median_s", "busy_fraction")
_WORST_KEYS = ("output", "index", "expected", "actual", "error", "bound")
CEILING_KEYS = ("copy_bytes_per_s", "host_to_device_bytes_per_s", "fma_flops_per_s", "gemm_flops_per_s",
                "gemm_tf32_flops_per_s", "gemm_f16_flops_per_s", "gemm_bf16_flops_per_s", "gemm_f64_flops_per_s",
                "gemm_fp8_e4m3_flops_per_s")  # a GEMM rate per mode (docs/results.md)


def _check_timing(problems, where, timing):
    if not isinstance(timing, dict):
        problems.add(where, f"timing: not an object: {_short(timing)}")
        return
    for part in ("kernel", "end_to_end"):
        figures = timing.get(part)
        if figures is None and part == "end_to_end":
            continue
        if not isinstance(figures, dict):
            problems.add(where, f"timing.{part}: " + ("missing" if figures is None else
                                                      f"not an object: {_short(figures)}"))
            continue
        if "median_s" not in figures:
            problems.add(where, f"timing.{part}.median_s: missing")
        _check_numbers(problems, f"{where}: timing.{part}", figures, _TIMING_KEYS, times=True)
        if "back_to_back" in figures and not isinstance(figures["back_to_back"], bool):
            problems.add(where, f"timing.{part}.back_to_back: not true or false: {_short(figures['back_to_back'])}")
        for key in ("round_medians_s", "round_pace_medians_s"):  # an interleaved run's (kcs_interleave.py)
            rounds = figures.get(key)
            if rounds is None:
                continue
            if not isinstance(rounds, list):
                problems.add(where, f"timing.{part}.{key}: not a list: {_short(rounds)}")
                continue
            for index, value in enumerate(rounds):
                try:
                    rounds[index] = None if value is None else strict_number(value)
                except ValueError as error:
                    problems.add(where, f"timing.{part}.{key}[{index}]: {error}")
                    break
                if rounds[index] is not None and (not math.isfinite(rounds[index]) or rounds[index] < 0):
                    problems.add(where, f"timing.{part}.{key}[{index}]: not a time or null: {value!r}")
                    break
        samples = figures.get("samples_s")
        if samples is None:
            continue
        if not isinstance(samples, list):
            problems.add(where, f"timing.{part}.samples_s: not a list: {_short(samples)}")
            continue
        for index, sample in enumerate(samples):
            try:
                value = strict_number(sample)
            except ValueError as error:
                problems.add(where, f"timing.{part}.samples_s[{index}]: {error}")
                break
            if not math.isfinite(value) or value < 0:
                problems.add(where, f"timing.{part}.samples_s[{index}]: not a time: {sample!r}")
                break
            samples[index] = value
    _check_numbers(problems, f"{where}: timing", timing,
                   ("kernel_bytes_per_s", "kernel_flops_per_s", "end_to_end_bytes_per_s",
                    "end_to_end_fraction_of_host_to_device"))
    ceiling = timing.get("ceiling")
    if ceiling is not None:
        if isinstance(ceiling, dict):
            _check_numbers(problems, f"{where}: timing.ceiling", ceiling,
                           ("achieved_per_s", "ceiling_per_s", "fraction"))
        else:
            problems.add(where, f"timing.ceiling: not an object: {_short(ceiling)}")


def _check_histogram(problems, where, histogram):
    """A "fraction_histogram": log2_upper (numbers, rising), counts (as many counts) and above (a
    count); counts[i] elements used between 2^(log2_upper[i]-1) and 2^log2_upper[i] of their bound
    (counts[0] everything below too), above the elements outside it."""
    if not isinstance(histogram, dict):
        problems.add(where, f"fraction_histogram: not an object: {_short(histogram)}")
        return
    uppers, counts = histogram.get("log2_upper"), histogram.get("counts")
    if not isinstance(uppers, list) or not uppers:
        problems.add(where, f"fraction_histogram.log2_upper: not a list of numbers: {_short(uppers)}")
        return
    # Each check first in C loops over what JSON gives (ints and floats), then item by item.
    numbers = set(map(type, uppers)) <= {int, float} or \
        all(isinstance(u, (int, float)) and not isinstance(u, bool) for u in uppers)
    if not numbers or any(map(operator.le, uppers[1:], uppers)):
        problems.add(where, f"fraction_histogram.log2_upper: not rising numbers: {_short(uppers)}")
    if not isinstance(counts, list) or len(counts) != len(uppers):
        problems.add(where, f"fraction_histogram.counts: not a list of {len(uppers)} counts (one per log2_upper): "
                            f"{_short(counts)}")
    elif not ((set(map(type, counts)) <= {int} and min(counts) >= 0) or all(_is_count(c) for c in counts)):
        problems.add(where, f"fraction_histogram.counts: not counts: {_short(counts)}")
    if not _is_count(histogram.get("above")):
        problems.add(where, f"fraction_histogram.above: not a count: {_short(histogram.get('above'))}")


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_expected(problems, where, result):
    expected = result.get("expected")
    if expected is None:
        return
    if not isinstance(expected, dict):
        problems.add(where, f"expected: not an object: {_short(expected)}")
        return
    if expected.get("outcome") not in EXPECTED_OUTCOMES:
        problems.add(where, f"expected.outcome: {_short(expected.get('outcome'))}, not one of "
                            f"{', '.join(EXPECTED_OUTCOMES)}")
    if not isinstance(expected.get("reason"), str) or not expected["reason"].strip():
        problems.add(where, "expected.reason: missing or empty (an expectation nobody can explain is a "
                            "failure hidden)")
    if not isinstance(expected.get("met"), bool):
        problems.add(where, f"expected.met: {_short(expected.get('met'))}, not true or false")
    elif expected["met"] and result.get("status") in STATUSES and expected.get("outcome") in EXPECTED_OUTCOMES:
        status, wanted = result["status"], expected["outcome"]
        if not (status == wanted or (wanted == "fail" and status == "error")):
            problems.add(where, f"expected.met is true, but the status {status!r} does not meet the expected "
                                f"{wanted!r}")
    for key in ("where",):
        if key in expected and not isinstance(expected[key], str):
            problems.add(where, f"expected.{key}: not a string: {_short(expected[key])}")
    if "unexpected_pass" in expected and not isinstance(expected["unexpected_pass"], bool):
        problems.add(where, f"expected.unexpected_pass: {_short(expected['unexpected_pass'])}, not true or false")


def _describe(index, result):
    """'results[12] (case 'sumsq/f64-n7' on cuda:0)': where a result is in its file."""
    if not isinstance(result, dict):
        return f"results[{index}]"
    case, device = result.get("case"), result.get("device")
    text = f" (case {case!r}" if isinstance(case, str) and case else ""
    if text and isinstance(device, str):
        text += f" on {device}"
    return f"results[{index}]" + (text + ")" if text else "")


def _check_result(problems, index, result):
    where = _describe(index, result)
    if not isinstance(result, dict):
        problems.add(where, f"not an object: {_short(result)}")
        return
    if not isinstance(result.get("case"), str):
        problems.add(where, "case: " + ("missing" if "case" not in result
                                        else f"not a string: {_short(result['case'])}"))
    status = result.get("status")
    if status not in STATUSES:
        problems.add(where, "status: " + ("missing" if status is None else
                                          f"{_short(status)} is not one of {', '.join(STATUSES)}"))
    for key in ("message", "file", "backend", "device", "kernel", "op", "dtype"):
        if result.get(key) is not None and not isinstance(result[key], str):
            problems.add(where, f"{key}: not a string: {_short(result[key])}")
    _check_numbers(problems, where, result, ("line", "bytes", "flops"))
    explanation = result.get("explanation")
    if explanation is not None and not (isinstance(explanation, dict) and isinstance(explanation.get("text"), str)):
        problems.add(where, f"explanation: not an object with a text: {_short(explanation)}")
    accuracy = result.get("accuracy")
    if accuracy is not None:
        if not isinstance(accuracy, dict):
            problems.add(where, f"accuracy: not an object: {_short(accuracy)}")
        else:
            _check_numbers(problems, f"{where}: accuracy", accuracy,
                           ("checked", "failures", "unwritten", "fraction_of_bound"))
            worst = accuracy.get("worst")
            if worst is not None and not isinstance(worst, dict):
                problems.add(where, f"accuracy.worst: not an object: {_short(worst)}")
            elif worst:
                _check_numbers(problems, f"{where}: accuracy.worst", worst, _WORST_KEYS)
            if accuracy.get("fraction_histogram") is not None:
                _check_histogram(problems, f"{where}: accuracy", accuracy["fraction_histogram"])
    check = result.get("check")
    if isinstance(check, dict) and check.get("fraction_histogram") is not None:
        _check_histogram(problems, f"{where}: check", check["fraction_histogram"])
    for key in ("bound_tight", "kernel_library"):
        if result.get(key) is not None and (not isinstance(result[key], str) or not result[key].strip()):
            problems.add(where, f"{key}: not a text: {_short(result[key])}")
    if result.get("timing") is not None:
        _check_timing(problems, where, result["timing"])
    _check_expected(problems, where, result)


# ---- the checks' fast path -------------------------------------------------------------------
# A fleet merge checks millions of results (report/kcs_fleet.py): _check_results first asks
# _clean_result, which looks at the same fields by cheaper means (the exact type of each value,
# a bool being of type bool, not int; lists' item types in C loops; no message written unless
# needed) and makes the same conversions (numbers to floats). It answers True only where
# _check_result would find nothing wrong; at anything else (a wrong or unusual type, a string for
# a number other than the runner's "nan", "inf" and "-inf", a negative time, an expectation, an
# interleaved run's rounds) it answers False and _check_result looks at that result and names
# what is wrong. So the fast path never decides that a result is malformed, nor how: it can
# only pass what the full checks pass (report/test_kcs_report.py, FastChecks, feeds both the
# same malformed records). Converting a valid number twice changes nothing, so what it
# converted before answering False is harmless.

_NUMBER_TYPES = frozenset((int, float))
_TEXT_OR_NONE = frozenset((str, type(None)))
_INT_TYPE = frozenset((int,))
_STATUS_SET = frozenset(STATUSES)
_RESULT_TEXT_KEYS = ("message", "file", "backend", "device", "kernel", "op", "dtype")
_RESULT_NUMBER_KEYS = ("line", "bytes", "flops")
_ACCURACY_KEYS = ("checked", "failures", "unwritten", "fraction_of_bound")
_TIMING_RATE_KEYS = ("kernel_bytes_per_s", "kernel_flops_per_s", "end_to_end_bytes_per_s",
                     "end_to_end_fraction_of_host_to_device")
_CEILING_REACHED_KEYS = ("achieved_per_s", "ceiling_per_s", "fraction")
_RISING = [[]]  # the last fraction histogram bounds found rising (a copy): a file repeats them


def _floats(mapping, keys, times=False):
    """_check_numbers passing: each of keys absent, null, a float or an int (made a float) or
    "nan", "inf", "-inf" as the runner writes them (made floats), and not negative when a time.
    False at anything else (another string, a bool)."""
    for key in keys:
        value = mapping.get(key)
        if value is None:
            continue
        kind = type(value)
        if kind is int:
            mapping[key] = value = float(value)
        elif kind is not float:
            value = _NONFINITE.get(value) if kind is str else None  # strict_number judges the rest
            if value is None:
                return False
            mapping[key] = value
        if times and value < 0:
            return False
    return True


def _rising(uppers):
    """Numbers (their types checked), each above the one before, as _check_histogram asks: equal
    to the last ones found so, or compared pair by pair."""
    if uppers == _RISING[0]:
        return True
    if any(map(operator.le, uppers[1:], uppers)):
        return False
    _RISING[0] = list(uppers)
    return True


def _clean_histogram(histogram):
    """_check_histogram passing."""
    if type(histogram) is not dict:
        return False
    uppers, counts, above = histogram.get("log2_upper"), histogram.get("counts"), histogram.get("above")
    return (type(uppers) is list and len(uppers) > 0 and type(counts) is list and len(counts) == len(uppers)
            and type(above) is int and above >= 0
            and _NUMBER_TYPES.issuperset(map(type, uppers)) and _INT_TYPE.issuperset(map(type, counts))
            and min(counts) >= 0 and _rising(uppers))


def _clean_timing(timing):
    """_check_timing passing, its numbers converted."""
    if type(timing) is not dict:
        return False
    for part in ("kernel", "end_to_end"):
        figures = timing.get(part)
        if figures is None and part == "end_to_end":
            continue
        if (type(figures) is not dict or "median_s" not in figures or not _floats(figures, _TIMING_KEYS, True)
                or figures.get("round_medians_s") is not None or figures.get("round_pace_medians_s") is not None):
            return False
        samples = figures.get("samples_s")
        if samples is not None:
            if (type(samples) is not list or not _NUMBER_TYPES.issuperset(map(type, samples))
                    or not all(map(math.isfinite, samples)) or (samples and min(samples) < 0)):
                return False
            samples[:] = map(float, samples)
    ceiling = timing.get("ceiling")
    return (_floats(timing, _TIMING_RATE_KEYS) and
            (ceiling is None or (type(ceiling) is dict and _floats(ceiling, _CEILING_REACHED_KEYS))))


def _clean_result(result):
    """True where _check_result finds nothing wrong with result, its numbers converted as
    _check_result converts them; False where _check_result must look (see above). May raise
    OverflowError (an integer too large for a float): _check_result must look."""
    if type(result) is not dict:
        return False
    get = result.get
    status = get("status")
    if (type(get("case")) is not str or type(status) is not str or status not in _STATUS_SET
            or not _TEXT_OR_NONE.issuperset(map(type, map(get, _RESULT_TEXT_KEYS)))
            or not _floats(result, _RESULT_NUMBER_KEYS) or get("expected") is not None):
        return False
    explanation = get("explanation")
    if explanation is not None and (type(explanation) is not dict or type(explanation.get("text")) is not str):
        return False
    accuracy = get("accuracy")
    if accuracy is not None:
        if type(accuracy) is not dict or not _floats(accuracy, _ACCURACY_KEYS):
            return False
        worst = accuracy.get("worst")
        if worst is not None and (type(worst) is not dict or not _floats(worst, _WORST_KEYS)):
            return False
        histogram = accuracy.get("fraction_histogram")
        if histogram is not None and not _clean_histogram(histogram):
            return False
    check = get("check")
    if check is not None:
        if type(check) is dict:
            histogram = check.get("fraction_histogram")
            if histogram is not None and not _clean_histogram(histogram):
                return False
        elif isinstance(check, dict):  # a dict of another type: _check_result looks into it
            return False
    for key in ("bound_tight", "kernel_library"):
        value = get(key)
        if value is not None and (type(value) is not str or not value.strip()):
            return False
    timing = get("timing")
    return timing is None or _clean_timing(timing)


def _check_device(problems, index, device):
    where = f"devices[{index}]"
    if not isinstance(device, dict):
        problems.add(where, f"not an object: {_short(device)}")
        return
    for key in ("id", "backend"):
        if not isinstance(device.get(key), str) or not device[key]:
            problems.add(where, f"{key}: " + ("missing" if key not in device
                                              else f"not a string: {_short(device[key])}"))
    for key in ("name", "platform", "vendor", "driver_version", "runtime_version", "details"):
        if device.get(key) is not None and not isinstance(device[key], str):
            problems.add(where, f"{key}: not a string: {_short(device[key])}")
    _check_numbers(problems, where, device, ("index", "memory_bytes"))
    ceilings = device.get("ceilings")
    if ceilings is None:
        device["ceilings"] = {}
    elif not isinstance(ceilings, dict):
        problems.add(where, f"ceilings: not an object: {_short(ceilings)}")
    else:
        _check_numbers(problems, f"{where}: ceilings", ceilings, CEILING_KEYS)
        not_asked = ceilings.get("not_measured_in_this_run")
        if not_asked is not None and not (isinstance(not_asked, list) and all(isinstance(k, str) for k in not_asked)):
            problems.add(where, f"ceilings.not_measured_in_this_run: not a list of ceiling keys: {_short(not_asked)}")


def _check_document(problems, data, fast=True):
    """Checks the whole document, converting numbers in place; problems collects what is wrong,
    in the document's order (devices, results, the rest). fast=False: every result through
    _check_result, none through _clean_result first (the tests compare the two)."""
    rest = _Problems(problems.path)
    _check_devices(problems, data)
    _check_top_level(rest, data)
    for _ in _check_results(problems, data["results"], fast):
        pass
    problems.items += rest.items


def _check_devices(problems, data):
    devices = data.get("devices", [])
    if devices is None:
        devices = data["devices"] = []
    if not isinstance(devices, list):
        problems.add("devices", f"not a list: {_short(devices)}")
        data["devices"] = []
    else:
        seen = {}
        for index, device in enumerate(devices):
            _check_device(problems, index, device)
            if isinstance(device, dict) and isinstance(device.get("id"), str):
                if device["id"] in seen:
                    problems.add(f"devices[{index}]",
                                 f"id {device['id']!r} already used by devices[{seen[device['id']]}]")
                seen.setdefault(device["id"], index)


def _check_results(problems, results, fast=True, run=None):
    """Checks each result (through _clean_result first where fast) and that no two are of one
    case, backend, kernel and device; a generator. Given the run, it normalises each result and
    yields it once checked, until a problem is found (in this file, so far): see checked_results."""
    seen = {}
    found = problems.items
    for index, result in enumerate(results):
        try:
            clean = fast and _clean_result(result)
        except OverflowError:
            clean = False
        key = None
        if clean:  # case a text, backend, kernel and device texts or null
            get = result.get
            key = (result["case"], get("backend"), get("kernel"), get("device"))
        else:
            _check_result(problems, index, result)
            if isinstance(result, dict):
                key = tuple(result.get(k) for k in ("case", "backend", "kernel", "device"))
                if not all(isinstance(k, (str, type(None))) for k in key):
                    key = None
        # A problem found in a file before any case ran (no case) is told apart by its file and line.
        if key is not None and key[0]:
            first = seen.setdefault(key, index)
            if first != index:
                problems.add(_describe(index, result), f"the same case, backend, kernel and device as "
                                                       f"results[{first}]: which one counts?")
        if run is not None:
            if found:
                run = None  # the file is refused: nothing more is normalised or yielded
            else:
                _normalise_result(result, run)
                yield result


def _check_top_level(problems, data):
    """The document's records besides its devices and results."""
    summary = data.get("summary")
    if summary is not None:
        if not isinstance(summary, dict):
            problems.add("summary", f"not an object: {_short(summary)}")
        else:
            for key in SUMMARY_KEYS:
                value = summary.get(key)
                if key in summary and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                    problems.add("summary", f"{key}: not a count: {_short(value)}")
    comparability = data.get("comparability")
    if comparability is not None:
        if not isinstance(comparability, dict):
            problems.add("comparability", f"not an object: {_short(comparability)}")
        else:
            for key, value in comparability.items():
                if isinstance(value, (dict, list)):
                    problems.add("comparability", f"{key}: not a string: {_short(value)}")
    for key in ("machine", "kcs", "options"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            problems.add(key, f"not an object: {_short(data[key])}")
    interleaved = data.get("interleaved")  # a side of an interleaved comparison (kcs_interleave.py)
    if interleaved is not None:
        if not isinstance(interleaved, dict):
            problems.add("interleaved", f"not an object: {_short(interleaved)}")
        else:
            if not isinstance(interleaved.get("id"), str) or not interleaved["id"]:
                problems.add("interleaved", f"id: not a text: {_short(interleaved.get('id'))}")
            if not _is_count(interleaved.get("rounds")) or not interleaved["rounds"]:
                problems.add("interleaved", f"rounds: not a count of rounds: {_short(interleaved.get('rounds'))}")


def _normalise_result(result, run):
    result["message"] = result.get("message") or ""
    name = result["case"]
    # The page a result belongs to is its case file's stem, which is the case name's prefix.
    if "/" in name:
        result["stem"] = name.split("/", 1)[0]
    elif result.get("file"):
        result["stem"] = os.path.splitext(os.path.basename(str(result["file"])))[0]
    else:
        result["stem"] = name or "unknown"
    if not result.get("op"):
        result["op"] = result["stem"]
    if not isinstance(result.get("accuracy"), dict):
        result["accuracy"] = None
    if not isinstance(result.get("timing"), dict):
        result["timing"] = None
    device_id = result.get("device")
    device = run.devices.get(str(device_id)) if device_id is not None else None
    if device is None and device_id is not None:
        # A result naming a device the file does not list: kept, described by its id.
        device = {"id": str(device_id), "backend": result.get("backend"), "name": str(device_id),
                  "ceilings": {}}
        run.devices[str(device_id)] = device
    result["device_record"] = device
    result["run"] = run


def load_results(path, label=None):
    """Reads and checks one results file; raises ResultsError naming the file and the causes."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise ResultsError(f"{path}: cannot read: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise ResultsError(f"{path}: not valid JSON: not UTF-8 text ({error.reason} at byte "
                           f"{error.start})") from error
    if not text.strip():
        raise ResultsError(f"{path}: empty file{' (only white space)' if text else ''}: not a results file "
                           "(a run that was stopped before it wrote its results leaves one)")
    check_depth(text, path)
    try:
        data = json.loads(text)
    except ValueError as error:
        raise ResultsError(f"{path}: not valid JSON: {error}") from error
    except RecursionError:  # not reached after check_depth; kept so that no traceback can escape
        raise ResultsError(f"{path}: JSON nested too deeply to read: not a results file") from None
    return results_from_data(data, path, label)


def results_from_data(data, path="<memory>", label=None):
    """Checks and normalises an already parsed results document (see load_results)."""
    run, results = checked_results(data, path, label)
    for _ in results:
        pass
    return run


def checked_results(data, path="<memory>", label=None):
    """results_from_data, its checks and messages, made as the caller goes through the results:
    (run, results), results yielding each result of run once it is checked and normalised. After
    the last it raises ResultsError where the file has any problem, having yielded nothing from
    the first result found wrong on: what the caller made of the results then goes with the
    file. For a caller that reduces each result (kcs_fleet): one pass over a file's objects, each
    still in the processor's cache, not a second pass after the checks."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not a kcs results file (no \"schema\": \"{SCHEMA}\")")
    if data.get("version") not in VERSIONS:
        raise ResultsError(f"{path}: results schema version {data.get('version')!r}; "
                           f"this report reads versions {', '.join(map(str, VERSIONS))}")
    if not isinstance(data.get("results"), list):
        raise ResultsError(f"{path}: no \"results\" list")
    problems, rest = _Problems(path), _Problems(path)
    _check_devices(problems, data)
    _check_top_level(rest, data)
    run = None
    if not problems.items and not rest.items:
        run = Run(path, data, label or os.path.basename(path))
    results = _checked(problems, rest, data["results"], run)
    if run is None:
        for _ in results:  # raises, every problem named
            pass
    return run, results


def _checked(problems, rest, results, run):
    yield from _check_results(problems, results, True, run)
    problems.items += rest.items  # in the document's order: devices, results, the rest
    problems.raise_if_any()


def outcome(result):
    """A result's status read with its expectation: pass, fail, error, skip; xfail, xerror, xskip
    (an expected failure, error or skip that happened); xpass (expected not to pass, but passed:
    the runner writes it as a fail)."""
    status = result["status"]
    expected = result.get("expected")
    if not expected:
        return status
    if expected.get("met"):
        return {"fail": "xfail", "error": "xerror", "skip": "xskip"}.get(status, status)
    if status == "fail" and (expected.get("unexpected_pass") is True or
                             ("unexpected_pass" not in expected and result["message"].startswith("unexpected pass"))):
        return "xpass"
    return status


def summary_counts(results):
    """passed, failed, skipped, errors, expected, unexpected_passes as the runner counts them
    (harness/results.c): an expected failure or error counts as passed and as expected, an
    expected skip as skipped and expected, an unexpected pass as failed."""
    counts = dict.fromkeys(SUMMARY_KEYS, 0)
    for result in results:
        kind = outcome(result)
        counts[COUNTED_AS[kind]] += 1
        if kind in ("xfail", "xerror", "xskip"):
            counts["expected"] += 1
        elif kind == "xpass":
            counts["unexpected_passes"] += 1
    return counts


def device_uuid(device):
    """The uuid that a device's "details" ("key=value; ...") gives, or None."""
    match = re.search(r"(?:^|[;,\s])uuid=([^;,\s]+)", str((device or {}).get("details") or ""))
    return match.group(1) if match else None


def label_runs(paths):
    """Short, distinct labels for several results files: their base names, made unique."""
    labels = []
    for index, path in enumerate(paths):
        base = os.path.basename(path)
        labels.append(base if [os.path.basename(p) for p in paths].count(base) == 1
                      else f"{base} #{index + 1}")
    return labels


def device_name_key(result):
    """How the pages know a device across files: its name, plus the index among same-named
    devices of its backend in its own file when a machine has several identical cards. (The
    baseline comparison matches devices more carefully: kcs_compare.match_devices.)"""
    device = result.get("device_record")
    if device is None:
        return ""
    name = str(device.get("name") or device.get("id"))
    run = result["run"]
    twins = sorted((d for d in run.devices.values()
                    if d.get("backend") == device.get("backend")
                    and str(d.get("name") or d.get("id")) == name),
                   key=lambda d: (number(d.get("index")) or 0, str(d.get("id"))))
    if len(twins) > 1:
        return f"{name} #{twins.index(device) + 1}"
    return name


def result_key(result):
    """(case, backend, kernel, device name): how the pages find a case's latest result."""
    return (result["case"], result.get("backend") or "", result.get("kernel") or "",
            device_name_key(result))


def latest_by_key(runs, key=result_key):
    """One result per key over several runs, the newest run winning (by "created", then by order
    on the command line)."""
    order = sorted(range(len(runs)), key=lambda i: (runs[i].created, i))
    latest = {}
    for index in order:
        for result in runs[index].results:
            latest[key(result)] = result
    return latest


def kernel_timing(result):
    """The kernel timing dict of a timed result with a usable median, else None."""
    timing = result.get("timing")
    if not timing:
        return None
    kernel = timing.get("kernel")
    if not isinstance(kernel, dict):
        return None
    median = kernel.get("median_s")
    if median is None or not math.isfinite(median) or median <= 0:
        return None
    return kernel


def fraction_histogram(result):
    """The result's "fraction_histogram" (in its accuracy object, or a "check" object), or None
    where the file does not record one."""
    for holder in (result.get("accuracy"), result.get("check")):
        if isinstance(holder, dict) and isinstance(holder.get("fraction_histogram"), dict):
            return holder["fraction_histogram"]
    return None


def finite(value):
    """True for a finite float (not None, NaN or infinite)."""
    return isinstance(value, float) and math.isfinite(value)


def first_difference_text(differing):
    """One line for an entry of a disagreement's "differing" (docs/results.md): where the rerun
    found the device's outputs first differ from its peer's, with both values and their bits, and
    whether the deviation reproduced; or why that is not known. "" for a file written before the
    runner looked (no "rerun")."""
    if not isinstance(differing, dict) or not differing.get("rerun"):
        return ""
    rerun = str(differing["rerun"])
    if rerun == "not run":
        return f"not sought: {differing.get('rerun_reason', '')}"
    how = "reproduced on a rerun" if rerun == "reproduced" else "intermittent: the rerun did not reproduce it"
    found = differing.get("first_difference")
    if not isinstance(found, dict):
        return f"not found: {differing.get('first_difference_reason', '')} ({how})"
    where = f"{found.get('output')}[{found.get('index')}]"
    coordinates = found.get("coordinates")
    if isinstance(coordinates, list):
        where += " (" + ", ".join(str(c) for c in coordinates) + ")"
    return (f"{where} {found.get('dtype')}: {differing.get('peer')} has {found.get('peer_value')} "
            f"({found.get('peer_bits')}), {differing.get('device')} has {found.get('value')} "
            f"({found.get('bits')}); {how}")
