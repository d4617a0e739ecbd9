"""Magnitude tables from respondent contributions (microdata).

A magnitude table (sales, employment, ...) is built from one row per respondent
contribution: a category per dim and a value.  Sensitivity rules
(:mod:`riskengine.magnitude.sensitivity`) need more than the cell value: the contributions
of each cell sorted from largest to smallest (seed 004, "Notation": ``x_1 >= x_2
>= ... >= x_LAST``).  Totals are cells too: the contributions of a total are the
union of the contributions of its cells (with a ``respondent`` column, a
respondent's contributions to several cells of one total are first added up, so
that the total sees one contribution per respondent).

Storage is compressed-row: the contributions of every cell of the tabular system
(:func:`riskengine.tabular.tabular_system`: interior first, then each total block; or,
with ``hierarchies=`` / ``system=``, every cell of a
:class:`riskengine.cell_system.CellSystem` in its order), each cell's slice sorted
descending.

The options tau-Argus (libtauargus ``TauArgus::AddTableCell``, ``CDataCell``) offers on
microdata are mirrored here and read by the rules:

* **sampling weights** (``weight=``, tau-Argus ``WGT(1)``): cell values are
  ``sum_i w_i x_i``; the ranked contributions keep their *unweighted* value ``x_i`` and
  their weight ``w_i`` (``CDataCell::MaxScoreCell`` / ``MaxScoreWeightCell``), and a
  contribution of weight ``w`` counts as ``w`` units in the top-n
  (``CDataCell::ComputeWeightedScoreCell``: the n largest *units*, the last record taken
  in part);
* **holdings** (``holding=``, enterprise groups): a second level of contributions, one
  per holding and cell (the holding's contributions summed, ``CDataCell::TempShadow``),
  for the holding rules of tau-Argus (its 3rd/4th NK and P rules, 2nd FREQ rule; here
  :class:`~riskengine.magnitude.sensitivity.Holdings`);
* **negative contributions** (``negative="absolute"``): the rules see absolute values
  (``fabs`` of the shadow value in ``AddTableCell``), the cell values stay signed sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..table import Table
from ..tabular import TabularSystem, tabular_system

__all__ = ["Contributions", "contributions"]

#: the ways ``contributions`` treats negative contributions
NEGATIVE = ("refuse", "absolute")


@dataclass(frozen=True, eq=False)
class Contributions:
    """A magnitude table with the sorted respondent contributions of every cell.

    Built by :func:`contributions`; the parameters are also its (read-only) attributes.

    Parameters
    ----------
    table : Table or None
        The magnitude table (kind ``"magnitude"``) with its totals structure (its
        hierarchies with ``hierarchies=``; the finest cells with ``system=``).  ``None``
        when some cell value is negative (an :class:`~riskengine.Table` holds nonnegative
        values): :meth:`cell_values` has every (signed) cell value.
    system : TabularSystem or CellSystem
        The cells of the table, totals included, as one vector (``system.labels()``).
    values : ndarray
        Every cell's contributions, cell after cell in system order, each cell's
        slice sorted descending (absolute values with ``negative="absolute"``; the
        unweighted value of each contribution with weights).
    offsets : ndarray
        Cell ``i`` holds ``values[offsets[i]:offsets[i + 1]]``.
    weights : ndarray, optional
        The sampling weight of every entry of ``values`` (``None``: unweighted, every
        contribution counts once).
    totals : ndarray, optional
        The (signed, weighted) value of every cell, system order (``None``: the sums of
        ``values``).
    records : ndarray, optional
        Rows of the microdata in every cell (``None``: ``counts()``).
    weight_sums : ndarray, optional
        The sum of the weights of the rows of every cell (the weighted frequency).
    request : ndarray, optional
        The request code (0: none, 1 or 2) of every entry of ``values`` (tau-Argus's
        request rule, ``REQ``).
    holdings : Contributions, optional
        The same cells with one contribution per holding (``holding=``).
    level : str
        What one contribution is: ``"record"``, ``"respondent"`` or ``"holding"``.
    signed : bool
        Whether the microdata held negative contributions (``negative="absolute"``).
    """

    table: Table | None
    system: object
    values: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None = None
    totals: np.ndarray | None = None
    records: np.ndarray | None = None
    weight_sums: np.ndarray | None = None
    request: np.ndarray | None = None
    holdings: Contributions | None = None
    level: str = "record"
    signed: bool = False

    @property
    def n_cells(self) -> int:
        """Cells of the system (interior and totals)."""
        return self.system.n_var

    @property
    def hierarchical(self) -> bool:
        """True when the cells are those of a :class:`~riskengine.cell_system.CellSystem`."""
        return not isinstance(self.system, TabularSystem)

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

    def cell_weights(self, i: int) -> np.ndarray:
        """Weights of the contributions of system cell ``i`` (ones when unweighted).

        Parameters
        ----------
        i : int
            The cell's index in the system's cell vector.

        Returns
        -------
        numpy.ndarray
            One weight per entry of ``cell(i)``, in the same order.
        """
        if self.weights is None:
            return np.ones(int(self.offsets[i + 1] - self.offsets[i]))
        return self.weights[self.offsets[i]:self.offsets[i + 1]]

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
        if self.hierarchical:
            raise TypeError("a hierarchical Contributions has no margin blocks: take a cell "
                            "by its index, c.cell(c.system.find(dim=code, ...))")
        b = self.system.block(keep)
        flat = int(np.ravel_multi_index(tuple(int(i) for i in index), b.shape)) if index else 0
        return self.cell(b.offset + flat)

    def cell_values(self) -> np.ndarray:
        """Cell values (signed, weighted sums of the contributions), system order.

        Returns
        -------
        numpy.ndarray
            Float vector of length ``n_cells``.
        """
        if self.totals is not None:
            return self.totals
        cell, _ = self.rank()
        return np.bincount(cell, weights=self.values, minlength=self.n_cells)

    def counts(self) -> np.ndarray:
        """Number of contributions per cell (records, respondents or holdings, as
        ``level`` says), system order.

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

    def units(self) -> tuple:
        """``(start, width)`` of every stored contribution on its cell's axis of units:
        a contribution of weight ``w`` covers ``[start, start + w)``, the largest starting
        at 0 (unweighted: ``(position, 1)``).

        Returns
        -------
        start, width : numpy.ndarray
            Float vectors aligned with ``values``.
        """
        _, pos = self.rank()
        if self.weights is None:
            return pos.astype(float), np.ones(pos.size)
        w = self.weights
        cum = np.cumsum(w) - w
        first = self.offsets[:-1]
        base = np.repeat(cum[np.minimum(first, max(w.size - 1, 0))] if w.size else
                         np.zeros(self.n_cells), np.diff(self.offsets))
        return cum - base, w.copy()


