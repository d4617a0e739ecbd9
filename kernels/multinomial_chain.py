"""A Markov chain over one group's candidates of the resampling mechanisms (the Monte
Carlo route of :mod:`riskengine.inference.joint_mcmc`): pair redraws from their exact
conditional law under the joint likelihoods of :mod:`kernels.multinomial_box`.  Plain
arrays in, plain arrays out.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit
from .multinomial_box import _NEG, _lse_into, log_sum_law

__all__ = ["chain_loglik", "pair_logliks", "pair_sweeps"]

# --- a Markov chain over one group's candidates (riskengine.inference.joint_mcmc) ---------
#
# Both likelihoods above are a readout of laws of sums over cells, each cell contributing a
# weight vector that depends on its original value x_c alone: the bootstrap two laws read
# at N = nM (the published box over the quality region), the binomial method two laws read
# over S' >= n and S' < n with the binomial-coefficient denominators, which also depend on
# L = sum l(x_c) and U = sum u(x_c).  Tables (built by the mechanism, one row per cell and
# candidate value j = x_c - vlo[c]): ``off[m, c, j]`` first summand of law m, ``wlen`` its
# number of values, ``wlog`` their log-weights (-inf padded), ``wlin = exp(wlog - wsc)``
# with ``wsc`` the row's maximum; ``lo_t``, ``hi_t``: l(x_c), u(x_c) (binomial);
# ``cap[m]``: sums above it are dropped (-1: none); ``rlo[m] .. rhi[m]``: the sums read.
#
# The chain redraws two cells at a time from their exact conditional law given the others
# (their sum fixed, every split whose prior and likelihood are positive).  In one sweep the
# cells are taken in a random order perm and the pairs (perm[i], perm[i+1]), i = 0..K-2,
# are redrawn in turn: the law of the other cells' sum is the forward message of
# perm[0..i-1] (already redrawn in this sweep, carried along) convolved with the backward
# message of perm[i+2..] (computed once at the start of the sweep), evaluated only at the
# sums the candidates read.  Messages and per-pair sums are kept on a linear scale, each
# normalised to its maximum with the log of the factor kept apart.  Underflow drops terms
# below 1e-308 of a message's maximum; a candidate whose value comes out below _TINY of its
# scale (where such dropped terms could matter) is recomputed exactly in log space
# (:func:`chain_loglik`, the same DP as the likelihood kernels), so every weight the chain
# uses is the exact joint likelihood to double precision.

_TINY = 1e-200


@njit
def _lconv(a, aoff, alen, w, woff, wlen, cap, out):
    """``out`` = a (values from ``aoff``) convolved with w (from ``woff``), sums above
    ``cap`` dropped (cap < 0: none), zeros at both ends trimmed and normalised to max 1.
    Returns (first sum, length, log of the factor taken out); length 0: no mass."""
    o = aoff + woff
    L = alen + wlen - 1
    if cap >= 0 and o + L - 1 > cap:
        L = cap - o + 1
    if alen <= 0 or wlen <= 0 or L <= 0:
        return o, 0, _NEG
    for i in range(L):
        out[i] = 0.0
    for j in range(wlen):
        wj = w[j]
        if wj == 0.0:
            continue
        m = min(alen, L - j)
        for i in range(m):
            out[i + j] += wj * a[i]
    f = 0
    while f < L and out[f] == 0.0:
        f += 1
    if f == L:
        return o, 0, _NEG
    g = L - 1
    while out[g] == 0.0:
        g -= 1
    mx = 0.0
    for i in range(f, g + 1):
        mx = max(mx, out[i])
    for i in range(f, g + 1):
        out[i - f] = out[i] / mx
    return o + f, g - f + 1, math.log(mx)


@njit
def _log_choose_t(lg, a, b):
    """log C(a, b) from the table lg[k] = log k!."""
    if b < 0 or b > a:
        return _NEG
    return lg[a] - lg[b] - lg[a - b]


@njit
def chain_loglik(x, vlo, off, wlen, wlog, cap, tilt, mode, N, n, lo_t, hi_t, lg):
    """Exact log-likelihood of the group's values ``x`` from the tables, in log space
    (:func:`log_sum_law`): the reference the chain falls back to."""
    K = x.shape[0]
    W = wlog.shape[3]
    lo = np.empty(K, np.int64)
    lw = np.empty((K, W))
    vals = np.empty(2)
    L, U = 0, 0
    for c in range(K):
        L += lo_t[c, x[c] - vlo[c]]
        U += hi_t[c, x[c] - vlo[c]]
    terms = np.empty(1)
    nt = 0
    for m in range(2):
        for c in range(K):
            j = x[c] - vlo[c]
            lo[c] = off[m, c, j]
            for y in range(W):
                lw[c, y] = wlog[m, c, j, y] if y < wlen[m, c, j] else _NEG
        s0, law = log_sum_law(lo, lw, cap[m])
        if mode == 0:
            vals[m] = law[N - s0] - tilt[m] * N if 0 <= N - s0 < law.shape[0] else _NEG
            continue
        if m == 0:
            terms = np.empty(law.shape[0] + max(n, 0) + 2)
        for i in range(law.shape[0]):
            S = s0 + i
            if law[i] == _NEG:
                continue
            if m == 0 and S >= n:
                terms[nt] = law[i] - tilt[m] * S - _log_choose_t(lg, S - L, S - n)
                nt += 1
            elif m == 1 and S < n:
                terms[nt] = law[i] - tilt[m] * S - _log_choose_t(lg, U - S, n - S)
                nt += 1
    if mode == 0:
        return vals[0] - vals[1] if vals[0] > _NEG else _NEG
    return _lse_into(terms, nt)


@njit
def _backward(x, perm, vlo, off, wlen, wlin, wsc, cap, Bl, Boff, Blen, Bsc):
    """Backward messages: law m of the sum over cells perm[k..K-1], k = 2..K."""
    K = perm.shape[0]
    for m in range(2):
        Bl[m, K, 0] = 1.0
        Boff[m, K], Blen[m, K], Bsc[m, K] = 0, 1, 0.0
        for k in range(K - 1, 1, -1):
            c = perm[k]
            j = x[c] - vlo[c]
            o, ln, s = _lconv(Bl[m, k + 1], Boff[m, k + 1], Blen[m, k + 1], wlin[m, c, j],
                              off[m, c, j], wlen[m, c, j], cap[m], Bl[m, k])
            Boff[m, k], Blen[m, k], Bsc[m, k] = o, ln, Bsc[m, k + 1] + wsc[m, c, j] + s


@njit
def _lae(a, b):
    """log(exp(a) + exp(b))."""
    if a == _NEG:
        return b
    if b == _NEG:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit
def _rest_at(s, m, Fl, fo, fl, Bl, k2, bo, bl):
    """The other cells' law m at sum s: forward message times backward message k2."""
    t0 = max(fo, s - (bo + bl - 1))
    t1 = min(fo + fl - 1, s - bo)
    acc = 0.0
    for t in range(t0, t1 + 1):
        acc += Fl[m, t - fo] * Bl[m, k2, s - t - bo]
    return acc


