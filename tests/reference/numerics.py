"""Log-space brute force over small candidate sets at any count (the numerics family).

Tables whose candidate sets have one or two free parameters (2 x 2 and 2 x 3 tables with
fixed totals, 2 x 2 x 2 tables with fixed 2-way margins, a suppressed 2 x 2 rectangle)
and tables with narrow windows (rounding) stay cheap to enumerate at counts up to 1e5.
Every weight is computed from the definitions in log space (scipy.stats log pmfs, the
rounding and cyclic definitions of DESIGN.md) and summed with log-sum-exp, so nothing
underflows whatever the prior; no riskengine code is called.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats
from scipy.special import logsumexp

# --- priors, from scipy.stats ----------------------------------------------------------------


def log_prior(spec: dict, T: np.ndarray) -> np.ndarray:
    """Prior log-weight of each table in the stack ``T`` (K, *shape), from ``spec``:
    ``{"kind": "uniform" | "flat" | "poisson" | "negbin" | "historical", parameters...,
    "at_least": [(cell, k)], "known": [(cell, v)]}``; per-cell parameters are arrays of the
    table's shape."""
    T = np.asarray(T)
    kind = spec["kind"]
    if kind == "uniform":
        lw = np.zeros(T.shape)
    elif kind == "flat":
        lw = np.where((T >= spec["low"]) & ((spec["high"] is None) | (T <= (spec["high"] or 0))),
                      0.0, -np.inf)
    elif kind in ("poisson", "historical"):
        rate = (np.maximum(spec["table"], spec["floor"]) if kind == "historical"
                else np.broadcast_to(spec["rate"], T.shape[1:]))
        lw = stats.poisson.logpmf(T, rate)
    elif kind == "negbin":
        mu = np.broadcast_to(spec["mean"], T.shape[1:])
        r = np.broadcast_to(spec["dispersion"], T.shape[1:])
        lw = stats.nbinom.logpmf(T, r, r / (r + mu))
    else:
        raise ValueError(kind)
    out = lw.reshape(T.shape[0], -1).sum(axis=1)
    for cell, k in spec.get("at_least", ()):
        out = np.where(T[(slice(None), *cell)] >= k, out, -np.inf)
    for cell, v in spec.get("known", ()):
        out = np.where(T[(slice(None), *cell)] == v, out, -np.inf)
    return out


def cell_log_prior(spec: dict, idx: tuple, xs) -> np.ndarray:
    """Prior log-weight of the values ``xs`` of the one cell ``idx`` (the per-cell factor
    of :func:`log_prior`, with the knowledge about that cell)."""
    xs = np.asarray(xs)
    kind = spec["kind"]
    if kind == "uniform":
        lw = np.zeros(xs.shape)
    elif kind == "flat":
        ok = (xs >= spec["low"]) & ((spec["high"] is None) | (xs <= (spec["high"] or 0)))
        lw = np.where(ok, 0.0, -np.inf)
    elif kind in ("poisson", "historical"):
        if kind == "historical":
            rate = max(spec["table"][idx], spec["floor"])
        else:
            rate = spec["rate"] if np.ndim(spec["rate"]) == 0 else spec["rate"][idx]
        lw = stats.poisson.logpmf(xs, rate)
    elif kind == "negbin":
        mu, r = spec["mean"], spec["dispersion"]
        lw = stats.nbinom.logpmf(xs, r, r / (r + mu))
    else:
        raise ValueError(kind)
    for cell, k in spec.get("at_least", ()):
        if tuple(cell) == tuple(idx):
            lw = np.where(xs >= k, lw, -np.inf)
    for cell, v in spec.get("known", ()):
        if tuple(cell) == tuple(idx):
            lw = np.where(xs == v, lw, -np.inf)
    return lw


# --- candidate sets -----------------------------------------------------------------------------


def tables_2xc(R, C) -> np.ndarray:
    """Every nonnegative 2 x c table with row totals R and column totals C (c <= 3): the
    first row's first c - 1 cells are free, everything else follows."""
    R, C = np.asarray(R), np.asarray(C)
    c = len(C)
    rng = [np.arange(0, min(R[0], C[j]) + 1) for j in range(c - 1)]
    grid = np.array(np.meshgrid(*rng, indexing="ij")).reshape(c - 1, -1).T
    first = np.column_stack([grid, R[0] - grid.sum(axis=1)])
    T = np.stack([first, C[None, :] - first], axis=1)
    ok = (T >= 0).all(axis=(1, 2)) & (T[:, 1].sum(axis=1) == R[1])
    return T[ok]


def tables_2x2x2(ab, ac, bc) -> np.ndarray:
    """Every nonnegative 2 x 2 x 2 table with the given 2-way margins: x[0,0,0] = t is free,
    every other cell follows from the margins (each leaf checked against all three)."""
    ab, ac, bc = (np.asarray(a) for a in (ab, ac, bc))
    t = np.arange(0, int(ab[0, 0]) + 1)
    T = np.zeros((len(t), 2, 2, 2), np.int64)
    T[:, 0, 0, 0] = t
    T[:, 0, 0, 1] = ab[0, 0] - t
    T[:, 0, 1, 0] = ac[0, 0] - t
    T[:, 0, 1, 1] = ab[0, 1] - T[:, 0, 1, 0]
    T[:, 1, 0, 0] = bc[0, 0] - t
    T[:, 1, 0, 1] = ab[1, 0] - T[:, 1, 0, 0]
    T[:, 1, 1, 0] = ac[1, 0] - T[:, 1, 0, 0]
    T[:, 1, 1, 1] = ab[1, 1] - T[:, 1, 1, 0]
    ok = ((T >= 0).all(axis=(1, 2, 3)) & (T.sum(3) == ab).all(axis=(1, 2))
          & (T.sum(2) == ac).all(axis=(1, 2)) & (T.sum(1) == bc).all(axis=(1, 2)))
    return T[ok]


