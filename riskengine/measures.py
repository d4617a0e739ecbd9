"""Risk and utility measures of a release (DESIGN.md, "Measures").

Risk is measured on the **intruder's** posterior, utility on the **user's**
posterior and on the released numbers.  Every function returns a labelled
``DataArray`` (per cell) or a float, and the definition of each measure is in
:data:`DEFINITIONS` (and in the ``attrs`` of labelled results).

Releases without an interior (margins only) or with suppressed (``NaN``) cells
have no released value for some cells.  The distances (L1, Hellinger,
chi-square, Cramér's V) are then computed on the **user's reading** of the
release, :func:`released_values`: the published value where a cell is
published, the user's posterior mean where it is not.  Without a user
posterior those cells stay ``NaN`` and every distance is ``NaN``.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]))
>>> rel = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.25, beta=0.25).protect(
...     t, np.random.default_rng(3))
>>> post = rk.posterior(rel, rk.priors.Poisson(3.0))
>>> ds = rk.measures.risk(post, t)
>>> sorted(ds.data_vars)
['interval_width', 'max_prob', 'prob_exact', 'prob_published', 'prob_small']
>>> bool(np.isclose(rk.measures.expected_exact(post, t), float(ds["prob_exact"].sum())))
True
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import statistics as _stats
from ._posterior import Posterior
from .table import Table

__all__ = ["DEFINITIONS", "chi_square", "cramers_v", "expected_exact", "hellinger",
           "interval_width", "l1", "released_values", "risk", "utility", "utility_score"]

#: Definitions of every measure, as stored in ``attrs["definition"]``.
DEFINITIONS = {
    "prob_exact": "Pr(cell = its true value | release), intruder posterior",
    "prob_published": "Pr(cell = its published value | release), intruder posterior "
                      "(NaN where the cell is not published)",
    "max_prob": "max over values v of Pr(cell = v | release): the intruder's confidence "
                "in the MAP guess",
    "interval_width": "upper - lower of the equal-tailed credible interval (posterior "
                      "quantiles (1-level)/2 and 1-(1-level)/2); 0 = the value is known",
    "prob_small": "Pr(cell in {1, 2} | release): small-count risk",
    "expected_exact": "sum over interior cells of prob_exact: expected number of exactly "
                      "disclosed cells",
    "l1": "sum over interior cells of |released - original| (released = user's reading: "
          "published value, or the user's posterior mean where not published)",
    "hellinger": "sqrt(1/2 sum_cells (sqrt(x/sum x) - sqrt(y/sum y))^2), x original, "
                 "y released (user's reading) with negative released values (noisy counts "
                 "published without clipping) read as 0: Hellinger distance of the two "
                 "tables as distributions, in [0, 1]; NaN when either table has no "
                 "positive cell",
    "chi_square": "Pearson X^2 of (mutual) independence: sum (o - e)^2 / e over cells with "
                  "e > 0, e = n prod_k (margin_k / n)",
    "cramers_v": "sqrt(X^2 / (n (min(shape) - 1))); for 2-D tables Cramer's V, for k-D "
                 "tables its usual generalisation to mutual independence",
    "chi_square_change": "X^2(released) - X^2(original)",
    "cramers_v_change": "V(released) - V(original)",
    "utility": "1 / (1 + W), W = mean over interior cells of the user's credible-interval "
               "width (level in attrs, default 0.95); 1 when the user knows every cell, -> 0 as the user's "
               "uncertainty grows",
}


def _truth(truth, post: Posterior) -> np.ndarray:
    """The true table in the posterior's cell order (labelled input matched by labels)."""
    return post._values(truth)


def _post(post, name: str = "posterior") -> Posterior:
    if not isinstance(post, Posterior):
        raise TypeError(f"{name} must be an rk.Posterior (rk.posterior(release, prior)), "
                        f"got {type(post).__name__}")
    return post


def _label(da: xr.DataArray, name: str, **attrs) -> xr.DataArray:
    da = da.rename(name)
    da.attrs = {**da.attrs, "definition": DEFINITIONS[name], **attrs}
    return da


# --- risk -------------------------------------------------------------------------------

