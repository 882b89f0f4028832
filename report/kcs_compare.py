"""Comparing results against a baseline: what broke, what got fixed, what got slower or faster,
and what could not be compared. docs/comparing.md is the user's account of the same rules.

Devices are matched first (match_devices), by a stable identity rather than the display name:
an explicit --map OLD=NEW; else the same uuid (a "uuid=..." in the device's "details"); else
the same backend, device index and name. A name is never cleaned up ("NVIDIA H100 (rev 2)" is
not "NVIDIA H100"): a device that nothing matched is named, with a hint for --map, and so is
every case, kernel or result present on one side only.

Each (case, backend, kernel, device) present on both sides is then classified twice:

- correctness, on outcomes read with expectations (kcs_results.outcome): "regressed" when a
  result that passed fails or errors; "expected" when it fails as an expectations file says it
  will (with the reason: not a regression); "fixed" when a failure passes; else "unchanged";
- speed (classify_speed), against the noise both runs measured and a minimum effect:
  "same" when the medians differ by no more than the minimum effect (and neither run's block
  medians drifted by more than it, else "unclear": a change that size could hide); "unclear" when they differ
  by more but by no more than the noise (the wider of the two runs' interquartile ranges, as a
  fraction of the median), or when the difference is not significant (a two-sided Mann-Whitney
  rank test of the repeats at the given level when both files keep them, "samples_s"; else the
  two interquartile ranges must not overlap), or when a side has too few repeats; "slower" or
  "faster" only beyond both and significant. The noise of a side is the wider of its
  interquartile range and the drift of its block medians (its repeats, in timed order, split into
  BLOCKS consecutive blocks, where it has BLOCK_REPEATS a block); with blocks on both sides the
  rank test compares the block medians, not the repeats, which are not independent. Where a device's measured ceilings (copy, FMA,
  GEMM rate) differ by more than --ceiling-change (20%) between the runs, the machine did not
  measure the same (a loaded host, other clocks): its slower and faster verdicts become
  "unclear"; smaller differences are a warning only. Where both sides timed the device's pace
  beside each repeat ("pace_median_s": a fixed workload on the kernel's own clock, on devices
  that share their cores with the machine's other work) and the paces differ by more than the
  minimum effect, the machine's load changed between the runs: that kernel's speed is "unclear".
  Two sides of one interleave (kcs_interleave.py: the same "interleaved" id) are judged round by
  round instead (classify_paired): from the ratio of their medians in each round, where the
  machine's load was common to both halves.

What made the runs (the "comparability" object: compiler, flags, build options, CUDA
architecture; each device's driver and runtime) is compared, and each difference is a warning.

What the comparison could not validate (Comparison.unvalidated) is every result that ran (any
outcome but a skip) and that it could not hold against a counterpart: a result of the baseline that
the new run lacks or now skips (a plain skip: an expected one gives its expectation's reason), and a
result of a new run's device that nothing in the baseline matched. What only a new run has on a
matched device (a case or kernel added) is not in it (nothing was lost: the new run's own check
judges it), nor a baseline skip.

Exit codes (Comparison.verdict): 0 no regression; 3 a correctness regression, whatever the
speed; 2 something not validated, unless Options.allow_unmatched (--allow-unmatched), and always
when nothing at all matched; 4 something slower and nothing else wrong.
"""

import math

from kcs_results import CEILING_KEYS, device_uuid, kernel_timing, latest_by_key, number, outcome
from kcs_stats import fewest_for_sign_test, quantile, rank_sum_test, sign_test
import kcs_views

ORDER_CORRECTNESS = ("regressed", "expected", "fixed", "unchanged")
ORDER_SPEED = ("slower", "faster", "same", "unclear", "untimed")
EXIT_OK, EXIT_BAD_INPUT, EXIT_CORRECTNESS, EXIT_SPEED = 0, 2, 3, 4

# The ceilings that bound kernel times; when one of them moved, the kernel times are not judged.
# (The host-to-device bandwidth bounds end-to-end times only, which are not judged: a warning.)
# Every GEMM mode's rate is one (docs/results.md): a kernel is held to its own mode's.
KERNEL_CEILINGS = ("copy_bytes_per_s", "fma_flops_per_s") + kcs_views.GEMM_CEILINGS
CEILING_LABELS = {"copy_bytes_per_s": ("copy bandwidth", "B/s"),
                  "host_to_device_bytes_per_s": ("host-to-device bandwidth", "B/s"),
                  "fma_flops_per_s": ("FMA rate", "FLOP/s"),
                  **{key: (kcs_views.CEILINGS[key][0], "FLOP/s") for key in kcs_views.GEMM_CEILINGS}}

WORKED = ("pass", "xpass")      # the kernel gave right answers (an unexpected pass is a pass)
BROKEN = ("fail", "error")      # a failure that no expectation lists
KNOWN = ("xfail", "xerror")     # a failure that an expectation lists, with its reason
SKIPPED = ("skip", "xskip")


class CompareError(Exception):
    """Options that do not make sense for these files (a --map naming no device)."""


