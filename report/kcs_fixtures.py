#!/usr/bin/python3
"""Synthetic kcs results documents (schema version 2, docs/results.md) for the report's tests and
demos: devices of several backends, timed and untimed results, failures with worst elements,
NaN written as the string "nan", device ceilings, each timing's ceiling as the runner writes it,
every timed repeat ("samples_s") drawn from a seeded model of timing noise, the "comparability"
object, and expectations met and unmet with the summary counted as the runner counts it.

    /usr/bin/python3 report/kcs_fixtures.py OUTDIR

writes OUTDIR/demo-baseline.json (an "old driver") and OUTDIR/demo-new.json (a "new driver" on
which one case fails, one is three times slower, one fails as an expectation says it will, one
large case is skipped and one case is new), to try the report without a GPU:

    /usr/bin/python3 report/kcs_report.py OUTDIR/demo-new.json --baseline OUTDIR/demo-baseline.json

and, against the same baseline, OUTDIR/demo-rerun.json (the baseline's build rerun on another
machine of the same model: no regression, exit 0) and OUTDIR/demo-slower.json (that rerun with
one 20 ms kernel 10% slower: exit 4).

It also writes OUTDIR/perf-a.json and OUTDIR/perf-b.json: a whole suite run on an H100 machine as
the runner writes it with the fields of results schema version 2 that the report reads for its
roofline, peers and accuracy views (docs/results.md): each device's copy, FMA and GEMM ceilings
(OpenCL devices' GEMM rate included), a fraction_histogram in every check, "bound_tight" where the
case file says the case uses its bound by construction, and "kernel_library" on the rows that call
cuBLAS or CUB; about two hundred cases on four devices, the perf cases timed. perf-b.json is the
same suite a day later on a newer driver, to overlay the two:

    /usr/bin/python3 report/kcs_report.py OUTDIR/perf-a.json OUTDIR/perf-b.json
"""

import copy
import json
import math
import os
import random
import sys


def device(ident, name, platform, driver, runtime, memory, ceilings=None, vendor="", details=""):
    """A devices[] entry; ceilings is the runner's future per-device ceilings object."""
    backend, index = ident.split(":")
    record = {"id": ident, "backend": backend, "index": int(index), "name": name, "platform": platform,
              "vendor": vendor, "driver_version": driver, "runtime_version": runtime, "details": details,
              "memory_bytes": memory}
    if ceilings is not None:
        record["ceilings"] = ceilings
    return record


def timing(median, spread=0.01, repeats=10, end_to_end_factor=2.0, samples=None):
    """A kernel/end-to-end timing pair: with samples (seconds), their median, quartiles and extremes
    and the samples themselves ("samples_s"); else quartiles at median*(1 -/+ spread)."""
    def one(m):
        return {"repeats": repeats, "median_s": m, "lower_quartile_s": m * (1 - spread),
                "upper_quartile_s": m * (1 + spread), "min_s": m * (1 - 2 * spread), "max_s": m * (1 + 3 * spread)}
    if samples is None:
        return {"kernel": one(median), "end_to_end": one(median * end_to_end_factor)}
    return {"kernel": figures(samples), "end_to_end": figures([t * end_to_end_factor for t in samples])}


def quantile(ordered, q):
    """As harness/suite.c computes the quartiles (linear between order statistics)."""
    position = q * (len(ordered) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] * (1 - (position - below)) + ordered[above] * (position - below)


def figures(samples):
    """A timing object as the runner writes it from its timed repeats."""
    ordered = sorted(samples)
    return {"repeats": len(samples), "rotated_copies": 1, "median_s": quantile(ordered, 0.5),
            "lower_quartile_s": quantile(ordered, 0.25), "upper_quartile_s": quantile(ordered, 0.75),
            "min_s": ordered[0], "max_s": ordered[-1], "samples_s": list(samples)}


def typical_noise(median):
    """(jitter, tail) of a kernel of this median time, from what GPUs and CPUs show: a launch-bound
    kernel of tens of microseconds jitters by about 8% (launch and queue latency) with one repeat
    in ten much slower; a millisecond kernel by about 1.5%, one in twenty slower."""
    if median < 1e-4:
        return 0.08, 0.10
    if median < 1e-3:
        return 0.03, 0.05
    return 0.015, 0.05


def typical_repeats(median, min_repeats=10, min_seconds=0.5, max_repeats=1000):
    """How many repeats the runner times: until --min-repeats and --min-time, at most 1000."""
    return int(min(max_repeats, max(min_repeats, math.ceil(min_seconds / median))))


def noisy_samples(median, seed, count=None, jitter=None, tail=None):
    """count timed repeats of a kernel whose typical time is median: log-normal jitter (relative
    sigma) and a fraction tail of repeats 10% to 60% slower (a preempted repeat, a clock not yet
    up); typical_noise and typical_repeats where not given. Seeded: the same seed, the same
    samples."""
    typical_jitter, typical_tail = typical_noise(median)
    jitter = typical_jitter if jitter is None else jitter
    tail = typical_tail if tail is None else tail
    rng = random.Random(seed)
    samples = []
    for _ in range(count or typical_repeats(median)):
        value = median * math.exp(rng.gauss(0.0, jitter))
        if rng.random() < tail:
            value *= 1.0 + rng.uniform(0.1, 0.6)
        samples.append(value)
    return samples


