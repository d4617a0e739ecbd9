"""Glue between releases of 2-D count tables and the exact table DP (kernels.table_dp).

Everything is described as log-weights over windows: every interior cell, every
row total, every column total and the grand total has a first value and a row
of log-weights (-inf = impossible).  ``solve`` returns the log evidence and the
marginal of every entry; ``count`` returns the exact number of tables with
positive weight (exact integers: the kernel adds 64-bit limbs with carries, with
enough limbs for an upper bound of the count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kernels import table_dp

# stored float64 states over all stages (posterior) or twice the largest stage (count)
_MAX_STATES = 2e8


@dataclass
class Windows:
    """Log-weight windows of every entry of a 2-D table with totals."""
    cell_lo: np.ndarray      # (r, c) int64
    cell_lw: np.ndarray      # (r, c, W) float
    row_lo: np.ndarray       # (r,)
    row_lw: np.ndarray       # (r, Wr)
    col_lo: np.ndarray       # (c,)
    col_lw: np.ndarray       # (c, Wc)
    grand_lo: int
    grand_lw: np.ndarray     # (Wg,)

    def trimmed(self) -> Windows:
        """Drop impossible values at the ends of every window (tighter DP state)."""
        def trim(lo, lw):
            fin = np.isfinite(lw)
            if not fin.any(axis=-1).all():
                raise _Empty()
            first = np.argmax(fin, axis=-1)
            last = lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
            W = int((last - first).max()) + 1
            idx = first[..., None] + np.arange(W)
            ok = idx <= last[..., None]
            vals = np.take_along_axis(lw, np.minimum(idx, lw.shape[-1] - 1), axis=-1)
            return lo + first, np.where(ok, vals, -np.inf)
        cl, cw = trim(self.cell_lo, self.cell_lw)
        rl, rw = trim(self.row_lo, self.row_lw)
        kl, kw = trim(self.col_lo, self.col_lw)
        gl, gw = trim(np.array(self.grand_lo), self.grand_lw)
        return Windows(cl, cw, rl, rw, kl, kw, int(gl), gw)


    def rows_permuted(self, perm) -> Windows:
        """The same windows with the rows in the order ``perm``."""
        return Windows(self.cell_lo[perm], self.cell_lw[perm], self.row_lo[perm],
                       self.row_lw[perm], self.col_lo, self.col_lw, self.grand_lo,
                       self.grand_lw)


def _largest_row_last(win: Windows):
    """With every total fixed the DP stores the last row's sum implicitly (through the
    column sum): put the row with the largest total last, the others keep their order."""
    r, _, derived = _prepare(win)
    perm = np.arange(r)
    if derived and r > 1:
        k = int(np.argmax(win.row_lo))
        perm = np.concatenate([perm[perm != k], [k]])
    return win.rows_permuted(perm), np.argsort(perm)


class _Empty(Exception):
    pass


def _prepare(win: Windows):
    r = win.cell_lo.shape[0]
    row_lo_hi = np.stack([win.row_lo, win.row_lo + win.row_lw.shape[1] - 1], axis=1)
    derived = (win.row_lw.shape[1] == 1 and win.col_lw.shape[1] == 1
               and win.grand_lw.shape[0] == 1)
    return r, row_lo_hi.astype(np.int64), derived


def _start_weights(win: Windows, indicator: bool):
    """init_fn for the DP: weights of every vector of row totals in a box, with the
    grand total's weight (a function of their sum).  Returns (fn, log scale)."""
    scale = [0.0]

    def fn(roff, rsize):
        r = len(rsize)
        lw = np.zeros(1)
        tot = np.zeros(1, np.int64)
        for i in range(r):
            vals = roff[i] + np.arange(rsize[i])
            k = vals - win.row_lo[i]
            row = np.full(rsize[i], -np.inf)
            ok = (k >= 0) & (k < win.row_lw.shape[1])
            row[ok] = win.row_lw[i, k[ok]]
            lw = (lw[:, None] + row[None, :]).ravel()
            tot = (tot[:, None] + vals[None, :]).ravel()
        g = tot - win.grand_lo
        gok = (g >= 0) & (g < win.grand_lw.shape[0])
        glw = np.full(lw.size, -np.inf)
        glw[gok] = win.grand_lw[g[gok]]
        lw = lw + glw
        fin = np.isfinite(lw)
        if indicator:
            return fin.astype(float)
        mx = lw[fin].max() if fin.any() else 0.0
        scale[0] = mx
        return np.where(fin, np.exp(lw - mx), 0.0)

    return fn, scale


