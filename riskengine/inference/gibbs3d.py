"""The chains of the Monte Carlo route on 3-D tables (every 2-way margin published).

The moves are :mod:`kernels.gibbs`'s: exact redraws of 2 x 2 x L blocks (two indices on
each of two axes, the whole third axis; every total kept), lifted cycles through 3 or
more indices of two axes (degree 6 and up), Aoki & Takemura's degree-8 and degree-10
moves (all redrawn exactly along the move) and, when some total is a window rather than
a number (rounding, noise, cell key), exact single-cell redraws that move the totals with
the cell.

What is proven (:func:`connectivity`; the proofs in :mod:`kernels.gibbs`): with every
2-way total exact, the moves contain a Markov basis of the candidates' fiber, so the
chain reaches every candidate, for

* 3 x 3 x K tables (any two axes of at most 3 levels) whose cell windows cut no table of
  the fiber (margins only, priors on the values, lower bounds): the unique minimal
  Markov basis of Aoki & Takemura (2003), degrees 4, 6, 8 and 10;
* 2 x J x K tables with any cell windows without holes (suppressed or fixed cells,
  structural zeros, bounds): the Graver basis of the Lawrence lifting, the lifted cycles.

Elsewhere (a fixed, suppressed or bounded cell of a 3 x 3 x K table, two axes of 4 or
more levels, totals that are windows) nothing is proven.  There, with exact 2-way totals,
the route lists the candidates when they are few (at most :data:`CHECK_LIMIT`, by the
exact enumerator's walk) and finds the parts the moves connect (:func:`components`):
several parts start chains in different ones, and the result says the moves do not
connect the candidates (``attrs["converged"] = 0``, ``attrs["moves"]``); too many to list
(or totals that are windows), the chains start from the most dispersed of several
vertices of the candidates' polytope (per-cell extremes and random directions,
:func:`dispersed_starts`), and ``attrs["moves"]`` says that the chains' agreement (R-hat)
is the only check.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from kernels import gibbs as moves
from kernels import table_enum

from . import _chains
from .enumerate_3d import _kernel_arrays, order
from .windows import EntryWindows

__all__ = ["CHECK_LIMIT", "Connectivity", "applies", "chains", "components", "connectivity",
           "dispersed_starts", "list_candidates", "log_weight", "totals"]

#: candidate sets of at most this many tables are listed to check that the moves connect
#: them, where no proof covers the release (the check compares every pair of tables)
CHECK_LIMIT = 2000

#: steps of the enumerator's walk that count and list them (about 0.2 s)
CHECK_STEPS = 5_000_000

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
                  tries: int = 20, objective=None):
    """An integer x with cmin <= x <= cmax and tmin <= A x <= tmax: a vertex of the
    polytope's integer hull in a random direction (HiGHS MILP; the first in direction
    ``objective`` when given), re-drawn while ``ok(x)`` is False (a value the windows
    exclude inside their range: a hole); None if none."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # on first use (~0.15 s)

    n = cmin.size
    cons = [LinearConstraint(A, tmin, tmax)] if A.shape[0] else []
    for k in range(tries):
        c = objective if (objective is not None and k == 0) else rng.standard_normal(n)
        res = milp(c, constraints=cons, integrality=np.ones(n),
                   bounds=Bounds(cmin, cmax), options={"time_limit": 60})
        if res.x is None:
            return None
        x = np.rint(res.x).astype(np.int64)
        if ok(x):
            return x
    return None


def _polytope(ew: EntryWindows) -> tuple:
    """``(A, tmin, tmax, cmin, cmax, ok)`` of the candidates' polytope (:func:`random_vertex`)."""
    clo, cw, mlo, mw, tix = _packed(ew)
    cmin, cmax = _support(clo, cw)
    tmin, tmax = _support(mlo, mw)
    n = clo.size
    rows = tix.T.ravel()
    A = sp.csr_array((np.ones(rows.size), (rows, np.tile(np.arange(n), 7))),
                     shape=(mlo.size, n))
    return A, tmin, tmax, cmin, cmax, lambda x: np.isfinite(log_weight(
        x, clo, cw, mlo, mw, totals(x, tix, mlo.size)))


