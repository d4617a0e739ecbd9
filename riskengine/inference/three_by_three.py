"""Exact posteriors of 3 x 3 margins-only tables under a prior uniform over tables, in
closed form at any count (O(count) per cell).

Fix cell (0, 0) at ``a`` and cell (0, 1) at ``b``: the first row is then fixed
(``x02 = r0 - a - b``) and the rest is a 2 x 3 table with row sums ``(r1, r2)`` and
column sums ``(c0 - a, c1 - b, c2 - x02)``, fixed by ``(u, v) = (x10, x11)`` in the box
``[0, A] x [0, B]`` (``A = c0 - a``, ``B = c1 - b``) with ``L <= u + v <= U`` (``U = r1``,
``L = r1 - (c2 - x02)``).  The lattice points of a box below a line are, by inclusion and
exclusion over the box's corners, ``T(s) = F(s) - F(s - A - 1) - F(s - B - 1) +
F(s - A - B - 2)`` with ``F(s) = (s + 1)(s + 2) / 2`` (0 for ``s < 0``), so the number of
tables with ``x00 = a, x01 = b`` is ``g(a, b) = T(U) - T(L - 1)``: eight terms ``F(k + s
b)`` with slope ``s`` in {-1, 0, +1}.  Summed over ``b`` each is a difference of
``G(t) = (t + 1)(t + 2)(t + 3) / 6``, the prefix sums of ``F``: the number of tables with
``x00 = a`` in O(1), every value of ``a`` in O(count), exactly in integers.  Any other
cell is cell (0, 0) once its row and column are put first (the count does not depend on
the order of the others).

Applies to 3 x 3 count tables with every total published exactly and every cell free
from 0 up to its row and column totals (margins only) under a prior flat over those
windows (``Uniform``).  Draws: exact, ``x00`` by its pmf, ``x01`` by ``g(x00, .)``, then
``x10`` by the number of ``x11`` it leaves and ``x11`` uniformly.  Integers are int64
while every ``G`` fits (margins below about 2.4e6), Python integers beyond.
"""

from __future__ import annotations

import math

import numpy as np

from ..protocol import Cost, Route, RouteResult
from ._plan import prepared

__all__ = ["ThreeByThree", "cell_counts"]

#: above this largest margin G(t) ~ t^3 / 6 may leave int64: Python integers
_INT64_MARGIN = 2_000_000


def _F(s):
    """``(s + 1)(s + 2) / 2`` for ``s >= 0``, else 0 (elementwise, exact)."""
    s = np.maximum(s, -1)
    return (s + 1) * (s + 2) // 2


def _G(t):
    """``sum_{s <= t} F(s) = (t + 1)(t + 2)(t + 3) / 6`` for ``t >= 0``, else 0."""
    t = np.maximum(t, -1)
    return (t + 1) * (t + 2) * (t + 3) // 6


def _sum_F(k, slope: int, lo, hi):
    """``sum_{b = lo}^{hi} F(k + slope b)`` (0 where ``hi < lo``), elementwise."""
    n = np.maximum(hi - lo + 1, 0)
    if slope == 0:
        return n * _F(k)
    if slope == 1:
        out = _G(k + hi) - _G(k + lo - 1)
    else:
        out = _G(k - lo) - _G(k - hi - 1)
    return np.where(n > 0, out, 0)


