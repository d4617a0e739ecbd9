"""Seed 001's resampling mechanisms cell by cell, from the definitions (exact arithmetic
for the quality condition, direct sums over scipy.stats.binom for the laws).

Quality condition (seed 001, inequality (1)): a protected count k of an original x > 0
satisfies -S <= (k - x) / sqrt(x (1 - x/n)) <= S; an original 0 stays 0.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy import stats


def quality_interval(x, n, S):
    """(lo, hi): the smallest and largest integers k >= 0 meeting the quality condition,
    decided in exact rational arithmetic as (k - x)^2 <= S^2 x (1 - x/n) (x = 0: (0, 0))."""
    x, n, S = int(x), int(n), Fraction(S)
    bound = S * S * x * (1 - Fraction(x, n))
    lo = hi = x
    while lo > 0 and (lo - 1 - x) ** 2 <= bound:
        lo -= 1
    while (hi + 1 - x) ** 2 <= bound:
        hi += 1
    return lo, hi


def bootstrap_law(k, x, n, M, S):
    """Pr(published k | original x) of one cell of the bootstrap averaged over M tables,
    conditional on the quality condition: T, the sum of the cell over the M bootstrap
    tables, is binomial(nM, x/n); the published value is round(T/M) half up; a direct sum
    over every T."""
    lo, hi = quality_interval(x, n, S)
    T = np.arange(n * M + 1)
    pmf = stats.binom.pmf(T, n * M, x / n)
    rounded = np.floor(T / M + 0.5)
    inside = (rounded >= lo) & (rounded <= hi)
    return pmf[(rounded == k) & inside].sum() / pmf[inside].sum()


def binomial_law(ks, x, n, S):
    """Pr(published k | original x), k in ``ks``, of the binomial perturbation's
    perturbation stage: binomial(n, x/n) restricted to the quality interval and
    renormalised (the compensation stage left out)."""
    lo, hi = quality_interval(x, n, S)
    ks = np.asarray(ks)
    pmf = stats.binom.pmf(ks, n, x / n) * ((ks >= lo) & (ks <= hi))
    full = stats.binom.pmf(np.arange(lo, hi + 1), n, x / n).sum()
    return pmf / full
