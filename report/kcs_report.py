#!/usr/bin/python3
"""kcs_report: turn kcs results files into a self-contained HTML report, and compare with a baseline.

    /usr/bin/python3 report/kcs_report.py RESULTS.json [RESULTS.json ...]
        [--baseline BASE.json] [--cases DIR] [--output DIR]

writes DIR/index.html (devices and drivers, a summary, the comparison with the baseline, a matrix
of cases by device, the failures with their worst elements, throughput, fraction of the device
ceilings and accuracy plots) and DIR/<op>.html for each case file: cases/<op>.md rendered, with
each kcs-case block replaced by that case's latest results. Every image is an embedded PNG; the
pages load nothing else. The last line printed is the path of index.html.

Exit status: 0 done; 2 bad arguments or an unreadable results file; 3 the comparison with
--baseline found a correctness regression (pass -> fail/error) or a case that got slower.
Reads results schema version 1 (docs/results.md).
"""

import argparse
import datetime
import html
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kcs_plots  # noqa: E402
from kcs_compare import ORDER_CORRECTNESS, ORDER_SPEED, Comparison, Thresholds  # noqa: E402
from kcs_results import (ResultsError, STATUSES, finite, kernel_timing, label_runs,  # noqa: E402
                         latest_by_key, load_results, number)
from markdown_it import MarkdownIt  # noqa: E402

escape = html.escape

EXIT_OK, EXIT_USAGE, EXIT_REGRESSED = 0, 2, 3
DTYPE_ORDER = ["f32", "f64", "f16", "i32", "i64"]
# Which ceiling bounds an op: GEMM is compute-bound, everything else in kcs moves memory.
CEILING_FOR_OP = {"gemm": ("gemm_flops_per_s", "flops", "GEMM rate")}
DEFAULT_CEILING = ("copy_bytes_per_s", "bytes", "copy bandwidth")
CEILING_NAMES = {"copy_bytes_per_s": ("copy bandwidth", "B/s"),
                 "host_to_device_bytes_per_s": ("host-to-device bandwidth", "B/s"), "fma_flops_per_s": ("FMA rate", "flop/s"),
                 "gemm_flops_per_s": ("GEMM rate", "flop/s")}


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


def fmt_sizes(mapping):
    """{'n': 1000, 'm': 7} -> 'n=1000 m=7'."""
    if not isinstance(mapping, dict):
        return ""
    return " ".join(f"{k}={fmt_number(number(v)) if not isinstance(v, str) else v}"
                    for k, v in mapping.items())


def badge(status, title=None):
    """A coloured status label."""
    css = re.sub(r"[^a-z]", "", status.lower()) or "unknown"
    tip = f' title="{escape(title)}"' if title else ""
    return f'<span class="badge {css}"{tip}>{escape(status)}</span>'


def case_anchor(name):
    """The id of a case's block on its op page."""
    return "case-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name.split("/", 1)[-1])


def page_name(stem):
    """The file name of an op page."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) + ".html"


def table(ident, headers, rows, css="data"):
    """An HTML table; headers are plain text (escaped), rows are lists of HTML cells."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    ident_attribute = f' id="{ident}"' if ident else ""
    return (f'<div class="table-wrap"><table{ident_attribute} class="{css}">\n<thead><tr>{head}</tr></thead>'
            f"\n<tbody>\n{body}\n</tbody></table></div>")


def image(img):
    """An <img> of a rendered plot."""
    return (f'<figure><img src="{img.uri}" width="{img.width}" height="{img.height}" '
            f'alt="{escape(img.alt)}"></figure>')


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
        # cases are skipped with the reason), or a problem found before any ran.
        self.label = (f"{self.backend}: {self.name}" if device else
                      f"{backend}: no device" if backend else "found before any device ran")

    def key(self):
        """How results find their column."""
        return (self.run_index, str(self.device.get("id")) if self.device else None,
                None if self.device else (self.backend or None))


class Model:
    """Everything the pages are built from."""

    def __init__(self, runs, baseline=None, comparison=None, cases_dir=None):
        self.runs, self.baseline, self.comparison, self.cases_dir = runs, baseline, comparison, cases_dir
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
        self.latest = latest_by_key(runs)
        self.stems = sorted({r["stem"] for run in runs for r in run.results})
        if cases_dir and os.path.isdir(cases_dir):
            self.stems = sorted(set(self.stems) | {os.path.splitext(f)[0] for f in os.listdir(cases_dir)
                                                   if f.endswith(".md")})
        self.case_order = self._case_order()
        self.series_colors = {}

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
        for run in self.runs:
            for result in run.results:
                line = number(result.get("line"))
                key = (result["stem"], line if line is not None and math.isfinite(line) else 1e18,
                       result["case"])
                order[result["case"]] = min(order.get(result["case"], key), key)
        return order

    def sorted_cases(self, names):
        """Case names in case-file order (stem, line)."""
        return sorted(set(names), key=lambda n: self.case_order.get(n, (n.split("/")[0], 1e18, n)))

    def latest_results(self):
        """The newest result per (case, backend, kernel, device name)."""
        return list(self.latest.values())

    def color(self, column, kernel):
        """A stable colour index per (device column, kernel) across every plot."""
        key = (column.key(), kernel)
        if key not in self.series_colors:
            self.series_colors[key] = len(self.series_colors)
        return self.series_colors[key]


def column_sort_key(result):
    """Results in the order of their devices in the files (reference, then OpenCL, then CUDA as
    the runner lists them), then by kernel."""
    return (result["column"].position, str(result.get("kernel") or ""))


# ---- sections of index.html -------------------------------------------------------------------

