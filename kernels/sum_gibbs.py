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
from .gibbs import _lw, _pick

NEG = -np.inf


@njit
def _bound(lo, hi, a, b, g):
    """Intersect [lo, hi] with the t such that a <= g t <= b (g != 0)."""
    if g > 0:
        return max(lo, -((-a) // g)), min(hi, b // g)
    return max(lo, -(b // (-g))), min(hi, (-a) // (-g))


@njit
def _line(x, cells, coefs, nc, lo, lw, vptr, vfac, elo, elw, fsum, p, fid, fco):
    tlo = -(1 << 40)
    thi = 1 << 40
    nf = 0
    for i in range(nc):
        c, g = cells[i], coefs[i]
        a = max(lo[c], 0) - x[c]
        b = lo[c] + lw.shape[1] - 1 - x[c]
        tlo, thi = _bound(tlo, thi, a, b, g)
        for k in range(vptr[c], vptr[c + 1]):
            f = vfac[k]
            found = False
            for u in range(nf):
                if fid[u] == f:
                    fco[u] += g
                    found = True
                    break
            if not found:
                fid[nf] = f
                fco[nf] = g
                nf += 1
    for u in range(nf):
        g = fco[u]
        if g == 0:
            continue
        f = fid[u]
        tlo, thi = _bound(tlo, thi, elo[f] - fsum[f], elo[f] + elw.shape[1] - 1 - fsum[f], g)
    n = thi - tlo + 1
    if n <= 1:
        return
    if n > p.shape[0]:
        p = np.empty(n)
    m = NEG
    for s in range(n):
        step = tlo + s
        w = 0.0
        for i in range(nc):
            w += _lw(lo, lw, cells[i], x[cells[i]] + coefs[i] * step)
        for u in range(nf):
            if fco[u] != 0:
                w += _lw(elo, elw, fid[u], fsum[fid[u]] + fco[u] * step)
        p[s] = w
        m = max(m, w)
    if m == NEG:
        return
    for s in range(n):
        p[s] = np.exp(p[s] - m) if p[s] > NEG else 0.0
    step = tlo + _pick(p, n)
    if step != 0:
        for i in range(nc):
            x[cells[i]] += coefs[i] * step
        for u in range(nf):
            fsum[fid[u]] += fco[u] * step


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
