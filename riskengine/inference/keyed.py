"""The exact cell-key route: the likelihood integrated over the record keys.

Under the cell key method a nonempty cell's key is uniform on [0, 1), an empty cell has
no key (it is published 0), and a total's key is the fractional part of the sum of its
nonempty cells' keys.  Multiplying each entry's p-table probability treats the keys of a
total and of its cells as independent; they are not (with one nonempty cell the total
and the cell hold the same records, hence the same key).  This route integrates over the
keys instead: for tables whose published totals are disjoint sums of cells (a 1-D table
and its total, a 2-D table with its grand total only or with the totals of one dim only),
a chain over the cells of each total carries, for every running sum of the counts, the
exact density of the running fractional sum of the keys (:mod:`kernels.key_sums`: a
polynomial on each segment of the grid the p-table's interval ends lie on), and a
backward chain carries the probability of completing it; every marginal, the totals'
posteriors, the evidence and whole-table draws are exact.

Cost: per total of ``m`` cells with windows of ``W`` values, ``S`` running sums, a grid
of ``N`` segments: about ``m W S N m`` coefficients per pass and ``m S N m`` stored
(the polynomials' degree grows by one per nonempty cell).  Tables whose totals cross
(rows and columns of a 2-D table) or whose p-table has no grid of at most
``MAX_GRID`` segments are left to the routes that multiply the entries' probabilities
(and say so in ``attrs["approximation"]``).
"""

from __future__ import annotations

import numpy as np

from kernels import key_sums as ks

from ..protocol import Cost, Route, RouteResult
from .line import _logsumexp

__all__ = ["MAX_GRID", "KeyIntegration"]

#: the finest grid of the p-table's interval ends the route works on
MAX_GRID = 100_000

#: coefficients a call may combine before ``auto`` passes the route over (about 1e9 a
#: second with NumPy on one core)
_MAX_WORK = 3e10
#: polynomial coefficients combined per second (benchmarks/route_seconds.py)
_COEFFS_PER_SECOND = 1e8


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(x, 0.0))


def _normalised(P, A, ls):
    """Scale each running sum's arrays to a largest coefficient of 1 (into ``ls``)."""
    scale = np.maximum(np.abs(P).reshape(P.shape[0], -1).max(axis=1), np.abs(A))
    ok = scale > 0
    safe = np.where(ok, scale, 1.0)
    P = P / safe[:, None, None]
    A = A / safe
    with np.errstate(divide="ignore"):
        ls = np.where(ok, ls + np.log(safe), -np.inf)
    return P, A, ls