def runs_section(model):
    rows = []
    for run in model.runs:
        machine = run.machine
        host = " · ".join(str(x) for x in (machine.get("hostname"), machine.get("cpu"),
                                             f"{machine.get('cores')} cores" if machine.get("cores") else None,
                                             " ".join(str(x) for x in (machine.get("os"), machine.get("kernel"),
                                                                       machine.get("architecture")) if x))
                          if x)
        options = run.options
        opts = ", ".join(f"{k}={v}" for k, v in options.items()) if isinstance(options, dict) else ""
        command = " ".join(str(c) for c in run.command) if isinstance(run.command, list) else str(run.command)
        rows.append([f"<code>{escape(run.label)}</code>", f'<div class="wrap">{escape(host)}</div>',
                     f"<code>{escape(str(run.kcs.get('revision', '–')))}</code>",
                     escape(str(run.kcs.get("compiler", "–"))), escape(fmt_date(run.created)),
                     f'<div class="wrap"><code class="small">{escape(command)}</code>'
                     f'<div class="muted small">{escape(opts)}</div></div>'])
    if model.baseline:
        run = model.baseline
        rows.append([f"<code>{escape(run.label)}</code> <span class=\"tag\">baseline</span>",
                     escape(str(run.machine.get("hostname", "–"))),
                     f"<code>{escape(str(run.kcs.get('revision', '–')))}</code>",
                     escape(str(run.kcs.get("compiler", "–"))), escape(fmt_date(run.created)),
                     f'<div class="wrap"><code class="small">{escape(" ".join(str(c) for c in run.command))}'
                     "</code></div>"])
    return ("<section id=\"runs-section\"><h2>Results files</h2>"
            + table("runs", ["file", "machine", "revision", "compiler", "date (UTC)", "command and options"], rows)
            + "</section>")


def ceilings_text(device):
    ceilings = device.get("ceilings") if device else None
    if not ceilings:
        return '<span class="muted">no ceiling measured</span>'
    parts = []
    for key, value in ceilings.items():
        if isinstance(value, (dict, list)) or key == "method":
            continue
        name, unit = CEILING_NAMES.get(key, (key, "/s"))
        parts.append(f"{escape(name)} {escape(fmt_si(value, unit))}")
    method = ceilings.get("method")
    if parts and method:
        parts.append(f'<span class="muted small">{escape(str(method))}</span>')
    return "<br>".join(parts) or '<span class="muted">no ceiling measured</span>'


def devices_section(model):
    several = len(model.runs) > 1 or model.baseline is not None

    def row(device, label, name, baseline=False):
        details = str(device.get("details") or "")
        cells = [f"<code>{escape(str(device.get('id')))}</code>",
                 f'<div class="wrap narrow">{escape(name)}'
                 + (f'<div class="muted small">{escape(details)}</div>' if details else "") + "</div>",
                 f'<div class="wrap narrow">{escape(str(device.get("platform") or "–"))}'
                 f'<div class="muted small">{escape(str(device.get("vendor") or ""))}</div></div>',
                 escape(str(device.get("driver_version") or "–")),
                 f'<div class="wrap narrow">{escape(str(device.get("runtime_version") or "–"))}</div>',
                 escape(fmt_bytes_binary(device.get("memory_bytes"))),
                 ceilings_text(device)]
        if several:
            cells.append(escape(label) + ('<div class="muted small">baseline</div>' if baseline else ""))
        return cells

    rows = [row(c.device, c.run.label, c.name) for c in model.columns if c.device is not None]
    if model.baseline:
        rows += [row(d, model.baseline.label, str(d.get("name") or d.get("id")), baseline=True)
                 for d in model.baseline.devices.values()]
    headers = ["id", "name and details", "platform and vendor", "driver", "runtime", "memory", "ceilings"]
    return ("<section id=\"devices-section\"><h2>Devices and drivers</h2>"
            + table("devices", headers + (["results file"] if several else []), rows)
            + "</section>")


def count_cell(count, status):
    return f'<span class="count {status}">{count}</span>' if count else '<span class="muted">0</span>'


def summary_section(model):
    rows = []
    totals = {s: 0 for s in STATUSES}
    for column in model.columns:
        results = [r for r in column.run.results if r["column"] is column]
        if not results:
            continue
        counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
        for s in STATUSES:
            totals[s] += counts[s]
        kernels = sorted({str(r.get("kernel")) for r in results if r.get("kernel")})
        rows.append([escape(column.backend or "–"), escape(column.label.split(": ", 1)[-1]),
                     escape(", ".join(kernels) or "–"),
                     count_cell(counts["pass"], "pass"), count_cell(counts["fail"], "fail"),
                     count_cell(counts["skip"], "skip"), count_cell(counts["error"], "error"),
                     str(len(results))] + ([escape(column.run.label)] if len(model.runs) > 1 else []))
    rows.append(["<strong>all</strong>", "", "", *(f"<strong>{count_cell(totals[s], s)}</strong>"
                                                  for s in ("pass", "fail", "skip", "error")),
                 f"<strong>{sum(totals.values())}</strong>"] + ([""] if len(model.runs) > 1 else []))
    ops_rows = []
    for stem in model.stems:
        results = [r for r in model.latest_results() if r["stem"] == stem]
        cases = {r["case"] for r in results}
        counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
        ops_rows.append([f'<a href="{page_name(stem)}">{escape(stem)}</a>', str(len(cases)),
                         count_cell(counts["pass"], "pass"), count_cell(counts["fail"], "fail"),
                         count_cell(counts["skip"], "skip"), count_cell(counts["error"], "error")])
    return ("<section id=\"summary-section\"><h2>Summary</h2>"
            "<p>Results per backend and device. <em>skipped</em> counts cases a device could not run "
            "(with the reason in the results); <em>errors</em> are cases that could not be checked.</p>"
            + table("summary", ["backend", "device", "kernels", "passed", "failed", "skipped", "errors",
                                "total"] + (["results file"] if len(model.runs) > 1 else []), rows)
            + "<h3>By case file</h3>"
            + table("ops", ["op page", "cases", "passed", "failed", "skipped", "errors"], ops_rows)
            + "</section>")


