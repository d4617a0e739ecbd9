"""Controlled tabular adjustment (seeds 000, 002): the mechanism's public description.

CTA replaces the value of every sensitive cell by a *safe* value, at least its
protection level away from the original (down or up), and adjusts the other
cells, totals included, within their capacities so that the table adds up; the
adjustments are chosen by a MILP (``rk.cta``; the mathematics is in
:mod:`riskengine.magnitude.cta_milp`, the bivariate alternating LPs of
``rk.cta_bivariate`` in :mod:`riskengine.magnitude.cta_bivariate`).  This module holds
the mechanism and the functional forms: they solve, then build the release.

**What is public.**  Following the publish-the-mechanism principle, a release
states the method and every choice that does not derive from confidential
data: the sensitivity rule (as a policy, e.g. ``"PPercent(p=15)"``), the
objective (``"abs"`` / ``"relative"``), the quality constraints (``preserve`` and
the set of cells they are taken ``over``, the bound ``epsilon`` on ``|L(y)|``)
and how the directions were chosen (``"milp"`` / ``"ordering"``).  *Not* public:
which cells are sensitive, their protection levels (they are functions of the
respondents' contributions) and the capacities (functions of the confidential
cell values, or of measurement-error estimates): publishing them would tell an
intruder which cells moved and by at least how much.

**No inference route.**  Without the protection levels and capacities there is no
likelihood of a release given an original table: ``rk.posterior`` on a CTA release is
an error saying so.  The utility of an adjustment is measured by :func:`cta_stats`
(``CTAResult.stats``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .. import _validate as V
from ..magnitude.cta_bivariate import alternate, bivariate_stats  # noqa: F401  (re-export)
from ..magnitude.cta_milp import (
    DIRECTIONS,
    OBJECTIVES,
    OVER,
    PRESERVE,
    CTAProblem,
    CTASolution,
    adjust,
    clean_preserve,
    cta_stats,
    prepare,
)
from ..magnitude.intervals import protection_tol
from ..protocol import Example, Mechanism, register
from ..release import Release
from ..table import Table
from ..tabular import TabularSystem
from ._examples import smallest_cell

# "cta" (the function) is not exported through the package: it would replace the
# package's attribute ``mechanisms.cta`` (this module), which mechanisms/__init__ refuses;
# ``rk.cta`` comes from this module directly (riskengine/__init__.py via riskengine.cta).
# ``cta_stats``, ``bivariate_stats`` and the option tuples are offered here too: the old
# modules riskengine.cta and riskengine.cta_bivariate (aliases of this one) offered them.
__all__ = ["BivariateCTAResult", "CTAResult", "ControlledTabularAdjustment", "cta", "cta_bivariate"]

_DIRECTIONS_RELEASE = DIRECTIONS + ("given",)


@register
class ControlledTabularAdjustment(Mechanism):
    """Controlled tabular adjustment with its public parameters.

    Parameters
    ----------
    rule : str, optional
        The sensitivity rule that defined the sensitive cells (a description).
    objective : {"abs", "relative"}
    preserve : sequence of {"mean", "variance"}
    over : {"interior", "sensitive", "all"}
        The cells over which ``preserve`` holds (``"custom"`` when a mask was used).
    directions : {"milp", "ordering", "given"}
    epsilon : float
        Bound on ``|L(y)|`` when ``"variance"`` is preserved.

    Examples
    --------
    >>> import riskengine as rk
    >>> m = rk.ControlledTabularAdjustment(rule="PPercent(p=15)", preserve=["mean"])
    >>> rk.mechanisms.mechanism_from_dict(m.to_dict()).to_dict() == m.to_dict()
    True
    """

    name = "cta"
    additive = True
    #: no inference route: see ``no_route``
    routes = ()
    no_route = ("a CTA release's adjusted values come from a MILP whose protection levels "
                "and capacities are confidential, so there is no likelihood to invert; for "
                "its utility use the CTA result's statistics (CTAResult.stats, cta_stats)")

    def __init__(self, rule: str | None = None, objective: str = "abs", preserve=(),
                 over: str = "interior", directions: str = "milp", epsilon: float = 0.0):
        self.rule = None if rule is None else str(rule)
        self.objective = V.choice(objective, "objective", OBJECTIVES)
        if isinstance(preserve, str):
            preserve = (preserve,)
        self.preserve = tuple(V.choice(p, "preserve", PRESERVE) for p in preserve)
        self.over = V.choice(over, "over", OVER + ("custom",))
        self.directions = V.choice(directions, "directions", _DIRECTIONS_RELEASE)
        eps = float(epsilon)
        if not (np.isfinite(eps) and eps >= 0):
            raise ValueError(f"epsilon must be a finite number >= 0, got epsilon={epsilon!r}")
        self.epsilon = eps

    def _params(self) -> dict:
        return {"rule": self.rule, "objective": self.objective, "preserve": list(self.preserve),
                "over": self.over, "directions": self.directions, "epsilon": self.epsilon}

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """A 3 x 3 table of magnitudes, cells (x, b) and (y, b) sensitive, protected by 3,
        every cell free to move by 10; on another table its smallest cell sensitive,
        protected by 1, every cell free to move by its value (``rng`` varies nothing).
        CTA has no inference route: the example serves ``riskengine protect``.

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the 3 x 3 table of magnitudes above).
        rng : numpy.random.Generator, optional
            Not used.

        Returns
        -------
        Example
            With the ``sensitive``, ``protection`` and ``capacity`` inputs of
            :meth:`protect`.
        """
        if table is None:
            table = Table(np.array([[20.5, 5.2, 30.1], [40.3, 8.4, 10.2], [6.1, 25.7, 12.3]]),
                          dims=("v", "w"), coords={"v": ["x", "y", "z"], "w": ["a", "b", "c"]})
            sensitive = np.zeros(table.shape, bool)
            sensitive[:2, 1] = True
            return Example(cls, table, inputs={"sensitive": sensitive, "protection": 3.0,
                                               "capacity": 10.0})
        return Example(cls, table, inputs={"sensitive": smallest_cell(table), "protection": 1.0,
                                           "capacity": np.asarray(table.values, float)})

    def protect(self, table, rng=None, *, sensitive, protection, capacity, upper=None):
        """The adjusted release (``rng`` is not used: CTA is deterministic).

        :func:`riskengine.cta` with this mechanism's public parameters.

        Parameters
        ----------
        table : Table, Contributions or array-like
            The original table with its totals structure.
        rng : numpy.random.Generator, optional
            Not used.
        sensitive : array-like of bool or xarray.Dataset
            Sensitive cells, as for :func:`riskengine.cta`.
        protection : float or array-like
            Protection levels of the sensitive cells.
        capacity : float or array-like
            Largest move of each nonsensitive cell.
        upper : float or array-like, optional
            Largest move of each sensitive cell (default as for :func:`riskengine.cta`).

        Returns
        -------
        rk.Release
            Adjusted interior in ``published``, adjusted totals in ``margins``.

        Raises
        ------
        ValueError
            If the mechanism's ``over`` is ``"custom"`` or its ``directions`` ``"given"``
            (they describe a release: protect with :func:`riskengine.cta`).
        """
        if self.over == "custom":
            raise ValueError("over='custom' describes a release; protect with rk.cta(over=mask)")
        if self.directions == "given":
            raise ValueError("directions='given' describes a release; protect with "
                             "rk.cta(directions=array)")
        return cta(table, sensitive, protection, capacity, objective=self.objective,
                   preserve=self.preserve, over=self.over, directions=self.directions,
                   epsilon=self.epsilon, upper=upper, rule=self.rule).release

    def validate_release(self, release) -> None:
        if release.published is None or np.isnan(np.asarray(release.published, float)).any():
            raise ValueError("a CTA release publishes every interior cell (no NaN, not None)")


@dataclass(frozen=True, eq=False)
class CTAResult:
    """The adjusted release and how it was found.

    Built by :func:`cta` and :func:`cta_bivariate`.

    Parameters
    ----------
    release, adjustment, y, directions, objective, status, gap, stats
        The attributes below, in this order.
    system : TabularSystem
        The tabular system of the table (interior, totals, subtotals): the order of ``y``
        and ``directions``.
    original : ndarray
        The original values on every cell of ``system``.

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


