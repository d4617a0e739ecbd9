"""Block Gibbs over integer cells tied by exact sums: redraw a few groups of cells at once.

Plain arrays in, plain arrays out.  The state ``x`` (n,) int64 meets ``m`` rows exactly
(row ``r``: the cells ``ridx[rptr[r]:rptr[r+1]]`` sum to ``tgt[r]``) and lies in the box
``lb <= x <= ub``; its weight is ``exp(sum_i lw[i, x_i - lb[i]])``.  The cells fall into
``G`` groups (``gcells[gptr[g]:gptr[g+1]]``: in a census unit, the blocks of a tract).

A step picks ``k`` groups at random, independently of the state -- two, then one more
with probability ``p_more`` each time (a geometric number: three with probability
``p_more``, four with ``p_more**2`` ...; at most ``max_groups``) -- and redraws every
cell ``S`` of them from its exact conditional law given the
others: the rows through ``S`` with the rest's contribution taken out are the rows of a
smaller system, whose every solution :func:`kernels.sum_enum.enumerate_sums` lists with
its log-weight; one is drawn in proportion to its weight.  When that system has more than
``max_kept`` solutions, or its walk passes ``max_nodes`` assignments, the step leaves
``S`` as it is.  Whether it does depends only on the cells outside ``S``, which the step
does not change, so each step is a mixture of the exact conditional redraw and the
identity with weights fixed by the rest of the state: the target law stays invariant.
Reaching every table is not proven in general: a redraw of every group is an exact
draw of the whole table whenever its solutions fit the caps (small systems: the chain
then reaches every table), but on large ones the redraws that fit take a few groups.  The
caller starts chains from dispersed tables and checks their agreement.

*Box steps.*  Where the cells carry codes on other dims (``bcodes``: in a census unit
sex, age, race, ...), a step is, with probability ``p_box``, a redraw of a *box*: the
cells of the ``k`` groups whose code on every such dim is among ``t`` codes drawn at
random for it (``t`` uniform in ``take_min .. take_max`` for the step; all of a dim's
codes when it has no more).  In a 2-D table of counts (groups the columns, the box dim
the rows) a box of ``t = 2`` is the heat-bath step of a basic 2 x 2 move, whose
solutions are at most one more than the smallest of the four cells' windows; the basic
moves connect every table with the same margins (Diaconis and Sturmfels 1998).  Two blocks'
whole cells can have more solutions than the caps allow where a block's types are only
tied by coarse tables (race published by tract alone: each block's race by age is free
up to its totals), while the moves that exchange two persons' race and origin between
two blocks (degree 8: two ages, two races, two origins, two blocks) fit in a box of a
few dozen cells.  The box, like the groups, is drawn independently of the state, so the
step is again the exact conditional redraw of a set of cells chosen at random: the target
law stays invariant.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .sum_enum import enumerate_sums

__all__ = ["redraw"]


@njit
def _pick(G, k, buf):
    """``k`` distinct groups out of ``G`` into ``buf[:k]`` (partial Fisher-Yates)."""
    for j in range(G):
        buf[j] = j
    for j in range(k):
        s = j + np.random.randint(G - j)
        t = buf[j]
        buf[j] = buf[s]
        buf[s] = t


@njit
def redraw(x, lb, ub, lw, gptr, gcells, rptr, ridx, tgt, cptr, crow, steps, p_more,
           max_groups, max_kept, max_nodes, seed, out, every, bcodes, bsize, p_box, take_min,
           take_max):
    """Run ``steps`` block redraws on ``x`` in place (see the module).

    Parameters
    ----------
    x : (n,) int64
        A table meeting every row and the box; changed in place.
    lb, ub : (n,) int64
        The box.
    lw : (n, Wmax) float64
        ``lw[i, w]``: log-weight of ``x_i = lb[i] + w`` (``w <= ub[i] - lb[i]``).
    gptr, gcells : int64
        The groups: group ``g`` holds cells ``gcells[gptr[g]:gptr[g+1]]`` (disjoint).
    rptr, ridx, tgt : int64
        The rows (CSR) and their sums.
    cptr, crow : int64
        The rows through each cell (cell ``i``: ``crow[cptr[i]:cptr[i+1]]``).
    steps : int
    p_more : float
        Probability of taking one more group, after the first two (repeated).
    max_groups : int
        The most groups one step takes (at least 2; past ``G``: ``G``).
    max_kept, max_nodes : int
        The caps of one redraw's enumeration.
    seed : int
        Seeds this thread's generator at the start.
    out : (k, n) int64
        ``out[j]`` receives ``x`` after step ``(j + 1) * every - 1`` (``every`` 0: none).
    every : int
    bcodes : (n, D) int64
        Each cell's code on the box dims (``0 .. bsize[d] - 1``; ``D`` may be 0).
    bsize : (D,) int64
        The number of codes of each box dim.
    p_box : float
        Probability that a step redraws a box rather than whole groups (no box dims:
        every step takes whole groups).
    take_min, take_max : int
        Codes a box takes on each dim: one number ``t`` per box step, uniform in
        ``take_min .. take_max`` (at least 1), each dim taking ``min(t, bsize[d])``.

    Returns
    -------
    (moved, redrawn, skipped, boxes) : int64
        Steps that changed ``x``; steps whose subsystem was enumerated whole (its
        solutions drawn from); steps that left ``S`` because a cap was reached; box
        steps.
    """
    np.random.seed(seed)
    n = x.size
    G = gptr.size - 1
    M = rptr.size - 1
    pos = np.full(n, -1, np.int64)         # cell -> its place in S, -1 outside
    rmark = np.zeros(M, np.bool_)
    Sa = np.empty(n, np.int64)
    rows = np.empty(M, np.int64)
    lidx = np.empty(ridx.size, np.int64)
    pick = np.empty(max(G, 2), np.int64)
    kmax = min(max(max_groups, 2), G)
    D = bsize.size
    smax = 1
    for d in range(D):
        smax = max(smax, bsize[d])
    cmark = np.zeros((max(D, 1), smax), np.bool_)      # the box's codes on each dim
    cbuf = np.empty(smax, np.int64)
    moved = 0
    redrawn = 0
    skipped = 0
    boxes = 0
    kept_i = 0
    if G < 2:
        return moved, redrawn, skipped, boxes
    for step in range(steps):
        k = 2
        while k < kmax and np.random.random() < p_more:
            k += 1
        box = D > 0 and np.random.random() < p_box
        if box:
            boxes += 1
            tk = max(take_min, 1)
            if take_max > tk:
                tk += np.random.randint(take_max - tk + 1)
            for d in range(D):
                t = min(tk, bsize[d])
                _pick(bsize[d], t, cbuf)
                for j in range(bsize[d]):
                    cmark[d, j] = False
                for j in range(t):
                    cmark[d, cbuf[j]] = True
        _pick(G, k, pick)
        ns = 0
        for j in range(k):
            g = pick[j]
            for p in range(gptr[g], gptr[g + 1]):
                c = gcells[p]
                if box:
                    inside = True
                    for d in range(D):
                        if not cmark[d, bcodes[c, d]]:
                            inside = False
                            break
                    if not inside:
                        continue
                Sa[ns] = c
                pos[c] = ns
                ns += 1
        # the rows through S, their cells in S and what S must add up to
        nr = 0
        for j in range(ns):
            c = Sa[j]
            for p in range(cptr[c], cptr[c + 1]):
                r = crow[p]
                if not rmark[r]:
                    rmark[r] = True
                    rows[nr] = r
                    nr += 1
        lptr = np.zeros(nr + 1, np.int64)
        ltg = np.zeros(nr, np.int64)
        nl = 0
        for q in range(nr):
            r = rows[q]
            rmark[r] = False
            t = tgt[r]
            for p in range(rptr[r], rptr[r + 1]):
                c = ridx[p]
                if pos[c] >= 0:
                    lidx[nl] = pos[c]
                    nl += 1
                else:
                    t -= x[c]
            ltg[q] = t
            lptr[q + 1] = nl
        if ns > 0 and nr > 0:
            slo = np.empty(ns, np.int64)
            sW = np.empty(ns, np.int64)
            Wm = 1
            for j in range(ns):
                c = Sa[j]
                slo[j] = lb[c]
                sW[j] = ub[c] - lb[c] + 1
                Wm = max(Wm, sW[j])
            slw = np.full((ns, Wm), -np.inf)
            for j in range(ns):
                c = Sa[j]
                for w in range(sW[j]):
                    slw[j, w] = lw[c, w]
            order = np.arange(ns)
            res = enumerate_sums(slo, sW, slw, lptr, lidx[:nl].copy(), ltg, order,
                                 max_kept, max_kept, max_nodes)
            kept, klw, all_kept = res[7], res[8], res[9]
            if not all_kept:
                skipped += 1
            elif kept.shape[0] > 1:
                redrawn += 1
                mx = klw.max()
                tot = 0.0
                for i in range(klw.size):
                    tot += np.exp(klw[i] - mx)
                u = np.random.random() * tot
                i = 0
                acc = np.exp(klw[0] - mx)
                while acc < u and i < klw.size - 1:
                    i += 1
                    acc += np.exp(klw[i] - mx)
                change = False
                for j in range(ns):
                    if x[Sa[j]] != kept[i, j]:
                        change = True
                        x[Sa[j]] = kept[i, j]
                if change:
                    moved += 1
        for j in range(ns):
            pos[Sa[j]] = -1
        if every > 0 and (step + 1) % every == 0 and kept_i < out.shape[0]:
            out[kept_i] = x
            kept_i += 1
    return moved, redrawn, skipped, boxes