def interval_width(post: Posterior, level: float = 0.95) -> xr.DataArray:
    """Per-cell width (upper - lower) of the equal-tailed credible interval.

    Parameters
    ----------
    post : Posterior
        The intruder's posterior (:func:`riskengine.posterior`).
    level : float, default 0.95
        The credible level of the intervals.

    Returns
    -------
    xarray.DataArray
        The width of each cell's interval (0: the value is known), the level and the
        definition in ``attrs``.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> post = rk.Posterior(start=[[2]], probs=[[[0.5, 0.5]]], dims=("a", "b"),
    ...                     coords={"a": [0], "b": [0]})
    >>> int(rk.measures.interval_width(post).values[0, 0])
    1
    """
    iv = _post(post).interval(level)
    return _label(iv["upper"] - iv["lower"], "interval_width", level=float(level))


def expected_exact(post: Posterior, truth) -> float:
    """Expected number of exactly disclosed cells: sum of ``prob_exact`` over interior cells.

    Parameters
    ----------
    post : Posterior
        The intruder's posterior (:func:`riskengine.posterior`).
    truth : array-like, Table or xarray.DataArray
        The original table (a labelled one is matched to the posterior by labels).

    Returns
    -------
    float
        ``sum over interior cells of Pr(cell == truth | release)``.
    """
    _post(post)
    return float(post.expected_exact_disclosures(_truth(truth, post)))


def risk(post: Posterior, truth, level: float = 0.95) -> xr.Dataset:
    """Per-cell risk measures of the intruder's posterior as a Dataset.

    Variables ``prob_exact``, ``prob_published``, ``max_prob``, ``interval_width``,
    ``prob_small`` (each with its definition in ``attrs``); ``attrs["expected_exact"]``
    is the expected number of exactly disclosed cells.

    Parameters
    ----------
    post : Posterior
        The intruder's posterior (:func:`riskengine.posterior`).
    truth : array-like, Table or xarray.DataArray
        The original table (a labelled one is matched to the posterior by labels).
    level : float, default 0.95
        The credible level of the intervals.

    Returns
    -------
    xarray.Dataset
        The five per-cell measures over the table's dims.
    """
    _post(post)
    t = _truth(truth, post)
    data = {
        "prob_exact": _label(post.prob_exact(t), "prob_exact"),
        "prob_published": _label(post.prob_published(), "prob_published"),
        "max_prob": _label(post.max_prob(), "max_prob"),
        "interval_width": interval_width(post, level),
        "prob_small": _label(post.prob_small((1, 2)), "prob_small"),
    }
    return xr.Dataset(data, attrs={**post.attrs_for_file(), "level": float(level),
                                   "expected_exact": float(data["prob_exact"].sum())})


# --- utility ----------------------------------------------------------------------------

def released_values(release, fill: Posterior | None = None) -> np.ndarray:
    """The user's reading of a release: published interior values as floats, with
    unpublished cells (``NaN`` or a margins-only release) taken from ``fill``'s
    posterior mean, or left ``NaN`` when ``fill`` is None.

    Parameters
    ----------
    release : Release
        The release.
    fill : Posterior, optional
        The user's posterior, whose mean fills the unpublished cells.

    Returns
    -------
    numpy.ndarray
        Float array of the release's shape.
    """
    from .release import Release
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    if release.published is None:
        y = np.full(release.shape, np.nan)
    else:
        y = np.asarray(release.published, dtype=float).copy()
    missing = np.isnan(y)
    if missing.any() and fill is not None:
        _post(fill, "fill")
        if fill.shape != y.shape:
            raise ValueError(f"fill posterior has shape {fill.shape}, the release {y.shape}")
        y[missing] = fill.mean().values[missing]
    return y


def _arrays(original, released):
    x = np.asarray(original.values if isinstance(original, Table) else original, dtype=float)
    y = np.asarray(released, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"original has shape {x.shape}, released has shape {y.shape}")
    return x, y


def l1(original, released) -> float:
    """Sum of absolute differences between original and released cells (NaN if any
    released cell is NaN).

    Parameters
    ----------
    original : array-like or Table
        The original table.
    released : array-like
        The released table (e.g. :func:`released_values`), of the same shape.

    Returns
    -------
    float
        ``sum |original - released|``.

    Examples
    --------
    >>> l1([[1, 2], [3, 4]], [[1, 3], [3, 2]])
    3.0
    """
    x, y = _arrays(original, released)
    return float(np.abs(x - y).sum())