def start(ew: EntryWindows, rng: np.random.Generator, tries: int = 20,
          objective=None) -> np.ndarray:
    """A random integer table in the windows' support (:func:`random_vertex`; the vertex
    in direction ``objective`` first, when given)."""
    x = random_vertex(*_polytope(ew), rng, tries, objective)
    if x is not None:
        return x.reshape(ew.shape)
    raise ValueError("the 3-D Gibbs route found no starting table in the windows' support "
                     "(integer program infeasible or only tables the windows exclude); no "
                     "Monte Carlo answer")


def chains(ew: EntryWindows, n_chains: int, warmup: int, draws: int,
           rng: np.random.Generator, progress=None, degree6: bool = True,
           workers: int | None = None, scheduler=None, higher: bool = True,
           starts=None) -> np.ndarray:
    """Kept draws of ``n_chains`` chains run side by side (:mod:`._chains`).

    Parameters
    ----------
    ew : EntryWindows
        The release's windows, prior included.
    n_chains, warmup, draws : int
        Chains, warm-up sweeps and kept draws of each.
    rng : numpy.random.Generator
        Draws the starts (unless given) and the chains' seeds.
    progress : callable, optional
        ``progress(done, total)`` in sweeps.
    degree6 : bool
        False: the blocks alone, without any move of degree 6 or more (a move set known
        to be reducible on some candidate sets; for tests of the diagnostics).
    workers, scheduler
        Threads running the chains, or a dask scheduler (:func:`._chains.run`).
    higher : bool
        False: the lifted 3-cycles (degree 6) but no longer cycle and no degree-8 or
        degree-10 move (the move set of earlier versions; for tests).
    starts : sequence of arrays, optional
        The chains' starting tables (default: random vertices, :func:`start`).

    Returns
    -------
    numpy.ndarray
        int64 ``(chain, draw, I, J, K)``.
    """
    clo, cw, mlo, mw, tix = _packed(ew)
    exact_totals = _exact_totals(ew)
    dims = np.array(ew.shape, np.int64)
    if starts is None:
        starts = [start(ew, rng) for _ in range(n_chains)]
    starts = [np.array(x, np.int64).ravel() for x in starts]
    seeds = rng.integers(2**31 - 1, size=n_chains)
    level = 0 if not degree6 else (2 if higher else 1)

    def one(ch, tick):
        out = np.zeros((draws, clo.size), np.int64)
        x = starts[ch].copy()
        tsum = totals(x, tix, mlo.size)
        moves.seed(int(seeds[ch]))
        for at, n, keep in _chains.schedule(warmup, draws, CHUNK):
            buf = out[at:at + n] if keep else np.zeros((1, 1), np.int64)
            if not moves.sweeps(x, dims, clo, cw, mlo, mw, tix, tsum, n, keep, buf,
                                not exact_totals, level, THIN):
                raise RuntimeError(f"internal error: 3-D Gibbs chain {ch} left the support")
            tick(n)
        if not np.isfinite(log_weight(x, clo, cw, mlo, mw, tsum)) or \
                not np.array_equal(tsum, totals(x, tix, mlo.size)):
            raise RuntimeError(f"internal error: 3-D Gibbs chain {ch} left the support")
        return out

    out = np.stack(_chains.run(n_chains, one, n_chains * (warmup + draws), progress, workers,
                               scheduler))
    return out.reshape((n_chains, draws) + tuple(ew.shape))


# --- do the moves connect the candidates? ------------------------------------------------

def _exact_totals(ew: EntryWindows) -> bool:
    """Whether every 2-way total is one number (the blocks and Metropolis moves keep the
    totals; otherwise the line moves also move them)."""
    return all(np.isfinite(w).sum(axis=-1).max() <= 1
               for k, w in ew.lw.items() if k != ew.dims and len(k) == 2)


def _window_cut(ew: EntryWindows) -> str | None:
    """Why the cell windows are not the plain fiber of nonnegative tables (shifted by the
    windows' lower ends), or None when they cut no table of it."""
    clo, cw, mlo, mw, tix = _packed(ew)
    fin = np.isfinite(cw)
    first = np.argmax(fin, axis=1)
    last = cw.shape[1] - 1 - np.argmax(fin[:, ::-1], axis=1)
    cols = np.arange(cw.shape[1])
    if np.any(~fin & (cols >= first[:, None]) & (cols <= last[:, None])):
        return "a cell's window excludes values between its ends"
    low, high = clo + first, clo + last
    value = mlo + np.argmax(np.isfinite(mw), axis=1)           # every 2-way total exact
    free = value - totals(low, tix, mlo.size)                  # what the lower ends leave
    cap = free[tix[:, :3]].min(axis=1)
    if np.any(high - low < cap):
        return ("some cell's window stops below what its margins allow (a fixed, "
                "suppressed or bounded cell, a structural zero)")
    return None


