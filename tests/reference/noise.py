"""Random rounding and noisy counts from their definitions: the transition probabilities,
and the posterior by enumerating every original table in a box.

Random (unrestricted) rounding to base B (DESIGN.md): every cell and every published
total is rounded on its own to one of its two adjacent multiples of B, up with
probability (x mod B) / B; a multiple stays.  Noisy counts: every cell and total gets its
own draw of two-sided geometric noise, Pr(k) = (1 - q) / (1 + q) q^|k| with
q = exp(-1 / scale), or discrete Gaussian noise, Pr(k) = exp(-k^2 / (2 sigma^2)) / C with
C the sum over all integers; clipped releases publish max(0, x + noise), so a published 0
has probability Pr(noise <= -x).

The posterior: every table in a box of cell values, weighed by the prior times the
product over cells and totals of Pr(published | original), summed in log space.  Plain
Python / NumPy / SciPy; no code shared with riskengine.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from .numerics import log_prior

# --- transition probabilities ------------------------------------------------------------------


def round_prob(x: int, y: int, B: int) -> float:
    """Pr(x is published as y) under random rounding to base B."""
    below = (x // B) * B
    if below == x:
        return 1.0 if y == x else 0.0
    up = (x - below) / B
    return up if y == below + B else (1.0 - up) if y == below else 0.0


def geometric_logpmf(k: int, scale: float) -> float:
    """log of (1 - q) / (1 + q) q^|k|, q = exp(-1 / scale)."""
    q = math.exp(-1.0 / scale)
    return math.log((1.0 - q) / (1.0 + q)) - abs(k) / scale


def _gauss_log_norm(sigma: float) -> float:
    """log of the sum over all integers of exp(-k^2 / (2 sigma^2)) (terms past 40 sigma are
    below 1e-340 of the largest)."""
    K = int(40 * sigma) + 40
    k = np.arange(-K, K + 1, dtype=float)
    return float(logsumexp(-k ** 2 / (2 * sigma ** 2)))


def gaussian_logpmf(k: int, sigma: float, log_norm: float | None = None) -> float:
    """log Pr(k) of the discrete Gaussian with parameter sigma."""
    c = _gauss_log_norm(sigma) if log_norm is None else log_norm
    return -k * k / (2 * sigma ** 2) - c


class Noise:
    """The noise of a NoisyCounts release, from its definition: log Pr(published y |
    original x) for one entry."""

    def __init__(self, distribution: str, scale: float, clip: bool):
        self.distribution, self.scale, self.clip = distribution, float(scale), bool(clip)
        self._c = _gauss_log_norm(scale) if distribution == "discrete_gaussian" else None

    def logpmf(self, k: int) -> float:
        if self.distribution == "geometric":
            return geometric_logpmf(k, self.scale)
        return gaussian_logpmf(k, self.scale, self._c)

    def pmf(self, k: int) -> float:
        return math.exp(self.logpmf(k))

    def log_lower_tail(self, k: int) -> float:
        """log Pr(noise <= k): the pmf summed over k, k - 1, ... until the terms are below
        1e-40 of the sum (log-sum-exp)."""
        span = int(100 * self.scale) + 100
        terms = [self.logpmf(j) for j in range(k - span, k + 1)]
        return float(logsumexp(terms))

    def loglik(self, x: int, y: int) -> float:
        """log Pr(the entry with original value x is published as y)."""
        if not self.clip:
            return self.logpmf(y - x)
        if y < 0:
            return -math.inf
        if y == 0:
            return self.log_lower_tail(-x)
        return self.logpmf(y - x)

    def reach(self, tail: float = 1e-14) -> int:
        """Smallest M with Pr(|noise| >= M) below ``tail``: how far from a published value
        the box must reach (its last value has noise probability below ``tail`` too)."""
        M = 0
        while True:
            mass = sum(2 * self.pmf(k) for k in range(M, M + 400))
            if mass < tail:
                return M
            M += 1


def rounding_loglik(B: int):
    """log Pr(published y | original x) of random rounding to base B, as a function."""
    def f(x, y):
        p = round_prob(int(x), int(y), B)
        return math.log(p) if p > 0 else -math.inf
    return f


# --- priors -------------------------------------------------------------------------------------


# --- the posterior by enumeration ---------------------------------------------------------------


def tables_in_box(lo, hi) -> np.ndarray:
    """Every table with lo <= x <= hi cell by cell: (K, *shape)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    axes = [np.arange(a, b + 1) for a, b in zip(lo.ravel(), hi.ravel())]
    grid = np.array(np.meshgrid(*axes, indexing="ij")).reshape(lo.size, -1).T
    return grid.reshape((-1,) + lo.shape)


