"""The user's analysis: the posterior of any statistic of the original table.

``rk.analyze(release, prior, statistics=[...], draws=4000, rng=rng, truth=None)`` draws
whole original tables from the posterior (:meth:`riskengine.Posterior.sample`: exact,
independent draws from every exact route), evaluates each statistic
(:mod:`riskengine.statistics`: chi-square, G^2 and their p-values, Cramér's V, log odds
ratios, row / column proportions, log-linear coefficients, any function of the table) on
every draw and summarises it: posterior mean, sd, Monte Carlo standard error of the mean,
highest-density interval (arviz), the naive plug-in value on the published table (what
an analyst who ignores the protection computes) and, given the true table, the true value,
its posterior quantile and whether the interval covers it.  The draws and statistics are
also arviz's data structure (:meth:`Analysis.to_arviz`): ``arviz.summary``, ``arviz.hdi``
and arviz's posterior plots work on them directly.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[12, 3, 7], [4, 9, 6]]), dims=("sex", "grade"),
...              coords={"sex": ["F", "M"], "grade": ["a", "b", "c"]})
>>> rel = rk.ControlledRounding(3).protect(t, np.random.default_rng(1))
>>> res = rk.analyze(rel, rk.priors.Poisson(6.0), ["cramers_v", "chi2_pvalue"],
...                  draws=2000, rng=np.random.default_rng(2), truth=t)
>>> sorted(res.summary)
['chi2_pvalue', 'cramers_v']
>>> ds = res["cramers_v"]
>>> bool(ds["hdi_lower"] <= ds["mean"] <= ds["hdi_upper"]), ds.attrs["exact_draws"]
(True, 1)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from . import _arviz
from . import statistics as S
from ._posterior import Posterior
from .inference.resolve import posterior
from .release import Release

__all__ = ["Analysis", "analyze"]

#: default statistics of :func:`analyze`
DEFAULT = ("chi2", "chi2_pvalue", "cramers_v")


def _published_table(release: Release):
    """The published table as the naive analyst reads it, or (None, why)."""
    if release.published is None:
        return None, "the release publishes no interior cells"
    y = np.asarray(release.published, dtype=float)
    if np.isnan(y).any():
        return None, f"{int(np.isnan(y).sum())} cells are not published"
    if (y < 0).any():
        return np.maximum(y, 0.0), "negative published values read as 0"
    return y, ""


def _hdi(values: np.ndarray, level: float) -> tuple:
    """Narrowest interval holding ``level`` of the draws (axis 0), per element: arviz's
    HDI of draws of one chain."""
    az = _arviz.arviz()
    flat = values.reshape(values.shape[0], -1)
    lo = np.empty(flat.shape[1])
    hi = np.empty(flat.shape[1])
    for k in range(flat.shape[1]):
        col = flat[:, k]
        if not np.isfinite(col).all():
            lo[k], hi[k] = np.nanmin(col), np.nanmax(col)
            continue
        lo[k], hi[k] = az.hdi(col, hdi_prob=level)
    return lo.reshape(values.shape[1:]), hi.reshape(values.shape[1:])


class Analysis:
    """Posterior of statistics of the original table (:func:`analyze`).

    Built by :func:`analyze`; the arguments are stored as they are given.

    Parameters
    ----------
    post : Posterior
        The posterior the tables were drawn from (stored as ``posterior``).
    draws : xarray.DataArray
        The table draws ``(draw, *dims)``.
    values : dict
        ``{name: DataArray (draw, ...)}``, the statistic on every draw.
    summary : dict
        ``{statistic name: xr.Dataset}``, the summary of each statistic (see ``summary``
        below).
    level : float
        Probability of the highest-density intervals.

    Attributes
    ----------
    summary : dict
        ``{statistic name: xr.Dataset}``: ``mean``, ``sd``, ``mcse_mean``, ``hdi_lower``,
        ``hdi_upper``, ``plugin`` (on the published table; NaN when the release does not
        publish every cell, with ``attrs["plugin_note"]``), and with a true table ``true``,
        ``true_quantile`` (posterior mass below the true value plus half the mass at it)
        and ``covered`` (the HDI holds it).
    values : dict
        ``{name: DataArray (draw, ...)}``, the statistic on every draw.
    draws : DataArray
        The table draws ``(draw, *dims)``.
    posterior : Posterior
        The posterior the tables were drawn from.
    level : float
        Probability of the highest-density intervals.
    """

    def __init__(self, post: Posterior, draws: xr.DataArray, values: dict, summary: dict,
                 level: float):
        self.posterior, self.draws, self.values = post, draws, values
        self.summary, self.level = summary, level

    def __getitem__(self, name: str) -> xr.Dataset:
        if name not in self.summary:
            raise KeyError(f"no statistic {name!r}; analysed: {sorted(self.summary)}")
        return self.summary[name]

    def __iter__(self):
        return iter(self.summary)

    def table(self) -> pd.DataFrame:
        """One row per statistic (and element of a vector statistic): the summary.

        Returns
        -------
        pandas.DataFrame
            Column ``statistic`` (the name, with ``[label,...]`` for an element of a
            vector statistic), then one column per summary quantity.
        """
        rows = []
        for name, ds in self.summary.items():
            dims = list(ds.dims)
            if not dims:
                rows.append({"statistic": name, **{k: ds[k].item() for k in ds.data_vars}})
                continue
            stacked = ds.stack(_element=dims)
            for k in range(stacked.sizes["_element"]):
                el = stacked.isel(_element=k)
                label = ",".join(str(el[d].item()) for d in dims)
                rows.append({"statistic": f"{name}[{label}]",
                             **{v: el[v].item() for v in ds.data_vars}})
        return pd.DataFrame(rows)

    def to_dataset(self) -> xr.Dataset:
        """Everything in one Dataset (``riskengine_kind = "analyze"``, netCDF-safe names):
        ``table`` (the draws), and per statistic k ``stat{k}_draws`` and
        ``stat{k}_summary`` (dim ``quantity``: the columns of :attr:`summary`), the
        statistic's name and description in their attrs.

        Returns
        -------
        xarray.Dataset
            The variables above; ``attrs`` hold ``riskengine_kind``, ``level``, ``draws``,
            ``route``, ``prior``, ``mechanism``, ``exact_draws`` (1/0) and ``statistics``.
        """
        data = {"table": self.draws}
        for k, (name, ds) in enumerate(self.summary.items()):
            q = list(ds.data_vars)
            summ = xr.concat([ds[v].astype(float) for v in q], dim="quantity")
            summ = summ.assign_coords(quantity=q)
            attrs = {"statistic": name, "description": ds.attrs["description"],
                     "plugin_note": ds.attrs["plugin_note"], "level": self.level}
            data[f"stat{k}_draws"] = self.values[name].assign_attrs(attrs)
            data[f"stat{k}_summary"] = summ.assign_attrs(attrs)
        post = self.posterior
        out = xr.Dataset(data, attrs={
            "riskengine_kind": "analyze", "level": self.level,
            "draws": int(self.draws.sizes["draw"]), "route": str(post.attrs.get("route", "")),
            "prior": str(post.attrs.get("prior", "")),
            "mechanism": str(post.attrs.get("mechanism", "")),
            "exact_draws": int("approximation" not in post.attrs and post.diagnostics is None),
            "statistics": "; ".join(self.summary)})
        return out

    def to_arviz(self):
        """arviz's data structure: a ``posterior`` group with the table draws and every
        statistic (one chain of exact draws).

        Returns
        -------
        arviz.InferenceData
            Its ``posterior`` group holds ``table`` and one variable per statistic; the
            posterior's ``attrs`` as strings.
        """
        return _arviz.inference_data(self.posterior.attrs, self.draws, self.values)

    def __repr__(self) -> str:
        return (f"Analysis({len(self.draws['draw'])} draws, route "
                f"{self.posterior.attrs.get('route')!r}, statistics {list(self.summary)})")


def analyze(release, prior=None, statistics=DEFAULT, *, draws: int = 4000, rng=None,
            truth=None, level: float = 0.94, route: str = "auto", memory=None,
            progress=None, post: Posterior | None = None) -> Analysis:
    """The posterior of statistics of the original table given ``release``.

    Parameters
    ----------
    release : rk.Release
        The published release.
    prior : rk.priors.Prior, optional
        The user's prior (default ``Uniform()``).
    statistics : str, Statistic, callable or a list of them
        Names (:mod:`riskengine.statistics`, e.g. ``"cramers_v"``), Statistic objects or
        functions of a table (a NumPy array of the table's shape); default chi2,
        chi2_pvalue, cramers_v.
    draws : int
        Whole tables drawn from the posterior (exact routes: independent draws).
    rng : numpy.random.Generator, optional
        Default ``np.random.default_rng()`` (not reproducible).
    truth : table, optional
        The true table: its value of each statistic, posterior quantile, HDI coverage.
    level : float
        Probability of the highest-density interval (arviz's default 0.94).
    route, memory, progress
        As for :func:`riskengine.posterior`.
    post : rk.Posterior, optional
        A posterior of this release already computed (skips the inference).

    Returns
    -------
    Analysis
        The draws, each statistic's values on them and its summary Dataset
        (``res["cramers_v"]``: mean, sd, mcse_mean, hdi_lower, hdi_upper, plugin, and
        with ``truth`` true, true_quantile, covered); ``res.table()`` as a DataFrame.

    Raises
    ------
    TypeError
        ``release`` is not an ``rk.Release``.
    ValueError
        A bad ``level``, no statistic, or a ``post`` of another release.
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    if not (isinstance(level, float | int) and 0 < float(level) < 1):
        raise ValueError(f"level must be in (0, 1), got level={level!r}")
    if isinstance(statistics, str) or callable(statistics) or \
            isinstance(statistics, S.Statistic):
        statistics = [statistics]
    stats = [S.get(s) for s in statistics]
    if not stats:
        raise ValueError("statistics is empty: name at least one (e.g. 'cramers_v')")
    rng = np.random.default_rng() if rng is None else rng
    if post is None:
        post = posterior(release, prior, route=route, progress=progress, memory=memory)
    elif not isinstance(post, Posterior) or post.shape != release.shape:
        raise ValueError("post must be the posterior of this release")
    for s in stats:                       # before drawing: a misnamed label fails fast
        s.check(post.dims, post.coords)
    tables = post.sample(draws, rng)
    values = S.of_draws(tables, stats)
    pub, note = _published_table(release)
    true = None if truth is None else post._values(truth)
    exact = "approximation" not in post.attrs and post.diagnostics is None
    summary = {}
    for s in stats:
        da = values[s.name]
        v = da.values
        n = v.shape[0]
        lo, hi = _hdi(v, float(level))
        other = da.dims[1:]
        coords = {d: da.coords[d].values for d in other if d in da.coords}

        def lab(x, name, other=other, coords=coords):
            return xr.DataArray(x, dims=other, coords=coords, name=name)

        sd = v.std(axis=0, ddof=1) if n > 1 else np.zeros(v.shape[1:])
        data = {"mean": lab(v.mean(axis=0), "mean"), "sd": lab(sd, "sd"),
                "mcse_mean": lab(sd / np.sqrt(n), "mcse_mean"),
                "hdi_lower": lab(lo, "hdi_lower"), "hdi_upper": lab(hi, "hdi_upper")}
        plug = np.full(v.shape[1:], np.nan)
        if pub is not None:
            try:
                plug = np.asarray(s.values(pub, post.dims, post.coords), dtype=float)
            except ValueError as exc:     # e.g. an empty row in the published table
                note = f"plug-in undefined: {exc}"
        data["plugin"] = lab(plug, "plugin")
        if true is not None:
            t = np.asarray(s.values(true, post.dims, post.coords), dtype=float)
            data["true"] = lab(t, "true")
            data["true_quantile"] = lab((v < t).mean(axis=0) + 0.5 * (v == t).mean(axis=0),
                                        "true_quantile")
            data["covered"] = lab((lo <= t) & (t <= hi), "covered")
        summary[s.name] = xr.Dataset(data, attrs={
            "statistic": s.name, "description": s.description, "level": float(level),
            "draws": int(n), "route": str(post.attrs.get("route", "")),
            "exact_draws": int(exact), "plugin_note": note,
            "mcse_note": ("independent exact draws: sd / sqrt(draws)" if exact else
                          "Monte Carlo draws")})
    return Analysis(post, tables, values, summary, float(level))