def _scaled(lw):
    fin = np.isfinite(lw)
    mx = np.where(fin, lw, -np.inf).max(axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    return np.where(fin, np.exp(lw - mx[..., None]), 0.0), mx


def _col_starts(win: Windows, derived):
    c = win.col_lo.shape[0]
    if not derived:
        return np.zeros(c, np.int64)
    N = win.grand_lo
    return (N - np.concatenate([[0], np.cumsum(win.col_lo)[:-1]])).astype(np.int64)


def _args(win: Windows):
    r, row_lo_hi, derived = _prepare(win)
    init_fn, scale = _start_weights(win, indicator=False)
    init_ind, _ = _start_weights(win, indicator=True)
    cw, cmx = _scaled(win.cell_lw)
    kw, kmx = _scaled(win.col_lw)
    args = (init_fn, init_ind, row_lo_hi, win.cell_lo.astype(np.int64), cw,
            np.isfinite(win.cell_lw), win.col_lo.astype(np.int64), kw, np.isfinite(win.col_lw),
            derived, _col_starts(win, derived))
    return r, derived, args, scale, cmx.sum() + kmx.sum()


def _limbs(win: Windows, derived: bool) -> int:
    """64-bit limbs enough for the count: it is at most the product of the number of
    possible values of the cells that are not implied by the margins."""
    n = np.isfinite(win.cell_lw).sum(axis=-1)
    if derived:                        # last row and column follow from the fixed totals
        n = n[:-1, :-1]
    bound = math.prod(int(x) for x in n.ravel())
    return bound.bit_length() // 64 + 1


def states(win: Windows) -> tuple:
    """(largest stage, total) number of stored DP states, without running the DP."""
    try:
        win = win.trimmed()
    except _Empty:
        return 0.0, 0.0
    win, _ = _largest_row_last(win)
    _, derived, args, _, _ = _args(win)
    return table_dp.n_states(args[2], args[3], args[4], args[6], args[7], derived)


def solve(win: Windows, with_count: bool = False) -> dict | None:
    """Log evidence and all marginals (and with ``with_count`` the exact number of
    tables with positive weight, key ``n``, from the same forward pass); None when no
    table has positive weight."""
    try:
        win = win.trimmed()
    except _Empty:
        return None
    win, inv = _largest_row_last(win)
    r, derived, args, scale, shift = _args(win)
    L = _limbs(win, derived) if with_count else 0
    res = table_dp.run(*args, limbs=L, posterior=True, max_states=_MAX_STATES)
    if not np.isfinite(res["log_z"]):
        return None
    log_z = res["log_z"] + scale[0] + shift
    start, roff, rsize = res["start"], res["roff0"], res["rsize0"]
    grid = start.reshape(tuple(int(x) for x in rsize))
    rows = [grid.sum(axis=tuple(k for k in range(r) if k != i)) for i in range(r)]
    tot = np.zeros(1, np.int64)
    for i in range(r):
        tot = (tot[:, None] + np.arange(rsize[i])[None, :]).ravel()
    grand = np.bincount(tot, weights=start)
    return {"log_z": log_z, "cell_lo": win.cell_lo[inv], "cell": res["cell"][inv],
            "row_lo": roff.astype(np.int64)[inv], "row": _pad(rows)[inv],
            "col_lo": win.col_lo, "col": res["col"],
            "grand_lo": int(roff.sum()), "grand": grand,
            "n": int(res["count"]) if with_count else None}


def _pad(rows):
    W = max(len(x) for x in rows)
    return np.array([np.concatenate([x, np.zeros(W - len(x))]) for x in rows])


def count(win: Windows) -> int:
    """Exact number of tables with positive weight (one forward pass in exact
    multi-limb integer arithmetic)."""
    try:
        win = win.trimmed()
    except _Empty:
        return 0
    win, _ = _largest_row_last(win)
    _, derived, args, _, _ = _args(win)
    res = table_dp.run(*args, limbs=_limbs(win, derived), posterior=False,
                       max_states=_MAX_STATES)
    return int(res["count"])
