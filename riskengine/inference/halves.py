"""Exact counts of 2-D tables with fixed totals by meeting in the middle over row halves.

The rows split into two halves, A (the first two) and B (the rest, at most two).  For a
vector ``c`` of column sums of half A, the number of half-A tables is a count of bounded
compositions (the first row ``x`` with ``max(l_0, c - u_1) <= x <= min(u_0, c - l_1)``
and ``sum x = R_0``; the second row is ``c - x``), given in closed form by
inclusion-exclusion over the columns; the same for half B with column sums ``C - c``.
The count is the sum over ``c`` of the product.  Only the support of each cell matters
(a count of tables with positive weight), so priors enter through their bounds.

Exact integers: every binomial is checked to fit int64 before it is formed, and the sum of
products is accumulated in 21-bit limbs (products of limbs below 2^42, summed in chunks of
2^19 vectors by the Numba kernel ``kernels.halves.count_limbs``) and carried into a Python
integer.  Applies to 3 or 4 rows with every total fixed
and contiguous cell windows, when the grid of column-sum vectors is small enough
(:data:`MAX_GRID`); :func:`count` returns None otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from kernels import halves as _k

from ..protocol import Cost, Route, RouteResult
from ._plan import prepared

__all__ = ["MAX_GRID", "Halves", "count", "grid_size", "marginals"]

#: most column-sum vectors of half A walked (memory: about 60 bytes each, in chunks)
MAX_GRID = 2e8


def _support(lo, lw):
    """First and last value with finite log-weight per cell; None if some window has a hole
    (the closed form needs intervals)."""
    fin = np.isfinite(lw)
    first = np.argmax(fin, axis=-1)
    last = lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
    span = np.arange(lw.shape[-1])
    inside = (span >= first[..., None]) & (span <= last[..., None])
    if np.any(inside & ~fin) or not fin.any(axis=-1).all():
        return None
    return lo + first, lo + last


def _plan(cell_lo, cell_lw, R, C):
    """``(lo, hi, R, C, top, clo, chi, grid)`` or None where the method does not apply."""
    r, m = np.shape(cell_lo)
    if r not in (3, 4) or m < 2:
        return None
    sup = _support(np.asarray(cell_lo, np.int64), np.asarray(cell_lw, float))
    if sup is None:
        return None
    lo, hi = sup
    R = np.asarray(R, np.int64)
    C = np.asarray(C, np.int64)
    top = 2 if r == 4 else 1
    # column sums of half A: each within what its cells allow and what half B leaves
    clo = np.maximum(lo[:top].sum(0), C - hi[top:].sum(0))
    chi = np.minimum(hi[:top].sum(0), C - lo[top:].sum(0))
    grid = float(np.prod(np.maximum(chi - clo + 1, 0)[:-1].astype(float)))
    big = math.comb(int(R.max()) + m - 1, m - 1)
    if grid > MAX_GRID or (m - 1) * big >= 2 ** 62 or 2 ** m * big >= 2 ** 62:
        return None
    return lo, hi, R, C, top, clo, chi, grid


def grid_size(cell_lo, cell_lw, R, C) -> float | None:
    """Number of column-sum vectors :func:`count` walks, or None where it does not apply
    (computed without counting)."""
    plan = _plan(cell_lo, cell_lw, R, C)
    return None if plan is None else plan[-1]


def count(cell_lo, cell_lw, R, C) -> int | None:
    """Exact number of r x m tables (r = 3 or 4) with row totals ``R``, column totals ``C``
    and cell ``(i, j)`` in the support of ``cell_lw[i, j]`` (starting at ``cell_lo``); None
    when the method does not apply or the grid is too large."""
    plan = _plan(cell_lo, cell_lw, R, C)
    if plan is None:
        return None
    lo, hi, R, C, top, clo, chi, _ = plan
    if R.sum() != C.sum() or np.any(chi < clo):
        return 0
    grid = int(np.prod((chi - clo + 1)[:-1]))
    # at most 2^19 column-sum vectors per chunk: the kernel's limb sums (three products
    # below 2^42 per vector in the middle limb) stay below 2^63
    nchunk = max(64, -(-grid // 2 ** 19))
    limbs = _k.count_limbs(lo, hi, R, C, top, clo, chi, nchunk)
    return sum(int(v) << (21 * s) for s, v in enumerate(limbs.sum(axis=0, dtype=object)))


def marginals(cell_lo, cell_lw, R, C):
    """``(start, probs)`` of every cell under the uniform distribution over the tables
    :func:`count` counts (per-cell counts by the Numba kernel, normalised), or None where
    the method does not apply."""
    plan = _plan(cell_lo, cell_lw, R, C)
    if plan is None:
        return None
    lo, hi, R, C, top, clo, chi, _ = plan
    if R.sum() != C.sum() or np.any(chi < clo):
        return None
    W = int((hi - lo).max()) + 1
    hist, total = _k.cell_counts(lo, hi, R, C, top, clo, chi, W, 64)
    if not total > 0:
        return None
    return lo, hist / total


def _flat(lw) -> bool:
    """Every cell's finite log-weights equal (the prior is uniform over its support)."""
    fin = np.isfinite(lw)
    ref = np.where(fin, lw, np.nan)
    lo = np.nanmin(ref, axis=-1)
    hi = np.nanmax(ref, axis=-1)
    return bool(np.all(hi - lo <= 1e-12 * np.maximum(1.0, np.abs(hi))))


