"""What the report's performance and accuracy views show, worked out from the results files.

The pages (kcs_report.py, templates/) and the roofline plot (kcs_plots.py) only lay these out;
every figure a view shows is decided here, once:

- **Lines across runs.** Several results files (drivers, cards, dates) are overlaid: each result is
  lined up with the same case, backend and kernel on the same device slot of the other files,
  and each later file's kernel median is given as a ratio against the first file's, or against
  the --baseline's when there is one (the baseline is then the first). The slot is the device id
  (cuda:0 with cuda:0: another driver or another card in the same place); with a baseline, the
  comparison's device pairs (kcs_compare: --map, uuid, backend + index + name) decide instead.
- **The applicable ceiling.** A timed result is held to the ceiling its op names: the runner
  writes which (copy bandwidth, GEMM rate) and the fraction reached into timing.ceiling, and that
  fraction is the only one shown anywhere. A ceiling the device did not measure is "not measured".
- **Rooflines.** One per device slot: each timed kernel at (flops / bytes of its op's definition,
  flops / kernel median), against the device's copy bandwidth and every compute rate it measured
  (FMA, GEMM), one set per file when runs are overlaid.
- **Peers.** Per perf case and card (the same uuid, else the same name: a card's CUDA and OpenCL
  devices are one card), every backend and variant side by side; the peer is the fastest library
  row where one ran ("kernel_library": cuBLAS, CUB, and PyTorch's rows, which
  kcs_torch_peers.py adds), else the fastest kcs variant on that card; the scalar reference is
  compared with too. A case where a library row is faster than kcs's fastest own row on the
  card is named, with the ratio (docs/peers.md).
- **Flags.** An end-to-end time below the kernel time (the two measurements disagree), a rate
  above the ceiling it is held to (the ceiling does not apply, or was measured low).
- **Accuracy.** The distribution of the fraction of the bound used (the check's
  "fraction_histogram"), the worst element, and a mark: at the bound by construction (the case
  file's "bound-tight" reason, "bound_tight" in the results) or near it by accident: more than
  NEAR_BOUND of it used with no such reason.
"""

import math

from kcs_results import device_uuid, finite, fraction_histogram, kernel_timing, number, outcome

# A pass that used more than this fraction of its bound is "near the bound". Bounds are
# worst-case derivations (each rounding at its largest, errors adding up in the worst order); a
# kernel typically spends a small fraction of them, so one that used more than half has less
# than a factor of two left: one binade, the top bin of the checker's power-of-two histogram.
NEAR_BOUND = 0.5

# A rate this far above the ceiling it is held to is flagged: a kernel may match a measured
# ceiling and, within the scatter of the two measurements, pass it by a few percent; beyond
# that the ceiling does not describe the kernel (another GEMM mode) or was measured low.
ABOVE_CEILING = 1.10

# What the device ceilings are called, by their key in a device's "ceilings" and a timing's
# "ceiling": (name, short name for labels, unit). Copy bandwidth bounds bytes/s; the others are
# compute rates and are drawn as flat roofs. A "*_flops_per_s" key not listed here is a compute
# rate too (a GEMM rate of another mode), named after its key.
CEILINGS = {"copy_bytes_per_s": ("copy bandwidth", "copy", "B/s"),
            "host_to_device_bytes_per_s": ("host-to-device bandwidth", "upload", "B/s"),
            "fma_flops_per_s": ("FMA rate", "FMA", "FLOP/s"),
            # one GEMM rate per mode (docs/results.md, "One GEMM ceiling per mode"); the f32 one
            # kept the key it had before there were others
            "gemm_flops_per_s": ("f32 GEMM rate", "f32 GEMM", "FLOP/s"),
            "gemm_tf32_flops_per_s": ("TF32 GEMM rate", "TF32 GEMM", "FLOP/s"),
            "gemm_f16_flops_per_s": ("f16 GEMM rate", "f16 GEMM", "FLOP/s"),
            "gemm_bf16_flops_per_s": ("bf16 GEMM rate", "bf16 GEMM", "FLOP/s"),
            "gemm_f64_flops_per_s": ("f64 GEMM rate", "f64 GEMM", "FLOP/s"),
            "gemm_fp8_e4m3_flops_per_s": ("FP8 e4m3 GEMM rate", "FP8 GEMM", "FLOP/s")}
