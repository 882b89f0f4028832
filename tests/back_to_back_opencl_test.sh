#!/bin/sh
# back_to_back_opencl_test.sh: the OpenCL backend queues a kernel's repeats
# back to back (opencl/backend.c, "Back to back"; docs/runner.md): on every
# OpenCL device found (POCL here and in CI), each OpenCL row of the timed GEMM
# of tests/compare-cases is timed so by default, each repeat its own nonzero
# device time, as many as --min-repeats and --min-time ask; with --one-by-one
# each repeat on its own (on an H200's NVIDIA platform a repeat of it takes
# tens of microseconds, so its timings end at the 1000 repeats a timing takes
# at most). No OpenCL device is a failure: the test could not run.
# What it reads are counts and flags, not speeds, so a busy host changes nothing.
# usage: tests/back_to_back_opencl_test.sh build/kcs
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
run="$kcs run --cases $source/tests/compare-cases --backend opencl --benchmark --min-time 0.05 --min-repeats 20 --no-save --quiet"
$run --results queued.json > queued.log 2>&1 || { cat queued.log; echo "FAIL: the run back to back"; exit 1; }
$run --one-by-one --results alone.json > alone.log 2>&1 || { cat alone.log; echo "FAIL: the run --one-by-one"; exit 1; }
"$python" - <<'PY'
import json
def rows(label):
    doc = json.load(open(f"{label}.json"))
    found = [r for r in doc["results"] if r["backend"] == "opencl" and r["status"] == "pass"]
    assert found, f"{label}: no OpenCL row passed (no OpenCL device?): the test could not run"
    return found

for row in rows("queued"):
    kernel, name = row["timing"]["kernel"], f"{row['device']} {row['kernel']}"
    samples = kernel["samples_s"]
    assert kernel["back_to_back"] is True and "one_by_one_because" not in kernel, f"{name}: {kernel}"
    # enough for --min-time 0.05, or the most a timing takes (1000: a fast device's kernel)
    enough = kernel["repeats"] == 1000 or sum(samples) >= 0.05
    assert len(samples) == kernel["repeats"] >= 20 and enough, f"{name}: {len(samples)} repeats, {sum(samples)} s"
    assert all(s > 0 for s in samples), f"{name}: a repeat without its own time: {samples}"
    print(f"{name}: {len(samples)} repeats back to back, median {kernel['median_s'] * 1e3:.3f} ms")
for row in rows("alone"):
    kernel, name = row["timing"]["kernel"], f"{row['device']} {row['kernel']}"
    assert kernel["back_to_back"] is False and kernel.get("one_by_one_because") == "--one-by-one", f"{name}: {kernel}"
    assert kernel["repeats"] >= 20 and all(s > 0 for s in kernel["samples_s"]), f"{name}: {kernel['repeats']}"
    print(f"{name}: {kernel['repeats']} repeats one at a time, median {kernel['median_s'] * 1e3:.3f} ms")
PY
