"""Reconstruction audit of a table set: which persons an intruder rebuilds from the tables.

From the 2010 US census's published tables the Census Bureau rebuilt block, sex, age,
race and ethnicity of every person, and for 70 % of blocks the integer program had one
solution: an attacker could verify from published data alone that every record was
right (Abowd et al. 2023, arXiv 2312.11283).  :func:`reconstruct` runs that audit on a
publication of riskengine: the finest table (person types x smallest area, the union of
the set's dims) is the unknown; every published cell is a sum of finest cells.

For each finest cell:

* ``lower`` / ``upper``: its least and greatest value over every nonnegative integer
  finest table consistent with what is published (exact integer programs,
  :func:`riskengine.inference.certify.integer_bounds`);
* ``certain``: ``lower == upper`` proven -- the cell is reconstructed with certainty;
* with a ``prior``: its exact posterior (mean, mode, Pr(mode)) by the streaming
  enumeration of the sums route (``kernels.sum_enum``) where the unit's candidates number
  at most ``max_candidates``; past it, a Monte Carlo posterior
  (:mod:`riskengine.inference.sums_gibbs`: chains redrawing the uncertain cells of a few
  groups -- blocks -- at a time from their exact conditional law), marked
  approximate with its diagnostics (``rhat``, ``ess`` per cell; a unit whose chains have
  not converged is named and warned of), or with ``monte_carlo=False`` no posterior.

and over the records: each claim "area a holds at least k persons of type t" ranked by
its confidence (1 where ``k <= lower``: certain; Pr(x >= k) under the prior), as Dick,
Dwork, Kearns et al. (PNAS 2023) rank reconstructed rows; a claim beyond ``lower`` in a
unit without a posterior has no confidence and is left out of the ranking (counted in
``records_unranked``), one in a Monte Carlo unit has ``record_confidence_exact`` False.
``share_certain`` is the share of persons so reconstructed with certainty (the sum of
``lower`` over the persons).

Work splits by **unit** (``unit=`` a dim, ``level=`` its hierarchy's depth: tracts of
blocks).  A unit's problem keeps the published cells whose records all lie in it.  A cell
spanning several units (a county total) is *implied* when its cells in each unit are
exactly those of a published cell kept there and those cells' values add up to its own
(checked cell by cell; ``attrs["implied_cells"]``): leaving it out loses nothing, and a
contradiction is refused (:class:`~riskengine.inference.certify.NoTable`).  Any other
spanning cell is dropped, as the attack drops it.  That is a relaxation: the consistent
tables of each unit are a superset of the true ones, so a cell certain in its unit is
certain (the flag stays sound) and the bounds are outer bounds; the dropped cells are
counted in ``attrs`` and a posterior under dropped cells is marked approximate.  With
``unit=None`` the units are the connected parts of the system (no cell dropped: exact).
Units run serially, on a process pool (``workers=``) or on dask (``scheduler=``); with
``out=`` each unit's result is written as it finishes and a rerun resumes
(:mod:`riskengine._units`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import xarray as xr

from . import _validate as V

__all__ = ["reconstruct"]

#: candidates a unit's exact posterior may enumerate by default
MAX_CANDIDATES = 1_000_000
#: bumped when a unit's answer to the same inputs changes (a unit file of another version
#: is computed again, not read back); 2: Monte Carlo units run on in rounds until they
#: converge or their time runs out; 3: box steps besides whole blocks
RESULT_VERSION = 3


@dataclass
class UnitTask:
    """One unit's problem on plain arrays (picklable; run by :func:`solve_unit`)."""

    key: str
    cells: np.ndarray            # global finest indices of the unknowns
    rows: sp.csr_matrix          # published sums over the unknowns
    rlo: np.ndarray
    rhi: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    lw: np.ndarray | None = None     # (n, W) prior log weights of lo + w, or None
    bounds: object = "exact"
    time_limit: float = 60.0
    max_candidates: float = MAX_CANDIDATES
    dropped: int = 0             # published cells of this unit's records dropped (linking)
    groups: np.ndarray | None = None  # (n, k) codes of each unknown, preferred dim first
    draws: int = 0               # Monte Carlo draws per chain past max_candidates (0: none)
    chains: int = 4
    seed: int = 0
    mc_seconds: float = 600.0
    meta: dict = field(default_factory=dict)
    progress_file: str | None = None  # where a long unit writes its progress (not hashed)

    def digest(self) -> str:
        """A hash of everything the answer depends on (a stored result is reused only
        when it matches)."""
        h = hashlib.sha256()
        for a in (self.cells, self.rows.indptr, self.rows.indices, self.rows.data,
                  self.rlo, self.rhi, self.lo, self.hi):
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(b"|")
        if self.lw is not None:
            h.update(np.ascontiguousarray(self.lw).tobytes())
        if self.groups is not None:
            h.update(np.ascontiguousarray(self.groups).tobytes())
        h.update(repr((RESULT_VERSION, self.key, self.bounds, float(self.time_limit),
                       float(self.max_candidates), int(self.draws), int(self.chains),
                       int(self.seed), float(self.mc_seconds))).encode())
        return h.hexdigest()[:32]


def solve_unit(task: UnitTask) -> dict:
    """Bounds, certainty and (with prior weights) the exact posterior of one unit.

    Parameters
    ----------
    task : UnitTask

    Returns
    -------
    dict
        Plain arrays: ``lower``, ``upper``, ``certain``, ``exact``, ``decided`` (per
        unknown), ``probs`` (n x W posterior over ``lo + w``, or empty), ``n_candidates``
        (-1: not counted), ``posterior`` (``"exact"`` or the reason there is none),
        ``n_programs``, ``seconds``, ``key``, ``digest``.
    """
    import time
    t0 = time.perf_counter()
    from .inference.certify import integer_bounds
    b = integer_bounds(task.rows, task.rlo, task.rhi, task.lo, task.hi, bounds=task.bounds,
                       time_limit=task.time_limit,
                       groups=None if task.groups is None else task.groups[:, 0])
    n = task.cells.size
    probs = np.zeros((0, 0))
    n_cand = -1
    why = "no prior given"
    mc = _no_monte_carlo()
    if task.lw is not None:
        probs, n_cand, why = _posterior(task, b)
        if why.startswith("more than") and task.draws > 0:
            from ._units import progress_writer
            probs, why, mc = _monte_carlo(task, b, why, progress_writer(task.progress_file))
    return {"key": task.key, "digest": task.digest(), "lower": b.lower, "upper": b.upper,
            "certain": b.certain, "exact": b.exact, "decided": b.decided,
            "probs": probs, "n_candidates": int(n_cand), "posterior": why,
            "solution": b.solution,
            "n_programs": int(b.n_programs), "seconds": time.perf_counter() - t0,
            "n_cells": int(n), **mc}


