"""The Monte Carlo route for cyclic perturbation: Gibbs sampling over the cycle signs.

A candidate original is ``T = P - sum_k e_k C_k`` for a sign vector ``e`` in
{-1, 0, +1}^m, weighted by its prior and its path probability (the coin of each cycle with
the blocking rule, :mod:`riskengine.mechanisms.cyclic`).  Where neither exact route fits
(the clique tree too wide, too many cycles to enumerate) the chain redraws one sign at a
time from its exact conditional given the others (:func:`kernels.gibbs.cyclic_sweeps`);
any sign vector reaches any other by single-sign changes, and a change through a sign
vector of weight 0 is a direct jump between the other two values, so the chain moves
wherever the weights allow (not proven irreducible when blocking or the prior's zeros cut
the sign cube into pieces: dispersed starts and R-hat are the guard, and the tests compare
with the exact routes).  Several sign vectors of one table all count, as in the exact
likelihood: the chain samples sign vectors and reports their tables.  Chains start from
``e = 0`` (the published table) and from random sign vectors; a start of weight 0 climbs
into the support during warm-up (every impossible factor costs a fixed penalty); a random
start still outside it after warm-up is restarted from a draw of the chains that reached
it (``attrs["restarted_chains"]`` says so), and when no chain reaches it the route
refuses.
"""

from __future__ import annotations

import numpy as np

from kernels import gibbs as moves

from ..protocol import Cost
from . import _chains
from .cyclic import problem, tables_from_signs
from .gibbs import BlockGibbs

__all__ = ["CyclicGibbs"]


def _sparse(R):
    """Per cycle k: the groups it moves and their coefficients (CSR over cycles)."""
    cols = [np.flatnonzero(R[:, k]) for k in range(R.shape[1])]
    ptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])]).astype(np.int64)
    grp = np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64)
    coef = np.concatenate([R[c, k] for k, c in enumerate(cols)]).astype(np.int64) \
        if cols else np.zeros(0, np.int64)
    return ptr, grp, coef


class CyclicGibbs(BlockGibbs):
    """Gibbs over the cycle signs of a cyclic-perturbation release (Monte Carlo)."""

    name = "gibbs"
    exact = False
    needs = "the cycle set and its coin (alpha, beta); a count release"

    def applies(self, plan):
        release = plan.release
        if release.kind != "count":
            return "the cyclic Gibbs route needs a count release"
        return None

    def estimate(self, plan, what="posterior"):
        release = plan.release
        cells = int(np.prod(release.shape, dtype=np.int64))
        m = release.mechanism.m
        n = self.chains * self.draws
        # a sweep redraws every sign (its cells' likelihood): ~0.25 microseconds a cell
        secs = self.chains * (self.warmup + self.draws) * (m + 4 * cells) * 2.5e-7
        return Cost(float(8 * n * (m + 2 * cells) + 50e6),
                    f"{self.chains} chains x {self.draws} draws of {m} signs, about "
                    f"{secs:.2g} s", seconds=secs)

    def run(self, plan, *, count=True):
        release, prior, progress = plan.release, plan.prior, plan.progress
        mech = release.mechanism
        pb = problem(plan)
        if pb.empty:
            raise ValueError(f"no original table is consistent with this {mech.name} "
                             "release under this prior")
        ptr, grp, coef = _sparse(pb.R)
        m = pb.m
        rng = self._rng(release, prior)
        starts = [np.zeros(m, np.int64)] + [rng.integers(-1, 2, size=m)
                                            for _ in range(self.chains - 1)]
        seeds = rng.integers(2**31 - 1, size=self.chains)
        any_zero = pb.rule == 1
        n_it = self.warmup + self.draws
        args = (ptr, grp, coef, pb.pmin, pb.logF, pb.K, pb.alpha, pb.beta, pb.gamma, any_zero)

        def one(ch, tick, start=None):
            e = (starts[ch] if start is None else start).astype(np.int64).copy()
            o = (pb.R @ e).astype(np.int64)
            moves.seed(int(seeds[ch]) + (0 if start is None else 7919))
            out = np.zeros((self.draws, m), np.int64)
            idle = np.zeros((1, 1), np.int64)
            for at, n, keep in _chains.schedule(self.warmup, self.draws):
                buf = out[at:at + n] if keep else idle
                w = moves.cyclic_sweeps(e, o, *args, n, keep, buf)
                if (keep or at + n == self.warmup) and w <= -1e5:
                    return None                      # still outside the support
                tick(n)
            return out

        runs = _chains.run(self.chains, one, self.chains * n_it, progress, self.workers,
                           self.scheduler)
        stuck = [ch for ch, r in enumerate(runs) if r is None]
        if len(stuck) == self.chains:
            raise ValueError(
                f"no cyclic Gibbs chain found a sign vector of positive weight in "
                f"{self.warmup} warm-up sweeps (from the published table and from random "
                "sign vectors); no Monte Carlo answer")
        notes = {}
        if stuck:
            # a random start that never reached the support: restart it from a kept draw
            # of the chains that did (a sign vector of positive weight), drawn at random
            pool = np.concatenate([r for r in runs if r is not None])
            for ch in stuck:
                runs[ch] = one(ch, lambda k: None, pool[rng.integers(len(pool))])
                if runs[ch] is None:             # pragma: no cover - in the support already
                    raise RuntimeError(f"internal error: cyclic Gibbs chain {ch} left "
                                       "the support")
            notes["restarted_chains"] = (
                f"{len(stuck)} of {self.chains} chains found no sign vector of positive "
                f"weight from their start in {self.warmup} warm-up sweeps and were "
                "restarted from a draw of the others (less dispersed starts)")
        signs = np.stack(runs)
        C = mech.cycles
        tables = tables_from_signs(pb.P, signs.reshape(-1, m), C)
        draws = tables.reshape((self.chains, self.draws) + tuple(release.shape))
        return self._result(release, draws, notes=notes)
