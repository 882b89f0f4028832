#!/usr/bin/python3
"""kcs_report: turn kcs results files into a self-contained HTML report, and compare with a baseline.

    /usr/bin/python3 report/kcs_report.py RESULTS.json [RESULTS.json ...]
        [--baseline BASE.json [--min-effect 0.05] [--significance 0.01] [--map OLD=NEW ...] [--allow-unmatched]]
        [--cases DIR] [--kcs RUNNER | --case-list FILE] [--output DIR]

writes DIR/index.html and DIR/<op>.html for each case file. index.html puts first what a GPU
engineer reads first: a summary (what failed, what regressed, how close to its ceilings each
device came, the most of its error bound a pass used), then the comparison with the baseline, the
failures, the case x device matrix collapsed to its exceptions, a roofline per device and the
perf cases' peers side by side, the accuracy views, and last the devices and the results files.
Each op page is cases/<op>.md rendered, with each kcs-case block replaced by that case's latest
results (fraction of the bound used with its distribution, the worst element, the rate against
its ceiling), then the op's peers. The pages load nothing: the rooflines are inline SVG. A
block's fields (name, dtype, sizes, inputs, ...) are the runner's own reading of the case file,
`kcs list --json` (docs/runner.md), matched to the block by its line: the report has no parser
of case blocks, so a block the runner refuses (a duplicate key, say) shows the runner's reason.
docs/report.md is the reader's account of every view.

DIR defaults to kcs-report in the current directory, as the runner's own outputs do, so that an
ad-hoc comparison never replaces the suite's report (`ninja report` writes build/report with
--output); the path printed last says where it went.

Given several results files (two drivers, two cards, two dates) the performance and accuracy views
overlay them, each later file's figure with its ratio to the first's; with --baseline the
baseline is the first (kcs_views.py says how results are lined up). What each view computes is in
kcs_views.py; the markup is in report/templates/ (jinja2, autoescaped: a value reaches the page
escaped unless it is Markup); the roofline is drawn by kcs_plots.py; the case files' Markdown is
rendered by markdown-it-py.

With --baseline it compares (kcs_compare.py, docs/comparing.md): devices matched by uuid, else
backend + index + name, or --map; correctness with expectations honoured; speed against the
noise both runs measured and a minimum effect (round by round for two sides of one interleave,
kcs_interleave.py); warnings where ceilings, builds or drivers differ; and it prints every change
and everything on one side only by name, then a one-line verdict.

Exit status (docs/comparing.md): 0 report written, and no regression against the baseline;
2 bad input: a bad option, a results file that cannot be read or is malformed (each problem
named: file, where, what), a baseline of which nothing matched, or something not validated (a
device that nothing matched, a result of the baseline that the new run lacks or now skips; each
named) unless --allow-unmatched; 3 a correctness regression (a pass now fails or errors, not as
an expectation says), whatever the speed; 4 speed only: something slower, nothing else wrong.
Reads results schema versions 1 and 2 (docs/results.md). The fraction of a device ceiling that a
timed result reached is the one the runner wrote in it (version 2); a version-1 result shows none,
and fields a file lacks (a check's histogram, an OpenCL GEMM ceiling) are shown as not recorded or
not measured.
"""

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kcs_plots  # noqa: E402
import kcs_views  # noqa: E402
from kcs_compare import (EXIT_BAD_INPUT, EXIT_OK, ORDER_CORRECTNESS, ORDER_SPEED, CompareError,  # noqa: E402
                         Comparison, Options, parse_map)
from kcs_results import (OUTCOMES, ResultsError, finite, first_difference_text, fraction_histogram,  # noqa: E402
                         kernel_timing, label_runs, latest_by_key, load_results, number, outcome, summary_counts)

EXIT_USAGE = EXIT_BAD_INPUT
REPOSITORY = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
DEFAULT_OUTPUT = "kcs-report"  # in the current directory, as kcs-results.json and kcs-failures are
# The runner's summary counts (kcs_results.summary_counts), with the status whose colour each takes.
COUNTS = (("passed", "pass"), ("failed", "fail"), ("skipped", "skip"), ("errors", "error"))
# What an outcome badge says and, for expectations, what it means.
OUTCOME_TEXT = {"xfail": "expected fail", "xerror": "expected error", "xskip": "expected skip",
                "xpass": "unexpected pass"}


# ---- formatting -------------------------------------------------------------------------------

def fmt_si(value, unit, digits=3):
    """1.23e9, 'B/s' -> '1.23 GB/s'; '-' for None, 'nan'/'inf' spelled out."""
    if value is None:
        return "–"
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return f"0 {unit}"
    prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
                (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]
    for scale, prefix in prefixes:
        if abs(value) >= scale * 0.9995:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def fmt_time(seconds):
    """A duration in s, ms, µs or ns."""
    return fmt_si(seconds, "s")


