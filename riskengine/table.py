"""Table: labelled cell values plus the published structure (which totals exist)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import xarray as xr

from . import _validate as V

__all__ = ["TOTAL_LABELS", "Table", "aligned", "count_table", "default_margins",
           "margin_closure", "totals"]

#: category labels that mark a published total (compared without case): "Total" as
#: tables are usually published, "All" as ``pandas.crosstab(..., margins=True)`` writes it
#: (the CSV readers of :mod:`riskengine._io` and :meth:`Table.from_pandas` read them so)
TOTAL_LABELS = ("total", "totals", "grand total", "all")


def _is_total_label(label) -> bool:
    """``label`` names a published total (:data:`TOTAL_LABELS`, without case or spaces
    around)."""
    return isinstance(label, str) and label.strip().lower() in TOTAL_LABELS


def default_margins(dims: tuple) -> tuple:
    """All totals of a 2-D table; every (k-1)-way margin (and below) of a k-D table."""
    k = len(dims)
    return margin_closure([tuple(c) for c in combinations(dims, k - 1)] if k else [], dims)


def margin_closure(margins, dims: tuple) -> tuple:
    """Every configuration implied by the published ones (sub-totals of a total), largest first."""
    dims = tuple(dims)
    out = set()
    for keep in margins:
        keep = tuple(keep)
        unknown = [d for d in keep if d not in dims]
        if unknown:
            raise ValueError(f"margin {keep} names dims {unknown} that the table does not have "
                             f"(dims: {dims})")
        if len(set(keep)) != len(keep):
            raise ValueError(f"margin {keep} repeats a dim")
        if len(keep) == len(dims):
            raise ValueError(f"margin {keep} keeps every dim: that is the interior, not a total")
        keep = tuple(d for d in dims if d in keep)
        for r in range(len(keep) + 1):
            out.update(combinations(keep, r))
    return tuple(sorted(out, key=lambda t: (-len(t), [dims.index(d) for d in t])))


def totals(values: np.ndarray, dims: tuple, margins) -> dict:
    """Sum ``values`` (axes in ``dims`` order) down to each margin configuration."""
    out = {}
    for keep in margins:
        axes = tuple(i for i, d in enumerate(dims) if d not in keep)
        out[tuple(keep)] = np.asarray(values.sum(axis=axes))
    return out


class Table:
    """A table of counts (integers) or magnitudes (floats) with named dims and labels.

    Parameters
    ----------
    data : array-like or xarray.DataArray
        Interior cell values.  A DataArray brings its dims and coords.
    dims : tuple of str, optional
        Dimension names (default ``dim_0, dim_1, ...``).
    coords : dict, optional
        Category labels per dim (default ``0..n-1``).
    margins : sequence of tuples, optional
        Published marginal configurations, each the tuple of dims the total
        *keeps* (``("v",)`` = row totals, ``()`` = grand total).  Default: all
        totals of a 2-D table, every (k-1)-way margin of a k-D table.
    kind : {"count", "magnitude"}, optional
        Counts must be nonnegative integers; default: "count" when every value
        is integral, else "magnitude".
    hierarchies : dict, optional
        ``{dim: rk.Hierarchy}`` (or a list of alternative hierarchies of the same leaves):
        the dim's categories are the hierarchy's leaves (``coords`` default to them, in the
        hierarchy's order) and every level of it is published, in every configuration that
        keeps the dim (its total where the configuration sums it).  The table's cells at
        every level are :attr:`cells`; its equations :meth:`system`.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[15, 1], [20, 10]]), dims=("v", "w"))
    >>> t.totals()[("v",)].tolist()
    [16, 30]
    """

    def __init__(self, data, dims=None, coords=None, margins=None, kind: str | None = None,
                 name: str | None = None, hierarchies=None):
        if isinstance(data, Table):
            data = data.data
        if isinstance(data, xr.DataArray):
            if dims is None:
                dims = tuple(data.dims)
            elif set(map(str, dims)) != set(map(str, data.dims)) or len(dims) != data.ndim:
                raise ValueError(f"the DataArray has dims {tuple(data.dims)} but dims={tuple(dims)}"
                                 " (dims are matched by name, not position: rename the "
                                 "DataArray's dims, or pass its .values)")
            dims = tuple(str(d) for d in dims)
            data = data.transpose(*dims)
            given = {d: list(data.coords[d].values) if d in data.coords else None
                     for d in dims}
            if coords is not None:
                clean = _clean_coords(coords, dims, data.shape)
                data = xr.DataArray(aligned(data, dims, clean, "table data"), dims=dims,
                                    coords=clean, name=data.name)
            else:
                coords = given
            name = name or data.name
            data = data.values
        arr = np.asarray(data)
        if arr.ndim == 0:
            raise ValueError("a table needs at least one dimension, got a scalar")
        if dims is None:
            dims = tuple(f"dim_{i}" for i in range(arr.ndim))
        dims = tuple(str(d) for d in dims)
        if len(dims) != arr.ndim:
            raise ValueError(f"dims {dims} has {len(dims)} names but the data has {arr.ndim} "
                             f"dimensions (shape {arr.shape})")
        if len(set(dims)) != len(dims):
            raise ValueError(f"dims must be distinct, got {dims}")
        if arr.size == 0:
            empty = [d for d, n in zip(dims, arr.shape) if n == 0]
            raise ValueError(f"a table needs at least one category in every dim; dim "
                             f"{empty[0]!r} has none (shape {arr.shape})")
        if arr.dtype == bool:
            raise TypeError("table data must be counts or magnitudes, got a boolean array "
                            "(a mask?): convert it with .astype(int) if True/False are "
                            "counts of 1 and 0")
        if kind is None:
            af = np.asarray(arr, dtype=float) if arr.dtype != object else None
            kind = "count" if (af is not None and np.all(np.isfinite(af))
                               and np.all(af == np.round(af))) else "magnitude"
        V.choice(kind, "kind", ("count", "magnitude"))
        values = V.count_array(arr, "table counts") if kind == "count" else \
            V.magnitude_array(arr, "table values")
        self.kind = kind
        self.dims = dims
        hierarchies = _clean_hierarchies(hierarchies, dims)
        if hierarchies:
            coords = dict(coords or {})
            for d, hs in hierarchies.items():
                if coords.get(d) is None:
                    coords[d] = list(hs[0].leaves)
        self.coords = _clean_coords(coords, dims, arr.shape)
        for d, hs in hierarchies.items():
            _check_leaves(hs, d, self.coords[d])
        self.hierarchies = hierarchies
        self._system = None
        self.margins = default_margins(dims) if margins is None else margin_closure(margins, dims)
        self.name = name
        self._values = values
        self._values.setflags(write=False)

    # --- views -----------------------------------------------------------------
    @property
    def values(self) -> np.ndarray:
        return self._values

    @property
    def shape(self) -> tuple:
        return self._values.shape

    @property
    def ndim(self) -> int:
        return self._values.ndim

    @property
    def data(self) -> xr.DataArray:
        """The interior cells as a labelled DataArray."""
        return xr.DataArray(self._values.copy(), dims=self.dims, coords=self.coords,
                            name=self.name or "count", attrs={"kind": self.kind})

    def to_pandas(self):
        """The cells as a pandas Series indexed by the dims (long form; labels kept):
        ``Table.from_pandas`` reads it back.

        Returns
        -------
        pandas.Series
            One value per cell, indexed by the dims (a MultiIndex for 2 or more), named
            after the table.
        """
        return self.data.to_series()

    @classmethod
    def from_pandas(cls, df, dims=None, value: str | None = None, margins=None,
                    kind: str | None = None, name: str | None = None) -> Table:
        """A table from pandas, in any of the shapes tables come in:

        * a **Series** indexed by the dims (a MultiIndex for 2 or more; ``to_pandas``'s
          output, ``df.groupby(dims).size()``): the dims are the index level names;
        * a **long DataFrame** with ``value=`` the column of cell values and ``dims``
          the category columns (default: every other column): one row per cell;
        * **microdata** (``value`` None, ``dims`` given): one row per record, each
          cell the number of records in it;
        * a **crosstab** (``value`` and ``dims`` None): a wide 2-D DataFrame, the index
          and column names (``pd.crosstab`` sets them) as the dims.

        Labels keep pandas' order: a Categorical's categories (unobserved ones too, as
        zero cells for microdata), else the order of first appearance (crosstab: the
        index and columns as they are).

        A category labelled as a total (:data:`TOTAL_LABELS`: ``All`` as
        ``pd.crosstab(..., margins=True)`` writes it, ``Total``, ...) holds published
        totals, not cells: every block of them (the ``All`` column: the totals keeping
        the rows; the corner: the grand total) must equal the sum of its cells (else an
        error naming the total's labels and both numbers) and becomes a published margin
        of the table (``margins`` left None: exactly those; given: they must agree).  A
        block of totals is given whole or not at all.  Microdata cannot carry totals: a
        record labelled as a total is an error.  Every cell of a long form must appear once;
        a missing or repeated cell, a NaN, or a name that is not a column is an error
        naming it.

        Parameters
        ----------
        df : pandas.Series or pandas.DataFrame
            The cells (Series, long DataFrame, crosstab) or the records (microdata).
        dims : sequence of str, optional
            The category columns, in the order of the table's dims (a Series: its index
            level names, if given they must match).
        value : str, optional
            The column of cell values of a long DataFrame; None for microdata, a crosstab
            or a Series.
        margins : sequence of tuples, optional
            Published marginal configurations (as for :class:`Table`).
        kind : {"count", "magnitude"}, optional
            As for :class:`Table` (default: from the values).
        name : str, optional
            The table's name (default: a Series' name).

        Returns
        -------
        Table
            The table, with pandas' labels in pandas' order.

        Examples
        --------
        >>> import pandas as pd, riskengine as rk
        >>> people = pd.DataFrame({"sex": ["F", "M", "F", "F"], "grade": ["a", "b", "b", "a"]})
        >>> t = rk.Table.from_pandas(people, dims=["sex", "grade"])
        >>> t.values.tolist(), t.coords
        ([[2, 1], [0, 1]], {'sex': ['F', 'M'], 'grade': ['a', 'b']})
        """
        import pandas as pd
        if isinstance(df, pd.Series):
            if value is not None:
                raise ValueError("value= names a DataFrame column; a Series is its values")
            idx = df.index
            names = list(idx.names)
            if any(n is None for n in names):
                raise ValueError(f"a Series needs named index levels (the dims), got "
                                 f"{names}")
            if dims is not None and list(dims) != names:
                raise ValueError(f"dims {list(dims)} differ from the Series' index levels "
                                 f"{names}")
            frame = df.rename("__value__").reset_index()
            return cls._from_long(frame, names, "__value__", margins, kind,
                                  name if name is not None else df.name)
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"from_pandas takes a pandas Series or DataFrame, got "
                            f"{type(df).__name__}")
        if value is None and dims is None:                      # crosstab
            d0, d1 = df.index.name, df.columns.name
            if d0 is None or d1 is None:
                raise ValueError("a crosstab needs a named index and named columns (the "
                                 f"dims; pd.crosstab names them), got {d0!r} and {d1!r}; or "
                                 "pass value= for a long DataFrame, dims= for microdata")
            vals = df.to_numpy()
            _no_nan(vals, "the crosstab")
            dims2 = (str(d0), str(d1))
            labels = {dims2[0]: [_plain(x) for x in df.index],
                      dims2[1]: [_plain(x) for x in df.columns]}
            split = _split_totals(vals, None, dims2, labels, "the crosstab")
            if split is None:
                return cls(vals, dims=dims2, coords=labels, margins=margins, kind=kind,
                           name=name)
            vals, labels, found = split
            return cls(vals, dims=dims2, coords=labels,
                       margins=_published_margins(found, margins, dims2, "the crosstab"),
                       kind=kind, name=name)
        cols = [str(c) for c in df.columns]
        if value is not None and value not in cols:
            raise ValueError(f"no value column {value!r}; columns are {cols}")
        dims = [c for c in cols if c != value] if dims is None else list(dims)
        for d in dims:
            if d not in cols:
                raise ValueError(f"no column {d!r} for a dim; columns are {cols}")
        bad = [d for d in dims if df[d].isna().any()]
        if bad:
            raise ValueError(f"column {bad[0]!r} has missing labels (NaN): every record / "
                             "cell needs a category in every dim")
        if value is None:                                       # microdata: count records
            for d in dims:
                hit = [lab for lab in _levels(df[d]) if _is_total_label(lab)]
                if hit:
                    raise ValueError(
                        f"column {d!r} has the category {hit[0]!r}, a total label "
                        f"({', '.join(TOTAL_LABELS)}): microdata records are counted into "
                        "cells and cannot be published totals; drop the total rows, or "
                        "rename the category if it is a real one")
            counts = df.groupby(dims, observed=False, sort=False).size()
            full = pd.MultiIndex.from_product([_levels(df[d]) for d in dims], names=dims)
            counts = counts.reindex(full, fill_value=0)
            return cls._from_long(counts.rename("__value__").reset_index(), dims,
                                  "__value__", margins, kind, name)
        return cls._from_long(df, dims, value, margins, kind, name)

    @classmethod
    def _from_long(cls, frame, dims, value, margins, kind, name) -> Table:
        labels = {d: _levels(frame[d]) for d in dims}
        pos = [frame[d].map({lab: i for i, lab in enumerate(labels[d])}).to_numpy()
               for d in dims]
        vals = frame[value].to_numpy(dtype=float)
        _no_nan(vals, f"column {value!r}")
        shape = tuple(len(labels[d]) for d in dims)
        flat = np.ravel_multi_index(tuple(np.asarray(p, dtype=np.int64) for p in pos), shape)
        seen = np.bincount(flat, minlength=int(np.prod(shape)))
        if (seen > 1).any():
            k = np.unravel_index(int(np.argmax(seen > 1)), shape)
            raise ValueError(f"cell {dict(zip(dims, (labels[d][i] for d, i in zip(dims, k))))}"
                             " appears more than once")
        out = np.full(int(np.prod(shape)), np.nan)
        out[flat] = vals
        out = out.reshape(shape)
        split = _split_totals(out, seen.reshape(shape) > 0, tuple(dims), labels,
                              "the long form")
        found = None
        if split is not None:
            out, labels, found = split
            seen = np.ones(out.shape, dtype=np.int64)
        if (seen == 0).any():
            k = np.unravel_index(int(np.argmax(seen == 0)), shape)
            raise ValueError(f"cell {dict(zip(dims, (labels[d][i] for d, i in zip(dims, k))))}"
                             " is missing (a long form needs every combination)")
        if kind != "magnitude" and np.all(out == np.round(out)):
            out = out.astype(np.int64)
        if found is not None:
            margins = _published_margins(found, margins, tuple(dims), "the long form")
        return cls(out, dims=tuple(dims), coords=labels, margins=margins, kind=kind,
                   name=name)

    def totals(self) -> dict:
        """Published totals: ``{dims kept: ndarray}``.

        Returns
        -------
        dict
            For each published marginal configuration (the tuple of dims it keeps,
            ``()`` for the grand total), the array of its totals.
        """
        return totals(self._values, self.dims, self.margins)

    def system(self):
        """The :class:`riskengine.cell_system.CellSystem` of the table: every published cell
        (interior, subtotals at every level of each hierarchy, totals) and its equations.

        Returns
        -------
        riskengine.cell_system.CellSystem
        """
        if self._system is None:        # the table is read-only: built once
            from .cell_system import cell_system
            self._system = cell_system({self.name or "table": self})
        return self._system

    @property
    def cells(self):
        """Every published cell (interior, subtotals, totals) with its codes and value, as
        a pandas DataFrame (one row per cell; a dim at its total shows the total's code).

        Returns
        -------
        pandas.DataFrame
            Columns: one per dim (the cell's code), ``value``, ``level`` (the number of
            dims at a subtotal or total code: 0 for an interior cell).
        """
        s = self.system()
        x = s.vector(self._values)
        out = s.cells.loc[s.published, list(self.dims)].copy()
        out["value"] = x[s.published]
        fin = {d: set(s.coords[d]) for d in self.dims}
        out["level"] = sum((~out[d].isin(fin[d])).astype(int) for d in self.dims)
        return out.reset_index(drop=True)

    def __repr__(self) -> str:
        h = (f", hierarchies={sorted(self.hierarchies)}" if self.hierarchies else "")
        return (f"Table(kind={self.kind!r}, dims={self.dims}, shape={self.shape}, "
                f"margins={list(self.margins)}{h})")

    def __eq__(self, other):
        return (isinstance(other, Table) and self.dims == other.dims
                and self.margins == other.margins and self.coords == other.coords
                and self.hierarchies == getattr(other, "hierarchies", {})
                and np.array_equal(self._values, other._values))

    __hash__ = None


def aligned(values, dims, coords, what: str) -> np.ndarray:
    """``values`` as a plain array in the order of ``dims`` and of each dim's labels.

    A :class:`Table` or ``xarray.DataArray`` is matched by dim names (transposed) and by
    labels (reordered); its dims must be exactly ``dims`` and each dim's labels exactly
    those of ``coords`` (a DataArray dim without labels is taken in order, checking its
    size).  A plain array is taken as it is and must have the shape of ``coords``.  Any
    mismatch is a ``ValueError`` naming the dims or labels that differ.

    >>> import xarray as xr
    >>> da = xr.DataArray([[1, 2], [3, 4]], dims=("w", "v"),
    ...                   coords={"w": ["b", "a"], "v": [0, 1]})
    >>> aligned(da, ("v", "w"), {"v": [0, 1], "w": ["a", "b"]}, "truth").tolist()
    [[3, 1], [4, 2]]
    """
    dims = tuple(dims)
    shape = tuple(len(coords[d]) for d in dims)
    if isinstance(values, Table):
        values = values.data
    if not isinstance(values, xr.DataArray):
        arr = np.asarray(values)
        if arr.shape != shape:
            raise ValueError(f"{what} has shape {arr.shape}, expected {shape} (dims {dims})")
        return arr
    if set(values.dims) != set(dims) or values.ndim != len(dims):
        raise ValueError(f"{what} has dims {tuple(values.dims)}, expected {dims} (matched by "
                         "name; rename the dims if only their names differ)")
    values = values.transpose(*dims)
    for d in dims:
        want = list(coords[d])
        if d not in values.coords:
            if values.sizes[d] != len(want):
                raise ValueError(f"{what} has {values.sizes[d]} categories of {d!r}, expected "
                                 f"{len(want)}")
            continue
        have = [_plain(x) for x in values.coords[d].values.tolist()]
        if have == want:
            continue
        if sorted(map(repr, have)) != sorted(map(repr, want)) or len(set(map(repr, have))) != \
                len(have):
            extra = [x for x in have if x not in want]
            missing = [x for x in want if x not in have]
            raise ValueError(f"{what}: the labels of {d!r} differ from the release's "
                             f"({'unknown ' + str(extra[:5]) if extra else ''}"
                             f"{'; ' if extra and missing else ''}"
                             f"{'missing ' + str(missing[:5]) if missing else ''})")
        pos = {repr(x): i for i, x in enumerate(have)}
        values = values.isel({d: [pos[repr(x)] for x in want]})
    return np.asarray(values.values)


def count_table(table, who: str) -> Table:
    """``table`` as an :class:`Table` of counts (an array or DataArray is wrapped), or a
    clear error naming ``who`` needs counts."""
    if not isinstance(table, Table):
        table = Table(table)
    if table.kind != "count":
        raise ValueError(f"{who} protects tables of counts; this table holds non-integer "
                         "magnitudes")
    if table.hierarchies:
        raise ValueError(f"{who} protects flat tables (interior and margins); this table "
                         f"has hierarchies on {sorted(table.hierarchies)}, whose subtotals "
                         "it would not publish: protect it with rk.suppress (every level at "
                         "once), or pass rk.Table(t.data, margins=t.margins) to protect the "
                         "leaves and totals only")
    return table


def _clean_hierarchies(hierarchies, dims) -> dict:
    """``{dim: (Hierarchy, ...)}`` from ``{dim: Hierarchy or [Hierarchy, ...]}``."""
    if not hierarchies:
        return {}
    from .hierarchy import Hierarchy
    out = {}
    for d, hs in dict(hierarchies).items():
        d = str(d)
        if d not in dims:
            raise ValueError(f"hierarchies given for dim {d!r}, which the table does not have "
                             f"(dims: {dims})")
        hs = (hs,) if isinstance(hs, Hierarchy) else tuple(hs)
        if not hs or not all(isinstance(h, Hierarchy) for h in hs):
            raise TypeError(f"hierarchies[{d!r}] must be an rk.Hierarchy or a list of them")
        out[d] = hs
    return out


def _check_leaves(hs, d, labels) -> None:
    """Every hierarchy of dim ``d`` has exactly the dim's categories as its leaves."""
    have = set(labels)
    for h in hs:
        leaves = set(h.leaves)
        if leaves != have:
            missing = [x for x in labels if x not in leaves]
            extra = [x for x in h.leaves if x not in have]
            raise ValueError(
                f"the hierarchy of dim {d!r} must have the dim's categories as its leaves: "
                + "; ".join(p for p in (
                    f"categories that are no leaf of it: {missing[:5]}" if missing else "",
                    f"leaves that are no category: {extra[:5]}" if extra else "") if p))


def _clean_coords(coords, dims, shape) -> dict:
    coords = dict(coords or {})
    unknown = set(coords) - set(dims)
    if unknown:
        raise ValueError(f"coords given for unknown dims {sorted(unknown)}; dims are {dims}")
    out = {}
    for d, n in zip(dims, shape):
        labels = coords.get(d)
        if labels is None:
            labels = list(range(n))
        labels = [_plain(x) for x in np.asarray(labels, dtype=object).ravel().tolist()]
        if len(labels) != n:
            raise ValueError(f"dim {d!r} has {n} categories but {len(labels)} labels were given")
        if len(set(labels)) != n:
            raise ValueError(f"labels of dim {d!r} must be distinct, got {labels}")
        out[d] = labels
    return out


def _plain(x):
    """Labels as plain Python str / int (JSON- and netCDF-friendly)."""
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, (float, np.floating)) and float(x).is_integer():
        return int(x)
    return str(x)


