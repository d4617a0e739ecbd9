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

def _windows_approximation(plan) -> str:
    """What the set's releases' entry windows approximate (each release's own likelihood,
    e.g. controlled rounding's product of marginal rounding probabilities), joined."""
    out = []
    for w in plan.inputs["windows"]:
        a = getattr(w, "approximation", "") or ""
        if a and a not in out:
            out.append(a)
    return "; ".join(out)


_KEYED = ("the keys of entries whose records are unions of other entries' records are tied "
          "(a total's key is the fractional part of the sum of its cells' keys, a region's "
          "key that of its parts'); the likelihood multiplies their p-table probabilities as "
          "if the keys were independent")


class _Part:
    """One published entry's window on the records it counts: ``lo`` and ``lw`` (trimmed
    to its finite span), and whether the likelihood goes on past each end (``cut_lo``,
    ``cut_hi``: noise of unbounded support cut at the window; False: a hard end, the
    likelihood is zero past it, as a rounding window's or a count's 0)."""

    __slots__ = ("cut_hi", "cut_lo", "entry", "lo", "lw")

    def __init__(self, entry, lo, lw, cut_lo, cut_hi):
        self.entry, self.lo, self.lw, self.cut_lo, self.cut_hi = entry, lo, lw, cut_lo, cut_hi

    @property
    def hi(self) -> int:
        return self.lo + self.lw.shape[0] - 1


def _part(rset, ew, e) -> _Part:
    """Entry ``e``'s window from its release's windows ``ew``: the padding past its own
    window dropped, with its ends' cut flags (:attr:`EntryWindows.cut`; a mechanism that
    states none has every end above 0 cut when it says ``windows_truncated``)."""
    lo = int(ew.lo[e.keep][e.index])
    lw = np.asarray(ew.lw[e.keep][e.index], dtype=float)
    fin = np.flatnonzero(np.isfinite(lw))
    cut = getattr(ew, "cut", None)
    if cut is None:
        lo_cut = hi_cut = bool(getattr(rset.releases[e.release].mechanism,
                                       "windows_truncated", False))
    elif e.keep in cut:
        lo_cut, hi_cut = (bool(np.asarray(c)[e.index]) for c in cut[e.keep])
    else:
        lo_cut = hi_cut = False
    if fin.size == 0:
        return _Part(e, lo, lw[:0], False, False)
    first = lo + int(fin[0])
    return _Part(e, first, lw[fin[0]:fin[-1] + 1], lo_cut and first > 0, hi_cut)