def timing_cell(result):
    kernel = kernel_timing(result)
    if not kernel:
        return '<span class="muted">–</span>'
    return (f'{escape(fmt_time(kernel["median_s"]))}<div class="muted small">'
            f'{escape(fmt_time(kernel.get("lower_quartile_s")))} – {escape(fmt_time(kernel.get("upper_quartile_s")))}'
            f' · {int(kernel.get("repeats") or 0)}×</div>')


def case_link(result, text=None):
    name = result["case"]
    return (f'<a href="{page_name(result["stem"])}#{case_anchor(name)}"><code>{escape(text or name)}</code></a>')


def comparison_section(model):
    comparison = model.comparison
    if comparison is None:
        return ""
    rank = {"regressed": 0, "slower": 1, "fixed": 2, "faster": 3, "unclear": 4}

    def row_rank(row):
        return min(rank.get(row["correctness"], 9), rank.get(row["speed"], 9))

    def render(row):
        case, backend, kernel, device = row["key"]
        old, new = row["old"], row["new"]
        ratio = row["ratio"]
        ratio_text = f"×{ratio:.3g}" if ratio is not None and math.isfinite(ratio) else "–"
        where = " · ".join(x for x in (backend, kernel) if x) or "–"
        return [case_link(new), f'{escape(where)}<div class="muted small">{escape(device or "")}</div>',
                f"{badge(old['status'])} → {badge(new['status'], new['message'] or None)}",
                badge(row["correctness"]), timing_cell(old), timing_cell(new), escape(ratio_text),
                f'{badge(row["speed"])}<div class="wrap muted small reason">{escape(row["reason"])}</div>']

    headers = ["case", "backend · kernel, device", "status", "correctness", "baseline time", "new time",
               "new / baseline", "speed"]
    rows = sorted(comparison.rows, key=lambda r: (row_rank(r), r["key"]))
    notable = [r for r in rows if row_rank(r) < 9]
    rest = [r for r in rows if row_rank(r) >= 9]
    counts = "".join(f'<div class="stat"><span class="num">{comparison.count("correctness", c)}</span>{badge(c)}</div>'
                     for c in ORDER_CORRECTNESS)
    counts += "".join(f'<div class="stat"><span class="num">{comparison.count("speed", s)}</span>{badge(s)}</div>'
                      for s in ORDER_SPEED)
    verdict = ('<p class="verdict bad">Regressed: a case broke or got slower against the baseline.</p>'
               if comparison.regressed() else '<p class="verdict good">No regression against the baseline.</p>')
    t = comparison.thresholds
    text = (f"<section id=\"comparison-section\"><h2>Comparison with the baseline</h2>"
            f"<p>Baseline <code>{escape(comparison.baseline.label)}</code> "
            f"({escape(fmt_date(comparison.baseline.created))}, revision "
            f"<code>{escape(str(comparison.baseline.kcs.get('revision', '–')))}</code>). "
            f"Matched on (case, backend, kernel, device name): {len(comparison.rows)} pairs; "
            f"{len(comparison.only_baseline)} only in the baseline, {len(comparison.only_new)} only in the new "
            "results.</p>"
            f"{verdict}<div class=\"stats\">{counts}</div>"
            "<p class=\"muted small\">Times are kernel medians, with quartiles and repeats. Speed compares "
            "medians and quartiles: slower (faster) when the new "
            f"lower (upper) quartile lies beyond the baseline's upper (lower) quartile and the medians differ by more "
            f"than {t.noise_floor:.0%}; same when the medians are within {t.noise_floor:.0%}, or the ranges overlap "
            f"and the medians are within {t.unclear_above:.0%}; unclear when the ranges overlap but the medians differ "
            f"more, or a side has fewer than {t.min_repeats} repeats.</p>")
    text += table("comparison", headers, [render(r) for r in notable]) if notable else \
        ('<table id="comparison" class="data"><tbody><tr><td>Nothing regressed, fixed, faster, slower or '
         "unclear.</td></tr></tbody></table>")
    if rest:
        text += (f"<details><summary>{len(rest)} unchanged pairs</summary>"
                 + table("comparison-unchanged", headers, [render(r) for r in rest]) + "</details>")
    for title, keys in (("Only in the baseline", comparison.only_baseline),
                        ("Only in the new results", comparison.only_new)):
        if keys:
            items = "".join(f"<li><code>{escape(k[0])}</code> {escape(k[1])} {escape(k[2])} "
                            f"<span class=\"muted\">{escape(k[3])}</span></li>" for k in keys)
            text += f"<details><summary>{title}: {len(keys)}</summary><ul class=\"compact\">{items}</ul></details>"
    return text + "</section>"


