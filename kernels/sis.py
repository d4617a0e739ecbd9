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
from numba import prange

from ._jit import njit

__all__ = ["log_proposal", "sample", "sample_weighted", "weighted_proposal"]


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
def _prefix(M, k, n, pre, post):
    """``pre[t]``: the sum of ``M[k, :t]`` (t = 0 .. n + 1); the suffix sums ``post`` are
    marked not yet computed (:func:`_window_rest` computes them when it first needs them:
    computing them for every row made the count SIS 3-4x slower).  The matrix and a row
    index, not a row view."""
    pre[0] = 0.0
    for t in range(n + 1):
        pre[t + 1] = pre[t] + M[k, t]
    post[n + 1] = -1.0


@njit
def _window_rest(M, k, lo, hi, n, pre, post):
    """``M[k, lo] + ... + M[k, hi]`` where the prefix sums ``pre`` (:func:`_prefix`) would
    subtract a sum more than 1,000 times the result: from the suffix sums ``post``
    (``post[t]``: values t .. n of row k, computed here when first needed) if they
    subtract less, else summed directly (at least 13 correct digits either way).  The
    callers take the prefix difference inline first (a helper for that too made the
    count SIS 3-4x slower)."""
    if post[n + 1] < 0.0:
        post[n + 1] = 0.0
        for t in range(n, -1, -1):
            post[t] = post[t + 1] + M[k, t]
    big = post[lo]
    v = big - post[hi + 1]
    if v > 0.0 and big <= 1e3 * v:
        return v
    v = 0.0
    for t in range(lo, hi + 1):
        v += M[k, t]
    return v


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
            _prefix(lin, i + 1, cj, pre, post)
        top = 0.0
        for s in range(cj + 1):
            v = 0.0
            if s <= cap:
                a = max(0, s - rr[i])
                if wide:
                    big = pre[s + 1]
                    v = big - pre[a]
                    if v <= 0.0 or big > 1e3 * v:
                        v = _window_rest(lin, i + 1, a, s, cj, pre, post)
                else:
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


#: the largest count of compositions a column may have for :func:`_column_exact`: every
#: count and partial sum is then an integer below 2**53, exact in float64 (with a margin
#: for ``lgamma``'s rounding in :func:`exact_fits`)
_EXACT_LOG = 36.0


@njit
def exact_fits(R, C):
    """Whether every column's counts of bounded compositions are exact in float64: the
    compositions of the largest column sum into ``len(R)`` parts, unbounded, number at
    most e**36 < 2**53 (every count and every window sum of :func:`_column_exact` is at
    most that)."""
    r = R.shape[0]
    cm = 0
    for j in range(C.shape[0]):
        cm = max(cm, C[j])
    return _log_comb(cm, r) <= _EXACT_LOG


@njit
def _column_exact(rr, cj, lin, caps):
    """The column's counts of bounded compositions, exact (integers in float64; the
    caller checked :func:`exact_fits`): ``lin[i, s]`` the ways rows i .. hold ``s`` with
    row k at most ``rr[k]``, for rows 1 .. r - 1 and the sums rows 0 .. i - 1 can leave
    (``max(0, cj - sum(rr[:i])) .. min(cj, caps[i])``, ``caps[i] = sum(rr[i:])``).  Each
    row is a sliding window over the row below, two additions a value (the peer's counts
    in int64, our old ones by prefix sums with guards).  Returns the column's count
    (row 0 at ``cj``)."""
    r = rr.shape[0]
    caps[r] = 0
    for i in range(r - 1, -1, -1):
        caps[i] = caps[i + 1] + rr[i]
    lin[r, 0] = 1.0
    above = caps[0] - caps[r - 1]               # rows 0 .. r - 2 hold at most this
    lo1 = 0                                     # row r: only s = 0
    hi1 = 0
    for i in range(r - 1, 0, -1):
        lo = max(0, cj - above)
        hi = min(cj, caps[i])
        w = rr[i]
        win = 0.0                               # the window t in [s - w, s] for s = lo - 1
        for t in range(max(lo1, lo - 1 - w), min(lo - 1, hi1) + 1):
            win += lin[i + 1, t]
        for s in range(lo, hi + 1):
            if s <= hi1 and s >= lo1:
                win += lin[i + 1, s]
            d = s - w - 1
            if d >= lo1 and d <= hi1:
                win -= lin[i + 1, d]
            lin[i, s] = win
        lo1 = lo
        hi1 = hi
        above -= rr[i - 1]
    z = 0.0
    for t in range(max(lo1, cj - rr[0]), min(cj, hi1) + 1):
        z += lin[1, t]
    return z