class _Model:
    """The set as variables (finest cells, C order) and sum factors, with the order the
    forward pass visits the cells in.  ``var_cuts[c]`` / ``fac_cuts[k]``: per window end
    (low, high) the entries whose noise window was cut there (empty: a hard end)."""

    def __init__(self, rset, prior, windows, plan: bool = True):
        """``windows``: each release's entry windows (the set's route input)."""
        self.rset = rset
        by_cells: dict = {}
        for e in rset.entries:
            by_cells.setdefault(e.cells.tobytes(), []).append(_part(rset, windows[e.release],
                                                                    e))
        n = int(np.prod(rset.shape))
        unary = [None] * n
        self.var_cuts = [((), ())] * n
        factors = []                       # (cells, lo, lw, [entries])
        self.fac_cuts = []
        self.keyed_sums = False
        for group in by_cells.values():
            cells = group[0].entry.cells
            lo, lw, cuts = _combine(rset, group)
            if cells.size == 1:
                unary[int(cells[0])] = (lo, lw)
                self.var_cuts[int(cells[0])] = cuts
            else:
                factors.append((cells, lo, lw, [g.entry for g in group]))
                self.fac_cuts.append(cuts)
                self.keyed_sums |= any(getattr(rset.releases[g.entry.release].mechanism,
                                               "keyed", False) for g in group)
        # cells no entry weighs alone: from 0 to what the smallest entry holding them allows
        # (a hard end: the entry's own end is checked)
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
                    raise unbounded(rset, c)
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
        # a cell's cut end matters only where the prior allows the value past it
        past = np.stack([self.lo - 1, np.maximum(self.top + 1, 0)], axis=-1)
        beyond = np.isfinite(prior.log_weights(np.maximum(past, 0).reshape(rset.shape + (2,)),
                                               rset.dims, rset.coords).reshape(n, 2))
        beyond[:, 0] &= self.lo > 0
        self.var_cuts = [(low if beyond[c, 0] else (), high if beyond[c, 1] else ())
                         for c, (low, high) in enumerate(self.var_cuts)]
        #: some window end cuts a likelihood that goes on past it: the posterior is checked
        self.truncated = any(a or b for a, b in self.var_cuts + self.fac_cuts)
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
    """One window for the entries holding the same records (:class:`_Part` each): keyed
    noise counts once (and must agree), independent noise multiplies.  Returns
    ``(lo, lw, (low, high))``: per end the entries whose cut window leaves the likelihood
    positive past it (empty: a hard end)."""
    keyed = [g for g in group
             if getattr(rset.releases[g.entry.release].mechanism, "keyed", False)]
    free = [g for g in group
            if not getattr(rset.releases[g.entry.release].mechanism, "keyed", False)]
    parts = list(free)
    if keyed:
        e0 = keyed[0].entry
        m0 = rset.releases[e0.release].mechanism
        for g in keyed[1:]:
            e = g.entry
            m = rset.releases[e.release].mechanism
            if m.to_dict() != m0.to_dict():
                raise ValueError(
                    f"{_where(rset, e0)} and {_where(rset, e)} hold the same records under "
                    f"keyed mechanisms with different parameters ({m0.describe()} vs "
                    f"{m.describe()}): one record key would give both perturbations, which "
                    "the set cannot weigh")
            same_keyed_value(rset, e0, e, m0)
        # a repeated entry of one release carries weight 0 on its window (it is the same
        # cell); the real likelihood is the smallest log-weight of the copies
        lo = min(g.lo for g in keyed)
        hi = max(g.lo + g.lw.shape[0] for g in keyed)
        acc = np.full(hi - lo, np.inf)
        mask = np.ones(hi - lo, bool)
        for g in keyed:
            full = np.full(hi - lo, -np.inf)
            full[g.lo - lo:g.lo - lo + g.lw.shape[0]] = g.lw
            acc = np.minimum(acc, full)
            mask &= np.isfinite(full)
        parts.append(_Part(e0, lo, np.where(mask, acc, -np.inf),
                           all(g.cut_lo for g in keyed), all(g.cut_hi for g in keyed)))
    lo = max(g.lo for g in parts)
    hi = min(g.lo + g.lw.shape[0] for g in parts)
    if hi <= lo:
        raise ValueError(f"no original value fits every publication of the records of "
                         f"{_where(rset, group[0].entry)}")
    lw = np.zeros(hi - lo)
    for g in parts:
        lw = lw + g.lw[lo - g.lo:hi - g.lo]
    fin = np.flatnonzero(np.isfinite(lw))
    if fin.size == 0:
        raise ValueError(f"no original value fits every publication of the records of "
                         f"{_where(rset, group[0].entry)}")
    first, last = lo + int(fin[0]), lo + int(fin[-1])
    return first, lw[fin[0]:fin[-1] + 1], (_cut_below(parts, first), _cut_above(parts, last))


def _positive(g: _Part, values: np.ndarray) -> np.ndarray:
    """Where entry window ``g``'s likelihood may be positive at ``values``: inside the
    window where its log-weight is finite, past a cut end everywhere, past a hard end
    nowhere."""
    j = values - g.lo
    inside = (j >= 0) & (j < g.lw.shape[0])
    fin = np.isfinite(g.lw[np.clip(j, 0, max(g.lw.shape[0] - 1, 0))]) if g.lw.size else \
        np.zeros(values.shape, bool)
    return np.where(inside, fin, np.where(j < 0, g.cut_lo, g.cut_hi))


def _cut_below(parts, first: int) -> tuple:
    """The entries whose cut windows leave the product of ``parts`` positive below
    ``first`` (the combined window's first value); ``()``: a hard end."""
    if first <= 0:
        return ()
    start = max(min(g.lo for g in parts) - 1, 0)
    values = np.arange(start, first)
    ok = np.logical_and.reduce([_positive(g, values) for g in parts])
    if not ok.any():
        return ()
    v = int(values[np.flatnonzero(ok)[-1]])
    return tuple(g.entry for g in parts if v < g.lo)


