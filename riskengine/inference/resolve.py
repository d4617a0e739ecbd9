"""The one resolver: ``rk.posterior`` and ``rk.count_candidates``.

Every request runs the same path: the release and prior are checked, one
:class:`~riskengine.protocol.Plan` is made for the call (budget, Monte Carlo settings,
the mechanism's plain inputs, a place for what routes prepare), the route is resolved
(:func:`select_route`: ``auto`` = the first exact route within the memory and time
budget, then Monte Carlo; a named route must exist, apply and fit), the route runs on the
plan and returns a frozen :class:`~riskengine.protocol.RouteResult`, and the labeller
(:mod:`._label`) builds the read-only ``Posterior`` once.  A mixture over candidate
mechanisms (``candidates=``) resolves each candidate the same way and mixes their
results before the one labelling step.
"""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np

from .. import _budget
from ..priors import Prior, Uniform
from ..protocol import Mechanism, MonteCarlo, Plan, RouteRefused, RouteResult
from ..release import Release
from ..release_set import ReleaseSet
from . import _label

__all__ = ["REFUSALS", "TIME_BUDGET", "count_candidates", "plan", "posterior", "route_for",
           "select_route"]


def _prior(prior) -> Prior:
    if prior is None:
        return Uniform()
    if not isinstance(prior, Prior):
        raise TypeError(f"prior must be a riskengine prior (rk.priors.*), got {type(prior).__name__}")
    return prior


def _release(release) -> Release | ReleaseSet:
    from ..table_set import TableSetRelease
    if isinstance(release, (list, tuple)) and release and all(
            isinstance(r, Release) for r in release):
        return ReleaseSet(release)
    if isinstance(release, TableSetRelease):
        if getattr(release.mechanism.base, "set_routes", ()):
            return ReleaseSet.from_table_set(release)   # a product over published cells
        return release
    if not isinstance(release, (Release, ReleaseSet)):
        raise TypeError(f"release must be an rk.Release or rk.ReleaseSet (several releases "
                        f"of the same microdata), got {type(release).__name__}")
    return release


def plan(release, prior=None, *, memory=None, progress=None, mcmc=None,
         time=None) -> Plan:
    """The :class:`~riskengine.protocol.Plan` of one call on ``release`` under ``prior``
    (checked as :func:`posterior` checks them)."""
    return Plan(_release(release), _prior(prior), memory=_budget.budget(memory),
                progress=progress, mcmc=mcmc, seconds=_seconds(time))


def _seconds(time) -> float:
    """``time=``: the time budget of ``route="auto"`` in seconds (default
    :data:`TIME_BUDGET`)."""
    if time is None:
        return TIME_BUDGET
    import numbers
    if isinstance(time, bool) or not isinstance(time, numbers.Real) or not time > 0:
        raise ValueError(f"time must be a number of seconds > 0 (the time budget of "
                         f"route='auto'), got {time!r}")
    return float(time)


#: seconds ``route="auto"`` waits for a route: a route whose estimate is longer is passed
#: over (with its estimate in the reason); a route named by the caller runs anyway, and its
#: ``route_reason`` says it was estimated past this budget
TIME_BUDGET = 120.0

#: what a route raises when it refuses a release it accepted at its estimate (the table DP:
#: more stored states than the budget, weights beyond the floats' range; the sums route:
#: more candidates than its walk visits): ``auto`` goes on to the next route
REFUSALS = (MemoryError, FloatingPointError, RouteRefused)

#: a route that has not reported progress for this many seconds gets a heartbeat call of
#: the progress callback (:class:`_Heartbeat`)
HEARTBEAT_SECONDS = 2.0


def _fmt_seconds(s: float) -> str:
    return f"{s:.2g} s" if s < 100 else f"{s:.3g} s" if s < 1e5 else f"{s:.2e} s"


def select_route(plan: Plan, route: str = "auto", what: str = "posterior"):
    """``(route, reason)``: the route that answers ``plan.release`` under ``plan.prior``.

    ``route="auto"``: the first of the mechanism's routes that applies and whose estimate
    fits the budget (``plan.memory``) and the time budget (:data:`TIME_BUDGET`, and no
    ``too_long``); ``reason`` says why the routes before it were passed over.  ``"mcmc"``:
    the mechanism's Monte Carlo route.  A named route is checked the same way and refused
    with the reason (memory), or taken with its time estimate in the reason (time).
    ``what``: ``"posterior"``, ``"posterior+count"`` or ``"count"``.
    """
    r, reason, _ = next(_candidates(plan, route, what, []))
    return r, reason


