"""The report's plots (matplotlib): the roofline of each device, as SVG inlined into the page.

Plots take plain data (kcs_views.rooflines: series with labels and points, the ceilings of each
results file) so that they know nothing of the results schema. SVG rather than PNG: a roofline is
a few lines and points, which as vectors weigh a few tens of kilobytes where a PNG of the same
plot weighed hundreds once base64-encoded (the PNGs were 97% of a 3.9 MB index.html), stays
sharp at any zoom, keeps its text as text, and lets each point carry a tooltip (<title>) with its
case, kernel, time, rate and fraction of its ceiling.
"""

import html
import io
import math
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the Agg backend must be chosen first)
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

DISPLAY_DPI = 96    # SVG user units are points; the page shows them at CSS pixels
# One colour per op (kcs_report gives each op its index, stable across the report), one marker
# per kernel variant of an op; a vendor library's kernel (cuBLAS, CUB) is a star (a pentagon for a
# second library kernel of the op, ...).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#1a1a6e", "#f4a6a6"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
LIBRARY_MARKERS = ["*", "p", "h", "8"]

plt.rcParams.update({
    "font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10, "axes.titleweight": "bold",
    "axes.labelsize": 9, "axes.spines.top": False, "axes.spines.right": False,
    "axes.edgecolor": "#888888", "axes.grid": True, "grid.color": "#e4e4e4", "grid.linewidth": 0.7,
    "legend.fontsize": 8, "legend.frameon": False, "xtick.color": "#444444",
    "ytick.color": "#444444", "figure.facecolor": "white",
    "svg.fonttype": "none",   # text stays text: lighter, selectable, in the page's font
    "svg.hashsalt": "kcs",    # ids that do not change from run to run
})


def _text(label):
    """A label as plain text: '$' would otherwise start matplotlib's mathtext."""
    return str(label).replace("$", r"\$")