# Which ceiling the runner holds a timing against, as it decides: the device's GEMM rate for GEMM
# and the anneal's assign step, its copy bandwidth for every other op.
COMPUTE_BOUND_OPS = ("gemm", "assign")


def ceiling(entry, dev, median):
    """A timing's "ceiling" object for results[] entry `entry` timed at `median` s on device record
    dev: the rate reached and, where the device measured that ceiling, the ceiling and the fraction."""
    kind = "gemm" if entry["op"] in COMPUTE_BOUND_OPS else "copy"
    key, measure = ("gemm_flops_per_s", "flops") if kind == "gemm" else ("copy_bytes_per_s", "bytes")
    record = {"kind": kind, "ceiling_key": key, "measure": measure, "achieved_per_s": entry[measure] / median}
    measured = ((dev or {}).get("ceilings") or {}).get(key)
    if measured:
        record["ceiling_per_s"] = measured
        record["fraction"] = record["achieved_per_s"] / measured
    return record


def slow_down(entry, factor):
    """A timed entry's kernel made factor times slower, with its rates and fraction of the ceiling."""
    timing = entry["timing"]
    for field in ("median_s", "lower_quartile_s", "upper_quartile_s", "min_s", "max_s"):
        timing["kernel"][field] *= factor
    if "samples_s" in timing["kernel"]:
        timing["kernel"]["samples_s"] = [t * factor for t in timing["kernel"]["samples_s"]]
    for rates in (timing, timing["ceiling"]):
        for field in ("kernel_bytes_per_s", "kernel_flops_per_s", "achieved_per_s", "fraction"):
            if field in rates:
                rates[field] /= factor


def result(case, dev, kernel, status="pass", *, n=1000, dtype=None, fraction=0.01, median=None, spread=0.01,
           repeats=10, message="", expected=1.0, actual=None, line=10, op=None, tags=None, bytes_per_element=None,
           samples=None):
    """One results[] entry for a sumsq-like case of n elements on device record dev (or None); a
    pass with a median is timed, from samples (seconds) when given."""
    stem = case.split("/")[0]
    dtype = dtype or ("f32" if "f32" in case else "f64")
    size = bytes_per_element or (4 if dtype == "f32" else 8)
    entry = {"case": case, "file": f"cases/{stem}.md", "line": line, "status": status, "message": message,
             "backend": dev["backend"] if dev else None, "device": dev["id"] if dev else None,
             "kernel": kernel if dev else None, "op": op or stem, "dtype": dtype, "sizes": {"n": n},
             "params": {}, "tags": tags if tags is not None else (["perf"] if median else []),
             "expected_from": "golden", "bytes": float(n * size + size), "flops": float(2 * n)}
    if status in ("pass", "fail"):
        bound = abs(expected) * 1e-15 + 1e-300 if not isinstance(expected, str) else 1e-15
        if isinstance(fraction, str):
            error = fraction
        else:
            error = fraction * bound
        entry["accuracy"] = {"checked": 1, "failures": 0 if status == "pass" else 1, "unwritten": 0,
                             "fraction_of_bound": fraction,
                             "worst": {"output": 0, "index": 0, "expected": expected,
                                       "actual": actual if actual is not None else expected,
                                       "error": error, "bound": bound}}
    if median is not None and status == "pass":
        entry["timing"] = timing(median, spread, repeats, samples=samples)
        median = entry["timing"]["kernel"]["median_s"]
        entry["timing"]["kernel_bytes_per_s"] = entry["bytes"] / median
        entry["timing"]["kernel_flops_per_s"] = entry["flops"] / median
        entry["timing"]["ceiling"] = ceiling(entry, dev, median)
    return entry


def retime(entry, dev, samples):
    """A timed entry's kernel and end-to-end timing redrawn from samples, with its rates."""
    factor = entry["timing"]["end_to_end"]["median_s"] / entry["timing"]["kernel"]["median_s"]
    entry["timing"] = timing(None, samples=samples, end_to_end_factor=factor)
    median = entry["timing"]["kernel"]["median_s"]
    entry["timing"]["kernel_bytes_per_s"] = entry["bytes"] / median
    entry["timing"]["kernel_flops_per_s"] = entry["flops"] / median
    entry["timing"]["ceiling"] = ceiling(entry, dev, median)


def expect(entry, outcome, reason, where="tests/expectations.txt:3"):
    """An expectation line applied to a result as harness/results.c applies it: met when the status
    is the outcome, or an error where a failure was expected; a pass that was expected not to
    becomes a fail whose message says so (and, as the report asks of the runner, whose
    expectation says "unexpected_pass": true)."""
    status = entry["status"]
    met = status == outcome or (outcome == "fail" and status == "error")
    entry["expected"] = {"outcome": outcome, "reason": reason, "where": where, "met": met}
    if not met and status == "pass":
        entry["status"] = "fail"
        entry["message"] = (f"unexpected pass: {where} expects {outcome} ({reason}); remove or correct the "
                            f"expectation")
        entry["expected"]["unexpected_pass"] = True
    return entry


