"""Monte Carlo for the cell key method with the likelihood integrated over the keys, for
any published totals (rows and columns that cross, 3-D margins): chains over the counts
and the cells' keys together (:mod:`kernels.key_gibbs`), whose draws of the counts follow
the posterior under the true likelihood -- not the product of the entries' p-table
probabilities, which treats a total's key as independent of its cells' keys.

Each step redraws one cell's count and key from their exact conditional law given the
other cells' (the union of key intervals every total allows, per value), or a pattern of
cells (two cells of a total, a 2 x 2 rectangle, a 2 x 2 x 2 cube) along ``+t / -t`` with
their keys along ``+d / -d``.  Chains start at tables and keys that satisfy every
published entry, found by a mixed-integer program (HiGHS) with the prior's or random
gains (dispersed starts).  Beside each chain, replicas whose totals are soft (parallel
tempering, :func:`kernels.key_gibbs.tempered`) hand down states from other turns of the
totals' key sums, which the target's moves barely cross; while the draws fail the usual
rules, the chains go on for rounds at twice the thinning, within the time budget of the
call judged on the route's time model, not the clock, so that the draws do not depend on
the machine's speed, the workers or the scheduler (and not when the draws are too few to
pass the ESS rule at all).  The moves are not proven to connect every
candidate table: the result says so, the chains start apart, and R-hat / ESS (arviz)
judge them.  Validated against the exact key integration where that runs (1-D tables
and their total, 2-D tables and their grand total) and against a Monte Carlo integral
over the keys of every candidate of a 2 x 2 table with every total.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

from kernels import key_gibbs as kg

from .._highs_quiet import c_stdout_silenced
from .._seeding import release_seed
from ..protocol import Cost, MonteCarloRoute
from . import _chains

__all__ = ["LADDER", "KeyGibbs"]

#: the tempering ladder: the target (hard totals) and the penalties of the soft replicas
#: (a violated total weighs exp(-penalty)).  Chosen on 5 x 5 .. 10 x 10 tables with every
#: total (benchmarks/RESULTS.md, issue 26): swaps between neighbours accepted 15-95 % of
#: the rounds; from the target to the first soft replica 22-96 %.
LADDER = (kg.LAM_HARD, 6.0, 4.5, 3.5, 2.5)


def _arrays(plan):
    """Plain arrays of the cells and of the published totals that hold several cells."""
    release = plan.release
    ki = plan.inputs["key_intervals"]
    dims = release.dims
    lo = ki.lo[dims]
    W = ki.fa[dims].shape[-1]
    x = lo[..., None] + np.arange(W)
    with np.errstate(invalid="ignore"):
        logp = plan.prior.log_weights(x, dims, release.coords)
    logp = np.where((ki.fa[dims] >= 0) & ~np.isnan(logp), logp, -np.inf)
    n = lo.size
    members = [[] for _ in range(n)]
    tlo, ta, tb = [], [], []
    idx = np.arange(n).reshape(release.shape)
    for keep in ki.totals:
        axes = tuple(i for i, d in enumerate(dims) if d not in keep)
        kept = [i for i, d in enumerate(dims) if d in keep]
        moved = np.transpose(idx, kept + list(axes))
        block = moved.reshape(int(np.prod([release.shape[i] for i in kept], dtype=np.int64)),
                              -1)
        blo = np.asarray(ki.lo[keep]).reshape(-1)
        bfa = np.asarray(ki.fa[keep]).reshape(blo.size, -1)
        bfb = np.asarray(ki.fb[keep]).reshape(blo.size, -1)
        for e in range(blo.size):
            t = len(tlo)
            for c in block[e]:
                members[int(c)].append(t)
            tlo.append(int(blo[e]))
            ta.append(bfa[e])
            tb.append(bfb[e])
    TW = max((a.size for a in ta), default=1)
    pad = [np.pad(a, (0, TW - a.size), constant_values=-1.0) for a in ta]
    padb = [np.pad(b, (0, TW - b.size), constant_values=-1.0) for b in tb]
    ptr = np.zeros(n + 1, np.int64)
    ptr[1:] = np.cumsum([len(m) for m in members])
    return members, {
        "lo": np.ascontiguousarray(lo.ravel(), np.int64),
        "logp": np.ascontiguousarray(logp.reshape(n, W)),
        "ca": np.ascontiguousarray(ki.fa[dims].reshape(n, W), float),
        "cb": np.ascontiguousarray(ki.fb[dims].reshape(n, W), float),
        "tot_ptr": ptr, "tot_idx": np.array([t for m in members for t in m], np.int64),
        "tlo": np.array(tlo, np.int64),
        "ta": np.ascontiguousarray(np.array(pad, float).reshape(len(tlo), TW)),
        "tb": np.ascontiguousarray(np.array(padb, float).reshape(len(tlo), TW))}


#: at most this many moves that keep every total (a random subset beyond)
_MAX_PATTERNS = 200_000


def _patterns(release, members, rng):
    """Moves of counts and keys along patterns: ``(cells, signs)`` arrays (-1 padded).
    Pairs of cells of a total (+1, -1: that total keeps its count and key, the others
    move); in 2-D the 2 x 2 rectangles (+1, -1, -1, +1) and in 3-D the 2 x 2 x 2 cubes
    (signs alternating), which keep every total."""
    shape = release.shape
    n = int(np.prod(shape, dtype=np.int64))
    out = []
    by: dict = {}
    for c in range(n):
        for t in members[c]:
            by.setdefault(t, []).append(c)
    pairs = set()
    for cells in by.values():                # pairs of a total: it keeps that total
        for i in range(len(cells)):
            for j in range(i + 1, len(cells)):
                pairs.add((cells[i], cells[j]))
    out.extend(((a, b), (1, -1)) for a, b in sorted(pairs))
    idx = np.arange(n).reshape(shape)
    if len(shape) >= 2 and len(out) < _MAX_PATTERNS:
        if len(shape) == 2:
            r, c = shape
            for i, k in itertools.combinations(range(r), 2):
                for j, m in itertools.combinations(range(c), 2):
                    out.append(((idx[i, j], idx[i, m], idx[k, j], idx[k, m]), (1, -1, -1, 1)))
                    if len(out) >= 4 * _MAX_PATTERNS:
                        break
        elif len(shape) == 3:
            I, J, Kk = shape
            for i, i2 in itertools.combinations(range(I), 2):
                for j, j2 in itertools.combinations(range(J), 2):
                    for k, k2 in itertools.combinations(range(Kk), 2):
                        cells = [idx[a, b, e] for a in (i, i2) for b in (j, j2) for e in (k, k2)]
                        signs = [(-1) ** (p + q + t) for p in (0, 1) for q in (0, 1)
                                 for t in (0, 1)]
                        out.append((tuple(cells), tuple(signs)))
    if len(out) > _MAX_PATTERNS:
        pick = rng.choice(len(out), _MAX_PATTERNS, replace=False)
        out = [out[i] for i in pick]
    k = max((len(c) for c, _ in out), default=1)
    cells = np.full((max(len(out), 1), k), -1, np.int64)
    signs = np.zeros((max(len(out), 1), k), np.int64)
    for p, (cs, ss) in enumerate(out):
        cells[p, :len(cs)] = cs
        signs[p, :len(ss)] = ss
    if not out:
        cells = np.full((0, 1), -1, np.int64)
        signs = np.zeros((0, 1), np.int64)
    return cells, signs


#: the starting keys keep this far inside their intervals (above the solver's tolerance)
_EPS = 1e-6


def _start(a, members, rng, first: bool):
    """A table and keys consistent with every published entry: a mixed-integer program
    (HiGHS) over one-hot choices of each cell's and each total's value, the cells' keys
    inside their intervals and each total's key (the sum of its cells' keys less a whole
    number of turns) inside its interval.  Objective: the prior's log-weights (``first``)
    or random gains (dispersed starts).  None when no table and keys satisfy them all."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # on first use (~0.15 s)

    logp, lo, ca, cb = a["logp"], a["lo"], a["ca"], a["cb"]
    n, W = logp.shape
    tlo, ta, tb = a["tlo"], a["ta"], a["tb"]
    T, TW = ta.shape
    ok_c = np.isfinite(logp) & (ca >= 0) & (cb - ca > 2 * _EPS)
    ok_t = (ta >= 0) & (tb - ta > 2 * _EPS)
    ok_t |= (tlo[:, None] + np.arange(TW) == 0) & (ta == 0)          # an empty total
    # variables: cell one-hots (n W), total one-hots (T TW), keys (n), turns (T)
    nv = n * W + T * TW + n + T
    ck, tk, kk, zk = 0, n * W, n * W + T * TW, n * W + T * TW + n
    lb = np.zeros(nv)
    ub = np.ones(nv)
    ub[ck:tk] = ok_c.ravel()
    ub[tk:kk] = ok_t.ravel()
    integ = np.ones(nv)
    integ[kk:zk] = 0
    size = np.zeros(T)
    for c in range(n):
        for t in members[c]:
            size[t] += 1
    ub[zk:] = size
    rows, lo_b, hi_b = [], [], []

    def row(entries, low, high):
        r = np.zeros(nv)
        for j, v in entries:
            r[j] += v
        rows.append(r), lo_b.append(low), hi_b.append(high)

    vals = lo[:, None] + np.arange(W)
    empty = vals == 0
    a_lo = np.where(empty, 0.0, ca + _EPS)
    a_hi = np.where(empty, 0.0, cb - _EPS)
    for c in range(n):
        row([(ck + c * W + w, 1.0) for w in range(W)], 1, 1)
        row([(kk + c, 1.0)] + [(ck + c * W + w, -a_lo[c, w]) for w in range(W)], 0, np.inf)
        row([(kk + c, 1.0)] + [(ck + c * W + w, -a_hi[c, w]) for w in range(W)], -np.inf, 0)
    by = [[] for _ in range(T)]
    for c in range(n):
        for t in members[c]:
            by[t].append(c)
    tvals = tlo[:, None] + np.arange(TW)
    t_lo = np.where(tvals == 0, 0.0, ta + _EPS)
    t_hi = np.where(tvals == 0, 0.0, tb - _EPS)
    for t in range(T):
        row([(tk + t * TW + v, 1.0) for v in range(TW)], 1, 1)
        row([(ck + c * W + w, float(vals[c, w])) for c in by[t] for w in range(W)]
            + [(tk + t * TW + v, -float(tvals[t, v])) for v in range(TW)], 0, 0)
        keys = [(kk + c, 1.0) for c in by[t]] + [(zk + t, -1.0)]
        row(keys + [(tk + t * TW + v, -t_lo[t, v]) for v in range(TW)], 0, np.inf)
        row(keys + [(tk + t * TW + v, -t_hi[t, v]) for v in range(TW)], -np.inf, 0)
    cost = np.zeros(nv)
    gain = np.where(np.isfinite(logp), logp, 0.0) if first else rng.standard_normal((n, W))
    cost[ck:tk] = -gain.ravel()
    with c_stdout_silenced():               # HiGHS's MIP prints debug lines from C++
        res = milp(cost, constraints=LinearConstraint(sp.csr_matrix(np.array(rows)), lo_b,
                                                      hi_b),
                   integrality=integ, bounds=Bounds(lb, ub))
    if res.x is None:
        return None
    sol = res.x
    w = np.argmax(sol[ck:tk].reshape(n, W), axis=1)
    x = lo + w
    K = _interior_keys(x, w, np.rint(sol[zk:]), a, by)
    if K is None:     # the program kept every key _EPS inside: a slack of _EPS exists
        raise RuntimeError("internal error: the key chains' start found a table but no keys "
                           "inside every interval of its entries")
    K = np.where(x > 0, K, rng.random(n))
    return np.ascontiguousarray(x, np.int64), np.ascontiguousarray(K)


