"""Controlled rounding of 3-D tables (seed 004, "3-D Controlled Rounding"): protect, check,
exact inference.

A controlled rounding of an I x J x K table with every 2-way margin, every 1-way
margin and the grand total published: every interior cell and every published
total goes to one of its two adjacent multiples of B (multiples stay), and the
rounded table adds up over every margin.  Ernst (1989) showed that such a
rounding need not exist in 3-D.

Ernst's plane-stacking method (seed 004), planes along the last dim:

* bottom plane: zero-restricted controlled rounding of the plane (a 2-D table with
  its totals);
* each next plane k: subtract the sum of the rounded planes below from the sum of
  the original planes up to k, and apply zero-restricted controlled rounding to
  that 2-D table (with its totals);
* totals plane: the sums of the rounded planes, which are automatically a
  controlled rounding of the 2-way margin over the planes.

The cumulative sums of the rounded planes are controlled roundings of the
cumulative sums of the original planes, so each rounded plane is within two
multiples of its original plane (Ernst's relaxed rounding): the method gives a
controlled rounding of the 3-D table *where it applies*, i.e. where every plane
(interior and its totals) stays adjacent.  Every result here is checked
(:func:`is_controlled_rounding`) before it is returned.  The 2-D step is Cox's
unbiased procedure, so each rounded plane has expectation equal to its original.
Where the stacked result is only a relaxed rounding, existence is decided exactly
by a HiGHS MILP over the rounding directions; if no controlled rounding exists
the protect step raises ``ValueError``; if one exists the stacking is redrawn
(up to ``ERNST_TRIES`` times, then ``ValueError`` pointing to ``method="optimal"``;
the number of draws is recorded in ``release.info``).  The accepted release is
conditioned on the stacking succeeding, so it is *not* unbiased: on random
3 x 3 x 3 tables a single stacking is a controlled rounding only about 5% of
the time, and the conditioned per-entry means can be many standard errors away
from the originals (``studies/rounding/results_three_way.md``, section 2).  ``method="optimal"`` solves the
MILP for minimum total absolute distortion of the interior directly.

Inference for a rounded 3-D release: candidates are all nonnegative integer
tables whose interior cells and every total lie within B - 1 of the published
values; weights prior x likelihood (``"feasible"`` or ``"unbiased"``, product over
every entry, totals included), by the streaming enumerator
``kernels.table_enum.enumerate_3d_windows``.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import scipy.sparse as sp

from ..posterior import Posterior
from ..table import default_margins, totals

ERNST_TRIES = 50


# --- the definition ------------------------------------------------------------------------
def all_totals(x: np.ndarray) -> dict:
    """Every total of a k-D array: {axes kept (tuple of ints): array}, (k-1)-way and below."""
    k = x.ndim
    out = {}
    for r in range(k):
        for keep in combinations(range(k), r):
            axes = tuple(a for a in range(k) if a not in keep)
            out[keep] = np.asarray(x.sum(axis=axes))
    return out


def is_controlled_rounding(x, R, B: int) -> bool:
    """True when ``R`` (interior) is a controlled rounding of ``x`` to base B: every interior
    cell and every total of every lower-dimensional margin of R is a multiple of B, lies
    strictly within B of the original's, and equals it where the original is a multiple.
    (The totals of R are computed from R, so R adds up by construction.)"""
    x = np.asarray(x, dtype=np.int64)
    R = np.asarray(R, dtype=np.int64)
    if R.shape != x.shape:
        return False
    pairs = [(x, R)] + [(tx, tr) for (tx, tr) in zip(all_totals(x).values(),
                                                     all_totals(R).values())]
    for a, r in pairs:
        if np.any(r % B != 0) or np.any(np.abs(r - a) >= B) or np.any(r[a % B == 0] != a[a % B == 0]):
            return False
    return True


# --- protect ---------------------------------------------------------------------------------
def ernst_stack(x: np.ndarray, B: int, round2d) -> np.ndarray:
    """Ernst's plane stacking along the last axis; ``round2d(M)`` rounds an extended 2-D
    matrix (interior, negated row/column totals, grand total) zero-restricted."""
    from .rounding import _extended
    I, J, K = x.shape
    S = np.zeros((I, J), np.int64)          # original planes up to k
    Cum = np.zeros((I, J), np.int64)        # rounded planes below k
    out = np.zeros_like(x, dtype=np.int64)
    for k in range(K):
        S = S + x[:, :, k]
        Mr = round2d(_extended(S - Cum))
        out[:, :, k] = Mr[:I, :J]
        Cum = Cum + out[:, :, k]
    return out


def milp_rounding(x: np.ndarray, B: int, objective: str = "distortion"):
    """A controlled rounding of ``x`` (any number of dims, every lower margin published) by a
    HiGHS MILP over binary up/down directions of the non-multiple interior cells, each total
    constrained to one of its two adjacent multiples (its own multiple if it is one).
    ``objective="distortion"``: minimum total absolute distortion of the interior;
    ``"none"``: feasibility only.  Returns None when no controlled rounding exists."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    x = np.asarray(x, dtype=np.int64)
    floor = B * (x // B)
    frac = x - floor
    nm = frac != 0
    n = int(nm.sum())
    col = np.full(x.shape, -1, np.int64)
    col[nm] = np.arange(n)
    rows, cols, lo, hi = [], [], [], []
    nrow = 0
    ftots = all_totals(floor)
    grids = np.indices(x.shape)
    for keep, tot in all_totals(x).items():
        ftot = np.atleast_1d(ftots[keep]).ravel()
        tot = np.atleast_1d(tot).ravel()
        # which total each interior cell adds to
        shape_keep = tuple(x.shape[a] for a in keep)
        tid = (np.ravel_multi_index(tuple(grids[a] for a in keep), shape_keep)
               if keep else np.zeros(x.shape, np.int64))
        rows.append(nrow + tid[nm])
        cols.append(col[nm])
        lo.append((B * (tot // B) - ftot) // B)
        hi.append((B * (-(-tot // B)) - ftot) // B)
        nrow += tot.size
    if n == 0:
        return x.copy()
    A = sp.csr_array((np.ones(sum(r.size for r in rows)), (np.concatenate(rows),
                                                           np.concatenate(cols))),
                     shape=(nrow, n))
    lo = np.concatenate(lo).astype(float)
    hi = np.concatenate(hi).astype(float)
    cost = (B - 2 * frac[nm]).astype(float) if objective == "distortion" else np.zeros(n)
    res = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=np.ones(n),
               bounds=Bounds(0, 1))
    if res.status == 2:           # infeasible
        return None
    if not res.success:
        raise RuntimeError(f"HiGHS did not solve the controlled-rounding MILP: {res.message}")
    out = floor.copy()
    out[nm] += B * np.rint(res.x).astype(np.int64)
    return out


def protect_3d(mech, table, rng):
    """The 3-D branch of ``ControlledRounding.protect``."""
    from ..release import Release
    from .rounding import _cox_unbiased
    need = set(default_margins(table.dims))
    if set(table.margins) != need:
        raise ValueError(f"3-D controlled rounding needs every 2-way and 1-way margin and the "
                         f"grand total published ({sorted(need)}); the table publishes "
                         f"{sorted(table.margins)}")
    x = np.asarray(table.values, dtype=np.int64)
    B = mech.base
    info = {}
    if mech.method == "optimal":
        R = milp_rounding(x, B)
        if R is None:
            raise ValueError(_none_exists(x.shape, B))
        info["method_3d"] = "MILP (HiGHS), minimum total absolute distortion"
    else:
        rng = mech._rng(rng)
        R = None
        for attempt in range(1, ERNST_TRIES + 1):
            cand = ernst_stack(x, B, lambda M: _cox_unbiased(M, B, rng))
            if is_controlled_rounding(x, cand, B):
                R = cand
                break
            if attempt == 1 and milp_rounding(x, B, objective="none") is None:
                raise ValueError(_none_exists(x.shape, B))
        if R is None:
            raise ValueError(f"Ernst's plane stacking gave only relaxed roundings (some plane "
                             f"moved by more than one base) in {ERNST_TRIES} draws, although a "
                             "controlled rounding of this table exists: use method='optimal'")
        info["method_3d"] = "Ernst plane stacking (planes along the last dim), Cox 2-D steps"
        info["ernst_draws"] = attempt
    if not is_controlled_rounding(x, R, B):       # never return an unchecked table
        raise RuntimeError("internal error: the 3-D rounding failed its controlled-rounding check")
    rel = Release(published=R, margins=totals(R, table.dims, table.margins), mechanism=mech,
                  dims=table.dims, coords=table.coords, kind="count")
    rel.info.update(info)
    return rel


def _none_exists(shape, B):
    return (f"no controlled rounding to base {B} exists for this {'x'.join(map(str, shape))} "
            "table (HiGHS MILP over the up/down directions is infeasible; Ernst 1989: 3-D "
            "controlled roundings need not exist)")


# --- inference -------------------------------------------------------------------------------
def _order(dims):
    a, b, c = dims
    return [(a, b), (a, c), (b, c), (a,), (b,), (c,), ()]


def windows_3d(mech, release, prior):
    """Plain arrays for the kernel: cell_lo, cell_wt, m_lo, m_wt (see kernels.table_enum)."""
    from .rounding import _log_round_prob
    dims = release.dims
    missing = [k for k in _order(dims) if k not in release.margins]
    if missing:
        raise ValueError(f"3-D rounding inference needs every 2-way and 1-way margin and the "
                         f"grand total published; missing {missing}")
    B = mech.base

    def window(pub, extra=None):
        pub = np.atleast_1d(np.asarray(pub, dtype=np.int64))
        lo = np.maximum(pub - (B - 1), 0)
        vals = lo[..., None] + np.arange(2 * B - 1)
        lw = np.where(np.abs(vals - pub[..., None]) <= B - 1, 0.0, -np.inf)
        if mech.likelihood == "unbiased":
            lw = lw + _log_round_prob(vals, pub[..., None], B)
        if extra is not None:
            lw = lw + extra(vals)
        return lo, lw

    clo, clw = window(release.published,
                      lambda v: prior.log_weights(v, release.dims, release.coords))
    parts = [window(release.margins[k]) for k in _order(dims)]
    mlo = np.concatenate([p[0].ravel() for p in parts])
    mlw = np.concatenate([p[1].reshape(-1, 2 * B - 1) for p in parts])
    return clo, clw, mlo, mlw


def _exp_rows(lw):
    fin = np.isfinite(lw)
    mx = np.where(fin, lw, -np.inf).max(axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    return np.where(fin, np.exp(lw - mx[..., None]), 0.0), float(mx.sum())


def run_3d(mech, release, prior):
    from kernels import table_enum
    clo, clw, mlo, mlw = windows_3d(mech, release, prior)
    I, J, K = release.shape
    cwt, cshift = _exp_rows(clw.reshape(I * J * K, -1))
    mwt, mshift = _exp_rows(mlw)
    count, total, hist, mhist = table_enum.enumerate_3d_windows(
        I, J, K, clo.ravel().astype(np.int64), cwt, mlo.astype(np.int64), mwt)
    return clo, mlo, int(count), float(total), hist, mhist, cshift + mshift


def posterior_3d(mech, release, prior) -> Posterior:
    clo, mlo, count, total, hist, mhist, shift = run_3d(mech, release, prior)
    if count == 0:
        raise ValueError("no original table is consistent with this rounded release "
                         "under this prior")
    if not total > 1e-290:
        raise FloatingPointError(f"enumeration weights underflowed (total {total!r})")
    shape = release.shape
    post = Posterior(start=clo, probs=(hist / total).reshape(shape + (-1,)), dims=release.dims,
                     coords=release.coords, published=release.published, n_candidates=count,
                     log_evidence=float(np.log(total) + shift),
                     attrs={"method": f"controlled_rounding/{mech.likelihood}/enumerate",
                            "prior": prior.describe(), "mechanism": mech.describe(),
                            "route": "enumerate"})
    at = 0
    for keep in _order(release.dims):
        n = int(np.prod([shape[release.dims.index(d)] for d in keep], dtype=np.int64))
        tshape = tuple(shape[release.dims.index(d)] for d in keep)
        post.totals[keep] = Posterior(
            start=mlo[at:at + n].reshape(tshape), probs=(mhist[at:at + n] / total).reshape(
                tshape + (-1,)), dims=keep, coords={d: release.coords[d] for d in keep},
            published=release.margins[keep],
            attrs={"description": f"posterior of the total {keep}"})
        at += n
    return post


def count_3d(mech, release, prior) -> int:
    return run_3d(mech, release, prior)[2]