@dataclass(frozen=True, eq=False)
class BivariateCTAResult:
    """Both adjusted tables, the covariance history and seed 002's statistics.

    ``stats``: percent changes of covariance, correlation, regression coefficient of
    ``b`` on ``a``, ``Var(a)``, ``Var(b)`` (the columns of seed 002 Table 1) and the
    original correlation.

    Parameters
    ----------
    a, b : CTAResult
        The adjustments of the first and the second table.
    history : tuple of float
        ``|dCov|`` after the univariate start and after each alternating step.
    stats : xarray.Dataset
        Seed 002's statistics (above).
    """

    a: CTAResult
    b: CTAResult
    history: tuple          #: |dCov| after the univariate start and after each step
    stats: xr.Dataset


def cta(table, sensitive, protection=None, capacity=None, objective: str = "abs",
        preserve=(), directions: str = "milp", *, over="interior", epsilon: float = 0.0,
        upper=None, rule: str | None = None, time_limit: float | None = None,
        mip_rel_gap: float = 0.0, groups=None) -> CTAResult:
    """Controlled tabular adjustment of a magnitude table, or of a table of counts.

    On a count table (``Table.kind == "count"``) every adjustment is a whole number
    (integer variables in the MILP; protection levels rounded up, capacities and upper
    bounds down), and the release is a count table that adds up exactly; adjust its
    values as magnitudes with ``Table(..., kind="magnitude")``.

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
    >>> t = rk.Table(np.array([[20.5, 30.0, 10.0], [15.0, 5.0, 40.0]]), dims=("r", "c"))
    >>> sens = np.array([[False, False, False], [False, True, False]])
    >>> res = rk.cta(t, sens, protection=3.0, capacity=0.5 * t.values)
    >>> res.status, round(res.objective, 6), res.release.kind
    ('optimal', 12.0, 'magnitude')
    >>> res.adjustment.round(9).values.tolist()
    [[0.0, 0.0, 0.0], [3.0, -3.0, 0.0]]

    A table of counts: whole-number moves (protection 2.5 means at least 3), a count
    release.

    >>> n = rk.Table(np.array([[20, 30, 10], [15, 5, 40]]), dims=("r", "c"))
    >>> res = rk.cta(n, sens, protection=2.5, capacity=0.5 * n.values)
    >>> res.release.kind, res.adjustment.values.tolist()
    ('count', [[0, 0, 0], [3, -3, 0]])
    """
    preserve = clean_preserve(preserve)
    prep = prepare(table, sensitive, protection, capacity, objective, preserve, directions,
                   over, epsilon, upper, groups)
    sol = adjust(prep, preserve, epsilon, directions, time_limit, mip_rel_gap)
    mech = ControlledTabularAdjustment(
        rule=rule, objective=prep.objective, preserve=preserve, over=prep.over_name,
        directions=directions if isinstance(directions, str) else "given", epsilon=epsilon)
    return _result(prep, sol, mech)