@dataclass(frozen=True)
class Connectivity:
    """What is known about whether the chains' moves connect the candidate tables.

    Parameters
    ----------
    proven : bool
        A proof covers the release (or the listed candidates are one part).
    text : str
        The proof, or why there is none and what was checked instead (``attrs["moves"]``).
    parts : int or None
        Parts the moves split the listed candidates into (None: not listed).
    tables : numpy.ndarray or None
        The listed candidates, flat ``(n, I * J * K)`` (None: not listed).
    labels : numpy.ndarray or None
        Each listed candidate's part (0 the largest).
    """

    proven: bool
    text: str
    parts: int | None = None
    tables: np.ndarray | None = None
    labels: np.ndarray | None = None

    def starts(self, n: int, rng: np.random.Generator) -> list | None:
        """Starting tables from different parts in turn, largest part first.

        Parameters
        ----------
        n : int
            Chains.
        rng : numpy.random.Generator
            Picks a table within each part.

        Returns
        -------
        list or None
            ``n`` flat tables, or None when the candidates were not listed.
        """
        if self.tables is None:
            return None
        out = []
        for ch in range(n):
            members = np.nonzero(self.labels == ch % self.parts)[0]
            out.append(self.tables[members[rng.integers(members.size)]].copy())
        return out


def connectivity(ew: EntryWindows, limit: int | None = None,
                 steps: int | None = None) -> Connectivity:
    """Whether the moves of :func:`chains` connect the candidates of ``ew``: a proof (see
    the module docstring), else, for at most ``limit`` candidates, an exact check (every
    candidate listed, :func:`components`).

    Parameters
    ----------
    ew : EntryWindows
        The release's windows, prior included (a table has positive weight when every
        window gives it a finite log-weight).
    limit : int, optional
        Most candidates listed for the check (default :data:`CHECK_LIMIT`).
    steps : int, optional
        Most steps of the enumerator's walk that counts and lists them (default
        :data:`CHECK_STEPS`).

    Returns
    -------
    Connectivity
        ``proven``, ``text`` and, when listed, the parts.
    """
    limit = CHECK_LIMIT if limit is None else limit
    steps = CHECK_STEPS if steps is None else steps
    shape = tuple(int(d) for d in ew.shape)
    s0, s1, _ = sorted(shape)
    size = " x ".join(map(str, shape))
    exact = _exact_totals(ew)
    if s0 == 1 and exact:
        return Connectivity(True, "one candidate: the 2-way totals fix every cell")
    cut = _window_cut(ew) if exact else None
    if exact and s0 == 2 and (cut is None or "stops below" in cut):
        return Connectivity(True, (
            f"the moves connect every candidate (proven): {size} tables with exact 2-way "
            "totals, where the lifted cycles are the Graver basis of the Lawrence lifting "
            "of the independence model (Sturmfels 1996, Theorem 7.1), which connects "
            "every fiber with cell bounds"))
    if exact and s1 <= 3 and cut is None:
        return Connectivity(True, (
            f"the moves connect every candidate (proven): {size} tables with exact 2-way "
            "totals and cell windows that cut no table hold the minimal Markov basis of "
            "3 x 3 x K tables (Aoki & Takemura 2003: degrees 4, 6, 8, 10)"))
    if not exact:
        why = "some 2-way total is a window, not a number"
    elif cut is not None:
        why = cut
    else:
        why = (f"{size} tables: two axes of 4 or more levels, where no Markov basis is "
               "among the moves")
    tables = list_candidates(ew, limit, steps) if exact else None
    if tables is None:
        unlisted = (f"the candidates are too many to list (more than {limit})" if exact
                    else "the check by listing covers exact totals only")
        return Connectivity(False, (
            f"not proven that the moves connect every candidate ({why}); {unlisted}, so "
            "they were not checked: the chains start from the most dispersed of several "
            "vertices of the candidates' polytope, and their agreement (R-hat) is the "
            "only check"))
    labels = components(tables, shape)
    parts = int(labels.max()) + 1
    if parts == 1:
        return Connectivity(True, (
            f"the moves connect every candidate (checked, not proven: {why}): all "
            f"{len(tables)} candidates listed by the exact enumerator are one part"),
            1, tables, labels)
    sizes = np.bincount(labels)
    return Connectivity(False, (
        f"the moves do NOT connect the candidates ({why}): the {len(tables)} candidates "
        f"listed by the exact enumerator fall into {parts} parts the chains cannot cross "
        f"(sizes {', '.join(map(str, sizes.tolist()))}); chains started in different "
        "parts: the Monte Carlo answer is not the posterior (route='enumerate' gives it "
        "exactly)"), parts, tables, labels)