@njit
def _pair_logliks(x, c, d, cand, nc, Fl, Foff, Flen, Fsc, Bl, Boff, Blen, Bsc, k2,
                  vlo, off, wlen, wlin, wsc, wlog, cap, tilt, rlo, rhi, mode, N, n, lo_t, hi_t,
                  lg, R, P, out, stats):
    """Exact log-likelihood of the group with (x_c, x_d) = (a, total - a) for the ``nc``
    candidates a in ``cand``, the other cells at ``x`` (law of their sum: forward message
    ``F`` times backward message ``k2``, evaluated at a sum when first needed and kept in
    ``R``, NaN until then).

    Law m's weights carry a tilt exp(tilt[m] x S) (so that its messages peak near the sums
    read); the readout takes it out: law m at S is read with weight exp(h(S)), h(S) =
    -tilt[m] (S - S_ref) - log C(...) (binomial; S_ref the sum read nearest n) or 0
    (bootstrap).  A candidate is computed exactly in log space when its value
    is below _TINY x exp(scale) x sum_S exp(h(S)), the most the linear scale can have lost
    (terms under 1e-308 of a message's maximum)."""
    tot = x[c] + x[d]
    Rlo = np.empty(2, np.int64)
    Rn = np.zeros(2, np.int64)
    for m in range(2):
        tmin, tmax = 1 << 60, -(1 << 60)
        for q in range(nc):
            jc = cand[q] - vlo[c]
            jd = tot - cand[q] - vlo[d]
            t0 = off[m, c, jc] + off[m, d, jd]
            tmin = min(tmin, t0)
            tmax = max(tmax, t0 + wlen[m, c, jc] + wlen[m, d, jd] - 2)
        bo, bl = Boff[m, k2], Blen[m, k2]
        fo, fl = Foff[m], Flen[m]
        slo = max(rlo[m] - tmax, fo + bo)
        shi = min(rhi[m] - tmin, fo + fl - 1 + bo + bl - 1)
        Rlo[m] = slo
        if fl == 0 or bl == 0 or shi < slo:
            continue
        Rn[m] = shi - slo + 1
        for i in range(Rn[m]):
            R[m, i] = np.nan
    L0, U0 = 0, 0
    if mode == 1:
        for e in range(x.shape[0]):
            if e != c and e != d:
                L0 += lo_t[e, x[e] - vlo[e]]
                U0 += hi_t[e, x[e] - vlo[e]]
    V = np.zeros(2)
    bound = np.zeros(2)
    ltiny = math.log(_TINY)
    for q in range(nc):
        a = cand[q]
        jc = a - vlo[c]
        jd = tot - a - vlo[d]
        L = L0 + lo_t[c, jc] + lo_t[d, jd]
        U = U0 + hi_t[c, jc] + hi_t[d, jd]
        for m in range(2):
            V[m] = _NEG
            bound[m] = _NEG
            po, pl, ps = _lconv(wlin[m, c, jc], off[m, c, jc], wlen[m, c, jc], wlin[m, d, jd],
                                off[m, d, jd], wlen[m, d, jd], -1, P)
            if pl == 0 or Rn[m] == 0:
                continue
            r0, rn = Rlo[m], Rn[m]
            S0 = max(rlo[m], po + r0)
            S1 = min(rhi[m], po + pl - 1 + r0 + rn - 1)
            sref = rlo[m] if m == 0 else rhi[m]
            sc = ps + wsc[m, c, jc] + wsc[m, d, jd] + Fsc[m] + Bsc[m, k2] - tilt[m] * sref
            acc = 0.0
            hsum = 0.0
            for S in range(S0, S1 + 1):
                g = 1.0
                if mode == 1:
                    lc = _log_choose_t(lg, S - L, S - n) if m == 0 else \
                        _log_choose_t(lg, U - S, n - S)
                    if lc == _NEG:
                        continue
                    h = -lc - tilt[m] * (S - sref)
                    if h > 600.0:              # the tilt does not fit this state
                        hsum = np.inf
                        break
                    g = math.exp(h)
                hsum += g
                t0 = max(po, S - (r0 + rn - 1))
                t1 = min(po + pl - 1, S - r0)
                T = 0.0
                for t in range(t0, t1 + 1):
                    i = S - t - r0
                    r = R[m, i]
                    if math.isnan(r):
                        r = _rest_at(S - t, m, Fl, Foff[m], Flen[m], Bl, k2, Boff[m, k2],
                                     Blen[m, k2])
                        R[m, i] = r
                    T += P[t - po] * r
                acc += T * g
            if hsum == np.inf or acc == 0.0:
                V[m] = _NEG
                bound[m] = np.inf if hsum == np.inf else math.log(hsum) + sc
                continue
            V[m] = math.log(acc) + sc
            bound[m] = math.log(hsum) + sc
        stats[1] += 1
        if mode == 0:
            ok = V[0] - bound[0] >= ltiny and V[1] - bound[1] >= ltiny
            ll = V[0] - V[1] if ok else _NEG
        else:
            ll = _lae(V[0], V[1])
            ok = ll > _NEG and ll - max(bound[0], bound[1]) >= ltiny
        if not ok:                     # too small to trust the linear scale: exactly
            stats[0] += 1
            keep_c, keep_d = x[c], x[d]
            x[c], x[d] = a, tot - a
            ll = chain_loglik(x, vlo, off, wlen, wlog, cap, tilt, mode, N, n, lo_t, hi_t, lg)
            x[c], x[d] = keep_c, keep_d
        out[q] = ll


