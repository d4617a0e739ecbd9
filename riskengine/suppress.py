"""Complementary cell suppression (seed 004 §3.1-3.3; Fischetti & Salazar's model).

A sensitive cell with protection ``p`` (below) and ``q`` (above) is protected by a
set S of suppressed cells when some table consistent with the release puts it at
least ``p`` below and some at least ``q`` above its true value: with the totals
(and subtotals) published, that is a deviation ``y`` with ``T y = 0``, ``y = 0`` off
S, ``x + y >= 0`` and ``y_s <= -p`` (resp. ``y_s >= q``) -- seed 004's "alternating
cycle of suppressed cells through (I, J) with g(Y) >= p", written for the general
system ``T x = 0`` (:mod:`riskengine.linear`), so 2-D tables with totals, k-D tables
with their margins and tables with one level of subtotals are handled alike.  Only
interior cells are suppressed; every total and subtotal is published.

``method="heuristic"`` (seed 004 §3.2-3.3, the network/LP method of the U.S. Census
Bureau and Statistics Canada): sensitive cells are protected one at a time, in
decreasing order of protection (ties: table order).  For each cell and direction an
LP finds the cheapest deviation ``y`` as above, where moving a cell that is already
suppressed is free and moving another cell ``j`` by ``|y_j|`` costs
``w_j |y_j| / p`` (``w_j`` its suppression cost: the seed's "c = a_ij" / "c = 1"; a
cell moved by the full protection costs ``w_j``); the cells the LP moves are
suppressed.  A direction the suppressions so far already protect (an audit LP over
them) is skipped.
The LP's deviation certifies the protection, suppressing more never shrinks an
interval, so the final pattern protects every sensitive cell; it is audited anyway
before it is returned.

``method="optimal"`` (Fischetti & Salazar 2001): minimise ``sum w_j z_j`` over one
binary ``z_j`` per candidate cell (sensitive cells fixed to 1) subject to: for every
sensitive cell and direction some deviation ``y`` with ``T y = 0``,
``-x_j z_j <= y_j <= M_j z_j`` (``M_j``: the smallest published total containing ``j``,
minus ``x_j``) reaches ``y_s = -p`` (resp. ``+q``).  Solved by row generation
(:func:`_optimal`): the master MILP (HiGHS, zero gap) over the binaries gets the
intruder LPs' dual "capacity" cuts until its optimum protects every cell.  A single
explicit MILP with a deviation vector per sensitive cell and direction
(:func:`_optimal_explicit`) gives the same optimum and serves as the reference in the
tests.

Determinism: costs carry a tie-break of relative size 1e-7 x (cell rank), so equal-cost
alternatives are decided by table order and not by the solver's path; HiGHS itself
is deterministic.  Zero cells are structural by default (seed 004 §3.3: in a
positive table a zero cell has capacity 0) and are never suppressed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from . import _validate as V
from .audit import _interior_array, intervals, protection_arrays, protection_tol
from .linear import tabular_system

__all__ = ["COSTS", "METHODS", "suppress"]

METHODS = ("heuristic", "optimal")
COSTS = ("value", "count")
MAX_MILP_VARS = 400_000


def suppress(table, sensitive, protection, method: str = "heuristic", cost: str = "value",
             groups=None, *, suppress_zeros: bool = False, time_limit: float | None = None):
    """Protect the sensitive cells of ``table`` by complementary cell suppression.

    Parameters
    ----------
    table : rk.Table, array or xarray.DataArray
        Nonnegative magnitudes or counts; its ``margins`` (default: all totals of a 2-D
        table, every (k-1)-way margin of a k-D table) are published.
    sensitive : bool array of the table's shape
        Primary suppressions.
    protection : array of the table's shape, or a pair ``(lower, upper)``
        Protection each sensitive cell needs below / above its value.
    method : {"heuristic", "optimal"}
    cost : {"value", "count"}
        Minimise the total value or the number of suppressed cells.
    groups : dict, optional
        One level of subtotals, ``{dim: [[category indices], ...]}``; the subtotals are
        published (and carried by the release).
    suppress_zeros : bool
        Allow zero cells as complementary suppressions (default: never).
    time_limit : float, optional
        Seconds for the MILP (``method="optimal"``); hitting it is an error.

    Returns
    -------
    rk.Release
        Suppressed interior cells are NaN; totals in ``margins``; mechanism
        ``rk.CellSuppression(method, cost, suppress_zeros)``.  ``release.info`` holds
        the number and value of suppressed cells, all and complementary only.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[20., 10, 20, 10, 20], [10, 10, 20, 5, 15],
    ...                        [40, 10, 10, 20, 10], [5, 5, 15, 10, 5]]), dims=("r", "c"))
    >>> sens = np.zeros((4, 5), bool); sens[0, 0] = sens[1, 2] = sens[2, 3] = sens[3, 3] = True
    >>> rel = rk.suppress(t, sens, 0.5 * t.values, method="optimal")
    >>> rel.info["n_complementary"], rel.info["value_complementary"]
    (4, 35.0)
    """
    from .mechanisms.suppression import CellSuppression
    mech = CellSuppression(method=method, cost=cost, suppress_zeros=suppress_zeros)
    return mech.protect(table, sensitive=sensitive, protection=protection, groups=groups,
                        time_limit=time_limit)


def _pattern(table, sensitive, protection, method, cost, groups, suppress_zeros, time_limit):
    """(release-ready pieces): the suppression mask and the system, validated."""
    from .table import Table
    V.choice(method, "method", METHODS)
    V.choice(cost, "cost", COSTS)
    if not isinstance(table, Table):
        table = Table(table)
    dims, shape = table.dims, table.shape
    sens = _interior_array(sensitive, "sensitive", dims, shape, bool)
    plo, phi = protection_arrays(protection, dims, shape)
    x = np.asarray(table.values, dtype=float)
    system = tabular_system(dims, shape, table.margins, groups)
    plo = np.where(sens, plo, 0.0)
    phi = np.where(sens, phi, 0.0)
    short = sens & (plo > x + protection_tol(x))
    if short.any():
        i = tuple(int(v) for v in np.argwhere(short)[0])
        raise ValueError(f"sensitive cell {i} has value {x[i]:g} but needs lower protection "
                         f"{plo[i]:g}: no nonnegative table puts it that far below")
    w = x.copy() if cost == "value" else np.ones(shape)
    n = x.size
    # tie-break by table order; every cell keeps a positive cost
    pos = w[w > 0]
    floor = 1e-3 * (pos.min() if pos.size else 1.0)
    w = (np.maximum(w, floor) * (1.0 + 1e-7 * np.arange(n).reshape(shape) / n)).ravel()
    cand = (x > 0).ravel() if not suppress_zeros else np.ones(n, bool)
    cand |= sens.ravel()
    if method == "heuristic":
        mask = _heuristic(system, x.ravel(), sens.ravel(), plo.ravel(), phi.ravel(), w, cand)
    else:
        mask = _optimal(system, x.ravel(), sens.ravel(), plo.ravel(), phi.ravel(), w, cand,
                        time_limit)
    mask = mask.reshape(shape)
    _check_protected(system, x, mask, sens, plo, phi, method)
    return table, system, mask


def _interior_equations(system, x):
    """Rows of T on the interior (totals fixed), scaled values, and the scale."""
    n = system.n_interior
    Ai = system.A.tocsc()[:, :n].tocsr()
    keep = np.flatnonzero(np.diff(Ai.indptr) > 0)
    scale = max(float(np.abs(x).max(initial=0.0)), 1.0)
    return Ai[keep], scale


def _heuristic(system, x, sens, plo, phi, w, cand):
    Ai, scale = _interior_equations(system, x)
    xs = x / scale
    supp = sens.copy()
    need = np.maximum(plo, phi)
    order = sorted(np.flatnonzero(sens), key=lambda i: (-need[i], i))
    n = x.size
    Aeq = sp.hstack([Ai, -Ai]).tocsr()      # variables: y+ (n), y- (n)
    beq = np.zeros(Ai.shape[0])
    full = system.vector(x.reshape(system.shape)).astype(float)
    tol = protection_tol(full)
    for s in order:
        # already protected by the suppressions so far? (a small LP over them only)
        cur = full.copy()
        cur[: n][supp] = np.nan
        lo, hi = intervals(system, cur, only=[s])
        for direction, p in ((+1, phi[s]), (-1, plo[s])):
            if p <= 0:
                continue
            if (hi[s] - x[s] if direction > 0 else x[s] - lo[s]) >= p + tol:
                continue
            ps = p / scale
            cost = np.where(supp, 0.0, w / ps)
            ub_up = np.where(supp | cand, np.inf, 0.0)
            ub_dn = np.where(supp | cand, xs, 0.0)
            lb_up = np.zeros(n)
            lb_dn = np.zeros(n)
            if direction > 0:
                lb_up[s] = ub_up[s] = ps
                ub_dn[s] = 0.0
            else:
                lb_dn[s] = ub_dn[s] = ps
                ub_up[s] = 0.0
            res = linprog(np.concatenate([cost, cost]), A_eq=Aeq, b_eq=beq,
                          bounds=np.column_stack([np.concatenate([lb_up, lb_dn]),
                                                  np.concatenate([ub_up, ub_dn])]),
                          method="highs")
            if res.status != 0:
                side = "above" if direction > 0 else "below"
                raise ValueError(f"sensitive cell {_cell(system, s)} cannot be protected by "
                                 f"{p:g} {side} its value {x[s]:g}, even suppressing every "
                                 f"candidate cell ({res.message})")
            y = res.x[:n] + res.x[n:]
            supp |= y > 1e-6 * ps
    return supp


def _upper_room(system, x):
    """M_j: how far each interior cell can rise: smallest published total containing it,
    minus its value (totals published; no total: the sum of the table)."""
    n = system.n_interior
    full = system.vector(x.reshape(system.shape)).astype(float)
    A = system.A.tocsr()
    big = float(full[n:].max(initial=0.0)) if full.size > n else float(x.sum())
    M = np.full(n, max(big, float(x.sum())))
    for r in range(A.shape[0]):
        cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
        vals = A.data[A.indptr[r]:A.indptr[r + 1]]
        inner = cols[(cols < n) & (vals < 0)]
        if inner.size:
            tot = full[cols[vals > 0]].sum()
            M[inner] = np.minimum(M[inner], tot)
    return np.maximum(M - x, 0.0)


def _optimal(system, x, sens, plo, phi, w, cand, time_limit):
    """Fischetti-Salazar by row generation: a master MILP over the binaries only, with
    the protection constraints added as cuts.  For a pattern z, the intruder's LP
    ``max c'y : T y = 0, -x_j z_j <= y_j <= M_j z_j`` (``c = +-e_s``) must reach p; for
    any multipliers u of ``T y = 0`` its value is at most
    ``sum_j [max(r_j, 0) M_j + max(-r_j, 0) x_j] z_j`` with ``r = c - T'u``, so every u
    gives a valid inequality ``sum_j (...) z_j >= p``; with u the LP's optimal duals at a
    pattern that fails, the inequality cuts that pattern off.  Iterate until the master's
    optimum protects every cell: it is then optimal (zero gap at every master solve)."""
    import time as _time
    t_end = None if time_limit is None else _time.perf_counter() + float(time_limit)
    Ai, scale = _interior_equations(system, x)
    xs = x / scale
    n = x.size
    M = _upper_room(system, x) / scale
    tasks = [(s, d, p / scale) for s in np.flatnonzero(sens)
             for d, p in ((+1, phi[s]), (-1, plo[s])) if p > 0]
    cuts, rhs = [], []
    lb = np.where(sens, 1.0, 0.0)
    ub = np.where(cand, 1.0, 0.0)
    AiT = Ai.T.tocsr()
    z = sens.astype(float)
    rounds = 0
    relaxed = True   # first the LP relaxation (cheap rounds, most of the cuts), then the MILP
    while True:
        if cuts and relaxed:
            res = linprog(w, A_ub=-sp.csr_matrix(np.array(cuts)), b_ub=-np.array(rhs),
                          bounds=np.column_stack([lb, ub]), method="highs")
            if res.status != 0:
                raise ValueError(f"the suppression LP relaxation failed: {res.message}")
            z = res.x
        elif cuts:
            left = None if t_end is None else max(t_end - _time.perf_counter(), 1.0)
            opts = {"mip_rel_gap": 0.0, "disp": False}
            if left is not None:
                opts["time_limit"] = left
            res = milp(w, integrality=np.ones(n), bounds=Bounds(lb, ub),
                       constraints=[LinearConstraint(sp.csr_matrix(np.array(cuts)),
                                                     np.array(rhs), np.inf)], options=opts)
            if res.status != 0 or res.x is None:
                raise ValueError("the suppression MILP did not reach a proven optimum: "
                                 f"{res.message}")
            z = (res.x > 0.5).astype(float)
        new = 0
        for s_, d, p in tasks:
            c = np.zeros(n)
            c[s_] = d
            r = linprog(-c, A_eq=Ai, b_eq=np.zeros(Ai.shape[0]),
                        bounds=np.column_stack([-xs * z, M * z]), method="highs")
            if r.status != 0:
                raise RuntimeError(f"HiGHS failed on an intruder LP: {r.message}")
            if -r.fun >= p * (1 - 1e-9):
                continue
            best = None
            for u in (r.eqlin.marginals, -r.eqlin.marginals):
                red = c - AiT @ u
                coef = np.maximum(red, 0.0) * M + np.maximum(-red, 0.0) * xs
                val = coef @ z
                if best is None or val < best[1]:
                    best = (coef, val)
            # for binaries, a coefficient above the right-hand side can be lowered to it
            coef = np.minimum(np.where(np.abs(best[0]) > 1e-12, best[0], 0.0), p)
            if coef @ z >= p * (1 - 1e-9):
                raise RuntimeError("could not derive a violated protection cut (numerics)")
            cuts.append(coef)
            rhs.append(p)
            new += 1
        if new == 0:
            if relaxed:
                relaxed = False
                continue
            _optimal.rounds = rounds
            return z > 0.5
        rounds += 1
        if t_end is not None and _time.perf_counter() > t_end:
            raise ValueError("the suppression MILP did not reach a proven optimum: time limit")


def _optimal_explicit(system, x, sens, plo, phi, w, cand, time_limit):
    """The same optimum from one explicit MILP (a deviation vector per sensitive cell and
    direction, linked to the binaries): the reference for the row-generation solver."""
    Ai, scale = _interior_equations(system, x)
    xs = x / scale
    cidx = np.flatnonzero(cand)
    nc = len(cidx)
    where = {int(j): k for k, j in enumerate(cidx)}
    M = _upper_room(system, x)[cidx] / scale
    A_c = Ai[:, cidx]
    tasks = [(s, d, p) for s in np.flatnonzero(sens)
             for d, p in ((+1, phi[s]), (-1, plo[s])) if p > 0]
    n_var = nc * (1 + len(tasks))
    if n_var > MAX_MILP_VARS:
        raise ValueError(f"the explicit suppression MILP would have {n_var} variables "
                         f"({nc} candidate cells x {len(tasks)} protection directions + "
                         f"binaries), above {MAX_MILP_VARS}: use method='heuristic'")
    # variable order: z (nc), then y^t (nc) for each task t
    cost = np.concatenate([w[cidx], np.zeros(nc * len(tasks))])
    lb = np.concatenate([np.where(sens[cidx], 1.0, 0.0), np.full(nc * len(tasks), -np.inf)])
    ub = np.concatenate([np.ones(nc), np.full(nc * len(tasks), np.inf)])
    blocks_eq, blocks_link = [], []
    I = sp.identity(nc, format="csr")
    for t, (s, d, p) in enumerate(tasks):
        k = where[int(s)]
        off = nc * (1 + t)
        lb[off + k] = ub[off + k] = d * p / scale
    if tasks:
        T = len(tasks)
        # T y^t = 0
        eq = sp.hstack([sp.csr_matrix((A_c.shape[0] * T, nc)),
                        sp.block_diag([A_c] * T, format="csr")])
        # y_j + x_j z_j >= 0   and   y_j - M_j z_j <= 0
        lo_link = sp.hstack([sp.vstack([sp.diags(xs[cidx])] * T),
                             sp.block_diag([I] * T, format="csr")])
        hi_link = sp.hstack([sp.vstack([sp.diags(-M)] * T),
                             sp.block_diag([I] * T, format="csr")])
        blocks_eq.append(LinearConstraint(eq, 0.0, 0.0))
        blocks_link.append(LinearConstraint(lo_link, 0.0, np.inf))
        blocks_link.append(LinearConstraint(hi_link, -np.inf, 0.0))
    options = {"mip_rel_gap": 0.0, "disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    integrality = np.concatenate([np.ones(nc), np.zeros(nc * len(tasks))])
    res = milp(cost, integrality=integrality, bounds=Bounds(lb, ub),
               constraints=blocks_eq + blocks_link, options=options)
    if res.status != 0 or res.x is None:
        raise ValueError(f"the suppression MILP did not reach a proven optimum: {res.message}")
    mask = np.zeros(x.size, bool)
    mask[cidx] = res.x[:nc] > 0.5
    return mask


def _cell(system, j):
    return tuple(int(v) for v in np.unravel_index(j, system.shape))


def _check_protected(system, x, mask, sens, plo, phi, method):
    full = system.vector(x).astype(float)
    full[: system.n_interior][mask.ravel()] = np.nan
    idx = np.flatnonzero(sens.ravel())
    lo, hi = intervals(system, full, only=idx)
    tol = protection_tol(full)
    xv = x.ravel()
    for j in idx:
        if xv[j] - lo[j] < plo.ravel()[j] - tol or hi[j] - xv[j] < phi.ravel()[j] - tol:
            raise ValueError(f"the {method} pattern leaves sensitive cell {_cell(system, j)} "
                             f"under-protected: interval [{lo[j]:g}, {hi[j]:g}] around "
                             f"{xv[j]:g}, needs {plo.ravel()[j]:g} below and "
                             f"{phi.ravel()[j]:g} above")