def list_candidates(ew: EntryWindows, limit: int = CHECK_LIMIT,
                    steps: int = CHECK_STEPS) -> np.ndarray | None:
    """Every table with positive weight, by the exact enumerator's walk with every weight
    flattened to 1 (each leaf then carries one unit of the cumulative weight).

    Parameters
    ----------
    ew : EntryWindows
        The windows (prior included).
    limit : int
        Most tables listed.
    steps : int
        Most steps of the walk.

    Returns
    -------
    numpy.ndarray or None
        int64 ``(n, I * J * K)`` in the walk's order; None when there are more than
        ``limit`` (or the walk took more than ``steps``).
    """
    (I, J, K, clo, cw, mlo, mw), _, _, _ = _kernel_arrays(ew)
    cw = np.where(np.isfinite(cw), 0.0, -np.inf)
    mw = np.where(np.isfinite(mw), 0.0, -np.inf)
    count, total, ref, _, _, _ = table_enum.enumerate_3d_windows(
        I, J, K, clo, cw, mlo, mw, -np.inf, np.zeros(0), int(steps))
    if count < 0 or count > limit:
        return None
    if count == 0:
        return np.zeros((0, I * J * K), np.int64)
    targets = (np.arange(count) + 0.5) * (total / count)
    return table_enum.enumerate_3d_windows(I, J, K, clo, cw, mlo, mw, ref, targets)[5]


def _canonical(p: np.ndarray) -> tuple:
    """A key of the 3 x 3 x L pattern ``p`` that is the same for every pattern obtained
    from it by permuting the levels of each axis, exchanging the first two axes and the
    sign (the symmetries :func:`kernels.gibbs._lifted` draws from)."""
    best = None
    for t in (p, p.transpose(1, 0, 2)):
        for sign in (1, -1):
            for pr in itertools.permutations(range(3)):
                for pc in itertools.permutations(range(3)):
                    q = sign * t[list(pr)][:, list(pc)]
                    key = tuple(sorted(q[:, :, w].tobytes() for w in range(q.shape[2])))
                    best = key if best is None or key < best else best
    return (p.shape[2], best)


_PATTERNS: list = []


def _is_cycle(a: np.ndarray) -> bool:
    """Whether the 2-D pattern ``a`` (entries 0, +1, -1) is +1 / -1 around one cycle."""
    rows = np.nonzero(np.abs(a).sum(axis=1))[0]
    cols = np.nonzero(np.abs(a).sum(axis=0))[0]
    if rows.size != cols.size or rows.size < 2:
        return False
    for line in list(a[rows]) + list(a[:, cols].T):
        if sorted(line[line != 0].tolist()) != [-1, 1]:
            return False
    r0 = rows[0]
    r, n = r0, 0
    while True:                      # +1 in row r -> the row's -1 -> that column's +1
        c = int(np.nonzero(a[r] == -1)[0][0])
        r = int(np.nonzero(a[:, c] == 1)[0][0])
        n += 1
        if r == r0:
            return n == rows.size


def _is_move(m: np.ndarray) -> bool:
    """Whether ``m`` (3-D, entries 0, +1, -1) is a lifted cycle or a degree-8 / degree-10
    move of :mod:`kernels.gibbs` (in any orientation)."""
    if not _PATTERNS:
        _PATTERNS.extend([_canonical(moves.DEG8), _canonical(moves.DEG10)])
    for o in range(3):
        rest = tuple(a for a in range(3) if a != o)
        layers = np.nonzero(np.abs(m).sum(axis=rest))[0]
        if layers.size == 2:
            a, b = np.take(m, layers[0], axis=o), np.take(m, layers[1], axis=o)
            if np.array_equal(a, -b) and _is_cycle(a):
                return True
        elif layers.size in (4, 5):
            sub = np.moveaxis(np.take(m, layers, axis=o), o, 2)
            r = np.nonzero(np.abs(sub).sum(axis=(1, 2)))[0]
            c = np.nonzero(np.abs(sub).sum(axis=(0, 2)))[0]
            if r.size == 3 and c.size == 3 and _canonical(sub[r][:, c]) in _PATTERNS:
                return True
    return False