def runner_summary(results):
    """The "summary" as harness/results.c add_item() counts it, written out separately from the
    report's own counting so that a test comparing the two can fail."""
    summary = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "expected": 0, "unexpected_passes": 0}
    for entry in results:
        status, expected = entry["status"], entry.get("expected")
        if expected and expected["met"]:
            summary["expected"] += 1
            status = "skip" if status == "skip" else "pass"
        elif expected and expected.get("unexpected_pass"):
            summary["unexpected_passes"] += 1
        summary[{"pass": "passed", "fail": "failed", "skip": "skipped"}.get(status, "errors")] += 1
    return summary


COMPARABILITY = {"compiler": "gcc 12.2.0", "cflags": "-O2 -std=c11 -ffp-contract=off",
                 "opencl_build_options": "-cl-std=CL3.0", "cuda_arch": "sm_90", "nvcc": "12.4.131"}


def document(devices, results, created="2026-11-26T02:30:00Z", revision="559f110d8a45", hostname="ci-gpu-1",
             comparability=None):
    """A whole results document, its summary counted from the results as the runner counts it."""
    return {
        "schema": "kcs-results", "version": 2, "created": created,
        "machine": {"hostname": hostname, "os": "Linux", "kernel": "6.8.0", "architecture": "x86_64",
                    "cpu": "AMD EPYC 9454", "cores": 96},
        "kcs": {"revision": revision, "compiler": "gcc 12.2.0"},
        "comparability": dict(COMPARABILITY if comparability is None else comparability),
        "command": ["build/kcs", "run", "--benchmark"],
        "options": {"benchmark": True, "min_repeats": 10, "min_seconds": 0.5, "max_repeats": 1000},
        "devices": copy.deepcopy(devices), "results": results, "summary": runner_summary(results),
    }


def rerun(doc, seed, offset=lambda median, rng: 0.0, created="2026-11-27T09:00:00Z", hostname=None):
    """The same build run again (another machine of the same model, or later): every timed
    result's repeats drawn afresh from its median with noisy_samples, moved by
    offset(median, rng) (a machine's own systematic difference, as a fraction)."""
    again = copy.deepcopy(doc)
    again["created"] = created
    if hostname:
        again["machine"]["hostname"] = hostname
    devices = {d["id"]: d for d in again["devices"]}
    rng = random.Random(seed)
    for index, entry in enumerate(again["results"]):
        if entry.get("timing"):
            median = entry["timing"]["kernel"]["median_s"]
            shifted = median * (1.0 + offset(median, rng))
            retime(entry, devices.get(entry["device"]), noisy_samples(shifted, seed * 100003 + index))
    return again


REFERENCE = device("reference:0", "host x86_64 (96 cores)", "host", "6.8.0", "C compiler 12.2.0", 540e9,
                   vendor="Linux", details="strict IEEE: -ffp-contract=off, no fast-math")
POCL = device("opencl:0", "cpu-znver4-AMD EPYC 9454", "Portable Computing Language", "5.0+debian",
              "OpenCL 3.0 PoCL 5.0+debian", 500e9, vendor="AuthenticAMD")
NVIDIA_OPENCL = device("opencl:1", "NVIDIA H100 80GB HBM3", "NVIDIA CUDA", "550.54.15", "OpenCL 3.0 CUDA 12.4.131",
                       85e9, ceilings={"copy_bytes_per_s": 2.9e12, "fma_flops_per_s": 6.0e13}, vendor="NVIDIA")
CUDA = device("cuda:0", "NVIDIA H100 80GB HBM3", "CUDA", "550.54.15", "CUDA runtime 12.4", 85e9,
              ceilings={"copy_bytes_per_s": 2.95e12, "fma_flops_per_s": 6.1e13, "gemm_flops_per_s": 4.9e14},
              vendor="NVIDIA", details="sm_90; 132 SMs; uuid=GPU-5ad8e6b4-0c1f-4b7e-9a52-3f0e1d2c4b6a")

# (case, n, timed) of a sumsq-like op; line numbers follow cases/sumsq.md's order.
SUMSQ_CASES = [("sumsq/f64-n0", 0, False), ("sumsq/f64-n7", 7, False), ("sumsq/f64-n93", 93, False),
               ("sumsq/f64-n4096", 4096, True), ("sumsq/f32-n4096", 4096, True),
               ("sumsq/f64-n1000003", 1000003, True), ("sumsq/f32-n1000003", 1000003, True),
               ("sumsq/f64-nan", 1000, False), ("sumsq/f64-n100000000", 100000000, True),
               ("sumsq/f32-n100000000", 100000000, True)]
KERNELS = {"reference": "blocked-pairwise", "opencl": "workgroup-tree", "cuda": "cub-reduce"}
BANDWIDTH = {"reference:0": 13e9, "opencl:0": 40e9, "opencl:1": 2.2e12, "cuda:0": 2.6e12}


