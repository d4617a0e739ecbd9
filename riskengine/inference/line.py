"""The line route: exact posteriors of 1-D tables with or without their grand total, and
of tables of any shape that publish no total, over entry windows.

With a total the cells are independent given their windows and tied only by the total's
factor: a chain over the running sum (forward-backward in log space) gives every
marginal, the total's posterior, exact draws and the exact count.  Without one the cells
are independent (the totals' posteriors are the sums', computed when asked for).  Used by
every mechanism whose windows may come without totals (random rounding, noisy counts,
the cell key method).
"""

from __future__ import annotations

import numpy as np

from ..protocol import Cost, Route, RouteResult
from ..table import default_margins

__all__ = ["Line", "count_chain"]


def _logsumexp(a, axis):
    """log sum exp along ``axis``, -inf where every term is -inf (no warning)."""
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.log(np.exp(a - m).sum(axis=axis)) + np.squeeze(m, axis=axis)


def _gather(arr, idx):
    """``arr[idx]`` with -inf where ``idx`` is outside ``arr``."""
    ok = (idx >= 0) & (idx < arr.size)
    return np.where(ok, arr[np.where(ok, idx, 0)], -np.inf)


class _Chain:
    """Exact marginals of independent cells (log-weight windows ``lo``, ``lw``) tied by
    one factor on their sum (``tlo``, ``tlw``; ``None``: no factor), in log space.

    ``F[i]`` (first sum ``Fo[i]``) holds the log-weight of every sum of cells ``0..i-1``,
    ``H[i]`` (first sum ``Ho[i]``) the log-weight of the cells ``i..n-1`` and the factor
    given the sum of the cells before ``i``; cell ``i``'s marginal at ``x`` is
    ``lw_i(x) + logsumexp_u F[i](u) + H[i+1](u + x)``.  Every sum is capped at the
    factor's last value (cells are nonnegative: a larger partial sum has no weight)."""

    def __init__(self, lo, lw, tlo=None, tlw=None):
        self.lo = np.asarray(lo, dtype=np.int64).ravel()
        self.lw = np.asarray(lw, dtype=float).reshape(self.lo.size, -1)
        n, W = self.lw.shape
        j = np.arange(W)
        cap = None if tlo is None else int(tlo) + len(tlw) - 1
        F, Fo = [np.zeros(1)], [0]
        for i in range(n):
            L = F[-1].size + W - 1
            if cap is not None:
                L = max(min(L, cap - Fo[-1] - int(self.lo[i]) + 1), 1)
            u = np.arange(L)
            F.append(_logsumexp(_gather(F[-1], u[:, None] - j[None, :]) + self.lw[i][None, :],
                                axis=1))
            Fo.append(Fo[-1] + int(self.lo[i]))
        if tlo is None:       # no factor: every sum of the cells weighs 1
            tlo, tlw = Fo[-1], np.zeros(F[-1].size)
        self.tlo, self.tlw = int(tlo), np.asarray(tlw, dtype=float)
        H, Ho = [None] * (n + 1), [0] * (n + 1)
        H[n], Ho[n] = self.tlw, self.tlo
        for i in range(n - 1, -1, -1):
            # the sums before cell i that matter: those the forward pass reaches
            u = Fo[i] + np.arange(F[i].size)
            idx = (u[:, None] + self.lo[i] + j[None, :]) - Ho[i + 1]
            H[i] = _logsumexp(_gather(H[i + 1], idx) + self.lw[i][None, :], axis=1)
            Ho[i] = Fo[i]
        self.F, self.Fo, self.H, self.Ho = F, Fo, H, Ho
        total = F[n] + _gather(self.tlw, Fo[n] + np.arange(F[n].size) - self.tlo)
        self.log_z = float(_logsumexp(total, axis=0))
        self.total_lo = Fo[n]
        if not np.isfinite(self.log_z):       # no table has weight: the caller refuses
            self.total = np.zeros(total.shape)
            return
        with np.errstate(under="ignore"):
            self.total = np.exp(total - self.log_z)

    def marginals(self) -> np.ndarray:
        """Per cell, the posterior probabilities of ``lo .. lo + W - 1``."""
        n, W = self.lw.shape
        out = np.empty((n, W))
        j = np.arange(W)
        for i in range(n):
            u = self.Fo[i] + np.arange(self.F[i].size)
            idx = (u[:, None] + self.lo[i] + j[None, :]) - self.Ho[i + 1]
            lm = self.lw[i] + _logsumexp(self.F[i][:, None] + _gather(self.H[i + 1], idx),
                                         axis=0)
            with np.errstate(under="ignore"):
                out[i] = np.exp(lm - self.log_z)
        return out

    def sample(self, k: int, rng: np.random.Generator) -> np.ndarray:
        """``k`` exact draws (k, n): the sum first, then the cells from the last one back."""
        n, W = self.lw.shape
        out = np.empty((k, n), dtype=np.int64)
        cdf = np.cumsum(self.total)
        s = self.total_lo + np.minimum(np.searchsorted(cdf, rng.random(k) * cdf[-1],
                                                       side="right"), cdf.size - 1)
        for i in range(n - 1, -1, -1):
            x = self.lo[i] + np.arange(W)
            lp = self.lw[i][None, :] + _gather(self.F[i], (s[:, None] - x[None, :]) - self.Fo[i])
            p = np.exp(lp - lp.max(axis=1, keepdims=True))
            c = np.cumsum(p, axis=1)
            pick = (c < rng.random((k, 1)) * c[:, -1:]).sum(axis=1)
            out[:, i] = x[np.minimum(pick, W - 1)]
            s = s - out[:, i]
        return out


