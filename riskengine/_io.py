"""Readers for tables (CSV long / wide, netCDF) and atomic writers.

Nothing the user gave is modified; every file the tool writes goes to a
temporary file in the same folder first and is then renamed into place.
"""

from __future__ import annotations

import csv
import io
import re
from itertools import combinations, product
from pathlib import Path

import numpy as np
import xarray as xr

# TOTAL_LABELS is defined with the table (from_pandas reads totals too); _io.TOTAL_LABELS
# stays the name it always was
from ._atomic import _write_atomically, atomic_write_bytes, atomic_write_text
from .table import TOTAL_LABELS, Table, total_positions  # noqa: F401
from .table import _is_total_label as _is_total

__all__ = [
    "atomic_write_bytes",
    "atomic_write_netcdf",
    "atomic_write_text",
    "read_csv_long",
    "read_csv_wide",
    "read_netcdf",
    "read_original",
    "read_published",
    "read_table",
    "tidy",
    "write_published",
]


def atomic_write_netcdf(ds: xr.Dataset, path) -> None:
    """netCDF3 through SciPy (no extra dependency); int64 stored as int32 when it fits."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds = ds.copy()
    for name, var in list(ds.variables.items()):
        if var.dtype == np.int64:
            if var.size and np.abs(var.values).max() >= 2 ** 31:
                ds[name] = var.astype(float)
            else:
                ds[name] = var.astype(np.int32)
        elif var.dtype == bool:
            ds[name] = var.astype(np.int8)
        elif var.dtype.kind in "OU":
            ds[name] = var.astype(str)
    for obj in [ds, *ds.variables.values()]:
        for k, v in list(obj.attrs.items()):
            if isinstance(v, (bool, np.bool_)):
                obj.attrs[k] = int(v)
            elif v is None:
                obj.attrs[k] = "None"
            elif isinstance(v, int) and abs(v) >= 2 ** 31:
                obj.attrs[k] = str(v)
    _write_atomically(path, lambda tmp: ds.to_netcdf(tmp, engine="scipy"))


#: the field separators a table CSV may use: comma, semicolon (usual where the decimal
#: separator is a comma, e.g. in many EU statistical offices) and tab
SEPARATORS = (",", ";", "\t")
_SEP_NAMES = {",": "','", ";": "';'", "\t": "tab"}
#: a number with a decimal comma (``1,5``; ``1.234,5`` with thousands points)
_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d+),\d+")
#: a number with thousands points only (``1.234``, ``12.345.678``)
_THOUSANDS_POINTS = re.compile(r"[+-]?\d{1,3}(?:\.\d{3})+")
#: a number with a decimal point (``2.5``, ``.5``)
_DECIMAL_POINT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)")


def _split(text: str, sep: str) -> list:
    return [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep)
            if r and any(x.strip() for x in r)]


def _separator(path, text: str) -> str:
    """The field separator of a table CSV: the one of :data:`SEPARATORS` that splits the
    header into two or more fields and every row into as many; refused when two do (the
    file does not say which)."""
    fits, widest = [], (0, ",")
    for sep in SEPARATORS:
        rows = _split(text, sep)
        n = len(rows[0]) if rows else 0
        if n >= 2 and all(len(r) == n for r in rows):
            fits.append(sep)
        widest = max(widest, (n, sep), key=lambda w: w[0])
    if len(fits) > 1:
        raise ValueError(f"{path}: the fields may be separated by "
                         f"{' or '.join(_SEP_NAMES[s] for s in fits)} (each splits every "
                         "line into as many fields): write the table with one separator "
                         "that appears in no label")
    # no separator gives rows of one length: the one that splits the header most (the
    # readers then name the line that differs)
    return fits[0] if fits else widest[1]


def _decimal_commas(path, sep: str, rows: list) -> list:
    """The entries (not the header) of a table whose separator is not a comma, with decimal
    commas (``1,5``, ``1.234,5``) read as numbers write them (``1.5``, ``1234.5``);
    refused where a decimal comma and a decimal point are both used, or where every
    number with a point may have a thousands separator (``1.234``: 1234 or 1.234?)."""
    commas, points = None, []
    for n, r in enumerate(rows[1:], start=2):
        for x in r:
            t = x.strip()
            if commas is None and _DECIMAL_COMMA.fullmatch(t):
                commas = (t, n)
            elif _DECIMAL_POINT.fullmatch(t):
                points.append((t, n))
    name = _SEP_NAMES[sep]
    if commas is not None:
        mixed = next(((t, n) for t, n in points if not _THOUSANDS_POINTS.fullmatch(t)), None)
        if mixed:
            raise ValueError(f"{path}: line {commas[1]} writes {commas[0]!r} with a decimal "
                             f"comma, line {mixed[1]} {mixed[0]!r} with a decimal point: "
                             f"a {name}-separated table uses one of them")

        def number(t: str) -> str:
            s = t.strip()
            if _DECIMAL_COMMA.fullmatch(s):
                return s.replace(".", "").replace(",", ".")
            if _THOUSANDS_POINTS.fullmatch(s):
                return s.replace(".", "")
            return t
        return [rows[0]] + [[number(x) for x in r] for r in rows[1:]]
    if points and all(_THOUSANDS_POINTS.fullmatch(t) for t, _ in points):
        t, n = points[0]
        raise ValueError(f"{path}, line {n}: {t!r} in a {name}-separated table: a thousands "
                         f"separator ({t.replace('.', '')}) or a decimal point? write "
                         f"{t.replace('.', '')} (no thousands separator), or "
                         f"{t.replace('.', ',')} with a decimal comma")
    return rows


def _read_rows(path):
    """The non-empty rows of a table CSV, its separator sniffed (:func:`_separator`) and,
    unless it is a comma, decimal commas read (:func:`_decimal_commas`)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        text = fh.read()
    # the separator from the first 64 kB (whole lines): the readers check every line
    head = text if len(text) <= 2 ** 16 else text[:max(text.rfind("\n", 0, 2 ** 16), 1)]
    sep = _separator(path, head)
    rows = _split(text, sep)
    if len(rows) < 2:
        raise ValueError(f"{path}: a table CSV needs a header and at least one data row")
    return rows if sep == "," else _decimal_commas(path, sep, rows)


