"""Controlled rounding of hierarchical tables and table sets (``rk.ControlledRounding``
on an ``rk.Table`` with hierarchies or an ``rk.TableSet``).

Every published cell -- finest cells, subtotals at every level, totals, the cells of
every table of a set (a cell two tables share is one cell) -- goes to one of its two
adjacent multiples of B (multiples stay: zero-restricted), and the rounded cells add up
over the whole cell system.  Such a rounding need not exist beyond 2-D tables with one
level of totals (Ernst 1989, for 3-D tables; a hierarchy adds equations the same way).
Existence is decided exactly, and the rounding with the least total absolute distortion
of the finest cells is found, by one HiGHS MILP over the up / down directions of the
finest cells that are not multiples: each published aggregate's sum of rounded finest
cells is held between its two adjacent multiples.  When the MILP is infeasible no
controlled rounding exists, and ``protect`` says so.

Only ``method="optimal"`` (Cox's unbiased procedure walks the cycles of a 2-D table) and
``likelihood="feasible"`` (the set of tables every published cell of which is within
B - 1 of its published value; the "unbiased" product of marginals describes Cox's
procedure) apply.

When some finest cells are published by no table (two margins of a 3-D cross, a
hierarchy published above its leaves), the rounding is of the published cells only: each
goes to an adjacent multiple, and the rounded cells must be the sums of *some* table of
counts (integers >= 0) over the finest cells -- the published set stays consistent, and
what it hides is never rounded.  Existence and the least total absolute distortion of
the published cells are decided by one HiGHS MILP over the published cells' directions
and those counts (:func:`milp_rounding_published`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from ._rounding3d import directions

__all__ = ["milp_rounding_published", "milp_rounding_system", "protect_structure"]


def milp_rounding_system(s, values, B: int):
    """A controlled rounding to base ``B`` of the cells of cell system ``s`` with values
    ``values`` (one per cell of ``s``; the finest cells first), least total absolute
    distortion of the finest cells; None when none exists.  Returns int64 (n_var,)."""
    n_fin = s.n_interior
    v = np.rint(np.asarray(values, float)).astype(np.int64)
    x = v[:n_fin]
    floor = B * (x // B)
    frac = x - floor
    nm = np.flatnonzero(frac != 0)
    M = s.M.tocsr()
    agg = np.flatnonzero(s.published & (np.arange(s.n_var) >= n_fin))
    X = v[agg]
    base = np.asarray(M[agg] @ floor).ravel()            # the aggregates' rounded-down sums
    lo = (B * (X // B) - base) // B
    hi = (B * (-(-X // B)) - base) // B
    if nm.size == 0:
        ok = (lo <= 0) & (0 <= hi)
        return np.asarray(M @ floor).ravel().astype(np.int64) if ok.all() else None
    z = directions(M[agg][:, nm], lo, hi, B - 2 * frac[nm])
    if z is None:                                         # infeasible: none exists
        return None
    out = floor.copy()
    out[nm] += B * z
    return np.asarray(M @ out).ravel().astype(np.int64)


def is_controlled_rounding_system(s, values, rounded, B: int) -> bool:
    """Every published cell of ``s`` at one of its two adjacent multiples of ``B`` (a
    multiple stays), and the rounded cells add up over the system."""
    v = np.rint(np.asarray(values, float)).astype(np.int64)
    r = np.asarray(rounded, np.int64)
    pub = s.published
    adjacent = (r % B == 0) & (np.abs(r - v) < B) & ((v % B != 0) | (r == v))
    adds = np.array_equal(np.asarray(s.M.tocsr() @ r[: s.n_interior]).ravel(), r)
    return bool(adjacent[pub].all() and adds)


def milp_rounding_published(s, values, B: int):
    """A controlled rounding to base ``B`` of the published cells of cell system ``s``
    when some finest cells are not published: every published cell at one of its
    adjacent multiples of ``B`` (multiples stay) and a table of counts (integers >= 0)
    over the finest cells, hidden ones included, whose sums are the rounded cells; least
    total absolute distortion of the published cells.  One HiGHS MILP over the published
    cells' up / down directions and the finest cells' counts.  Returns ``(rounded, y)``:
    int64 (n_var,) with the rounded published cells (others 0) and the finest counts
    ``y``; None when none exists."""
    n_fin = s.n_interior
    v = np.rint(np.asarray(values, float)).astype(np.int64)
    pub = np.flatnonzero(s.published)
    vp = v[pub]
    floor = B * (vp // B)
    frac = vp - floor
    nm = np.flatnonzero(frac != 0)
    M = s.M.tocsr()[pub]
    E = sp.csr_matrix((np.full(nm.size, -float(B)), (nm, np.arange(nm.size))),
                      shape=(pub.size, nm.size))
    A = sp.hstack([M.astype(float), E]).tocsr()
    cost = np.concatenate([np.zeros(n_fin), B - 2.0 * frac[nm]])
    res = milp(cost, constraints=LinearConstraint(A, floor.astype(float), floor.astype(float)),
               integrality=np.ones(n_fin + nm.size),
               bounds=Bounds(np.zeros(n_fin + nm.size),
                             np.concatenate([np.full(n_fin, np.inf), np.ones(nm.size)])))
    if res.status == 2:                                   # infeasible: none exists
        return None
    if not res.success:
        raise RuntimeError(f"HiGHS did not solve the controlled-rounding MILP: {res.message}")
    sol = np.rint(res.x).astype(np.int64)
    rounded = np.zeros(s.n_var, np.int64)
    rounded[pub] = floor
    rounded[pub[nm]] += B * sol[n_fin:]
    return rounded, sol[:n_fin]


def is_controlled_rounding_published(s, values, rounded, y, B: int) -> bool:
    """Every published cell of ``s`` at one of its two adjacent multiples of ``B`` (a
    multiple stays) and the sums of the counts ``y`` (integers >= 0 over the finest
    cells) over each published cell equal to it."""
    v = np.rint(np.asarray(values, float)).astype(np.int64)
    r = np.asarray(rounded, np.int64)
    y = np.asarray(y, np.int64)
    pub = s.published
    adjacent = (r % B == 0) & (np.abs(r - v) < B) & ((v % B != 0) | (r == v))
    sums = np.asarray(s.M.tocsr() @ y).ravel()
    return bool(adjacent[pub].all() and (y >= 0).all() and np.array_equal(sums[pub], r[pub]))


def protect_structure(mech, table, rng=None):
    """``ControlledRounding.protect`` of a hierarchical table or a table set."""
    from ..table_set import TableSet, TableSetRelease
    ts = table if isinstance(table, TableSet) else TableSet(table)
    if ts.kind != "count":
        raise ValueError(f"{mech.describe()} protects tables of counts")
    if mech.method != "optimal":
        raise ValueError("controlled rounding of a hierarchical table or a table set is "
                         "method='optimal' (a HiGHS MILP that also decides whether one "
                         "exists); Cox's unbiased procedure is for flat 2-D tables")
    if mech.likelihood != "feasible":
        raise ValueError("controlled rounding of a hierarchical table or a table set takes "
                         "likelihood='feasible' (the 'unbiased' product of marginals "
                         "describes Cox's procedure on flat 2-D tables)")
    s = ts.system
    vals = np.asarray(ts.values, float)
    every = bool(s.published[: s.n_interior].all())
    pub = np.flatnonzero(s.published)
    if np.isnan(vals).any():
        raise ValueError("controlled rounding of a set needs the values of its finest cells "
                         "(build it with TableSet.from_pandas or pass finest=)")
    B = mech.base
    what = "table set" if len(s.grids) > 1 else "hierarchical table"
    if every:
        r = milp_rounding_system(s, vals, B)
        ok = r is not None and is_controlled_rounding_system(s, vals, r, B)
        how = "the finest cells' up / down directions"
    else:
        found = milp_rounding_published(s, vals, B)
        r = None if found is None else found[0]
        ok = found is not None and is_controlled_rounding_published(s, vals, *found, B)
        how = ("the published cells' up / down directions and a table of counts under "
               "them (some finest cells are published by no table)")
    if r is None:
        raise ValueError(f"no controlled rounding to base {B} exists for this {what} (the "
                         f"HiGHS MILP over {how} is infeasible: beyond flat 2-D tables one "
                         "need not exist)")
    if not ok:                                             # never an unchecked table
        raise RuntimeError("internal error: the rounding failed its controlled-rounding check")
    out = np.full(s.n_var, np.nan)
    out[pub] = r[pub]
    rel = TableSetRelease(ts, out, mech)
    rel.info["method"] = ("MILP (HiGHS), minimum total absolute distortion of the finest "
                          "cells" if every else "MILP (HiGHS), minimum total absolute "
                          "distortion of the published cells; the finest cells no table "
                          "publishes are counts (integers >= 0) consistent with them")
    return rel