def cta_bivariate(table_a, table_b, sensitive_a, protection_a, capacity_a, sensitive_b,
                  protection_b, capacity_b, *, objective: str = "abs",
                  preserve=("mean", "variance"), over="interior", epsilon: float = 0.0,
                  directions: str = "milp", max_iter: int = 6, rtol: float = 1e-3,
                  time_limit: float | None = None, rule: str | None = None
                  ) -> BivariateCTAResult:
    """Adjust two tables on one structure, keeping their covariance (seed 002 §3).

    Parameters are those of :func:`riskengine.cta`, once per table; ``max_iter``
    bounds the alternating steps, ``rtol`` stops them once ``|dCov|`` is below
    ``rtol * |Cov(a, b)|``.  ``directions="ordering"`` fixes each table's directions
    by the ordering heuristic in every step (LPs only).

    Parameters
    ----------
    table_a, table_b : Table, Contributions or array-like
        The two original tables, with the same dims, shape and totals.
    sensitive_a, sensitive_b : array-like of bool or xarray.Dataset
        Each table's sensitive cells.
    protection_a, protection_b : float or array-like
        Each table's protection levels.
    capacity_a, capacity_b : float or array-like
        Each table's capacities (largest move of a nonsensitive cell).
    objective : {"abs", "relative"}, default "abs"
        The objective, as for :func:`riskengine.cta`.
    preserve : sequence of {"mean", "variance"}, default ("mean", "variance")
        Quality constraints, for both tables.
    over : {"interior", "sensitive", "all"} or array-like of bool, default "interior"
        The cells over which ``preserve`` holds (the same cells in both tables).
    epsilon : float, default 0.0
        ``|L(y)| <= epsilon`` for ``"variance"``.
    directions : {"milp", "ordering"}, default "milp"
        Directions of the sensitive cells by MILP, or fixed by the ordering heuristic.
    max_iter : int, default 6
        Largest number of alternating steps.
    rtol : float, default 1e-3
        Stop once ``|dCov|`` is below ``rtol * |Cov(a, b)|``.
    time_limit : float, optional
        Seconds for HiGHS, per solve.
    rule : str, optional
        The sensitivity rule, recorded in the (public) mechanism.

    Returns
    -------
    BivariateCTAResult
        Both adjustments (one :class:`CTAResult` each), the ``|dCov|`` history and seed
        002's statistics.

    Raises
    ------
    ValueError
        If ``directions`` is not ``"milp"`` or ``"ordering"``, the tables differ in dims,
        shape or totals, or ``over`` selects different cells in the two tables.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> a = rk.Table(np.array([[20.0, 30, 10], [15, 5, 40], [8, 12, 25]]), dims=("r", "c"))
    >>> b = rk.Table(np.array([[2.0, 4, 1], [3, 1, 5], [1, 2, 3]]), dims=("r", "c"))
    >>> s = np.zeros((3, 3), bool); s[1, 1] = True
    >>> res = rk.cta_bivariate(a, b, s, 2.0, 0.3 * a.values, s, 0.5, 0.3 * b.values,
    ...                        preserve=("mean",))
    >>> res.history[-1] <= res.history[0]
    True
    """
    preserve = clean_preserve(preserve)
    if not isinstance(directions, str) or directions not in ("milp", "ordering"):
        raise ValueError(f"cta_bivariate takes directions 'milp' or 'ordering', got {directions!r}")
    pa = prepare(table_a, sensitive_a, protection_a, capacity_a, objective, preserve,
                 directions, over, epsilon, None)
    pb = prepare(table_b, sensitive_b, protection_b, capacity_b, objective, preserve,
                 directions, over, epsilon, None)
    if (pa.table.dims != pb.table.dims or pa.table.shape != pb.table.shape
            or pa.table.margins != pb.table.margins):
        raise ValueError(f"both tables need the same dims, shape and totals; got "
                         f"{pa.table!r} and {pb.table!r}")
    if not np.array_equal(pa.over, pb.over):
        raise ValueError("over must select the same cells in both tables")
    sol = alternate(pa, pb, preserve, epsilon, directions, max_iter, rtol, time_limit)
    mech = ControlledTabularAdjustment(rule=rule, objective=objective, preserve=preserve,
                                       over=pa.over_name, directions=directions,
                                       epsilon=epsilon)
    return BivariateCTAResult(_result(pa, sol.a, mech), _result(pb, sol.b, mech), sol.history,
                              sol.stats)


