"""A Markov chain over original counts and cell keys jointly (data augmentation) for the
cell key method: the likelihood integrated over the keys, for any set of published
totals (rows and columns that cross included).

State: every cell's count ``x[c]`` and key ``K[c]`` in [0, 1); an empty cell's key is
dormant (uniform, free: it counts in no total and integrates to 1), so the state space
has the same dimension whatever the counts.
Each published total ``t`` holds its count ``xs[t]`` and its key ``ks[t]``, the fractional
part of the sum of its nonempty cells' keys.  Target: the prior of ``x`` times, for every
cell and total, the indicator that its key lies in the p-table interval that publishes
its published value from its count (with respect to counting measure on ``x`` and
Lebesgue measure on the keys of the nonempty cells); its marginal on ``x`` is the prior
times the likelihood integrated over the keys.

One step redraws a cell's count and key together from their exact conditional law given
every other cell's: for each value ``v`` of the cell's window, the keys ``k`` that keep
every interval satisfied form a union of at most ``1 + 2 T`` intervals (the cell's own
interval cut by each of its ``T`` totals' intervals shifted by the rest of the total's
key), whose length weighs ``v`` (an empty cell has no key: weight 1 when every total
holds without it); ``v`` is drawn, then ``k`` uniformly on its union.

Parallel tempering (:func:`tempered`): beside the target, replicas whose totals are soft at
fixed penalties, one sweep each a round, then swaps of neighbouring replicas' states by
the Metropolis rule.  A total's key is the fractional part of the sum of its cells' keys,
and the sum's whole turns barely move under single-cell redraws and the patterns (each key
stays within its own interval): chains started at different turns stayed apart (a 6 x 6
table with every total: R-hat 1.18 after 4 x 1,000 draws, benchmarks/keys_mcmc.py).  The
soft replicas cross between turns by breaking a total for a while, and hand their states
down.

:func:`sweeps` can also raise the penalty from ``lam0`` to ``LAM_HARD`` over its sweeps
(soft totals first), for chains started anywhere in the cells' windows; the route starts
its chains at tables and keys that satisfy every entry instead.  Plain arrays in and out;
randomness is Numba's per-thread generator (``seed``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["seed", "sweeps", "tempered", "violations"]

#: beyond this penalty the totals are hard (the target itself)
LAM_HARD = 1e300


@njit(cache=True)
def seed(s):
    np.random.seed(s)


@njit(cache=True)
def _frac(a):
    f = a - np.floor(a)
    return 0.0 if f >= 1.0 else f


@njit(cache=True)
def _total_interval(t, xt, tlo, ta, tb):
    """The key interval of total ``t`` at count ``xt``: (a, b), a < 0 when impossible."""
    i = xt - tlo[t]
    if i < 0 or i >= ta.shape[1]:
        return -1.0, -1.0
    return ta[t, i], tb[t, i]


@njit(cache=True)
def _inside(k, a, b):
    return a >= 0.0 and a <= k < b


@njit(cache=True)
def _weight(viol, lam):
    if viol == 0:
        return 1.0
    if lam >= LAM_HARD:
        return 0.0
    return np.exp(-lam * viol)


@njit(cache=True)
def _recompute(x, K, tot_ptr, tot_idx, xs, ks):
    xs[:] = 0
    ks[:] = 0.0
    for c in range(x.shape[0]):
        for q in range(tot_ptr[c], tot_ptr[c + 1]):
            t = tot_idx[q]
            xs[t] += x[c]
            if x[c] > 0:
                ks[t] += K[c]
    for t in range(ks.shape[0]):
        ks[t] = _frac(ks[t])


@njit(cache=True)
def violations(x, K, tot_ptr, tot_idx, tlo, ta, tb):
    """Totals whose key is outside the interval of their count (0: the state is in the
    target's support).

    Parameters
    ----------
    x, K : ndarray
        Counts (int64) and keys (float64) of the cells.
    tot_ptr, tot_idx : ndarray of int64
        The totals of cell ``c``: ``tot_idx[tot_ptr[c]:tot_ptr[c + 1]]``.
    tlo, ta, tb : ndarray
        Each total's first count, and its key interval ``[ta, tb)`` per count from there.

    Returns
    -------
    int
    """
    T = tlo.shape[0]
    xs = np.zeros(T, np.int64)
    ks = np.zeros(T)
    _recompute(x, K, tot_ptr, tot_idx, xs, ks)
    n = 0
    for t in range(T):
        a, b = _total_interval(t, xs[t], tlo, ta, tb)
        if xs[t] == 0:
            n += 0 if (a == 0.0 and b > 0.0) else 1
        elif not _inside(ks[t], a, b):
            n += 1
    return n


@njit(cache=True)
def _pieces(c, w, v, nt, rest_x, rest_k, ca, cb, tot_ptr, tot_idx, tlo, ta, tb, lam,
            pts, seg):
    """The key interval of cell ``c`` at window value ``w`` (count ``v``) cut where a
    total's interval, shifted by the rest of the total's key, begins or ends: the pieces'
    ends ``pts[:m]`` and weights ``seg[:m - 1]`` (length times the violations' penalty);
    returns ``(m, total weight)``."""
    lo_k, hi_k = ca[c, w], cb[c, w]
    m = 0
    pts[m] = lo_k
    m += 1
    for q in range(nt):
        t = tot_idx[tot_ptr[c] + q]
        a, b = _total_interval(t, rest_x[q] + v, tlo, ta, tb)
        if a < 0.0:
            continue
        for e in (_frac(a - rest_k[q]), _frac(b - rest_k[q])):
            if lo_k < e < hi_k:
                pts[m] = e
                m += 1
    pts[m] = hi_k
    m += 1
    pts[:m].sort()
    acc = 0.0
    for i in range(m - 1):
        length = pts[i + 1] - pts[i]
        seg[i] = 0.0
        if length <= 0.0:
            continue
        mid = 0.5 * (pts[i] + pts[i + 1])
        viol = 0
        for q in range(nt):
            t = tot_idx[tot_ptr[c] + q]
            a, b = _total_interval(t, rest_x[q] + v, tlo, ta, tb)
            if not _inside(_frac(mid + rest_k[q]), a, b):
                viol += 1
        seg[i] = length * _weight(viol, lam)
        acc += seg[i]
    return m, acc


@njit(cache=True)
def _update(c, x, K, lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb, xs, ks, lam,
            wv, pts, seg):
    W = logp.shape[1]
    nt = tot_ptr[c + 1] - tot_ptr[c]
    old = x[c]
    oldk = K[c] if old > 0 else 0.0
    # the rest of every total without this cell
    rest_x = np.empty(nt, np.int64)
    rest_k = np.empty(nt)
    for q in range(nt):
        t = tot_idx[tot_ptr[c] + q]
        rest_x[q] = xs[t] - old
        rest_k[q] = _frac(ks[t] - oldk)
    best = -np.inf
    for w in range(W):
        if logp[c, w] > best and ca[c, w] >= 0.0:
            best = logp[c, w]
    if best == -np.inf:
        return False
    total = 0.0
    for w in range(W):
        wv[w] = 0.0
        if ca[c, w] < 0.0 or logp[c, w] == -np.inf:
            continue
        v = lo[c] + w
        pw = np.exp(logp[c, w] - best)
        if v == 0:                               # no key: every total as it is without it
            viol = 0
            for q in range(nt):
                t = tot_idx[tot_ptr[c] + q]
                a, b = _total_interval(t, rest_x[q], tlo, ta, tb)
                if rest_x[q] == 0:
                    viol += 0 if (a == 0.0 and b > 0.0) else 1
                elif not _inside(rest_k[q], a, b):
                    viol += 1
            wv[w] = pw * _weight(viol, lam)
        else:                                    # the key's interval, cut by the totals'
            _, acc = _pieces(c, w, v, nt, rest_x, rest_k, ca, cb, tot_ptr, tot_idx, tlo, ta,
                             tb, lam, pts, seg)
            wv[w] = pw * acc
        total += wv[w]
    if not total > 0.0:
        return False
    u = np.random.random() * total
    pick = -1
    for w in range(W):
        if wv[w] > 0.0:
            pick = w
            u -= wv[w]
            if u < 0.0:
                break
    v = lo[c] + pick
    newk = np.random.random()                    # an empty cell's key is dormant (free)
    if v > 0:                                    # the key: uniform on its union
        m, acc = _pieces(c, pick, v, nt, rest_x, rest_k, ca, cb, tot_ptr, tot_idx, tlo, ta,
                         tb, lam, pts, seg)
        u = np.random.random() * acc
        last = -1
        for i in range(m - 1):
            if seg[i] > 0.0:
                last = i
        for i in range(m - 1):
            if seg[i] > 0.0:
                if u < seg[i] or i == last:
                    newk = pts[i] + min(u, seg[i]) / seg[i] * (pts[i + 1] - pts[i])
                    if newk >= pts[i + 1]:
                        newk = pts[i]
                    break
                u -= seg[i]
    x[c] = v
    K[c] = newk
    for q in range(nt):
        t = tot_idx[tot_ptr[c] + q]
        xs[t] = rest_x[q] + v
        ks[t] = _frac(rest_k[q] + newk) if v > 0 else rest_k[q]
    return True


@njit(cache=True)
def _allowed(coef, base, ca_, cb_, m, pts, want):
    """Measure of the ``d`` in [0, 1) with ``frac(base_i + coef_i d)`` in ``[ca_i, cb_i)``
    for every constraint ``i < m`` (``coef`` small nonzero integers) and, when ``want`` >=
    0, the point at that fraction of it (else -1)."""
    n = 0
    pts[n] = 0.0
    n += 1
    for i in range(m):
        q = abs(coef[i])
        for e in (ca_[i], cb_[i]):
            for j in range(q):
                pts[n] = _frac((e - base[i] + j) / coef[i])
                n += 1
    pts[n] = 1.0
    n += 1
    pts[:n].sort()
    total = 0.0
    for r in range(2):                       # pass 0 measures, pass 1 finds the point
        acc = 0.0
        for i in range(n - 1):
            length = pts[i + 1] - pts[i]
            if length <= 0.0:
                continue
            mid = 0.5 * (pts[i] + pts[i + 1])
            ok = True
            for j in range(m):
                if not _inside(_frac(base[j] + coef[j] * mid), ca_[j], cb_[j]):
                    ok = False
                    break
            if not ok:
                continue
            if r == 1 and acc + length >= want * total:
                return total, pts[i] + min(max(want * total - acc, 0.0), length)
            acc += length
        total = acc
        if want < 0.0 or total <= 0.0:
            return total, -1.0
    return total, -1.0


@njit(cache=True)
def _pattern(p, pcells, psigns, x, K, lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb,
             xs, ks, tw, touched, coef, base, c_a, c_b, pts):
    """A move along a pattern that keeps every total's count: the pattern's cells move by
    ``+t`` / ``-t`` (their signs) and their keys (dormant ones too) by ``+d`` / ``-d``;
    ``(t, d)`` redrawn from their exact conditional law.  While every cell of the pattern
    stays nonempty the totals' keys do not move either; a cell emptied or filled moves the
    keys of its totals with ``d``, which the conditional law takes into account."""
    k = 0
    while k < pcells.shape[1] and pcells[p, k] >= 0:
        k += 1
    W = logp.shape[1]
    nt = 0                                   # the totals the pattern touches
    for j in range(k):
        c = pcells[p, j]
        for q in range(tot_ptr[c], tot_ptr[c + 1]):
            t = tot_idx[q]
            seen = False
            for u in range(nt):
                if touched[u] == t:
                    seen = True
            if not seen:
                touched[nt] = t
                nt += 1
    lb = 0.0
    for j in range(k):
        c = pcells[p, j]
        lb += logp[c, x[c] - lo[c]]
    T = tw.shape[0]
    half = T // 2
    total = 0.0
    for r in range(2):                       # pass 0 weighs every t, pass 1 redraws
        pick = -1
        if r == 1:
            if not total > 0.0:
                return
            u = np.random.random() * total
            for i in range(T):
                if tw[i] > 0.0:
                    pick = i
                    u -= tw[i]
                    if u < 0.0:
                        break
        for i in range(T):
            if r == 1 and i != pick:
                continue
            t = i - half
            tw[i] = 0.0
            lw = 0.0
            m = 0
            ok = True
            for j in range(k):
                c = pcells[p, j]
                v = x[c] + psigns[p, j] * t
                w = v - lo[c]
                if v < 0 or w < 0 or w >= W or ca[c, w] < 0.0 or logp[c, w] == -np.inf:
                    ok = False
                    break
                lw += logp[c, w]
                if v > 0:
                    coef[m], base[m], c_a[m], c_b[m] = psigns[p, j], K[c], ca[c, w], cb[c, w]
                    m += 1
            if not ok:
                continue
            for u in range(nt):
                tt = touched[u]
                xt = xs[tt]
                bt = ks[tt]
                kap = 0
                for j in range(k):
                    c = pcells[p, j]
                    inT = False
                    for q in range(tot_ptr[c], tot_ptr[c + 1]):
                        if tot_idx[q] == tt:
                            inT = True
                    if not inT:
                        continue
                    s = psigns[p, j]
                    xt += s * t
                    if x[c] > 0:
                        bt -= K[c]
                    if x[c] + s * t > 0:
                        bt += K[c]
                        kap += s
                a, b = _total_interval(tt, xt, tlo, ta, tb)
                if a < 0.0:
                    ok = False
                    break
                bt = _frac(bt)
                if xt == 0:
                    if not (a == 0.0 and b > 0.0):
                        ok = False
                        break
                elif kap == 0:
                    if not _inside(bt, a, b):
                        ok = False
                        break
                else:
                    coef[m], base[m], c_a[m], c_b[m] = kap, bt, a, b
                    m += 1
            if not ok:
                continue
            if r == 0:
                length, _ = _allowed(coef, base, c_a, c_b, m, pts, -1.0)
                tw[i] = np.exp(lw - lb) * length
                total += tw[i]
            else:
                _, d = _allowed(coef, base, c_a, c_b, m, pts, np.random.random())
                if d < 0.0:
                    return
                for j in range(k):
                    c = pcells[p, j]
                    s = psigns[p, j]
                    nx = x[c] + s * t
                    nk = _frac(K[c] + s * d)
                    if nx > 0 and not (ca[c, nx - lo[c]] <= nk < cb[c, nx - lo[c]]):
                        nk = ca[c, nx - lo[c]]      # rounding at an interval's end
                    for q in range(tot_ptr[c], tot_ptr[c + 1]):
                        tt = tot_idx[q]
                        xs[tt] += s * t
                        if x[c] > 0:
                            ks[tt] -= K[c]
                        if nx > 0:
                            ks[tt] += nk
                        ks[tt] = _frac(ks[tt])
                    x[c] = nx
                    K[c] = nk
                return


@njit(cache=True)
def sweeps(x, K, lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb, n, lam0, lam1,
           keep, out, pcells, psigns):
    """``n`` sweeps (every cell once, in order), the penalty raised from ``lam0`` to
    ``lam1`` (geometrically; ``LAM_HARD``: the target); ``keep``: the counts after each
    sweep go to ``out[i]``.  ``x`` and ``K`` are updated in place.

    Parameters
    ----------
    x, K : ndarray (int64, float64), shape (n_cells,)
        The state.
    lo, logp, ca, cb : ndarray
        Each cell's first window value, log prior of each value from there (``-inf``:
        impossible), and key interval ``[ca, cb)`` publishing its published value
        (``ca < 0``: none).
    tot_ptr, tot_idx, tlo, ta, tb : ndarray
        The published totals holding each cell (CSR), each total's first count and key
        intervals per count.
    n : int
    lam0, lam1 : float
    keep : bool
    out : ndarray of int64, shape (n, n_cells)
    pcells, psigns : ndarray of int64, shape (P, k)
        Moves that keep every total (cells, ``-1`` padded, and signs ``+1`` / ``-1``);
        ``min(P, 2 n_cells)`` of them, drawn at random, after each sweep.

    Returns
    -------
    int
        Cells that could not move (every value weighs 0: the state is outside the support).
    """
    C = x.shape[0]
    T = tlo.shape[0]
    xs = np.zeros(T, np.int64)
    ks = np.zeros(T)
    W = logp.shape[1]
    wv = np.zeros(W)
    most = 0
    for c in range(C):
        most = max(most, tot_ptr[c + 1] - tot_ptr[c])
    pts = np.zeros(2 * most + 2)
    seg = np.zeros(2 * most + 2)
    stuck = 0
    P = pcells.shape[0]
    kmax = max(pcells.shape[1], 1)
    tw = np.zeros(2 * W + 1)
    touched = np.zeros(kmax * max(most, 1), np.int64)
    nc = kmax + kmax * max(most, 1)
    coef = np.zeros(nc, np.int64)
    base = np.zeros(nc)
    c_a = np.zeros(nc)
    c_b = np.zeros(nc)
    apts = np.zeros(2 * nc * (kmax + 1) + 2)
    for it in range(n):
        if lam1 >= LAM_HARD and lam0 >= LAM_HARD:
            lam = LAM_HARD
        else:
            f = (it + 1) / n
            lam = lam0 * (lam1 / lam0) ** f
        _recompute(x, K, tot_ptr, tot_idx, xs, ks)
        for c in range(C):
            if not _update(c, x, K, lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb, xs,
                           ks, lam, wv, pts, seg):
                stuck += 1
        for r in range(min(P, 2 * C)):          # moves that keep every total
            _pattern(np.random.randint(P), pcells, psigns, x, K, lo, logp, ca, cb, tot_ptr,
                     tot_idx, tlo, ta, tb, xs, ks, tw, touched, coef, base, c_a, c_b, apts)
        if keep:
            out[it, :] = x
    return stuck


@njit(cache=True, nogil=True)
def tempered(X, KK, lams, lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb, n, thin, keep,
             out, pcells, psigns, swaps):
    """``n`` rounds of parallel tempering.  Replica ``r`` (counts ``X[r]``, keys ``KK[r]``)
    targets the prior times every cell's interval times ``exp(-lams[r] E)``, ``E`` its
    violated totals (:func:`violations`); ``lams[0] = LAM_HARD``: the target itself.  A
    round: one sweep of each replica (the pattern moves only in the target's: they keep
    every total hard), then each neighbouring pair ``r, r + 1`` swaps states with
    probability ``min(1, exp((lams[r] - lams[r + 1]) (E_r - E_{r + 1})))`` (the target's
    replica takes only a state without violations).  Every replica's move leaves its own
    target invariant and the swaps leave the product invariant, so the target's replica
    samples the target.  When ``keep``, ``out[i] = X[0]`` after rounds ``(i + 1) thin``;
    ``swaps[r]`` counts the accepted swaps of pair ``r, r + 1``.  Returns the cells that
    could not move (as :func:`sweeps`)."""
    R = X.shape[0]
    C = X.shape[1]
    none_c = np.full((0, 1), -1, np.int64)
    none_s = np.zeros((0, 1), np.int64)
    idle = np.zeros((1, C), np.int64)
    E = np.zeros(R, np.int64)
    stuck = 0
    for it in range(n):
        for r in range(R):
            if r == 0:
                stuck += sweeps(X[0], KK[0], lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb,
                                1, lams[0], lams[0], False, idle, pcells, psigns)
            else:
                sweeps(X[r], KK[r], lo, logp, ca, cb, tot_ptr, tot_idx, tlo, ta, tb, 1,
                       lams[r], lams[r], False, idle, none_c, none_s)
            E[r] = violations(X[r], KK[r], tot_ptr, tot_idx, tlo, ta, tb)
        for r in range(R - 1):
            if E[r] == E[r + 1]:
                ok = True
            elif r == 0:
                ok = E[1] == 0                   # the target: no violated total
            else:
                d = (lams[r] - lams[r + 1]) * (E[r] - E[r + 1])
                ok = d >= 0.0 or np.random.random() < np.exp(d)
            if ok:
                for c in range(C):
                    X[r, c], X[r + 1, c] = X[r + 1, c], X[r, c]
                    KK[r, c], KK[r + 1, c] = KK[r + 1, c], KK[r, c]
                E[r], E[r + 1] = E[r + 1], E[r]
                swaps[r] += 1
        if keep and (it + 1) % thin == 0:
            out[(it + 1) // thin - 1, :] = X[0]
    return stuck