# The GEMM rates of every mode, f32 first.
GEMM_CEILINGS = tuple(k for k in CEILINGS if k.startswith("gemm_"))
# The ceilings a roofline draws, and says "not measured" for when a device lacks them.
ROOFLINE_CEILINGS = ("copy_bytes_per_s", "fma_flops_per_s", "gemm_flops_per_s")


def ceiling_names(key):
    """(name, short name, unit) of a ceiling key: 'gemm_tf32_flops_per_s' -> ('gemm tf32 rate', ...)."""
    if key in CEILINGS:
        return CEILINGS[key]
    stem = str(key).replace("_flops_per_s", "").replace("_bytes_per_s", "").replace("_", " ")
    return (f"{stem} rate", stem, "FLOP/s" if str(key).endswith("_flops_per_s") else "B/s")


def measured_ceilings(device):
    """{key: rate} of the ceilings a device record measured (positive numbers only)."""
    ceilings = (device or {}).get("ceilings") or {}
    return {k: v for k, v in ceilings.items() if finite(v) and v > 0}


def ceilings_not_asked(device):
    """The ceiling keys a device record lists as not measured in this run: its run measured only
    the ceilings its timed cases are judged against (docs/results.md), so these say nothing of the
    device."""
    listed = ((device or {}).get("ceilings") or {}).get("not_measured_in_this_run")
    return set(listed) if isinstance(listed, list) else set()


def missing_ceiling_lines(device, keys):
    """For each of keys the device record lacks: 'FMA rate not measured in this run' where the run
    did not ask for it, else 'FMA rate not measured' (the device could not)."""
    measured, not_asked = measured_ceilings(device), ceilings_not_asked(device)
    return [f"{ceiling_names(k)[0]} not measured" + (" in this run" if k in not_asked else "")
            for k in keys if k not in measured]


def compute_ceilings(device):
    """[(key, rate)] of a device's measured compute rates (every *_flops_per_s), FMA first."""
    rates = [(k, v) for k, v in measured_ceilings(device).items() if k.endswith("_flops_per_s")]
    return sorted(rates, key=lambda kv: (kv[0] != "fma_flops_per_s", kv[0] != "gemm_flops_per_s", kv[0]))


# ---- one timed result ---------------------------------------------------------------------------

def is_timed(result):
    """A pass with a usable kernel median."""
    return result is not None and result["status"] == "pass" and kernel_timing(result) is not None


def ceiling_of(result):
    """The timing's "ceiling" object (which ceiling bounds the op, the fraction reached), or None
    (a version-1 file, or an untimed result)."""
    ceiling = (result.get("timing") or {}).get("ceiling")
    return ceiling if isinstance(ceiling, dict) else None


def speed(result):
    """How fast a timed result ran, against the ceiling it is held to:
    {'median', 'measure' ('bytes'/'flops'), 'rate', 'unit', 'ceiling' (name), 'ceiling_short',
     'fraction' (None when not measured or not recorded), 'note' (why there is no fraction)}."""
    kernel = kernel_timing(result)
    median = kernel["median_s"]
    ceiling = ceiling_of(result)
    measure = str((ceiling or {}).get("measure") or ("flops" if (ceiling or {}).get("kind") == "gemm" else "bytes"))
    amount = number(result.get(measure))
    rate = (ceiling or {}).get("achieved_per_s")
    if not finite(rate):
        rate = amount / median if finite(amount) else None
    unit = "FLOP/s" if measure == "flops" else "B/s"
    if ceiling is None:
        return {"median": median, "measure": measure, "rate": rate, "unit": unit, "ceiling": None,
                "ceiling_short": None, "fraction": None, "note": "not recorded"}
    name, short, _ = ceiling_names(ceiling.get("ceiling_key") or f"{ceiling.get('kind')}_rate")
    fraction = ceiling.get("fraction")
    return {"median": median, "measure": measure, "rate": rate, "unit": unit, "ceiling": name,
            "ceiling_short": short, "fraction": fraction if finite(fraction) else None,
            "note": None if finite(fraction) else f"{short} not measured"}


