"""Blocked Gibbs sampling with exact updates: the Monte Carlo route beyond the exact frontier.

2-D tables.  Where the exact table DP does not fit, the posterior over original tables is
sampled by a Markov chain of exact redraws.  Most sweeps are cheap and compiled
(:func:`kernels.gibbs.sweeps_2d`): R x C basic moves (+1 -1 / -1 +1 on two rows and two
columns, Diaconis & Sturmfels 1998), cycles through 3 or more rows and columns (+1 / -1
around them), each redrawn exactly along its line ``x + t m``, and where a total is a
window (rounding, noise, cell key) every cell alone and with a partner in its row and its
column -- moves that keep the margins alone cannot leave a margin.
Where some cells are published (suppression, structural zeros), every sweep first
redraws the fundamental cycles of the free cells (:func:`fundamental_cycles`, a lattice
basis of the moves among them), which random circuits through them almost never are: a
10 x 10 table with 28 cells suppressed went from R-hat 2e7 (chains that never moved) to
1.007 (benchmarks/sis_posterior.py).
Every ``BLOCK_EVERY``-th sweep also redraws a random pair of rows exactly: given all
other rows, the two rows form a small table whose cells, row totals, column sums (the
column totals' windows shifted by what the other rows hold) and grand total keep their
windows and log-weights; the table DP draws it from its exact conditional distribution
(forward filtering, backward sampling: :func:`riskengine.inference.table_dp.sample`).

**Long log-concave lines** (every total exact, every cell's log-weights concave on an
interval -- margins only or suppression under ``Uniform``, ``Poisson``, a negative binomial
of dispersion >= 1 -- and some window longer than ``kernels.gibbs.SHORT_LINE`` values:
counts in the hundreds to 1e5 and beyond): the chains start from random vertices of the
cells' polytope (:meth:`EntryWindows.vertex`, one LP variable a cell), each sweep redraws
the fundamental cycles of the free cells (:func:`fundamental_cycles`), the basic moves
and the cycles through ``m >= 3`` rows, every line by exact rejection from a flat-and-
geometric envelope in O(log(length)) evaluations
(:func:`kernels.gibbs.sweeps_2d_concave`), and no row-pair DP (whose cost grows with the
square of the counts).  The moves are the same circuits as below, so the chain connects
every candidate; ``attrs["line_draws"]`` says this path was taken.  3 x 3 margins only
near 1e5 under ``Uniform`` or a negative binomial prior: about 1 s, R-hat <= 1.003, bulk
ESS > 3,000 (benchmarks/large_counts.py).

What is proven about reaching every candidate (``attrs["moves"]`` of the result says
which case a release is in):

* **Every total exact, cell windows without holes** (margins only, suppression, fixed
  cells, structural zeros, bounds from the prior): the chain is irreducible.  The basic
  moves (4-cycles) and the longer cycles are every circuit of the complete bipartite
  graph K_{R,C}; its incidence matrix -- the row and column sums -- is unimodular, so its
  circuits are its Graver basis (Sturmfels 1996, "Groebner Bases and Convex Polytopes",
  ch. 8).  Between two candidates x and y, ``y - x`` is a conformal sum of Graver
  elements (the defining property of a Graver basis: its elements are the conformally
  minimal vectors of the lattice); adding them one at a time moves each cell
  monotonically from ``x_c`` to ``y_c``, so every intermediate table stays within every
  cell window (an interval) and keeps the totals: a path of moves, each of positive
  probability.  Without bounds the basic moves alone already connect (Diaconis &
  Sturmfels 1998); with bounds (a suppression pattern) the cycles through three or more
  rows are needed, and the chain has them.
* **Some total is a window** (rounding, noise, cell key) **or a cell window has holes**:
  not proven; the tests compare with the exact DP on small tables and several chains
  from dispersed starts let R-hat see a chain confined to one part.

3-D tables with every 2-way margin: :mod:`.gibbs3d`.

Several chains (default 4) start from dispersed tables: the constrained mode of the
weights and random vertices of the same polytope (:meth:`EntryWindows.mode` with random
gains).  Diagnostics through arviz: rank-normalised split R-hat, bulk and tail ESS and
the Monte Carlo standard error of every cell's mean and of its probability at the
posterior mode; a warning (and ``attrs["converged"] = 0``) when R-hat > 1.01 or ESS < 400
anywhere.  Reproducible: the chains' generator is seeded from the release, the prior and
the settings.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from kernels import gibbs as moves

from .._seeding import release_seed
from ..protocol import Cost, MonteCarloRoute, RouteResult
from . import _chains, gibbs3d
from . import table_dp as dp

__all__ = ["ESS_MIN", "RHAT_MAX", "BlockGibbs", "ConvergenceWarning"]

#: a random pair of rows is redrawn by the exact DP every this many sweeps of line moves
BLOCK_EVERY = 5

#: thresholds of the convergence warning (Vehtari et al. 2021)
RHAT_MAX = 1.01
ESS_MIN = 400


class ConvergenceWarning(UserWarning):
    """A Monte Carlo posterior whose diagnostics say it has not converged."""


def _block(win: dp.Windows, x: np.ndarray, rows, transpose: bool = False) -> dp.Windows:
    """The windows of ``rows`` given the other rows of ``x`` (``transpose``: with the
    block's rows as the DP's columns, so that its state is the block's few partial row
    sums instead of a vector over every column)."""
    other = np.ones(x.shape[0], bool)
    other[rows] = False
    rest = x[other].sum(axis=0)
    if transpose:
        return dp.Windows(win.cell_lo[rows].T, win.cell_lw[rows].transpose(1, 0, 2),
                          win.col_lo - rest, win.col_lw, win.row_lo[rows], win.row_lw[rows],
                          int(win.grand_lo - rest.sum()), win.grand_lw)
    return dp.Windows(win.cell_lo[rows], win.cell_lw[rows], win.row_lo[rows],
                      win.row_lw[rows], win.col_lo - rest, win.col_lw,
                      int(win.grand_lo - rest.sum()), win.grand_lw)


def _packed_2d(ew):
    """Plain arrays for :func:`kernels.gibbs.sweeps_2d`: cell windows, the row, column and
    grand totals' windows packed into one table, and each cell's three totals."""
    R, C = ew.shape
    d0, d1 = ew.dims
    clo, clw = ew.interior
    los = [np.ravel(ew.lo[(d0,)]), np.ravel(ew.lo[(d1,)]), np.ravel(ew.lo[()])]
    lws = [ew.lw[(d0,)], ew.lw[(d1,)], np.reshape(ew.lw[()], (1, -1))]
    Wm = max(w.shape[-1] for w in lws)
    mw = np.concatenate([np.pad(w, ((0, 0), (0, Wm - w.shape[-1])),
                                constant_values=-np.inf) for w in lws])
    i, j = (a.ravel() for a in np.indices((R, C)))
    tix = np.stack([i, R + j, np.full(i.size, R + C)], axis=1).astype(np.int64)
    return (np.ascontiguousarray(clo.ravel(), dtype=np.int64),
            np.ascontiguousarray(clw.reshape(R * C, -1), dtype=float),
            np.concatenate(los).astype(np.int64), np.ascontiguousarray(mw), tix)


def _totals_move(ew) -> bool:
    """Whether some total is a window of several values (then the line sweeps also move
    single cells and pairs, which change totals)."""
    return any(np.isfinite(w).sum(axis=-1).max() > 1 for k, w in ew.lw.items() if k != ew.dims)


def _orientation(win: dp.Windows, x: np.ndarray, rows) -> bool:
    """Whether the block DP stores fewer states transposed (measured on one block)."""
    plain = dp.states(_block(win, x, rows))[1]
    trans = dp.states(_block(win, x, rows, transpose=True))[1]
    return bool(trans < plain)


class BlockGibbs(MonteCarloRoute):
    """Blocked Gibbs sampler over 2-D tables with totals (rows redrawn in pairs by the
    table DP) and 3-D tables with every 2-way margin (:mod:`.gibbs3d`).  Reads the
    mechanism's entry windows (``plan.inputs["windows"]``)."""

    name = "gibbs"
    exact = False
    needs = "entry windows; 2-D (every total) or 3-D (every 2-way margin) count table"
    #: a row-pair DP redraw every this many sweeps (0: none; the line moves alone when every
    #: total is a wide window, where the DP over two rows is costly and not needed)
    block_every = BLOCK_EVERY

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or len(release.dims) not in (2, 3) or release.groups:
            return "the Gibbs route covers 2-D and 3-D count tables without subtotals"
        if len(release.dims) == 3:
            return gibbs3d.applies(release)
        d0, d1 = release.dims
        missing = [k for k in ((d0,), (d1,), ()) if k not in release.margins]
        if missing:
            return (f"the Gibbs route needs every total of the 2-D table published; missing "
                    f"{missing}")
        if release.shape[0] < 2 and release.shape[1] < 2:
            return "a 1 x 1 table needs no sampler"
        return None

    def estimate(self, plan, what="posterior"):
        """Memory (the kept draws and work space) and time: every sweep redraws about
        1.25 R C lines, each over its whole range of values (as wide as the cells'
        windows), and every ``block_every``-th sweep redraws two rows by the table DP,
        whose states grow with the product of the two rows' ranges (its stored states,
        :func:`riskengine.inference.table_dp.states`, on a pair of rows of a table near the
        posterior's centre); the chains share the machine's cores."""
        release = plan.release
        cells = int(np.prod(release.shape, dtype=np.int64))
        n = self.chains * self.draws
        mem = float(8 * (n * cells * 2 + 64 * cells * 200) + 50e6)
        what_ = (f"{self.chains} chains x {self.draws} draws of "
                 f"{' x '.join(map(str, release.shape))} tables")
        if len(release.dims) != 2:
            return Cost(mem, what_)
        key = ("gibbs_seconds", self.block_every)
        if key not in plan.prepared:
            try:
                ew, win, _ = self._windows_for(plan)
            except ValueError:
                plan.prepared[key] = (0.0, 0.0)
            else:
                r = win.cell_lo.shape[0]
                width = np.isfinite(ew.interior[1]).sum(axis=-1)
                line = 1.25 * cells * float(width.mean()) * 2.5e-8
                block = 0.0
                clo, cw = _packed_2d(ew)[:2]
                concave = _long_concave_lines(clo, cw, _totals_move(ew))
                if concave:
                    # about 3 log2(width) + 10 evaluations of a 4-cell line (bisections
                    # and a few proposals), ~10 ns each
                    line = 1.25 * cells * (3 * np.log2(float(width.max())) + 10) * 1e-8
                if self.block_every and r >= 2 and not concave:
                    # a table near the posterior's centre without an LP: independence
                    # R_i C_j / N, within the cells' windows (ew: the DP's orientation)
                    d0, d1 = ew.dims
                    R = np.asarray(ew.lo[(d0,)], float)
                    C = np.asarray(ew.lo[(d1,)], float)
                    lo, lw = ew.interior
                    fin = np.isfinite(lw)
                    last = lo + lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
                    x = np.clip(np.rint(np.outer(R, C) / max(R.sum(), 1.0)),
                                lo + np.argmax(fin, axis=-1), last).astype(np.int64)
                    rows = np.arange(2)
                    # a draw is one forward pass and a walk back: about 4 ns a stored
                    # state of two rows, three times more a further row (measured on 2 x
                    # 2 .. 3 x 3 blocks, benchmarks/large_counts.py)
                    block = min(dp.states(b)[1] * 4e-9 * 3.0 ** max(b.cell_lo.shape[0] - 2, 0)
                                for b in (_block(win, x, rows),
                                          _block(win, x, rows, transpose=True)))
                plan.prepared[key] = (line, block)
        line, block = plan.prepared[key]
        sweeps = self.warmup + self.draws
        per_chain = sweeps * line + (sweeps / self.block_every * block
                                     if self.block_every and block else 0.0)
        from os import cpu_count
        cores = max(1, min(self.chains, cpu_count() or 1))
        secs = per_chain * self.chains / cores + 1.0     # + starts and diagnostics
        return Cost(mem, f"{what_}, about {secs:.2g} s", seconds=secs)

    @staticmethod
    def _windows_for(plan):
        """Tilted DP windows with the rows along the longer dim (pairs of the shorter
        rows are small DPs) and the entry windows they come from."""
        release = plan.release
        ew = plan.inputs["windows"].with_prior(plan.prior, release.coords).trimmed()
        if ew is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        flip = release.shape[0] < release.shape[1]
        e = ew.transposed() if flip else ew
        tilt = e.tilted()
        return e, dp.from_entries(tilt), flip

    def run(self, plan, *, count=True):
        release, prior, progress, memory = plan.release, plan.prior, plan.progress, plan.memory
        if len(release.dims) == 3:
            return self._run_3d(plan)
        ew, win, flip = self._windows_for(plan)
        r, c = win.cell_lo.shape
        rng = self._rng(release, prior)
        clo, cw, mlo, mw, tix = _packed_2d(ew)
        sites = _totals_move(ew)
        concave = _long_concave_lines(clo, cw, sites)
        if concave:     # random vertices of the cells' polytope (one LP variable a cell)
            starts = [ew.vertex(rng) for _ in range(self.chains)]
        else:
            starts = [ew.mode()] + [ew.mode(rng) for _ in range(self.chains - 1)]
        seeds = rng.integers(2**63 - 1, size=self.chains)
        dims = np.array([r, c], np.int64)
        transpose = False if concave else _orientation(
            win, np.rint(starts[0]).astype(np.int64), np.arange(min(2, r)))
        n_it = self.warmup + self.draws

        # a table with published (fixed) cells: the fundamental cycles of the free cells
        # every sweep, which random circuits through them almost never are (a suppressed
        # 10 x 10 table did not mix without them: R-hat 2e7 after 4 x 1,000 draws)
        cn = np.isfinite(cw).sum(axis=1)
        cyc = fundamental_cycles((cn > 1).reshape(r, c)) \
            if not concave and (cn == 1).any() and (cn > 1).any() else None

        def one(ch, tick):
            crng = np.random.default_rng(seeds[ch])
            if concave:
                return _concave_chain(ch, tick, crng, starts[ch], r, c, dims, clo, cw,
                                      self.warmup, self.draws)
            out = np.zeros((self.draws, r, c), np.int64)
            idle = np.zeros((1, 1), np.int64)
            x = np.ascontiguousarray(np.rint(starts[ch]).astype(np.int64))
            flat = x.reshape(-1)                   # a view: the kernel moves x
            moves.seed(int(crng.integers(2**31 - 1)))
            for it in range(n_it):
                if self.block_every and it % self.block_every == 0:
                    self._block_sweep(win, x, crng, transpose, memory, ch)
                    tsum = gibbs3d.totals(flat, tix, mlo.size)   # the DP does not keep it
                elif it == 0:
                    tsum = gibbs3d.totals(flat, tix, mlo.size)
                if it % 50 == 0:
                    tick(min(50, n_it - it))       # progress; stops here on Ctrl-C
                keep = it >= self.warmup
                buf = out[it - self.warmup].reshape(1, -1) if keep else idle
                if cyc is not None and cyc[0].size > 1:
                    moves.cycle_sweep(flat, clo, cw, *cyc)
                moves.sweeps_2d(flat, dims, clo, cw, mlo, mw, tix, tsum, 1, keep, buf, sites)
            if not np.isfinite(gibbs3d.log_weight(flat, clo, cw, mlo, mw, tsum)) or \
                    not np.array_equal(tsum, gibbs3d.totals(flat, tix, mlo.size)):
                raise RuntimeError(f"internal error: Gibbs chain {ch} left the support")
            return out

        out = np.stack(_chains.run(self.chains, one, self.chains * n_it, progress,
                                   self.workers, self.scheduler))
        if flip:
            out = np.swapaxes(out, 2, 3)
        notes = {"moves": _moves_2d(cw, sites)}
        if concave:
            notes["line_draws"] = ("log-concave lines of more than "
                                   f"{moves.SHORT_LINE} values redrawn by exact rejection "
                                   "(no row-pair DP: the line moves connect this fiber)")
        return self._result(release, out, notes=notes)

    @staticmethod
    def _block_sweep(win, x, rng, transpose, memory, ch):
        """Redraw a random pair of rows (the whole table when it has one row) from its exact
        conditional law given the other rows, by the table DP."""
        r = x.shape[0]
        rows = np.sort(rng.choice(r, size=min(2, r), replace=False))
        try:
            t = dp.sample(_block(win, x, rows, transpose), 1, rng, max_states=memory / 8)[0]
            x[rows] = t.T if transpose else t
        except ValueError:
            raise ValueError(
                f"Gibbs chain {ch}: rows {rows.tolist()} have no completion given the other "
                "rows (the starting table lies outside the windows' support there); no Monte "
                "Carlo answer") from None

    def _rng(self, release, prior):
        settings = (self.chains, self.warmup, self.draws) + \
            (() if self.seed is None else (self.seed,))
        return np.random.default_rng(release_seed(release, prior, settings))

    def _run_3d(self, plan):
        release, prior = plan.release, plan.prior
        ew = plan.inputs["windows"].with_prior(prior, release.coords).trimmed()
        if ew is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        rng = self._rng(release, prior)
        conn = gibbs3d.connectivity(ew)
        starts = conn.starts(self.chains, rng)
        if starts is None and not conn.proven:
            starts = gibbs3d.dispersed_starts(ew, self.chains, rng)
        out = gibbs3d.chains(ew, self.chains, self.warmup, self.draws, rng, plan.progress,
                             workers=self.workers, scheduler=self.scheduler, starts=starts)
        approximation = f"Monte Carlo: blocked Gibbs, {self.chains} chains x {self.draws} " \
                        "draws" + ("" if conn.proven else
                                   "; the moves are not proven to reach every candidate")
        notes = {"moves": conn.text}
        if conn.parts is not None:
            notes["move_parts"] = conn.parts
        return self._result(release, out, approximation, notes=notes,
                            reducible=bool(conn.parts and conn.parts > 1))

    @staticmethod
    def _result(release, draws, approximation: str = "", reducible: bool = False,
                judged=None, **extra) -> RouteResult:
        """The Monte Carlo result of the chains' kept ``draws`` ``(chain, draw, *shape)``:
        each cell's share of draws at each value, arviz diagnostics, whole-table draws
        replayed from the chains; ``approximation`` (default: blocked Gibbs) and ``extra``
        fields of the result (``totals``, ``notes``); ``reducible``: the moves are known not
        to connect the candidates (not converged, whatever the diagnostics say); ``judged``:
        :func:`judge` of these draws when the caller has it (rounds judge their draws)."""
        chains, n = draws.shape[:2]
        lo, probs, diag, ok = judged if judged is not None else \
            judge(draws, release.dims, release.coords)
        bad = not ok
        summary = (f"max R-hat {diag.attrs['max_rhat']:.4f}, min bulk ESS "
                   f"{diag.attrs['min_ess_bulk']:.0f}, min tail ESS "
                   f"{diag.attrs['min_ess_tail']:.0f}")
        if reducible:
            warnings.warn("the Monte Carlo posterior has not converged: the chains' moves do "
                          "not connect the candidate tables (attrs['moves'] says how it was "
                          f"found); {summary}", ConvergenceWarning, stacklevel=3)
        elif bad:
            warnings.warn(f"the Monte Carlo posterior has not converged by the usual rules "
                          f"(R-hat <= {RHAT_MAX}, ESS >= {ESS_MIN}): {summary}",
                          ConvergenceWarning, stacklevel=3)
        bad = bad or reducible
        notes = {"n_candidates_note": "not counted by the Monte Carlo route (draws visit "
                                      "candidates, they do not count them)",
                 "diagnostics": summary, **extra.pop("notes", {})}
        return RouteResult(start=lo, probs=probs, log_evidence=np.nan, n_candidates=None,
                           approximation=approximation or (
                               f"Monte Carlo: blocked Gibbs, {chains} chains x {n} draws"),
                           sampler=_replay(draws), diagnostics=diag, chains=draws,
                           converged=not bad, notes=notes, **extra)



