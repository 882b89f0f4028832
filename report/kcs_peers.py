"""The one rule by which a device is judged against its peers (docs/runner.md, "Peers: one rule"),
in Python: the twin of the runner's (harness/agreement.c, agreement.h), for the fleet report's
groups of peers that span several results files (report/kcs_fleet.py). Within one results file
the runner has judged already and written its verdicts ("agreement", "speed", "stragglers"); the
fleet reads those. Both implementations are held to tests/peers-fixture/ (report/test_kcs_peers.py,
harness/agreement_test.c): a change to the rule is a change to both and to the fixture.

    identity(device)              "backend | name | platform | driver | runtime" of a device record
    judge_speed(timings)          [(identity, median_s, lower_quartile_s, upper_quartile_s)] of one
                                  case and kernel -> [SpeedVerdict or None], in the same order
    judge_agreement(answers)      [(identity, hashes, determinism)] of one case and kernel
                                  -> [AgreementVerdict], in the same order
    judge_group_speed, judge_group_agreement
                                  the same rule on one group already formed, from compact
                                  inputs (medians and the group's noise; answer -> count), for
                                  the fleet's groups of thousands

The arithmetic is the runner's, operation for operation (IEEE doubles both), so that a verdict at
the threshold falls the same way in both.
"""

import bisect
import math
from typing import NamedTuple, Optional

# The smallest slowdown called a straggler, whatever the noise (KCS_STRAGGLER_MINIMUM_EFFECT).
MINIMUM_EFFECT = 0.10

# What a device's result proves of its kernel's bits (kcs_determinism).
PROVED, NOT_PROVED, NONDETERMINISTIC = "proved", "not proved", "nondeterministic"

# A group's verdict (kcs_agreement_kind).
ALONE, AGREE, DISAGREE, NOT_COMPARED = "alone", "agree", "disagree", "not compared"


def identity(device):
    """A device record's identity (kcs_peer_identity): devices alike in all five are peers."""
    return " | ".join(str(device.get(key) or "") for key in
                      ("backend", "name", "platform", "driver_version", "runtime_version"))


class SpeedVerdict(NamedTuple):
    """What the rule says of one timing (kcs_speed_verdict)."""
    peers: int            # timed devices of its identity besides it
    peer_median_s: float  # the median of their medians
    threshold: float      # its identity group's noise, at least MINIMUM_EFFECT
    ratio: float          # median_s / peer_median_s
    straggler: bool       # median_s > peer_median_s * (1 + threshold)