# Kernel times from launch-bound to long, for comparisons: what identical reruns must call same.
SUITE_MEDIANS = (2e-6, 1e-5, 5e-5, 2e-4, 1e-3, 5e-3, 2e-2, 1e-1)


def timed_suite(seed=0, devices=None):
    """A run whose every result is timed: a case per median of SUITE_MEDIANS ("sumsq/t0", ...) on
    each device (reference, POCL, NVIDIA OpenCL, CUDA), each with its repeats (noisy_samples)."""
    devices = devices or [REFERENCE, POCL, NVIDIA_OPENCL, CUDA]
    results = []
    for line, median in enumerate(SUITE_MEDIANS):
        for dev in devices:
            results.append(result(f"sumsq/t{line}", dev, KERNELS[dev["backend"]], n=1000, line=10 + line,
                                  median=median, samples=noisy_samples(median, seed * 7919 + len(results))))
    return document(devices, results)


def between_machines(median, rng):
    """A machine's own systematic difference for a kernel of this median time, as seen between two
    hosts of the same card model: up to 2% for kernels of 100 us and longer (clocks, thermals), up
    to 10% for launch-bound ones (CPU, PCIe, driver queue latency)."""
    return rng.uniform(-0.02, 0.02) if median >= 1e-4 else rng.uniform(-0.10, 0.10)


def strip_samples(doc):
    """The document as a runner that keeps no repeats writes it: quartiles only."""
    for entry in doc["results"]:
        if entry.get("timing"):
            for part in ("kernel", "end_to_end"):
                entry["timing"][part].pop("samples_s", None)
    return doc


def demo_new():
    """A four-device run (reference, POCL, NVIDIA OpenCL, CUDA) with one failure, one error, one
    failure that an expectation lists, a large case skipped and a case the baseline lacks. Every
    timed result keeps its repeats (noisy_samples, seeded by its position)."""
    devices = [REFERENCE, POCL, NVIDIA_OPENCL, CUDA]
    results = []
    for line, (case, n, timed) in enumerate(SUMSQ_CASES + [("sumsq/f64-n4097", 4097, True)]):
        for dev in devices:
            size = 4 if "f32" in case else 8
            median = max(2e-6, (n * size) / BANDWIDTH[dev["id"]]) if timed else None
            samples = noisy_samples(median, seed=len(results)) if timed else None
            fraction = [0.0, 0.12, 0.43, 0.02, 0.0061][(line + len(dev["id"])) % 5]
            if case.endswith("nan"):
                results.append(result(case, dev, KERNELS[dev["backend"]], fraction=0.0, expected="nan",
                                      actual="nan", line=20 + 9 * line, n=n))
            elif dev["id"] == "reference:0" and n >= 10 ** 8:
                results.append(result(case, dev, KERNELS["reference"], "skip", n=n, line=20 + 9 * line,
                                      message="tagged large, and --skip-large was given"))
            else:
                results.append(result(case, dev, KERNELS[dev["backend"]], fraction=fraction, median=median,
                                      line=20 + 9 * line, n=n, samples=samples))
    # Planted failures: a dropped tail on the NVIDIA OpenCL device, a build failure on POCL, and a
    # wrong f32 sum on POCL that an expectations file lists.
    for entry in results:
        if entry["case"] == "sumsq/f64-n93" and entry["device"] == "opencl:1":
            entry.update(result("sumsq/f64-n93", NVIDIA_OPENCL, "workgroup-tree", "fail", n=93, fraction=3.1e9,
                                expected=31.61245, actual=30.7711, line=entry["line"],
                                message="sum differs from golden by 0.84135 (3.1e+09 x the bound): "
                                        "a dropped element?"))
        if entry["case"] == "sumsq/f64-n7" and entry["device"] == "opencl:0":
            entry.update(result("sumsq/f64-n7", POCL, "workgroup-tree", "error", n=7, line=entry["line"],
                                message="opencl/sumsq.cl:41: clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE\n"
                                        "<kernel>:41:5: error: use of undeclared identifier 'tail'"))
        if entry["case"] == "sumsq/f32-n4096" and entry["device"] == "opencl:0":
            entry.update(result("sumsq/f32-n4096", POCL, "workgroup-tree", "fail", n=4096, fraction=1.7,
                                expected=1365.3334, actual=1365.3372, line=entry["line"],
                                message="sum differs from golden by 0.0038 (1.7 x the bound)"))
            entry.pop("timing", None)
            expect(entry, "fail", "PoCL 5.0 contracts the f32 square and add into an FMA (pocl#1234)",
                   "tests/pocl-expectations.txt:4")
    # A problem found before any device ran: a malformed block (backend and device null).
    results.append({"case": "sumsq/f64-typo", "file": "cases/sumsq.md", "line": 300, "status": "error",
                    "message": "cases/sumsq.md:302: unknown key 'dtpye' (did you mean 'dtype'?)",
                    "backend": None, "device": None, "kernel": None, "op": "sumsq", "dtype": None,
                    "sizes": {}, "params": {}, "tags": [], "expected_from": None, "bytes": 0, "flops": 0})
    return document(devices, results)


