"""Log-space laws of sums over cells: multinomial box probabilities and the binomial
perturbation's compensated law (seed 001).  Plain arrays in, plain arrays out.

Both are dynamic programmes over the cells whose state is the running sum of the values
given to the cells so far; every weight stays in log space (a log-sum-exp per state), so
nothing underflows however far in a tail the box lies.

**Multinomial box.**  For Y ~ Multinomial(N, p), Pr(a_k <= Y_k <= b_k for all k) =
N! * sum over y in the box with sum N of prod_k p_k^y_k / y_k!.  The DP multiplies the
cells in one at a time (state: the sum of the y so far, 0..N; factor of cell k at value y:
y log p_k - log y!), and reads the state N at the end; this is the product of sequential
conditional binomials Y_k | Y_1..Y_{k-1} written without their normalisers.  A cell with
p_k = 0 can only take 0.  Cost: sum over cells of (reachable states) x (box width).

**Binomial perturbation with its compensation stage.**  One group of cells whose total n
is preserved; the cells with x > 0 (the others stay 0 and take no part).  Stage 1 draws
x'_c from binomial(n, x_c/n) truncated to [l_c, u_c].  If D = sum x' - n > 0, D units are
removed one at a time, each from a cell chosen with probability proportional to its room
x'_c - l_c, which then loses one unit of room: drawing D balls without replacement from
an urn with x'_c - l_c balls of colour c, so the units taken are multivariate
hypergeometric, Pr(take = t) = prod_c C(x'_c - l_c, t_c) / C(sum x' - L, D) (L = sum l).
If D < 0 the same with the room u_c - x'_c and |D| units added.  Hence, for a published z
(every z_c in [l_c, u_c], sum z = n):

    Pr(z | x) =  sum_{x' >= z, S' = sum x' >= n} prod_c tb_c(x'_c) C(x'_c - l_c, x'_c - z_c)
                                                  / C(S' - L, S' - n)
              +  sum_{x' <= z, S' < n}           prod_c tb_c(x'_c) C(u_c - x'_c, z_c - x'_c)
                                                  / C(U - S', n - S')

(U = sum u; S' = n forces x' = z in the first sum, D = 0, no compensation), where tb_c is
the truncated binomial pmf.  Each sum is a DP over cells with state S' (the denominator
depends on S' alone).  Exact: nothing is approximated.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._jit import njit
from .table_dp import parallel_region

__all__ = ["compensated_logliks", "log_box", "log_boxes", "log_sum_law"]

_NEG = -np.inf


@njit
def _lse_into(vals, m):
    """log(sum(exp(vals[:m]))) (-inf when every value is -inf)."""
    mx = _NEG
    for i in range(m):
        mx = max(mx, vals[i])
    if mx == _NEG:
        return _NEG
    acc = 0.0
    for i in range(m):
        acc += math.exp(vals[i] - mx)
    return mx + math.log(acc)


@njit
def log_sum_law(lo, lw, cap):
    """Law of the sum of independent cells, unnormalised, in log space.

    ``lo[k]``: first value of cell k, ``lw[k, j]``: log-weight of the value ``lo[k] + j``
    (-inf: excluded); sums above ``cap`` are dropped (cap < 0: none).  Returns ``(start,
    out)``: ``out[s - start]`` = log of the sum, over value vectors with that sum, of the
    product of the cells' weights (-inf where none).
    """
    K, W = lw.shape
    first = np.empty(K, np.int64)
    last = np.empty(K, np.int64)
    for k in range(K):
        f, g = W, -1
        for j in range(W):
            if lw[k, j] > _NEG:
                if f == W:
                    f = j
                g = j
        if g < 0:
            return np.int64(0), np.full(1, _NEG)
        first[k], last[k] = f, g
    size = 1
    for k in range(K):
        size += last[k] - first[k]
    cur = np.full(size, _NEG)
    nxt = np.full(size, _NEG)
    buf = np.empty(W)
    s_lo, s_hi = 0, 0
    cur[0] = 0.0                       # index i <-> sum s_lo + i
    for k in range(K):
        a, b = lo[k] + first[k], lo[k] + last[k]
        n_lo = s_lo + a
        n_hi = s_hi + b
        if cap >= 0 and n_hi > cap:
            n_hi = cap
        if n_lo > n_hi:
            return np.int64(n_lo), np.full(1, _NEG)
        for s in range(n_lo, n_hi + 1):
            y0 = max(a, s - s_hi)
            y1 = min(b, s - s_lo)
            m = 0
            for y in range(y0, y1 + 1):
                buf[m] = cur[s - y - s_lo] + lw[k, y - lo[k]]
                m += 1
            nxt[s - n_lo] = _lse_into(buf, m)
        s_lo, s_hi = n_lo, n_hi
        cur, nxt = nxt, cur
    return np.int64(s_lo), cur[:s_hi - s_lo + 1].copy()


@njit
def log_box(N, logp, a, b):
    """log Pr(a_k <= Y_k <= b_k for every k), Y ~ Multinomial(N, p), ``logp = log p``
    (-inf for p_k = 0); empty or unreachable boxes give -inf."""
    K = logp.shape[0]
    if N < 0:
        return _NEG
    cur = np.full(N + 1, _NEG)
    nxt = np.full(N + 1, _NEG)
    s_lo, s_hi = 0, 0
    cur[0] = 0.0
    Wmax = 1
    for k in range(K):
        w = min(b[k], N) - max(a[k], 0) + 1
        Wmax = max(Wmax, w)
    fac = np.empty(Wmax)
    buf = np.empty(Wmax)
    for k in range(K):
        ak = max(a[k], 0)
        bk = min(b[k], N)
        if logp[k] == _NEG and bk > 0:
            bk = 0
        if ak > bk:
            return _NEG
        for y in range(ak, bk + 1):
            fac[y - ak] = (0.0 if y == 0 else y * logp[k]) - math.lgamma(y + 1.0)
        n_lo = s_lo + ak
        n_hi = min(s_hi + bk, N)
        if k == K - 1:                 # the last cell takes what is left: only the state N
            n_lo = max(n_lo, N)
        if n_lo > n_hi:
            return _NEG
        for s in range(n_lo, n_hi + 1):
            y0 = max(ak, s - s_hi)
            y1 = min(bk, s - s_lo)
            m = 0
            for y in range(y0, y1 + 1):
                buf[m] = cur[s - y] + fac[y - ak]
                m += 1
            nxt[s] = _lse_into(buf, m)
        for s in range(s_lo, s_hi + 1):
            cur[s] = _NEG
        s_lo, s_hi = n_lo, n_hi
        cur, nxt = nxt, cur
    if s_lo > N or s_hi < N:
        return _NEG
    return cur[N] + math.lgamma(N + 1.0)


def log_boxes(N, logp, a, b):
    """:func:`log_box` for each row (the parallel kernel, entered as
    :func:`kernels.table_dp.parallel_region` allows: safe from several threads under
    every threading layer).

    Parameters
    ----------
    N : int
        The multinomial's size.
    logp, a, b : (C, K) float64, int64, int64
        Log cell probabilities and the box ``a <= Y <= b`` of each row.

    Returns
    -------
    numpy.ndarray
        float64 (C,): log Pr(a <= Y <= b) of each row.
    """
    with parallel_region():
        return _log_boxes(N, logp, a, b)


@njit(parallel=True)
def _log_boxes(N, logp, a, b):
    """:func:`log_box` for each row of ``logp``, ``a``, ``b`` (C, K) (parallel over rows)."""
    C = logp.shape[0]
    out = np.empty(C)
    for c in prange(C):
        out[c] = log_box(N, logp[c], a[c], b[c])
    return out


@njit
def _log_choose(n, k):
    if k < 0 or k > n:
        return _NEG
    return math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)


@njit
def _log_binom_pmf(v, n, x):
    """log binomial(n, x/n) pmf at v (x = n: all mass at n)."""
    if v < 0 or v > n:
        return _NEG
    if x == n:
        return 0.0 if v == n else _NEG
    lp = math.log(x) - math.log(n)
    lq = math.log1p(-x / n)
    return _log_choose(n, v) + v * lp + (n - v) * lq


@njit
def _compensated(n, x, z, lo, hi):
    """log Pr(z | x) for one group (every x_c > 0; see the module docstring)."""
    K = x.shape[0]
    W = 1
    for c in range(K):
        if z[c] < lo[c] or z[c] > hi[c]:
            return _NEG
        W = max(W, hi[c] - lo[c] + 1)
    # truncated binomial log pmf on [lo, hi]
    tb = np.full((K, W), _NEG)
    tmp = np.empty(W)
    for c in range(K):
        m = hi[c] - lo[c] + 1
        for j in range(m):
            tmp[j] = _log_binom_pmf(lo[c] + j, n, x[c])
        norm = _lse_into(tmp, m)
        for j in range(m):
            tb[c, j] = tmp[j] - norm
    L, U = 0, 0
    for c in range(K):
        L += lo[c]
        U += hi[c]
    terms = np.empty(2 * (U - L + 2) + 2)
    nt = 0
    # units removed: x' in [z, hi], S' >= n
    lwa = np.full((K, W), _NEG)
    start = np.empty(K, np.int64)
    for c in range(K):
        start[c] = z[c]
        for v in range(z[c], hi[c] + 1):
            lwa[c, v - z[c]] = tb[c, v - lo[c]] + _log_choose(v - lo[c], v - z[c])
    s0, law = log_sum_law(start, lwa, -1)
    for i in range(law.shape[0]):
        S = s0 + i
        if law[i] > _NEG and S >= n:
            terms[nt] = law[i] - _log_choose(S - L, S - n)
            nt += 1
    # units added: x' in [lo, z], S' < n
    lwb = np.full((K, W), _NEG)
    for c in range(K):
        start[c] = lo[c]
        for v in range(lo[c], z[c] + 1):
            lwb[c, v - lo[c]] = tb[c, v - lo[c]] + _log_choose(hi[c] - v, z[c] - v)
    s0, law = log_sum_law(start, lwb, n - 1)
    for i in range(law.shape[0]):
        S = s0 + i
        if law[i] > _NEG and S < n:
            terms[nt] = law[i] - _log_choose(U - S, n - S)
            nt += 1
    return _lse_into(terms, nt)


def compensated_logliks(n, X, Z, LO, HI):
    """log Pr(published ``Z`` | original ``X[i]``) of the binomial perturbation of one group
    for each row of ``X`` (the parallel kernel, entered as
    :func:`kernels.table_dp.parallel_region` allows).

    Parameters
    ----------
    n : int
        The group's preserved total.
    X : int64 (C, K)
        Candidate originals, one a row.
    Z : int64 (K,)
        The published values.
    LO, HI : int64 (C, K)
        The quality intervals of ``X``.

    Returns
    -------
    numpy.ndarray
        float64 (C,): the log-likelihood of each row (cells with x = 0 stay 0: -inf
        unless z = 0; they take no part in the compensation).
    """
    with parallel_region():
        return _compensated_logliks(n, X, Z, LO, HI)


@njit(parallel=True)
def _compensated_logliks(n, X, Z, LO, HI):
    """log Pr(published ``Z`` | original ``X[i]``) of the binomial perturbation of one group
    with preserved total ``n``, for each row ``i`` of ``X`` (C, K); ``LO``, ``HI`` (C, K):
    the quality intervals of ``X``.  Cells with x = 0 stay 0 (-inf unless z = 0) and take
    no part in the compensation."""
    C, K = X.shape
    out = np.empty(C)
    for i in prange(C):
        m = 0
        ok = True
        for c in range(K):
            if X[i, c] > 0:
                m += 1
            elif Z[c] != 0:
                ok = False
        if not ok:
            out[i] = _NEG
            continue
        xs = np.empty(m, np.int64)
        zs = np.empty(m, np.int64)
        ls = np.empty(m, np.int64)
        hs = np.empty(m, np.int64)
        j = 0
        for c in range(K):
            if X[i, c] > 0:
                xs[j], zs[j], ls[j], hs[j] = X[i, c], Z[c], LO[i, c], HI[i, c]
                j += 1
        out[i] = _compensated(n, xs, zs, ls, hs) if m > 0 else (0.0 if n == 0 else _NEG)
    return out
