"""The Monte Carlo route of the resampling mechanisms: a Markov chain over each group's
candidates, targeting prior x the EXACT joint likelihood (the one the joint route
enumerates with), where that enumeration does not fit.

State: every cell's original value; each group of cells (:class:`.joint.Group`) keeps its
published total and every cell stays in its allowed set (the values the release allows,
within the prior's support).  Move: a sweep takes the group's cells in a fresh random
order and redraws the pairs of neighbours in that order one after the other, each pair
from its exact conditional law given the other cells: every split of the pair's sum
whose prior and likelihood are positive, weighed in one pass
(:func:`kernels.multinomial_chain.pair_sweeps`).  Groups are independent given the release
(the posterior is a product over groups), so each is swept on its own.

The likelihood is a readout of laws of sums over the cells (the bootstrap's two
multinomial boxes, the binomial method's two compensation sums), each cell contributing
a factor that depends on its own value only (:class:`SumFactors`, built by the
mechanism).  A pair's conditional therefore needs the law of the OTHER cells' sum once,
and that is a forward message (cells before the pair in the sweep's order, already
redrawn) times a backward message (cells after it, computed once per sweep): one sweep
costs about two likelihood evaluations plus, per pair, the other cells' law at the sums
the candidates read, instead of a whole likelihood per candidate.  Candidates whose
value is so small that the linear-scale arithmetic could have lost terms are recomputed
exactly in log space, so the chain's target is the exact joint posterior.

Irreducibility.  For both mechanisms and every prior of ``rk.priors`` each cell's allowed
set is an interval of integers (x -> x - S sqrt(x (1 - x/n)) is convex on [0, n] and
x -> x + S sqrt(...) concave, so the x whose quality interval holds a published k form an
interval; the prior's supports are intervals).  Integer vectors in a box with a fixed sum
are connected by moves of one unit between two cells, through vectors in the box, and
every two cells are neighbours in a sweep's random order with positive probability.  The
binomial likelihood is positive on the whole box.  The bootstrap's can vanish inside it
only through the cells published 0, when too few of them are positive for the published
box to reach the total; that set is closed under making cells positive, and a path that
moves units to cells that gain before taking the last unit from cells that end at 0 stays
in it.  Hence the chain is irreducible on the candidate set (the tests also compare the
visited set with the joint route's enumeration).  A prior whose support has holes is
flagged in ``attrs["approximation"]``: the proof does not cover it; dispersed starts and
R-hat are the guard.

Chains (default 4) start from dispersed candidates: the one closest to the published
table (least squares, a max-product DP over the group's cells) and candidates drawn
uniformly from the allowed sets (a counting DP); warm-up sweeps are dropped.
Diagnostics, labels and draws are those of :class:`.gibbs.BlockGibbs`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from kernels import multinomial_chain as mchain

from ..protocol import Cost
from ..table import default_margins
from . import _chains
from ._plan import prepared
from .gibbs import BlockGibbs
from .joint import JointEnumeration, group_windows

__all__ = ["MAX_SECONDS", "JointMCMC", "SumFactors"]

#: ``route="auto"`` takes the chain when its estimated time is below this (seconds, with
#: the default 4 chains x 1300 sweeps); beyond, the per-cell approximation answers
MAX_SECONDS = 120.0

#: (cell, value) pairs the chain's model may hold (cells x (n + 1), booleans and a few
#: int64 temporaries while it is built)
MAX_VALUES = 5_000_000

#: inner-loop steps per second of the sweeps on one core (measured on the 8 x 6 bootstrap
#: and binomial instances of benchmarks/montecarlo.py, 2-core machine)
STEPS_PER_SECOND = 2e9

_BIG = 1 << 60


@dataclass(frozen=True)
class SumFactors:
    """A group's likelihood as per-cell factors of two laws of sums (see
    :mod:`kernels.multinomial_chain`).

    Per cell c and value ``vlo[c] + j``: ``off[m, c, j]`` the first summand of law m,
    ``wlen`` the number of summands, ``wlog`` their log-weights (2, K, V, W), -inf padded;
    ``ok[c, j]``: the factors are defined (elsewhere the likelihood is 0); ``lo_t``,
    ``hi_t`` (K, V): the quality interval (binomial readout).  ``mode`` 0: log law0(N) -
    log law1(N) (bootstrap); 1: the binomial method's compensation readout with preserved
    total ``n``.  ``cap[m]``: sums above it never count (-1: none); ``rlo``, ``rhi``: the
    sums each law is read at; ``tilt[m]``: ``wlog`` of law m includes tilt[m] x (the
    summand), taken out at the readout (it moves the laws' peaks to the sums read)."""

    off: np.ndarray
    wlen: np.ndarray
    wlog: np.ndarray
    ok: np.ndarray
    lo_t: np.ndarray
    hi_t: np.ndarray
    mode: int
    N: int
    n: int
    cap: tuple
    rlo: tuple
    rhi: tuple
    tilt: tuple = (0.0, 0.0)


@dataclass
class _GroupChain:
    """What the kernel needs for one group (shared by the chains, read only)."""

    cells: np.ndarray
    lw: np.ndarray            # (K, V) prior log-weights, -inf where not a candidate value
    vlo: np.ndarray
    args: tuple               # the tables, in pair_sweeps' order after lw
    ok: np.ndarray            # (K, total + 1) the candidate values (as in lw)
    glw: np.ndarray
    total: int
    loglik: object
    steps: float              # inner-loop steps of one sweep (estimate)
    holes: bool               # some cell's candidate values are not an interval

    def chain_loglik(self, x) -> float:
        """The log-likelihood of the group's values ``x`` from the chain's tables, exactly in
        log space (what the chain falls back to; tested against the likelihood)."""
        a = self.args
        return float(mchain.chain_loglik(np.asarray(x, np.int64), a[1], a[2], a[3], a[6], a[7],
                                       a[8], *a[11:17]))

    def pair_logliks(self, x, c: int, d: int, stats=None):
        """``(candidates of cell c, log-likelihoods)`` of the pair (c, d) of ``x`` as the
        chain computes them (incrementally)."""
        st = np.zeros(2, np.int64) if stats is None else stats
        return mchain.pair_logliks(np.asarray(x, np.int64).copy(), int(c), int(d), *self.args, st)


def _tables(f: SumFactors, lw, vlo) -> tuple:
    wlog = np.ascontiguousarray(f.wlog, dtype=float)
    with np.errstate(invalid="ignore"):
        wsc = np.max(wlog, axis=-1)
    wsc = np.where(np.isfinite(wsc), wsc, 0.0)
    wlin = np.exp(wlog - wsc[..., None])
    umax = int(np.max(f.hi_t, axis=1).sum()) + 2 if f.mode == 1 else 2
    lg = gammaln(np.arange(umax + 1, dtype=float) + 1.0)
    ends = (f.off + f.wlen).max(axis=2).sum(axis=1)       # largest sum of each law
    smax = int(max(min(ends[m], f.cap[m] + 1) if f.cap[m] >= 0 else ends[m]
                   for m in range(2))) + 2
    return (np.ascontiguousarray(lw), np.ascontiguousarray(vlo, dtype=np.int64),
            np.ascontiguousarray(f.off, dtype=np.int64),
            np.ascontiguousarray(f.wlen, dtype=np.int64), wlin, wsc, wlog,
            np.array(f.cap, np.int64), np.array(f.tilt, float), np.array(f.rlo, np.int64),
            np.array([min(r, _BIG) for r in f.rhi], np.int64), int(f.mode), int(f.N),
            int(f.n), np.ascontiguousarray(f.lo_t, dtype=np.int64),
            np.ascontiguousarray(f.hi_t, dtype=np.int64), lg, smax)


def _sweep_steps(f: SumFactors, args) -> float:
    """Inner-loop steps of one sweep: messages forward and backward, and per pair the other
    cells' law at the sums read and every candidate's readout."""
    K, V = f.ok.shape
    smax = args[-1]
    steps = 0.0
    for m in range(2):
        W = float(np.mean(f.wlen[m][f.ok])) if f.ok.any() else 1.0
        span = float(smax) / 2
        reads = 1.0 if f.rlo[m] == f.rhi[m] else span
        steps += 2 * K * span * W                                 # messages
        steps += (K - 1) * (2 * W * span + V * (W * W + reads * 2 * W))
    return steps


def _dp_vector(ok: np.ndarray, total: int, score: np.ndarray, rng=None) -> np.ndarray | None:
    """A vector with sum ``total`` and every cell among its ``ok`` values: the one of
    largest sum of ``score`` (max-product DP; ``rng`` None), or one drawn with probability
    proportional to exp(sum of ``score``) (``rng``: counting DP, forward sampling from the
    back).  None when there is none."""
    K = ok.shape[0]
    s = np.where(ok, score, -np.inf)
    msg = np.full((K + 1, total + 1), -np.inf)      # msg[k, t]: cells k.. summing to t
    msg[K, 0] = 0.0
    for k in range(K - 1, -1, -1):
        vals = np.flatnonzero(ok[k])
        cand = np.full((len(vals), total + 1), -np.inf)
        for i, v in enumerate(vals):
            cand[i, v:] = msg[k + 1, :total + 1 - v] + s[k, v]
        if rng is None:
            msg[k] = cand.max(axis=0) if len(vals) else -np.inf
        else:
            with np.errstate(divide="ignore"):
                mx = cand.max(axis=0) if len(vals) else np.full(total + 1, -np.inf)
                safe = np.where(np.isfinite(mx), mx, 0.0)
                msg[k] = np.where(np.isfinite(mx), safe + np.log(np.exp(cand - safe).sum(0)),
                                  -np.inf)
    if not np.isfinite(msg[0, total]):
        return None
    x = np.zeros(K, np.int64)
    left = total
    for k in range(K):
        vals = np.flatnonzero(ok[k])
        vals = vals[vals <= left]
        w = s[k, vals] + msg[k + 1, left - vals]
        if rng is None:
            v = vals[int(np.argmax(w))]
        else:
            p = np.exp(w - w.max())
            v = vals[int(rng.choice(len(vals), p=p / p.sum()))]
        x[k] = v
        left -= v
    return x


class JointMCMC(BlockGibbs):
    """Gibbs over pairs of cells with the exact joint likelihood (see the module
    docstring).  Reads ``plan.inputs["joint_model"]`` as the joint route does."""

    name = "mcmc"
    exact = False
    needs = "the exact joint likelihood by groups with per-cell factors (joint_model)"
    max_values = MAX_VALUES

    # --- the model --------------------------------------------------------------------------
    _get = JointEnumeration._get

    def _groups(self, plan) -> list:
        """A :class:`_GroupChain` per group with more than one candidate value somewhere
        (prepared once per call)."""
        return prepared(plan, ("joint_chains", self.max_values), lambda: self._make_groups(plan))

    def _make_groups(self, plan) -> list:
        release, prior = plan.release, plan.prior
        model = self._get(plan)
        out = []
        for g, (ok, glw) in zip(model.groups, group_windows(model, release, prior)):
            if not ok.any(axis=1).all():
                raise ValueError(f"no original table is consistent with this "
                                 f"{release.mechanism.name} release under this prior")
            first = ok.argmax(axis=1)
            last = ok.shape[1] - 1 - ok[:, ::-1].argmax(axis=1)
            V = int((last - first).max()) + 1
            vlo = first.astype(np.int64)
            f = g.factors(vlo, V)
            idx = np.minimum(vlo[:, None] + np.arange(V), g.total)
            inwin = vlo[:, None] + np.arange(V) <= last[:, None]
            good = inwin & np.take_along_axis(ok, idx, axis=1) & f.ok
            lw = np.where(good, np.take_along_axis(glw, idx, axis=1), -np.inf)
            rising = good[:, 0].astype(int) + (good[:, 1:] & ~good[:, :-1]).sum(axis=1)
            full = np.zeros_like(ok)
            rows, js = np.nonzero(good)
            full[rows, vlo[rows] + js] = True
            args = _tables(f, lw, vlo)
            out.append(_GroupChain(np.asarray(g.cells), lw, vlo, args, full, glw, g.total,
                                   g.loglik, _sweep_steps(f, args), bool((rising > 1).any())))
        return out

    def applies(self, plan):
        release = plan.release
        if release.groups:
            return "the resampling Monte Carlo route does not use published subtotals"
        model = self._get(plan)
        if model.refusal:
            return model.refusal.replace("the joint enumeration", "the Monte Carlo route")
        if any(g.factors is None for g in model.groups):
            return "the mechanism gives no per-cell factors of its likelihood"
        return None

    def seconds(self, plan) -> float:
        """Estimated wall time of a run (the chains on the machine's cores)."""
        steps = sum(g.steps for g in self._groups(plan))
        sweeps = self.chains * (self.warmup + self.draws)
        par = min(self.chains, os.cpu_count() or 1) if self.scheduler is None else 1
        return steps * sweeps / STEPS_PER_SECOND / par

    def estimate(self, plan, what="posterior"):
        release = plan.release
        try:
            groups = self._groups(plan)
        except ValueError as e:
            return Cost(0.0, str(e))
        ncell = int(np.prod(release.shape, dtype=np.int64))
        per_chain = sum(8 * (2 * (len(g.cells) + 4) * g.args[-1] + g.args[4].size * 2)
                        for g in groups)
        mem = float(per_chain * min(self.chains, os.cpu_count() or 1)
                    + 16 * self.chains * self.draws * ncell + 20e6)
        secs = self.seconds(plan)
        detail = (f"{self.chains} chains x {self.warmup + self.draws} sweeps of pair redraws, "
                  f"about {secs:.3g} s")
        too_long = (f"the Monte Carlo route would take about {secs:.3g} s, more than "
                    f"route='auto' waits ({MAX_SECONDS:.0f} s)" if secs > MAX_SECONDS else "")
        return Cost(mem, detail, too_long, seconds=secs)

    # --- running ----------------------------------------------------------------------------
    def _starts(self, gc: _GroupChain, P, rng) -> list:
        """Dispersed starting vectors of one group with positive likelihood: the candidate
        closest to the published values, then uniform draws over the allowed sets."""
        total = gc.total
        v = np.arange(total + 1)
        good = gc.ok
        close = _dp_vector(good, total, -(v[None, :] - P[:, None].astype(float)) ** 2)
        out = []
        tries = 0
        cand = close
        while len(out) < self.chains:
            if cand is not None:
                ll = float(gc.loglik(cand[None, :].astype(np.int64))[0])
                pr = gc.lw[np.arange(len(cand)), cand - gc.vlo]
                if np.isfinite(ll) and np.isfinite(pr).all():
                    out.append(cand)
            tries += 1
            if tries > 20 * self.chains:
                raise ValueError(f"the Monte Carlo route found no starting table of positive "
                                 f"likelihood in {tries} tries (cells {gc.cells.tolist()[:6]}"
                                 f"...); no Monte Carlo answer")
            cand = _dp_vector(good, total, np.zeros_like(gc.glw), rng)
        return out

    def run(self, plan, *, count=True):
        release, prior, progress = plan.release, plan.prior, plan.progress
        groups = self._groups(plan)
        P = np.asarray(release.published, dtype=np.int64).reshape(-1)
        rng = self._rng(release, prior)
        ncell = P.size
        fixed = np.zeros(ncell, np.int64)
        moving = []
        for gc in groups:
            if len(gc.cells) == 1 or np.isfinite(gc.lw).sum() <= len(gc.cells):
                x = _dp_vector(gc.ok, gc.total, np.zeros_like(gc.glw))
                if x is None or not np.isfinite(gc.loglik(x[None, :])[0]):
                    raise ValueError(f"no original table is consistent with this "
                                     f"{release.mechanism.name} release under this prior")
                fixed[gc.cells] = x
            else:
                moving.append((gc, self._starts(gc, P[gc.cells], rng)))
        seeds = rng.integers(2**63 - 1, size=self.chains)
        n_it = self.warmup + self.draws
        fallbacks = np.zeros((self.chains, 2), np.int64)

        def one(ch, tick):
            crng = np.random.default_rng(seeds[ch])
            out = np.broadcast_to(fixed, (self.draws, ncell)).copy()
            xs = [s[ch].copy() for _, s in moving]
            for at, nb, keep in _chains.schedule(self.warmup, self.draws):
                for (gc, _), x in zip(moving, xs):
                    K = len(gc.cells)
                    perms = np.argsort(crng.random((nb, K)), axis=1).astype(np.int64)
                    us = crng.random((nb, K - 1))
                    buf = np.zeros((nb if keep else 1, K), np.int64)
                    st = mchain.pair_sweeps(x, perms, us, keep, buf, *gc.args[:-1],
                                          gc.args[-1], fallbacks[ch])
                    if st != 0:
                        raise RuntimeError(f"internal error: Monte Carlo chain {ch} left the "
                                           "support")
                    if keep:
                        out[at:at + nb][:, gc.cells] = buf
                tick(nb)
            for gc, x in zip((g for g, _ in moving), xs):
                if not np.isfinite(gc.loglik(x[None, :])[0]):
                    raise RuntimeError(f"internal error: Monte Carlo chain {ch} left the "
                                       "support")
            return out

        t0 = time.perf_counter()
        draws = np.stack(_chains.run(self.chains, one, self.chains * n_it, progress,
                                     self.workers, self.scheduler))
        dt = time.perf_counter() - t0
        shape = tuple(release.shape)
        draws = draws.reshape((self.chains, self.draws) + shape)
        holes = any(gc.holes for gc, _ in moving)
        fb = fallbacks.sum(axis=0)
        return self._result(
            release, draws,
            approximation=(f"Monte Carlo: Gibbs over pairs of cells with the exact joint "
                           f"likelihood, {self.chains} chains x {self.draws} draws"
                           + ("; some cell's candidate values are not an interval "
                              "(irreducibility not proven for this prior)" if holes else "")),
            totals=lambda: _draw_totals(release, draws),
            notes={"exact_fallbacks": (f"{int(fb[0])} of {int(fb[1])} candidate likelihoods "
                                       "recomputed in log space" if self.scheduler is None
                                       else "not counted (dask)"),
                   "seconds": dt})


def _draw_totals(release, draws) -> dict:
    """Thunks of the unpublished totals' posteriors from the chains' draws."""
    dims = release.dims
    flat = draws.reshape((-1,) + draws.shape[2:])

    def one(keep):
        axes = tuple(i + 1 for i, d in enumerate(dims) if d not in keep)
        s = flat.sum(axis=axes) if axes else flat
        lo = s.min(axis=0)
        W = int((s.max(axis=0) - lo).max()) + 1
        probs = np.stack([(s - lo == w).mean(axis=0) for w in range(W)], axis=-1)
        return lo, probs

    return {keep: (lambda keep=keep: one(keep)) for keep in default_margins(dims)
            if keep not in release.margins}
