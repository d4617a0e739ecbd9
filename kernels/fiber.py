"""Sums over a fiber of at most two free dimensions whose weight factors by direction:
the point ``(s, t)`` weighs ``F(s) G(t) H(hs s + t)`` (``hs`` 1, or 0 when there is no
third factor: ``H`` is then one value at ``u = 0``).

Plain arrays in, plain arrays out; no Python objects.  Each factor is an array over its
own range of values (``LF[s - smin]``, ``LG[t - tmin]``, ``LH[u - umin]``: log-weights,
``-inf`` outside its support; ``EF``, ``EG``, ``EH``: the same as floats, scaled).  Rows
are the values of ``s`` (``s = smin + k``), each row an interval ``[kl[k], kh[k]]`` of
``t`` (empty when ``kh < kl``).

* :func:`row_modes`, :func:`superlevel`: for log-concave factors, each row's maximum (by
  bisection on the sign of its increments) and the interval of ``t`` within a cut of the
  maximum (by bisection on both sides);
* :func:`accumulate`: the sums of ``w = EF EG EH`` over the given points per ``s``
  (rows), per ``t`` and per ``u`` (every cell of the table is a function of one of them),
  a few multiply-adds per point; :func:`accumulate_log` the same with ``exp(LF + LG + LH -
  top)`` per point (for weights whose scaled floats would underflow);
* :func:`flat_counts`: exact integer counts of the points per ``s``, ``t`` and ``u``, each
  row adding intervals to difference arrays (O(rows));
* :func:`sample_points`: the ``t`` of draws given their rows.

Sums run over fixed chunks of rows, each with its own arrays, added in chunk order: the
result does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import njit

NEG = -np.inf


@njit
def _g(LF, LG, LH, smin, tmin, umin, hs, s, t):
    """Log-weight of the point ``(s, t)``."""
    return LF[s - smin] + LG[t - tmin] + LH[hs * s + hs * t - umin]


@njit(parallel=True)
def row_modes(LF, LG, LH, smin, tmin, umin, hs, tl, th):
    """Per row with points (``tl <= th``) its maximum ``h`` and where ``m``: the first
    ``t`` whose increment is not positive (rows concave in ``t``); ``h = -inf`` for rows
    without points."""
    S = tl.shape[0]
    m = np.zeros(S, np.int64)
    h = np.full(S, NEG)
    for k in prange(S):
        a, b = tl[k], th[k]
        if a > b:
            continue
        s = smin + k
        while a < b:
            c = (a + b) // 2
            if _g(LF, LG, LH, smin, tmin, umin, hs, s, c + 1) - \
                    _g(LF, LG, LH, smin, tmin, umin, hs, s, c) > 0:
                a = c + 1
            else:
                b = c
        m[k] = a
        h[k] = _g(LF, LG, LH, smin, tmin, umin, hs, s, a)
    return m, h


@njit(parallel=True)
def row_max_full(LF, LG, LH, smin, tmin, umin, hs, tl, th):
    """Per row its largest log-weight, every point visited (``-inf``: no point)."""
    S = tl.shape[0]
    h = np.full(S, NEG)
    for k in prange(S):
        s = smin + k
        best = NEG
        for t in range(tl[k], th[k] + 1):
            best = max(best, _g(LF, LG, LH, smin, tmin, umin, hs, s, t))
        h[k] = best
    return h


@njit(parallel=True)
def superlevel(LF, LG, LH, smin, tmin, umin, hs, tl, th, m, h, cut):
    """Per row the interval ``[kl, kh]`` of ``t`` whose log-weight is ``>= cut`` (rows
    concave in ``t``, maximum ``h`` at ``m``; ``kh < kl``: none)."""
    S = tl.shape[0]
    kl = np.ones(S, np.int64)
    kh = np.zeros(S, np.int64)
    for k in prange(S):
        if not h[k] >= cut:
            continue
        s = smin + k
        a, b = tl[k], m[k]               # first t in [tl, m] with g >= cut
        while a < b:
            c = (a + b) // 2
            if _g(LF, LG, LH, smin, tmin, umin, hs, s, c) >= cut:
                b = c
            else:
                a = c + 1
        kl[k] = a
        a, b = m[k], th[k]               # last t in [m, th] with g >= cut
        while a < b:
            c = (a + b + 1) // 2
            if _g(LF, LG, LH, smin, tmin, umin, hs, s, c) >= cut:
                a = c
            else:
                b = c - 1
        kh[k] = a
    return kl, kh


@njit(fastmath={"reassoc", "contract"})
def _row(f, EG, EH, a, n, off, pt, pu):
    """One row's points: ``w = f EG[a + i] EH[off + a + i]``, ``i < n``, added to ``pt``
    at ``a + i`` and to ``pu`` at ``off + a + i``; returns their sum (one loop, which the
    compiler vectorises: about 1 ns a point)."""
    tot = 0.0
    for i in range(n):
        w = f * EG[a + i] * EH[off + a + i]
        tot += w
        pt[a + i] += w
        pu[off + a + i] += w
    return tot


@njit(fastmath={"reassoc", "contract"})
def _line(f, EG, a, n, pt):
    """``w = f EG[a + i]``, ``i < n``, added to ``pt`` at ``a + i``; returns their sum."""
    tot = 0.0
    for i in range(n):
        w = f * EG[a + i]
        pt[a + i] += w
        tot += w
    return tot


@njit(parallel=True)
def accumulate(EF, EG, EH, smin, tmin, umin, hs, kl, kh, bounds):
    """``(per_s, per_t, per_u)``: sums of ``w = EF[s] EG[t] EH[u]`` over the points of the
    rows (``kl[k] <= t <= kh[k]``) by ``s``, ``t`` and ``u = hs s + t``.  Rows in chunks
    ``bounds[c] .. bounds[c + 1]``, each with its own ``t`` and ``u`` sums."""
    S = kl.shape[0]
    nch = bounds.shape[0] - 1
    T, U = EG.shape[0], EH.shape[0]
    pt = np.zeros((nch, T))
    pu = np.zeros((nch, U))
    per_s = np.zeros(S)
    for c in prange(nch):
        ptc = pt[c]
        puc = pu[c]
        for k in range(bounds[c], bounds[c + 1]):
            a, b = kl[k], kh[k]
            if a > b:
                continue
            s = smin + k
            if hs == 0:                  # EH is one value at u = 0: a row factor
                tot = _line(EF[k] * EH[-umin], EG, a - tmin, b - a + 1, ptc)
                puc[-umin] += tot
            else:
                tot = _row(EF[k], EG, EH, a - tmin, b - a + 1, s + tmin - umin, ptc, puc)
            per_s[k] = tot
    per_t = np.zeros(T)
    per_u = np.zeros(U)
    for c in range(nch):
        per_t += pt[c]
        per_u += pu[c]
    return per_s, per_t, per_u


@njit(parallel=True)
def accumulate_log(LF, LG, LH, smin, tmin, umin, hs, kl, kh, top, bounds):
    """:func:`accumulate` with ``w = exp(LF + LG + LH - top)`` per point."""
    S = kl.shape[0]
    nch = bounds.shape[0] - 1
    T, U = LG.shape[0], LH.shape[0]
    pt = np.zeros((nch, T))
    pu = np.zeros((nch, U))
    per_s = np.zeros(S)
    for c in prange(nch):
        for k in range(bounds[c], bounds[c + 1]):
            s = smin + k
            tot = 0.0
            for t in range(kl[k], kh[k] + 1):
                u = hs * s + hs * t
                w = np.exp(LF[k] + LG[t - tmin] + LH[u - umin] - top)
                tot += w
                pt[c, t - tmin] += w
                pu[c, u - umin] += w
            per_s[k] = tot
    per_t = np.zeros(T)
    per_u = np.zeros(U)
    for c in range(nch):
        per_t += pt[c]
        per_u += pu[c]
    return per_s, per_t, per_u


@njit
def flat_counts(tl, th, smin, tmin, umin, hs, T, U):
    """Exact counts of the points of the rows ``tl[k] <= t <= th[k]``: ``(per_s, per_t,
    per_u)`` (int64), each row adding one interval of ``t`` and one of ``u`` to
    difference arrays."""
    S = tl.shape[0]
    per_s = np.zeros(S, np.int64)
    dt = np.zeros(T + 1, np.int64)
    du = np.zeros(U + 1, np.int64)
    for k in range(S):
        a, b = tl[k], th[k]
        if a > b:
            continue
        per_s[k] = b - a + 1
        dt[a - tmin] += 1
        dt[b - tmin + 1] -= 1
        s = smin + k
        if hs == 0:
            du[-umin] += b - a + 1
            du[-umin + 1] -= b - a + 1
        else:
            du[s + a - umin] += 1
            du[s + b - umin + 1] -= 1
    per_t = np.zeros(T, np.int64)
    per_u = np.zeros(U, np.int64)
    acc = 0
    for i in range(T):
        acc += dt[i]
        per_t[i] = acc
    acc = 0
    for i in range(U):
        acc += du[i]
        per_u[i] = acc
    return per_s, per_t, per_u


@njit
def sample_points(LF, LG, LH, smin, tmin, umin, hs, kl, kh, top, row_of, u):
    """``t`` of each draw: draw ``i`` lies in row ``row_of[i]`` (sorted), at the share
    ``u[i]`` of the row's cumulative weight ``exp(g - top)``."""
    nd = row_of.shape[0]
    out = np.empty(nd, np.int64)
    i = 0
    while i < nd:
        k = row_of[i]
        s = smin + k
        L = kh[k] - kl[k] + 1
        cum = np.empty(L)
        acc = 0.0
        for j in range(L):
            acc += np.exp(_g(LF, LG, LH, smin, tmin, umin, hs, s, kl[k] + j) - top)
            cum[j] = acc
        while i < nd and row_of[i] == k:
            x = u[i] * acc
            a, b = 0, L - 1              # first j with cum[j] > x
            while a < b:
                c = (a + b) // 2
                if cum[c] > x:
                    b = c
                else:
                    a = c + 1
            out[i] = kl[k] + a
            i += 1
    return out