def _check_name(mech, route) -> None:
    """A route name that is no route of ``mech``: an error listing the known ones (a typo
    is answered first, whatever the request)."""
    if not isinstance(route, str):
        raise TypeError(f"route must be a str, got {type(route).__name__}")
    every = [r.name for r in mech.routes]
    if every and route not in ("auto", "mcmc", *every):
        raise ValueError(f"unknown route {route!r} for {mech.name} releases; known: "
                         f"{', '.join(['auto'] + every)}")


def _candidates(plan: Plan, route: str, what: str, skipped: list):
    """The routes that may answer, in order, each as ``(route, reason, cost)``: the first that
    fits, then (``auto``) the next ones for when it refuses at its run (the caller adds its
    refusal to ``skipped``, which every later reason and the final error name).  A
    ValueError when none is left."""
    mech = plan.release.mechanism
    routes = tuple(mech.routes)
    _check_name(mech, route)
    if "window_cost" in plan.inputs:          # a parameter that sizes every window (a
        cost = plan.inputs["window_cost"]       # rounding base, a noise scale): before any
        if cost is not None:                    # route builds the windows, one line
            _budget.check_fits(*cost, plan.memory)
    if what == "count":
        why_not = next((r.uncountable for r in routes if r.uncountable), "")
        routes = tuple(r for r in routes if r.counts)
        if not routes and why_not:
            raise ValueError(f"{mech.describe()} releases cannot be counted: {why_not}")
    if not routes:
        raise ValueError(f"{mech.describe()} releases have no inference route"
                         f"{' that counts candidates' if what == 'count' and mech.routes else ''}"
                         f": {mech.no_route}")
    kind = "count" if what == "count" else "posterior"
    names = [r.name for r in routes]
    if route == "mcmc":                       # the mechanism's Markov-chain route (else
        mc = ([r.name for r in routes if not r.exact and r.markov]   # its other Monte
              or [r.name for r in routes if not r.exact])            # Carlo route)
        if not mc:
            raise ValueError(f"{mech.name} releases have no Monte Carlo route; routes: "
                             f"{', '.join(['auto'] + names)}")
        route = mc[0]
    if route != "auto" and route not in names:
        raise ValueError(f"unknown route {route!r} for {mech.name} releases; known: "
                         f"{', '.join(['auto'] + names)}")
    limit = plan.memory
    budget = plan.seconds if plan.seconds is not None else TIME_BUDGET
    for r in routes:
        if route not in ("auto", r.name):
            continue
        if plan.mcmc is not None and not r.exact and hasattr(r, "with_settings"):
            r = r.with_settings(plan.mcmc)    # a per-call copy: the shared route is untouched
        why = r.applies(plan)
        if why is None:
            try:
                cost = r.estimate(plan, what)
            except REFUSALS as exc:
                if route != "auto":
                    raise
                skipped.append((r.name, f"refused while estimating: {exc}"))
                continue
            # Monte Carlo is the last resort: a smaller budget than the default does not
            # pass it over (it runs, with progress), a run past the larger of the two does
            late = cost.seconds > (budget if r.exact else max(budget, TIME_BUDGET))
            if route == "auto" and (cost.too_long or (late and cost.memory <= limit)):
                text = cost.too_long or (
                    f"would take about {_fmt_seconds(cost.seconds)} ({cost.detail}), more "
                    f"than route='auto' waits ({budget:g} s)")
                skipped.append((r.name, text + (
                    f"; route={r.name!r} runs it to the end" if r.name else "")))
                continue
            if cost.memory <= limit:
                if route != "auto":
                    reason = "requested"
                    if late or cost.too_long:
                        reason += ("; estimated past the time budget of route='auto': "
                                   + (cost.too_long or
                                      f"about {_fmt_seconds(cost.seconds)} ({cost.detail}), "
                                      f"more than {budget:g} s"))
                else:
                    reason = "first route that applies within the memory and time budget"
                    if skipped:
                        reason += "; passed over: " + "; ".join(f"{n}: {w}"
                                                                 for n, w in skipped)
                yield r, reason, cost
                continue
            why = (f"needs {_budget.fmt_bytes(cost.memory)} ({cost.detail}), more than the "
                   f"memory budget of {_budget.fmt_bytes(limit)}")
        if route != "auto":
            alts = [o.name for o in routes if o is not r and o.applies(plan) is None]
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


