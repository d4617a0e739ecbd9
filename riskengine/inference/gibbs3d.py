"""The chains of the Monte Carlo route on 3-D tables (every 2-way margin published).

The moves are :mod:`kernels.gibbs`'s: exact redraws of 2 x 2 x L blocks (two indices on
each of two axes, the whole third axis; every total kept), degree-6 Metropolis moves (with
the blocks: the Markov basis of 3 x 3 x K tables with fixed 2-way margins, Aoki & Takemura
2003) and, when some total is a window rather than a number (rounding, noise, cell key),
exact single-cell redraws that move the totals with the cell.  Beyond 3 x 3 x K the
move set is not proven to connect every candidate; the tests compare with exact
enumeration on small tables and the chains start from dispersed random vertices
(integer programs with random objectives, HiGHS), so that R-hat sees a chain stuck in
one part of the candidate set.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from kernels import gibbs as moves

from . import _chains
from .enumerate_3d import _kernel_arrays, order
from .windows import EntryWindows

__all__ = ["applies", "chains", "log_weight", "totals"]

#: sweeps per kernel call (progress and Ctrl-C are looked at between calls)
CHUNK = 25

#: sweeps per kept draw (and per warm-up step): a 3-D sweep is cheap and its moves are
#: local, so three make one step of about the cost and mixing of a 2-D sweep
THIN = 3


def applies(release) -> str | None:
    missing = [k for k in order(release.dims)[:3] if k not in release.margins]
    if missing:
        return f"the 3-D Gibbs route needs every 2-way margin published; missing {missing}"
    if release.groups:
        return "the 3-D Gibbs route does not use published subtotals"
    return None


def _support(lo, lw):
    """First and last value with finite weight of every window (flattened)."""
    lw = lw.reshape(-1, lw.shape[-1])
    fin = np.isfinite(lw)
    first = np.argmax(fin, axis=-1)
    last = lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
    lo = np.ravel(lo)
    return lo + first, lo + last


def _packed(ew: EntryWindows):
    """Plain arrays for the kernel: the enumerator's cell and total windows (each row's
    log-weights shifted to a largest of 0, which changes no conditional law) and for every
    cell the rows of its seven totals."""
    (I, J, K, clo, cw, mlo, mw), _, _, _ = _kernel_arrays(ew)
    i, j, k = (a.ravel() for a in np.indices((I, J, K)))
    sizes = [I * J, I * K, J * K, I, J, K, 1]
    off = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tix = np.stack([off[0] + i * J + j, off[1] + i * K + k, off[2] + j * K + k,
                    off[3] + i, off[4] + j, off[5] + k, np.full(i.size, off[6])],
                   axis=1).astype(np.int64)
    return clo, cw, mlo, mw, tix


def totals(x, tix, n):
    """Every total's value for the flat table ``x`` (``tix``: each cell's totals)."""
    return np.bincount(tix.ravel(), weights=np.repeat(x, tix.shape[1]),
                       minlength=n).astype(np.int64)


def log_weight(x, clo, cw, mlo, mw, tsum) -> float:
    """Log-weight of the flat table ``x`` with totals ``tsum`` (-inf outside the windows)."""
    def at(lo, w, v):
        o = v - lo
        if np.any(o < 0) or np.any(o >= w.shape[1]):
            return -np.inf
        return float(w[np.arange(v.size), o].sum())
    return at(clo, cw, x) + at(mlo, mw, tsum)


def random_vertex(A, tmin, tmax, cmin, cmax, ok, rng: np.random.Generator,
                  tries: int = 20):
    """An integer x with cmin <= x <= cmax and tmin <= A x <= tmax: a vertex of the
    polytope's integer hull in a random direction (HiGHS MILP), re-drawn while ``ok(x)``
    is False (a value the windows exclude inside their range: a hole); None if none."""
    n = cmin.size
    cons = [LinearConstraint(A, tmin, tmax)] if A.shape[0] else []
    for _ in range(tries):
        res = milp(rng.standard_normal(n), constraints=cons, integrality=np.ones(n),
                   bounds=Bounds(cmin, cmax), options={"time_limit": 60})
        if res.x is None:
            return None
        x = np.rint(res.x).astype(np.int64)
        if ok(x):
            return x
    return None


def start(ew: EntryWindows, rng: np.random.Generator, tries: int = 20) -> np.ndarray:
    """A random integer table in the windows' support (:func:`random_vertex`)."""
    clo, cw, mlo, mw, tix = _packed(ew)
    cmin, cmax = _support(clo, cw)
    tmin, tmax = _support(mlo, mw)
    n = clo.size
    rows = tix.T.ravel()
    A = sp.csr_array((np.ones(rows.size), (rows, np.tile(np.arange(n), 7))),
                     shape=(mlo.size, n))
    x = random_vertex(A, tmin, tmax, cmin, cmax, lambda x: np.isfinite(log_weight(
        x, clo, cw, mlo, mw, totals(x, tix, mlo.size))), rng, tries)
    if x is not None:
        return x.reshape(ew.shape)
    raise ValueError("the 3-D Gibbs route found no starting table in the windows' support "
                     "(integer program infeasible or only tables the windows exclude); no "
                     "Monte Carlo answer")


def chains(ew: EntryWindows, n_chains: int, warmup: int, draws: int,
           rng: np.random.Generator, progress=None, degree6: bool = True,
           workers: int | None = None, scheduler=None) -> np.ndarray:
    """Kept draws ``(chain, draw, I, J, K)`` of ``n_chains`` chains from dispersed starts,
    run side by side (:mod:`._chains`; ``degree6=False``: without the degree-6 moves, a
    move set known to be reducible on some candidate sets; for tests of the diagnostics)."""
    clo, cw, mlo, mw, tix = _packed(ew)
    exact_totals = all(np.isfinite(w).sum(axis=-1).max() <= 1
                       for k, w in ew.lw.items() if k != ew.dims and len(k) == 2)
    dims = np.array(ew.shape, np.int64)
    starts = [start(ew, rng).ravel().copy() for _ in range(n_chains)]
    seeds = rng.integers(2**31 - 1, size=n_chains)

    def one(ch, tick):
        out = np.zeros((draws, clo.size), np.int64)
        x = starts[ch]
        tsum = totals(x, tix, mlo.size)
        moves.seed(int(seeds[ch]))
        for at, n, keep in _chains.schedule(warmup, draws, CHUNK):
            buf = out[at:at + n] if keep else np.zeros((1, 1), np.int64)
            if not moves.sweeps(x, dims, clo, cw, mlo, mw, tix, tsum, n, keep, buf,
                                not exact_totals, degree6, THIN):
                raise RuntimeError(f"internal error: 3-D Gibbs chain {ch} left the support")
            tick(n)
        if not np.isfinite(log_weight(x, clo, cw, mlo, mw, tsum)) or \
                not np.array_equal(tsum, totals(x, tix, mlo.size)):
            raise RuntimeError(f"internal error: 3-D Gibbs chain {ch} left the support")
        return out

    out = np.stack(_chains.run(n_chains, one, n_chains * (warmup + draws), progress, workers,
                               scheduler))
    return out.reshape((n_chains, draws) + tuple(ew.shape))