def _result(prep: CTAProblem, sol: CTASolution, mech) -> CTAResult:
    """The release of an adjustment (an exactly additive table) and its statistics; every
    sensitive cell, totals included, is checked to have moved by its protection."""
    system, table = prep.system, prep.table
    short = prep.sens & (np.abs(sol.y) < prep.p - protection_tol(prep.a))
    if short.any():
        j = int(np.argmax(short))
        raise RuntimeError(f"the adjustment leaves sensitive cell "
                           f"{system.labels(table.coords)[j]} short of "
                           f"its protection: moved by {abs(sol.y[j]):g}, needs {prep.p[j]:g}; "
                           f"solver status {sol.status!r}")
    kind = "count" if prep.integer else "magnitude"
    interior, margins, subtotals = system.release_parts(sol.adjusted)
    if prep.integer:       # whole numbers (finish rounded them): the counts as integers
        interior, margins, subtotals = (
            _counts(interior), {k: _counts(v) for k, v in margins.items()},
            {k: _counts(v) for k, v in subtotals.items()})
    release = Release(published=interior, margins=margins, mechanism=mech,
                      dims=table.dims, coords=table.coords, kind=kind,
                      groups=system.groups or None, subtotals=subtotals or None)
    y_int = sol.y[: system.n_interior].reshape(system.shape)
    adjustment = xr.DataArray(_counts(y_int) if prep.integer else y_int,
                              dims=table.dims, coords=table.coords, name="adjustment",
                              attrs={"method": "cta", "objective": prep.objective})
    stats = cta_stats(prep.a, sol.y, prep.sens, system)
    return CTAResult(release, adjustment, sol.y, sol.directions, sol.objective, sol.status,
                     sol.gap, stats, system, prep.a)


def _counts(values) -> np.ndarray:
    """Whole numbers held as floats (an adjustment of a count table) as int64."""
    v = np.asarray(values, dtype=float)
    out = np.round(v)
    off = np.abs(out - v) > 1e-6
    if off.any():
        raise RuntimeError(f"an adjustment of a count table is not a whole number: "
                           f"{float(v[off][0])!r}")
    return out.astype(np.int64)
