"""The mechanism / route protocol (layer L1): what every mechanism and route provides.

A protection mechanism is a :class:`Mechanism`: a registry ``name``, public parameters
(``to_dict`` / ``from_dict``; ``from_config`` for TOML and the command line),
``protect(table, rng) -> Release``, ``validate_release(release)``, :meth:`Mechanism.inputs`
(the plain inputs its routes read: entry windows, a likelihood model), ``routes``: the
ordered inference routes for its releases, fastest exact first, and
:meth:`Mechanism.example`: a small instance of itself (an :class:`Example`), which
``rk.routes()``, ``riskengine warmup`` and the registry's tests run.

A :class:`Route` reads one :class:`Plan` (the release, the prior, the budget and the
mechanism's inputs of one call; anything a route prepares is kept there, never on the
route): ``applies(plan) -> reason or None``, ``estimate(plan, what) -> Cost``,
``run(plan, count=...) -> RouteResult`` (plain arrays, frozen) and ``count(plan)``.
Routes never call the mechanism and never build a ``Posterior``: the resolver and the
labeller (:mod:`riskengine.inference.resolve`) do, once per call.

This module is a leaf of the package: it imports nothing of riskengine, so every layer
may import it.  The registry finds a mechanism module by name
when it is first asked for (:func:`lookup`), as a plugin system would.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

__all__ = ["REGISTRY", "Cost", "Example", "Inputs", "Mechanism", "MonteCarlo", "MonteCarloRoute",
           "Plan", "Route", "RouteRefused", "RouteResult", "lookup", "mechanism_from_dict",
           "register"]

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


def _find(name: str):
    if name in REGISTRY:
        return REGISTRY[name]
    for cls in REGISTRY.values():
        if name in cls.aliases:
            return cls
    return None


def lookup(name: str):
    """The mechanism class registered as ``name`` (or one of its ``aliases``).

    A name not registered yet loads the mechanism module that defines it (the package
    ``riskengine.mechanisms`` indexes its modules without importing them; found by name at
    run time, as entry points are, so this L1 module imports nothing above it).
    """
    cls = _find(name)
    if cls is not None:
        return cls
    import importlib
    importlib.import_module("riskengine.mechanisms").discover(name)
    cls = _find(name)
    if cls is not None:
        return cls
    known = sorted(set(REGISTRY) | {a for c in REGISTRY.values() for a in c.aliases})
    raise ValueError(f"unknown mechanism {name!r}; known: {', '.join(known)}")


def mechanism_from_dict(d: dict):
    """The mechanism a ``to_dict()`` describes (``{"name": ..., **parameters}``)."""
    if not isinstance(d, dict) or "name" not in d:
        raise ValueError(f"a mechanism description needs a 'name', got {d!r}")
    return lookup(d["name"]).from_dict(d)


class RouteRefused(ValueError):
    """A route refusing, at its run, a release it accepted at its estimate (an enumeration
    past its limit): ``route="auto"`` goes on to the next route, a caller who named the
    route gets the error."""


@dataclass(frozen=True)
class Cost:
    """What a route plans to use: peak ``memory`` in bytes, and what was counted;
    ``too_long``: why the route would run for longer than ``route="auto"`` waits (empty:
    it will not), e.g. an enumeration that a probe found too large; ``seconds``: the
    estimated wall time (0: not estimated), which the resolver holds against its time
    budget."""

    memory: float = 0.0
    detail: str = ""
    too_long: str = ""
    seconds: float = 0.0


def _cli_value(v) -> str:
    """A parameter or protect input as ``riskengine protect --param KEY=VALUE`` reads it
    (JSON where it is not a plain string)."""
    if isinstance(v, str):
        return v
    if isinstance(v, (np.ndarray, np.generic)):
        v = v.tolist()
    return json.dumps(v, separators=(",", ":"))


@dataclass(frozen=True, eq=False)       # identity: its inputs may be arrays
class Example:
    """A small instance of a mechanism, declared by the mechanism (:meth:`Mechanism.example`).

    ``rk.routes()`` prices every route on it, ``riskengine warmup`` compiles the kernels
    with it, and the registry's tests (protocol, invariants, command line) run it, so a new
    mechanism is covered by declaring one.

    Attributes
    ----------
    cls : type
        The (registered) mechanism class.
    table : rk.Table
        A small table (every exact route answers in well under a second).
    params : mapping
        The parameters that build the mechanism for ``table``, as a config or
        ``riskengine protect --param KEY=VALUE`` gives them (``cls.from_config``).
    inputs : mapping
        What the mechanism's ``protect`` needs besides the table and the random generator
        (the agency's confidential inputs, e.g. cell suppression's ``sensitive`` cells).
    """

    cls: type
    table: Any
    params: Mapping = field(default_factory=dict)
    inputs: Mapping = field(default_factory=dict)

    @functools.cached_property
    def mechanism(self) -> Mechanism:
        """``cls.from_config(params)`` for the table's shape and dims (built once)."""
        return self.cls.from_config(dict(self.params), shape=tuple(self.table.shape),
                                    dims=tuple(self.table.dims))

    def release(self, rng=None):
        """``mechanism.protect(table, rng, **inputs)``; ``rng``: a numpy Generator
        (default ``np.random.default_rng(0)``)."""
        rng = np.random.default_rng(0) if rng is None else rng
        return self.mechanism.protect(self.table, rng, **self.inputs)

    def cli_params(self) -> list:
        """The arguments of ``riskengine protect TABLE --mechanism NAME`` that make this
        release: ``["--param", "KEY=VALUE", ...]`` for every parameter and protect input
        (arrays as JSON, in the table's layout)."""
        return [a for k, v in {**self.params, **self.inputs}.items()
                for a in ("--param", f"{k}={_cli_value(v)}")]