class _Total:
    """One published total and its cells: forward and backward chains over the cells."""

    def __init__(self, N, logw, x, a, b, tlo, ta, tb):
        self.N = N
        self.logw, self.x, self.a, self.b = logw, x, a, b      # (m, W) each
        self.tlo, self.ta, self.tb = int(tlo), ta, tb           # the total's window
        m, W = logw.shape
        cap = self.tlo + ta.size - 1
        lo = x[:, 0]
        self.Fo = np.concatenate([[0], np.cumsum(lo)]).astype(np.int64)
        L = [1]
        for j in range(m):
            L.append(max(min(L[-1] + W - 1, cap - int(self.Fo[j + 1]) + 1), 1))
        self.L = L
        self._forward()
        self._backward()

    # --- the two chains ------------------------------------------------------------------
    def _step(self, P, A, ls, j, L_out, forward):
        """Cell ``j`` added to every running sum: the forward measure (or the backward
        function one cell earlier), per target running sum."""
        N = self.N
        W = self.logw.shape[1]
        D = P.shape[-1] + 1
        outP = np.zeros((L_out, N, D))
        outA = np.zeros(L_out)
        terms = []
        for w in range(W):
            lw = self.logw[j, w]
            if not np.isfinite(lw):
                continue
            if forward:                        # source s -> target s + w
                src = np.arange(min(P.shape[0], L_out - w)) if L_out > w else np.arange(0)
                dst = src + w
            else:                              # target s <- source s + w
                dst = np.arange(L_out)
                dst = dst[dst + w < P.shape[0]]
                src = dst + w
            if src.size == 0:
                continue
            terms.append((w, src, dst, ls[src] + lw))
        if not terms:
            return outP, outA, np.full(L_out, -np.inf)
        best = np.full(L_out, -np.inf)
        for _, _, dst, l in terms:
            best[dst] = np.maximum(best[dst], l)
        for w, src, dst, l in terms:
            fin = np.isfinite(l)
            f = np.where(fin, np.exp(np.where(fin, l - np.where(fin, best[dst], 0.0), 0.0)),
                         0.0)
            if self.x[j, w] == 0:              # an empty cell: no key
                outP[dst, :, :P.shape[-1]] += f[:, None, None] * P[src]
                outA[dst] += f * A[src]
            elif forward:
                outP[dst] += f[:, None, None] * ks.shift_difference(
                    P[src], A[src], self.a[j, w], self.b[j, w])
            else:
                outP[dst] += f[:, None, None] * ks.shift_difference(
                    P[src], 0.0, -self.b[j, w], -self.a[j, w])
        return _normalised(outP, outA, best)

    def _forward(self):
        N = self.N
        P, A, ls = np.zeros((1, N, 1)), np.ones(1), np.zeros(1)
        self.F = [(P, A, ls)]
        for j in range(self.logw.shape[0]):
            P, A, ls = self._step(P, A, ls, j, self.L[j + 1], True)
            self.F.append((P, A, ls))

    def _window(self, j):
        """The total's key interval for each running sum of all the cells."""
        s = self.Fo[j] + np.arange(self.L[j]) - self.tlo
        ok = (s >= 0) & (s < self.ta.size)
        si = np.clip(s, 0, self.ta.size - 1)
        return np.where(ok, self.ta[si], -1), np.where(ok, self.tb[si], -1)

    def _backward(self):
        m = self.logw.shape[0]
        a, b = self._window(m)
        G = ks.indicator(self.N, a, b, (self.L[m],))
        ls = np.where(a >= 0, 0.0, -np.inf)
        self.G = [None] * (m + 1)
        self.G[m] = (G, ls)
        for j in range(m - 1, -1, -1):
            G, _, ls = self._step(G, np.zeros(G.shape[0]), ls, j, self.L[j], False)
            self.G[j] = (G, ls)
        G0, ls0 = self.G[0]
        self.log_z = float(ls0[0] + _log(G0[0, 0, 0]))

    # --- answers -------------------------------------------------------------------------
    def marginals(self) -> np.ndarray:
        """Per cell, the posterior of each window value."""
        m, W = self.logw.shape
        out = np.full((m, W), -np.inf)
        for j in range(m):
            P, A, lsF = self.F[j]
            G, lsG = self.G[j + 1]
            for w in range(W):
                if not np.isfinite(self.logw[j, w]):
                    continue
                src = np.arange(P.shape[0])
                src = src[src + w < G.shape[0]]
                if src.size == 0:
                    continue
                if self.x[j, w] == 0:
                    v = ks.inner(P[src], A[src], G[src + w])
                else:
                    h = ks.shift_difference(P[src], A[src], self.a[j, w], self.b[j, w])
                    v = ks.inner(h, 0.0, G[src + w])
                out[j, w] = self.logw[j, w] + _logsumexp(lsF[src] + lsG[src + w] + _log(v), 0)
        with np.errstate(under="ignore"):
            return np.exp(out - self.log_z)

    def total(self) -> tuple:
        """``(first sum, probabilities)`` of the total's posterior."""
        P, A, ls = self.F[-1]
        a, b = self._window(len(self.F) - 1)
        v = ks.mass(P, A, a, b)
        with np.errstate(under="ignore"):
            p = np.exp(ls + _log(v) - self.log_z)
        return int(self.Fo[-1]), p

    def sample(self, k: int, rng) -> np.ndarray:
        """``k`` exact draws of the cells (k, m): each cell from its distribution given the
        cells drawn before it (the forward measure so far against the backward chain)."""
        m, W = self.logw.shape
        N = self.N
        P, A = np.zeros((k, N, 1)), np.ones(k)
        s = np.zeros(k, dtype=np.int64)
        out = np.empty((k, m), dtype=np.int64)
        for j in range(m):
            G, lsG = self.G[j + 1]
            lp = np.full((k, W), -np.inf)
            for w in range(W):
                if not np.isfinite(self.logw[j, w]):
                    continue
                ok = s + w < G.shape[0]
                idx = np.where(ok, s + w, 0)
                if self.x[j, w] == 0:
                    v = ks.inner(P, A, G[idx])
                else:
                    v = ks.inner(ks.shift_difference(P, A, self.a[j, w], self.b[j, w]), 0.0,
                                 G[idx])
                lp[:, w] = np.where(ok, self.logw[j, w] + lsG[idx] + _log(v), -np.inf)
            g = lp - lp.max(axis=1, keepdims=True)
            c = np.cumsum(np.exp(g), axis=1)
            pick = np.minimum((c < rng.random((k, 1)) * c[:, -1:]).sum(axis=1), W - 1)
            out[:, j] = self.x[j, pick]
            empty = self.x[j, pick] == 0
            h = ks.shift_difference(P, A, np.where(empty, 0, self.a[j, pick]),
                                    np.where(empty, 1, self.b[j, pick]))
            P = np.where(empty[:, None, None], ks.grow(P, h.shape[-1] - 1), h)
            A = np.where(empty, A, 0.0)
            sc = np.maximum(np.abs(P).reshape(k, -1).max(axis=1), np.abs(A))
            sc = np.where(sc > 0, sc, 1.0)
            P, A = P / sc[:, None, None], A / sc
            s = s + pick
        return out


