"""Streaming enumeration of 3-D count tables under (interval) totals and per-cell bounds.

Plain arrays in, plain arrays out.  An I x J x K table has C = I*J*K cells and
M = IJ + IK + JK + I + J + K + 1 totals, in the order

    ij (I*J, row-major), ik (I*K), jk (J*K), i (I), j (J), k (K), grand (1).

Every cell c takes a value ``cell_lo[c] + w`` with log-weight ``cell_lw[c, w]``
(-inf = impossible) and every total t a value ``m_lo[t] + w`` with log-weight
``m_lw[t, w]``: product-form weights over all entries, and the support of each
row is where its log-weight is finite (fixed margins: a window of one value).
Feasibility (pruning, the count) is decided from the supports only, never from
floating-point weights, so a weight too small for a float still counts its table.

Cells are visited in C order (i, j, k).  The state is the partial sum of every
total.  A cell's values are restricted to those that leave every line through
it completable: for each total, what is already in it plus the value plus the
least (most) the unvisited cells of that line can still add must reach its
window.  The most a 2-way line can still take is bounded dynamically by the
remaining room of the crossing 2-way lines (the pruning by remaining margins);
the least, and the bounds of 1-way and grand totals, from the cell windows.
The last cell of a line is therefore forced into the line's window, so every
leaf is a table satisfying all constraints.  The walk accumulates the number of
tables, the total weight and the weighted histogram of every cell and every
total, storing no table: each node credits the weight of the leaves below it to
its cell's value (and to the totals it completes) when the walk leaves it, so a
leaf costs O(1) instead of O(cells + totals).

Weights are summed in log space along the path; a leaf adds ``exp(lw - ref)`` where
``ref`` is the log-weight of the first leaf found, raised (and every accumulator
rescaled) whenever a leaf exceeds it by more than ``_HEADROOM``: no weight overflows,
and a leaf that underflows is below e^-745 of one already counted.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit
def _line_ids(I, J, K):
    """(C, 7) ids of the totals through each cell and (C, 7) 'last cell of that line'."""
    C = I * J * K
    IJ, IK, JK = I * J, I * K, J * K
    o1 = IJ + IK + JK
    ids = np.empty((C, 7), np.int64)
    last = np.zeros((C, 7), np.bool_)
    for i in range(I):
        for j in range(J):
            for k in range(K):
                d = (i * J + j) * K + k
                ids[d, 0] = i * J + j
                ids[d, 1] = IJ + i * K + k
                ids[d, 2] = IJ + IK + j * K + k
                ids[d, 3] = o1 + i
                ids[d, 4] = o1 + I + j
                ids[d, 5] = o1 + I + J + k
                ids[d, 6] = o1 + I + J + K
                last[d, 0] = k == K - 1
                last[d, 1] = j == J - 1
                last[d, 2] = i == I - 1
                last[d, 3] = j == J - 1 and k == K - 1
                last[d, 4] = i == I - 1 and k == K - 1
                last[d, 5] = i == I - 1 and j == J - 1
                last[d, 6] = d == C - 1
    return ids, last


_HEADROOM = 300.0


@njit
def _support(lo, lw):
    """First and last value with finite log-weight per row (hi < lo: empty)."""
    n, W = lw.shape
    a = np.empty(n, np.int64)
    b = np.empty(n, np.int64)
    for r in range(n):
        a[r] = lo[r]
        b[r] = lo[r] - 1
        first = -1
        for w in range(W):
            if lw[r, w] > -np.inf:
                if first < 0:
                    first = w
                b[r] = lo[r] + w
        if first >= 0:
            a[r] = lo[r] + first
    return a, b


@njit
def enumerate_3d_windows(I, J, K, cell_lo, cell_lw, m_lo, m_lw, ref_fixed, targets,
                         max_steps=0):
    """Returns (count, total, ref, cell_hist (C, W), m_hist (M, Wm), tables (n, C)): the
    total weight is ``total * exp(ref)``, the histograms in the same units.  ``max_steps``
    > 0: give up after that many steps of the walk (a step enters or leaves one value of
    one cell) and return ``count = -1``.

    Sampling: with ``ref_fixed`` (the ``ref`` of an earlier walk) and ``targets`` (sorted
    values in [0, total) of that walk), the walk keeps that reference and records, for each
    target, the table whose leaf carries the cumulative weight past it: exact draws from
    the weights (the walk visits the leaves in the same order with the same weights).
    A plain walk passes ``ref_fixed = -inf`` and no targets."""
    C = I * J * K
    M = I * J + I * K + J * K + I + J + K + 1
    W = cell_lw.shape[1]
    Wm = m_lw.shape[1]
    hist = np.zeros((C, W))
    mhist = np.zeros((M, Wm))
    ref = ref_fixed
    sampling = targets.shape[0] > 0
    tables = np.zeros((targets.shape[0], C), np.int64)
    nxt = 0
    clo, chi = _support(cell_lo, cell_lw)
    mlo, mhi = _support(m_lo, m_lw)
    for c in range(C):
        if chi[c] < clo[c]:
            return 0, 0.0, ref, hist, mhist, tables
    for t in range(M):
        if mhi[t] < mlo[t]:
            return 0, 0.0, ref, hist, mhist, tables
    ids, last = _line_ids(I, J, K)
    # static suffix sums of the cell windows along every line: what the unvisited cells
    # of a line can at least / at most add after cell d
    suf_lo = np.zeros((C, 7), np.int64)
    suf_hi = np.zeros((C, 7), np.int64)
    acc_lo = np.zeros(M, np.int64)
    acc_hi = np.zeros(M, np.int64)
    for d in range(C - 1, -1, -1):
        for t in range(7):
            L = ids[d, t]
            suf_lo[d, t] = acc_lo[L]
            suf_hi[d, t] = acc_hi[L]
            acc_lo[L] += clo[d]
            acc_hi[L] += chi[d]
    IJ, IK = I * J, I * K
    part = np.zeros(M, np.int64)
    val = np.full(C, -1, np.int64)
    top = np.zeros(C, np.int64)
    wpre = np.zeros(C + 1)        # log-weight of the path down to each depth
    sub = np.zeros(C)             # weight of the leaves found below the current value at d
    count = 0
    total = 0.0
    d = 0
    steps = 0
    while d >= 0:
        steps += 1
        if max_steps > 0 and steps > max_steps:
            return -1, total, ref, hist, mhist, tables
        i = d // (J * K)
        j = (d // K) % J
        k = d % K
        if val[d] >= 0:
            # done with the previous value: credit its subtree's weight to the cell, to every
            # line it completed (their sums are final), and to the parent; then take it out
            u = val[d]
            hist[d, u - cell_lo[d]] += sub[d]
            for t in range(7):
                L = ids[d, t]
                if last[d, t]:
                    mhist[L, part[L] - m_lo[L]] += sub[d]
                part[L] -= u
            if d > 0:
                sub[d - 1] += sub[d]
            start = u + 1
        else:                     # first visit: the range of values that keep every line open
            lo = clo[d]
            hi = chi[d]
            for t in range(7):
                L = ids[d, t]
                rhi = suf_hi[d, t]
                if t == 0:        # rest of line ij: cells (i, j, k' > k)
                    s = 0
                    for kk in range(k + 1, K):
                        e = d + kk - k
                        s += min(chi[e], mhi[IJ + i * K + kk] - part[IJ + i * K + kk],
                                 mhi[IJ + IK + j * K + kk] - part[IJ + IK + j * K + kk])
                    rhi = min(rhi, s)
                elif t == 1:      # rest of line ik: cells (i, j' > j, k)
                    s = 0
                    for jj in range(j + 1, J):
                        e = (i * J + jj) * K + k
                        s += min(chi[e], mhi[i * J + jj] - part[i * J + jj],
                                 mhi[IJ + IK + jj * K + k] - part[IJ + IK + jj * K + k])
                    rhi = min(rhi, s)
                elif t == 2:      # rest of line jk: cells (i' > i, j, k)
                    s = 0
                    for ii in range(i + 1, I):
                        e = (ii * J + j) * K + k
                        s += min(chi[e], mhi[ii * J + j] - part[ii * J + j],
                                 mhi[IJ + ii * K + k] - part[IJ + ii * K + k])
                    rhi = min(rhi, s)
                hi = min(hi, mhi[L] - part[L] - suf_lo[d, t])
                lo = max(lo, mlo[L] - part[L] - rhi)
            top[d] = hi
            start = lo
        v = -1
        w = 0.0
        for x in range(start, top[d] + 1):
            wx = wpre[d] + cell_lw[d, x - cell_lo[d]]
            if wx > -np.inf:
                for t in range(7):
                    if last[d, t]:
                        L = ids[d, t]
                        wx += m_lw[L, part[L] + x - m_lo[L]]
            if wx > -np.inf:
                v = x
                w = wx
                break
        if v < 0:
            val[d] = -1
            d -= 1
            continue
        val[d] = v
        for t in range(7):
            part[ids[d, t]] += v
        if d == C - 1:            # a leaf: a table meeting every constraint
            if not sampling and w > ref + _HEADROOM:   # a new reference: rescale everything
                f = np.exp(ref - w) if ref > -np.inf else 0.0
                total *= f
                hist *= f
                mhist *= f
                for e in range(C):
                    sub[e] *= f
                ref = w
            count += 1
            lw_leaf = np.exp(w - ref)
            total += lw_leaf
            sub[d] = lw_leaf
            while sampling and nxt < targets.shape[0] and targets[nxt] < total:
                for e in range(C):
                    tables[nxt, e] = val[e]
                nxt += 1
        else:
            sub[d] = 0.0
            wpre[d + 1] = w
            d += 1
            val[d] = -1
    return count, total, ref, hist, mhist, tables
