"""Proportions with honest uncertainty: Wilson score intervals (95 %)."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials; (0, 1) when n == 0 (nothing known).

    0 of n bounds the rate below about 3/n: 0/300 means "< 1 %", not "never"."""
    if n == 0:
        return (0.0, 1.0)
    if not 0 <= k <= n:
        raise ValueError(f"k={k} outside [0, n={n}]")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def fmt_rate(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} [{lo:.2f}, {hi:.2f}]"


def median_interval(xs: list[float], alpha: float = 0.05) -> tuple[float, float] | None:
    """A distribution-free interval for the median of ``xs`` (order statistics, the sign test's
    binomial): at least 1 - alpha confident. None under 6 values, where no such interval exists
    at 95 % (the widest, min to max, covers the median with 1 - 2/2**n)."""
    n = len(xs)
    s = sorted(xs)
    # The largest k with P(Bin(n, 1/2) <= k - 1) <= alpha / 2: [s[k-1], s[n-k]] (0-based).
    k, tail = 0, 0.0
    while True:
        nxt = tail + math.comb(n, k) / 2**n
        if nxt > alpha / 2:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return None
    return (s[k - 1], s[n - k])
