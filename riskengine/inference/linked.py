"""The linked route: the exact posterior of a set of tables from the same microdata.

For a :class:`~riskengine.release_set.ReleaseSet` whose mechanisms publish every entry as
a noisy observation of its own original value (a likelihood that is a product over the
published entries: the cell key method, random rounding, noisy counts).  Every entry of
every table is a factor on the sum of the finest cells it counts; entries holding the
same records combine (once for keyed noise, as independent observations otherwise: see
the set's docstring); an entry of one finest cell weighs that cell alone.  The sum-product
over the finest table (``kernels.sum_chain``: partial sums of the open entries as the
state, in log space) gives every finest cell's posterior, every published entry's
posterior (``post.releases[i]``: release i's interior cells, with its totals in
``.totals``), the evidence and exact whole-table draws.  The finest cells are visited in
C order over the permutation of the dims that keeps the state smallest.
"""

from __future__ import annotations

import itertools

import numpy as np

from kernels import sum_chain as sc

from ..protocol import Cost, Route, RouteResult
from ._plan import prepared

__all__ = ["LinkedDP"]

#: posterior mass a cut window edge (noise with unbounded support) may hold
_EDGE = 1e-12
#: floats kept per state value (forward message, backward message, working copies)
_FLOATS = 4
#: state values x window values the route works through before ``route="auto"`` passes it
#: over for the Monte Carlo route: NumPy log-space steps run at about 1e7 per second on
#: this 2-core machine (studies/noise/differencing.py), so about 30 s
MAX_WORK = 3e8

_KEYED = ("the keys of entries whose records are unions of other entries' records are tied "
          "(a total's key is the fractional part of the sum of its cells' keys, a region's "
          "key that of its parts'); the likelihood multiplies their p-table probabilities as "
          "if the keys were independent")


class _Model:
    """The set as variables (finest cells, C order) and sum factors, with the order the
    forward pass visits the cells in."""

    def __init__(self, rset, prior, windows, plan: bool = True):
        """``windows``: each release's entry windows (the set's route input)."""
        self.rset = rset
        by_cells: dict = {}
        for e in rset.entries:
            ew = windows[e.release]
            lo = int(ew.lo[e.keep][e.index])
            lw = np.asarray(ew.lw[e.keep][e.index], dtype=float)
            by_cells.setdefault(e.cells.tobytes(), []).append((e, lo, lw))
        self.truncated = any(getattr(r.mechanism, "windows_truncated", False)
                             for r in rset.releases)
        n = int(np.prod(rset.shape))
        unary = [None] * n
        factors = []                       # (cells, lo, lw, [entries])
        self.keyed_sums = False
        for group in by_cells.values():
            cells = group[0][0].cells
            lo, lw = _combine(rset, group)
            if cells.size == 1:
                unary[int(cells[0])] = (lo, lw)
            else:
                factors.append((cells, lo, lw, [g[0] for g in group]))
                self.keyed_sums |= any(getattr(rset.releases[g[0].release].mechanism, "keyed",
                                               False) for g in group)
        # cells no entry weighs alone: from 0 to what the smallest entry holding them allows
        upper = np.full(n, np.iinfo(np.int64).max)
        held = np.zeros(n, bool)
        for cells, lo, lw, _ in factors:
            fin = np.flatnonzero(np.isfinite(lw))
            upper[cells] = np.minimum(upper[cells], lo + fin[-1])
            held[cells] = True
        #: per cell the top of its mechanism window (-1: none; bounded by the totals)
        self.top = np.array([-1 if u is None else u[0] + u[1].shape[0] - 1 for u in unary])
        for c in range(n):
            if unary[c] is None:
                if not held[c]:
                    at = np.unravel_index(c, rset.shape)
                    label = {d: rset.coords[d][i] for d, i in zip(rset.dims, at)}
                    raise ValueError(f"finest cell {label} is counted by no published number "
                                     "of the set: nothing bounds it")
                unary[c] = (0, np.zeros(int(upper[c]) + 1))
        W = max(lw.shape[0] for _, lw in unary)
        self.lo = np.array([lo for lo, _ in unary], np.int64)
        lw = np.full((n, W), -np.inf)
        for c, (_, w) in enumerate(unary):
            lw[c, :w.shape[0]] = w
        vals = (self.lo[:, None] + np.arange(W)).reshape(rset.shape + (W,))
        plw = prior.log_weights(vals, rset.dims, rset.coords).reshape(n, W)
        with np.errstate(invalid="ignore"):
            both = lw + plw
        self.lw = np.where(np.isnan(both), -np.inf, both)
        self.factors = factors
        if plan:
            self.order, self.plan = self._best_order()

    def _best_order(self):
        rset = self.rset
        idx = np.arange(int(np.prod(rset.shape))).reshape(rset.shape)
        best = None
        for perm in itertools.permutations(range(len(rset.dims))):
            order = np.transpose(idx, perm).ravel()
            pos = np.empty_like(order)
            pos[order] = np.arange(order.size)
            p = sc.plan(self.lo[order], self.lw[order], [pos[c] for c, *_ in self.factors],
                        [lo for _, lo, _, _ in self.factors],
                        [lw for _, _, lw, _ in self.factors])
            cost = p.total_cells * self.lw.shape[1]
            if best is None or cost < best[0]:
                best = (cost, order, p)
        return best[1], best[2]

    def memory(self) -> float:
        return 8.0 * (self.plan.total_cells + _FLOATS * self.plan.peak)


