"""Margins only (seed 003): publish the totals, nothing of the interior.

Candidates: every nonnegative integer table with the published totals.  The
posterior under ``Uniform()`` puts equal weight on each; under ``Poisson(rate)``
the weight is prod rate^t / t!, i.e. the (multivariate) hypergeometric law
given the margins.  Inference: the exact table DP (``kernels.table_dp``) for
2-D tables with all totals; the streaming enumerator (``kernels.table_enum``) for
3-D tables with every 2-way margin.  Fréchet bounds per cell: ``frechet_bounds``;
the exact per-cell range (seed 004: Fréchet bounds are not sharp in 3-D):
``exact_bounds``.
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
            return _run_3d(release, prior or Uniform())[0]
        return _tabledp.count(self._windows(release, prior or Uniform()))


def _enumerate_3d(release, prior: Prior, mech) -> Posterior:
    """3-D table with every 2-way margin published: streaming enumeration
    (kernels.table_enum), pruned by the remaining margins."""
    count, total, hist, mx = _run_3d(release, prior)
    if count == 0:
        raise ValueError("no table has these margins under this prior")
    if not total > 1e-290:
        raise FloatingPointError(f"enumeration weights underflowed (total {total!r})")
    shape = release.shape
    probs = (hist / total).reshape(shape + (-1,))
    return Posterior(start=np.zeros(shape, np.int64), probs=probs, dims=release.dims,
                     coords=release.coords, published=None, n_candidates=int(count),
                     log_evidence=float(np.log(total) + mx.sum()),
                     attrs={"method": "margins_only/enumerate", "prior": prior.describe(),
                            "mechanism": mech.describe(), "route": "enumerate"})


def two_way_margins(release, what: str = "3-D inference", hint: str = "") -> tuple:
    """The three 2-way margins of a 3-D release as int64 arrays, or a clear error."""
    a, b, c = release.dims
    need = [(a, b), (a, c), (b, c)]
    missing = [k for k in need if k not in release.margins]
    if missing:
        raise ValueError(f"{what} needs every 2-way margin published; missing {missing}{hint}")
    return tuple(np.asarray(release.margins[k], dtype=np.int64) for k in need)


def _run_3d(release, prior: Prior, fixed=None, hint: str = ""):
    """Enumerate every 3-D table with the release's 2-way margins, weighted by ``prior``;
    ``fixed`` (interior array, NaN = unknown) pins the known cells to their values."""
    from kernels import table_enum
    if len(release.dims) != 3:
        raise ValueError("the enumeration route covers 3-D tables with all 2-way margins")
    n_ij, n_ik, n_jk = two_way_margins(release, hint=hint)
    shape = release.shape
    Vmax = int(max(n_ij.max(initial=0), n_ik.max(initial=0), n_jk.max(initial=0))) + 1
    vals = np.broadcast_to(np.arange(Vmax), shape + (Vmax,))
    lw = prior.log_weights(vals, release.dims, release.coords)
    if fixed is not None:
        pub = np.asarray(fixed, dtype=float)
        known = ~np.isnan(pub)
        keep = ~known[..., None] | (vals == np.where(known, pub, -1)[..., None])
        lw = np.where(keep, lw, -np.inf)
    fin = np.isfinite(lw)
    mx = np.where(fin, lw, -np.inf).max(axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    wt = np.where(fin, np.exp(lw - mx[..., None]), 0.0).reshape(-1, Vmax)
    count, total, hist = table_enum.enumerate_3d(n_ij, n_ik, n_jk, wt)
    return int(count), float(total), hist, mx


def _need_2d_all_totals(release):
    if len(release.dims) != 2:
        raise ValueError(f"exact inference here covers 2-D tables; this release has dims "
                         f"{release.dims}")
    need = {(release.dims[0],), (release.dims[1],), ()}
    if not need <= set(release.margins):
        raise ValueError(f"exact inference needs every total of the 2-D table published "
                         f"({sorted(need)}); the release has {sorted(release.margins)}")


def _windows_2d(release, prior: Prior) -> _tabledp.Windows:
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
    """Fréchet bounds of every cell from the published totals.

    2-D (row, column and grand totals): max(0, r_i + c_j - n) <= x_ij <= min(r_i, c_j);
    sharp: every value between them occurs in some table.

    3-D (every 2-way margin): the usual upper bound min(n_ij+, n_i+k, n_+jk) and the
    Fréchet lower bound max(0, n_ij+ + n_i+k - n_i++, n_ij+ + n_+jk - n_+j+,
    n_i+k + n_+jk - n_++k) (seed 004, "Frechet Bounds").  Seed 004's 3-D examples show
    they need not be sharp; :func:`exact_bounds` gives the exact interval.

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
    _need_2d_all_totals(release)
    d0, d1 = release.dims
    R = np.asarray(release.margins[(d0,)])
    C = np.asarray(release.margins[(d1,)])
    N = np.asarray(release.margins[()])
    lower = np.maximum(0, R[:, None] + C[None, :] - N)
    upper = np.minimum(R[:, None], C[None, :])
    return xr.Dataset({"lower": (release.dims, lower), "upper": (release.dims, upper)},
                      coords=coords, attrs={"method": "Frechet bounds from the 2-D totals"})


BOUND_METHODS = ("ilp", "lp", "enumerate")


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

    Raises ``ValueError`` when no table has these totals (seed 004's infeasible examples).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]])))
    >>> rk.exact_bounds(rel)["upper"].values.tolist()
    [[3, 3], [4, 6]]
    """
    from ..release import Release
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    V.choice(method, "method", BOUND_METHODS)
    if not isinstance(release.mechanism, MarginsOnly):
        raise TypeError(f"exact_bounds covers margins-only releases; this release is "
                         f"{release.mechanism.describe()}")
    dims = release.dims
    if method == "enumerate":
        from ..priors import Uniform
        post = release.mechanism.posterior(release, Uniform())
        pos = post.probs > 0
        lower = post.start + np.argmax(pos, axis=-1)
        upper = post.start + post.width - 1 - np.argmax(pos[..., ::-1], axis=-1)
    else:
        lower, upper = _bounds_by_program(release, integer=method == "ilp")
    coords = {d: release.coords[d] for d in dims}
    return xr.Dataset({"lower": (dims, lower), "upper": (dims, upper)}, coords=coords,
                      attrs={"method": f"exact cell bounds given the totals ({method})"})


def _bounds_by_program(release, integer: bool):
    from scipy.optimize import Bounds, LinearConstraint, milp
    dims, shape = release.dims, release.shape
    n = int(np.prod(shape))
    grids = np.indices(shape)
    rows, cols, rhs = [], [], []
    nrow = 0
    for keep, val in release.margins.items():
        axes = [dims.index(d) for d in keep]
        tid = (np.ravel_multi_index(tuple(grids[a] for a in axes), tuple(shape[a] for a in axes))
               if axes else np.zeros(shape, np.int64))
        rows.append(nrow + tid.ravel())
        cols.append(np.arange(n))
        rhs.append(np.atleast_1d(np.asarray(val, dtype=float)).ravel())
        nrow += rhs[-1].size
    import scipy.sparse as sp
    A = sp.csr_array((np.ones(sum(r.size for r in rows)), (np.concatenate(rows),
                                                           np.concatenate(cols))),
                     shape=(nrow, n))
    b = np.concatenate(rhs)
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