def first_cell_counts(r, c) -> np.ndarray:
    """The number of 3 x 3 nonnegative tables with row sums ``r`` and column sums ``c``
    and cell (0, 0) = ``a``, for ``a = 0 .. min(r0, c0)``.

    Parameters
    ----------
    r, c : sequence of 3 int
        Row and column totals (equal sums).

    Returns
    -------
    numpy.ndarray
        int64 (or object: Python integers, for margins above about 2e6), one count per
        value of ``a``.
    """
    r0, r1, _ = (int(v) for v in r)
    c0, c1, c2 = (int(v) for v in c)
    big = max(*r, *c) > _INT64_MARGIN
    a = np.arange(min(r0, c0) + 1, dtype=np.int64)
    if big:
        a = a.astype(object)
    lo = np.maximum(0, r0 - a - c2)
    hi = np.minimum(r0 - a, c1)
    lam = r1 - c2 + r0 - a - 1
    n = np.maximum(hi - lo + 1, 0)
    # T(U): F(r1) - F(r1 - c0 + a - 1) - F(r1 - c1 - 1 + b) + F(r1 - c0 - c1 + a - 2 + b)
    tu = (n * _F(np.full_like(a, r1)) - n * _F(r1 - c0 + a - 1)
          - _sum_F(r1 - c1 - 1 + 0 * a, 1, lo, hi) + _sum_F(r1 - c0 - c1 + a - 2, 1, lo, hi))
    # T(L - 1): F(lam - b) - F(lam - c0 + a - 1 - b) - F(lam - c1 - 1) + F(lam - c0 - c1 +
    # a - 2)
    tl = (_sum_F(lam, -1, lo, hi) - _sum_F(lam - c0 + a - 1, -1, lo, hi)
          - n * _F(lam - c1 - 1) + n * _F(lam - c0 - c1 + a - 2))
    return np.where(n > 0, tu - tl, 0)


def _order(i: int) -> list:
    return [i] + [k for k in range(3) if k != i]


def cell_counts(r, c) -> tuple:
    """Every cell's counts (:func:`first_cell_counts` with its row and column first) and
    the total number of tables.

    Parameters
    ----------
    r, c : sequence of 3 int

    Returns
    -------
    tuple
        ``(counts, total)``: ``counts[i][j]`` per value from 0; ``total`` a Python int.
    """
    r = [int(v) for v in r]
    c = [int(v) for v in c]
    counts = [[first_cell_counts([r[k] for k in _order(i)], [c[k] for k in _order(j)])
               for j in range(3)] for i in range(3)]
    total = sum(counts[0][0].tolist())          # Python integers: exact at any size
    return counts, total


def _pair_weights(r, c, a: int) -> tuple:
    """``(b values, counts)``: the number of tables with ``x00 = a`` and ``x01 = b``."""
    r0, r1, _ = r
    c0, c1, c2 = c
    lo, hi = max(0, r0 - a - c2), min(r0 - a, c1)
    b = np.arange(lo, hi + 1, dtype=np.int64)
    if max(*r, *c) > _INT64_MARGIN:
        b = b.astype(object)
    A, B = c0 - a, c1 - b
    U, L = r1, r1 - (c2 - (r0 - a - b))

    def T(s):
        return _F(s) - _F(s - A - 1) - _F(s - B - 1) + _F(s - A - B - 2)
    return b, T(U + 0 * b) - T(L - 1)


class ThreeByThree(Route):
    """Exact posterior of a 3 x 3 margins-only table under a prior uniform over tables, in
    closed form at any count (module docstring).

    Reads the mechanism's entry windows (``plan.inputs["windows"]``, with the prior)."""

    name = "three-by-three"
    needs = ("entry windows; 3 x 3 count table, every total exact, every cell free from 0 "
             "to its totals, prior uniform over tables")

    @staticmethod
    def _plan(plan):
        return prepared(plan, "three_by_three", lambda: _prepare(plan))

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or len(release.dims) != 2 or release.groups:
            return "the 3 x 3 closed form covers 2-D count tables without subtotals"
        if tuple(release.shape) != (3, 3):
            return f"the 3 x 3 closed form covers 3 x 3 tables; this one is {release.shape}"
        d0, d1 = release.dims
        if any(k not in release.margins for k in ((d0,), (d1,), ())):
            return "the 3 x 3 closed form needs every total published"
        got = self._plan(plan)
        return got if isinstance(got, str) else None

    def estimate(self, plan, what="posterior"):
        got = self._plan(plan)
        if got is None or isinstance(got, str):
            return Cost(0.0, "no candidate")
        R, C, _ = got
        n = float(max(*R, *C))
        return Cost(9 * 16 * 8 * n + 1e6, f"9 cells x {n:.3g} values in closed form",
                    seconds=9 * n * 2e-7 + 0.01)

    def run(self, plan, *, count=True):
        release = plan.release
        got = self._plan(plan)
        if got is None or isinstance(got, str):
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        R, C, ew = got
        counts, total = cell_counts(R, C)
        if total == 0:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        W = max(int(v.size) for row in counts for v in row)
        probs = np.zeros((3, 3, W))
        for i in range(3):
            for j in range(3):
                v = counts[i][j]
                probs[i, j, :v.size] = np.asarray([int(x) for x in v], float) / total \
                    if v.dtype == object else v.astype(float) / float(total)
        start = np.zeros((3, 3), np.int64)
        lw = ew.interior[1]
        fin = np.isfinite(lw)
        per_cell = np.where(fin, lw, -np.inf).max(axis=-1)
        log_z = float(math.log(total) + per_cell.sum() + ew.shift)
        totals = {k: (np.asarray(release.margins[k]),
                      np.ones(np.shape(release.margins[k]) + (1,)))
                  for k in ((release.dims[0],), (release.dims[1],), ())}
        return RouteResult(start=start, probs=probs, log_evidence=log_z,
                           n_candidates=total if count else None, totals=totals,
                           sampler=_sampler(R, C, counts[0][0]))

    def count(self, plan):
        got = self._plan(plan)
        if got is None or isinstance(got, str):
            return 0
        return cell_counts(got[0], got[1])[1]


