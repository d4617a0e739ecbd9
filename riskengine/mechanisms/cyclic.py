"""Cyclic perturbation (Duncan & Roehrig, seed 003): protect, likelihood, exact inference.

Public parameters: cycles C_1..C_m (entries in {-1, 0, +1}, every published
margin zero), alpha, beta, gamma = 1 - alpha - beta, and the zero rule.

Protect: for k = 1..m in order draw A (alpha), B (beta) or C (gamma); A adds C_k,
B subtracts it, C does nothing; a blocked move leaves the table as it is.
``rule="negative"`` blocks a move that would make a cell negative;
``rule="any_zero"`` blocks both moves while any cell in the support of C_k is 0.

Likelihood: Pr(P | T) = sum over effective sign vectors e with
T + sum_k e_k C_k = P of prod_k q_k(e_k | S_{k-1}), with S_0 = T,
q(+1) = alpha [not blocked up], q(-1) = beta [not blocked down],
q(0) = gamma + alpha [blocked up] + beta [blocked down].  Linearly dependent
cycle sets reach one T by several e: all of them count.

Inference routes:

``"structured"``
    exact sum-product over the cycle signs on a clique tree (log space); linear
    in the number of cycles when the cycle-interaction graph is narrow (the
    diagonal design is a ring).
``"enumerate"``
    Numba streaming enumeration of all 3^m sign vectors with pruning
    (``kernels.cyclic_enum``), parallel over top-level branches.
``"auto"``
    structured when the largest clique has <= 9 cycles, else enumeration when
    m <= 24, else an error that says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels import cyclic_enum
from kernels.elimination import CliqueTree, elimination_order, max_clique_size

from .. import _lattice
from .. import _validate as V
from ..posterior import Posterior
from ..priors import Prior, Uniform
from . import Mechanism, register

RULES = ("negative", "any_zero")
ROUTES = ("auto", "structured", "enumerate")
_MAX_WIDTH = 9
_MAX_ENUM_CYCLES = 24


@register
class CyclicPerturbation(Mechanism):
    """Cyclic perturbation with a public cycle set and a three-sided coin.

    Parameters
    ----------
    cycles : array-like, shape (m, *table_shape)
        Entries in {-1, 0, +1}; every published margin of every cycle must be 0.
    alpha, beta : float
        Probabilities of adding (A) and subtracting (B) each cycle;
        gamma = 1 - alpha - beta.
    rule : {"negative", "any_zero"}
        Zero rule (see module docstring).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]),
    ...              dims=("v", "w"))
    >>> mech = rk.CyclicPerturbation(rk.cycles.diagonal(4), alpha=0.25, beta=0.25)
    >>> rel = mech.protect(t, rng=np.random.default_rng(1))
    >>> bool((rel.published.sum(axis=1) == t.values.sum(axis=1)).all())
    True
    """

    name = "cyclic"

    def __init__(self, cycles, alpha: float, beta: float, rule: str = "negative"):
        c = np.asarray(cycles)
        if c.ndim < 2:
            raise ValueError(f"cycles must have shape (m, *table_shape), got shape {c.shape}")
        if c.size == 0 or c.shape[0] == 0:
            raise ValueError("cycles must hold at least one cycle")
        if not np.issubdtype(c.dtype, np.integer):
            cf = c.astype(float)
            if not np.all(np.isfinite(cf)) or not np.all(cf == np.round(cf)):
                raise ValueError("cycle entries must be integers in {-1, 0, +1}")
        c = c.astype(np.int64)
        bad = ~np.isin(c, (-1, 0, 1))
        if bad.any():
            k = int(np.argwhere(bad)[0][0])
            raise ValueError(f"cycle {k} has entry {int(c[bad][0])}; entries must be -1, 0 or +1")
        for k in range(c.shape[0]):
            if not c[k].any():
                raise ValueError(f"cycle {k} is all zero")
        self.cycles = c
        self.cycles.setflags(write=False)
        self.alpha = V.probability(alpha, "alpha")
        self.beta = V.probability(beta, "beta")
        if self.alpha + self.beta > 1.0 + 1e-12:
            raise ValueError(f"alpha + beta must be <= 1, got alpha={self.alpha}, beta={self.beta}")
        self.gamma = max(0.0, 1.0 - self.alpha - self.beta)
        self.rule = V.choice(rule, "rule", RULES)

    @property
    def m(self) -> int:
        return self.cycles.shape[0]

    def _params(self) -> dict:
        return {"cycles": self.cycles.tolist(), "alpha": self.alpha, "beta": self.beta,
                "rule": self.rule}

    def describe(self) -> str:
        return (f"CyclicPerturbation(m={self.m}, alpha={self.alpha:g}, beta={self.beta:g}, "
                f"rule={self.rule!r})")

    # --- protect ------------------------------------------------------------------
    def _blocked(self, state: np.ndarray, k: int):
        c = self.cycles[k]
        if self.rule == "any_zero":
            z = bool(np.any(state[c != 0] == 0))
            return z, z
        return bool(np.any(state[c < 0] == 0)), bool(np.any(state[c > 0] == 0))

    def protect(self, table, rng: np.random.Generator):
        """Perturb ``table`` (an rk.Table of counts) and return the Release."""
        from ..release import Release
        table = self._count_table(table)
        self._check_shape(table.shape, table.dims, table.margins)
        state = self._simulate(table.values, self._rng(rng))
        return Release(published=state, margins=table.totals(), mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def _simulate(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The perturbed table (no validation): one uniform draw per cycle, in order."""
        state = np.array(values, dtype=np.int64)
        u = rng.random(self.m)
        for k in range(self.m):
            bu, bd = self._blocked(state, k)
            if u[k] < self.alpha:
                if not bu:
                    state += self.cycles[k]
            elif u[k] < self.alpha + self.beta and not bd:
                state -= self.cycles[k]
        return state

    # --- validation ---------------------------------------------------------------
    def _check_shape(self, shape, dims, margins):
        from .. import cycles as cyc
        cyc.check(self.cycles, shape, dims, margins)

    def validate_release(self, release) -> None:
        if release.kind != "count":
            raise ValueError("a cyclic-perturbation release must hold counts")
        if release.published is None:
            raise ValueError("a cyclic-perturbation release publishes the perturbed table "
                             "(published is None)")
        if np.isnan(np.asarray(release.published, dtype=float)).any():
            raise ValueError("a cyclic-perturbation release has no suppressed (NaN) cells")
        self._check_shape(release.shape, release.dims, release.structure or None)

    # --- likelihood -----------------------------------------------------------------
    def likelihood(self, release, original) -> float:
        """Pr(release | original): the sum over every sign vector that maps original to
        the published table of its path probability."""
        from ..table import Table
        t = original.values if isinstance(original, Table) else V.count_array(original, "original")
        if t.shape != release.shape:
            raise ValueError(f"original has shape {t.shape}, the release {release.shape}")
        pb = _build(self, release, _PointMass(t))
        if pb.empty:
            return 0.0
        route = "structured" if pb.width() <= _MAX_WIDTH else "enumerate"
        res = _structured(pb, count=False) if route == "structured" else _enumerate(pb)
        return float(np.exp(res["log_evidence"])) if res["log_evidence"] > -np.inf else 0.0

    # --- inference --------------------------------------------------------------------
    def posterior(self, release, prior: Prior, route: str = "auto", progress=None,
                  count: bool = True) -> Posterior:
        V.choice(route, "route", ROUTES)
        pb = _build(self, release, prior)
        route = _pick_route(pb, route)
        if pb.empty:
            raise ValueError("no original table is consistent with this release under this "
                             "prior (every candidate has zero prior weight)")
        res = (_structured(pb, count=count, progress=progress) if route == "structured"
               else _enumerate(pb, progress=progress, count=count))
        return _to_posterior(pb, res, release, prior, route, self)

    def count_candidates(self, release, prior: Prior | None = None, route: str = "auto") -> int:
        V.choice(route, "route", ROUTES)
        pb = _build(self, release, prior or Uniform())
        if pb.empty:
            return 0
        route = _pick_route(pb, route)
        res = _structured(pb, count=True, marginals=False) if route == "structured" \
            else _enumerate(pb, count=True)
        if res["n_candidates"] is None:
            raise RuntimeError(f"cannot count candidates exactly here: {res['note']}")
        return res["n_candidates"]