def contributions(data, dims, value: str, categories: dict | None = None,
                  margins=None, respondent: str | None = None, name: str | None = None,
                  *, weight: str | None = None, holding: str | None = None,
                  request: str | None = None, negative: str = "refuse",
                  hierarchies: dict | None = None, system=None) -> Contributions:
    """Build a magnitude table from microdata, keeping each cell's sorted contributions.

    Parameters
    ----------
    data : pandas.DataFrame or dict of 1-D arrays
        One row per respondent contribution.
    dims : sequence of str
        The columns that classify a contribution (one per table dim).
    value : str
        The column of (finite) contributions; nonnegative unless ``negative="absolute"``.
    categories : dict, optional
        ``{dim: [labels in order]}``; default: the sorted distinct labels of the
        data (with ``hierarchies``: the hierarchy's leaves).  A label in the data that
        is not listed is an error; listed labels without data give empty cells.
    margins : sequence of tuples, optional
        Published totals (dims kept), as in :class:`~riskengine.Table` (flat tables).
    respondent : str, optional
        A respondent id column: contributions of one respondent to one cell (or
        to the cells of one total) are added up before sorting.
    name : str, optional
        Name of the table (default: ``value``).
    weight : str, optional
        A column of sampling weights (finite, > 0).  Cell values become
        ``sum_i w_i x_i``; the rules rank the contributions by their unweighted value
        ``x_i`` and count a contribution of weight ``w`` as ``w`` units (tau-Argus
        ``WGT(1)``: ``CDataCell::ComputeWeightedScoreCell``; e.g. the (2, k) dominance
        top-2 of a cell with ``x = 50`` at weight 1.5 and ``x = 30`` at weight 4 is
        ``1.5 * 50 + 0.5 * 30``).  The frequency rule still counts unweighted
        contributors unless it is built with ``weighted=True`` (then the sum of the
        weights, as tau-Argus's ``CTable::UnsafeCellMinRec`` with weights).  With
        ``respondent`` a respondent's rows must share one weight.  Weights and holdings
        together are refused, as tau-Argus does (``TauArgus::SetTableSafety``).
    holding : str, optional
        A column of holding (enterprise group) ids.  ``Contributions.holdings`` then
        holds one contribution per holding and cell (the holding's contributions
        summed, then ranked): the level of :class:`~riskengine.magnitude.sensitivity.
        Holdings` rules (dominance / p % / frequency at holding level, tau-Argus's
        holding rules).  The plain rules keep the individual level (rows, or
        respondents with ``respondent``; a respondent must belong to one holding).
    request : str, optional
        A column of request codes (0 or missing: none; 1 or 2: the respondent asked for
        protection with the first or second percentage of tau-Argus's request rule,
        :class:`~riskengine.magnitude.sensitivity.Request`).  A respondent's or holding's
        code is the largest code of its rows.
    negative : {"refuse", "absolute"}, default "refuse"
        ``"absolute"`` allows negative contributions: the rules see absolute values
        (a respondent's or holding's contributions are summed first, then the absolute
        value is taken, as tau-Argus's ``fabs`` of the shadow value in
        ``TauArgus::AddTableCell`` and of ``TempShadow`` for holdings), and the rules'
        cell total is the sum of those absolute values (tau-Argus with a shadow variable
        equal to the absolute value).  Cell values stay signed sums (``cell_values()``).
    hierarchies : dict, optional
        ``{dim: rk.Hierarchy}``: every cell of every level (interior, subtotals,
        totals) gets its contributions, in the order of the table's
        :class:`~riskengine.cell_system.CellSystem` (``c.system``; ``margins`` is then
        not used).  The data's labels are the hierarchy's leaves.
    system : CellSystem, optional
        A cell system built elsewhere (e.g. of a set of linked tables,
        :func:`riskengine.cell_system.cell_system`): ``dims`` are its dims and the data's
        labels its finest codes; every cell of the system gets its contributions.

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
    >>> w = rk.contributions({"r": ["N", "N"], "v": [50.0, 30.0], "w": [1.5, 4.0]},
    ...                      dims=["r"], value="v", weight="w")
    >>> w.cell_values().tolist(), w.cell(0).tolist(), w.cell_weights(0).tolist()
    ([195.0, 195.0], [50.0, 30.0], [1.5, 4.0])
    """
    cols = _columns(data)
    if isinstance(dims, str):
        dims = [dims]
    dims = tuple(str(d) for d in dims)
    if not dims:
        raise ValueError("dims must name at least one column")
    if len(set(dims)) != len(dims):
        raise ValueError(f"dims must be distinct columns, got {dims}")
    if negative not in NEGATIVE:
        raise ValueError(f"negative must be one of {NEGATIVE}, got {negative!r}")
    extra = [c for c in (respondent, weight, holding, request) if c is not None]
    need = list(dims) + [value] + extra
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
    if bad.size and negative == "refuse":
        raise ValueError(f"contributions must be nonnegative, got {vals[bad[0]]:g} in row "
                         f"{bad[0]} of column {value!r}; pass negative=\"absolute\" to "
                         "allow negative contributions (the rules then see absolute "
                         "values, cell values stay signed sums)")
    signed = bool(bad.size)
    if weight is not None and holding is not None:
        raise ValueError("weights and holdings cannot be combined (tau-Argus refuses them "
                         "together too, TauArgus::SetTableSafety): a weighted holding has "
                         "no defined number of units")
    w = None
    if weight is not None:
        w = _numeric(cols[weight], weight, n)
        badw = np.flatnonzero(~(np.isfinite(w) & (w > 0)))
        if badw.size:
            raise ValueError(f"sampling weights must be finite and > 0, got {w[badw[0]]:g} "
                             f"in row {badw[0]} of column {weight!r}")
    req = None
    if request is not None:
        req = _request(cols[request], request, n)
    for c in (respondent, holding):
        if c is not None and np.asarray(cols[c]).shape != (n,):
            raise ValueError(f"column {c!r} must have {n} rows")
    if hierarchies is not None and system is not None:
        raise ValueError("give hierarchies= (one table) or system= (a cell system), not both")
    categories = dict(categories or {})
    unknown = set(categories) - set(dims)
    if unknown:
        raise ValueError(f"categories given for columns {sorted(unknown)} that are not dims {dims}")
    if system is not None:
        if tuple(system.dims) != dims:
            raise ValueError(f"dims {dims} must be the cell system's dims {tuple(system.dims)}")
        for d in dims:
            categories.setdefault(d, list(system.coords[d]))
    if hierarchies is not None:
        hierarchies = dict(hierarchies)
        bad_h = set(hierarchies) - set(dims)
        if bad_h:
            raise ValueError(f"hierarchies given for columns {sorted(bad_h)} that are not dims "
                             f"{dims}")
        for d, h in hierarchies.items():
            first = h[0] if isinstance(h, (list, tuple)) else h
            categories.setdefault(d, list(first.leaves))
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

    # --- the (cell, row) pairs: every row enters each cell that holds it ---------------
    if hierarchies is not None or system is not None:
        if system is None:
            table0 = Table(np.zeros(shape), dims=dims, coords=labels, kind="magnitude",
                           hierarchies=hierarchies, name=name or value)
            system = table0.system()
        # the system's finest codes may be in another order than ``labels``
        fcodes = []
        for d, code in zip(dims, codes):
            fpos = {lab: i for i, lab in enumerate(system.coords[d])}
            try:
                remap = np.array([fpos[lab] for lab in labels[d]], np.int64)
            except KeyError as exc:
                raise ValueError(f"label {exc.args[0]!r} of dim {d!r} is not a finest code of "
                                 "the cell system") from None
            fcodes.append(remap[code])
        finest = np.ravel_multi_index(tuple(fcodes), tuple(system.shape)) if n else \
            np.zeros(0, np.int64)
        mt = system.M.T.tocsr()
        per = np.diff(mt.indptr)[finest]
        row = np.repeat(np.arange(n), per)
        starts = np.repeat(mt.indptr[finest], per)
        within = np.arange(row.size) - np.repeat(np.cumsum(per) - per, per)
        cell = mt.indices[starts + within].astype(np.int64)
        n_cells = system.n_var
        finest_block = None
    else:
        table0 = Table(np.zeros(shape), dims=dims, coords=labels, margins=margins,
                       kind="magnitude")
        system = tabular_system(dims, shape, table0.margins, coords=table0.coords)
        cells, rows = [], []
        for b in system.blocks:
            kept = [codes[dims.index(d)] for d in b.keep]
            flat = (np.ravel_multi_index(tuple(kept), b.shape) if kept
                    else np.zeros(n, np.int64)) + b.offset
            cells.append(flat.astype(np.int64))
            rows.append(np.arange(n))
        cell = np.concatenate(cells) if cells else np.zeros(0, np.int64)
        row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        n_cells = system.n_var
        finest_block = system.n_interior

    wr = np.ones(n) if w is None else w
    totals = np.bincount(cell, weights=(wr * vals)[row], minlength=n_cells)
    records = np.bincount(cell, minlength=n_cells)
    wsums = np.bincount(cell, weights=wr[row], minlength=n_cells) if w is not None else None

    # --- individual level: rows, or respondents -----------------------------------------
    if respondent is not None:
        rid = _ids(cols[respondent])
        if w is not None:
            _constant_within(rid, w, "weight", respondent)
        level = "respondent"
    else:
        rid = np.arange(n)
        level = "record"
    ind = _level(cell, row, rid, vals, w, req, n_cells, aggregate=respondent is not None)

    hold = None
    if holding is not None:
        hid = _ids(cols[holding])
        if respondent is not None:
            _constant_within(rid, hid.astype(float), "holding", respondent)
        hv, ho, _, hreq = _level(cell, row, hid, vals, None, req, n_cells, aggregate=True)
        hold = Contributions(None, system, hv, ho, None, totals, records, None, hreq,
                             None, "holding", signed)
    values, offsets, weights_s, req_s = ind
    # the table of cell values (an rk.Table holds nonnegative values only)
    if finest_block is not None:
        interior = totals[:finest_block].reshape(shape)
        table = (Table(interior, dims=dims, coords=labels, margins=table0.margins,
                       kind="magnitude", name=name or value)
                 if np.all(interior >= 0) else None)
    else:
        interior = totals[:system.n_interior].reshape(tuple(system.shape))
        table = None
        if np.all(interior >= 0):
            if hierarchies is not None:
                table = Table(interior, dims=dims, coords=dict(system.coords),
                              kind="magnitude", hierarchies=hierarchies, name=name or value)
            else:
                table = Table(interior, dims=dims, coords=dict(system.coords),
                              kind="magnitude", name=name or value)
    for a in (totals, records, wsums):
        if a is not None:
            a.setflags(write=False)
    return Contributions(table, system, values, offsets, weights_s,
                         totals if (w is not None or signed or finest_block is None) else None,
                         records if (level != "record" or holding is not None) else None,
                         wsums, req_s, hold, level, signed)