def _long_concave_lines(clo, cw, sites: bool) -> bool:
    """Whether the 2-D chain takes :func:`kernels.gibbs.sweeps_2d_concave`: every total
    exact (no ``sites``), every cell's log-weights finite on an interval and concave there
    (second differences at most 1e-9 of their size: a log-concave prior such as Poisson or
    a negative binomial of dispersion >= 1, with the flat windows of margins only and
    suppression), and some cell's window longer than :data:`kernels.gibbs.SHORT_LINE`
    (counts in the hundreds and beyond, where listing each line's values and the row-pair
    DP cost time that grows with the counts).  The line moves alone then connect every
    candidate (:func:`_moves_2d`)."""
    if sites:
        return False
    fin = np.isfinite(cw)
    # finite from each window's first value on (trimmed windows), without holes
    if fin.sum(axis=1).max() <= moves.SHORT_LINE or not fin[:, 0].all() or _holes(cw):
        return False
    w = np.where(fin, cw, 0.0)
    d2 = w[:, 2:] - 2 * w[:, 1:-1] + w[:, :-2]
    both = fin[:, 2:] & fin[:, 1:-1] & fin[:, :-2]
    tol = 1e-9 * max(1.0, float(np.abs(w).max()))
    return bool(np.all(d2[both] <= tol))