def route_for(release, prior=None, route: str = "auto", memory=None,
              what: str = "posterior", time=None):
    """``(route, reason)``: the route :func:`posterior` (or, with ``what="count"``,
    :func:`count_candidates`) would take for ``release`` under ``prior``, without running
    it."""
    return select_route(plan(release, prior, memory=memory, time=time), route, what)


class _Heartbeat:
    """The caller's progress callback as routes see it: it also calls the callback itself
    when the route has not for :data:`HEARTBEAT_SECONDS` (repeating the route's last
    ``(done, total)``, or, from a route that reports nothing, seconds elapsed of the
    estimated seconds), so any run longer than a few seconds reports."""

    def __init__(self, progress, seconds: float):
        self.progress, self.seconds = progress, float(seconds)
        self.lock = threading.Lock()
        self.t0 = self.last = time.monotonic()
        self.state = None
        self.beats = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True,
                                       name="riskengine-progress")

    def __call__(self, done, total):
        with self.lock:
            self.last = time.monotonic()
            self.state = (done, total)
            self.progress(done, total)

    def _elapsed(self):
        el = time.monotonic() - self.t0
        return int(el), int(max(self.seconds, el + 1))

    def _beat(self):
        while not self.stop.wait(0.25):
            with self.lock:
                if time.monotonic() - self.last < HEARTBEAT_SECONDS:
                    continue
                self.last = time.monotonic()
                self.beats += 1
                state = self.state or self._elapsed()
                with contextlib.suppress(Exception):    # the run decides, not the beat
                    self.progress(*state)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        if exc[0] is None and self.beats and self.state is None:
            _, total = self._elapsed()
            self.progress(total, total)         # a silent route's beats end at their total
        return False


def _run(p: Plan, route: str, count: bool):
    """Resolve and run: ``(route, reason, RouteResult)``; under ``auto`` a route that
    refuses at its run (:data:`REFUSALS`) passes the release on to the next one."""
    skipped: list = []
    user_progress = p.progress
    try:
        for r, reason, cost in _candidates(p, route, "posterior+count" if count else
                                           "posterior", skipped):
            try:
                if user_progress is None:
                    res = r.run(p, count=count)
                else:
                    with _Heartbeat(user_progress, cost.seconds) as beat:
                        p.progress = beat
                        res = r.run(p, count=count)
            except REFUSALS as exc:
                if route != "auto":
                    raise
                skipped.append((r.name, f"refused while running: {type(exc).__name__}: {exc}"))
                continue
            finally:
                p.progress = user_progress
            if not isinstance(res, RouteResult):
                raise TypeError(f"internal error: route {r.name!r} returned "
                                f"{type(res).__name__}, not a RouteResult")
            return r, reason, res
    finally:
        p.progress = user_progress
    raise AssertionError("unreachable: _candidates raises when no route is left")  # pragma: no cover