def _label(x: str):
    x = x.strip()
    try:
        return int(x)
    except ValueError:
        return x


def _comma_hint(x: str) -> str:
    """What to do about a decimal comma in a comma-separated file."""
    return (" (a decimal comma? in a comma-separated table write 1.5; or separate the "
            "fields with ';' and keep the decimal commas)" if "," in x else "")


def _number(x: str, where: str) -> float:
    try:
        return float(x)
    except ValueError:
        raise ValueError(f"{where}: {x!r} is not a number{_comma_hint(x)}") from None


def _long_grid(path, value: str | None, dims):
    """Long form as text: ``(dims, labels, {cell index: (text, where)})``."""
    rows = _read_rows(path)
    header = [h.strip() for h in rows[0]]
    value = value or header[-1]
    if value not in header:
        raise ValueError(f"{path}: no value column {value!r}; columns are {header}")
    dims = tuple(dims) if dims else tuple(h for h in header if h != value)
    for d in dims:
        if d not in header:
            raise ValueError(f"{path}: no column {d!r}; columns are {header}")
    vi = header.index(value)
    di = [header.index(d) for d in dims]
    labels = {d: [] for d in dims}
    recs = []
    for n, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise ValueError(f"{path}, line {n}: {len(r)} fields, header has {len(header)}")
        key = tuple(_label(r[i]) for i in di)
        for d, lab in zip(dims, key):
            if lab not in labels[d]:
                labels[d].append(lab)
        recs.append((key, r[vi], f"{path}, line {n}"))
    cells = {}
    for key, text, where in recs:
        idx = tuple(labels[d].index(lab) for d, lab in zip(dims, key))
        if idx in cells:
            raise ValueError(f"{path}: cell {dict(zip(dims, key))} appears more than once")
        cells[idx] = (text, where)
    return dims, labels, cells


def _missing_cell(path, dims, labels, idx) -> ValueError:
    missing = {d: labels[d][i] for d, i in zip(dims, idx)}
    return ValueError(f"{path}: cell {missing} is missing (long form needs every combination)")


