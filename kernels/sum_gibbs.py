"""Gibbs moves over integer variables tied by factors on sums of them (the model of
:mod:`kernels.sum_chain`), for the Monte Carlo route of release sets.

Plain arrays in, plain arrays out.  Variables ``x`` (int64, N) with windows ``lo`` /
``lw`` (first value, log-weights, ``-inf`` outside); factors ``e`` with windows ``elo`` /
``elw`` on the sum of their members.  ``vptr``/``vfac``: the factors of each variable
(CSR); ``fptr``/``fmem``: the members of each factor (CSR); ``fsum``: the factors' current
sums, kept up to date.  Randomness is Numba's generator (per thread), seeded by
:func:`kernels.gibbs.seed`.

Every move redraws ``t`` in ``x + t m`` from its exact conditional law (a Gibbs step along
the line ``m``), so the target (product of every variable's and every factor's weight) is
invariant: ``m`` one variable; two variables of one factor (+1 / -1: the factor's sum
stays, needed where a factor's window is narrow); and, for 2-D tables, a 2 x 2 pattern
(+1 -1 / -1 +1: every row and column sum stays).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .gibbs import _line, _lw

NEG = -np.inf


@njit
def log_weight(x, lo, lw, elo, elw, fsum):
    w = 0.0
    for c in range(x.shape[0]):
        w += _lw(lo, lw, c, x[c])
    for f in range(fsum.shape[0]):
        w += _lw(elo, elw, f, fsum[f])
    return w


@njit
def sweeps(x, lo, lw, vptr, vfac, fptr, fmem, elo, elw, fsum, rows, cols, n, keep, out,
           thin):
    """``n`` kept states (each after ``thin`` sweeps) into ``out`` when ``keep``; a sweep
    is a single-variable move for every variable, a pair move for every variable (with a
    random member of a random factor of it) and, when ``rows * cols == N`` (a 2-D table in
    C order), as many random 2 x 2 moves.  Returns the final log-weight."""
    N = x.shape[0]
    cells = np.empty(4, np.int64)
    coefs = np.empty(4, np.int64)
    p = np.empty(64)
    width = 4 * max(1, vptr[N] // max(1, N) + 1)
    for c in range(N):
        width = max(width, 4 * (vptr[c + 1] - vptr[c]))
    fid = np.empty(width, np.int64)
    fco = np.empty(width, np.int64)
    two_d = rows >= 2 and cols >= 2 and rows * cols == N
    for it in range(n):
        for _ in range(thin):
            for c in range(N):
                cells[0] = c
                coefs[0] = 1
                _line(x, cells, coefs, 1, lo, lw, vptr, vfac, elo, elw, fsum, p, fid, fco)
            for c in range(N):
                nf = vptr[c + 1] - vptr[c]
                if nf == 0:
                    continue
                f = vfac[vptr[c] + np.random.randint(nf)]
                size = fptr[f + 1] - fptr[f]
                d = fmem[fptr[f] + np.random.randint(size)]
                if d == c:
                    continue
                cells[0] = c
                cells[1] = d
                coefs[0] = 1
                coefs[1] = -1
                _line(x, cells, coefs, 2, lo, lw, vptr, vfac, elo, elw, fsum, p, fid, fco)
            if two_d:
                for _q in range(N):
                    r1 = np.random.randint(rows)
                    r2 = np.random.randint(rows - 1)
                    r2 += r2 >= r1
                    c1 = np.random.randint(cols)
                    c2 = np.random.randint(cols - 1)
                    c2 += c2 >= c1
                    cells[0] = r1 * cols + c1
                    cells[1] = r1 * cols + c2
                    cells[2] = r2 * cols + c1
                    cells[3] = r2 * cols + c2
                    coefs[0] = 1
                    coefs[1] = -1
                    coefs[2] = -1
                    coefs[3] = 1
                    _line(x, cells, coefs, 4, lo, lw, vptr, vfac, elo, elw, fsum, p, fid,
                          fco)
        if keep:
            for c in range(N):
                out[it, c] = x[c]
    return log_weight(x, lo, lw, elo, elw, fsum)