def demo_baseline(new):
    """The same suite run a week earlier on the old driver (its own repeats: rerun()), before the
    planted failures, with the reference's large case run and without the new case; slows the
    CUDA kernel of sumsq/f64-n1000003 in new three times."""
    old = rerun(new, seed=7, created="2026-11-20T10:00:00Z")
    old["kcs"]["revision"] = "4d2e0aa91c33"
    for dev in old["devices"]:
        if dev["backend"] in ("opencl", "cuda") and dev["id"] != "opencl:0":
            dev["driver_version"] = "535.161.08"
    devices = {d["id"]: d for d in old["devices"]}
    for entry in old["results"]:
        if entry["case"] == "sumsq/f64-n93" and entry["device"] == "opencl:1":
            entry.update(result("sumsq/f64-n93", NVIDIA_OPENCL, "workgroup-tree", n=93, fraction=0.31,
                                line=entry["line"]))
        if entry["case"] == "sumsq/f32-n4096" and entry["device"] == "opencl:0":
            entry.pop("expected")
            entry.update(result("sumsq/f32-n4096", POCL, "workgroup-tree", n=4096, fraction=0.4, line=entry["line"],
                                median=2e-6, samples=noisy_samples(2e-6, seed=99)))
        if entry["case"] == "sumsq/f64-n100000000" and entry["device"] == "reference:0":
            entry.update(result(entry["case"], REFERENCE, "blocked-pairwise", n=10 ** 8, line=entry["line"],
                                median=8e8 / 13e9, samples=noisy_samples(8e8 / 13e9, seed=98),
                                fraction=0.02))
    old["results"] = [e for e in old["results"] if e["case"] != "sumsq/f64-n4097"]
    for entry in old["results"]:
        if entry.get("timing"):
            entry["timing"]["ceiling"] = ceiling(entry, devices.get(entry["device"]),
                                                 entry["timing"]["kernel"]["median_s"])
    old["summary"] = runner_summary(old["results"])
    for entry in new["results"]:
        if entry["case"] == "sumsq/f64-n1000003" and entry["device"] == "cuda:0":
            slow_down(entry, 3.0)
    return old


# ---- a whole suite run on an H100 machine, with the fields the roofline, peers and accuracy views read

HISTOGRAM_LOG2 = list(range(-20, 1))  # the checker's bins: fraction of the bound in (2^(k-1), 2^k]


def fraction_histogram(checked, worst, rng):
    """A "fraction_histogram" of `checked` elements whose largest fraction of the bound is `worst`:
    most elements a few binades below the worst one, one element in the worst's bin (or "above"
    for a fraction over 1); exact results (worst 0) all in the first bin."""
    counts = [0] * len(HISTOGRAM_LOG2)
    above = 0
    checked = int(checked)
    if checked <= 0:
        return {"log2_upper": list(HISTOGRAM_LOG2), "counts": counts, "above": 0}
    if not isinstance(worst, float) or not math.isfinite(worst) or worst > 1:
        top = None
        above = 1
    elif worst <= 2.0 ** -20:
        counts[0] = checked
        return {"log2_upper": list(HISTOGRAM_LOG2), "counts": counts, "above": 0}
    else:
        top = max(0, min(len(HISTOGRAM_LOG2) - 1, math.ceil(math.log2(worst)) + 20))
        counts[top] = 1
    highest = len(HISTOGRAM_LOG2) - 1 if top is None else top
    for _ in range(checked - 1):
        counts[max(0, min(highest, highest - int(abs(rng.gauss(3.0, 2.0)))))] += 1
    return {"log2_upper": list(HISTOGRAM_LOG2), "counts": counts, "above": above}


def with_histogram(entry, rng, checked=None):
    """A checked entry given its "fraction_histogram" (and the number of elements it checked)."""
    accuracy = entry.get("accuracy")
    if accuracy:
        if checked is not None:
            accuracy["checked"] = checked
        fraction = accuracy["fraction_of_bound"]
        worst = float("nan") if isinstance(fraction, str) else float(fraction)
        accuracy["fraction_histogram"] = fraction_histogram(min(accuracy["checked"], 4096), worst, rng)
        accuracy["fraction_histogram"]["counts"][0] += max(0, int(accuracy["checked"]) - 4096)
    return entry


def set_fraction(entry, fraction):
    """A checked entry's worst element made to use this fraction of its bound."""
    accuracy = entry["accuracy"]
    accuracy["fraction_of_bound"] = fraction
    worst = accuracy["worst"]
    worst["error"] = fraction * worst["bound"]
    worst["actual"] = worst["expected"] + worst["error"]


H100_REFERENCE = device("reference:0", "host x86_64 (52 cores)", "host", "6.8.0", "C compiler 12.2.0", 1.0e12,
                        ceilings={"copy_bytes_per_s": 1.2e10, "method": "copy: memcpy of 256 MiB on one thread"},
                        vendor="Linux", details="strict IEEE: -ffp-contract=off, no fast-math")
