"""Controlled rounding from its definition: checks, every rounding by brute force, the
rounding probability, and the exact 3-D rounding posterior by enumeration.

A controlled rounding to base B of a table and its totals: every entry (interior and
total) is a multiple of B adjacent to the original one (a multiple stays), and the
rounded totals are the totals of the rounded interior.  Plain NumPy / itertools; no code
shared with riskengine (the extended matrix is rebuilt here).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import linprog

# --- scalar and 2-D ------------------------------------------------------------------------


def round_prob(t, R, B):
    """Pr(entry t is rounded to R) under unbiased random rounding to base B: a multiple
    stays; otherwise up to the next multiple with probability (t - floor) / B."""
    lower = (t // B) * B
    if t == lower:
        return 1.0 if R == t else 0.0
    p_up = (t - lower) / B
    if R == lower + B:
        return p_up
    if R == lower:
        return 1.0 - p_up
    return 0.0


def extended(x):
    """Cox's (r+1) x (c+1) extended matrix of a 2-D table: the interior, the negated row
    and column totals and the grand total, so that every row and column sums to zero."""
    x = np.asarray(x, dtype=np.int64)
    r, c = x.shape
    M = np.zeros((r + 1, c + 1), dtype=np.int64)
    M[:r, :c] = x
    M[:r, c] = -x.sum(axis=1)
    M[r, :c] = -x.sum(axis=0)
    M[r, c] = x.sum()
    return M


def controlled_rounding_faults_2d(orig, published, row_totals, col_totals, grand, B):
    """The parts of the definition a published 2-D table and its totals break (an empty
    list: a controlled rounding of ``orig`` to base B), checked on the extended matrices."""
    M = extended(orig)
    r, c = np.asarray(orig).shape
    R = np.zeros_like(M)
    R[:r, :c] = published
    R[:r, c] = -np.asarray(row_totals)
    R[r, :c] = -np.asarray(col_totals)
    R[r, c] = grand
    faults = []
    if not np.all(R % B == 0):
        faults.append("an entry is not a multiple of the base")
    if not np.all(np.abs(R - M) < B):
        faults.append("an entry is not adjacent to its original")
    if not np.all(R[M % B == 0] == M[M % B == 0]):
        faults.append("a multiple of the base moved")
    if R[:r, :c + 1].sum(axis=1).any() or R[:, :c].sum(axis=0).any():
        faults.append("the totals are not the totals of the rounded interior")
    return faults


def distortion(orig, pub):
    """Total absolute distortion sum |pub - orig|."""
    return np.abs(np.asarray(pub) - np.asarray(orig)).sum()


def min_distortion_2d(T, B):
    """Smallest interior distortion over every controlled rounding of a 2-D table: every
    up/down choice of the non-multiple entries of the extended matrix, kept when each of
    its rows and columns still sums to zero (inf when none)."""
    M = extended(T)
    nm = np.argwhere(M % B != 0)
    best = np.inf
    for ups in itertools.product((0, 1), repeat=len(nm)):
        R = (M // B) * B
        for (i, j), u in zip(nm, ups):
            R[i, j] += B * u
        if R.sum(axis=0).any() or R.sum(axis=1).any():
            continue
        best = min(best, distortion(T, R[:-1, :-1]))
    return best


def lp_relaxation_distortion_2d(T, B):
    """The interior distortion at the optimum of the LP relaxation of optimal controlled
    rounding (each non-multiple entry rounds up by a fraction y in [0, 1]; rows and
    columns of the extended matrix sum to zero), by scipy's HiGHS; None when every entry
    is already a multiple.  Equal to :func:`min_distortion_2d` by total unimodularity."""
    M = extended(T)
    shape = np.asarray(T).shape
    nm = np.argwhere(M % B != 0)
    if not len(nm):
        return None
    fl = (M // B) * B
    frac = M - fl
    cost = np.array([(B - 2 * frac[i, j]) if (i < shape[0] and j < shape[1]) else 0.0
                     for i, j in nm])
    A = []
    b = []
    for i in range(M.shape[0]):
        A.append([1.0 if p[0] == i else 0.0 for p in nm])
        b.append(-fl[i].sum() / B)
    for j in range(M.shape[1]):
        A.append([1.0 if p[1] == j else 0.0 for p in nm])
        b.append(-fl[:, j].sum() / B)
    lp = linprog(cost, A_eq=np.array(A), b_eq=np.array(b), bounds=(0, 1), method="highs")
    const = sum(frac[i, j] for i, j in nm if i < shape[0] and j < shape[1])
    return lp.fun + const


def rounding_log_likelihood_2d(T, P, row_pub, col_pub, grand_pub, B):
    """log Pr(published P, rounded row / column / grand totals | original T) under
    unbiased rounding, written as the product over every entry and total of
    :func:`round_prob` (-inf when one is impossible)."""
    entries = [(T[idx], P[idx]) for idx in np.ndindex(*T.shape)]
    entries += list(zip(T.sum(1), row_pub))
    entries += list(zip(T.sum(0), col_pub))
    entries += [(T.sum(), grand_pub)]
    pr = [round_prob(int(t), int(R), B) for t, R in entries]
    return sum(math.log(p) if p > 0 else -math.inf for p in pr)


# --- 3-D -----------------------------------------------------------------------------------

#: the totals of a 3-D table, as the axes each keeps (the order of :func:`totals_3d`)
MARGINS_3D = [(0, 1), (0, 2), (1, 2), (0,), (1,), (2,), ()]


def totals_3d(x):
    """Every total of a 3-D array (or a stack of them: leading axis kept), MARGINS_3D order.
    Summed as one product with 0/1 membership matrices (exact: small integers in float64)."""
    x = np.asarray(x)
    shape = x.shape[-3:]
    lead = x.shape[:-3]
    flat = x.reshape(-1, int(np.prod(shape))).astype(float)
    out = []
    for keep in MARGINS_3D:
        kshape = tuple(shape[a] for a in keep)
        grid = np.indices(shape)
        tid = (np.ravel_multi_index(tuple(grid[a] for a in keep), kshape).ravel() if keep
               else np.zeros(flat.shape[1], np.int64))
        member = np.zeros((flat.shape[1], int(np.prod(kshape))))
        member[np.arange(flat.shape[1]), tid] = 1.0
        out.append(np.rint(flat @ member).astype(np.int64).reshape(lead + kshape))
    return out


def adjacent(orig, rnd, B):
    """Elementwise: rnd is a multiple of B adjacent to orig (a multiple stays)."""
    return (rnd % B == 0) & (np.abs(rnd - orig) < B) & ((orig % B != 0) | (rnd == orig))


def all_roundings_3d(x, B):
    """Every controlled rounding of a 3-D table: every up/down pattern of the non-multiple
    cells, kept when the interior and every total are adjacent roundings."""
    x = np.asarray(x, dtype=np.int64)
    nm = np.argwhere(x % B != 0)
    floor = B * (x // B)
    pats = np.array(list(itertools.product((0, 1), repeat=len(nm))), dtype=np.int64)
    tabs = np.repeat(floor[None], len(pats), axis=0)
    for n, idx in enumerate(nm):
        tabs[(slice(None),) + tuple(idx)] += B * pats[:, n]
    ok = np.ones(len(tabs), bool)
    for tx, tr in zip(totals_3d(x), totals_3d(tabs)):
        ok &= adjacent(tx, tr, B).reshape(len(tabs), -1).all(axis=1)
    return tabs[ok]


def controlled_rounding_faults_3d(x, published, published_totals, B):
    """The parts of the definition a published 3-D table breaks (an empty list: a controlled
    rounding of x): interior and every published total (``published_totals`` in MARGINS_3D
    order) adjacent, and the published totals the totals of the published interior."""
    R = np.asarray(published, dtype=np.int64)
    faults = []
    if not adjacent(x, R, B).all():
        faults.append("an interior cell is not an adjacent multiple")
    for keep, pub, tx, tr in zip(MARGINS_3D, published_totals, totals_3d(x), totals_3d(R)):
        if not np.array_equal(pub, tr):
            faults.append(f"total {keep} is not the total of the published interior")
        if not adjacent(tx, tr, B).all():
            faults.append(f"total {keep} is not an adjacent multiple")
    return faults


def rounding_posterior_3d(P, pubs, B, likelihood, log_prior):
    """Every integer 3-D table with cells in [max(0, P-B+1), P+B-1] and every total within
    B-1 of the published one (``pubs`` in MARGINS_3D order), with normalised weights:
    prior x product over all entries (totals included) of :func:`round_prob`
    (``likelihood`` "unbiased") or 1 ("feasible").  ``log_prior`` takes a stack of tables.

    Planes a = i are enumerated cell by cell and kept when their own totals (ab, ac, a) are
    near the published ones; then every combination of planes, kept when the remaining
    totals are.  Returns (tables, weights)."""
    I, J, K = P.shape
    pubs = [np.asarray(p) for p in pubs]

    def near(t, p):
        return np.abs(t - p) <= B - 1

    planes = []
    for i in range(I):
        box = [range(max(0, int(p) - B + 1), int(p) + B) for p in P[i].ravel()]
        cand = np.array(list(itertools.product(*box)), dtype=np.int64).reshape(-1, J, K)
        ok = near(cand.sum(2), pubs[0][i]).all(1)
        ok &= near(cand.sum(1), pubs[1][i]).all(1) & near(cand.sum((1, 2)), pubs[3][i])
        planes.append(cand[ok])
    # combine planes one at a time; partial sums over the planes so far only grow, so a
    # partial jk sum above its window's top can never come back
    T = planes[0][:, None]
    for i in range(1, I):
        a = np.repeat(np.arange(len(T)), len(planes[i]))
        b = np.tile(np.arange(len(planes[i])), len(T))
        T = np.concatenate([T[a], planes[i][b][:, None]], axis=1)
        T = T[(T.sum(1) <= pubs[2] + B - 1).all((1, 2))]
    tt = totals_3d(T)
    ok = np.ones(len(T), bool)
    for m in (2, 4, 5, 6):
        ok &= near(tt[m], pubs[m]).reshape(len(T), -1).all(1)
    T = T[ok]
    lw = np.asarray(log_prior(T), dtype=float)
    if likelihood == "unbiased":
        top = int(T.sum(axis=(1, 2, 3)).max()) + B + 1
        table = np.array([[round_prob(t, r, B) for r in range(top + B)] for t in range(top)])
        with np.errstate(divide="ignore"):
            table = np.log(table)
        for t, p in [(T, P)] + list(zip(totals_3d(T), pubs)):
            lw = lw + table[t, np.broadcast_to(p, t.shape)].reshape(len(T), -1).sum(1)
    keep = np.isfinite(lw)
    T, lw = T[keep], lw[keep]
    ws = np.exp(lw - lw.max()) if len(T) else lw
    return T, ws / ws.sum() if len(T) else ws