def fundamental_cycles(free: np.ndarray):
    """The fundamental cycles of the free cells of an R x C table (``free``: bool (R, C)),
    the edges of a bipartite graph of rows and columns, against a BFS spanning forest: one
    cycle per edge outside the forest, +1 / -1 alternating around it (a move that keeps
    every row and column sum).  They are a basis of the lattice of moves among the free
    cells.

    Parameters
    ----------
    free : numpy.ndarray
        bool (R, C).

    Returns
    -------
    tuple
        ``(ptr, idx, dv)`` int64: cycle ``k`` is the flat cells ``idx[ptr[k]:ptr[k + 1]]``
        with coefficients ``dv[...]``.
    """
    R, C = free.shape
    adj = [[] for _ in range(R + C)]
    for i, j in zip(*np.nonzero(free)):
        adj[i].append(R + j)
        adj[R + j].append(int(i))
    parent = [-1] * (R + C)
    depth = [-1] * (R + C)
    tree = set()
    for root in range(R + C):
        if depth[root] >= 0:
            continue
        depth[root] = 0
        queue = [root]
        for u in queue:
            for v in adj[u]:
                if depth[v] < 0:
                    depth[v], parent[v] = depth[u] + 1, u
                    tree.add((min(u, v), max(u, v)))
                    queue.append(v)

    def cell(u, v):
        i, j = (u, v - R) if u < R else (v, u - R)
        return i * C + j

    ptr, idx, dv = [0], [], []
    for i, j in zip(*np.nonzero(free)):
        u, v = int(i), R + int(j)
        if (u, v) in tree:
            continue
        # the tree path from v back to u, then the edge (u, v)
        left, right = [u], [v]
        a, b = u, v
        while a != b:
            if depth[a] >= depth[b]:
                a = parent[a]
                left.append(a)
            else:
                b = parent[b]
                right.append(b)
        nodes = right + left[-2::-1]        # v .. lca .. u
        edges = [cell(u, v)] + [cell(nodes[k], nodes[k + 1]) for k in range(len(nodes) - 1)]
        idx += edges
        dv += [1 if k % 2 == 0 else -1 for k in range(len(edges))]
        ptr.append(len(idx))
    return (np.asarray(ptr, np.int64), np.asarray(idx, np.int64), np.asarray(dv, np.int64))


