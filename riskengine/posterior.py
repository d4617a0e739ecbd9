"""posterior(release, prior) -> Posterior: per-cell posterior distributions and risk.

Each cell's pmf is kept on its own window (first value + probabilities), so
wide supports stay cheap; the dense ``pmf`` DataArray (union of the windows on
the ``value`` axis) is built only when asked for.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from . import _budget
from . import _validate as V
from .mechanisms._base import Mechanism, MonteCarlo, run_count, run_posterior
from .priors import Prior, Uniform
from .release import Release
from .release_set import ReleaseSet
from .table import aligned

__all__ = ["Posterior", "count_candidates", "posterior"]


class Posterior:
    """Per-cell posterior distributions of the original table given a release.

    Attributes
    ----------
    start : ndarray (int64, table shape)
        First value of each cell's window.
    probs : ndarray (float64, table shape + (W,))
        Posterior probabilities of ``start + 0 .. start + W - 1``; sums to 1 per cell.
    n_candidates : int or None
        Exact number of original tables with nonzero posterior (None only where
        the route cannot count them; ``attrs["n_candidates_note"]`` says why).
    log_evidence : float
        log sum over candidates of prior weight x likelihood (prior weights as the
        prior defines them: unnormalised for ``Uniform``/``Flat``).
    """

    def __init__(self, *, start, probs, dims, coords, published=None, n_candidates=None,
                 log_evidence=np.nan, attrs=None, sampler=None):
        self.start = np.asarray(start, dtype=np.int64)
        self.probs = np.asarray(probs, dtype=float)
        if self.probs.shape[:-1] != self.start.shape:
            raise ValueError("probs must have the table shape plus a value axis")
        self.dims = tuple(dims)
        self.coords = {d: list(v) for d, v in coords.items()}
        self.published = None if published is None else np.asarray(published)
        self.n_candidates = n_candidates
        self.log_evidence = float(log_evidence)
        self.attrs = dict(attrs or {})
        #: posteriors of totals that are not published exactly: {dims kept: Posterior}
        self.totals: dict = {}
        #: ``sampler(n, rng) -> int64 (n, *shape)``: whole-table draws (set by the route)
        self._sampler = sampler
        #: Monte Carlo diagnostics (R-hat, ESS, MCSE); None for exact routes
        self.diagnostics = None
        #: Monte Carlo routes: the kept draws ``(chain, draw, *shape)``; None for exact ones
        self.chains = None
        #: a release set's posterior: per release, the posterior of its own cells (and
        #: totals) given the whole set; empty for a single release
        self.releases: tuple = ()
        #: a posterior over candidate mechanisms (``candidates=``): each one's posterior
        #: probability; empty otherwise
        self.mechanism_weights: dict = {}

    # --- helpers --------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.start.shape

    @property
    def width(self) -> int:
        return self.probs.shape[-1]

    def _da(self, values, name, /, **attrs) -> xr.DataArray:
        return xr.DataArray(values, dims=self.dims, coords=self.coords, name=name,
                            attrs={**self._common_attrs(), **attrs})

    def _common_attrs(self) -> dict:
        return {k: v for k, v in self.attrs.items() if k in ("method", "prior", "mechanism")}

    def _prob_at(self, values) -> np.ndarray:
        values = np.asarray(values, dtype=np.int64)
        j = values - self.start
        inside = (j >= 0) & (j < self.width)
        jj = np.where(inside, j, 0)
        p = np.take_along_axis(self.probs, jj[..., None], axis=-1)[..., 0]
        return np.where(inside, p, 0.0)

    # --- distributions ---------------------------------------------------------------
    @property
    def pmf(self) -> xr.DataArray:
        """Dense pmf, dims ``(*table dims, "value")``, on the union of the cell windows."""
        lo = int(self.start.min())
        hi = int(self.start.max()) + self.width
        dense = np.zeros(self.shape + (hi - lo,))
        idx = (self.start - lo)[..., None] + np.arange(self.width)
        np.put_along_axis(dense, idx, self.probs, axis=-1)
        return xr.DataArray(dense, dims=(*self.dims, "value"),
                            coords={**self.coords, "value": np.arange(lo, hi)}, name="pmf",
                            attrs={**self._common_attrs(),
                                   "description": "posterior Pr(original cell = value | release)"})

    def mean(self) -> xr.DataArray:
        v = self.start[..., None] + np.arange(self.width)
        return self._da((self.probs * v).sum(-1), "mean")

    def sd(self) -> xr.DataArray:
        v = self.start[..., None] + np.arange(self.width)
        mu = (self.probs * v).sum(-1, keepdims=True)
        return self._da(np.sqrt(np.maximum((self.probs * (v - mu) ** 2).sum(-1), 0.0)), "sd")

    def mode(self) -> xr.DataArray:
        """Posterior mode (the smallest value among ties)."""
        return self._da(self.start + np.argmax(self.probs, axis=-1), "mode")

    def max_prob(self) -> xr.DataArray:
        """Posterior probability of the mode: the intruder's confidence in the MAP guess."""
        return self._da(self.probs.max(-1), "max_prob")

    def interval(self, level: float = 0.95) -> xr.Dataset:
        """Equal-tailed credible interval: the smallest values whose cdf reaches
        (1 - level)/2 and 1 - (1 - level)/2; covers at least ``level``."""
        level = V.probability(level, "level")
        cdf = np.cumsum(self.probs, axis=-1)
        a = (1.0 - level) / 2.0
        eps = 1e-12
        # the lower end carries mass (with level = 1, a = 0 and cdf >= 0 holds everywhere)
        lo = self.start + np.argmax((cdf >= a - eps) & (cdf > 0), axis=-1)
        hi = self.start + np.argmax(cdf >= 1.0 - a - eps, axis=-1)
        return xr.Dataset({"lower": self._da(lo, "lower"), "upper": self._da(hi, "upper")},
                          attrs={"level": level, "kind": "equal-tailed"})

    def prob(self, values) -> xr.DataArray:
        """Posterior probability that each cell equals ``values`` (array of the table shape)."""
        return self._da(self._prob_at(self._values(values)), "prob")

    def prob_exact(self, truth) -> xr.DataArray:
        """Pr(cell == its true value | release): the exact-disclosure probability."""
        return self._da(self._prob_at(self._values(truth)), "prob_exact",
                        description="posterior probability of the true value")

    def prob_published(self) -> xr.DataArray:
        """Posterior mass at the published value (NaN where nothing is published)."""
        if self.published is None:
            return self._da(np.full(self.shape, np.nan), "prob_published")
        pub = np.asarray(self.published, dtype=float)
        p = self._prob_at(np.where(np.isnan(pub), 0, pub).astype(np.int64))
        return self._da(np.where(np.isnan(pub), np.nan, p), "prob_published")

    def prob_small(self, values=(1, 2)) -> xr.DataArray:
        """Pr(cell in ``values``): the small-count risk (default {1, 2})."""
        p = sum(self._prob_at(np.full(self.shape, v)) for v in values)
        return self._da(p, "prob_small", values=str(tuple(values)))

    def _values(self, truth) -> np.ndarray:
        """A table of values for these cells: matched by dim names and labels when labelled
        (rk.Table, DataArray), by position when a plain array."""
        return V.count_array(aligned(truth, self.dims, self.coords, "true table"),
                             "true table")

    # --- whole tables -------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator, memory=None) -> xr.DataArray:
        """``n`` whole original tables drawn from the posterior, dims ``(draw, *dims)``.

        Exact routes give independent draws from the exact posterior (backward sampling
        through the route's own computation); the draws' totals are the totals of the
        original table.  Same ``rng`` state, same draws.  ``memory``: the budget the draws
        must fit (as for :func:`posterior`), checked before anything is allocated.

        Examples
        --------
        >>> import numpy as np, riskengine as rk
        >>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]]), dims=("v", "w")))
        >>> d = rk.posterior(rel).sample(5, np.random.default_rng(0))
        >>> d.dims, bool((d.sum("w") == [3, 7]).all())
        (('draw', 'v', 'w'), True)
        """
        n = V.integer(n, "n", 1)
        need = 3.0 * n * float(np.prod(self.shape, dtype=float)) * 8   # draws + working copies
        limit = _budget.budget(memory)
        if need > limit:
            raise ValueError(f"{n} draws of a table of {int(np.prod(self.shape))} cells need "
                             f"about {_budget.fmt_bytes(need)}, more than the memory budget of "
                             f"{_budget.fmt_bytes(limit)}: draw fewer tables at a time (or "
                             "raise memory=)")
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
                            f"got {type(rng).__name__}")
        if self._sampler is None:
            raise ValueError(f"whole-table draws are not available from route "
                             f"{self.attrs.get('route')!r}")
        draws = np.asarray(self._sampler(n, rng), dtype=np.int64)
        if draws.shape != (n,) + self.shape:
            raise RuntimeError(f"internal error: the sampler returned shape {draws.shape}, "
                               f"expected {(n,) + self.shape}")
        return xr.DataArray(draws, dims=("draw", *self.dims),
                            coords={"draw": np.arange(n), **self.coords}, name="table",
                            attrs={**self._common_attrs(), "route": self.attrs.get("route", ""),
                                   "exact": "approximation" not in self.attrs})

    def to_arviz(self, n: int, rng: np.random.Generator, statistics=()):
        """arviz's data structure with a ``posterior`` group: ``n`` table draws (one chain
        for exact routes) and the statistics named in ``statistics`` (those of
        :mod:`riskengine.statistics`, e.g. ``["chi2", "cramers_v"]``, or callables of a
        table), so ``arviz.summary`` / ``arviz.hdi`` / arviz's plots work on them."""
        from . import _arviz
        from . import statistics as S
        if self.chains is not None:           # Monte Carlo: n draws spread over its chains
            C, D = self.chains.shape[:2]
            n = V.integer(n, "n", C)
            if n > C * D:
                raise ValueError(f"the Monte Carlo route kept {C} chains x {D} draws; asked "
                                 f"for {n}")
            keep = np.linspace(0, D - 1, n // C).round().astype(int)
            draws = xr.DataArray(self.chains[:, keep], dims=("chain", "draw", *self.dims),
                                 coords={"chain": np.arange(C), "draw": keep, **self.coords},
                                 name="table")
        else:
            draws = self.sample(n, rng)
        return _arviz.inference_data(self.attrs, draws, S.of_draws(draws, statistics))

    # --- summaries -------------------------------------------------------------------------
    def summary(self, truth=None, level: float = 0.95) -> xr.Dataset:
        """Per-cell risk summary as a labelled Dataset."""
        iv = self.interval(level)
        data = {
            "mode": self.mode(), "max_prob": self.max_prob(), "mean": self.mean(),
            "sd": self.sd(), "lower": iv["lower"], "upper": iv["upper"],
            "prob_published": self.prob_published(),
        }
        if self.published is not None:
            data = {"published": self._da(np.asarray(self.published), "published"), **data}
        if truth is not None:
            tv = self._values(truth)
            data["true"] = self._da(tv, "true")
            data["prob_exact"] = self.prob_exact(tv)
        ds = xr.Dataset(data, attrs={**self.attrs_for_file(), "level": level})
        return ds

    def risk_table(self, truth=None, level: float = 0.95) -> pd.DataFrame:
        """Tidy per-cell risk summary: one row per cell."""
        return self.summary(truth, level).to_dataframe().reset_index()

    def expected_exact_disclosures(self, truth) -> float:
        """Expected number of exactly disclosed cells: sum of Pr(cell == true value | release)."""
        return float(self.prob_exact(truth).sum())

    def attrs_for_file(self) -> dict:
        out = {}
        for k, v in self.attrs.items():
            out[k] = v if isinstance(v, (str, float, int)) else str(v)
        out["n_candidates"] = _count_text(self.n_candidates)
        out["log_evidence"] = self.log_evidence
        return out

    def to_dataset(self, truth=None, level: float = 0.95) -> xr.Dataset:
        """Summary plus the dense pmf, ready for ``to_netcdf``."""
        ds = self.summary(truth, level)
        ds["pmf"] = self.pmf
        if self.diagnostics is not None:        # Monte Carlo: R-hat, ESS, MCSE per cell
            for name, da in self.diagnostics.data_vars.items():
                ds[name] = da
            ds.attrs.update({k: v for k, v in self.diagnostics.attrs.items()
                             if isinstance(v, (int, float, str))})
        ds.attrs["riskengine_kind"] = "assess"  # what riskengine.report reads it as
        return ds

    def __repr__(self) -> str:
        return (f"Posterior(shape={self.shape}, n_candidates={self.n_candidates}, "
                f"log_evidence={self.log_evidence:.6g}, method={self.attrs.get('method')!r})")


def _count_text(n) -> str:
    """Exact decimal for counts up to 4000 digits, else '~1eX' (decimal conversion of huge
    ints is slow and capped by Python)."""
    if n is None:
        return "unknown"
    if n.bit_length() < 13000:
        return str(n)
    return f"~1e{(n.bit_length() - 1) * math.log10(2):.1f} (exact value in memory)"


def _prior(prior) -> Prior:
    if prior is None:
        return Uniform()
    if not isinstance(prior, Prior):
        raise TypeError(f"prior must be a riskengine prior (rk.priors.*), got {type(prior).__name__}")
    return prior


def _release(release) -> Release | ReleaseSet:
    if isinstance(release, (list, tuple)) and release and all(
            isinstance(r, Release) for r in release):
        return ReleaseSet(release)
    if not isinstance(release, (Release, ReleaseSet)):
        raise TypeError(f"release must be an rk.Release or rk.ReleaseSet (several releases "
                        f"of the same microdata), got {type(release).__name__}")
    return release


def posterior(release, prior: Prior | None = None, *, route: str = "auto", progress=None,
              count: bool = True, memory=None, mcmc=None, candidates=None,
              weights=None) -> Posterior:
    """Exact posterior of the original table given ``release`` and ``prior``.

    Parameters
    ----------
    release : rk.Release
    prior : rk.priors.Prior, default ``Uniform()``
    route : str
        Inference route: ``"auto"`` takes the first of the mechanism's routes (fastest
        exact first) that applies to this release and fits the memory budget, and says
        why in ``attrs["route_reason"]``; a route name forces it (an unknown name is an
        error listing the known ones).
    progress : callable(done, total) or None
        Called as work proceeds on long runs.
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
    if candidates is not None:
        return _mixture(_release(release), _prior(prior), candidates, weights,
                        route=route, progress=progress, count=count, memory=memory)
    if weights is not None:
        raise ValueError("weights= are the prior probabilities of candidates=; give both")
    return run_posterior(_release(release), _prior(prior), route=route, progress=progress,
                         count=count, memory=memory, mcmc=mcmc)


def _mixture(release, prior, candidates, weights, **kw) -> Posterior:
    """The posterior over the original and the mechanism (see :func:`posterior`)."""
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
    posts, logs, why = [], [], {}
    for lab, m, wk in zip(labels, mechs, w):
        if wk == 0:
            posts.append(None)
            logs.append(-np.inf)
            continue
        try:
            rel = Release(release.published, margins=dict(release.margins), mechanism=m,
                          dims=release.dims, coords=release.coords, kind=release.kind,
                          groups=release.groups or None, subtotals=release.subtotals or None)
        except ValueError as e:              # this mechanism cannot have made the release
            posts.append(None)
            logs.append(-np.inf)
            why[lab] = str(e)
            continue
        try:
            post = run_posterior(rel, prior, **kw)
        except ValueError as e:
            if not str(e).startswith("no original table"):
                raise
            posts.append(None)
            logs.append(-np.inf)
            why[lab] = str(e)
            continue
        if not np.isfinite(post.log_evidence):
            raise ValueError(f"candidate {lab!r} was answered by route "
                             f"{post.attrs.get('route')!r}, which gives no evidence (Monte "
                             "Carlo); the mixture over mechanisms needs each candidate's "
                             "exact evidence")
        posts.append(post)
        logs.append(np.log(wk) + post.log_evidence)
    logs = np.array(logs)
    if not np.isfinite(logs).any():
        detail = "; ".join(f"{k}: {v}" for k, v in why.items())
        raise ValueError(f"no candidate mechanism can have produced this release ({detail})")
    top = logs.max()
    pi = np.exp(logs - top)
    pi /= pi.sum()
    keep = [k for k in range(len(mechs)) if pi[k] > 0]
    parts = [posts[k] for k in keep]
    start, probs = _mix([(p.start, p.probs) for p in parts], pi[keep])
    routes = sorted({p.attrs.get("route", "") for p in parts})
    approx = "; ".join(sorted({p.attrs["approximation"] for p in parts
                               if p.attrs.get("approximation")}))
    attrs = {"method": f"mixture over {len(mechs)} candidate mechanisms",
             "prior": prior.describe(),
             "mechanism": "one of: " + " | ".join(f"{lab} = {m.describe()}"
                                                  for lab, m in zip(labels, mechs)),
             "route": "mixture(" + ", ".join(routes) + ")",
             "mechanism_weights": "; ".join(f"{lab}: {p:.6g}" for lab, p in zip(labels, pi)),
             "n_candidates_note": "a mixture over mechanisms does not count candidates"}
    if approx:
        attrs["approximation"] = approx
    samplers = [p._sampler for p in parts]

    def sampler(n, rng):
        counts = rng.multinomial(n, pi[keep])
        out = np.concatenate([np.asarray(s(int(c), rng)) for s, c in zip(samplers, counts)
                              if c > 0])
        return out[rng.permutation(n)]

    post = Posterior(start=start, probs=probs, dims=release.dims, coords=release.coords,
                     published=release.published,
                     log_evidence=float(top + np.log(np.exp(logs - top).sum())), attrs=attrs,
                     sampler=sampler if all(s is not None for s in samplers) else None)
    for keep_dims in set.intersection(*[set(p.totals) for p in parts]) if parts else ():
        tot = [p.totals[keep_dims] for p in parts]
        s0, p0 = _mix([(t.start, t.probs) for t in tot], pi[keep])
        post.totals[keep_dims] = Posterior(start=s0, probs=p0, dims=tot[0].dims,
                                           coords=tot[0].coords, published=tot[0].published,
                                           attrs=dict(tot[0].attrs))
    post.mechanism_weights = dict(zip(labels, (float(p) for p in pi)))
    return post


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


def count_candidates(release, prior: Prior | None = None, *, route: str = "auto",
                     memory=None) -> int:
    """Exact number of original tables consistent with ``release`` (nonzero posterior
    under ``prior``; default: every nonnegative table); ``route`` and ``memory`` as for
    :func:`posterior`."""
    return run_count(_release(release), _prior(prior), route=route, memory=memory)