def matrix_section(model):
    columns = [c for c in model.columns if any(r["column"] is c for r in c.run.results)]
    if len(columns) < 2:
        return ""
    by_cell = {}
    for run in model.runs:
        for result in run.results:
            by_cell.setdefault((result["case"], result["column"].key()), []).append(result)
    headers = ["case"] + [c.label for c in columns]
    rows = []
    for case in model.sorted_cases(r["case"] for run in model.runs for r in run.results):
        some = next(r for run in model.runs for r in run.results if r["case"] == case)
        row = [case_link(some)]
        for column in columns:
            results = sorted(by_cell.get((case, column.key()), []), key=lambda r: str(r.get("kernel") or ""))
            if not results:
                row.append('<span class="muted">–</span>')
                continue
            parts = []
            for result in results:
                kernel = kernel_timing(result)
                time = f' <span class="small">{escape(fmt_time(kernel["median_s"]))}</span>' if kernel else ""
                label = (f'<span class="muted small">{escape(str(result.get("kernel")))}</span> '
                         if len(results) > 1 and result.get("kernel") else "")
                parts.append(f'<div>{label}{badge(result["status"], result["message"] or None)}{time}</div>')
            row.append("".join(parts))
        rows.append(row)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return ("<section id=\"matrix-section\"><h2>Cases by device and driver</h2>"
            "<p>Status and kernel median time of every case on every device of every results file.</p>"
            f'<div class="table-wrap"><table id="matrix" class="data matrix"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div></section>")


def worst_cell(result):
    """The worst element of a checked result: where it is, expected, actual, error and bound."""
    accuracy = result.get("accuracy") or {}
    worst = accuracy.get("worst") or {}
    if not worst:
        return '<span class="muted">–</span>'
    where = f"index {fmt_number(worst.get('index'))}"
    if worst.get("output") not in (None, 0.0):
        where = f"output {fmt_number(worst.get('output'))}, {where}"
    rows = "".join(f"<tr><th>{name}</th><td><code>{escape(fmt_number(worst.get(key)))}</code></td></tr>"
                   for name, key in (("expected", "expected"), ("actual", "actual"), ("error", "error"),
                                     ("bound", "bound")))
    return f'<div class="small">{escape(where)}</div><table class="worst">{rows}</table>'


def failures_section(model):
    failures = [r for run in model.runs for r in run.results if r["status"] in ("fail", "error")]
    failures.sort(key=lambda r: (model.case_order.get(r["case"], (r["stem"], 1e18, r["case"])), column_sort_key(r)))
    headers = ["case", "where", "status", "message", "fraction of bound", "checked / failed", "worst element"]
    rows = []
    for result in failures:
        column = result["column"]
        accuracy = result.get("accuracy") or {}
        checked = (f"{fmt_number(accuracy.get('checked'))} / {fmt_number(accuracy.get('failures'))}"
                   + (f" ({fmt_number(accuracy.get('unwritten'))} unwritten)" if accuracy.get("unwritten") else "")
                   if accuracy else "–")
        where = (f"{escape(column.label)}<div class=\"muted small\">{escape(str(result.get('kernel') or ''))}"
                 f"{' · ' + escape(column.run.label) if len(model.runs) > 1 else ''}</div>")
        location = ""
        if result.get("file"):
            line = number(result.get("line"))
            place = os.path.basename(str(result["file"])) + (f":{fmt_number(line)}" if line is not None else "")
            location = f'<div class="muted small">{escape(place)}</div>'
        rows.append([case_link(result) + location, where, badge(result["status"]),
                     f'<div class="message">{escape(result["message"])}</div>',
                     escape(fmt_fraction(accuracy.get("fraction_of_bound")) if accuracy else "–"),
                     escape(checked), worst_cell(result)])
    if not rows:
        rows = [['<span class="muted">No failures or errors.</span>'] + [""] * (len(headers) - 1)]
    intro = (f"<p>{len(failures)} failed or errored result{'s' if len(failures) != 1 else ''}. The worst element "
             "is the one that used most of its bound.</p>")
    return ("<section id=\"failures-section\"><h2>Failures and errors</h2>" + intro
            + table("failures", headers, rows) + "</section>")


# ---- performance and accuracy per op ----------------------------------------------------------

def dtype_style(dtype):
    return DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER)


def timed_results(model, op_results):
    return sorted((r for r in op_results if r["status"] == "pass" and kernel_timing(r)
                   and finite(r.get("bytes"))), key=column_sort_key)


def throughput_series(model, timed):
    series = {}
    for result in timed:
        key = (result["column"].key(), str(result.get("kernel") or ""), str(result.get("dtype") or ""))
        if key not in series:
            series[key] = {"label": f"{result['column'].label} · {key[1]} · {key[2]}".replace(" ·  · ", " · "),
                           "color": model.color(result["column"], key[1]), "style": dtype_style(key[2]),
                           "points": []}
        kernel = kernel_timing(result)
        median = kernel["median_s"]
        lower, upper = kernel.get("lower_quartile_s"), kernel.get("upper_quartile_s")
        lower = lower if finite(lower) and lower > 0 else median
        upper = upper if finite(upper) and upper > 0 else median
        series[key]["points"].append({"bytes": result["bytes"], "flops": result.get("flops") or 0.0,
                                      "median": median, "lower": lower, "upper": upper, "result": result})
    return list(series.values())


def ceiling_of(result, op):
    """(fraction, lower, upper, ceiling name) of the op's ceiling on the result's device, or None."""
    key, field, what = CEILING_FOR_OP.get(op, DEFAULT_CEILING)
    device = result["column"].device or {}
    ceiling = (device.get("ceilings") or {}).get(key)
    kernel = kernel_timing(result)
    amount = result.get(field)
    if not finite(ceiling) or ceiling <= 0 or not kernel or not finite(amount):
        return None
    lower = kernel.get("lower_quartile_s") if finite(kernel.get("lower_quartile_s")) else kernel["median_s"]
    upper = kernel.get("upper_quartile_s") if finite(kernel.get("upper_quartile_s")) else kernel["median_s"]
    rate = amount / kernel["median_s"]
    return rate / ceiling, amount / upper / ceiling, amount / lower / ceiling, what


def performance_block(model, op, op_results, images):
    timed = timed_results(model, op_results)
    if not timed:
        return (f"<p class=\"muted\">No timed results for <code>{escape(op)}</code> (perf cases are timed by "
                f"<code>kcs run --benchmark</code>).</p>")
    series = throughput_series(model, timed)
    key, field, what = CEILING_FOR_OP.get(op, DEFAULT_CEILING)
    if ("throughput", op) not in images:
        images[("throughput", op)] = kcs_plots.throughput_plot(op, series)
    parts = [image(images[("throughput", op)])]
    ceiling_series = []
    for s in series:
        points = []
        for p in s["points"]:
            found = ceiling_of(p["result"], op)
            if found:
                points.append({"bytes": p["bytes"], "fraction": found[0], "lower": found[1], "upper": found[2]})
        if points:
            ceiling_series.append({**s, "points": points})
    if ceiling_series:
        if ("ceiling", op) not in images:
            images[("ceiling", op)] = kcs_plots.ceiling_plot(op, ceiling_series, what)
        parts.append(image(images[("ceiling", op)]))
    else:
        parts.append(f'<p class="note">Fraction of {escape(what)}: <strong>no ceiling measured</strong> '
                     f'on these devices (the results carry no <code>ceilings.{escape(key)}</code>).</p>')
    rows = []
    for result in sorted(timed, key=lambda r: (model.case_order.get(r["case"], (r["stem"], 1e18, r["case"])),
                                               column_sort_key(r))):
        kernel = kernel_timing(result)
        timing = result.get("timing") or {}
        end_to_end = timing.get("end_to_end") or {}
        found = ceiling_of(result, op)
        rows.append([case_link(result), f'{escape(result["column"].label)}<div class="muted small">'
                     f'{escape(str(result.get("kernel") or ""))}</div>', timing_cell(result),
                     escape(fmt_time(end_to_end.get("median_s"))),
                     escape(fmt_si(result["bytes"] / kernel["median_s"], "B/s")),
                     escape(fmt_si((result.get("flops") or 0) / kernel["median_s"], "flop/s")),
                     escape(fmt_fraction(found[0])) if found else '<span class="muted">no ceiling measured</span>'])
    parts.append(table(None, ["case", "device, kernel", "kernel median", "end to end", "bytes/s", "flop/s",
                              f"fraction of {what}"], rows))
    return "\n".join(parts)