def si(value, unit):
    """A tick label: 3 significant digits and an SI prefix (16.4 kB, 2 TB/s)."""
    if value == 0 or not math.isfinite(value):
        return f"0 {unit}" if value == 0 else str(value)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
                          (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if abs(value) >= scale * 0.9995:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _svg(fig, ident, titles, css_class, alt):
    """The figure as an <svg> element to inline in HTML: no XML prologue or namespaces (HTML
    supplies them), every id prefixed with ident so that several plots share a page, a <title>
    (tooltip) in each group whose gid titles names, and the display size in CSS pixels."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    width, height = fig.get_size_inches()
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text, count=3)
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = re.sub(r'id="([^"]+)"', lambda m: f'id="{ident}-{m.group(1)}"', text)
    text = re.sub(r'(url\(#|href="#)([^")]+)', lambda m: f"{m.group(1)}{ident}-{m.group(2)}", text)
    for gid, title in titles.items():
        text = text.replace(f'<g id="{ident}-{gid}">', f'<g id="{ident}-{gid}"><title>{html.escape(title)}</title>', 1)
    size = f'width="{round(width * DISPLAY_DPI)}" height="{round(height * DISPLAY_DPI)}"'
    text = re.sub(r'<svg\s+width="[^"]*"\s+height="[^"]*"',
                  f'<svg class="{css_class}" id="{ident}" role="img" aria-label="{html.escape(alt)}" {size}', text, count=1)
    return text


def _marker(series):
    """series['marker']: 0, 1, ... a kcs variant's; -1, -2, ... a library kernel's."""
    if series["marker"] < 0:
        return LIBRARY_MARKERS[(-1 - series["marker"]) % len(LIBRARY_MARKERS)]
    return MARKERS[series["marker"] % len(MARKERS)]


def roofline_svg(plot, ident):
    """A device's roofline as inline SVG: each kernel at (arithmetic intensity, achieved FLOP/s) on
    log-log axes, under the copy bandwidth (the sloped roof: bytes/s x FLOP/byte) and every compute
    rate measured (flat roofs); the latest file's ceilings solid and labelled, earlier files'
    dotted, and each kernel's earlier points hollow, joined to its latest by a thin line.
    plot: kcs_views.rooflines() entry; ident: the element id, unique in the page."""
    runs = plot["runs"]
    last_run = max((r["run"] for r in runs), default=0)
    xs = [p["x"] for s in plot["series"] for p in s["points"]]
    ys = [p["y"] for s in plot["series"] for p in s["points"]]
    tops = [rate for run in runs for _, rate in run["compute"]]
    ridges = [rate / run["copy"] for run in runs if run["copy"] for _, rate in run["compute"]]
    # Every point and the ridge points (where a flat roof meets the sloped one) in view; without
    # points (no kernel had both flops and bytes), the roofs alone.
    x_low, x_high = min(xs + ridges + [1.0]) / 4, max(xs + ridges + [1.0]) * 4
    copies = [run["copy"] * x for run in runs if run["copy"] for x in (x_low, x_high)]
    y_low = min(ys) / 4 if ys else min(tops + copies + [1e9]) / 10
    y_high = max(ys + tops + [y_low * 10]) * 3
    fig, axes = plt.subplots(figsize=(6.6, 4.1))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(x_low, x_high)
    axes.set_ylim(y_low, y_high)
    for run in sorted(runs, key=lambda r: r["run"] == last_run):
        latest = run["run"] == last_run
        style = {"color": "#3d4650" if latest else "#9aa3ad", "linewidth": 1.3 if latest else 1.0,
                 "linestyle": "-" if latest else ":", "zorder": 2}
        if run["copy"]:
            axes.plot([x_low, x_high], [run["copy"] * x_low, run["copy"] * x_high], **style)
            if latest:
                x = max(x_low * 1.3, y_low * 1.6 / run["copy"])
                axes.annotate(f"copy {si(run['copy'], 'B/s')}", (x, run["copy"] * x), xytext=(2, 6),
                              textcoords="offset points", fontsize=7.5, color="#3d4650")
        above = None  # the last labelled roof: a roof close under it is labelled below its line
        for name, rate in sorted(run["compute"], key=lambda item: -item[1]):
            axes.axhline(rate, **style)
            if latest:
                under = above is not None and above / rate < 1.8
                axes.annotate(f"{name} {si(rate, 'FLOP/s')}", (x_high, rate), xytext=(-3, -3 if under else 3),
                              textcoords="offset points", ha="right", va="top" if under else "bottom",
                              fontsize=7.5, color="#3d4650")
                above = rate
    for x0, y0, x1, y1 in plot["links"]:
        axes.plot([x0, x1], [y0, y1], color="#b8bec6", linewidth=0.8, zorder=3)
    titles, count = {}, 0
    for series in plot["series"]:
        color = PALETTE[series["color"] % len(PALETTE)]
        marker = _marker(series)
        # Earlier files first, so that the latest file's filled point is drawn over a hollow one
        # at the same place, and is the one the legend shows.
        points = sorted(series["points"], key=lambda p: p["run"])
        for number, point in enumerate(points):
            gid = f"pt-{count}"
            count += 1
            hollow = point["run"] != last_run
            collection = axes.scatter([point["x"]], [point["y"]], marker=marker, s=70 if marker in LIBRARY_MARKERS else 30,
                                      facecolors="white" if hollow else color, edgecolors=color, linewidths=1.1,
                                      zorder=4 if hollow else 5,
                                      label=_text(series["label"]) if number == len(points) - 1 else None)
            collection.set_gid(gid)
            titles[gid] = point["title"]
    formatter_y = FuncFormatter(lambda y, _: si(y, "FLOP/s"))
    axes.yaxis.set_major_formatter(formatter_y)
    # Few decades: ticks at 1, 2 and 5 of each, so that the axis has at least two labels.
    axes.yaxis.set_major_locator(LogLocator(base=10, numticks=12,
                                            subs=(1.0,) if y_high / y_low > 1e3 else (1.0, 2.0, 5.0)))
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("arithmetic intensity (FLOP/byte, from the op's definition)")
    axes.set_ylabel("achieved (FLOP / kernel median)")
    axes.set_title(_text(plot["title"]), loc="left")
    if plot["series"]:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, handletextpad=0.3,
                    borderaxespad=0.0, labelspacing=0.35, scatterpoints=1)
    fig.tight_layout()
    return _svg(fig, ident, titles, "roofline", f"roofline of {plot['title']}: {count} kernels")
