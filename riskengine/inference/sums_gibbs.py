"""Monte Carlo over integer cells tied by exact sums, where the sums route cannot enumerate.

The Monte Carlo twin of the streaming enumeration (:mod:`kernels.sum_enum`) on the same
plain inputs: unknown integer cells in a box, rows of +1 coefficients with exact sums,
per-cell prior log-weights.  A census tract of the ``basic`` publication has thousands of
uncertain cells and more consistent tables than any enumeration reaches; its posterior is
sampled instead.

The chains (:func:`kernels.sum_redraw.redraw`) redraw the cells of a few groups at a time
(the blocks of a tract; two, three with probability 1/2, four with 1/4, ...) from their
exact conditional law given the rest; a redraw whose subsystem has too many solutions is
skipped, which leaves the law invariant.  On a small system a redraw of every group is
an exact draw of the whole table.  Given the cells' codes on the other dims
(``box_codes``), steps also redraw *boxes*: the cells of a few groups with, on each
other dim, two or three codes drawn at random (three ages, three races, both sexes, ...
of two blocks; in a 2-D table, two rows of two columns: the basic moves).  Where a
block's cells are tied only by coarse tables (race published by tract alone) two whole
blocks have more solutions than a redraw may list and most group steps are skipped,
while boxes hold the moves that exchange persons' types between blocks: on three
`basic` census tracts (6,266 uncertain cells, 600 s each) the share of cells with R-hat
<= 1.01 went from 9 % to 57 % (99 % <= 1.1), still short of convergence
(benchmarks/RESULTS.md).  Before the chains start, a few steps of each kind are timed on
the start table: where most group steps are skipped, every step is a box step;
otherwise half are.
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

__all__ = ["SumsDraws", "TooSlow", "box_dims", "groups_of", "sample", "steps_per_sweep"]

#: redraws timed before the chains start (the time estimate)
CALIBRATION_STEPS = 40
#: steps per kernel call (between progress ticks and Ctrl-C checks)
CHUNK_SWEEPS = 20
#: caps of one redraw's enumeration (solutions kept, assignments walked)
MAX_KEPT = 1000
MAX_NODES = 20000
#: probability that a step takes one more group, after the first two (repeated: three
#: groups with probability 1/2, four with 1/4, ...)
P_MORE = 0.5
#: codes a box step takes on each other dim (all of a dim with no more): uniform in this
#: range per step (2: the basic moves of a 2-D table; 3: larger boxes that move census
#: blocks' persons faster per sweep)
BOX_TAKE = (2, 3)
#: the share of steps that redraw boxes when whole groups mostly fit the caps, and the
#: share of skipped group steps (timed on the start) past which every step is a box
BOX_SHARE = 0.5
BOX_ONLY_PAST = 0.5


def groups_of(codes) -> np.ndarray:
    """The groups the redraws take a few at a time, from each cell's codes
    ``(n, k)`` (its code on each of k dims, the preferred dim first): the first dim's
    codes, crossed with the next dims' until there are at least 3 groups (with 2, every
    redraw would take every cell).  Returns ``(n,)`` group numbers; fewer than 3 distinct
    ones when the codes allow no more."""
    codes = np.asarray(codes, np.int64)
    if codes.ndim != 2:
        raise ValueError(f"codes must be (cells, dims), got shape {codes.shape}")
    key = np.zeros(codes.shape[0], np.int64)
    for j in range(codes.shape[1]):
        key = key * (int(codes[:, j].max(initial=0)) + 1) + codes[:, j]
        if np.unique(key).size >= 3:
            break
    return np.unique(key, return_inverse=True)[1].astype(np.int64)


def steps_per_sweep(G: int, box_sizes, p_box: float) -> int:
    """Steps of one sweep: as many as redraw about as many cells as one redraw of each of
    the ``G`` groups, when a share ``p_box`` of the steps redraw boxes (a box takes 2 or 3
    codes (:data:`BOX_TAKE`) of each other dim of ``box_sizes`` codes, so a fraction of a
    group's cells).

    Parameters
    ----------
    G : int
        Groups.
    box_sizes : (D,) int
        Codes of each dim a box takes some of (:func:`box_dims`); empty: no boxes.
    p_box : float
        The share of steps that redraw boxes.

    Returns
    -------
    int
        At least 1.
    """
    bsize = np.asarray(box_sizes, np.int64)
    if not bsize.size:
        return max(1, int(G))
    takes = np.arange(BOX_TAKE[0], BOX_TAKE[1] + 1)[:, None]
    per_box = 1.0 / float(np.mean(np.prod(np.minimum(takes, bsize) / bsize, axis=1)))
    return max(1, round(G * ((1.0 - p_box) + p_box * per_box)))


def box_dims(box_codes, n) -> tuple:
    """The dims boxes take codes of.

    Parameters
    ----------
    box_codes : (n, D) int or None
        Each cell's code on each dim other than the groups' (None: no boxes).
    n : int
        Cells.

    Returns
    -------
    tuple
        ``(codes (n, D') int64 from 0, sizes (D',))``: each column's distinct values
        numbered in order; dims with one code dropped (a box would take all of it).
    """
    if box_codes is None:
        return np.zeros((n, 0), np.int64), np.zeros(0, np.int64)
    c = np.asarray(box_codes)
    if c.ndim != 2 or c.shape[0] != n:
        raise ValueError(f"box_codes must be (cells, dims) with one row per cell ({n}), "
                         f"got shape {c.shape}")
    cols, sizes = [], []
    for d in range(c.shape[1]):
        u, inv = np.unique(c[:, d], return_inverse=True)
        if u.size > 1:
            cols.append(inv.astype(np.int64))
            sizes.append(u.size)
    if not cols:
        return np.zeros((n, 0), np.int64), np.zeros(0, np.int64)
    return np.ascontiguousarray(np.stack(cols, axis=1)), np.asarray(sizes, np.int64)


class TooSlow(ValueError):
    """The chains are estimated to take longer than allowed (the message says how long)."""


@dataclass
class SumsDraws:
    """The chains' kept draws and what the moves did (:func:`sample`).

    ``draws`` (chains, draws, n) int64; ``probs`` (n, W) the share of draws at ``lo + w``
    with ``lo`` (n,); ``diagnostics`` (xarray.Dataset over ``cell``: R-hat, ESS, MCSE;
    attrs ``max_rhat``, ``min_ess_bulk``, ``min_ess_tail``); ``converged``; ``moved``,
    ``redrawn``, ``skipped``: shares of the steps that changed the table, whose
    subsystem was drawn from, that a cap left as they were; ``summary``: one line;
    ``rounds``, ``thin``: the rounds run and the last one's sweeps per kept draw
    (``until_converged``); ``seconds``: the chains' wall time; ``boxes``: the share of
    steps that redrew boxes; ``sweep``: steps per sweep.
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
    rounds: int = 1
    thin: int = 1
    seconds: float = 0.0
    boxes: float = 0.0
    sweep: int = 0


def sample(R, target, lb, ub, lw, groups, x0=None, *, chains: int = 4, draws: int = 1000,
           warmup: int | None = None, thin: int = 1, seed=0, workers=None, progress=None,
           max_seconds: float | None = None, until_converged: bool = False,
           max_groups: int | None = None, box_codes=None,
           box_share: float | None = None) -> SumsDraws:
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
        The group of each cell (a few groups are redrawn at a time): at least 2.
    x0 : (n,) int, optional
        A consistent table: chain 0 starts there; the others (all chains without it) at
        integer programs' solutions for random objectives.
    chains, draws : int
        Chains and kept draws per chain (one per ``thin`` sweeps; a sweep is as many
        redraws as there are groups).
    warmup : int, optional
        Sweeps discarded first (default ``draws // 4``, at least 50).
    thin : int
        Sweeps per kept draw.
    seed : int or numpy.random.Generator
    workers : int, optional
        Threads the chains run on (default: the machine's cores).
    progress : callable, optional
        ``progress(done, total)`` in sweeps.
    max_seconds : float, optional
        Refuse (:class:`TooSlow`) when the chains are estimated to take longer: a few
        redraws are timed first.
    until_converged : bool
        While the draws fail the usual rules and the next round fits in ``max_seconds``
        (measured on the rounds so far), run the chains on from where they stopped for
        another round of ``draws`` draws at twice the thinning, the earlier rounds
        becoming warm-up; the diagnostics are those of the last round (``rounds``,
        ``thin`` and ``seconds`` on the result say what was run).
    max_groups : int, optional
        The most groups one redraw takes (default: every group).
    box_codes : (n, D) int, optional
        Each cell's codes on the dims other than its group's (any integers; each
        column's distinct values are that dim's codes): steps then also redraw boxes
        (the module).  A sweep is then as many steps as redraw about as many cells as
        one redraw of each group.
    box_share : float, optional
        The share of steps that redraw boxes (default: chosen on the start table, the
        module).

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
    max_groups = 2**31 - 1 if max_groups is None else int(max_groups)
    if max_groups < 2:
        raise ValueError(f"max_groups must be >= 2, got {max_groups}")
    thin = int(thin)
    if thin < 1:
        raise ValueError(f"thin must be >= 1, got {thin}")
    if until_converged and max_seconds is None:
        raise ValueError("until_converged needs max_seconds (the budget of the rounds)")
    warmup = max(50, draws // 4) if warmup is None else int(warmup)
    if groups.shape != (n,):
        raise ValueError(f"groups must give one group per cell ({n}), got shape "
                         f"{groups.shape}")
    _, gi = np.unique(groups, return_inverse=True)
    G = int(gi.max()) + 1 if n else 0
    if G < 2:
        raise ValueError("the block redraws need at least 2 groups of cells")
    bcodes, bsize = box_dims(box_codes, n)
    if box_share is not None and not 0.0 <= float(box_share) <= 1.0:
        raise ValueError(f"box_share must be in [0, 1], got {box_share}")
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
    seeds = rng.integers(1, 2**31 - 1, size=chains)
    total = chains * (warmup + draws * thin)
    import os
    import time
    idle1 = np.zeros((1, n), np.int64)

    def steps(x, k, p_box, seed_, out=idle1, every=0):
        return sum_redraw.redraw(x, lb, ub, lw, gptr, gcells, rptr, ridx, target, cptr,
                                 crow, k, P_MORE, max_groups, MAX_KEPT, MAX_NODES, seed_,
                                 out, every, bcodes, bsize, p_box, *BOX_TAKE)

    steps(starts[0].copy(), 0, 0.0, 1)                 # compiled / loaded

    def timed(p_box):
        # a few steps of one kind on the start table: seconds per step, share skipped
        t0 = time.perf_counter()
        st = steps(starts[0].copy(), CALIBRATION_STEPS, p_box, 1)
        return (time.perf_counter() - t0) / CALIBRATION_STEPS, st[2] / CALIBRATION_STEPS

    t_group, skip_group = timed(0.0)
    t_box = 0.0
    if bsize.size:
        t_box, _ = timed(1.0)
        if box_share is None:
            box_share = 1.0 if skip_group > BOX_ONLY_PAST else BOX_SHARE
    p_box = float(box_share) if bsize.size and box_share is not None else 0.0
    sweep = steps_per_sweep(G, bsize, p_box)
    per_step = (1.0 - p_box) * t_group + p_box * t_box
    par = max(1, min(chains, int(workers) if workers else (os.cpu_count() or 1)))
    estimate = per_step * total * sweep / par
    if max_seconds is not None and estimate > max_seconds:
        raise TooSlow(f"the chains would take about {estimate:.0f} s ({chains} x "
                      f"{warmup + draws * thin} sweeps of {sweep} redraws, "
                      f"{1e3 * per_step:.2g} ms each, {par} at a time), more than the "
                      f"{max_seconds:g} s allowed")

    calls = [0] * chains

    def call_seed(ch):
        # a kernel call's seed: the chain's seed + 7919 x its calls so far, modulo the
        # prime 2**31 - 1 (distinct for every call of a chain)
        calls[ch] += 1
        return int((int(seeds[ch]) + 7919 * calls[ch]) % (2**31 - 1))

    def chain_round(xs, warm, th):
        def one(ch, tick):
            x = xs[ch].copy()
            out = np.zeros((draws, n), np.int64)
            idle = np.zeros((1, n), np.int64)
            stats = np.zeros(4, np.int64)
            for at, m, keep in _chains.schedule(warm, draws, CHUNK_SWEEPS):
                if keep:
                    mm = m
                    while mm > 0:            # chunks of at most CHUNK_SWEEPS sweeps
                        q = max(1, min(mm, CHUNK_SWEEPS // th))
                        s = steps(x, q * th * sweep, p_box, call_seed(ch),
                                  out[at + m - mm:at + m - mm + q], th * sweep)
                        stats += np.asarray(s, np.int64)
                        tick(q * th)
                        mm -= q
                else:
                    steps(x, m * sweep, p_box, call_seed(ch), idle, 0)
                    tick(m)
            if not np.array_equal(R @ x, target):
                raise RuntimeError(f"internal error: sums chain {ch} lost its sums")
            return out, stats, x
        return one

    def judge(arr):
        return gibbs.judge(arr, ("cell",), {"cell": np.arange(n)})

    t_start = time.perf_counter()
    xs, warm, th, rnd = starts, warmup, thin, 0
    while True:
        t_round = time.perf_counter()
        res = _chains.run(chains, chain_round(xs, warm, th),
                          chains * (warm + draws * th), progress, workers)
        spent = time.perf_counter() - t_round
        arr = np.stack([r[0] for r in res])
        stats = np.sum([r[1] for r in res], axis=0)
        xs = [r[2] for r in res]
        lo, probs, diag, converged = judge(arr)
        rnd += 1
        elapsed = time.perf_counter() - t_start
        # the next round: the same draws at twice the thinning, no warm-up (the chains
        # go on from where they are); its time from this round's sweeps
        nxt = spent * (2 * th * draws) / (warm + th * draws)
        if converged or not until_converged or elapsed + nxt > max_seconds:
            break
        warm, th = 0, 2 * th
    n_steps = float(chains * draws * th * sweep)
    a = diag.attrs
    how = (f"{chains} chains x {draws} draws" + (f" (every {th} sweeps)" if th > 1 else "")
           + (f" in the last of {rnd} rounds ({elapsed:.0f} s)" if rnd > 1 else ""))
    summary = (f"{how}: max R-hat {a['max_rhat']:.4f}, min bulk "
               f"ESS {a['min_ess_bulk']:.0f}, min tail ESS {a['min_ess_tail']:.0f}"
               + ("" if converged else " (not converged by the usual rules: R-hat <= "
                  f"{gibbs.RHAT_MAX}, ESS >= {gibbs.ESS_MIN})"))
    return SumsDraws(draws=arr, lo=lo, probs=probs, diagnostics=diag, converged=converged,
                     moved=stats[0] / n_steps, redrawn=stats[1] / n_steps,
                     skipped=stats[2] / n_steps, summary=summary, rounds=rnd, thin=th,
                     seconds=elapsed, boxes=stats[3] / n_steps, sweep=sweep)
