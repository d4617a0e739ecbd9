"""The cells of a publication: hierarchical, k-dimensional and linked tables as one system.

An agency publishes tables whose dims are hierarchies (country > region > district) and
several tables cut from one microdata (linked tables).  Every published cell -- interior,
subtotal or total, in any table -- counts the records of a set of *finest* cells: the
common refinement of every table's categories (per dim the codes no hierarchy splits
further; the product over the union of the tables' dims).  Two published cells that count
the same finest cells hold the same records: they are one unknown (a "shared cell"), in
one table or in two.

:func:`cell_system` builds the linear system ``A x = 0`` over the vector ``x`` of every
cell: the finest cells first (C order of the finest grid; a finest cell no table publishes
is a cell of the system that is never published), then every other cell, table by table.
Its equations are local, as tau-Argus writes them: a cell whose code along a dim is a
node of a hierarchy equals the sum of the cells with that node's children there (one
equation per dim and per hierarchy of it: alternative hierarchies of one variable each
add theirs); a table's cells at its finest codes equal the sum of the finest cells they
hold.  Every equation is ``+1`` on the aggregate and ``-1`` on its parts, so the
system's null space is exactly the additive tables: the finest cells free, every other
cell their sum.

The flat :class:`riskengine.tabular.TabularSystem` (one table, margins, one level of
subtotals) is the special case of one table whose hierarchies have one level; suppression
(:func:`riskengine.magnitude.csp.find_pattern`), the LP audit
(:func:`riskengine.magnitude.intervals.intervals`) and the posteriors of linked count
releases take either, through the same few members (``A``, ``n_var``, ``n_interior``,
``labels``, ``vector``).

Examples
--------
>>> import numpy as np, riskengine as rk
>>> geo = rk.Hierarchy({"North": ["N1", "N2"], "South": ["S1"]}, total="Total")
>>> t = rk.Table(np.array([[1, 2], [3, 4], [5, 6]]), dims=("geo", "sex"),
...              coords={"geo": ["N1", "N2", "S1"], "sex": ["F", "M"]},
...              hierarchies={"geo": geo})
>>> s = t.system()
>>> s.n_interior, s.n_var      # 6 finest cells; South holds S1's records: one cell each
(6, 15)
>>> x = s.vector(t.values)
>>> bool(np.all(s.A @ x == 0))
True
>>> int(x[s.find(geo="North")])          # North, both sexes (sex at its total)
10
>>> s.labels()[s.find(geo="North", sex="M")]
'table(North, M)'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["CellSystem", "DimCodes", "cell_system"]


class DimCodes:
    """One dim of one table: its codes (hierarchy nodes, the total first), their parents
    and children per hierarchy, and the finest codes each holds.

    Built from a list of :class:`riskengine.Hierarchy` (alternative hierarchies of one
    variable: the same leaves and total, any internal nodes; a code named in two of them
    must hold the same leaves in both).
    """

    def __init__(self, dim: str, hierarchies):
        hs = list(hierarchies)
        first = hs[0]
        self.dim = dim
        self.total = first.total
        self.leaves = tuple(first.leaves)
        codes = [first.total]
        seen = {first.total}
        for h in hs:
            if h.total != first.total:
                raise ValueError(f"alternative hierarchies of dim {dim!r} must share their "
                                 f"total: {first.total!r} and {h.total!r}")
            if set(h.leaves) != set(first.leaves):
                extra = sorted(map(str, set(h.leaves) ^ set(first.leaves)))
                raise ValueError(f"alternative hierarchies of dim {dim!r} must have the same "
                                 f"leaves; they differ in {extra[:5]}")
            for c in h.codes:
                if c not in seen:
                    seen.add(c)
                    codes.append(c)
        # leaves first in the order of the first hierarchy, then internal codes
        leafset = set(self.leaves)
        self.codes = tuple(self.leaves) + tuple(c for c in codes if c not in leafset)
        self.index = {c: i for i, c in enumerate(self.codes)}
        self.n_leaves = len(self.leaves)
        #: per hierarchy: [(parent index, [child indices])] for every internal code
        self.splits = []
        members = {}
        for h in hs:
            sp_ = []
            for c in h.internal:
                sp_.append((self.index[c], [self.index[k] for k in h.children(c)]))
                m = frozenset(h.members(c))
                if members.setdefault(c, m) != m:
                    raise ValueError(f"code {c!r} of dim {dim!r} holds different leaves in "
                                     "two alternative hierarchies")
            self.splits.append(sp_)
        self.members = [frozenset([c]) if c in leafset else members[c] for c in self.codes]

    @classmethod
    def flat(cls, dim: str, labels, total) -> DimCodes:
        from .hierarchy import Hierarchy
        return cls(dim, [Hierarchy({lab: {} for lab in labels}, total=total)])


def _default_total(labels) -> str:
    t = "Total"
    while t in set(labels):
        t = "(" + t + ")"
    return t


@dataclass(frozen=True)
class CellSystem:
    """``A @ x == 0`` for the vector ``x`` of every cell of a publication (see the module).

    Attributes
    ----------
    dims, shape, coords
        The finest table: dims (union of the tables' dims, in order of first appearance),
        its shape, and its categories (the finest codes of each dim).
    A : scipy.sparse.csr_matrix
        The equations (entries in {-1, 0, +1}; the +1 of a row is the aggregate).
    M : scipy.sparse.csr_matrix
        ``n_var x n_interior``, 0/1: the finest cells each cell counts.
    cells : pandas.DataFrame
        One row per cell of ``x``: ``tables`` (the names of the tables that publish it,
        a tuple; empty for a finest cell no table publishes), ``published`` (some table
        publishes it), ``finest``, and one column per dim with its code (a table without
        the dim, or its total: the dim's total label).
    grids : dict
        ``{table name: (dims, codes per dim, ids)}``: ``ids`` the index in ``x`` of the
        table's cell at each combination of codes (-1: not published by that table).
    """

    dims: tuple
    shape: tuple
    coords: dict
    A: sp.csr_matrix
    M: sp.csr_matrix
    cells: object = field(repr=False)
    grids: dict = field(repr=False)
    totals: dict = field(repr=False)     #: {dim: the total label used in ``cells``}

    @property
    def n_var(self) -> int:
        return self.M.shape[0]

    @property
    def n_interior(self) -> int:
        return self.M.shape[1]

    @property
    def published(self) -> np.ndarray:
        """Boolean over the cells: published by some table."""
        return self.cells["published"].to_numpy(bool)

    @property
    def table_names(self) -> tuple:
        return tuple(self.grids)

    def vector(self, interior) -> np.ndarray:
        """Every cell's value from the finest cells' (``M @ interior``)."""
        v = np.asarray(interior)
        if v.shape != self.shape:
            raise ValueError(f"finest cells must have shape {self.shape} (dims {self.dims}), "
                             f"got {v.shape}")
        flat = v.reshape(-1)
        if np.issubdtype(flat.dtype, np.integer):
            return (self.M.astype(np.int64) @ flat.astype(np.int64)).astype(np.int64)
        return self.M @ flat.astype(float)

    def labels(self, coords=None) -> list:
        """A readable label per cell: ``A(North, F)`` for a cell published by table ``A``
        (codes in the table's dims), ``finest(N1, F, 20-29)`` for a finest cell no table
        publishes."""
        if getattr(self, "_labels", None) is None:
            object.__setattr__(self, "_labels", self._make_labels())
        return list(self._labels)

    def _make_labels(self) -> list:
        out = [None] * self.n_var
        for name, (tdims, codes, ids) in self.grids.items():
            flat = ids.reshape(-1)
            for pos in np.flatnonzero(flat >= 0):
                j = int(flat[pos])
                if out[j] is None:
                    idx = np.unravel_index(pos, ids.shape)
                    out[j] = f"{name}(" + ", ".join(str(codes[k][i]) for k, i in
                                                    enumerate(idx)) + ")"
        for j in range(self.n_interior):
            if out[j] is None:
                idx = np.unravel_index(j, self.shape)
                out[j] = "finest(" + ", ".join(str(self.coords[d][i])
                                               for d, i in zip(self.dims, idx)) + ")"
        return out

    def find(self, table=None, **codes) -> int:
        """The index in ``x`` of the cell with these codes in ``table`` (default: the first
        table with every named dim); a dim not named is at the table's total.

        Raises
        ------
        KeyError
            Naming the codes, when no table publishes such a cell.
        """
        for name, (tdims, tcodes, ids) in self.grids.items():
            if (table is not None and name != table) or set(codes) - set(tdims):
                continue
            idx = []
            for d, cl in zip(tdims, tcodes):
                want = codes.get(d, self.totals[name][d])
                if want not in cl:
                    raise KeyError(f"table {name!r} has no code {want!r} in dim {d!r}")
                idx.append(cl.index(want))
            j = int(ids[tuple(idx)])
            if j >= 0:
                return j
        raise KeyError(f"no table publishes a cell {codes}" +
                       (f" in table {table!r}" if table else ""))

    def totals_of(self, table) -> dict:
        """``{dim: total code}`` of ``table``'s dims."""
        return self.totals[table]

    def table_values(self, name, x):
        """``x`` (a vector over the cells) as an ``xarray.DataArray`` over table ``name``'s
        full grid of codes (NaN where the table publishes no cell)."""
        import xarray as xr
        tdims, codes, ids = self.grids[name]
        x = np.asarray(x, dtype=float)
        out = np.where(ids >= 0, x[np.maximum(ids, 0)], np.nan)
        return xr.DataArray(out, dims=tdims, coords={d: list(c) for d, c in zip(tdims, codes)},
                            name=name)


def cell_system(tables, splits=None) -> CellSystem:
    """The :class:`CellSystem` of ``tables``: ``{name: rk.Table}`` (each with its
    ``hierarchies`` and ``margins``), tables cut from one microdata.

    Categories are matched by code, dim by dim: the same code on a dim in two tables (or
    two hierarchies) holds the same records; a code that one hierarchy splits into
    children is the union of them in every table.

    Parameters
    ----------
    tables : dict
        ``{name: rk.Table}``; a table's ``margins`` say which configurations (dims kept)
        it publishes (the interior always), its ``hierarchies`` the codes of each dim.
    splits : dict, optional
        ``{dim: {code: [finer codes]}}``: codes that hold the union of finer ones, known
        for the publication rather than from a table's hierarchy (``rk.ReleaseSet``'s
        ``groups``: a region one table shows whole and another split).

    Returns
    -------
    CellSystem
    """
    return _Builder(dict(tables), splits or {}).build()


class _Builder:
    """One pass over the tables: codes, finest codes, variables, equations, frame."""

    def __init__(self, tables: dict, splits: dict):
        self.extra_splits = {str(d): {k: list(v) for k, v in g.items()}
                             for d, g in splits.items()}
        if not tables:
            raise ValueError("a publication needs at least one table")
        self.tables = tables
        self.per = {}
        dims: list = []
        for name, t in tables.items():
            hs = getattr(t, "hierarchies", None) or {}
            dc = []
            for d in t.dims:
                c = DimCodes(d, hs[d]) if d in hs else \
                    DimCodes.flat(d, t.coords[d], _default_total(t.coords[d]))
                dc.append(c)
                if d not in dims:
                    dims.append(d)
            self.per[name] = dc
        self.dims = tuple(dims)
        self._finest()

    def _finest(self) -> None:
        """Per dim the finest codes (split by no hierarchy of any table) and every code's
        set of finest indices, interned as a set id (the finest codes get 0..n-1, the
        whole dim ``all_id``)."""
        self.finest, self.split = {}, {}
        unknown = sorted(set(self.extra_splits) - set(self.dims))
        if unknown:
            raise ValueError(f"splits name dims {unknown} that no table has; dims: "
                             f"{list(self.dims)}")
        for d in self.dims:
            kids: dict = {k: list(v) for k, v in self.extra_splits.get(d, {}).items()}
            order: list = []
            seen: set = set()
            roots = set()
            for dc in self.per.values():
                for c in dc:
                    if c.dim != d:
                        continue
                    roots.add(c.total)
                    for sps in c.splits:
                        for p, ch in sps:
                            if c.codes[p] == c.total:
                                continue
                            new = [c.codes[i] for i in ch]
                            old = kids.setdefault(c.codes[p], new)
                            if old is not new:
                                kids[c.codes[p]] = old + [k for k in new if k not in old]
                    for code in c.codes:
                        if code != c.total and code not in seen:
                            seen.add(code)
                            order.append(code)
            for g in self.extra_splits.get(d, {}):
                if g not in seen:
                    raise ValueError(f"group {g!r} of dim {d!r} is a label of no table "
                                     f"(labels of {d!r}: {sorted(map(str, seen))[:8]})")
            clash = [code for code in order if code in roots]
            if clash:
                raise ValueError(f"code {clash[0]!r} of dim {d!r} is a total in one table "
                                 "and a category in another")
            # the finest codes, each split code's children in its place (first appearance)
            fin: list = []
            done: set = set()
            for code in order:
                _expand(d, code, kids, done, fin, ())
            self.finest[d] = fin
            self.split[d] = kids
        self.shape = tuple(len(self.finest[d]) for d in self.dims)
        self.pos = {d: {c: i for i, c in enumerate(self.finest[d])} for d in self.dims}
        self.memo: dict = {}
        self.set_id = {d: {frozenset([i]): i for i in range(n)}
                       for d, n in zip(self.dims, self.shape)}
        self.all_id = {d: self._intern(d, frozenset(range(n)))
                       for d, n in zip(self.dims, self.shape)}
        # per table and dim: the set id of each code (its total: the union of its leaves)
        self.sids = {}
        for name, dc in self.per.items():
            out = []
            for c in dc:
                ids = np.empty(len(c.codes), np.int64)
                for i, code in enumerate(c.codes):
                    s = frozenset().union(*(self._leaf_set(c.dim, lf) for lf in c.leaves)) \
                        if code == c.total else self._leaf_set(c.dim, code)
                    ids[i] = self._intern(c.dim, s)
                out.append(ids)
            self.sids[name] = out
        self._check_consistent()
        self.members_of = {d: {v: np.array(sorted(k), np.int64)
                               for k, v in self.set_id[d].items()} for d in self.dims}

    def _check_consistent(self) -> None:
        """Every table's hierarchy splits each code into children that hold exactly its
        records, and a table's leaves along a dim are disjoint."""
        for name, dc in self.per.items():
            for c in dc:
                for sps in c.splits:
                    for p, ch in sps:
                        if c.codes[p] == c.total:
                            continue
                        parts = [self._leaf_set(c.dim, c.codes[i]) for i in ch]
                        whole = self._leaf_set(c.dim, c.codes[p])
                        if frozenset().union(*parts) != whole or \
                                sum(map(len, parts)) != len(whole):
                            names = [self.finest[c.dim][i] for i in sorted(whole)]
                            raise ValueError(
                                f"code {c.codes[p]!r} of dim {c.dim!r} is split into "
                                f"{[c.codes[i] for i in ch]} in table {name!r}, but the "
                                f"publication's hierarchies make it hold {names}: one code "
                                "must hold the same records in every table")
                sets = [self._leaf_set(c.dim, lf) for lf in c.leaves]
                if sum(map(len, sets)) != len(frozenset().union(*sets)):
                    seen = {}
                    for lf, s_ in zip(c.leaves, sets):
                        for i in s_:
                            if i in seen:
                                raise ValueError(
                                    f"categories {seen[i]!r} and {lf!r} of dim {c.dim!r} in "
                                    f"table {name!r} overlap (both hold "
                                    f"{self.finest[c.dim][i]!r}); a table's categories "
                                    "must be disjoint")
                            seen[i] = lf

    def _intern(self, d, s: frozenset) -> int:
        return self.set_id[d].setdefault(s, len(self.set_id[d]))

    def _leaf_set(self, d, code) -> frozenset:
        key = (d, code)
        out = self.memo.get(key)
        if out is None:
            kids = self.split[d].get(code)
            out = frozenset().union(*(self._leaf_set(d, k) for k in kids)) if kids else \
                frozenset([self.pos[d][code]])
            self.memo[key] = out
        return out

    def _members(self, key) -> np.ndarray:
        """Flat C-order indices of the finest cells a cell (a set id per dim) holds."""
        axes = [self.members_of[d][int(k)] for d, k in zip(self.dims, key)]
        flat = np.ravel_multi_index(np.ix_(*axes), self.shape) if axes else np.zeros(1)
        return np.sort(np.asarray(flat, np.int64).reshape(-1))

    def build(self) -> CellSystem:
        import pandas as pd
        dims, shape = self.dims, self.shape
        n_fin = int(np.prod(shape, dtype=np.int64))
        key_to_var: dict = {}
        extra: list = []                      # keys of the cells past the finest ones
        tables_of: dict = {}
        grids, totals = {}, {}
        eqs = _Equations()
        for name, t in self.tables.items():
            dc, sid = self.per[name], self.sids[name]
            tdims = tuple(t.dims)
            nd = len(tdims)
            totals[name] = {c.dim: c.total for c in dc}
            confs = [tdims] + [tuple(k) for k in t.margins]
            masks = np.array(sorted({sum(1 << tdims.index(x) for x in k) for k in confs}))
            pub = _table_cells(masks, dc)
            ids = np.full(pub.shape, -1, np.int64)
            at = {d: k for k, d in enumerate(tdims)}
            for flat_pos in np.flatnonzero(pub.reshape(-1)):
                idx = np.unravel_index(flat_pos, pub.shape)
                key = tuple(int(sid[at[d]][idx[at[d]]]) if d in at else self.all_id[d]
                            for d in dims)
                j = key_to_var.get(key)
                if j is None:
                    if all(k < n for k, n in zip(key, shape)):
                        j = int(np.ravel_multi_index(key, shape)) if key else 0
                    else:
                        j = n_fin + len(extra)
                        extra.append(key)
                    key_to_var[key] = j
                ids[idx] = j
                tl = tables_of.setdefault(j, [])
                if name not in tl:
                    tl.append(name)
            grids[name] = (tdims, [list(c.codes) for c in dc], ids)
            has_eq = np.zeros(pub.shape, bool)
            for k, c in enumerate(dc):
                for sps in c.splits:
                    for p, ch in sps:
                        P = np.take(ids, p, axis=k)
                        C = [np.take(ids, i, axis=k) for i in ch]
                        ok = P >= 0
                        for Ci in C:
                            ok &= Ci >= 0
                        if ok.any():
                            eqs.add_many(P[ok], [Ci[ok] for Ci in C])
                            sl = [slice(None)] * nd
                            sl[k] = p
                            has_eq[tuple(sl)] |= ok
            leafmask = np.ones(pub.shape, bool)
            for k, c in enumerate(dc):
                sh = [1] * nd
                sh[k] = len(c.codes)
                leafmask &= (np.arange(len(c.codes)) < c.n_leaves).reshape(sh)
            # a table's cell at its own leaves that is not a finest cell, and an aggregate
            # no local equation reaches: the sum of the finest cells it holds
            need = ((ids >= n_fin) & leafmask) | ((ids >= 0) & ~leafmask & ~has_eq)
            for j in np.unique(ids[need]):
                mem = self._members(extra[j - n_fin] if j >= n_fin else
                                    np.unravel_index(j, shape))
                mem = mem[mem != j]
                if mem.size:
                    eqs.add_one(int(j), mem)
        n_var = n_fin + len(extra)
        A = eqs.matrix(n_var)
        mrows, mcols = [np.arange(n_fin)], [np.arange(n_fin)]
        for i, key in enumerate(extra):
            mem = self._members(key)
            mrows.append(np.full(mem.size, n_fin + i))
            mcols.append(mem)
        mrows, mcols = np.concatenate(mrows), np.concatenate(mcols)
        M = sp.csr_matrix((np.ones(mrows.size), (mrows, mcols)), shape=(n_var, n_fin))
        # the frame: per dim the code of each cell's set (a table's code where one names
        # it; the dim's total label for the whole dim)
        tot = {d: next(c.total for dc in self.per.values() for c in dc if c.dim == d)
               for d in dims}
        code_of = {d: {self.all_id[d]: tot[d], **dict(enumerate(self.finest[d]))}
                   for d in dims}
        for name, dc in self.per.items():
            for c, ids_d in zip(dc, self.sids[name]):
                for code, s in zip(c.codes, ids_d):
                    code_of[c.dim].setdefault(int(s), code)
        keys = [np.unravel_index(j, shape) for j in range(n_fin)] + extra
        frame = {"tables": [tuple(tables_of.get(j, ())) for j in range(n_var)]}
        for k, d in enumerate(dims):
            frame[d] = [code_of[d][int(key[k])] for key in keys]
        cells = pd.DataFrame(frame)
        cells["published"] = cells["tables"].map(len) > 0
        cells["finest"] = np.arange(n_var) < n_fin
        return CellSystem(dims, shape, {d: list(self.finest[d]) for d in dims}, A, M,
                          cells, grids, totals)


def _expand(d, code, kids: dict, done: set, fin: list, path: tuple) -> None:
    """Append to ``fin`` the finest codes under ``code`` (itself when nothing splits it),
    in order, each once."""
    if code in path:
        raise ValueError(f"code {code!r} of dim {d!r} is split into itself (through "
                         f"{list(path)})")
    if code in kids:
        for k in kids[code]:
            _expand(d, k, kids, done, fin, (*path, code))
    elif code not in done:
        done.add(code)
        fin.append(code)


class _Equations:
    """The rows of ``A`` as they are found: ``aggregate - sum(parts) = 0``."""

    def __init__(self):
        self.rows, self.cols, self.vals = [], [], []
        self.n = 0

    def add_many(self, agg, parts) -> None:
        m = agg.size
        r = self.n + np.arange(m)
        self.rows.append(r)
        self.cols.append(agg)
        self.vals.append(np.ones(m))
        for p in parts:
            self.rows.append(r)
            self.cols.append(p)
            self.vals.append(-np.ones(m))
        self.n += m

    def add_one(self, agg: int, parts) -> None:
        self.rows.append(np.full(len(parts) + 1, self.n))
        self.cols.append(np.concatenate([[agg], parts]))
        self.vals.append(np.concatenate([[1.0], -np.ones(len(parts))]))
        self.n += 1

    def matrix(self, n_var) -> sp.csr_matrix:
        if not self.n:
            return sp.csr_matrix((0, n_var))
        A = sp.csr_matrix((np.concatenate(self.vals),
                           (np.concatenate(self.rows), np.concatenate(self.cols))),
                          shape=(self.n, n_var))
        A.sum_duplicates()
        A.eliminate_zeros()     # "node = its single child": one cell, no equation
        return A[np.diff(A.indptr) > 0]


def _table_cells(masks, codes: list) -> np.ndarray:
    """Boolean grid over a table's codes: the combinations it publishes (those whose set
    of dims below the total is one of ``masks``, bit k for dim k)."""
    nd = len(codes)
    shape = tuple(len(c.codes) for c in codes)
    bits = np.zeros(shape, np.int64)
    for k, c in enumerate(codes):
        below = (np.arange(len(c.codes)) != c.index[c.total]).astype(np.int64)
        sh = [1] * nd
        sh[k] = len(c.codes)
        bits = bits + (below.reshape(sh) << k)
    return np.isin(bits, masks)