def accuracy_block(model, op, op_results, images):
    with_accuracy = [r for r in op_results if r.get("accuracy") and r["accuracy"].get("fraction_of_bound") is not None]
    if not with_accuracy:
        return f"<p class=\"muted\">No accuracy figures for <code>{escape(op)}</code>.</p>"
    if ("accuracy", op) not in images:
        series = {}
        for result in sorted(with_accuracy, key=column_sort_key):
            key = (result["column"].key(), str(result.get("kernel") or ""))
            if key not in series:
                series[key] = {"label": f"{result['column'].label} · {key[1]}" if key[1] else result["column"].label,
                               "color": model.color(result["column"], key[1]), "values": {}}
            series[key]["values"][result["case"].split("/", 1)[-1]] = result["accuracy"]["fraction_of_bound"]
        cases = [c.split("/", 1)[-1] for c in model.sorted_cases(r["case"] for r in with_accuracy)]
        images[("accuracy", op)] = kcs_plots.accuracy_plot(op, cases, list(series.values()))
    return image(images[("accuracy", op)])


def ops_of(results):
    return sorted({str(r.get("op")) for r in results})


def performance_section(model, images):
    parts = ["<section id=\"performance-section\"><h2>Performance</h2>"
             "<p>Kernel throughput is bytes (or flops) from the op's definition divided by the kernel's median "
             "time; error bars span the lower to the upper quartile of the repeats. The fraction of a ceiling "
             "divides it by the rate the suite measured on the same device in the same run.</p>"]
    for stem in model.stems:
        results = [r for r in model.latest_results() if r["stem"] == stem]
        for op in ops_of(results):
            op_results = [r for r in results if str(r.get("op")) == op]
            parts.append(f'<h3 id="perf-{escape(op)}">{escape(op)} <a class="small" href="{page_name(stem)}">'
                         f"case file →</a></h3>")
            parts.append(performance_block(model, op, op_results, images))
    return "\n".join(parts) + "</section>"


def accuracy_section(model, images):
    parts = ["<section id=\"accuracy-section\"><h2>Accuracy</h2>"
             "<p>For each case, the worst error over the checked output elements divided by the error bound the "
             "op derives for that element (docs/checking.md): below 1 passes, and how far below says how much of "
             "the error budget a kernel spends.</p>"]
    for stem in model.stems:
        results = [r for r in model.latest_results() if r["stem"] == stem]
        for op in ops_of(results):
            op_results = [r for r in results if str(r.get("op")) == op]
            parts.append(f'<h3 id="accuracy-{escape(op)}">{escape(op)}</h3>')
            parts.append(accuracy_block(model, op, op_results, images))
    return "\n".join(parts) + "</section>"


# ---- op pages: the case file woven with its results -------------------------------------------

def parse_case_block(lines):
    """key: value pairs of a kcs-case block (later keys do not override earlier ones)."""
    fields = {}
    for line in lines:
        text = line.strip()
        if not text or text.startswith("#") or ":" not in text:
            continue
        key, value = text.split(":", 1)
        fields.setdefault(key.strip(), value.strip())
    return fields


def case_results_table(model, results):
    has_message = any(r["message"] for r in results)
    headers = ["backend", "device", "kernel", "status", "fraction of bound", "kernel median", "GB/s"]
    if has_message:
        headers.append("message")
    rows = []
    for result in sorted(results, key=column_sort_key):
        accuracy = result.get("accuracy") or {}
        kernel = kernel_timing(result)
        gbps = (f"{result['bytes'] / kernel['median_s'] / 1e9:.3g}"
                if kernel and finite(result.get("bytes")) else "–")
        fraction = accuracy.get("fraction_of_bound") if accuracy else None
        css = "over" if fraction is not None and (not math.isfinite(fraction) or fraction > 1) else ""
        column = result["column"]
        device = column.label.split(": ", 1)[-1]
        row = [escape(column.backend or "–"), escape(device), escape(str(result.get("kernel") or "–")),
               badge(result["status"]), f'<span class="{css}">{escape(fmt_fraction(fraction))}</span>',
               timing_cell(result), escape(gbps)]
        if has_message:
            row.append(f'<div class="message">{escape(result["message"])}</div>')
        rows.append(row)
    return table(None, headers, rows, css="data case-results")