def read_csv_long(path, value: str | None = None, dims=None, margins=None) -> Table:
    """Long form: one column per dim plus a value column (default: the last column).

    Every combination of categories must appear exactly once.

    Parameters
    ----------
    path : str or path-like
        The CSV file; its header row names the columns.
    value : str, optional
        The column holding the cell values (default: the last column).
    dims : sequence of str, optional
        The columns holding the categories, in the order of the table's dims (default:
        every column but the value column).
    margins : sequence of tuples, optional
        Published marginal configurations (see :class:`~riskengine.Table`); default: all
        totals of a 2-D table, every (k-1)-way margin of a k-D table.

    Returns
    -------
    Table
        The table, with the labels in order of first appearance.
    """
    dims, labels, cells = _long_grid(path, value, dims)
    shape = tuple(len(labels[d]) for d in dims)
    out = np.empty(shape)
    for idx in np.ndindex(*shape):
        if idx not in cells:
            raise _missing_cell(path, dims, labels, idx)
        out[idx] = _number(*cells[idx])
    return Table(out, dims=dims, coords=labels, margins=margins)


def _wide_grid(path, dims):
    """Wide 2-D form as text: ``(dims, labels, {cell index: (text, where)})``."""
    rows = _read_rows(path)
    corner = rows[0][0].strip()
    if "\\" in corner:
        named = tuple(p.strip() for p in corner.split("\\", 1))
        if all(named):
            dims = named
    dims = tuple(dims)
    cols = [_label(c) for c in rows[0][1:]]
    rlabels, cells = [], {}
    for n, r in enumerate(rows[1:], start=2):
        if len(r) != len(cols) + 1:
            raise ValueError(f"{path}, line {n}: {len(r) - 1} values, header has {len(cols)} columns")
        rlabels.append(_label(r[0]))
        cells.update({(n - 2, j): (x, f"{path}, line {n}") for j, x in enumerate(r[1:])})
    for d, labs in zip(dims, (rlabels, cols)):
        seen = set()
        for lab in labs:
            if lab in seen:
                raise ValueError(f"{path}: {d} label {lab!r} appears more than once")
            seen.add(lab)
    return dims, {dims[0]: rlabels, dims[1]: cols}, cells


def read_csv_wide(path, dims=("row", "column"), margins=None) -> Table:
    """Wide 2-D form: first column row labels, header row column labels.

    A header cell in the first column (e.g. ``v\\w``) may name the dims as ``row\\col``.

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    dims : tuple of two str, optional
        The names of the row and column dims, unless the corner cell names them
        (default ``("row", "column")``).
    margins : sequence of tuples, optional
        Published marginal configurations (see :class:`~riskengine.Table`); default: all
        totals of a 2-D table, every (k-1)-way margin of a k-D table.

    Returns
    -------
    Table
        The 2-D table.
    """
    dims, labels, cells = _wide_grid(path, dims)
    shape = tuple(len(labels[d]) for d in dims)
    out = np.empty(shape)
    for idx in np.ndindex(*shape):
        out[idx] = _number(*cells[idx])
    return Table(out, dims=dims, coords=labels, margins=margins)


#: entries of a published table that mark a suppressed cell (the published value withheld)
SUPPRESSED = ("x", "..", "nan")


def _published_entry(text: str, where: str) -> float:
    """A number, NaN for a suppression marker; an empty entry is refused (the caller
    decides whether a whole block may be empty)."""
    s = text.strip()
    if s.lower() in SUPPRESSED:
        return np.nan
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a number (a suppressed cell is written "
                         f"as {' or '.join(repr(m) for m in SUPPRESSED)}){_comma_hint(s)}"
                         ) from None


def _totals_wide(rows) -> bool:
    """A wide table whose corner holds a name (as pandas writes a crosstab): a total
    column or row (``pandas.crosstab(..., margins=True)``) and every entry after the first
    column a published entry (a long table's dim columns hold labels)."""
    if not (_is_total(rows[0][-1]) or any(_is_total(r[0]) for r in rows[1:])):
        return False
    for r in rows[1:]:
        for x in r[1:]:
            s = x.strip()
            if s and s.lower() not in SUPPRESSED:
                try:
                    float(s)
                except ValueError:
                    return False
    return True