def _interior_keys(x, w, turns, a, by):
    """Keys for the counts ``x`` (window positions ``w``) and the totals' whole turns
    ``turns`` as far inside every interval as they can be: a linear program maximising the
    least slack (HiGHS meets the mixed-integer program's constraints only within its
    tolerance, and a key on an interval's end can break the half-open interval it was
    meant for).  None when no keys keep a positive slack (the program's own keys keep
    ``_EPS``, within its tolerance)."""
    from scipy.optimize import linprog

    n = x.size
    rr = np.arange(n)
    ca, cb = a["ca"][rr, w], a["cb"][rr, w]
    tlo, ta, tb = a["tlo"], a["ta"], a["tb"]
    # variables: the keys (n), the least slack d; maximise d
    A, b = [], []

    def le(entries, d_coef, rhs):            # sum(entries) + d_coef d <= rhs
        r = np.zeros(n + 1)
        for j, v in entries:
            r[j] += v
        r[n] = d_coef
        A.append(r), b.append(rhs)

    bounds = [(0.0, 1.0)] * n + [(None, 1.0)]
    for c in range(n):
        if x[c] == 0:
            bounds[c] = (0.0, 0.0)           # an empty cell has no key: not in any sum
            continue
        le([(c, -1.0)], 1.0, -ca[c])         # K_c >= ca + d
        le([(c, 1.0)], 1.0, cb[c])           # K_c <= cb - d
    for t in range(len(by)):
        held = [c for c in by[t] if x[c] > 0]
        count = int(x[by[t]].sum())
        i = count - int(tlo[t])
        if not held:
            continue                          # key 0; its interval was checked by the program
        lo_t, hi_t = float(ta[t, i]), float(tb[t, i])
        z = float(turns[t])
        le([(c, -1.0) for c in held], 1.0, -(lo_t + z))   # sum K - z >= ta + d
        le([(c, 1.0) for c in held], 1.0, hi_t + z)       # sum K - z <= tb - d
    cost = np.zeros(n + 1)
    cost[n] = -1.0
    res = linprog(cost, A_ub=np.array(A) if A else None, b_ub=np.array(b) if b else None,
                  bounds=bounds, method="highs")
    if res.x is None or not res.x[n] > 1e-12:
        return None
    d = res.x[n]
    # the solver's tolerance is far below the slack: clip within half of it
    K = np.clip(res.x[:n], ca + d / 2, cb - d / 2)
    return np.where(x > 0, K, 0.0)