class _PointMass(Prior):
    """All prior mass on one table (used to evaluate the likelihood)."""

    name = "PointMass"

    def __init__(self, table):
        super().__init__()
        self.table = np.asarray(table)

    def _logpmf(self, values, shape):
        return np.where(values == self.table[..., None], 0.0, -np.inf)

    def _params(self):
        return {}


# --- the problem in group form ---------------------------------------------------------

@dataclass
class _Problem:
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

    def all_scopes(self):
        return self.scopes() + [self.cycle_scope(k) for k in range(self.m)]

    def width(self) -> int:
        return max_clique_size(self.all_scopes(), list(range(self.m)))


def _build(mech: CyclicPerturbation, release, prior: Prior) -> _Problem:
    P = np.asarray(release.published).astype(np.int64)
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
    lw = prior.log_weights(values.reshape(P.shape + (W,)), release.dims, release.coords)
    lw = lw.reshape(Pf.size, W)
    cov = cell_group >= 0
    logF = np.zeros((G, W))
    np.add.at(logF, cell_group[cov], lw[cov, ::-1])
    pmin = np.full(G, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(pmin, cell_group[cov], Pf[cov])
    const = float(lw[~cov, K].sum()) if (~cov).any() else 0.0
    empty = (not np.isfinite(const)) or bool(np.any(~np.isfinite(logF).any(axis=1)))
    return _Problem(P=P, R=R, cell_group=cell_group, pmin=pmin, logF=logF, K=K, const=const,
                    alpha=mech.alpha, beta=mech.beta, gamma=mech.gamma,
                    rule=RULES.index(mech.rule), empty=empty)


def _pick_route(pb: _Problem, route: str) -> str:
    if route != "auto":
        return route
    w = pb.width()
    if w <= _MAX_WIDTH:
        return "structured"
    if pb.m <= _MAX_ENUM_CYCLES:
        return "enumerate"
    raise ValueError(f"no exact route fits: the cycle-interaction graph has width {w} "
                     f"(structured route needs <= {_MAX_WIDTH}) and there are {pb.m} cycles "
                     f"(enumeration needs <= {_MAX_ENUM_CYCLES}); choose a narrower design")


# --- enumeration route --------------------------------------------------------------

def _kernel_arrays(pb: _Problem):
    m = pb.m
    cyc_ptr = np.zeros(m + 1, np.int64)
    grp, coef = [], []
    for k in range(m):
        gs = pb.cycle_groups(k)
        grp.extend(gs.tolist())
        coef.extend(pb.R[gs, k].tolist())
        cyc_ptr[k + 1] = len(grp)
    first = np.argmax(pb.R != 0, axis=1)
    order = np.argsort(first, kind="stable")
    fin_ptr = np.searchsorted(first[order], np.arange(m + 1)).astype(np.int64)
    fin_grp = order.astype(np.int64)
    return cyc_ptr, np.array(grp, np.int64), np.array(coef, np.int64), fin_ptr, fin_grp


def _enumerate(pb: _Problem, progress=None, count: bool = True) -> dict:
    m, K = pb.m, pb.K
    ok = np.isfinite(pb.logF)
    # weights are products of per-group factors relative to a reference: first each
    # group's maximum (no overflow possible); if the total underflows, the published
    # table's own factors (leaves near the published table then weigh about 1)
    refs = [np.where(ok, pb.logF, -np.inf).max(axis=1)]
    if np.all(ok[:, K]):
        refs.append(pb.logF[:, K])
    mx = refs[0]
    F = np.where(ok, np.exp(pb.logF - mx[:, None]), 0.0)
    cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp = _kernel_arrays(pb)
    note = ""
    zset = np.zeros((0, m), np.int64)
    key_mode = False
    if count:
        z = _lattice.small_lattice_vectors(pb.R)
        if z is None:
            key_mode = True
        else:
            zset = z
    s = min(m, 4)
    prefixes = np.array(np.meshgrid(*[np.arange(3)] * s, indexing="ij")).reshape(s, -1).T
    prefixes = np.ascontiguousarray(prefixes, dtype=np.int64)
    nbr = prefixes.shape[0]
    dummy_keys = np.zeros(1, np.int64)
    no_pivots = np.zeros(0, np.int64)

    def run(rows, zs, kmode, pivots, base, keys, starts):
        return cyclic_enum.enumerate_cyclic(
            prefixes[rows], cyc_ptr, cyc_grp, cyc_coef, pb.pmin, F, ok, K, fin_ptr, fin_grp,
            pb.rule, pb.alpha, pb.beta, pb.gamma, zs, kmode, pivots, base, keys, starts)

    chunk = max(1, nbr // 9)
    for ref in refs:
        mx = ref
        with np.errstate(over="ignore"):
            F = np.where(ok, np.exp(pb.logF - mx[:, None]), 0.0)
        H = np.zeros_like(F)
        tot = np.zeros(nbr)
        nvalid = np.zeros(nbr, np.int64)
        ncanon = np.zeros(nbr, np.int64)
        for a in range(0, nbr, chunk):
            rows = np.arange(a, min(nbr, a + chunk))
            h, t, nv, nc = run(rows, zset, False, no_pivots, 1, dummy_keys,
                               np.zeros(len(rows), np.int64))
            H += h
            tot[rows], nvalid[rows], ncanon[rows] = t, nv, nc
            if progress is not None:
                progress(int(rows[-1]) + 1, nbr)
        total = float(tot.sum())
        if (1e-290 < total < 1e290 and np.all(np.isfinite(H))) or int(nvalid.sum()) == 0:
            break
    n_valid = int(nvalid.sum())
    n_cand = int(ncanon.sum()) if count else None
    if count and key_mode:
        pivots = _lattice.row_basis(pb.R)
        base = 2 * K + 1
        if n_valid > 50_000_000 or len(pivots) * np.log(base) > 62 * np.log(2):
            n_cand = None
            note = (f"{n_valid} valid sign vectors and a null space too large to list; "
                    "distinct tables not counted")
        else:
            keys = np.zeros(max(n_valid, 1), np.int64)
            starts = np.concatenate([[0], np.cumsum(nvalid)[:-1]]).astype(np.int64)
            run(np.arange(nbr), np.zeros((0, m), np.int64), True, pivots.astype(np.int64),
                base, keys, starts)
            n_cand = int(np.unique(keys[:n_valid]).size)
    if n_valid == 0:
        raise ValueError("no original table is consistent with this release under this prior")
    if not (1e-290 < total < 1e290) or not np.all(np.isfinite(H)):
        raise FloatingPointError(
            f"enumeration weights under- or overflowed (total {total!r} over {n_valid} sign "
            "vectors, with both references); use route='structured', which works in log space")
    group_pmf = H / total
    return {"group_pmf": group_pmf, "log_evidence": np.log(total) + mx.sum() + pb.const,
            "n_candidates": n_cand, "n_sign_vectors": n_valid, "note": note}


# --- structured route ------------------------------------------------------------------

def _grid(scope):
    """e-values (-1, 0, 1) of each variable of ``scope`` on the scope's grid."""
    n = len(scope)
    return {v: (np.arange(3) - 1).reshape([3 if i == j else 1 for j in range(n)])
            for i, v in enumerate(scope)}


def _factors(pb: _Problem):
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


def _structured(pb: _Problem, count: bool = True, marginals: bool = True, progress=None) -> dict:
    m, K, W = pb.m, pb.K, 2 * pb.K + 1
    factors = _factors(pb)
    sizes = {k: 3 for k in range(m)}
    order = elimination_order([s for s, _ in factors], list(range(m)))
    out = {"note": ""}
    if marginals:
        tree = CliqueTree(factors, sizes, "log", order=order)
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
    out["n_candidates"] = None
    if count:
        z = _lattice.rank1_generator(pb.R)
        nul = _lattice.nullity(pb.R)
        if nul == 0:
            out["n_candidates"] = _count_shifted(factors, order, m, np.zeros(m, int), [0])
        elif z is not None:
            c = 0
            for shifts, sign in (([0], 1), ([0, 1], -1), ([0, 2], -1), ([0, 1, 2], 1)):
                c += sign * _count_shifted(factors, order, m, z, shifts)
            out["n_candidates"] = c
        elif m <= 16:
            out["n_candidates"] = _enumerate(pb, count=True)["n_candidates"]
        else:
            out["note"] = (f"the cycles' null space has dimension {nul}; distinct tables are "
                           "counted only for dimension <= 1 here (or m <= 16 by enumeration)")
    return out


def _to_posterior(pb: _Problem, res: dict, release, prior, route, mech) -> Posterior:
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
    attrs = {"method": f"cyclic/{route}", "prior": prior.describe(),
             "mechanism": mech.describe(), "route": route}
    if res.get("note"):
        attrs["n_candidates_note"] = res["note"]
    return Posterior(start=start, probs=probs.reshape(shape + (W,)), dims=release.dims,
                     coords=release.coords, published=pb.P, n_candidates=res["n_candidates"],
                     log_evidence=res["log_evidence"], attrs=attrs)
