"""Reading kcs results files (docs/results.md, schema versions 1 and 2) for the report.

load_results() checks the schema, turns the "nan"/"inf"/"-inf" strings that JSON forces on the
runner back into floats, and attaches to each result its device record, so that the rest of the
report never looks a device up by id again. Device ids ("opencl:1") are only unique within one
file; across files a device is known by its backend and name, which is what the baseline
comparison keys on. Version 2 adds to each timing the runner's "ceiling": which ceiling of the
device bounds the op and the fraction of it reached; a version-1 result has none.
"""

import json
import math
import os

SCHEMA = "kcs-results"
VERSIONS = (1, 2)

STATUSES = ("pass", "fail", "error", "skip")

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf,
              "+inf": math.inf, "infinity": math.inf, "-infinity": -math.inf}


class ResultsError(Exception):
    """A results file that cannot be read or is not a kcs results file of a known version."""


def number(value):
    """A JSON number, or one of the strings the runner writes for NaN and infinities, as a float.
    None (absent) stays None; anything else that is not a number becomes NaN."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _NONFINITE:
            return _NONFINITE[text]
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def _numbers(mapping, keys):
    if isinstance(mapping, dict):
        for key in keys:
            if key in mapping:
                mapping[key] = number(mapping[key])


_TIMING_KEYS = ("repeats", "median_s", "lower_quartile_s", "upper_quartile_s", "min_s", "max_s")
_WORST_KEYS = ("output", "index", "expected", "actual", "error", "bound")


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
        self.devices = {}
        for device in data.get("devices") or []:
            if isinstance(device, dict) and device.get("id") is not None:
                self.devices[str(device["id"])] = device
        self.results = [r for r in data.get("results") or [] if isinstance(r, dict)]


def _normalise_device(device):
    device["memory_bytes"] = number(device.get("memory_bytes"))
    ceilings = device.get("ceilings")
    if isinstance(ceilings, dict):
        for key in list(ceilings):
            if key != "method" and not isinstance(ceilings[key], (dict, list)):  # method is prose
                ceilings[key] = number(ceilings[key])
    else:
        device["ceilings"] = {}


def _normalise_result(result, run):
    result["status"] = str(result.get("status") or "error")
    result["message"] = str(result.get("message") or "")
    name = str(result.get("case") or "")
    result["case"] = name
    # The page a result belongs to is its case file's stem, which is the case name's prefix.
    if "/" in name:
        result["stem"] = name.split("/", 1)[0]
    elif result.get("file"):
        result["stem"] = os.path.splitext(os.path.basename(str(result["file"])))[0]
    else:
        result["stem"] = name or "unknown"
    if not result.get("op"):
        result["op"] = result["stem"]
    result["bytes"] = number(result.get("bytes"))
    result["flops"] = number(result.get("flops"))
    accuracy = result.get("accuracy")
    if isinstance(accuracy, dict):
        _numbers(accuracy, ("checked", "failures", "unwritten", "fraction_of_bound"))
        _numbers(accuracy.get("worst"), _WORST_KEYS)
    else:
        result["accuracy"] = None
    timing = result.get("timing")
    if isinstance(timing, dict):
        _numbers(timing.get("kernel"), _TIMING_KEYS)
        _numbers(timing.get("end_to_end"), _TIMING_KEYS)
        _numbers(timing, ("kernel_bytes_per_s", "kernel_flops_per_s"))
        _numbers(timing.get("ceiling"), ("achieved_per_s", "ceiling_per_s", "fraction"))
    else:
        result["timing"] = None
    device_id = result.get("device")
    device = run.devices.get(str(device_id)) if device_id is not None else None
    if device is None and device_id is not None:
        # A result naming a device the file does not list: keep it, described by its id.
        device = {"id": str(device_id), "backend": result.get("backend"), "name": str(device_id),
                  "ceilings": {}}
        run.devices[str(device_id)] = device
    result["device_record"] = device
    result["run"] = run


def load_results(path, label=None):
    """Reads and checks one results file; raises ResultsError naming the file and the cause."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as error:
        raise ResultsError(f"{path}: cannot read: {error.strerror or error}") from error
    except (ValueError, UnicodeDecodeError) as error:
        raise ResultsError(f"{path}: not valid JSON: {error}") from error
    return results_from_data(data, path, label)


def results_from_data(data, path="<memory>", label=None):
    """Checks and normalises an already parsed results document (see load_results)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not a kcs results file (no \"schema\": \"{SCHEMA}\")")
    if data.get("version") not in VERSIONS:
        raise ResultsError(f"{path}: results schema version {data.get('version')!r}; "
                           f"this report reads versions {', '.join(map(str, VERSIONS))}")
    if not isinstance(data.get("results"), list):
        raise ResultsError(f"{path}: no \"results\" list")
    run = Run(path, data, label or os.path.basename(path))
    for device in run.devices.values():
        _normalise_device(device)
    for result in run.results:
        _normalise_result(result, run)
    return run


def label_runs(paths):
    """Short, distinct labels for several results files: their base names, made unique."""
    labels = []
    for index, path in enumerate(paths):
        base = os.path.basename(path)
        labels.append(base if [os.path.basename(p) for p in paths].count(base) == 1
                      else f"{base} #{index + 1}")
    return labels


def device_name_key(result):
    """How a device is known across files: its name, plus the index among same-named devices of
    its backend in its own file when a machine has several identical cards."""
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
    """(case, backend, kernel, device name): what the baseline comparison matches on."""
    return (result["case"], result.get("backend") or "", result.get("kernel") or "",
            device_name_key(result))


def latest_by_key(runs):
    """One result per result_key over several runs, the newest run winning (by "created", then
    by order on the command line)."""
    order = sorted(range(len(runs)), key=lambda i: (runs[i].created, i))
    latest = {}
    for index in order:
        for result in runs[index].results:
            latest[result_key(result)] = result
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


def finite(value):
    """True for a finite float (not None, NaN or infinite)."""
    return isinstance(value, float) and math.isfinite(value)
