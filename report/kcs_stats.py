"""The statistics of the baseline comparison: quantiles as the runner computes them, the
Mann-Whitney U (Wilcoxon rank-sum) test of whether two sets of timed repeats differ, and the sign
test of whether the rounds of an interleaved comparison lean one way.

Why a rank test: kernel times are not normal. They have a floor (the kernel cannot go faster than
the hardware), a long right tail (a preempted repeat, a clock that had not ramped up) and, for
short kernels, ties from the timer's resolution. The rank test assumes none of that: it asks how
often a repeat of one run is slower than a repeat of the other, and how unlikely that count would
be if both runs drew their repeats from the same distribution.

    /usr/bin/python3 -m unittest discover -s report -p 'test_*.py'   (tests in test_kcs_report.py)

Standard library only, so that a results file of a thousand repeats per kernel costs a sort.
"""

import math

# Below this many pairs (n1 * n2) and without ties the p-value is exact (the distribution of U
# counted by a generating function); above, the normal approximation is accurate to well under
# the significance levels used, and ties need its correction anyway.
EXACT_PAIRS = 2500


def quantile(sorted_values, q):
    """The q-quantile of ascending values by linear interpolation between order statistics, as
    harness/suite.c computes the quartiles it writes (numpy's default)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = q * (len(sorted_values) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(sorted_values) - 1)
    weight = position - below
    return sorted_values[below] * (1.0 - weight) + sorted_values[above] * weight


def _ranks(values):
    """1-based ranks of values, ties given the mean of the ranks they span; and sum(t^3 - t) over
    the groups of t tied values (the normal approximation's variance correction)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = 0
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        mean_rank = (start + end) / 2.0 + 1.0
        for k in range(start, end + 1):
            ranks[order[k]] = mean_rank
        size = end - start + 1
        ties += size ** 3 - size
        start = end + 1
    return ranks, ties


def _u_counts(m, n):
    """How many of the C(m+n, m) orderings of m and n untied values give U = 0, 1, ..., m*n: the
    coefficients of the Gaussian binomial coefficient [m+n choose m] in q, built as the product
    of (1 - q^(n+i)) / (1 - q^i) for i = 1..m (each division is exact)."""
    counts = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        for k in range(m * n, n + i - 1, -1):  # times (1 - q^(n+i))
            counts[k] -= counts[k - n - i]
        for k in range(i, m * n + 1):          # divided by (1 - q^i)
            counts[k] += counts[k - i]
    return counts


def rank_sum_test(first, second):
    """(U, p): the Mann-Whitney U of first against second (the number of pairs in which the
    value from first is larger, ties counting one half), and the two-sided p-value of the
    hypothesis that both samples come from one distribution. Exact without ties when
    n1 * n2 <= EXACT_PAIRS; otherwise the normal approximation with the tie correction of the
    variance and a continuity correction of 1/2. p is 1 when every value is tied."""
    n1, n2 = len(first), len(second)
    if n1 == 0 or n2 == 0:
        raise ValueError("rank test needs values on both sides")
    ranks, ties = _ranks(list(first) + list(second))
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    if ties == 0 and n1 * n2 <= EXACT_PAIRS:
        counts = _u_counts(n1, n2)
        tail = int(min(u, n1 * n2 - u))
        p = 2.0 * sum(counts[:tail + 1]) / math.comb(n1 + n2, n1)
        return u, min(1.0, p)
    total = n1 + n2
    variance = n1 * n2 / 12.0 * ((total + 1) - ties / (total * (total - 1)))
    if variance <= 0:
        return u, 1.0
    z = max(0.0, abs(u - mean) - 0.5) / math.sqrt(variance)
    return u, min(1.0, math.erfc(z / math.sqrt(2.0)))


def sign_test(above, below):
    """The two-sided exact p-value of a sign test: how likely a split at least as uneven as above
    against below would be if each was a fair coin's toss. Ties are left out by the caller. p is
    1 when there is nothing to test."""
    total = above + below
    if total == 0:
        return 1.0
    tail = sum(math.comb(total, k) for k in range(max(above, below), total + 1))
    return min(1.0, 2.0 * tail / 2 ** total)


def fewest_for_sign_test(level):
    """The fewest values a sign test needs to reach p < level at all (all of them on one side):
    8 at 0.01 (2 / 2^8 = 0.0078)."""
    count = 1
    while sign_test(count, 0) >= level:
        count += 1
    return count
