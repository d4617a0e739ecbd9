"""Cell suppression (seeds 003, 004): suppressed interior cells, published totals.

Protect: :func:`riskengine.suppress` (complementary suppression, heuristic or
optimal).  A release publishes every interior cell except the suppressed ones
(NaN), every total, and the subtotals when it carries groups.  Public parameters:
the method, the cost criterion and whether zero cells may be suppressed; the
sensitivity rule and the protection levels are the agency's and not part of the
release.

Inference for count tables: the candidates are every nonnegative integer table that
agrees with the published cells, totals and subtotals.  Routes:

* 2-D table with all totals: the exact table DP (``kernels.table_dp``), published
  cells fixed (window of one value), suppressed cells on ``0..min(row, column total)``;
* 2-D table with one level of subtotals along either dim: the table splits into one
  independent 2-D table per group (its rows, the group's subtotal row as column
  totals), each solved by the DP; counts multiply, evidences add;
* 3-D table with every 2-way margin: the streaming enumerator (``kernels.table_enum``)
  with published cells fixed.

Magnitude releases have no integer candidates: use :func:`riskengine.audit`.
"""

from __future__ import annotations

import numpy as np

from .. import _tabledp
from .. import _validate as V
from ..posterior import Posterior
from ..priors import Prior
from . import Mechanism, register
from .margins_only import _need_2d_all_totals, _posterior_from_dp

METHODS = ("heuristic", "optimal")
COSTS = ("value", "count")


@register
class CellSuppression(Mechanism):
    """Complementary cell suppression.

    Parameters
    ----------
    method : {"heuristic", "optimal"}
        How complementary suppressions are chosen (see :func:`riskengine.suppress`).
    cost : {"value", "count"}
        Minimise the total value or the number of suppressed cells.
    suppress_zeros : bool
        Whether zero cells may serve as complementary suppressions.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.Release(np.array([[np.nan, np.nan, 3], [np.nan, np.nan, 4]]),
    ...                  margins={("v",): [6, 9], ("w",): [5, 3, 7], (): 15},
    ...                  mechanism=rk.CellSuppression(), dims=("v", "w"))
    >>> rk.count_candidates(rel)
    4
    """

    name = "cell_suppression"
    additive = True
    suppressible_totals = True

    def __init__(self, method: str = "heuristic", cost: str = "value",
                 suppress_zeros: bool = False, suppress_totals: bool = False):
        self.method = V.choice(method, "method", METHODS)
        self.cost = V.choice(cost, "cost", COSTS)
        for name, v in (("suppress_zeros", suppress_zeros), ("suppress_totals", suppress_totals)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} must be True or False, got {v!r}")
        self.suppress_zeros = suppress_zeros
        self.suppress_totals = suppress_totals

    def _params(self) -> dict:
        return {"method": self.method, "cost": self.cost, "suppress_zeros": self.suppress_zeros,
                "suppress_totals": self.suppress_totals}

    # --- protect -----------------------------------------------------------------------
    def protect(self, table, rng=None, *, sensitive, protection=None, groups=None,
                time_limit: float | None = None):
        """Suppress ``sensitive`` cells and complements (``rng`` is not used: the method is
        deterministic).  See :func:`riskengine.suppress`."""
        from ..release import Release
        from ..suppress import _pattern
        table, system, x, sens, mask, info = _pattern(
            table, sensitive, protection, self.method, self.cost, groups,
            self.suppress_zeros, self.suppress_totals, time_limit)
        pub = np.where(mask, np.nan, x)
        if table.kind == "count" and not mask.any():
            pub = pub.astype(np.int64)
        interior, margins, subtotals = system.release_parts(pub)
        rel = Release(published=interior, margins=margins, mechanism=self,
                      dims=table.dims, coords=table.coords, kind=table.kind,
                      groups=system.groups or None, subtotals=subtotals or None)
        n_int = system.n_interior
        comp = mask & ~sens
        tot = np.zeros(mask.size, bool)
        tot[n_int:] = True
        rel.info = {"n_suppressed": int(mask[:n_int].sum()),
                    "value_suppressed": float(x[:n_int][mask[:n_int]].sum()),
                    "n_sensitive": int(sens[:n_int].sum()),
                    "n_complementary": int(comp[:n_int].sum()),
                    "value_complementary": float(x[:n_int][comp[:n_int]].sum()),
                    "n_totals_suppressed": int((mask & tot).sum()),
                    "value_totals_suppressed": float(x[mask & tot].sum()),
                    "n_sensitive_totals": int((sens & tot).sum()),
                    **info}
        return rel

    def validate_release(self, release) -> None:
        from ..linear import check_equations
        if release.published is None:
            raise ValueError("a cell-suppression release publishes the interior "
                             "(NaN = suppressed); published is None")
        if not release.margins:
            raise ValueError("a cell-suppression release needs its published totals (margins)")
        system = release.system()
        check_equations(system, release.cell_vector(system),
                        what=f"{self.describe()} release")

    # --- inference ---------------------------------------------------------------------
    def posterior(self, release, prior: Prior, route: str = "auto", progress=None,
                  count: bool = True) -> Posterior:
        V.choice(route, "route", ("auto", "dp", "enumerate"))
        _need_counts(release)
        if release._hidden_totals() and (len(release.dims) != 2 or release.groups):
            raise ValueError("integer completions of releases with suppressed totals are "
                             "computed for 2-D tables without subtotals; this release has "
                             f"dims {release.dims}" + (" and subtotals" if release.groups
                                                        else "") + ": use rk.audit")
        if len(release.dims) == 3:
            if release.groups:
                raise ValueError("3-D suppressed releases with subtotals are not supported "
                                 "(supported: 2-D with totals, 2-D with one level of "
                                 "subtotals, 3-D with every 2-way margin)")
            return _enumerate_3d(release, prior, self)
        if release.groups:
            return _grouped_2d(release, prior, self, count)
        win = _windows(release, prior)
        res = _tabledp.solve(win)
        if res is None:
            raise ValueError("no nonnegative integer table completes this suppressed release "
                             "under this prior")
        n = _tabledp.count(win) if count else None
        return _posterior_from_dp(res, release, prior, n, "cell_suppression/dp", self)

    def count_candidates(self, release, prior: Prior | None = None, route: str = "auto") -> int:
        from ..priors import Uniform
        prior = prior or Uniform()
        _need_counts(release)
        if len(release.dims) == 2 and not release.groups:
            return _tabledp.count(_windows(release, prior))
        return self.posterior(release, prior, route=route).n_candidates