@njit
def _buffers(K, V, W, smax):
    return (np.empty((2, K + 1, smax)), np.zeros((2, K + 1), np.int64),
            np.zeros((2, K + 1), np.int64), np.zeros((2, K + 1)),
            np.empty((2, smax)), np.empty((2, smax)), np.empty((2, smax + 2 * W)),
            np.empty(2 * W + 2), np.empty(V, np.int64), np.empty(V), np.empty(V))


@njit
def pair_sweeps(x, perms, us, keep, out, lw, vlo, off, wlen, wlin, wsc, wlog, cap, tilt, rlo,
                rhi, mode, N, n, lo_t, hi_t, lg, smax, stats):
    """Sweeps of pair redraws of one group (see above) on ``x`` (moved in place).

    ``perms[it]``: the order of sweep ``it``; ``us[it, i]``: the uniform of its i-th pair;
    ``lw[c, j]``: prior log-weight of x_c = vlo[c] + j (-inf: not a candidate value);
    ``keep``: store x after each sweep in ``out[it]``.  ``stats``: [exact fallbacks,
    candidates evaluated].  Returns 0, or 1 when a pair has no candidate of positive
    weight (the state left the support: a caller's error)."""
    K = x.shape[0]
    V = lw.shape[1]
    W = wlin.shape[3]
    Bl, Boff, Blen, Bsc, Fl, Fn, R, P, cand, ll, cdf = _buffers(K, V, W, smax)
    Foff = np.zeros(2, np.int64)
    Flen = np.zeros(2, np.int64)
    Fsc = np.zeros(2)
    for it in range(perms.shape[0]):
        perm = perms[it]
        _backward(x, perm, vlo, off, wlen, wlin, wsc, cap, Bl, Boff, Blen, Bsc)
        for m in range(2):
            Fl[m, 0] = 1.0
            Foff[m], Flen[m], Fsc[m] = 0, 1, 0.0
        for i in range(K - 1):
            c, d = perm[i], perm[i + 1]
            tot = x[c] + x[d]
            a0 = max(vlo[c], tot - (vlo[d] + V - 1))
            a1 = min(vlo[c] + V - 1, tot - vlo[d])
            nc = 0
            for a in range(a0, a1 + 1):
                if lw[c, a - vlo[c]] > _NEG and lw[d, tot - a - vlo[d]] > _NEG:
                    cand[nc] = a
                    nc += 1
            if nc > 1:
                _pair_logliks(x, c, d, cand, nc, Fl, Foff, Flen, Fsc, Bl, Boff, Blen, Bsc,
                              i + 2, vlo, off, wlen, wlin, wsc, wlog, cap, tilt, rlo, rhi, mode,
                              N, n, lo_t, hi_t, lg, R, P, ll, stats)
                mx = _NEG
                for q in range(nc):
                    ll[q] += lw[c, cand[q] - vlo[c]] + lw[d, tot - cand[q] - vlo[d]]
                    mx = max(mx, ll[q])
                if mx == _NEG:
                    return 1
                acc = 0.0
                for q in range(nc):
                    acc += math.exp(ll[q] - mx)
                    cdf[q] = acc
                u = us[it, i] * acc
                q = 0
                while q < nc - 1 and (cdf[q] <= u or ll[q] == _NEG):
                    q += 1
                x[c] = cand[q]
                x[d] = tot - cand[q]
            j = x[c] - vlo[c]
            for m in range(2):        # cell c joins the forward message
                o, ln, s = _lconv(Fl[m], Foff[m], Flen[m], wlin[m, c, j], off[m, c, j],
                                  wlen[m, c, j], cap[m], Fn[m])
                for t in range(ln):
                    Fl[m, t] = Fn[m, t]
                Foff[m], Flen[m], Fsc[m] = o, ln, Fsc[m] + wsc[m, c, j] + s
        if keep:
            for c in range(K):
                out[it, c] = x[c]
    return 0


