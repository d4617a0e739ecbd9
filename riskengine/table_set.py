"""TableSet: several tables cut from one microdata, and what a publication of them releases.

A census publishes dozens of tables from one set of records; their dims share variables
(region in every table), sometimes under different hierarchies (districts in one table,
regions in another), and their cells overlap (the regional totals of two tables hold the
same records).  Protecting or attacking them one at a time is unsafe: a cell hidden in one
table may be the difference of cells published in the others.  A :class:`TableSet` puts
every table's cells into one system (:func:`riskengine.cell_system.cell_system`): the
unknowns are the finest cells (the common refinement of every table), a cell two tables
share is one unknown, and suppression, the audit and the posteriors read all the tables'
equations at once ("super-consistent", as Statistics Norway's GaussSuppression calls it).

A hierarchical table (:class:`riskengine.Table` with ``hierarchies=``) is the set of one
table.  :class:`TableSetRelease` is what a protection of a set publishes: one value per
cell of the system (NaN where a cell is suppressed; the finest cells no table publishes
are never published).

Examples
--------
Two tables of one population sharing the region totals:

>>> import numpy as np, pandas as pd, riskengine as rk
>>> people = pd.DataFrame({"region": list("NNNSSS"), "sex": list("FMFFMM"),
...                        "age": ["y", "o", "o", "y", "y", "o"]})
>>> ts = rk.TableSet.from_pandas(people, {"A": ["region", "sex"], "B": ["region", "age"]})
>>> ts.dims, ts.shape                    # the finest cells: region x sex x age
(('region', 'sex', 'age'), (2, 2, 2))
>>> float(ts.values[ts.system.find(table="B", region="N")])  # the cell A calls (N, Total)
3.0
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .table import Table

__all__ = ["TableSet", "TableSetRelease"]


class TableSet:
    """Tables cut from one microdata (see the module docstring).

    Parameters
    ----------
    tables : dict or list
        ``{name: rk.Table}`` (a list: named ``T1``, ``T2``, ...).  Each table brings its
        ``hierarchies`` and ``margins``.  Categories are matched by code, dim by dim.
    finest : array-like, optional
        The finest cells' values (from the microdata), when no table publishes them all;
        :meth:`from_pandas` fills it.

    Attributes
    ----------
    system : riskengine.cell_system.CellSystem
        Every cell of every table, and the equations.
    values : numpy.ndarray
        The value of every cell of the system (float; NaN for a finest cell whose value
        no table or ``finest`` gives).
    """

    def __init__(self, tables, finest=None):
        if isinstance(tables, Table):
            tables = {tables.name or "table": tables}
        if not isinstance(tables, dict):
            tables = {f"T{i + 1}": t for i, t in enumerate(tables)}
        if not tables:
            raise ValueError("a TableSet needs at least one table")
        for name, t in tables.items():
            if not isinstance(t, Table):
                raise TypeError(f"table {name!r} of the set is a {type(t).__name__}, not an "
                                "rk.Table")
        kinds = {t.kind for t in tables.values()}
        if len(kinds) > 1:
            raise ValueError("the tables of a set hold one kind of value (counts or "
                             f"magnitudes); got {sorted(kinds)}")
        from .cell_system import cell_system
        self.tables = dict(tables)
        self.kind = kinds.pop()
        (name, first), = list(self.tables.items())[:1]
        # one table under its own name: its own (cached) system is the set's
        self.system = first.system() if len(self.tables) == 1 and \
            name == (first.name or "table") else cell_system(self.tables)
        self.values = self._values(finest)

    # --- structure -------------------------------------------------------------------
    @property
    def dims(self) -> tuple:
        return self.system.dims

    @property
    def shape(self) -> tuple:
        return self.system.shape

    @property
    def coords(self) -> dict:
        return self.system.coords

    @property
    def names(self) -> tuple:
        return tuple(self.tables)

    @property
    def cells(self):
        """Every cell of the system with its codes, the tables publishing it and its value
        (pandas DataFrame; ``published`` False: a finest cell no table publishes)."""
        out = self.system.cells.copy()
        out["value"] = self.values
        return out

    def _values(self, finest) -> np.ndarray:
        s = self.system
        x = np.full(s.n_var, np.nan)
        src = [""] * s.n_var
        for name, t in self.tables.items():
            own = t.system()
            xv = own.vector(t.values).astype(float)
            _, _, ids = s.grids[name]
            _, _, own_ids = own.grids[t.name or "table"]
            ok = ids >= 0
            for j, v in zip(ids[ok], xv[own_ids[ok]]):
                if np.isnan(x[j]):
                    x[j], src[j] = v, name
                elif abs(x[j] - v) > 1e-9 * max(1.0, abs(v)):
                    lab = s.labels()[j]
                    raise ValueError(f"cell {lab} holds the same records in tables "
                                     f"{src[j]!r} and {name!r}, but they give {x[j]:g} and "
                                     f"{v:g}")
        if finest is not None:
            f = np.asarray(finest, dtype=float)
            if f.shape != s.shape:
                raise ValueError(f"finest must have the finest table's shape {s.shape} (dims "
                                 f"{s.dims}), got {f.shape}")
            full = s.vector(f)
            known = ~np.isnan(x)
            bad = known & (np.abs(full - np.where(known, x, 0)) > 1e-9 * np.maximum(1, full))
            if bad.any():
                j = int(np.argmax(bad))
                raise ValueError(f"finest does not add up to the published cell "
                                 f"{s.labels()[j]}: {full[j]:g} vs {x[j]:g}")
            x = full
        return x

    @classmethod
    def from_pandas(cls, df, tables: dict, value: str | None = None, hierarchies=None,
                    margins=None, kind=None) -> TableSet:
        """Tables cut from one microdata: ``df`` has one row per record (or ``value`` a
        column of weights / magnitudes summed into each cell).

        Parameters
        ----------
        df : pandas.DataFrame
            The records.
        tables : dict
            ``{name: dims}``: each table's dims (columns of ``df``).
        value : str, optional
            A column summed into the cells (default: the cells count records).
        hierarchies : dict, optional
            ``{dim: rk.Hierarchy or [..]}`` used by every table with that dim, or
            ``{name: {dim: ...}}`` per table.
        margins : dict, optional
            ``{name: margins}`` (as for :class:`riskengine.Table`); default: all.
        kind : {"count", "magnitude"}, optional

        Returns
        -------
        TableSet
            With the finest cells' values (every dim of any table, crossed).
        """
        import pandas as pd
        tables = {str(k): list(v) for k, v in dict(tables).items()}
        dims = []
        for v in tables.values():
            dims += [d for d in v if d not in dims]
        cols = [str(c) for c in df.columns]
        for d in dims:
            if d not in cols:
                raise ValueError(f"no column {d!r} for a dim; columns are {cols}")
        hierarchies = dict(hierarchies or {})
        per_table = bool(hierarchies) and set(hierarchies) <= set(tables) and \
            all(isinstance(v, dict) for v in hierarchies.values())

        def hier(name):
            return dict(hierarchies.get(name, {})) if per_table else \
                {d: h for d, h in hierarchies.items() if d in tables[name]}
        # the finest labels per dim: each hierarchy's leaves that appear, else the data's
        levels = {}
        for d in dims:
            seen = list(pd.unique(df[d]))
            levels[d] = seen
        out = {}
        w = None if value is None else df[value].to_numpy(dtype=float)
        # every hierarchy of each dim, any table's: a record's code climbs them to the
        # leaf of a coarser table (districts in the data, regions in one table)
        parent_of: dict = {}
        for name in tables:
            for d, hh in hier(name).items():
                for h in (hh if isinstance(hh, (list, tuple)) else [hh]):
                    for c in h.codes:
                        if h.parent(c) is not None and h.parent(c) != h.total:
                            parent_of.setdefault(d, {}).setdefault(c, h.parent(c))
        for name, tdims in tables.items():
            hs = hier(name)
            coords, maps = {}, {}
            for d in tdims:
                if d in hs:
                    h0 = hs[d][0] if isinstance(hs[d], (list, tuple)) else hs[d]
                    leaves = set(h0.leaves)
                    maps[d] = {}
                    for x in levels[d]:
                        c = x
                        while c not in leaves and c in parent_of.get(d, {}):
                            c = parent_of[d][c]
                        if c not in leaves:
                            raise ValueError(
                                f"column {d!r} has {x!r}, which is no leaf of table "
                                f"{name!r}'s hierarchy and lies below none of them in the "
                                f"hierarchies given (leaves: {list(h0.leaves)[:8]})")
                        maps[d][x] = c
                    coords[d] = list(h0.leaves)
                else:
                    coords[d] = levels[d]
            vals = _cross(df, tdims, coords, w, maps)
            out[name] = Table(vals, dims=tuple(tdims), coords=coords, name=name,
                              hierarchies=hs or None,
                              margins=None if margins is None else margins.get(name),
                              kind=kind or ("count" if w is None else None))
        ts = cls(out)
        fin = _cross(df, list(ts.dims), ts.coords, w)
        ts.values = ts._values(fin)
        return ts

    def __len__(self) -> int:
        return len(self.tables)

    def __repr__(self) -> str:
        return (f"TableSet({len(self.tables)} tables {list(self.tables)}, finest "
                f"{self.dims} {self.shape}, {int(self.system.published.sum())} published "
                "cells)")


def _cross(df, dims, coords, w, maps=None) -> np.ndarray:
    """The records of ``df`` counted (or ``w`` summed) into the grid of ``coords``
    (``maps``: per dim, a record's code -> the table's code that holds it)."""
    shape = tuple(len(coords[d]) for d in dims)
    idx = []
    for d in dims:
        pos = {c: i for i, c in enumerate(coords[d])}
        if maps and d in maps:
            pos = {x: pos[c] for x, c in maps[d].items()}
        col = df[d].map(pos)
        if col.isna().any():
            bad = df[d][col.isna()].iloc[0]
            raise ValueError(f"column {d!r} has the label {bad!r}, which is no finest "
                             f"category of {d!r} ({list(coords[d])[:8]})")
        idx.append(col.to_numpy(np.int64))
    flat = np.ravel_multi_index(tuple(idx), shape) if dims else np.zeros(len(df), np.int64)
    out = np.bincount(flat, weights=w, minlength=int(np.prod(shape)))
    if w is None:
        out = out.astype(np.int64)
    return out.reshape(shape)


class _StructureMechanism:
    """The release's mechanism as the route resolver sees it: the routes its mechanism
    offers for hierarchical tables and sets (``structure_routes``); every other attribute
    is the mechanism's own."""

    def __init__(self, base):
        self.base = base
        self.routes = tuple(getattr(base, "structure_routes", ()))
        self.no_route = (f"{base.name} releases of hierarchical tables or table sets have "
                         "no inference route yet (suppression and margins only have one; "
                         "use rk.audit for intervals)")

    def inputs(self, release):
        from .protocol import Inputs
        return Inputs()

    def describe(self) -> str:
        return self.base.describe()

    def __getattr__(self, name):
        return getattr(self.base, name)

    def __repr__(self) -> str:
        return repr(self.base)