def _no_monte_carlo() -> dict:
    """A unit result's Monte Carlo fields when the unit was not sampled."""
    return {"mc_summary": "", "mc_converged": -1, "rhat": np.zeros(0), "ess": np.zeros(0)}


def _posterior(task, b) -> tuple:
    """(probs over lo + w, count, 'exact') or (empty, -1, reason)."""
    from kernels.sum_enum import enumerate_sums, suggest_order
    if (task.rlo != task.rhi).any():
        return np.zeros((0, 0)), -1, ("published windows, not exact sums: the unit's "
                                      "posterior needs rk.posterior on the release")
    n = task.cells.size
    if n == 0:
        return np.zeros((0, 1)), 1, "exact"
    # the exact bounds shrink every window before the walk
    lo = b.lower.astype(np.int64)
    W = (b.upper - b.lower + 1).astype(np.int64)
    off = lo - task.lo
    lw, inside = _shifted_log_weights(task.lw, off, W - 1)
    R = task.rows
    order = suggest_order(R.indptr.astype(np.int64), R.indices.astype(np.int64), n)
    out = enumerate_sums(lo, W, lw, R.indptr.astype(np.int64), R.indices.astype(np.int64),
                         task.rlo.astype(np.int64), order, keep=0,
                         max_leaves=int(task.max_candidates),
                         max_nodes=int(20 * task.max_candidates))
    count, overflow, _leaves, _nodes, complete, log_z, probs, *_ = out
    if not complete:
        return np.zeros((0, 0)), -1, (f"more than {task.max_candidates:.3g} candidate "
                                      "tables in this unit (raise max_candidates)")
    if not np.isfinite(log_z):
        return np.zeros((0, 0)), 0, "the prior gives every consistent table weight 0"
    # shift back onto the task's windows (lo + w)
    full = np.zeros((n, int((task.hi - task.lo).max()) + 1))
    r, c = np.nonzero(inside)
    full[r, off[r] + c] = probs[r, c]
    return full, (-1 if overflow else int(count)), "exact"


def _shifted_log_weights(lw, off, width) -> tuple:
    """The prior log weights of ``lo + off + w`` for ``w = 0 .. width`` (row by row; ``lw``
    holds those of ``lo + w``), ``-inf`` past each row's width: ``(weights, inside)``."""
    w = np.arange(int(np.max(width, initial=0)) + 1)[None, :]
    inside = w <= np.asarray(width)[:, None]
    cols = np.minimum(np.asarray(off)[:, None] + w, lw.shape[1] - 1)
    return np.where(inside, np.take_along_axis(lw, cols, axis=1), -np.inf), inside


def _monte_carlo(task, b, why, progress=None) -> tuple:
    """The unit's posterior by the block-redraw chains (:mod:`.inference.sums_gibbs`) on
    its uncertain cells (the certain ones fixed): ``(probs over lo + w, "monte carlo",
    diagnostics)``, or no posterior and the reason; ``progress(done, total)`` in sweeps
    of the chains' rounds."""
    from .inference import sums_gibbs
    n = task.cells.size
    none = _no_monte_carlo()
    unc = np.flatnonzero(b.lower != b.upper)
    # the groups redrawn together: the codes of the unit's dim, crossed with the next dims
    # (by their number of codes) until the uncertain cells fall into at least 3 groups
    # (with 2, every redraw would take the whole unit: more than max_candidates)
    codes = (task.groups if task.groups is not None else np.zeros((n, 1), np.int64))[unc]
    groups = sums_gibbs.groups_of(codes)
    n_groups = int(groups.max(initial=-1)) + 1
    if n_groups < 3:
        return np.zeros((0, 0)), why + "; no Monte Carlo: its uncertain cells fall into " \
            f"{n_groups} groups (the redraws of a unit take a few of at least 3)", none
    lb = b.lower.astype(np.int64)
    R = task.rows.tocsr()
    Ru = R[:, unc]
    used = np.diff(Ru.indptr) > 0
    Ru = Ru[used]
    x0 = b.solution.astype(np.int64)
    target = np.asarray(task.rlo[used] - R[used] @ np.where(b.lower == b.upper, x0, 0),
                        np.int64)
    lw, _ = _shifted_log_weights(task.lw[unc], (lb - task.lo)[unc], (b.upper - b.lower)[unc])
    try:
        sd = sums_gibbs.sample(Ru, target, lb[unc], b.upper[unc].astype(np.int64), lw,
                               groups, x0[unc], chains=task.chains, draws=task.draws,
                               seed=task.seed, max_seconds=task.mc_seconds,
                               until_converged=True, box_codes=codes[:, 1:],
                               progress=progress)
    except sums_gibbs.TooSlow as e:
        return np.zeros((0, 0)), f"{why}; no Monte Carlo: {e} (raise mc_seconds)", none
    full = np.zeros((n, int((task.hi - task.lo).max()) + 1))
    full[np.arange(n), (lb - task.lo)] = 1.0          # certain cells: their one value
    full[unc] = 0.0
    r, c = np.nonzero(sd.probs)
    full[unc[r], sd.lo[r] - task.lo[unc[r]] + c] = sd.probs[r, c]
    rhat = np.full(n, np.nan)
    ess = np.full(n, np.nan)
    rhat[unc] = sd.diagnostics["rhat"].values
    ess[unc] = np.minimum(sd.diagnostics["ess_bulk"].values,
                          sd.diagnostics["ess_tail"].values)
    summary = (f"{sd.summary}; {unc.size} uncertain cells in {n_groups} groups, "
               f"{sd.moved:.1%} of redraws moved, {sd.skipped:.1%} skipped (a "
               f"cap on the subsystem's solutions); {sd.boxes:.0%} of the redraws were "
               "boxes (a few codes of each other dim in a few groups)")
    return full, "monte carlo", {"mc_summary": summary, "mc_converged": int(sd.converged),
                                 "rhat": rhat, "ess": ess}


# --- the publication as published numbers over the finest cells ----------------------

