"""The sums route: exact posteriors of hierarchical tables and linked table sets whose
cells are published exactly or not at all (cell suppression, margins only).

The unknowns are the finest cells no published number fixes alone; every published cell
that is not a finest cell is a sum of finest cells (:class:`riskengine.cell_system.
CellSystem`'s ``M``), so the candidates are the nonnegative integer assignments of the
unknowns meeting every published sum exactly.  ``kernels.sum_enum`` walks them depth
first (the rows closing earliest first, forced cells propagated), storing none, and
accumulates the count, the evidence and every unknown's pmf under a product-form prior.
Each unknown's window is ``0 ..`` the smallest published sum holding it (or the prior's
bounds).  The work is the number of candidates: the route estimates it before running
from the free dimensions (unknowns minus independent sums) and their windows, and stops
at ``MAX_LEAVES`` (an honest refusal, never a partial answer).
"""

from __future__ import annotations

import copy

import numpy as np

from ..protocol import Cost, Route, RouteRefused, RouteResult
from .gibbs import BlockGibbs

__all__ = ["SumEnumerate", "SumsGibbs"]

#: leaves the walk may visit before the route refuses (about a minute: the walk visits ~1e6 leaves a second)
MAX_LEAVES = 5e7
#: candidates kept for whole-table draws (exact draws when every candidate is kept)
KEEP = 200_000
#: leaves per second of the walk (measured: benchmarks/RESULTS.md, issue 28)
RATE = 8e5


