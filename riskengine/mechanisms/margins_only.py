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
        V.choice(route, "route", ROUTES)
        win = self._windows(release, prior)
        res = _tabledp.solve(win)
        if res is None:
            raise ValueError("no table is consistent with these margins under this prior")
        n = _tabledp.count(win) if count else None
        return _posterior_from_dp(res, release, prior, n, "margins_only/dp", self)

    def count_candidates(self, release, prior: Prior | None = None, route: str = "auto") -> int:
        from ..priors import Uniform
        return _tabledp.count(self._windows(release, prior or Uniform()))


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
