#!/usr/bin/python3
"""kcs_interleave: time two or more builds, drivers or settings in alternating rounds on one host,
so that a busy machine slows every side alike, and write one results file per side to compare.

    /usr/bin/python3 report/kcs_interleave.py [--rounds 10] [--output DIR] NAME=COMMAND NAME=COMMAND ...
    /usr/bin/python3 report/kcs_report.py DIR/new.json --baseline DIR/old.json

Each COMMAND is a `kcs run --benchmark ...` command line for sh (environment settings first, as
`OCL_ICD_VENDORS=/opt/new/vendors build/kcs run ...`), without --results: each round runs every
command once, in an order that rotates from round to round, and adds `--results
DIR/rounds/NAME-NN.json`. Then every side's rounds are merged into DIR/NAME.json: the first round's
file, with each result's status the worst any round gave it (the message says when rounds
disagreed), each kernel timing made of every round's repeats, and what the comparison pairs by:

  "interleaved": {"id", "rounds", "side", "sides"}          top level, the same id for every side
  timing.kernel.round_medians_s, round_pace_medians_s       per round, null where a round did not time it

Why: two runs made one after the other on a shared host differ by what the host did in between
(on this project's 2-core VM, a kernel's CPU time doubled whenever the other core got busy), and
nothing measured inside either run can always tell that from a change of the kernel. Rounds a
second or so long, alternating, see the same machine on both sides; report/kcs_compare.py judges
two sides of one interleave by the ratios of their rounds' medians (classify_paired), not by the
two whole runs. docs/comparing.md says what that promises.

Exit status: 0 every round of every side wrote its results (whatever they say: a failing case is
for the comparison to judge); 1 a round's command wrote no readable results (its log is shown);
2 a bad option.
"""

import argparse
import copy
import json
import os
import secrets
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kcs_results import ResultsError, load_results, summary_counts  # noqa: E402
from kcs_stats import quantile  # noqa: E402

EXIT_OK, EXIT_ROUND_FAILED, EXIT_USAGE = 0, 1, 2
# The status a merged result takes is the worst any round gave it.
SEVERITY = {"skip": 0, "pass": 1, "fail": 2, "error": 3}
# Rates the runner derives from a median: they scale by 1 / median when the median is merged.
KERNEL_RATES = ("kernel_bytes_per_s", "kernel_flops_per_s")
END_TO_END_RATES = ("end_to_end_bytes_per_s", "end_to_end_fraction_of_host_to_device")
CEILING_RATES = ("achieved_per_s", "fraction")


def parse_side(text):
    """'NAME=COMMAND' -> (name, command)."""
    name, sep, command = text.partition("=")
    if not sep or not name.strip() or not command.strip() or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"{text!r}: give NAME=COMMAND, NAME of letters, digits, - and _ (it names DIR/NAME.json)")
    if "--results" in shlex.split(command):
        raise ValueError(f"{name}: leave --results out of the command: each round adds its own")
    return name.strip(), command.strip()


def round_order(sides, index):
    """The sides in the order round index runs them: rotated by one each round, so that no side
    always runs first, or always right after another."""
    shift = index % len(sides)
    return sides[shift:] + sides[:shift]


def result_key(result):
    return tuple(result.get(k) for k in ("case", "backend", "kernel", "device"))


def _merged_figures(parts):
    """One timing part ("kernel" or "end_to_end") from the rounds' parts that exist: the rounds'
    repeats in order, their median and quartiles (kcs_stats.quantile, as the runner computes them),
    the sum of the repeats; where a round kept no repeats, the median of the rounds' medians."""
    merged = copy.deepcopy(parts[0])
    samples = [s for part in parts for s in part.get("samples_s") or []]
    merged["repeats"] = sum(int(part.get("repeats") or 0) for part in parts)
    if samples and all(part.get("samples_s") for part in parts):
        ordered = sorted(samples)
        merged.update(samples_s=samples, median_s=quantile(ordered, 0.5), lower_quartile_s=quantile(ordered, 0.25),
                      upper_quartile_s=quantile(ordered, 0.75), min_s=ordered[0], max_s=ordered[-1])
    else:
        merged.pop("samples_s", None)
        medians = sorted(part["median_s"] for part in parts)
        merged.update(median_s=quantile(medians, 0.5), min_s=min(p.get("min_s", p["median_s"]) for p in parts),
                      max_s=max(p.get("max_s", p["median_s"]) for p in parts))
        merged.pop("lower_quartile_s", None), merged.pop("upper_quartile_s", None)
    paces = sorted(part["pace_median_s"] for part in parts if part.get("pace_median_s"))
    if paces:
        merged["pace_median_s"] = quantile(paces, 0.5)
    return merged


