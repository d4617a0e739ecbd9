"""Cells tied by exact sums, by brute force: every assignment of every cell's window
(itertools.product), kept when it meets every row and its log-weight is finite;
independent of kernels/sum_enum.py.  Plain itertools and NumPy (log-sum-exp by hand)."""

import itertools

import numpy as np


def _logsumexp(a):
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0 or not np.isfinite(a).any():
        return -np.inf
    mx = a[np.isfinite(a)].max()
    return float(mx + np.log(np.exp(a - mx).sum()))


def candidates(lo, W, lw, indptr, indices, target):
    """(values (k, n) int64, log-weights (k,)) of every candidate: each cell ``i`` at
    ``lo[i] + w`` (``w < W[i]``), row ``r`` (cells ``indices[indptr[r]:indptr[r+1]]``)
    summing to ``target[r]``, the log-weight ``sum_i lw[i, w_i]`` finite."""
    n = len(lo)
    every = list(itertools.product(*[range(int(W[i])) for i in range(n)]))
    offs = np.zeros((len(every), n), dtype=np.int64)  # n = 0: one empty assignment
    if n and every:
        offs[:] = every
    x = offs + np.asarray(lo, dtype=np.int64)
    ok = np.ones(len(x), dtype=bool)
    for r in range(len(indptr) - 1):
        cells = np.asarray(indices[indptr[r]:indptr[r + 1]], dtype=np.int64)
        ok &= x[:, cells].sum(axis=1) == target[r]
    logw = lw[np.arange(n), offs[ok]].sum(axis=1) if n else np.zeros(int(ok.sum()))
    x = x[ok]
    fin = np.isfinite(logw)
    return x[fin], logw[fin]


def brute_force(lo, W, lw, indptr, indices, target):
    """``count``, ``log_z`` and ``probs`` ((n, lw.shape[1]): each cell's posterior pmf
    over its offsets ``w``, each entry a log-sum-exp over the candidates with that value
    minus ``log_z``; all 0 when there is no candidate), with the candidates."""
    x, logw = candidates(lo, W, lw, indptr, indices, target)
    n, Wmax = lw.shape
    log_z = _logsumexp(logw)
    probs = np.zeros((n, Wmax))
    if np.isfinite(log_z):
        for i in range(n):
            for w in range(int(W[i])):
                sel = x[:, i] == lo[i] + w
                probs[i, w] = np.exp(_logsumexp(logw[sel]) - log_z)
    return len(logw), log_z, probs, x, logw
