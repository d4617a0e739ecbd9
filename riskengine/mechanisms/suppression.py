"""Cell suppression (seeds 003, 004): suppressed interior cells, published totals.

Protect: :func:`riskengine.suppress` (complementary suppression, heuristic or
optimal).  A release publishes every interior cell except the suppressed ones
(NaN), every total, and the subtotals when it carries groups.  Public parameters:
the method, the cost criterion and whether zero cells may be suppressed; the
sensitivity rule and the protection levels are the agency's and not part of the
release.

Inference for count tables: the candidates are every nonnegative integer table that
agrees with the published cells, totals and subtotals (``entry_windows``: published
cells fixed, suppressed cells on ``0..`` the smallest total containing them, suppressed
totals on their LP interval).  Routes:

* 2-D table with all totals: the exact table DP (``inference.table_dp``);
* 2-D table with one level of subtotals along either dim: one DP per group
  (``inference.grouped``); counts multiply, evidences add;
* 3-D table with every 2-way margin: the streaming enumerator
  (``inference.enumerate_3d``).

Magnitude releases have no integer candidates: use :func:`riskengine.audit`.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as V
from ..inference import windows as win
from ..inference.enumerate_3d import Enumerate3D
from ..inference.fiber import Fiber
from ..inference.gibbs import BlockGibbs
from ..inference.grouped import Grouped2D
from ..inference.hypergeometric import Hypergeometric
from ..inference.sis_posterior import ImportanceSampling
from ..inference.sums import SumEnumerate, SumsGibbs
from ..inference.table_dp import TableDP
from ..magnitude.contributions import Contributions
from ..magnitude.csp import COSTS, METHODS, find_pattern
from ..magnitude.intervals import intervals
from ..magnitude.sensitivity import Frequency, Rule, assess
from ..protocol import Example, Mechanism, register
from ..release import Release
from ..table import Table
from ..tabular import check_equations, tabular_system
from ._examples import smallest_cell

# METHODS and COSTS (the solver's options) are offered here too: ``riskengine.suppress``
# (an alias of this module) offered them
__all__ = ["CellSuppression", "suppress"]


def suppress(table, sensitive, protection=None, method: str = "heuristic",
             cost: str = "value", groups=None, *, suppress_zeros: bool = False,
             suppress_totals: bool = False, time_limit: float | None = None,
             forced=None, frozen=None, costs=None):
    """Protect the sensitive cells of ``table`` by complementary cell suppression.

    Parameters
    ----------
    table : rk.Table, rk.Contributions, array or xarray.DataArray
        Nonnegative magnitudes or counts; its ``margins`` (default: all totals of a 2-D
        table, every (k-1)-way margin of a k-D table) are published.
    sensitive : bool array, the Dataset of :func:`riskengine.sensitivity.assess`, or a rule
        Primary suppressions: of the table's shape (interior cells), or one entry per
        cell of the tabular system (interior, totals, subtotals; the order of
        :func:`riskengine.tabular.tabular_system`), or the ``assess`` Dataset (totals
        included; ``protection`` then defaults to its ``protection``), or a sensitivity
        rule (``rk.sensitivity.Frequency(3)`` for a count table, any rule for
        ``rk.Contributions``): the sensitive cells, totals and subtotals included, and
        their protection are then computed from the table by the rule.
    protection : array, scalar or a pair ``(lower, upper)``
        Protection each sensitive cell needs below / above its value, in the same forms
        as ``sensitive`` (a scalar applies to every sensitive cell); default with a rule
        or an ``assess`` Dataset: the rule's protection levels.
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

    forced, frozen, costs : optional
        For a hierarchical table or an ``rk.TableSet`` (vectors over the cells of its
        system, ``table.system()`` / ``ts.system``; or a callable taking the ``cells``
        DataFrame and returning one): cells suppressed whatever happens (tau-Argus's
        "unsafe"), cells that must stay published ("safe", "protected"), and the cost of
        suppressing each cell.

    A hierarchical table (``rk.Table(..., hierarchies=)``) or an ``rk.TableSet`` is
    protected at every level and in every table at once (one system: a cell hidden in one
    table cannot be recovered from the others, "super-consistent"); every published cell
    may then be suppressed (``frozen=`` keeps some published), and the result is an
    ``rk.TableSetRelease``.

    Returns
    -------
    rk.Release or rk.TableSetRelease
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

    The threshold rule on a count table (cells with 1 or 2 units are sensitive):

    >>> counts = rk.Table(np.array([[1, 4, 6], [5, 3, 7], [8, 9, 2]]), dims=("r", "c"))
    >>> rel = rk.suppress(counts, rk.sensitivity.Frequency(3))
    >>> rel.info["n_sensitive"], int(rk.audit(rel).exact.sum())
    (2, 0)
    """
    mech = CellSuppression(method=method, cost=cost, suppress_zeros=suppress_zeros,
                           suppress_totals=suppress_totals)
    return mech.protect(table, sensitive=sensitive, protection=protection, groups=groups,
                        time_limit=time_limit, forced=forced, frozen=frozen, costs=costs)


def entry_windows(release) -> win.EntryWindows:
    """Published cells and totals exact; a suppressed cell from 0 up to the totals that
    contain it; a suppressed total on the integer range of its LP interval (the audit's),
    flat.

    Parameters
    ----------
    release : rk.Release
        A cell-suppression release of counts.

    Returns
    -------
    riskengine.inference.windows.EntryWindows
        The windows of the interior and of every total.

    Raises
    ------
    ValueError
        If the release holds magnitudes, or a suppressed entry is unbounded.
    """
    if release.kind != "count":
        raise ValueError("posterior over integer completions needs a count release; this "
                         "release holds magnitudes: use rk.audit for its feasible intervals")
    if not release._hidden_totals():
        return win.from_published(release, {k: win.exact(v) for k, v in
                                             release.margins.items()},
                                  fixed=release.published)
    system = release.system()
    x = release.cell_vector(system)
    tol = np.zeros(len(x))
    lo, hi = intervals(system, x, tol_out=tol)      # each cell's own accuracy
    if not np.all(np.isfinite(hi)):
        j = int(np.argmax(~np.isfinite(hi)))
        raise ValueError(f"{system.labels()[j]} is unbounded given the published cells (the "
                         "grand total and the totals above it are suppressed): infinitely "
                         "many integer completions")
    ilo = np.ceil(lo - tol).astype(np.int64)
    ihi = np.floor(hi + tol).astype(np.int64)
    totals = {}
    for b in system.blocks[1:]:
        if b.grouped is None:
            totals[b.keep] = win.flat(ilo[b.slice].reshape(b.shape),
                                      ihi[b.slice].reshape(b.shape))
    return win.from_published(release, totals, fixed=release.published)


@register
class CellSuppression(Mechanism):
    """Complementary cell suppression.

    Parameters
    ----------
    method : {"heuristic", "optimal"}
        How complementary suppressions are chosen (see :func:`riskengine.suppress`).
    cost : {"value", "count"}
        Minimise the total value or the number of suppressed cells.
    suppress_zeros : bool
        Whether zero cells may serve as complementary suppressions.
    suppress_totals : bool
        Whether totals and subtotals may be suppressed (default: every total published).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.Release(np.array([[np.nan, np.nan, 3], [np.nan, np.nan, 4]]),
    ...                  margins={("v",): [6, 9], ("w",): [5, 3, 7], (): 15},
    ...                  mechanism=rk.CellSuppression(), dims=("v", "w"))
    >>> rk.count_candidates(rel)
    4
    """

    name = "cell_suppression"
    additive = True
    suppressible_totals = True
    windows = staticmethod(entry_windows)
    structure_routes = (SumEnumerate(), SumsGibbs())
    routes = (Fiber(), TableDP(), Hypergeometric(count_by=TableDP()), Grouped2D(),
              Enumerate3D(), ImportanceSampling(), BlockGibbs())

    def __init__(self, method: str = "heuristic", cost: str = "value",
                 suppress_zeros: bool = False, suppress_totals: bool = False):
        self.method = V.choice(method, "method", METHODS)
        self.cost = V.choice(cost, "cost", COSTS)
        for name, v in (("suppress_zeros", suppress_zeros), ("suppress_totals", suppress_totals)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} must be True or False, got {v!r}")
        self.suppress_zeros = suppress_zeros
        self.suppress_totals = suppress_totals

    def _params(self) -> dict:
        return {"method": self.method, "cost": self.cost, "suppress_zeros": self.suppress_zeros,
                "suppress_totals": self.suppress_totals}

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """A 3 x 3 table with every total published, cell (x, a) sensitive and protected
        by half of every cell's value; on another table its smallest cell sensitive,
        protected by 1 (the heuristic method: ``rng`` varies nothing).

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the 3 x 3 table above).
        rng : numpy.random.Generator, optional
            Not used.

        Returns
        -------
        Example
            With the ``sensitive`` and ``protection`` inputs of :meth:`protect`.
        """
        if table is None:
            values = np.array([[20, 10, 20], [10, 10, 20], [40, 10, 10]])
            table = Table(values, dims=("v", "w"),
                          coords={"v": ["x", "y", "z"], "w": ["a", "b", "c"]})
            sensitive = np.zeros(values.shape, bool)
            sensitive[0, 0] = True
            return Example(cls, table, inputs={"sensitive": sensitive,
                                               "protection": 0.5 * values})
        return Example(cls, table, inputs={"sensitive": smallest_cell(table),
                                           "protection": 1.0})

    # --- protect -----------------------------------------------------------------------
    def protect(self, table, rng=None, *, sensitive, protection=None, groups=None,
                time_limit: float | None = None, forced=None, frozen=None, costs=None):
        """Suppress ``sensitive`` cells and complements (``rng`` is not used: the method is
        deterministic).  See :func:`riskengine.suppress`.

        Parameters
        ----------
        table : rk.Table, rk.Contributions, array or xarray.DataArray
            Nonnegative magnitudes or counts; its ``margins`` are published.
        rng : numpy.random.Generator, optional
            Not used.
        sensitive : bool array, the Dataset of :func:`riskengine.sensitivity.assess`, or a rule
            Primary suppressions, as for :func:`riskengine.suppress`.
        protection : array, scalar or a pair ``(lower, upper)``, optional
            Protection each sensitive cell needs below / above its value.
        groups : dict, optional
            One level of subtotals, ``{dim: [[category indices], ...]}``.
        time_limit : float, optional
            Seconds for ``method="optimal"``.

        Returns
        -------
        rk.Release
            Suppressed cells are NaN (interior in ``published``, totals in ``margins``);
            ``release.info``: number and value of suppressed cells (all, sensitive,
            complementary, totals) and the solver's information.
        """
        from ..table_set import TableSet
        if isinstance(table, TableSet) or getattr(table, "hierarchies", None):
            if groups is not None:
                raise ValueError("groups= is one level of subtotals of a flat table; a "
                                 "hierarchical table carries its levels in hierarchies=")
            return self._protect_set(table if isinstance(table, TableSet) else
                                     TableSet(table), sensitive, protection, time_limit,
                                     forced, frozen, costs)
        if forced is not None or frozen is not None or costs is not None:
            raise ValueError("forced=, frozen= and costs= are vectors over the cells of a "
                             "hierarchical table or a TableSet (its system); for a flat "
                             "table give it as rk.TableSet(table)")
        rule = sensitive if isinstance(sensitive, Rule) else None
        if rule is not None and isinstance(table, Contributions):
            sensitive = assess(table, rule)         # its protection levels come with it
        if isinstance(table, Contributions):
            table = table.table
        if not isinstance(table, Table):
            table = Table(table)
        system = tabular_system(table.dims, table.shape, table.margins, groups,
                                coords=table.coords)
        x = system.vector(table.values).astype(float)
        if isinstance(sensitive, Rule):             # a count table: the rule counts
            if not isinstance(rule, Frequency) or table.kind != "count":
                assess(table, rule)                 # refuses, saying why
            sensitive = rule.sensitive(x)
            if protection is None:
                protection = rule.protection_levels(x)
        mask, sens, _, _, info = find_pattern(
            system, x, sensitive, protection, method=self.method, cost=self.cost,
            suppress_zeros=self.suppress_zeros, suppress_totals=self.suppress_totals,
            time_limit=time_limit)
        pub = np.where(mask, np.nan, x)
        if table.kind == "count" and not mask.any():
            pub = pub.astype(np.int64)
        interior, margins, subtotals = system.release_parts(pub)
        rel = Release(published=interior, margins=margins, mechanism=self,
                      dims=table.dims, coords=table.coords, kind=table.kind,
                      groups=system.groups or None, subtotals=subtotals or None)
        n_int = system.n_interior
        comp = mask & ~sens
        tot = np.zeros(mask.size, bool)
        tot[n_int:] = True
        rel.info = {"n_suppressed": int(mask[:n_int].sum()),
                    "value_suppressed": float(x[:n_int][mask[:n_int]].sum()),
                    "n_sensitive": int(sens[:n_int].sum()),
                    "n_complementary": int(comp[:n_int].sum()),
                    "value_complementary": float(x[:n_int][comp[:n_int]].sum()),
                    "n_totals_suppressed": int((mask & tot).sum()),
                    "value_totals_suppressed": float(x[mask & tot].sum()),
                    "n_sensitive_totals": int((sens & tot).sum()),
                    **info}
        return rel

    def _protect_set(self, ts, sensitive, protection, time_limit, forced, frozen, costs):
        """Suppression over every cell of a set's system at once (see :func:`suppress`)."""
        from ..table_set import TableSetRelease, complete_values
        s = ts.system
        x = complete_values(ts)
        pub = s.published

        def vec(v, name):
            if v is None:
                return None
            if callable(v):
                v = v(ts.cells)
            v = np.asarray(getattr(v, "values", v))
            if v.shape != (s.n_var,):
                raise ValueError(f"{name} must hold one entry per cell of the set's system "
                                 f"({s.n_var}: ts.system.cells), got shape {v.shape}")
            return v
        if isinstance(sensitive, Rule):
            if not isinstance(sensitive, Frequency) or ts.kind != "count":
                raise ValueError("a rule for a hierarchical table or a TableSet is the "
                                 "frequency rule on counts (rk.sensitivity.Frequency); for "
                                 "other rules give the sensitive cells and protection")
            rule = sensitive
            judged = np.where(pub, x, 0.0)          # the rule judges published cells only
            sensitive = rule.sensitive(judged) & pub
            if protection is None:
                protection = rule.protection_levels(judged)
        else:
            sensitive = vec(sensitive, "sensitive")
            unpub = np.asarray(sensitive, bool) & ~pub
            if unpub.any():
                raise ValueError(f"{s.labels()[int(np.argmax(unpub))]} is sensitive but no "
                                 "table publishes it")
        if protection is None:
            raise TypeError("suppress needs protection= (or a rule)")
        if not (isinstance(protection, tuple) or np.ndim(protection) == 0):
            protection = vec(protection, "protection")
        elif isinstance(protection, tuple):
            protection = tuple(p if np.ndim(p) == 0 else vec(p, "protection")
                               for p in protection)
        force = ~pub
        user_forced = vec(forced, "forced")
        if user_forced is not None:
            force = force | user_forced.astype(bool)
        frz = vec(frozen, "frozen")
        mask, sens, _, _, info = find_pattern(
            s, x, sensitive, protection, method=self.method, cost=self.cost,
            suppress_zeros=self.suppress_zeros, suppress_totals=True,
            time_limit=time_limit, forced=force, frozen=frz, costs=vec(costs, "costs"))
        pub_vals = np.where(mask | ~pub, np.nan, x)
        hid = mask & pub
        comp = hid & ~sens
        if user_forced is not None:
            comp &= ~user_forced.astype(bool)
        rel_info = {"n_suppressed": int(hid.sum()), "value_suppressed": float(x[hid].sum()),
                    "n_sensitive": int(sens.sum()),
                    "n_complementary": int(comp.sum()),
                    "value_complementary": float(x[comp].sum()),
                    "n_forced": 0 if user_forced is None else
                    int((user_forced.astype(bool) & pub).sum()),
                    "n_published_cells": int(pub.sum()), **info}
        # every published cell (subtotals, totals) may be suppressed here: the release says so
        mech = CellSuppression(method=self.method, cost=self.cost,
                               suppress_zeros=self.suppress_zeros, suppress_totals=True)
        return TableSetRelease(ts, pub_vals, mechanism=mech, info=rel_info)

    def validate_release(self, release) -> None:
        if release.published is None:
            raise ValueError("a cell-suppression release publishes the interior "
                             "(NaN = suppressed); published is None")
        if not release.margins:
            raise ValueError("a cell-suppression release needs its published totals (margins)")
        system = release.system()
        check_equations(system, release.cell_vector(system),
                        what=f"{self.describe()} release")