def _cut_above(parts, last: int) -> tuple:
    """The entries whose cut windows leave the product of ``parts`` positive above
    ``last`` (the combined window's last value); ``()``: a hard end."""
    values = np.arange(last + 1, max(g.hi for g in parts) + 2)
    ok = np.logical_and.reduce([_positive(g, values) for g in parts])
    if not ok.any():
        return ()
    v = int(values[np.flatnonzero(ok)[0]])
    return tuple(g.entry for g in parts if v > g.hi)


def same_keyed_value(rset, e0, e, mechanism) -> None:
    """Entries ``e0`` and ``e`` hold the same records under the keyed ``mechanism``: one
    record key gives both the same perturbation, so they must publish the same value."""
    if e.value != e0.value:
        raise ValueError(
            f"{_where(rset, e0)} publishes {e0.value} and {_where(rset, e)} publishes "
            f"{e.value}, but they hold the same records and {mechanism.describe()} perturbs "
            "the same records the same way: these releases are not from one run with one "
            "set of record keys")


def unbounded(rset, c: int) -> ValueError:
    """The error for finest cell ``c`` (flat index), which no published number holds."""
    at = np.unravel_index(c, rset.shape)
    label = {d: rset.coords[d][i] for d, i in zip(rset.dims, at)}
    return ValueError(f"finest cell {label} is counted by no published number of the set: "
                      "nothing bounds it")


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

    def approximation(self, plan):
        """The keyed product over tied entries (the cell key method's sums), else what the
        releases' own likelihoods approximate (:func:`_windows_approximation`), else
        exact."""
        return _KEYED if model_of(plan).keyed_sums else _windows_approximation(plan)

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
                                    f"{len(p.vlo)} cells, widest {p.peak:.3g}", slow,
                    seconds=work / 1e7)

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

        approx = _KEYED if model.keyed_sums else _windows_approximation(plan)
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
    """Noise with unbounded support is cut at its entries' windows: refuse when the
    posterior keeps more than _EDGE of its mass at a cut end.  Only ends where some
    entry's window was cut count (``model.var_cuts``, ``model.fac_cuts``); a hard end (a
    rounding window's, a count's 0, the prior's bound) holds any mass.  A ValueError, not
    a route's refusal (``FloatingPointError``, which ``route="auto"`` answers with the next
    route): every route of the set works on the same windows, so none can answer."""
    p = model.plan
    rset = model.rset
    for t, c in enumerate(model.order):
        q = var_probs[t]
        low, high = model.var_cuts[c]
        at = np.unravel_index(c, rset.shape)
        what = "finest cell " + str({d: rset.coords[d][i] for d, i in zip(rset.dims, at)})
        if high and p.vhi[t] == model.top[c] and q[-1] > _EDGE:
            raise ValueError(_edge_message(rset, q[-1], "high", int(p.vhi[t]), what, high))
        if low and p.vlo[t] == model.lo[c] and q[0] > _EDGE:
            raise ValueError(_edge_message(rset, q[0], "low", int(p.vlo[t]), what, low))
    for k, (lo, q) in fac.items():
        _, flo, flw, entries = model.factors[k]
        low, high = model.fac_cuts[k]
        what = "the sum of the records counted by " + _where(rset, entries[0])
        if high and lo + q.shape[0] - 1 == flo + flw.shape[0] - 1 and q[-1] > _EDGE:
            raise ValueError(_edge_message(rset, q[-1], "high", lo + q.shape[0] - 1, what,
                                           high))
        if low and lo == flo and q[0] > _EDGE:
            raise ValueError(_edge_message(rset, q[0], "low", lo, what, low))


def _edge_message(rset, mass, side, value, what, entries) -> str:
    """The refusal of a posterior cut off at a noise window's end: where, which end,
    which publications' windows were cut there."""
    cut = "; ".join(f"{_where(rset, e)} (published {e.value}, "
                    f"{rset.releases[e.release].mechanism.describe()})" for e in entries)
    beyond = "below" if side == "low" else "above"
    return (f"the posterior keeps {mass:.3g} of its mass at the {side} end ({value}) of the "
            f"window of {what}: the noise window of {cut} was cut there (the noise has "
            f"unbounded support: originals {beyond} {value} keep a positive likelihood): "
            "the prior puts its mass far from the published values (analyse the tables one "
            "by one, whose routes widen their windows)")