def _concave_chain(ch, tick, crng, start, r, c, dims, clo, cw, warmup, draws):
    """One chain of :func:`kernels.gibbs.sweeps_2d_concave`: ``warmup`` sweeps, then
    ``draws`` kept, in pieces of 50 sweeps (progress between them)."""
    cn = np.isfinite(cw).sum(axis=1).astype(np.int64)  # finite from clo on: one interval
    cyc = fundamental_cycles((cn > 1).reshape(r, c))
    out = np.zeros((draws, r * c), np.int64)
    idle = np.zeros((1, 1), np.int64)
    x = np.ascontiguousarray(np.rint(start).astype(np.int64)).reshape(-1)
    moves.seed(int(crng.integers(2**31 - 1)))
    done = 0
    while done < warmup:
        k = min(50, warmup - done)
        moves.sweeps_2d_concave(x, dims, clo, cw, cn, k, False, idle, *cyc)
        tick(k)
        done += k
    kept = 0
    while kept < draws:
        k = min(50, draws - kept)
        moves.sweeps_2d_concave(x, dims, clo, cw, cn, k, True, out[kept:kept + k], *cyc)
        tick(k)
        kept += k
    lw = np.take_along_axis(cw, (out[-1] - clo)[:, None], axis=1) if draws else None
    if draws and not np.all(np.isfinite(lw)):
        raise RuntimeError(f"internal error: Gibbs chain {ch} left the support")
    return out.reshape(draws, r, c)


