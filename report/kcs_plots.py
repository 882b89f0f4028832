"""The report's plots (matplotlib, Agg), each returned as a PNG data URI to embed in the page.

Plots take plain data (lists of series with labels and points) so that they know nothing of the
results schema. A series has a 'label', a 'color' index (stable per device across all plots of a
report) and a 'style' index (per dtype). Axes turn logarithmic where values span decades.
"""

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the Agg backend must be chosen first)
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator  # noqa: E402

DPI = 144           # rendered at 1.5x the displayed size, so plots stay crisp on dense screens
DISPLAY_DPI = 96
PALETTE = ["#2f6db3", "#d9822b", "#2e9e5b", "#b8405e", "#7c5cbf", "#8c6d46",
           "#c060a6", "#5f6b73", "#a8a02a", "#2aa3b8"]
STYLES = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", "-")]

plt.rcParams.update({
    "font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10, "axes.titleweight": "bold",
    "axes.labelsize": 9, "axes.spines.top": False, "axes.spines.right": False,
    "axes.edgecolor": "#888888", "axes.grid": True, "grid.color": "#e4e4e4", "grid.linewidth": 0.7,
    "legend.fontsize": 8, "legend.frameon": False, "xtick.color": "#444444",
    "ytick.color": "#444444", "figure.facecolor": "white",
})


class Image:
    """A rendered plot: the data URI and its display size in CSS pixels."""

    def __init__(self, uri, width, height, alt):
        self.uri, self.width, self.height, self.alt = uri, width, height, alt


def _finish(fig, alt):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    width, height = fig.get_size_inches()
    plt.close(fig)
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return Image(uri, round(width * DISPLAY_DPI), round(height * DISPLAY_DPI), alt)


def _text(label):
    """A label as plain text: '$' would otherwise start matplotlib's mathtext."""
    return str(label).replace("$", r"\$")


def _color(series):
    return PALETTE[series.get("color", 0) % len(PALETTE)]


def _style(series):
    return STYLES[series.get("style", 0) % len(STYLES)]


def _spans_decades(values, factor=30.0):
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    return len(positive) > 1 and max(positive) / min(positive) >= factor


def si(value, unit):
    """A tick label: 3 significant digits and an SI prefix (16.4 kB, 2 TB/s)."""
    if value == 0 or not math.isfinite(value):
        return f"0 {unit}" if value == 0 else str(value)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
                          (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if abs(value) >= scale * 0.9995:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _size_axis(axes, sizes):
    """A log axis of bytes per call; with few distinct sizes, ticks exactly at them."""
    sizes = sorted({x for x in sizes if x > 0 and math.isfinite(x)})
    axes.set_xscale("log")
    if not sizes:
        return
    axes.set_xlim(sizes[0] / 1.6, sizes[-1] * 1.6)
    if len(sizes) <= 8 and sizes[-1] / sizes[0] < 10:
        axes.xaxis.set_major_locator(FixedLocator(sizes))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: si(x, "B")))
    else:
        axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: si(x, "B")))
        axes.xaxis.set_minor_formatter(NullFormatter())


def _legend(fig, axes_list, count):
    handles, labels = axes_list[0].get_legend_handles_labels()
    if not handles:
        return 0.0
    columns = 1 if count <= 2 else 2 if count <= 8 else 3
    rows = math.ceil(count / columns)
    fig.legend(handles, labels, loc="lower center", ncol=columns, bbox_to_anchor=(0.5, 0.0))
    return 0.18 * rows + 0.15  # inches the legend needs below the axes


def throughput_plot(op, series):
    """Bytes/s and flops/s (kernel medians, quartile error bars) against bytes moved.
    series: [{'label', 'color', 'style', 'points': [{'bytes', 'flops', 'median', 'lower', 'upper'}]}]"""
    has_flops = any(p["flops"] and p["flops"] > 0 for s in series for p in s["points"])
    panels = [("bytes", "bytes/s", "bytes moved / kernel time")]
    if has_flops:
        panels.append(("flops", "flop/s", "flops / kernel time"))
    legend_rows = math.ceil(len(series) / (1 if len(series) <= 2 else 2 if len(series) <= 8 else 3))
    height = 3.3 + 0.18 * legend_rows
    fig, axes_list = plt.subplots(1, len(panels), figsize=(10, height), squeeze=False)
    axes_list = list(axes_list[0])
    all_x = [p["bytes"] for s in series for p in s["points"]]
    for axes, (field, unit, title) in zip(axes_list, panels):
        all_y = []
        for s in series:
            points = sorted((p for p in s["points"] if p[field] and p[field] > 0), key=lambda p: p["bytes"])
            if not points:
                continue
            x = [p["bytes"] for p in points]
            y = [p[field] / p["median"] for p in points]
            below = [max(0.0, p[field] / p["median"] - p[field] / p["upper"]) for p in points]
            above = [max(0.0, p[field] / p["lower"] - p[field] / p["median"]) for p in points]
            all_y.extend(y)
            marker, line = _style(s)
            axes.errorbar(x, y, yerr=[below, above], color=_color(s), marker=marker, linestyle=line,
                          markersize=5, linewidth=1.4, capsize=3, label=_text(s["label"]))
        axes.set_title(f"{op}: {title}")
        axes.set_xlabel("bytes moved per call (from the op's definition)")
        axes.set_ylabel(unit)
        _size_axis(axes, all_x)
        suffix = "flop/s" if field == "flops" else "B/s"
        formatter = FuncFormatter(lambda y, _, suffix=suffix: si(y, suffix))
        if _spans_decades(all_y):
            axes.set_yscale("log")
        else:
            axes.set_ylim(bottom=0, top=max(all_y, default=1) * 1.15)
        axes.yaxis.set_major_formatter(formatter)
        axes.yaxis.set_minor_formatter(NullFormatter())
    below = _legend(fig, axes_list, len(series))
    fig.tight_layout(rect=(0, below / height, 1, 1))
    return _finish(fig, f"{op}: kernel throughput by device and size")