def intensity(result):
    """Arithmetic intensity: flops per byte from the op's definition; None without both."""
    flops, size = number(result.get("flops")), number(result.get("bytes"))
    if finite(flops) and finite(size) and flops > 0 and size > 0:
        return flops / size
    return None


def flags(result, fmt_time):
    """What a reader must not miss about a timed result's figures, as sentences."""
    found = []
    kernel = kernel_timing(result)
    end_to_end = (result.get("timing") or {}).get("end_to_end") or {}
    total = end_to_end.get("median_s")
    if finite(total) and total > 0 and total < kernel["median_s"]:
        why = "the two measurements disagree"
        rotated_kernel, rotated_total = number(kernel.get("rotated_copies")), number(end_to_end.get("rotated_copies"))
        if finite(rotated_kernel) and finite(rotated_total) and rotated_total < rotated_kernel:
            why = (f"its repeats rotate {int(rotated_total)} set{'' if rotated_total == 1 else 's'} of buffers "
                   f"where the kernel's rotate {int(rotated_kernel)}, so they may find their data in cache")
        found.append(f"end to end {fmt_time(total)} is below the kernel time {fmt_time(kernel['median_s'])}: {why}")
    figures = speed(result)
    if figures["fraction"] is not None and figures["fraction"] > ABOVE_CEILING:
        found.append(f"{figures['fraction']:.3g} of the {figures['ceiling']}: more than {ABOVE_CEILING:g} times the "
                     f"ceiling it is held to (the ceiling does not fit this kernel, e.g. another GEMM mode, or was "
                     f"measured low)")
    return found


# ---- lining results up across runs --------------------------------------------------------------

class Lines:
    """Results lined up across the files shown: runs[0] is the first (the baseline, when there is
    one); lines maps (case, backend, kernel, slot) to a list with each run's result or None."""

    def __init__(self, runs, comparison=None):
        self.runs = runs
        partner = {}
        if comparison is not None:
            partner = {(id(p.run), str(p.new.get("id"))): str(p.old.get("id")) for p in comparison.pairs}
        self.lines = {}
        for position, run in enumerate(runs):
            for result in run.results:
                device = result.get("device_record")
                if device is None:
                    continue
                own = str(device.get("id"))
                slot = own
                if comparison is not None and position > 0:
                    # Matched to nothing in the baseline: a slot of its own.
                    slot = partner.get((id(run), own), f"{run.label} {own}")
                key = (result["case"], str(result.get("backend") or ""), str(result.get("kernel") or ""), slot)
                self.lines.setdefault(key, [None] * len(runs))[position] = result

    @property
    def overlaid(self):
        """True when more than one file is shown."""
        return len(self.runs) > 1

    def latest(self, line):
        """The result of the last file that has one."""
        return next(r for r in reversed(line) if r is not None)


def ratio_to_first(line):
    """Each run's kernel median over the first run's (None where either is not timed)."""
    first = line[0]
    base = kernel_timing(first)["median_s"] if is_timed(first) else None
    return [kernel_timing(r)["median_s"] / base if base and is_timed(r) else None for r in line]


# ---- rooflines ----------------------------------------------------------------------------------