@njit
def _pick(lin, k, s, lo, hi, target):
    """The inverse cdf of a cell whose value ``x`` in ``lo .. hi`` weighs ``lin[k, s -
    x]``: the first ``x`` whose running sum passes ``target`` (``hi`` if none does)."""
    acc = 0.0
    for v in range(lo, hi + 1):
        acc += lin[k, s - v]
        if target < acc:
            return v
    return hi


@njit
def _buffers(R, C, uniform):
    """Work arrays of :func:`_walk`, allocated once for all its walks."""
    r = R.shape[0]
    w = (C.max() + 1) if uniform else 1
    return (np.empty(R.max() + 1), np.empty(r, np.int64), np.empty((r + 1, w)),
            np.empty((r + 1, w)), np.empty(w + 1), np.empty(w + 1), np.empty(r + 1),
            np.empty(r + 1, np.int64))


@njit
def _walk(R, C, u, T, draw, uniform, exact, weights, rr, suf, lin, pre, post, scales, caps):
    """``log q`` of one table: drawn with the uniforms ``u`` (r - 1, m - 1) when ``draw``,
    else the table ``T`` followed (-inf where it leaves the proposal's ranges).
    ``uniform``: each column uniform among the compositions the remaining row sums allow
    (else each cell weighted by the ways its row's rest spreads over the later columns);
    ``exact``: the column counts are exact in float64 (:func:`exact_fits`), so each
    column's probability is one over its count, and its cells are drawn against exact
    window sums.  The rest: work arrays (:func:`_buffers`)."""
    r = R.shape[0]
    m = C.shape[0]
    for i in range(r):
        rr[i] = R[i]
    logq = 0.0
    for j in range(m - 1):
        k = m - 1 - j
        cj = C[j]
        if uniform and exact:
            z = _column_exact(rr, cj, lin, caps)
            logq -= math.log(z)
            s = cj
            for i in range(r - 1):
                lo = max(0, s - caps[i + 1])
                hi = min(rr[i], s)
                if draw:                   # inverse cdf against exact integer sums
                    x = _pick(lin, i + 1, s, lo, hi, u[i, j] * (z if i == 0 else lin[i, s]))
                else:
                    x = T[i, j]
                    if x < lo or x > hi:
                        return -np.inf
                rr[i] -= x
                s -= x
            rr[r - 1] -= s
            continue
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
                    x = _pick(lin, i + 1, cj, lo, hi, u[i, j] * z)
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
    weights, rr, suf, lin, pre, post, scales, caps = _buffers(R, C, uniform)
    exact = exact_fits(R, C)
    none = np.zeros((0, 0), np.int64)
    for s in range(n):
        out[s] = -_walk(R, C, u[s], none, True, uniform, exact, weights, rr, suf, lin, pre,
                        post, scales, caps)
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
    weights, rr, suf, lin, pre, post, scales, caps = _buffers(R, C, uniform)
    return _walk(R, C, np.zeros((0, 0)), T, False, uniform, exact_fits(R, C), weights, rr,
                 suf, lin, pre, post, scales, caps)


# --- weighted tables: the proposal of the importance-sampling posterior --------------------
# A 2-D table with exact row sums R and column sums C and a log-weight per cell value
# (prior x likelihood: the cell's window ``clo[i, j] + 0 .. W - 1`` in ``clw``, -inf
# impossible) is drawn column by column; column j, given the row sums left ``rr``, from the
# exact law of its cells among the compositions of C[j] with cell i in ``a_i .. b_i`` (its
# window, cut to what row i's later cells can still complete: ``rr_i - rmax[i, j] .. rr_i -
# rmin[i, j]``), each value weighted by the cell's weight and, where the weights are not
# flat (``ahead``), by the row's look-ahead ``look[i, j, rr_i - x]``: the total weight of
# the ways row i's later cells hold what is left (the column sums ignored).  Flat weights
# (a uniform prior) go without it: each column then uniform among its compositions, the
# better proposal there (Chen et al. 2005).  The importance weight of a table is its
# weight over its proposal probability: the product over columns of the normaliser over
# the look-ahead of the drawn values, and the last column's cell weights; a walk whose
# column has no composition weighs 0 (the proposal reaches every table of positive
# weight).


