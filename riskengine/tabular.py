"""The tabular system T·x = 0: every cell of a table, totals included, as one vector.

Seeds 000, 002 and 004 write a table with its totals as a vector ``x`` of all its
cells (interior, subtotals, totals) and the additivity of the table as the linear
system ``T x = 0``.  Suppression audits, complementary suppression and controlled
tabular adjustment are all linear programs over this system; this module builds
it once, as a sparse matrix, for any published structure:

* the interior (all dims kept) and every published marginal configuration
  (``Table.margins`` / ``Release.structure``: tuples of the dims each total keeps);
* optionally one level of *subtotals* along a dim: ``groups={"v": [[0, 1], [2, 3, 4]]}``
  partitions the categories of ``v`` into groups, and every configuration that keeps
  ``v`` gets a grouped twin that keeps the group instead of the category.

Variables are laid out block by block (interior first, C order inside a block); a
:class:`Block` says where each block sits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import xarray as xr

from .table import default_margins, margin_closure

__all__ = ["Block", "TabularSystem", "aggregation", "cell_values", "check_equations",
           "tabular_system"]


@dataclass(frozen=True)
class Block:
    """One block of the cell vector: a configuration (dims kept), maybe grouped along a dim.

    Parameters
    ----------
    keep : tuple of str
        The dims kept, in table order (all dims: the interior).
    grouped : str or None
        The dim aggregated to its groups (subtotals), or None.
    shape : tuple of int
        The block's shape (a grouped dim has one entry per group).
    offset : int
        The index of the block's first cell in the cell vector.
    """

    keep: tuple          #: dims kept, in table order (all dims = the interior)
    grouped: str | None  #: dim aggregated to its groups (subtotals), or None
    shape: tuple         #: shape of the block (a grouped dim has one entry per group)
    offset: int          #: index of the block's first cell in the vector

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)

    @property
    def is_interior(self) -> bool:
        return self.grouped is None and self.offset == 0

    @property
    def suffix(self) -> str:
        """Name suffix of the block's variables in Datasets: ``""`` for the interior,
        ``"_total_v"`` for the totals keeping ``v`` (``"_total"``: the grand total),
        ``"_subtotal_v_w"`` for a grouped block."""
        if self.is_interior:
            return ""
        return ("_total" if self.grouped is None else "_subtotal") + \
            "".join("_" + d for d in self.keep)

    @property
    def xdims(self) -> tuple:
        """Dimension names of the block in Datasets (a grouped dim ``v`` becomes
        ``v_group``: it has one entry per group)."""
        return tuple(f"{d}_group" if d == self.grouped else d for d in self.keep)

    @property
    def label(self) -> str:
        base = "interior" if self.is_interior else ("total(" + ",".join(self.keep) + ")")
        return base if self.grouped is None else f"subtotal[{self.grouped}]({','.join(self.keep)})"


@dataclass(frozen=True)
class TabularSystem:
    """``A @ x == 0`` for the vector ``x`` of every cell of the table, totals included.

    Built by :func:`tabular_system`.

    Parameters
    ----------
    dims : tuple of str
        The interior's dimension names.
    shape : tuple of int
        The interior's shape.
    structure : tuple of tuples
        The published margin configurations (dims kept), largest first.
    groups : dict
        ``{dim: tuple of tuples of category indices}``: the subtotal groups.
    blocks : tuple of Block
        One block per configuration, the interior first.
    A : scipy.sparse.csr_matrix
        The equations, one row each, over the ``n_var`` cells; entries in {-1, 0, 1}.
    coords : dict, optional
        The table's categories: :meth:`labels` (and every error naming a cell of the
        system) names cells by them.

    Examples
    --------
    >>> import numpy as np
    >>> s = tabular_system(("v", "w"), (2, 3))
    >>> [b.label for b in s.blocks]
    ['interior', 'total(v)', 'total(w)', 'total()']
    >>> x = s.vector(np.array([[1, 2, 3], [4, 5, 6]]))
    >>> x.tolist()
    [1, 2, 3, 4, 5, 6, 6, 15, 5, 7, 9, 21]
    >>> bool(np.all(s.A @ x == 0))
    True
    """

    dims: tuple
    shape: tuple
    structure: tuple                 #: published margin configurations (dims kept), largest first
    groups: dict                     #: {dim: tuple of tuples of category indices}
    blocks: tuple                    #: Block per configuration, interior first
    A: sp.csr_matrix                 #: equations x n_var, entries in {-1, 0, 1}
    #: the table's categories (``{dim: labels}``), for the labels of errors; None: none given
    coords: dict | None = field(default=None, compare=False, repr=False)

    @property
    def n_var(self) -> int:
        return self.A.shape[1]

    @property
    def n_interior(self) -> int:
        return self.blocks[0].size

    def block(self, keep, grouped: str | None = None) -> Block:
        """The block of configuration ``keep`` (dims kept), grouped along ``grouped``.

        Parameters
        ----------
        keep : sequence of str
            The dims the configuration keeps (in any order).
        grouped : str, optional
            The dim aggregated to its groups; None: the ungrouped block.

        Returns
        -------
        Block
            The block.

        Raises
        ------
        KeyError
            If the system has no such block (the message lists the blocks).
        """
        keep = tuple(d for d in self.dims if d in tuple(keep))
        for b in self.blocks:
            if b.keep == keep and b.grouped == grouped:
                return b
        raise KeyError(f"no block keeps {keep}" + (f" grouped by {grouped!r}" if grouped else "")
                       + f"; blocks: {[b.label for b in self.blocks]}")

    def vector(self, interior) -> np.ndarray:
        """Every cell of the table (interior, subtotals, totals) from its interior.

        Parameters
        ----------
        interior : array-like
            The interior cells, of shape ``self.shape``.

        Returns
        -------
        numpy.ndarray
            The cell vector, length ``n_var``, block by block.
        """
        v = np.asarray(interior)
        if v.shape != self.shape:
            raise ValueError(f"interior must have shape {self.shape}, got {v.shape}")
        out = np.empty(self.n_var, dtype=np.result_type(v.dtype, np.int64))
        for b in self.blocks:
            out[b.slice] = self._aggregate(v, b).ravel()
        return out

    def split(self, x) -> dict:
        """``{(keep, grouped): array}`` views of a cell vector, block by block.

        Parameters
        ----------
        x : array-like
            A cell vector of length ``n_var``.

        Returns
        -------
        dict
            For each block, keyed by ``(dims kept, grouped dim or None)``, its cells
            reshaped to the block's shape.
        """
        x = np.asarray(x)
        if x.shape != (self.n_var,):
            raise ValueError(f"cell vector must have length {self.n_var}, got shape {x.shape}")
        return {(b.keep, b.grouped): x[b.slice].reshape(b.shape) for b in self.blocks}

    def release_parts(self, x) -> tuple:
        """``(interior, margins, subtotals)`` of a cell vector in the form
        :class:`riskengine.Release` takes them: ``margins`` keyed by the dims each total
        keeps, ``subtotals`` by the dims of each grouped block (empty without groups).

        Parameters
        ----------
        x : array-like
            A cell vector of length ``n_var``.

        Returns
        -------
        interior : numpy.ndarray
            The interior cells, of shape ``self.shape``.
        margins : dict
            ``{dims kept: array}`` of every ungrouped total.
        subtotals : dict
            ``{dims kept: array}`` of every grouped block.
        """
        parts = self.split(x)
        margins = {b.keep: parts[(b.keep, None)] for b in self.blocks[1:]
                   if b.grouped is None}
        subtotals = {b.keep: parts[(b.keep, b.grouped)] for b in self.blocks
                     if b.grouped is not None}
        return parts[(self.dims, None)], margins, subtotals

    def labels(self, coords: dict | None = None) -> list:
        """A readable label per variable: by position, ``interior[1, 2]``,
        ``total(v)[0]``, ...; with the table's ``coords``, by its categories:
        ``(North West, 85+)`` for a cell, ``(North West, total)`` for the total of a row
        (a dim summed over is ``total``), ``(group North West + North East, 85+)`` for a
        subtotal.

        Parameters
        ----------
        coords : dict, optional
            ``{dim: categories}`` of the interior (``Table.coords``); None, or every
            dim's categories ``0 .. n-1`` (no labels given): by position.

        Returns
        -------
        list of str
            ``n_var`` labels, in the order of the cell vector.

        Examples
        --------
        >>> s = tabular_system(("region", "age"), (2, 2))
        >>> s.labels()[1], s.labels()[7]
        ('interior[0, 1]', 'total(age)[1]')
        >>> lab = s.labels({"region": ["North", "South"], "age": ["0-64", "65+"]})
        >>> lab[1], lab[4], lab[7], lab[-1]
        ('(North, 65+)', '(North, total)', '(total, 65+)', '(total, total)')
        """
        coords = self.coords if coords is None else coords
        named = coords is not None and any(
            list(coords.get(d, range(n))) != list(range(n)) for d, n in zip(self.dims, self.shape))
        out = []
        for b in self.blocks:
            for idx in np.ndindex(*b.shape):
                if not named:
                    out.append(f"{b.label}[{', '.join(map(str, idx))}]")
                    continue
                at = dict(zip(b.keep, idx))
                parts = []
                for d, n in zip(self.dims, self.shape):
                    labs = list(coords.get(d, range(n)))
                    if d not in at:
                        parts.append("total")
                    elif d == b.grouped:
                        parts.append("group " + " + ".join(
                            str(labs[i]) for i in self.groups[d][at[d]]))
                    else:
                        parts.append(str(labs[at[d]]))
                out.append("(" + ", ".join(parts) + ")")
        return out

    def _aggregate(self, v: np.ndarray, b: Block) -> np.ndarray:
        axes = tuple(i for i, d in enumerate(self.dims) if d not in b.keep)
        s = v.sum(axis=axes) if axes else v
        if b.grouped is None:
            return s
        ax = b.keep.index(b.grouped)
        return np.stack([np.take(s, list(g), axis=ax).sum(axis=ax)
                         for g in self.groups[b.grouped]], axis=ax)


def tabular_system(dims, shape, structure=None, groups=None, coords=None) -> TabularSystem:
    """Build ``T`` for a table with ``dims``/``shape`` and published ``structure``.

    Parameters
    ----------
    dims, shape
        Dimension names and sizes of the interior.
    structure : sequence of tuples, optional
        Published margin configurations (dims kept); closed under further summing.
        Default: the table's default structure (all totals of a 2-D table, every
        (k-1)-way margin of a k-D table); ``()`` gives an interior-only system.
    groups : dict, optional
        ``{dim: [[category indices], ...]}``: one level of subtotals along ``dim``;
        the groups must partition the categories.
    coords : dict, optional
        ``{dim: categories}``: the system names its cells by them (:meth:`TabularSystem.labels`).

    Returns
    -------
    TabularSystem
        Equations: every configuration equals the sum of each configuration that
        keeps one more dim (the interior included), and every grouped cell equals
        the sum of its members.
    """
    dims = tuple(str(d) for d in dims)
    shape = tuple(int(s) for s in shape)
    if len(dims) != len(shape):
        raise ValueError(f"dims {dims} and shape {shape} disagree in length")
    structure = margin_closure(list(default_margins(dims) if structure is None else structure), dims)
    groups = _clean_groups(groups or {}, dims, shape)
    configs = [dims] + [k for k in structure]
    specs = [(k, None) for k in configs]
    for d in groups:
        specs += [(k, d) for k in configs if d in k]
    blocks, off = [], 0
    for keep, g in specs:
        bshape = tuple(len(groups[d]) if d == g else shape[dims.index(d)] for d in keep)
        b = Block(keep, g, bshape, off)
        blocks.append(b)
        off += b.size
    index = {(b.keep, b.grouped): b for b in blocks}

    rows, cols, vals = [], [], []
    n_eq = 0

    def add_equations(child: Block, parent: Block, member_map):
        # child[c] - sum over parent cells p mapped to c of parent[p] = 0
        nonlocal n_eq
        pidx = np.arange(parent.size).reshape(parent.shape)
        cid = member_map(pidx)  # child flat index for each parent cell (or -1: not in any)
        ok = cid >= 0
        rows.append(n_eq + np.arange(child.size))
        cols.append(child.offset + np.arange(child.size))
        vals.append(np.ones(child.size))
        rows.append(n_eq + cid[ok])
        cols.append(parent.offset + pidx[ok])
        vals.append(-np.ones(int(ok.sum())))
        n_eq += child.size

    for (keep, g), child in index.items():
        if g is not None:
            # grouped cell = sum of its member cells in the ungrouped configuration
            parent = index[(keep, None)]
            ax = keep.index(g)
            gid = np.empty(shape[dims.index(g)], dtype=np.int64)
            for j, members in enumerate(groups[g]):
                gid[list(members)] = j

            def mm(pidx, ax=ax, gid=gid, child=child, parent=parent):
                sub = np.array(np.unravel_index(pidx.ravel(), parent.shape))
                sub[ax] = gid[sub[ax]]
                return np.ravel_multi_index(tuple(sub), child.shape).reshape(pidx.shape)
            add_equations(child, parent, mm)
            continue
        if keep == dims:
            continue
        # every configuration with one more dim that is itself present sums to this
        # one; with none present (e.g. ("c",) next to ("a", "b")), the interior does
        parents = [tuple(d for d in dims if d in keep or d == e) for e in dims if e not in keep]
        parents = [p for p in parents if (p, None) in index] or [dims]
        for bigger in parents:
            parent = index[(bigger, None)]
            drop = [i for i, d in enumerate(bigger) if d not in keep]

            def mm(pidx, drop=drop, child=child, parent=parent):
                sub = [a for i, a in enumerate(np.unravel_index(pidx.ravel(), parent.shape))
                       if i not in drop]
                if not sub:
                    return np.zeros(pidx.shape, dtype=np.int64)
                return np.ravel_multi_index(tuple(sub), child.shape).reshape(pidx.shape)
            add_equations(child, parent, mm)

    if n_eq:
        A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(n_eq, off))
    else:
        A = sp.csr_matrix((0, off))
    return TabularSystem(dims, shape, tuple(structure), groups, tuple(blocks), A,
                         coords=None if coords is None else
                         {d: list(coords[d]) for d in dims if d in coords})


def aggregation(dims, shape, keeps) -> sp.csr_array:
    """The 0/1 matrix that sums the interior (C order) to every total of ``keeps`` (dims
    kept per total, stacked in that order, each in C order).

    Parameters
    ----------
    dims : sequence of str
        The interior's dimension names.
    shape : sequence of int
        The interior's shape.
    keeps : sequence of tuples
        The totals, each the tuple of dims it keeps (``()``: the grand total).

    Returns
    -------
    scipy.sparse.csr_array
        The matrix, one row per total cell and one column per interior cell.

    Examples
    --------
    >>> aggregation(("v", "w"), (2, 2), [("v",), ()]).toarray().tolist()
    [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    dims, shape = tuple(dims), tuple(int(s) for s in shape)
    n = int(np.prod(shape, dtype=np.int64))
    grids = np.indices(shape)
    rows, nrow = [], 0
    for keep in keeps:
        axes = [dims.index(d) for d in keep]
        tid = (np.ravel_multi_index(tuple(grids[a] for a in axes), tuple(shape[a] for a in axes))
               if axes else np.zeros(shape, np.int64))
        rows.append(nrow + tid.ravel())
        nrow += int(np.prod([shape[a] for a in axes], dtype=np.int64))
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    cols = np.tile(np.arange(n), len(keeps))
    return sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(nrow, n))


