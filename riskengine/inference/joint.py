"""The joint enumeration route: every candidate original, weighed by prior x the exact
joint likelihood of the whole release.

For mechanisms whose release ties the cells together through a preserved (and published)
total, so that the candidate set is finite whatever the prior: the resampling mechanisms
of seed 001 (the bootstrap regenerates the whole table and its cells share n; the binomial
perturbation's compensation stage restores the total).  The mechanism describes its
release as :class:`JointModel`: groups of cells, each with a published total, the values
each cell of the group can take (a necessary condition for a positive likelihood), and the
group's exact log-likelihood of a stack of candidate sub-tables.  Groups are independent
given the original (the binomial method with ``preserve="rows"`` treats each row as its
own table), and the prior is a product over cells, so the posterior is a product over
groups: each group is enumerated on its own and the totals that cross groups are sums of
independent parts (convolutions, exact).

Candidates of a group: every nonnegative integer vector with the group's total whose every
cell lies in its allowed set and its prior's support, with a finite joint log-likelihood;
they are enumerated cell by cell (partial sums pruned by what the remaining cells can
reach).  The route applies when the work (candidates x the cost of one likelihood) is
below :data:`MAX_WORK`; ``route="auto"`` then takes it, and otherwise the next route (the
Monte Carlo route with the same exact likelihood, :mod:`.joint_mcmc`, then the per-cell
approximation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..protocol import Cost, Route, RouteResult
from ..table import default_margins
from ._plan import prepared

__all__ = ["MAX_WORK", "Group", "JointEnumeration", "JointModel", "group_windows"]

#: estimated inner-loop steps (candidates x one likelihood's DP) the route takes on; the
#: estimates run at 2-5e8 per second on this 2-core machine (2 x 3 to 3 x 4 tables), so
#: about a second: ``route="auto"`` stays quick and falls back to the per-cell route
MAX_WORK = 3e8
#: steps of the joint enumeration per second (candidate x likelihood steps; measured in
#: benchmarks/route_seconds.py, a busy 2-core machine: conservative)
STEPS_PER_SECOND = 3e8

#: (cell, value) pairs the route looks at before it counts candidates: a group of K cells
#: with total n has K (n + 1); past this the route does not apply (n in the thousands with
#: more than a few cells is far beyond MAX_WORK anyway)
MAX_VALUES = 2_000_000

#: candidates whose likelihoods are evaluated in one kernel call
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Group:
    """Cells sharing one published total.

    ``cells``: flat (C-order) indices of the cells; ``total``: their total;
    ``allowed``: bool ``(len(cells), total + 1)``, the values each cell can take given the
    release; ``loglik(X) -> (C,)``: the exact log-likelihood of the release's part on these
    cells given each row of ``X`` (C, len(cells)) (-inf: impossible); ``cost``: inner-loop
    steps of one likelihood evaluation (the route's time estimate); ``factors(vlo, V) ->
    SumFactors``: the same likelihood as per-cell factors of laws of sums, for the values
    ``vlo[c] .. vlo[c] + V - 1`` of each cell (the Markov chain's incremental form,
    :mod:`.joint_mcmc`; None: no chain for this group)."""

    cells: np.ndarray
    total: int
    allowed: np.ndarray
    loglik: Callable
    cost: float
    factors: Callable | None = None


@dataclass(frozen=True)
class JointModel:
    """The release as groups of cells; ``refusal``: why it was not built (too large)."""

    groups: tuple = ()
    refusal: str = ""


@dataclass
class _Enumerated:
    X: np.ndarray         # (C, K) candidates with finite weight
    logw: np.ndarray      # (C,) prior + log-likelihood
    logz: float


class JointEnumeration(Route):
    """Exact posterior by enumeration of every candidate original (see the module
    docstring).  Reads ``plan.inputs["joint_model"]``: ``max_values -> JointModel`` (with
    only its ``refusal`` when its groups hold more than ``max_values`` (cell, value)
    pairs)."""

    name = "joint"
    needs = "the exact joint likelihood by groups (joint_model); finite supports"
    #: (cell, value) pairs past which the model is not built (only its refusal)
    max_values = MAX_VALUES

    def _get(self, plan) -> JointModel:
        """The release's model (built once per call and size limit: ``applies``,
        ``estimate`` and ``run`` ask in turn)."""
        return prepared(plan, ("joint_model", self.max_values),
                         lambda: plan.inputs["joint_model"](self.max_values))

    # --- supports and sizes ---------------------------------------------------------------
    def _windows(self, plan):
        """Per group: the allowed values of each cell within the prior's support (bool
        (K, total + 1)) and the prior log-weights there."""
        model = self._get(plan)
        if model.refusal:
            return model, None
        return model, prepared(plan, ("joint_windows", self.max_values),
                                lambda: group_windows(model, plan.release, plan.prior))

    @staticmethod
    def _n_tables(ok: np.ndarray, total: int) -> float:
        """Number of vectors with the group's total and every cell in its allowed set (a
        float: a size estimate).  The cells are convolved in one at a time, each allowed
        run of values [a, b] by a difference of prefix sums (O(total) per run)."""
        c = np.zeros(total + 1)
        c[0] = 1.0
        for row in ok:
            edges = np.flatnonzero(np.diff(np.concatenate([[0], row.astype(np.int8), [0]])))
            pre = np.concatenate([[0.0], np.cumsum(c)])       # pre[s] = c[0] + .. + c[s-1]
            s_ = np.arange(total + 1)
            new = np.zeros(total + 1)
            for a, b in zip(edges[::2], edges[1::2] - 1):     # sum of c[s - b .. s - a]
                new += pre[np.clip(s_ - a + 1, 0, total + 1)] - pre[np.clip(s_ - b, 0, total + 1)]
            c = new
        return float(c[total])

    def _work(self, plan):
        model, wins = self._windows(plan)
        if model.refusal:
            return np.inf, [np.inf], model
        sizes = [self._n_tables(ok, g.total) for g, (ok, _) in zip(model.groups, wins)]
        work = sum(s * (g.cost + len(g.cells)) for s, g in zip(sizes, model.groups))
        return work, sizes, model

    def applies(self, plan):
        if plan.release.groups:
            return "the joint enumeration does not use published subtotals"
        work, sizes, model = self._work(plan)
        if model.refusal:
            return model.refusal
        if work > MAX_WORK:
            return (f"{sum(sizes):.3g} candidate tables x their exact joint likelihoods: "
                    f"{work:.3g} steps, more than the joint enumeration takes on "
                    f"({MAX_WORK:.0e})")
        return None

    def estimate(self, plan, what="posterior"):
        _, sizes, model = self._work(plan)
        if model.refusal:
            return Cost(np.inf, model.refusal)
        mem = max(s * (len(g.cells) + 4) * 8 * 2 for s, g in zip(sizes, model.groups))
        work = sum(s * (g.cost + len(g.cells)) for s, g in zip(sizes, model.groups))
        secs = float(work) / STEPS_PER_SECOND
        return Cost(float(mem), f"{sum(sizes):.3g} candidate tables, about {secs:.2g} s",
                    seconds=secs)

    # --- enumeration ----------------------------------------------------------------------
    @staticmethod
    def _enumerate(group: Group, ok: np.ndarray, glw: np.ndarray) -> _Enumerated:
        """Every candidate of ``group`` with its log weight (prior + likelihood), finite
        weights only."""
        total = group.total
        K = ok.shape[0]
        vals = [np.flatnonzero(r) for r in ok]
        if any(v.size == 0 for v in vals):
            return _Enumerated(np.zeros((0, K), np.int64), np.zeros(0), -np.inf)
        mins = np.array([v[0] for v in vals])
        maxs = np.array([v[-1] for v in vals])
        rest_min = np.concatenate([np.cumsum(mins[::-1])[::-1][1:], [0]])
        rest_max = np.concatenate([np.cumsum(maxs[::-1])[::-1][1:], [0]])
        X = np.zeros((1, 0), np.int64)
        s = np.zeros(1, np.int64)
        lp = np.zeros(1)
        for k in range(K):
            v = vals[k]
            ns = s[:, None] + v[None, :]
            keep = (ns + rest_min[k] <= total) & (ns + rest_max[k] >= total)
            rows, cols = np.nonzero(keep)
            X = np.concatenate([X[rows], v[cols][:, None]], axis=1)
            s = ns[rows, cols]
            lp = lp[rows] + glw[k, v[cols]]
        ll = np.empty(len(X))
        for a in range(0, len(X), _CHUNK):
            ll[a:a + _CHUNK] = group.loglik(np.ascontiguousarray(X[a:a + _CHUNK]))
        logw = lp + ll
        fin = np.isfinite(logw)
        X, logw = X[fin], logw[fin]
        if len(X) == 0:
            return _Enumerated(X, logw, -np.inf)
        mx = logw.max()
        return _Enumerated(X, logw, float(mx + np.log(np.exp(logw - mx).sum())))

    def _run(self, plan):
        release = plan.release
        model, wins = self._windows(plan)
        if model.refusal:
            raise ValueError(f"the joint route cannot answer this release: {model.refusal}")
        parts = [self._enumerate(g, ok, glw) for g, (ok, glw) in zip(model.groups, wins)]
        if any(len(p.X) == 0 for p in parts):
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        return model, parts

    def run(self, plan, *, count=True):
        release = plan.release
        model, parts = self._run(plan)
        shape = tuple(release.shape)
        ncell = int(np.prod(shape, dtype=np.int64))
        lo = np.zeros(ncell, np.int64)
        hi = np.zeros(ncell, np.int64)
        weights = []
        for g, p in zip(model.groups, parts):
            w = np.exp(p.logw - p.logz)
            weights.append(w)
            lo[g.cells] = p.X.min(axis=0)
            hi[g.cells] = p.X.max(axis=0)
        W = int((hi - lo).max()) + 1
        probs = np.zeros((ncell, W))
        for g, p, w in zip(model.groups, parts, weights):
            for j, c in enumerate(g.cells):
                probs[c] = np.bincount(p.X[:, j] - lo[c], weights=w, minlength=W)
        probs /= probs.sum(axis=1, keepdims=True)
        n = 1
        for p in parts:
            n *= len(p.X)

        def totals():
            return {keep: (lambda keep=keep: _total(release, model, parts, weights, keep))
                    for keep in default_margins(release.dims) if keep not in release.margins}

        return RouteResult(start=lo.reshape(shape),
                            probs=probs.reshape(shape + (W,)),
                            log_evidence=float(sum(p.logz for p in parts)),
                            n_candidates=n if count else None, totals=totals,
                            sampler=_sampler(model, parts, weights, shape))

    def count(self, plan):
        model, wins = self._windows(plan)
        if model.refusal:
            raise ValueError(f"the joint route cannot answer this release: {model.refusal}")
        n = 1
        for g, (ok, glw) in zip(model.groups, wins):
            n *= len(self._enumerate(g, ok, glw).X)
        return n


def _prior_lw(release, prior, width: int) -> np.ndarray:
    """Prior log-weights of the values 0..width-1 of every cell, flat (cells, width)."""
    shape = tuple(release.shape)
    vals = np.broadcast_to(np.arange(width, dtype=np.int64), shape + (width,))
    if prior.cell_invariant:
        lw = np.broadcast_to(prior.log_weights(vals[(0,) * len(shape)][None]), shape
                             + (width,))
    else:
        lw = prior.log_weights(vals, release.dims, release.coords)
    return np.asarray(lw).reshape(-1, width)


def group_windows(model: JointModel, release, prior) -> list:
    """Per group of ``model``: ``(ok, glw)``, the values each cell can take given the release
    and within the prior's support (bool (K, total + 1)) and their prior log-weights
    (-inf elsewhere)."""
    width = max(g.total for g in model.groups) + 1
    lw = _prior_lw(release, prior, width)
    out = []
    for g in model.groups:
        glw = lw[g.cells, :g.total + 1]
        ok = g.allowed & np.isfinite(glw)
        out.append((ok, np.where(ok, glw, -np.inf)))
    return out


def _total(release, model, parts, weights, keep) -> tuple:
    """``(start, probs)`` of the totals keeping ``keep``: per group the law of the part of
    each total that falls in the group (from its candidates), convolved over the groups
    (independent given the release)."""
    dims, shape = release.dims, tuple(release.shape)
    kshape = tuple(shape[dims.index(d)] for d in keep)
    kept = [dims.index(d) for d in keep]
    entry = np.ravel_multi_index(tuple(np.indices(shape)[i] for i in kept), kshape) \
        if kept else np.zeros(shape, np.int64)
    entry = np.asarray(entry).reshape(-1)
    nent = int(np.prod(kshape, dtype=np.int64))
    laws = [(0, np.ones(1))] * nent
    for g, p, w in zip(model.groups, parts, weights):
        ent = entry[g.cells]
        for e in np.unique(ent):
            part = p.X[:, ent == e].sum(axis=1)
            s0 = int(part.min())
            pm = np.bincount(part - s0, weights=w)
            a0, a = laws[e]
            laws[e] = (a0 + s0, np.convolve(a, pm))
    Wt = max(len(a) for _, a in laws)
    start = np.array([a0 for a0, _ in laws], np.int64).reshape(kshape)
    probs = np.array([np.pad(a, (0, Wt - len(a))) / a.sum() for _, a in laws])
    return start, probs.reshape(kshape + (Wt,))


def _sampler(model, parts, weights, shape):
    """``sampler(k, rng)``: whole tables, each group's sub-table drawn from its candidates
    by inverse cdf (independent groups); a candidate of probability 0 is never drawn."""
    cdfs = [np.cumsum(w) for w in weights]
    last = [len(w) - 1 - int(np.argmax(w[::-1] > 0)) for w in weights]
    ncell = int(np.prod(shape, dtype=np.int64))

    def draw(k, rng):
        out = np.zeros((k, ncell), np.int64)
        u = rng.random((k, len(parts)))
        for i, (g, p, cdf) in enumerate(zip(model.groups, parts, cdfs)):
            j = np.searchsorted(cdf, u[:, i] * cdf[-1], side="right")
            j = np.minimum(j, last[i])
            out[:, g.cells] = p.X[j]
        return out.reshape((k,) + shape)

    return draw
