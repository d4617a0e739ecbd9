"""Sequential importance sampling of 2-D tables with fixed margins (Chen, Diaconis,
Holmes & Liu 2005): the proposal and its exact probability.

Plain arrays in, plain arrays out.  A table with row sums ``R`` (r) and column sums ``C``
(m, same total) is drawn column by column, and within a column row by row: with ``rr``
the row sums left and ``cj`` the column's sum left, cell (i, j) takes ``x`` in
``max(0, cj - sum(rr[i+1:])) .. min(rr[i], cj)`` (every such value has a completion: a
nonnegative integer table with equal totals always exists) with probability
proportional to ``C(rr[i] - x + k - 1, k - 1)``, k = the columns after j: the number of
ways row i's remainder spreads over them (the column constraints ignored), the
approximation to the number of completions that makes the proposal close to uniform.
The last row of a column and the last column are implied.  Every table with the margins
has positive probability, so ``1 / q(table)`` is an unbiased estimate of the number of
tables.

:func:`sample` returns ``log(1 / q)`` of ``n`` drawn tables; :func:`log_proposal` gives
``log q`` of a given table (the tests sum it over every table to check that q is a
distribution on exactly the candidates).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit

__all__ = ["log_proposal", "sample"]


@njit
def _log_comb(n, k):
    """log C(n + k - 1, k - 1): compositions of n into k nonnegative parts."""
    if k <= 1:
        return 0.0
    return math.lgamma(n + k) - math.lgamma(n + 1) - math.lgamma(k)


@njit
def _cell(rr, i, cj, cap, k, weights, suf, uniform):
    """The range ``lo..hi`` of cell (i, j) and the log normaliser of its proposal, the
    log weights written to ``weights[0 : hi - lo + 1]`` (``cap``: the row sums left
    below row i).  Each value x weighs the ways row i's rest spreads over the ``k`` later
    columns, or (``uniform``) the ways the rows below hold the column's rest (``suf``,
    :func:`_suffix`: every bounded composition of the column equally likely)."""
    lo = max(0, cj - cap)
    hi = min(rr[i], cj)
    top = -np.inf
    for x in range(lo, hi + 1):
        w = suf[i + 1, cj - x] if uniform else _log_comb(rr[i] - x, k)
        weights[x - lo] = w
        top = max(top, w)
    s = 0.0
    for x in range(lo, hi + 1):
        s += math.exp(weights[x - lo] - top)
    return lo, hi, top + math.log(s)


@njit
def _suffix(rr, cj, suf):
    """``suf[i, s]``: log of the number of ways rows i.. of a column hold ``s`` with each
    row i at most ``rr[i]`` (bounded compositions; -inf: none), for s = 0..cj."""
    r = rr.shape[0]
    for s in range(cj + 1):
        suf[r, s] = 0.0 if s == 0 else -np.inf
    for i in range(r - 1, -1, -1):
        for s in range(cj + 1):
            top = -np.inf
            for x in range(min(rr[i], s) + 1):
                top = max(top, suf[i + 1, s - x])
            if top == -np.inf:
                suf[i, s] = -np.inf
                continue
            acc = 0.0
            for x in range(min(rr[i], s) + 1):
                acc += math.exp(suf[i + 1, s - x] - top)
            suf[i, s] = top + math.log(acc)


@njit
def _suffix_linear(rr, cj, suf, lin, pre, post, scales):
    """:func:`_suffix` in linear space, O(rows x cj) for wide rows: the count of row i at
    ``s`` sums row i + 1's counts over the window ``s - rr[i] .. s``, taken as a
    difference of prefix sums (``pre``), or where that subtracts a sum more than 1,000
    times the count (fewer than about 12 correct digits) of suffix sums (``post``; the
    counts are log-concave in ``s``: on the rising side the prefix sums hold little
    outside the window, on the falling side the suffix sums), or else summed directly, as
    is every window of at most 32 values.  ``lin``: the counts, each row divided by a
    scale when its largest count passes 1e200 (``scales``: each row's log scale, so that
    the count is ``lin[i, s] * exp(scales[i])``).  A possible count that underflows its
    row's scale makes the column fall back to :func:`_suffix` (``suf`` then holds the log
    counts).  Returns False when it fell back."""
    r = rr.shape[0]
    for s in range(cj + 1):
        lin[r, s] = 1.0 if s == 0 else 0.0
    scales[r] = 0.0
    cap = 0
    for i in range(r - 1, -1, -1):
        cap += rr[i]
        wide = rr[i] >= 32
        if wide:
            pre[0] = 0.0
            for s in range(cj + 1):
                pre[s + 1] = pre[s] + lin[i + 1, s]
        have_post = False
        top = 0.0
        for s in range(cj + 1):
            v = 0.0
            if s <= cap:
                a = max(0, s - rr[i])
                direct = not wide
                if wide:
                    big = pre[s + 1]
                    v = big - pre[a]
                    if v <= 0.0 or big > 1e3 * v:
                        if not have_post:
                            post[cj + 1] = 0.0
                            for t in range(cj, -1, -1):
                                post[t] = post[t + 1] + lin[i + 1, t]
                            have_post = True
                        big = post[a]
                        v = big - post[s + 1]
                        direct = v <= 0.0 or big > 1e3 * v
                if direct:
                    v = 0.0
                    for t in range(a, s + 1):
                        v += lin[i + 1, t]
                if v <= 0.0:
                    _suffix(rr, cj, suf)
                    return False
            lin[i, s] = v
            top = max(top, v)
        scales[i] = scales[i + 1]
        if top > 1e200:                         # rescale before the floats overflow
            for s in range(cj + 1):
                lin[i, s] /= top
                if s <= cap and lin[i, s] < 1e-290:      # a possible count underflows
                    _suffix(rr, cj, suf)
                    return False
            scales[i] += math.log(top)
    return True


@njit
def _walk(R, C, u, T, draw, weights, rr, uniform=False):
    """``log q`` of one table: drawn with the uniforms ``u`` (r - 1, m - 1) when ``draw``,
    else the table ``T`` followed (-inf where it leaves the proposal's ranges).
    ``uniform``: each column uniform among the compositions the remaining row sums allow
    (else each cell weighted by the ways its row's rest spreads over the later columns)."""
    r = R.shape[0]
    m = C.shape[0]
    for i in range(r):
        rr[i] = R[i]
    logq = 0.0
    suf = np.empty((r + 1, (C.max() + 1) if uniform else 1))
    lin = np.empty((r + 1, (C.max() + 1) if uniform else 1))
    pre = np.empty((C.max() + 2) if uniform else 1)
    post = np.empty((C.max() + 2) if uniform else 1)
    scales = np.empty(r + 1)
    for j in range(m - 1):
        k = m - 1 - j
        cj = C[j]
        cap = 0
        for i in range(r):
            cap += rr[i]
        linear = uniform and _suffix_linear(rr, cj, suf, lin, pre, post, scales)
        for i in range(r - 1):
            cap -= rr[i]
            if linear:          # the counts of the rows below, on one scale: no logs
                lo = max(0, cj - cap)
                hi = min(rr[i], cj)
                z = 0.0
                for v in range(lo, hi + 1):
                    z += lin[i + 1, cj - v]
                if draw:
                    x = hi
                    acc = 0.0
                    target = u[i, j] * z
                    for v in range(lo, hi + 1):
                        acc += lin[i + 1, cj - v]
                        if target < acc:
                            x = v
                            break
                else:
                    x = T[i, j]
                    if x < lo or x > hi:
                        return -np.inf
                logq += math.log(lin[i + 1, cj - x] / z)
                rr[i] -= x
                cj -= x
                continue
            lo, hi, lz = _cell(rr, i, cj, cap, k, weights, suf, uniform)
            if draw:                               # inverse cdf
                x = hi
                acc = 0.0
                for v in range(lo, hi + 1):
                    acc += math.exp(weights[v - lo] - lz)
                    if u[i, j] < acc:
                        x = v
                        break
            else:
                x = T[i, j]
                if x < lo or x > hi:
                    return -np.inf
            logq += weights[x - lo] - lz
            rr[i] -= x
            cj -= x
        rr[r - 1] -= cj                    # the last row takes the column's rest
    return logq


@njit
def sample(R, C, u, uniform=False):
    """``log(1 / q)`` of each of ``u.shape[0]`` tables drawn with the uniforms ``u``
    (n, r - 1, m - 1) in [0, 1)."""
    n = u.shape[0]
    out = np.zeros(n)
    weights = np.empty(R.max() + 1)
    rr = np.empty(R.shape[0], np.int64)
    none = np.zeros((0, 0), np.int64)
    for s in range(n):
        out[s] = -_walk(R, C, u[s], none, True, weights, rr, uniform)
    return out


@njit
def log_proposal(R, C, T, uniform=False):
    """``log q(T)`` of the table ``T`` (-inf when T does not have the margins)."""
    r = R.shape[0]
    m = C.shape[0]
    if (T < 0).any():
        return -np.inf
    for i in range(r):
        if T[i].sum() != R[i]:
            return -np.inf
    for j in range(m):
        if T[:, j].sum() != C[j]:
            return -np.inf
    weights = np.empty(R.max() + 1)
    rr = np.empty(r, np.int64)
    return _walk(R, C, np.zeros((0, 0)), T, False, weights, rr, uniform)
