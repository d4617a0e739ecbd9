"""The LP interval engine: what an intruder can infer about each suppressed cell.

The intruder knows every published cell, every published total and subtotal, and
that cells are nonnegative.  The suppressed cells are then the unknowns of the
tabular system ``T x = 0`` (:mod:`riskengine.tabular`); the feasible interval of
each is ``[min x_j, max x_j]`` over ``{x >= 0 : T x = 0, published cells fixed}``:
two linear programs per suppressed cell (HiGHS, one persistent model per component
re-solved from its last basis for each objective).

The LPs are batched: the equations are restricted once to the unknown cells,
equations with no unknown cell are dropped, and the unknowns are split into the
connected components of the remaining system (a suppressed cell's interval only
depends on its own component), so each LP is as small as it can be.  Each
component's right-hand side is divided by its largest entry before solving (small
cells in a table with huge totals keep their precision) and multiplied back.

:func:`riskengine.magnitude.audit.audit` (``rk.audit``) labels the intervals and flags
disclosures; suppression checks every pattern with :func:`intervals` before returning it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import connected_components

from ..tabular import TabularSystem, equation_tol
from . import _highs

__all__ = ["intervals", "protection_tol"]


def protection_tol(x) -> float:
    """Absolute tolerance of interval comparisons (exactness, protection reached):
    1e-6 of the largest magnitude (at least 1e-6), well above the LP accuracy."""
    x = np.asarray(x, dtype=float)
    fin = x[np.isfinite(x)]
    return 1e-6 * max(float(np.abs(fin).max()) if fin.size else 0.0, 1.0)


def intervals(system: TabularSystem, x, only=None, tol_out=None) -> tuple:
    """Feasible interval of every unknown (NaN) entry of the cell vector ``x``.

    Returns ``(lower, upper)``, float vectors of length ``system.n_var``: the published
    value where ``x`` is known, the LP minimum / maximum where it is not (``inf`` when
    unbounded).  When rounding in the published values makes the equations slightly
    inconsistent (within :func:`riskengine.tabular.equation_tol`), every equation gets
    the smallest uniform slack that restores a nonnegative completion.  ``only`` (indices
    into the vector) restricts the LPs to those unknowns (the others stay NaN).

    Shortcuts (exact): an unknown alone in an equation is determined by it and is
    substituted before any LP (repeatedly); the maxima are solved first, and an unknown
    that is 0 in any optimal vertex found on the way has lower bound 0 without its LP.
    Raises ``ValueError`` when no nonnegative completion exists.

    ``tol_out`` (a float vector of length ``system.n_var``, filled in place) receives the
    accuracy of each unknown's bounds: ``1e-7`` (HiGHS's feasibility tolerance) times the
    largest right-hand side of the unknown's own component, plus the equations' rounding
    tolerance; a cell's exactness and protection are judged against it (a tolerance
    scaled to the whole table would call a small cell of a big table exact, or protected,
    when it is neither).

    Examples
    --------
    >>> import numpy as np
    >>> from riskengine.tabular import tabular_system
    >>> s = tabular_system(("v", "w"), (2, 2))   # 4 cells, 2 row, 2 column totals, total
    >>> nan = np.nan                             # every cell suppressed, totals published
    >>> lo, hi = intervals(s, [nan, nan, nan, nan, 4.0, 6.0, 2.0, 8.0, 10.0])
    >>> lo[:4].round(9).tolist(), hi[:4].round(9).tolist()
    ([0.0, 2.0, 0.0, 4.0], [2.0, 4.0, 2.0, 6.0])
    """
    x = np.asarray(x, dtype=float)
    known = np.isfinite(x)
    lower = np.where(known, x, np.nan)
    upper = lower.copy()
    unk = np.flatnonzero(~known)
    only_set = None if only is None else {int(i) for i in np.atleast_1d(only)}
    if unk.size == 0:
        return lower, upper
    eq_tol = equation_tol(system, x)
    if tol_out is not None:
        tol_out[~known] = eq_tol
    x, fixed = _substitute_singletons(system, x, eq_tol)
    lower[fixed] = upper[fixed] = x[fixed]
    known = np.isfinite(x)
    unk = np.flatnonzero(~known)
    if unk.size == 0:
        return lower, upper
    A = system.A.tocsc()
    rhs = -(A[:, known] @ x[known])
    Au = A[:, unk].tocsr()
    rows = np.flatnonzero(np.diff(Au.indptr) > 0)
    Au, rhs = Au[rows], rhs[rows]
    # components of the bipartite graph unknowns <-> equations
    n_u, n_r = len(unk), len(rows)
    adj = sp.bmat([[None, Au.T], [Au, None]], format="csr") if n_r else sp.csr_matrix((n_u, n_u))
    _, comp = connected_components(adj, directed=False)
    ucomp = comp[:n_u]
    rcomp = comp[n_u:]
    for c in np.unique(ucomp):
        cols = np.flatnonzero(ucomp == c)
        rr = np.flatnonzero(rcomp == c)
        if only is not None and not only_set.intersection(unk[cols].tolist()):
            continue
        if rr.size == 0:  # no equation touches these cells: anything >= 0
            lower[unk[cols]] = 0.0
            upper[unk[cols]] = np.inf
            continue
        sub = Au[rr][:, cols]
        scale = float(np.abs(rhs[rr]).max())
        scale = scale if scale > 0 else 1.0
        if tol_out is not None:
            tol_out[unk[cols]] = 1e-7 * scale + eq_tol
        b = rhs[rr] / scale
        nc = len(cols)
        # one model per component, re-solved for each objective from the last basis by
        # the primal simplex (a new objective keeps the basis feasible)
        h = _highs.lp_model(nc, sub, np.zeros(nc), np.full(nc, _highs.INF), np.zeros(nc),
                            b, b)
        h.setOptionValue("simplex_strategy", 4)
        if _highs.run(h) is not None:
            slack = _consistent(sub.toarray(), b, eq_tol / scale)
            h.changeRowsBounds(len(b), np.arange(len(b), dtype=np.int32), b - slack,
                               b + slack)
        last = None
        zero_seen = np.zeros(nc, bool)
        for sign, out in ((-1.0, upper), (1.0, lower)):
            for k, j in enumerate(cols):
                if only is not None and unk[j] not in only_set:
                    continue
                if sign > 0 and zero_seen[k]:
                    out[unk[j]] = 0.0
                    continue
                if last is not None:
                    h.changeColCost(last, 0.0)
                h.changeColCost(k, sign)
                last = k
                st = _highs.run(h)
                if st in (_highs.Status.kUnbounded, _highs.Status.kUnboundedOrInfeasible):
                    out[unk[j]] = np.inf
                    h.clearSolver()
                    continue
                if st is not None:
                    raise RuntimeError(f"HiGHS failed on the audit LP of cell {unk[j]}: "
                                       f"{h.modelStatusToString(st)}")
                out[unk[j]] = max(sign * h.getInfo().objective_function_value * scale, 0.0)
                zero_seen |= np.asarray(h.getSolution().col_value) <= 0.0
    return lower, upper


def _substitute_singletons(system, x, tol):
    """Fill in every unknown that some equation determines alone (repeatedly).
    Returns the completed vector and the mask of filled entries."""
    x = np.array(x, dtype=float)
    filled = np.zeros(x.shape, bool)
    A = system.A.tocsr()
    while True:
        unknown = ~np.isfinite(x)
        if not unknown.any():
            break
        Au = A[:, unknown].tocsr()
        single = np.flatnonzero(np.diff(Au.indptr) == 1)
        if single.size == 0:
            break
        rest = A @ np.where(unknown, 0.0, x)
        cols = np.flatnonzero(unknown)
        done = set()
        for r in single:
            j = cols[Au.indices[Au.indptr[r]]]
            if j in done:
                continue
            v = -rest[r] / Au.data[Au.indptr[r]]
            if v < -tol:
                raise ValueError("the published cells admit no nonnegative completion: "
                                 f"{system.labels()[j]} would be {v:.6g}")
            x[j] = max(v, 0.0)
            filled[j] = True
            done.add(j)
    return x, filled


def _consistent(sub, b, tol) -> float:
    """Published values are rounded: if ``sub y = b, y >= 0`` is infeasible, the smallest
    uniform slack ``t`` (``|sub y - b| <= t``) that makes it feasible; refused when ``t``
    exceeds the additivity tolerance.  0 when the equations hold exactly."""
    m, n = sub.shape
    res = linprog(np.zeros(n), A_eq=sub, b_eq=b, bounds=(0, None), method="highs")
    if res.status == 0:
        return 0.0
    # min t  s.t.  sub y - b <= t,  b - sub y <= t,  y >= 0
    A_ub = np.block([[sub, -np.ones((m, 1))], [-sub, -np.ones((m, 1))]])
    c = np.zeros(n + 1)
    c[-1] = 1.0
    r2 = linprog(c, A_ub=A_ub, b_ub=np.concatenate([b, -b]), bounds=(0, None), method="highs")
    if r2.status != 0 or r2.x[-1] > tol:
        gap = r2.x[-1] if r2.status == 0 else float("nan")
        raise ValueError("the published cells admit no nonnegative completion: the "
                         f"equations T x = 0 with x >= 0 miss by {gap:.6g} (relative to the "
                         f"component), above the additivity tolerance {tol:.3g}")
    return float(r2.x[-1]) * (1 + 1e-6) + 1e-12
