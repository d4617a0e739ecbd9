"""The independent-cells route: prior x per-cell likelihood, normalised cell by cell.

For mechanisms whose likelihood is modelled as a product over cells of Pr(published
value | original value) with nothing tying the cells together.  The mechanism gives, per
cell, a window of original values with its log-likelihood (``cell_windows(release) ->
(lo, loglik, approximation)``); the posterior of each cell is prior x likelihood on its
window.  The candidate count is the product of the per-cell support sizes, counted from
where the prior's and the likelihood's log-weights are finite (never from underflowed
probabilities).
"""

from __future__ import annotations

import numpy as np

from ..mechanisms._base import Route
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

    def run(self, release, prior, *, count=True, progress=None, memory):
        lo, logp, ok, approx = self._logp(release, prior)
        mx = logp.max(axis=-1, keepdims=True)
        p = np.exp(logp - mx)
        z = p.sum(axis=-1, keepdims=True)
        n = _product(ok.sum(axis=-1)) if count else None
        return _label.label(release, prior, route=self.name, start=lo, probs=p / z,
                            log_evidence=float((np.log(z[..., 0]) + mx[..., 0]).sum()),
                            n_candidates=n, approximation=approx)

    def count(self, release, prior, *, progress=None, memory):
        return _product(self._logp(release, prior)[2].sum(axis=-1))


def _product(sizes) -> int:
    """Exact product of per-cell support sizes (Python integers)."""
    vals, mult = np.unique(np.ravel(sizes), return_counts=True)
    n = 1
    for v, m in zip(vals.tolist(), mult.tolist()):
        n *= pow(int(v), int(m))
    return n
