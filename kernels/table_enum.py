"""Streaming enumeration of 3-D count tables with all 2-way margins fixed.

Plain arrays in, plain arrays out.  Cells are visited in C order (i, j, k); the
state is the remaining part of every 2-way margin (ij, ik, jk).  A cell takes
values up to the smallest remaining margin through it; the last cell of every
line is forced (it must use up that line's margin), so every leaf is a table
with exactly the published margins.  Per-cell weights are product form
(``wt[c, v]``, 0 = impossible); the walk accumulates the total weight, the
number of tables and every cell's weighted histogram, storing no table.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit
def enumerate_3d(n_ij, n_ik, n_jk, wt):
    """Returns (count, total weight, hist (I*J*K, V))."""
    I, J = n_ij.shape
    K = n_ik.shape[1]
    C = I * J * K
    V = wt.shape[1]
    r_ij = n_ij.copy()
    r_ik = n_ik.copy()
    r_jk = n_jk.copy()
    val = np.full(C, -1, np.int64)
    wpre = np.ones(C + 1)
    hist = np.zeros((C, V))
    count = 0
    total = 0.0
    d = 0
    while d >= 0:
        i = d // (J * K)
        j = (d // K) % J
        k = d % K
        if val[d] >= 0:
            v = val[d]
            r_ij[i, j] += v
            r_ik[i, k] += v
            r_jk[j, k] += v
        lo = val[d] + 1
        ub = min(r_ij[i, j], r_ik[i, k], r_jk[j, k], V - 1)
        forced = -1
        ok = True
        for last, need in ((k == K - 1, r_ij[i, j]), (j == J - 1, r_ik[i, k]),
                           (i == I - 1, r_jk[j, k])):
            if last:
                if forced == -1:
                    forced = need
                elif forced != need:
                    ok = False
        v = -1
        if ok:
            if forced >= 0:
                if lo <= forced <= ub and wt[d, forced] > 0.0:
                    v = forced
            else:
                for x in range(lo, ub + 1):
                    if wt[d, x] > 0.0:
                        v = x
                        break
        if v < 0:
            val[d] = -1
            d -= 1
            continue
        val[d] = v
        r_ij[i, j] -= v
        r_ik[i, k] -= v
        r_jk[j, k] -= v
        w = wpre[d] * wt[d, v]
        if d == C - 1:
            count += 1
            total += w
            for c in range(C):
                hist[c, val[c]] += w
        else:
            wpre[d + 1] = w
            d += 1
            val[d] = -1
    return count, total, hist
