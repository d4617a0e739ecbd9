"""The mechanism protocol and the one route resolver.

Every protection mechanism is a :class:`Mechanism`: a registry ``name``, public
parameters (``to_dict`` / ``from_dict``; ``from_config`` for TOML and the command
line), ``protect(table, rng) -> Release``, ``validate_release(release)``, and
``routes``: the ordered inference routes that can compute the posterior of its
releases.  A :class:`Route` says whether it applies to a release and prior (and why
not), estimates its memory before it runs, runs (returning a labelled
``rk.Posterior``) and counts the candidates.

One resolver serves every mechanism (:func:`select_route`): ``route="auto"`` takes the
first route that applies within the memory budget; a named route must exist (an unknown
name is an error listing the known ones), apply and fit; a mechanism without routes says
what to use instead (``no_route``).

This module is a leaf of the package: it imports nothing else of riskengine but the
validators and the memory budget, so every layer may import it.
"""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .. import _budget

__all__ = ["REGISTRY", "Cost", "Mechanism", "MonteCarlo", "Route", "lookup", "mechanism_from_dict", "register",
           "run_count", "run_posterior", "select_route"]

#: registry name -> mechanism class (filled by :func:`register`)
REGISTRY: dict = {}


def register(cls):
    """Class decorator: make ``cls`` known by its ``name`` (configs, JSON, the CLI)."""
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a class attribute name = '...' to be registered")
    if name in REGISTRY and REGISTRY[name] is not cls:
        raise ValueError(f"mechanism name {name!r} is taken by {REGISTRY[name].__name__}")
    REGISTRY[name] = cls
    return cls


def lookup(name: str):
    """The mechanism class registered as ``name`` (or one of its ``aliases``)."""
    if name in REGISTRY:
        return REGISTRY[name]
    for cls in REGISTRY.values():
        if name in cls.aliases:
            return cls
    known = sorted(set(REGISTRY) | {a for c in REGISTRY.values() for a in c.aliases})
    raise ValueError(f"unknown mechanism {name!r}; known: {', '.join(known)}")


def mechanism_from_dict(d: dict):
    """The mechanism a ``to_dict()`` describes (``{"name": ..., **parameters}``)."""
    if not isinstance(d, dict) or "name" not in d:
        raise ValueError(f"a mechanism description needs a 'name', got {d!r}")
    return lookup(d["name"]).from_dict(d)


@dataclass(frozen=True)
class Cost:
    """What a route plans to use: peak ``memory`` in bytes, and what was counted;
    ``too_long``: why the route would run for longer than ``route="auto"`` waits (empty:
    it will not), e.g. an enumeration that a probe found too large."""

    memory: float = 0.0
    detail: str = ""
    too_long: str = ""