class _Problem:
    """The unknowns, their windows and the published sums over them."""

    def __init__(self, release, prior):
        s = release.system
        x = release.cell_vector()
        n_fin = s.n_interior
        fin = x[:n_fin]
        self.unknown = np.flatnonzero(np.isnan(fin))
        known = ~np.isnan(fin)
        M = s.M.tocsr()
        pub_agg = np.flatnonzero(~np.isnan(x) & (np.arange(s.n_var) >= n_fin))
        sub = M[pub_agg]
        kv = np.where(known, fin, 0.0)
        target = x[pub_agg] - sub @ kv
        Mu = sub[:, self.unknown].tocsr()
        has = np.diff(Mu.indptr) > 0
        bad = (~has) & (np.abs(target) > 1e-9)
        if bad.any() or (target < -1e-9).any():
            j = pub_agg[int(np.argmax(bad | (target < -1e-9)))]
            raise _NoCandidate(f"the published cell {s.labels()[j]} does not equal the sum "
                               "of the published cells it holds")
        self.rows = Mu[has]
        self.target = np.rint(target[has]).astype(np.int64)
        n = self.unknown.size
        cap = np.full(n, np.iinfo(np.int64).max // 4)
        # a cell is at most the smallest published sum holding it
        np.minimum.at(cap, self.rows.indices,
                      np.repeat(self.target, np.diff(self.rows.indptr)))
        # a cell in no published sum: the prior's bounds must bound it
        lo_b, hi_b = prior.bounds(s.shape, s.dims, s.coords)
        hi_b = np.asarray(hi_b).reshape(-1)[self.unknown]
        lo_b = np.asarray(lo_b).reshape(-1)[self.unknown]
        high = getattr(prior, "high", None)     # a per-cell prior's own support (Flat)
        if isinstance(high, (int, np.integer)) and not isinstance(high, bool):
            hi_b = np.where(hi_b >= 0, np.minimum(hi_b, high), high)
        free = cap >= np.iinfo(np.int64).max // 4
        if free.any() and (hi_b[free] < 0).any():
            c = self.unknown[np.flatnonzero(free & (hi_b < 0))[0]]
            raise _Refusal(f"finest cell {s.labels()[c]} is in no published sum: its values "
                           "are unbounded (give the prior an upper bound)")
        cap = np.where(hi_b >= 0, np.minimum(cap, hi_b), cap)
        self.lo = np.maximum(lo_b, 0).astype(np.int64)
        self.W = np.maximum(cap - self.lo + 1, 0).astype(np.int64)
        self.known = known
        self.fin = fin
        self.system = s
        self.prior = prior

    def memory(self) -> float:
        """Bytes: the value and log-weight grids of every finest cell (``weights``), the
        unknowns' histograms and the kept candidates."""
        wmax = max(int(self.W.max(initial=1)), 1)
        n_fin = int(np.prod(self.system.shape))
        return 16.0 * n_fin * wmax + 24.0 * self.unknown.size * wmax + \
            8.0 * KEEP * max(self.unknown.size, 1)

    def leaves_bound(self) -> float:
        """An upper bound on the candidates: the product of the windows of free cells
        that fix every other one (the cells outside a basis of the sums' columns, the
        basis taken greedily from the widest windows, so the free ones are the narrowest
        a basis allows); past 400 unknowns, the widest windows over the free dimensions."""
        n = self.unknown.size
        if n == 0:
            return 1.0
        R = self.rows.toarray() if self.rows.shape[0] else np.zeros((0, n))
        W = self.W.astype(float)
        if n > 400 or R.shape[0] == 0:
            rank = np.linalg.matrix_rank(R) if R.shape[0] else 0
            return float(np.prod(np.sort(W)[::-1][: n - rank]))
        basis: list = []
        rank = 0
        for c in np.argsort(-W, kind="stable"):
            if np.linalg.matrix_rank(R[:, [*basis, c]]) > rank:
                basis.append(c)
                rank += 1
        free = np.setdiff1d(np.arange(n), basis)
        return float(np.prod(W[free]))

    def weights(self):
        s = self.system
        Wmax = max(int(self.W.max(initial=1)), 1)
        vals = np.zeros((int(np.prod(s.shape)), Wmax), np.int64)
        vals[self.unknown] = self.lo[:, None] + np.arange(Wmax)
        kn = np.flatnonzero(self.known)
        vals[kn] = np.rint(self.fin[kn]).astype(np.int64)[:, None]
        lw = self.prior.log_weights(vals.reshape(s.shape + (Wmax,)), s.dims, s.coords)
        lw = lw.reshape(-1, Wmax)
        known_lw = lw[kn, 0]
        if (~np.isfinite(known_lw)).any():
            c = kn[int(np.argmax(~np.isfinite(known_lw)))]
            raise _NoCandidate(f"the prior excludes the published value of "
                               f"{s.labels()[c]}")
        ulw = lw[self.unknown].copy()
        ulw[np.arange(Wmax)[None, :] >= self.W[:, None]] = -np.inf
        return ulw, float(known_lw.sum())


class _CellsView:
    """What the labeller reads of a block's release: dims, labels, published values."""

    def __init__(self, dims, coords, published):
        self.dims, self.coords, self.published = dims, coords, published


class _Refusal(ValueError):
    pass


class _NoCandidate(ValueError):
    pass


class SumEnumerate(Route):
    """Exact posterior of a hierarchical table's or a table set's release whose cells are
    published exactly or suppressed (see the module)."""

    name = "sums"
    needs = ("an rk.TableSetRelease (hierarchical table or linked tables) of counts "
             "published exactly or suppressed")
    reads = ""

    def applies(self, plan):
        r = plan.release
        if not hasattr(r, "system") or not hasattr(r, "tableset"):
            return "the sums route answers hierarchical tables and table sets"
        if r.kind != "count":
            return "the release holds magnitudes: use rk.audit"
        return None

    @staticmethod
    def _problem(plan):
        if "sums" not in plan.prepared:
            plan.prepared["sums"] = _Problem(plan.release, plan.prior)
        return plan.prepared["sums"]

    def estimate(self, plan, what="posterior"):
        p = self._problem(plan)
        leaves = p.leaves_bound()
        # the bound is loose (the box of the free cells, not the polytope: 20-40x on
        # 3 x 4 margins); the walk itself stops at MAX_LEAVES, so it is refused here only
        # when even a loose bound's twentieth passes that
        slow = (f"up to {leaves:.3g} candidate tables, far more than the walk visits "
                f"({MAX_LEAVES:.0e})" if leaves > 20 * MAX_LEAVES else "")
        return Cost(p.memory(), f"{p.unknown.size} unknown finest cells, at most "
                                f"{leaves:.3g} candidates", slow,
                    seconds=min(leaves, MAX_LEAVES) / RATE)    # the walk stops there

    def _walk(self, plan, keep):
        from kernels.sum_enum import enumerate_sums, suggest_order
        p = self._problem(plan)
        ulw, klw = p.weights()
        rows = p.rows
        order = suggest_order(rows.indptr.astype(np.int64), rows.indices.astype(np.int64),
                              p.unknown.size)
        out = enumerate_sums(p.lo, p.W, ulw, rows.indptr.astype(np.int64),
                             rows.indices.astype(np.int64), p.target, order, keep=keep,
                             max_leaves=int(MAX_LEAVES), max_nodes=int(20 * MAX_LEAVES))
        count, overflow, n_leaves, _n_nodes, complete, log_z, probs, kept, kept_lw, all_kept \
            = out
        if not complete:
            raise RouteRefused(
                f"the sums route stopped after {n_leaves} candidate tables (its limit, "
                f"{MAX_LEAVES:.0e} candidates or {20 * MAX_LEAVES:.0e} steps): this release "
                "has more; no exact route answers it (route='gibbs' samples it)")
        return p, count, overflow, log_z + klw, probs, kept, kept_lw, all_kept

    def count(self, plan):
        _p, count, overflow, *_ = self._walk(plan, 0)
        if overflow:
            raise ValueError("more than 2**53 candidate tables: the sums route counts "
                             "exactly only below")
        return int(count)

    def run(self, plan, *, count=True):
        try:
            p, n, overflow, log_z, probs, kept, kept_lw, all_kept = self._walk(plan, KEEP)
        except _NoCandidate:
            raise ValueError("no original table is consistent with this release under this "
                             "prior") from None
        s = plan.release.system
        if not np.isfinite(log_z):
            raise ValueError("no original table is consistent with this release under this "
                             "prior")
        n_fin = s.n_interior
        W = max(probs.shape[1] if probs.size else 1, 1)
        start = np.zeros(n_fin, np.int64)
        pr = np.zeros((n_fin, W))
        kn = np.flatnonzero(p.known)
        start[kn] = np.rint(p.fin[kn]).astype(np.int64)
        pr[kn, 0] = 1.0
        start[p.unknown] = p.lo
        pr[p.unknown, :probs.shape[1]] = probs
        sampler = None
        notes = {}
        parts = ()
        if all_kept:
            parts = (self._cells_part(plan.release, p, kept, kept_lw),)
            w = np.exp(kept_lw - kept_lw.max())
            w /= w.sum()
            base = start.copy()
            base[p.unknown] = 0

            def sampler(m, rng, kept=kept, w=w, base=base, unk=p.unknown):
                pick = rng.choice(len(w), size=m, p=w)
                out = np.repeat(base[None, :], m, axis=0)
                out[:, unk] = kept[pick]
                return out.reshape((m,) + s.shape)
        else:
            notes["draws_note"] = (f"more than {KEEP} candidates: the sums route gives no "
                                   "whole-table draws")
        return RouteResult(start=start.reshape(s.shape), probs=pr.reshape(s.shape + (W,)),
                           log_evidence=float(log_z),
                           n_candidates=None if overflow else int(n),
                           sampler=sampler, notes=notes, parts=parts)

    @staticmethod
    def _cells_part(release, p, kept, kept_lw, source="from every candidate table"):
        """The posterior of every published cell of the publication (a suppressed cell's
        from the tables ``kept`` with log weights ``kept_lw``: every candidate, exact, or
        Monte Carlo draws of equal weight; ``source`` says which), as one block over dim
        ``cell`` (``post.releases[0]``)."""
        s = release.system
        x = release.cell_vector()
        idx = np.flatnonzero(s.published)
        M = s.M.tocsr()[idx]
        known_f = np.where(p.known, p.fin, 0.0)
        base = np.rint(M @ known_f).astype(np.int64)
        Mu = M[:, p.unknown]
        vals = (Mu @ kept.T).astype(np.int64) + base[:, None] if kept.size else \
            np.repeat(base[:, None], max(len(kept_lw), 1), axis=1)
        w = np.exp(kept_lw - kept_lw.max()) if kept_lw.size else np.ones(1)
        w = w / w.sum()
        lo = vals.min(axis=1)
        width = int((vals.max(axis=1) - lo).max()) + 1
        probs = np.zeros((idx.size, width))
        for k in range(idx.size):
            probs[k] = np.bincount(vals[k] - lo[k], weights=w, minlength=width)[:width]
        labels = s.labels()
        view = _CellsView(("cell",), {"cell": [labels[j] for j in idx]}, x[idx])
        what = f"posterior of every published cell of the publication (suppressed ones {source})"
        return (view, {("cell",): (lo, probs)}, what)


#: seconds one redraw of a few groups takes, for the route's time estimate (measured
#: on the tests' suppressed tables and the reconstruction tracts: 0.05-11 ms; the sampler
#: times its own redraws before the chains start)
SECONDS_PER_REDRAW = 2e-3


class SumsGibbs(BlockGibbs):
    """Monte Carlo posterior of the releases the sums route answers, past its enumeration:
    the block-redraw chains of :mod:`.sums_gibbs` over the unknown finest cells (the
    cells of a few groups redrawn at a time from their exact conditional law; groups: the
    codes of the dim with the most codes among the unknowns, crossed with the next until
    there are at least 3; and boxes: the cells of a few groups with two or three codes of
    every other dim, which in a 2-D table are the basic 2 x 2 moves).  That the redraws
    reach every candidate is not proven for these structures in general (the basic moves
    connect the tables of a 2-D table whose every interior cell is hidden, Diaconis and
    Sturmfels 1998; a redraw of every group is an exact draw where its solutions fit the
    caps, so small releases are covered): the result says so, and R-hat / ESS over
    chains from dispersed starts (random-objective integer programs) are the check.  The
    chains run on in rounds of ``draws`` draws at doubled thinning until R-hat <= 1.01 and
    ESS >= 400 or the next round would pass the time budget (``time=`` of
    ``rk.posterior``, default 120 s); ``attrs["rounds"]`` says what ran."""

    name = "gibbs"
    exact = False
    needs = ("an rk.TableSetRelease (hierarchical table or linked tables) of counts "
             "published exactly or suppressed")
    reads = ""

    def applies(self, plan):
        why = SumEnumerate().applies(plan)
        if why is not None:
            return why
        p = SumEnumerate._problem(plan)
        if int(self._groups(plan.release, p).max(initial=-1)) + 1 < 2:
            return "fewer than 2 unknown finest cells: nothing to sample"
        return None

    @staticmethod
    def _groups(release, p):
        from .sums_gibbs import groups_of
        return groups_of(SumsGibbs._codes(release, p))

    @staticmethod
    def _codes(release, p):
        """(unknowns, dims) each unknown cell's code index on every dim, the dim with
        the most codes first (the groups; the others are the boxes' dims)."""
        idx = np.unravel_index(p.unknown, tuple(release.system.shape))
        n_codes = [np.unique(i).size for i in idx]
        order = sorted(range(len(idx)), key=lambda j: -n_codes[j])
        return (np.stack([idx[j] for j in order], axis=1) if idx
                else np.zeros((p.unknown.size, 1), np.int64))

    def estimate(self, plan, what="posterior"):
        from .sums_gibbs import BOX_SHARE, box_dims, steps_per_sweep
        p = SumEnumerate._problem(plan)
        G = int(self._groups(plan.release, p).max(initial=-1)) + 1
        n_fin = int(np.prod(plan.release.system.shape))
        sweeps = self.chains * (self.warmup + self.draws)
        # a sweep's steps as the sampler counts them, with boxes at their default share
        # (the sampler times both kinds on the start table before the chains run)
        bsize = box_dims(self._codes(plan.release, p)[:, 1:], p.unknown.size)[1]
        steps = steps_per_sweep(G, bsize, BOX_SHARE if bsize.size else 0.0)
        secs = sweeps * steps * SECONDS_PER_REDRAW / min(self.chains, _cores())
        wmax = max(int(p.W.max(initial=1)), 1)
        mem = (8.0 * self.chains * self.draws * (n_fin + p.unknown.size)
               + 16.0 * n_fin * wmax + 50e6)
        return Cost(mem, f"{self.chains} chains x {self.draws} draws of "
                         f"{p.unknown.size} unknown cells in {G} groups ({steps} redraws "
                         f"a sweep), about {secs:.2g} s", seconds=secs)

    def run(self, plan, *, count=True):
        from .sums_gibbs import TooSlow, sample
        release = plan.release
        s = release.system
        p = SumEnumerate._problem(plan)
        try:
            ulw, _klw = p.weights()
        except _NoCandidate as exc:
            raise ValueError(f"no original table is consistent with this release under "
                             f"this prior: {exc}") from None
        groups = self._groups(release, p)
        rng = self._rng(release, plan.prior)
        args = (p.rows, p.target, p.lo, p.lo + p.W - 1, ulw, groups, None)
        kw = {"chains": self.chains, "draws": self.draws, "warmup": self.warmup,
              "workers": self.workers, "progress": plan.progress,
              "box_codes": self._codes(release, p)[:, 1:]}
        from .resolve import TIME_BUDGET
        budget = plan.seconds if plan.seconds is not None else TIME_BUDGET
        try:       # rounds of doubled thinning until converged, within the time budget
            sd = sample(*args, seed=copy.deepcopy(rng), max_seconds=budget,
                        until_converged=True, **kw)
        except TooSlow:        # one round is past the budget: run it (the route was chosen)
            sd = sample(*args, seed=rng, **kw)
        n_fin = s.n_interior
        base = np.zeros(n_fin, np.int64)
        kn = np.flatnonzero(p.known)
        base[kn] = np.rint(p.fin[kn]).astype(np.int64)
        full = np.repeat(base[None, None, :], self.chains, axis=0)
        full = np.repeat(full, self.draws, axis=1)
        full[:, :, p.unknown] = sd.draws
        flat = sd.draws.reshape(-1, p.unknown.size)
        part = SumEnumerate._cells_part(release, p, flat, np.zeros(len(flat)),
                                        "from the Monte Carlo draws")
        notes = {"moves": (f"block redraws of a few of {int(groups.max()) + 1} groups "
                           f"and boxes within them ({sd.boxes:.0%} of redraws; "
                           f"{sd.moved:.1%} of redraws moved, {sd.skipped:.1%} skipped "
                           "at a cap); not proven to reach every candidate"),
                 "rounds": (f"{sd.rounds} round{'s' if sd.rounds > 1 else ''} in "
                            f"{sd.seconds:.0f} s, the last keeping a draw every {sd.thin} "
                            f"sweep{'s' if sd.thin > 1 else ''} (more rounds until "
                            f"converged, within the time budget of {budget:g} s)")}
        if self.scheduler is not None:
            notes["scheduler_note"] = ("the chains ran on this machine's threads: this route "
                                       "does not send them to a dask scheduler")
        return self._result(
            release, full.reshape((self.chains, self.draws) + tuple(s.shape)),
            f"Monte Carlo: block redraws, {self.chains} chains x {self.draws} draws"
            + (f" (every {sd.thin} sweeps)" if sd.thin > 1 else "")
            + "; the moves are not proven to reach every candidate", notes=notes,
            parts=(part,))


def _cores() -> int:
    import os
    return max(1, os.cpu_count() or 1)
