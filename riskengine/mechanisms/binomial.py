"""Cell-oriented binomial perturbation, a resampling protection of seed 001
(Domingo-Ferrer & Mateo-Sanz 1999, section 3.1).

``BinomialPerturbation(S, preserve)`` (seed 001, section 3.1): each cell with
x > 0 is drawn from binomial(n, x/n) truncated to [l(x), u(x)]; the compensation
stage then removes (adds) units one at a time from (to) cells chosen with
probability proportional to their room above l(x) (below u(x)) until the grand
total (each row total, each column total) is restored.  With ``preserve="rows"``
(``"columns"``) each row (column) is its own table: its n is the row (column) total.
The release publishes the table, n and the preserved totals.

The exact likelihood (route ``joint``): the truncated binomials and the compensation
stage together, exactly (the units the compensation moves are multivariate
hypergeometric given the first stage; see ``kernels/multinomial_box.py``), a product
over the groups whose totals are preserved.  Per cell (route ``cells``): the truncated
binomial.  The routes and what the two resampling mechanisms share: ``_resampling.py``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import gammaln, logsumexp

from kernels import multinomial_box as mbox
from kernels._jit import threads_for

from .. import _validate as V
from ..inference.joint_mcmc import SumFactors
from ..protocol import Example, register
from ..release import Release
from ..table import count_table
from ._examples import counts_3x3
from ._resampling import _log_binom_central, _quality_bound, _Resampling, quality_interval

__all__ = ["BinomialPerturbation"]

PRESERVE = ("total", "rows", "columns")


@register
class BinomialPerturbation(_Resampling):
    """Cell-oriented binomial perturbation with compensation (seed 001, section 3.1).

    ``preserve``: restore the grand total ("total"), every row total ("rows") or
    every column total ("columns") of a 2-D table.

    Parameters
    ----------
    S : float > 0
        The quality bound, in standard deviations: a cell x > 0 is published within its
        quality interval, |published - x| <= S sqrt(x (1 - x/n)).
    preserve : {"total", "rows", "columns"}, default "total"
        The totals restored by the compensation stage (and published).
    """

    name = "binomial"

    def __init__(self, S: float, preserve: str = "total"):
        self.S = _quality_bound(S)
        self.preserve = V.choice(preserve, "preserve", PRESERVE)

    def _params(self) -> dict:
        return {"S": self.S, "preserve": self.preserve}

    def _groups(self, shape):
        """Index groups whose totals are preserved (each treated as its own table)."""
        if self.preserve == "total":
            return [np.ones(shape, bool)]
        if len(shape) != 2:
            raise ValueError(f"preserve={self.preserve!r} needs a 2-D table, got shape {shape}")
        axis = 0 if self.preserve == "rows" else 1
        out = []
        for i in range(shape[axis]):
            m = np.zeros(shape, bool)
            if axis == 0:
                m[i] = True
            else:
                m[:, i] = True
            out.append(m)
        return out

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts at S = 2; ``rng``: S = 3 and a random
        preserved total (the grand total, the row totals or the column totals).

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Draw the preserved total with it (S = 3); None: S = 2, the grand total.

        Returns
        -------
        Example
        """
        table = counts_3x3() if table is None else table
        params = {"S": 2.0} if rng is None else {
            "S": 3.0, "preserve": str(rng.choice(["total", "rows", "columns"]))}
        return Example(cls, table, params)

    def protect(self, table, rng: np.random.Generator):
        table = count_table(table, self.describe())
        rng = self._rng(rng)
        x = table.values
        out = np.zeros_like(x)
        for g in self._groups(x.shape):
            out[g] = _perturb_group(x[g], self.S, rng)
        d = table.dims
        margins = {(): int(x.sum())}
        if self.preserve == "rows":
            margins[(d[0],)] = x.sum(axis=1)
        elif self.preserve == "columns":
            margins[(d[1],)] = x.sum(axis=0)
        return Release(published=out, margins=margins, mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def _margins_needed(self, dims) -> tuple:
        if self.preserve == "total":
            return ((),)
        if len(dims) != 2:
            raise ValueError(f"preserve={self.preserve!r} needs a 2-D table, got dims {dims}")
        return ((), (dims[0],)) if self.preserve == "rows" else ((), (dims[1],))

    def _n_for_cells(self, release):
        d = release.dims
        if self.preserve == "total":
            return np.int64(release.margins[()])
        if self.preserve == "rows":
            return np.asarray(release.margins[(d[0],)], dtype=np.int64)[:, None]
        return np.asarray(release.margins[(d[1],)], dtype=np.int64)[None, :]

    def _cell_loglik(self, k, x, n, lo, hi):
        p = x / n
        return stats.binom.logpmf(k, n, p) - _log_binom_central(lo, hi, n, p)

    _cells_note = ("per-cell likelihoods, cells treated as independent truncated binomials: "
                   "leaves out the compensation stage (route 'joint' is exact; "
                   "studies/resampling measures the error)")

    def _joint_groups(self, release):
        idx = np.arange(int(np.prod(release.shape, dtype=np.int64))).reshape(release.shape)
        d = release.dims
        if self.preserve == "total":
            return [(idx.reshape(-1), int(release.margins[()]))]
        if self.preserve == "rows":
            tot = np.asarray(release.margins[(d[0],)], dtype=np.int64)
            return [(idx[i], int(tot[i])) for i in range(idx.shape[0])]
        tot = np.asarray(release.margins[(d[1],)], dtype=np.int64)
        return [(idx[:, j], int(tot[j])) for j in range(idx.shape[1])]

    def _group_loglik(self, P, n, X):
        """Truncated binomials, then the compensation stage (exact: see
        ``kernels/multinomial_box.py``)."""
        lo, hi = quality_interval(X, max(n, 1), self.S)
        P = np.ascontiguousarray(P, dtype=np.int64)
        with threads_for(float(len(X)) * self._group_cost(n, int((hi - lo).max()) + 1,
                                                          X.shape[1])):
            return mbox.compensated_logliks(int(n), X, P, lo, hi)

    def _group_cost(self, n, width, K):
        return float(K * K * width * width / 2 + 2 * K * width)

    def _group_factors(self, P, n, vlo, V):
        """Law 0: the first-stage tables with units removed (x' in [z, u], weight tb(x')
        C(x' - l, x' - z)), read at S' >= n; law 1: units added (x' in [l, z], weight tb(x')
        C(u - x', z - x')), read at S' < n (``kernels/multinomial_box.py``); each tilted
        to peak at x' = z."""
        v = np.asarray(vlo, np.int64)[:, None] + np.arange(V)
        z = np.asarray(P, np.int64)[:, None]
        pos = v > 0
        vv = np.minimum(v, n)
        lo, hi = quality_interval(vv, max(n, 1), self.S)
        lo, hi = np.where(pos, lo, 0), np.where(pos, hi, 0)
        ok = (v <= n) & np.where(pos, (lo <= z) & (z <= hi), z == 0)
        Wq = max(int((hi - lo)[ok].max()) + 1, 1) if ok.any() else 1
        t = lo[..., None] + np.arange(Wq)                       # first-stage values
        inq = (np.arange(Wq) <= (hi - lo)[..., None]) & ok[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            p = (np.maximum(vv, 1) / max(n, 1))[..., None]
            tb = np.where(inq, stats.binom.logpmf(t, n, p), -np.inf)
            tb = np.where(pos[..., None], tb, np.where(np.arange(Wq) == 0, 0.0, -np.inf))
            tb = tb - logsumexp(tb, axis=-1, keepdims=True)
        tb = np.where(inq, tb, -np.inf)
        zc = np.broadcast_to(z, v.shape)
        # law 0: x' = z + i, i = 0 .. u - z; law 1: x' = l + i, i = 0 .. z - l
        len0 = np.where(ok, hi - zc + 1, 0)
        len1 = np.where(ok, zc - lo + 1, 0)
        W = max(int(max(len0.max(), len1.max())), 1)
        i = np.arange(W)
        x0 = zc[..., None] + i
        x1 = lo[..., None] + i
        tb0 = np.take_along_axis(tb, np.clip(x0 - lo[..., None], 0, Wq - 1), axis=-1)
        tb1 = np.take_along_axis(tb, np.clip(x1 - lo[..., None], 0, Wq - 1), axis=-1)
        w0 = tb0 + _log_choose(x0 - lo[..., None], x0 - zc[..., None])
        w1 = tb1 + _log_choose(hi[..., None] - x1, zc[..., None] - x1)
        w0 = np.where(i < len0[..., None], w0, -np.inf)
        w1 = np.where(i < len1[..., None], w1, -np.inf)
        # tilts exp(tilt x S'): the readout weighs law 0 at S' = n + k by 1 / C(S' - L, k)
        # and law 1 at S' = n - 1 - k by 1 / C(U - S', k + 1); the steepest tilts that keep
        # exp(-tilt (S' - S_ref)) / C(...) <= 1 over the sums the laws reach (L, U of the
        # original equal to the published table) bring the laws' peaks to the sums read
        zr = np.asarray(P, np.int64)
        lz, hz = quality_interval(zr, max(n, 1), self.S)
        Lr = int(np.where(zr > 0, lz, 0).sum())
        Ur = int(np.where(zr > 0, hz, 0).sum())
        top = int(np.where(ok, hi, 0).max(axis=1).sum())
        bot = int(np.where(ok, lo, n).min(axis=1).sum())
        k = np.arange(1, max(top - n, 0) + 1)
        ta = -float((_log_choose(n + k - Lr, k) / k).min()) if k.size else 0.0
        k = np.arange(1, max(n - 1 - bot, 0) + 1)
        tb_ = float((_log_choose(Ur - (n - 1 - k), k + 1) / k).min()) if k.size else 0.0
        tilt = (ta if np.isfinite(ta) else 0.0, tb_ if np.isfinite(tb_) else 0.0)
        wlog = np.stack([w0 + tilt[0] * x0, w1 + tilt[1] * x1])
        off = np.stack([np.where(ok, zc, 0), np.where(ok, lo, 0)])
        return SumFactors(off=off, wlen=np.stack([len0, len1]), wlog=wlog, ok=ok,
                          lo_t=np.where(ok, lo, 0), hi_t=np.where(ok, hi, 0), mode=1, N=0,
                          n=n, cap=(-1, n - 1), rlo=(n, 0), rhi=(1 << 62, n - 1), tilt=tilt)


def _log_choose(a, b):
    """log C(a, b) elementwise (-inf outside 0 <= b <= a)."""
    good = (b >= 0) & (b <= a)
    a, b = np.where(good, a, 0), np.where(good, b, 0)
    return np.where(good, gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0), -np.inf)


def _perturb_group(x: np.ndarray, S: float, rng: np.random.Generator) -> np.ndarray:
    """Truncated binomial draws for one group of cells, then the compensation stage.

    The compensation stage picks one unit at a time, each cell with probability
    proportional to its remaining room (x' - l(x) to remove, u(x) - x' to add), and
    decrements that room: the numbers of units taken from the cells are therefore
    multivariate hypergeometric(room, |n' - n|), which is how they are drawn here.
    """
    n = int(x.sum())
    out = np.zeros_like(x)
    if n == 0:
        return out
    lo, hi = quality_interval(x, n, S)
    hi = np.minimum(hi, n)          # the cells sum to n: no cell goes above it (a huge S)
    pos = x > 0
    p = x[pos] / n
    a = stats.binom.cdf(lo[pos] - 1, n, p)          # inverse-cdf draw, truncated binomial
    b = stats.binom.cdf(hi[pos], n, p)
    u = a + (b - a) * rng.random(int(pos.sum()))
    v = stats.binom.ppf(u, n, p).astype(np.int64)
    out[pos] = np.clip(v, lo[pos], hi[pos])
    diff = int(out.sum()) - n
    if diff == 0:
        return out
    room = np.where(pos, out - lo if diff > 0 else hi - out, 0).astype(np.int64)
    if room.sum() < abs(diff):
        raise RuntimeError("compensation stage cannot restore the total within the "
                           "quality intervals")
    take = rng.multivariate_hypergeometric(room, abs(diff))
    return out - take if diff > 0 else out + take
