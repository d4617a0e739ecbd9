"""Hierarchical and linked tables by hand: every published cell as the set of finest cells
it holds, a dense LP audit over the finest cells, and integer completions by enumeration.

Independent of ``riskengine.cell_system`` (no code shared): a table's structure is read
from its ``dims``, ``coords``, ``margins`` and ``hierarchies`` only, and of a hierarchy
only ``members(code)``, ``codes``, ``total`` and ``leaves`` are used.

* :func:`reference_cells` -- the finest codes of each dim (codes no hierarchy of any table
  splits), and every published cell of every table (every configuration of the interior
  and ``margins``, every code of every level along a kept dim) with its *member set*: the
  product over the union of the tables' dims of the finest codes its code holds (all of
  them for a dim the table lacks or sums to its total);
* :func:`published_ids`, :func:`membership_rows` -- the system's variable of each
  reference cell (read off its ``grids``) and the reference's member sets as 0/1 rows over
  the system's finest cells (its C order), to compare the two;
* :func:`lp_bounds` -- min / max of linear forms of the finest cells over ``x >= 0`` and
  equality rows (scipy ``linprog``, HiGHS dual simplex ``"highs-ds"``, dense);
* :func:`audit_release` -- that LP for a publication whose suppressed cells are given;
* :func:`brute_completions` -- every nonnegative integer finest table meeting the
  published sums (``numpy`` over the whole product of the cells' windows, tiny cases);
* :func:`param_completions` -- the same by exact rational elimination (``fractions``):
  the sums solved for pivot cells, the free cells enumerated (cases with counts in the
  hundreds);
* :func:`posterior_from` -- per-cell pmfs and log evidence over explicit candidates;
* random cases: :func:`random_table_case` (one table, random hierarchies on 2-3 dims,
  random margins) and :func:`random_linked_case` (2-3 tables over shared variables, some
  lacking a dim, a variable under a coarser cut of its hierarchy in some table).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

# --- the independent builder --------------------------------------------------------------


def _hierarchies(table, d) -> tuple:
    hs = (getattr(table, "hierarchies", None) or {}).get(d)
    if not hs:
        return ()
    return tuple(hs) if isinstance(hs, (list, tuple)) else (hs,)


def _table_codes(table, d) -> list:
    """The codes a table publishes along dim ``d`` below its total (every level)."""
    hs = _hierarchies(table, d)
    if not hs:
        return list(table.coords[d])
    out = []
    for h in hs:
        out += [c for c in h.codes if c != h.total and c not in out]
    return out


@dataclass
class Reference:
    """The publication as independent sets.

    Attributes
    ----------
    dims : tuple
        The union of the tables' dims, in order of first appearance.
    finest : dict
        ``{dim: set of finest codes}``.
    cells : dict
        ``{(table name, codes): frozenset of finest keys}``; ``codes`` one per dim of the
        table (None: at the table's total), a finest key one code per dim of ``dims``.
    code_sets : dict
        ``{dim: {code: frozenset of finest codes}}`` for every code of every table, and
        every table's total along the dim (all the finest codes).
    """

    dims: tuple
    finest: dict
    cells: dict
    code_sets: dict


def reference_cells(tables: dict) -> Reference:
    """Every published cell of ``tables`` (``{name: rk.Table}``) and its member set."""
    dims = []
    for t in tables.values():
        dims += [d for d in t.dims if d not in dims]
    # a code is split when some hierarchy gives it members other than itself
    split, codes_of = {d: {} for d in dims}, {d: set() for d in dims}
    for t in tables.values():
        for d in t.dims:
            codes_of[d].update(_table_codes(t, d))
            for h in _hierarchies(t, d):
                for c in h.codes:
                    if c == h.total:
                        continue
                    m = tuple(h.members(c))
                    if m != (c,):
                        split[d].setdefault(c, []).append(m)
    finest = {d: {c for c in codes_of[d] if c not in split[d]} for d in dims}

    def expand(d, c, seen=()):
        if c not in split[d]:
            return frozenset([c])
        if c in seen:
            raise ValueError(f"codes of dim {d!r} split in a cycle through {c!r}")
        sets = {frozenset().union(*(expand(d, k, seen + (c,)) for k in m))
                for m in split[d][c]}
        if len(sets) != 1:
            raise ValueError(f"code {c!r} of dim {d!r} holds different finest codes in "
                             "two hierarchies")
        return sets.pop()

    code_sets = {d: {c: expand(d, c) for c in codes_of[d]} for d in dims}
    for t in tables.values():
        for d in t.dims:
            hs = _hierarchies(t, d)
            if hs:
                code_sets[d][hs[0].total] = frozenset(finest[d])
    cells = {}
    for name, t in tables.items():
        confs = {tuple(t.dims)} | {tuple(k) for k in t.margins}
        for keep in confs:
            axes = [_table_codes(t, d) if d in keep else [None] for d in t.dims]
            for combo in itertools.product(*axes):
                per = []
                for d in dims:
                    if d in t.dims and combo[t.dims.index(d)] is not None:
                        per.append(sorted(expand(d, combo[t.dims.index(d)]), key=str))
                    else:
                        per.append(sorted(finest[d], key=str))
                cells[(name, combo)] = frozenset(itertools.product(*per))
    return Reference(tuple(dims), finest, cells, code_sets)


def finest_index(system) -> dict:
    """``{finest key (codes in the system's dims order): flat C-order index}``."""
    keys = itertools.product(*[system.coords[d] for d in system.dims])
    return {k: i for i, k in enumerate(keys)}


def reorder_key(key, from_dims, to_dims) -> tuple:
    pos = {d: i for i, d in enumerate(from_dims)}
    return tuple(key[pos[d]] for d in to_dims)


def membership_rows(ref: Reference, system, cells) -> np.ndarray:
    """Dense 0/1 rows over the system's finest cells (its C order) of the reference
    ``cells`` (keys of ``ref.cells``)."""
    idx = finest_index(system)
    out = np.zeros((len(cells), len(idx)))
    for r, c in enumerate(cells):
        for key in ref.cells[c]:
            out[r, idx[reorder_key(key, ref.dims, system.dims)]] = 1.0
    return out


def published_ids(system) -> dict:
    """``{(table, codes with None at the table's total): variable}`` read off the system's
    ``grids`` (the map from the reference's cells to the system's variables)."""
    out = {}
    for name, (tdims, codes, ids) in system.grids.items():
        tot = system.totals[name]
        for pos in zip(*np.nonzero(ids >= 0)):
            cc = tuple(None if codes[k][p] == tot[d] else codes[k][p]
                       for k, (d, p) in enumerate(zip(tdims, pos)))
            out[(name, cc)] = int(ids[pos])
    return out


# --- the dense LP audit ---------------------------------------------------------------------


def lp_bounds(E, b, Q):
    """``(lower, upper)`` of every row ``q`` of ``Q``: min / max of ``q @ f`` over
    ``f >= 0`` with ``E f = b`` (``inf`` when unbounded).  HiGHS dual simplex, dense."""
    Q = np.atleast_2d(np.asarray(Q, float))
    n = Q.shape[1]
    E = np.asarray(E, float).reshape(-1, n)
    kw = {"A_eq": E, "b_eq": np.asarray(b, float)} if E.shape[0] else {}
    lo, hi = np.empty(len(Q)), np.empty(len(Q))
    for i, q in enumerate(Q):
        for sign, out in ((1.0, lo), (-1.0, hi)):
            res = linprog(sign * q, bounds=(0, None), method="highs-ds", **kw)
            if res.status == 3:                  # unbounded: only a max can be
                out[i] = -sign * np.inf
            elif res.status != 0:
                raise ValueError(f"reference LP failed: {res.message}")
            else:
                out[i] = sign * res.fun
    return lo, hi


def audit_release(rows, values, hidden, queries):
    """The LP bounds of ``queries`` (rows over the finest cells) given the published
    cells: ``rows`` (one per published cell), their ``values``, ``hidden`` (suppressed:
    not an equation)."""
    rows = np.asarray(rows, float)
    keep = ~np.asarray(hidden, bool)
    return lp_bounds(rows[keep], np.asarray(values, float)[keep], queries)


# --- integer completions --------------------------------------------------------------------


def _caps(rows, values, n, bound):
    """Each finest cell's window ``0..cap``: the smallest published sum holding it, or
    ``bound`` (None: refuse) for a cell in none; a cell published alone is fixed."""
    cap = np.full(n, -1, np.int64)
    fixed = np.full(n, -1, np.int64)
    for r, v in zip(rows, values):
        cols = np.flatnonzero(r)
        for j in cols:
            cap[j] = int(v) if cap[j] < 0 else min(cap[j], int(v))
        if cols.size == 1:
            fixed[cols[0]] = int(v)
    free = cap < 0
    if free.any():
        if bound is None:
            raise ValueError("a finest cell is in no published sum: unbounded")
        cap[free] = bound
    if bound is not None:
        cap = np.minimum(cap, bound)
    return cap, fixed


def brute_completions(rows, values, n, bound=None, limit=3_000_000):
    """Every nonnegative integer ``f`` (length ``n``) with ``rows @ f == values``: the
    whole product of the windows (:func:`_caps`), checked against every row.  Returns an
    int64 array (k, n)."""
    rows = np.asarray(rows, float).reshape(-1, n)
    values = np.rint(np.asarray(values, float)).astype(np.int64)
    cap, fixed = _caps(rows, values, n, bound)
    lo = np.where(fixed >= 0, fixed, 0)
    hi = np.where(fixed >= 0, fixed, cap)
    if (hi < lo).any():
        return np.zeros((0, n), np.int64)
    sizes = hi - lo + 1
    total = int(np.prod(sizes.astype(float)))
    if total > limit:
        raise ValueError(f"{total} assignments: too many for brute force")
    R = rows.astype(np.int64)
    out = []
    step = 200_000
    for start in range(0, total, step):
        flat = np.arange(start, min(start + step, total))
        f = np.stack(np.unravel_index(flat, tuple(sizes)), axis=1) + lo if n else \
            np.zeros((flat.size, 0), np.int64)
        ok = np.all(f @ R.T == values, axis=1)
        out.append(f[ok])
    return np.concatenate(out) if out else np.zeros((0, n), np.int64)


def _rref(M):
    """Reduced row echelon form of a list of Fraction rows; returns (rows, pivots)."""
    M = [list(r) for r in M]
    piv, r = [], 0
    ncols = len(M[0]) - 1 if M else 0
    for c in range(ncols):
        p = next((i for i in range(r, len(M)) if M[i][c] != 0), None)
        if p is None:
            continue
        M[r], M[p] = M[p], M[r]
        lead = M[r][c]
        M[r] = [v / lead for v in M[r]]
        for i in range(len(M)):
            if i != r and M[i][c] != 0:
                f = M[i][c]
                M[i] = [a - f * b for a, b in zip(M[i], M[r])]
        piv.append(c)
        r += 1
    for i in range(r, len(M)):
        if M[i][-1] != 0:
            raise ValueError("the published sums contradict each other")
    return M[:r], piv


def param_completions(rows, values, n, bound=None, limit=5_000_000):
    """The completions of :func:`brute_completions` by elimination: the sums in reduced
    row echelon form (exact fractions) give every pivot cell as an affine function of the
    free cells; the free cells run over their windows, the pivots are kept when integral
    and inside their windows."""
    rows = np.asarray(rows, float).reshape(-1, n)
    values = np.rint(np.asarray(values, float)).astype(np.int64)
    cap, _ = _caps(rows, values, n, bound)
    aug = [[Fraction(int(a)) for a in r] + [Fraction(int(v))] for r, v in zip(rows, values)]
    R, piv = _rref(aug) if aug else ([], [])
    free = [j for j in range(n) if j not in piv]
    sizes = [int(cap[j]) + 1 for j in free]
    total = math.prod(sizes)
    if total > limit:
        raise ValueError(f"{total} free assignments: too many")
    grid = np.stack(np.unravel_index(np.arange(total), tuple(sizes)), axis=1) if free else \
        np.zeros((1, 0), np.int64)
    f = np.zeros((grid.shape[0], n), np.int64)
    f[:, free] = grid
    ok = np.ones(grid.shape[0], bool)
    for r, p in zip(R, piv):
        # x_p = rhs - sum_{free} coef * x_free, exactly: scale by the common denominator
        den = math.lcm(*[v.denominator for v in r])
        num = [int(v * den) for v in r]
        val = num[-1] - grid @ np.array([num[j] for j in free], np.int64) if free else \
            np.full(grid.shape[0], num[-1], np.int64)
        ok &= val % den == 0
        xp = val // den
        ok &= (xp >= 0) & (xp <= cap[p])
        f[:, p] = xp
    return f[ok]


# --- priors and posteriors over explicit candidates ---------------------------------------


def log_prior(name, f):
    """Per-cell log weights summed over each candidate ``f`` (k, n): ``"uniform"``,
    ``("poisson", rate)``, ``("flat", low, high)``."""
    f = np.asarray(f, np.int64)
    if name == "uniform":
        return np.zeros(f.shape[0])
    if name[0] == "poisson":
        r = float(name[1])
        lg = np.vectorize(lambda v: math.lgamma(v + 1.0))(f) if f.size else np.zeros(f.shape)
        return (f * math.log(r) - r - lg).sum(axis=1)
    if name[0] == "flat":
        ok = np.all((f >= name[1]) & (f <= name[2]), axis=1)
        return np.where(ok, 0.0, -np.inf)
    raise ValueError(f"unknown prior {name!r}")


def logsumexp(a) -> float:
    a = np.asarray(a, float)
    if a.size == 0 or not np.isfinite(a).any():
        return -np.inf
    m = a[np.isfinite(a)].max()
    return float(m + np.log(np.exp(a - m).sum()))


def posterior_from(f, logw):
    """``(count, log_z, pmf)`` over candidates ``f`` (k, n) with log weights ``logw``:
    ``count`` those of finite weight, ``pmf`` a dict ``{(cell, value): probability}``."""
    fin = np.isfinite(logw)
    f, logw = f[fin], logw[fin]
    log_z = logsumexp(logw)
    pmf = {}
    if f.shape[0]:
        w = np.exp(logw - log_z)
        for j in range(f.shape[1]):
            for v in np.unique(f[:, j]):
                pmf[(j, int(v))] = float(w[f[:, j] == v].sum())
    return int(f.shape[0]), log_z, pmf


# --- random cases ----------------------------------------------------------------------------


def random_tree(rng, prefix: str, depth: int, p_leaf: float = 0.3):
    """A nested dict below a total: ``depth`` levels at most, fan-out 1-3 (single children
    included), codes ``prefix + number`` in preorder."""
    counter = itertools.count(1)

    def grow(level):
        out = {}
        for _ in range(int(rng.integers(1, 4))):
            code = f"{prefix}{next(counter)}"
            leaf = level == depth or rng.random() < p_leaf
            out[code] = {} if leaf else None
            if not leaf:
                out[code] = grow(level + 1)
        return out

    return grow(1)


def tree_leaves(tree) -> list:
    out = []
    for c, sub in tree.items():
        out += tree_leaves(sub) if sub else [c]
    return out


def tree_members(tree) -> dict:
    """``{code: leaves below it}`` for every code of the tree (a leaf: itself)."""
    out = {}
    for c, sub in tree.items():
        if sub:
            out.update(tree_members(sub))
            out[c] = tree_leaves(sub)
        else:
            out[c] = [c]
    return out


def cut_tree(rng, tree, p_cut: float = 0.5):
    """A coarser tree: some internal codes become leaves (their subtree dropped)."""
    out = {}
    for c, sub in tree.items():
        out[c] = {} if not sub or rng.random() < p_cut else cut_tree(rng, sub, p_cut)
    return out


def regroup(rng, leaves, prefix: str):
    """An alternative hierarchy of the same leaves: random groups under new codes."""
    leaves = list(leaves)
    k = int(rng.integers(1, min(3, len(leaves)) + 1))
    lab = rng.integers(0, k, len(leaves))
    out = {}
    for g in range(k):
        mem = [c for c, x in zip(leaves, lab) if x == g]
        if mem:
            out[f"{prefix}{g}"] = {c: {} for c in mem}
    return out


@dataclass
class Case:
    """A random publication: tables, the master trees of its variables and the truth on
    the master leaves (``truth`` over ``dims``, the master leaves of each dim in order)."""

    tables: dict
    dims: tuple
    trees: dict
    truth: np.ndarray

    def value_of(self, key_codes: dict) -> int:
        """The truth summed over the master leaves below ``{dim: code}`` (dims not named:
        all)."""
        idx = []
        for d in self.dims:
            leaves = tree_leaves(self.trees[d])
            c = key_codes.get(d)
            mem = set(leaves) if c is None else set(tree_members(self.trees[d])[c])
            idx.append([i for i, x in enumerate(leaves) if x in mem])
        return int(self.truth[np.ix_(*idx)].sum())

    def finest_values(self, system) -> np.ndarray:
        """The truth on the system's finest grid."""
        out = np.zeros(system.shape, np.int64)
        for pos in itertools.product(*[range(n) for n in system.shape]):
            out[pos] = self.value_of({d: system.coords[d][i]
                                      for d, i in zip(system.dims, pos)})
        return out


def _make_table(rk, case_dims, trees, truth, tdims, kinds, name, rng, margins="random"):
    hier, coords = {}, {}
    for d in tdims:
        kind = kinds[d]
        tree = trees[d] if kind[0] != "cut" else kind[1]
        leaves = tree_leaves(tree)
        if kind[0] == "flat":
            coords[d] = leaves
        else:
            h = rk.Hierarchy(tree, total="Total")
            hier[d] = [h, rk.Hierarchy(regroup(rng, leaves, f"{d}{name}g"), total="Total")] \
                if kind[0] == "alt" else h
            coords[d] = leaves
    vals = np.zeros([len(coords[d]) for d in tdims], np.int64)
    full = {d: tree_members(trees[d]) for d in case_dims}
    mleaves = {d: tree_leaves(trees[d]) for d in case_dims}
    for pos in itertools.product(*[range(len(coords[d])) for d in tdims]):
        idx = []
        for d in case_dims:
            if d in tdims:
                mem = set(full[d][coords[d][pos[tdims.index(d)]]])
                idx.append([i for i, x in enumerate(mleaves[d]) if x in mem])
            else:
                idx.append(list(range(len(mleaves[d]))))
        vals[pos] = truth[np.ix_(*idx)].sum()
    if margins == "random":
        subsets = [k for r in range(len(tdims)) for k in itertools.combinations(tdims, r)]
        pick = [k for k in subsets if rng.random() < 0.5]
        margins = pick if pick or rng.random() < 0.5 else None
    return rk.Table(vals, dims=tuple(tdims), coords=coords, hierarchies=hier or None,
                    margins=margins, name=name)


def n_codes(table) -> int:
    """Cells of the table's full code grid (totals included)."""
    return math.prod(len(_table_codes(table, d)) + 1 for d in table.dims)


def random_table_case(rng, rk, max_depth=3, max_grid=400, rate=(1, 6), ndims=None,
                      margins="random", p_alt=0.15):
    """One table on 2-3 dims, each a random hierarchy (depth 1..max_depth), a flat dim or
    two alternative hierarchies; random margins; counts Poisson(rate in ``rate``)."""
    while True:
        nd = int(rng.integers(2, 4)) if ndims is None else ndims
        dims = ("a", "b", "c")[:nd]
        trees, kinds = {}, {}
        for d in dims:
            trees[d] = random_tree(rng, d, int(rng.integers(1, max_depth + 1)))
            u = rng.random()
            kinds[d] = ("flat",) if u < 0.15 else ("alt",) if u < 0.15 + p_alt else ("full",)
        shape = tuple(len(tree_leaves(trees[d])) for d in dims)
        truth = rng.poisson(rng.uniform(*rate), size=shape)
        t = _make_table(rk, dims, trees, truth, dims, kinds, "T", rng, margins)
        if n_codes(t) <= max_grid:
            return Case({"T": t}, dims, trees, truth)


def random_linked_case(rng, rk, max_depth=3, max_grid=300, rate=(1, 6), n_tables=None,
                       ndims=None, margins="random"):
    """2-3 tables over 2-3 shared variables: each table keeps 1..all of them (at least one
    table lacks one when there are 3), each under its full hierarchy, a coarser cut of it
    (leaves = internal codes of the full one), a flat list of its leaves, or alternative
    hierarchies; random margins; counts Poisson(rate)."""
    while True:
        nd = int(rng.integers(2, 4)) if ndims is None else ndims
        dims = ("a", "b", "c")[:nd]
        trees = {d: random_tree(rng, d, int(rng.integers(2, max_depth + 1)), p_leaf=0.2)
                 for d in dims}
        shape = tuple(len(tree_leaves(trees[d])) for d in dims)
        truth = rng.poisson(rng.uniform(*rate), size=shape)
        nt = int(rng.integers(2, 4)) if n_tables is None else n_tables
        plan = []
        for k in range(nt):
            size = int(rng.integers(1, nd + 1)) if nd == 2 else int(rng.integers(1, nd))
            if k == 0:
                size = max(size, min(2, nd))
            chosen = {str(d) for d in rng.choice(dims, size, replace=False)}
            tdims = [d for d in dims if d in chosen]
            kinds = {}
            for d in tdims:
                u = rng.random()
                kinds[d] = ("cut", cut_tree(rng, trees[d])) if u < 0.45 else \
                    ("flat",) if u < 0.55 else ("alt",) if u < 0.65 else ("full",)
            plan.append((tdims, kinds))
        used = set().union(*[set(p[0]) for p in plan])
        if used != set(dims):
            continue
        # a flat list of the master leaves needs some table whose hierarchy splits every
        # code of the cuts down to them (else the tables never say how they nest)
        for d in dims:
            kinds_d = [kinds for _, kinds in plan if d in kinds]
            if any(k[d][0] == "flat" for k in kinds_d) and \
                    not any(k[d][0] in ("full", "alt") for k in kinds_d):
                next(k for k in kinds_d if k[d][0] == "flat")[d] = ("full",)
        tables = {f"T{k + 1}": _make_table(rk, dims, trees, truth, tdims, kinds,
                                           f"T{k + 1}", rng, margins)
                  for k, (tdims, kinds) in enumerate(plan)}
        if sum(n_codes(t) for t in tables.values()) <= max_grid:
            return Case(tables, dims, trees, truth)
