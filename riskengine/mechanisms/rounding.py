"""Controlled rounding to base B (seeds 003, 004): protect, likelihood, exact inference.

Every interior cell and every published total goes to one of its two adjacent
multiples of B (multiples stay: zero-restricted), and the rounded table adds up.

Protect (2-D tables with all totals; 3-D tables with every 2-way and 1-way margin and
the grand total: Ernst's plane stacking or a MILP, see ``_rounding3d``):

``"unbiased"``
    Cox (1987): on the table extended by its totals (totals negated, so every row
    and column sums to zero), repeatedly take an alternating cycle of
    nonmultiples, compute how far it can move up (d+) and down (d-) before an
    entry reaches a multiple, and move up with probability d-/(d+ + d-), down
    otherwise.  Each entry's expectation is its original value.
``"optimal"``
    Cox & Ernst (1982): the transportation formulation solved with HiGHS
    (``scipy.optimize.milp``), minimising the total absolute distortion of the
    interior cells; integral by total unimodularity (the LP bound is attained).

Inference for a rounded release R: candidates are all nonnegative integer
tables that add up and whose every interior cell and every published total is
within B - 1 of its published value (a multiple of B can only have come from
itself).  Likelihoods: ``"feasible"`` (constant on that set: seed 003's
set-valued analysis) or ``"unbiased"`` (product over every entry, totals
included, of its marginal rounding probability: t rounds up with probability
(t mod B)/B).  The joint law of Cox's procedure is path-dependent; the
``"unbiased"`` likelihood is its product-of-marginals approximation.
Routes: the exact 2-D table DP; for 3-D releases the streaming enumerator.
"""

from __future__ import annotations

import numpy as np

from .. import _tabledp
from .. import _validate as V
from ..posterior import Posterior
from ..priors import Prior
from . import Mechanism, _rounding3d, register
from .margins_only import _need_2d_all_totals, _posterior_from_dp

METHODS = ("unbiased", "optimal")
LIKELIHOODS = ("feasible", "unbiased")