@dataclass(frozen=True)
class MonteCarlo:
    """Settings of a Monte Carlo route (``rk.posterior(..., mcmc=rk.MonteCarlo(...))``).

    ``chains`` from dispersed starts, ``warmup`` sweeps dropped and ``draws`` kept per chain;
    ``seed``: extra entropy (None: the release, prior and settings alone decide the draws);
    ``workers``: threads (None: one per core, at most one per chain); ``scheduler``: None
    (threads), ``"dask"`` (a local cluster), an address ``"tcp://host:port"`` or a
    ``distributed.Client``.  The draws for a seed do not depend on workers or scheduler.
    """

    chains: int = 4
    warmup: int = 300
    draws: int = 1000
    seed: int | None = None
    workers: int | None = None
    scheduler: object = None

    def __post_init__(self):
        for name, low in (("chains", 1), ("warmup", 0), ("draws", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
                raise ValueError(f"MonteCarlo {name} must be an integer >= {low}, got {v!r}")
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(
                self.workers, numbers.Integral) or self.workers < 1):
            raise ValueError(f"MonteCarlo workers must be None or an integer >= 1, got "
                             f"{self.workers!r}")
        s = self.scheduler
        if s is not None and isinstance(s, str) and s != "dask" and "://" not in s:
            raise ValueError(f"unknown scheduler {s!r}; known: None (threads), 'dask' (local "
                             "cluster), or a cluster address 'tcp://host:port'")


class Route:
    """One way to compute the posterior of a release (and to count its candidates).

    Subclasses set ``name`` (and ``exact = False`` for Monte Carlo routes) and override
    ``applies``, ``estimate``, ``run`` and, where they can count, ``count``.
    """

    name: str = ""
    exact: bool = True

    def applies(self, release, prior) -> str | None:
        """``None`` when the route can answer ``release`` under ``prior``, else the reason
        it cannot (one sentence, shown to the user)."""
        return None

    def estimate(self, release, prior, what: str = "posterior") -> Cost:
        """Memory the route needs for ``what`` (``"posterior"``, ``"posterior+count"`` or
        ``"count"``), computed without allocating it."""
        return Cost()

    def run(self, release, prior, *, count: bool = True, progress=None, memory: int):
        """The posterior (``rk.Posterior``); ``count``: also the exact number of candidates;
        ``memory``: the budget in bytes."""
        raise NotImplementedError

    def count(self, release, prior, *, progress=None, memory: int) -> int:
        """The exact number of candidate originals with positive prior weight."""
        raise NotImplementedError(f"route {self.name!r} does not count candidates")

    @property
    def counts(self) -> bool:
        return type(self).count is not Route.count

    def __repr__(self) -> str:
        return f"<route {self.name}>"


class Mechanism:
    """Base class of protection mechanisms (see the module docstring for the protocol)."""

    name = "mechanism"
    #: "count" mechanisms protect tables of counts; "magnitude" ones any nonnegative values
    kind = "count"
    #: releases add up to their published margins
    additive = True
    #: releases may hide totals (NaN in margins / subtotals)
    suppressible_totals = False
    #: published values of count releases may be negative (raw noisy measurements)
    published_signed = False
    #: inference routes, fastest exact first
    routes: tuple = ()
    #: routes for a set of releases of the same microdata (rk.ReleaseSet); mechanisms whose
    #: likelihood is a product over published entries list them, with ``windows``
    set_routes: tuple = ()
    #: ``windows(release) -> EntryWindows``: each published entry's window of originals and
    #: log-likelihoods (mechanisms whose likelihood is a product over entries)
    windows = None
    #: the noise is keyed to the records: the same records get the same perturbation in
    #: every table (the cell key method); otherwise each publication draws its own
    keyed = False
    #: ``windows`` cut an unbounded likelihood (noise): routes check the posterior's mass at
    #: the cut edges
    windows_truncated = False
    #: what to use instead when the mechanism has no routes (e.g. "use rk.audit")
    no_route = "no inference route is implemented for it"
    #: other names the command line and configs accept
    aliases: tuple = ()
    #: defaults for required constructor parameters when built from a config or the CLI
    config_defaults: ClassVar[dict] = {}
    #: parameters that may name a file: a config's relative path is read from its folder
    path_parameters: ClassVar[tuple] = ()

    # --- parameters ----------------------------------------------------------------------
    def _params(self) -> dict:  # pragma: no cover - every mechanism overrides it
        raise NotImplementedError

    def to_dict(self) -> dict:
        return {"name": self.name, **self._params()}

    @classmethod
    def from_dict(cls, d: dict):
        params = {k: v for k, v in d.items() if k != "name"}
        return cls.from_config(params)

    @classmethod
    def parameters(cls) -> dict:
        """``{parameter: default}`` of the constructor (``inspect.Parameter.empty``: required)."""
        sig = inspect.signature(cls.__init__)
        return {k: p.default for k, p in sig.parameters.items()
                if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    @classmethod
    def from_config(cls, spec: dict, shape=None, dims=None):
        """The mechanism from plain parameters (a TOML block, ``--param key=value``, JSON).

        Unknown keys and missing required ones are errors naming the valid keys.
        ``shape``/``dims`` are the table's, for mechanisms whose parameters are built for
        a table (a cycle design).
        """
        known = cls.parameters()
        spec = {**{k: v for k, v in cls.config_defaults.items() if k in known}, **spec}
        bad = [k for k in spec if k not in known]
        if bad:
            raise ValueError(f"unknown parameter {bad[0]!r} for mechanism {cls.name!r}; "
                             f"valid: {', '.join(known) or '(none)'}")
        missing = [k for k, v in known.items() if v is inspect.Parameter.empty and k not in spec]
        if missing:
            raise ValueError(f"mechanism {cls.name!r} needs parameter {missing[0]!r} "
                             f"(parameters: {', '.join(known)})")
        return cls(**spec)

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self._params().items()
                          if not isinstance(v, (list, np.ndarray)))
        return f"{type(self).__name__}({inner})"

    def __repr__(self) -> str:
        return self.describe()

    # --- protection ----------------------------------------------------------------------
    def protect(self, table, rng=None):  # pragma: no cover - every mechanism overrides it
        """The release of ``table`` under this mechanism (``rng``: numpy Generator)."""
        raise NotImplementedError

    def validate_release(self, release) -> None:
        """Raise ``ValueError`` unless ``release`` could have come from this mechanism."""

    @staticmethod
    def _rng(rng) -> np.random.Generator:
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator "
                            f"(np.random.default_rng(seed)), got {type(rng).__name__}")
        return rng

    # --- inference (one resolver for every mechanism) ------------------------------------
    def posterior(self, release, prior, route: str = "auto", progress=None, count: bool = True,
                  memory=None):
        """Same as :func:`riskengine.posterior` (``release.mechanism`` must be ``self``)."""
        return run_posterior(release, prior, route=route, progress=progress, count=count,
                             memory=memory)

    def count_candidates(self, release, prior, route: str = "auto", memory=None) -> int:
        """Same as :func:`riskengine.count_candidates`."""
        return run_count(release, prior, route=route, memory=memory)