def read_published(path, format: str | None = None, dims=None, value: str | None = None):
    """A published table as an agency publishes it: ``(published, margins, coords)`` for
    :class:`riskengine.Release`.

    The CSV is read as :func:`read_table` reads tables (wide 2-D, or long with one column
    per dim).  A category labelled as a total (:data:`TOTAL_LABELS`, e.g. a ``Total`` row
    and column) holds published totals: every block of them becomes a margin, keyed by
    the dims it keeps (the ``Total`` column of a wide table is the margin keeping the
    rows, the corner the grand total).  Entries :data:`SUPPRESSED` (``x``) are suppressed
    cells (NaN).  A block left empty is not published (an empty interior: a margins-only
    release); a block partly empty is an error, as is any entry that is not a number.

    Returns
    -------
    published : xarray.DataArray or None
        The interior (float, NaN = suppressed), labelled; None when it is empty.
    margins : dict
        ``{dims kept: DataArray}`` for every published block of totals (empty when the
        file has no total).
    coords : dict
        ``{dim: categories}`` of the cells (totals left out), in the table's dim order.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    rows = _read_rows(path)
    first = rows[0][0].strip()
    fmt = format or ("wide" if first == "" or "\\" in first or _totals_wide(rows) else "long")
    if fmt == "wide":
        if first and "\\" not in first and not dims:
            dims = (first, "column")    # pandas writes the row dim's name in the corner
        dims, labels, cells = _wide_grid(path, dims or ("row", "column"))
    elif fmt == "long":
        dims, labels, cells = _long_grid(path, value, dims)
    else:
        raise ValueError(f"unknown published-table format {fmt!r}; known: 'long', 'wide'")
    total = total_positions(dims, labels, str(path))
    if len(total) == len(dims) and all(len(labels[d]) == 1 for d in dims):
        raise ValueError(f"{path}: holds only totals, no cell")
    inner = {d: [i for i in range(len(labels[d])) if total.get(d) != i] for d in dims}
    coords = {d: [labels[d][i] for i in inner[d]] for d in dims}
    published, margins = None, {}
    for r in range(len(total) + 1):
        for summed in combinations([d for d in dims if d in total], r):
            keep = tuple(d for d in dims if d not in summed)
            axes = [[total[d]] if d in summed else inner[d] for d in dims]
            shape = tuple(len(inner[d]) for d in keep)
            texts = []
            for idx in product(*axes):
                if idx not in cells:
                    raise _missing_cell(path, dims, labels, idx)
                texts.append(cells[idx])
            empty = [t.strip() == "" for t, _ in texts]
            where = ("the cells" if not summed else "the totals over "
                     + ", ".join(repr(d) for d in summed))
            if all(empty):
                continue                        # this block is not published
            if any(empty):
                at = texts[empty.index(True)][1]
                raise ValueError(f"{at}: an empty entry among {where}: a block is either "
                                 f"published or left empty as a whole (write "
                                 f"{SUPPRESSED[0]!r} for a suppressed entry)")
            vals = np.array([_published_entry(t, w) for t, w in texts]).reshape(shape)
            da = xr.DataArray(vals, dims=keep, coords={d: coords[d] for d in keep})
            if summed:
                margins[keep] = da
            else:
                published = da
    if published is None and not margins:
        raise ValueError(f"{path}: every entry is empty")
    # largest totals first, in the dims' order (as the tabular structure lists them)
    order = sorted(margins, key=lambda k: (-len(k), [dims.index(d) for d in k]))
    return published, {k: margins[k] for k in order}, coords


def _entry_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.12g}"


def read_original(path, **kwargs) -> Table:
    """An original table to protect, as an agency has it: as :func:`read_table` reads
    tables, and with totals (a ``Total`` row / column / category, :data:`TOTAL_LABELS`,
    as :func:`read_published` reads them) checked against the cells and left out (the
    mechanism publishes its own).

    Parameters
    ----------
    path : str or path-like
        The CSV (wide or long) or netCDF file.
    **kwargs
        Passed to :func:`read_table` for a table without totals.

    Returns
    -------
    Table
        The interior cells, labelled, with the default margins.

    Raises
    ------
    ValueError
        A total that differs from the sum of its cells (naming the total by its labels,
        and both numbers), a suppressed or empty cell, or what :func:`read_table` refuses.
    """
    path = Path(path)
    if path.suffix.lower() in (".nc", ".nc4", ".cdf") or kwargs.get("format") == "netcdf":
        return read_table(path, **kwargs)
    try:
        published, margins, coords = read_published(path)
        why = None
    except ValueError as exc:       # not a table with totals: read_table says what it is
        margins, why = None, exc
    if not margins:
        table = read_table(path, **kwargs)
        clash = [(d, lab) for d in table.dims for lab in table.coords[d] if _is_total(lab)]
        if clash:
            raise why or ValueError(f"{path}: category {clash[0][1]!r} of {clash[0][0]!r} "
                                    "reads as a total, but the file's totals could not "
                                    "be read")
        return table
    dims = tuple(coords)
    if published is None:
        raise ValueError(f"{path}: holds totals only (every cell empty): protect needs the "
                         "original table's cells")
    nan = np.argwhere(np.isnan(published.values))
    if nan.size:
        at = {d: coords[d][i] for d, i in zip(dims, nan[0])}
        raise ValueError(f"{path}: cell {at} is suppressed: protect needs every cell of "
                         "the original table")
    values = published.values
    scale = float(np.abs(values).sum())
    for keep, total in margins.items():
        summed = tuple(d for d in dims if d not in keep)
        sums = values.sum(axis=tuple(dims.index(d) for d in summed))
        for idx in np.ndindex(*np.shape(sums)):
            got, want = float(total.values[idx]), float(sums[idx])
            if np.isnan(got) or abs(got - want) <= 1e-9 * max(scale, 1.0):
                continue
            at = {d: (coords[d][idx[keep.index(d)]] if d in keep else "Total")
                  for d in dims}
            raise ValueError(
                f"{path}: the total at {', '.join(f'{d}={lab}' for d, lab in at.items())} "
                f"is {_entry_text(got)}, but the cells it sums (over "
                f"{', '.join(repr(d) for d in summed)}) add up to {_entry_text(want)}")
    return Table(values, dims=dims, coords=coords)


def tidy(values, digits: int = 12):
    """Floats rounded to ``digits`` significant digits (default 12), so that sums such as
    ``1234.5 + 9909.7 = 11144.199999999999`` are written ``11144.2``.  Relative change at
    most ``5e-13``; integers, NaN and infinities unchanged.

    >>> tidy([11144.199999999999, 0.1 + 0.2, 3.0]).tolist()
    [11144.2, 0.3, 3.0]
    """
    a = np.asarray(values)
    if not np.issubdtype(a.dtype, np.floating):
        return a
    out = a.astype(float)
    flat = out.reshape(-1)
    fin = np.flatnonzero(np.isfinite(flat))
    flat[fin] = [float(f"{x:.{digits}g}") for x in flat[fin].tolist()]
    return out


def _entry(x, integer: bool) -> str:
    if np.isnan(x):
        return SUPPRESSED[0]
    return str(int(x)) if integer else repr(float(x))


def write_published(release, path) -> None:
    """The published numbers of ``release`` as a CSV a board receives, readable by
    :func:`read_published`: wide (``v\\w`` corner, a ``Total`` row and column, the grand
    total in the corner) for 2-D tables, long (one column per dim, ``Total`` for the
    summed dims) otherwise.  Suppressed entries are ``x``; a block that is not published
    (the interior of a margins-only release, a total the release leaves out) is empty.
    Magnitudes are written through :func:`tidy`.  Written atomically.
    """
    dims, shape = tuple(release.dims), tuple(release.shape)
    if getattr(release, "groups", None):
        raise ValueError("a release with subtotal groups has no CSV form here (its "
                         "subtotals are no row or column of the table): keep the JSON")
    for d in dims:
        clash = [lab for lab in release.coords[d] if _is_total(lab)]
        if clash:
            raise ValueError(f"dim {d!r} has a category {clash[0]!r}, which a published "
                             "table reads as a total: rename the category")
    total = "Total"
    integer = release.kind == "count"
    blocks = {dims: release.published, **dict(release.margins)}

    def block_value(idx):
        """The entry at ``idx`` (None: a category index; ``total``: the total)."""
        summed = tuple(d for d, i in zip(dims, idx) if i is None)
        keep = tuple(d for d in dims if d not in summed)
        val = blocks.get(keep)
        if val is None:
            return ""
        arr = tidy(np.asarray(val, dtype=float)) if not integer else np.asarray(val, float)
        return _entry(arr[tuple(i for i in idx if i is not None)], integer)

    axes = [list(range(n)) + [None] for n in shape]

    def label(d, i):
        return total if i is None else release.coords[d][i]

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if len(dims) == 2:
        w.writerow([f"{dims[0]}\\{dims[1]}", *(label(dims[1], j) for j in axes[1])])
        for i in axes[0]:
            w.writerow([label(dims[0], i), *(block_value((i, j)) for j in axes[1])])
    else:
        w.writerow([*dims, "value"])
        for idx in product(*axes):
            w.writerow([*(label(d, i) for d, i in zip(dims, idx)), block_value(idx)])
    atomic_write_text(path, buf.getvalue())


def read_netcdf(path, variable: str | None = None, margins=None) -> Table:
    """Read a table from one variable of a netCDF file (dims and coords as stored).

    Parameters
    ----------
    path : str or path-like
        The netCDF file.
    variable : str, optional
        The data variable holding the cell values; needed only when the file holds more
        than one.
    margins : sequence of tuples, optional
        Published marginal configurations (see :class:`~riskengine.Table`); default: all
        totals of a 2-D table, every (k-1)-way margin of a k-D table.

    Returns
    -------
    Table
        The table, with the variable's dims, coords and name.
    """
    ds = xr.open_dataset(path)
    try:
        if variable is None:
            names = list(ds.data_vars)
            if len(names) != 1:
                raise ValueError(f"{path}: holds variables {names}; say which with variable=")
            variable = names[0]
        da = ds[variable].load()
    finally:
        ds.close()
    return Table(da, margins=margins)


def read_table(path, format: str | None = None, **kwargs) -> Table:
    """Read a table from CSV (long or wide, detected) or netCDF.

    Parameters
    ----------
    path : str or path-like
        The file; a ``.nc``, ``.nc4`` or ``.cdf`` suffix means netCDF.
    format : {"long", "wide", "netcdf"}, optional
        The layout; default: netCDF by suffix, else a CSV whose corner cell is empty or
        names the dims (``v\\w``) is wide, and any other is long (a pandas crosstab with
        the row dim's name in the corner is read as wide).
    **kwargs
        Passed to :func:`read_csv_long`, :func:`read_csv_wide` or :func:`read_netcdf`
        (``margins``, ``dims``, ``value``, ``variable``).

    Returns
    -------
    Table
        The table read.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    fmt = format or ("netcdf" if path.suffix.lower() in (".nc", ".nc4", ".cdf") else None)
    if fmt == "netcdf":
        return read_netcdf(path, **kwargs)
    if fmt == "long":
        return read_csv_long(path, **kwargs)
    if fmt == "wide":
        return read_csv_wide(path, **kwargs)
    if fmt is not None:
        raise ValueError(f"unknown table format {fmt!r}; known: 'long', 'wide', 'netcdf'")
    rows = _read_rows(path)
    first = rows[0][0].strip()
    # wide form is marked by its corner cell: empty, or "row\\column" naming the dims
    wide = first == "" or "\\" in first
    if wide:
        return read_csv_wide(path, **kwargs)
    try:
        return read_csv_long(path, **kwargs)
    except ValueError as long_error:
        # pandas writes a crosstab with the row dim's name in the corner: every entry after
        # the first column a number, which a long table's label columns rarely are all
        if not _numbers_after_first(rows) or "dims" in kwargs or "value" in kwargs:
            raise
        try:
            return read_csv_wide(path, dims=(first, "column"),
                                 **{k: v for k, v in kwargs.items() if k == "margins"})
        except ValueError:
            raise long_error from None


def _numbers_after_first(rows) -> bool:
    """Every entry of every data row after the first column is a number (and there are
    at least two such columns)."""
    if len(rows[0]) < 3 or len(rows) < 2:
        return False
    for r in rows[1:]:
        for x in r[1:]:
            try:
                float(x.strip())
            except ValueError:
                return False
    return True