def rooflines(lines, device_label, op_color, fmt_time, fmt_si):
    """One roofline per device slot that timed something: plain data for kcs_plots.roofline_svg and
    the page. device_label(result) names the device; op_color(op) gives an op its colour index."""
    slots = {}
    for key, line in lines.lines.items():
        if any(is_timed(r) for r in line):
            slots.setdefault(key[3], []).append((key, line))
    plots = []
    for slot, members in slots.items():
        latest = [lines.latest(line) for _, line in members]
        devices = []  # per run: the device record of this slot, or None
        for position in range(len(lines.runs)):
            device = next((line[position]["device_record"] for _, line in members if line[position] is not None), None)
            devices.append(device)
        runs = []
        for position, device in enumerate(devices):
            if device is None:
                continue
            measured = measured_ceilings(device)
            runs.append({"run": position, "label": lines.runs[position].label,
                         "copy": measured.get("copy_bytes_per_s"),
                         "compute": [(ceiling_names(k)[1], v) for k, v in compute_ceilings(device)]})
        newest = devices[max(i for i, d in enumerate(devices) if d is not None)]
        measured = measured_ceilings(newest)
        not_asked = ceilings_not_asked(newest)
        missing = [ceiling_names(k)[0] for k in ROOFLINE_CEILINGS if k not in measured and k not in not_asked]
        not_in_run = [ceiling_names(k)[0] for k in ROOFLINE_CEILINGS if k not in measured and k in not_asked]
        series, links, off_plot = {}, [], []
        for (case, backend, kernel, _), line in sorted(members, key=lambda m: m[0]):
            newest_result = lines.latest(line)
            op = str(newest_result.get("op") or "")
            library = next((r.get("kernel_library") for r in line if r is not None and r.get("kernel_library")), None)
            label = f"{op} · {kernel}" + (f" ({library})" if library else "")
            points = []
            for position, result in enumerate(line):
                if not is_timed(result):
                    continue
                x = intensity(result)
                figures = speed(result)
                flops = number(result.get("flops"))
                if x is None:
                    off_plot.append(f"{case} · {kernel}")
                    continue
                y = flops / figures["median"]
                fraction = (f"{figures['fraction']:.3g} of {figures['ceiling']}" if figures["fraction"] is not None
                            else figures["note"] if figures["note"] != "not recorded" else "no ceiling recorded")
                title = (f"{case} · {backend} {kernel}" + (f" ({library})" if library else "") +
                         (f" · {lines.runs[position].label}" if lines.overlaid else "") +
                         f"\n{fmt_time(figures['median'])}: {fmt_si(y, 'FLOP/s')}, {fmt_si(figures['rate'], figures['unit'])}"
                         f" ({fraction}); {x:.3g} FLOP/byte")
                points.append({"run": position, "x": x, "y": y, "title": title})
            if not points:
                continue  # untimed everywhere, or only off the plot (named under it)
            entry = series.setdefault(label, {"label": label, "op": op, "library": bool(library),
                                              "color": op_color(op), "points": []})
            entry["points"] += points
            if len(points) > 1:
                ordered = sorted(points, key=lambda p: p["run"])
                links += [(a["x"], a["y"], b["x"], b["y"]) for a, b in zip(ordered, ordered[1:])]
        # Within an op, each variant its own marker (0, 1, ...), and each library kernel its own
        # among the library markers (-1, -2, ...: a star first).
        markers = {}
        for entry in series.values():
            markers.setdefault((entry["op"], entry["library"]), []).append(entry["label"])
        for entry in series.values():
            place = markers[(entry["op"], entry["library"])].index(entry["label"])
            entry["marker"] = -1 - place if entry["library"] else place
        anchor = latest[0]
        plots.append({"slot": slot, "title": device_label(anchor), "runs": runs,
                      "series": sorted(series.values(), key=lambda s: (s["op"], s["library"], s["label"])),
                      "links": links, "missing": missing, "not_in_run": not_in_run, "off_plot": sorted(set(off_plot)),
                      "points": sum(len(s["points"]) for s in series.values()),
                      "position": anchor["column"].position if "column" in anchor else 0})
    return sorted(plots, key=lambda p: p["position"])


# ---- peers --------------------------------------------------------------------------------------