class KeyGibbs(MonteCarloRoute):
    """Monte Carlo over the counts and the cell keys together: the cell key method's
    posterior under the likelihood integrated over the keys, for any published totals.

    Reads ``plan.inputs["key_intervals"]`` (the p-table intervals of every entry).
    """

    name = "keys_mcmc"
    needs = "the p-table's key intervals; a count table with published totals"

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or release.groups:
            return "the key chains need a count table without subtotals"
        if "key_intervals" not in plan.inputs:
            return "the key chains need the p-table's key intervals (the cell key method)"
        if not plan.inputs["key_intervals"].totals:
            return ("no published total holds other records than a cell: the entries' "
                    "probabilities multiply exactly")
        return None

    @staticmethod
    def _sweep_seconds(release) -> float:
        """The time model of one sweep of one chain: the target's sweep (every cell's count
        and key, the pattern moves: ~8 microseconds a cell, benchmarks/route_seconds.py)
        and the tempered replicas' (no patterns: ~0.4 of it each)."""
        cells = int(np.prod(release.shape, dtype=np.int64))
        return cells * 8e-6 * (1 + 0.4 * (len(LADDER) - 1))

    def estimate(self, plan, what="posterior"):
        release = plan.release
        cells = int(np.prod(release.shape, dtype=np.int64))
        per = self._sweep_seconds(release)
        secs = 0.05 + self.chains * (self.warmup + self.draws) * per
        return Cost(float(8 * self.chains * self.draws * cells * 3 + 20e6),
                    f"{self.chains} chains x {self.draws} draws of "
                    f"{' x '.join(map(str, release.shape))} tables, {len(LADDER)} tempered "
                    f"replicas each, about {secs:.2g} s (a first round; more rounds while "
                    "not converged, within the time budget)", seconds=secs)

    def run(self, plan, *, count=True):
        import time

        from .gibbs import ESS_MIN, BlockGibbs, judge  # the result and diagnostics
        from .resolve import TIME_BUDGET

        release, prior = plan.release, plan.prior
        members, a = _arrays(plan)
        n = a["lo"].size
        if not np.isfinite(a["logp"]).any(axis=1).all():
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        settings = (self.chains, self.warmup, self.draws) + \
            (() if self.seed is None else (self.seed,))
        rng = np.random.default_rng(release_seed(release, prior, "keys", *settings))
        seeds = rng.integers(2**31 - 1, size=self.chains)
        pcells, psigns = _patterns(release, members, rng)
        args = (a["lo"], a["logp"], a["ca"], a["cb"], a["tot_ptr"], a["tot_idx"], a["tlo"],
                a["ta"], a["tb"])
        lams = np.array(LADDER, float)
        R = len(lams)

        starts = [_start(a, members, rng, ch == 0) for ch in range(self.chains)]
        if starts[0] is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior (no table "
                             "and cell keys satisfy every published entry)")
        for ch, st in enumerate(starts):
            if st is None or kg.violations(st[0], st[1], a["tot_ptr"], a["tot_idx"],
                                           a["tlo"], a["ta"], a["tb"]):
                starts[ch] = None
        if starts[0] is None:
            raise RuntimeError("internal error: the starting table and keys of the key "
                               "chains break a published total")
        starts = [st if st is not None else starts[0] for st in starts]
        # every chain's replicas (counts, keys), carried from round to round
        state = [(np.repeat(st[0][None], R, axis=0), np.repeat(st[1][None], R, axis=0))
                 for st in starts]
        swaps = np.zeros((self.chains, R - 1), np.int64)
        rounds_of = np.zeros(self.chains, np.int64)

        def chain_round(warm, thin):
            def one(ch, tick):
                X, KK = (v.copy() for v in state[ch])
                kg.seed(int((int(seeds[ch]) + 7919 * int(rounds_of[ch])) % (2**31 - 1)))
                sw = np.zeros(R - 1, np.int64)
                idle = np.zeros((1, n), np.int64)
                done = 0
                while done < warm:
                    m = min(50, warm - done)
                    kg.tempered(X, KK, lams, *args, m, 1, False, idle, pcells, psigns, sw)
                    done += m
                    tick(m)
                out = np.zeros((self.draws, n), np.int64)
                done = 0
                while done < self.draws:
                    m = max(1, min(self.draws - done, 50 // thin))
                    kg.tempered(X, KK, lams, *args, m * thin, thin, True,
                                out[done:done + m], pcells, psigns, sw)
                    done += m
                    tick(m * thin)
                if kg.violations(X[0], KK[0], a["tot_ptr"], a["tot_idx"], a["tlo"], a["ta"],
                                 a["tb"]):
                    raise RuntimeError(f"internal error: key chain {ch} left the support")
                return out, X, KK, sw
            return one

        # whether a further round fits the time budget is judged on the route's time model
        # (the chains' sweeps, one core), not on the clock: the draws do not depend on the
        # machine's speed, its load, the workers or the scheduler
        budget = plan.seconds if plan.seconds is not None else TIME_BUDGET
        per = self._sweep_seconds(release)
        t_start = time.perf_counter()
        warm, thin, rnd, modelled = self.warmup, 1, 0, 0.0
        while True:
            res = _chains.run(self.chains, chain_round(warm, thin),
                              self.chains * (warm + self.draws * thin), plan.progress,
                              self.workers, self.scheduler)
            modelled += self.chains * (warm + self.draws * thin) * per
            rnd += 1
            rounds_of += 1
            for ch, (_, X, KK, sw) in enumerate(res):
                state[ch] = (X, KK)
                swaps[ch] += sw
            draws = np.stack([r[0] for r in res]).reshape(
                (self.chains, self.draws) + release.shape)
            judged = judge(draws, release.dims, release.coords)
            ok = judged[-1]
            elapsed = time.perf_counter() - t_start
            # the next round: the same draws at twice the thinning, no warm-up (the chains
            # go on from where they are)
            nxt = self.chains * 2 * thin * self.draws * per
            # too few draws can never pass the ESS rule (a short run, as riskengine warmup
            # makes): one round, not rounds until the time budget
            if ok or modelled + nxt > budget or self.chains * self.draws < ESS_MIN:
                break
            warm, thin = 0, 2 * thin
        # each round of a chain tries one swap of every neighbouring pair: the warm-up's,
        # and the draws' at thinning 1, 2, ..., thin
        rates = swaps.sum(axis=0) / (self.chains * (self.warmup + self.draws * (2 * thin - 1)))
        how = (f"{self.chains} chains x {self.draws} draws"
               + (f" (every {thin} sweeps)" if thin > 1 else "")
               + (f" in the last of {rnd} rounds ({elapsed:.0f} s)" if rnd > 1 else ""))
        text = (f"Monte Carlo over counts and cell keys: {how} (the likelihood integrated "
                "over the keys)")
        moves = ("single-cell redraws of a count and its key from their exact conditional "
                 "law, patterns along moves that keep every total, and parallel tempering "
                 f"with {R - 1} replicas whose totals are soft (penalties "
                 f"{', '.join(f'{v:g}' for v in lams[1:])} a violated total; swaps accepted "
                 f"{', '.join(f'{v:.2f}' for v in rates)} of the rounds from the target "
                 "down); not proven to reach every candidate table (chains start apart; "
                 "R-hat and ESS judge them)")
        return BlockGibbs._result(release, draws, text, judged=judged, notes={"moves": moves})
