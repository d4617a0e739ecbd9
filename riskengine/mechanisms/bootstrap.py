"""Heer's bootstrap, a resampling protection of seed 001 (Domingo-Ferrer & Mateo-Sanz 1999).

``Bootstrap(M, S)`` (Heer): n = grand total; draw M multinomial(n, x/n) tables,
average them and round each cell to the nearest integer (halves up); if any cell
with x > 0 leaves its quality interval [l(x), u(x)] (|x^M - x| <= S sqrt(x(1 - x/n)))
the whole draw is regenerated.  Zeros stay zero.  The release publishes the rounded
table and n.

The exact likelihood (route ``joint``): the sum of the M tables is one multinomial(nM,
x/n) table Y, so Pr(release | x) = Pr(Y in the published box) / Pr(Y in the quality
region), both multinomial box probabilities (a cell publishing k has Y in
[ceil(M(k - 1/2)), ceil(M(k + 1/2)) - 1]; the quality region is the box of the published
values in [l(x), u(x)]; cells with x = 0 have Y = 0), computed exactly in log space by
``kernels.multinomial_box``.  Per cell (route ``cells``): the cell's sum over the M draws
is binomial(nM, x/n), its published value the rounded average.  The routes and what the
two resampling mechanisms share: ``_resampling.py``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import gammaln

from kernels import multinomial_box as mbox
from kernels._jit import threads_for

from .. import _budget
from .. import _validate as V
from ..inference.joint_mcmc import SumFactors
from ..protocol import Example, register
from ..release import Release
from ..table import count_table
from ._examples import counts_3x3
from ._resampling import _log_binom_central, _quality_bound, _Resampling, quality_interval

__all__ = ["Bootstrap"]


def _log_binom_window(a, b, N, p, width: int):
    """log Pr(a <= T <= b), T ~ binomial(N, p), for windows of at most ``width`` values: a
    log-sum-exp of the log pmf (exact far in the tails, where the probability underflows)."""
    j = np.arange(width)
    t = a[..., None] + j
    lp = np.where(t <= b[..., None], stats.binom.logpmf(t, N[..., None], p[..., None]), -np.inf)
    mx = lp.max(axis=-1)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(mx), safe + np.log(np.exp(lp - safe[..., None]).sum(-1)),
                        -np.inf)



def _round_half_up(a):
    return np.floor(a + 0.5).astype(np.int64)


@register
class Bootstrap(_Resampling):
    """Heer's bootstrap: average of M bootstrap tables, rounded, with quality bound S.

    Parameters
    ----------
    M : int >= 1
        Number of multinomial(n, x/n) tables drawn and averaged.
    S : float > 0
        The quality bound, in standard deviations: every cell x > 0 must be published
        within its quality interval, |published - x| <= S sqrt(x (1 - x/n)), else the
        whole draw is regenerated.
    max_regenerations : int >= 1, default 100000
        Most draws :meth:`protect` tries before it raises ``RuntimeError`` (not a public
        parameter of the release: :meth:`to_dict` leaves it out).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[5, 0, 12], [30, 2, 51]]))
    >>> rel = rk.Bootstrap(M=3, S=2.0).protect(t, np.random.default_rng(0))
    >>> int(rel.published[0, 1])   # zeros stay zero
    0
    """

    name = "bootstrap"
    additive = False   # the rounded average need not add up to n

    def __init__(self, M: int, S: float, max_regenerations: int = 100_000):
        self.M = V.integer(M, "M", 1)
        self.S = _quality_bound(S)
        self.max_regenerations = V.integer(max_regenerations, "max_regenerations", 1)

    def _params(self) -> dict:
        return {"M": self.M, "S": self.S}

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts, M = 3 bootstrap tables at S = 2;
        ``rng``: M = 2, S = 3.

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Not drawn from: any generator gives M = 2, S = 3; None: M = 3, S = 2.

        Returns
        -------
        Example
        """
        table = counts_3x3() if table is None else table
        return Example(cls, table, {"M": 3, "S": 2.0} if rng is None else {"M": 2, "S": 3.0})

    def protect(self, table, rng: np.random.Generator):
        table = count_table(table, self.describe())
        rng = self._rng(rng)
        x = table.values
        n = int(x.sum())
        if n == 0:
            raise ValueError("the bootstrap needs a table with a positive grand total")
        # the M bootstrap tables are drawn at once: refuse an M they cannot fit in
        _budget.check_fits(f"Bootstrap M={_budget.fmt_number(self.M)}", 16.0 * self.M * x.size,
                           f"{self.M} bootstrap tables of {x.size} cells drawn at once, 16 "
                           "bytes a cell", _budget.budget())
        lo, hi = quality_interval(x, n, self.S)
        pos = x > 0
        p = (x / n).ravel()
        for attempt in range(self.max_regenerations):
            draws = rng.multinomial(n, p, size=self.M).reshape((self.M,) + x.shape)
            xm = _round_half_up(draws.mean(axis=0))
            if np.all((xm[pos] >= lo[pos]) & (xm[pos] <= hi[pos])):
                break
        else:
            raise RuntimeError(f"no bootstrap draw met the quality condition in "
                               f"{self.max_regenerations} attempts (S={self.S} is too tight)")
        rel = Release(published=xm, margins={(): n}, mechanism=self, dims=table.dims,
                      coords=table.coords, kind="count")
        rel.info["regenerations"] = attempt
        return rel

    _cells_note = ("per-cell likelihoods, cells treated as independent: ignores that the cells "
                   "share n and the whole-table regeneration (route 'joint' is exact; "
                   "studies/resampling measures the error)")

    def _joint_groups(self, release):
        return [(np.arange(int(np.prod(release.shape, dtype=np.int64))),
                 int(self._n_for_cells(release)))]

    def _group_loglik(self, P, n, X):
        """Pr(Y in the published box) / Pr(Y in the quality region), Y ~ multinomial(nM, x/n)
        (the sum of the M bootstrap tables)."""
        M = self.M
        pos = X > 0
        lo, hi = quality_interval(X, max(n, 1), self.S)
        with np.errstate(divide="ignore"):
            logp = np.where(pos, np.log(np.maximum(X, 1)) - np.log(max(n, 1)), -np.inf)

        def first(k):   # smallest Y with round_half_up(Y / M) >= k: ceil(M (k - 1/2))
            return (M * (2 * k - 1) + 1) // 2

        Pb = np.broadcast_to(P, X.shape)
        qa = np.where(pos, first(lo), 0)
        qb = np.where(pos, first(hi + 1) - 1, 0)
        na = np.where(pos, np.maximum(first(Pb), qa), 0)
        nb = np.where(pos, np.minimum(first(Pb + 1) - 1, qb), 0)
        bad = ((~pos & (Pb != 0)) | (pos & ((Pb < lo) | (Pb > hi)))).any(axis=1)
        out = np.full(len(X), -np.inf)
        if (~bad).any():
            N = n * M
            ok = ~bad
            with threads_for(float(ok.sum()) * self._group_cost(n, int((hi - lo).max()) + 1,
                                                                X.shape[1])):
                num = mbox.log_boxes(N, logp[ok], na[ok], nb[ok])
                den = mbox.log_boxes(N, logp[ok], qa[ok], qb[ok])
            out[ok] = num - den
        return out

    def _group_cost(self, n, width, K):
        Mw = self.M * (width + 1)                # a cell's Y range in the quality region
        return float(K * min(n * self.M + 1, K * Mw) * (Mw + self.M))

    def _group_factors(self, P, n, vlo, V):
        """Law 0: the published box, law 1: the quality region, both of Y ~ multinomial(nM,
        x/n) read at N = nM (as :meth:`_group_loglik`), without the common factor N! / N^N:
        cells y log(N x/n) - log y! = y log(M x) - log y! on their box (x = 0: y = 0), the
        Poisson(M x) shape, so that the laws of partial sums peak where the readout is."""
        M, N = self.M, n * self.M
        v = np.asarray(vlo, np.int64)[:, None] + np.arange(V)
        pos = v > 0
        lo, hi = quality_interval(np.minimum(v, n), max(n, 1), self.S)

        def first(k):
            return (M * (2 * k - 1) + 1) // 2

        Pc = np.asarray(P, np.int64)[:, None]
        qa = np.where(pos, first(lo), 0)
        qb = np.where(pos, first(hi + 1) - 1, 0)
        a = np.stack([np.where(pos, np.maximum(first(Pc), qa), 0), qa]).clip(0, N)
        b = np.stack([np.where(pos, np.minimum(first(Pc + 1) - 1, qb), 0), qb]).clip(None, N)
        wlen = np.maximum(b - a + 1, 0)
        ok = (v <= n) & (wlen > 0).all(axis=0) & ~(~pos & (Pc != 0)) & \
            ~(pos & ((Pc < lo) | (Pc > hi)))
        wlen = np.where(ok, wlen, 0)
        W = max(int(wlen.max()), 1)
        y = a[..., None] + np.arange(W)
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = np.log(M * np.maximum(v, 1.0))
            ylp = np.where(pos[..., None], y * logp[..., None], 0.0)
        wlog = np.where(np.arange(W) < wlen[..., None], ylp - gammaln(y + 1.0), -np.inf)
        zero = np.zeros(v.shape, np.int64)
        return SumFactors(off=a, wlen=wlen, wlog=wlog, ok=ok, lo_t=zero, hi_t=zero, mode=0,
                          N=N, n=n, cap=(N, N), rlo=(N, N), rhi=(N, N))

    def _n_for_cells(self, release):
        if () not in release.margins:
            raise ValueError("a bootstrap release must publish the original grand total n "
                             "(margins={(): n})")
        return np.int64(release.margins[()])

    def _cell_loglik(self, k, x, n, lo, hi):
        M = self.M
        p = x / n
        N = n * M

        def first(kk):   # smallest T with round(T / M) >= kk: T >= ceil(M (kk - 0.5))
            return np.ceil(M * (kk - 0.5)).astype(np.int64)

        # Pr(round(T / M) = k): at most M + 1 values of T, summed in log space (the
        # published value can lie far in a tail: never a difference of two CDFs near 1)
        num = _log_binom_window(first(k), first(k + 1) - 1, N, p, M + 1)
        return num - _log_binom_central(first(lo), first(hi + 1) - 1, N, p)
