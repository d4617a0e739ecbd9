"""Candidate tables by explicit enumeration, and posteriors over explicit lists of tables.

Plain Python / NumPy recursions over the cells (every leaf checked against every
constraint again), weights summed table by table; no code shared with riskengine.

* :func:`tables_with_windows` -- 2-D tables with cell, row, column and grand-total windows
  (controlled rounding, margins only);
* :func:`tables_with_2way_margins` -- 3-D tables with given 2-way margins;
* :func:`count_tables_with_windows` -- the number of 2-D tables in a table DP's windows,
  column by column in Python integers (counts beyond 64 and 128 bits);
* :func:`posterior_over_tables`, :func:`posterior_weights`, :func:`cell_pmfs`,
  :func:`dense_cell_pmfs` -- normalised weights and per-cell / per-total pmfs;
* log priors: :func:`poisson_log_prior`, :func:`uniform_log_prior` (of a whole table) and
  :func:`poisson_cell_log_weights`, :func:`uniform_cell_log_weights` (cell by cell).
"""

from __future__ import annotations

import itertools

import numpy as np

# --- enumeration ---------------------------------------------------------------------------


def tables_with_windows(cell_lo, cell_hi, row_rng, col_rng, grand_rng):
    """Every integer table with cell_lo <= x <= cell_hi whose row, column and grand totals
    lie in the given inclusive ranges (lists of (lo, hi)).  Row-major recursion; partial
    sums are pruned only by what the remaining cells can still add, and every yielded
    table is checked against all constraints again."""
    r, c = cell_lo.shape
    x = np.zeros((r, c), dtype=np.int64)

    def rec(k):
        if k == r * c:
            R, C, N = x.sum(1), x.sum(0), x.sum()
            if all(lo <= R[i] <= hi for i, (lo, hi) in enumerate(row_rng)) and \
               all(lo <= C[j] <= hi for j, (lo, hi) in enumerate(col_rng)) and \
               grand_rng[0] <= N <= grand_rng[1]:
                yield x.copy()
            return
        i, j = divmod(k, c)
        for v in range(int(cell_lo[i, j]), int(cell_hi[i, j]) + 1):
            x[i, j] = v
            rs = x[i, :j + 1].sum()
            if rs + cell_lo[i, j + 1:].sum() > row_rng[i][1] or \
               rs + cell_hi[i, j + 1:].sum() < row_rng[i][0]:
                continue
            cs = x[:i + 1, j].sum()
            if cs + cell_lo[i + 1:, j].sum() > col_rng[j][1] or \
               cs + cell_hi[i + 1:, j].sum() < col_rng[j][0]:
                continue
            yield from rec(k + 1)
        x[i, j] = 0

    yield from rec(0)


def tables_with_2way_margins(ab, ac, bc):
    """Every nonnegative integer 3-D table (dims a, b, c) with the 2-way margins ``ab``
    (sum over c), ``ac`` (over b) and ``bc`` (over a), in row-major order.  Cell-by-cell
    recursion: each value at most what is left of the three margins through the cell, the
    last cell of each (a, b) line taking what is left of that line; every leaf checked
    against all three margins."""
    ab, ac, bc = np.asarray(ab), np.asarray(ac), np.asarray(bc)
    shape = ab.shape + (ac.shape[1],)
    cells = list(np.ndindex(*shape))
    T = np.zeros(shape, np.int64)
    out = []

    def rec(n):
        if n == len(cells):
            if (np.array_equal(T.sum(2), ab) and np.array_equal(T.sum(1), ac)
                    and np.array_equal(T.sum(0), bc)):
                out.append(T.copy())
            return
        i, j, k = cells[n]
        left = int(ab[i, j] - T[i, j].sum())
        room = min(left, int(ac[i, k] - T[i, :, k].sum()), int(bc[j, k] - T[:, j, k].sum()))
        values = range(room + 1)
        if k == shape[2] - 1:
            values = [left] if 0 <= left <= room else []
        for v in values:
            T[i, j, k] = v
            rec(n + 1)
        T[i, j, k] = 0

    rec(0)
    return out


def _allowed(lo, lw):
    """The values lo + w of a window whose log weight lw[w] is finite."""
    return [int(lo) + w for w in range(lw.shape[-1]) if np.isfinite(lw[w])]