def card_of(device):
    """What makes two devices one card: its uuid, else its name (a card's CUDA and OpenCL devices
    share both)."""
    uuid = device_uuid(device)
    return "uuid " + uuid if uuid else "name " + str((device or {}).get("name") or (device or {}).get("id"))


# Timing loops that kept the device busy in measures further apart than this are named beside a
# peer ahead of kcs: a power-limited card keeps higher clocks the more a loop idles it
# (docs/runner.md, "Warm-up").
BUSY_APART = 0.05


def busy_apart(peer, own):
    """(peer's busy_fraction, own's) where both were written and differ by more than BUSY_APART."""
    fractions = [number(kernel_timing(result).get("busy_fraction")) for result in (peer, own)]
    if all(finite(f) for f in fractions) and abs(fractions[0] - fractions[1]) > BUSY_APART:
        return tuple(fractions)
    return None


def timed_apart(peer, own):
    """(peer's way, own's) where both results say how their repeats were timed (timing.kernel.back_to_back,
    docs/runner.md "Back to back") and the two differ: "back to back" or "one at a time"."""
    ways = [kernel_timing(result).get("back_to_back") for result in (peer, own)]
    if all(isinstance(way, bool) for way in ways) and ways[0] != ways[1]:
        return tuple("back to back" if way else "one at a time" for way in ways)
    return None


def peers(lines, case_order, fmt_time):
    """Per perf case (any run timed it), its rows side by side: [{'case', 'first' (a result, for its
    facts), 'rows': [row], 'ahead': [ahead]}], in case-file order. A row: 'line' (per run, a result
    or None), 'latest', 'ratios' (each run's median over the first's), 'speed' (speed() of the
    latest), 'peer' (the peer's label, or None for the peer itself or a kernel without one),
    'versus_peer' (the peer's median over this one's: 1 as fast, 0.5 half as fast), 'is_peer',
    'versus_reference' (the reference's median over this one's, same run), 'flags'. An ahead
    entry is a library row faster than kcs's fastest own row on its card, or on a card where no kcs
    row was timed: {'row', 'kcs' (that kcs row, or None), 'kcs_speed' (the library row's median over
    kcs's: 0.81, kcs at 81% of its speed; None without a kcs row), 'busy' ((the library row's
    busy_fraction, kcs's) where the two timing loops kept the device busy in measures more than
    BUSY_APART apart, else None), 'timed' (timed_apart: the two rows' repeats timed in different
    ways, else None)}, those without a kcs row first, then kcs furthest behind first."""
    cases = {}
    for key, line in lines.lines.items():
        if any(is_timed(r) for r in line):
            cases.setdefault(key[0], []).append(line)
    tables = []
    for case in sorted(cases, key=case_order):
        rows = []
        for line in cases[case]:
            latest = next((r for r in reversed(line) if is_timed(r)), None)
            if latest is None:
                continue
            rows.append({"line": line, "latest": latest, "ratios": ratio_to_first(line), "speed": speed(latest),
                         "library": next((r.get("kernel_library") for r in line if r is not None
                                          and r.get("kernel_library")), None),
                         "card": card_of(latest["device_record"]), "flags": flags(latest, fmt_time),
                         "peer": None, "is_peer": False, "versus_peer": None, "versus_reference": None})
        # The peer of each card, from the rows' latest results.
        for card in {row["card"] for row in rows}:
            same = [row for row in rows if row["card"] == card]
            libraries = [row for row in same if row["library"]]
            pool = libraries or same
            best = min(pool, key=lambda row: row["speed"]["median"])
            if len(same) < 2:
                continue
            best["is_peer"] = True
            for row in same:
                row["peer"] = (best["library"] or f"fastest kcs variant ({best['latest'].get('kernel')})")
                row["versus_peer"] = best["speed"]["median"] / row["speed"]["median"]
        # Library rows (cuBLAS, CUB, PyTorch) faster than kcs's fastest own row on their card.
        ahead = []
        for card in {row["card"] for row in rows}:
            own = [row for row in rows if row["card"] == card and not row["library"]]
            best = min(own, key=lambda row: row["speed"]["median"], default=None)
            ahead += [{"row": row, "kcs": best,
                       "kcs_speed": row["speed"]["median"] / best["speed"]["median"] if best else None,
                       "busy": busy_apart(row["latest"], best["latest"]) if best else None,
                       "timed": timed_apart(row["latest"], best["latest"]) if best else None}
                      for row in rows if row["card"] == card and row["library"]
                      and (best is None or row["speed"]["median"] < best["speed"]["median"])]
        ahead.sort(key=lambda entry: (entry["kcs_speed"] is not None, entry["kcs_speed"] or 0,
                                      entry["row"]["speed"]["median"]))
        # The scalar reference, where it ran in the same file as the row's latest result.
        for row in rows:
            reference = next((other["latest"] for other in rows if other["latest"].get("backend") == "reference"
                              and other["latest"]["run"] is row["latest"]["run"]), None)
            if reference is not None and reference is not row["latest"]:
                row["versus_reference"] = kernel_timing(reference)["median_s"] / row["speed"]["median"]
        rows.sort(key=lambda row: (row["latest"]["backend"] != "reference",
                                   row["latest"]["column"].position if "column" in row["latest"] else 0,
                                   str(row["latest"].get("kernel") or "")))
        tables.append({"case": case, "first": rows[0]["latest"], "rows": rows, "ahead": ahead})
    return tables