def _clean_groups(groups: dict, dims: tuple, shape: tuple) -> dict:
    out = {}
    for d, gs in dict(groups).items():
        if d not in dims:
            raise ValueError(f"groups given for unknown dim {d!r}; dims are {dims}")
        n = shape[dims.index(d)]
        gs = tuple(tuple(int(i) for i in g) for g in gs)
        flat = sorted(i for g in gs for i in g)
        if flat != list(range(n)) or any(len(g) == 0 for g in gs):
            raise ValueError(f"groups of dim {d!r} must partition its {n} categories "
                             f"(each index 0..{n - 1} in exactly one nonempty group), got {gs}")
        out[d] = gs
    return out


def equation_tol(system: TabularSystem, x) -> float:
    """Tolerance of 'adds up' checks on a cell vector: scaled to the magnitudes and to the
    longest equation (decimal sums like 0.1 + 0.2 are not called non-additive)."""
    x = np.asarray(x, dtype=float)
    fin = x[np.isfinite(x)]
    scale = float(np.abs(fin).max()) if fin.size else 0.0
    terms = int(np.diff(system.A.indptr).max()) if system.A.shape[0] else 1
    return 1e-9 * max(scale, 1.0) * max(terms, 1)


def check_equations(system: TabularSystem, x, tol: float | None = None,
                    what: str = "published values", coords: dict | None = None) -> None:
    """Raise ``ValueError`` unless the known cells of ``x`` (NaN = unknown) can be completed
    to a table: every equation with no unknown cell holds, and where the unknown cells of
    an equation all enter with the same sign, the known part leaves them a nonnegative sum
    (e.g. the published cells of a row cannot exceed the row total).  Within ``tol``
    (default :func:`equation_tol`).

    Parameters
    ----------
    system : TabularSystem
        The equations.
    x : array-like
        A cell vector of length ``system.n_var``; NaN marks an unknown cell.
    tol : float, optional
        The tolerance (default: :func:`equation_tol` of ``system`` and ``x``).
    what : str, default "published values"
        What ``x`` holds, for the message.
    coords : dict, optional
        The table's categories (``{dim: labels}``): the message names cells by them
        (:meth:`TabularSystem.labels`); None: by position.

    Raises
    ------
    ValueError
        If the known cells cannot be completed, naming the equation that fails and the
        sum it leaves the unknown cells.

    Examples
    --------
    >>> nan = float("nan")
    >>> s = tabular_system(("v", "w"), (1, 2))  # cells, row total, 2 column totals, total
    >>> check_equations(s, [1.0, nan, 3.0, 1.0, nan, 3.0])
    >>> try:
    ...     check_equations(s, [4.0, nan, 3.0, 4.0, nan, 3.0])
    ... except ValueError as e:
    ...     print(str(e)[:59])
    published values cannot add up: - interior[0, 0] - interior
    """
    x = np.asarray(x, dtype=float)
    if x.shape != (system.n_var,):
        raise ValueError(f"cell vector must have length {system.n_var}, got shape {x.shape}")
    tol = equation_tol(system, x) if tol is None else float(tol)
    A = system.A.tocsr()
    known = np.isfinite(x)
    s = A @ np.where(known, x, 0.0)
    Au = A[:, ~known]
    n_pos = np.asarray((Au > 0).sum(axis=1)).ravel()
    n_neg = np.asarray((Au < 0).sum(axis=1)).ravel()
    none = (n_pos == 0) & (n_neg == 0)
    # A_u y = -s with y >= 0: all-negative coefficients need s >= 0, all-positive s <= 0
    bad = (none & (np.abs(s) > tol)) | ((n_pos == 0) & (n_neg > 0) & (s < -tol)) | \
          ((n_neg == 0) & (n_pos > 0) & (s > tol))
    if bad.any():
        r = int(np.argmax(bad))
        labels = system.labels(coords)
        cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
        coef = A.data[A.indptr[r]:A.indptr[r + 1]]
        terms = " ".join(f"{'+' if c > 0 else '-'} {labels[j]}" for c, j in zip(coef, cols))
        gap = -s[r] if n_neg[r] == 0 else s[r]
        raise ValueError(f"{what} cannot add up: {terms} = 0 fails: the published cells "
                         f"leave {gap:.10g} for the unknown ones (must be "
                         f"{'0' if none[r] else '>= 0'}, tolerance {tol:.3g})")