def render_case(model, stem, fields, lines, results_by_case, shown):
    name = fields.get("case", "")
    full = f"{stem}/{name}" if name else ""
    results = results_by_case.get(full, [])
    shown.add(full)
    facts = [fields.get("dtype", "")]
    if fields.get("sizes"):
        facts.append(fields["sizes"])
    facts += [f"{k[6:]}: {v}" for k, v in fields.items() if k.startswith("input ")]
    if fields.get("params"):
        facts.append(fields["params"])
    facts.append("expect " + fields.get("expect", "?"))
    tags = "".join(f' <span class="tag">{escape(t)}</span>' for t in fields.get("tags", "").split())
    statuses = sorted({r["status"] for r in results}, key=lambda s: STATUSES.index(s) if s in STATUSES else 9)
    summary = " ".join(badge(s) for s in statuses) if results else \
        '<span class="muted small">not in these results</span>'
    ident = case_anchor(full or "unnamed")
    body = case_results_table(model, results) if results else ""
    return (f'<div class="case{"" if results else " empty"}" id="{escape(ident)}"><div class="case-head">'
            f'<a class="case-name" href="#{escape(ident)}">'
            f'<code>{escape(full or "(block without a case name)")}</code></a>'
            f'<span class="facts">{escape(" · ".join(f for f in facts if f))}</span>{tags}'
            f'<span class="case-status">{summary}</span></div>{body}'
            f'<details><summary>case block</summary><pre><code>{escape(chr(10).join(lines))}</code></pre></details>'
            "</div>")


def op_page_body(model, stem, images, output_dir):
    results = [r for r in model.latest_results() if r["stem"] == stem]
    results_by_case = {}
    for result in results:
        results_by_case.setdefault(result["case"], []).append(result)
    path = os.path.join(model.cases_dir, f"{stem}.md") if model.cases_dir else None
    shown = set()
    parts = []
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()

        def render_case_block(lines):
            return render_case(model, stem, parse_case_block(lines), lines, results_by_case, shown)

        document = case_file_html(text, render_case_block, lambda url: rewrite_link(url, model, output_dir))
        counts = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
        names = {"pass": "passed", "fail": "failed", "skip": "skipped", "error": "errors"}
        plots_link = ' · <a href="#plots">plots</a>' if results else ""
        tally = ", ".join(f'{count_cell(counts[s], s)} {names[s]}' for s in ("pass", "fail", "skip", "error"))
        if results:
            parts.append(f'<p class="source muted small">Woven from <code>{escape(os.path.relpath(path))}</code> '
                         f"with the latest results of {len(results_by_case)} of its {len(shown)} cases: {tally}"
                         f"{plots_link}.</p>")
        else:
            parts.append(f'<p class="source muted small">Woven from <code>{escape(os.path.relpath(path))}</code>: '
                         f"none of its {len(shown)} cases is in these results.</p>")
        parts.append(document)
    else:
        parts.append(f"<h1>{escape(stem)}</h1><p class=\"note\">No case file <code>{escape(stem)}.md</code> in "
                     f"{escape(model.cases_dir or 'the cases directory')}: the results are listed without prose.</p>")
    missing = model.sorted_cases(c for c in results_by_case if c not in shown)
    if missing:
        parts.append("<h2 id=\"other-results\">Results for cases not in the case file</h2>")
        for case in missing:
            parts.append(render_case(model, stem, {"case": case.split("/", 1)[-1]}, [], results_by_case, shown))
    if results:
        parts.append("<h2 id=\"plots\">Plots</h2>")
        for op in ops_of(results):
            op_results = [r for r in results if str(r.get("op")) == op]
            parts.append(f"<h3>{escape(op)}: performance</h3>" + performance_block(model, op, op_results, images))
            parts.append(f"<h3>{escape(op)}: accuracy</h3>" + accuracy_block(model, op, op_results, images))
    return "\n".join(parts)


def heading_id(source):
    """A heading's id from its Markdown source: lower-case words joined by '-', marks dropped."""
    plain = re.sub(r"[`*_\\]", "", source).lower()
    return re.sub(r"[\s_]+", "-", re.sub(r"[^\w\s-]", "", plain)).strip("-") or "section"


def case_file_html(text, render_case_block, rewrite_link):
    """A case file's HTML: CommonMark with raw HTML shown as text, each kcs-case fence replaced by
    render_case_block(its lines), each heading given an id (unique in the page) and a '#' link to
    itself, links passed through rewrite_link, and images shown as links, so that the page never
    loads a file."""
    markdown = MarkdownIt("commonmark", {"html": False})
    plain_fence = markdown.renderer.rules["fence"]
    heading_ids = set()

    def fence(renderer, tokens, index, options, env):
        token = tokens[index]
        if token.info.strip() == "kcs-case":
            return render_case_block(token.content.splitlines()) + "\n"
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

