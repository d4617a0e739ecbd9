"""Streaming exact enumeration of cyclic-perturbation sign vectors.

Plain arrays in, plain arrays out.  The caller (``riskengine.mechanisms.cyclic``)
describes the problem in *group* form: cells whose rows of the cycle matrix are
identical (same cycles, same signs) form one group; they move together, so one
integer offset per group is the whole state of the walk.

Notation (m cycles, G groups, K = largest group coverage, W = 2K + 1):

* candidate original ``T = P - sum_k e_k C_k`` for a sign vector e in {-1,0,1}^m;
  for a cell c of group g, ``T_c = P_c - o_g`` with ``o_g = sum_k coef[g, k] e_k``.
* the walk decides cycles in *reverse* order k = m-1, ..., 0 (depth d = m-1-k).
  After deciding e_k the offsets hold ``sum_{j >= k} coef e_j``, i.e. the state
  ``B_k = S_{k-1}`` that the forward mechanism saw just before cycle k.  So the
  coin probability ``q_k(e_k | S_{k-1})`` (with its blocking rule) is known at
  that depth, and the path weight is built incrementally.
* a group is *finalised* at its lowest cycle: from then on its offset is its
  final value, so its prior factor enters the weight there and its histogram
  is updated once per node, with the total leaf mass of that node's subtree.

Weights: ``F[g, o + K]`` is the group's prior factor ``prod_{c in g} pi_c(P_c - o)``
rescaled so that its maximum over o is 1, and ``Fok`` its support.  Leaf
weights are therefore <= 1 (no overflow); underflow shows as a tiny total and
is checked by the caller.

Distinct originals: several sign vectors reach the same table when the cycles
are linearly dependent.  ``zset`` lists the lattice vectors z (Cz = 0, entries in
[-2, 2], first nonzero negative); a valid leaf e is counted as a candidate only
if no ``e + z`` is inside the box and valid (lexicographically smallest valid
member of its class).  With ``key_mode`` the caller instead receives an integer
key per valid leaf (offsets of a basis of pivot groups) and deduplicates.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import njit

NEGATIVE = 0
ANY_ZERO = 1


@njit(_nrt=False)
def _coin(ev, bu, bd, alpha, beta, gamma):
    """q_k(e | state): the three-sided coin after the blocking rule."""
    if ev == 1:
        return 0.0 if bu else alpha
    if ev == -1:
        return 0.0 if bd else beta
    q = gamma
    if bu:
        q += alpha
    if bd:
        q += beta
    return q


@njit(_nrt=False)
def _step_ok(k, ev, off, cyc_ptr, cyc_grp, cyc_coef, pmin, rule, alpha, beta, gamma):
    """After applying e_k (offsets already updated): q_k, or 0.0 if impossible."""
    bu = False
    bd = False
    for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
        g = cyc_grp[t]
        o = off[g]
        if o > pmin[g]:
            return 0.0
        if o == pmin[g]:
            if rule == ANY_ZERO:
                bu = True
                bd = True
            elif cyc_coef[t] < 0:
                bu = True
            else:
                bd = True
    return _coin(ev, bu, bd, alpha, beta, gamma)


@njit(_nrt=False)
def _valid_vector(e, cyc_ptr, cyc_grp, cyc_coef, pmin, Fok, K, fin_ptr, fin_grp,
                  rule, alpha, beta, gamma, off):
    """True if sign vector e (cycle order, entries in {-1,0,1}) has positive weight."""
    m = e.shape[0]
    off[:] = 0
    for d in range(m):
        k = m - 1 - d
        ev = e[k]
        for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
            off[cyc_grp[t]] += cyc_coef[t] * ev
        if _step_ok(k, ev, off, cyc_ptr, cyc_grp, cyc_coef, pmin,
                    rule, alpha, beta, gamma) <= 0.0:
            return False
        for t in range(fin_ptr[k], fin_ptr[k + 1]):
            g = fin_grp[t]
            if not Fok[g, off[g] + K]:
                return False
    return True


@njit(_nrt=False)
def _last_level(w0, e, off, off2, e2, viol, cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K,
                fin_ptr, fin_grp, rule, alpha, beta, gamma, zset, Hg, key_mode, pivots,
                key_base, keys, key_pos):
    """The three children (e_0 = +1, 0, -1) of a node at depth m - 2, without the DFS
    bookkeeping.  Returns (mass, valid, canonical, keys written)."""
    m = e.shape[0]
    nz = zset.shape[0]
    mass = 0.0
    nvalid = 0
    ncanon = 0
    nkeys = 0
    a, b = cyc_ptr[0], cyc_ptr[1]
    fa, fb = fin_ptr[0], fin_ptr[1]
    for c3 in range(3):
        ev = 1 - c3
        for t in range(a, b):
            off[cyc_grp[t]] += cyc_coef[t] * ev
        q = _step_ok(0, ev, off, cyc_ptr, cyc_grp, cyc_coef, pmin, rule, alpha, beta, gamma)
        if q > 0.0:
            w = w0 * q
            ok = True
            for t in range(fa, fb):
                g = fin_grp[t]
                idx = off[g] + K
                if not Fok[g, idx]:
                    ok = False
                    break
                w *= F[g, idx]
            if ok:
                mass += w
                nvalid += 1
                for t in range(fa, fb):
                    g = fin_grp[t]
                    Hg[g, off[g] + K] += w
                canon = True
                if nz > 0:
                    e[0] = ev
                    for zi in range(nz):
                        v = ev + zset[zi, 0]
                        if viol[zi] == 0 and -1 <= v <= 1:
                            for kk in range(m):
                                e2[kk] = e[kk] + zset[zi, kk]
                            if _valid_vector(e2, cyc_ptr, cyc_grp, cyc_coef, pmin, Fok, K,
                                             fin_ptr, fin_grp, rule, alpha, beta, gamma, off2):
                                canon = False
                                break
                    e[0] = 0
                if canon:
                    ncanon += 1
                if key_mode:
                    key = 0
                    for i in range(pivots.shape[0]):
                        key = key * key_base + (off[pivots[i]] + K)
                    keys[key_pos + nkeys] = key
                    nkeys += 1
        for t in range(a, b):
            off[cyc_grp[t]] -= cyc_coef[t] * ev
    return mass, nvalid, ncanon, nkeys


@njit(_nrt=False)
def _last_two(w0, e, off, off2, e2, viol, cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K,
              fin_ptr, fin_grp, rule, alpha, beta, gamma, zset, Hg, key_mode, pivots,
              key_base, keys, key_pos):
    """Cycles k = 1 and k = 0 below a node at depth m - 3 (nine leaves, no DFS state)."""
    nz = zset.shape[0]
    mass = 0.0
    nvalid = 0
    ncanon = 0
    nkeys = 0
    a, b = cyc_ptr[1], cyc_ptr[2]
    fa, fb = fin_ptr[1], fin_ptr[2]
    for c3 in range(3):
        ev = 1 - c3
        for t in range(a, b):
            off[cyc_grp[t]] += cyc_coef[t] * ev
        q = _step_ok(1, ev, off, cyc_ptr, cyc_grp, cyc_coef, pmin, rule, alpha, beta, gamma)
        if q > 0.0:
            w = w0 * q
            ok = True
            for t in range(fa, fb):
                g = fin_grp[t]
                idx = off[g] + K
                if not Fok[g, idx]:
                    ok = False
                    break
                w *= F[g, idx]
            if ok:
                e[1] = ev
                for zi in range(nz):
                    v = ev + zset[zi, 1]
                    if v < -1 or v > 1:
                        viol[zi] += 1
                r = _last_level(w, e, off, off2, e2, viol, cyc_ptr, cyc_grp, cyc_coef, pmin,
                                F, Fok, K, fin_ptr, fin_grp, rule, alpha, beta, gamma, zset, Hg,
                                key_mode, pivots, key_base, keys, key_pos + nkeys)
                for t in range(fa, fb):
                    g = fin_grp[t]
                    Hg[g, off[g] + K] += r[0]
                mass += r[0]
                nvalid += r[1]
                ncanon += r[2]
                nkeys += r[3]
                for zi in range(nz):
                    v = ev + zset[zi, 1]
                    if v < -1 or v > 1:
                        viol[zi] -= 1
                e[1] = 0
        for t in range(a, b):
            off[cyc_grp[t]] -= cyc_coef[t] * ev
    return mass, nvalid, ncanon, nkeys


@njit(_nrt=False)
def _branch(prefix, cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K, fin_ptr, fin_grp,
            rule, alpha, beta, gamma, zset, Hg, key_mode, pivots, key_base, keys, key_start,
            off, off2, e, e2, choice, alive, wbefore, mass, viol):
    """Depth-first walk of one top-level branch (its first choices fixed by prefix).

    Returns (total leaf mass, number of valid sign vectors, number of canonical
    valid sign vectors, number of keys written).  Hg (G, W) is accumulated in place.
    """
    m = cyc_ptr.shape[0] - 1
    s = prefix.shape[0]
    nz = zset.shape[0]
    off[:] = 0
    e[:] = 0
    choice[:] = -1
    wbefore[0] = 1.0
    viol[:] = 0
    total = 0.0
    nvalid = 0
    ncanon = 0
    nkeys = 0
    d = 0
    while d >= 0:
        k = m - 1 - d
        if choice[d] >= 0:
            # leave the node (d, choice[d]): histogram its finalised groups, pass mass up
            ev = e[k]
            if alive[d]:
                M = mass[d]
                for t in range(fin_ptr[k], fin_ptr[k + 1]):
                    g = fin_grp[t]
                    Hg[g, off[g] + K] += M
                if d > 0:
                    mass[d - 1] += M
                else:
                    total += M
            for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
                off[cyc_grp[t]] -= cyc_coef[t] * ev
            for zi in range(nz):
                v = ev + zset[zi, k]
                if v < -1 or v > 1:
                    viol[zi] -= 1
            e[k] = 0
        if d < s:
            c = prefix[d] if choice[d] == -1 else 3
        else:
            c = choice[d] + 1
        if c > 2:
            choice[d] = -1
            d -= 1
            continue
        choice[d] = c
        ev = 1 - c
        e[k] = ev
        for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
            off[cyc_grp[t]] += cyc_coef[t] * ev
        for zi in range(nz):
            v = ev + zset[zi, k]
            if v < -1 or v > 1:
                viol[zi] += 1
        q = _step_ok(k, ev, off, cyc_ptr, cyc_grp, cyc_coef, pmin, rule, alpha, beta, gamma)
        ok = q > 0.0
        w = 0.0
        if ok:
            w = wbefore[d] * q
            for t in range(fin_ptr[k], fin_ptr[k + 1]):
                g = fin_grp[t]
                idx = off[g] + K
                if not Fok[g, idx]:
                    ok = False
                    break
                w *= F[g, idx]
        alive[d] = ok
        if not ok:
            continue
        if d == m - 3 and m - 2 >= s:
            # last two cycles (k = 1, 0) in tight loops
            r = _last_two(w, e, off, off2, e2, viol, cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok,
                          K, fin_ptr, fin_grp, rule, alpha, beta, gamma, zset, Hg, key_mode,
                          pivots, key_base, keys, key_start + nkeys)
            mass[d] = r[0]
            nvalid += r[1]
            ncanon += r[2]
            nkeys += r[3]
            continue
        if d == m - 2 and m - 1 >= s:
            # last cycle (k = 0) in one tight pass over its three signs
            r = _last_level(w, e, off, off2, e2, viol, cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok,
                            K, fin_ptr, fin_grp, rule, alpha, beta, gamma, zset, Hg, key_mode,
                            pivots, key_base, keys, key_start + nkeys)
            mass[d] = r[0]
            nvalid += r[1]
            ncanon += r[2]
            nkeys += r[3]
            continue
        if d == m - 1:
            mass[d] = w
            nvalid += 1
            canon = True
            for zi in range(nz):
                if viol[zi] == 0:
                    for kk in range(m):
                        e2[kk] = e[kk] + zset[zi, kk]
                    if _valid_vector(e2, cyc_ptr, cyc_grp, cyc_coef, pmin, Fok, K,
                                     fin_ptr, fin_grp, rule, alpha, beta, gamma, off2):
                        canon = False
                        break
            if canon:
                ncanon += 1
            if key_mode:
                key = 0
                for i in range(pivots.shape[0]):
                    key = key * key_base + (off[pivots[i]] + K)
                keys[key_start + nkeys] = key
                nkeys += 1
        else:
            mass[d] = 0.0
            wbefore[d + 1] = w
            d += 1
            choice[d] = -1
    return total, nvalid, ncanon, nkeys


@njit(parallel=True)
def enumerate_cyclic(prefixes, cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K, fin_ptr, fin_grp,
                     rule, alpha, beta, gamma, zset, key_mode, pivots, key_base, keys, key_starts):
    """Walk every branch in ``prefixes`` (one row of forced first choices each), in parallel.

    Choices are 0, 1, 2 for e = +1, 0, -1.  Returns (Hg summed over branches,
    per-branch total mass, per-branch valid counts, per-branch canonical counts).
    """
    nb_ = prefixes.shape[0]
    G = pmin.shape[0]
    W = F.shape[1]
    Hb = np.zeros((nb_, G, W))
    tot = np.zeros(nb_)
    nvalid = np.zeros(nb_, np.int64)
    ncanon = np.zeros(nb_, np.int64)
    for b in prange(nb_):
        m = cyc_ptr.shape[0] - 1
        r = _branch(prefixes[b], cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K, fin_ptr, fin_grp,
                    rule, alpha, beta, gamma, zset, Hb[b], key_mode, pivots, key_base, keys,
                    key_starts[b], np.zeros(G, np.int64), np.zeros(G, np.int64),
                    np.zeros(m, np.int64), np.zeros(m, np.int64), np.full(m, -1, np.int64),
                    np.zeros(m, np.bool_), np.ones(m + 1), np.zeros(m),
                    np.zeros(zset.shape[0], np.int64))
        tot[b] = r[0]
        nvalid[b] = r[1]
        ncanon[b] = r[2]
    H = np.zeros((G, W))
    for b in range(nb_):
        H += Hb[b]
    return H, tot, nvalid, ncanon