def _holes(cw) -> bool:
    """Whether some cell's window (rows of ``cw``, log-weights) has an impossible value
    between its first and last possible ones."""
    fin = np.isfinite(cw)
    first = np.argmax(fin, axis=1)
    last = cw.shape[1] - 1 - np.argmax(fin[:, ::-1], axis=1)
    cols = np.arange(cw.shape[1])
    return bool(np.any(~fin & (cols >= first[:, None]) & (cols <= last[:, None])))


def _moves_2d(cw, sites: bool) -> str:
    """What is proven about the 2-D chain reaching every candidate (the module docstring),
    from the cell windows ``cw`` (flat log-weights) and whether some total is a window."""
    holes = _holes(cw)
    if not sites and not holes:
        return ("the moves connect every candidate (proven): with every total exact, the "
                "basic moves and the cycles are the Graver basis of two-way tables (the "
                "circuits of a unimodular matrix; Sturmfels 1996, ch. 8), which connects "
                "every fiber with cell bounds")
    why = "some total is a window, not a number" if sites else \
        "a cell's window excludes values between its ends"
    return (f"not proven that the moves connect every candidate ({why}); the chains start "
            "from dispersed tables and their agreement (R-hat) is the check")


def _replay(draws):
    """Whole-table draws of a Monte Carlo posterior: ``n`` of the chains' kept draws,
    taken without replacement by ``rng`` (in chain order), at most as many as were kept."""
    flat = draws.reshape((-1,) + draws.shape[2:])

    def draw(n, rng):
        if n > len(flat):
            raise ValueError(f"the Gibbs route kept {len(flat)} draws ({draws.shape[0]} "
                             f"chains x {draws.shape[1]}); asked for {n}")
        return flat[np.sort(rng.choice(len(flat), n, replace=False))].copy()
    return draw


