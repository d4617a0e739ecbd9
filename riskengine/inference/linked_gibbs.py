"""The Monte Carlo route for release sets: Gibbs sampling over the finest table.

Where the linked route's state (the partial sums of the open entries) does not fit, the
chains walk the finest table itself (:func:`kernels.sum_gibbs.sweeps`): every cell alone,
every cell with another cell of one of its published numbers (+1 / -1, the number's sum
kept), and in 2-D random 2 x 2 patterns, each redrawn from its exact conditional law given
the rest.  The target is the same product of per-entry weights as the exact route's.  The
chains start from dispersed integer tables in the support (HiGHS MILP with random
objectives, re-drawn when one lands in a hole of a window); irreducibility is not proven
for every window pattern: R-hat across the dispersed chains is the guard, and the tests
compare with the exact route.  Diagnostics (R-hat, ESS, MCSE) as for every Monte Carlo
route; ``post.releases`` holds each release's own cells and totals from the same draws.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from kernels import gibbs as moves
from kernels import sum_gibbs as sg

from ..protocol import Cost
from . import _chains, gibbs3d
from .gibbs import BlockGibbs
from .linked import _Model, model_of

__all__ = ["LinkedGibbs"]

#: sweeps per chain between progress ticks
CHUNK = 50


class _Packed:
    """The model as the kernel's plain arrays."""

    def __init__(self, model: _Model):
        self.lo, self.lw = model.lo, model.lw
        M = len(model.factors)
        We = max((lw.shape[0] for _, _, lw, _ in model.factors), default=1)
        self.elo = np.array([lo for _, lo, _, _ in model.factors], np.int64).reshape(M)
        self.elw = np.full((M, We), -np.inf)
        for f, (_, _, lw, _) in enumerate(model.factors):
            self.elw[f, :lw.shape[0]] = lw
        mem = [cells.astype(np.int64) for cells, *_ in model.factors]
        self.fptr = np.concatenate([[0], np.cumsum([m.size for m in mem])]).astype(np.int64)
        self.fmem = np.concatenate(mem).astype(np.int64) if mem else np.zeros(0, np.int64)
        N = self.lo.size
        per = [[] for _ in range(N)]
        for f, m in enumerate(mem):
            for c in m.tolist():
                per[c].append(f)
        self.vptr = np.concatenate([[0], np.cumsum([len(p) for p in per])]).astype(np.int64)
        self.vfac = np.array([f for p in per for f in p], np.int64)
        self.A = sp.csr_array((np.ones(self.fmem.size),
                               (np.repeat(np.arange(M), np.diff(self.fptr)), self.fmem)),
                              shape=(M, N))

    def sums(self, x):
        return (self.A @ x).astype(np.int64)

    def start(self, rng, tries: int = 20) -> np.ndarray:
        cmin, cmax = gibbs3d._support(self.lo, self.lw)
        tmin, tmax = gibbs3d._support(self.elo, self.elw)
        x = gibbs3d.random_vertex(self.A, tmin, tmax, cmin, cmax, lambda x: np.isfinite(
            sg.log_weight(x, self.lo, self.lw, self.elo, self.elw, self.sums(x))), rng, tries)
        if x is not None:
            return x
        raise ValueError("the Gibbs route for release sets found no starting table in the "
                         "support (integer program infeasible, or only tables the windows "
                         "exclude); no Monte Carlo answer")


class LinkedGibbs(BlockGibbs):
    """Gibbs over the finest table of a release set (Monte Carlo; see the module)."""

    name = "gibbs"
    exact = False
    needs = "a ReleaseSet whose mechanisms give entry windows (a product over entries)"

    def applies(self, plan):
        release = plan.release
        if not hasattr(release, "entries") or not hasattr(release, "releases"):
            return "this Gibbs route answers sets of releases (rk.ReleaseSet)"
        return None

    def estimate(self, plan, what="posterior"):
        release = plan.release
        cells = int(np.prod(release.shape, dtype=np.int64))
        n = self.chains * self.draws
        secs = self.chains * (self.warmup + self.draws) * cells * 2e-6
        return Cost(float(8 * n * 2 * cells + 50e6),
                    f"{self.chains} chains x {self.draws} draws of {cells} cells, about "
                    f"{secs:.2g} s", seconds=secs)

    def run(self, plan, *, count=True):
        release, prior, progress = plan.release, plan.prior, plan.progress
        model = model_of(plan, exact=False)
        pk = _Packed(model)
        rng = self._rng(release, prior)
        starts = [pk.start(rng) for _ in range(self.chains)]
        seeds = rng.integers(2**31 - 1, size=self.chains)
        rows, cols = (release.shape if len(release.shape) == 2 else (0, 0))
        n_it = self.warmup + self.draws
        N = model.lo.size

        def one(ch, tick):
            x = starts[ch].copy()
            fsum = pk.sums(x)
            moves.seed(int(seeds[ch]))
            out = np.zeros((self.draws, N), np.int64)
            idle = np.zeros((1, 1), np.int64)
            for at, n, keep in _chains.schedule(self.warmup, self.draws, CHUNK):
                buf = out[at:at + n] if keep else idle
                w = sg.sweeps(x, pk.lo, pk.lw, pk.vptr, pk.vfac, pk.fptr, pk.fmem, pk.elo,
                              pk.elw, fsum, rows, cols, n, keep, buf, 1)
                if not np.isfinite(w):
                    raise RuntimeError(f"internal error: set Gibbs chain {ch} left the support")
                tick(n)
            if not np.array_equal(fsum, pk.sums(x)):
                raise RuntimeError(f"internal error: set Gibbs chain {ch} lost its sums")
            return out

        flat = np.stack(_chains.run(self.chains, one, self.chains * n_it, progress,
                                    self.workers, self.scheduler))
        draws = flat.reshape((self.chains, self.draws) + tuple(release.shape))
        return self._result(release, draws, parts=tuple(_parts(release, flat.reshape(-1, N))))


def _parts(rset, draws):
    """Per release: its cells' and totals' posteriors from the finest draws."""
    for i, r in enumerate(rset.releases):
        blocks = {}
        for keep in [r.dims, *r.margins]:
            entries = [e for e in rset.entries if e.release == i and e.keep == tuple(keep)]
            shape = tuple(r.shape[r.dims.index(d)] for d in keep)
            sums = np.stack([draws[:, e.cells].sum(axis=1) for e in entries], axis=1)
            lo = sums.min(axis=0)
            W = int((sums.max(axis=0) - lo).max()) + 1
            probs = np.stack([(sums - lo == w).mean(axis=0) for w in range(W)], axis=-1)
            s = np.zeros(shape, np.int64)
            p = np.zeros(shape + (W,))
            for k, e in enumerate(entries):
                s[e.index] = lo[k]
                p[e.index] = probs[k]
            blocks[tuple(keep)] = (s, p)
        yield r, blocks, (f"posterior of release {i}'s original values given the whole set "
                          "(Monte Carlo)")
