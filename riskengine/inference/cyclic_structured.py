"""The cyclic structured route: exact sum-product over the cycle signs on a clique tree.

One factor per group (its prior, as a function of the signs of its cycles) and one per
cycle (the coin with its blocking rule, a function of the signs of the cycles that share a
group with it and come later); variable elimination in log space.  Linear in the number
of cycles when the cycle-interaction graph is narrow (the diagonal design is a ring).
Distinct tables are counted by the count semiring, with inclusion-exclusion over the
shifts of a one-dimensional null lattice.
"""

from __future__ import annotations

import numpy as np

from kernels import cyclic_enum
from kernels.elimination import CliqueTree, elimination_order

from ..protocol import Cost, Route
from . import lattice
from .cyclic import CyclicProblem, problem, tables_from_signs, to_result
from .cyclic_enumerate import enumerate_signs

__all__ = ["MAX_WIDTH", "CyclicStructured", "structured"]

#: widest clique (in cycles) the structured route takes on: 3^9 entries per table
MAX_WIDTH = 9

def _grid(scope):
    """e-values (-1, 0, 1) of each variable of ``scope`` on the scope's grid."""
    n = len(scope)
    return {v: (np.arange(3) - 1).reshape([3 if i == j else 1 for j in range(n)])
            for i, v in enumerate(scope)}


def _factors(pb: CyclicProblem):
    """Log factors (scope, table): one per group (prior), one per cycle (coin)."""
    K = pb.K
    out = []
    for g, scope in enumerate(pb.scopes()):
        E = _grid(scope)
        o = sum(int(pb.R[g, j]) * E[j] for j in scope)
        out.append((scope, pb.logF[g][o + K]))
    for k in range(pb.m):
        scope = pb.cycle_scope(k)
        E = _grid(scope)
        shape = (3,) * len(scope)
        bu = np.zeros(shape, bool)
        bd = np.zeros(shape, bool)
        bad = np.zeros(shape, bool)
        for g in pb.cycle_groups(k):
            o = sum(int(pb.R[g, j]) * E[j] for j in np.nonzero(pb.R[g])[0].tolist() if j >= k)
            zero = np.broadcast_to(o == pb.pmin[g], shape)
            bad |= np.broadcast_to(o > pb.pmin[g], shape)
            if pb.rule == cyclic_enum.ANY_ZERO:
                bu |= zero
                bd |= zero
            elif pb.R[g, k] < 0:
                bu |= zero
            else:
                bd |= zero
        ek = np.broadcast_to(E[k], shape)
        q = np.where(ek == 1, pb.alpha * ~bu,
                     np.where(ek == -1, pb.beta * ~bd,
                              pb.gamma + pb.alpha * bu + pb.beta * bd))
        q = np.where(bad, 0.0, q)
        with np.errstate(divide="ignore"):
            out.append((scope, np.log(q)))
    return out


def _count_shifted(factors, order, m, z, shifts):
    """sum_e prod_s [e - s z in box and valid] by the count semiring on the clique tree."""
    dom = {}
    for k in range(m):
        d = [x for x in (-1, 0, 1) if all(-1 <= x - s * z[k] <= 1 for s in shifts)]
        if not d:
            return 0
        dom[k] = np.array(d)
    cf = []
    for scope, table in factors:
        ind = np.isfinite(table)
        acc = None
        for s in shifts:
            idx = np.ix_(*[dom[v] - s * z[v] + 1 for v in scope])
            part = ind[idx]
            acc = part if acc is None else acc & part
        cf.append((scope, acc.astype(np.int64).astype(object)))
    tree = CliqueTree(cf, {k: len(dom[k]) for k in range(m)}, "count", order=order)
    return int(tree.calibrate(downward=False))