def peers_ahead(tables):
    """Every perf case where a library row ran faster than kcs's fastest own row on the same card (or
    where kcs timed none there): [(table, ahead entry)], the cases in their order."""
    return [(table, entry) for table in tables for entry in table["ahead"]]


# ---- accuracy -----------------------------------------------------------------------------------

def checked(result):
    """True for a result with accuracy figures (a pass or a fail that was compared)."""
    return result is not None and bool(result.get("accuracy")) and \
        result["accuracy"].get("fraction_of_bound") is not None


def bound_mark(result):
    """('tight', reason) when the case uses its bound by construction; ('near', why) for a pass that
    used more than NEAR_BOUND of it without such a reason; None otherwise."""
    reason = result.get("bound_tight")
    if reason:
        return ("tight", str(reason))
    fraction = (result.get("accuracy") or {}).get("fraction_of_bound")
    if outcome(result) in ("pass", "xpass") and finite(fraction) and fraction > NEAR_BOUND:
        return ("near", f"{fraction:.3g} of the bound used, more than {NEAR_BOUND:g}, and the case file gives no "
                        f"reason (bound-tight) for it to be")
    return None


def histogram_bins(histogram):
    """[(label, count)] of a fraction_histogram, the elements outside the bound last, or None."""
    if not histogram:
        return None
    uppers, counts = histogram["log2_upper"], histogram["counts"]
    bins = []
    for index, (upper, count) in enumerate(zip(uppers, counts)):
        upper = int(upper) if float(upper).is_integer() else upper
        low = f"≤ 2^{upper}" if index == 0 else f"2^{uppers[index - 1]:g} – 2^{upper}"
        bins.append((low, int(count)))
    bins.append(("above the bound", int(histogram.get("above") or 0)))
    return bins


def add_histograms(histograms):
    """The sum of histograms that share their bins; None when there is none, or they differ."""
    histograms = [h for h in histograms if h]
    if not histograms or any(h["log2_upper"] != histograms[0]["log2_upper"] for h in histograms):
        return None
    return {"log2_upper": list(histograms[0]["log2_upper"]),
            "counts": [sum(h["counts"][i] for h in histograms) for i in range(len(histograms[0]["counts"]))],
            "above": sum(int(h.get("above") or 0) for h in histograms)}


