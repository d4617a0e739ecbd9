"""Streaming enumeration of integer cells tied by exact sums (any overlapping rows).

Plain arrays in, plain arrays out.  Unknown cells ``x_0 .. x_{n-1}``: cell ``i`` takes
``lo[i] + w`` for ``w < W[i]`` with log-weight ``lw[i, w]`` (``-inf``: impossible;
entries of ``lw`` past ``W[i]`` are ignored).  Constraints: ``m`` rows, row ``r`` says
that the cells ``indices[indptr[r]:indptr[r+1]]`` sum to ``target[r]`` (all coefficients
+1, a cell at most once per row, any cell in any number of rows: a table with its
margins, a hierarchy with its subtotals, several linked tables).  A *candidate* is an
assignment with every cell in its window, every row exact and a finite total log-weight
``sum_i lw[i, x_i - lo[i]]``.  A row with no cells holds only with target 0.

The walk is a depth-first search over the cells, storing no candidate.  Its state is,
per row, the residual (target minus what is assigned), the number of unassigned cells
and the least / most the unassigned cells can still add (the sums of their smallest /
largest *support* values, the support of a cell being where its log-weight is finite).
A value ``v`` is allowed for cell ``i`` only if for every row ``r`` through ``i`` the
residual minus ``v`` stays between the least and the most the other unassigned cells of
``r`` can add; this invariant holds for every row at every node, so every leaf meets
every row exactly.  When a row is down to one unassigned cell, that cell's value is
forced: it is assigned at once (checked against its support and all its other rows),
which may force further cells (propagation), so a dead branch is cut as soon as any row
rules it out rather than when its cell's turn comes.  Decisions follow ``order`` (the
next unassigned cell in it); :func:`suggest_order` gives an order in which rows close
early.  Feasibility and the count are decided from the supports only, never from
floating-point weights, so a weight too small for a float still counts its candidate.

Cells in no row are independent of everything: unless candidates are kept
(``keep > 0``) they are left out of the walk and enter in closed form (their pmf is
their normalised weight, their log-partition is added to ``log_z``, the number of their
support values multiplies the count).  With ``keep > 0`` they are enumerated like the
others so that every kept candidate is a whole assignment.

Weights: the log-weight of the path is kept per level (a decision plus the cells it
forced); a leaf adds ``exp(logw - ref)``, ``ref`` being the first leaf's log-weight,
raised (and every accumulator rescaled) whenever a leaf exceeds it by more than
``_HEADROOM`` nats, so nothing overflows and a leaf that underflows is below e^-745 of
one already counted.  A leaf costs O(1): the weight of the leaves below a level is
credited to the values that level assigned (its decision and its forced cells) when the
walk leaves it, so a level costs O(cells it assigns) once, not once per leaf below it.
The walk is iterative (explicit stack), its depth unlimited by recursion.

:func:`enumerate_sums` returns the tuple

``(count, overflow, n_leaves, n_nodes, complete, log_z, probs, kept, kept_lw, all_kept)``

* ``count`` (float64): number of candidates, exact up to 2**53;
* ``overflow`` (bool): ``count`` passed 2**53 (then it is only approximate);
* ``n_leaves`` (int64): leaves the walk reached (= candidates found, when no cell is
  free in closed form);
* ``n_nodes`` (int64): assignments the walk made (decisions and forced values, those
  of dead branches included): the work done;
* ``complete`` (bool): the walk finished; False when it stopped at ``max_leaves`` /
  ``max_nodes``, and then every other result covers only the leaves visited;
* ``log_z`` (float64): log of the sum over candidates of their weights (``-inf`` when
  there is none);
* ``probs`` (n, Wmax) float64: ``probs[i, w]`` the posterior probability that cell ``i``
  equals ``lo[i] + w`` (rows sum to 1 when ``log_z`` is finite; all 0 otherwise);
* ``kept`` (k, n) int64 and ``kept_lw`` (k,) float64: the first ``k <= keep``
  candidates found (cell values, not offsets) and their log-weights;
* ``all_kept`` (bool): the walk was complete and every candidate was kept.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

__all__ = ["enumerate_sums", "suggest_order"]

#: a leaf more than this many nats above the reference log-weight becomes the reference
_HEADROOM = 30.0
_EXACT = 2.0 ** 53


@njit
def _finite(x):
    return x > -np.inf and x < np.inf


@njit
def _window(c, smin, smax, cptr, crows, res, minrest, maxrest):
    """Values (an interval) of unassigned cell ``c`` that keep every row through it
    completable by its other unassigned cells."""
    a = smin[c]
    b = smax[c]
    for k in range(cptr[c], cptr[c + 1]):
        r = crows[k]
        a = max(a, res[r] - (maxrest[r] - smax[c]))
        b = min(b, res[r] - (minrest[r] - smin[c]))
    return a, b


@njit
def _assign(c, v, smin, smax, cptr, crows, res, nfree, minrest, maxrest, idsum, val,
            assigned):
    val[c] = v
    assigned[c] = True
    for k in range(cptr[c], cptr[c + 1]):
        r = crows[k]
        res[r] -= v
        nfree[r] -= 1
        minrest[r] -= smin[c]
        maxrest[r] -= smax[c]
        idsum[r] -= c


@njit
def _unassign(c, smin, smax, cptr, crows, res, nfree, minrest, maxrest, idsum, val,
              assigned):
    v = val[c]
    assigned[c] = False
    for k in range(cptr[c], cptr[c + 1]):
        r = crows[k]
        res[r] += v
        nfree[r] += 1
        minrest[r] += smin[c]
        maxrest[r] += smax[c]
        idsum[r] += c


@njit
def _force(r, lo, lw, smin, smax, cptr, crows, res, nfree, minrest, maxrest, idsum, val,
           assigned):
    """Row ``r`` has one unassigned cell: assign it its forced value if that is in its
    support and keeps every other row through it completable; returns the cell or -1."""
    c = idsum[r]
    f = res[r]
    a, b = _window(c, smin, smax, cptr, crows, res, minrest, maxrest)
    if f < a or f > b or not _finite(lw[c, f - lo[c]]):
        return -1
    _assign(c, f, smin, smax, cptr, crows, res, nfree, minrest, maxrest, idsum, val,
            assigned)
    return c


@njit
def _propagate(q, tl, trail, lo, lw, smin, smax, cptr, crows, res, nfree, minrest,
               maxrest, idsum, val, assigned):
    """Assign every value forced by the cells ``trail[q:tl]`` (and by those it forces in
    turn), appending them to the trail; returns (ok, new trail length)."""
    while q < tl:
        x = trail[q]
        q += 1
        for k in range(cptr[x], cptr[x + 1]):
            r = crows[k]
            if nfree[r] == 1:
                c = _force(r, lo, lw, smin, smax, cptr, crows, res, nfree, minrest, maxrest,
                           idsum, val, assigned)
                if c < 0:
                    return False, tl
                trail[tl] = c
                tl += 1
    return True, tl


@njit
def _credit(hist, trail, a, b, val, lo, s):
    if s != 0.0:
        for k in range(a, b):
            j = trail[k]
            hist[j, val[j] - lo[j]] += s


@njit
def enumerate_sums(lo, W, lw, indptr, indices, target, order, keep=0, max_leaves=0,
                   max_nodes=0):
    """Count, weigh and marginalise every assignment of the cells meeting the rows.

    Parameters
    ----------
    lo, W : (n,) int64
        Cell ``i`` takes ``lo[i] + w`` for ``0 <= w < W[i]``.
    lw : (n, Wmax) float64
        ``lw[i, w]`` the log-weight of that value (``-inf``: impossible; columns from
        ``W[i]`` on are ignored).
    indptr : (m + 1,) int64
    indices : int64
        The rows in CSR form: row ``r`` holds the cells ``indices[indptr[r]:indptr[r+1]]``,
        each at most once.
    target : (m,) int64
        What each row's cells sum to.
    order : (n,) int64
        A permutation of the cells: decisions take the next unassigned cell in it
        (:func:`suggest_order`).
    keep : int
        Store up to this many candidates (0: none; then cells in no row are summed out in
        closed form).
    max_leaves, max_nodes : int
        When > 0, stop (``complete`` False) instead of reaching leaf ``max_leaves + 1``, or
        before a decision once the walk has made ``max_nodes`` assignments (so it may
        pass it by the values one decision forces).

    Returns
    -------
    tuple
        ``(count, overflow, n_leaves, n_nodes, complete, log_z, probs, kept, kept_lw,
        all_kept)``, as described in the module docstring.

    Raises
    ------
    ValueError
        When the shapes disagree, ``indptr`` / ``indices`` are not a valid CSR over the
        cells (a cell twice in a row included), a width is outside ``[0, Wmax]`` or
        ``order`` is not a permutation.
    """
    n = lo.shape[0]
    Wmax = lw.shape[1]
    m = indptr.shape[0] - 1
    if m < 0 or W.shape[0] != n or lw.shape[0] != n or order.shape[0] != n \
            or target.shape[0] != m:
        raise ValueError("shapes disagree: need lo, W, order (n,), lw (n, Wmax), "
                         "indptr (m + 1,), target (m,)")
    if indptr[0] != 0 or indptr[m] != indices.shape[0]:
        raise ValueError("indptr must start at 0 and end at len(indices)")
    for r in range(m):
        if indptr[r + 1] < indptr[r]:
            raise ValueError("indptr must be nondecreasing")
    for i in range(n):
        if W[i] < 0 or W[i] > Wmax:
            raise ValueError("every window width W[i] must lie in [0, lw.shape[1]]")
    seen = np.full(n, -1, np.int64)
    for i in range(n):
        c = order[i]
        if c < 0 or c >= n or seen[c] >= 0:
            raise ValueError("order must be a permutation of 0..n-1")
        seen[c] = i
    seen[:] = -1
    for r in range(m):
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            if c < 0 or c >= n:
                raise ValueError("indices must be cell ids in 0..n-1")
            if seen[c] == r:
                raise ValueError("a cell may appear at most once in a row")
            seen[c] = r
    nkeep = max(keep, 0)

    probs = np.zeros((n, Wmax))
    kept = np.zeros((nkeep, n), np.int64)
    kept_lw = np.zeros(nkeep)

    # supports; an empty support: no candidate
    feasible = True
    smin = np.empty(n, np.int64)
    smax = np.empty(n, np.int64)
    for i in range(n):
        first = -1
        last = -1
        for w in range(W[i]):
            if _finite(lw[i, w]):
                if first < 0:
                    first = w
                last = w
        smin[i] = lo[i] + first
        smax[i] = lo[i] + last
        if first < 0:
            feasible = False

    # the rows through each cell (CSR transpose)
    cptr = np.zeros(n + 1, np.int64)
    for k in range(indices.shape[0]):
        cptr[indices[k] + 1] += 1
    for i in range(n):
        cptr[i + 1] += cptr[i]
    crows = np.empty(indices.shape[0], np.int64)
    fill = cptr[:n].copy()
    for r in range(m):
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            crows[fill[c]] = r
            fill[c] += 1

    # cells in no row, in closed form (unless whole candidates are kept)
    skip = np.zeros(n, np.bool_)
    free_lz = 0.0
    free_mult = 1.0
    if nkeep == 0 and feasible:
        for i in range(n):
            if cptr[i + 1] == cptr[i]:
                skip[i] = True
                mx = -np.inf
                cnt = 0
                for w in range(W[i]):
                    if _finite(lw[i, w]):
                        mx = max(mx, lw[i, w])
                        cnt += 1
                s = 0.0
                for w in range(W[i]):
                    if _finite(lw[i, w]):
                        s += np.exp(lw[i, w] - mx)
                for w in range(W[i]):
                    if _finite(lw[i, w]):
                        probs[i, w] = np.exp(lw[i, w] - mx) / s
                free_lz += mx + np.log(s)
                free_mult *= cnt

    # the row state; every row must be completable at the root
    res = target.copy()
    nfree = np.zeros(m, np.int64)
    minrest = np.zeros(m, np.int64)
    maxrest = np.zeros(m, np.int64)
    idsum = np.zeros(m, np.int64)
    for r in range(m):
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            nfree[r] += 1
            minrest[r] += smin[c]
            maxrest[r] += smax[c]
            idsum[r] += c
        if feasible and (res[r] < minrest[r] or res[r] > maxrest[r]):
            feasible = False

    val = np.zeros(n, np.int64)
    assigned = np.zeros(n, np.bool_)
    trail = np.empty(n, np.int64)
    tl = 0
    n_nodes = 0
    # root: the values forced by rows of one cell, and what they force
    if feasible:
        for r in range(m):
            if nfree[r] == 1:
                c = _force(r, lo, lw, smin, smax, cptr, crows, res, nfree, minrest, maxrest,
                           idsum, val, assigned)
                if c < 0:
                    feasible = False
                    break
                trail[tl] = c
                tl += 1
                ok, tl = _propagate(tl - 1, tl, trail, lo, lw, smin, smax, cptr, crows, res,
                                    nfree, minrest, maxrest, idsum, val, assigned)
                if not ok:
                    feasible = False
                    break
        n_nodes += tl

    hist = np.zeros((n, Wmax))
    n_leaves = 0
    n_cand = 0
    n_kept = 0
    complete = True
    ref = -np.inf
    # per level (0 = root, d >= 1 = the d-th decision): its cell, value, last value to
    # try, position in ``order``, trail start, path log-weight, weight of leaves below
    dc = np.zeros(n + 1, np.int64)
    dv = np.zeros(n + 1, np.int64)
    dhi = np.zeros(n + 1, np.int64)
    op = np.full(n + 1, -1, np.int64)
    ts = np.zeros(n + 2, np.int64)
    wl = np.zeros(n + 1)
    sub = np.zeros(n + 1)
    D = 0
    if feasible:
        for k in range(tl):
            j = trail[k]
            wl[0] += lw[j, val[j] - lo[j]]
        ts[1] = tl
        descend = True
        while True:
            if descend:
                p = op[D] + 1
                while p < n and (assigned[order[p]] or skip[order[p]]):
                    p += 1
                if p < n:                      # a new decision level
                    D += 1
                    c = order[p]
                    a, b = _window(c, smin, smax, cptr, crows, res, minrest, maxrest)
                    dc[D] = c
                    op[D] = p
                    dv[D] = a - 1
                    dhi[D] = b
                    ts[D] = tl
                    sub[D] = 0.0
                    descend = False
                    continue
                # a leaf: every cell assigned, every row exact
                if max_leaves > 0 and n_leaves >= max_leaves:
                    complete = False
                    break
                n_leaves += 1
                w = wl[D]
                if _finite(w):
                    n_cand += 1
                    if w > ref + _HEADROOM:    # a new reference: rescale everything
                        f = np.exp(ref - w) if ref > -np.inf else 0.0
                        hist *= f
                        for e in range(D + 1):
                            sub[e] *= f
                        ref = w
                    sub[D] += np.exp(w - ref)
                    if n_kept < nkeep:
                        kept[n_kept, :] = val
                        kept_lw[n_kept] = w
                        n_kept += 1
                if D == 0:
                    break
                # leave the level's value: credit it, hand its weight down, undo it
                _credit(hist, trail, ts[D], tl, val, lo, sub[D])
                sub[D - 1] += sub[D]
                sub[D] = 0.0
                while tl > ts[D]:
                    tl -= 1
                    _unassign(trail[tl], smin, smax, cptr, crows, res, nfree, minrest,
                              maxrest, idsum, val, assigned)
                descend = False
                continue
            # try the next value of level D's cell
            c = dc[D]
            v = dv[D] + 1
            found = False
            stop = False
            while v <= dhi[D]:
                if _finite(lw[c, v - lo[c]]):
                    if max_nodes > 0 and n_nodes >= max_nodes:
                        stop = True
                        break
                    _assign(c, v, smin, smax, cptr, crows, res, nfree, minrest, maxrest,
                            idsum, val, assigned)
                    trail[tl] = c
                    tl += 1
                    ok, tl = _propagate(tl - 1, tl, trail, lo, lw, smin, smax, cptr, crows,
                                        res, nfree, minrest, maxrest, idsum, val, assigned)
                    n_nodes += tl - ts[D]
                    if ok:
                        found = True
                        break
                    while tl > ts[D]:
                        tl -= 1
                        _unassign(trail[tl], smin, smax, cptr, crows, res, nfree, minrest,
                                  maxrest, idsum, val, assigned)
                v += 1
            if stop:
                complete = False
                break
            if found:
                dv[D] = v
                s = wl[D - 1]
                for k in range(ts[D], tl):
                    j = trail[k]
                    s += lw[j, val[j] - lo[j]]
                wl[D] = s
                descend = True
                continue
            # level D exhausted: back to the level below, leave its value
            D -= 1
            if D == 0:
                break
            _credit(hist, trail, ts[D], ts[D + 1], val, lo, sub[D])
            sub[D - 1] += sub[D]
            sub[D] = 0.0
            while tl > ts[D]:
                tl -= 1
                _unassign(trail[tl], smin, smax, cptr, crows, res, nfree, minrest, maxrest,
                          idsum, val, assigned)
        # stopped early: credit the values still on the path (the top level may hold none)
        end = tl
        for e in range(D, 0, -1):
            _credit(hist, trail, ts[e], end, val, lo, sub[e])
            sub[e - 1] += sub[e]
            end = ts[e]
        _credit(hist, trail, 0, end, val, lo, sub[0])

    total = sub[0]
    count = n_cand * free_mult if n_cand > 0 else 0.0
    overflow = count > _EXACT
    log_z = -np.inf
    if n_cand > 0 and total > 0.0:
        log_z = ref + np.log(total) + free_lz
        for i in range(n):
            if not skip[i]:
                for w in range(Wmax):
                    probs[i, w] = hist[i, w] / total
    else:
        probs[:, :] = 0.0
    all_kept = complete and n_kept == count
    return (count, overflow, n_leaves, n_nodes, complete, log_z, probs,
            kept[:n_kept].copy(), kept_lw[:n_kept].copy(), all_kept)


def suggest_order(indptr, indices, n: int) -> np.ndarray:
    """A decision order for :func:`enumerate_sums` in which rows close early.

    Greedy: repeatedly take the row with the fewest unassigned cells (ties: the lowest row
    index) and pick next its unassigned cell that lies in the most rows (ties: the lowest
    cell id).  A row is thus finished (its last cell forced) soon after it is started, and
    once one row of a table is done its crossing rows are the shortest, so the walk moves
    on to them; a cell in many rows goes first among equals because its value constrains
    the most.  Cells in no row come last, by id.

    Parameters
    ----------
    indptr, indices : array_like of int
        The rows in CSR form, as for :func:`enumerate_sums`.
    n : int
        The number of cells.

    Returns
    -------
    numpy.ndarray
        An int64 permutation of ``0 .. n-1``.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    m = indptr.size - 1
    rows_of = [[] for _ in range(n)]
    for r in range(m):
        for c in indices[indptr[r]:indptr[r + 1]]:
            rows_of[c].append(r)
    deg = np.bincount(indices, minlength=n).astype(np.int64)
    left = np.diff(indptr).astype(np.float64)        # unassigned cells per row
    left[left == 0] = np.inf
    done = np.zeros(n, dtype=bool)
    order = []
    while m > 0 and np.isfinite(left).any():
        r = int(np.argmin(left))
        cells = np.sort(indices[indptr[r]:indptr[r + 1]])
        cells = cells[~done[cells]]
        c = int(cells[np.argmax(deg[cells])])
        done[c] = True
        order.append(c)
        for s in rows_of[c]:
            left[s] -= 1
            if left[s] == 0:
                left[s] = np.inf
    order.extend(np.flatnonzero(~done).tolist())
    return np.asarray(order, dtype=np.int64)
