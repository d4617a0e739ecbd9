"""Resampling protections of seed 001 (Domingo-Ferrer & Mateo-Sanz 1999).

``Bootstrap(M, S)`` (Heer): n = grand total; draw M multinomial(n, x/n) tables,
average them and round each cell to the nearest integer (halves up); if any cell
with x > 0 leaves its quality interval [l(x), u(x)] (|x^M - x| <= S sqrt(x(1 - x/n)))
the whole draw is regenerated.  Zeros stay zero.  The release publishes the rounded
table and n.

``BinomialPerturbation(S, preserve)`` (seed 001, section 3.1): each cell with
x > 0 is drawn from binomial(n, x/n) truncated to [l(x), u(x)]; the compensation
stage then removes (adds) units one at a time from (to) cells chosen with
probability proportional to their room above l(x) (below u(x)) until the grand
total (each row total, each column total) is restored.  With ``preserve="rows"``
(``"columns"``) each row (column) is its own table: its n is the row (column) total.
The release publishes the table, n and the preserved totals.

Two likelihoods, two routes:

``joint`` (exact, :meth:`log_likelihood`): the law of the whole published table given
the whole original.  Bootstrap: the sum of the M tables is one multinomial(nM, x/n)
table Y, so Pr(release | x) = Pr(Y in the published box) / Pr(Y in the quality region),
both multinomial box probabilities (a cell publishing k has Y in [ceil(M(k - 1/2)),
ceil(M(k + 1/2)) - 1]; the quality region is the box of the published values in
[l(x), u(x)]; cells with x = 0 have Y = 0), computed exactly in log space by
``kernels.multinomial_box``.  Binomial: the truncated binomials and the compensation
stage together, exactly (the units the compensation moves are multivariate
hypergeometric given the first stage; see ``kernels/multinomial_box.py``), a product
over the groups whose totals are preserved.  The candidates are finite whatever the
prior: n (and every preserved total) is published, so every cell lies in 0..n; the
route enumerates them (``riskengine.inference.joint``) when that fits its work limit.

``cells`` (fast approximation, :meth:`log_likelihood_cells`): each cell on its own,
the law of its published value given its original, renormalised to its quality
interval.  Bootstrap: the cell's sum over the M draws is binomial(nM, x/n), its
published value the rounded average.  Binomial: the truncated binomial.  This treats
the cells as independent: it ignores that they share n and the whole-table
regeneration (bootstrap) and leaves out the compensation stage (binomial); its
error against the exact joint posterior is measured in ``studies/resampling``.
``mcmc`` (Monte Carlo, ``riskengine.inference.joint_mcmc``): beyond the joint route's
limit, a Markov chain over the same candidates targeting prior x the same exact joint
likelihood (pairs of cells redrawn from their exact conditional, the likelihood kept as
per-cell factors of laws of sums so a pair costs a fraction of one likelihood), with
arviz diagnostics.

``route="auto"`` takes ``joint`` when it fits, ``mcmc`` when its estimated time is below
``joint_mcmc.MAX_SECONDS``, and ``cells`` otherwise; a ``cells`` posterior says so in
``attrs["approximation"]``.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy import stats
from scipy.special import gammaln, logsumexp

from kernels import multinomial_box as mbox
from kernels._jit import threads_for

from .. import _validate as V
from ..inference.cells import CellWindows, IndependentCells
from ..inference.joint import Group, JointEnumeration, JointModel
from ..inference.joint_mcmc import JointMCMC, SumFactors
from ..release import Release
from ..table import count_table
from ._base import Mechanism, register

__all__ = ["BinomialPerturbation", "Bootstrap"]

PRESERVE = ("total", "rows", "columns")


def _cell_windows(release):
    return release.mechanism.cell_windows(release)


def _joint_model(release, max_values):
    return release.mechanism.joint_model(release, max_values)


def quality_interval(x, n, S):
    """[l(x), u(x)]: integers within S sqrt(x (1 - x/n)) of x (x = 0: [0, 0])."""
    x = np.asarray(x, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(x * (1.0 - x / np.where(n > 0, n, 1.0)), 0.0))
    lo = np.maximum(np.ceil(x - S * sd - 1e-9), 0).astype(np.int64)
    hi = np.floor(x + S * sd + 1e-9).astype(np.int64)
    return lo, hi


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


def _log_binom_central(a, b, N, p):
    """log Pr(a <= T <= b), T ~ binomial(N, p), for an interval around the mean (a quality
    interval): one minus the two tails, each accurate on its own side."""
    tails = stats.binom.cdf(a - 1, N, p) + stats.binom.sf(b, N, p)
    return np.log1p(-np.minimum(tails, 1.0))


def _x_window(k, S):
    """All originals x that can publish k satisfy x - S sqrt(x) <= k <= x + S sqrt(x)."""
    k = np.asarray(k, dtype=float)
    r = np.sqrt(S * S + 4 * k)
    lo = np.floor(np.maximum((r - S) / 2, 0) ** 2) - 1
    hi = np.ceil(((r + S) / 2) ** 2) + 1
    return np.maximum(lo, 0).astype(np.int64), hi.astype(np.int64)


class _Resampling(Mechanism):
    """Shared per-cell likelihood of the resampling mechanisms."""

    additive = True
    routes = (JointEnumeration(_joint_model), JointMCMC(_joint_model),
              IndependentCells(_cell_windows))
    #: what the per-cell route leaves out (``attrs["approximation"]`` of its posteriors)
    _cells_note = ""

    def _cell_loglik(self, k, x, n):          # pragma: no cover - abstract
        raise NotImplementedError

    def _n_for_cells(self, release) -> np.ndarray:
        raise NotImplementedError             # pragma: no cover

    def log_likelihood_cells(self, k, x, n) -> np.ndarray:
        """log Pr(published k | original x), per cell (broadcasting), -inf if impossible."""
        k = np.asarray(k, dtype=np.int64)
        x = np.asarray(x, dtype=np.int64)
        n = np.asarray(n, dtype=np.int64)
        k, x, n = np.broadcast_arrays(k, x, n)
        out = np.full(k.shape, -np.inf)
        zero = x == 0
        out[zero & (k == 0)] = 0.0
        pos = (x > 0) & (x <= n)
        if pos.any():
            lo, hi = quality_interval(x[pos], n[pos], self.S)
            inside = (k[pos] >= lo) & (k[pos] <= hi)
            ll = np.full(inside.shape, -np.inf)
            ll[inside] = self._cell_loglik(k[pos][inside], x[pos][inside], n[pos][inside],
                                           lo[inside], hi[inside])
            out[pos] = ll
        return out

    def cell_windows(self, release):
        """Per distinct (published value, n): the window of originals that can publish it and
        their log-likelihood, and which row each cell uses (the route
        :class:`~riskengine.inference.cells.IndependentCells`)."""
        P = np.asarray(release.published, dtype=np.int64)
        n = np.broadcast_to(self._n_for_cells(release), P.shape)
        keys = np.stack([P.ravel(), n.ravel()], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.ravel()
        ulo, uhi = _x_window(uniq[:, 0], self.S)
        uhi = np.minimum(uhi, uniq[:, 1])
        W = int((uhi - ulo).max()) + 1
        uvals = ulo[:, None] + np.arange(W)
        # the likelihood depends on (k, n) only: computed once per distinct pair
        ull = self.log_likelihood_cells(uniq[:, :1], uvals, uniq[:, 1:])
        ull = np.where(uvals <= uniq[:, 1:], ull, -np.inf)
        return CellWindows(ulo, ull, inv.reshape(P.shape), self._cells_note)

    # --- the exact joint likelihood ------------------------------------------------------
    def _joint_groups(self, release) -> list:
        """``[(flat cell indices, preserved total)]``: cells whose likelihood is one factor."""
        raise NotImplementedError             # pragma: no cover

    def _group_loglik(self, P, n: int, X) -> np.ndarray:
        """log Pr(published ``P`` (K,) | original ``X[i]`` (C, K)) of one group of total n."""
        raise NotImplementedError             # pragma: no cover

    def _group_cost(self, n: int, width: int, K: int) -> float:
        """Inner-loop steps of one :meth:`_group_loglik` (quality intervals <= ``width``)."""
        raise NotImplementedError             # pragma: no cover

    def _group_factors(self, P, n: int, vlo, V: int) -> SumFactors:
        """:meth:`_group_loglik` of one group as per-cell factors of laws of sums, for the
        values ``vlo[c] .. vlo[c] + V - 1`` of each cell (the Monte Carlo route)."""
        raise NotImplementedError             # pragma: no cover

    def log_likelihood(self, release, originals) -> np.ndarray:
        """Exact log Pr(``release`` | original table), for one original or a stack
        ``(..., *table shape)``; -inf where impossible (an original whose totals differ from
        the published ones included).  See the module docstring."""
        self.validate_release(release)
        P = np.asarray(release.published, dtype=np.int64)
        X = np.asarray(originals, dtype=np.int64)
        if X.shape[X.ndim - P.ndim:] != P.shape:
            raise ValueError(f"originals must end with the table shape {P.shape}, got {X.shape}")
        lead = X.shape[:X.ndim - P.ndim]
        X = X.reshape(-1, P.size)
        out = np.zeros(len(X))
        for cells, n in self._joint_groups(release):
            Xg = np.ascontiguousarray(X[:, cells])
            ok = (Xg >= 0).all(axis=1) & (Xg.sum(axis=1) == n)
            ll = np.full(len(X), -np.inf)
            if ok.any():
                ll[ok] = self._group_loglik(P.reshape(-1)[cells], n, Xg[ok])
            out += ll
        return out.reshape(lead)

    def joint_model(self, release, max_values=None):
        """The release as the joint route's groups (:class:`~riskengine.inference.joint.Group`):
        per group, the values each cell can take (x = 0 only where 0 is published; x > 0
        where the published value is in [l(x), u(x)] with the group's n) and the exact
        likelihood.  The support is finite whatever the prior: each group's total is
        published, so its cells lie in 0..n.  With ``max_values``: only the reason
        (``refusal``) when the groups hold more (cell, value) pairs than that."""
        P = np.asarray(release.published, dtype=np.int64).reshape(-1)
        parts = self._joint_groups(release)
        values = sum(len(cells) * (int(n) + 1) for cells, n in parts)
        if max_values is not None and values > max_values:
            return JointModel(refusal=f"{values:.3g} (cell, original value) pairs (cells x "
                              f"(n + 1)), more than the joint enumeration looks at "
                              f"({max_values:.0e})")
        groups = []
        for cells, n in parts:
            n = int(n)
            x = np.arange(n + 1)
            lo, hi = quality_interval(x, max(n, 1), self.S)
            k = P[cells][:, None]
            allowed = np.where(x == 0, k == 0, (lo <= k) & (k <= hi))
            used = allowed.any(axis=0)
            width = int((hi - lo)[used].max()) + 1 if used.any() else 1
            Pg = P[cells].copy()
            groups.append(Group(cells=np.asarray(cells), total=n, allowed=allowed,
                                loglik=lambda X, Pg=Pg, n=n: self._group_loglik(Pg, n, X),
                                cost=self._group_cost(n, width, len(cells)),
                                factors=lambda vlo, V, Pg=Pg, n=n:
                                self._group_factors(Pg, n, vlo, V)))
        return JointModel(tuple(groups))

    def _margins_needed(self, dims) -> tuple:
        """The published totals this mechanism's likelihood uses (and nothing else)."""
        return ((),)

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError(f"a {self.name} release publishes a table of counts")
        if np.isnan(np.asarray(release.published, float)).any():
            raise ValueError(f"a {self.name} release has no suppressed (NaN) cells")
        need = set(self._margins_needed(release.dims))
        missing = sorted(need - set(release.margins))
        if missing:
            raise ValueError(f"a {self.describe()} release must publish the original totals "
                             f"{missing} (the likelihood's n); it has {sorted(release.margins)}")
        extra = sorted(set(release.margins) - need)
        if extra or release.groups:
            raise ValueError(f"a {self.describe()} release publishes only the original totals "
                             f"{sorted(need)}; this one also has "
                             f"{extra or 'subtotals'}, which its inference would not use")


def _quality_bound(S) -> float:
    """The quality bound S: a finite real number > 0 (numpy numbers accepted)."""
    if isinstance(S, bool) or not isinstance(S, numbers.Real):
        raise TypeError(f"S must be a real number, got {type(S).__name__} {S!r}")
    if not (np.isfinite(float(S)) and float(S) > 0):
        raise ValueError(f"S must be a finite number > 0 (the quality bound in standard "
                         f"deviations), got S={S!r}")
    return float(S)


def _round_half_up(a):
    return np.floor(a + 0.5).astype(np.int64)


@register
class Bootstrap(_Resampling):
    """Heer's bootstrap: average of M bootstrap tables, rounded, with quality bound S.

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

    def protect(self, table, rng: np.random.Generator):
        table = count_table(table, self.describe())
        rng = self._rng(rng)
        x = table.values
        n = int(x.sum())
        if n == 0:
            raise ValueError("the bootstrap needs a table with a positive grand total")
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


@register
class BinomialPerturbation(_Resampling):
    """Cell-oriented binomial perturbation with compensation (seed 001, section 3.1).

    ``preserve``: restore the grand total ("total"), every row total ("rows") or
    every column total ("columns") of a 2-D table.
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
