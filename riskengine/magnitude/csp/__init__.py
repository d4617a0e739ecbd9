"""Complementary cell suppression (seed 004 §3.1-3.3; Fischetti & Salazar's model): the
pattern, as vectors over the tabular system (:func:`find_pattern`; ``rk.suppress`` and
:class:`riskengine.CellSuppression` build the release from it).

A sensitive cell with protection ``p`` (below) and ``q`` (above) is protected by a
set S of suppressed cells when some table consistent with the release puts it at
least ``p`` below and some at least ``q`` above its true value: with the published
cells fixed, that is a deviation ``y`` with ``T y = 0``, ``y = 0`` off S, ``x + y >= 0``
and ``y_s <= -p`` (resp. ``y_s >= q``) -- seed 004's "alternating cycle of suppressed
cells through (I, J) with g(Y) >= p", written for the general system ``T x = 0``
(:mod:`riskengine.tabular`), so 2-D tables with totals, k-D tables with their margins and
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
(:func:`.optimal.optimal`): gap 0, or at ``time_limit`` the best protecting pattern
found with its proven gap (``info["status"]``, ``["gap"]``).

Every returned pattern is audited by the LP audit
(:func:`riskengine.magnitude.intervals.intervals`, no a-priori caps) before it is
returned.  Determinism: costs carry a tie-break of relative size 1e-7 x (cell rank), so
equal-cost alternatives are decided by table order and not by the solver's path; HiGHS
itself is deterministic.  Zero cells are structural by default (seed 004 §3.3: in a
positive table a zero cell has capacity 0) and are never suppressed.

The modules: :mod:`.problem` (the instance and what every solver needs; a leaf),
:mod:`.lp` and :mod:`.network` (the intruder's LP and the cheapest completion, by LPs or
by flows), :mod:`.heuristic` (heuristic and clean-up), :mod:`.optimal` (row generation).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ... import _validate as V
from ...tabular import TabularSystem
from ..intervals import intervals, protection_tol
from ..protection import sensitive_cells

# the solver modules by name: ``heuristic`` and ``optimal`` are also the names of their
# main functions, and this package keeps the modules under those names
from . import heuristic, optimal
from .network import network_form
from .problem import make_problem

__all__ = ["COSTS", "METHODS", "Pattern", "find_pattern"]

METHODS = ("heuristic", "optimal")
COSTS = ("value", "count")


class Pattern(NamedTuple):
    """A suppression pattern over every cell of the tabular system (system order)."""

    mask: np.ndarray      #: suppressed cells (sensitive cells included)
    sens: np.ndarray      #: sensitive (primary) cells
    plo: np.ndarray       #: protection each cell needs below its value (0: none)
    phi: np.ndarray       #: protection each cell needs above its value
    info: dict            #: for ``method="optimal"``: status, gap, lower_bound, rounds, cuts


def find_pattern(system: TabularSystem, x, sensitive, protection=None, *,
                 method: str = "heuristic", cost: str = "value", suppress_zeros: bool = False,
                 suppress_totals: bool = False, time_limit: float | None = None,
                 forced=None, frozen=None, costs=None) -> Pattern:
    """The complementary suppression pattern of the cell vector ``x``, validated and audited.

    Parameters
    ----------
    system : TabularSystem
        The table's structure (:func:`riskengine.tabular.tabular_system`).
    x : array
        The value of every cell of ``system`` (interior, totals, subtotals), nonnegative.
    sensitive, protection
        The sensitive cells and their protection levels, in the forms of
        :func:`riskengine.magnitude.protection.sensitive_cells` (the table's shape, one
        entry per system cell, the ``assess`` Dataset; a scalar or a ``(lower, upper)``
        pair of protections).
    method : {"heuristic", "optimal"}
    cost : {"value", "count"}
        Minimise the total value or the number of suppressed cells.
    suppress_zeros : bool
        Allow zero cells as complementary suppressions.
    suppress_totals : bool
        Allow totals and subtotals to be suppressed (and to be sensitive).
    time_limit : float, optional
        Seconds for ``method="optimal"`` (the whole call, the heuristic included).
    forced : bool vector over the system's cells, optional
        Cells suppressed whatever the pattern (tau-Argus's "unsafe" a-priori status, and
        the cells of a publication that no table publishes): they protect others and are
        never published again by the clean-up.
    frozen : bool vector, optional
        Cells that must stay published (tau-Argus's "safe" / "protected"): never a
        complementary suppression; a frozen sensitive cell is an error.
    costs : float vector, optional
        The cost of suppressing each cell (replaces ``cost``'s value or count; positive).

    Returns
    -------
    Pattern
        ``mask``, ``sens``, ``plo``, ``phi`` (vectors over the system) and ``info``.

    Examples
    --------
    >>> import numpy as np
    >>> from riskengine.tabular import tabular_system
    >>> s = tabular_system(("r", "c"), (2, 2))
    >>> x = s.vector(np.array([[5.0, 3.0], [2.0, 4.0]])).astype(float)
    >>> pat = find_pattern(s, x, np.array([[True, False], [False, False]]), 1.0)
    >>> pat.mask[: s.n_interior].tolist()     # the 2 x 2 cycle through the sensitive cell
    [True, True, True, True]
    """
    t_start = time.perf_counter()
    V.choice(method, "method", METHODS)
    if time_limit is not None and not (np.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    V.choice(cost, "cost", COSTS)
    x = np.asarray(x, dtype=float)
    if x.shape != (system.n_var,):
        raise ValueError(f"x must hold one value per cell of the tabular system "
                         f"({system.n_var}), got shape {x.shape}")
    sens, plo, phi = sensitive_cells(sensitive, protection, system)
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
    forced = _cell_mask(forced, n, "forced")
    frozen = _cell_mask(frozen, n, "frozen")
    clash = (sens | forced) & frozen
    if clash.any():
        j = int(np.argmax(clash))
        raise ValueError(f"cell {labels[j]} is {'sensitive' if sens[j] else 'forced'} and "
                         "frozen (safe): it cannot be both suppressed and published")
    w = x.copy() if cost == "value" else np.ones(n)
    if costs is not None:
        w = np.asarray(costs, dtype=float)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or (w < 0).any():
            raise ValueError(f"costs must be {n} finite nonnegative numbers (one per cell of "
                             "the system)")
        w = w.copy()
    # tie-break by table order; every cell keeps a positive cost
    pos = w[w > 0]
    floor = 1e-3 * (pos.min() if pos.size else 1.0)
    w = np.maximum(w, floor) * (1.0 + 1e-7 * np.arange(n) / n)
    cand = (x > 0) | suppress_zeros
    if not suppress_totals:
        cand[n_int:] = False
    cand &= ~frozen
    cand |= sens | forced
    # a forced cell is suppressed from the outset: a primary with no protection of its own
    prim = sens | forced
    prob = make_problem(system.A, np.nan_to_num(x), prim, plo, phi, w, cand, labels,
                        net=network_form(system.A))
    intr = heuristic.make_intruder(prob)
    mask = heuristic.cleanup(prob, heuristic.heuristic(prob, intruder=intr), intruder=intr)
    info = {}
    if method == "optimal":
        # the limit covers the whole call: the heuristic's pattern came first
        left = None if time_limit is None else time_limit - (time.perf_counter() - t_start)
        mask, res = optimal.optimal(prob, mask, left)
        info = {"status": res["status"], "gap": res["gap"],
                "lower_bound": res["lower_bound"],
                "rounds": res["rounds"], "cuts": res["cuts"]}
    _check_protected(system, x, mask, prim, plo, phi, method, labels)
    return Pattern(mask, sens, plo, phi, info)


def _cell_mask(m, n: int, name: str) -> np.ndarray:
    if m is None:
        return np.zeros(n, bool)
    m = np.asarray(m)
    if m.shape != (n,) or not (m.dtype == bool or np.isin(m, (0, 1)).all()):
        raise ValueError(f"{name} must be a boolean vector over the {n} cells of the system")
    return m.astype(bool)


def _check_protected(system, x, mask, sens, plo, phi, method, labels):
    """Raise unless the LP audit (no a-priori caps) finds every sensitive cell protected."""
    full = np.where(mask, np.nan, x)
    idx = np.flatnonzero(sens)
    tol = np.zeros(len(full))
    lo, hi = intervals(system, full, only=idx, tol_out=tol)   # each cell's own accuracy
    for j in idx:
        if x[j] - lo[j] < plo[j] - tol[j] or hi[j] - x[j] < phi[j] - tol[j]:
            raise ValueError(f"the {method} pattern leaves sensitive cell {labels[j]} "
                             f"under-protected: interval [{lo[j]:g}, {hi[j]:g}] around "
                             f"{x[j]:g}, needs {plo[j]:g} below and {phi[j]:g} above")