@njit
def lookahead(R, clo, clw):
    """``look[i, j, t]``: log of the total weight of the ways cells (i, j + 1 ..) hold
    ``t`` (t = 0 .. max R; -inf: none; the last column's: 0 at t = 0)."""
    r, m, W = clw.shape
    L = 0
    for i in range(r):
        L = max(L, R[i])
    look = np.full((r, m, L + 1), -np.inf)
    for i in range(r):
        look[i, m - 1, 0] = 0.0
        for j in range(m - 2, -1, -1):
            base = clo[i, j + 1]
            for t in range(R[i] + 1):
                top = -np.inf
                for k in range(W):
                    x = base + k
                    if x > t:
                        break
                    top = max(top, clw[i, j + 1, k] + look[i, j + 1, t - x])
                if top == -np.inf:
                    continue
                acc = 0.0
                for k in range(W):
                    x = base + k
                    if x > t:
                        break
                    acc += math.exp(clw[i, j + 1, k] + look[i, j + 1, t - x] - top)
                look[i, j, t] = top + math.log(acc)
    return look


@njit
def _col_start(cj, r, lin, caplo, caphi):
    """Below the last row of a column: one way to hold 0 (``lin[r]``), nothing else
    reachable (``caplo[r] = caphi[r] = 0``)."""
    caplo[r] = 0
    caphi[r] = 0
    for s in range(cj + 1):
        lin[r, s] = 0.0
    lin[r, 0] = 1.0


@njit
def _col_linear(cj, a, b, wt, sc, lin, scl, caplo, caphi, flat, pre, post):
    """The column's suffix sums in linear space: ``lin[i, s] * exp(scl[i])`` the weight of
    the compositions of ``s`` into rows i.. (each row's values normalised by its largest;
    value x of row i weighs ``wt[i, x - a[i]] * exp(sc[i])``); ``caplo[i] .. caphi[i]``
    the sums rows i.. can reach.  ``flat``: every value weighs 1, so each sum is a window
    of the row below (prefix sums, O(1) a value).  False where a reachable sum underflowed
    (the caller redoes the column in log space)."""
    r = a.shape[0]
    _col_start(cj, r, lin, caplo, caphi)
    scl[r] = 0.0
    for i in range(r - 1, -1, -1):
        caplo[i] = caplo[i + 1] + a[i]
        caphi[i] = min(caphi[i + 1] + b[i], cj)
        if flat:
            _prefix(lin, i + 1, cj, pre, post)
        top = 0.0
        for s in range(cj + 1):
            v = 0.0
            if caplo[i] <= s <= caphi[i]:
                x0 = max(a[i], s - caphi[i + 1])
                x1 = min(b[i], s - caplo[i + 1])
                if flat:
                    big = pre[s - x0 + 1]
                    v = big - pre[s - x1]
                    if v <= 0.0 or big > 1e3 * v:
                        v = _window_rest(lin, i + 1, s - x1, s - x0, cj, pre, post)
                else:
                    for x in range(x0, x1 + 1):
                        v += wt[i, x - a[i]] * lin[i + 1, s - x]
                if v <= 0.0:
                    return False
            lin[i, s] = v
            top = max(top, v)
        for s in range(cj + 1):
            lin[i, s] /= top
        scl[i] = scl[i + 1] + math.log(top) + sc[i]
    return True


@njit
def _col_exact_flat(cj, a, b, lin, caplo, caphi):
    """:func:`_col_linear` for flat weights where every count is exact in float64
    (:func:`exact_fits`): ``lin[i, s]`` the number of compositions of ``s`` into rows i ..
    with row k in ``a[k] .. b[k]``, unscaled integers, each row a sliding window over the
    row below (two additions a value).  ``caplo``, ``caphi`` as there."""
    r = a.shape[0]
    _col_start(cj, r, lin, caplo, caphi)
    for i in range(r - 1, -1, -1):
        caplo[i] = caplo[i + 1] + a[i]
        caphi[i] = min(caphi[i + 1] + b[i], cj)
        win = 0.0                                  # row i + 1 at t = s - b[i] .. s - a[i]
        for s in range(cj + 1):
            t = s - a[i]
            if t >= 0:
                win += lin[i + 1, t]
            t = s - b[i] - 1
            if t >= 0:
                win -= lin[i + 1, t]
            lin[i, s] = win if caplo[i] <= s <= caphi[i] else 0.0