def _scale_rates(mapping, keys, factor):
    for key in keys:
        if isinstance(mapping.get(key), (int, float)) and not isinstance(mapping.get(key), bool):
            mapping[key] *= factor


def merge_timing(timings):
    """One result's timing from the rounds' timings (None where a round did not time it): the
    merged kernel and end-to-end figures, the rates scaled to the merged medians, and each
    round's kernel median and pace median (null where that round has none)."""
    kernels = [t["kernel"] if t and isinstance(t.get("kernel"), dict) else None for t in timings]
    present = [t for t, kernel in zip(timings, kernels) if kernel]
    merged = copy.deepcopy(present[0])
    first_kernel = present[0]["kernel"]["median_s"]
    merged["kernel"] = _merged_figures([t["kernel"] for t in present])
    merged["kernel"]["round_medians_s"] = [kernel["median_s"] if kernel else None for kernel in kernels]
    if any(kernel and kernel.get("pace_median_s") for kernel in kernels):
        merged["kernel"]["round_pace_medians_s"] = [kernel.get("pace_median_s") if kernel else None
                                                    for kernel in kernels]
    factor = first_kernel / merged["kernel"]["median_s"] if merged["kernel"]["median_s"] > 0 else 1.0
    _scale_rates(merged, KERNEL_RATES, factor)
    if isinstance(merged.get("ceiling"), dict):
        _scale_rates(merged["ceiling"], CEILING_RATES, factor)
    ends = [t["end_to_end"] for t in present if isinstance(t.get("end_to_end"), dict)]
    if ends and merged.get("end_to_end"):
        first_end = ends[0]["median_s"]
        merged["end_to_end"] = _merged_figures(ends)
        if merged["end_to_end"]["median_s"] > 0:
            _scale_rates(merged, END_TO_END_RATES, first_end / merged["end_to_end"]["median_s"])
    return merged


def merge_rounds(documents, interleave):
    """One results document from one side's rounds (parsed results documents, in round order): the
    first round's, each result's status the worst of the rounds' (its message noting the rounds'
    statuses where they differ), its timing merged (merge_timing), results and devices that only a
    later round has added, the summary recounted, and interleave ({"id", "rounds", "side",
    "sides"}) as "interleaved"."""
    merged = copy.deepcopy(documents[0])
    devices = {d.get("id"): d for d in merged.get("devices") or []}
    order, by_key = [], {}
    for document in documents:
        for device in document.get("devices") or []:
            if device.get("id") not in devices:
                devices[device.get("id")] = copy.deepcopy(device)
                merged.setdefault("devices", []).append(devices[device.get("id")])
        for result in document["results"]:
            key = result_key(result)
            if key not in by_key:
                order.append(key)
                by_key[key] = [None] * len(documents)
    for index, document in enumerate(documents):
        for result in document["results"]:
            by_key[result_key(result)][index] = result
    results = []
    for key in order:
        rounds = by_key[key]
        present = [r for r in rounds if r is not None]
        worst = max(present, key=lambda r: SEVERITY.get(r.get("status"), 0))
        result = copy.deepcopy(worst)
        statuses = [r.get("status") if r is not None else "absent" for r in rounds]
        if len(set(statuses)) > 1:
            counts = ", ".join(f"{s} {statuses.count(s)}" for s in sorted(set(statuses), key=statuses.index))
            note = f"statuses over the {len(rounds)} interleaved rounds: {counts}"
            result["message"] = f"{result.get('message')} ({note})" if result.get("message") else note
        timings = [r.get("timing") if r is not None else None for r in rounds]
        if any(t and isinstance(t.get("kernel"), dict) for t in timings):
            result["timing"] = merge_timing(timings)
        results.append(result)
    merged["results"] = results
    counted = copy.deepcopy(results)
    for result in counted:
        result["message"] = result.get("message") or ""
    merged["summary"] = summary_counts(counted)
    merged["interleaved"] = dict(interleave)
    return merged