def _entry_loglik(loglik, y, values) -> np.ndarray:
    """log Pr(y | x) for every x in ``values`` (each distinct x computed once)."""
    xs = np.unique(values)
    ll = np.array([loglik(int(x), int(y)) for x in xs])
    return ll[np.searchsorted(xs, values)]


def posterior(published, margins: dict, dims: tuple, loglik, spec: dict, lo, hi,
              cut=None) -> dict:
    """The exact posterior over the tables in the box ``lo .. hi``.

    ``published``: the interior, ``margins``: ``{dims kept: published totals}``,
    ``loglik(x, y)``: log Pr(entry with original x published as y).  ``cut``: boolean
    arrays ``(low, high)`` marking the sides of the box that cut off tables the prior
    allows (default: every high side, and every low side above 0).  Returns
    ``{"cells": {cell: {value: prob}}, "totals": {keep: {entry: {value: prob}}},
    "count": tables with positive weight, "log_z": log evidence, "edge": largest
    posterior mass of a cell at a cut side of the box}``.
    """
    P = np.asarray(published, dtype=np.int64)
    T = tables_in_box(lo, hi)
    K = T.shape[0]
    logw = log_prior(spec, T)
    for idx in np.ndindex(*P.shape):
        logw = logw + _entry_loglik(loglik, P[idx], T[(slice(None), *idx)])
    sums = {}
    for keep, val in margins.items():
        axes = tuple(1 + i for i, d in enumerate(dims) if d not in keep)
        S = T.sum(axis=axes) if axes else T
        sums[keep] = S
        val = np.asarray(val)
        for idx in np.ndindex(*val.shape):
            logw = logw + _entry_loglik(loglik, val[idx], S[(slice(None), *idx)])
    ok = np.isfinite(logw)
    count = int(ok.sum())
    if count == 0:
        return {"cells": {}, "totals": {}, "count": 0, "log_z": -math.inf, "edge": 0.0}
    log_z = float(logsumexp(logw[ok]))
    w = np.where(ok, np.exp(logw - log_z), 0.0)

    def pmf(values):
        xs, inv = np.unique(values, return_inverse=True)
        return dict(zip(xs.tolist(), np.bincount(inv.ravel(), weights=w).tolist()))

    cells = {idx: pmf(T[(slice(None), *idx)]) for idx in np.ndindex(*P.shape)}
    totals = {keep: {idx: pmf(S[(slice(None), *idx)]) for idx in np.ndindex(*S.shape[1:])}
              for keep, S in sums.items()}
    edge = 0.0
    lo, hi = np.asarray(lo), np.asarray(hi)
    cut_lo, cut_hi = (lo > 0, np.ones(lo.shape, bool)) if cut is None else cut
    for idx, p in cells.items():
        if cut_hi[idx]:
            edge = max(edge, p.get(int(hi[idx]), 0.0))
        if cut_lo[idx]:
            edge = max(edge, p.get(int(lo[idx]), 0.0))
    return {"cells": cells, "totals": totals, "count": count, "log_z": log_z, "edge": edge,
            "n_tables": K}


# --- comparing a posterior with the enumeration ------------------------------------------------