def ceiling_plot(op, series, what):
    """Fraction of a device ceiling against bytes moved; `what` names the ceiling.
    series: [{'label', 'color', 'style', 'points': [{'bytes', 'fraction', 'lower', 'upper'}]}]"""
    legend_rows = math.ceil(len(series) / (1 if len(series) <= 2 else 2 if len(series) <= 8 else 3))
    height = 3.0 + 0.18 * legend_rows
    fig, axes = plt.subplots(figsize=(10, height))
    all_x, top = [], 1.0
    for s in series:
        points = sorted(s["points"], key=lambda p: p["bytes"])
        x = [p["bytes"] for p in points]
        y = [p["fraction"] for p in points]
        below = [max(0.0, p["fraction"] - p["lower"]) for p in points]
        above = [max(0.0, p["upper"] - p["fraction"]) for p in points]
        all_x.extend(x)
        top = max([top] + [p["upper"] for p in points if math.isfinite(p["upper"])])
        marker, line = _style(s)
        axes.errorbar(x, y, yerr=[below, above], color=_color(s), marker=marker, linestyle=line,
                      markersize=5, linewidth=1.4, capsize=3, label=_text(s["label"]))
    axes.axhline(1.0, color="#444444", linewidth=1, linestyle="--")
    axes.set_ylim(0, top * 1.1)
    axes.set_title(f"{op}: fraction of {what}")
    axes.set_xlabel("bytes moved per call")
    axes.set_ylabel(f"fraction of {what}")
    _size_axis(axes, all_x)
    below = _legend(fig, [axes], len(series))
    fig.tight_layout(rect=(0, below / height, 1, 1))
    return _finish(fig, f"{op}: fraction of {what}")


def accuracy_plot(op, cases, series):
    """Fraction of the error bound used, per case (rows) and series (markers), log scale, with
    the line at 1. Exact results (0) sit at the left edge, hollow; NaN or infinite fractions at
    the right edge as crosses. series: [{'label', 'color', 'values': {case: fraction}}]"""
    finite = [v for s in series for v in s["values"].values() if v is not None and math.isfinite(v)]
    positive = [v for v in finite if v > 0]
    floor = 10 ** (math.floor(math.log10(min(positive))) - 1) if positive else 1e-6
    floor = min(floor, 1e-3)
    # Far-off failures are drawn at a capped right edge (as triangles), so that the line at 1 and
    # the passing cases keep most of the width; the tables give the exact figures.
    limit = 1e3
    ceiling = min(limit, 10 ** (math.ceil(math.log10(max(positive + [1.0]))) + 1))
    legend_rows = math.ceil(len(series) / (1 if len(series) <= 2 else 2 if len(series) <= 8 else 3))
    height = 1.2 + 0.22 * len(cases) + 0.18 * legend_rows
    fig, axes = plt.subplots(figsize=(10, height))
    positions = {case: len(cases) - 1 - n for n, case in enumerate(cases)}
    count = len(series)
    for k, s in enumerate(series):
        offset = (k - (count - 1) / 2) * min(0.18, 0.7 / max(count, 1))
        normal, zero, bad, beyond = ([], []), ([], []), ([], []), ([], [])
        for case, value in s["values"].items():
            if case not in positions or value is None:
                continue
            y = positions[case] + offset
            if not math.isfinite(value):
                bad[0].append(ceiling)
                bad[1].append(y)
            elif value > ceiling:
                beyond[0].append(ceiling)
                beyond[1].append(y)
            elif value <= 0:
                zero[0].append(floor)
                zero[1].append(y)
            else:
                normal[0].append(value)
                normal[1].append(y)
        color = _color(s)
        axes.scatter(normal[0], normal[1], color=color, s=22, zorder=3, label=_text(s["label"]))
        if zero[0]:
            axes.scatter(zero[0], zero[1], facecolors="none", edgecolors=color, s=22, zorder=3)
        if bad[0]:
            axes.scatter(bad[0], bad[1], color=color, marker="x", s=30, zorder=3)
        if beyond[0]:
            axes.scatter(beyond[0], beyond[1], color=color, marker=">", s=34, zorder=3)
    axes.axvspan(1.0, ceiling * 1.5, color="#f6d5d5", zorder=0)
    axes.axvline(1.0, color="#b03030", linewidth=1.2, zorder=2)
    axes.set_xscale("log")
    axes.set_xlim(floor / 1.5, ceiling * 1.5)
    axes.set_yticks(range(len(cases)))
    axes.set_yticklabels([_text(c) for c in reversed(cases)], fontsize=8)
    axes.set_ylim(-0.7, len(cases) - 0.3)
    axes.grid(axis="y", visible=False)
    axes.set_title(f"{op}: fraction of the error bound used (1 = at the bound; right of the line fails)")
    axes.set_xlabel("worst |error| / bound over the checked elements.  Hollow: exact (0), at the left edge;  "
                    f"▶: beyond {ceiling:.0e}, at the right edge;  x: NaN or infinite")
    below = _legend(fig, [axes], len(series))
    fig.tight_layout(rect=(0, below / height, 1, 1))
    return _finish(fig, f"{op}: fraction of the error bound used per case")
