"""Bounds on the cells of a margins-only release: Fréchet bounds and exact ranges.

``frechet_bounds``: the classical bounds from the published totals (2-D: sharp; 3-D from
the 2-way margins: not sharp in general, seed 004).  ``exact_bounds``: the exact range of
every cell over all integer (or real) tables with the published totals, by MILP / LP
(HiGHS) or from the support of the exact posterior.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .. import _validate as V
from ..priors import Uniform
from ..release import Release
from ..tabular import aggregation
from .enumerate_3d import order

__all__ = ["BOUND_METHODS", "exact_bounds", "frechet_bounds"]

BOUND_METHODS = ("ilp", "lp", "enumerate")


def two_way_margins(release, what: str) -> tuple:
    """The three 2-way margins of a 3-D release as int64 arrays, or a clear error."""
    need = order(release.dims)[:3]
    missing = [k for k in need if k not in release.margins]
    if missing:
        raise ValueError(f"{what} needs every 2-way margin published; missing {missing}")
    return tuple(np.asarray(release.margins[k], dtype=np.int64) for k in need)


def _margins_only(release, what: str):
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    if release.mechanism.name != "margins_only":
        raise TypeError(f"{what} covers margins-only releases; this release is "
                        f"{release.mechanism.describe()}")


def frechet_bounds(release) -> xr.Dataset:
    """Fréchet bounds of every cell from the published totals.

    2-D (row, column and grand totals): max(0, r_i + c_j - n) <= x_ij <= min(r_i, c_j);
    sharp: every value between them occurs in some table.

    3-D (every 2-way margin): the usual upper bound min(n_ij+, n_i+k, n_+jk) and the
    Fréchet lower bound max(0, n_ij+ + n_i+k - n_i++, n_ij+ + n_+jk - n_+j+,
    n_i+k + n_+jk - n_++k) (seed 004, "Frechet Bounds").  Seed 004's 3-D examples show
    they need not be sharp; :func:`exact_bounds` gives the exact interval.

    Parameters
    ----------
    release : rk.Release
        A release of a 2-D table with its row, column and grand totals, or of a 3-D
        table with every 2-way margin.

    Returns
    -------
    xarray.Dataset
        ``lower`` and ``upper`` per cell (bounds included), labelled like the release;
        ``attrs["method"]`` says which bounds.

    Raises
    ------
    ValueError
        If the table is not 2-D or 3-D, or a total the bounds need is not published.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]])))
    >>> rk.frechet_bounds(rel)["upper"].values.tolist()
    [[3, 3], [4, 6]]
    """
    coords = {d: release.coords[d] for d in release.dims}
    if len(release.dims) == 3:
        n_ij, n_ik, n_jk = two_way_margins(release, "3-D Fréchet bounds")
        upper = np.minimum(np.minimum(n_ij[:, :, None], n_ik[:, None, :]), n_jk[None, :, :])
        lower = np.maximum.reduce([
            np.zeros(upper.shape, np.int64),
            n_ij[:, :, None] + n_ik[:, None, :] - n_ij.sum(1)[:, None, None],
            n_ij[:, :, None] + n_jk[None, :, :] - n_ij.sum(0)[None, :, None],
            n_ik[:, None, :] + n_jk[None, :, :] - n_ik.sum(0)[None, None, :]])
        return xr.Dataset({"lower": (release.dims, lower), "upper": (release.dims, upper)},
                          coords=coords,
                          attrs={"method": "Frechet bounds from the 2-way margins (not sharp "
                                           "in general: see exact_bounds)"})
    if len(release.dims) != 2:
        raise ValueError(f"Fréchet bounds cover 2-D and 3-D tables; this release has dims "
                         f"{release.dims}")
    d0, d1 = release.dims
    missing = [k for k in ((d0,), (d1,), ()) if k not in release.margins]
    if missing:
        raise ValueError(f"2-D Fréchet bounds need every total published; missing {missing}")
    R = np.asarray(release.margins[(d0,)])
    C = np.asarray(release.margins[(d1,)])
    N = np.asarray(release.margins[()])
    lower = np.maximum(0, R[:, None] + C[None, :] - N)
    upper = np.minimum(R[:, None], C[None, :])
    return xr.Dataset({"lower": (release.dims, lower), "upper": (release.dims, upper)},
                      coords=coords, attrs={"method": "Frechet bounds from the 2-D totals"})


def exact_bounds(release, method: str = "ilp") -> xr.Dataset:
    """Exact range of every cell over all tables with a margins-only release's totals.

    Parameters
    ----------
    release : rk.Release
        A margins-only release (2-D or 3-D; every published total is used).
    method : {"ilp", "lp", "enumerate"}
        ``"ilp"``: min and max of each cell over nonnegative *integer* tables, two HiGHS
        MILPs per cell; ``"lp"``: the same over nonnegative *real* tables (the LP
        relaxation: its bounds contain the integer ones); ``"enumerate"``: the support of
        the exact posterior (table DP in 2-D, streaming enumerator in 3-D).

    Returns
    -------
    xarray.Dataset
        ``lower`` and ``upper`` per cell (range ends included), labelled like the release
        (int64 except for ``"lp"``, whose ends are real); ``attrs["method"]`` names the
        method.

    Raises
    ------
    ValueError
        When no table has these totals (seed 004's infeasible examples), or ``method`` is
        unknown.
    TypeError
        If ``release`` is not a margins-only ``rk.Release``.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]])))
    >>> rk.exact_bounds(rel)["upper"].values.tolist()
    [[3, 3], [4, 6]]
    """
    _margins_only(release, "exact_bounds")
    V.choice(method, "method", BOUND_METHODS)
    dims = release.dims
    if method == "enumerate":
        from .resolve import posterior
        post = posterior(release, Uniform())
        pos = post.probs > 0
        lower = post.start + np.argmax(pos, axis=-1)
        upper = post.start + post.width - 1 - np.argmax(pos[..., ::-1], axis=-1)
    else:
        lower, upper = _bounds_by_program(release, integer=method == "ilp")
    coords = {d: release.coords[d] for d in dims}
    return xr.Dataset({"lower": (dims, lower), "upper": (dims, upper)}, coords=coords,
                      attrs={"method": f"exact cell bounds given the totals ({method})"})


def _bounds_by_program(release, integer: bool):
    from scipy.optimize import Bounds, LinearConstraint, milp  # on first use (~0.15 s)

    dims, shape = release.dims, release.shape
    n = int(np.prod(shape))
    keeps = list(release.margins)
    A = aggregation(dims, shape, keeps)
    b = np.concatenate([np.atleast_1d(np.asarray(release.margins[k], dtype=float)).ravel()
                        for k in keeps])
    cons = LinearConstraint(A, b, b)
    integrality = np.ones(n) if integer else np.zeros(n)
    out = np.zeros((2, n))
    for c in range(n):
        for s, sign in enumerate((1.0, -1.0)):
            cost = np.zeros(n)
            cost[c] = sign
            res = milp(cost, constraints=cons, integrality=integrality, bounds=Bounds(0, np.inf))
            if res.status == 2:
                raise ValueError("no nonnegative table has these published totals "
                                 f"({'integer' if integer else 'real'} program infeasible)")
            if not res.success:
                raise RuntimeError(f"HiGHS failed on the bounds program: {res.message}")
            out[s, c] = sign * res.fun
    if integer:
        out = np.rint(out).astype(np.int64)
    return out[0].reshape(shape), out[1].reshape(shape)