class _Publication:
    """Published numbers of a set: every published cell's window [low, high] (equal:
    exactly published), the finest cells' truth where known, the system."""

    coverage = None                  # a noisy release: Pr(every noise within its window)

    def __init__(self, x, coverage=None):
        from .table import Table
        from .table_set import TableSet, TableSetRelease
        if isinstance(x, Table):
            x = TableSet(x)
        if isinstance(x, TableSet):
            s = x.system
            if x.kind != "count":
                raise ValueError("reconstruct rebuilds counts of persons: the set holds "
                                 "magnitudes")
            vals = np.where(s.published, x.values, np.nan)
            if np.isnan(vals[s.published]).any():
                j = int(np.flatnonzero(s.published & np.isnan(vals))[0])
                raise ValueError(f"the published cell {s.labels()[j]} has no value")
            self.low, self.high = vals.copy(), vals.copy()
            fin = x.values[: s.n_interior]
            self.truth = None if np.isnan(fin).any() else np.rint(fin).astype(np.int64)
            if coverage is not None:
                raise ValueError("coverage= is for releases with unbounded noise "
                                 "(rk.NoisyCounts); these tables are published exactly")
            self.what = "exactly published tables"
            self.mechanism = "exact"
            self.tableset = x
        elif isinstance(x, TableSetRelease):
            s = x.system
            if x.kind != "count":
                raise ValueError("reconstruct rebuilds counts of persons: the release holds "
                                 "magnitudes")
            name = x.mechanism.base.name
            vals = np.asarray(x.values, float)
            if name in ("cell_suppression", "margins_only"):
                self.low, self.high = vals.copy(), vals.copy()
                self.what = f"{x.mechanism.describe()}: hidden cells unknown"
            elif name == "random_rounding":
                B = int(x.mechanism.base.base)
                self.low = np.maximum(vals - (B - 1), 0)
                self.high = vals + (B - 1)
                self.what = (f"{x.mechanism.describe()}: every published cell within "
                             f"{B - 1} of its original")
            elif name == "cell_key":
                self.low, self.high = _ptable_windows(x.mechanism.base.ptable, vals, s)
                self.what = (f"{x.mechanism.describe()}: every published cell within the "
                             "p-table's perturbations of its original (the hull of the "
                             "originals it can come from; the keys' dependence between "
                             "cells is not used: certainty stays sound, bounds are outer)")
            elif name == "noisy_counts":
                if coverage is None:
                    raise ValueError(
                        f"{x.mechanism.describe()} has no hard window on any cell: give "
                        "coverage= (e.g. 0.999), the least probability that every "
                        "published cell's noise lies within the windows reconstruct "
                        "bounds; then 'certain' holds with that probability over the "
                        "noise (or take its posterior: rk.posterior(release, prior))")
                self.low, self.high, w = _noise_windows(x.mechanism.base, vals, s,
                                                        coverage)
                self.coverage = coverage
                self.what = (f"{x.mechanism.describe()}: every published cell within "
                             f"{w} of its original, which holds for all "
                             f"{int((~np.isnan(vals)).sum())} "
                             f"published cells at once with probability >= {coverage:g} "
                             "over the noise (union bound): certainty and bounds hold "
                             "with that probability")
            else:
                raise ValueError(
                    f"reconstruct bounds exactly published, suppressed, randomly rounded, "
                    f"cell-key perturbed and noisy (with coverage=) table sets, not a "
                    f"{name} release: its posterior is rk.posterior(release, prior)")
            if coverage is not None and name != "noisy_counts":
                raise ValueError(f"coverage= is for releases with unbounded noise "
                                 f"(rk.NoisyCounts); a {name} release has hard windows")
            self.truth = None
            self.mechanism = name
            self.tableset = x.tableset
        else:
            raise TypeError("reconstruct takes an rk.TableSet (exactly published tables), "
                            "a hierarchical rk.Table or an rk.TableSetRelease, got "
                            f"{type(x).__name__}")
        self.system = s
        bad = ~np.isnan(self.low) & ((self.low < -1e-9) | (np.abs(self.low - np.rint(
            self.low)) > 1e-9) | (np.abs(self.high - np.rint(self.high)) > 1e-9))
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(f"the published cell {s.labels()[j]} is {vals[j]:g}: a count "
                             "must be a nonnegative integer")


def _noise_windows(mech, vals, s, coverage) -> tuple:
    """Windows [low, high] of the originals of a noisy release (NaN where not
    published) and their half-width ``w``: the least ``w`` with Pr(|noise| > w) <= (1 -
    coverage) / n for each of the n published cells, so that every noise lies within
    +-w with probability >= ``coverage`` (union bound); a clipped published 0 says
    original + noise <= 0, i.e. original in [0, w] on the same event."""
    from .inference.certify import NoTable
    from .mechanisms.noise import _Noise
    coverage = V.probability(coverage, "coverage")
    if not 0.0 < coverage < 1.0:
        raise ValueError(f"coverage must lie in (0, 1): the probability that every noise "
                         f"lies in its window, got {coverage!r}")
    idx = np.flatnonzero(~np.isnan(vals))
    noise = _Noise(mech.distribution, mech.scale)
    per = (1.0 - coverage) / max(idx.size, 1)
    # Pr(|noise| > w) = 2 Pr(noise <= -(w + 1)) by symmetry, over w = 0 .. a reach past it
    top = noise.reach(per / 4) + 2
    w = np.arange(top + 1)
    two_sided = np.log(2.0) + noise.log_lower_tail(-(w + 1))
    ok = np.flatnonzero(two_sided <= np.log(per))
    if not ok.size:                  # never: the reach's mass beyond is below per / 4
        raise RuntimeError(f"internal error: no window of the noise within {top}")
    half = int(ok[0])
    low = np.full(vals.shape, np.nan)
    high = np.full(vals.shape, np.nan)
    y = np.rint(vals[idx])
    low[idx] = np.maximum(y - half, 0)
    high[idx] = np.where((y <= 0) & mech.clip, half, y + half)
    empty = high[idx] < low[idx]
    if empty.any():
        j = idx[int(np.argmax(empty))]
        raise NoTable(f"the published cell {s.labels()[j]} ({vals[j]:g}) lies more than "
                      f"{half} below 0: no nonnegative original within the windows of "
                      f"coverage {coverage:g}")
    return low, high, half


def _ptable_windows(pt, vals, s) -> tuple:
    """Per published cell: the least and greatest original the p-table can perturb to its
    published value (NaN where not published)."""
    low = np.full(vals.shape, np.nan)
    high = np.full(vals.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(vals))
    y = np.rint(vals[idx]).astype(np.int64)
    cand = y[:, None] - np.arange(pt.vmin, pt.vmax + 1)[None, :]      # originals i = y - v
    ok = (cand >= 0) & (pt.prob(y[:, None], np.maximum(cand, 0)) > 0)
    none = ~ok.any(axis=1)
    if none.any():
        from .inference.certify import NoTable
        j = idx[int(np.argmax(none))]
        raise NoTable(f"the published cell {s.labels()[j]} ({vals[j]:g}) is no value the "
                      "p-table publishes for any original count")
    big = np.iinfo(np.int64).max
    low[idx] = np.where(ok, cand, big).min(axis=1)
    high[idx] = np.where(ok, cand, -1).max(axis=1)
    return low, high


