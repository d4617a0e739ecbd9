"""The read-only result of ``rk.posterior``: per-cell posterior distributions and risk.

Each cell's pmf is kept on its own window (first value + probabilities), so
wide supports stay cheap; the dense ``pmf`` DataArray (union of the windows on
the ``value`` axis) is built only when asked for.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd
import xarray as xr

from . import _budget
from . import _validate as V
from .table import aligned

__all__ = ["Posterior"]


class Posterior:
    """Per-cell posterior distributions of the original table given a release.

    Built by the labeller of :func:`riskengine.posterior` (the only place that constructs
    one) and read-only: assigning an attribute raises, ``attrs``, ``totals`` and
    ``mechanism_weights`` are read-only mappings and the arrays are not writeable.

    Parameters
    ----------
    start : array_like of int
        First value of each cell's window, of the table shape (stored as int64).
    probs : array_like of float
        Posterior probabilities on each window, of the table shape plus a value axis
        (stored as float64); a ``ValueError`` is raised when its leading shape is not
        that of ``start``.
    dims : sequence of str
        The release's dim names.
    coords : mapping
        ``{dim: labels}`` of the release.
    published : array_like, optional
        The published values of these cells (NaN: suppressed); None when there are none.
    n_candidates : int, optional
        Exact number of original tables with nonzero posterior; None where the route
        cannot count them.
    log_evidence : float, default NaN
        log sum over candidates of prior weight x likelihood.
    attrs : mapping, optional
        The route's description (see the ``attrs`` attribute); stored as a read-only copy.
    sampler : callable, optional
        ``sampler(n, rng) -> int64 array (n, *shape)``: whole-table draws from the route,
        used by :meth:`sample`; None when the route cannot draw whole tables.
    totals : mapping, optional
        ``{dims kept: Posterior}`` of the totals not published exactly.
    diagnostics : xarray.Dataset, optional
        Monte Carlo routes: R-hat, ESS and MCSE per reported number.
    chains : array_like, optional
        Monte Carlo routes: the kept draws ``(chain, draw, *shape)``.
    weights : array_like, optional
        Importance-sampling routes: the normalised weight of each draw of ``chains`` (one
        chain of independent weighted draws).
    releases : sequence of Posterior, default ()
        A release set's posterior: per release, the posterior of its own cells.
    mechanism_weights : mapping, optional
        Posterior probability of each candidate mechanism (``candidates=``).
    release, prior : optional
        The release and prior of this posterior (set by the labeller).

    Attributes
    ----------
    start : ndarray (int64, table shape)
        First value of each cell's window.
    probs : ndarray (float64, table shape + (W,))
        Posterior probabilities of ``start + 0 .. start + W - 1``; sums to 1 per cell.
    dims, coords : tuple, dict
        The release's dim names and labels.
    published : ndarray or None
        The published values of these cells (NaN: suppressed).
    n_candidates : int or None
        Exact number of original tables with nonzero posterior (None only where
        the route cannot count them; ``attrs["n_candidates_note"]`` says why).
    log_evidence : float
        log sum over candidates of prior weight x likelihood (prior weights as the
        prior defines them: unnormalised for ``Uniform``/``Flat``).
    attrs : mapping
        One vocabulary: ``method``, ``prior``, ``mechanism``, ``route``, ``route_reason``;
        ``approximation`` (what is approximated; absent for the exact posterior, see
        :attr:`exact`), ``converged`` (1/0, Monte Carlo routes), ``diagnostics`` (their
        summary), ``n_candidates_note``.
    totals : mapping
        ``{dims kept: Posterior}`` of the totals not published exactly.
    diagnostics : xarray.Dataset or None
        Monte Carlo routes: R-hat, ESS and MCSE per reported number (None for exact routes).
    chains : ndarray or None
        Monte Carlo routes: the kept draws ``(chain, draw, *shape)``.
    weights : ndarray or None
        Importance-sampling routes: the normalised weight of each draw of ``chains``
        (None for Markov chains, whose draws weigh the same).
    releases : tuple
        A release set's posterior: per release, the posterior of its own cells (and totals)
        given the whole set; empty for a single release.
    mechanism_weights : mapping
        A posterior over candidate mechanisms (``candidates=``): each one's posterior
        probability; empty otherwise.
    release, prior
        The release and the prior it was computed from (None for the posterior of a part,
        e.g. a total); :func:`riskengine.verdict` reads them for its baseline.
    """

    __slots__ = (
        "_frozen",
        "_sampler",
        "attrs",
        "chains",
        "coords",
        "diagnostics",
        "dims",
        "log_evidence",
        "mechanism_weights",
        "n_candidates",
        "prior",
        "probs",
        "published",
        "release",
        "releases",
        "start",
        "totals",
        "weights",
    )

    def __init__(self, *, start, probs, dims, coords, published=None, n_candidates=None,
                 log_evidence=np.nan, attrs=None, sampler=None, totals=None,
                 diagnostics=None, chains=None, weights=None, releases=(),
                 mechanism_weights=None, release=None, prior=None):
        set_ = object.__setattr__
        start = _readonly(np.asarray(start, dtype=np.int64))
        probs = _readonly(np.asarray(probs, dtype=float))
        if probs.shape[:-1] != start.shape:
            raise ValueError("probs must have the table shape plus a value axis")
        set_(self, "start", start)
        set_(self, "probs", probs)
        set_(self, "dims", tuple(dims))
        set_(self, "coords", MappingProxyType({d: list(v) for d, v in coords.items()}))
        set_(self, "published", None if published is None else _readonly(np.asarray(published)))
        set_(self, "n_candidates", n_candidates)
        set_(self, "log_evidence", float(log_evidence))
        set_(self, "attrs", MappingProxyType(dict(attrs or {})))
        set_(self, "totals", totals if isinstance(totals, Mapping) and not isinstance(
            totals, dict) else MappingProxyType(dict(totals or {})))
        set_(self, "diagnostics", diagnostics)
        set_(self, "chains", None if chains is None else _readonly(np.asarray(chains)))
        set_(self, "weights", None if weights is None else _readonly(np.asarray(weights, float)))
        set_(self, "releases", tuple(releases))
        set_(self, "mechanism_weights", MappingProxyType(dict(mechanism_weights or {})))
        set_(self, "release", release)
        set_(self, "prior", prior)
        #: ``sampler(n, rng) -> int64 (n, *shape)``: whole-table draws (from the route)
        set_(self, "_sampler", sampler)
        set_(self, "_frozen", True)

    def __setattr__(self, name, value):
        raise AttributeError(f"a Posterior is read-only: cannot set {name!r} (it is built "
                             "once by rk.posterior from the route's result)")

    def __delattr__(self, name):
        raise AttributeError(f"a Posterior is read-only: cannot delete {name!r}")

    @property
    def exact(self) -> bool:
        """True for the exact posterior; False when ``attrs["approximation"]`` says what is
        approximated (Monte Carlo, an approximate likelihood)."""
        return "approximation" not in self.attrs

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
        """Posterior mean of each cell.

        Returns
        -------
        xarray.DataArray
            ``mean``, of the table's dims, with the method, prior and mechanism in ``attrs``.
        """
        v = self.start[..., None] + np.arange(self.width)
        return self._da((self.probs * v).sum(-1), "mean")

    def sd(self) -> xr.DataArray:
        """Posterior standard deviation of each cell.

        Returns
        -------
        xarray.DataArray
            ``sd``, of the table's dims, with the method, prior and mechanism in ``attrs``.
        """
        v = self.start[..., None] + np.arange(self.width)
        mu = (self.probs * v).sum(-1, keepdims=True)
        return self._da(np.sqrt(np.maximum((self.probs * (v - mu) ** 2).sum(-1), 0.0)), "sd")

    def mode(self) -> xr.DataArray:
        """Posterior mode (the smallest value among ties).

        Returns
        -------
        xarray.DataArray
            ``mode``, of the table's dims, with the method, prior and mechanism in ``attrs``.
        """
        return self._da(self.start + np.argmax(self.probs, axis=-1), "mode")

    def max_prob(self) -> xr.DataArray:
        """Posterior probability of the mode: the intruder's confidence in the MAP guess.

        Returns
        -------
        xarray.DataArray
            ``max_prob``, of the table's dims, with the method, prior and mechanism in
            ``attrs``.
        """
        return self._da(self.probs.max(-1), "max_prob")

    def interval(self, level: float = 0.95) -> xr.Dataset:
        """Equal-tailed credible interval: the smallest values whose cdf reaches
        (1 - level)/2 and 1 - (1 - level)/2; covers at least ``level``.

        Parameters
        ----------
        level : float, default 0.95
            Credibility level, a probability in [0, 1].

        Returns
        -------
        xarray.Dataset
            ``lower`` and ``upper`` per cell (ends included); ``attrs`` hold ``level`` and
            ``kind="equal-tailed"``.
        """
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
        """Posterior probability that each cell equals ``values`` (array of the table shape).

        Parameters
        ----------
        values : array_like of int, riskengine.Table or xarray.DataArray
            One nonnegative count per cell: matched by dim names and labels when labelled,
            by position when a plain array.

        Returns
        -------
        xarray.DataArray
            ``prob``, of the table's dims: Pr(cell == value | release).
        """
        return self._da(self._prob_at(self._values(values)), "prob")

    def prob_exact(self, truth) -> xr.DataArray:
        """Pr(cell == its true value | release): the exact-disclosure probability.

        Parameters
        ----------
        truth : array_like of int, riskengine.Table or xarray.DataArray
            The original table: matched by dim names and labels when labelled, by
            position when a plain array.

        Returns
        -------
        xarray.DataArray
            ``prob_exact``, of the table's dims.
        """
        return self._da(self._prob_at(self._values(truth)), "prob_exact",
                        description="posterior probability of the true value")

    def _mcse_at(self, values) -> np.ndarray:
        """Monte Carlo routes: arviz's MCSE of each cell's Pr(cell == ``values``) from the
        chains (the indicator's mean), or for weighted draws the delta-method MCSE of the
        weighted share; 0 where a cell never varies."""
        from . import _arviz
        hit = (np.asarray(self.chains) == np.asarray(values)).astype(float)
        if self.weights is not None:
            return weighted_mcse(hit[0], self.weights)
        az = _arviz.arviz()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # constant cells: 0 / 0
            m = az.mcse(xr.Dataset({"hit": (("chain", "draw", *self.dims), hit)}))
        m = m["hit"].values
        const = hit.min(axis=(0, 1)) == hit.max(axis=(0, 1))
        return np.where(const, 0.0, np.where(np.isnan(m), np.inf, m))

    def prob_published(self) -> xr.DataArray:
        """Posterior mass at the published value (NaN where nothing is published).

        Returns
        -------
        xarray.DataArray
            ``prob_published``, of the table's dims; all NaN when the release publishes no
            cell values.
        """
        if self.published is None:
            return self._da(np.full(self.shape, np.nan), "prob_published")
        pub = np.asarray(self.published, dtype=float)
        p = self._prob_at(np.where(np.isnan(pub), 0, pub).astype(np.int64))
        return self._da(np.where(np.isnan(pub), np.nan, p), "prob_published")

    def prob_small(self, values=(1, 2)) -> xr.DataArray:
        """Pr(cell in ``values``): the small-count risk (default {1, 2}).

        Parameters
        ----------
        values : iterable of int, default (1, 2)
            The values counted as small (each counted once per occurrence).

        Returns
        -------
        xarray.DataArray
            ``prob_small``, of the table's dims; ``attrs["values"]`` names the values.
        """
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

        Parameters
        ----------
        n : int
            Number of tables to draw, at least 1.
        rng : numpy.random.Generator
            Source of randomness.
        memory : int, float or str, optional
            Memory budget in bytes or as a string like ``"2GB"``; default: the default
            share of the available memory.

        Returns
        -------
        xarray.DataArray
            ``table``, int64, dims ``("draw", *dims)``; ``attrs`` hold the method, prior,
            mechanism, ``route`` and ``exact``.

        Raises
        ------
        ValueError
            If the draws exceed the memory budget, or the route gives no whole-table draws.
        TypeError
            If ``rng`` is not a ``numpy.random.Generator``.

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
        table), so ``arviz.summary`` / ``arviz.hdi`` / arviz's plots work on them.

        Parameters
        ----------
        n : int
            Number of table draws.  Markov-chain routes take ``n // chains`` evenly spaced
            kept draws from each chain (``n`` at least the number of chains, at most all
            kept draws); other routes (importance sampling: its weighted draws resampled)
            draw ``n`` tables with :meth:`sample`.
        rng : numpy.random.Generator
            Source of randomness for :meth:`sample` (unused by Monte Carlo routes).
        statistics : sequence, default ()
            Statistics of each draw: names of :mod:`riskengine.statistics`, Statistic
            objects or callables of a table.

        Returns
        -------
        arviz.InferenceData
            Its ``posterior`` group holds ``table`` and one variable per statistic; the
            posterior's ``attrs`` as strings.
        """
        from . import _arviz
        from . import statistics as S
        if self.chains is not None and self.weights is None:   # Markov chains: n draws
            C, D = self.chains.shape[:2]                       # spread over the chains
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
        """Per-cell risk summary as a labelled Dataset.

        Parameters
        ----------
        truth : array_like of int, riskengine.Table or xarray.DataArray, optional
            The original table; when given, ``true`` and ``prob_exact`` are added.
        level : float, default 0.95
            Level of the equal-tailed credible interval (:meth:`interval`).

        Returns
        -------
        xarray.Dataset
            ``mode``, ``max_prob``, ``mean``, ``sd``, ``lower``, ``upper`` and
            ``prob_published`` per cell (``published`` first when the release publishes
            values); ``attrs`` are :meth:`attrs_for_file` plus ``level``.
        """
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
            if self.chains is not None:
                data["mcse_prob_exact"] = self._da(self._mcse_at(tv), "mcse_prob_exact")
        ds = xr.Dataset(data, attrs={**self.attrs_for_file(), "level": level})
        return ds

    def risk_table(self, truth=None, level: float = 0.95) -> pd.DataFrame:
        """Tidy per-cell risk summary: one row per cell.

        Parameters
        ----------
        truth : array_like of int, riskengine.Table or xarray.DataArray, optional
            The original table (adds the ``true`` and ``prob_exact`` columns).
        level : float, default 0.95
            Level of the equal-tailed credible interval.

        Returns
        -------
        pandas.DataFrame
            :meth:`summary` as a table: one column per dim and one per summary variable.
        """
        return self.summary(truth, level).to_dataframe().reset_index()

    def expected_exact_disclosures(self, truth) -> float:
        """Expected number of exactly disclosed cells: sum of Pr(cell == true value | release).

        Parameters
        ----------
        truth : array_like of int, riskengine.Table or xarray.DataArray
            The original table.

        Returns
        -------
        float
            The sum of :meth:`prob_exact` over the cells.
        """
        return float(self.prob_exact(truth).sum())

    def attrs_for_file(self) -> dict:
        """The posterior's ``attrs`` as values a netCDF file can hold.

        Returns
        -------
        dict
            ``attrs`` with every value that is not a str, float or int turned into its
            str, plus ``n_candidates`` (exact decimal text, ``"~1eX ..."`` for huge
            counts, ``"unknown"`` for None) and ``log_evidence``.
        """
        out = {}
        for k, v in self.attrs.items():
            out[k] = v if isinstance(v, (str, float, int)) else str(v)
        out["n_candidates"] = _count_text(self.n_candidates)
        out["log_evidence"] = self.log_evidence
        return out

    def to_dataset(self, truth=None, level: float = 0.95) -> xr.Dataset:
        """Summary plus the dense pmf, ready for ``to_netcdf``.

        Parameters
        ----------
        truth : array_like of int, riskengine.Table or xarray.DataArray, optional
            The original table (adds ``true`` and ``prob_exact``).
        level : float, default 0.95
            Level of the equal-tailed credible interval.

        Returns
        -------
        xarray.Dataset
            :meth:`summary` plus ``pmf`` (:attr:`pmf`), the Monte Carlo diagnostics when
            there are any, and ``attrs["riskengine_kind"] = "assess"``.
        """
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


def weighted_mcse(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The delta-method MCSE of the self-normalised weighted mean of ``values`` (draw
    axis first) with normalised weights ``w``."""
    w = np.asarray(w, float).reshape((-1,) + (1,) * (values.ndim - 1))
    mean = (w * values).sum(axis=0)
    return np.sqrt((w ** 2 * (values - mean) ** 2).sum(axis=0))


def _count_text(n) -> str:
    """Exact decimal for counts up to 4000 digits, else '~1eX' (decimal conversion of huge
    ints is slow and capped by Python)."""
    if n is None:
        return "unknown"
    if n.bit_length() < 13000:
        return str(n)
    return f"~1e{(n.bit_length() - 1) * math.log10(2):.1f} (exact value in memory)"


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy; the array given keeps its own flags)."""
    v = a.view()
    v.flags.writeable = False
    return v
