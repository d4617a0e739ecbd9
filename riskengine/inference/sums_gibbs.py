"""Monte Carlo over integer cells tied by exact sums, where the sums route cannot enumerate.

The Monte Carlo twin of the streaming enumeration (:mod:`kernels.sum_enum`) on the same
plain inputs: unknown integer cells in a box, rows of +1 coefficients with exact sums,
per-cell prior log-weights.  A census tract of the ``basic`` publication has thousands of
uncertain cells and more consistent tables than any enumeration reaches; its posterior is
sampled instead.

The chains (:func:`kernels.sum_redraw.redraw`) redraw the cells of two or three groups at
a time (the blocks of a tract) from their exact conditional law given the rest; a
redraw whose subsystem has too many solutions is skipped, which leaves the law invariant.
Single-cell or line moves barely move on such tables: most cells hold 0 or 1, and every
short integer direction of the sums' null space meets a 0 it would make negative.  The
chains start from dispersed consistent tables (integer programs with random objectives,
:func:`riskengine.inference.gibbs3d.random_vertex`) besides the one given; that the
moves reach every table is not proven, so rank-normalised R-hat, bulk and tail ESS
(arviz) over the chains are the check, and :func:`sample` says whether the usual rules
(R-hat <= 1.01, ESS >= 400) hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["SumsDraws", "TooSlow", "sample"]

#: redraws timed before the chains start (the time estimate)
CALIBRATION_STEPS = 40
#: steps per kernel call (between progress ticks and Ctrl-C checks)
CHUNK_SWEEPS = 20
#: caps of one redraw's enumeration (solutions kept, assignments walked)
MAX_KEPT = 1000
MAX_NODES = 20000
#: probability that a step redraws three groups instead of two
P_THREE = 0.5


class TooSlow(ValueError):
    """The chains are estimated to take longer than allowed (the message says how long)."""


@dataclass
class SumsDraws:
    """The chains' kept draws and what the moves did (:func:`sample`).

    ``draws`` (chains, draws, n) int64; ``probs`` (n, W) the share of draws at ``lo + w``
    with ``lo`` (n,); ``diagnostics`` (xarray.Dataset over ``cell``: R-hat, ESS, MCSE;
    attrs ``max_rhat``, ``min_ess_bulk``, ``min_ess_tail``); ``converged``; ``moved``,
    ``redrawn``, ``skipped``: shares of the steps that changed the table, whose
    subsystem was drawn from, that a cap left as they were; ``summary``: one line.
    """

    draws: np.ndarray
    lo: np.ndarray
    probs: np.ndarray
    diagnostics: object
    converged: bool
    moved: float
    redrawn: float
    skipped: float
    summary: str


def sample(R, target, lb, ub, lw, groups, x0=None, *, chains: int = 4, draws: int = 1000,
           warmup: int | None = None, seed=0, workers=None, progress=None,
           max_seconds: float | None = None) -> SumsDraws:
    """Draws of ``x`` with ``R x = target``, ``lb <= x <= ub``, weight ``exp(sum lw)``.

    Parameters
    ----------
    R : scipy.sparse matrix (m, n)
        Rows of 0/1 coefficients.
    target : (m,) int
    lb, ub : (n,) int
    lw : (n, W) float
        ``lw[i, w]``: log-weight of ``x_i = lb[i] + w`` (``-inf``: impossible).
    groups : (n,) int
        The group of each cell (two or three groups are redrawn at a time): at least 2.
    x0 : (n,) int, optional
        A consistent table: chain 0 starts there; the others (all chains without it) at
        integer programs' solutions for random objectives.
    chains, draws : int
        Chains and kept draws per chain (one per sweep: as many steps as groups).
    warmup : int, optional
        Sweeps discarded first (default ``draws // 4``, at least 50).
    seed : int or numpy.random.Generator
    workers : int, optional
        Threads the chains run on (default: the machine's cores).
    progress : callable, optional
        ``progress(done, total)`` in sweeps.
    max_seconds : float, optional
        Refuse (:class:`TooSlow`) when the chains are estimated to take longer: a few
        redraws are timed first.

    Returns
    -------
    SumsDraws
    """
    from kernels import sum_redraw

    from . import _chains, gibbs, gibbs3d
    R = sp.csr_matrix(R)
    n = R.shape[1]
    target = np.asarray(target, np.int64)
    lb = np.asarray(lb, np.int64)
    ub = np.asarray(ub, np.int64)
    lw = np.ascontiguousarray(lw, dtype=float)
    groups = np.asarray(groups)
    chains = int(chains)
    draws = int(draws)
    if chains < 2:
        raise ValueError(f"chains must be >= 2 (R-hat compares chains), got {chains}")
    if draws < 10:
        raise ValueError(f"draws must be >= 10, got {draws}")
    warmup = max(50, draws // 4) if warmup is None else int(warmup)
    if groups.shape != (n,):
        raise ValueError(f"groups must give one group per cell ({n}), got shape "
                         f"{groups.shape}")
    _, gi = np.unique(groups, return_inverse=True)
    G = int(gi.max()) + 1 if n else 0
    if G < 2:
        raise ValueError("the block redraws need at least 2 groups of cells")
    rng = np.random.default_rng(seed)
    gcells = np.argsort(gi, kind="stable").astype(np.int64)
    gptr = np.concatenate([[0], np.cumsum(np.bincount(gi, minlength=G))]).astype(np.int64)
    R.sort_indices()
    Rc = R.tocsc()
    rptr, ridx = R.indptr.astype(np.int64), R.indices.astype(np.int64)
    cptr, crow = Rc.indptr.astype(np.int64), Rc.indices.astype(np.int64)

    def ok(x):
        w = lw[np.arange(n), x - lb]
        return bool(np.isfinite(w).all())

    starts = []
    if x0 is not None:
        x0 = np.asarray(x0, np.int64)
        if not (np.array_equal(R @ x0, target) and (x0 >= lb).all() and (x0 <= ub).all()
                and ok(x0)):
            raise ValueError("x0 is not a consistent table inside the box")
        starts.append(x0.copy())
    while len(starts) < chains:
        x = gibbs3d.random_vertex(R, target, target, lb, ub, ok, rng)
        if x is None:
            raise ValueError("no consistent table with a positive weight: nothing to "
                             "sample")
        starts.append(x)
    seeds = rng.integers(1, 2**31 - 1, size=(chains, 2))
    total = chains * (warmup + draws)
    import os
    import time
    xc = starts[0].copy()
    idle1 = np.zeros((1, n), np.int64)
    sum_redraw.redraw(xc, lb, ub, lw, gptr, gcells, rptr, ridx, target, cptr, crow,
                      0, P_THREE, MAX_KEPT, MAX_NODES, 1, idle1, 0)    # compiled or loaded
    t0 = time.perf_counter()
    sum_redraw.redraw(xc, lb, ub, lw, gptr, gcells, rptr, ridx, target, cptr, crow,
                      CALIBRATION_STEPS, P_THREE, MAX_KEPT, MAX_NODES, 1, idle1, 0)
    per_step = (time.perf_counter() - t0) / CALIBRATION_STEPS
    par = max(1, min(chains, int(workers) if workers else (os.cpu_count() or 1)))
    estimate = per_step * total * G / par
    if max_seconds is not None and estimate > max_seconds:
        raise TooSlow(f"the chains would take about {estimate:.0f} s ({chains} x "
                      f"{warmup + draws} sweeps of {G} redraws, {1e3 * per_step:.2g} ms "
                      f"each, {par} at a time), more than the {max_seconds:g} s allowed")

    def one(ch, tick):
        x = starts[ch].copy()
        out = np.zeros((draws, n), np.int64)
        idle = np.zeros((1, n), np.int64)
        stats = np.zeros(3, np.int64)
        for k, (at, m, keep) in enumerate(_chains.schedule(warmup, draws, CHUNK_SWEEPS)):
            buf = out[at:at + m] if keep else idle
            s = sum_redraw.redraw(x, lb, ub, lw, gptr, gcells, rptr, ridx, target, cptr,
                                  crow, m * G, P_THREE, MAX_KEPT, MAX_NODES,
                                  int(seeds[ch, 0] + 7919 * k) % (2**31 - 1), buf,
                                  G if keep else 0)
            if keep:
                stats += np.asarray(s, np.int64)
            tick(m)
        if not np.array_equal(R @ x, target):
            raise RuntimeError(f"internal error: sums chain {ch} lost its sums")
        return out, stats

    res = _chains.run(chains, one, total, progress, workers)
    arr = np.stack([r[0] for r in res])
    stats = np.sum([r[1] for r in res], axis=0)
    steps = float(chains * draws * G)
    lo = arr.min(axis=(0, 1))
    W = int((arr.max(axis=(0, 1)) - lo).max()) + 1 if n else 1
    flat = arr.reshape(-1, n) - lo
    probs = np.stack([(flat == w).mean(axis=0) for w in range(W)], axis=-1)
    diag = gibbs.diagnostics(arr, lo, probs, ("cell",), {"cell": np.arange(n)})
    a = diag.attrs
    converged = bool(a["max_rhat"] <= gibbs.RHAT_MAX and a["min_ess_bulk"] >= gibbs.ESS_MIN
                     and a["min_ess_tail"] >= gibbs.ESS_MIN)
    summary = (f"{chains} chains x {draws} draws: max R-hat {a['max_rhat']:.4f}, min bulk "
               f"ESS {a['min_ess_bulk']:.0f}, min tail ESS {a['min_ess_tail']:.0f}"
               + ("" if converged else " (not converged by the usual rules: R-hat <= "
                  f"{gibbs.RHAT_MAX}, ESS >= {gibbs.ESS_MIN})"))
    return SumsDraws(draws=arr, lo=lo, probs=probs, diagnostics=diag, converged=converged,
                     moved=stats[0] / steps, redrawn=stats[1] / steps,
                     skipped=stats[2] / steps, summary=summary)
