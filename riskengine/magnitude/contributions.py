"""Magnitude tables from respondent contributions (microdata).

A magnitude table (sales, employment, ...) is built from one row per respondent
contribution: a category per dim and a nonnegative value.  Sensitivity rules
(:mod:`riskengine.magnitude.sensitivity`) need more than the cell value: the contributions
of each cell sorted from largest to smallest (seed 004, "Notation": ``x_1 >= x_2
>= ... >= x_LAST``).  Totals are cells too: the contributions of a total are the
union of the contributions of its cells (with a ``respondent`` column, a
respondent's contributions to several cells of one total are first added up, so
that the total sees one contribution per respondent).

Storage is compressed-row: the contributions of every cell of the tabular system
(:func:`riskengine.tabular.tabular_system`: interior first, then each total block),
each cell's slice sorted descending.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..table import Table
from ..tabular import TabularSystem, tabular_system

__all__ = ["Contributions", "contributions"]


@dataclass(frozen=True, eq=False)
class Contributions:
    """A magnitude table with the sorted respondent contributions of every cell.

    Built by :func:`contributions`; the parameters are also its (read-only) attributes.

    Parameters
    ----------
    table : Table
        The magnitude table (kind ``"magnitude"``) with its totals structure.
    system : TabularSystem
        The cells of the table, totals included, as one vector (``system.labels()``).
    values : ndarray
        Every cell's contributions, cell after cell in system order, each cell's
        slice sorted descending.
    offsets : ndarray
        Cell ``i`` holds ``values[offsets[i]:offsets[i + 1]]``.
    """

    table: Table
    system: TabularSystem
    values: np.ndarray
    offsets: np.ndarray

    @property
    def n_cells(self) -> int:
        """Cells of the system (interior and totals)."""
        return self.system.n_var

    def cell(self, i: int) -> np.ndarray:
        """Contributions of system cell ``i`` (descending).

        Parameters
        ----------
        i : int
            The cell's index in the system's cell vector (``system.labels()``).

        Returns
        -------
        numpy.ndarray
            The cell's contributions, largest first.
        """
        return self.values[self.offsets[i]:self.offsets[i + 1]]

    def interior(self, *index) -> np.ndarray:
        """Contributions of the interior cell at ``index`` (descending).

        Parameters
        ----------
        *index : int
            The cell's index along each dim of the table.

        Returns
        -------
        numpy.ndarray
            The cell's contributions, largest first.
        """
        flat = int(np.ravel_multi_index(tuple(int(i) for i in index), self.system.shape))
        return self.cell(flat)

    def total(self, keep, *index) -> np.ndarray:
        """Contributions of the total keeping dims ``keep`` at ``index`` (descending).

        Parameters
        ----------
        keep : sequence of str
            The dims the total keeps (``()``: the grand total).
        *index : int
            The total's index along each kept dim.

        Returns
        -------
        numpy.ndarray
            The total's contributions (one per respondent with a ``respondent``
            column), largest first.
        """
        b = self.system.block(keep)
        flat = int(np.ravel_multi_index(tuple(int(i) for i in index), b.shape)) if index else 0
        return self.cell(b.offset + flat)

    def cell_values(self) -> np.ndarray:
        """Cell values (sums of contributions), system order.

        Returns
        -------
        numpy.ndarray
            Float vector of length ``n_cells``.
        """
        cell, _ = self.rank()
        return np.bincount(cell, weights=self.values, minlength=self.n_cells)

    def counts(self) -> np.ndarray:
        """Number of contributions per cell, system order.

        Returns
        -------
        numpy.ndarray
            int64 vector of length ``n_cells``.
        """
        return np.diff(self.offsets)

    def rank(self) -> tuple:
        """``(cell, position)`` of every stored contribution (position 0 = largest).

        Returns
        -------
        cell : numpy.ndarray
            int64 system cell of each entry of ``values``.
        position : numpy.ndarray
            int64 rank of each entry within its cell, 0 for the largest.
        """
        n = np.diff(self.offsets)
        cell = np.repeat(np.arange(self.n_cells), n)
        pos = np.arange(self.values.size) - np.repeat(self.offsets[:-1], n)
        return cell, pos


def contributions(data, dims, value: str, categories: dict | None = None,
                  margins=None, respondent: str | None = None, name: str | None = None
                  ) -> Contributions:
    """Build a magnitude table from microdata, keeping each cell's sorted contributions.

    Parameters
    ----------
    data : pandas.DataFrame or dict of 1-D arrays
        One row per respondent contribution.
    dims : sequence of str
        The columns that classify a contribution (one per table dim).
    value : str
        The column of (nonnegative, finite) contributions.
    categories : dict, optional
        ``{dim: [labels in order]}``; default: the sorted distinct labels of the
        data.  A label in the data that is not listed is an error; listed labels
        without data give empty cells.
    margins : sequence of tuples, optional
        Published totals (dims kept), as in :class:`~riskengine.Table`.
    respondent : str, optional
        A respondent id column: contributions of one respondent to one cell (or
        to the cells of one total) are added up before sorting.
    name : str, optional
        Name of the table (default: ``value``).

    Returns
    -------
    Contributions
        The magnitude table and the sorted contributions of each of its cells.

    Examples
    --------
    >>> import riskengine as rk
    >>> c = rk.contributions({"region": ["N", "N", "S", "S", "S"],
    ...                       "sales": [70.0, 30.0, 5.0, 15.0, 80.0]},
    ...                      dims=["region"], value="sales")
    >>> c.table.values.tolist()
    [100.0, 100.0]
    >>> c.interior(1).tolist(), c.total(()).tolist()
    ([80.0, 15.0, 5.0], [80.0, 70.0, 30.0, 15.0, 5.0])
    """
    cols = _columns(data)
    if isinstance(dims, str):
        dims = [dims]
    dims = tuple(str(d) for d in dims)
    if not dims:
        raise ValueError("dims must name at least one column")
    if len(set(dims)) != len(dims):
        raise ValueError(f"dims must be distinct columns, got {dims}")
    need = list(dims) + [value] + ([respondent] if respondent is not None else [])
    missing = [c for c in need if c not in cols]
    if missing:
        raise ValueError(f"unknown columns {missing}; the data has columns {sorted(cols)}")
    if value in dims:
        raise ValueError(f"the value column {value!r} cannot also be a dim")
    vals = np.asarray(cols[value])
    if vals.ndim != 1:
        raise ValueError(f"column {value!r} must be 1-D, got shape {vals.shape}")
    if vals.dtype == object or not (np.issubdtype(vals.dtype, np.number) or vals.dtype == bool):
        raise TypeError(f"column {value!r} must be numeric, got dtype {vals.dtype}")
    vals = vals.astype(float)
    n = vals.size
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        raise ValueError(f"column {value!r} must be finite (no NaN/inf), got {vals[bad[0]]} "
                         f"in row {bad[0]}")
    bad = np.flatnonzero(vals < 0)
    if bad.size:
        raise ValueError(f"contributions must be nonnegative, got {vals[bad[0]]:g} in row "
                         f"{bad[0]} of column {value!r}")
    categories = dict(categories or {})
    unknown = set(categories) - set(dims)
    if unknown:
        raise ValueError(f"categories given for columns {sorted(unknown)} that are not dims {dims}")
    codes, labels = [], {}
    for d in dims:
        col = np.asarray(cols[d], dtype=object)
        if col.shape != (n,):
            raise ValueError(f"column {d!r} has {col.size} rows, column {value!r} has {n}")
        if d in categories:
            order = list(categories[d])
            if len(set(order)) != len(order):
                raise ValueError(f"categories of {d!r} must be distinct, got {order}")
            pos = {lab: i for i, lab in enumerate(order)}
            try:
                code = np.fromiter((pos[x] for x in col.tolist()), np.int64, n)
            except KeyError as exc:
                raise ValueError(f"column {d!r} holds {exc.args[0]!r}, which is not among its "
                                 f"categories {order}") from None
        else:
            order, code = _factorize(col, d)
        codes.append(code)
        labels[d] = order
    shape = tuple(len(labels[d]) for d in dims)
    if any(s == 0 for s in shape):
        raise ValueError(f"every dim needs at least one category, got shape {shape}")
    table0 = Table(np.zeros(shape), dims=dims, coords=labels, margins=margins, kind="magnitude")
    system = tabular_system(dims, shape, table0.margins, coords=table0.coords)
    if respondent is not None:
        _, rid = np.unique(np.asarray(cols[respondent], dtype=object).astype(str),
                           return_inverse=True)
        if rid.shape != (n,):
            raise ValueError(f"column {respondent!r} must have {n} rows")
    else:
        rid = np.arange(n)
    cells, contrib = [], []
    for b in system.blocks:
        kept = [codes[dims.index(d)] for d in b.keep]
        flat = (np.ravel_multi_index(tuple(kept), b.shape) if kept
                else np.zeros(n, np.int64)) + b.offset
        if respondent is not None:
            key = flat.astype(np.int64) * (int(rid.max(initial=0)) + 1) + rid
            uk, inv = np.unique(key, return_inverse=True)
            contrib.append(np.bincount(inv, weights=vals, minlength=uk.size))
            cells.append(uk // (int(rid.max(initial=0)) + 1))
        else:
            cells.append(flat)
            contrib.append(vals)
    cell = np.concatenate(cells) if cells else np.zeros(0, np.int64)
    cv = np.concatenate(contrib) if contrib else np.zeros(0)
    order = np.lexsort((-cv, cell))
    cell, cv = cell[order], cv[order]
    offsets = np.zeros(system.n_var + 1, np.int64)
    np.cumsum(np.bincount(cell, minlength=system.n_var), out=offsets[1:])
    interior = np.bincount(cell[cell < system.n_interior], weights=cv[cell < system.n_interior],
                           minlength=system.n_interior).reshape(shape)
    table = Table(interior, dims=dims, coords=labels, margins=table0.margins, kind="magnitude",
                  name=name or value)
    cv.setflags(write=False)
    offsets.setflags(write=False)
    return Contributions(table, system, cv, offsets)


def _columns(data) -> dict:
    if isinstance(data, dict):
        return data
    if hasattr(data, "columns") and hasattr(data, "__getitem__"):  # pandas.DataFrame
        return {str(c): np.asarray(data[c]) for c in data.columns}
    raise TypeError(f"data must be a pandas.DataFrame or a dict of columns, "
                    f"got {type(data).__name__}")


def _factorize(col: np.ndarray, name: str):
    try:
        order = sorted(set(col.tolist()))
    except TypeError:
        raise TypeError(f"labels of column {name!r} cannot be sorted (mixed types); give their "
                        "order in categories=") from None
    pos = {lab: i for i, lab in enumerate(order)}
    return order, np.fromiter((pos[x] for x in col.tolist()), np.int64, col.size)
