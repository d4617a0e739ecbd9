"""Exact posteriors over explicit lists of whole tables, for checking whole-table draws.

Plain NumPy / SciPy from the definitions (DESIGN.md); no riskengine code.  A posterior is a
stack of candidate tables ``T`` (K, *shape) with probabilities ``p`` (K,), tables of zero
weight dropped; the functions below marginalise it to one cell, a pair of cells or a sum
over some axes, and give the likelihoods the other reference modules do not have (noisy
counts, one cell of a resampling release).

* :func:`normalised` -- (tables, probabilities) from log-weights (log-sum-exp);
* :func:`table_pmf`, :func:`cell_pmf`, :func:`pair_pmf`, :func:`sum_support` -- marginals;
* :func:`noise_log_likelihood` -- noisy counts, every entry (cells and totals) on its own;
* :func:`independent_cells` -- per-cell posteriors prior x likelihood, cell by cell.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp


def normalised(tables, logw):
    """``(T, p)``: the tables of finite log-weight and their normalised probabilities."""
    T = np.asarray(tables, dtype=np.int64)
    logw = np.asarray(logw, dtype=float)
    keep = np.isfinite(logw)
    T, logw = T[keep], logw[keep]
    if T.shape[0] == 0:
        raise ValueError("no table has positive weight")
    return T, np.exp(logw - logsumexp(logw))


def table_pmf(T, p) -> dict:
    """Whole tables: ``{table bytes: probability}`` (tables listed once each)."""
    out = {}
    for t, q in zip(np.asarray(T, dtype=np.int64), p):
        key = t.tobytes()
        out[key] = out.get(key, 0.0) + float(q)
    return out


def cell_pmf(T, p, idx) -> dict:
    """One cell: ``{value: probability}``."""
    vals = np.asarray(T)[(slice(None), *idx)]
    return {int(v): float(p[vals == v].sum()) for v in np.unique(vals)}


def pair_pmf(T, p, a, b) -> dict:
    """The joint of two cells ``a`` and ``b``: ``{(value at a, value at b): probability}``."""
    T = np.asarray(T)
    va, vb = T[(slice(None), *a)], T[(slice(None), *b)]
    out = {}
    for x, y, q in zip(va.tolist(), vb.tolist(), p):
        out[(x, y)] = out.get((x, y), 0.0) + float(q)
    return out


def sum_support(T, p, axes) -> set:
    """Every value (as a tuple of the kept entries) that the sums of the tables over
    ``axes`` (axes of one table) take with positive probability."""
    T = np.asarray(T)
    s = T.sum(axis=tuple(a + 1 for a in axes)).reshape(T.shape[0], -1)
    return {tuple(row) for row, q in zip(s.tolist(), p) if q > 0}


# --- likelihoods ------------------------------------------------------------------------------


def _noise_logpmf(k, distribution, scale):
    """log Pr(noise = k): two-sided geometric, (1 - q) / (1 + q) q^|k| with q = e^(-1/scale);
    discrete Gaussian, exp(-k^2 / (2 scale^2)) normalised over |k| <= 60 scale + 60."""
    k = np.asarray(k, dtype=float)
    if distribution == "geometric":
        q = math.exp(-1.0 / scale)
        return math.log((1 - q) / (1 + q)) + np.abs(k) * math.log(q)
    span = np.arange(-60 * scale - 60, 60 * scale + 61)
    return -k ** 2 / (2 * scale ** 2) - logsumexp(-span ** 2 / (2 * scale ** 2))


def _noise_log_lower_tail(k, distribution, scale):
    """log Pr(noise <= k), summed term by term over the 400 values up to ``k`` (once per
    distinct value of ``k``)."""
    k = np.asarray(k, dtype=np.int64)
    uniq, inv = np.unique(k, return_inverse=True)
    tail = np.array([logsumexp(_noise_logpmf(np.arange(kk - 400, kk + 1), distribution, scale))
                     for kk in uniq.tolist()])
    return tail[inv].reshape(k.shape)


def noise_log_likelihood(T, entries, distribution, scale, clip):
    """log Pr(release | T) of noisy counts for a stack of tables ``T`` (K, *shape):
    ``entries`` is a list of ``(axes summed, published values)`` -- ``()`` for the interior;
    each published entry y of an original x has likelihood Pr(noise = y - x), or with
    ``clip`` and y = 0, Pr(noise <= -x)."""
    T = np.asarray(T, dtype=np.int64)
    out = np.zeros(T.shape[0])
    for axes, y in entries:
        x = T.sum(axis=tuple(a + 1 for a in axes)) if axes else T
        y = np.broadcast_to(np.asarray(y, dtype=np.int64), x.shape)
        ll = _noise_logpmf(y - x, distribution, scale)
        if clip:
            zero = y == 0
            if zero.any():
                ll = np.where(zero, _noise_log_lower_tail(-x, distribution, scale), ll)
        out += ll.reshape(T.shape[0], -1).sum(axis=1)
    return out


def independent_cells(published, values, log_lik, log_prior):
    """Per cell ``idx`` of ``published``: ``{value: probability}`` over ``values`` of
    exp(log_lik(published[idx], x) + log_prior(idx, x)) normalised (the posterior of
    cells that are independent a posteriori)."""
    out = {}
    for idx in np.ndindex(*np.shape(published)):
        lw = np.array([log_lik(int(published[idx]), int(x)) + log_prior(idx, int(x))
                       for x in values])
        keep = np.isfinite(lw)
        if not keep.any():
            raise ValueError(f"no value of cell {idx} has positive weight")
        pr = np.exp(lw[keep] - logsumexp(lw[keep]))
        out[idx] = {int(x): float(q) for x, q in zip(np.asarray(values)[keep], pr)}
    return out