@njit
def _col_log(cj, a, b, lwt, lsuf, caplo, caphi):
    """The column's suffix sums in log space (``lsuf[i, s]``; -inf: no composition; value
    x of row i weighs ``lwt[i, x - a[i]]`` in logs)."""
    r = a.shape[0]
    caplo[r] = 0
    caphi[r] = 0
    for s in range(cj + 1):
        lsuf[r, s] = -np.inf
    lsuf[r, 0] = 0.0
    for i in range(r - 1, -1, -1):
        caplo[i] = caplo[i + 1] + a[i]
        caphi[i] = min(caphi[i + 1] + b[i], cj)
        for s in range(cj + 1):
            lsuf[i, s] = -np.inf
            if s < caplo[i] or s > caphi[i]:
                continue
            x0 = max(a[i], s - caphi[i + 1])
            x1 = min(b[i], s - caplo[i + 1])
            top = -np.inf
            for x in range(x0, x1 + 1):
                top = max(top, lwt[i, x - a[i]] + lsuf[i + 1, s - x])
            if top == -np.inf:
                continue
            acc = 0.0
            for x in range(x0, x1 + 1):
                acc += math.exp(lwt[i, x - a[i]] + lsuf[i + 1, s - x] - top)
            lsuf[i, s] = top + math.log(acc)


@njit
def _exact_flat(R, C, flat, ahead):
    """Whether :func:`_weighted_walk` takes its exact path: flat weights, no look-ahead,
    counts exact in float64 (:func:`exact_fits`)."""
    return flat and not ahead and exact_fits(R, C)


@njit
def _weighted_walk(R, C, clo, clw, flo, fhi, rmin, rmax, linear, flat, look, ahead, u, T,
                   draw, exact):
    """One table: drawn with the uniforms ``u`` (r, m) when ``draw`` (written to ``T``),
    else ``T`` followed.  Returns ``(log weight, log q)``: the table's log-weight over its
    proposal probability, and the log proposal probability (``-inf, -inf``: a walk with no
    completion, or ``T`` outside the proposal).  ``exact``: flat weights without the
    look-ahead and counts exact in float64 (:func:`_exact_flat`): each column's
    compositions counted exactly (:func:`_col_exact_flat`), drawn against exact totals,
    q one over the count."""
    r = R.shape[0]
    m = C.shape[0]
    cm = 0
    for j in range(m):
        cm = max(cm, C[j])
    rr = R.copy()
    a = np.empty(r, np.int64)
    b = np.empty(r, np.int64)
    caplo = np.empty(r + 1, np.int64)
    caphi = np.empty(r + 1, np.int64)
    lin = np.empty((r + 1, cm + 1))
    scl = np.empty(r + 1)
    lsuf = np.empty((r + 1, cm + 1))
    pre = np.empty(cm + 2)
    post = np.empty(cm + 2)
    wt = np.empty((r, cm + 1))
    lwt = np.empty((r, cm + 1))
    sc = np.empty(r)
    logw = 0.0
    logq = 0.0
    for j in range(m - 1):
        cj = C[j]
        lin_ok = linear
        for i in range(r):
            a[i] = max(flo[i, j], rr[i] - rmax[i, j])
            b[i] = min(fhi[i, j], rr[i] - rmin[i, j], cj)
            if a[i] > b[i]:
                return -np.inf, -np.inf
            top = -np.inf
            for x in range(a[i], b[i] + 1):
                v = clw[i, j, x - clo[i, j]]
                if ahead:
                    v += look[i, j, rr[i] - x]
                lwt[i, x - a[i]] = v
                top = max(top, v)
            if top == -np.inf:
                return -np.inf, -np.inf
            sc[i] = top
            for x in range(a[i], b[i] + 1):
                v = lwt[i, x - a[i]]
                w = math.exp(v - top) if v > -np.inf else 0.0
                wt[i, x - a[i]] = w
                if w <= 0.0:
                    lin_ok = False         # a hole or an underflow: the log-space path
        col_exact = lin_ok and exact
        if col_exact:
            _col_exact_flat(cj, a, b, lin, caplo, caphi)
            z = lin[0, cj]
            if z <= 0.0:
                return -np.inf, -np.inf
            logw += math.log(z)
            logq -= math.log(z)
            for i in range(r):
                logw += sc[i]                    # each row's (flat) weight
        else:
            if lin_ok:
                lin_ok = _col_linear(cj, a, b, wt, sc, lin, scl, caplo, caphi, flat, pre,
                                     post)
            if lin_ok:
                z = lin[0, cj]
                if z <= 0.0:
                    return -np.inf, -np.inf
                logw += math.log(z) + scl[0]
            else:
                _col_log(cj, a, b, lwt, lsuf, caplo, caphi)
                if lsuf[0, cj] == -np.inf:
                    return -np.inf, -np.inf
                logw += lsuf[0, cj]
        s = cj
        for i in range(r):
            if i == r - 1:                       # the last row takes the column's rest
                pick = s
                if draw:
                    T[i, j] = pick
                elif T[i, j] != pick:
                    return -np.inf, -np.inf
            else:
                x0 = max(a[i], s - caphi[i + 1])
                x1 = min(b[i], s - caplo[i + 1])
                if col_exact:                    # uniform compositions: q is 1 / z
                    if draw:
                        pick = _pick(lin, i + 1, s, x0, x1, u[i, j] * lin[i, s])
                    else:
                        pick = T[i, j]
                        if pick < x0 or pick > x1:
                            return -np.inf, -np.inf
                    p = 1.0
                elif lin_ok:
                    tot = 0.0
                    for x in range(x0, x1 + 1):
                        tot += wt[i, x - a[i]] * lin[i + 1, s - x]
                    if draw:
                        target = u[i, j] * tot
                        acc = 0.0
                        pick = x1
                        for x in range(x0, x1 + 1):
                            acc += wt[i, x - a[i]] * lin[i + 1, s - x]
                            if target < acc:
                                pick = x
                                break
                        while wt[i, pick - a[i]] * lin[i + 1, s - pick] <= 0.0:
                            pick -= 1            # rounding past the last possible value
                    else:
                        pick = T[i, j]
                        if pick < x0 or pick > x1:
                            return -np.inf, -np.inf
                    p = wt[i, pick - a[i]] * lin[i + 1, s - pick] / tot
                else:
                    top = -np.inf
                    for x in range(x0, x1 + 1):
                        top = max(top, lwt[i, x - a[i]] + lsuf[i + 1, s - x])
                    tot = 0.0
                    for x in range(x0, x1 + 1):
                        tot += math.exp(lwt[i, x - a[i]] + lsuf[i + 1, s - x] - top)
                    if draw:
                        target = u[i, j] * tot
                        acc = 0.0
                        pick = x1
                        for x in range(x0, x1 + 1):
                            acc += math.exp(lwt[i, x - a[i]] + lsuf[i + 1, s - x] - top)
                            if target < acc:
                                pick = x
                                break
                        while lwt[i, pick - a[i]] + lsuf[i + 1, s - pick] == -np.inf:
                            pick -= 1
                    else:
                        pick = T[i, j]
                        if pick < x0 or pick > x1:
                            return -np.inf, -np.inf
                    p = math.exp(lwt[i, pick - a[i]] + lsuf[i + 1, s - pick] - top) / tot
                if p <= 0.0:
                    return -np.inf, -np.inf
                logq += math.log(p)
                if draw:
                    T[i, j] = pick
            if ahead:                            # the look-ahead is the proposal's, not
                logw -= look[i, j, rr[i] - pick]     # the table's weight
            rr[i] -= pick
            s -= pick
    for i in range(r):                       # the last column: what each row has left
        x = rr[i]
        if draw:
            T[i, m - 1] = x
        elif T[i, m - 1] != x:
            return -np.inf, -np.inf
        k = x - clo[i, m - 1]
        if k < 0 or k >= clw.shape[2] or clw[i, m - 1, k] == -np.inf:
            return -np.inf, -np.inf
        logw += clw[i, m - 1, k]
    return logw, logq


