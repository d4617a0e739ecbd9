"""Per-cell counts of 3- or 4-row tables with fixed totals, by meeting in the middle.

Plain arrays in, plain arrays out.  The rows split into half A (rows ``0..top-1``) and
half B (the rest); a vector ``c`` of half A's column sums (``C - c`` for half B) runs over
a box (``clo..chi``, the last column implied by the half's total).  Within a half of two
rows ``p, q`` with column sums ``c``, the first row ``x`` has ``a <= x <= b`` (from the
cells' bounds and ``c``) and sum ``R_p``; the number of such rows with ``x_j = a_j + y``
is a count of bounded compositions of the rest over the other columns, by
inclusion-exclusion (``2^(m-1)`` binomials ``C(n, m - 2)`` each, exact in int64 where the
caller checked they fit).  A half of one row is the vector ``c`` itself.  Every table
``(x_A, x_B)`` counts once: the histogram of each cell of half A gets the number of half-A
tables with that value times the number of half-B tables, and the other way round.

Work is split over the first free column sum in chunks, each with its own histogram
(summed in a fixed order: the result does not depend on the threads).

:func:`count_limbs` gives the exact number of tables alone: the same walk, each product
``n_A n_B`` (both below 2^63) split into 21-bit limbs whose nine partial products are
summed per chunk (at most 2^19 vectors per chunk: no sum reaches 2^63); the caller adds
the limbs in Python integers.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._jit import njit
from .table_dp import parallel_region

__all__ = ["cell_counts", "count_limbs"]


@njit
def _binom(n, k):
    if n < k or n < 0:
        return 0
    acc = 1
    for i in range(k):
        acc = acc * (n - i) // (i + 1)
    return acc


@njit
def _pair(p, q, c, lo, hi, R, masks, signs, cnt, a, w):
    """Half of two rows p, q with column sums c: fills a (first row's lower bounds), w
    (widths) and cnt[j, y] (rows with x_j = a_j + y); returns the number of half tables."""
    m = c.shape[0]
    tot_a = 0
    for j in range(m):
        a[j] = max(lo[p, j], c[j] - hi[q, j])
        b = min(hi[p, j], c[j] - lo[q, j])
        w[j] = b - a[j]
        if w[j] < 0:
            return 0
        tot_a += a[j]
    rest = R[p] - tot_a
    if rest < 0:
        return 0
    k = m - 2
    n_half = 0
    nm = masks.shape[0]
    offs = np.empty(nm, np.int64)
    for j in range(m):
        for t in range(nm):              # the subset's excess, once per column
            off = 0
            mk = masks[t]
            idx = 0
            for o in range(m):
                if o == j:
                    continue
                if (mk >> idx) & 1:
                    off += w[o] + 1
                idx += 1
            offs[t] = off
        for y in range(w[j] + 1):
            s = rest - y
            total = 0
            if s >= 0:
                for t in range(nm):
                    total += signs[t] * _binom(s - offs[t] + k, k)
            cnt[j, y] = total
            if j == 0:
                n_half += total
    return n_half


@njit
def _single(p, c, lo, hi):
    for j in range(c.shape[0]):
        if c[j] < lo[p, j] or c[j] > hi[p, j]:
            return 0
    return 1


def cell_counts(lo, hi, R, C, top, clo, chi, wmax, nchunk):
    """Per-cell counts of the tables with cells in ``[lo, hi]``, row totals ``R`` and
    column totals ``C`` (the parallel kernel, entered as
    :func:`kernels.table_dp.parallel_region` allows: safe from several threads under
    every threading layer).

    Parameters
    ----------
    lo, hi : int64 (r, m)
        The cells' bounds.
    R, C : int64 (r,), (m,)
        Row and column totals.
    top : int
        Rows of half A (``0..top-1``).
    clo, chi : int64 (m - 1,)
        The box of half A's free column sums.
    wmax : int
        Width of the histograms.
    nchunk : int
        Chunks the box is split into (the result does not depend on the threads).

    Returns
    -------
    tuple
        ``hist`` float64 (r, m, wmax): number of tables with cell (i, j) = lo[i, j] + w;
        the total number of tables as float64.
    """
    with parallel_region():
        return _cell_counts(lo, hi, R, C, top, clo, chi, wmax, nchunk)


@njit(parallel=True)
def _cell_counts(lo, hi, R, C, top, clo, chi, wmax, nchunk):
    """Returns (hist (r, m, wmax) float64: number of tables with cell (i, j) = lo[i, j] + w,
    total number of tables as float64)."""
    r, m = lo.shape
    nfree = m - 1
    size = np.ones(nfree, np.int64)
    for j in range(nfree):
        size[j] = chi[j] - clo[j] + 1
    G = 1
    for j in range(nfree):
        G *= size[j]
    ta = 0
    for i in range(top):
        ta += R[i]
    nmask = 1 << (m - 1)
    masks = np.arange(nmask).astype(np.int64)
    signs = np.ones(nmask, np.int64)
    for t in range(nmask):
        bits = 0
        x = t
        while x:
            bits += x & 1
            x >>= 1
        if bits % 2:
            signs[t] = -1
    hist = np.zeros((nchunk, r, m, wmax))
    totals = np.zeros(nchunk)
    for ch in prange(nchunk):
        g0 = G * ch // nchunk
        g1 = G * (ch + 1) // nchunk
        c = np.zeros(m, np.int64)
        cb = np.zeros(m, np.int64)
        cntA = np.zeros((m, wmax + 1), np.int64)
        cntB = np.zeros((m, wmax + 1), np.int64)
        aA = np.zeros(m, np.int64)
        wA = np.zeros(m, np.int64)
        aB = np.zeros(m, np.int64)
        wB = np.zeros(m, np.int64)
        for g in range(g0, g1):
            x = g
            s = 0
            for j in range(nfree - 1, -1, -1):
                c[j] = clo[j] + x % size[j]
                x //= size[j]
                s += c[j]
            c[m - 1] = ta - s
            if c[m - 1] < clo[m - 1] or c[m - 1] > chi[m - 1]:
                continue
            for j in range(m):
                cb[j] = C[j] - c[j]
            if top == 1:
                nA = _single(0, c, lo, hi)
            else:
                nA = _pair(0, 1, c, lo, hi, R, masks, signs, cntA, aA, wA)
            if nA == 0:
                continue
            if r - top == 1:
                nB = _single(top, cb, lo, hi)
            else:
                nB = _pair(top, top + 1, cb, lo, hi, R, masks, signs, cntB, aB, wB)
            if nB == 0:
                continue
            fa = float(nA)
            fb = float(nB)
            totals[ch] += fa * fb
            if top == 1:
                for j in range(m):
                    hist[ch, 0, j, c[j] - lo[0, j]] += fa * fb
            else:
                for j in range(m):
                    for y in range(wA[j] + 1):
                        v = cntA[j, y] * fb
                        hist[ch, 0, j, aA[j] + y - lo[0, j]] += v
                        hist[ch, 1, j, c[j] - aA[j] - y - lo[1, j]] += v
            if r - top == 1:
                for j in range(m):
                    hist[ch, top, j, cb[j] - lo[top, j]] += fa * fb
            else:
                for j in range(m):
                    for y in range(wB[j] + 1):
                        v = cntB[j, y] * fa
                        hist[ch, top, j, aB[j] + y - lo[top, j]] += v
                        hist[ch, top + 1, j, cb[j] - aB[j] - y - lo[top + 1, j]] += v
    out = np.zeros((r, m, wmax))
    total = 0.0
    for ch in range(nchunk):
        out += hist[ch]
        total += totals[ch]
    return out, total


@njit
def _pair_count(p, q, c, lo, hi, R, signs, offs):
    """Number of two-row half tables (rows p, q) with column sums c: the first row's
    bounded compositions of its total, by inclusion-exclusion over all m columns
    (``offs``: scratch of 2^m entries, the excess of each subset of columns)."""
    m = c.shape[0]
    tot_a = 0
    offs[0] = 0
    for j in range(m):
        a = max(lo[p, j], c[j] - hi[q, j])
        b = min(hi[p, j], c[j] - lo[q, j])
        if b < a:
            return 0
        tot_a += a
        w1 = b - a + 1
        half = 1 << j
        for t in range(half):            # subsets with column j: those without, plus j
            offs[half + t] = offs[t] + w1
    rest = R[p] - tot_a
    if rest < 0:
        return 0
    k = m - 1
    total = 0
    for t in range(offs.shape[0]):
        if rest - offs[t] >= 0:
            total += signs[t] * _binom(rest - offs[t] + k, k)
    return total


def count_limbs(lo, hi, R, C, top, clo, chi, nchunk):
    """Exact count of the tables :func:`cell_counts` walks, as limb sums (the parallel
    kernel, entered as :func:`kernels.table_dp.parallel_region` allows).

    Parameters
    ----------
    lo, hi, R, C, top, clo, chi, nchunk
        As for :func:`cell_counts`.

    Returns
    -------
    numpy.ndarray
        int64 (nchunk, 5): count = sum over chunks and s of out[ch, s] * 2^(21 s).
    """
    with parallel_region():
        return _count_limbs(lo, hi, R, C, top, clo, chi, nchunk)


@njit(parallel=True)
def _count_limbs(lo, hi, R, C, top, clo, chi, nchunk):
    """Exact count of the tables :func:`cell_counts` walks, as limb sums: returns int64
    (nchunk, 5) with count = sum over chunks and s of out[ch, s] * 2^(21 s)."""
    r, m = lo.shape
    nfree = m - 1
    size = np.ones(nfree, np.int64)
    for j in range(nfree):
        size[j] = chi[j] - clo[j] + 1
    G = 1
    for j in range(nfree):
        G *= size[j]
    ta = 0
    for i in range(top):
        ta += R[i]
    nmask = 1 << m
    signs = np.ones(nmask, np.int64)
    for t in range(nmask):
        bits = 0
        x = t
        while x:
            bits += x & 1
            x >>= 1
        if bits % 2:
            signs[t] = -1
    out = np.zeros((nchunk, 5), np.int64)
    low = (1 << 21) - 1
    for ch in prange(nchunk):
        g0 = G * ch // nchunk
        g1 = G * (ch + 1) // nchunk
        c = np.zeros(m, np.int64)
        cb = np.zeros(m, np.int64)
        offs = np.zeros(nmask, np.int64)
        for g in range(g0, g1):
            x = g
            s = 0
            for j in range(nfree - 1, -1, -1):
                c[j] = clo[j] + x % size[j]
                x //= size[j]
                s += c[j]
            c[m - 1] = ta - s
            if c[m - 1] < clo[m - 1] or c[m - 1] > chi[m - 1]:
                continue
            for j in range(m):
                cb[j] = C[j] - c[j]
            if top == 1:
                nA = _single(0, c, lo, hi)
            else:
                nA = _pair_count(0, 1, c, lo, hi, R, signs, offs)
            if nA == 0:
                continue
            if r - top == 1:
                nB = _single(top, cb, lo, hi)
            else:
                nB = _pair_count(top, top + 1, cb, lo, hi, R, signs, offs)
            if nB == 0:
                continue
            a0 = nA & low
            a1 = (nA >> 21) & low
            a2 = nA >> 42
            b0 = nB & low
            b1 = (nB >> 21) & low
            b2 = nB >> 42
            out[ch, 0] += a0 * b0
            out[ch, 1] += a0 * b1 + a1 * b0
            out[ch, 2] += a0 * b2 + a1 * b1 + a2 * b0
            out[ch, 3] += a1 * b2 + a2 * b1
            out[ch, 4] += a2 * b2
    return out