def run_round(name, command, path, log):
    """Runs one side's command for one round, its results to path; None, or why it failed."""
    with open(log, "w", encoding="utf-8") as handle:
        done = subprocess.run(["sh", "-c", f"{command} --results {shlex.quote(path)}"], stdout=handle,
                              stderr=subprocess.STDOUT)
    try:
        load_results(path)
    except ResultsError as error:
        with open(log, encoding="utf-8", errors="replace") as handle:
            tail = "".join(handle.readlines()[-20:])
        return f"{name}: exit {done.returncode}, no readable results ({error}); the end of {log}:\n{tail}"
    return None


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="kcs_interleave.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run kcs commands in alternating rounds on one host and write one merged results file per "
                    "side, for report/kcs_report.py to compare round by round (docs/comparing.md).",
        epilog="""\
Example, two OpenCL drivers on one host, and the old one again as a control:

  report/kcs_interleave.py --output ab \\
      old='OCL_ICD_VENDORS=/opt/old/vendors build/kcs run --benchmark --backend opencl --min-time 0.5' \\
      again='OCL_ICD_VENDORS=/opt/old/vendors build/kcs run --benchmark --backend opencl --min-time 0.5' \\
      new='OCL_ICD_VENDORS=/opt/new/vendors build/kcs run --benchmark --backend opencl --min-time 0.5'
  report/kcs_report.py ab/new.json --baseline ab/old.json

Exit status: 0 every round wrote its results; 1 a round wrote none; 2 a bad option.""")
    parser.add_argument("sides", nargs="+", metavar="NAME=COMMAND",
                        help="a side: its name (the results go to DIR/NAME.json) and its kcs run command, without "
                             "--results")
    parser.add_argument("--rounds", type=int, default=10, metavar="N",
                        help="rounds, each running every command once (default 10: a sign test at 0.01 needs 8 "
                             "usable rounds)")
    parser.add_argument("--output", default="interleaved", metavar="DIR",
                        help="folder for NAME.json and rounds/ (default: interleaved)")
    return parser.parse_args(argv)


def main(argv=None):
    try:
        args = parse_arguments(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    try:
        sides = [parse_side(text) for text in args.sides]
        if len(sides) < 2:
            raise ValueError("give at least two sides to interleave")
        if len({name for name, _ in sides}) != len(sides):
            raise ValueError("each side needs a name of its own")
        if not 1 <= args.rounds <= 1000:
            raise ValueError(f"--rounds {args.rounds}: give 1 to 1000")
    except ValueError as error:
        print(f"kcs_interleave: {error}", file=sys.stderr)
        return EXIT_USAGE
    folder = os.path.join(args.output, "rounds")
    os.makedirs(folder, exist_ok=True)
    paths = {name: [] for name, _ in sides}
    for index in range(args.rounds):
        for name, command in round_order(sides, index):
            path = os.path.join(folder, f"{name}-{index + 1:02d}.json")
            failure = run_round(name, command, path, path[:-len(".json")] + ".log")
            if failure:
                print(f"kcs_interleave: round {index + 1}: {failure}", file=sys.stderr)
                return EXIT_ROUND_FAILED
            paths[name].append(path)
        print(f"round {index + 1} of {args.rounds}: {', '.join(name for name, _ in round_order(sides, index))}")
    interleave = {"id": secrets.token_hex(8), "rounds": args.rounds, "sides": [name for name, _ in sides]}
    for name, _ in sides:
        documents = []
        for path in paths[name]:
            with open(path, encoding="utf-8") as handle:
                documents.append(json.load(handle))
        merged = merge_rounds(documents, dict(interleave, side=name))
        out = os.path.join(args.output, f"{name}.json")
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(merged, handle, indent=1)
        print(out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