def _need_counts(release):
    if release.kind != "count":
        raise ValueError("posterior over integer completions needs a count release; this "
                         "release holds magnitudes: use rk.audit for its feasible intervals")
    if len(release.dims) not in (2, 3):
        raise ValueError(f"suppressed-release inference covers 2-D tables (with totals, "
                         f"optionally one level of subtotals) and 3-D tables with every "
                         f"2-way margin; this release has dims {release.dims}")


def _cell_windows(pub, lo_free, hi_free, prior, dims, coords):
    """Published cells: their value only; suppressed: lo_free..hi_free; prior weights."""
    pub = np.asarray(pub, dtype=float)
    supp = np.isnan(pub)
    fixed = np.where(supp, 0, pub).astype(np.int64)
    lo = np.where(supp, lo_free, fixed).astype(np.int64)
    hi = np.where(supp, hi_free, fixed).astype(np.int64)
    W = int((hi - lo).max(initial=0)) + 1
    vals = lo[..., None] + np.arange(W)
    lw = prior.log_weights(vals, dims, coords)
    lw = np.where(vals <= hi[..., None], lw, -np.inf)
    return lo, lw


def _windows(release, prior: Prior, pub=None, R=None, C=None, N=None, coords=None):
    if R is None:
        _need_2d_all_totals(release)
        d0, d1 = release.dims
        pub = release.published
        coords = release.coords
        if release._hidden_totals():
            return _windows_hidden_totals(release, prior)
        R = np.asarray(release.margins[(d0,)], dtype=np.int64)
        C = np.asarray(release.margins[(d1,)], dtype=np.int64)
        N = int(release.margins[()])
    hi = np.minimum(R[:, None], C[None, :])
    lo, lw = _cell_windows(pub, 0, hi, prior, release.dims, coords)
    return _tabledp.Windows(lo, lw, R, np.zeros((len(R), 1)), C, np.zeros((len(C), 1)),
                            int(N), np.zeros(1))


def _windows_hidden_totals(release, prior: Prior):
    """Suppressed totals: each on the integer range of its LP interval (the audit's), with
    a flat likelihood; suppressed cells on 0..their LP upper bound."""
    from ..audit import intervals, protection_tol
    system = release.system()
    x = release.cell_vector(system)
    lo, hi = intervals(system, x)
    if not np.all(np.isfinite(hi)):
        j = int(np.argmax(~np.isfinite(hi)))
        raise ValueError(f"{system.labels()[j]} is unbounded given the published cells (the "
                         "grand total and the totals above it are suppressed): infinitely "
                         "many integer completions")
    tol = protection_tol(x)
    ilo = np.ceil(lo - tol).astype(np.int64)
    ihi = np.floor(hi + tol).astype(np.int64)
    parts = {(b.keep, b.grouped): (ilo[b.slice].reshape(b.shape), ihi[b.slice].reshape(b.shape))
             for b in system.blocks}
    d0, d1 = release.dims

    def total(keep):
        a, b = parts[(keep, None)]
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        W = int((b - a).max(initial=0)) + 1
        lw = np.where(np.arange(W) <= (b - a)[:, None], 0.0, -np.inf)
        return a, lw

    R, Rlw = total((d0,))
    C, Clw = total((d1,))
    G, Glw = total(())
    clo, chi = parts[(release.dims, None)]
    lo_c, lw = _cell_windows(release.published, clo, chi, prior, release.dims, release.coords)
    return _tabledp.Windows(lo_c, lw, R, Rlw, C, Clw, int(G[0]), Glw[0])