H100_POCL = device("opencl:0", "cpu-sapphirerapids-Intel Xeon Platinum 8480+", "Portable Computing Language",
                   "5.0+debian", "OpenCL 3.0 PoCL 5.0+debian", 1.0e12, vendor="GenuineIntel",
                   ceilings={"copy_bytes_per_s": 6.1e10, "host_to_device_bytes_per_s": 1.1e10,
                             "fma_flops_per_s": 2.4e12, "gemm_flops_per_s": 6.5e11,
                             "method": "GEMM: kcs's packed-128x128 kernel, 2048^3 f32"})
H100_OPENCL = device("opencl:1", "NVIDIA H100 80GB HBM3", "NVIDIA CUDA", "550.54.15", "OpenCL 3.0 CUDA 12.4.131",
                     85e9, vendor="NVIDIA", details="uuid=GPU-5ad8e6b4-0c1f-4b7e-9a52-3f0e1d2c4b6a",
                     ceilings={"copy_bytes_per_s": 2.9e12, "host_to_device_bytes_per_s": 2.5e10,
                               "fma_flops_per_s": 5.9e13, "gemm_flops_per_s": 2.6e13,
                               "method": "GEMM: kcs's packed-128x128 kernel, 4096^3 f32"})
H100_CUDA = device("cuda:0", "NVIDIA H100 80GB HBM3", "CUDA", "550.54.15", "CUDA runtime 12.4", 85e9,
                   vendor="NVIDIA", details="sm_90; 132 SMs; uuid=GPU-5ad8e6b4-0c1f-4b7e-9a52-3f0e1d2c4b6a",
                   ceilings={"copy_bytes_per_s": 2.95e12, "host_to_device_bytes_per_s": 2.6e10,
                             "fma_flops_per_s": 6.1e13, "gemm_flops_per_s": 5.1e13,
                             "method": "GEMM: cublasSgemm 4096^3 default math"})
PERF_DEVICES = [H100_REFERENCE, H100_POCL, H100_OPENCL, H100_CUDA]

# The suite's perf cases: (case, op, dtype, bytes, flops, the ceiling it is held to, and per device
# the kernels that run it as (kernel, fraction of that ceiling reached, library or None)). A device
# not listed skips the case (the reference: too slow, "no-reference"; POCL: no such kernel).
PERF_CASES = [
    ("sumsq/f64-n100000000", "sumsq", "f64", 8e8, 2e8, "copy",
     {"reference:0": [("blocked-pairwise", 0.55, None)], "opencl:0": [("cpu-contiguous-chunks", 0.71, None)],
      "opencl:1": [("gpu-strided-tree", 0.86, None)], "cuda:0": [("vector-grid", 0.91, None), ("cub", 0.91, "CUB")]}),
    ("sumsq/f32-n100000000", "sumsq", "f32", 4e8, 2e8, "copy",
     {"opencl:0": [("cpu-contiguous-chunks", 0.66, None)], "opencl:1": [("gpu-strided-tree", 0.81, None)],
      "cuda:0": [("vector-grid", 0.88, None), ("cub", 0.90, "CUB")]}),
    ("gemm/f32-512", "gemm", "f32", 3.1e6, 2.68e8, "gemm",
     {"reference:0": [("plain-k-order", None, None)], "opencl:0": [("packed-128x128", 0.40, None),
                                                                  ("direct", 0.08, None)],
      "opencl:1": [("packed-128x128", 0.21, None), ("direct", 0.05, None)],
      "cuda:0": [("tiled", 0.19, None), ("cublas", 0.22, "cuBLAS")]}),
    ("gemm/f32-4096", "gemm", "f32", 2.0e8, 1.374e11, "gemm",
     {"opencl:1": [("packed-128x128", 0.112, None)], "cuda:0": [("tiled", 0.84, None), ("cublas", 0.885, "cuBLAS")]}),
    ("gemm/f32-tf32-4096", "gemm", "f32", 2.0e8, 1.374e11, "gemm", {"cuda:0": [("cublas-tf32", 7.4, "cuBLAS")]}),
    ("gemm/f64-4096", "gemm", "f64", 4.0e8, 1.374e11, "gemm",
     {"opencl:1": [("packed-128x128", 0.19, None)], "cuda:0": [("tiled", 0.62, None), ("cublas", 1.02, "cuBLAS")]}),
    ("elementwise/add-f32-n100000000", "add", "f32", 1.2e9, 1e8, "copy",
     {"opencl:0": [("vectorized", 0.62, None)], "opencl:1": [("vectorized", 0.90, None)],
      "cuda:0": [("one-pass", 0.93, None)]}),
    ("elementwise/mul-f32-n100000000", "mul", "f32", 1.2e9, 1e8, "copy",
     {"opencl:0": [("vectorized", 0.61, None)], "opencl:1": [("vectorized", 0.90, None)],
      "cuda:0": [("one-pass", 0.93, None)]}),
    ("elementwise/relu-f32-n100000000", "relu", "f32", 8e8, 1e8, "copy",
     {"opencl:0": [("vectorized", 0.64, None)], "opencl:1": [("vectorized", 0.89, None)],
      "cuda:0": [("one-pass", 0.92, None)]}),
    ("elementwise/sigmoid-f32-n100000000", "sigmoid", "f32", 8e8, 4e8, "copy",
     {"opencl:0": [("vectorized", 0.31, None)], "opencl:1": [("vectorized", 0.88, None)],
      "cuda:0": [("one-pass", 0.92, None)]}),
    ("softmax/f32-32768x1024", "softmax", "f32", 2.68e8, 1.68e8, "copy",
     {"opencl:0": [("cpu-rows", 0.45, None)], "opencl:1": [("group-registers", 0.78, None),
                                                          ("group-online", 0.61, None)],
      "cuda:0": [("warp-registers", 0.84, None), ("block-online", 0.66, None)]}),
    ("softmax/f32-4096x32768", "softmax", "f32", 1.07e9, 6.7e8, "copy",
     {"opencl:1": [("group-registers", 0.74, None), ("group-online", 0.58, None)],
      "cuda:0": [("block-registers", 0.81, None), ("block-online", 0.63, None)]}),
    ("softmax/f32-1000000x128", "softmax", "f32", 1.02e9, 6.4e8, "copy",
     {"opencl:1": [("group-registers", 0.70, None)], "cuda:0": [("warp-registers", 0.87, None)]}),
    ("anneal/assign-f32-1000000x128-m1024", "assign", "f32", 5.2e8, 3.93e11, "gemm",
     {"opencl:1": [("tiled-local", 0.31, None)], "cuda:0": [("direct", 0.22, None), ("shortlist", 0.41, None)]}),
    ("anneal/assign-f16-1000000x128-m1024", "assign", "f16", 2.6e8, 3.93e11, "gemm",
     {"opencl:1": [("tiled-local", 0.29, None)], "cuda:0": [("direct", 0.21, None), ("shortlist", 0.40, None)]}),
    ("anneal/reduce-f32-1000000x128-m1024", "reduce", "f32", 5.2e8, 5.1e8, "copy",
     {"opencl:0": [("sorted-two-pass", 0.21, None)], "opencl:1": [("sorted-two-pass", 0.33, None)],
      "cuda:0": [("sorted-welford", 0.52, None)]}),
    ("anneal/update-f32-1024x128", "update", "f32", 2.6e6, 6.6e5, "copy",
     {"reference:0": [("elementwise", 0.22, None)], "opencl:0": [("elementwise", 0.17, None)],
      "opencl:1": [("elementwise", 0.11, None)], "cuda:0": [("elementwise", 0.14, None)]}),
    ("anneal/energy-f32-n1000000", "energy", "f32", 4e6, 1e6, "copy",
     {"reference:0": [("blocked-pairwise-f64", 0.28, None)], "opencl:0": [("strided-tree-f64", 0.07, None)],
      "opencl:1": [("strided-tree-f64", 0.19, None)], "cuda:0": [("vector-grid", 0.24, None)]}),
]
# The case that uses its bound by construction (its case file's bound-tight line), and why.
BOUND_TIGHT = {"anneal/update-f32-1024x128": "the bound is the rounding of each of the two fused steps, which the "
                                             "oracle's inputs are chosen to reach"}