@register
class ControlledRounding(Mechanism):
    """Controlled rounding of a count table to base ``base``.

    Parameters
    ----------
    base : int >= 2
    method : {"unbiased", "optimal"}
        Protection procedure (Cox 1987 random rounding; Cox-Ernst optimal rounding).
    zero_restricted : bool
        Multiples of the base (zeros included) stay as they are.  Only ``True`` is
        implemented.
    likelihood : {"feasible", "unbiased"}
        Likelihood used for inference (see module docstring).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[37, 3, 30], [1, 16, 23]]), dims=("v", "w"))
    >>> rel = rk.ControlledRounding(base=5).protect(t, np.random.default_rng(0))
    >>> bool((rel.published % 5 == 0).all())
    True

    A 3-D table (every 2-way and 1-way margin and the grand total rounded too):

    >>> x = np.array([[[4, 1], [2, 5]], [[1, 1], [7, 2]]])
    >>> rel = rk.ControlledRounding(3, method="optimal").protect(rk.Table(x, dims=("i", "j", "k")))
    >>> rel.published.tolist()
    [[[3, 0], [3, 6]], [[3, 0], [6, 3]]]
    >>> rk.count_candidates(rel)
    6551
    """

    name = "controlled_rounding"
    additive = True

    def __init__(self, base: int, method: str = "unbiased", zero_restricted: bool = True,
                 likelihood: str = "feasible"):
        self.base = V.integer(base, "base", 2)
        self.method = V.choice(method, "method", METHODS)
        if zero_restricted is not True:
            raise ValueError("zero_restricted=False (multiples may move to a neighbouring "
                             "multiple) is not implemented; use zero_restricted=True")
        self.zero_restricted = True
        self.likelihood = V.choice(likelihood, "likelihood", LIKELIHOODS)

    def _params(self) -> dict:
        return {"base": self.base, "method": self.method, "zero_restricted": True,
                "likelihood": self.likelihood}

    # --- protect -------------------------------------------------------------------
    def protect(self, table, rng: np.random.Generator | None = None):
        from ..release import Release
        table = self._count_table(table)
        if table.ndim == 3:
            return _rounding3d.protect_3d(self, table, rng)
        if table.ndim != 2:
            raise ValueError(f"controlled rounding is implemented for 2-D and 3-D tables with "
                             f"all totals; got a {table.ndim}-D table")
        if set(table.margins) != {(table.dims[0],), (table.dims[1],), ()}:
            raise ValueError("controlled rounding needs every total of the 2-D table published")
        M = _extended(table.values)
        if self.method == "unbiased":
            rng = self._rng(rng)
            Mr = _cox_unbiased(M, self.base, rng)
        else:
            Mr = _optimal(M, self.base)
        r, c = table.shape
        d0, d1 = table.dims
        return Release(published=Mr[:r, :c], margins={(d0,): -Mr[:r, c], (d1,): -Mr[r, :c],
                                                       (): Mr[r, c]},
                       mechanism=self, dims=table.dims, coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a controlled-rounding release publishes a rounded count table")
        pub = np.asarray(release.published, dtype=float)
        if np.isnan(pub).any():
            raise ValueError("a controlled-rounding release has no suppressed (NaN) cells")
        B = self.base
        for name, arr in [("published", release.published)] + [
                (f"margin {k}", v) for k, v in release.margins.items()]:
            a = np.atleast_1d(np.asarray(arr))
            bad = a % B != 0
            if bad.any():
                raise ValueError(f"{name} value {int(a[bad][0])} is not a multiple of the "
                                 f"rounding base {B}: a controlled rounding publishes multiples")

    # --- inference --------------------------------------------------------------------
    def _windows(self, release, prior: Prior) -> _tabledp.Windows:
        _need_2d_all_totals(release)
        B = self.base
        d0, d1 = release.dims
        P = np.asarray(release.published, dtype=np.int64)

        def window(pub, extra=None):
            pub = np.asarray(pub, dtype=np.int64)
            lo = np.maximum(pub - (B - 1), 0)
            vals = lo[..., None] + np.arange(2 * B - 1)
            lw = np.where(np.abs(vals - pub[..., None]) <= B - 1, 0.0, -np.inf)
            if self.likelihood == "unbiased":
                lw = lw + _log_round_prob(vals, pub[..., None], B)
            if extra is not None:
                lw = lw + extra(vals)
            return lo, lw

        clo, clw = window(P, lambda v: prior.log_weights(v, release.dims, release.coords))
        rlo, rlw = window(release.margins[(d0,)])
        klo, klw = window(release.margins[(d1,)])
        glo, glw = window(release.margins[()])
        return _tabledp.Windows(clo, clw, rlo, rlw, klo, klw, int(glo), glw)

    def posterior(self, release, prior: Prior, route: str = "auto", progress=None,
                  count: bool = True) -> Posterior:
        if len(release.dims) == 3:
            V.choice(route, "route", ("auto", "enumerate"))
            return _rounding3d.posterior_3d(self, release, prior)
        V.choice(route, "route", ("auto", "dp"))
        win = self._windows(release, prior)
        res = _tabledp.solve(win, with_count=count)
        if res is None:
            raise ValueError("no original table is consistent with this rounded release "
                             "under this prior")
        n = res["n"]
        post = _posterior_from_dp(res, release, prior, n,
                                  f"controlled_rounding/{self.likelihood}/dp", self)
        if self.likelihood == "unbiased":
            post.attrs["approximation"] = ("likelihood = product of per-entry marginal rounding "
                                           "probabilities; Cox's procedure's joint law is "
                                           "path-dependent")
        return post

    def count_candidates(self, release, prior: Prior | None = None, route: str = "auto") -> int:
        from ..priors import Uniform
        if len(release.dims) == 3:
            return _rounding3d.count_3d(self, release, prior or Uniform())
        return _tabledp.count(self._windows(release, prior or Uniform()))


def _log_round_prob(t, R, B):
    """log Pr(t rounds to R) under unbiased rounding: up with probability (t mod B)/B."""
    t = np.asarray(t)
    rem = np.mod(t, B)
    p = np.where(rem == 0, (R == t).astype(float),
                 np.where(R == t - rem + B, rem / B, np.where(R == t - rem, 1 - rem / B, 0.0)))
    with np.errstate(divide="ignore"):
        return np.log(p)


def _extended(x: np.ndarray) -> np.ndarray:
    """(r+1) x (c+1) matrix: interior, negated row and column totals, grand total;
    every row and column sums to zero."""
    r, c = x.shape
    M = np.zeros((r + 1, c + 1), dtype=np.int64)
    M[:r, :c] = x
    M[:r, c] = -x.sum(axis=1)
    M[r, :c] = -x.sum(axis=0)
    M[r, c] = x.sum()
    return M


def _cycle(nm):
    """An alternating cycle of nonmultiple cells: consecutive cells share a column, then a
    row, alternately (a cycle in the bipartite graph rows <-> columns whose edges are the
    nonmultiple cells).  Deterministic: start at the first nonmultiple in row-major order,
    always take the lowest-index next edge.  Every row or column holding a nonmultiple holds
    at least two (its entries sum to 0 mod B), so the walk never gets stuck."""
    # walk on the bipartite graph rows <-> columns (edges = nonmultiple cells)
    start = tuple(int(x) for x in np.argwhere(nm)[0])
    verts = [("r", start[0]), ("c", start[1])]
    edges = [start]
    pos = {("r", start[0]): 0, ("c", start[1]): 1}
    while True:
        kind, v = verts[-1]
        last = edges[-1]
        if kind == "c":
            cand = [(int(k), v) for k in np.nonzero(nm[:, v])[0] if (int(k), v) != last]
            e = cand[0]
            nv = ("r", e[0])
        else:
            cand = [(v, int(k)) for k in np.nonzero(nm[v, :])[0] if (v, int(k)) != last]
            e = cand[0]
            nv = ("c", e[1])
        edges.append(e)
        if nv in pos:
            return edges[pos[nv]:]
        pos[nv] = len(verts)
        verts.append(nv)


def _cox_unbiased(M: np.ndarray, B: int, rng: np.random.Generator) -> np.ndarray:
    M = M.copy()
    while True:
        nm = (M % B) != 0
        if not nm.any():
            return M
        cyc = _cycle(nm)
        sign = np.array([1 if k % 2 == 0 else -1 for k in range(len(cyc))])
        vals = np.array([M[e] for e in cyc])
        up = B * (-(-vals // B)) - vals        # distance to the next multiple above
        down = vals - B * (vals // B)          # distance to the multiple below
        d_plus = int(np.min(np.where(sign > 0, up, down)))
        d_minus = int(np.min(np.where(sign > 0, down, up)))
        if rng.random() < d_minus / (d_plus + d_minus):
            step = d_plus
        else:
            step = -d_minus
        for e, s in zip(cyc, sign):
            M[e] += s * step


def _optimal(M: np.ndarray, B: int) -> np.ndarray:
    """Minimum total absolute distortion of the interior (HiGHS, integral by TU)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    rows, cols = M.shape
    floor = B * (M // B)
    frac = M - floor
    nm = frac != 0
    idx = np.full(M.shape, -1)
    idx[nm] = np.arange(int(nm.sum()))
    n = int(nm.sum())
    if n == 0:
        return M.copy()
    cost = np.zeros(n)
    interior = np.zeros(M.shape, bool)
    interior[:-1, :-1] = True
    cost[idx[nm & interior]] = B - 2 * frac[nm & interior]
    A, lb = [], []
    for i in range(rows):
        a = np.zeros(n)
        a[idx[i][nm[i]]] = 1
        A.append(a)
        lb.append(-floor[i].sum() // B)
    for j in range(cols):
        a = np.zeros(n)
        a[idx[:, j][nm[:, j]]] = 1
        A.append(a)
        lb.append(-floor[:, j].sum() // B)
    A = np.array(A)
    lb = np.array(lb, dtype=float)
    res = milp(cost, constraints=LinearConstraint(A, lb, lb), integrality=np.ones(n),
               bounds=Bounds(0, 1))
    if not res.success:
        raise ValueError(f"no controlled rounding exists for this table: {res.message}")
    y = np.rint(res.x).astype(np.int64)
    out = floor.copy()
    out[nm] += B * y[idx[nm]]
    return out