def components(tables: np.ndarray, shape) -> np.ndarray:
    """The parts the moves of :func:`chains` (every 2-way total exact) split ``tables``
    into: two tables are joined when one block redraw (they differ only on two indices of
    each of two axes) or one move redrawn along its line (their difference is ``t`` times
    a lifted cycle or a degree-8 / degree-10 move) turns one into the other.

    Parameters
    ----------
    tables : numpy.ndarray
        int ``(n, I * J * K)``: every candidate.
    shape : tuple
        ``(I, J, K)``.

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``: each table's part, numbered by decreasing size.
    """
    tables = np.asarray(tables, np.int64)
    n = len(tables)
    parent = np.arange(n)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    shape = tuple(int(d) for d in shape)
    for f in range(3):
        a1, a2 = (f + 1) % 3, (f + 2) % 3
        for p in itertools.combinations(range(shape[a1]), 2):
            for q in itertools.combinations(range(shape[a2]), 2):
                block = np.zeros(shape, bool)
                for u in p:
                    for v in q:
                        at = [slice(None)] * 3
                        at[a1], at[a2] = u, v
                        block[tuple(at)] = True
                _, inv = np.unique(tables[:, ~block.ravel()], axis=0, return_inverse=True)
                inv = np.ravel(inv)
                order = np.argsort(inv, kind="stable")
                same = inv[order][1:] == inv[order][:-1]
                for a, b in zip(order[:-1][same], order[1:][same]):
                    union(a, b)
    most = 4 * max(shape)
    for i in range(n - 1):
        d = tables[i + 1:] - tables[i]
        t = np.abs(d).max(axis=1)
        nz = d != 0
        ok = (nz.sum(axis=1) <= most) & np.all((np.abs(d) == t[:, None]) | ~nz, axis=1)
        for j in np.nonzero(ok)[0]:
            if find(i) != find(i + 1 + j) and _is_move((d[j] // t[j]).reshape(shape)):
                union(i, i + 1 + j)
    roots = np.array([find(a) for a in range(n)])
    _, lab, counts = np.unique(roots, return_inverse=True, return_counts=True)
    rank = np.empty_like(counts)
    rank[np.argsort(-counts, kind="stable")] = np.arange(counts.size)
    return rank[np.ravel(lab)].astype(np.int64)


def dispersed_starts(ew: EntryWindows, n: int, rng: np.random.Generator,
                     extremes: int = 8) -> list:
    """``n`` starting tables far apart: vertices of the candidates' polytope that make
    ``extremes`` random cells smallest and largest, and ``n`` in random directions, of
    which the most dispersed are kept (greedy farthest points in L1 from a random one).

    Parameters
    ----------
    ew : EntryWindows
        The windows (prior included).
    n : int
        Tables.
    rng : numpy.random.Generator
        Directions and the first pick.
    extremes : int
        Cells whose smallest and largest values are asked for.

    Returns
    -------
    list
        ``n`` flat int64 tables (repeated when the polytope has fewer vertices).
    """
    poly = _polytope(ew)
    size = poly[3].size
    dirs = []
    for c in rng.permutation(size)[:extremes]:
        for sign in (1.0, -1.0):
            d = 1e-3 * rng.standard_normal(size)        # ties broken at random
            d[c] = sign
            dirs.append(d)
    dirs += [rng.standard_normal(size) for _ in range(n)]
    pool = []
    for d in dirs:
        x = random_vertex(*poly, rng, 20, d)
        if x is not None and not any(np.array_equal(x, y) for y in pool):
            pool.append(x)
    if not pool:
        return [start(ew, rng).ravel() for _ in range(n)]
    pick = [int(rng.integers(len(pool)))]
    dist = np.array([np.abs(x - pool[pick[0]]).sum() for x in pool], float)
    while len(pick) < n:
        k = int(np.argmax(dist))
        pick.append(k)
        dist = np.minimum(dist, [np.abs(x - pool[k]).sum() for x in pool])
    return [pool[k].copy() for k in pick]