# Untimed correctness cases per op: how many, so that the suite has about two hundred cases.
SMALL_CASES = {"sumsq": 24, "gemm": 60, "add": 10, "mul": 10, "relu": 10, "sigmoid": 12, "softmax": 22,
               "assign": 8, "reduce": 8, "update": 4, "energy": 6}
STEMS = {"add": "elementwise", "mul": "elementwise", "relu": "elementwise", "sigmoid": "elementwise",
         "assign": "anneal", "reduce": "anneal", "update": "anneal", "energy": "anneal"}


def perf_entry(case, op, dtype, size_bytes, flops, kind, dev, kernel, fraction, library, line, rng):
    """One timed pass of a perf case: the median time that reaches `fraction` of the device's
    `kind` ceiling (or, with fraction None, a slow scalar reference), its repeats, and its check."""
    key, measure = ("gemm_flops_per_s", flops) if kind == "gemm" else ("copy_bytes_per_s", size_bytes)
    rate = dev["ceilings"].get(key) or dev["ceilings"]["copy_bytes_per_s"]
    median = measure / (rate * fraction) if fraction else flops / 2.7e9
    entry = result(case, dev, kernel, n=1, dtype=dtype, op=op, line=line, tags=["perf"],
                   fraction=rng.choice([0.0061, 0.021, 0.043, 0.12, 0.26]),
                   median=median, samples=noisy_samples(median, rng.randrange(1 << 30), count=40))
    entry["bytes"], entry["flops"] = float(size_bytes), float(flops)
    entry["sizes"] = {}  # the case name says them
    entry["timing"]["kernel_bytes_per_s"] = size_bytes / entry["timing"]["kernel"]["median_s"]
    entry["timing"]["kernel_flops_per_s"] = flops / entry["timing"]["kernel"]["median_s"]
    entry["timing"]["ceiling"] = ceiling(entry, dev, entry["timing"]["kernel"]["median_s"])
    if library:
        entry["kernel_library"] = library
    return entry


