"""Seed 001's resampling mechanisms on whole tables, by brute force from the definitions
(DESIGN.md, "Bootstrap (Heer) and binomial perturbation"); no riskengine code is called.

* Multinomial box probabilities: a sum of ``scipy.stats.multinomial.pmf`` over every
  outcome of the multinomial.
* The bootstrap release given an original x (n = its total): the M bootstrap tables are
  drawn, averaged and rounded (halves up); the draw is kept when every cell with x > 0 is
  within its quality interval, else regenerated, so the release law is the law of the
  rounded average restricted to the accepted outcomes and renormalised.
  :func:`bootstrap_law_from_tables` enumerates the M tables themselves (tiny cases);
  :func:`bootstrap_release_loglik` enumerates the outcomes of their sum, one
  multinomial(nM, x/n) table (the sum of M independent multinomial(n, x/n) tables;
  checked against the former in the tests).
* The binomial perturbation of one group with preserved total n: every first-stage
  table x' (truncated binomials) times the probability that the compensation stage,
  run as the seed describes it (one unit at a time, each cell chosen with probability
  proportional to its current counter), ends at the published table: a recursion over
  the stage's states.
* Posteriors: every table with the published totals, weighed by prior x likelihood.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy import stats
from scipy.special import gammaln, logsumexp

from .numerics import cell_posteriors, log_prior
from .resampling import quality_interval

__all__ = ["binomial_group_prob", "bootstrap_law_from_tables", "bootstrap_release_loglik",
           "compositions", "joint_posterior", "multinomial_box"]


@functools.lru_cache(maxsize=64)
def compositions(N: int, K: int) -> np.ndarray:
    """Every vector of K nonnegative integers summing to N (stars and bars), (O, K)."""
    if K == 0:
        return np.zeros((1 if N == 0 else 0, 0), np.int64)
    out = []
    for bars in itertools.combinations(range(N + K - 1), K - 1):
        edges = (-1,) + bars + (N + K - 1,)
        out.append([edges[i + 1] - edges[i] - 1 for i in range(K)])
    return np.array(out, dtype=np.int64).reshape(-1, K)


def multinomial_box(N, p, a, b) -> float:
    """Pr(a_k <= Y_k <= b_k for every k), Y ~ Multinomial(N, p): the multinomial pmf summed
    over every outcome in the box."""
    Y = compositions(int(N), len(p))
    inside = np.all((Y >= np.asarray(a)) & (Y <= np.asarray(b)), axis=1)
    if not inside.any():
        return 0.0
    return float(stats.multinomial.pmf(Y[inside], int(N), np.asarray(p, float)).sum())


def _round_half_up(num, den):
    """round(num / den) with halves up, in integers: floor((2 num + den) / (2 den))."""
    return (2 * num + den) // (2 * den)


def bootstrap_law_from_tables(x, M: int, S: float) -> dict:
    """``{published table (tuple): probability}`` of the bootstrap of ``x`` (flat), from the
    M bootstrap tables themselves: every M-tuple of multinomial(n, x/n) outcomes."""
    x = np.asarray(x, dtype=np.int64)
    n = int(x.sum())
    Y = compositions(n, len(x))
    pmf = stats.multinomial.pmf(Y, n, x / n)
    keep = pmf > 0
    Y, pmf = Y[keep], pmf[keep]
    q = [quality_interval(int(v), n, S) for v in x]
    acc = {}
    for combo in itertools.product(range(len(Y)), repeat=M):
        tot = Y[list(combo)].sum(axis=0)
        pub = _round_half_up(tot, M)
        if all(lo <= pub[c] <= hi for c, (lo, hi) in enumerate(q) if x[c] > 0):
            key = tuple(int(v) for v in pub)
            acc[key] = acc.get(key, 0.0) + float(np.prod(pmf[list(combo)]))
    z = sum(acc.values())
    return {k: v / z for k, v in acc.items()}


@functools.lru_cache(maxsize=16)
def _sum_outcomes(N: int, K: int, M: int):
    Y = compositions(N, K)
    return Y, gammaln(N + 1) - gammaln(Y + 1).sum(axis=1), _round_half_up(Y, M)


def bootstrap_release_loglik(P, x, M: int, S: float) -> float:
    """log Pr(published ``P`` | original ``x``) (flat), through the outcomes of the sum
    Y ~ multinomial(nM, x/n) of the M tables: the pmf over the accepted outcomes that
    round to P, over the pmf of every accepted outcome."""
    P, x = np.asarray(P, dtype=np.int64), np.asarray(x, dtype=np.int64)
    n = int(x.sum())
    pos = x > 0
    if np.any(P[~pos] != 0):
        return -math.inf                        # zeros stay zero
    q = np.array([quality_interval(int(v), n, S) for v in x[pos]]).reshape(-1, 2)
    if np.any((P[pos] < q[:, 0]) | (P[pos] > q[:, 1])):
        return -math.inf
    Y, lfac, pub = _sum_outcomes(n * M, int(pos.sum()), M)
    accept = np.all((pub >= q[:, 0]) & (pub <= q[:, 1]), axis=1)
    logpmf = lfac + Y @ np.log(x[pos] / n)
    hit = accept & np.all(pub == P[pos], axis=1)
    if not hit.any():
        return -math.inf
    return float(logsumexp(logpmf[hit]) - logsumexp(logpmf[accept]))


def binomial_group_prob(z, x, S: float) -> float:
    """Pr(published ``z`` | original ``x``) for one group of cells whose total n = sum x is
    preserved: truncated binomial first stage, then the compensation stage step by step."""
    z, x = tuple(int(v) for v in z), tuple(int(v) for v in x)
    n = sum(x)
    K = len(x)
    if any(z[c] != 0 for c in range(K) if x[c] == 0) or sum(z) != n:
        return 0.0
    pos = [c for c in range(K) if x[c] > 0]
    q = {c: quality_interval(x[c], n, S) for c in pos}
    if any(not q[c][0] <= z[c] <= q[c][1] for c in pos):
        return 0.0
    tb = {}
    for c in pos:
        vals = np.arange(q[c][0], q[c][1] + 1)
        pm = stats.binom.pmf(vals, n, x[c] / n)
        tb[c] = dict(zip(vals.tolist(), (pm / pm.sum()).tolist()))

    @functools.cache
    def reach(t):
        """Pr(the compensation stage, started at table t, ends at z)."""
        D = sum(t) - n
        if D == 0:
            return 1.0 if t == z else 0.0
        # cells only go down while D > 0 and only up while D < 0: z out of reach
        if any((t[c] < z[c]) if D > 0 else (t[c] > z[c]) for c in range(K)):
            return 0.0
        # the first counter is value - l(x) (units can still be removed), the second u(x) - value
        room = [0 if c not in q else (t[c] - q[c][0]) if D > 0 else (q[c][1] - t[c])
                for c in range(K)]
        R = sum(room)
        step = -1 if D > 0 else 1
        acc = 0.0
        for c in range(K):
            if room[c] > 0:
                nxt = list(t)
                nxt[c] += step
                acc += room[c] / R * reach(tuple(nxt))
        return acc

    total = 0.0
    for first in itertools.product(*[range(q[c][0], q[c][1] + 1) for c in pos]):
        t = [0] * K
        for c, v in zip(pos, first):
            t[c] = v
        w = math.prod(tb[c][t[c]] for c in pos)
        total += w * reach(tuple(t))
    return total


def _tables_with_totals(groups, total_by_group, ncell) -> np.ndarray:
    """Every nonnegative flat table whose groups of cells have the given totals."""
    parts = [compositions(int(t), len(g)) for g, t in zip(groups, total_by_group)]
    out = []
    for combo in itertools.product(*[range(len(p)) for p in parts]):
        T = np.zeros(ncell, np.int64)
        for g, p, i in zip(groups, parts, combo):
            T[list(g)] = p[i]
        out.append(T)
    return np.array(out, dtype=np.int64).reshape(-1, ncell)


def joint_posterior(P, shape, mechanism: dict, spec: dict, totals_wanted=()) -> dict:
    """The exact posterior by brute force: ``{"cells": {idx: {value: p}}, "totals": {axes
    summed: {idx: {value: p}}}, "log_z", "count"}`` (count 0: nothing consistent).

    ``mechanism``: ``{"kind": "bootstrap", "M", "S", "n"}`` or ``{"kind": "binomial", "S",
    "preserve", "n", "rows", "cols"}`` (the published totals); ``spec``: the prior for
    :func:`tests.reference.numerics.log_prior`; ``totals_wanted``: tuples of the axes each
    unpublished total sums over."""
    P = np.asarray(P, dtype=np.int64).reshape(shape)
    ncell = int(np.prod(shape))
    idx = np.arange(ncell).reshape(shape)
    kind = mechanism["kind"]
    preserve = mechanism.get("preserve", "total")
    if kind == "bootstrap" or preserve == "total":
        groups, tots = [idx.ravel().tolist()], [mechanism["n"]]
    elif preserve == "rows":
        groups, tots = [idx[i].tolist() for i in range(shape[0])], list(mechanism["rows"])
    else:
        groups, tots = [idx[:, j].tolist() for j in range(shape[1])], list(mechanism["cols"])
    T = _tables_with_totals(groups, tots, ncell)
    lp = log_prior(spec, T.reshape((-1,) + tuple(shape)))
    logw = np.full(len(T), -math.inf)
    Pf = P.ravel()
    for i in np.flatnonzero(np.isfinite(lp)):
        if kind == "bootstrap":
            ll = bootstrap_release_loglik(Pf, T[i], mechanism["M"], mechanism["S"])
        else:
            pr = math.prod(binomial_group_prob(Pf[g], T[i][g], mechanism["S"]) for g in groups)
            ll = math.log(pr) if pr > 0 else -math.inf
        logw[i] = lp[i] + ll
    Ts = T.reshape((-1,) + tuple(shape))
    cells, logz, count = cell_posteriors(Ts, logw)
    out = {"cells": cells, "log_z": logz, "count": count, "totals": {}}
    if count:
        keep = np.isfinite(logw)
        w = np.exp(logw[keep] - logz)
        for axes in totals_wanted:
            S_ = Ts[keep].sum(axis=tuple(a + 1 for a in axes))
            d = {}
            for j in np.ndindex(*S_.shape[1:]):
                vals = S_[(slice(None), *j)]
                d[j] = {int(v): float(w[vals == v].sum()) for v in np.unique(vals)}
            out["totals"][tuple(axes)] = d
    return out