def _unit_of(pub, unit, level) -> tuple:
    """(label per finest cell's unit index, unit labels)."""
    s = pub.system
    n_fin = s.n_interior
    if unit is None:
        return _components(pub), None
    if unit not in s.dims:
        raise ValueError(f"unit={unit!r} is no dim of the set; dims are {list(s.dims)}")
    k = s.dims.index(unit)
    codes = list(s.coords[unit])
    if level is None:
        labs = codes
    elif isinstance(level, dict):
        missing = [c for c in codes if c not in level]
        if missing:
            raise ValueError(f"level= maps no unit to the {unit!r} codes {missing[:5]}")
        labs = [level[c] for c in codes]
    else:
        depth = V.integer(level, "level", 1)
        h = _hierarchy_of(pub, unit)
        labs = []
        for c in codes:
            path = [c]
            while h.parent(path[-1]) is not None:
                path.append(h.parent(path[-1]))
            path = path[::-1]                     # total, ..., c
            if depth >= len(path):
                raise ValueError(f"level={depth} is below the finest code {c!r} of dim "
                                 f"{unit!r} (its depth is {len(path) - 1})")
            labs.append(path[depth])
    names = list(dict.fromkeys(labs))
    pos = {u: i for i, u in enumerate(names)}
    idx = np.unravel_index(np.arange(n_fin), s.shape)[k]
    return np.array([pos[labs[i]] for i in idx], np.int64), names


def _hierarchy_of(pub, dim):
    """A hierarchy of ``dim`` (any table's) whose leaves are the finest codes."""
    fin = set(pub.system.coords[dim])
    for t in pub.tableset.tables.values():
        for h in (t.hierarchies or {}).get(dim, ()):
            if set(h.leaves) == fin:
                return h
    raise ValueError(f"level= as a depth needs a hierarchy of dim {dim!r} whose leaves are "
                     f"its finest codes; no table has one: give level={{code: unit}}")


def _components(pub) -> np.ndarray:
    """The connected parts of the finest cells (two cells in one published sum)."""
    from scipy.sparse.csgraph import connected_components
    s = pub.system
    n_fin = s.n_interior
    M = s.M.tocsr()
    agg = np.flatnonzero(~np.isnan(pub.low) & (np.arange(s.n_var) >= n_fin))
    sub = M[agg]
    # a bipartite graph finest cells <-> sums, as one adjacency over both
    B = sp.bmat([[None, sub.T], [sub, None]]).tocsr()
    _, lab = connected_components(B, directed=False)
    fin = lab[:n_fin]
    _, inv = np.unique(fin, return_inverse=True)
    return inv.astype(np.int64)


# --- the audit -------------------------------------------------------------------------