CSS = """
:root { --fg:#1d232b; --muted:#6a737d; --line:#e3e6ea; --bg:#ffffff; --soft:#f6f8fa; --accent:#2f6db3;
  --pass:#1f7a44; --pass-bg:#dcf3e4; --fail:#b42318; --fail-bg:#fde2df; --error:#8a3ffc; --error-bg:#eee4ff;
  --skip:#5f6b73; --skip-bg:#eceff1; --warn:#9a5b00; --warn-bg:#fff1d6; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin:0; color:var(--fg); background:var(--bg); font: 15px/1.55 -apple-system, "Segoe UI", "Noto Sans",
  "DejaVu Sans", Helvetica, Arial, sans-serif; }
nav.top { position: sticky; top:0; z-index:10; background:#20262e; color:#fff; padding:0 24px;
  display:flex; flex-wrap:wrap; align-items:center; gap:4px 18px; min-height:46px; }
nav.top .brand { font-weight:700; letter-spacing:.02em; margin-right:10px; }
nav.top a { color:#c9d4e0; text-decoration:none; padding:12px 2px; border-bottom:2px solid transparent; }
nav.top a:hover { color:#fff; }
nav.top a.current { color:#fff; border-bottom-color:#6fa8ff; }
main { max-width: 1320px; margin: 0 auto; padding: 20px 28px 60px; }
h1 { font-size: 1.9em; margin: .6em 0 .2em; letter-spacing:-.01em; }
h2 { font-size: 1.4em; margin: 1.8em 0 .5em; padding-bottom:.25em; border-bottom:1px solid var(--line); }
h3 { font-size: 1.12em; margin: 1.5em 0 .4em; }
h4, h5, h6 { font-size: 1em; margin: 1.2em 0 .3em; }
h1 .anchor, h2 .anchor, h3 .anchor, h4 .anchor { visibility:hidden; margin-left:.35em; color:var(--muted);
  text-decoration:none; font-weight:400; }
h1:hover .anchor, h2:hover .anchor, h3:hover .anchor, h4:hover .anchor { visibility:visible; }
p, li { max-width: 52em; }
a { color: var(--accent); }
code { font: .88em/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace; background:var(--soft); padding:.1em .3em;
  border-radius:4px; }
pre { background:var(--soft); border:1px solid var(--line); border-radius:6px; padding:10px 14px; overflow:auto;
  max-width:100%; }
pre code { background:none; padding:0; font-size:.85em; }
blockquote { margin:1em 0; padding:.2em 1em; border-left:4px solid var(--line); color:#3d4650; }
hr { border:0; border-top:1px solid var(--line); margin:2em 0; }
.subtitle { color:var(--muted); margin:0 0 1em; }
.muted { color:var(--muted); }
.small { font-size:.85em; }
.table-wrap { overflow-x:auto; margin: .6em 0 1.2em; }
table { border-collapse: collapse; font-size: .9em; }
table.data th, table.prose th { text-align:left; font-weight:600; background:var(--soft); color:#3d4650;
  border-bottom:2px solid var(--line); padding:6px 10px; white-space:nowrap; position:sticky; top:0; }
table.data td, table.prose td { border-bottom:1px solid var(--line); padding:6px 10px; vertical-align:top; }
table.data td { white-space:nowrap; }
table.data td .wrap { white-space:normal; min-width:14em; max-width:30em; }
table.data tbody tr:nth-child(even) td { background:#fbfcfd; }
table.data tbody tr:hover td { background:#f1f5fb; }
table.matrix th { white-space:normal; min-width:9em; }
table.worst { font-size:1em; margin-top:2px; }
table.worst th { text-align:left; font-weight:400; color:var(--muted); padding:0 8px 0 0; border:0;
  background:none; position:static; }
table.worst td { padding:0; border:0; background:none !important; }
td .reason { min-width:10em; max-width:16em; }
td .wrap.narrow { min-width:9em; max-width:16em; }
td .message { white-space:pre-wrap; min-width:18em; font-family:"DejaVu Sans Mono", Menlo, monospace; font-size:.85em;
  max-width:34em; color:#3d4650; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:.82em; font-weight:600;
  line-height:1.5; white-space:nowrap; background:var(--skip-bg); color:var(--skip); }
.badge.pass, .badge.fixed, .badge.faster { background:var(--pass-bg); color:var(--pass); }
.badge.fail, .badge.regressed, .badge.slower { background:var(--fail-bg); color:var(--fail); }
.badge.error { background:var(--error-bg); color:var(--error); }
.badge.unclear { background:var(--warn-bg); color:var(--warn); }
.badge.same, .badge.unchanged, .badge.untimed { background:var(--skip-bg); color:var(--skip); }
.count { font-weight:600; }
.count.pass { color:var(--pass); } .count.fail { color:var(--fail); } .count.error { color:var(--error); }
.count.skip { color:var(--skip); }
.over { color:var(--fail); font-weight:600; }
.tag { display:inline-block; margin-left:6px; padding:0 6px; border:1px solid var(--line); border-radius:4px;
  font-size:.78em; color:var(--muted); }
figure { margin: 1em 0; }
figure img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:6px; }
.note { background:var(--warn-bg); border-left:4px solid #e0a030; padding:8px 12px; border-radius:4px; }
.verdict { font-weight:600; padding:8px 12px; border-radius:6px; }
.verdict.good { background:var(--pass-bg); color:var(--pass); }
.verdict.bad { background:var(--fail-bg); color:var(--fail); }
.stats { display:flex; flex-wrap:wrap; gap:8px 18px; margin:.6em 0 1em; }
.stat { display:flex; align-items:center; gap:6px; }
.stat .num { font-size:1.3em; font-weight:700; }
.cards { display:flex; flex-wrap:wrap; gap:12px; margin:1em 0; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 16px; min-width:120px; }
.card .num { font-size:1.6em; font-weight:700; display:block; }
.card.pass .num { color:var(--pass); } .card.fail .num { color:var(--fail); }
.card.error .num { color:var(--error); } .card.skip .num { color:var(--skip); }
.toc { columns: 2; max-width: 40em; padding-left: 1.2em; }
.case { border:1px solid var(--line); border-radius:8px; margin:1em 0 1.3em; padding:8px 12px 4px;
  background:#fff; box-shadow: 0 1px 2px rgba(0,0,0,.03); }
.case:target { border-color:var(--accent); box-shadow:0 0 0 3px #d6e6fb; }
.case-head { display:flex; flex-wrap:wrap; align-items:baseline; gap:4px 12px; }
.case-head .case-name { text-decoration:none; font-weight:600; }
.case-head .facts { color:var(--muted); font-size:.88em; }
.case-head .case-status { margin-left:auto; }
.case.empty { padding:6px 12px; margin:.5em 0; background:var(--soft); box-shadow:none; }
.case.empty details { display:inline-block; margin:0 0 0 12px; }
.case.empty .case-head { display:inline-flex; }
.case .table-wrap { margin:.4em 0 .2em; }
.case details { margin: 0 0 4px; font-size:.85em; }
details summary { cursor:pointer; color:var(--muted); }
details pre { margin:.3em 0; }
ul.compact { columns: 2; font-size:.9em; }
.dropped-link { text-decoration: underline dotted; }
footer { margin-top:3em; color:var(--muted); font-size:.85em; border-top:1px solid var(--line); padding-top:1em; }
"""


