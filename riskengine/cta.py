"""Controlled tabular adjustment (CTA): the MILP of seeds 000 and 002.

Every cell of the tabular system (interior and published totals; vector ``a``,
``T a = 0``, :func:`riskengine.linear.tabular_system`) gets an adjustment
``y = y+ - y-``:

* ``T y = 0`` (the adjusted table adds up);
* a sensitive cell ``i`` moves down by at least its protection ``p_i`` or up by at
  least ``p_i`` (one binary ``I_i``: ``p_i I_i <= y+_i <= u_i I_i`` and
  ``p_i (1 - I_i) <= y-_i <= min(u_i, a_i) (1 - I_i)``), ``u_i`` the largest move
  allowed (``upper``; ``upper = protection`` is seed 000's first model, moves of
  exactly ``p_i``);
* a nonsensitive cell moves by at most its capacity ``e_i`` and stays nonnegative
  (``0 <= y+_i <= e_i``, ``0 <= y-_i <= min(e_i, a_i)``);
* objective ``"abs"``: min ``sum (y+ + y-)``; ``"relative"``: min ``sum (y+ + y-) / a_i``
  (a zero cell is weighted ``1 / delta``, ``delta`` the smallest positive cell value).

Quality constraints (seed 000 "Preserving mean values / variances", seed 002 §2.2),
over a set ``C`` of ``t`` cells (``over``: the interior, the sensitive cells, all cells,
or a mask):

* ``"mean"``: ``sum_{i in C} y_i = 0`` (the mean over ``C`` is unchanged);
* ``"variance"``: ``|L(y)| <= epsilon`` with
  ``L(y) = Cov(a, y) / Var(a) = sum_{i in C} (a_i - mean(a)) y_i / (t Var(a))``
  (population moments over ``C``).  Exactly: the slope of the regression of ``a + y``
  on ``a`` is ``1 + L(y)``, ``Var(a + y) / Var(a) = 1 + 2 L(y) + Var(y) / Var(a)`` and
  ``Corr(a, a + y) = (1 + L(y)) / sqrt(Var(a + y) / Var(a))``; ``epsilon = 0`` is seed
  000's "compromise" ``L(y) = 0``.

``directions="ordering"`` is the ordering heuristic of Dandekar and Cox (seed 002 §4):
sensitive cells sorted by value, largest first, directions alternating down, up,
down, ... (a cell whose value is below its protection goes up and the alternation
continues), then the LP with the directions fixed.  ``directions`` may also be an
array of +1 (up) / -1 (down) on the sensitive cells (interior-shaped or one per system
cell): the LP with those directions (seed 000: "assume the down/up decisions have
already been made").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import xarray as xr
from scipy.optimize import Bounds, LinearConstraint, milp

from .linear import TabularSystem, cell_values, tabular_system
from .mechanisms.cta import DIRECTIONS, OBJECTIVES, OVER, PRESERVE, ControlledTabularAdjustment
from .table import Table

__all__ = ["CTAResult", "cta", "cta_stats"]


@dataclass(frozen=True, eq=False)
class CTAResult:
    """The adjusted release and how it was found.

    Attributes
    ----------
    release : Release
        Adjusted interior in ``published``, adjusted totals in ``margins``.
    adjustment : xarray.DataArray
        ``y`` on the interior cells.
    y : ndarray
        ``y`` on every cell of ``system`` (interior, then the totals).
    directions : ndarray
        +1 (up) / -1 (down) for sensitive cells, 0 elsewhere, system order.
    objective : float
        The objective value of the returned adjustment.
    status : str
        ``"optimal"`` (gap 0 within HiGHS tolerances) or ``"time_limit"``.
    gap : float
        Relative MIP gap reported by HiGHS (0 for the LP of the ordering heuristic).
    stats : xarray.Dataset
        :func:`cta_stats` of the adjustment.
    """

    release: object
    adjustment: xr.DataArray
    y: np.ndarray
    directions: np.ndarray
    objective: float
    status: str
    gap: float
    stats: xr.Dataset
    system: TabularSystem = field(repr=False)
    original: np.ndarray = field(repr=False)


def cta(table, sensitive, protection=None, capacity=None, objective: str = "abs",
        preserve=(), directions: str = "milp", *, over="interior", epsilon: float = 0.0,
        upper=None, rule: str | None = None, time_limit: float | None = None,
        mip_rel_gap: float = 0.0, groups=None) -> CTAResult:
    """Controlled tabular adjustment of a magnitude table.

    Parameters
    ----------
    table : Table, Contributions or array-like
        The original table with its totals structure.
    sensitive : array-like of bool or xarray.Dataset
        Sensitive cells: interior-shaped (totals then nonsensitive), one entry per
        cell of the tabular system, or the Dataset of :func:`riskengine.sensitivity.assess`
        (then ``protection`` defaults to its ``protection``, totals included).
    protection : float or array-like
        Protection levels ``p_i > 0`` of the sensitive cells (0 elsewhere); a scalar
        applies to every sensitive cell.
    capacity : float or array-like
        Largest move of each nonsensitive cell (>= 0, ``inf`` allowed).  Interior-shaped:
        a total's capacity is the sum of its cells' (so ``0.2 * table.values`` is "20 %
        of each cell's value" for totals too); or one per system cell; or a scalar.
    objective : {"abs", "relative"}
    preserve : sequence of {"mean", "variance"}
    directions : {"milp", "ordering"} or array-like of +1/-1
        MILP, ordering heuristic, or given directions of the sensitive cells.
    over : {"interior", "sensitive", "all"} or array-like of bool
        The cells over which ``preserve`` holds.
    epsilon : float
        ``|L(y)| <= epsilon`` for ``"variance"``.
    upper : float or array-like, optional
        Largest move of each sensitive cell (>= its protection); default: its
        protection plus the sum of every protection and every finite capacity (a
        big-M that does not bind in practice: check ``directions`` moves against it).
    rule : str, optional
        The sensitivity rule, recorded in the (public) mechanism.
    time_limit : float, optional
        Seconds for HiGHS; on the limit the best solution is returned with its gap.
    mip_rel_gap : float
        Relative gap at which HiGHS stops (default 0: prove optimality).
    groups : dict, optional
        One level of subtotals, ``{dim: [[category indices], ...]}`` (as in
        :func:`riskengine.suppress`): the subtotals are cells of the system too (adjusted,
        additive; interior-shaped ``capacity`` gives each the sum of its cells') and the
        release carries them.

    Returns
    -------
    CTAResult

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[20.0, 30.0, 10.0], [15.0, 5.0, 40.0]]), dims=("r", "c"))
    >>> sens = np.array([[False, False, False], [False, True, False]])
    >>> res = rk.cta(t, sens, protection=3.0, capacity=0.5 * t.values)
    >>> res.status, round(res.objective, 6)
    ('optimal', 12.0)
    >>> res.adjustment.round(9).values.tolist()
    [[0.0, 0.0, 0.0], [3.0, -3.0, 0.0]]
    """
    preserve = _preserve(preserve)
    prep = _prepare(table, sensitive, protection, capacity, objective, preserve, directions,
                    over, epsilon, upper, groups)
    extra = _quality_rows(prep, preserve, epsilon)
    if isinstance(directions, str):
        fixed = (_ordering(prep.a, prep.p, prep.u, prep.sens) if directions == "ordering"
                 else None)
    else:
        fixed = cell_values(directions, prep.system, "directions", fill=0.0)
        bad = prep.sens & ~np.isin(fixed, (-1.0, 1.0))
        if bad.any():
            raise ValueError(f"directions must be +1 or -1 on every sensitive cell, got "
                             f"{fixed[bad][0]:g} at {prep.system.labels()[int(np.argmax(bad))]}")
        fixed = np.where(prep.sens, fixed, 0).astype(np.int64)
        directions = "given"
    y, dirs, _, status, gap = _solve(prep, extra, fixed, time_limit, mip_rel_gap)
    mech = ControlledTabularAdjustment(rule=rule, objective=prep.objective, preserve=preserve,
                                       over=prep.over_name, directions=directions,
                                       epsilon=epsilon)
    return _finish(prep, y, dirs, status, gap, mech)


@dataclass(frozen=True, eq=False)
class _Problem:
    table: Table
    system: TabularSystem
    a: np.ndarray
    sens: np.ndarray
    p: np.ndarray
    e: np.ndarray
    u: np.ndarray
    w: np.ndarray
    over: np.ndarray
    over_name: str
    objective: str


def _prepare(table, sensitive, protection, capacity, objective, preserve, directions, over,
             epsilon, upper, groups=None) -> _Problem:
    from .contributions import Contributions
    from .sensitivity import cell_vector
    if isinstance(table, Contributions):
        table = table.table
    if not isinstance(table, Table):
        table = Table(table)
    objective = _choice(objective, "objective", OBJECTIVES)
    if isinstance(directions, str):
        _choice(directions, "directions", DIRECTIONS)
    for q in preserve:
        _choice(q, "preserve", PRESERVE)
    eps = float(epsilon)
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got epsilon={epsilon!r}")
    system = tabular_system(table.dims, table.shape, table.margins, groups)
    a = system.vector(table.values).astype(float)
    if isinstance(sensitive, xr.Dataset):
        ds = sensitive
        sens = cell_vector(ds, "sensitive", system).astype(bool)
        if protection is None:
            protection = cell_vector(ds, "protection", system)
    else:
        sens = cell_values(sensitive, system, "sensitive", fill=0, dtype=None)
        if sens.dtype != bool:
            raise TypeError(f"sensitive must be a boolean mask, got dtype {sens.dtype}")
    if protection is None or capacity is None:
        raise TypeError("cta needs protection= and capacity=")
    p = cell_values(protection, system, "protection", fill=0.0, scalar_mask=sens)
    e = cell_values(capacity, system, "capacity", fill="sum", allow_inf=True)
    labels = system.labels()
    if np.any(p < 0):
        raise ValueError(f"protection must be >= 0, got {p[p < 0][0]:g} at "
                         f"{labels[int(np.argmax(p < 0))]}")
    bad = ~sens & (p > 0)
    if bad.any():
        raise ValueError(f"protection {p[bad][0]:g} is given for the nonsensitive cell "
                         f"{labels[int(np.argmax(bad))]}; only sensitive cells have "
                         "protection levels")
    bad = sens & (p <= 0)
    if bad.any():
        raise ValueError(f"sensitive cell {labels[int(np.argmax(bad))]} needs a "
                         "protection level > 0")
    if np.any(e < 0):
        raise ValueError(f"capacity must be >= 0, got {e[e < 0][0]:g} at "
                         f"{labels[int(np.argmax(e < 0))]}")
    if upper is None:
        big = float(np.sum(p) + np.sum(np.where(np.isfinite(e), e, 0.0)))
        u = np.where(sens, p + big, 0.0)
    else:
        u = cell_values(upper, system, "upper", fill=0.0, scalar_mask=sens)
        bad = sens & ~(u >= p)
        if bad.any():
            raise ValueError(f"upper must be >= protection for every sensitive cell; at "
                             f"{labels[int(np.argmax(bad))]} upper={u[bad][0]:g} < "
                             f"protection={p[bad][0]:g}")
    over_mask, over_name = _over(over, system, sens)
    return _Problem(table, system, a, sens, p, e, u, _weights(a, objective), over_mask,
                    over_name, objective)


def _quality_rows(prep: _Problem, preserve, epsilon) -> list:
    """``(c, lo, hi)``: ``lo <= c @ y <= hi`` for each quality constraint."""
    idx = np.flatnonzero(prep.over)
    rows = []
    if "mean" in preserve:
        c = np.zeros(prep.a.size)
        c[idx] = 1.0
        rows.append((c, 0.0, 0.0))
    if "variance" in preserve:
        rows.append((_l_coefficients(prep.a, idx), -float(epsilon), float(epsilon)))
    return rows


def _finish(prep: _Problem, y, dirs, status, gap, mech) -> CTAResult:
    from .release import Release
    system, a, table = prep.system, prep.a, prep.table
    # publish an exactly additive table: totals recomputed from the adjusted interior
    adj_int = np.maximum(a[: system.n_interior] + y[: system.n_interior], 0.0)
    adj = system.vector(adj_int.reshape(system.shape)).astype(float)
    y = adj - a
    interior, margins, subtotals = system.release_parts(adj)
    release = Release(published=interior, margins=margins, mechanism=mech,
                      dims=table.dims, coords=table.coords, kind="magnitude",
                      groups=system.groups or None, subtotals=subtotals or None)
    adjustment = xr.DataArray(y[: system.n_interior].reshape(system.shape), dims=table.dims,
                              coords=table.coords, name="adjustment",
                              attrs={"method": "cta", "objective": prep.objective})
    stats = cta_stats(a, y, prep.sens, system)
    return CTAResult(release, adjustment, y, dirs, float(np.sum(prep.w * np.abs(y))), status,
                     gap, stats, system, a)


def _solve(prep: _Problem, extra, fixed, time_limit, gap, minabs=None):
    """The MILP (or, with ``fixed`` directions, the LP) in variables [y+, y-, I, (w)].

    ``extra``: rows ``(c, lo, hi)`` with ``lo <= c @ y <= hi``.  ``minabs=(c, c0)``:
    minimise ``|c @ y + c0|`` (an extra variable ``w >= +-(c @ y + c0)``) instead of the cost.
    """
    A, a, sens, p, e, u = prep.system.A, prep.a, prep.sens, prep.p, prep.e, prep.u
    n = a.size
    si = np.flatnonzero(sens)
    s = si.size
    nw = 0 if minabs is None else 1
    nv = 2 * n + s + nw
    down_cap = np.where(sens, np.minimum(u, a), np.minimum(e, a))
    up_cap = np.where(sens, u, e)
    lb = np.zeros(nv)
    ub = np.concatenate([up_cap, down_cap, np.ones(s), np.full(nw, np.inf)])
    can_down = down_cap[si] >= p[si]
    lb[2 * n:2 * n + s][~can_down] = 1.0     # a cell below its protection can only go up
    if fixed is not None:
        if np.any(~can_down & (fixed[si] < 0)):
            raise ValueError("a fixed down direction is infeasible for a cell below its "
                             "protection")
        lb[2 * n:2 * n + s] = ub[2 * n:2 * n + s] = (fixed[si] > 0).astype(float)
    rows = [sp.hstack([A, -A, sp.csr_matrix((A.shape[0], s + nw))])]
    lo, hi = [np.zeros(A.shape[0])], [np.zeros(A.shape[0])]
    if s:
        k = np.arange(s)

        def mat(col_y, coef_i):
            m = sp.lil_matrix((s, nv))
            m[k, col_y] = 1.0
            m[k, 2 * n + k] = coef_i
            return m.tocsr()
        rows += [mat(si, -p[si]), mat(si, -u[si]), mat(n + si, p[si]), mat(n + si, down_cap[si])]
        lo += [np.zeros(s), np.full(s, -np.inf), p[si], np.full(s, -np.inf)]
        hi += [np.full(s, np.inf), np.zeros(s), np.full(s, np.inf), down_cap[si]]
    for c, clo, chi in extra:
        row = np.zeros(nv)
        row[:n], row[n:2 * n] = c, -c
        rows.append(sp.csr_matrix(row))
        lo.append(np.full(1, clo))
        hi.append(np.full(1, chi))
    if minabs is not None:
        c, c0 = minabs
        for sign in (1.0, -1.0):             # w - sign (c @ y) >= sign c0
            row = np.zeros(nv)
            row[:n], row[n:2 * n], row[-1] = -sign * c, sign * c, 1.0
            rows.append(sp.csr_matrix(row))
            lo.append(np.full(1, sign * c0))
            hi.append(np.full(1, np.inf))
    cons = LinearConstraint(sp.vstack(rows).tocsr(), np.concatenate(lo), np.concatenate(hi))
    if minabs is None:
        cost = np.concatenate([prep.w, prep.w, np.zeros(s)])
    else:
        cost = np.zeros(nv)
        cost[-1] = 1.0
    integrality = (np.concatenate([np.zeros(2 * n), np.ones(s), np.zeros(nw)])
                   if fixed is None else None)
    opts = {"mip_rel_gap": gap, "presolve": True}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    res = milp(cost, constraints=cons, bounds=Bounds(lb, ub), integrality=integrality,
               options=opts)
    if res.x is None:
        why = {2: "infeasible: no adjustment meets every protection within the capacities "
                  "(raise capacities or upper, or drop preserve constraints)",
               1: "stopped at the time limit before any feasible adjustment was found"}
        raise ValueError(f"CTA {why.get(res.status, res.message)} (HiGHS: {res.message})")
    if fixed is None and s:
        # HiGHS accepts binaries within its integrality tolerance (1e-6), which could let
        # a sensitive cell move by p (1 - 1e-6): fix the directions it found and solve
        # the LP again, exactly (its MIP status and gap are kept)
        found = np.zeros(n, np.int64)
        found[si] = np.where(res.x[2 * n:2 * n + s] > 0.5, 1, -1)
        try:
            y, dirs, fun, _, _ = _solve(prep, extra, found, time_limit, gap, minabs)
        except ValueError:
            pass
        else:
            return y, dirs, fun, ("optimal" if res.status == 0 else "time_limit"), \
                float(getattr(res, "mip_gap", 0.0) or 0.0)
    x = res.x
    y = x[:n] - x[n:2 * n]
    dirs = np.zeros(n, np.int64)
    dirs[si] = np.where(x[2 * n:2 * n + s] > 0.5, 1, -1)
    status = "optimal" if res.status == 0 else "time_limit"
    g = getattr(res, "mip_gap", None)
    g = 0.0 if (g is None or fixed is not None) else float(g)
    return y, dirs, float(res.fun), status, g


def _l_coefficients(a, idx):
    """``L(y) = c @ y``: ``c_i = (a_i - mean) / (t Var(a))`` on the cells ``idx``."""
    t = idx.size
    var = float(np.var(a[idx])) if t else 0.0
    if t < 2 or not var > 0:
        raise ValueError(f"preserving variance needs at least two cells with different values "
                         f"in the set (got {t} cells, variance {var:g})")
    c = np.zeros(a.size)
    c[idx] = (a[idx] - a[idx].mean()) / (t * var)
    return c


def _ordering(a, p, u, sens):
    """Directions of the ordering heuristic: largest first, alternating down/up."""
    si = np.flatnonzero(sens)
    order = si[np.lexsort((si, -a[si]))]     # by value descending, ties by cell index
    out = np.zeros(a.size, np.int64)
    nxt = -1
    for i in order:
        if nxt < 0 and min(u[i], a[i]) < p[i]:
            out[i] = 1                       # cannot go down: up, and keep the alternation
            continue
        out[i] = nxt
        nxt = -nxt
    return out


def _weights(a, objective):
    if objective == "abs":
        return np.ones(a.size)
    pos = a[a > 0]
    delta = float(pos.min()) if pos.size else 1.0
    return 1.0 / np.maximum(a, delta)


def _over(over, system, sens):
    n = system.n_var
    if isinstance(over, str):
        _choice(over, "over", OVER)
        if over == "interior":
            m = np.zeros(n, bool)
            m[: system.n_interior] = True
        elif over == "sensitive":
            m = sens.copy()
        else:
            m = np.ones(n, bool)
        return m, over
    m = cell_values(over, system, "over", fill=0, dtype=None)
    if m.dtype != bool:
        raise TypeError(f"over must be 'interior', 'sensitive', 'all' or a boolean mask, got "
                        f"dtype {m.dtype}")
    return m, "custom"


def _preserve(preserve) -> tuple:
    if isinstance(preserve, str):
        preserve = (preserve,)
    if not isinstance(preserve, (tuple, list)):
        raise TypeError(f"preserve must be a sequence of {PRESERVE}, got {preserve!r}")
    return tuple(_choice(q, "preserve", PRESERVE) for q in preserve)


def _choice(x, name, options):
    if not isinstance(x, str) or x not in options:
        raise ValueError(f"unknown {name} {x!r}; known: {', '.join(map(repr, options))}")
    return x


def cta_stats(a, y, sensitive, system: TabularSystem | None = None) -> xr.Dataset:
    """Seed 000 Table 3's statistics of an adjustment, per set of cells.

    For the sensitive cells, the interior cells and all cells (population moments):
    ``corr`` = Corr(a, a + y), ``slope`` = slope of the regression of a + y on a
    (= 1 + L(y)), ``var_ratio`` = Var(a + y) / Var(a), ``mean_change`` = mean(y),
    ``L`` = Cov(a, y) / Var(a), ``abs_adjustment`` = sum |y| and ``n`` cells.

    Examples
    --------
    >>> import numpy as np
    >>> st = cta_stats(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, -0.5]),
    ...                np.array([True, False, True]))
    >>> float(st.slope.sel(cells="all")), float(st.var_ratio.sel(cells="all"))
    (0.5, 0.25)
    """
    a, y = np.asarray(a, float), np.asarray(y, float)
    sens = np.asarray(sensitive, bool)
    n_int = system.n_interior if system is not None else a.size
    interior = np.zeros(a.size, bool)
    interior[:n_int] = True
    sets = {"sensitive": sens, "interior": interior, "all": np.ones(a.size, bool)}
    cols = {k: [] for k in ("corr", "slope", "var_ratio", "mean_change", "L", "abs_adjustment",
                            "n")}
    for m in sets.values():
        aa, bb = a[m], a[m] + y[m]
        va = float(np.var(aa)) if aa.size else 0.0
        ok = aa.size >= 2 and va > 0
        cov = float(np.mean((aa - aa.mean()) * (bb - bb.mean()))) if aa.size else np.nan
        vb = float(np.var(bb)) if aa.size else np.nan
        cols["corr"].append(cov / np.sqrt(va * vb) if ok and vb > 0 else np.nan)
        cols["slope"].append(cov / va if ok else np.nan)
        cols["var_ratio"].append(vb / va if ok else np.nan)
        cols["mean_change"].append(float(y[m].mean()) if aa.size else np.nan)
        cols["L"].append(cov / va - 1.0 if ok else np.nan)
        cols["abs_adjustment"].append(float(np.abs(y[m]).sum()))
        cols["n"].append(int(m.sum()))
    return xr.Dataset({k: ("cells", np.asarray(v)) for k, v in cols.items()},
                      coords={"cells": list(sets)},
                      attrs={"method": "CTA statistics (seed 000 Table 3)",
                             "moments": "population (divide by n)"})