def accuracy_by_op(results):
    """Per op: how many results were checked, how many elements, their distribution of the fraction
    of the bound used (summed over the results that recorded one), the pass that used most of its
    bound, and how many passes are at the bound by construction or near it by accident."""
    by_op = {}
    for result in results:
        if checked(result):
            by_op.setdefault(str(result.get("op")), []).append(result)
    rows = []
    for op in sorted(by_op):
        members = by_op[op]
        histograms = [fraction_histogram(r) for r in members]
        passes = [r for r in members if outcome(r) in ("pass", "xpass")
                  and finite(r["accuracy"].get("fraction_of_bound"))]
        worst = max(passes, key=lambda r: r["accuracy"]["fraction_of_bound"], default=None)
        marks = [bound_mark(r) for r in members]
        rows.append({"op": op, "results": len(members), "stem": members[0]["stem"],
                     "elements": sum(number(r["accuracy"].get("checked")) or 0 for r in members),
                     "histogram": add_histograms(histograms), "recorded": sum(1 for h in histograms if h),
                     "worst": worst, "tight": sum(1 for m in marks if m and m[0] == "tight"),
                     "near": sum(1 for m in marks if m and m[0] == "near")})
    return rows


def near_bound(lines):
    """The lines whose latest check is at the bound by construction or near it by accident (or was
    in an earlier file), most of the bound first: [{'line', 'latest', 'mark', 'ratios'}], where
    ratios are each run's fraction of the bound over the first run's."""
    rows = []
    for line in lines.lines.values():
        present = [r for r in line if checked(r)]
        if not present:
            continue
        marks = [bound_mark(r) for r in present]
        if not any(marks):
            continue
        latest = present[-1]
        first = line[0]["accuracy"]["fraction_of_bound"] if checked(line[0]) else None
        ratios = [r["accuracy"]["fraction_of_bound"] / first if checked(r) and finite(first) and first > 0
                  and finite(r["accuracy"]["fraction_of_bound"]) else None for r in line]
        rows.append({"line": line, "latest": latest, "mark": bound_mark(latest) or next(m for m in marks if m),
                     "ratios": ratios})
    return sorted(rows, key=lambda row: (-(row["latest"]["accuracy"]["fraction_of_bound"]
                                           if finite(row["latest"]["accuracy"]["fraction_of_bound"]) else 0),
                                         row["latest"]["case"]))


# ---- how close to its ceilings each device is -------------------------------------------------

def closeness(results):
    """Per ceiling a device's timed results are held to: [{'ceiling', 'count', 'median', 'best',
    'best_result', 'unmeasured'}], the median and best fraction reached over its timed kernels."""
    groups = {}
    for result in results:
        if not is_timed(result):
            continue
        figures = speed(result)
        if figures["ceiling"] is None:
            continue
        group = groups.setdefault(figures["ceiling"], {"ceiling": figures["ceiling"], "fractions": [],
                                                       "best_result": None, "unmeasured": 0})
        if figures["fraction"] is None:
            group["unmeasured"] += 1
            continue
        group["fractions"].append(figures["fraction"])
        if group["best_result"] is None or figures["fraction"] > speed(group["best_result"])["fraction"]:
            group["best_result"] = result
    rows = []
    for group in groups.values():
        fractions = sorted(group["fractions"])
        middle = len(fractions) // 2
        median = (fractions[middle] if len(fractions) % 2 else (fractions[middle - 1] + fractions[middle]) / 2) \
            if fractions else None
        rows.append({"ceiling": group["ceiling"], "count": len(fractions), "median": median,
                     "best": fractions[-1] if fractions else None, "best_result": group["best_result"],
                     "unmeasured": group["unmeasured"]})
    return sorted(rows, key=lambda row: row["ceiling"] != "copy bandwidth")


def moved_medians(lines, min_effect):
    """Lines whose latest kernel median moved by more than min_effect against the first file's,
    largest first: [(ratio, line)]. Not a verdict (no noise is weighed: --baseline judges)."""
    moved = []
    for line in lines.lines.values():
        ratios = [r for r in ratio_to_first(line)[1:] if r is not None]
        if ratios and max(ratios[-1], 1 / ratios[-1]) - 1 > min_effect:
            moved.append((ratios[-1], line))
    return sorted(moved, key=lambda item: -abs(math.log(item[0])))