def fmt_bytes_binary(value):
    """Memory sizes in GiB/MiB."""
    if value is None or not math.isfinite(value):
        return "–"
    for scale, unit in ((2 ** 40, "TiB"), (2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def fmt_fraction(value):
    """A fraction of a bound or ceiling: 0 (exact), 0.42, 8.7e-04, nan."""
    if value is None:
        return "–"
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0 (exact)"
    if 0.999 < value < 1:
        return f"{value:.15g}"  # under the bound, if only just: never rounded up to 1
    if 0.01 <= abs(value) < 1000:
        return f"{value:.3g}"
    return f"{value:.2e}"


def fmt_number(value):
    """A value as the shortest text that reads back to the same double."""
    if value is None:
        return "–"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def fmt_date(text):
    """'2026-11-26T02:30:00Z' -> '2026-11-26 02:30 UTC'; anything else as it is."""
    match = re.match(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::\d\d(?:\.\d+)?)?Z$", text or "")
    return f"{match.group(1)} {match.group(2)} UTC" if match else (text or "–")


def fmt_plural(count, noun):
    """3, 'device' -> '3 devices'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def fmt_percent(fraction):
    """0.02 -> '2%'."""
    return f"{fraction:.0%}"


def fmt_ratio(ratio):
    """A ratio of medians: '×1.03', or '–' when there is none."""
    return f"×{ratio:.3g}" if ratio is not None and math.isfinite(ratio) else "–"


def fmt_speedup(ratio):
    """How many times faster: '×3.88', '×131', '×1,960'; '–' when there is none."""
    if ratio is None or not math.isfinite(ratio):
        return "–"
    return f"×{ratio:,.0f}" if ratio >= 100 else f"×{ratio:.3g}"


def ratio_class(ratio, min_effect):
    """'slower' or 'faster' for a ratio of medians beyond the minimum effect, else ''."""
    if ratio is None or not math.isfinite(ratio):
        return ""
    return "slower" if ratio > 1 + min_effect else "faster" if ratio < 1 / (1 + min_effect) else ""


def fmt_machine(run):
    """The machine a results file was written on: host · cpu · cores · os kernel architecture."""
    machine = run.machine
    system = " ".join(str(x) for x in (machine.get("os"), machine.get("kernel"), machine.get("architecture")) if x)
    cores = f"{machine.get('cores')} cores" if machine.get("cores") else None
    return " · ".join(str(x) for x in (machine.get("hostname"), machine.get("cpu"), cores, system) if x)


def fmt_command(command):
    """The runner's command line."""
    return " ".join(str(c) for c in command) if isinstance(command, list) else str(command)


def fmt_options(options):
    """The runner's options as 'key=value, ...'."""
    return ", ".join(f"{k}={v}" for k, v in options.items()) if isinstance(options, dict) else ""


def fmt_source_line(result):
    """Where a result's case is: 'sumsq.md:40'."""
    line = number(result.get("line"))
    return os.path.basename(str(result["file"])) + (f":{fmt_number(line)}" if line is not None else "")


def status_class(status):
    """The CSS class of a status badge."""
    return re.sub(r"[^a-z]", "", status.lower()) or "unknown"


def case_anchor(name):
    """The id of a case's block on its op page."""
    return "case-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name.split("/", 1)[-1])


def page_name(stem):
    """The file name of an op page."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) + ".html"


# ---- the model: columns (devices of runs), series, cases ---------------------------------------

class Column:
    """One device of one results file: a column of the matrix, a colour in the plots."""

    def __init__(self, run, run_index, device, backend=None):
        self.run, self.run_index, self.device = run, run_index, device
        self.position = 0
        self.backend = str(device.get("backend") or "") if device else (backend or "")
        self.name = str(device.get("name") or device.get("id")) if device else "(no device)"
        self.driver = str(device.get("driver_version") or "") if device else ""
        # Results without a device: a backend built without a device here (its
        # cases are skipped with the reason), or a case's own (no backend: skipped
        # before any device ran it, or unreadable). The latter is no device, and
        # no view shows it as one (case_level).
        self.case_level = device is None and not backend
        self.label = (f"{self.backend}: {self.name}" if device else
                      f"{backend}: no device" if backend else "no device")

    def key(self):
        """How results find their column."""
        return (self.run_index, str(self.device.get("id")) if self.device else None,
                None if self.device else (self.backend or None))


class Model:
    """Everything the pages are built from."""

    def __init__(self, runs, baseline=None, comparison=None, cases_dir=None, min_effect=0.05, case_list=None):
        self.runs, self.baseline, self.comparison, self.cases_dir = runs, baseline, comparison, cases_dir
        # The runner's reading of the case files (kcs list --json), by file stem and line.
        self.case_blocks, self.case_problems = index_case_list(case_list)
        self.min_effect = min_effect
        self.columns = []
        index = {}
        for run_index, run in enumerate(runs):
            for device in run.devices.values():
                column = Column(run, run_index, device)
                index[column.key()] = column
                self.columns.append(column)
            deviceless = sorted({str(r.get("backend") or "") for r in run.results if r.get("device_record") is None})
            for backend in deviceless:
                column = Column(run, run_index, None, backend or None)
                index[column.key()] = column
                self.columns.append(column)
        for position, column in enumerate(self.columns):
            column.position = position
        self._disambiguate()
        for run_index, run in enumerate(runs):
            for result in run.results:
                device = result.get("device_record")
                result["column"] = index[(run_index, str(device.get("id")) if device else None,
                                          None if device else (str(result.get("backend") or "") or None))]
        if baseline is not None:
            # The baseline's results are overlaid on the others' (its devices are no columns of
            # the matrix or the summary, which show the files given without --baseline).
            own = {}
            for result in baseline.results:
                device = result.get("device_record")
                column = Column(baseline, -1, device, None if device else result.get("backend"))
                result["column"] = own.setdefault(column.key(), column)
        # The files overlaid in the performance and accuracy views, the first the one the others
        # are measured against: the baseline where there is one.
        self.lines = kcs_views.Lines(([baseline] if baseline is not None else []) + list(runs), comparison)
        self.op_colors = {}
        self.latest = latest_by_key(runs)
        # An op page for each case file with results: a case file no file ran has no page
        # (links to it go to the case file itself, rewrite_link).
        self.stems = sorted({r["stem"] for run in runs for r in run.results})
        self.case_order = self._case_order()
        self.plots = {}

    def _disambiguate(self):
        # Same backend and name in several files (a driver upgrade): add the driver, then the file.
        for extra in ("driver", "run"):
            seen = {}
            for column in self.columns:
                seen.setdefault(column.label, []).append(column)
            for same in seen.values():
                if len(same) > 1:
                    for column in same:
                        if extra == "driver" and column.driver and len({c.driver for c in same}) > 1:
                            column.label += f" [{column.driver}]"
                        elif extra == "run" and len({c.run_index for c in same}) > 1:
                            column.label += f" ({column.run.label})"

    def _case_order(self):
        order = {}
        for run in self.runs + ([self.baseline] if self.baseline else []):
            for result in run.results:
                line = number(result.get("line"))
                key = (result["stem"], line if line is not None and math.isfinite(line) else 1e18,
                       result["case"])
                order[result["case"]] = min(order.get(result["case"], key), key)
        return order

    def sorted_cases(self, names):
        """Case names in case-file order (stem, line)."""
        return sorted(set(names), key=lambda n: self.case_order.get(n, (n.split("/")[0], 1e18, n)))

    def case_position(self, result):
        """Where a result's case is in the case files, for sorting."""
        return self.case_order.get(result["case"], (result["stem"], 1e18, result["case"]))

    def case_position_of_name(self, name):
        """Where a case is in the case files, by its name, for sorting."""
        return self.case_order.get(name, (name.split("/")[0], 1e18, name))

    def op_color(self, op):
        """A colour index per op, stable across the report's plots (ops in name order)."""
        if not self.op_colors:
            ops = sorted({str(r.get("op")) for run in self.lines.runs for r in run.results})
            self.op_colors.update((name, n) for n, name in enumerate(ops))
        return self.op_colors.get(op, len(self.op_colors))

    def peers(self):
        """kcs_views.peers of the files shown, computed once for the index and the op pages."""
        if not hasattr(self, "_peers"):
            self._peers = kcs_views.peers(self.lines, self.case_position_of_name, fmt_time)
        return self._peers

    def rooflines(self):
        """kcs_views.rooflines of the files shown: one per device slot that timed something."""
        return kcs_views.rooflines(self.lines, lambda r: r["column"].label if r.get("column") else
                                   str((r.get("device_record") or {}).get("name")), self.op_color, fmt_time, fmt_si)

    def latest_results(self):
        """The newest result per (case, backend, kernel, device name)."""
        return list(self.latest.values())

    def plot(self, key, draw):
        """A plot drawn once per report (draw() the first time): op pages show the index's."""
        if key not in self.plots:
            self.plots[key] = draw()
        return self.plots[key]


def column_sort_key(result):
    """Results in the order of their devices in the files (reference, then OpenCL, then CUDA as
    the runner lists them), then by kernel."""
    return (result["column"].position, str(result.get("kernel") or ""))


# ---- what index.html shows --------------------------------------------------------------------

def status_counts(results):
    """The runner's summary counts of results: passed (with expected failures), failed (with
    unexpected passes), skipped, errors, expected, unexpected_passes."""
    return summary_counts(results)


def device_ceilings(device):
    """The ceilings measured on a device, one 'copy bandwidth 2.9 TB/s' line each, and a
    'GEMM rate not measured' line for each roofline ceiling it lacks ('... not measured in this
    run' where the run did not ask for it)."""
    measured = kcs_views.measured_ceilings(device)
    lines = [f"{kcs_views.ceiling_names(key)[0]} {fmt_si(value, kcs_views.ceiling_names(key)[2])}"
             for key, value in measured.items()]
    if measured:
        lines += kcs_views.missing_ceiling_lines(device, kcs_views.ROOFLINE_CEILINGS)
    return lines


def device_rows(model):
    """The devices table: each device once, however many files list it. Devices that agree in id,
    name, platform, driver and runtime are one row naming the files; their ceilings are shown once
    where the files measured the same, else per file."""
    rows = {}
    sources = [(column.device, column.run.label, False) for column in model.columns if column.device is not None]
    if model.baseline:
        sources += [(device, model.baseline.label, True) for device in model.baseline.devices.values()]
    for device, label, baseline in sources:
        key = tuple(str(device.get(k) or "") for k in ("id", "name", "platform", "driver_version", "runtime_version"))
        row = rows.setdefault(key, {"device": device, "files": [], "ceilings": []})
        row["files"].append(label + (" (baseline)" if baseline else ""))
        row["ceilings"].append((label, device_ceilings(device), (device.get("ceilings") or {}).get("method")))
    for row in rows.values():
        distinct = {tuple(lines) for _, lines, _ in row["ceilings"]}
        row["per_file"] = len(distinct) > 1
    return list(rows.values())


def comparison_devices(comparison):
    """The comparison's device table: each matched pair with how it was matched, its driver and
    runtime on both sides and its ceilings on both sides; then each device that nothing matched."""
    rows = []
    for pair in comparison.pairs:
        ceilings = []
        for key, (name, _, unit) in kcs_views.CEILINGS.items():
            old, new = (pair.old.get("ceilings") or {}).get(key), (pair.new.get("ceilings") or {}).get(key)
            if isinstance(old, float) or isinstance(new, float):
                ratio = new / old if finite(old) and finite(new) and old > 0 else None
                moved = ratio is not None and max(ratio, 1 / ratio) - 1 > comparison.options.min_effect
                ceilings.append({"name": name, "old": fmt_si(old, unit), "new": fmt_si(new, unit), "ratio": ratio,
                                 "moved": moved})
        rows.append({"old": pair.old, "new": pair.new, "run": pair.run.label, "how": pair.how, "notes": pair.notes,
                     "ceilings": ceilings})
    rows += [{"old": device, "new": None, "run": "", "how": None, "notes": [], "ceilings": []}
             for device in comparison.unmatched_old]
    rows += [{"old": None, "new": device, "run": run.label, "how": None, "notes": [], "ceilings": []}
             for run, device in comparison.unmatched_new]
    return rows


def matrix(model, everything):
    """The case x device matrix collapsed to its exceptions: (columns shown, columns folded away
    because every result in them is a skip for one reason [(column, reason, count)], rows with a
    failure, error or expectation [(first result, cells)], rows whose only exceptions are skips,
    and the number of cases that passed everywhere). Needs two device columns with results."""
    columns = [c for c in model.columns if not c.case_level and any(r["column"] is c for r in c.run.results)]
    if len(columns) < 2:
        return [], [], [], [], 0
    folded, shown = [], []
    for column in columns:
        results = [r for r in column.run.results if r["column"] is column]
        reasons = {r["message"] for r in results}
        if all(outcome(r) == "skip" for r in results) and len(reasons) == 1:
            folded.append((column, reasons.pop(), len(results)))
        else:
            shown.append(column)
    by_cell = {}
    for result in everything:
        by_cell.setdefault((result["case"], result["column"].key()), []).append(result)
    problems, skips, passed = [], [], 0
    for case in model.sorted_cases(r["case"] for r in everything if not r["column"].case_level):
        cells = [sorted(by_cell.get((case, c.key()), []), key=lambda r: str(r.get("kernel") or "")) for c in shown]
        kinds = {outcome(r) for cell in cells for r in cell}
        row = (next(r for r in everything if r["case"] == case), cells)
        if kinds - {"pass", "skip", "xskip"}:
            problems.append(row)
        elif kinds - {"pass"}:
            skips.append(row)
        else:
            passed += 1
    return shown, folded, problems, skips, passed


def index_page(model):
    """What index.html is rendered from."""
    everything = [r for run in model.runs for r in run.results]
    latest = model.latest_results()
    summary = []
    for column in model.columns:
        results = [r for r in column.run.results if r["column"] is column]
        if not results or column.case_level:
            continue
        passes = [r for r in results if outcome(r) in ("pass", "xpass") and kcs_views.checked(r)
                  and finite(r["accuracy"]["fraction_of_bound"])]
        most = max(passes, key=lambda r: r["accuracy"]["fraction_of_bound"], default=None)
        summary.append({"column": column, "counts": status_counts(results), "total": len(results),
                        "closeness": kcs_views.closeness(results), "most": most,
                        "mark": kcs_views.bound_mark(most) if most else None,
                        "flagged": sum(1 for r in results if kcs_views.is_timed(r) and kcs_views.flags(r, fmt_time))})
    case_files = [{"stem": stem, "cases": len({r["case"] for r in latest if r["stem"] == stem}),
                   "counts": status_counts([r for r in latest if r["stem"] == stem])} for stem in model.stems]
    matrix_columns, folded_columns, problem_rows, skip_rows, all_passed = matrix(model, everything)

    # The comparison lists what changed first, then folds away the unchanged pairs.
    rank = {"regressed": 0, "slower": 1, "expected": 2, "fixed": 3, "faster": 4, "unclear": 5}

    def row_rank(row):
        return min(rank.get(row["correctness"], 9), rank.get(row["speed"], 9))

    pairs = sorted(model.comparison.rows, key=lambda r: (row_rank(r), r["key"])) if model.comparison else []
    in_order = sorted(everything, key=lambda r: (model.case_position(r), column_sort_key(r)))
    failures = [r for r in in_order if outcome(r) in ("fail", "error", "xpass")]
    expected = [r for r in in_order if outcome(r) in ("xfail", "xerror", "xskip")]
    peers = model.peers()
    rooflines = [(plot, model.plot(("roofline", plot["slot"]),
                                   lambda plot=plot, n=n: kcs_plots.roofline_svg(plot, f"roofline-{n}")))
                 for n, plot in enumerate(model.rooflines())]
    flagged = [(table, row) for table in peers for row in table["rows"] if row["flags"]]
    toc = [("summary-section", "Summary")]
    toc += [("comparison-section", "Comparison with the baseline")] if model.comparison else []
    toc += [("failures-section", "Failures and errors"), ("agreement-section", "Devices compared with each other"),
            ("matrix-section", "Cases by device: the exceptions"),
            ("performance-section", "Performance: rooflines and peers"), ("accuracy-section", "Accuracy"),
            ("devices-section", "Devices and drivers"), ("runs-section", "Results files")]
    return {"title": "kcs results", "current": "index", "comparison": model.comparison, "toc": toc,
            "totals": status_counts(everything), "result_count": len(everything),
            "devices": sum(1 for c in model.columns if c.device),
            "several_files": len(model.runs) > 1 or model.baseline is not None, "several_runs": len(model.runs) > 1,
            "summary": summary, "case_files": case_files, "matrix_columns": matrix_columns,
            "case_level": case_level_results(everything),
            "folded_columns": folded_columns, "problem_rows": problem_rows, "skip_rows": skip_rows,
            "all_passed": all_passed, "notable": [r for r in pairs if row_rank(r) < 9],
            "unchanged": [r for r in pairs if row_rank(r) >= 9], "failures": failures, "expected": expected,
            "rooflines": rooflines, "peers": peers, "flagged": flagged, "compared": devices_compared(model),
            "accuracy_by_op": kcs_views.accuracy_by_op(latest), "near_bound": kcs_views.near_bound(model.lines),
            "moved": kcs_views.moved_medians(model.lines, model.min_effect) if model.lines.overlaid
            and not model.comparison else [],
            "device_rows": device_rows(model),
            "verdict": model.comparison.verdict() if model.comparison else None,
            "comparison_devices": comparison_devices(model.comparison) if model.comparison else [],
            "newly_skipped": model.comparison.newly_skipped() if model.comparison else []}


def case_level_results(everything):
    """The results that belong to no device nor backend (a case skipped before any device ran it,
    e.g. tagged large under --skip-large; a case that could not be read), as one line's worth:
    (how many, {outcome in words: how many}, [(reason, how many)] most frequent first)."""
    words = {"pass": "passed", "fail": "failed", "skip": "skipped", "error": "errors"}
    own = [r for r in everything if r["column"].case_level]
    outcomes, reasons = {}, {}
    for result in own:
        said = words.get(outcome(result), OUTCOME_TEXT.get(outcome(result), outcome(result)))
        outcomes[said] = outcomes.get(said, 0) + 1
        reasons[result.get("message") or ""] = reasons.get(result.get("message") or "", 0) + 1
    return len(own), outcomes, sorted(reasons.items(), key=lambda item: (-item[1], item[0]))


def devices_compared(model):
    """What the runner found comparing the devices of a run with each other (docs/runner.md,
    "Identical devices must agree", "Stragglers"), over every results file shown: the
    disagreements, odd ones out and stragglers, and how many groups agreed or were not compared."""
    found = {"disagree": [], "odd_one_out": [], "stragglers": [], "agree": 0, "not_compared": 0, "recorded": False}
    for run in model.runs:
        for key in ("agreement", "odd_one_out", "stragglers"):
            found["recorded"] |= key in run.data
        for entry in run.data.get("agreement") or []:
            if not isinstance(entry, dict):
                continue
            verdict = entry.get("verdict")
            if verdict == "disagree":
                found["disagree"].append(entry)
            else:
                found["agree" if verdict == "agree" else "not_compared"] += 1
        found["odd_one_out"] += [e for e in run.data.get("odd_one_out") or [] if isinstance(e, dict)]
        found["stragglers"] += [e for e in run.data.get("stragglers") or [] if isinstance(e, dict)]
    return found


# ---- op pages: the case file woven with its results -------------------------------------------

class CaseListError(Exception):
    """The runner's list of the cases could not be had or read; the message says why."""


def default_runner():
    """build/kcs of the kcs checkout that holds this script."""
    return os.path.join(REPOSITORY, "build", "kcs")


def run_case_list(runner, cases_dir):
    """`RUNNER list --json --cases DIR`: every case with its fields as the runner parsed them, and
    the problems it found (docs/runner.md, "Listing the cases as JSON")."""
    command = [runner, "list", "--json", "--cases", cases_dir]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as error:
        raise CaseListError(f"{runner}: cannot run it to list the cases: {error}") from None
    if done.returncode not in (0, 1):  # 1: problems in the case files, which the list names
        raise CaseListError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return parse_case_list(done.stdout, f"{runner} list --json")


def read_case_list(path):
    """A saved `kcs list --json` document."""
    try:
        with open(path, encoding="utf-8") as handle:
            return parse_case_list(handle.read(), path)
    except OSError as error:
        raise CaseListError(f"{path}: {error.strerror}") from None


def parse_case_list(text, source):
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CaseListError(f"{source}: not JSON: {error}") from None
    if (not isinstance(document, dict) or document.get("schema") != "kcs-cases"
            or not isinstance(document.get("cases"), list) or not isinstance(document.get("problems"), list)):
        raise CaseListError(f"{source}: not a kcs case list (schema kcs-cases, with cases and problems)")
    for where, item in [("cases", c) for c in document["cases"]] + [("problems", p) for p in document["problems"]]:
        if not isinstance(item, dict) or not isinstance(item.get("file"), str) or not isinstance(item.get("line"), int):
            raise CaseListError(f"{source}: an entry of {where} without a file and line: {str(item)[:120]}")
    return document


def index_case_list(document):
    """({(file stem, line of the opening fence): case}, {file stem: [problem]}) of a case list."""
    blocks, problems = {}, {}
    for case in (document or {}).get("cases", []):
        blocks[(os.path.splitext(os.path.basename(case["file"]))[0], case["line"])] = case
    for problem in (document or {}).get("problems", []):
        problems.setdefault(os.path.splitext(os.path.basename(problem["file"]))[0], []).append(problem)
    return blocks, problems


def case_facts(case):
    """The facts line of a case as the runner read it: dtype, sizes, inputs, parameters, expect."""
    def assignments(values):
        return " ".join(f"{name}={value}" for name, value in values.items())
    inputs = [" ".join(filter(None, [f"{i['name']}: {i['distribution']}", assignments(i.get("params") or {})]))
              for i in case.get("inputs") or []]
    expect = case.get("expect") or "?"
    if expect == "oracle" and case.get("sample"):
        expect += f" sample={case['sample']}"
    return [str(case.get("dtype") or ""), assignments(case.get("sizes") or {}), *inputs,
            assignments(case.get("params") or {}), "expect " + expect]


def render_case(name, case, lines, results, problem=""):
    """A case's block on its op page (case.html); name is the full case name, '' for a block the
    runner did not read as a case (problem says why), case the runner's fields or None."""
    facts = case_facts(case) if case else [f"not read as a case: {problem}"] if problem else []
    statuses = sorted({outcome(r) for r in results}, key=OUTCOMES.index)
    return Markup(PAGES.get_template("case.html").render(
        ident=case_anchor(name or "unnamed"), name=name, facts=[f for f in facts if f],
        has_message=any(r["message"] or r.get("expected") for r in results),
        tags=list(case.get("tags") or []) if case else [], statuses=statuses,
        results=sorted(results, key=column_sort_key), lines=lines))


def op_page(model, stem, output_dir):
    """What <stem>.html is rendered from: the case file with each block woven with its results."""
    results = [r for r in model.latest_results() if r["stem"] == stem]
    results_by_case = {}
    for result in results:
        results_by_case.setdefault(result["case"], []).append(result)
    shown = set()

    def case_block(case, lines, problem=""):
        name = case["name"] if case else ""
        shown.add(name)
        return render_case(name, case, lines, results_by_case.get(name, []), problem)

    def block(lines, first, last):
        """The block on lines first..last: the runner's case that opens there, or its problems."""
        case = model.case_blocks.get((stem, first))
        if case:
            return case_block(case, lines)
        problems = [f"line {p['line']}: {p['message']}" for p in model.case_problems.get(stem, [])
                    if first <= p["line"] <= last]
        return case_block(None, lines, "; ".join(problems) or "the runner listed no case here")

    path = os.path.join(model.cases_dir, f"{stem}.md") if model.cases_dir else None
    document = None
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as handle:
            document = Markup(case_file_html(handle.read(), block, lambda url: rewrite_link(url, model, output_dir)))
    cases_in_file = len(shown)
    other_cases = [render_case(case, None, [], results_by_case[case])
                   for case in model.sorted_cases(c for c in results_by_case if c not in shown)]
    return {"title": f"kcs: {stem}", "current": stem, "stem": stem, "document": document,
            "source": os.path.relpath(path) if document is not None else None, "cases_dir": model.cases_dir,
            "results": results, "counts": status_counts(results), "cases_with_results": len(results_by_case),
            "cases_in_file": cases_in_file, "other_cases": other_cases,
            "peers": [table for table in model.peers() if table["first"]["stem"] == stem]}


def heading_id(source):
    """A heading's id from its Markdown source: lower-case words joined by '-', marks dropped."""
    plain = re.sub(r"[`*_\\]", "", source).lower()
    return re.sub(r"[\s_]+", "-", re.sub(r"[^\w\s-]", "", plain)).strip("-") or "section"


def case_file_html(text, render_case_block, rewrite_link):
    """A case file's HTML: CommonMark with raw HTML shown as text, each kcs-case fence replaced by
    render_case_block(its lines, the line of its opening fence, its last line; from 1), each heading given an id (unique in the page) and a '#' link to
    itself, links passed through rewrite_link, and images shown as links, so that the page never
    loads a file."""
    markdown = MarkdownIt("commonmark", {"html": False})
    plain_fence = markdown.renderer.rules["fence"]
    heading_ids = set()

    def fence(renderer, tokens, index, options, env):
        token = tokens[index]
        if token.info.strip() == "kcs-case":
            # As a plain str: markdown-it adds the pieces up, and a Markup would escape the others.
            return str(render_case_block(token.content.splitlines(), token.map[0] + 1, token.map[1])) + "\n"
        return plain_fence(tokens, index, options, env)

    def heading_open(renderer, tokens, index, options, env):
        ident = base = heading_id(tokens[index + 1].content)
        number = 2
        while ident in heading_ids:
            ident, number = f"{base}-{number}", number + 1
        heading_ids.add(ident)
        tokens[index].attrSet("id", ident)
        return renderer.renderToken(tokens, index, options, env)

    def heading_close(renderer, tokens, index, options, env):
        anchor = f'<a class="anchor" href="#{tokens[index - 2].attrGet("id")}" aria-hidden="true">#</a>'
        return anchor + renderer.renderToken(tokens, index, options, env)

    def link_open(renderer, tokens, index, options, env):
        tokens[index].attrSet("href", rewrite_link(tokens[index].attrGet("href")))
        return renderer.renderToken(tokens, index, options, env)

    def image(renderer, tokens, index, options, env):
        text = renderer.renderInlineAsText(tokens[index].children, options, env)
        return f'<a href="{escape(rewrite_link(tokens[index].attrGet("src")))}">[image: {escape(text)}]</a>'

    for name, rule in (("fence", fence), ("heading_open", heading_open), ("heading_close", heading_close),
                       ("link_open", link_open), ("image", image)):
        markdown.add_render_rule(name, rule)
    return markdown.render(text)


def rewrite_link(url, model, output_dir):
    """Links between case files go to their pages; other relative links are made relative to the
    output directory, so that they still reach the file from there."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", url, re.IGNORECASE) or url.startswith("#") or not model.cases_dir:
        return url
    path, _, fragment = url.partition("#")
    if not path:
        return url
    stem = os.path.splitext(os.path.basename(path))[0]
    target = os.path.normpath(os.path.join(model.cases_dir, path))
    if path.endswith(".md") and os.path.dirname(target) == os.path.normpath(model.cases_dir) and stem in model.stems:
        return page_name(stem) + (f"#{fragment}" if fragment else "")
    return os.path.relpath(target, output_dir) + (f"#{fragment}" if fragment else "")


# ---- pages ------------------------------------------------------------------------------------

PAGES = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                       "templates")),
                           autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.StrictUndefined,
                           trim_blocks=True, lstrip_blocks=True)
PAGES.filters.update(time=fmt_time, si=fmt_si, fraction=fmt_fraction, number=fmt_number, date=fmt_date,
                     binary_bytes=fmt_bytes_binary, plural=fmt_plural, percent=fmt_percent, ratio=fmt_ratio,
                     speedup=fmt_speedup,
                     machine=fmt_machine, command=fmt_command, options=fmt_options, source_line=fmt_source_line,
                     status_class=status_class, page_name=page_name, case_anchor=case_anchor,
                     first_difference=first_difference_text)
PAGES.tests.update(finite=finite, over_bound=lambda f: f is not None and (not math.isfinite(f) or f > 1),
                   timed=kcs_views.is_timed)
PAGES.globals.update(kernel_timing=kernel_timing, device_ceilings=device_ceilings, COUNTS=COUNTS, outcome=outcome,
                     OUTCOME_TEXT=OUTCOME_TEXT, ORDER_CORRECTNESS=ORDER_CORRECTNESS, ORDER_SPEED=ORDER_SPEED,
                     speed=kcs_views.speed, is_timed=kcs_views.is_timed, bound_mark=kcs_views.bound_mark,
                     histogram_bins=kcs_views.histogram_bins, fraction_histogram=fraction_histogram,
                     NEAR_BOUND=kcs_views.NEAR_BOUND, log=math.log, ratio_class=ratio_class, flags=lambda r: kcs_views.flags(r, fmt_time))


def build_report(runs, output_dir, cases_dir=None, baseline=None, options=None, case_list=None):
    """Writes index.html and the op pages (the case files of cases_dir, their blocks' fields from
    case_list, the runner's `kcs list --json`); returns (path of index.html, Comparison or None).
    Raises CompareError for comparison options that do not fit the files."""
    comparison = Comparison(baseline, runs, options) if baseline else None
    model = Model(runs, baseline, comparison, cases_dir, (options or Options()).min_effect, case_list)
    os.makedirs(output_dir, exist_ok=True)
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    pages = [("index.html", "index.html", index_page(model))]
    pages += [(page_name(stem), "op.html", op_page(model, stem, output_dir)) for stem in model.stems]
    for name, template, values in pages:
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as handle:
            handle.write(PAGES.get_template(template).render(model=model, generated=generated, **values))
    return os.path.join(output_dir, "index.html"), comparison


def default_cases_dir():
    """cases/ of the kcs checkout that holds this script."""
    return os.path.join(REPOSITORY, "cases")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="kcs_report.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Turn kcs results files (docs/results.md, schema versions 1 and 2) into a self-contained HTML "
                    "report, and compare them with a baseline results file (docs/comparing.md).",
        epilog="""\
Writes OUTPUT/index.html and OUTPUT/<op>.html (one per case file) and prints the
path of index.html as the last line; with --baseline, the comparison and a
one-line verdict before it. Several results files are overlaid in the
performance and accuracy views, each with its ratio to the first file (or to
the baseline).

Comparison: devices are matched by --map, else uuid (details "uuid=..."), else
backend + index + name; every device, case, kernel or result on one side only
is named, and so is every pass that became a skip. Correctness: regressed
(pass -> fail/error), expected (a failure an expectation lists, with its reason:
not a regression), fixed, unchanged. Speed: same within the minimum effect;
slower or faster only when the medians differ by more than both the minimum
effect and the noise (the wider of the two runs' interquartile ranges, relative
to the median) and the difference is significant (a Mann-Whitney rank test of
the repeats, timing.kernel.samples_s, at --significance; without repeats, the
interquartile ranges must not overlap); else unclear. A device whose measured
copy, FMA or GEMM ceiling moved by more than the minimum effect between the
runs has its slower/faster verdicts made unclear, with a warning; so do
differences in build ("comparability"), drivers and runtimes (warnings only).
Two sides of one interleave (report/kcs_interleave.py: rounds of each side
alternating on one host) are judged round by round instead, from the ratio of
their medians in each round, with a sign test of the rounds.

Exit status:
  0  report written; no regression against the baseline
  2  bad input: a bad option, an unreadable or malformed results file (each
     problem named: file, where, what), or nothing matched the baseline; or
     not validated: a device that nothing matched, or a result that ran in the
     baseline and is missing or skipped in the new run (each named above the
     verdict), unless --allow-unmatched
  3  a correctness regression (pass -> fail/error), whatever the speed
  4  speed only: something slower, nothing regressed or went unvalidated""")
    parser.add_argument("results", nargs="+", metavar="RESULTS.json", help="results files written by kcs run")
    parser.add_argument("--baseline", metavar="BASE.json",
                        help="compare against this results file (e.g. the old driver's); exit 3 or 4 on a regression")
    parser.add_argument("--cases", metavar="DIR", default=None,
                        help=f"directory of case files to weave into op pages (default: {default_cases_dir()})")
    parser.add_argument("--kcs", metavar="RUNNER", default=None,
                        help="the runner whose `list --json` gives the case files' fields (default: "
                             f"{default_runner()}; without one, the op pages show results without their case files)")
    parser.add_argument("--case-list", metavar="FILE", default=None,
                        help="a saved `kcs list --json` of the --cases files, instead of running the runner")
    parser.add_argument("--output", metavar="DIR", default=DEFAULT_OUTPUT,
                        help=f"directory to write the pages into (default: {DEFAULT_OUTPUT} in the current "
                             "directory; `ninja report` writes build/report)")
    parser.add_argument("--min-effect", type=float, default=0.05, metavar="FRACTION",
                        help="a speed change smaller than this fraction is 'same' (default: 0.05, i.e. 5%%)")
    parser.add_argument("--significance", type=float, default=0.01, metavar="LEVEL",
                        help="level of the two-sided rank test of the repeats (default: 0.01)")
    parser.add_argument("--min-repeats", type=int, default=5, metavar="N",
                        help="fewer timed repeats on either side makes the speed 'unclear' (default: 5)")
    parser.add_argument("--ceiling-change", type=float, default=0.20, metavar="FRACTION",
                        help="a device whose measured ceilings moved by more than this fraction between the runs is "
                             "not judged for speed; in an interleave, a round whose pace moved by more is left out "
                             "(default: 0.2)")
    parser.add_argument("--map", action="append", default=[], metavar="OLD=NEW",
                        help="compare baseline device OLD with new device NEW (each a device id such as cuda:0, or "
                             "a device name); repeatable")
    parser.add_argument("--allow-unmatched", action="store_true",
                        help="exit 0 or 4 even though a device matched nothing or a result that ran in the baseline "
                             "is missing or skipped in the new run (still named); without it, exit 2")
    return parser.parse_args(argv)


def main(argv=None):
    try:
        args = parse_arguments(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:  # argparse: --help (0) or a bad option (2), already printed
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    try:
        options = Options(args.min_effect, args.significance, args.min_repeats, [parse_map(m) for m in args.map],
                          args.ceiling_change, args.allow_unmatched)
        options.check()
        if args.map and not args.baseline:
            raise CompareError("--map needs --baseline")
        if args.allow_unmatched and not args.baseline:
            raise CompareError("--allow-unmatched needs --baseline")
    except CompareError as error:
        print(f"kcs_report: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        labels = label_runs(args.results)
        runs = [load_results(path, label) for path, label in zip(args.results, labels)]
        baseline = load_results(args.baseline, os.path.basename(args.baseline)) if args.baseline else None
    except ResultsError as error:
        print(f"kcs_report: {error}", file=sys.stderr)
        return EXIT_USAGE
    cases_dir = args.cases if args.cases is not None else default_cases_dir()
    if args.cases is not None and not os.path.isdir(args.cases):
        print(f"kcs_report: --cases {args.cases}: not a directory", file=sys.stderr)
        return EXIT_USAGE
    case_list = None
    if args.kcs and args.case_list:
        print("kcs_report: --kcs and --case-list: give one", file=sys.stderr)
        return EXIT_USAGE
    try:
        case_list = (read_case_list(args.case_list) if args.case_list
                     else run_case_list(args.kcs or default_runner(), cases_dir))
    except CaseListError as error:
        if args.kcs or args.case_list:
            print(f"kcs_report: {error}", file=sys.stderr)
            return EXIT_USAGE
        print(f"kcs_report: WARNING: {error}: the op pages show results without their case files "
              "(build kcs, or give --kcs or --case-list)", file=sys.stderr)
        cases_dir = None
    for problem in (case_list or {}).get("problems", []):
        print(f"kcs_report: WARNING: {problem['file']}:{problem['line']}: {problem.get('message', '')}",
              file=sys.stderr)
    try:
        index_path, comparison = build_report(runs, args.output, cases_dir, baseline, options, case_list)
    except CompareError as error:
        print(f"kcs_report: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"kcs_report: cannot write the report in {args.output}: {error}", file=sys.stderr)
        return EXIT_USAGE
    for run in runs:
        counts = run.counts()
        print(f"{run.label}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped, "
              f"{counts['errors']} errors; {counts['expected']} expected failures or skips (counted as passed or "
              f"skipped), {counts['unexpected_passes']} unexpected passes (counted as failed)")
        if not comparison:  # a comparison lists these among its warnings
            for text in run.summary_mismatches():
                print(f"  WARNING: {run.label}: {text}")
    status = EXIT_OK
    if comparison:
        for line in comparison.summary_lines():
            print(line)
        status = comparison.verdict()[0]
    print(index_path)
    return status


if __name__ == "__main__":
    sys.exit(main())