def posterior(release, prior: Prior | None = None, *, route: str = "auto", progress=None,
              count: bool = True, memory=None, mcmc=None, candidates=None, weights=None,
              time=None):
    """Exact posterior of the original table given ``release`` and ``prior``.

    Parameters
    ----------
    release : rk.Release or rk.ReleaseSet
        What was published and how (a list of releases is read as a ``ReleaseSet``).
    prior : rk.priors.Prior, default ``Uniform()``
        The intruder's or user's prior over original tables.
    route : str
        Inference route: ``"auto"`` takes the first of the mechanism's routes (fastest
        exact first) that applies to this release and fits the memory and time budget
        (:data:`TIME_BUDGET` seconds), goes on to the next one when a route refuses at its
        run (:data:`REFUSALS`), and says why in ``attrs["route_reason"]``; ``"mcmc"`` the Monte Carlo route; a
        route name forces it (an unknown name is an error listing the known ones).
    progress : callable(done, total) or None
        Called as work proceeds on long runs, at least every few seconds (a route that
        reports nothing for :data:`HEARTBEAT_SECONDS` gets a call on its behalf: its last
        ``(done, total)``, or seconds elapsed of the seconds it was estimated at).
    count : bool
        Also count the candidates exactly (``n_candidates``; some routes count in the
        same pass, others need one more).
    memory : int, float or str, optional
        The memory budget (bytes, or ``"8GB"``); default: half of the memory available now.
    mcmc : rk.MonteCarlo, optional
        Settings of the Monte Carlo route when it is the one taken (chains, warm-up,
        draws, seed, threads or a dask ``scheduler``); default ``rk.MonteCarlo()``: 4 chains
        x 1,000 draws after 300 warm-up sweeps, one thread per core.
    candidates : dict or sequence of mechanisms, optional
        When the release's parameters are withheld (a p-table's D and V, a rounding base):
        the mechanisms it may have been made with, ``{label: mechanism}`` (a sequence is
        labelled by the mechanisms' descriptions); the release's own mechanism is then not
        used.  The posterior is the mixture of each candidate's exact posterior, weighted
        by its prior probability times its evidence (how probable the published numbers
        are under it); a candidate that cannot have produced the release weighs 0.
        ``post.mechanism_weights`` holds the candidates' posterior probabilities.
    weights : sequence of float, optional
        The candidates' prior probabilities (default: equal).
    time : float, optional
        The time budget of ``route="auto"`` in seconds (default :data:`TIME_BUDGET`): an
        exact route estimated past it is passed over (``attrs["route_reason"]`` says so,
        with its estimate) for the next one, Monte Carlo last.

    Returns
    -------
    rk.Posterior
        Read-only; ``attrs["route"]`` and ``attrs["route_reason"]`` say which route
        answered and why, ``attrs["approximation"]`` what is approximated (absent when
        the posterior is exact).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    >>> rel = rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=mech)
    >>> post = rk.posterior(rel, rk.priors.Uniform())
    >>> float(post.pmf.sum("value").min()) > 0.999999
    True
    >>> post.attrs["route"]
    'structured'
    """
    if mcmc is not None and not isinstance(mcmc, MonteCarlo):
        raise TypeError(f"mcmc must be an rk.MonteCarlo, got {type(mcmc).__name__}")
    release, prior = _release(release), _prior(prior)
    if candidates is not None:
        return _mixture(release, prior, candidates, weights, route=route, progress=progress,
                        count=count, memory=memory, mcmc=mcmc, time=time)
    if weights is not None:
        raise ValueError("weights= are the prior probabilities of candidates=; give both")
    p = Plan(release, prior, memory=_budget.budget(memory), progress=progress, mcmc=mcmc,
             seconds=_seconds(time))
    r, reason, res = _run(p, route, count)
    return _label.label(release, prior, res, route=r.name, reason=reason)