def count_chain(lo, lw, tlo=None, tlw=None) -> int:
    """Exact number of cell vectors with positive weight (and a sum of positive weight):
    convolutions of Python integers."""
    lo = np.asarray(lo, dtype=np.int64).ravel()
    fin = np.isfinite(np.asarray(lw, dtype=float).reshape(lo.size, -1))
    c, off = np.array([1], dtype=object), 0
    for i in range(lo.size):
        c = np.convolve(c, fin[i].astype(np.int64).astype(object))
        off += int(lo[i])
    if tlo is None:
        return int(sum(c))
    s = off + np.arange(c.size)
    ok = np.isfinite(_gather(np.asarray(tlw, dtype=float), s - int(tlo)))
    return int(sum(c[ok]))


def _independent(lo, lw):
    """Marginals, log evidence, exact count and a sampler of independent cells (log-weight
    windows ``lo`` (shape), ``lw`` (shape + W))."""
    fin = np.isfinite(lw)
    logz = _logsumexp(lw, axis=-1)
    with np.errstate(under="ignore"):
        probs = np.exp(lw - logz[..., None])
    n = 1
    for v, m in zip(*np.unique(fin.sum(axis=-1), return_counts=True)):
        n *= pow(int(v), int(m))

    def draw(k, rng):
        cdf = np.cumsum(probs, axis=-1)
        u = rng.random((k,) + lo.shape + (1,)) * cdf[..., -1:]
        return lo + np.minimum((cdf[None] < u).sum(axis=-1), lw.shape[-1] - 1)

    return probs, float(logz.sum()), n, draw


def _sum_of(lo, probs, dims, keep):
    """Windows of the totals keeping ``keep`` when the cells are independent: the pmf of
    each sum (a chain without a factor)."""
    axes = [i for i, d in enumerate(dims) if d not in keep]
    kept = [i for i, d in enumerate(dims) if d in keep]
    lo_t = np.transpose(lo, kept + axes)
    with np.errstate(divide="ignore"):
        lw_t = np.log(np.transpose(probs, kept + axes + [len(dims)]))
    kshape = lo_t.shape[:len(kept)]
    out = []
    for idx in np.ndindex(*kshape):
        ch = _Chain(lo_t[idx].ravel(), lw_t[idx].reshape(-1, probs.shape[-1]))
        out.append((ch.total_lo, ch.total))
    W = max(p.size for _, p in out)
    start = np.array([s for s, _ in out], dtype=np.int64).reshape(kshape)
    pm = np.array([np.pad(p, (0, W - p.size)) for _, p in out]).reshape(kshape + (W,))
    return start, pm


class Line(Route):
    """Exact route for 1-D tables with or without their grand total, and for tables of any
    shape that publish no total.  With a total, the cells are independent given their
    windows and tied only by the total's factor: a chain over the running sum gives every
    marginal (forward-backward in log space), the total's posterior, exact draws and the
    exact count.  Without one, the cells are independent (the totals' posteriors are the
    sums', computed when asked for).

    Reads the mechanism's entry windows (``plan.inputs["windows"]``, without the prior).
    """

    name = "line"
    needs = "entry windows; a 1-D count table (with or without its total) or no totals"

    def applies(self, plan):
        release = plan.release
        if release.kind != "count":
            return ("the exact routes walk integer tables and need a count release; this "
                    "release holds magnitudes")
        if release.groups:
            return "the line route does not use published subtotals"
        if len(release.dims) != 1 and release.margins:
            return (f"the line route covers 1-D tables and tables without published totals; "
                    f"this release has dims {release.dims} and totals {list(release.margins)}")
        return None

    @staticmethod
    def _parts(plan):
        ew = plan.inputs["windows"].with_prior(plan.prior, plan.release.coords).trimmed()
        if ew is None:
            return None
        lo, lw = ew.interior
        t = (ew.lo[()], ew.lw[()]) if () in ew.lo else (None, None)
        return ew, lo, lw, t

    def estimate(self, plan, what="posterior"):
        release = plan.release
        ew = plan.inputs["windows"]
        lo, lw = ew.interior
        n, W = lo.size, lw.shape[-1]
        if not release.margins:
            return Cost(float(8 * 4 * n * W), f"{n} cells x {W} window values")
        S = n * W
        return Cost(float(8 * (2 * n * S + 3 * S * W)),
                    f"{n} cells x {S} running sums x {W} window values")

    def run(self, plan, *, count=True):
        release = plan.release
        parts = self._parts(plan)
        nothing = ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        if parts is None:
            raise nothing
        ew, lo, lw, (tlo, tlw) = parts
        if tlo is None:                       # no total: independent cells
            probs, log_z, n, draw = _independent(lo, lw)
            totals = {keep: (lambda keep=keep: _sum_of(lo, probs, release.dims, keep))
                      for keep in default_margins(release.dims)}
            return RouteResult(start=lo, probs=probs,
                                log_evidence=log_z + ew.shift,
                                n_candidates=n if count else None, totals=lambda: totals,
                                approximation=ew.approximation, sampler=draw)
        ch = _Chain(lo, lw, tlo, tlw)
        if not np.isfinite(ch.log_z):
            raise nothing
        n = count_chain(lo, lw, tlo, tlw) if count else None
        return RouteResult(start=lo,
                            probs=ch.marginals().reshape(lw.shape),
                            log_evidence=ch.log_z + ew.shift, n_candidates=n,
                            totals={(): (np.array(ch.total_lo), ch.total)},
                            approximation=ew.approximation,
                            sampler=lambda k, rng: ch.sample(k, rng).reshape((k,) + lo.shape))

    def count(self, plan):
        parts = self._parts(plan)
        if parts is None:
            return 0
        _, lo, lw, (tlo, tlw) = parts
        if tlo is None:
            return _independent(lo, lw)[2]
        return count_chain(lo, lw, tlo, tlw)
