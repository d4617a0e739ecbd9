"""The independent-cells route: prior x per-cell likelihood, normalised cell by cell.

For mechanisms whose likelihood is modelled as a product over cells of Pr(published
value | original value) with nothing tying the cells together.  The mechanism gives, per
cell, a window of original values with its log-likelihood (``cell_windows(release) ->
(lo, loglik, approximation)``); the posterior of each cell is prior x likelihood on its
window.  The candidate count is the product of the per-cell support sizes, counted from
where the prior's and the likelihood's log-weights are finite (never from underflowed
probabilities).  The totals the release does not publish get the distribution of a sum of
independent cells (the same approximation).
"""

from __future__ import annotations

import numpy as np

from ..mechanisms._base import Cost, Route
from ..table import default_margins
from . import _label

__all__ = ["IndependentCells"]


class IndependentCells(Route):
    """Per-cell posteriors from per-cell likelihood windows (see the module docstring)."""

    name = "cells"

    def __init__(self, cell_windows):
        self._cell_windows = cell_windows

    def _logp(self, release, prior):
        lo, ll, approx = self._cell_windows(release)
        vals = lo[..., None] + np.arange(ll.shape[-1])
        with np.errstate(invalid="ignore"):
            logp = ll + prior.log_weights(vals, release.dims, release.coords)
        logp = np.where(np.isnan(logp), -np.inf, logp)
        ok = np.isfinite(logp)
        if not ok.any(axis=-1).all():
            i = tuple(int(x) for x in np.argwhere(~ok.any(axis=-1))[0])
            pub = "" if release.published is None else \
                f" (published {release.published[i]})"
            raise ValueError(f"no original value of cell {i}{pub} is consistent with the "
                             f"release under this prior")
        return lo, logp, ok, approx

    def applies(self, release, prior):
        if release.groups:
            return "the independent-cells route does not use published subtotals"
        return None

    def estimate(self, release, prior, what="posterior"):
        ll = self._cell_windows(release)[1]
        return Cost(float(8 * 4 * ll.size), f"{ll.size} window values of the cells")

    def run(self, release, prior, *, count=True, progress=None, memory):
        lo, logp, ok, approx = self._logp(release, prior)
        mx = logp.max(axis=-1, keepdims=True)
        p = np.exp(logp - mx)
        z = p.sum(axis=-1, keepdims=True)
        probs = p / z
        n = _product(ok.sum(axis=-1)) if count else None
        totals = {keep: _total(lo, probs, release.dims, keep)
                  for keep in default_margins(release.dims) if keep not in release.margins}
        return _label.label(release, prior, route=self.name, start=lo, probs=probs,
                            log_evidence=float((np.log(z[..., 0]) + mx[..., 0]).sum()),
                            n_candidates=n, approximation=approx, totals=totals)

    def count(self, release, prior, *, progress=None, memory):
        return _product(self._logp(release, prior)[2].sum(axis=-1))


def _convolve(parts) -> tuple:
    """Start and pmf of the sum of independent variables ``[(start, pmf), ...]``
    (convolution in a balanced tree)."""
    while len(parts) > 1:
        nxt = [(a0 + b0, np.convolve(a, b)) for (a0, a), (b0, b) in zip(parts[::2], parts[1::2])]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]


def _total(lo, probs, dims, keep) -> tuple:
    """Windows of the totals keeping ``keep``: the cells summed as independent variables."""
    axes = [i for i, d in enumerate(dims) if d not in keep]
    kept = [i for i, d in enumerate(dims) if d in keep]
    order = kept + axes
    lo_t = np.transpose(lo, order)
    pr_t = np.transpose(probs, order + [len(dims)])
    kshape = lo_t.shape[:len(kept)]
    n_in = int(np.prod(lo_t.shape[len(kept):], dtype=np.int64))
    lo_t = lo_t.reshape(kshape + (n_in,))
    pr_t = pr_t.reshape(kshape + (n_in, probs.shape[-1]))
    out = [_convolve([(int(lo_t[idx][c]), pr_t[idx][c]) for c in range(n_in)])
           for idx in np.ndindex(*kshape)]
    W = max(len(pm) for _, pm in out)
    start = np.array([s for s, _ in out], dtype=np.int64).reshape(kshape)
    pm = np.array([np.pad(q, (0, W - len(q))) for _, q in out]).reshape(kshape + (W,))
    return start, pm


def _product(sizes) -> int:
    """Exact product of per-cell support sizes (Python integers)."""
    vals, mult = np.unique(np.ravel(sizes), return_counts=True)
    n = 1
    for v, m in zip(vals.tolist(), mult.tolist()):
        n *= pow(int(v), int(m))
    return n