def _combine(rset, group):
    """One window for the entries holding the same records: keyed noise counts once (and
    must agree), independent noise multiplies."""
    keyed = [(e, lo, lw) for e, lo, lw in group
             if getattr(rset.releases[e.release].mechanism, "keyed", False)]
    free = [(e, lo, lw) for e, lo, lw in group
            if not getattr(rset.releases[e.release].mechanism, "keyed", False)]
    parts = list(free)
    if keyed:
        e0, _, _ = keyed[0]
        m0 = rset.releases[e0.release].mechanism
        for e, _, _ in keyed[1:]:
            m = rset.releases[e.release].mechanism
            if m.to_dict() != m0.to_dict():
                raise ValueError(
                    f"{_where(rset, e0)} and {_where(rset, e)} hold the same records under "
                    f"keyed mechanisms with different parameters ({m0.describe()} vs "
                    f"{m.describe()}): one record key would give both perturbations, which "
                    "the set cannot weigh")
            if e.value != e0.value:
                raise ValueError(
                    f"{_where(rset, e0)} publishes {e0.value} and {_where(rset, e)} "
                    f"publishes {e.value}, but they hold the same records and "
                    f"{m0.describe()} perturbs the same records the same way: these "
                    "releases are not from one run with one set of record keys")
        # a repeated entry of one release carries weight 0 on its window (it is the same
        # cell); the real likelihood is the smallest log-weight of the copies
        lo = min(x for _, x, _ in keyed)
        hi = max(x + w.shape[0] for _, x, w in keyed)
        acc = np.full(hi - lo, np.inf)
        mask = np.ones(hi - lo, bool)
        for _, x, w in keyed:
            full = np.full(hi - lo, -np.inf)
            full[x - lo:x - lo + w.shape[0]] = w
            acc = np.minimum(acc, full)
            mask &= np.isfinite(full)
        parts.append((e0, lo, np.where(mask, acc, -np.inf)))
    lo = max(x for _, x, _ in parts)
    hi = min(x + w.shape[0] for _, x, w in parts)
    if hi <= lo:
        raise ValueError(f"no original value fits every publication of the records of "
                         f"{_where(rset, group[0][0])}")
    lw = np.zeros(hi - lo)
    for _, x, w in parts:
        lw = lw + w[lo - x:hi - x]
    fin = np.flatnonzero(np.isfinite(lw))
    if fin.size == 0:
        raise ValueError(f"no original value fits every publication of the records of "
                         f"{_where(rset, group[0][0])}")
    return lo + int(fin[0]), lw[fin[0]:fin[-1] + 1]


def _where(rset, e) -> str:
    r = rset.releases[e.release]
    at = {d: r.coords[d][i] for d, i in zip(e.keep, e.index)}
    what = "cell" if e.keep == r.dims else ("grand total" if not e.keep else "total")
    return f"release {e.release}'s {what} {at}" if at else f"release {e.release}'s {what}"


def model_of(plan, exact: bool = True) -> _Model:
    """The set's model, built once per call (``exact``: with the forward pass's plan)."""
    return prepared(plan, ("linked", exact), lambda: _Model(plan.release, plan.prior,
                                                       plan.inputs["windows"], plan=exact))


