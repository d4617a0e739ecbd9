"""Readers for tables (CSV long / wide, netCDF) and atomic writers.

Nothing the user gave is modified; every file the tool writes goes to a
temporary file in the same folder first and is then renamed into place.
"""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from .table import Table

__all__ = [
    "atomic_write_bytes",
    "atomic_write_netcdf",
    "atomic_write_text",
    "read_csv_long",
    "read_csv_wide",
    "read_netcdf",
    "read_table",
]


def _write_atomically(path, write) -> None:
    """``write(tmp_path)`` into a temporary file beside ``path``, then rename it into place.

    The file gets the mode of the file it replaces, or the usual 0644 (``mkstemp``
    alone would leave 0600).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    _write_atomically(path, write)


def atomic_write_bytes(path, data: bytes) -> None:
    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(data)
    _write_atomically(path, write)


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


def _read_rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = [r for r in csv.reader(fh) if r and any(x.strip() for x in r)]
    if len(rows) < 2:
        raise ValueError(f"{path}: a table CSV needs a header and at least one data row")
    return rows


def _label(x: str):
    x = x.strip()
    try:
        return int(x)
    except ValueError:
        return x


def _number(x: str, where: str) -> float:
    try:
        return float(x)
    except ValueError:
        raise ValueError(f"{where}: {x!r} is not a number") from None


def read_csv_long(path, value: str | None = None, dims=None, margins=None) -> Table:
    """Long form: one column per dim plus a value column (default: the last column).

    Every combination of categories must appear exactly once.
    """
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
        recs.append((key, _number(r[vi], f"{path}, line {n}")))
    shape = tuple(len(labels[d]) for d in dims)
    out = np.full(shape, np.nan)
    for key, v in recs:
        idx = tuple(labels[d].index(lab) for d, lab in zip(dims, key))
        if not np.isnan(out[idx]):
            raise ValueError(f"{path}: cell {dict(zip(dims, key))} appears more than once")
        out[idx] = v
    if np.isnan(out).any():
        idx = tuple(int(i) for i in np.argwhere(np.isnan(out))[0])
        missing = {d: labels[d][i] for d, i in zip(dims, idx)}
        raise ValueError(f"{path}: cell {missing} is missing (long form needs every combination)")
    return Table(out, dims=dims, coords=labels, margins=margins)


def read_csv_wide(path, dims=("row", "column"), margins=None) -> Table:
    """Wide 2-D form: first column row labels, header row column labels.

    A header cell in the first column (e.g. ``v\\w``) may name the dims as ``row\\col``.
    """
    rows = _read_rows(path)
    corner = rows[0][0].strip()
    if "\\" in corner:
        named = tuple(p.strip() for p in corner.split("\\", 1))
        if all(named):
            dims = named
    cols = [_label(c) for c in rows[0][1:]]
    rlabels, vals = [], []
    for n, r in enumerate(rows[1:], start=2):
        if len(r) != len(cols) + 1:
            raise ValueError(f"{path}, line {n}: {len(r) - 1} values, header has {len(cols)} columns")
        rlabels.append(_label(r[0]))
        vals.append([_number(x, f"{path}, line {n}") for x in r[1:]])
    return Table(np.array(vals), dims=tuple(dims), coords={dims[0]: rlabels, dims[1]: cols},
                 margins=margins)


def read_netcdf(path, variable: str | None = None, margins=None) -> Table:
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
    """Read a table from CSV (long or wide, detected) or netCDF."""
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
    return read_csv_wide(path, **kwargs) if wide else read_csv_long(path, **kwargs)