def judge(draws: np.ndarray, dims, coords) -> tuple:
    """``(lo, probs, diagnostics, converged)`` of kept draws ``(chain, draw, *shape)``:
    each cell's least value and share of draws at each value from there, arviz's
    diagnostics (:func:`diagnostics`) and whether they pass the usual rules (R-hat <=
    :data:`RHAT_MAX`, bulk and tail ESS >= :data:`ESS_MIN`)."""
    chains, n = draws.shape[:2]
    shape = draws.shape[2:]
    lo = draws.min(axis=(0, 1))
    W = int((draws.max(axis=(0, 1)) - lo).max()) + 1 if lo.size else 1
    flat = draws.reshape((chains * n, -1)) - lo.reshape(-1)
    ncell = flat.shape[1]
    # every cell's share of draws at each value: one bincount over (cell, value)
    probs = (np.bincount((np.arange(ncell) * W + flat).ravel(), minlength=ncell * W)
             .reshape(shape + (W,)) / float(chains * n))
    diag = diagnostics(draws, lo, probs, dims, coords)
    ok = bool(diag.attrs["max_rhat"] <= RHAT_MAX and diag.attrs["min_ess_bulk"] >= ESS_MIN
              and diag.attrs["min_ess_tail"] >= ESS_MIN)
    return lo, probs, diag, ok