def _sampler(R, C, first):
    """Exact draws: ``x00`` by its counts, ``x01`` by the pair counts, ``x10`` by the
    number of ``x11`` it leaves, ``x11`` uniformly."""
    w00 = np.asarray([float(x) for x in first]) if first.dtype == object else \
        first.astype(float)
    cum00 = np.cumsum(w00)

    def draw(n, rng):
        out = np.zeros((int(n), 3, 3), np.int64)
        for k in range(int(n)):
            a = int(np.searchsorted(cum00, rng.random() * cum00[-1], side="right"))
            a = min(a, w00.size - 1)
            b_vals, wb = _pair_weights(R, C, a)
            wb = np.asarray(wb, float)
            cb = np.cumsum(wb)
            b = int(b_vals[min(int(np.searchsorted(cb, rng.random() * cb[-1], side="right")),
                               wb.size - 1)])
            A, B = C[0] - a, C[1] - b
            U, L = R[1], R[1] - (C[2] - (R[0] - a - b))
            u = np.arange(A + 1)
            nv = np.maximum(np.minimum(B, U - u) - np.maximum(0, L - u) + 1, 0).astype(float)
            cu = np.cumsum(nv)
            x10 = min(int(np.searchsorted(cu, rng.random() * cu[-1], side="right")), A)
            vlo, vhi = max(0, L - x10), min(B, U - x10)
            x11 = int(rng.integers(vlo, vhi + 1))
            t = out[k]
            t[0] = [a, b, R[0] - a - b]
            t[1] = [x10, x11, R[1] - x10 - x11]
            t[2] = [C[0] - a - x10, C[1] - b - x11, C[2] - t[0, 2] - t[1, 2]]
        return out

    return draw


def _prepare(plan):
    """``(R, C, entry windows)``; a str: why the route does not apply; None: no
    candidate."""
    from .halves import _flat, _support
    release = plan.release
    ew = plan.inputs["windows"].with_prior(plan.prior, release.coords).trimmed()
    if ew is None:
        return None
    if not all(np.shape(ew.lw[k])[-1] == 1 for k in ew.lw if k != ew.dims):
        return "the 3 x 3 closed form needs every total published exactly"
    lo, lw = ew.interior
    if not _flat(lw):
        return "the 3 x 3 closed form needs a prior uniform over tables (Uniform)"
    d0, d1 = ew.dims
    R = [int(v) for v in np.ravel(ew.lo[(d0,)])]
    C = [int(v) for v in np.ravel(ew.lo[(d1,)])]
    sup = _support(lo, lw)                  # None: a window with a hole
    full = np.minimum.outer(np.asarray(R), np.asarray(C))
    if sup is None or np.any(sup[0] != 0) or np.any(sup[1] != full):
        return ("the 3 x 3 closed form needs every cell free from 0 to its row and column "
                "totals (margins only, no bounds from the prior)")
    return R, C, ew