def _levels(col) -> list:
    """A pandas column's categories: a Categorical's own (in order), else the values in
    order of first appearance."""
    import pandas as pd
    if isinstance(col.dtype, pd.CategoricalDtype):
        return [_plain(x) for x in col.cat.categories]
    return [_plain(x) for x in pd.unique(col)]


def _plain(x):
    return x.item() if isinstance(x, np.generic) else x


def total_positions(dims, labels, where: str) -> dict:
    """``{dim: position of its total category}`` (:data:`TOTAL_LABELS`), for the dims
    that have one; more than one total category in a dim is an error naming them."""
    total = {}
    for d in dims:
        at = [i for i, lab in enumerate(labels[d]) if _is_total_label(lab)]
        if len(at) > 1:
            raise ValueError(f"{where}: dim {d!r} has {len(at)} total categories "
                             f"{[labels[d][i] for i in at]}; one is the total, the others "
                             "would be dropped")
        if at:
            total[d] = at[0]
    return total


def _split_totals(grid, present, dims, labels, where: str):
    """Split a grid whose categories include total labels (:data:`TOTAL_LABELS`) into its
    cells and its published totals: ``(cells, labels without the totals, [dims kept by
    each block of totals])``, each block checked against the sum of its cells; None when
    no category is a total.  ``present``: which entries the source gave (a long form may
    leave a whole block of totals out; None: every entry)."""
    dims = tuple(dims)
    total = total_positions(dims, labels, where)
    if not total:
        return None
    for d in total:
        if len(labels[d]) == 1:
            raise ValueError(f"{where}: dim {d!r} holds only the total "
                             f"{labels[d][total[d]]!r}, no category of cells")
    grid = np.asarray(grid)
    present = np.ones(grid.shape, bool) if present is None else np.asarray(present, bool)
    inner = {d: [i for i in range(len(labels[d])) if total.get(d) != i] for d in dims}
    coords = {d: [labels[d][i] for i in inner[d]] for d in dims}
    cells = grid[np.ix_(*(inner[d] for d in dims))]
    have = present[np.ix_(*(inner[d] for d in dims))]
    if not have.all():
        k = tuple(int(i) for i in np.argwhere(~have)[0])
        raise ValueError(f"{where}: cell {dict(zip(dims, (coords[d][i] for d, i in zip(dims, k))))}"
                         " is missing (a long form needs every combination)")
    found = []
    tdims = [d for d in dims if d in total]
    for r in range(1, len(tdims) + 1):
        for summed in combinations(tdims, r):
            keep = tuple(d for d in dims if d not in summed)
            idx = np.ix_(*([total[d]] if d in summed else inner[d] for d in dims))
            axes = tuple(i for i, d in enumerate(dims) if d in summed)
            block = grid[idx].sum(axis=axes)     # one entry along each summed axis
            given = present[idx].all(axis=axes)
            over = ", ".join(repr(d) for d in summed)
            if not given.any():
                continue                          # this block is not published
            if not given.all():
                k = tuple(int(i) for i in np.argwhere(~given)[0])
                raise ValueError(
                    f"{where}: the totals over {over} are given for some categories but not "
                    f"for {_entry_label(dims, summed, total, labels, coords, keep, k)}: a "
                    "block of totals is published whole or not at all")
            sums = cells.sum(axis=axes)
            diff = np.abs(np.asarray(sums, float) - np.asarray(block, float))
            tol = 1e-9 * max(float(np.max(np.abs(block), initial=0.0)), 1.0) * \
                max(1, int(np.prod([cells.shape[a] for a in axes])))
            if np.any(diff > tol):
                k = tuple(int(i) for i in np.argwhere(np.atleast_1d(diff > tol))[0])[:len(keep)]
                at = k if keep else ()
                entry = _entry_label(dims, summed, total, labels, coords, keep, k)
                raise ValueError(
                    f"{where}: the total {entry} is {_num(np.asarray(block)[at])} but the "
                    f"cells it sums (over {over}) add up to {_num(np.asarray(sums)[at])}: a "
                    "total row or column "
                    f"({', '.join(repr(labels[d][total[d]]) for d in summed)}) must be the sum "
                    "of its cells")
            found.append(keep)
    return cells, coords, found


def _entry_label(dims, summed, total, labels, coords, keep, k) -> str:
    """The labels of one total entry, e.g. ``('F', 'All')``."""
    pos = dict(zip(keep, k))
    return "(" + ", ".join(str(labels[d][total[d]]) if d in summed else str(coords[d][pos[d]])
                           for d in dims) + ")"


def _num(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.10g}"


def _published_margins(found, margins, dims, where: str):
    """The table's margins when its source held totals ``found``: those, or ``margins``
    when it says the same."""
    have = margin_closure(found, dims)
    if margins is None:
        return found
    want = margin_closure(margins, dims)
    if want != have:
        raise ValueError(f"{where} holds the totals {list(have)} (its total rows/columns) but "
                         f"margins={list(margins)} publishes {list(want)}: leave margins=None "
                         "to publish the totals it holds")
    return margins


def _no_nan(vals, what: str) -> None:
    if np.isnan(np.asarray(vals, dtype=float)).any():
        raise ValueError(f"{what} holds a missing value (NaN): every cell needs a number")