def _count_total(N, fin, x, a, b, tlo, ta, tb) -> int:
    """Cell vectors of one total with positive likelihood (and prior weight ``fin``).

    The keys of the nonempty cells sum to every point of ``(sum a, sum b) / N`` (each key
    ranges over its open interval), so the total's key can land in ``[A/N, B/N)`` with
    positive probability exactly when the arc of segments ``sum a .. sum b - 1`` (the whole
    circle once ``sum (b - a) >= N``) meets ``A .. B - 1``; with every cell empty the key is
    0.  A chain over the cells counts, per running sum, start of the arc and its length
    (capped at ``N``), in Python integers."""
    m, W = x.shape
    states = {(0, -1, 0): 1}                  # (running sum, arc start or -1: no key, length)
    for j in range(m):
        nxt: dict = {}
        for (s, st, ln), c in states.items():
            for w in range(W):
                if not fin[j, w]:
                    continue
                v = int(x[j, w])
                if v == 0:
                    key = (s, st, ln)
                else:
                    L = int(b[j, w] - a[j, w])
                    key = ((s + v, int(a[j, w]) % N, min(L, N)) if st < 0 else
                           (s + v, (st + int(a[j, w])) % N, min(ln + L, N)))
                if key[0] - tlo >= ta.size:
                    continue
                nxt[key] = nxt.get(key, 0) + c
        states = nxt
    total = 0
    for (s, st, ln), c in states.items():
        t = s - tlo
        if t < 0 or t >= ta.size or ta[t] < 0:
            continue
        A, B = int(ta[t]), int(tb[t])
        if st < 0:
            ok = A == 0 and B > 0
        elif ln >= N:
            ok = B > A
        else:                                 # arc st .. st + ln - 1 (mod N) meets A .. B - 1
            d = (A - st) % N
            ok = d < ln or (st - A) % N < B - A
        total += c if ok else 0
    return total


def _structure(plan):
    """``(ki, keep, why)``: the key intervals and the one published total's dims, or why
    the route does not apply."""
    if "key_intervals" not in plan.inputs:
        return None, None, ("the key integration needs the p-table's key intervals (the cell "
                            "key method)")
    ki = plan.inputs["key_intervals"]
    if ki.N is None:
        return ki, None, ki.why
    totals = ki.totals
    if not totals:
        return ki, None, ("no published total holds other records than a cell: the "
                          "entries' probabilities multiply exactly (the line route)")
    if len(totals) > 1:
        return ki, None, (f"a cell is in more than one of the published totals {totals} "
                          "(they nest or cross): the key integration covers one set of "
                          "disjoint totals")
    return ki, totals[0], None