@dataclass(frozen=True)
class MonteCarlo:
    """Settings of a Monte Carlo route (``rk.posterior(..., mcmc=rk.MonteCarlo(...))``).

    The draws for a seed do not depend on ``workers`` or ``scheduler``.

    Parameters
    ----------
    chains : int, default 4
        Chains, started from dispersed tables.
    warmup : int, default 300
        Sweeps dropped at the start of each chain.
    draws : int, default 1000
        Sweeps kept per chain.
    seed : int, optional
        Extra entropy (None: the release, prior and settings alone decide the draws;
        repeated runs with different seeds measure the Monte Carlo error).
    workers : int, optional
        Threads running the chains (None: one per core, at most one per chain).
    scheduler : None, "dask", str or distributed.Client
        None (threads), ``"dask"`` (a local cluster), an address ``"tcp://host:port"`` or
        a ``distributed.Client``.

    Examples
    --------
    >>> import riskengine as rk
    >>> rk.MonteCarlo(chains=2, draws=500).warmup
    300
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


class Inputs(Mapping):
    """The plain inputs a mechanism hands its routes for one release, each computed when a
    route first reads it and then kept for the rest of the call.

    ``Inputs(windows=lambda: entry_windows(release))``: routes read ``inputs["windows"]``
    (an :class:`~riskengine.inference.windows.EntryWindows`), never the function.
    """

    def __init__(self, **makers: Callable[[], Any]):
        self._makers = {k: v for k, v in makers.items() if v is not None}
        self._done: dict = {}

    def __getitem__(self, key):
        if key not in self._done:
            if key not in self._makers:
                raise KeyError(f"this mechanism gives its routes no input {key!r}; it gives: "
                               f"{', '.join(self._makers) or '(none)'}")
            self._done[key] = self._makers[key]()
        return self._done[key]

    def __iter__(self):
        return iter(self._makers)

    def __len__(self):
        return len(self._makers)


class Plan:
    """One call of the resolver: the release, the prior, the memory budget (bytes), the
    Monte Carlo settings, the progress callback, the mechanism's :class:`Inputs`, and
    ``prepared``: a dict for what routes prepare (:func:`riskengine.inference._plan.prepared`):
    a route that estimates and then runs prepares once, and nothing outlives the call or
    is shared between threads."""

    def __init__(self, release, prior, *, memory: float, progress=None, mcmc=None,
                 seconds: float | None = None):
        self.release = release
        self.prior = prior
        self.memory = float(memory)
        #: the time budget of ``route="auto"`` (None: the resolver's default)
        self.seconds = seconds
        self.progress = progress
        self.mcmc = mcmc
        self._inputs = None
        #: what routes prepared for this call, by key
        self.prepared: dict = {}

    @property
    def inputs(self) -> Inputs:
        if self._inputs is None:
            self._inputs = self.release.mechanism.inputs(self.release)
        return self._inputs

    def with_inputs(self, **makers: Callable[[], Any]) -> Plan:
        """The same call on other inputs (a route running another on narrower windows):
        the release, prior, budget, settings and progress, nothing prepared yet."""
        out = Plan(self.release, self.prior, memory=self.memory, progress=self.progress,
                   mcmc=self.mcmc, seconds=self.seconds)
        out._inputs = Inputs(**makers)
        return out


def _frozen(mapping) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class RouteResult:
    """What a route computes, in plain arrays, before it is labelled.

    ``start`` (int, table shape) and ``probs`` (float, shape + window): each cell's window
    of the posterior; ``log_evidence``; ``n_candidates`` (exact int, or None with
    ``notes["n_candidates_note"]`` saying why); ``totals``: ``{dims kept: (start,
    probs)}`` of totals not published exactly, or a callable returning ``{dims kept:
    thunk}`` (computed when first asked for); ``sampler(n, rng) -> int64 (n, *shape)``:
    whole-table draws; ``approximation``: what is approximated (empty: the exact
    posterior); Monte Carlo routes: ``diagnostics`` (arviz R-hat / ESS / MCSE Dataset),
    ``chains`` (kept draws ``(chain, draw, *shape)``), ``weights`` (importance sampling:
    the draws' normalised weights) and ``converged``; ``notes``: further
    attrs (plain str / int / float); ``parts``: a release set's releases, ``((release,
    {dims kept: (start, probs)}, description), ...)``; ``mechanism_weights``: a mixture's candidates'
    posterior probabilities.
    """

    start: Any
    probs: Any
    log_evidence: float = math.nan
    n_candidates: int | None = None
    totals: Any = None
    sampler: Callable | None = None
    approximation: str = ""
    diagnostics: Any = None
    chains: Any = None
    converged: bool | None = None
    #: importance-sampling routes: the normalised weight of each draw of ``chains`` (one
    #: "chain" of independent weighted draws); None for Markov chains and exact routes
    weights: Any = None
    notes: Mapping = field(default_factory=dict)
    parts: tuple = ()
    method: str | None = None
    mechanism_weights: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "notes", _frozen(self.notes))
        object.__setattr__(self, "mechanism_weights", _frozen(self.mechanism_weights))

    def with_notes(self, **notes) -> RouteResult:
        """The same result with more ``notes`` (e.g. a mechanism's own attrs)."""
        from dataclasses import replace
        return replace(self, notes={**self.notes, **notes})


class Route:
    """One way to compute the posterior of a release (and to count its candidates).

    Subclasses set ``name`` (and ``exact = False`` for Monte Carlo routes), ``needs`` (the
    :class:`Inputs` they read, and what else they require, for ``rk.routes()``) and
    override ``applies``, ``estimate``, ``run`` and, where they can count, ``count``.  A
    route keeps nothing between calls: what it prepares goes to ``plan.prepared``.
    """

    name: str = ""
    exact: bool = True
    #: a Monte Carlo route's draws come from Markov chains (``route="mcmc"`` names the
    #: first such route); False for independent weighted draws (importance sampling)
    markov: bool = True
    #: what the route reads and requires (shown by ``rk.routes()``)
    needs: str = ""
    #: the input whose ``approximation`` (what the mechanism's likelihood leaves out) the
    #: route's answer inherits (:meth:`approximation`)
    reads: str = "windows"

    def approximation(self, plan: Plan) -> str:
        """What the route's posterior of ``plan.release`` approximates, without running it
        (empty: exact): Monte Carlo, or the approximation of the likelihood input it
        reads (e.g. the cell key method's product over entries with crossing totals)."""
        if not self.exact:
            return "Monte Carlo"
        if self.reads and self.reads in plan.inputs:
            return getattr(plan.inputs[self.reads], "approximation", "") or ""
        return ""

    def applies(self, plan: Plan) -> str | None:
        """``None`` when the route can answer ``plan.release`` under ``plan.prior``, else
        the reason it cannot (one sentence, shown to the user)."""
        return None

    def estimate(self, plan: Plan, what: str = "posterior") -> Cost:
        """Memory the route needs for ``what`` (``"posterior"``, ``"posterior+count"`` or
        ``"count"``), computed without allocating it."""
        return Cost()

    def run(self, plan: Plan, *, count: bool = True) -> RouteResult:
        """The posterior in plain arrays; ``count``: also the exact number of candidates."""
        raise NotImplementedError

    def count(self, plan: Plan) -> int:
        """The exact number of candidate originals with positive prior weight."""
        raise NotImplementedError(f"route {self.name!r} does not count candidates")

    #: why the route cannot count its candidates although it has a posterior (e.g.
    #: "infinitely many candidates" under unbounded noise); empty: no such reason
    uncountable: str = ""

    @property
    def counts(self) -> bool:
        """Whether the route counts candidates (it implements :meth:`count`)."""
        return type(self).count is not Route.count and not self.uncountable

    def __repr__(self) -> str:
        return f"<route {self.name}>"


class MonteCarloRoute(Route):
    """A route that samples (``exact = False``), with the settings of
    :class:`MonteCarlo`: ``chains``, ``warmup``, ``draws``, ``seed`` (extra entropy for
    the generator; None: the release, prior and settings alone decide it, and repeated
    runs with different seeds measure the Monte Carlo error), ``workers`` and
    ``scheduler`` (threads or a dask scheduler; the result for a seed depends on
    neither).  ``rk.posterior(..., mcmc=...)`` runs a per-call copy
    (:meth:`with_settings`)."""

    exact = False

    def __init__(self, chains: int = 4, warmup: int = 300, draws: int = 1000,
                 seed: int | None = None, workers: int | None = None, scheduler=None):
        self.chains, self.warmup, self.draws = chains, warmup, draws
        self.seed, self.workers, self.scheduler = seed, workers, scheduler

    def with_settings(self, mc: MonteCarlo) -> MonteCarloRoute:
        """The same route with the settings of ``mc`` (the shared route is untouched).

        Parameters
        ----------
        mc : MonteCarlo
            The settings.

        Returns
        -------
        MonteCarloRoute
            A copy of this route.
        """
        import copy
        out = copy.copy(self)
        out.chains, out.warmup, out.draws = mc.chains, mc.warmup, mc.draws
        out.seed, out.workers, out.scheduler = mc.seed, mc.workers, mc.scheduler
        return out


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
    #: ``window_cost(release) -> (what, bytes, detail)``: the memory a parameter that sizes
    #: every window sets (a rounding base, a noise scale), from the published values alone;
    #: the resolver refuses a release whose windows exceed the budget before any route runs
    window_cost = None
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
        """The mechanism's registry name and public parameters.

        Returns
        -------
        dict
            ``{"name": ..., **parameters}``; :meth:`from_dict` reads it back.
        """
        return {"name": self.name, **self._params()}

    @classmethod
    def from_dict(cls, d: dict):
        """The mechanism :meth:`to_dict` describes.

        Parameters
        ----------
        d : dict
            ``{"name": ..., **parameters}``.

        Returns
        -------
        Mechanism
        """
        params = {k: v for k, v in d.items() if k != "name"}
        return cls.from_config(params)

    @classmethod
    def parameters(cls) -> dict:
        """The constructor's parameters.

        Returns
        -------
        dict
            ``{parameter: default}`` (``inspect.Parameter.empty``: required).
        """
        sig = inspect.signature(cls.__init__)
        return {k: p.default for k, p in sig.parameters.items()
                if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    @classmethod
    def from_config(cls, spec: dict, shape=None, dims=None):
        """The mechanism from plain parameters (a TOML block, ``--param key=value``, JSON).

        Unknown keys and missing required ones are errors naming the valid keys.

        Parameters
        ----------
        spec : dict
            Parameter name -> value (``config_defaults`` fill the required ones left out).
        shape, dims : tuple, optional
            The table's, for mechanisms whose parameters are built for a table (a cycle
            design).

        Returns
        -------
        Mechanism
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
        """One line naming the mechanism and its scalar parameters.

        Returns
        -------
        str
            e.g. ``"ControlledRounding(base=3, method=unbiased, ...)"``.
        """
        inner = ", ".join(f"{k}={v}" for k, v in self._params().items()
                          if not isinstance(v, (list, np.ndarray)))
        return f"{type(self).__name__}({inner})"

    def __repr__(self) -> str:
        return self.describe()

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """A small instance of this mechanism (see :class:`Example`).

        Every registered mechanism overrides it: ``rk.routes()``, ``riskengine warmup`` and
        the registry's tests take their cases from it.

        Parameters
        ----------
        table : rk.Table, optional
            None: the mechanism's own example table.  A small table of counts (1-, 2- or
            3-D): the example's parameters and protect inputs made for that table
            (``ValueError`` when the mechanism takes no table of its shape).
        rng : numpy.random.Generator, optional
            Draw the parameters from it (property tests vary them); None: the example's
            own parameters.

        Returns
        -------
        Example
        """
        raise NotImplementedError(
            f"mechanism {cls.name!r} ({cls.__name__}) declares no example of itself: give "
            "it a classmethod example(cls, table=None, rng=None) returning a "
            "riskengine.protocol.Example (a small table, its parameters and protect "
            "inputs); rk.routes(), riskengine warmup and the registry's tests run it")

    # --- protection ----------------------------------------------------------------------
    def protect(self, table, rng=None):  # pragma: no cover - every mechanism overrides it
        """The release of ``table`` under this mechanism.

        Parameters
        ----------
        table : rk.Table
            The original table.
        rng : numpy.random.Generator
            The only source of randomness (same state, same release).

        Returns
        -------
        rk.Release
        """
        raise NotImplementedError

    def validate_release(self, release) -> None:
        """Raise ``ValueError`` unless ``release`` could have come from this mechanism.

        Parameters
        ----------
        release : rk.Release
        """

    @staticmethod
    def _rng(rng) -> np.random.Generator:
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator "
                            f"(np.random.default_rng(seed)), got {type(rng).__name__}")
        return rng

    # --- inference ------------------------------------------------------------------------
    def inputs(self, release) -> Inputs:
        """The plain inputs of this mechanism's routes for ``release``.

        Parameters
        ----------
        release : rk.Release

        Returns
        -------
        Inputs
            Computed when a route first reads them; by default the entry ``windows`` and
            their ``window_cost`` (when the mechanism declares them).
        """
        w, c = self.windows, self.window_cost
        return Inputs(windows=None if w is None else (lambda: w(release)),
                      window_cost=None if c is None else (lambda: c(release)))
