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

from dataclasses import dataclass

import numpy as np

from ..protocol import Cost, Route, RouteResult
from ..table import default_margins

__all__ = ["IndependentCells"]


@dataclass(frozen=True)
class CellWindows:
    """Per-cell likelihood windows, stored once per distinct row: cell ``c`` uses row
    ``row[c]`` (window start ``lo[row]``, log-likelihoods ``loglik[row]``)."""

    lo: np.ndarray          #: (U,) first value of each distinct window
    loglik: np.ndarray      #: (U, W) log-likelihood, -inf = impossible
    row: np.ndarray         #: (table shape) the row of each cell
    approximation: str = ""


class IndependentCells(Route):
    """Per-cell posteriors from per-cell likelihood windows (see the module docstring).

    Reads the mechanism's per-cell windows (``plan.inputs["cells"]``, a
    :class:`CellWindows`).  A prior that is the same for every cell is evaluated once per
    distinct window (a 1000 x 1000 table has a few hundred)."""

    name = "cells"
    needs = "per-cell likelihood windows (cells independent)"
    reads = "cells"

    @staticmethod
    def _logp(plan):
        """``(lo, logp, rows)``: log posterior weights per distinct row (cell-invariant prior)
        or per cell (``rows`` None), every cell with at least one possible value."""
        release, prior = plan.release, plan.prior
        cw = plan.inputs["cells"]
        W = cw.loglik.shape[-1]
        if prior.cell_invariant:
            lo, ll, rows = cw.lo, cw.loglik, cw.row
            vals = lo[:, None] + np.arange(W)
            lw = prior.log_weights(vals)
        else:
            lo, ll, rows = cw.lo[cw.row], cw.loglik[cw.row], None
            vals = lo[..., None] + np.arange(W)
            lw = prior.log_weights(vals, release.dims, release.coords)
        with np.errstate(invalid="ignore"):
            logp = ll + lw
        logp = np.where(np.isnan(logp), -np.inf, logp)
        bad = ~np.isfinite(logp).any(axis=-1)
        if bad.any():
            first = np.argwhere(bad)[0]
            cell = (tuple(int(x) for x in np.argwhere(rows == int(first[0]))[0])
                    if rows is not None else tuple(int(x) for x in first))
            pub = "" if release.published is None else f" (published {release.published[cell]})"
            raise ValueError(f"no original value of cell {cell}{pub} is consistent with the "
                             f"release under this prior")
        return lo, logp, rows, cw.approximation

    def applies(self, plan):
        if plan.release.groups:
            return "the independent-cells route does not use published subtotals"
        return None

    def estimate(self, plan, what="posterior"):
        cw = plan.inputs["cells"]
        n = cw.row.size * cw.loglik.shape[-1]
        return Cost(float(8 * 4 * n), f"{n} window values of the cells",
                    seconds=1e-3 + n / 2e7)   # a prior and a normalisation per value

    def run(self, plan, *, count=True):
        release = plan.release
        lo, logp, rows, approx = self._logp(plan)
        mx = logp.max(axis=-1, keepdims=True)
        p = np.exp(logp - mx)
        z = p.sum(axis=-1, keepdims=True)
        probs = p / z
        logz = np.log(z[..., 0]) + mx[..., 0]
        size = np.isfinite(logp).sum(axis=-1)
        sampler = _sampler(lo, probs, rows)
        if rows is not None:                   # per distinct row: weigh by how many cells
            mult = np.bincount(rows.ravel(), minlength=len(lo))
            log_ev = float((logz * mult).sum())
            n = _product(size, mult) if count else None
            lo, probs = lo[rows], probs[rows]
        else:
            log_ev = float(logz.sum())
            n = _product(size) if count else None

        def totals():      # sums of independent cells: computed when first asked for
            return {keep: (lambda keep=keep: _total(lo, probs, release.dims, keep))
                    for keep in default_margins(release.dims) if keep not in release.margins}

        return RouteResult(start=lo, probs=probs,
                            log_evidence=log_ev, n_candidates=n, approximation=approx,
                            totals=totals, sampler=sampler)

    def count(self, plan):
        lo, logp, rows, _ = self._logp(plan)
        size = np.isfinite(logp).sum(axis=-1)
        if rows is not None:
            return _product(size, np.bincount(rows.ravel(), minlength=len(lo)))
        return _product(size)


def _sampler(lo, probs, rows):
    """``sampler(k, rng) -> int64 (k, *shape)``: the cells are independent, so each is drawn
    from its own pmf by inverse cdf (one uniform per cell and draw, in one call of
    ``rng``), cells that share a window (``rows``: index of each cell's distinct window,
    or None: every cell its own, ``lo`` / ``probs`` of the table's shape) together."""
    if rows is None:
        shape = lo.shape
        rows = np.arange(lo.size).reshape(shape)
        lo, probs = lo.reshape(-1), probs.reshape(-1, probs.shape[-1])
    cdf = np.cumsum(probs, axis=-1)
    # the last value of positive probability: u rounded up to the total takes it
    last = probs.shape[-1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=-1)
    flat_rows = rows.reshape(-1)
    order = np.argsort(flat_rows, kind="stable")
    bounds = np.searchsorted(flat_rows[order], np.arange(len(lo) + 1))

    def draw(k, rng):
        u = rng.random((k, flat_rows.size))
        out = np.empty((k, flat_rows.size), np.int64)
        for r in range(len(lo)):
            cells = order[bounds[r]:bounds[r + 1]]
            if cells.size == 0:
                continue
            # the smallest j with cdf[j] > u * total: a value of probability 0 is never drawn
            j = np.searchsorted(cdf[r], u[:, cells] * cdf[r, -1], side="right")
            out[:, cells] = lo[r] + np.minimum(j, last[r])
        return out.reshape((k,) + rows.shape)

    return draw


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


def _product(sizes, mult=None) -> int:
    """Exact product of support sizes (Python integers), each ``mult`` times (default 1)."""
    sizes = np.ravel(sizes)
    mult = np.ones(sizes.size, np.int64) if mult is None else np.ravel(mult)
    n = 1
    for v in np.unique(sizes[mult > 0]).tolist():
        n *= pow(int(v), int(mult[sizes == v].sum()))
    return n
