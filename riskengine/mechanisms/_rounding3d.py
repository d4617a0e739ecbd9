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

Inference for a rounded 3-D release (the windows of ``rounding.entry_windows``) is the
streaming enumerator's (:mod:`riskengine.inference.enumerate_3d`).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from ..release import Release
from ..table import default_margins, totals
from ..tabular import aggregation
from ._cox import cox_unbiased, extended

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
    I, J, K = x.shape
    S = np.zeros((I, J), np.int64)          # original planes up to k
    Cum = np.zeros((I, J), np.int64)        # rounded planes below k
    out = np.zeros_like(x, dtype=np.int64)
    for k in range(K):
        S = S + x[:, :, k]
        Mr = round2d(extended(S - Cum))
        out[:, :, k] = Mr[:I, :J]
        Cum = Cum + out[:, :, k]
    return out


def milp_rounding(x: np.ndarray, B: int, objective: str = "distortion"):
    """A controlled rounding of ``x`` (any number of dims, every lower margin published) by a
    HiGHS MILP over binary up/down directions of the non-multiple interior cells, each total
    constrained to one of its two adjacent multiples (its own multiple if it is one).
    ``objective="distortion"``: minimum total absolute distortion of the interior;
    ``"none"``: feasibility only.  Returns None when no controlled rounding exists."""
    x = np.asarray(x, dtype=np.int64)
    floor = B * (x // B)
    frac = x - floor
    nm = frac != 0
    n = int(nm.sum())
    dims = tuple(range(x.ndim))
    tots = all_totals(x)
    ftots = all_totals(floor)
    keeps = [tuple(dims[a] for a in keep) for keep in tots]
    if n == 0:
        return x.copy()
    A = aggregation(dims, x.shape, keeps)[:, nm.ravel()]
    lo, hi = [], []
    for keep, tot in tots.items():
        ftot = np.atleast_1d(ftots[keep]).ravel()
        tot = np.atleast_1d(tot).ravel()
        lo.append((B * (tot // B) - ftot) // B)
        hi.append((B * (-(-tot // B)) - ftot) // B)
    lo = np.concatenate(lo).astype(float)
    hi = np.concatenate(hi).astype(float)
    cost = (B - 2 * frac[nm]).astype(float) if objective == "distortion" else np.zeros(n)
    z = directions(A, lo, hi, cost)
    if z is None:
        return None
    out = floor.copy()
    out[nm] += B * z
    return out


def directions(A, lo, hi, cost):
    """The up (1) / down (0) directions of the cells that are not multiples, minimising
    ``cost @ z`` with ``lo <= A z <= hi`` (each published total at one of its adjacent
    multiples, in units of the base, net of the rounded-down cells): a HiGHS MILP over
    binaries; None when infeasible (no controlled rounding exists)."""
    res = milp(np.asarray(cost, float),
               constraints=LinearConstraint(A, np.asarray(lo, float), np.asarray(hi, float)),
               integrality=np.ones(len(cost)), bounds=Bounds(0, 1))
    if res.status == 2:           # infeasible
        return None
    if not res.success:
        raise RuntimeError(f"HiGHS did not solve the controlled-rounding MILP: {res.message}")
    return np.rint(res.x).astype(np.int64)


def protect_3d(mech, table, rng):
    """The 3-D branch of ``ControlledRounding.protect``."""
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
            cand = ernst_stack(x, B, lambda M: cox_unbiased(M, B, rng))
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