def tables_in_windows(lo, hi) -> np.ndarray:
    """Every table with lo <= x <= hi cell by cell (the caller filters the totals)."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    rng = [np.arange(a, b + 1) for a, b in zip(lo.ravel(), hi.ravel())]
    grid = np.array(np.meshgrid(*rng, indexing="ij")).reshape(lo.size, -1).T
    return grid.reshape((-1,) + lo.shape)


def round_log_prob(t, R, B):
    """log Pr(t rounds to R) under unbiased rounding to base B (DESIGN.md: up with
    probability (t mod B)/B, multiples stay)."""
    t, R = np.asarray(t), np.asarray(R)
    rem = t % B
    p = np.where(rem == 0, (R == t) * 1.0,
                 np.where(R == t - rem + B, rem / B, np.where(R == t - rem, 1 - rem / B, 0.0)))
    with np.errstate(divide="ignore"):
        return np.log(p)


def all_totals_2d(T):
    """Row totals, column totals and grand total of a stack of 2-D tables."""
    return T.sum(axis=2), T.sum(axis=1), T.sum(axis=(1, 2))


# --- cyclic perturbation -------------------------------------------------------------------------


def cyclic_log_likelihoods(P, cycles, alpha, beta, rule):
    """{table bytes: (T, log Pr(P | T))}: every sign vector e, T = P - sum e_k C_k >= 0,
    path probability by running the mechanism forward from T (DESIGN.md), summed over the e
    reaching one T (path probabilities are products of m coin probabilities: no
    underflow)."""
    P = np.asarray(P, dtype=np.int64)
    cycles = np.asarray(cycles, dtype=np.int64)
    gamma = 1.0 - alpha - beta
    like, tabs = {}, {}
    for e in itertools.product((-1, 0, 1), repeat=cycles.shape[0]):
        T = P - np.tensordot(np.array(e), cycles, axes=1)
        if T.min() < 0:
            continue
        S, p = T.copy(), 1.0
        for k, ek in enumerate(e):
            c = cycles[k]
            if rule == "any_zero":
                bu = bd = bool(np.any(S[c != 0] == 0))
            else:
                bu = bool(np.any((S + c) < 0))
                bd = bool(np.any((S - c) < 0))
            q = (0.0 if bu else alpha) if ek == 1 else (0.0 if bd else beta) if ek == -1 else \
                gamma + (alpha if bu else 0.0) + (beta if bd else 0.0)
            p *= q
            if p == 0.0:
                break
            S = S + ek * c
        if p > 0.0:
            key = T.tobytes()
            like[key] = like.get(key, 0.0) + p
            tabs[key] = T
    return {k: (tabs[k], math.log(v)) for k, v in like.items()}


# --- resampling -------------------------------------------------------------------------------------


def quality_interval(x, n, S):
    """[l(x), u(x)] of seed 001: integers k with |k - x| <= S sqrt(x (1 - x/n)); x = 0: [0, 0]."""
    if x == 0:
        return 0, 0
    sd = math.sqrt(max(x * (1.0 - x / n), 0.0))
    return max(math.ceil(x - S * sd - 1e-9), 0), math.floor(x + S * sd + 1e-9)


def bootstrap_log_lik(k, x, n, M, S):
    """log Pr(published k | x): T ~ binomial(nM, x/n) (the sum of M multinomial draws of the
    cell), published round-half-up(T / M), conditioned on the published value being in the
    quality interval; sums of pmfs in log space over every T."""
    if x == 0:
        return 0.0 if k == 0 else -math.inf
    lo, hi = quality_interval(x, n, S)
    if not lo <= k <= hi:
        return -math.inf
    # every T whose rounded average is in the quality interval (and a little beyond)
    T = np.arange(max(M * (lo - 1), 0), min(M * (hi + 1), n * M) + 1)
    lp = stats.binom.logpmf(T, n * M, x / n)
    rounded = np.floor(T / M + 0.5)
    return float(logsumexp(lp[rounded == k]) - logsumexp(lp[(rounded >= lo) & (rounded <= hi)]))


def binomial_log_lik(k, x, n, S):
    """log Pr(published k | x) of the binomial method's truncated binomial (seed 001 §3.1)."""
    if x == 0:
        return 0.0 if k == 0 else -math.inf
    lo, hi = quality_interval(x, n, S)
    if not lo <= k <= hi:
        return -math.inf
    K = np.arange(lo, hi + 1)
    return float(stats.binom.logpmf(k, n, x / n) - logsumexp(stats.binom.logpmf(K, n, x / n)))


# --- posteriors --------------------------------------------------------------------------------------


def cell_posteriors(T: np.ndarray, logw: np.ndarray) -> tuple:
    """Per cell ``{value: probability}`` over the stack ``T`` with log-weights ``logw``
    (normalised with log-sum-exp), the log evidence, and the number of tables with finite
    weight."""
    keep = np.isfinite(logw)
    T, logw = T[keep], logw[keep]
    if T.shape[0] == 0:
        return None, -math.inf, 0
    logz = float(logsumexp(logw))
    p = np.exp(logw - logz)
    out = {}
    for idx in np.ndindex(*T.shape[1:]):
        vals = T[(slice(None), *idx)]
        d = {}
        for v in np.unique(vals):
            d[int(v)] = float(p[vals == v].sum())
        out[idx] = d
    return out, logz, int(T.shape[0])