def cell_values(x, system, name, fill, dtype=float, allow_inf=False, scalar_mask=None):
    """Interior-shaped, per-system-cell or scalar input as one vector over ``system``.

    ``fill``: the value of the totals when ``x`` is interior-shaped (``"sum"``: the totals
    of ``x``); ``dtype``: cast to it (``None``: keep, e.g. bool masks); a scalar fills
    every cell, or only the cells of ``scalar_mask``.

    Parameters
    ----------
    x : scalar, array-like or xarray.DataArray
        A scalar, an interior-shaped array, or one value per cell of ``system``.
    system : TabularSystem
        The system whose cell vector to fill.
    name : str
        The input's name, for error messages.
    fill : scalar or "sum"
        The value of the totals when ``x`` is interior-shaped; ``"sum"``: the totals of
        ``x``.
    dtype : numpy dtype or None, default float
        Cast to it (and refuse NaN, and inf unless ``allow_inf``); None: keep the dtype.
    allow_inf : bool, default False
        Accept infinite values.
    scalar_mask : bool array, optional
        With a scalar ``x``: the cells it fills (the others are 0).

    Returns
    -------
    numpy.ndarray
        A vector of length ``system.n_var``.

    Examples
    --------
    >>> s = tabular_system(("v", "w"), (1, 2))
    >>> cell_values([[1.0, 2.0]], s, "x", fill="sum").tolist()
    [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    >>> cell_values(5.0, s, "p", fill=0.0, scalar_mask=s.vector([[True, False]]) == 1).tolist()
    [5.0, 0.0, 5.0, 5.0, 0.0, 5.0]
    """
    if isinstance(x, xr.DataArray):
        x = x.values
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if dtype is not None:
        arr = arr.astype(dtype)
        bad = np.isnan(arr) | (np.isinf(arr) & (not allow_inf))
        if bad.any():
            raise ValueError(f"{name} must be finite{' or inf' if allow_inf else ''}, got "
                             f"{arr[bad].ravel()[0]}")
    if arr.ndim == 0:
        if scalar_mask is not None:
            return np.where(scalar_mask, arr, 0.0)
        return np.full(system.n_var, arr)
    if arr.shape == system.shape:
        if fill == "sum":
            with np.errstate(invalid="ignore"):
                return system.vector(arr).astype(float)
        out = np.full(system.n_var, fill, dtype=arr.dtype)
        out[: system.n_interior] = arr.ravel()
        return out
    if arr.shape == (system.n_var,):
        return arr.copy()
    raise ValueError(f"{name} must be a scalar, interior-shaped {system.shape} or one value per "
                     f"cell of the tabular system ({system.n_var}), got shape {arr.shape}")
