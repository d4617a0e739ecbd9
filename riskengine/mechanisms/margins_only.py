"""Margins only (seed 003): publish the totals, nothing of the interior.

Candidates: every nonnegative integer table with the published totals.  The
posterior under ``Uniform()`` puts equal weight on each; under ``Poisson(rate)``
the weight is prod rate^t / t!, i.e. the (multivariate) hypergeometric law
given the margins.  Inference: the exact table DP (``kernels.table_dp``) for
2-D tables with all totals.  Fréchet bounds per cell: ``frechet_bounds``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .. import _tabledp
from .. import _validate as V
from ..posterior import Posterior
from ..priors import Prior
from . import Mechanism, register

ROUTES = ("auto", "dp")


@register
class MarginsOnly(Mechanism):
    """Release only the published totals of a count table.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]])))
    >>> rk.count_candidates(rel)
    4
    """

    name = "margins_only"
    additive = True

    def _params(self) -> dict:
        return {}

    def describe(self) -> str:
        return "MarginsOnly()"

    def protect(self, table, rng=None):
        """The release: the table's totals, no interior (``rng`` is not used)."""
        from ..release import Release
        table = self._count_table(table)
        return Release(published=None, margins=table.totals(), mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.published is not None and not np.isnan(
                np.asarray(release.published, float)).all():
            raise ValueError("a margins-only release publishes no interior values "
                             "(published must be None)")
        if not release.margins:
            raise ValueError("a margins-only release needs its published totals (margins)")

    # --- inference ---------------------------------------------------------------------
    def _windows(self, release, prior: Prior):
        return _windows_2d(release, prior)

    def posterior(self, release, prior: Prior, route: str = "auto", progress=None,
                  count: bool = True) -> Posterior:
        V.choice(route, "route", ROUTES + ("enumerate",))
        if len(release.dims) == 3 or route == "enumerate":
            return _enumerate_3d(release, prior, self)
        win = self._windows(release, prior)
        res = _tabledp.solve(win, with_count=count)
        if res is None:
            raise ValueError("no table is consistent with these margins under this prior")
        n = res["n"]
        return _posterior_from_dp(res, release, prior, n, "margins_only/dp", self)

    def count_candidates(self, release, prior: Prior | None = None, route: str = "auto") -> int:
        from ..priors import Uniform
        if len(release.dims) == 3:
            return _enumerate_3d(release, prior or Uniform(), self).n_candidates
        return _tabledp.count(self._windows(release, prior or Uniform()))


def _enumerate_3d(release, prior: Prior, mech) -> Posterior:
    """3-D table with every 2-way margin published: streaming enumeration
    (kernels.table_enum), pruned by the remaining margins."""
    from kernels import table_enum
    if len(release.dims) != 3:
        raise ValueError("the enumeration route covers 3-D tables with all 2-way margins")
    a, b, c = release.dims
    need = [(a, b), (a, c), (b, c)]
    missing = [k for k in need if k not in release.margins]
    if missing:
        raise ValueError(f"3-D inference needs every 2-way margin published; missing {missing}")
    n_ij, n_ik, n_jk = (np.asarray(release.margins[k], dtype=np.int64) for k in need)
    shape = release.shape
    Vmax = int(max(n_ij.max(initial=0), n_ik.max(initial=0), n_jk.max(initial=0))) + 1
    vals = np.broadcast_to(np.arange(Vmax), shape + (Vmax,))
    lw = prior.log_weights(vals, release.dims, release.coords)
    fin = np.isfinite(lw)
    mx = np.where(fin, lw, -np.inf).max(axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    wt = np.where(fin, np.exp(lw - mx[..., None]), 0.0).reshape(-1, Vmax)
    count, total, hist = table_enum.enumerate_3d(n_ij, n_ik, n_jk, wt)
    if count == 0:
        raise ValueError("no table has these margins under this prior")
    if not total > 1e-290:
        raise FloatingPointError(f"enumeration weights underflowed (total {total!r})")
    probs = (hist / total).reshape(shape + (Vmax,))
    return Posterior(start=np.zeros(shape, np.int64), probs=probs, dims=release.dims,
                     coords=release.coords, published=None, n_candidates=int(count),
                     log_evidence=float(np.log(total) + mx.sum()),
                     attrs={"method": "margins_only/enumerate", "prior": prior.describe(),
                            "mechanism": mech.describe(), "route": "enumerate"})


def _need_2d_all_totals(release):
    if len(release.dims) != 2:
        raise ValueError(f"exact inference here covers 2-D tables; this release has dims "
                         f"{release.dims}")
    need = {(release.dims[0],), (release.dims[1],), ()}
    if not need <= set(release.margins):
        raise ValueError(f"exact inference needs every total of the 2-D table published "
                         f"({sorted(need)}); the release has {sorted(release.margins)}")


def _windows_2d(release, prior: Prior) -> "_tabledp.Windows":
    """Margins fixed at their published values; cells 0..min(row, column total)."""
    _need_2d_all_totals(release)
    d0, d1 = release.dims
    R = np.asarray(release.margins[(d0,)], dtype=np.int64)
    C = np.asarray(release.margins[(d1,)], dtype=np.int64)
    N = int(release.margins[()])
    hi = np.minimum(R[:, None], C[None, :])
    W = int(hi.max()) + 1
    vals = np.broadcast_to(np.arange(W), hi.shape + (W,))
    lw = prior.log_weights(vals, release.dims, release.coords)
    lw = np.where(vals <= hi[..., None], lw, -np.inf)
    zero = np.zeros((len(R), 1))
    return _tabledp.Windows(np.zeros(hi.shape, np.int64), lw, R, zero, C,
                            np.zeros((len(C), 1)), N, np.zeros(1))


def _posterior_from_dp(res, release, prior, n_candidates, method, mech) -> Posterior:
    post = Posterior(start=res["cell_lo"], probs=res["cell"], dims=release.dims,
                     coords=release.coords,
                     published=None if release.published is None else release.published,
                     n_candidates=n_candidates, log_evidence=res["log_z"],
                     attrs={"method": method, "prior": prior.describe(),
                            "mechanism": mech.describe(), "route": "dp"})
    d0, d1 = release.dims
    post.totals = {
        (d0,): _margin_post(res["row_lo"], res["row"], (d0,), release),
        (d1,): _margin_post(res["col_lo"], res["col"], (d1,), release),
        (): _margin_post(np.array(res["grand_lo"]), res["grand"], (), release),
    }
    return post


def _margin_post(lo, probs, dims, release):
    coords = {d: release.coords[d] for d in dims}
    pub = release.margins.get(tuple(dims))
    return Posterior(start=np.asarray(lo), probs=np.asarray(probs), dims=dims, coords=coords,
                     published=pub, attrs={"description": f"posterior of the total {dims}"})


def frechet_bounds(release) -> xr.Dataset:
    """Fréchet bounds of every cell of a 2-D table from its totals:
    max(0, r_i + c_j - n) <= x_ij <= min(r_i, c_j).

    They are sharp for 2-D tables with all totals (every value between them occurs
    in some table); seed 004 shows they need not be sharp for 3-D tables with
    2-D margins, where an LP over all margins gives the exact interval.
    """
    _need_2d_all_totals(release)
    d0, d1 = release.dims
    R = np.asarray(release.margins[(d0,)])
    C = np.asarray(release.margins[(d1,)])
    N = np.asarray(release.margins[()])
    lower = np.maximum(0, R[:, None] + C[None, :] - N)
    upper = np.minimum(R[:, None], C[None, :])
    coords = {d: release.coords[d] for d in release.dims}
    return xr.Dataset({"lower": (release.dims, lower), "upper": (release.dims, upper)},
                      coords=coords, attrs={"method": "Frechet bounds from the 2-D totals"})