@njit(parallel=True)
def sample_weighted(R, C, clo, clw, flo, fhi, rmin, rmax, linear, flat, look, ahead, u):
    """``n = u.shape[0]`` tables drawn by the weighted column proposal (uniforms ``u``
    (n, r, m) in [0, 1)) and their log importance weights (-inf: a walk that found no
    completion).  Plain arrays from :func:`riskengine.inference.sis_posterior.arrays`
    (cell windows ``clo``/``clw``, finite ranges ``flo .. fhi``, the later columns' least
    and largest sums per row ``rmin``/``rmax``; ``linear``: no window has holes;
    ``flat``: every possible value of a cell weighs 1; ``look``, ``ahead``: the rows'
    look-ahead (:func:`lookahead`) and whether to use it)."""
    n = u.shape[0]
    r = R.shape[0]
    m = C.shape[0]
    tables = np.zeros((n, r, m), np.int64)
    logw = np.empty(n)
    exact = _exact_flat(R, C, flat, ahead)
    for k in prange(n):
        logw[k] = _weighted_walk(R, C, clo, clw, flo, fhi, rmin, rmax, linear, flat, look,
                                 ahead, u[k], tables[k], True, exact)[0]
    return tables, logw


@njit
def weighted_proposal(R, C, clo, clw, flo, fhi, rmin, rmax, linear, flat, look, ahead, T):
    """``(log weight, log q)`` of the given table ``T`` under :func:`sample_weighted`'s
    proposal (``-inf, -inf`` where the proposal cannot reach it)."""
    return _weighted_walk(R, C, clo, clw, flo, fhi, rmin, rmax, linear, flat, look, ahead,
                          np.zeros((0, 0)), T.copy(), False, _exact_flat(R, C, flat, ahead))
