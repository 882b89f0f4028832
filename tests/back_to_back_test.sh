#!/bin/sh
# back_to_back_test.sh: where a backend can queue a kernel's repeats back to
# back (kcs_backend.time_back_to_back; docs/runner.md, "Back to back"), `kcs
# run --benchmark` times them so, and `--one-by-one` times each on its own;
# a kernel whose repeats cannot be queued (one that waits for the device) is
# timed one at a time, with the reason in the results. The device is the
# queue model (tests/queue_model_backend.c): its `cooler-when-idle` kernel
# reports 1 ms a run on its own and 1.25 ms a run back to back, as a card at
# its power limit; the times are the model's, not measured. The one wall-clock
# bound the runner applies, the warm-up's (it also ends at as many seconds of
# wall time), is a second here, far beyond any pause a busy host makes.
# usage: tests/back_to_back_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
run="$saboteur run --cases $source/tests/compare-cases --backend queue-model --benchmark --no-save --quiet"
for name in "queued --kernel cooler-when-idle --min-time 0 --min-repeats 7" \
            "alone --kernel cooler-when-idle --min-time 0 --min-repeats 7 --one-by-one" \
            "waits --kernel waits-for-the-device --min-time 0 --min-repeats 7" \
            "by-time --kernel cooler-when-idle --min-time 0.05 --min-repeats 1" \
            "warmed --kernel cooler-when-idle --min-time 0 --min-repeats 3 --warm-up 1"; do
    set -- $name
    label=$1
    shift
    : > "$label.queued"
    KCS_QUEUE_MODEL_LOG=$work/$label.queued $run "$@" --results "$label.json" > "$label.log" 2>&1 || { cat "$label.log"; echo "FAIL: the run $label ($*)"; exit 1; }
done
"$python" - <<'PY'
import json
def timing(label):
    doc = json.load(open(f"{label}.json"))
    rows = [r for r in doc["results"] if r["backend"] == "queue-model"]
    assert len(rows) == 1 and rows[0]["status"] == "pass", f"{label}: one passing row, got {rows}"
    return doc["options"], rows[0]["timing"]["kernel"]

options, kernel = timing("queued")
assert options["one_by_one"] is False, f"queued: options.one_by_one {options['one_by_one']!r}"
assert kernel["back_to_back"] is True and "one_by_one_because" not in kernel, f"queued: {kernel}"
assert kernel["samples_s"] == [1.25e-3] * 7, f"queued: 7 repeats timed back to back (1.25 ms), got {kernel['samples_s']}"
print("back to back by default: 7 repeats at the model's 1.25 ms")

options, kernel = timing("alone")
assert options["one_by_one"] is True, f"alone: options.one_by_one {options['one_by_one']!r}"
assert kernel["back_to_back"] is False and kernel.get("one_by_one_because") == "--one-by-one", f"alone: {kernel}"
assert kernel["samples_s"] == [1e-3] * 7, f"alone: 7 repeats timed on their own (1 ms), got {kernel['samples_s']}"
print("--one-by-one: 7 repeats at the model's 1 ms")

options, kernel = timing("waits")
because = kernel.get("one_by_one_because", "")
assert kernel["back_to_back"] is False and "waited for the device" in because, f"waits: {kernel}"
assert kernel["samples_s"] == [1e-3] * 7, f"waits: 7 repeats timed on their own, got {kernel['samples_s']}"
print(f"a run that waits for the device: timed one at a time, because {because!r}")

options, kernel = timing("by-time")
samples = kernel["samples_s"]
# The warm-up's one run (1 ms, on its own) estimates 50 repeats for 0.05 s; back to back they take
# 1.25 ms each, so 50 are enough and no second round is wanted.
assert kernel["back_to_back"] is True and sum(samples) >= 0.05, f"by-time: {len(samples)} repeats, {sum(samples)} s"
assert len(samples) == 50, f"by-time: the 50 repeats that the estimate asks for, got {len(samples)}"
print(f"--min-time 0.05: {len(samples)} repeats back to back, {sum(samples):.4f} s")

def queued(label):
    return [int(line) for line in open(f"{label}.queued")]

assert queued("queued") == [7], f"queued: one call of 7 repeats, got {queued('queued')}"
assert queued("alone") == [], f"alone: nothing queued, got {queued('alone')}"
assert queued("waits") == [7], f"waits: one call, given up, got {queued('waits')}"

options, kernel = timing("warmed")
assert kernel["back_to_back"] is True and kernel["samples_s"] == [1.25e-3] * 3, f"warmed: {kernel}"
# The warm-up's first run on its own (1 ms) leaves 0.999 s: 999 repeats back to back (1.25 s of the
# model's time) warm it up, as the timed ones will run; then the 3 timed ones. The warm-up also ends at
# as much wall time (harness/suite.c, warm_up), so it is a second, not the model's milliseconds: with
# 0.02 s a loaded host that paused the runner for 20 ms after its first run left no warm-up queued.
assert queued("warmed") == [999, 3], f"warmed: 999 warm-up repeats, then 3 timed, back to back, got {queued('warmed')}"
print("--warm-up 1: the warm-up's 999 repeats and the 3 timed ones back to back")
PY