def count_candidates(release, prior: Prior | None = None, *, route: str = "auto",
                     memory=None, progress=None, time=None) -> int:
    """Exact number of original tables consistent with ``release``.

    Parameters
    ----------
    release : rk.Release or rk.ReleaseSet
    prior : rk.priors.Prior, optional
        Only tables of positive prior weight count (default: every nonnegative table).
    route, memory, progress, time
        As for :func:`posterior` (``route`` among the routes that count).

    Returns
    -------
    int
        Exact (a Python int: counts beyond int64 are common).  A release no table can
        have produced is a ``ValueError``, as for :func:`posterior`.

    Raises
    ------
    ValueError
        Infinitely many candidates: every release's likelihood is positive on every
        nonnegative table (noisy counts: unbounded noise on every cell and total, so the
        published totals bound no cell) and the prior leaves a cell unbounded above.
        Under a prior that bounds every cell (``Flat(low, high)``, or ``at_most`` /
        ``known`` of every cell) the candidates are the prior's box of tables, counted
        without a route.  No route counts, or the memory needed, otherwise.
    """
    p = plan(release, prior, memory=memory, progress=progress, time=time)
    rel = p.release
    _check_name(rel.mechanism, route)
    members = rel.releases if isinstance(rel, ReleaseSet) else (rel,)
    # every table is a candidate when each release's likelihood is positive everywhere
    # (its routes say why they cannot count): decided here, before any route is sized
    # (a noise scale's windows may need terabytes for what is no count at all)
    why = [next((r.uncountable for r in m.mechanism.routes if r.uncountable), "")
           for m in members]
    if all(why) and not any(r.counts for m in members for r in m.mechanism.routes):
        lo, hi = p.prior.bounds(rel.shape, rel.dims, rel.coords)
        lo = np.maximum(lo, getattr(p.prior, "low", 0))
        top = getattr(p.prior, "high", None)
        if top is not None:
            hi = np.where(hi < 0, top, np.minimum(hi, top))
        if (hi < 0).any():
            at = tuple(int(i) for i in np.argwhere(hi < 0)[0])
            cell = ", ".join(f"{d}={rel.coords[d][i]}" for d, i in zip(rel.dims, at))
            reason = why[0].removesuffix(": infinitely many candidates")
            raise ValueError(
                f"{rel.mechanism.describe()} releases cannot be counted: infinitely many "
                f"candidates ({reason}, so no published total bounds a cell, and the prior "
                f"bounds cell ({cell}) by no upper value); under a prior that bounds every "
                "cell (Flat(low, high), or at_most / known of every cell) they are finitely "
                "many")
        width = np.maximum(hi - lo + 1, 0)
        if width.size * int(width.max()) <= 10 ** 6:
            # small: the prior's support counted value by value (any prior's zeros)
            vals = lo[..., None] + np.arange(int(width.max()))
            ok = np.isfinite(p.prior.log_weights(vals, rel.dims, rel.coords))
            width = (ok & (vals <= hi[..., None])).sum(axis=-1)
        n = 1
        for w in width.ravel().tolist():
            n *= int(w)
        if n == 0:
            raise ValueError(f"no original table is consistent with this "
                             f"{rel.mechanism.name} release under this prior")
        return n
    skipped: list = []
    for r, _, cost in _candidates(p, route, "count", skipped):
        try:
            if progress is None:
                n = r.count(p)
            else:
                with _Heartbeat(progress, cost.seconds) as beat:
                    p.progress = beat
                    try:
                        n = r.count(p)
                    finally:
                        p.progress = progress
        except REFUSALS as exc:
            if route != "auto":
                raise
            skipped.append((r.name, f"refused while counting: {type(exc).__name__}: {exc}"))
            continue
        break
    if n == 0:   # the same answer as the posterior's, whichever route counted
        raise ValueError(f"no original table is consistent with this "
                         f"{p.release.mechanism.name} release under this prior")
    approx = _counted_approximately(p, r)
    if approx:
        raise ValueError(f"the exact number of candidates of this {p.release.mechanism.name} "
                         f"release is not known: route {r.name!r} counts the {n} tables each "
                         f"of whose published entries is possible on its own (an upper "
                         f"bound), but {approx}")
    return n


def _counted_approximately(plan: Plan, route) -> str:
    """What makes a count by ``route`` count other tables than those of positive
    likelihood (empty: none): the product of keyed entries' probabilities (the cell key
    method with totals: a table whose every entry is possible on its own may have
    likelihood 0 once the keys are tied), unless the route integrates over the keys.
    Other approximate products (controlled rounding's marginal probabilities) keep the
    support, hence the count."""
    if (getattr(route, "integrates_keys", False) or "windows" not in plan.inputs
            or not getattr(plan.release.mechanism, "keyed", False)):
        return ""
    w = plan.inputs["windows"]
    return getattr(w, "approximation", "") or ""