def _grouped_2d(release, prior, mech, count) -> Posterior:
    """One independent 2-D table per group of the grouped dim."""
    _need_2d_all_totals(release)
    (g, parts), = release.groups.items()
    d0, d1 = release.dims
    ax = release.dims.index(g)
    pub = np.asarray(release.published, dtype=float)
    lines = np.asarray(release.margins[(g,)], dtype=np.int64)          # totals of g's categories
    sub = np.asarray(release.subtotals[(d0, d1)], dtype=np.int64)      # grouped interior
    subtot = np.asarray(release.subtotals[(g,)], dtype=np.int64)       # group totals
    if ax == 1:
        pub, sub = pub.T, sub.T
    other = d1 if ax == 0 else d0
    shape = pub.shape
    W = 1
    pieces = []
    for k, members in enumerate(parts):
        members = list(members)
        coords = {g: [release.coords[g][i] for i in members], other: release.coords[other]}
        # the prior sees the cells in table orientation
        sub_rel = _Oriented(release, g, other, ax)
        win = _windows(sub_rel, _TransposedPrior(prior, ax, members, release),
                       pub=pub[members], R=lines[members], C=sub[k], N=subtot[k],
                       coords=coords)
        res = _tabledp.solve(win)
        if res is None:
            raise ValueError(f"no nonnegative integer table completes group {k} of {g!r} "
                             "under this prior")
        n = _tabledp.count(win) if count else None
        pieces.append((members, res, n))
        W = max(W, res["cell"].shape[-1])
    start = np.zeros(shape, np.int64)
    probs = np.zeros(shape + (W,))
    n_total, log_z = 1, 0.0
    for members, res, n in pieces:
        start[members] = res["cell_lo"]
        probs[members, :, : res["cell"].shape[-1]] = res["cell"]
        log_z += res["log_z"]
        n_total = None if (n is None or n_total is None) else n_total * n
    if ax == 1:
        start, probs = start.T, probs.transpose(1, 0, 2)
    return Posterior(start=start, probs=probs, dims=release.dims, coords=release.coords,
                     published=release.published, n_candidates=n_total, log_evidence=log_z,
                     attrs={"method": "cell_suppression/grouped-dp", "prior": prior.describe(),
                            "mechanism": mech.describe(), "route": "dp"})


class _Oriented:
    """The dims a per-group sub-table is labelled with (grouped dim first)."""

    def __init__(self, release, g, other, ax):
        self.dims = (g, other)


class _TransposedPrior:
    """A prior evaluated on a group's rows, in the release's orientation."""

    def __init__(self, prior, ax, members, release):
        self.prior, self.ax, self.members, self.release = prior, ax, members, release

    def log_weights(self, vals, dims, coords):
        rel = self.release
        full_shape = rel.shape + (vals.shape[-1],)
        big = np.zeros(full_shape, np.int64)
        v = vals if self.ax == 0 else vals.transpose(1, 0, 2)
        if self.ax == 0:
            big[self.members] = v
        else:
            big[:, self.members] = v
        lw = self.prior.log_weights(big, rel.dims, rel.coords)
        lw = lw[self.members] if self.ax == 0 else lw[:, self.members].transpose(1, 0, 2)
        return lw


def _enumerate_3d(release, prior: Prior, mech) -> Posterior:
    from .margins_only import _run_3d
    count, total, hist, mx = _run_3d(
        release, prior, fixed=release.published,
        hint=" (supported: 2-D with totals or one level of subtotals, 3-D with every 2-way "
             "margin)")
    shape, Vmax = release.shape, hist.shape[-1]
    if count == 0:
        raise ValueError("no nonnegative integer table completes this suppressed release "
                         "under this prior")
    probs = (hist / total).reshape(shape + (Vmax,))
    return Posterior(start=np.zeros(shape, np.int64), probs=probs, dims=release.dims,
                     coords=release.coords, published=release.published,
                     n_candidates=int(count), log_evidence=float(np.log(total) + mx.sum()),
                     attrs={"method": "cell_suppression/enumerate", "prior": prior.describe(),
                            "mechanism": mech.describe(), "route": "enumerate"})