class KeyIntegration(Route):
    """Exact route of the cell key method for tables whose published totals are disjoint
    sums of cells (a 1-D table and its total; a 2-D table with its grand total, or with
    the totals of one dim): the likelihood integrated over the record keys.

    Reads ``plan.inputs["key_intervals"]`` (each entry's key interval for each original
    in its window, on the p-table's grid).
    """

    name = "keys"
    reads = "key_intervals"
    #: counts under the likelihood integrated over the keys (not the entries' product)
    integrates_keys = True
    needs = ("the p-table's key intervals on a grid; a table whose published totals are "
             "disjoint sums of cells")

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or release.groups:
            return "the key integration needs a count table without subtotals"
        return _structure(plan)[2]

    def _shape(self, plan):
        ki, keep, _ = _structure(plan)
        lo = ki.lo[plan.release.dims]
        W = ki.a[plan.release.dims].shape[-1]
        groups = int(np.prod(np.shape(ki.lo[keep]), dtype=np.int64))
        m = lo.size // max(groups, 1)
        S = min(m * (W - 1) + 1, ki.a[keep].shape[-1] + m * (W - 1))
        return ki.N, m, W, S, groups

    def estimate(self, plan, what="posterior"):
        N, m, W, S, groups = self._shape(plan)
        if what == "count":
            states = float(S) * N * min(N, m * N) + 1
            return Cost(200.0 * states, f"{S} running sums x {N} arc starts x {N} lengths",
                        "" if states * W * m < 1e7 else
                        f"about {states * W * m:.2g} states to count",
                        seconds=states * W * m / 1e7)
        D = m + 2                            # the largest degree; about half on average
        stored = 8.0 * 2 * (m + 1) * S * N * D / 2
        Dm = m / 2 + 2
        work = float(groups) * m * W * S * N * (3 * Dm + Dm * Dm)
        too_long = (f"about {work:.2g} polynomial coefficients to combine ({m} cells a "
                    f"total, {S} running sums, a grid of {N})" if work > _MAX_WORK else "")
        return Cost(stored, f"{m} cells x {S} running sums x {N} grid segments x degree {D}",
                    too_long, seconds=0.01 + work / _COEFFS_PER_SECOND)

    def _groups(self, plan):
        release = plan.release
        ki, keep, _ = _structure(plan)
        dims = release.dims
        lo = ki.lo[dims]
        W = ki.a[dims].shape[-1]
        x = lo[..., None] + np.arange(W)
        with np.errstate(invalid="ignore"):
            logw = plan.prior.log_weights(x, dims, release.coords)
        logw = np.where(ki.a[dims] >= 0, logw, -np.inf)
        logw = np.where(np.isnan(logw), -np.inf, logw)
        axes = [i for i, d in enumerate(dims) if d not in keep]
        kept = [i for i, d in enumerate(dims) if d in keep]
        perm = kept + axes
        kshape = tuple(release.shape[i] for i in kept)
        inv = np.argsort(perm)

        def cells(arr):                       # (groups, m, W) in the total's order
            t = np.transpose(arr, perm + [len(dims)])
            return t.reshape((int(np.prod(kshape, dtype=np.int64)), -1, arr.shape[-1]))

        lw_g, x_g, a_g, b_g = (cells(v) for v in (logw, x, ki.a[dims], ki.b[dims]))
        tlo = np.asarray(ki.lo[keep]).reshape(-1)
        ta = np.asarray(ki.a[keep]).reshape(tlo.size, -1)
        tb = np.asarray(ki.b[keep]).reshape(tlo.size, -1)
        return ki, keep, lo, W, perm, inv, kshape, (lw_g, x_g, a_g, b_g, tlo, ta, tb)

    def count(self, plan):
        ki, *_, (lw_g, x_g, a_g, b_g, tlo, ta, tb) = self._groups(plan)
        n = 1
        for g in range(tlo.size):
            n *= _count_total(ki.N, np.isfinite(lw_g[g]), x_g[g], a_g[g], b_g[g], tlo[g],
                              ta[g], tb[g])
        return n

    def run(self, plan, *, count=True):
        release = plan.release
        dims = release.dims
        ki, keep, lo, W, perm, inv, kshape, (lw_g, x_g, a_g, b_g, tlo, ta, tb) = \
            self._groups(plan)
        tshape = tuple(release.shape[i] for i in perm)
        parts = []
        for g in range(tlo.size):
            if plan.progress is not None:
                plan.progress(g, tlo.size)
            parts.append(_Total(ki.N, lw_g[g], x_g[g], a_g[g], b_g[g], tlo[g], ta[g], tb[g]))
        log_z = float(sum(p.log_z for p in parts))
        if not np.isfinite(log_z):
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        probs = np.stack([p.marginals() for p in parts])         # (groups, m, W)
        probs = np.transpose(probs.reshape(tshape + (W,)), list(inv) + [len(dims)])
        tot = [p.total() for p in parts]
        TW = max(q.size for _, q in tot)
        tstart = np.array([s for s, _ in tot], dtype=np.int64).reshape(kshape)
        tprobs = np.array([np.pad(q, (0, TW - q.size)) for _, q in tot]).reshape(kshape + (TW,))
        start, q = int(tstart.sum()), np.ones(1)
        for _, qq in tot:                    # the totals are independent of one another
            q = np.convolve(q, qq)
        shape = release.shape

        def canon(k):
            return tuple(d for d in k if shape[dims.index(d)] > 1)

        def block(k):
            return tuple(shape[dims.index(d)] for d in k)

        totals = {}
        for k in {tuple(keep), (), *release.margins}:
            if canon(k) == canon(keep):          # the same records as the published total
                totals[k] = (tstart.reshape(block(k)), tprobs.reshape(block(k) + (TW,)))
            elif canon(k) == canon(dims):        # the same records as the cells
                totals[k] = (lo.reshape(block(k)), probs.reshape(block(k) + (W,)))
            elif k == ():
                totals[k] = (np.array(start), q)

        def sampler(k, rng):
            draws = np.stack([p.sample(k, rng) for p in parts], axis=1)   # (k, groups, m)
            return np.transpose(draws.reshape((k,) + tshape), [0] + [1 + i for i in inv])

        n = self.count(plan) if count else None
        return RouteResult(start=lo, probs=probs, log_evidence=log_z, n_candidates=n,
                           totals=totals, sampler=sampler, notes={"key_grid": int(ki.N)})