def hellinger(original, released) -> float:
    """Hellinger distance between the tables as distributions (each divided by its total).

    A distribution has no negative mass: a negative released value (noisy counts
    published without clipping at zero) counts as 0, so the distance is that of the
    released table's nonnegative part.  NaN when a table has no positive cell (or a NaN
    cell).

    Parameters
    ----------
    original : array-like or Table
        The original table.
    released : array-like
        The released table (e.g. :func:`released_values`), of the same shape.

    Returns
    -------
    float
        The distance, in [0, 1].

    Examples
    --------
    >>> round(hellinger([[1, 0], [0, 1]], [[0, 1], [1, 0]]), 12)
    1.0
    >>> hellinger([[2, 1], [1, 0]], [[2, 1], [1, -3]])
    0.0
    """
    x, y = _arrays(original, released)
    if (x < 0).any():
        raise ValueError(f"original must be a nonnegative table, got {x[x < 0][0]:g}")
    y = np.where(y < 0, 0.0, y)
    sx, sy = x.sum(), y.sum()
    if not (sx > 0 and sy > 0):
        return float("nan")
    return float(np.sqrt(0.5 * ((np.sqrt(x / sx) - np.sqrt(y / sy)) ** 2).sum()))


def chi_square(values) -> float:
    """Pearson X^2 of (mutual) independence of a table (NaN if the total is 0 or a cell is NaN).

    Parameters
    ----------
    values : array-like or Table
        A table of 2 or more dims.

    Returns
    -------
    float
        X^2, expected counts from the margins, cells with expected count 0 left out.

    Examples
    --------
    >>> chi_square([[10, 0], [0, 10]])
    20.0
    """
    a = np.asarray(values.values if isinstance(values, Table) else values, dtype=float)
    if not a.sum() > 0:
        return float("nan")
    return float(_stats.Chi2().values(a, tuple(range(a.ndim)), {}))


def cramers_v(values) -> float:
    """Cramér's V = sqrt(X^2 / (n (min(shape) - 1))) (NaN for a single row/column or n = 0).

    Parameters
    ----------
    values : array-like or Table
        A table of 2 or more dims.

    Returns
    -------
    float
        V, in [0, 1].

    Examples
    --------
    >>> cramers_v([[10, 0], [0, 10]])
    1.0
    """
    a = np.asarray(values.values if isinstance(values, Table) else values, dtype=float)
    if not (a.sum() > 0 and min(a.shape) > 1):
        return float("nan")
    return float(_stats.CramersV().values(a, tuple(range(a.ndim)), {}))


def utility_score(mean_interval_width: float) -> float:
    """Utility on a 0-1 scale, higher is better: 1 / (1 + mean user interval width).

    Parameters
    ----------
    mean_interval_width : float
        The mean over interior cells of the user's credible-interval width, >= 0.

    Returns
    -------
    float
        The utility, in (0, 1]; 1 when the user knows every cell.
    """
    w = float(mean_interval_width)
    if not w >= 0:
        raise ValueError(f"mean interval width must be >= 0, got {mean_interval_width!r}")
    return 1.0 / (1.0 + w)


def utility(user_post: Posterior, truth, release, level: float = 0.95) -> xr.Dataset:
    """Utility measures of ``release`` for a user whose posterior is ``user_post``.

    Scalars: ``interval_width`` (mean over interior cells of the user's credible interval
    width), ``utility`` (:func:`utility_score` of it), ``l1``, ``hellinger``,
    ``chi_square_change``, ``cramers_v_change`` (on :func:`released_values` filled with
    the user's posterior mean); each with its definition in ``attrs``.

    Parameters
    ----------
    user_post : Posterior
        The legitimate user's posterior of the release.
    truth : array-like, Table or xarray.DataArray
        The original table (a labelled one is matched to the posterior by labels).
    release : Release
        The release.
    level : float, default 0.95
        The credible level of the intervals.

    Returns
    -------
    xarray.Dataset
        The six scalar measures; ``attrs``: level and the user's prior.
    """
    _post(user_post, "user_post")
    x = _truth(truth, user_post)
    y = released_values(release, fill=user_post)
    w = float(interval_width(user_post, level).mean())
    vals = {
        "interval_width": w,
        "utility": utility_score(w),
        "l1": l1(x, y),
        "hellinger": hellinger(x, y),
        "chi_square_change": chi_square(y) - chi_square(x),
        "cramers_v_change": cramers_v(y) - cramers_v(x),
    }
    data = {k: xr.DataArray(v, name=k, attrs={"definition": DEFINITIONS[k]})
            for k, v in vals.items()}
    data["interval_width"].attrs["definition"] = (
        "mean over interior cells of the user's credible interval width (" +
        DEFINITIONS["interval_width"] + ")")
    return xr.Dataset(data, attrs={"level": float(level),
                                   "user_prior": str(user_post.attrs.get("prior"))})