def structured(pb: CyclicProblem, count: bool = True, marginals: bool = True, progress=None) -> dict:
    m, K, W = pb.m, pb.K, 2 * pb.K + 1
    factors = _factors(pb)
    sizes = {k: 3 for k in range(m)}
    # the unpublished totals' scopes join the tree (as flat factors) so that each lies in
    # a clique and its marginal can be read off
    tscopes = [sc for sc in pb.total_scopes() if sc] if marginals else []
    tfactors = [(sc, np.zeros((3,) * len(sc))) for sc in tscopes]
    order = elimination_order([s for s, _ in factors + tfactors], list(range(m)))
    out = {"note": ""}
    if marginals:
        tree = CliqueTree(factors + tfactors, sizes, "log", order=order)
        logz = float(tree.calibrate(downward=True))
        if not np.isfinite(logz):
            raise ValueError("no original table is consistent with this release under this prior")
        gp = np.zeros((pb.G, W))
        for g, scope in enumerate(pb.scopes()):
            vars_, lm = tree.marginal(scope)
            E = _grid(vars_)
            o = np.broadcast_to(sum(int(pb.R[g, j]) * E[j] for j in vars_), lm.shape)
            np.add.at(gp[g], (o + K).ravel(), np.exp(lm).ravel())
            if progress is not None:
                progress(g + 1, pb.G)
        gp /= gp.sum(axis=1, keepdims=True)
        out.update(group_pmf=gp, log_evidence=logz + pb.const)
        if pb.totals:
            out["totals"] = {keep: (pub, _total_pmf(tree, coef))
                             for keep, (pub, coef) in pb.totals.items()}
    out["n_candidates"] = None
    if count:
        z = lattice.rank1_generator(pb.R)
        nul = lattice.nullity(pb.R)
        if nul == 0:
            out["n_candidates"] = _count_shifted(factors, order, m, np.zeros(m, int), [0])
        elif z is not None:
            c = 0
            for shifts, sign in (([0], 1), ([0, 1], -1), ([0, 2], -1), ([0, 1, 2], 1)):
                c += sign * _count_shifted(factors, order, m, z, shifts)
            out["n_candidates"] = c
        elif m <= 16:
            out["n_candidates"] = enumerate_signs(pb, count=True)["n_candidates"]
        else:
            out["note"] = (f"the cycles' null space has dimension {nul}; distinct tables are "
                           "counted only for dimension <= 1 here (or m <= 16 by enumeration)")
    return out


def _total_pmf(tree, coef) -> np.ndarray:
    """Per total entry, the posterior of its offset o = coef . e on -Kt..Kt (index o + Kt)."""
    Kt = int(np.abs(coef).sum(axis=1).max(initial=0))
    out = np.zeros((coef.shape[0], 2 * Kt + 1))
    for t, row in enumerate(coef):
        scope = tuple(np.nonzero(row)[0].tolist())
        if not scope:
            out[t, Kt] = 1.0
            continue
        vars_, lm = tree.marginal(scope)
        E = _grid(vars_)
        o = np.broadcast_to(sum(int(row[j]) * E[j] for j in vars_), lm.shape)
        np.add.at(out[t], (o + Kt).ravel(), np.exp(lm).ravel())
        out[t] /= out[t].sum()
    return out


def sample_tables(pb: CyclicProblem, cycles, n: int, rng) -> np.ndarray:
    """``n`` exact posterior draws of the original table: sign vectors by backward sampling
    on the clique tree, then ``T = P - sum_k e_k C_k``."""
    factors = _factors(pb)
    order = elimination_order([s for s, _ in factors], list(range(pb.m)))
    tree = CliqueTree(factors, {k: 3 for k in range(pb.m)}, "log", order=order)
    tree.calibrate(downward=False)
    draw = tree.sample(n, rng)
    e = np.stack([draw[k] - 1 for k in range(pb.m)], axis=1)           # (n, m) in -1..1
    return tables_from_signs(pb.P, e, cycles)


class CyclicStructured(Route):
    """Sum-product on a clique tree (cycle-interaction width up to :data:`MAX_WIDTH`)."""

    name = "structured"
    needs = (f"the cycle set and its coin (alpha, beta); a cycle-interaction graph of width "
             f"<= {MAX_WIDTH}")

    def applies(self, plan):
        w = problem(plan).width()
        if w > MAX_WIDTH:
            return (f"the cycle-interaction graph has width {w} (the structured route takes "
                    f"<= {MAX_WIDTH})")
        return None

    def estimate(self, plan, what="posterior"):
        pb = problem(plan)
        w = pb.width()
        # clique tables of 3^w sign patterns, each combined with its groups' histograms
        work = float(3 ** w * (pb.m + pb.G) * (2 * pb.K + 1))
        return Cost(float(8 * 3 ** w * (pb.m + pb.G) * 3), f"clique tables of width {w}",
                    seconds=2e-3 + work / 1e8)

    def run(self, plan, *, count=True):
        release, progress = plan.release, plan.progress
        pb = problem(plan)
        if pb.empty:
            raise ValueError("no original table is consistent with this release under this "
                             "prior (every candidate has zero prior weight)")
        cycles = release.mechanism.cycles
        return to_result(pb, structured(pb, count=count, progress=progress),
                         sampler=lambda n, rng: sample_tables(pb, cycles, n, rng))

    def count(self, plan):
        pb = problem(plan)
        if pb.empty:
            return 0
        res = structured(pb, count=True, marginals=False)
        if res["n_candidates"] is None:
            raise ValueError(f"cannot count candidates exactly here: {res['note']}")
        return res["n_candidates"]