class TableSetRelease:
    """What a protection of a :class:`TableSet` (or of a hierarchical table) publishes.

    Parameters
    ----------
    tableset : TableSet
        The structure (its values are not part of the release: only ``values`` here is).
    values : array-like
        One published value per cell of ``tableset.system`` (NaN: not published --
        suppressed, or a finest cell no table publishes).
    mechanism : rk mechanism
        How the values were protected (public).
    info : dict, optional
        What the protection reports (numbers of suppressed cells, ...).

    Attributes
    ----------
    system, dims, shape, coords, kind
        The publication's system and its finest table.
    published : numpy.ndarray
        The finest cells' values where published (NaN elsewhere), of the finest shape.
    """

    def __init__(self, tableset, values, mechanism, info=None):
        s = tableset.system
        v = np.asarray(values, dtype=float)
        if v.shape != (s.n_var,):
            raise ValueError(f"values must hold one number per cell of the set's system "
                             f"({s.n_var}), got shape {v.shape}")
        unpub = ~s.published & ~np.isnan(v)
        if unpub.any():
            j = int(np.argmax(unpub))
            raise ValueError(f"{s.labels()[j]} is no cell of any table of the set; its value "
                             "cannot be published")
        self.tableset = tableset
        self.system = s
        self.values = v
        self.values.setflags(write=False)
        self.mechanism = _StructureMechanism(mechanism)
        self.kind = tableset.kind
        self.info = dict(info or {})
        self.margins: dict = {}
        self.groups: dict = {}
        self.subtotals: dict = {}

    dims = property(lambda self: self.system.dims)
    shape = property(lambda self: self.system.shape)
    coords = property(lambda self: self.system.coords)

    @property
    def published(self) -> np.ndarray:
        return self.values[: self.system.n_interior].reshape(self.shape)

    @property
    def hidden(self) -> np.ndarray:
        """Cells some table publishes but whose value is withheld (suppressed)."""
        return self.system.published & np.isnan(self.values)

    def cell_vector(self, system=None) -> np.ndarray:
        """The published value of every cell of the system (NaN: unknown).

        Parameters
        ----------
        system : CellSystem, optional
            Ignored (the release's own system; the argument keeps the form of
            :meth:`riskengine.Release.cell_vector`).

        Returns
        -------
        numpy.ndarray
            A copy, one float per cell of ``self.system``.
        """
        return np.array(self.values)

    def table(self, name) -> xr.DataArray:
        """Table ``name`` as published: a DataArray over its codes (NaN: suppressed).

        Parameters
        ----------
        name : str
            The table's name in the set.

        Returns
        -------
        xarray.DataArray
            Over the table's dims, every code of each (leaves, subtotals, total).
        """
        if name not in self.system.grids:
            raise KeyError(f"no table {name!r}; tables: {list(self.system.grids)}")
        return self.system.table_values(name, self.values)

    @property
    def cells(self):
        """Every published cell (rows of the system's cells that some table publishes)
        with ``value`` (NaN: suppressed) and ``suppressed``."""
        out = self.system.cells.copy()
        out["value"] = self.values
        out["suppressed"] = self.hidden
        return out[out["published"]].drop(columns=["published"])

    def __repr__(self) -> str:
        return (f"TableSetRelease({self.mechanism.describe()}, tables "
                f"{list(self.system.grids)}, {int(self.hidden.sum())} of "
                f"{int(self.system.published.sum())} cells suppressed)")