def _level(cell, row, ids, vals, w, req, n_cells, aggregate):
    """Sorted compressed rows of one level: ``(values, offsets, weights, request)``.

    ``aggregate``: the rows of one id in one cell are summed (signed), then the absolute
    value is taken; otherwise every (cell, row) pair is one contribution."""
    x = vals[row]
    if aggregate:
        idr = ids[row]
        m = int(ids.max(initial=0)) + 1
        key = cell * m + idr
        uk, inv = np.unique(key, return_inverse=True)
        x = np.bincount(inv, weights=x, minlength=uk.size)
        ucell = uk // m
        wu = None
        if w is not None:
            wu = np.zeros(uk.size)
            wu[inv] = w[row]
        ru = None
        if req is not None:
            ru = np.zeros(uk.size, np.int8)
            np.maximum.at(ru, inv, req[row])
        cell_, w_, r_ = ucell, wu, ru
    else:
        cell_ = cell
        w_ = None if w is None else w[row]
        r_ = None if req is None else req[row]
    x = np.abs(x)
    order = np.lexsort((-x, cell_))
    cell_, x = cell_[order], x[order]
    offsets = np.zeros(n_cells + 1, np.int64)
    np.cumsum(np.bincount(cell_, minlength=n_cells), out=offsets[1:])
    out = [x, offsets, None if w_ is None else w_[order], None if r_ is None else r_[order]]
    for a in out:
        if a is not None:
            a.setflags(write=False)
    return tuple(out)