class Halves(Route):
    """Exact posterior of 2-D tables of 3 or 4 rows (in either orientation) with every total
    fixed and a prior uniform over tables (flat windows: ``Uniform``, ``Flat``, bounds), by
    meeting in the middle over row halves (:func:`count`, :func:`marginals`).

    Reads the mechanism's entry windows (``plan.inputs["windows"]``, without the prior);
    ``draws``: a route with ``draws(plan, who)`` giving whole-table draws
    (:meth:`riskengine.inference.table_dp.TableDP.draws`)."""

    name = "halves"
    needs = ("entry windows; 2-D count table of 3 or 4 rows, every total exact, prior "
             "uniform over tables")

    def __init__(self, draws=None):
        self._draws = draws

    @staticmethod
    def _plan(plan):
        return prepared(plan, "halves", lambda: _best(plan))

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or len(release.dims) != 2 or release.groups:
            return "the half-split route covers 2-D count tables without subtotals"
        d0, d1 = release.dims
        if any(k not in release.margins for k in ((d0,), (d1,), ())) or \
                release._hidden_totals():
            return "the half-split route needs every total published exactly"
        if not release.mechanism.additive:
            return "the half-split route needs totals published exactly"
        if self._plan(plan) is None:
            return ("the half-split route covers tables of 3 or 4 rows (either way round) "
                    "with totals fixed and a prior uniform over tables")
        return None

    def estimate(self, plan, what="posterior"):
        g, e = self._plan(plan)
        r, m = e.shape
        # each half's column-sum vectors are listed, then paired by their sums
        # (benchmarks/route_seconds.py: about 0.7 microseconds a vector and column)
        secs = float(g) * m * 7e-7
        if what != "count":
            # the marginals also walk, for every vector, each column's values of the
            # two-row halves: about 3.1 ns a vector and value on the 2-core machine
            # (3 x 3 margins only at means 300, 500, 1000: 6.3, 27.8, 221 s; 3.5 ns kept)
            lo, lw = e.interior
            d0, d1 = e.dims
            got = _plan(lo, lw, e.lo[(d0,)], e.lo[(d1,)])
            if got is not None:
                w = got[1] - got[0] + 1
                pairs = [(0, 1)] + ([(2, 3)] if w.shape[0] == 4 else [])
                values = float(sum(np.minimum(w[a], w[b]).sum() for a, b in pairs))
                secs += float(g) * values * 3.5e-9
        return Cost(float(8 * 64 * r * m * (np.shape(e.interior[1])[-1] + 1) + 60 * 2 ** 20),
                    f"{g:.3g} column-sum vectors of two row halves", seconds=secs)

    def run(self, plan, *, count=True):
        release = plan.release
        _, e = self._plan(plan)
        lo, lw = e.interior
        d0, d1 = e.dims
        R, C = e.lo[(d0,)], e.lo[(d1,)]
        res = marginals(lo, lw, R, C)
        if res is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        n = globals()["count"](lo, lw, R, C)
        start, probs = res
        if e.dims != release.dims:
            start, probs = start.T, np.swapaxes(probs, 0, 1)
        # every table has the same weight: the product of the cells' (flat) log-weights
        fin = np.isfinite(lw)
        per_cell = np.where(fin, lw, -np.inf).max(axis=-1)
        log_z = float(np.log(float(n)) + per_cell.sum() + e.shift) if n < 2 ** 1000 else \
            float(math.log(n) + per_cell.sum() + e.shift)
        totals = {k: (np.asarray(release.margins[k]),
                      np.ones(np.shape(release.margins[k]) + (1,)))
                  for k in ((release.dims[0],), (release.dims[1],), ())}
        return RouteResult(start=start, probs=probs, log_evidence=log_z,
                           n_candidates=n if count else None, totals=totals,
                           sampler=self._sampler(plan))

    def _sampler(self, plan):
        """Whole-table draws through the route given as ``draws`` (the table DP on the same
        windows: the half-split counts give marginals, not draws), planned when first
        called; None without one."""
        if self._draws is None:
            return None

        def draw(n, rng):
            return self._draws.draws(plan, "the half-split route")(n, rng)

        return draw

    def count(self, plan):
        _, e = self._plan(plan)
        lo, lw = e.interior
        d0, d1 = e.dims
        return globals()["count"](lo, lw, e.lo[(d0,)], e.lo[(d1,)])


def _best(plan):
    """``(grid size, entry windows)`` of the orientation with the smaller half-split grid,
    or None when the route does not fit (a total not fixed, a prior not flat)."""
    ew = plan.inputs["windows"].with_prior(plan.prior, plan.release.coords).trimmed()
    if ew is None or not all(np.shape(ew.lw[k])[-1] == 1 for k in ew.lw if k != ew.dims) \
            or not _flat(ew.interior[1]):
        return None
    best = None
    for e in (ew, ew.transposed()):
        lo, lw = e.interior
        d0, d1 = e.dims
        g = grid_size(lo, lw, e.lo[(d0,)], e.lo[(d1,)])
        if g is not None and (best is None or g < best[0]):
            best = (g, e)
    return best
