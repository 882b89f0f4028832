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

The arithmetic is the runner's, operation for operation (IEEE doubles both), so that a verdict at
the threshold falls the same way in both.
"""

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


def _median_of(values):
    ordered = sorted(values)
    count = len(ordered)
    return ordered[count // 2] if count % 2 else 0.5 * (ordered[count // 2 - 1] + ordered[count // 2])


def judge_speed(timings):
    """Judges the timings of one case and kernel, of any identities, each against the others of its
    identity: [(identity, median_s, lower_quartile_s, upper_quartile_s)] -> a SpeedVerdict per
    timing, or None where it is not judged (no finite positive median, or no timed peer)."""
    cleaned = [(key, _number(median), _number(lower), _number(upper)) for key, median, lower, upper in timings]
    verdicts = []
    for m, (key, median, _, _) in enumerate(cleaned):
        if not _is_timed(median):
            verdicts.append(None)
            continue
        # The noise is the group's, the judged device's own timing included: one threshold for all.
        noise, peers = 0.0, []
        for n, (other_key, other_median, lower, upper) in enumerate(cleaned):
            if not _is_timed(other_median) or other_key != key:
                continue
            spread = _relative_spread(other_median, lower, upper)
            noise = spread if spread > noise else noise
            if n != m:
                peers.append(other_median)
        if not peers:
            verdicts.append(None)
            continue
        threshold = noise if noise > MINIMUM_EFFECT else MINIMUM_EFFECT
        peer_median = _median_of(peers)
        verdicts.append(SpeedVerdict(len(peers), peer_median, threshold, median / peer_median,
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


def judge_agreement(answers):
    """Judges the answers of one case and kernel, of any identities, group by group:
    [(identity, {output: hash}, PROVED | NOT_PROVED | NONDETERMINISTIC)] -> an AgreementVerdict
    per answer. A group is compared only where every member's kernel was proved deterministic;
    the majority is an answer held by more than half of the group."""
    first = {}
    groups = [first.setdefault(key, m) for m, (key, _, _) in enumerate(answers)]
    values = [_answer(hashes) for _, hashes, _ in answers]
    verdicts = [None] * len(answers)
    for g in sorted(set(groups)):
        members = [m for m, group in enumerate(groups) if group == g]
        nondeterministic = [m for m in members if answers[m][2] == NONDETERMINISTIC]
        unproved = [m for m in members if answers[m][2] == NOT_PROVED]
        majority = next((m for m in members if 2 * sum(values[n] == values[m] for n in members) > len(members)),
                        None)
        if len(members) < 2:
            kind = ALONE
        elif nondeterministic or unproved:
            kind = NOT_COMPARED
        elif all(values[m] == values[g] for m in members):
            kind = AGREE
        else:
            kind = DISAGREE
        because = (nondeterministic or unproved)[0] if kind == NOT_COMPARED else None
        for m in members:
            disagree = kind == DISAGREE
            verdicts[m] = AgreementVerdict(g, len(members), kind, disagree and majority is not None,
                                           disagree and (majority is None or values[m] != values[majority]), because)
    return verdicts
