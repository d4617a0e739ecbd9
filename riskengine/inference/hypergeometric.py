"""The hypergeometric route: exact posteriors of margins-only 2-D tables under a Poisson
prior whose rates factor by row and column, at any count and any shape.

With every cell free on ``0 ..`` (nothing published inside the table: margins only) and
independent Poisson cells of rates ``lambda_ij = a_i b_j`` (a scalar rate, or any rate
table of rank one), the weight of a table with row totals ``R`` and column totals ``C`` is
``prod_ij lambda_ij^x_ij e^-lambda_ij / x_ij! = prod_i a_i^R_i prod_j b_j^C_j e^-sum
lambda / prod_ij x_ij!``: proportional to ``1 / prod x_ij!``, the multivariate
hypergeometric law of the table given its margins (Fisher's exact conditional law).
Hence, exactly:

* each cell is hypergeometric: ``Pr(x_ij = v) = C(R_i, v) C(N - R_i, C_j - v) / C(N,
  C_j)``, computed from its mode outwards by the ratio of successive probabilities
  ``(R_i - v)(C_j - v) / ((v + 1)(N - R_i - C_j + v + 1))`` (logs summed from the mode:
  no cancellation of large log-gammas);
* the evidence: ``sum_T weight = prod a_i^R_i prod b_j^C_j e^-sum lambda N! / (prod R_i!
  prod C_j!)`` (the hypergeometric law sums to 1);
* whole-table draws: row by row, cell by cell, each a hypergeometric draw from what the
  column totals have left.

Cost: O(cells x window), whatever the number of free dimensions (a 3 x 3 margins-only
table has four).  The count of candidates is not part of it: it is taken from the table
DP's forward pass when the DP's estimate fits the budget, else left out with a note.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..protocol import Cost, Route, RouteResult
from ._plan import prepared

__all__ = ["Hypergeometric", "cell_pmf", "rank_one_rates"]

#: the rank-one check: log-rates within this of a_i + b_j
_RANK_TOL = 1e-9


def cell_pmf(N: int, R: int, C: int):
    """The hypergeometric law of a cell of row total ``R`` and column total ``C`` in a
    table of grand total ``N``, on its support.

    Parameters
    ----------
    N, R, C : int
        Grand total, the cell's row total, its column total.

    Returns
    -------
    start : int
        ``max(0, R + C - N)``, the smallest value.
    probs : numpy.ndarray
        The probabilities of ``start .. min(R, C)`` (those that underflow are 0).
    """
    a, b = max(0, R + C - N), min(R, C)
    v = np.arange(a, b, dtype=np.float64)
    # log Pr(v + 1) - log Pr(v)
    step = (np.log(R - v) + np.log(C - v) - np.log(v + 1.0) - np.log(N - R - C + v + 1.0))
    mode = int(np.clip(math.floor((R + 1.0) * (C + 1.0) / (N + 2.0)), a, b))
    k = mode - a
    lp = np.zeros(b - a + 1)
    lp[k + 1:] = np.cumsum(step[k:])
    lp[:k] = -np.cumsum(step[:k][::-1])[::-1]
    with np.errstate(under="ignore"):
        p = np.exp(lp)
    return a, p / p.sum()


def rank_one_rates(prior, shape, dims, coords):
    """The Poisson rates of ``prior`` when it is an independent Poisson prior without
    knowledge whose log-rates are ``alpha_i + beta_j`` (None otherwise), read off its
    log-weights: ``lw(0) = -lambda``, ``lw(v) = v log lambda - lambda - log v!``.

    Parameters
    ----------
    prior : rk.priors.Prior
    shape, dims, coords
        The release's shape, dims and labels.

    Returns
    -------
    numpy.ndarray or None
        ``lambda`` of every cell.
    """
    vals = np.array([0, 1, 2, 7, 1000, 123457], np.int64)
    grid = np.broadcast_to(vals, tuple(shape) + (vals.size,))
    try:
        lw = prior.log_weights(grid, dims, coords)
    except (ValueError, TypeError):
        return None
    if not np.all(np.isfinite(lw)):
        return None
    lam = -lw[..., 0]
    if not np.all(lam > 0):
        return None
    loglam = np.log(lam)
    want = vals * loglam[..., None] - lam[..., None] - gammaln(vals + 1.0)
    if not np.allclose(lw, want, rtol=1e-12, atol=1e-9):
        return None
    fit = loglam[:, :1] + loglam[:1, :] - loglam[:1, :1]
    if np.abs(loglam - fit).max() > _RANK_TOL * max(1.0, np.abs(loglam).max()):
        return None
    return lam


class Hypergeometric(Route):
    """Exact posterior of a margins-only 2-D table under a Poisson prior of rank-one rates
    (a scalar rate, or rates ``a_i b_j``), in closed form: every cell hypergeometric.

    Reads the mechanism's entry windows (``plan.inputs["windows"]``) to check that
    nothing inside the table is published and every total is exact.
    """

    name = "hypergeometric"
    needs = ("entry windows; 2-D count table, every total exact, no cell published; "
             "Poisson prior with rates a_i b_j (e.g. one rate)")

    def __init__(self, count_by=None):
        #: a route whose ``count(plan)`` gives the exact count (the table DP), used when
        #: its estimate fits the budget
        self._count_by = count_by

    @staticmethod
    def _plan(plan):
        return prepared(plan, "hypergeometric", lambda: _prepare(plan))

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or len(release.dims) != 2 or release.groups:
            return "the hypergeometric route covers 2-D count tables without subtotals"
        got = self._plan(plan)
        return got if isinstance(got, str) else None

    def estimate(self, plan, what="posterior"):
        R, C, _ = self._plan(plan)
        cells = R.size * C.size
        width = float(min(R.max(), C.max())) + 1
        if what == "count":
            return Cost(0.0, "", too_long="the hypergeometric route does not count "
                        "candidates")
        return Cost(8.0 * cells * width * 3 + 1e6,
                    f"{cells} hypergeometric cells of at most {width:.3g} values",
                    seconds=cells * width / 2e7)

    def run(self, plan, *, count=True):
        release = plan.release
        R, C, lam = self._plan(plan)
        N = int(R.sum())
        r, c = R.size, C.size
        starts = np.zeros((r, c), np.int64)
        pmfs = {}
        for i in range(r):
            for j in range(c):
                starts[i, j], pmfs[i, j] = cell_pmf(N, int(R[i]), int(C[j]))
        # trim every window to its values of positive probability
        W = 1
        for (i, j), p in pmfs.items():
            nz = np.flatnonzero(p > 0)
            starts[i, j] += int(nz[0])
            pmfs[i, j] = p[nz[0]:nz[-1] + 1]
            W = max(W, pmfs[i, j].size)
        probs = np.zeros((r, c, W))
        for (i, j), p in pmfs.items():
            probs[i, j, :p.size] = p
        loglam = np.log(lam)
        alpha = loglam[:, 0]
        beta = loglam[0, :] - loglam[0, 0]
        log_z = (float(R @ alpha + C @ beta) - float(lam.sum()) + float(gammaln(N + 1.0))
                 - float(gammaln(R + 1.0).sum()) - float(gammaln(C + 1.0).sum())
                 + _windows_constant(plan))
        d0, d1 = release.dims
        totals = {(d0,): (R, np.ones((r, 1))), (d1,): (C, np.ones((c, 1))),
                  (): (np.array(N), np.ones(1))}
        n, notes = None, {}
        if count:
            n, notes = self._count(plan)
        return RouteResult(start=starts, probs=probs, log_evidence=log_z, n_candidates=n,
                           totals=totals, sampler=_sampler(R, C), notes=notes)

    def _count(self, plan):
        """The exact count through ``count_by`` when its estimate fits, else a note."""
        from .resolve import TIME_BUDGET
        budget = plan.seconds if plan.seconds is not None else TIME_BUDGET
        why = "no counting route given"
        r = self._count_by
        if r is not None and r.applies(plan) is None:
            cost = r.estimate(plan, "count")
            if cost.memory <= plan.memory and not cost.too_long and \
                    cost.seconds <= budget:
                return r.count(plan), {}
            why = (f"counting them by route {r.name!r} was estimated at "
                   f"{cost.seconds:.3g} s and {cost.memory:.3g} bytes ({cost.detail}), "
                   "past the budget")
        return None, {"n_candidates_note": "not counted: the hypergeometric route gives "
                                           f"the posterior in closed form; {why}"}


def _windows_constant(plan) -> float:
    """The windows' own log-likelihood of every table (constant: nothing inside is
    published; the totals exact)."""
    ew = plan.inputs["windows"]
    lw = ew.interior[1]
    fin = np.isfinite(lw)
    total = float(np.where(fin, lw, -np.inf).max(axis=-1).sum())
    for k, v in ew.lw.items():
        if k != ew.dims:
            total += float(np.asarray(v, float).sum())
    return total + float(ew.shift)


def _prepare(plan):
    """``(R, C, lambda)``, or why the route does not apply (a str)."""
    release = plan.release
    ew = plan.inputs["windows"]
    d0, d1 = release.dims
    for k in ((d0,), (d1,), ()):
        if k not in ew.lo or np.shape(ew.lw[k])[-1] != 1 or \
                not np.all(np.isfinite(ew.lw[k])):
            return "the hypergeometric route needs every total published exactly"
    R = np.asarray(ew.lo[(d0,)], np.int64)
    C = np.asarray(ew.lo[(d1,)], np.int64)
    N = int(np.asarray(ew.lo[()]))
    if int(R.sum()) != N or int(C.sum()) != N:
        return "the published totals do not add up"
    lo, lw = ew.interior
    fin = np.isfinite(lw)
    top = np.where(fin, lw, -np.inf).max(axis=-1, keepdims=True)
    bound = np.minimum.outer(R, C)
    span = np.arange(lw.shape[-1]) <= bound[..., None]
    if np.any(lo != 0) or lw.shape[-1] < int(bound.max()) + 1 or \
            not np.array_equal(fin, span) or not np.all(np.where(fin, lw == top, True)):
        return ("the hypergeometric route needs every cell unpublished and free on 0 .. "
                "its totals (margins only), with a flat likelihood")
    lam = rank_one_rates(plan.prior, release.shape, release.dims, release.coords)
    if lam is None:
        return ("the hypergeometric route needs a Poisson prior without knowledge whose "
                "rates are a_i b_j (a scalar rate, or a rank-one rate table)")
    return R, C, lam


def _sampler(R, C):
    """``draw(n, rng) -> int64 (n, r, c)``: row by row, cell by cell, each cell a
    hypergeometric draw from the column totals left (numpy's exact sampler)."""
    r, c = R.size, C.size

    def draw(n, rng):
        n = int(n)
        out = np.zeros((n, r, c), np.int64)
        left = np.broadcast_to(C, (n, c)).astype(np.int64).copy()
        for i in range(r - 1):
            need = np.full(n, R[i], np.int64)
            for j in range(c - 1):
                rest = left[:, j + 1:].sum(axis=1)
                x = _hyper(rng, left[:, j], rest, need)
                out[:, i, j] = x
                need -= x
                left[:, j] -= x
            out[:, i, c - 1] = need
            left[:, c - 1] -= need
        out[:, r - 1] = left
        return out

    return draw


def _hyper(rng, good, bad, k):
    """Hypergeometric draws (``k`` from ``good`` + ``bad``), 0 where ``k`` is 0."""
    k = np.asarray(k, np.int64)
    out = np.zeros(k.shape, np.int64)
    ok = k > 0
    if ok.any():
        out[ok] = rng.hypergeometric(good[ok], bad[ok], k[ok])
    return out
