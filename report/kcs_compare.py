"""Comparing results against a baseline: what broke, what got fixed, what got slower or faster.

Each (case, backend, kernel, device name) present in both the baseline and the new results is
classified twice:

- correctness: "regressed" (pass -> fail or error), "fixed" (fail or error -> pass), else
  "unchanged" (the status transition is shown, so pass -> skip is visible without gating);
- speed, from the kernel timings' medians and quartiles, never a fixed percentage alone:
  "slower" when the new lower quartile lies above the old upper quartile *and* the medians
  differ by more than a noise floor (the interquartile ranges are apart, and not by a hair);
  "faster" symmetrically; "same" when the medians are within the noise floor, or the ranges
  overlap and the medians differ by no more than `unclear_above`; "unclear" when the ranges
  overlap but the medians differ more than that (the runs are too noisy to tell), or when a
  side has fewer than `min_repeats` timed repeats. Untimed pairs are "untimed".

A comparison regresses (the command exits 3) when anything is "regressed" or "slower".
"""

import math

from kcs_results import kernel_timing, latest_by_key

ORDER_CORRECTNESS = ("regressed", "fixed", "unchanged")
ORDER_SPEED = ("slower", "faster", "same", "unclear", "untimed")


class Thresholds:
    """The knobs of the speed classification (relative to the baseline median)."""

    def __init__(self, noise_floor=0.02, unclear_above=0.05, min_repeats=3):
        self.noise_floor = noise_floor      # medians within this are "same" whatever the spread
        self.unclear_above = unclear_above  # overlapping ranges with medians further apart: "unclear"
        self.min_repeats = min_repeats      # fewer timed repeats on a side: "unclear"


def classify_correctness(old_status, new_status):
    """'regressed', 'fixed' or 'unchanged' for a pair of statuses."""
    bad = ("fail", "error")
    if old_status == "pass" and new_status in bad:
        return "regressed"
    if old_status in bad and new_status == "pass":
        return "fixed"
    return "unchanged"


def classify_speed(old_kernel, new_kernel, thresholds=None):
    """(class, ratio of medians new/old or None, reason) for two kernel timing dicts."""
    t = thresholds or Thresholds()
    if old_kernel is None or new_kernel is None:
        return "untimed", None, "not timed in " + ("either run" if old_kernel is None and new_kernel is None
                                                   else "the baseline" if old_kernel is None else "the new run")
    old_median, new_median = old_kernel["median_s"], new_kernel["median_s"]
    ratio = new_median / old_median
    old_lower = _quartile(old_kernel, "lower_quartile_s", old_median)
    old_upper = _quartile(old_kernel, "upper_quartile_s", old_median)
    new_lower = _quartile(new_kernel, "lower_quartile_s", new_median)
    new_upper = _quartile(new_kernel, "upper_quartile_s", new_median)
    repeats = min(old_kernel.get("repeats") or 0, new_kernel.get("repeats") or 0)
    if not math.isfinite(repeats) or repeats < t.min_repeats:
        return "unclear", ratio, f"too few repeats ({int(repeats) if math.isfinite(repeats) else repeats}" \
                                 f" < {t.min_repeats})"
    change = abs(ratio - 1.0)
    if change <= t.noise_floor:
        return "same", ratio, f"medians within the noise floor ({t.noise_floor:.0%})"
    if new_lower > old_upper:
        return "slower", ratio, "new lower quartile above old upper quartile"
    if new_upper < old_lower:
        return "faster", ratio, "new upper quartile below old lower quartile"
    if change > t.unclear_above:
        return "unclear", ratio, f"quartile ranges overlap, medians differ by {change:.0%}"
    return "same", ratio, "quartile ranges overlap"


def _quartile(kernel, key, median):
    value = kernel.get(key)
    return value if value is not None and math.isfinite(value) else median


class Comparison:
    """The pairs matched between a baseline and the new runs, classified, plus the unmatched."""

    def __init__(self, baseline_run, runs, thresholds=None):
        self.thresholds = thresholds or Thresholds()
        self.baseline = baseline_run
        old = latest_by_key([baseline_run])
        new = latest_by_key(runs)
        self.rows = []
        for key in sorted(set(old) & set(new)):
            before, after = old[key], new[key]
            speed, ratio, reason = classify_speed(kernel_timing(before), kernel_timing(after),
                                                  self.thresholds)
            self.rows.append({
                "key": key, "old": before, "new": after,
                "correctness": classify_correctness(before["status"], after["status"]),
                "speed": speed, "ratio": ratio, "reason": reason,
            })
        self.only_baseline = sorted(set(old) - set(new))
        self.only_new = sorted(set(new) - set(old))

    def count(self, field, value):
        """How many matched pairs have this correctness or speed class."""
        return sum(1 for row in self.rows if row[field] == value)

    def regressed(self):
        """True when anything is correctness-regressed or slower: the CI gate."""
        return any(row["correctness"] == "regressed" or row["speed"] == "slower" for row in self.rows)

    def newly_skipped(self):
        """Pairs that ran in the baseline and are skipped now (a lost device, a lost backend)."""
        return [row for row in self.rows
                if row["old"]["status"] != "skip" and row["new"]["status"] == "skip"]

    def summary_lines(self):
        """The text the command prints: counts, then every regression and slowdown by name."""
        lines = [f"comparison with baseline {self.baseline.path}: {len(self.rows)} matched "
                 f"(case, backend, kernel, device); {len(self.only_baseline)} only in the baseline, "
                 f"{len(self.only_new)} only in the new results",
                 "  correctness: " + ", ".join(f"{self.count('correctness', c)} {c}"
                                                for c in ORDER_CORRECTNESS),
                 "  speed:       " + ", ".join(f"{self.count('speed', s)} {s}" for s in ORDER_SPEED)]
        skipped = self.newly_skipped()
        if skipped:
            lines.append(f"  note: {len(skipped)} ran in the baseline and are skipped now")
        for row in self.rows:
            if row["correctness"] in ("regressed", "fixed"):
                lines.append(f"  {row['correctness'].upper()}: {describe_key(row['key'])}: "
                             f"{row['old']['status']} -> {row['new']['status']}"
                             + (f" ({first_line(row['new']['message'])})"
                                if row["correctness"] == "regressed" and row["new"]["message"] else ""))
        for row in self.rows:
            if row["speed"] in ("slower", "faster"):
                lines.append(f"  {row['speed'].upper()}: {describe_key(row['key'])}: kernel median "
                             f"x{row['ratio']:.3g} ({row['reason']})")
        lines.append("  verdict: " + ("REGRESSED" if self.regressed() else "no regression"))
        return lines


def describe_key(key):
    """case [backend kernel on device] as one readable string."""
    case, backend, kernel, device = key
    where = " ".join(part for part in (backend, kernel) if part)
    return f"{case} [{where}{' on ' + device if device else ''}]"


def first_line(text):
    """The first line of a message, shortened for a one-line summary."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:117] + "..."
