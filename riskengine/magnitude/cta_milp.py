"""Controlled tabular adjustment (CTA): the MILP of seeds 000 and 002 (the mathematics of
``rk.cta``, which builds the release: :mod:`riskengine.mechanisms.cta`).

Every cell of the tabular system (interior and published totals; vector ``a``,
``T a = 0``, :func:`riskengine.tabular.tabular_system`) gets an adjustment
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

On a table of counts (``Table.kind == "count"``) the adjustments are whole numbers: ``y+``
and ``y-`` are integer variables, a protection level is rounded up and a capacity or an
upper bound down to a whole number (an upper bound that falls below its cell's rounded-up
protection is an error), so the adjusted table holds counts, adds up exactly and meets
every protection level; the release stays a count table.

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

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import xarray as xr
from scipy.optimize import Bounds, LinearConstraint, milp

from ..table import Table
from ..tabular import TabularSystem, cell_values, tabular_system
from .contributions import Contributions
from .protection import check_coverage
from .sensitivity import cell_vector

__all__ = ["DIRECTIONS", "OBJECTIVES", "OVER", "PRESERVE", "CTAProblem", "CTASolution",
           "adjust", "clean_preserve", "cta_stats", "finish", "given_directions", "ordering",
           "prepare", "quality_rows", "solve"]

#: objectives: sum |y|, or sum |y| / a
OBJECTIVES = ("abs", "relative")
#: how the directions of the sensitive cells are chosen: by the MILP, or by the ordering
#: heuristic (then one LP); an array of +1 / -1 gives them
DIRECTIONS = ("milp", "ordering")
#: quality constraints
PRESERVE = ("mean", "variance")
#: the cells over which the quality constraints hold (or a boolean mask)
OVER = ("interior", "sensitive", "all")


@dataclass(frozen=True, eq=False)
class CTAProblem:
    """One CTA instance, every vector over the cells of ``system`` (interior, totals)."""

    table: Table
    system: TabularSystem
    a: np.ndarray          #: original values
    sens: np.ndarray       #: sensitive cells
    p: np.ndarray          #: protection levels (> 0 on sensitive cells, 0 elsewhere)
    e: np.ndarray          #: capacities (largest move of a nonsensitive cell; inf allowed)
    u: np.ndarray          #: largest move of a sensitive cell
    w: np.ndarray          #: objective weight of |y_i|
    over: np.ndarray       #: the cells of the quality constraints
    over_name: str         #: "interior", "sensitive", "all" or "custom" (a mask)
    objective: str
    integer: bool = False  #: a count table: whole-number adjustments (integer variables)


@dataclass(frozen=True, eq=False)
class CTASolution:
    """An adjustment of an exactly additive table (:func:`finish`)."""

    y: np.ndarray          #: adjustment of every cell (system order)
    adjusted: np.ndarray   #: ``a + y``: the adjusted cells, totals recomputed from the interior
    directions: np.ndarray  #: +1 (up) / -1 (down) on sensitive cells, 0 elsewhere
    objective: float       #: ``sum w |y|``
    status: str            #: "optimal" or "time_limit"
    gap: float             #: relative MIP gap reported by HiGHS (0 for an LP)


def adjust(prep: CTAProblem, preserve, epsilon, directions, time_limit=None,
           mip_rel_gap: float = 0.0) -> CTASolution:
    """The optimal adjustment of ``prep`` under the quality constraints ``preserve``:
    the MILP (``directions="milp"``), the ordering heuristic's LP (``"ordering"``), or the
    LP with given directions (an array of +1 / -1 on the sensitive cells).

    Examples
    --------
    >>> import numpy as np
    >>> t = Table(np.array([[20.0, 30.0, 10.0], [15.0, 5.0, 40.0]]), dims=("r", "c"))
    >>> sens = np.array([[False, False, False], [False, True, False]])
    >>> prep = prepare(t, sens, 3.0, 0.5 * t.values, "abs", (), "milp", "interior", 0.0, None)
    >>> sol = adjust(prep, (), 0.0, "milp")
    >>> sol.status, round(sol.objective, 6), sol.y[:6].round(9).tolist()
    ('optimal', 12.0, [0.0, 0.0, 0.0, 3.0, -3.0, 0.0])
    """
    extra = quality_rows(prep, preserve, epsilon)
    if isinstance(directions, str):
        fixed = (ordering(prep.a, prep.p, prep.u, prep.sens) if directions == "ordering"
                 else None)
    else:
        fixed = given_directions(directions, prep)
    y, dirs, _, status, gap = solve(prep, extra, fixed, time_limit, mip_rel_gap)
    return finish(prep, y, dirs, status, gap)


def given_directions(directions, prep: CTAProblem) -> np.ndarray:
    """Directions given as an array (interior-shaped or one per system cell): +1 / -1 on
    every sensitive cell, 0 elsewhere."""
    fixed = cell_values(directions, prep.system, "directions", fill=0.0)
    bad = prep.sens & ~np.isin(fixed, (-1.0, 1.0))
    if bad.any():
        raise ValueError(f"directions must be +1 or -1 on every sensitive cell, got "
                         f"{fixed[bad][0]:g} at "
                         f"{prep.system.labels(prep.table.coords)[int(np.argmax(bad))]}")
    return np.where(prep.sens, fixed, 0).astype(np.int64)


def finish(prep: CTAProblem, y, dirs, status, gap) -> CTASolution:
    """The solver's ``y`` as an exactly additive table: the adjusted interior clipped at 0,
    every total recomputed from it (the solver meets its equations to rounding only)."""
    system, a = prep.system, prep.a
    if prep.integer:       # integer variables, met by HiGHS within 1e-6: the whole numbers
        y = np.round(y)
    adj_int = np.maximum(a[: system.n_interior] + y[: system.n_interior], 0.0)
    adj = system.vector(adj_int.reshape(system.shape)).astype(float)
    y = adj - a
    return CTASolution(y, adj, dirs, float(np.sum(prep.w * np.abs(y))), status, gap)


def prepare(table, sensitive, protection, capacity, objective, preserve, directions, over,
            epsilon, upper, groups=None) -> CTAProblem:
    """Validate the inputs of :func:`riskengine.cta` (same names) into a :class:`CTAProblem`."""
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
    system = tabular_system(table.dims, table.shape, table.margins, groups,
                            coords=table.coords)
    a = system.vector(table.values).astype(float)
    check_coverage(sensitive, "sensitive")
    check_coverage(protection, "protection")
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
    labels = system.labels(table.coords)
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
    integer = table.kind == "count"
    if integer:
        # whole-number moves: at least the protection rounded up, at most the capacity
        # rounded down (the 1e-9 keeps a level computed as 3.0000000001 at 3)
        p = np.where(sens, np.ceil(p - 1e-9), 0.0)
        e = np.where(np.isfinite(e), np.floor(e + 1e-9), e)
    if upper is None:
        big = float(np.sum(p) + np.sum(np.where(np.isfinite(e), e, 0.0)))
        u = np.where(sens, p + big, 0.0)
    else:
        u = cell_values(upper, system, "upper", fill=0.0, scalar_mask=sens)
        if integer:
            given = u
            u = np.where(np.isfinite(u), np.floor(u + 1e-9), u)
            bad = sens & ~(u >= p)
            if bad.any():
                j = int(np.argmax(bad))
                raise ValueError(f"upper must be >= protection for every sensitive cell; on "
                                 f"a count table moves are whole numbers: at {labels[j]} "
                                 f"upper={given[j]:g} rounds down to {u[j]:g}, below the "
                                 f"protection rounded up, {p[j]:g}")
        bad = sens & ~(u >= p)
        if bad.any():
            raise ValueError(f"upper must be >= protection for every sensitive cell; at "
                             f"{labels[int(np.argmax(bad))]} upper={u[bad][0]:g} < "
                             f"protection={p[bad][0]:g}")
    over_mask, over_name = _over(over, system, sens)
    return CTAProblem(table, system, a, sens, p, e, u, _weights(a, objective), over_mask,
                      over_name, objective, integer)


def quality_rows(prep: CTAProblem, preserve, epsilon) -> list:
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


def solve(prep: CTAProblem, extra, fixed, time_limit, gap, minabs=None):
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
    # the directions' binaries (unless fixed); on a count table y+ and y- too
    integrality = np.concatenate([np.full(2 * n, 1.0 if prep.integer else 0.0),
                                  np.full(s, 1.0 if fixed is None else 0.0), np.zeros(nw)])
    if not integrality.any():
        integrality = None
    opts = {"mip_rel_gap": gap, "presolve": True}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    res = milp(cost, constraints=cons, bounds=Bounds(lb, ub), integrality=integrality,
               options=opts)
    if res.x is None:
        why = {2: "infeasible: no adjustment meets every protection within the capacities "
                  "(raise capacities or upper, or drop preserve constraints)"
                  + ("; on a count table the adjustments are whole numbers, which exact "
                     "quality constraints (variance with epsilon=0) rarely allow: raise "
                     "epsilon, or adjust the table as magnitudes (Table(..., "
                     "kind='magnitude'))" if prep.integer else ""),
               1: "stopped at the time limit before any feasible adjustment was found"}
        raise ValueError(f"CTA {why.get(res.status, res.message)} (HiGHS: {res.message})")
    if fixed is None and s:
        # HiGHS accepts binaries within its integrality tolerance (1e-6), which could let
        # a sensitive cell move by p (1 - 1e-6): fix the directions it found and solve
        # the LP again, exactly (its MIP status and gap are kept)
        found = np.zeros(n, np.int64)
        found[si] = np.where(res.x[2 * n:2 * n + s] > 0.5, 1, -1)
        try:
            y, dirs, fun, _, _ = solve(prep, extra, found, time_limit, gap, minabs)
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
    g = 0.0 if (g is None or integrality is None) else float(g)
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


def ordering(a, p, u, sens):
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


def clean_preserve(preserve) -> tuple:
    """``preserve`` as a tuple of names of :data:`PRESERVE` (a single name is allowed)."""
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
