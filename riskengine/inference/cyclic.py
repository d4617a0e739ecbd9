"""Cyclic perturbation in group form: the problem both cyclic routes solve.

Cells whose rows of the cycle matrix are identical (same cycles, same signs) form one
*group*: they move together, so one integer offset per group is the whole state.  For a
sign vector e the candidate original is ``T = P - sum_k e_k C_k``; a cell of group g has
``T_c = P_c - o_g`` with ``o_g = sum_k R[g, k] e_k``.  The prior enters as one log factor
per group and offset; uncovered cells are fixed at their published value.

Routes: :mod:`.cyclic_structured` (sum-product on a clique tree over the cycle signs) and
:mod:`.cyclic_enumerate` (Numba streaming enumeration of all sign vectors).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels.elimination import max_clique_size

from ..table import default_margins
from ..protocol import RouteResult
from ._plan import prepared

__all__ = ["CyclicProblem", "build", "problem", "tables_from_signs", "to_result"]

RULES = ("negative", "any_zero")


@dataclass
class CyclicProblem:
    P: np.ndarray          # published, int64, table shape
    R: np.ndarray          # (G, m) cycle coefficients of each covered group
    cell_group: np.ndarray  # (ncells,) group of each cell, -1 if uncovered
    pmin: np.ndarray       # (G,) smallest published value in the group
    logF: np.ndarray       # (G, W) group log prior factor at offset o (index o + K)
    K: int
    const: float           # log prior of uncovered cells (fixed at their published value)
    alpha: float
    beta: float
    gamma: float
    rule: int
    empty: bool
    #: totals the release does not publish: {dims kept: (published sums, (entries, m)
    #: coefficients of each cycle in each entry)}; total = published sum - coef . e
    totals: dict = None
    _width: int | None = None
    #: the enumerator's kernel tables of this problem (prepared once, kept for the call)
    kernel_tables: dict = field(default_factory=dict)

    @property
    def m(self) -> int:
        return self.R.shape[1]

    @property
    def G(self) -> int:
        return self.R.shape[0]

    def scopes(self):
        return [tuple(np.nonzero(r)[0].tolist()) for r in self.R]

    def cycle_groups(self, k):
        return np.nonzero(self.R[:, k])[0]

    def cycle_scope(self, k):
        later = set()
        for g in self.cycle_groups(k):
            later.update(j for j in np.nonzero(self.R[g])[0].tolist() if j > k)
        return tuple(sorted({k} | later))

    def total_scopes(self):
        """Scopes of the unpublished totals' entries (cycles with a nonzero coefficient)."""
        return [tuple(np.nonzero(row)[0].tolist()) for _, (_, coef) in (self.totals or {}).items()
                for row in coef]

    def all_scopes(self):
        return self.scopes() + [self.cycle_scope(k) for k in range(self.m)] + \
            [s for s in self.total_scopes() if s]

    def width(self) -> int:
        if self._width is None:
            self._width = max_clique_size(self.all_scopes(), list(range(self.m)))
        return self._width




def _unpublished_totals(mech, release, P) -> dict:
    """The totals of the table's structure the release does not publish, as published sums
    and cycle coefficients (DESIGN: their posteriors too)."""
    out = {}
    cyc = mech.cycles
    for keep in default_margins(release.dims):
        if keep in release.margins:
            continue
        axes = tuple(i for i, d in enumerate(release.dims) if d not in keep)
        pub = np.asarray(P.sum(axis=axes))
        coef = cyc.sum(axis=tuple(a + 1 for a in axes)).reshape(cyc.shape[0], -1).T
        out[keep] = (pub, coef.astype(np.int64))
    return out


def build(mech, release, prior) -> CyclicProblem:
    """The group form of a cyclic release under ``prior`` (``mech``: the mechanism)."""
    P = np.asarray(release.published).astype(np.int64)
    pb = _build(mech, P, release.dims, release.coords, prior.log_weights)
    pb.totals = _unpublished_totals(mech, release, P)
    return pb


def problem(plan) -> CyclicProblem:
    """:func:`build` once per call (the resolver and the route ask for it in turn)."""
    return prepared(plan, "cyclic", lambda: build(plan.release.mechanism, plan.release,
                                             plan.prior))