def count_tables_with_windows(win) -> int:
    """Number of 2-D tables whose cells, row totals, column totals and grand total take
    allowed values.  ``win`` has the fields of the table DP's windows: ``cell_lo`` (r, c)
    and ``cell_lw`` (r, c, W) (value cell_lo + w allowed where cell_lw[..., w] is finite),
    ``row_lo`` / ``row_lw``, ``col_lo`` / ``col_lw``, ``grand_lo`` / ``grand_lw`` alike.

    Column by column in Python integers (numpy object arrays) over arrays of partial row
    sums: each column adds every allowed vector of cell values whose sum is an allowed
    column total; the row totals and the grand total are filtered at the end.  With every
    column total fixed the last row is implied and only rows 0..r-2 are tracked."""
    ok = np.isfinite(win.cell_lw)
    r, c, W = ok.shape
    cols = [_allowed(win.col_lo[j], win.col_lw[j]) for j in range(c)]
    implied = r > 1 and all(len(x) == 1 for x in cols)
    kept = r - 1 if implied else r
    row_max = [int(win.cell_lo[i].sum()) + c * (W - 1) for i in range(kept)]
    arr = np.zeros([m + 1 for m in row_max], dtype=object)
    arr[(0,) * kept] = 1
    for j in range(c):
        vals = [[int(win.cell_lo[i, j]) + w for w in range(W) if ok[i, j, w]] for i in range(r)]
        new = np.zeros_like(arr)
        for x in itertools.product(*vals[:kept]):
            if implied:
                last = cols[j][0] - sum(x)
                if last not in vals[r - 1]:
                    continue
            elif sum(x) not in cols[j]:
                continue
            dst = tuple(slice(v, None) for v in x)
            src = tuple(slice(0, m + 1 - v) for v, m in zip(x, row_max))
            new[dst] += arr[src]
        arr = new
    rows = [set(_allowed(win.row_lo[i], win.row_lw[i])) for i in range(r)]
    grand = set(_allowed(win.grand_lo, win.grand_lw))
    col_sum = sum(x[0] for x in cols) if implied else None
    total = 0
    for idx in zip(*np.nonzero(arr != 0)):
        sums = [int(v) for v in idx]
        if implied:
            sums.append(col_sum - sum(sums))
        if all(v in rows[i] for i, v in enumerate(sums)) and sum(sums) in grand:
            total += arr[idx]
    return int(total)


# --- posteriors over explicit tables -------------------------------------------------------


def posterior_weights(tables, log_weight):
    """Normalised weights exp(log_weight(T)) / sum over an explicit list of tables."""
    ws = np.array([log_weight(t) for t in tables])
    ws = np.exp(ws - ws.max())
    return ws / ws.sum()


def posterior_over_tables(tables, log_weight):
    """Normalised posterior over an explicit list of 2-D tables (tables of weight 0
    dropped; None when none is left): {"n", "log_z", "cells", "rows", "cols", "grand"},
    the last four pmfs as dicts value -> probability (cells keyed by index)."""
    ws = np.array([log_weight(T) for T in tables])
    keep = np.isfinite(ws)
    tables = [T for T, k in zip(tables, keep) if k]
    ws = ws[keep]
    if not tables:
        return None
    mx = ws.max()
    p = np.exp(ws - mx)
    Z = p.sum()
    p = p / Z
    shape = tables[0].shape
    cells = {idx: {} for idx in np.ndindex(*shape)}
    rows = [{} for _ in range(shape[0])]
    cols = [{} for _ in range(shape[1])]
    grand = {}
    for T, q in zip(tables, p):
        for idx in np.ndindex(*shape):
            cells[idx][int(T[idx])] = cells[idx].get(int(T[idx]), 0.0) + q
        for i, v in enumerate(T.sum(1)):
            rows[i][int(v)] = rows[i].get(int(v), 0.0) + q
        for j, v in enumerate(T.sum(0)):
            cols[j][int(v)] = cols[j].get(int(v), 0.0) + q
        grand[int(T.sum())] = grand.get(int(T.sum()), 0.0) + q
    return {"n": len(tables), "log_z": float(np.log(Z) + mx), "cells": cells, "rows": rows,
            "cols": cols, "grand": grand}


def cell_pmfs(post, shape):
    """Per-cell pmf dict: cell index -> {value: prob}, from a posterior dict
    key -> (table, probability) (as :func:`tests.reference.cyclic.cyclic_brute` returns)."""
    out = {idx: {} for idx in np.ndindex(*shape)}
    for T, p in post.values():
        for idx in np.ndindex(*shape):
            v = int(T[idx])
            out[idx][v] = out[idx].get(v, 0.0) + p
    return out


def dense_cell_pmfs(pm, shape, vmax):
    """The pmf dicts of :func:`cell_pmfs` as one array shape + (vmax + 1,) (values 0..vmax)."""
    out = np.zeros(shape + (vmax + 1,))
    for idx, d in pm.items():
        for v, p in d.items():
            out[idx + (v,)] = p
    return out


# --- log priors --------------------------------------------------------------------------


def poisson_log_prior(rate):
    """log prod_cells Poisson(T; rate) (scipy.stats.poisson.logpmf; ``rate`` a scalar or
    an array of the table's shape)."""
    from scipy import stats

    def lp(T):
        return float(np.sum(stats.poisson.logpmf(T, np.broadcast_to(rate, T.shape))))
    return lp


def uniform_log_prior(T):
    """A uniform prior: log weight 0 for every table."""
    return 0.0


def poisson_cell_log_weights(rate):
    """Cell by cell: y log(rate) - log(y!) (the Poisson log pmf up to its constant -rate),
    the factorial summed as logs of 1..y."""
    def lw(y):
        return y * np.log(rate) - np.array(
            [np.sum(np.log(np.arange(1, v + 1))) for v in y.ravel()]).reshape(y.shape)
    return lw


def uniform_cell_log_weights(y):
    """Cell by cell: log weight 0."""
    return np.zeros(y.shape)