def select_route(release, prior, route: str = "auto", memory=None, what: str = "posterior"):
    """``(route, reason)``: the route that answers ``release`` under ``prior``.

    ``route="auto"``: the first of the mechanism's routes that applies and whose estimate
    fits the budget (``memory``, see :mod:`riskengine._budget`); ``reason`` says why the
    routes before it were passed over.  A named route is checked the same way and
    refused with the reason.  ``what``: ``"posterior"``, ``"posterior+count"`` or
    ``"count"``.
    """
    mech = release.mechanism
    routes = tuple(mech.routes)
    if what == "count":
        routes = tuple(r for r in routes if r.counts)
    if not routes:
        raise ValueError(f"{mech.describe()} releases have no inference route"
                         f"{' that counts candidates' if what == 'count' and mech.routes else ''}"
                         f": {mech.no_route}")
    kind = "count" if what == "count" else "posterior"
    names = [r.name for r in routes]
    if not isinstance(route, str):
        raise TypeError(f"route must be a str, got {type(route).__name__}")
    if route == "mcmc":                       # whichever Monte Carlo route the mechanism has
        mc = [r.name for r in routes if not r.exact]
        if not mc:
            raise ValueError(f"{mech.name} releases have no Monte Carlo route; routes: "
                             f"{', '.join(['auto'] + names)}")
        route = mc[0]
    if route != "auto" and route not in names:
        raise ValueError(f"unknown route {route!r} for {mech.name} releases; known: "
                         f"{', '.join(['auto'] + names)}")
    limit = _budget.budget(memory)
    skipped = []
    for r in routes:
        if route not in ("auto", r.name):
            continue
        why = r.applies(release, prior)
        if why is None:
            cost = r.estimate(release, prior, what)
            if cost.too_long and route == "auto":
                skipped.append((r.name, cost.too_long + (
                    f"; route={r.name!r} runs it to the end" if r.name else "")))
                continue
            if cost.memory <= limit:
                reason = ("requested" if route != "auto" else
                          "first route that applies within the memory budget"
                          if not skipped else "; ".join(f"{n}: {w}" for n, w in skipped))
                return r, reason
            why = (f"needs {_budget.fmt_bytes(cost.memory)} ({cost.detail}), more than the "
                   f"memory budget of {_budget.fmt_bytes(limit)}")
        if route != "auto":
            alts = [o.name for o in routes if o is not r and o.applies(release, prior) is None]
            hint = (f"; routes that apply: {', '.join(alts)}" if alts else "")
            raise ValueError(f"route {r.name!r} cannot answer this release: {why}{hint}"
                             + ("; raise memory= if the machine has more"
                                if "memory budget" in why else ""))
        skipped.append((r.name, why))
    reasons = {}
    for name, why in skipped:                 # routes passed over for one reason: once
        reasons.setdefault(why, []).append(name)
    text = "; ".join(f"{', '.join(names)}: {why}" for why, names in reasons.items())
    raise ValueError(f"no {kind} route fits this {mech.name} release: {text}"
                     + ("; raise memory= if the machine has more"
                        if any("memory budget" in w for w in reasons) else ""))


def run_posterior(release, prior, route: str = "auto", progress=None, count: bool = True,
                  memory=None, mcmc=None):
    """Resolve the route and run it: the labelled posterior, with ``attrs["route"]`` and
    ``attrs["route_reason"]``; ``mcmc``: the settings of a Monte Carlo route (chains,
    draws, seed, scheduler), used when the route taken is one."""
    r, reason = select_route(release, prior, route, memory,
                             "posterior+count" if count else "posterior")
    if mcmc is not None and not r.exact:
        r = r.with_settings(mcmc)
    post = r.run(release, prior, count=count, progress=progress, memory=_budget.budget(memory))
    post.attrs["route"] = r.name
    post.attrs["route_reason"] = reason
    return post


def run_count(release, prior, route: str = "auto", progress=None, memory=None) -> int:
    """Resolve a counting route and count the candidates."""
    r, _ = select_route(release, prior, route, memory, "count")
    n = r.count(release, prior, progress=progress, memory=_budget.budget(memory))
    if n == 0:   # the same answer as the posterior's, whichever route counted
        raise ValueError(f"no original table is consistent with this {release.mechanism.name} "
                         "release under this prior")
    return n
