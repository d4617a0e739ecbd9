"""The visible registry: every mechanism x route, with what it needs and what it costs.

:func:`routes` lists, for every registered mechanism (the registry of
:mod:`riskengine.protocol`, filled by importing every mechanism module through
``riskengine.mechanisms.load()``, found by name at run time as ``protocol.lookup`` finds
one), each route of its releases and of its sets of releases (``rk.ReleaseSet``): the
route's name, whether it is exact and counts candidates, what it reads and requires
(``Route.needs``), and its cost on the mechanism's own small example
(``Mechanism.example()``): why it does not apply there, or the memory its estimate plans.
``riskengine routes`` prints the same table.
"""

from __future__ import annotations

import importlib

import pandas as pd

from .. import _budget
from ..priors import Uniform
from ..protocol import REGISTRY
from ..release_set import ReleaseSet
from .resolve import plan

__all__ = ["COLUMNS", "routes"]

#: the columns of :func:`routes`, in order
COLUMNS = ("mechanism", "class", "for", "route", "exact", "answer", "counts", "needs",
           "example", "cost")


def _example(cls):
    """``(description, release)`` of the mechanism's own example (release None: the
    description says why there is none)."""
    try:
        ex = cls.example()
    except NotImplementedError:
        return "none declared (Mechanism.example)", None
    shape = " x ".join(str(n) for n in ex.table.shape)
    what = f"{ex.mechanism.describe()} on a {shape} table"
    if not (cls.routes or cls.set_routes):
        return what, None                 # nothing to price: no release needed
    return what, ex.release()


def _cost(route, p) -> str:
    """Why ``route`` does not apply to the plan's release, or its planned memory for the
    posterior (with what it counted, and why ``route="auto"`` would not wait for it)."""
    if p is None:
        return ""
    try:
        why = route.applies(p)
        if why is not None:
            return f"does not apply: {why}"
        cost = route.estimate(p, "posterior")
    except ValueError as exc:             # e.g. no candidate under the prior
        return f"cannot estimate: {exc}"
    text = _budget.fmt_bytes(cost.memory) + (f" ({cost.detail})" if cost.detail else "")
    if cost.too_long:
        text += f"; too long for route='auto': {cost.too_long}"
    return text


def _approximate(route, plan) -> bool:
    """Whether ``route``'s answer on the example is approximate (its likelihood input
    says so).  A route that does not apply there but reads the same input is approximate
    where that input is (the cell key method's entry windows with totals: ``line`` on a
    1-D table and its total, ``enumerate`` on a 3-D table and its margins), so it is
    marked approximate too, not exact by its kind."""
    if plan is None:
        return False
    try:
        if route.applies(plan) is None:
            return bool(route.approximation(plan))
        return bool(route.reads and route.reads in plan.inputs
                    and getattr(plan.inputs[route.reads], "approximation", ""))
    except (ValueError, KeyError, TypeError, MemoryError):
        return False


def routes() -> pd.DataFrame:
    """Every registered mechanism x inference route.

    Returns
    -------
    pandas.DataFrame
        One row per mechanism and route, mechanisms by registry name, routes in the order
        ``route="auto"`` tries them (a mechanism without routes has one row, route
        missing, saying what to use instead).  Columns:

        ``mechanism``
            the registry name (``rk.Release.mechanism.name``, ``--mechanism NAME``);
        ``class``
            the mechanism class;
        ``for``
            ``"release"`` (``Mechanism.routes``) or ``"release set"``
            (``Mechanism.set_routes``: several releases of the same records, an
            ``rk.ReleaseSet``);
        ``route``
            the name ``rk.posterior(..., route=NAME)`` takes;
        ``exact``
            False for Monte Carlo routes and for routes whose likelihood is approximate on
            the mechanism's example (:meth:`Route.approximation`: resampling's per-cell
            route, the cell key method's product over entries with totals), or whose input
            is approximate there when the route itself does not take the example (nullable
            boolean);
        ``answer``
            ``"exact"``, ``"approximate"`` (an exact computation on an approximate
            likelihood) or ``"Monte Carlo"``, on the example;
        ``counts``
            whether the route counts candidates (``rk.count_candidates``);
        ``needs``
            what the route reads and requires (``Route.needs``);
        ``example``
            the mechanism's own small example (``Mechanism.example()``);
        ``cost``
            the route on that example (a set route: the example's release twice), under
            the uniform prior: why it does not apply, or the memory it plans for the
            posterior and what it counted.

    Examples
    --------
    >>> import riskengine as rk
    >>> table = rk.routes()
    >>> cyclic = table[table["mechanism"] == "cyclic"]
    >>> list(cyclic["route"]), cyclic["exact"].tolist()
    (['structured', 'enumerate', 'gibbs'], [True, True, False])
    >>> sorted(set(table.loc[table["for"] == "release set", "mechanism"]))
    ['cell_key', 'controlled_rounding', 'noisy_counts', 'random_rounding']
    """
    importlib.import_module("riskengine.mechanisms").load()
    rows = []
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        what, release = _example(cls)
        base = {"mechanism": name, "class": cls.__name__, "example": what}
        if not (cls.routes or cls.set_routes):
            rows.append({**base, "for": "release", "route": None, "exact": pd.NA,
                         "answer": None,
                         "counts": pd.NA, "needs": f"no inference route: {cls.no_route}",
                         "cost": ""})
            continue
        for kind, group in (("release", cls.routes), ("release set", cls.set_routes)):
            if not group:
                continue
            p = None
            if release is not None:
                p = plan(release if kind == "release" else ReleaseSet([release, release]),
                         Uniform())
            for r in group:
                approx = bool(r.exact) and _approximate(r, p)
                rows.append({**base, "for": kind, "route": r.name,
                             "exact": bool(r.exact) and not approx,
                             "answer": "Monte Carlo" if not r.exact else
                             "approximate" if approx else "exact",
                             "counts": bool(r.counts), "needs": r.needs, "cost": _cost(r, p)})
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("exact", "counts"):
        table[col] = table[col].astype("boolean")
    return table