def diagnostics(draws: np.ndarray, lo: np.ndarray, probs: np.ndarray, dims, coords):
    """arviz's rank-normalised R-hat, bulk / tail ESS and MCSE of every cell's mean and of
    its probability at the posterior mode, from draws ``(chain, draw, *shape)``."""
    from .. import _arviz
    az = _arviz.arviz()
    mode = lo + probs.argmax(axis=-1)
    at_mode = (draws == mode).astype(float)
    ds = xr.Dataset({"value": (("chain", "draw", *dims), draws.astype(float)),
                     "at_mode": (("chain", "draw", *dims), at_mode)},
                    coords={d: coords[d] for d in dims})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # constant cells: 0 / 0
        rhat = az.rhat(ds)["value"].values
        ess_b = az.ess(ds, method="bulk")["value"].values
        ess_t = az.ess(ds, method="tail")["value"].values
        mc = az.mcse(ds)
        mcse, mcse_p = mc["value"].values, mc["at_mode"].values
    const = draws.min(axis=(0, 1)) == draws.max(axis=(0, 1))
    n = draws.shape[0] * draws.shape[1]
    # a cell that varies but gets no finite diagnostic (chains each stuck on a different
    # value: zero within-chain variance) has not converged: R-hat inf, ESS 0, MCSE inf
    rhat = np.where(const, 1.0, np.where(np.isnan(rhat), np.inf, rhat))
    ess_b = np.where(const, n, np.nan_to_num(ess_b, nan=0.0))
    ess_t = np.where(const, n, np.nan_to_num(ess_t, nan=0.0))
    mcse = np.where(const, 0.0, np.where(np.isnan(mcse), np.inf, mcse))
    mcse_p = np.where(const, 0.0, np.where(np.isnan(mcse_p), np.inf, mcse_p))
    c = {d: coords[d] for d in dims}
    out = xr.Dataset({"rhat": (dims, rhat), "ess_bulk": (dims, ess_b),
                      "ess_tail": (dims, ess_t), "mcse_mean": (dims, mcse),
                      "mcse_max_prob": (dims, mcse_p)}, coords=c)
    out.attrs.update(max_rhat=float(np.max(rhat)), min_ess_bulk=float(np.min(ess_b)),
                     min_ess_tail=float(np.min(ess_t)), chains=int(draws.shape[0]),
                     draws=int(draws.shape[1]))
    return out