def reconstruct(release, prior=None, *, unit=None, level=None, bounds="exact",
                threshold: float = 0.95, max_candidates: float = MAX_CANDIDATES,
                time_limit: float = 60.0, out=None, workers=None, scheduler=None,
                progress=None, memory=None, truth=None, coverage=None,
                monte_carlo: bool = True, draws: int = 1000, chains: int = 4,
                seed: int = 0, mc_seconds: float = 600.0,
                unit_progress=None) -> xr.Dataset:
    """Which persons an intruder rebuilds from a publication, with certainty or with a
    given confidence (see the module).

    Parameters
    ----------
    release : rk.TableSet, hierarchical rk.Table or rk.TableSetRelease
        Exactly published tables of one population (a TableSet: its published cells are
        the publication; its finest values, when built from microdata, are the truth the
        result is checked against), or a suppressed or randomly rounded release of them.
    prior : rk.priors prior, optional
        The intruder's prior over the finest cells (``rk.priors.Uniform()``: every
        consistent table alike).  Without one: bounds and certainty only.
    unit : str, optional
        The dim along which the work splits (the geography); default: the connected parts
        of the system (nothing dropped).
    level : int or dict, optional
        The unit of each finest code of ``unit``: its ancestor at this depth of the dim's
        hierarchy (1: the children of the total), or ``{code: unit}``; default: each code.
    bounds : {"exact", "lp", "none"}
        The bounds of the cells that are not certain: ``"exact"`` by integer programs (up
        to two a cell); ``"lp"`` by the LP relaxation (exact where a consistent table
        reaches it, else an outer bound; much faster on large units); ``"none"``: the box
        0 .. the smallest published sum holding the cell.  Certainty is exact in every
        mode; ``exact`` flags the cells whose bounds are proven.
    threshold : float
        The confidence at which a claimed record counts as reconstructed
        (``share_confident``).
    max_candidates : float
        Candidate tables a unit's exact posterior may enumerate.
    monte_carlo : bool
        Past ``max_candidates``, the unit's posterior by Monte Carlo
        (:mod:`riskengine.inference.sums_gibbs`: its uncertain cells' groups -- blocks of
        the unit -- redrawn a few at a time from their exact conditional law),
        marked approximate with its diagnostics (``rhat``, ``ess``; a unit whose chains
        have not converged is named in ``attrs`` and warned of); False: no posterior there.
    draws, chains, seed : int
        Kept draws per chain (one per sweep of the unit's groups in the first round),
        chains per unit (>= 2) and the seed of the Monte Carlo units.
    mc_seconds : float
        The time one unit's chains may take.  A unit whose first round of ``draws`` is
        estimated (by timing a few redraws first) to take longer gets no posterior, and
        says so; otherwise the chains run on from where they are, in rounds of ``draws``
        draws at twice the thinning, until they converge (R-hat <= 1.01, ESS >= 400) or
        the next round would pass ``mc_seconds`` (the unit's ``diagnostics`` name the
        rounds; how many fit depends on the machine).
    time_limit : float
        Seconds per integer program (a program stopped there gives outer bounds and leaves
        its cells uncertain: never a false certainty).
    out : path, optional
        A directory: each unit's result ``units/<unit>.nc`` as it finishes, and
        ``summary.csv``; a rerun reuses the units already there (same inputs).
    workers : int, optional
        Local worker processes (default: serial).
    scheduler : "dask", "tcp://host:port" or distributed.Client, optional
        Run the units on dask distributed instead (a failed unit is retried, then
        reported).
    progress : callable, optional
        ``progress(done, total)`` after each unit.
    unit_progress : callable, optional
        ``unit_progress(key, done, total)`` about once a second while a unit's Monte
        Carlo chains run (sweeps of their current round; the unit's key, e.g. its
        tract).  Units on the machines of a remote dask cluster do not report it.
    memory : int or str, optional
        The memory budget per unit (default: half the machine's available memory); a unit
        estimated past it is refused before anything runs.
    coverage : float, optional
        For a release with unbounded noise (``rk.NoisyCounts``, geometric or discrete
        Gaussian) only, where nothing is certain: the least probability, over the noise,
        that every published cell's original lies within its window (published value
        +- w, the least ``w`` with Pr(|noise| > w) <= (1 - coverage) / n for the n
        published cells: a union bound).  ``certain``, the bounds and the certain
        records then hold with at least that probability (a confidence statement over
        the noise, ``attrs["coverage"]``), not always.
    truth : rk.TableSet or xarray.DataArray, optional
        The real finest table the claims are scored against, when it is not the one the
        tables were made from (a publication of swapped records: the original records'
        TableSet).  Aligned by dim names and labels; a label the publication does not
        have counts its persons as ones no claim can reach (``persons_unplaced``).

    Returns
    -------
    xarray.Dataset
        Over the finest cells (the set's dims): ``lower``, ``upper``, ``certain``,
        ``exact``, ``published``, ``unit``, with a prior ``mean``, ``mode``,
        ``prob_mode`` (and where a unit's posterior is Monte Carlo ``rhat``, ``ess``:
        its R-hat and least of bulk / tail ESS, NaN elsewhere), with the truth
        ``value``; over ``record`` (each claim "this cell holds at least k persons",
        ranked by confidence): ``record_cell``, ``record_k``, ``confidence``,
        ``record_certain`` (and ``record_true``, ``record_confidence_exact``).  Its
        ``attrs`` give the shares of persons reconstructed with certainty and with
        confidence >= ``threshold``, the units, the spanning cells implied
        (``implied_cells``) and dropped (``dropped_cells``), what "certain" means
        (``certainty``: "proven", or with probability >= ``coverage`` over the noise)
        and the work done.

    Examples
    --------
    Two tables of six persons; the finest cells (region x sex x age) follow:

    >>> import pandas as pd, riskengine as rk
    >>> people = pd.DataFrame({"region": list("NNNSSS"), "sex": list("FFFFMM"),
    ...                        "age": ["y", "y", "o", "y", "o", "o"]})
    >>> ts = rk.TableSet.from_pandas(people, {"A": ["region", "sex"], "B": ["region", "age"]})
    >>> ds = rk.reconstruct(ts)
    >>> int(ds["certain"].sum())            # N's 3 persons are all F: 4 cells certain
    4
    >>> ds["lower"].sel(region="N", sex="F").values.tolist()
    [2, 1]
    >>> int(ds["lower"].sel(region="S", sex="M", age="o"))   # S: 2 of 3 M, 2 of 3 old
    1
    >>> ds.attrs["persons_certain"], ds.attrs["persons"]      # 4 records of 6 certain
    (4, 6)
    """
    from ._units import run_units
    pub = _Publication(release, coverage)
    s = pub.system
    n_fin = s.n_interior
    threshold = V.probability(threshold, "threshold")
    if not threshold > 0.0:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold!r}")
    max_candidates = float(max_candidates)
    if not max_candidates >= 1:
        raise ValueError(f"max_candidates must be >= 1, got {max_candidates!r}")
    if bounds not in ("exact", "lp", "none", True, False):
        raise ValueError(f"bounds must be 'exact', 'lp' or 'none', got {bounds!r}")
    time_limit = float(time_limit)
    if not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    draws = V.integer(draws, "draws", 10)
    chains = V.integer(chains, "chains", 2)
    seed = V.integer(seed, "seed", 0)
    mc_seconds = float(mc_seconds)
    if not mc_seconds > 0:
        raise ValueError(f"mc_seconds must be > 0, got {mc_seconds!r}")
    unit_of, names = _unit_of(pub, unit, level)
    n_units = int(unit_of.max()) + 1 if n_fin else 0
    if names is None:
        names = [f"part{i + 1}" for i in range(n_units)]
    mc = {"draws": draws if monte_carlo else 0, "chains": chains, "seed": seed,
          "mc_seconds": mc_seconds, "groups": _group_codes(s, unit)}
    tasks, fixed, dropped, meta = _tasks(pub, prior, unit_of, names, bounds, time_limit,
                                         max_candidates, memory, mc)
    results = run_units(tasks, solve_unit, out=out, workers=workers, scheduler=scheduler,
                        progress=progress, unit_progress=unit_progress)
    ds = _assemble(pub, prior, tasks, results, fixed, unit_of, names, dropped, threshold,
                   unit is not None)
    if ds.attrs.get("converged") == 0:
        import warnings

        from .inference.gibbs import ConvergenceWarning
        warnings.warn(f"reconstruct: {ds.attrs['approximation']}", ConvergenceWarning,
                      stacklevel=2)
    ds.attrs["implied_cells"] = meta["implied"]
    if meta["implied"] and not dropped:
        ds.attrs["implied_note"] = (
            f"{meta['implied']} published cells span several units; each is the sum of "
            "published cells of the units it spans (checked cell by cell, values "
            "included), so leaving it out of the units loses nothing: exact")
    if truth is not None:
        _score(ds, truth, threshold)
    if unit is not None:
        whole = ds["certain"].all([d for d in ds["certain"].dims if d != unit])
        ds.attrs["areas"] = int(whole.size)
        ds.attrs["areas_certain"] = int(whole.sum())
        ds.attrs["share_areas_certain"] = float(whole.mean())
    return ds


def _group_codes(s, unit) -> np.ndarray:
    """(n_fin, ndim) the code index of each finest cell on each dim, the unit's dim first
    and then the others by their number of codes (the Monte Carlo redraws' groups)."""
    shape = tuple(s.shape)
    order = sorted(range(len(shape)), key=lambda j: (s.dims[j] != unit, -shape[j]))
    idx = np.unravel_index(np.arange(int(np.prod(shape))), shape)
    return np.stack([idx[j] for j in order], axis=1).astype(np.int32)