def _ids(col) -> np.ndarray:
    _, rid = np.unique(np.asarray(col, dtype=object).astype(str), return_inverse=True)
    return rid.astype(np.int64).ravel()


def _constant_within(ids, attr, what, idcol) -> None:
    """Refuse an id (respondent) whose rows disagree on ``attr`` (weight, holding)."""
    if ids.size == 0:
        return
    lo = np.full(int(ids.max()) + 1, np.inf)
    hi = np.full(int(ids.max()) + 1, -np.inf)
    np.minimum.at(lo, ids, attr)
    np.maximum.at(hi, ids, attr)
    bad = np.flatnonzero(lo != hi)
    if bad.size:
        r = int(np.flatnonzero(ids == bad[0])[0])
        raise ValueError(f"the rows of one respondent (column {idcol!r}, e.g. row {r}) must "
                         f"share one {what}")


def _numeric(col, name, n) -> np.ndarray:
    a = np.asarray(col)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"column {name!r} must be numeric, got dtype {a.dtype}")
    if a.shape != (n,):
        raise ValueError(f"column {name!r} must have {n} rows")
    return a.astype(float)


def _request(col, name, n) -> np.ndarray:
    a = np.asarray(col, dtype=object)
    if a.shape != (n,):
        raise ValueError(f"column {name!r} must have {n} rows")
    out = np.zeros(n, np.int8)
    for i, x in enumerate(a.tolist()):
        if x is None or (isinstance(x, float) and np.isnan(x)) or x in (0, "0", ""):
            continue
        if x in (1, "1"):
            out[i] = 1
        elif x in (2, "2"):
            out[i] = 2
        else:
            raise ValueError(f"request codes must be 0 (or missing), 1 or 2, got {x!r} in row "
                             f"{i} of column {name!r}")
    return out


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
