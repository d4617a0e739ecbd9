"""Posteriors of 2-D tables with exact totals, some cells published, by listing every
candidate: the (r-1) x (c-1) upper-left cells run over every value up to their totals,
the last row and column follow from the totals, and a table is kept when every cell is
nonnegative and every published cell has its value.  Priors from their definitions with
scipy.stats (Poisson and negative binomial pmfs, flat bounds).  No code shared with
riskengine.

* :func:`candidates` -- every candidate table, ``(n, r, c)``;
* :func:`log_prior` -- a prior's log-weight of each table;
* :func:`posterior` -- per-cell pmfs ``{(i, j): {value: p}}``, log evidence and count;
* :func:`two_by_two` -- the same for a 2 x 2 table at any count, as a 1-D numpy sum over
  the one free cell;
* :func:`two_by_three` -- a 2 x 3 table at realistic counts, a 2-D sum row by row.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats
from scipy.special import logsumexp


def candidates(R, C, published=None) -> np.ndarray:
    """Every nonnegative integer table with row totals ``R`` and column totals ``C`` that
    agrees with ``published`` (NaN: not published; None: nothing published)."""
    R, C = np.asarray(R, np.int64), np.asarray(C, np.int64)
    r, c = R.size, C.size
    P = None if published is None else np.asarray(published, float)

    def values(i, j):                  # a published cell takes its value only
        if P is not None and not np.isnan(P[i, j]):
            return range(int(P[i, j]), int(P[i, j]) + 1)
        return range(int(min(R[i], C[j])) + 1)

    ranges = [values(i, j) for i in range(r - 1) for j in range(c - 1)]
    size = int(np.prod([len(x) for x in ranges], dtype=float))
    if size > 5e6:
        raise ValueError(f"the brute force would list {size:.3g} tables: use smaller counts")
    grid = np.array(list(itertools.product(*ranges)), np.int64).reshape(-1, r - 1, c - 1) \
        if ranges else np.zeros((1, r - 1, c - 1), np.int64)
    n = grid.shape[0]
    T = np.zeros((n, r, c), np.int64)
    T[:, :r - 1, :c - 1] = grid
    T[:, :r - 1, c - 1] = R[:r - 1] - grid.sum(axis=2)
    T[:, r - 1, :c - 1] = C[:c - 1] - grid.sum(axis=1)
    T[:, r - 1, c - 1] = R[r - 1] - T[:, r - 1, :c - 1].sum(axis=1)
    ok = (T >= 0).all(axis=(1, 2)) & (T.sum(axis=2) == R).all(axis=1) & \
        (T.sum(axis=1) == C).all(axis=1)
    if published is not None:
        P = np.asarray(published, float)
        pub = ~np.isnan(P)
        ok &= (T[:, pub] == P[pub].astype(np.int64)).all(axis=1)
    return T[ok]


def log_prior(T: np.ndarray, spec: dict) -> np.ndarray:
    """Log-weight of each table ``T`` (n, r, c) under ``spec``: ``{"kind": "uniform"}``,
    ``{"kind": "flat", "low": a, "high": b}``, ``{"kind": "poisson", "rate": scalar or
    (r, c)}``, ``{"kind": "nb", "mean": m, "dispersion": k}`` (scipy's nbinom with
    ``n = k``, ``p = k / (k + m)``); ``"at_least": [((i, j), k), ...]`` adds bounds."""
    kind = spec["kind"]
    if kind == "uniform":
        lw = np.zeros(T.shape)
    elif kind == "flat":
        lw = np.where((T >= spec["low"]) & (T <= spec["high"]), 0.0, -np.inf)
    elif kind == "poisson":
        lw = stats.poisson.logpmf(T, np.broadcast_to(spec["rate"], T.shape[1:]))
    elif kind == "nb":
        k, m = spec["dispersion"], spec["mean"]
        lw = stats.nbinom.logpmf(T, k, k / (k + m))
    else:
        raise ValueError(kind)
    for (i, j), k in spec.get("at_least", ()):
        lw[:, i, j] = np.where(T[:, i, j] >= k, lw[:, i, j], -np.inf)
    return lw.sum(axis=(1, 2))


def _summary(T, logw):
    keep = np.isfinite(logw)
    T, logw = T[keep], logw[keep]
    if len(T) == 0:
        return {"cells": {}, "log_z": -np.inf, "count": 0}
    log_z = float(logsumexp(logw))
    p = np.exp(logw - log_z)
    cells = {}
    for i in range(T.shape[1]):
        for j in range(T.shape[2]):
            v = T[:, i, j]
            lo = int(v.min())
            w = np.bincount(v - lo, weights=p)
            cells[(i, j)] = {lo + k: float(x) for k, x in enumerate(w) if x > 0}
    return {"cells": cells, "log_z": log_z, "count": len(T)}


def posterior(R, C, spec: dict, published=None) -> dict:
    """``{"cells": {(i, j): {value: p}}, "log_z", "count"}`` over :func:`candidates` with
    positive prior weight."""
    T = candidates(R, C, published)
    return _summary(T, log_prior(T, spec))


def two_by_two(R, C, spec: dict) -> dict:
    """The posterior of a 2 x 2 margins-only table as a 1-D sum over ``x00``."""
    R, C = np.asarray(R, np.int64), np.asarray(C, np.int64)
    x00 = np.arange(max(0, R[0] - C[1]), min(R[0], C[0]) + 1)
    T = np.empty((x00.size, 2, 2), np.int64)
    T[:, 0, 0] = x00
    T[:, 0, 1] = R[0] - x00
    T[:, 1, 0] = C[0] - x00
    T[:, 1, 1] = R[1] - T[:, 1, 0]
    assert (T >= 0).all()
    return _summary(T, log_prior(T, spec))


def two_by_three(R, C, spec: dict) -> dict:
    """The posterior of a 2 x 3 margins-only table as a 2-D sum over ``(x00, x01)``, one
    ``x00`` at a time (numpy over ``x01``): per-cell pmfs, log evidence, count."""
    R, C = np.asarray(R, np.int64), np.asarray(C, np.int64)
    N = int(R.sum())
    acc = [np.full(N + 1, -np.inf) for _ in range(6)]
    count = 0
    logs = []
    for a in range(int(min(R[0], C[0])) + 1):
        b = np.arange(int(min(R[0] - a, C[1])) + 1)
        T = np.empty((b.size, 2, 3), np.int64)
        T[:, 0, 0], T[:, 0, 1] = a, b
        T[:, 0, 2] = R[0] - a - b
        T[:, 1] = C - T[:, 0]
        T = T[(T >= 0).all(axis=(1, 2))]
        if len(T) == 0:
            continue
        lw = log_prior(T, spec)
        keep = np.isfinite(lw)
        T, lw = T[keep], lw[keep]
        count += len(T)
        logs.append(logsumexp(lw) if len(lw) else -np.inf)
        for e, (i, j) in enumerate(itertools.product(range(2), range(3))):
            v = T[:, i, j]                  # one value, or a different value per table
            if (v == v[0]).all():
                acc[e][v[0]] = np.logaddexp(acc[e][v[0]], logsumexp(lw))
            else:
                assert np.unique(v).size == v.size
                acc[e][v] = np.logaddexp(acc[e][v], lw)
    log_z = float(logsumexp(logs))
    cells = {}
    for e, (i, j) in enumerate(itertools.product(range(2), range(3))):
        p = np.exp(acc[e] - log_z)
        cells[(i, j)] = {int(v): float(p[v]) for v in np.flatnonzero(p > 0)}
    return {"cells": cells, "log_z": log_z, "count": count}