def page(title, current, model, body, generated):
    links = [f'<a href="index.html" class="{"current" if current == "index" else ""}">Overview</a>']
    for stem in model.stems:
        css = "current" if current == stem else ""
        links.append(f'<a href="{page_name(stem)}" class="{css}">{escape(stem)}</a>')
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"kcs-report\">\n"
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"<nav class=\"top\"><span class=\"brand\">kcs</span>{''.join(links)}</nav>\n<main>\n{body}\n"
        f"<footer id=\"end\">Generated by report/kcs_report.py on {escape(generated)} from "
        f"{escape(', '.join(r.label for r in model.runs))}"
        f"{escape(' against baseline ' + model.baseline.label) if model.baseline else ''}.</footer>\n"
        "</main>\n</body>\n</html>\n")


def index_body(model, images):
    totals = {s: sum(1 for run in model.runs for r in run.results if r["status"] == s) for s in STATUSES}
    names = {"pass": "passed", "fail": "failed", "skip": "skipped", "error": "errors"}
    cards = "".join(f'<div class="card {s}"><span class="num">{totals[s]}</span>{names[s]}</div>'
                    for s in ("pass", "fail", "skip", "error"))
    devices = sum(1 for c in model.columns if c.device)
    subtitle = (f"{len(model.runs)} results file{'s' if len(model.runs) != 1 else ''}, {devices} "
                f"device{'s' if devices != 1 else ''}, "
                f"{sum(len(run.results) for run in model.runs)} results"
                + (f"; compared with baseline {model.baseline.label}" if model.baseline else ""))
    sections = [("runs-section", "Results files"), ("devices-section", "Devices and drivers"),
                ("summary-section", "Summary")]
    if model.comparison:
        sections.append(("comparison-section", "Comparison with the baseline"))
    matrix = matrix_section(model)
    if matrix:
        sections.append(("matrix-section", "Cases by device and driver"))
    sections += [("failures-section", "Failures and errors"), ("performance-section", "Performance"),
                 ("accuracy-section", "Accuracy")]
    toc = "".join(f'<li><a href="#{ident}">{escape(text)}</a></li>' for ident, text in sections)
    verdict = ""
    if model.comparison:
        verdict = ('<p class="verdict bad">Regressed against the baseline: see the comparison.</p>'
                   if model.comparison.regressed() else
                   '<p class="verdict good">No regression against the baseline.</p>')
    return "\n".join([
        "<h1>kcs results</h1>", f'<p class="subtitle">{escape(subtitle)}</p>', f'<div class="cards">{cards}</div>',
        verdict, f'<ul class="toc">{toc}</ul>', runs_section(model), devices_section(model), summary_section(model),
        comparison_section(model), matrix, failures_section(model), performance_section(model, images),
        accuracy_section(model, images)])


def build_report(runs, output_dir, cases_dir=None, baseline=None, thresholds=None):
    """Writes index.html and the op pages; returns (path of index.html, Comparison or None)."""
    comparison = Comparison(baseline, runs, thresholds) if baseline else None
    model = Model(runs, baseline, comparison, cases_dir)
    os.makedirs(output_dir, exist_ok=True)
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    images = {}
    index_html = page("kcs results", "index", model, index_body(model, images), generated)
    for stem in model.stems:
        body = op_page_body(model, stem, images, output_dir)
        with open(os.path.join(output_dir, page_name(stem)), "w", encoding="utf-8") as handle:
            handle.write(page(f"kcs: {stem}", stem, model, body, generated))
    index_path = os.path.join(output_dir, "index.html")
    with open(index_path, "w", encoding="utf-8") as handle:
        handle.write(index_html)
    return index_path, comparison


def default_cases_dir():
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "cases"))


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="kcs_report.py",
        description="Turn kcs results files (docs/results.md, schema version 1) into a self-contained HTML "
                    "report, and compare them with a baseline results file.",
        epilog="Writes OUTPUT/index.html and OUTPUT/<op>.html (one per case file) and prints the path of "
               "index.html as the last line. Exit status: 0 done; 2 bad arguments or unreadable results; "
               "3 with --baseline, a case regressed (pass -> fail/error) or got slower. Speed: slower when "
               "the new lower quartile is above the baseline's upper quartile and the medians differ by more "
               "than the noise floor; unclear when the quartile ranges overlap but the medians differ by more "
               "than --unclear-above, or a side has fewer than --min-repeats repeats.")
    parser.add_argument("results", nargs="+", metavar="RESULTS.json", help="results files written by kcs run")
    parser.add_argument("--baseline", metavar="BASE.json",
                        help="compare against this results file (e.g. the old driver's); exit 3 on a regression")
    parser.add_argument("--cases", metavar="DIR", default=None,
                        help=f"directory of case files to weave into op pages (default: {default_cases_dir()})")
    parser.add_argument("--output", metavar="DIR", default=os.path.join("build", "report"),
                        help="directory to write the pages into (default: build/report)")
    parser.add_argument("--noise-floor", type=float, default=0.02, metavar="FRACTION",
                        help="medians closer than this (relative) are 'same' (default: 0.02)")
    parser.add_argument("--unclear-above", type=float, default=0.05, metavar="FRACTION",
                        help="overlapping quartile ranges with medians further apart than this are 'unclear' "
                             "(default: 0.05)")
    parser.add_argument("--min-repeats", type=int, default=3, metavar="N",
                        help="fewer timed repeats on either side makes the speed 'unclear' (default: 3)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
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
    thresholds = Thresholds(args.noise_floor, args.unclear_above, args.min_repeats)
    try:
        index_path, comparison = build_report(runs, args.output, cases_dir, baseline, thresholds)
    except OSError as error:
        print(f"kcs_report: cannot write the report in {args.output}: {error}", file=sys.stderr)
        return EXIT_USAGE
    for run in runs:
        counts = {s: sum(1 for r in run.results if r["status"] == s) for s in STATUSES}
        print(f"{run.label}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped, "
              f"{counts['error']} errors")
    status = EXIT_OK
    if comparison:
        for line in comparison.summary_lines():
            print(line)
        if comparison.regressed():
            status = EXIT_REGRESSED
    print(index_path)
    return status


if __name__ == "__main__":
    sys.exit(main())