def _number(value):
    """A finite float, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _is_timed(median):
    return median is not None and median > 0


def _relative_spread(median, lower, upper):
    """The interquartile range relative to the median; 0 where a quartile is not a number."""
    if lower is None or upper is None:
        return 0.0
    return (upper - lower) / median


def judge_speed(timings):
    """Judges the timings of one case and kernel, of any identities, each against the others of its
    identity: [(identity, median_s, lower_quartile_s, upper_quartile_s)] -> a SpeedVerdict per
    timing, or None where it is not judged (no finite positive median, or no timed peer)."""
    cleaned = [(key, _number(median), _number(lower), _number(upper)) for key, median, lower, upper in timings]
    groups = {}
    for m, (key, median, _, _) in enumerate(cleaned):
        if _is_timed(median):
            groups.setdefault(key, []).append(m)
    verdicts = [None] * len(cleaned)
    for members in groups.values():
        # The noise is the group's, the judged device's own timing included: one threshold for all.
        noise = 0.0
        for m in members:
            _, median, lower, upper = cleaned[m]
            spread = _relative_spread(median, lower, upper)
            noise = spread if spread > noise else noise
        for m, verdict in zip(members, judge_group_speed([cleaned[m][1] for m in members], noise)):
            verdicts[m] = verdict
    return verdicts


def group_noise(quartiles):
    """The noise of a group of timed peers: [(median_s, lower_quartile_s, upper_quartile_s)], every
    median finite and positive, a quartile None where not recorded -> the largest relative spread."""
    noise = 0.0
    for median, lower, upper in quartiles:
        spread = _relative_spread(median, _number(lower), _number(upper))
        noise = spread if spread > noise else noise
    return noise


def judge_group_speed(medians, noise):
    """The rule on one group of peers already formed: medians (each finite and positive) and the
    group's noise (group_noise) -> a SpeedVerdict per median, None where it has no peer. The
    median of the others' medians is read from one sorted list (taking one device out of it
    leaves the same values whichever of equal medians it was), so a group of n costs n log n."""
    count = len(medians)
    if count < 2:
        return [None] * count
    threshold = noise if noise > MINIMUM_EFFECT else MINIMUM_EFFECT
    ordered = sorted(medians)
    peers = count - 1
    half = peers // 2
    verdicts = []
    for median in medians:
        out = bisect.bisect_left(ordered, median)  # its place: the others are ordered without it

        def other(j):
            return ordered[j] if j < out else ordered[j + 1]
        peer_median = other(half) if peers % 2 else 0.5 * (other(half - 1) + other(half))
        verdicts.append(SpeedVerdict(peers, peer_median, threshold, median / peer_median,
                                     median > peer_median * (1.0 + threshold)))
    return verdicts


class AgreementVerdict(NamedTuple):
    """What the rule says of one answer and its group (kcs_agreement_verdict)."""
    group: int              # index of the first answer of its identity
    members: int            # answers of its identity, itself included
    verdict: str            # ALONE, AGREE, DISAGREE or NOT_COMPARED: its group's
    decided: bool           # on DISAGREE: more than half the group has one answer
    differs: bool           # on DISAGREE: outside that majority (every member without one)
    because: Optional[int]  # on NOT_COMPARED: the answer whose determinism decided it


def _answer(hashes):
    """Every output's hash as one comparable value: equal values, equal bits."""
    return tuple(sorted((hashes or {}).items()))


def judge_group_agreement(counts, compared):
    """The rule on one group of peers already formed, its answers counted: counts is
    {answer: how many members gave it} (any hashable answer), compared whether every member's
    kernel was proved deterministic -> (verdict, majority answer or None). The verdict is the
    group's (ALONE, AGREE, DISAGREE, NOT_COMPARED); the majority is an answer held by more than
    half of the group (on DISAGREE: the members outside it differ; none there, every one does)."""
    members = sum(counts.values())
    majority = next((answer for answer, count in counts.items() if 2 * count > members), None)
    if members < 2:
        return ALONE, majority
    if not compared:
        return NOT_COMPARED, majority
    return (AGREE if len(counts) == 1 else DISAGREE), majority


def judge_agreement(answers):
    """Judges the answers of one case and kernel, of any identities, group by group:
    [(identity, {output: hash}, PROVED | NOT_PROVED | NONDETERMINISTIC)] -> an AgreementVerdict
    per answer. A group is compared only where every member's kernel was proved deterministic;
    the majority is an answer held by more than half of the group."""
    first, members_of = {}, {}
    for m, (key, _, _) in enumerate(answers):
        members_of.setdefault(first.setdefault(key, m), []).append(m)
    values = [_answer(hashes) for _, hashes, _ in answers]
    verdicts = [None] * len(answers)
    for g, members in members_of.items():
        counts = {}
        for m in members:
            counts[values[m]] = counts.get(values[m], 0) + 1
        nondeterministic = next((m for m in members if answers[m][2] == NONDETERMINISTIC), None)
        unproved = next((m for m in members if answers[m][2] == NOT_PROVED), None)
        kind, majority = judge_group_agreement(counts, nondeterministic is None and unproved is None)
        because = (nondeterministic if nondeterministic is not None else unproved) if kind == NOT_COMPARED else None
        disagree = kind == DISAGREE
        for m in members:
            verdicts[m] = AgreementVerdict(g, len(members), kind, disagree and majority is not None,
                                           disagree and (majority is None or values[m] != majority), because)
    return verdicts