def _tasks(pub, prior, unit_of, names, bounds, time_limit, max_candidates, memory, mc):
    from ._budget import budget, fmt_bytes
    from .inference.certify import NoTable
    s = pub.system
    n_fin = s.n_interior
    low, high = pub.low, pub.high
    labels = s.labels()
    fl, fh = low[:n_fin], high[:n_fin]
    fixed = ~np.isnan(fl) & (fl == fh)
    M = s.M.tocsr()
    is_agg = ~np.isnan(low) & (np.arange(s.n_var) >= n_fin)
    agg = np.flatnonzero(is_agg)
    kv = np.where(fixed, fl, 0.0)
    sub = M[agg]
    base = sub @ kv
    rlo = np.rint(low[agg] - base).astype(np.int64)
    rhi = np.rint(high[agg] - base).astype(np.int64)
    unk = np.flatnonzero(~fixed)
    local = np.full(n_fin, -1, np.int64)
    local[unk] = np.arange(unk.size)
    Mu = sub[:, unk].tocsr()
    # rows of no unknown cell: they must hold as published
    empty = np.diff(Mu.indptr) == 0
    bad = empty & ((rlo > 0) | (rhi < 0))
    if bad.any():
        j = agg[int(np.argmax(bad))]
        raise NoTable(f"the published cell {labels[j]} ({low[j]:g}) is not the sum of the "
                      "published cells it holds: no table is consistent with the publication")
    # the box: 0 (or a rounding window's low end) .. the smallest published sum holding it
    lo = np.zeros(unk.size, np.int64)
    hi = np.full(unk.size, np.iinfo(np.int64).max // 4)
    win = ~np.isnan(fl[unk])
    lo[win] = np.rint(fl[unk][win]).astype(np.int64)
    hi[win] = np.rint(fh[unk][win]).astype(np.int64)
    nz = Mu.tocoo()
    np.minimum.at(hi, nz.col, rhi[nz.row])
    if prior is not None:
        plo, phi = prior.bounds(s.shape, s.dims, s.coords)
        plo = np.asarray(plo).reshape(-1)[unk]
        phi = np.asarray(phi).reshape(-1)[unk]
        lo = np.maximum(lo, plo)
        hi = np.where(phi >= 0, np.minimum(hi, phi), hi)
    free = hi >= np.iinfo(np.int64).max // 4
    if free.any():
        c = unk[int(np.argmax(free))]
        raise ValueError(f"finest cell {labels[c]} is in no published sum: nothing bounds "
                         "it (publish a total holding it, or give a prior with an upper "
                         "bound)")
    if (hi < lo).any():
        c = unk[int(np.argmax(hi < lo))]
        raise NoTable(f"finest cell {labels[c]} has no possible value (its bounds "
                      f"{lo[local[c]]} > {hi[local[c]]})")
    lw_all = None
    if prior is not None:
        Wmax = int((hi - lo).max(initial=0)) + 1
        need = 8.0 * n_fin * Wmax * 3
        cap = budget(memory)
        if need > cap:
            raise MemoryError(f"the prior's weights of {n_fin} finest cells x {Wmax} values "
                              f"need {fmt_bytes(need)}; the memory budget is "
                              f"{fmt_bytes(cap)}")
        vals = np.zeros((n_fin, Wmax), np.int64)
        vals[unk] = lo[:, None] + np.arange(Wmax)
        vals[fixed] = np.rint(fl[fixed]).astype(np.int64)[:, None]
        lw = np.asarray(prior.log_weights(vals.reshape(s.shape + (Wmax,)), s.dims, s.coords),
                        float).reshape(n_fin, Wmax)
        lw_all = lw[unk]
        lw_all[np.arange(Wmax)[None, :] > (hi - lo)[:, None]] = -np.inf
    # rows to units: a row whose unknown cells lie in one unit belongs to it
    cu = unit_of[unk]
    has = np.diff(Mu.indptr) > 0
    starts = Mu.indptr[:-1][has]
    u_min = np.full(agg.size, -1, np.int64)
    u_max = np.full(agg.size, -1, np.int64)
    if starts.size:
        u_min[has] = np.minimum.reduceat(cu[Mu.indices], starts)
        u_max[has] = np.maximum.reduceat(cu[Mu.indices], starts)
    row_unit = np.where(has & (u_min == u_max), u_min, -1)
    across = np.flatnonzero(has & (u_min != u_max))
    implied = _implied(Mu, rlo, rhi, cu, across, row_unit, n_units=len(names))
    bad = implied == -1
    if bad.any():
        j = agg[across[int(np.argmax(bad))]]
        raise NoTable(f"the published cell {labels[j]} ({low[j]:g}) is not the sum of the "
                      "published cells of the units it spans: no table is consistent "
                      "with the publication")
    dropped = agg[across[implied == 0]].tolist()
    meta = {"implied": int((implied == 1).sum())}
    tasks = []
    cap = budget(memory)
    for u, name in enumerate(names):
        cols = np.flatnonzero(cu == u)
        rows = np.flatnonzero(row_unit == u)
        R = Mu[rows][:, cols].tocsr()
        t = UnitTask(key=str(name), cells=unk[cols], rows=R, rlo=rlo[rows], rhi=rhi[rows],
                     lo=lo[cols], hi=hi[cols],
                     lw=None if lw_all is None else lw_all[cols], bounds=bounds,
                     time_limit=time_limit, max_candidates=max_candidates,
                     groups=mc["groups"][unk[cols]], draws=mc["draws"],
                     chains=mc["chains"], seed=mc["seed"], mc_seconds=mc["mc_seconds"])
        need = _task_memory(t)
        if need > cap:
            raise MemoryError(f"unit {name!r} ({cols.size} unknown cells, {rows.size} sums) "
                              f"is estimated at {fmt_bytes(need)}; the memory budget is "
                              f"{fmt_bytes(cap)}: split it finer (unit=, level=)")
        t.meta["memory"] = need
        tasks.append(t)
    return tasks, fixed, dropped, meta


def _implied(Mu, rlo, rhi, cu, across, row_unit, n_units) -> np.ndarray:
    """Per row of ``across`` (rows whose unknown cells span several units): 1 when the
    rows kept in the units imply it -- its unknown cells in each unit are exactly those
    of a kept row, and the sum of those rows' windows lies inside its own (a county cell
    that is the sum of published tract cells: dropping it loses nothing); -1 when they
    contradict it (the sums' windows miss its own: no consistent table); 0 otherwise (a
    relaxation).  Matched by a random signature of the cell sets, then checked cell by
    cell."""
    out = np.zeros(across.size, np.int64)
    if not across.size:
        return out
    n_unk = Mu.shape[1]
    w = np.random.default_rng(0x5EED).integers(1, 2 ** 31, size=n_unk).astype(np.float64)
    cnt = np.diff(Mu.indptr)
    sig = Mu @ w                      # exact in float64: below 2^31 x 2^21 members
    kept = np.flatnonzero(row_unit >= 0)
    if not kept.size:
        return out
    first = {}
    for r, key in zip(kept.tolist(), zip(row_unit[kept].tolist(), cnt[kept].tolist(),
                                         sig[kept].tolist())):
        first.setdefault(key, r)
    D = Mu[across].tocoo()
    pu = cu[D.col]
    code = D.row.astype(np.int64) * n_units + pu
    parts, inv = np.unique(code, return_inverse=True)
    psig = np.bincount(inv, weights=w[D.col])
    pcnt = np.bincount(inv)
    prow, punit = parts // n_units, parts % n_units
    match = np.array([first.get(k, -1) for k in zip(punit.tolist(), pcnt.tolist(),
                                                    psig.tolist())], np.int64)
    ok = match >= 0
    # exact check: every cell of a part lies in its matched row (same count: same set)
    K = Mu[kept].tocoo()
    keys = np.sort(kept[K.row].astype(np.int64) * n_unk + K.col)
    q = np.where(ok[inv], match[inv], 0).astype(np.int64) * n_unk + D.col
    pos = np.minimum(np.searchsorted(keys, q), keys.size - 1)
    hit = keys[pos] == q
    ok &= np.bincount(inv, weights=~hit & ok[inv], minlength=parts.size) == 0
    all_ok = np.bincount(prow, weights=~ok, minlength=across.size) == 0
    m = np.where(ok, match, 0)
    slo = np.bincount(prow, weights=np.where(ok, rlo[m], 0), minlength=across.size)
    shi = np.bincount(prow, weights=np.where(ok, rhi[m], 0), minlength=across.size)
    dlo, dhi = rlo[across], rhi[across]
    out[all_ok & (slo >= dlo) & (shi <= dhi)] = 1
    out[all_ok & ((shi < dlo) | (slo > dhi))] = -1
    return out


def _task_memory(t) -> float:
    """Bytes a unit needs at its peak: HiGHS's model and search (about 2 kB per column
    and 200 B per nonzero, measured on units of 100-3000 cells) and the posterior's
    per-cell grids; with Monte Carlo, the chains' draws three times over (the draws and
    arviz's two float copies)."""
    n = t.cells.size
    w = int((t.hi - t.lo).max(initial=0)) + 1
    post = 0.0 if t.lw is None else 3 * 8.0 * n * w
    if t.lw is not None and t.draws:
        post += 3 * 8.0 * n * t.draws * t.chains
    return 2e6 + 2000.0 * n + 200.0 * t.rows.nnz + post


def _assemble(pub, prior, tasks, results, fixed, unit_of, names, dropped, threshold,
              split) -> xr.Dataset:
    s = pub.system
    n_fin = s.n_interior
    fl = pub.low[:n_fin]
    lower = np.zeros(n_fin, np.int64)
    upper = np.zeros(n_fin, np.int64)
    certain = np.zeros(n_fin, bool)
    exact = np.ones(n_fin, bool)
    lower[fixed] = upper[fixed] = np.rint(fl[fixed]).astype(np.int64)
    certain[fixed] = True
    mean = np.full(n_fin, np.nan)
    mode = np.full(n_fin, -1, np.int64)
    pmode = np.full(n_fin, np.nan)
    tails = []                     # per unit with a posterior: (cells, lo, Pr(x >= lo + w))
    n_post = 0
    reasons = {}
    mc_units, mc_bad = [], []      # units sampled by Monte Carlo; of them, not converged
    mc_diag = []                   # their diagnostics, one line each
    rhat = np.full(n_fin, np.nan)
    ess = np.full(n_fin, np.nan)
    sampled = np.zeros(n_fin, bool)
    for t, r in zip(tasks, results):
        c = t.cells
        lower[c], upper[c] = r["lower"], r["upper"]
        certain[c], exact[c] = r["certain"], r["exact"]
        if prior is None:
            continue
        if r["posterior"] == "monte carlo":
            mc_units.append(t.key)
            mc_diag.append(f"{t.key}: {r['mc_summary']}")
            if not int(r["mc_converged"]):
                mc_bad.append((t.key, str(r["mc_summary"])))
            rhat[c], ess[c] = r["rhat"], r["ess"]
            sampled[c] = ~np.asarray(r["certain"], bool)
        elif r["posterior"] != "exact":
            reasons.setdefault(r["posterior"], []).append(t.key)
            continue
        else:
            n_post += 1
        P = r["probs"]
        if P.size == 0 and c.size:
            continue
        vals = t.lo[:, None] + np.arange(P.shape[1])[None, :]
        mean[c] = (P * vals).sum(axis=1)
        k = P.argmax(axis=1)
        mode[c] = t.lo + k
        pmode[c] = P[np.arange(c.size), k]
        tails.append((c, t.lo, np.cumsum(P[:, ::-1], axis=1)[:, ::-1]))
    if prior is not None:
        kv = np.rint(fl[fixed]).astype(np.int64)
        mean[fixed] = kv
        mode[fixed] = kv
        pmode[fixed] = 1.0
    if pub.truth is not None:
        wrong = (certain & (lower != pub.truth)) | (lower > pub.truth) | (upper < pub.truth)
        if wrong.any():                       # never silently wrong: a bug, not a result
            j = int(np.argmax(wrong))
            raise RuntimeError(f"internal error: {s.labels()[j]} bounded by [{lower[j]}, "
                               f"{upper[j]}] but it holds {pub.truth[j]}")
    # records: "cell j holds at least k persons", k = 1 .. upper: certain up to lower,
    # then Pr(x >= k) where the unit has a posterior (else no confidence: unranked)
    c1, k1 = _claims(np.arange(n_fin), lower, np.ones(n_fin, np.int64))
    cells_, ks_, confs_ = [c1], [k1], [np.ones(c1.size)]
    ranked = np.zeros(n_fin, bool)
    for c, lo_c, cum in tails:
        i, k = _claims(np.arange(c.size), upper[c] - lower[c], lower[c] + 1)
        cells_.append(c[i])
        ks_.append(k)
        confs_.append(cum[i, k - lo_c[i]])
        ranked[c] = True
    n_unranked = int((upper - lower)[~ranked].sum())
    rec_cell = np.concatenate(cells_)
    rec_k = np.concatenate(ks_)
    conf = np.concatenate(confs_)
    order = np.lexsort((rec_k, rec_cell, -conf))
    rec_cell, rec_k, conf = rec_cell[order], rec_k[order], conf[order]
    rec_cert = rec_k <= lower[rec_cell]
    rec_exact = rec_cert | ~sampled[rec_cell]
    solution = np.where(fixed, lower, 0)
    for t, r in zip(tasks, results):
        solution[t.cells] = r["solution"]
    persons = _persons(pub, int(solution.sum()))
    shape = s.shape
    dims = s.dims
    coords = {d: list(s.coords[d]) for d in dims}
    data = {
        "lower": (dims, lower.reshape(shape)),
        "upper": (dims, upper.reshape(shape)),
        "certain": (dims, certain.reshape(shape)),
        "exact": (dims, exact.reshape(shape)),
        "published": (dims, fixed.reshape(shape)),
        "unit": (dims, np.array([str(names[u]) for u in unit_of], dtype=object).reshape(shape)),
        "record_cell": (("record",), rec_cell),
        "record_k": (("record",), rec_k),
        "confidence": (("record",), conf),
        "record_certain": (("record",), rec_cert),
    }
    for i, d in enumerate(dims):
        idx = np.unravel_index(rec_cell, shape)[i] if rec_cell.size else np.zeros(0, int)
        data[f"record_{d}"] = (("record",), np.array([coords[d][q] for q in idx],
                                                      dtype=object))
    if prior is not None:
        data["mean"] = (dims, mean.reshape(shape))
        data["mode"] = (dims, mode.reshape(shape))
        data["prob_mode"] = (dims, pmode.reshape(shape))
    if mc_units:
        data["rhat"] = (dims, rhat.reshape(shape))
        data["ess"] = (dims, ess.reshape(shape))
        data["record_confidence_exact"] = (("record",), rec_exact)
    if pub.truth is not None:
        data["value"] = (dims, pub.truth.reshape(shape))
        data["record_true"] = (("record",), pub.truth[rec_cell] >= rec_k)
    ds = xr.Dataset(data, coords=coords)
    n_cert_persons = int(lower.sum())
    conf_ok = conf >= threshold
    attrs = {
        "riskengine_kind": "reconstruct",       # what riskengine.report reads it as
        "what": pub.what,
        "mechanism": pub.mechanism,
        "persons": persons,
        "persons_certain": n_cert_persons,
        "share_certain": n_cert_persons / persons if persons else float("nan"),
        "persons_in_certain_cells": int(lower[certain].sum()),
        "threshold": threshold,
        "records_unranked": n_unranked,
        "records_confident": int(conf_ok.sum()),
        "share_confident": (float(conf_ok.sum()) / persons if persons and prior is not None
                            else float("nan")),
        "cells": int(n_fin),
        "cells_unknown": int((~fixed).sum()),
        "cells_certain": int((certain & ~fixed).sum()),
        "units": len(tasks),
        "units_resumed": int(sum(bool(r.get("resumed")) for r in results)),
        "unit_split": int(bool(split)),
        "dropped_cells": len(dropped),
        "integer_programs": int(sum(r["n_programs"] for r in results)),
        "seconds": float(sum(r["seconds"] for r in results)),
        "exact_bounds": int(exact.all()),
        "certainty": ("proven" if pub.coverage is None else
                      f"with probability >= {pub.coverage:g} over the noise"),
    }
    if pub.coverage is not None:
        attrs["coverage"] = pub.coverage
    if dropped:
        labels = s.labels()
        attrs["dropped_note"] = (
            f"{len(dropped)} published cells span several units (e.g. "
            f"{', '.join(labels[j] for j in dropped[:3])}) and were dropped: certainty "
            "stays sound, bounds are outer bounds")
    if prior is not None:
        attrs["prior"] = getattr(prior, "describe", lambda: repr(prior))()
        attrs["posterior_units"] = n_post + len(mc_units)
        attrs["posterior"] = (f"exact in {n_post} of {len(tasks)} units" +
                              (f"; Monte Carlo in {len(mc_units)} (converged in "
                               f"{len(mc_units) - len(mc_bad)})" if mc_units else "") +
                              "".join(f"; none in {len(v)} ({k})" for k, v in
                                      reasons.items()))
        notes = []
        if dropped and n_post + len(mc_units):
            notes.append("each unit's posterior ignores the published cells that span "
                         "several units")
        if mc_units:
            notes.append(f"the posteriors of {len(mc_units)} units ({', '.join(mc_units[:5])}"
                         f"{', ...' if len(mc_units) > 5 else ''}) are Monte Carlo (block "
                         "redraws; per cell: rhat, ess; record_confidence_exact False for "
                         "their claims past the certain ones)")
            attrs["mc_units"] = len(mc_units)
            attrs["mc_converged_units"] = len(mc_units) - len(mc_bad)
            attrs["converged"] = int(not mc_bad)
            attrs["diagnostics"] = "; ".join(mc_diag)
        if mc_bad:
            notes.append(f"NOT CONVERGED in {len(mc_bad)} units ({mc_bad[0][0]}: "
                         f"{mc_bad[0][1]}): their confidences are not to be relied on")
        attrs["approximate"] = int(bool(notes))
        if notes:
            attrs["approximation"] = "; ".join(notes)
    if pub.truth is not None:
        good = ds["record_true"].values
        attrs["confident_correct"] = float(good[conf_ok].mean()) if conf_ok.any() else \
            float("nan")
    ds.attrs.update(attrs)
    return ds


def _claims(items, counts, first) -> tuple:
    """``(item, k)`` for ``k = first[i] .. first[i] + counts[i] - 1`` of every item."""
    counts = np.maximum(np.asarray(counts, np.int64), 0)
    idx = np.repeat(np.asarray(items, np.int64), counts)
    offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return idx, np.asarray(first, np.int64)[idx] + offs


def _persons(pub, fallback: int) -> int:
    """The number of persons: a published grand total (a cell holding every finest cell;
    its low end when it is a window), else the size of one consistent table."""
    s = pub.system
    M = s.M.tocsr()
    full = np.flatnonzero((np.diff(M.indptr) == s.n_interior) & ~np.isnan(pub.low))
    return int(np.rint(pub.low[full[0]])) if full.size else fallback


def _score(ds, truth, threshold) -> None:
    """Score the claims against a given truth (see ``truth`` of :func:`reconstruct`)."""
    from .table_set import TableSet
    if isinstance(truth, TableSet):
        s = truth.system
        fin = truth.values[: s.n_interior]
        if np.isnan(fin).any():
            raise ValueError("truth must be a TableSet whose finest cells are known "
                             "(TableSet.from_pandas)")
        truth = xr.DataArray(np.rint(fin).reshape(s.shape).astype(np.int64), dims=s.dims,
                             coords={d: list(s.coords[d]) for d in s.dims})
    if not isinstance(truth, xr.DataArray):
        raise TypeError("truth must be an rk.TableSet or an xarray.DataArray over the "
                        f"finest dims {list(ds['lower'].dims)}, got {type(truth).__name__}")
    dims = list(ds["lower"].dims)
    if set(truth.dims) != set(dims):
        raise ValueError(f"truth has dims {list(truth.dims)}; the publication's finest "
                         f"table has {dims}")
    total = int(truth.sum())
    t = truth.reindex({d: ds.coords[d].values for d in dims}, fill_value=0).transpose(*dims)
    placed = int(t.sum())
    v = t.values.astype(np.int64)
    ds["value"] = (tuple(dims), v)
    rc = ds["record_cell"].values
    ds["record_true"] = (("record",), v.reshape(-1)[rc] >= ds["record_k"].values)
    conf = ds["confidence"].values
    ok = conf >= threshold
    good = ds["record_true"].values
    ds.attrs["truth"] = "given"
    ds.attrs["persons_true"] = total
    ds.attrs["persons_unplaced"] = total - placed
    ds.attrs["confident_correct"] = float(good[ok].mean()) if ok.any() else float("nan")
    cert = ds["record_certain"].values
    ds.attrs["certain_correct"] = float(good[cert].mean()) if cert.any() else float("nan")
    ds.attrs["persons_certain_true"] = int(good[cert].sum())