def _mixture(release, prior, candidates, weights, *, route, progress, count, memory, mcmc,
             time=None):
    """The posterior over the original and the mechanism (see :func:`posterior`): each
    candidate resolved and run as a release of its own, the results mixed by prior
    probability x evidence, labelled once."""
    if not isinstance(release, Release):
        raise TypeError("candidates= takes one rk.Release (not a set of releases)")
    if isinstance(candidates, dict):
        labels, mechs = [str(k) for k in candidates], list(candidates.values())
    else:
        mechs = list(candidates)
        labels = [getattr(m, "describe", lambda m=m: repr(m))() for m in mechs]
    if not mechs:
        raise ValueError("candidates= needs at least one mechanism")
    if len(set(labels)) != len(labels):
        raise ValueError(f"candidate labels must differ, got {labels}")
    for lab, m in zip(labels, mechs):
        if not isinstance(m, Mechanism):
            raise TypeError(f"candidate {lab!r} is a {type(m).__name__}, not a mechanism")
    if weights is None:
        w = np.full(len(mechs), 1.0 / len(mechs))
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(mechs),) or not np.all(np.isfinite(w)) or (w < 0).any() \
                or w.sum() <= 0:
            raise ValueError(f"weights must be {len(mechs)} nonnegative numbers, not all 0 "
                             f"(one per candidate), got {weights!r}")
        w = w / w.sum()
    results, routes, logs, why = [], [], [], {}
    for lab, m, wk in zip(labels, mechs, w):
        results.append(None)
        routes.append(None)
        logs.append(-np.inf)
        if wk == 0:
            continue
        try:
            rel = Release(release.published, margins=dict(release.margins), mechanism=m,
                          dims=release.dims, coords=release.coords, kind=release.kind,
                          groups=release.groups or None, subtotals=release.subtotals or None)
        except ValueError as e:              # this mechanism cannot have made the release
            why[lab] = str(e)
            continue
        p = Plan(rel, prior, memory=_budget.budget(memory), progress=progress, mcmc=mcmc,
                 seconds=_seconds(time))
        try:
            r, _, res = _run(p, route, count)
        except ValueError as e:
            if not str(e).startswith("no original table"):
                raise
            why[lab] = str(e)
            continue
        if not np.isfinite(res.log_evidence):
            raise ValueError(f"candidate {lab!r} was answered by route {r.name!r}, which "
                             "gives no evidence (Monte Carlo); the mixture over mechanisms "
                             "needs each candidate's exact evidence")
        results[-1], routes[-1] = (rel, res), r.name
        logs[-1] = np.log(wk) + res.log_evidence
    logs = np.array(logs)
    if not np.isfinite(logs).any():
        detail = "; ".join(f"{k}: {v}" for k, v in why.items())
        raise ValueError(f"no candidate mechanism can have produced this release ({detail})")
    top = logs.max()
    pi = np.exp(logs - top)
    pi /= pi.sum()
    keep = [k for k in range(len(mechs)) if pi[k] > 0]
    parts = [results[k] for k in keep]
    start, probs = _mix([(res.start, res.probs) for _, res in parts], pi[keep])
    approx = "; ".join(sorted({res.approximation for _, res in parts if res.approximation}))
    samplers = [res.sampler for _, res in parts]

    def sampler(n, rng):
        counts = rng.multinomial(n, pi[keep])
        out = np.concatenate([np.asarray(s(int(c), rng)) for s, c in zip(samplers, counts)
                              if c > 0])
        return out[rng.permutation(n)]

    totals = {}
    for keep_dims in set.intersection(*[set(_label.totals_of(rel, res)) for rel, res in parts]):
        tot = [_label.totals_of(rel, res)[keep_dims]() for rel, res in parts]
        totals[keep_dims] = _mix(tot, pi[keep])
    mixed = RouteResult(
        start=start, probs=probs, log_evidence=float(top + np.log(np.exp(logs - top).sum())),
        totals=totals, approximation=approx,
        sampler=sampler if all(s is not None for s in samplers) else None,
        method=f"mixture over {len(mechs)} candidate mechanisms",
        notes={"mechanism": "one of: " + " | ".join(f"{lab} = {m.describe()}"
                                                    for lab, m in zip(labels, mechs)),
               "mechanism_weights": "; ".join(f"{lab}: {p:.6g}" for lab, p in zip(labels, pi)),
               "n_candidates_note": "a mixture over mechanisms does not count candidates"},
        mechanism_weights=dict(zip(labels, (float(p) for p in pi))))
    used = sorted({routes[k] for k in keep})
    return _label.label(release, prior, mixed, route="mixture(" + ", ".join(used) + ")",
                        reason="candidates= given: each candidate's own route")


def _mix(windows, pis):
    """The mixture ``sum_k pis[k] * windows[k]`` of per-cell windows ``(start, probs)``."""
    start = np.min([s for s, _ in windows], axis=0)
    end = np.max([s + p.shape[-1] for s, p in windows], axis=0)
    W = int((end - start).max())
    probs = np.zeros(start.shape + (W,))
    grid = np.indices(start.shape)
    for (s, p), pk in zip(windows, pis):
        off = s - start
        for j in range(p.shape[-1]):
            probs[(*grid, off + j)] += pk * p[..., j]
    return start, probs
