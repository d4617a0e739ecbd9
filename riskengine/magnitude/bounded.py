"""Feasible intervals under a-priori bounds: the audit of a cell-suppression problem given
as a general linear system (a JJ file: ``rhs = sum s_k x_k`` relations, each cell within
its a-priori bounds ``[lb, ub]``), where :func:`riskengine.magnitude.intervals.intervals`
takes a table's system and ``x >= 0``.

For each unknown cell ``j``: ``min x_j`` and ``max x_j`` over ``{A x = rhs, lb <= x <= ub,
known cells fixed}`` -- two LPs (HiGHS; one model per connected component of the
unknowns, re-solved for each objective from its last basis), each component scaled by
its own largest magnitude as the table audit does.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from . import _highs

__all__ = ["bounded_intervals"]


def bounded_intervals(A, rhs, x, lower, upper) -> tuple:
    """Feasible interval of every unknown (NaN) entry of ``x``.

    Parameters
    ----------
    A : scipy.sparse matrix or array, shape (R, N)
        The relations.
    rhs : array-like, shape (R,)
        Their right-hand sides (``A @ x == rhs``).
    x : array-like, shape (N,)
        Known values; NaN marks an unknown cell.
    lower, upper : array-like, shape (N,)
        A-priori bounds of every cell (``inf`` allowed in ``upper``).

    Returns
    -------
    lo, hi : numpy.ndarray
        The known value where ``x`` is known; the LP minimum / maximum where it is not
        (``inf`` when unbounded).
    tol : numpy.ndarray
        The accuracy of each bound: 1e-7 (HiGHS's feasibility tolerance) of the largest
        magnitude of the cell's own connected component of the relations.

    Raises
    ------
    ValueError
        When no cell vector within the bounds satisfies the relations with the known cells
        fixed (the file is inconsistent).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[-1.0, 1.0, 1.0]])          # cell 0 = cell 1 + cell 2
    >>> lo, hi, _ = bounded_intervals(A, [0.0], [10.0, np.nan, np.nan], [0, 0, 2], [99, 99, 99])
    >>> lo.tolist(), hi.tolist()
    ([10.0, 0.0, 2.0], [10.0, 8.0, 10.0])
    """
    A = sp.csr_matrix(A, dtype=float)
    rhs = np.asarray(rhs, float)
    x = np.asarray(x, float)
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    n = A.shape[1]
    if x.shape != (n,) or lower.shape != (n,) or upper.shape != (n,) or rhs.shape != (A.shape[0],):
        raise ValueError(f"shapes differ: A {A.shape}, rhs {rhs.shape}, x {x.shape}, bounds "
                         f"{lower.shape} / {upper.shape}")
    known = ~np.isnan(x)
    lo = np.where(known, x, np.nan)
    hi = lo.copy()
    tol = np.zeros(n)
    unk = np.flatnonzero(~known)
    rest = rhs - A[:, known] @ x[known]
    Au = A[:, unk].tocsr()
    keep = np.flatnonzero(np.diff(Au.indptr) > 0)
    off = np.setdiff1d(np.arange(A.shape[0]), keep)
    if off.size:
        big = max(float(np.abs(rhs[off]).max(initial=0.0)),
                  float(np.abs(x[known]).max(initial=0.0)), 1.0)
        r = int(off[np.argmax(np.abs(rest[off]))])
        if abs(rest[r]) > 1e-9 * big * max(A[r].nnz, 1):
            raise ValueError(f"relation {r} does not hold with the published cells: they give "
                             f"{rhs[r] - rest[r]:g}, its right-hand side is {rhs[r]:g}")
    if unk.size == 0:
        return lo, hi, tol
    Au, b = Au[keep], rest[keep]
    # one LP per connected component, each scaled by its own magnitudes (a small cell of a
    # big table keeps its precision)
    m_u = unk.size
    adj = sp.bmat([[None, Au.T], [Au, None]], format="csr") if len(keep) else \
        sp.csr_matrix((m_u, m_u))
    _, comp = connected_components(adj, directed=False)
    ucomp, rcomp = comp[:m_u], comp[m_u:]
    for cpt in np.unique(ucomp):
        cols = np.flatnonzero(ucomp == cpt)
        rows = np.flatnonzero(rcomp == cpt)
        js = unk[cols]
        lb, ub = lower[js], upper[js]
        # the scale of the right-hand side (as the table audit): loose a-priori bounds (a
        # grand total on every cell) must not swamp a small cell's precision
        mags = np.abs(b[rows]) if rows.size else np.concatenate(
            [np.abs(lb), np.abs(ub[np.isfinite(ub)])])
        scale = float(mags.max()) if mags.size and mags.max() > 0 else 1.0
        tol[js] = 1e-7 * scale
        if rows.size == 0:                   # no relation: the a-priori bounds
            lo[js], hi[js] = lb, ub
            continue
        sub = Au[rows][:, cols]
        bb = b[rows] / scale
        h = _highs.lp_model(cols.size, sub, lb / scale,
                            np.where(np.isfinite(ub), ub / scale, _highs.INF),
                            np.zeros(cols.size), bb, bb)
        h.setOptionValue("simplex_strategy", 4)
        st = _highs.run(h)
        if st is not None:
            raise ValueError("no cell vector within the a-priori bounds satisfies the "
                             f"relations with the published cells fixed "
                             f"({h.modelStatusToString(st)}): the file is inconsistent")
        last = None
        for sign, out in ((-1.0, hi), (1.0, lo)):
            for k, j in enumerate(js):
                if last is not None:
                    h.changeColCost(last, 0.0)
                h.changeColCost(k, sign)
                last = k
                st = _highs.run(h)
                if st in (_highs.Status.kUnbounded, _highs.Status.kUnboundedOrInfeasible):
                    out[j] = sign * -np.inf
                    h.clearSolver()
                    continue
                if st is not None:
                    raise RuntimeError(f"HiGHS failed on the interval LP of cell {j}: "
                                       f"{h.modelStatusToString(st)}")
                out[j] = sign * h.getInfo().objective_function_value * scale
    return lo, hi, tol