class Options:
    """The knobs of the comparison."""

    def __init__(self, min_effect=0.05, significance=0.01, min_repeats=5, maps=(), ceiling_change=0.20,
                 allow_unmatched=False):
        self.min_effect = min_effect      # a change must exceed this fraction to count at all
        self.ceiling_change = ceiling_change  # a device's ceilings moved more: its speed is not judged
        self.significance = significance  # the rank test's level (two-sided)
        self.min_repeats = min_repeats    # fewer timed repeats on a side: "unclear"
        self.maps = list(maps)            # (OLD, NEW) device ids or names from --map
        self.allow_unmatched = allow_unmatched  # what was not validated does not change the exit status

    def check(self):
        """Raises CompareError for values that cannot be meant."""
        if not (math.isfinite(self.min_effect) and 0 <= self.min_effect < 1):
            raise CompareError(f"--min-effect {self.min_effect}: give a fraction in [0, 1), e.g. 0.05 for 5%")
        if not (0 < self.significance < 1):
            raise CompareError(f"--significance {self.significance}: give a level in (0, 1), e.g. 0.01")
        if not (math.isfinite(self.ceiling_change) and self.ceiling_change > 0):
            raise CompareError(f"--ceiling-change {self.ceiling_change}: give a positive fraction, e.g. 0.2 for 20%")
        if self.min_repeats < 1:
            raise CompareError(f"--min-repeats {self.min_repeats}: give at least 1")


def parse_map(text):
    """'cuda:0=cuda:1' or 'NVIDIA H100=NVIDIA H100 (rev 2)' -> (old, new), split at the first '='."""
    old, sep, new = text.partition("=")
    if not sep or not old.strip() or not new.strip():
        raise CompareError(f"--map {text!r}: give OLD=NEW, each a device id (cuda:0) or a device name")
    return old.strip(), new.strip()


# ---- devices ----------------------------------------------------------------------------------

def device_label(device):
    """'cuda:0 NVIDIA H100 80GB HBM3': how a device is named in messages."""
    return f"{device.get('id')} {device.get('name') or ''}".strip()


class DevicePair:
    """A baseline device and the device of one new run that it is compared with."""

    def __init__(self, old, new, run, how):
        self.old, self.new, self.run, self.how = old, new, run, how
        self.notes = []


def _select(devices, selector):
    """The devices whose id or name is selector, in (backend, index) order."""
    chosen = [d for d in devices if str(d.get("id")) == selector or str(d.get("name")) == selector]
    return sorted(chosen, key=lambda d: (str(d.get("backend")), number(d.get("index")) or 0, str(d.get("id"))))


def match_devices(baseline, runs, maps=()):
    """(pairs, unmatched baseline devices, unmatched (run, device)s): each new run's devices
    paired with the baseline's by --map, then uuid, then backend + index + name. Raises
    CompareError for a --map that selects no device, or devices of different backends or counts."""
    old_devices = list(baseline.devices.values())
    pairs, unmatched_new, used_old = [], [], set()
    map_hits = {m: 0 for m in maps}
    for old_sel, new_sel in maps:
        if not _select(old_devices, old_sel):
            known = ", ".join(device_label(d) for d in old_devices) or "none"
            raise CompareError(f"--map {old_sel}={new_sel}: no device of the baseline {baseline.label} has the id or "
                               f"name {old_sel!r} (it has: {known})")
    for run in runs:
        free_old = list(old_devices)
        free_new = list(run.devices.values())

        def pair(old, new, how):
            pairs.append(DevicePair(old, new, run, how))
            free_old.remove(old)
            free_new.remove(new)
            used_old.add(id(old))
            return pairs[-1]

        for old_sel, new_sel in maps:
            olds, news = _select(free_old, old_sel), _select(free_new, new_sel)
            if len(olds) == 1 and len(news) == 1 and olds[0].get("backend") != news[0].get("backend"):
                old, new = olds[0], news[0]
                raise CompareError(f"--map {old_sel}={new_sel}: {device_label(old)} is a {old.get('backend')} device "
                                   f"and {device_label(new)} a {new.get('backend')} one; their kernels differ")
            # A name may select a card under each backend (its OpenCL and its CUDA device): pair per backend.
            for backend in sorted({str(d.get("backend")) for d in olds} & {str(d.get("backend")) for d in news}):
                same_olds = [d for d in olds if str(d.get("backend")) == backend]
                same_news = [d for d in news if str(d.get("backend")) == backend]
                if len(same_olds) != len(same_news):
                    raise CompareError(f"--map {old_sel}={new_sel}: {len(same_olds)} {backend} device(s) of the "
                                       f"baseline but {len(same_news)} of {run.label} (still unmatched) answer "
                                       f"to it: map them one by one by id")
                map_hits[(old_sel, new_sel)] += 1
                for old, new in zip(same_olds, same_news):
                    pair(old, new, "--map")
        for new in list(free_new):
            uuid = device_uuid(new)
            same = [old for old in free_old if uuid and device_uuid(old) == uuid]
            if same and same[0].get("backend") == new.get("backend"):
                found = pair(same[0], new, "uuid")
                if same[0].get("id") != new.get("id"):
                    found.notes.append(f"{same[0].get('id')} in the baseline is {new.get('id')} in {run.label} "
                                       f"(the same uuid {uuid})")
        for new in list(free_new):
            identity = (new.get("backend"), number(new.get("index")), new.get("name"))
            same = [old for old in free_old
                    if (old.get("backend"), number(old.get("index")), old.get("name")) == identity]
            if same:
                found = pair(same[0], new, "backend, index and name")
                old_uuid, new_uuid = device_uuid(same[0]), device_uuid(new)
                if old_uuid and new_uuid and old_uuid != new_uuid:
                    found.notes.append(f"another card of the same model: uuid {old_uuid} in the baseline, "
                                       f"{new_uuid} in {run.label}")
        unmatched_new += [(run, new) for new in free_new]
    for (old_sel, new_sel), hits in map_hits.items():
        if not hits:
            raise CompareError(f"--map {old_sel}={new_sel}: no device of "
                               f"{', '.join(run.label for run in runs)} has the id or name {new_sel!r} "
                               f"(or it was matched already)")
    unmatched_old = [d for d in old_devices if id(d) not in used_old]
    return pairs, unmatched_old, unmatched_new