@njit
def pair_logliks(x, c, d, lw, vlo, off, wlen, wlin, wsc, wlog, cap, tilt, rlo, rhi, mode, N,
                 n, lo_t, hi_t, lg, smax, stats):
    """The candidates of the pair (c, d) of ``x`` and their log-likelihoods as the chain
    computes them (incrementally, the cells in the order c, d, then the others): for tests
    against the likelihood itself."""
    K = x.shape[0]
    V = lw.shape[1]
    W = wlin.shape[3]
    Bl, Boff, Blen, Bsc, Fl, _Fn, R, P, cand, ll, _cdf = _buffers(K, V, W, smax)
    perm = np.empty(K, np.int64)
    perm[0], perm[1] = c, d
    k = 2
    for e in range(K):
        if e != c and e != d:
            perm[k] = e
            k += 1
    _backward(x, perm, vlo, off, wlen, wlin, wsc, cap, Bl, Boff, Blen, Bsc)
    Foff = np.zeros(2, np.int64)
    Flen = np.ones(2, np.int64)
    Fsc = np.zeros(2)
    for m in range(2):
        Fl[m, 0] = 1.0
    tot = x[c] + x[d]
    nc = 0
    for a in range(max(vlo[c], tot - (vlo[d] + V - 1)), min(vlo[c] + V - 1, tot - vlo[d]) + 1):
        if lw[c, a - vlo[c]] > _NEG and lw[d, tot - a - vlo[d]] > _NEG:
            cand[nc] = a
            nc += 1
    _pair_logliks(x, c, d, cand, nc, Fl, Foff, Flen, Fsc, Bl, Boff, Blen, Bsc, 2, vlo, off,
                  wlen, wlin, wsc, wlog, cap, tilt, rlo, rhi, mode, N, n, lo_t, hi_t, lg, R, P,
                  ll, stats)
    return cand[:nc].copy(), ll[:nc].copy()
