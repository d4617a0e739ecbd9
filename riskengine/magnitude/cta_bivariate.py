"""Bivariate CTA (seed 002 §3): two variables on one tabular structure, covariance kept
(the mathematics of ``rk.cta_bivariate``: :mod:`riskengine.mechanisms.cta` builds the
releases).

Two magnitude tables ``a`` and ``b`` on the same dims and totals (e.g. sales and
employment) are adjusted by ``y`` and ``z``.  Each adjustment satisfies its own CTA
constraints (protection, capacities, ``T y = 0``) and the univariate quality
constraints ``preserve`` (seed 002 model (3)); the covariance over the cells ``C``
(``over``) should not change:

``dCov(y, z) = Cov(a + y, b + z) - Cov(a, b) = Cov(a, z) + Cov(b, y) + Cov(y, z)``.

The last term is quadratic; seed 002 §3.2 solves the problem by *alternating linear
optimisations*.  The exact procedure implemented here:

1. ``y_0``: the univariate CTA of ``a`` (``rk.cta``); ``z_0 = 0`` is not needed.
2. Step for ``z`` with ``y`` fixed: ``dCov`` is linear in ``z``,
   ``dCov = Cov(a + y, z) + Cov(b, y)``.  Phase 1 solves the CTA MILP of ``b`` with
   objective ``min |dCov|``, giving ``d*``; phase 2 solves it again with
   ``|dCov| <= d* + tol_abs`` and the usual cost (``sum |z|``), so the covariance is as
   good as it can be for this ``y`` and the adjustment is as small as possible.
3. Step for ``y`` with ``z`` fixed, symmetrically (``dCov = Cov(b + z, y) + Cov(a, z)``).
4. Repeat 2-3 until ``|dCov| <= rtol * |Cov(a, b)|`` or ``max_iter`` steps.

Each step's previous iterate is feasible for its phase 1, so ``|dCov|`` never increases
(up to ``tol_abs``); the result is a local (block-coordinate) solution, not a proven
optimum of the quadratic problem.  Covariances are population moments over ``C``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from .cta_milp import CTAProblem, CTASolution, adjust, finish, ordering, quality_rows, solve

__all__ = ["BivariateSolution", "alternate", "bivariate_stats"]


@dataclass(frozen=True, eq=False)
class BivariateSolution:
    """Both adjustments, the covariance history and seed 002's statistics."""

    a: CTASolution
    b: CTASolution
    history: tuple          #: |dCov| after the univariate start and after each step
    stats: xr.Dataset       #: :func:`bivariate_stats` of the two adjustments


def alternate(pa: CTAProblem, pb: CTAProblem, preserve, epsilon, directions: str,
              max_iter: int = 6, rtol: float = 1e-3, time_limit=None) -> BivariateSolution:
    """Alternating linear optimisations (the module docstring's steps 1-4) for two
    prepared problems on the same structure, with the same ``over`` cells.
    ``directions``: ``"milp"`` or ``"ordering"`` (each table's directions fixed by the
    ordering heuristic in every step: LPs only)."""
    start = adjust(pa, preserve, epsilon, directions, time_limit)
    idx = np.flatnonzero(pa.over)
    t = idx.size
    a, b = pa.a, pb.a
    y, z = start.y.copy(), np.zeros(b.size)
    dirs_a, dirs_b = start.directions, np.zeros(b.size, np.int64)
    status_a, gap_a, status_b, gap_b = start.status, start.gap, "optimal", 0.0
    cov_ab = _cov(a, b, idx)

    def dcov(y, z):
        return _cov(a + y, b + z, idx) - cov_ab

    history = [abs(dcov(y, z))]
    fixed_a = ordering(pa.a, pa.p, pa.u, pa.sens) if directions == "ordering" else None
    fixed_b = ordering(pb.a, pb.p, pb.u, pb.sens) if directions == "ordering" else None
    scale = max(abs(cov_ab), 1e-300)
    for step in range(max_iter):
        if step % 2 == 0:        # z given y
            prep, other, fixed, base, fix_y = pb, a + y, fixed_b, _cov(b, y, idx), True
        else:                    # y given z
            prep, other, fixed, base, fix_y = pa, b + z, fixed_a, _cov(a, z, idx), False
        c = np.zeros(a.size)
        c[idx] = (other[idx] - other[idx].mean()) / t
        extra = quality_rows(prep, preserve, epsilon)
        _, _, best, _, _ = solve(prep, extra, fixed, time_limit, 0.0, minabs=(c, base))
        tol_abs = 1e-9 * scale + 1e-7 * best
        extra = extra + [(c, -base - best - tol_abs, -base + best + tol_abs)]
        v, d, _, st, g = solve(prep, extra, fixed, time_limit, 0.0)
        if fix_y:
            z, dirs_b, status_b, gap_b = v, d, st, g
        else:
            y, dirs_a, status_a, gap_a = v, d, st, g
        history.append(abs(dcov(y, z)))
        if history[-1] <= rtol * abs(cov_ab):
            break
    sa = finish(pa, y, dirs_a, status_a, gap_a)
    sb = finish(pb, z, dirs_b, status_b, gap_b)
    return BivariateSolution(sa, sb, tuple(float(h) for h in history),
                             bivariate_stats(a, b, sa.y, sb.y, idx))


def _cov(u, v, idx) -> float:
    uu, vv = u[idx], v[idx]
    return float(np.mean((uu - uu.mean()) * (vv - vv.mean())))


def bivariate_stats(a, b, y, z, idx) -> xr.Dataset:
    """Percent changes of seed 002 Table 1: covariance, correlation, regression
    coefficient of b on a, Var(a), Var(b); and the original correlation."""
    ca, cb = _cov(a, b, idx), _cov(a + y, b + z, idx)
    va, vb = _cov(a, a, idx), _cov(b, b, idx)
    va2, vb2 = _cov(a + y, a + y, idx), _cov(b + z, b + z, idx)
    r0, r1 = ca / np.sqrt(va * vb), cb / np.sqrt(va2 * vb2)
    pct = lambda new, old: 100.0 * (new - old) / abs(old)
    return xr.Dataset({
        "covariance_change": pct(cb, ca), "correlation_change": pct(r1, r0),
        "regression_change": pct(cb / va2, ca / va), "variance_a_change": pct(va2, va),
        "variance_b_change": pct(vb2, vb), "original_correlation": r0},
        attrs={"method": "bivariate CTA (seed 002 section 3)", "units": "percent change"})