def perf_suite(seed=1, created="2026-11-26T02:30:00Z", driver=None):
    """A suite run on an H100 machine (reference, POCL, NVIDIA OpenCL, CUDA): every perf case timed
    on the devices that have a kernel for it, about two hundred untimed cases on every device,
    histograms in every check, the bound-tight case marked, the library kernels named. With
    driver, the GPU devices report that driver version instead."""
    rng = random.Random(seed)
    devices = copy.deepcopy(PERF_DEVICES)
    if driver:
        for dev in devices:
            if dev["vendor"] == "NVIDIA":
                dev["driver_version"] = driver
    by_id = {d["id"]: d for d in devices}
    results = []
    for line, (case, op, dtype, size_bytes, flops, kind, runs) in enumerate(PERF_CASES):
        for dev in devices:
            kernels = runs.get(dev["id"])
            if not kernels:
                why = ("tagged no-reference: too slow for the scalar reference" if dev["backend"] == "reference"
                       else f"no {dev['backend']} kernel for {op} {dtype} on this device")
                results.append(result(case, dev, "-", "skip", dtype=dtype, op=op, line=1000 + line, message=why,
                                      tags=["perf"]))
                continue
            for kernel, fraction, library in kernels:
                entry = perf_entry(case, op, dtype, size_bytes, flops, kind, dev, kernel, fraction, library,
                                   1000 + line, rng)
                if case in BOUND_TIGHT:
                    entry["bound_tight"] = BOUND_TIGHT[case]
                    set_fraction(entry, 0.986)
                results.append(with_histogram(entry, rng, checked=262144))
    # One OpenCL GEMM whose end-to-end time came out below its kernel time (46.4 against 47.0 ms),
    # as the issue saw on the H100: the report flags it.
    gemm = next(e for e in results if e["case"] == "gemm/f32-4096" and e["device"] == "opencl:1")
    gemm["timing"]["end_to_end"]["median_s"] = gemm["timing"]["kernel"]["median_s"] * (46.4 / 47.0)
    gemm["timing"]["end_to_end"].pop("samples_s", None)
    kernels = {"reference": "loop", "opencl": "vectorized", "cuda": "one-pass"}
    line = 10
    for op, count in SMALL_CASES.items():
        stem = STEMS.get(op, op)
        for number in range(count):
            dtype = ("f32", "f64")[number % 2]
            case = f"{stem}/{op}-{dtype}-{number}" if stem != op else f"{op}/{dtype}-{number}"
            line += 9
            for dev in devices:
                worst = rng.choice([0.0, 0.0039, 0.011, 0.047, 0.13, 0.31, 0.002])
                entry = result(case, dev, kernels[dev["backend"]], n=7 + 31 * number, dtype=dtype, op=op, line=line,
                               fraction=worst)
                results.append(with_histogram(entry, rng, checked=7 + 31 * number))
    # A pass close to its bound by accident (0.71 of it, no bound-tight line), one failure, one error.
    close = next(e for e in results if e["case"] == "gemm/f64-7" and e["device"] == "cuda:0")
    set_fraction(close, 0.71)
    with_histogram(close, rng)
    failed = next(e for e in results if e["case"] == "softmax/f64-3" and e["device"] == "opencl:1")
    failed.update(result("softmax/f64-3", by_id["opencl:1"], "vectorized", "fail", n=100, dtype="f64", op="softmax",
                         line=failed["line"], fraction=37.5, expected=0.25, actual=0.2500000000001,
                         message="y[17]: expected 0.25, got 0.2500000000001: 37.5 times the bound"))
    with_histogram(failed, rng, checked=100)
    broken = next(e for e in results if e["case"] == "gemm/f64-9" and e["device"] == "opencl:0")
    broken.update(result("gemm/f64-9", by_id["opencl:0"], "vectorized", "error", n=9, dtype="f64", op="gemm",
                         line=broken["line"], message="clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES"))
    doc = document(devices, results, created=created, hostname="h100-node-7")
    doc["options"]["min_seconds"] = 0.5
    return doc


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    new = demo_new()
    old = demo_baseline(new)
    again = rerun(old, seed=11, offset=between_machines, hostname="ci-gpu-2")
    slower = copy.deepcopy(again)
    for entry in slower["results"]:
        if entry["case"] == "sumsq/f64-n100000000" and entry["device"] == "opencl:0":
            slow_down(entry, 1.10)
    perf_a = perf_suite(seed=1)
    perf_b = rerun(perf_suite(seed=1, created="2026-11-27T02:30:00Z", driver="560.28.03"), seed=5,
                   offset=between_machines, created="2026-11-27T02:30:00Z")
    for name, data in (("demo-new.json", new), ("demo-baseline.json", old), ("demo-rerun.json", again),
                       ("demo-slower.json", slower), ("perf-a.json", perf_a), ("perf-b.json", perf_b)):
        with open(os.path.join(argv[1], name), "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, allow_nan=False, default=str)
    for name in ("demo-new.json", "demo-baseline.json", "demo-rerun.json", "demo-slower.json", "perf-a.json",
                 "perf-b.json"):
        print(os.path.join(argv[1], name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