class LinkedDP(Route):
    """Exact posterior of a :class:`~riskengine.release_set.ReleaseSet` (see the module)."""

    name = "linked-dp"
    needs = "a ReleaseSet whose mechanisms give entry windows (a product over entries)"

    def applies(self, plan):
        release = plan.release
        if not hasattr(release, "entries") or not hasattr(release, "releases"):
            return "the linked route answers sets of releases (rk.ReleaseSet)"
        return None

    def estimate(self, plan, what="posterior"):
        model = model_of(plan)
        p = model.plan
        work = p.total_cells * model.lw.shape[1]
        slow = (f"{work:.3g} state x value steps (about {work / 1e7:.0f} s), more than "
                f"route='auto' waits for ({MAX_WORK:.0e})" if work > MAX_WORK else "")
        return Cost(model.memory(), f"{p.total_cells:.3g} partial-sum states over "
                                    f"{len(p.vlo)} cells, widest {p.peak:.3g}", slow)

    def run(self, plan, *, count=True):
        release, progress, memory = plan.release, plan.progress, plan.memory
        model = model_of(plan)
        if model.memory() > memory:
            raise ValueError(f"the linked route needs {model.memory() / 2**30:.3g} GiB, more "
                             f"than the memory budget of {memory / 2**30:.3g} GiB")
        p = model.plan
        steps = sc.marginals_steps(p)
        if progress is None:
            log_z, var_probs, fac, alphas = sc.run(steps)
        else:                              # report each step (and stop there on Ctrl-C)
            total = 2 * len(p.vlo)
            try:
                while True:
                    progress(min(next(steps) + 1, total), total)
            except StopIteration as end:
                log_z, var_probs, fac, alphas = end.value
        if model.truncated:
            _check_edges(model, var_probs, fac)
        rset = release
        n = len(p.vlo)
        W = max(q.shape[0] for q in var_probs)
        start = np.empty(n, np.int64)
        probs = np.zeros((n, W))
        for t, c in enumerate(model.order):
            start[c] = p.vlo[t]
            probs[c, :var_probs[t].shape[0]] = var_probs[t]
        # every published entry's posterior: its cell's, or its factor's sum's
        of_cells = {}
        for k, (cells, *_rest) in enumerate(model.factors):
            of_cells[cells.tobytes()] = fac[k]
        order = model.order

        def sampler(m, rng):
            draws = sc.sample(p, alphas, rng.random((m, n)))
            out = np.empty_like(draws)
            out[:, order] = draws
            return out.reshape((m,) + rset.shape)

        approx = _KEYED if model.keyed_sums else ""
        return RouteResult(start=start.reshape(rset.shape),
                           probs=probs.reshape(rset.shape + (W,)), log_evidence=log_z,
                           notes={"n_candidates_note": "the linked route does not count "
                                                       "candidate tables"},
                           approximation=approx, sampler=sampler,
                           parts=tuple(self._parts(rset, start, probs, of_cells)))

    @staticmethod
    def _parts(rset, start, probs, of_cells):
        """Per release: the posterior of its interior cells, with its totals."""
        blocks: dict = {}
        for e in rset.entries:
            if e.cells.size == 1:
                c = int(e.cells[0])
                lo, q = int(start[c]), probs[c]
                last = np.flatnonzero(q)[-1] if q.any() else 0
                q = q[:last + 1]
            else:
                lo, q = of_cells[e.cells.tobytes()]
            blocks.setdefault((e.release, e.keep), []).append((e.index, lo, q))
        for i, r in enumerate(rset.releases):
            built = {}
            for keep in [r.dims, *r.margins]:
                items = blocks.get((i, tuple(keep)), [])
                shape = tuple(r.shape[r.dims.index(d)] for d in keep)
                W = max((q.shape[0] for _, _, q in items), default=1)
                s = np.zeros(shape, np.int64)
                pr = np.zeros(shape + (W,))
                for index, lo, q in items:
                    s[index] = lo
                    pr[index + (slice(0, q.shape[0]),)] = q
                built[tuple(keep)] = (s, pr)
            yield r, built, (f"posterior of release {i}'s original values, given the "
                             "whole set")


def _check_edges(model, var_probs, fac):
    """Noise with unbounded support is cut at each entry's window: refuse when the
    posterior keeps more than _EDGE of its mass at a cut edge."""
    p = model.plan
    for t, c in enumerate(model.order):
        q = var_probs[t]
        at_top = p.vhi[t] == model.top[c]
        low = p.vlo[t] == model.lo[c] and p.vlo[t] > 0 and model.top[c] >= 0
        if (at_top and q[-1] > _EDGE) or (low and q[0] > _EDGE):
            raise FloatingPointError(
                f"the posterior keeps {max(q[-1], q[0]):.3g} of its mass at the edge of a "
                "noise window: the prior puts its mass far from the published values "
                "(analyse the tables one by one, whose routes widen their windows)")
    for k, (lo, q) in fac.items():
        _, flo, flw, _ = model.factors[k]
        top = (lo + q.shape[0] - 1) == flo + flw.shape[0] - 1
        if (top and q[-1] > _EDGE) or (lo == flo and lo > 0 and q[0] > _EDGE):
            raise FloatingPointError(
                f"the posterior keeps {max(q[-1], q[0]):.3g} of its mass at the edge of a "
                "total's noise window: the prior puts its mass far from the published values")
