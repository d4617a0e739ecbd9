"""Complementary cell suppression (seed 004 §3.1-3.3; Fischetti & Salazar's model).

A sensitive cell with protection ``p`` (below) and ``q`` (above) is protected by a
set S of suppressed cells when some table consistent with the release puts it at
least ``p`` below and some at least ``q`` above its true value: with the published
cells fixed, that is a deviation ``y`` with ``T y = 0``, ``y = 0`` off S, ``x + y >= 0``
and ``y_s <= -p`` (resp. ``y_s >= q``) -- seed 004's "alternating cycle of suppressed
cells through (I, J) with g(Y) >= p", written for the general system ``T x = 0``
(:mod:`riskengine.linear`), so 2-D tables with totals, k-D tables with their margins and
tables with one level of subtotals are handled alike.  Interior cells are suppressed;
totals and subtotals are published unless ``suppress_totals=True`` (then a total may be
sensitive itself, e.g. a margin with one dominant respondent, and any total may serve as
a complementary suppression).

``method="heuristic"`` (seed 004 §3.2-3.3, the network/LP method of the U.S. Census
Bureau and Statistics Canada): sensitive cells are protected one at a time, in
decreasing order of protection (ties: table order).  For each cell and direction that
the suppressions so far do not already protect, an LP finds the cheapest deviation
``y`` as above, where moving a cell that is already suppressed is free and moving
another cell ``j`` by ``|y_j|`` costs ``w_j |y_j| / p`` (``w_j`` its suppression cost:
the seed's "c = a_ij" / "c = 1"); the cells the LP moves are suppressed.  A clean-up
pass then publishes again every complementary cell, most expensive first, that no
protection needs (the heuristics of the field leave such cells behind).

``method="optimal"`` (Fischetti & Salazar 2001): minimise ``sum w_j z_j`` over one
binary ``z_j`` per candidate cell (sensitive cells fixed to 1) subject to: for every
sensitive cell and direction some deviation ``y`` with ``T y = 0``,
``-x_j z_j <= y_j <= M_j z_j`` reaches ``y_s = -p`` (resp. ``+q``).  Solved by row
generation over capacity cuts with the heuristic's pattern as incumbent
(:func:`riskengine._csp_optimal.optimal`): gap 0, or at ``time_limit`` the best protecting
pattern found with its proven gap (``release.info["status"]``, ``["gap"]``).

Every returned pattern is audited by the LP audit (:func:`riskengine.audit.intervals`,
no a-priori caps) before it is returned.  Determinism: costs carry a tie-break of
relative size 1e-7 x (cell rank), so equal-cost alternatives are decided by table order
and not by the solver's path; HiGHS itself is deterministic.  Zero cells are structural
by default (seed 004 §3.3: in a positive table a zero cell has capacity 0) and are never
suppressed.
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr

from . import _csp, _csp_optimal
from . import _validate as V
from .audit import intervals, protection_tol
from .linear import cell_values, tabular_system

__all__ = ["COSTS", "METHODS", "suppress"]

METHODS = ("heuristic", "optimal")
COSTS = ("value", "count")


def suppress(table, sensitive, protection=None, method: str = "heuristic",
             cost: str = "value", groups=None, *, suppress_zeros: bool = False,
             suppress_totals: bool = False, time_limit: float | None = None):
    """Protect the sensitive cells of ``table`` by complementary cell suppression.

    Parameters
    ----------
    table : rk.Table, rk.Contributions, array or xarray.DataArray
        Nonnegative magnitudes or counts; its ``margins`` (default: all totals of a 2-D
        table, every (k-1)-way margin of a k-D table) are published.
    sensitive : bool array, or the Dataset of :func:`riskengine.sensitivity.assess`
        Primary suppressions: of the table's shape (interior cells), or one entry per
        cell of the tabular system (interior, totals, subtotals; the order of
        :func:`riskengine.linear.tabular_system`), or the ``assess`` Dataset (totals
        included; ``protection`` then defaults to its ``protection``).
    protection : array, scalar or a pair ``(lower, upper)``
        Protection each sensitive cell needs below / above its value, in the same forms
        as ``sensitive`` (a scalar applies to every sensitive cell).
    method : {"heuristic", "optimal"}
    cost : {"value", "count"}
        Minimise the total value or the number of suppressed cells.
    groups : dict, optional
        One level of subtotals, ``{dim: [[category indices], ...]}``; the subtotals are
        published (and carried by the release).
    suppress_zeros : bool
        Allow zero cells as complementary suppressions (default: never).
    suppress_totals : bool
        Allow totals and subtotals to be suppressed (needed when one is sensitive; they
        then also serve as complementary suppressions).  Default: every total published.
    time_limit : float, optional
        Seconds for ``method="optimal"`` (the whole call: the heuristic's starting pattern
        included; the final audit and the round in progress may add a little); at the
        limit the best protecting pattern found is returned with
        ``info["status"] == "time_limit"`` and its proven ``gap``.

    Returns
    -------
    rk.Release
        Suppressed cells are NaN (interior in ``published``, totals in ``margins``);
        mechanism ``rk.CellSuppression(method, cost, suppress_zeros, suppress_totals)``.
        ``release.info``: number and value of suppressed cells (all, complementary,
        totals), and for ``"optimal"`` the ``status``, ``gap`` and ``lower_bound``.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[20., 10, 20, 10, 20], [10, 10, 20, 5, 15],
    ...                        [40, 10, 10, 20, 10], [5, 5, 15, 10, 5]]), dims=("r", "c"))
    >>> sens = np.zeros((4, 5), bool); sens[0, 0] = sens[1, 2] = sens[2, 3] = sens[3, 3] = True
    >>> rel = rk.suppress(t, sens, 0.5 * t.values, method="optimal")
    >>> rel.info["n_complementary"], rel.info["value_complementary"], rel.info["status"]
    (4, 35.0, 'optimal')
    """
    from .mechanisms.suppression import CellSuppression
    mech = CellSuppression(method=method, cost=cost, suppress_zeros=suppress_zeros,
                           suppress_totals=suppress_totals)
    return mech.protect(table, sensitive=sensitive, protection=protection, groups=groups,
                        time_limit=time_limit)


def _pattern(table, sensitive, protection, method, cost, groups, suppress_zeros,
             suppress_totals, time_limit):
    """``(table, system, x, sens, mask, info)``: the suppression pattern over every cell of
    the system (interior, totals, subtotals), validated and audited."""
    from .contributions import Contributions
    from .table import Table
    t_start = time.perf_counter()
    V.choice(method, "method", METHODS)
    if time_limit is not None and not (np.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    V.choice(cost, "cost", COSTS)
    if isinstance(table, Contributions):
        table = table.table
    if not isinstance(table, Table):
        table = Table(table)
    system = tabular_system(table.dims, table.shape, table.margins, groups)
    x = system.vector(table.values).astype(float)
    sens, plo, phi = _sensitive(sensitive, protection, system)
    labels = system.labels()
    n_int = system.n_interior
    if not suppress_totals and sens[n_int:].any():
        j = n_int + int(np.argmax(sens[n_int:]))
        raise ValueError(f"{labels[j]} is sensitive, but totals are published: pass "
                         "suppress_totals=True to let totals be suppressed")
    short = sens & (plo > x + protection_tol(x))
    if short.any():
        j = int(np.argmax(short))
        raise ValueError(f"sensitive cell {labels[j]} has value {x[j]:g} but needs lower "
                         f"protection {plo[j]:g}: no nonnegative table puts it that far below")
    n = x.size
    w = x.copy() if cost == "value" else np.ones(n)
    # tie-break by table order; every cell keeps a positive cost
    pos = w[w > 0]
    floor = 1e-3 * (pos.min() if pos.size else 1.0)
    w = np.maximum(w, floor) * (1.0 + 1e-7 * np.arange(n) / n)
    cand = (x > 0) | suppress_zeros
    if not suppress_totals:
        cand[n_int:] = False
    cand |= sens
    prob = _csp.make_problem(system.A, x, sens, plo, phi, w, cand, labels)
    intr = _csp.make_intruder(prob)
    mask = _csp.cleanup(prob, _csp.heuristic(prob, intruder=intr), intruder=intr)
    info = {}
    if method == "optimal":
        # the limit covers the whole call: the heuristic's pattern came first
        left = None if time_limit is None else time_limit - (time.perf_counter() - t_start)
        mask, res = _csp_optimal.optimal(prob, mask, left)
        info = {"status": res["status"], "gap": res["gap"],
                "lower_bound": res["lower_bound"],
                "rounds": res["rounds"], "cuts": res["cuts"]}
    _check_protected(system, x, mask, sens, plo, phi, method, labels)
    return table, system, x, sens, mask, info


def _sensitive(sensitive, protection, system):
    """``(sens, lower, upper)`` over every cell of the system."""
    from .sensitivity import cell_vector
    if isinstance(sensitive, xr.Dataset):
        sens = cell_vector(sensitive, "sensitive", system).astype(bool)
        if protection is None:
            protection = cell_vector(sensitive, "protection", system)
    else:
        if isinstance(sensitive, xr.DataArray):
            sensitive = sensitive.transpose(*system.dims).values \
                if set(sensitive.dims) == set(system.dims) else sensitive.values
        sens = cell_values(sensitive, system, "sensitive", fill=0, dtype=None)
        if sens.dtype != bool:
            if not np.isin(sens, (0, 1)).all():
                raise ValueError("sensitive must be a boolean mask (or 0/1), got values "
                                 f"{np.unique(sens)[:5].tolist()}")
            sens = sens.astype(bool)
    if protection is None:
        raise TypeError("suppress needs protection= (or the Dataset of "
                        "rk.sensitivity.assess as sensitive)")
    if isinstance(protection, tuple) and len(protection) == 2:
        lo, hi = (_protection(p, system, sens, name)
                  for p, name in zip(protection, ("lower protection", "upper protection")))
    else:
        lo = hi = _protection(protection, system, sens, "protection")
    return sens, np.where(sens, lo, 0.0), np.where(sens, hi, 0.0)


def _protection(p, system, sens, name):
    if isinstance(p, xr.DataArray):
        p = p.transpose(*system.dims).values if set(p.dims) == set(system.dims) else p.values
    arr = cell_values(p, system, name, fill=0.0, scalar_mask=sens)
    if (arr < 0).any():
        j = int(np.argmax(arr < 0))
        raise ValueError(f"{name} must be finite and nonnegative, got {arr[j]:g} at "
                         f"{system.labels()[j]}")
    return arr


def _check_protected(system, x, mask, sens, plo, phi, method, labels):
    full = np.where(mask, np.nan, x)
    idx = np.flatnonzero(sens)
    lo, hi = intervals(system, full, only=idx)
    tol = protection_tol(x)
    for j in idx:
        if x[j] - lo[j] < plo[j] - tol or hi[j] - x[j] < phi[j] - tol:
            raise ValueError(f"the {method} pattern leaves sensitive cell {labels[j]} "
                             f"under-protected: interval [{lo[j]:g}, {hi[j]:g}] around "
                             f"{x[j]:g}, needs {plo[j]:g} below and {phi[j]:g} above")
