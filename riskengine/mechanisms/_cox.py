"""Cox's 2-D controlled rounding procedures (seed 004; Cox 1987, Cox & Ernst 1982).

The table is extended by its totals (totals negated, so every row and column sums to
zero); ``unbiased`` rounds it by alternating cycles of nonmultiples (each entry's
expectation is its original value), ``optimal`` as a transportation problem (HiGHS).
Used by :mod:`.rounding` (2-D) and :mod:`._rounding3d` (Ernst's plane stacking).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

__all__ = ["cox_unbiased", "extended", "optimal"]


def extended(x: np.ndarray) -> np.ndarray:
    """(r+1) x (c+1) matrix: interior, negated row and column totals, grand total;
    every row and column sums to zero."""
    r, c = x.shape
    M = np.zeros((r + 1, c + 1), dtype=np.int64)
    M[:r, :c] = x
    M[:r, c] = -x.sum(axis=1)
    M[r, :c] = -x.sum(axis=0)
    M[r, c] = x.sum()
    return M


def _cycle(nm):
    """An alternating cycle of nonmultiple cells: consecutive cells share a column, then a
    row, alternately (a cycle in the bipartite graph rows <-> columns whose edges are the
    nonmultiple cells).  Deterministic: start at the first nonmultiple in row-major order,
    always take the lowest-index next edge.  Every row or column holding a nonmultiple holds
    at least two (its entries sum to 0 mod B), so the walk never gets stuck."""
    # walk on the bipartite graph rows <-> columns (edges = nonmultiple cells)
    start = tuple(int(x) for x in np.argwhere(nm)[0])
    verts = [("r", start[0]), ("c", start[1])]
    edges = [start]
    pos = {("r", start[0]): 0, ("c", start[1]): 1}
    while True:
        kind, v = verts[-1]
        last = edges[-1]
        if kind == "c":
            cand = [(int(k), v) for k in np.nonzero(nm[:, v])[0] if (int(k), v) != last]
            e = cand[0]
            nv = ("r", e[0])
        else:
            cand = [(v, int(k)) for k in np.nonzero(nm[v, :])[0] if (v, int(k)) != last]
            e = cand[0]
            nv = ("c", e[1])
        edges.append(e)
        if nv in pos:
            return edges[pos[nv]:]
        pos[nv] = len(verts)
        verts.append(nv)


def cox_unbiased(M: np.ndarray, B: int, rng: np.random.Generator) -> np.ndarray:
    M = M.copy()
    while True:
        nm = (M % B) != 0
        if not nm.any():
            return M
        cyc = _cycle(nm)
        sign = np.array([1 if k % 2 == 0 else -1 for k in range(len(cyc))])
        vals = np.array([M[e] for e in cyc])
        up = B * (-(-vals // B)) - vals        # distance to the next multiple above
        down = vals - B * (vals // B)          # distance to the multiple below
        d_plus = int(np.min(np.where(sign > 0, up, down)))
        d_minus = int(np.min(np.where(sign > 0, down, up)))
        if rng.random() < d_minus / (d_plus + d_minus):
            step = d_plus
        else:
            step = -d_minus
        for e, s in zip(cyc, sign):
            M[e] += s * step


def optimal(M: np.ndarray, B: int) -> np.ndarray:
    """Minimum total absolute distortion of the interior (HiGHS, integral by TU)."""
    rows, cols = M.shape
    floor = B * (M // B)
    frac = M - floor
    nm = frac != 0
    idx = np.full(M.shape, -1)
    idx[nm] = np.arange(int(nm.sum()))
    n = int(nm.sum())
    if n == 0:
        return M.copy()
    cost = np.zeros(n)
    interior = np.zeros(M.shape, bool)
    interior[:-1, :-1] = True
    cost[idx[nm & interior]] = B - 2 * frac[nm & interior]
    A, lb = [], []
    for i in range(rows):
        a = np.zeros(n)
        a[idx[i][nm[i]]] = 1
        A.append(a)
        lb.append(-floor[i].sum() // B)
    for j in range(cols):
        a = np.zeros(n)
        a[idx[:, j][nm[:, j]]] = 1
        A.append(a)
        lb.append(-floor[:, j].sum() // B)
    A = np.array(A)
    lb = np.array(lb, dtype=float)
    res = milp(cost, constraints=LinearConstraint(A, lb, lb), integrality=np.ones(n),
               bounds=Bounds(0, 1))
    if not res.success:
        raise ValueError(f"no controlled rounding exists for this table: {res.message}")
    y = np.rint(res.x).astype(np.int64)
    out = floor.copy()
    out[nm] += B * y[idx[nm]]
    return out