def complete_values(ts) -> np.ndarray:
    """Every cell's value of ``ts``: its values, and where the finest cells are not known
    (tables given without their microdata), a nonnegative completion that adds up (an LP
    vertex, HiGHS).  Suppression needs a value per cell only to bound the intruder's
    moves; the final audit of every pattern does not depend on it."""
    x = np.asarray(ts.values, dtype=float)
    unk = np.isnan(x)
    if not unk.any():
        return x.copy()
    from scipy.optimize import linprog
    A = ts.system.A.tocsc()
    Au, Ak = A[:, unk], A[:, ~unk]
    res = linprog(np.zeros(int(unk.sum())), A_eq=Au, b_eq=-(Ak @ x[~unk]),
                  bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError("the tables of the set cannot be completed to one nonnegative "
                         f"finest table that adds up ({res.message})")
    out = x.copy()
    out[unk] = np.maximum(res.x, 0.0)
    return out


def is_structure(table) -> bool:
    """``table`` is a TableSet or a hierarchical table (protected over its cell system)."""
    return isinstance(table, TableSet) or bool(getattr(table, "hierarchies", None))


def protect_each_cell(table, mechanism, rng) -> TableSetRelease:
    """A mechanism that perturbs every published cell on its own (random rounding, noisy
    counts) applied to every cell of a hierarchical table or a table set: each cell of
    the system is published once (a cell two tables share gets one value, as it holds
    the same records), by the mechanism's own protection of a one-dim table of them."""
    ts = table if isinstance(table, TableSet) else TableSet(table)
    if ts.kind != "count":
        raise ValueError(f"{mechanism.describe()} protects tables of counts")
    s = ts.system
    idx = np.flatnonzero(s.published)
    x = ts.values[idx]
    if np.isnan(x).any():
        raise ValueError("the set's published cells need their values (build it with "
                         "TableSet.from_pandas or pass finest=)")
    flat = Table(np.rint(x).astype(np.int64), dims=("cell",), margins=[], kind="count")
    rel = mechanism.protect(flat, rng)
    vals = np.full(s.n_var, np.nan)
    vals[idx] = np.asarray(rel.published, dtype=float)
    return TableSetRelease(ts, vals, mechanism)