def _build(mech, P, dims, coords, log_weights) -> CyclicProblem:
    m = mech.m
    A = mech.cycles.reshape(m, -1).T
    rows, inv = np.unique(A, axis=0, return_inverse=True)
    inv = inv.ravel()
    covered = np.any(rows != 0, axis=1)
    gid = np.full(len(rows), -1)
    gid[covered] = np.arange(int(covered.sum()))
    cell_group = gid[inv]
    R = rows[covered]
    G = R.shape[0]
    K = int(np.abs(R).sum(axis=1).max())
    W = 2 * K + 1
    Pf = P.ravel()
    values = (Pf - K)[:, None] + np.arange(W)
    lw = log_weights(values.reshape(P.shape + (W,)), dims, coords)
    lw = lw.reshape(Pf.size, W)
    cov = cell_group >= 0
    logF = np.zeros((G, W))
    np.add.at(logF, cell_group[cov], lw[cov, ::-1])
    pmin = np.full(G, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(pmin, cell_group[cov], Pf[cov])
    const = float(lw[~cov, K].sum()) if (~cov).any() else 0.0
    empty = (not np.isfinite(const)) or bool(np.any(~np.isfinite(logF).any(axis=1)))
    return CyclicProblem(P=P, R=R, cell_group=cell_group, pmin=pmin, logF=logF, K=K,
                         const=const, alpha=mech.alpha, beta=mech.beta, gamma=mech.gamma,
                         rule=RULES.index(mech.rule), empty=empty)


def point_mass(mech, release, original) -> CyclicProblem:
    """The group form with all prior mass on ``original`` (the likelihood of one table)."""
    t = np.asarray(original)

    def log_weights(values, dims, coords):
        return np.where(values == t[..., None], 0.0, -np.inf)

    return _build(mech, np.asarray(release.published).astype(np.int64), release.dims,
                  release.coords, log_weights)


def tables_from_signs(P, e: np.ndarray, cycles) -> np.ndarray:
    """The original tables ``T = P - sum_k e_k C_k`` of sign vectors ``e`` (n, m): int64
    (n, *P.shape), cycle by cycle over the few cells each cycle touches (a dense product
    would touch every cell m times per draw)."""
    P = np.asarray(P, dtype=np.int64)
    C = np.asarray(cycles, dtype=np.int64).reshape(len(cycles), -1)
    e = np.asarray(e, dtype=np.int64)
    n = e.shape[0]
    out = np.empty((P.size, n), np.int64)        # cell-major: a cycle's cells are rows
    out[:] = P.reshape(-1, 1)
    for k in range(C.shape[0]):
        for c in np.flatnonzero(C[k]):
            out[c] -= C[k, c] * e[:, k]
    return np.moveaxis(out.reshape(P.shape + (n,)), -1, 0)


def to_result(pb: CyclicProblem, res: dict, sampler=None) -> RouteResult:
    """The route's result from its group pmfs (``sampler``: its whole-table draws)."""
    K, W = pb.K, 2 * pb.K + 1
    shape = pb.P.shape
    Pf = pb.P.ravel()
    probs = np.zeros((Pf.size, W))
    cov = pb.cell_group >= 0
    probs[cov] = res["group_pmf"][pb.cell_group[cov], ::-1]
    probs[~cov, K] = 1.0
    start = Pf - K
    for sh in range(1, K + 1):  # windows start at 0 at the lowest: negative values have no mass
        rows = start == -sh
        probs[rows] = np.concatenate([probs[rows, sh:], np.zeros((int(rows.sum()), sh))], axis=1)
    start = np.maximum(start, 0).reshape(shape)
    totals = {}
    for keep, (pub, pmf) in res.get("totals", {}).items():
        Kt = (pmf.shape[-1] - 1) // 2          # pmf over offsets -Kt..Kt; total = pub - o
        lo = np.asarray(pub).reshape(-1) - Kt
        tp = pmf[:, ::-1]
        tshape = np.shape(pub)
        totals[keep] = (lo.reshape(tshape), tp.reshape(tshape + (pmf.shape[-1],)))
    note = res.get("note", "")
    if pb.totals and "totals" not in res:
        note = (note + "; " if note else "") + (
            "posteriors of the unpublished totals are computed by the structured route")
    return RouteResult(start=start, probs=probs.reshape(shape + (W,)),
                       log_evidence=res["log_evidence"], n_candidates=res["n_candidates"],
                       notes={"n_candidates_note": note} if note else {}, totals=totals,
                       sampler=sampler)