def ceiling_changes(old_device, new_device, min_effect):
    """(key, old, new) for each ceiling both devices measured that differs by more than
    min_effect (either way) between them."""
    changes = []
    old_ceilings, new_ceilings = old_device.get("ceilings") or {}, new_device.get("ceilings") or {}
    for key in CEILING_KEYS:
        old, new = old_ceilings.get(key), new_ceilings.get(key)
        if isinstance(old, float) and isinstance(new, float) and old > 0 and new > 0 \
                and math.isfinite(old) and math.isfinite(new) and _change(new / old) > min_effect:
            changes.append((key, old, new))
    return changes


def _change(ratio):
    """How far a ratio is from 1, symmetric for slower and faster: x1.25 and x0.8 are both 0.25."""
    return ratio - 1.0 if ratio >= 1.0 else 1.0 / ratio - 1.0


def fmt_rate(value, unit):
    """2.95e12, 'B/s' -> '2.95 TB/s'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


# ---- classification ---------------------------------------------------------------------------

def classify_correctness(old_outcome, new_outcome):
    """'regressed', 'expected', 'fixed' or 'unchanged' for a pair of outcomes (kcs_results.outcome;
    a plain status is an outcome)."""
    if old_outcome in WORKED and new_outcome in BROKEN:
        return "regressed"
    if old_outcome in WORKED and new_outcome in KNOWN:
        return "expected"
    if old_outcome in BROKEN + KNOWN and new_outcome in WORKED:
        return "fixed"
    return "unchanged"


# Repeats are split, in the order they were timed, into this many consecutive blocks. Repeats
# taken milliseconds apart are not independent (a clock, a neighbour's load or the cache persists
# from one to the next), so a rank test over hundreds of them calls a 3% drift "p < 1e-15"; the
# medians of blocks spread over the whole timing are closer to independent, and how far they
# drift apart within one run is the least two runs can be expected to differ by.
BLOCKS = 5
BLOCK_REPEATS = 5  # repeats a block needs at least: fewer make block medians noisier than the repeats


class Spread:
    """One side's kernel timing as the speed rule sees it: median, quartiles and the repeats
    themselves when the file keeps them ("samples_s", in timed order), else the file's figures;
    with enough repeats, the medians of BLOCKS consecutive blocks of them."""

    def __init__(self, kernel):
        samples = kernel.get("samples_s")
        self.blocks = None
        if samples:
            self.samples = sorted(samples)
            self.median = quantile(self.samples, 0.5)
            self.lower, self.upper = quantile(self.samples, 0.25), quantile(self.samples, 0.75)
            self.repeats = len(self.samples)
            if len(samples) >= BLOCKS * BLOCK_REPEATS:
                size = len(samples) / BLOCKS
                self.blocks = [quantile(sorted(samples[round(b * size):round((b + 1) * size)]), 0.5)
                               for b in range(BLOCKS)]
        else:
            self.samples = None
            self.median = kernel["median_s"]
            self.lower = _finite_or_none(kernel.get("lower_quartile_s"))
            self.upper = _finite_or_none(kernel.get("upper_quartile_s"))
            repeats = kernel.get("repeats")
            self.repeats = int(repeats) if _finite_or_none(repeats) is not None else 0
        pace = _finite_or_none(kernel.get("pace_median_s"))
        self.pace = pace if pace is not None and pace > 0 else None

    def drift(self):
        """How far the block medians spread, as a fraction of the median: how much the median
        itself moved while this run timed it; None without blocks."""
        if not self.blocks or self.median <= 0:
            return None
        return (max(self.blocks) - min(self.blocks)) / self.median

    def relative_spread(self):
        """The noise this side shows, as a fraction of the median: the wider of the interquartile
        range and the range of the block medians (drift within the run); None when no quartiles
        are known."""
        if self.lower is None or self.upper is None or self.median <= 0:
            return None
        spread = max(0.0, self.upper - self.lower) / self.median
        return max(spread, self.drift() or 0.0)


def _finite_or_none(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


class Speed(tuple):
    """(verdict, ratio, reason) with the figures behind it as attributes: noise, threshold
    (the larger of the minimum effect and the noise), p (the rank test's, or None)."""

    def __new__(cls, verdict, ratio, reason, noise=None, threshold=None, p=None):
        speed = super().__new__(cls, (verdict, ratio, reason))
        speed.verdict, speed.ratio, speed.reason = verdict, ratio, reason
        speed.noise, speed.threshold, speed.p = noise, threshold, p
        return speed


def classify_speed(old_kernel, new_kernel, options=None):
    """The speed verdict of two kernel timing dicts (kcs_results.kernel_timing): a Speed whose
    ratio is new median / baseline median. The rule is in this module's docstring."""
    o = options or Options()
    if old_kernel is None or new_kernel is None:
        where = ("either run" if old_kernel is None and new_kernel is None
                 else "the baseline" if old_kernel is None else "the new run")
        return Speed("untimed", None, "not timed in " + where)
    old, new = Spread(old_kernel), Spread(new_kernel)
    ratio = new.median / old.median
    change = _change(ratio)
    way = "slower" if ratio > 1 else "faster"
    repeats = min(old.repeats, new.repeats)
    if repeats < o.min_repeats:
        return Speed("unclear", ratio, f"too few repeats to tell ({repeats} < {o.min_repeats})")
    if old.pace and new.pace:
        pace_ratio = new.pace / old.pace
        if _change(pace_ratio) > o.min_effect:
            pace_way = "slower" if pace_ratio > 1 else "faster"
            return Speed("unclear", ratio, f"{change:.1%} {way}, but the device's pace (a fixed workload timed "
                                           f"after each repeat) was {_change(pace_ratio):.0%} {pace_way} too: "
                                           f"the machine's load changed between the runs, so a change of the "
                                           f"kernel cannot be told from it", _change(pace_ratio), o.min_effect)
    spreads = [s for s in (old.relative_spread(), new.relative_spread()) if s is not None]
    if change <= o.min_effect:
        drift = max([d for d in (old.drift(), new.drift()) if d is not None], default=0.0)
        if drift > o.min_effect:
            return Speed("unclear", ratio, f"{change:.1%} {way}, within the minimum effect ({o.min_effect:.0%}), but "
                                           f"the block medians of a run drifted by {drift:.0%}: a change of the "
                                           f"minimum effect could hide in that", drift, o.min_effect)
        return Speed("same", ratio, f"{change:.1%} {way}: within the minimum effect ({o.min_effect:.0%})")
    if len(spreads) < 2:
        return Speed("unclear", ratio, f"{change:.0%} {way}, but a side recorded no quartiles or repeats: "
                                       f"its noise is unknown")
    noise = max(spreads)
    threshold = max(o.min_effect, noise)
    if change <= noise:
        return Speed("unclear", ratio, f"{change:.0%} {way}, within the noise the runs measured (interquartile "
                                       f"range or drift of the block medians, {noise:.0%} of the median)",
                     noise, threshold)
    if old.blocks and new.blocks:
        _, p = rank_sum_test(new.blocks, old.blocks)
        if p >= o.significance:
            return Speed("unclear", ratio, f"{change:.0%} {way}, beyond the noise ({noise:.1%}), but the rank "
                                           f"test of the {BLOCKS} block medians a side does not show it "
                                           f"(p = {p:.2g} ≥ {o.significance:g})", noise, threshold, p)
        evidence = f"every block median {way} (rank test of the block medians p = {p:.2g})"
    elif old.samples and new.samples:
        _, p = rank_sum_test(new.samples, old.samples)
        if p >= o.significance:
            return Speed("unclear", ratio, f"{change:.0%} {way}, beyond the noise ({noise:.1%}), but the rank "
                                           f"test does not show it (p = {p:.2g} ≥ {o.significance:g})",
                         noise, threshold, p)
        evidence = f"rank test p = {p:.2g}" if p >= 1e-15 else "rank test p < 1e-15"
    else:
        p = None
        apart = new.lower > old.upper if ratio > 1 else new.upper < old.lower
        if not apart:
            return Speed("unclear", ratio, f"{change:.0%} {way}, beyond the noise ({noise:.1%}), but the "
                                           f"interquartile ranges overlap", noise, threshold)
        evidence = "interquartile ranges apart"
    return Speed(way, ratio, f"{change:.0%} {way}, beyond the minimum effect ({o.min_effect:.0%}) and the noise "
                             f"({noise:.1%}); {evidence}", noise, threshold, p)


def round_ratios(old_kernel, new_kernel, tolerance):
    """(ratios, left out): new median / baseline median of each round of an interleaved pair of
    timings that both timed, and how many rounds were left out because the pace both sides timed
    in that round moved by more than tolerance between its two halves (the machine changed
    within the round; the pace is on CPU devices only)."""
    old_rounds, new_rounds = old_kernel.get("round_medians_s") or [], new_kernel.get("round_medians_s") or []
    old_paces, new_paces = old_kernel.get("round_pace_medians_s") or [], new_kernel.get("round_pace_medians_s") or []
    ratios, left_out = [], 0
    for index, (old, new) in enumerate(zip(old_rounds, new_rounds)):
        if not (_finite_or_none(old) and _finite_or_none(new)) or old <= 0 or new <= 0:
            continue
        old_pace = _finite_or_none(old_paces[index]) if index < len(old_paces) else None
        new_pace = _finite_or_none(new_paces[index]) if index < len(new_paces) else None
        if old_pace and new_pace and _change(new_pace / old_pace) > tolerance:
            left_out += 1
            continue
        ratios.append(new / old)
    return ratios, left_out


def classify_paired(old_kernel, new_kernel, options=None):
    """The speed verdict of two kernel timings taken in the same interleaved rounds
    (kcs_interleave.py), from each round's ratio of the two medians: the machine's load, common to
    both halves of a round, divides out. "same" within the minimum effect when the rounds agree
    within it too; "slower" or "faster" only beyond the minimum effect and the spread of the rounds
    (the interquartile range of their ratios), with a sign test of the rounds significant; else
    "unclear", as with fewer rounds than a sign test can ever find significant."""
    o = options or Options()
    if old_kernel is None or new_kernel is None:
        return classify_speed(old_kernel, new_kernel, o)
    old, new = Spread(old_kernel), Spread(new_kernel)
    repeats = min(old.repeats, new.repeats)
    if repeats < o.min_repeats:
        return Speed("unclear", new.median / old.median, f"too few repeats to tell ({repeats} < {o.min_repeats})")
    ratios, left_out = round_ratios(old_kernel, new_kernel, o.ceiling_change)
    above, below = sum(1 for r in ratios if r > 1), sum(1 for r in ratios if r < 1)
    needed = fewest_for_sign_test(o.significance)
    dropped = (f"; {left_out} round(s) left out: the pace moved by more than {o.ceiling_change:.0%} within "
               f"them" if left_out else "")
    if above + below < needed:
        ratio = new.median / old.median
        return Speed("unclear", ratio, f"{_change(ratio):.0%} {'slower' if ratio > 1 else 'faster'} overall, but "
                                       f"only {above + below} interleaved round(s) to judge by, and a sign test "
                                       f"needs {needed}{dropped}")
    logs = sorted(math.log(r) for r in ratios)
    ratio = math.exp(quantile(logs, 0.5))
    change, way = _change(ratio), "slower" if ratio > 1 else "faster"
    noise = math.exp(quantile(logs, 0.75) - quantile(logs, 0.25)) - 1.0
    threshold = max(o.min_effect, noise)
    rounds = f"the median of {len(ratios)} interleaved rounds' ratios"
    if change <= o.min_effect:
        if noise > o.min_effect:
            return Speed("unclear", ratio, f"{change:.1%} {way} ({rounds}), within the minimum effect "
                                           f"({o.min_effect:.0%}), but the rounds disagree by {noise:.0%} "
                                           f"(interquartile range): a change of the minimum effect could hide in "
                                           f"that{dropped}", noise, threshold)
        return Speed("same", ratio, f"{change:.1%} {way} ({rounds}, which agree within {noise:.1%}): within the "
                                    f"minimum effect ({o.min_effect:.0%}){dropped}", noise, threshold)
    if change <= noise:
        return Speed("unclear", ratio, f"{change:.0%} {way} ({rounds}), within the spread of the rounds "
                                       f"({noise:.0%}, interquartile range){dropped}", noise, threshold)
    p = sign_test(above, below)
    lean = f"{max(above, below)} of {above + below} rounds {way}"
    if p >= o.significance:
        return Speed("unclear", ratio, f"{change:.0%} {way} ({rounds}), beyond the spread of the rounds "
                                       f"({noise:.1%}), but only {lean} (sign test p = {p:.2g} ≥ "
                                       f"{o.significance:g}){dropped}", noise, threshold, p)
    return Speed(way, ratio, f"{change:.0%} {way} ({rounds}), beyond the minimum effect ({o.min_effect:.0%}) and "
                             f"the spread of the rounds ({noise:.1%}); {lean} (sign test p = {p:.2g}){dropped}",
                 noise, threshold, p)


# ---- the comparison ---------------------------------------------------------------------------

def interleaved_together(baseline, run):
    """Whether two results files are sides of one interleaved comparison (kcs_interleave.py): the
    same "interleaved" id and number of rounds."""
    first, second = baseline.data.get("interleaved"), run.data.get("interleaved")
    return bool(first and second and first.get("id") == second.get("id")
                and first.get("rounds") == second.get("rounds"))


class Comparison:
    """The devices and results matched between a baseline and the new runs, classified; what is on
    one side only; and the warnings about what makes the runs comparable."""

    def __init__(self, baseline_run, runs, options=None):
        self.options = options or Options()
        self.options.check()
        self.baseline, self.runs = baseline_run, runs
        self.pairs, self.unmatched_old, self.unmatched_new = match_devices(baseline_run, runs, self.options.maps)
        self._partner = {(id(p.run), str(p.new.get("id"))): str(p.old.get("id")) for p in self.pairs}
        self.warnings = []   # (topic, text): what a reader must know before trusting the verdicts
        self._check_builds()
        self._check_devices()
        old = latest_by_key([baseline_run], self._old_key)
        new = latest_by_key(runs, self._new_key)
        self.rows = []
        for key in sorted(set(old) & set(new), key=_sortable):
            self.rows.append(self._row(key, old[key], new[key]))
        self.one_side = self._one_side(old, new)
        self.unvalidated = self._unvalidated()

    # keys: (case, backend, kernel, slot): slot is the baseline device id of a matched device
    def _old_key(self, result):
        device = result.get("device_record")
        return self._key(result, str(device.get("id")) if device else None)

    def _new_key(self, result):
        device = result.get("device_record")
        if device is None:
            return self._key(result, None)
        slot = self._partner.get((id(result["run"]), str(device.get("id"))))
        return self._key(result, slot if slot is not None else f"{result['run'].label} {device.get('id')}")

    @staticmethod
    def _key(result, slot):
        case = result["case"] or f"{result.get('file') or '?'}:{int(result['line']) if result.get('line') else '?'}"
        return (case, result.get("backend") or "", result.get("kernel") or "", slot or "")

    def _row(self, key, before, after):
        old_outcome, new_outcome = outcome(before), outcome(after)
        # Runs interleaved round by round (kcs_interleave.py) are judged round by round: the machine,
        # common to both halves of a round, divides out, and its ceilings need not be asked.
        paired = interleaved_together(self.baseline, after["run"])
        classify = classify_paired if paired else classify_speed
        speed = classify(kernel_timing(before), kernel_timing(after), self.options)
        device = after.get("device_record")
        moved = self._moved_ceilings.get((id(after["run"]), str(device.get("id")))) if device else None
        # A pace timed beside every repeat of both sides (classify_speed) says whether the machine
        # changed while this kernel was timed; ceilings measured once, at the start, say less.
        paced = all((kernel_timing(r) or {}).get("pace_median_s") for r in (before, after))
        if moved and not paced and not paired and speed.verdict in ("slower", "faster"):
            speed = Speed("unclear", speed.ratio, f"{speed.reason}; not judged: the device's ceilings differ "
                                                  f"between the runs ({moved})",
                          speed.noise, speed.threshold, speed.p)
        return {"key": key, "old": before, "new": after, "old_outcome": old_outcome, "new_outcome": new_outcome,
                "correctness": classify_correctness(old_outcome, new_outcome),
                "speed": speed.verdict, "ratio": speed.ratio, "reason": speed.reason, "p": speed.p,
                "noise": speed.noise}

    def _check_builds(self):
        """Warnings for each difference in how the runs were built ("comparability"); a note
        where a file does not say."""
        self.build_table = []  # (key, baseline value, [value per run]) for the page
        old = _build_facts(self.baseline)
        news = [_build_facts(run) for run in self.runs]
        keys = sorted(set(old) | {k for facts in news for k in facts})
        for key in keys:
            self.build_table.append((key, old.get(key), [facts.get(key) for facts in news]))
            for run, facts in zip(self.runs, news):
                if key in old and key in facts and old[key] != facts[key]:
                    self.warnings.append(("build", f"{key} differs: {old[key]!r} in the baseline, {facts[key]!r} "
                                                   f"in {run.label}"))
        if not self.baseline.comparability or not all(run.comparability for run in self.runs):
            missing = [r.label for r in [self.baseline] + self.runs if not r.comparability]
            self.warnings.append(("build", f"{', '.join(missing)} record(s) no \"comparability\" (compiler, flags, "
                                           f"build options): whether the builds match is unknown"))

    def _check_devices(self):
        self._moved_ceilings = {}
        for pair in self.pairs:
            where = f"{device_label(pair.old)} (baseline) and {pair.new.get('id')} ({pair.run.label})"
            for key, name in (("driver_version", "driver"), ("runtime_version", "runtime")):
                if (pair.old.get(key) or "") != (pair.new.get(key) or ""):
                    self.warnings.append(("driver", f"{where}: {name} {pair.old.get(key) or 'unknown'} → "
                                                    f"{pair.new.get(key) or 'unknown'}"))
            changes = ceiling_changes(pair.old, pair.new, self.options.min_effect)
            texts = []
            for key, before, after in changes:
                name, unit = CEILING_LABELS[key]
                texts.append(f"{name} {fmt_rate(before, unit)} → {fmt_rate(after, unit)} (×{after / before:.3g})")
            large = [t for (k, before, after), t in zip(changes, texts)
                     if k in KERNEL_CEILINGS and _change(after / before) > self.options.ceiling_change]
            if large:
                self._moved_ceilings[(id(pair.run), str(pair.new.get("id")))] = "; ".join(large)
            if changes:
                self.warnings.append(("ceilings", f"{where}: the measured ceilings differ by more than the minimum "
                                                  f"effect ({self.options.min_effect:.0%}): {'; '.join(texts)}. "
                                                  + (f"More than {self.options.ceiling_change:.0%}: a loaded machine "
                                                     f"or other clocks; its kernels' slower and faster verdicts are "
                                                     f"unclear" if large else
                                                     f"Within {self.options.ceiling_change:.0%} (--ceiling-change), "
                                                     f"what the copy bandwidth of a shared host varies by from run "
                                                     f"to run: the kernels are judged, but read their verdicts "
                                                     f"with this in mind")))
            if bool(pair.old.get("ceilings")) != bool(pair.new.get("ceilings")):
                self.warnings.append(("ceilings", f"{where}: ceilings measured in "
                                                  f"{'the baseline' if pair.old.get('ceilings') else pair.run.label} "
                                                  f"only: whether the machine measured the same is unknown"))
            for note in pair.notes:
                self.warnings.append(("device", f"{where}: {note}"))
        for device in self.unmatched_old:
            count = sum(1 for r in self.baseline.results if r.get("device_record") is device)
            self.warnings.append(("device", f"nothing in {', '.join(r.label for r in self.runs)} matched baseline "
                                            f"device {device_label(device)} ({device.get('backend')}, driver "
                                            f"{device.get('driver_version') or 'unknown'}): its "
                                            f"{count} result(s) were compared with nothing{self._hint(device)}"))
        for run, device in self.unmatched_new:
            count = sum(1 for r in run.results if r.get("device_record") is device)
            self.warnings.append(("device", f"nothing in the baseline matched device {device_label(device)} of "
                                            f"{run.label} ({device.get('backend')}): its {count} result(s) were "
                                            f"compared with nothing"))
        for run in [self.baseline] + self.runs:
            for text in run.summary_mismatches():
                self.warnings.append(("summary", f"{run.label}: {text}"))

    def _hint(self, old):
        """'; if device X of new.json is that card: --map 'A=B'' for an unmatched baseline device
        with an unmatched new device of the same backend and index."""
        for run, new in self.unmatched_new:
            if new.get("backend") == old.get("backend") and number(new.get("index")) == number(old.get("index")):
                return (f"; if {device_label(new)} of {run.label} is that card: --map "
                        f"'{old.get('id')}={new.get('id')}'")
        return ""

    def _one_side(self, old, new):
        """Everything on one side only, named: devices nothing matched, cases and kernels the other
        side does not have at all, then single results. Each {side, kind, what, results}."""
        entries = []
        unmatched = {"baseline": {id(d) for d in self.unmatched_old},
                     "new": {id(d) for _, d in self.unmatched_new}}
        for side, mine, other in (("baseline", old, new), ("new", new, old)):
            alone = sorted(set(mine) - set(other), key=_sortable)
            by_device = {}
            for key in list(alone):
                device = mine[key].get("device_record")
                if device is not None and id(device) in unmatched[side]:
                    by_device.setdefault(id(device), []).append(mine[key])
                    alone.remove(key)
            devices = self.unmatched_old if side == "baseline" else [d for _, d in self.unmatched_new]
            for device in devices:
                if id(device) in by_device:
                    results = by_device[id(device)]
                    entries.append({"side": side, "kind": "device", "results": results,
                                    "what": f"device {device_label(device)} ({device.get('backend')}"
                                            f"{', ' + results[0]['run'].label if side == 'new' else ''}): "
                                            f"nothing matched it"})
            other_cases = {k[0] for k in other}
            other_kernels = {k[1:] for k in other}
            for case in sorted({k[0] for k in alone if k[0] not in other_cases}):
                results = [mine[k] for k in alone if k[0] == case]
                entries.append({"side": side, "kind": "case", "results": results, "what": f"case {case}"})
            alone = [k for k in alone if k[0] in other_cases]
            for kernel in sorted({k[1:] for k in alone if k[1:] not in other_kernels}, key=_sortable):
                results = [mine[k] for k in alone if k[1:] == kernel]
                entries.append({"side": side, "kind": "kernel", "results": results,
                                "what": f"kernel {kernel[1] or '(none)'} ({kernel[0]} on "
                                        f"{_where(results[0])})"})
            for key in (k for k in alone if k[1:] in other_kernels):
                entries.append({"side": side, "kind": "result", "results": [mine[key]], "what": describe(mine[key])})
        return entries

    def _unvalidated(self):
        """What the comparison could not validate (the module's docstring says what counts), each
        {side, kind, what, results} with only the results that ran: the one-side entries of the baseline
        and of the new runs' unmatched devices (of their kind), then the plain skips of what ran in the
        baseline (kind "skipped")."""
        gaps = []
        for entry in self.one_side:
            if entry["side"] == "baseline" or entry["kind"] == "device":
                ran = [r for r in entry["results"] if outcome(r) not in SKIPPED]
                if ran:
                    gaps.append({"side": entry["side"], "kind": entry["kind"], "what": entry["what"], "results": ran})
        for row in self.newly_skipped():
            if row["new_outcome"] == "skip":
                gaps.append({"side": "new", "kind": "skipped", "what": describe(row["new"]), "results": [row["new"]]})
        return gaps

    # ---- what the command and the page say ----

    def count(self, field, value):
        """How many matched pairs have this correctness or speed class."""
        return sum(1 for row in self.rows if row[field] == value)

    def newly_skipped(self):
        """Pairs that ran in the baseline and are skipped now (a lost device, a lost backend)."""
        return [row for row in self.rows if row["old_outcome"] not in SKIPPED and row["new_outcome"] in SKIPPED]

    def verdict(self):
        """(exit status, one line): 3 a correctness regression; 2 nothing compared, or something not
        validated (unless allowed); 4 slower only; 0 no regression."""
        regressed, slower = self.count("correctness", "regressed"), self.count("speed", "slower")
        unmatched = len(self.unmatched_old) + len(self.unmatched_new)
        unvalidated = sum(len(gap["results"]) for gap in self.unvalidated)
        caveats = []
        if unmatched:
            caveats.append(f"{unmatched} device(s) matched nothing")
        if self.one_side:
            caveats.append(f"{sum(len(e['results']) for e in self.one_side)} result(s) on one side only")
        if unvalidated and (self.options.allow_unmatched or regressed):  # else the verdict itself says it
            caveats.append(f"{unvalidated} result(s) not validated"
                           + (", allowed by --allow-unmatched" if self.options.allow_unmatched else ""))
        if self.warnings:
            caveats.append(f"{len(self.warnings)} warning(s)")
        tail = f" [{'; '.join(caveats)}]" if caveats else ""
        if not self.rows:
            return EXIT_BAD_INPUT, (f"verdict: NOTHING COMPARED: no result matched between the baseline and the "
                                    f"new results (see the devices named above; --map OLD=NEW pairs them){tail}; "
                                    f"exit {EXIT_BAD_INPUT}")
        if regressed:
            more = f", and {slower} slower" if slower else ""
            return EXIT_CORRECTNESS, (f"verdict: REGRESSED: {regressed} pass(es) now fail or error{more}, of "
                                      f"{len(self.rows)} compared{tail}; exit {EXIT_CORRECTNESS}")
        if unvalidated and not self.options.allow_unmatched:
            skipped = sum(1 for gap in self.unvalidated if gap["kind"] == "skipped")
            parts = [f"{unvalidated - skipped} result(s) that ran were compared with nothing"] \
                if unvalidated > skipped else []
            parts += [f"{skipped} result(s) that ran in the baseline are skipped now"] if skipped else []
            devices = [f"{device_label(d)} (baseline)" for d in self.unmatched_old] + \
                      [f"{device_label(d)} ({run.label})" for run, d in self.unmatched_new]
            if devices:
                parts.append(f"nothing matched device(s) {', '.join(devices)}")
            found = f"{slower} of {len(self.rows)} compared got slower" if slower else \
                f"no regression in {len(self.rows)} compared"
            return EXIT_BAD_INPUT, (f"verdict: NOT VALIDATED: {'; '.join(parts)} (each is listed above: --map "
                                    f"OLD=NEW pairs devices, --allow-unmatched accepts the rest); {found}{tail}; "
                                    f"exit {EXIT_BAD_INPUT}")
        if slower:
            return EXIT_SPEED, (f"verdict: SLOWER: {slower} of {len(self.rows)} compared got slower, nothing broke"
                                f"{tail}; exit {EXIT_SPEED}")
        return EXIT_OK, (f"verdict: no regression in {len(self.rows)} compared ({self.count('speed', 'unclear')} "
                         f"unclear, {self.count('correctness', 'expected')} expected failures){tail}; exit {EXIT_OK}")

    def summary_lines(self):
        """The text the command prints: counts, warnings, then every change, every one-side item and
        every newly skipped result by name, then the one-line verdict."""
        lines = [f"comparison with baseline {self.baseline.path}: {len(self.rows)} matched (case, backend, kernel, "
                 f"device); devices matched: "
                 + (", ".join(f"{p.old.get('id')}→{p.new.get('id')} by {p.how}" for p in self.pairs) or "none"),
                 "  correctness: " + ", ".join(f"{self.count('correctness', c)} {c}" for c in ORDER_CORRECTNESS),
                 "  speed:       " + ", ".join(f"{self.count('speed', s)} {s}" for s in ORDER_SPEED)
                 + f" (minimum effect {self.options.min_effect:.0%}, rank test at {self.options.significance:g})"]
        for run in self.runs:
            if interleaved_together(self.baseline, run):
                lines.append(f"  interleaved: {run.label} and the baseline are sides of one interleave of "
                             f"{run.data['interleaved']['rounds']} rounds (kcs_interleave.py): speed judged round by "
                             f"round")
        lines += [f"  WARNING ({topic}): {text}" for topic, text in self.warnings]
        for row in sorted(self.rows, key=lambda r: ORDER_CORRECTNESS.index(r["correctness"])):
            if row["correctness"] in ("regressed", "fixed", "expected"):
                new = row["new"]
                why = (f" ({first_line(new['message'])})" if row["correctness"] == "regressed" and new["message"]
                       else f" (expected: {new['expected']['reason']}, {new['expected'].get('where', '')})"
                       if row["correctness"] == "expected" else "")
                lines.append(f"  {row['correctness'].upper()}: {describe(new)}: {row['old_outcome']} -> "
                             f"{row['new_outcome']}{why}")
        for row in self.rows:
            if row["speed"] in ("slower", "faster"):
                lines.append(f"  {row['speed'].upper()}: {describe(row['new'])}: kernel median ×{row['ratio']:.3g} "
                             f"({row['reason']})")
        counted = {id(result) for gap in self.unvalidated for result in gap["results"]}
        for entry in self.one_side:
            side = "ONLY IN THE BASELINE" if entry["side"] == "baseline" else "ONLY IN THE NEW RESULTS"
            count = len(entry["results"])
            ran = sum(1 for result in entry["results"] if id(result) in counted)
            lines.append(f"  {side}: {entry['what']}"
                         + (f" ({count} result{'' if count == 1 else 's'})" if entry["kind"] != "result" else "")
                         + (f": not validated{f' ({ran} ran)' if ran != count else ''}" if ran else ""))
        for row in self.newly_skipped():
            lines.append(f"  NOW SKIPPED: {describe(row['new'])}: {row['old_outcome']} -> {row['new_outcome']}"
                         + (f" ({first_line(row['new']['message'])})" if row["new"]["message"] else ""))
        lines.append(self.verdict()[1])
        return lines


# How a kcs that did not record "kernel_repeats" timed kernels: one repeat at a time, as every kcs
# did before its CUDA backend queued them back to back (docs/runner.md, "Back to back").
REPEATS_NOT_RECORDED = "one at a time (not recorded: kcs timed so before it recorded how)"


def _build_facts(run):
    """What a run says about how it was built: its "comparability" object; the compiler from
    "kcs" where that object does not give one; and, for a kcs run that timed kernels without
    recording how (comparability without "kernel_repeats", timings without "back_to_back"), that
    it timed them one at a time, so that a baseline from before is compared as what it was."""
    facts = dict(run.comparability)
    if "compiler" not in facts and run.kcs.get("compiler"):
        facts["compiler"] = str(run.kcs["compiler"])
    kernel_timings = [(r.get("timing") or {}).get("kernel") for r in run.results if isinstance(r, dict)]
    if (run.comparability and "kernel_repeats" not in facts
            and any(isinstance(t, dict) and "back_to_back" not in t for t in kernel_timings)):
        facts["kernel_repeats"] = REPEATS_NOT_RECORDED
    return facts


def _sortable(key):
    return tuple("" if part is None else str(part) for part in key)


def _where(result):
    device = result.get("device_record")
    return device_label(device) if device else "no device"


def describe(result):
    """case [backend kernel on device] as one readable string."""
    where = " ".join(str(part) for part in (result.get("backend"), result.get("kernel")) if part)
    device = result.get("device_record")
    case = result["case"] or f"{result.get('file')}:{int(result['line']) if result.get('line') else '?'}"
    return f"{case} [{where}{' on ' + device_label(device) if device else ''}]"


def first_line(text):
    """The first line of a message, shortened for a one-line summary."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:117] + "..."
