"""tau-Argus ``.tab`` tabular input: one line per cell (totals included), the fields in
the order of the ``.rda`` file's variables, separated by its ``<SEPARATOR>``.

The rules are those of tau-Argus ``src/tauargus/model/TableSet.java`` (``buildCell``)
with the field splitting of ``Tokenizer.nextField``: a field ends at the next separator
(a separator inside quotes is not special: a code cannot contain the separator); it is
stripped of surrounding spaces; then, if it is in double quotes, the quotes are removed
and what they enclose is kept as it is (``" 1"`` is the code ``" 1"``, as in ``.hrc``
files; an unquoted `` 1`` is the code ``"1"``; tau-Argus then left-pads codes to the
variable's width, ``Variable.padCode``, so both meet the hierarchy's codes).  Blank lines
and lines starting with ``//`` are skipped.  An empty number or ``-`` is unknown (NaN).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from riskengine._atomic import atomic_write_text
from riskengine._formats._lines import FormatError, read_source

__all__ = ["read_tab", "write_tab"]

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_FLOAT_ROLES = ("numeric", "shadow", "costvar", "lowerpl", "upperpl", "maxscore",
                "frequency")


def _split(name, lineno, line, separator):
    """Fields of a line, stripped and unquoted (``Tokenizer.nextField``)."""
    fields = []
    for raw in line.split(separator):
        value = raw.strip()
        if value.startswith('"') or value.endswith('"'):
            if len(value) < 2 or not (value.startswith('"') and value.endswith('"')) \
                    or '"' in value[1:-1]:
                raise FormatError(name, lineno, f"field {raw!r} has an unbalanced quote "
                                  f"(a quoted field cannot contain {separator!r} or '\"')")
            value = value[1:-1]
        fields.append(value)
    return fields


def _float(name, lineno, text, what, decimal):
    """A number as tau-Argus's ``StrUtils.toDouble`` reads it, or NaN for ``""``/``-``."""
    if text in ("", "-"):
        return math.nan
    if decimal == ",":
        if "." in text:
            raise FormatError(name, lineno, f"{what} {text!r} has a '.' but the decimal "
                              "mark is ',' (thousands separators are not allowed)")
        text = text.replace(",", ".")
    if not _NUMBER.fullmatch(text):
        raise FormatError(name, lineno, f"{what} {text!r} is not a number")
    return float(text)


def _column_roles(meta):
    """``[(variable, kind)]`` with kind "code", "float", "int" or "status"."""
    out = []
    for v in meta.variables:
        if v.is_explanatory:
            out.append((v, "code"))
        elif "status" in v.roles:
            out.append((v, "status"))
        elif "frequency" in v.roles:
            out.append((v, "int"))
        elif set(_FLOAT_ROLES) & v.roles:
            out.append((v, "float"))
        else:
            out.append((v, "code"))
    return out


def _detect_decimal(name, rows, numeric_idx, separator, decimal):
    if decimal not in (None, ".", ","):
        raise ValueError(f"decimal must be '.', ',' or None, not {decimal!r}")
    if decimal == "," and separator == ",":
        raise FormatError(name, None, "decimal=',' with the separator ',': a number "
                          "such as 1,5 could be one field or two")
    if decimal is not None:
        return decimal
    comma = dot = None
    for lineno, fields in rows:
        for i in numeric_idx:
            if i < len(fields):
                if "," in fields[i] and comma is None:
                    comma = (lineno, fields[i])
                if "." in fields[i] and dot is None:
                    dot = (lineno, fields[i])
    if comma and dot:
        later = max(comma, dot)
        raise FormatError(name, later[0], f"number {later[1]!r}: the file writes numbers "
                          f"with ',' ({comma[1]!r}, line {comma[0]}) and with '.' "
                          f"({dot[1]!r}, line {dot[0]}); give decimal=")
    return "," if comma else "."


def read_tab(source, meta, encoding: str = "latin-1", decimal=None) -> pd.DataFrame:
    """Read a tau-Argus ``.tab`` file (one line per cell).

    Parameters
    ----------
    source : str or os.PathLike
        A path, or the file's text.
    meta : Metadata
        The table's ``.rda`` metadata (:func:`riskengine._formats.rda.read_rda`); the
        fields of a line are its variables, in order, separated by ``meta.separator``.
    encoding : str, default "latin-1"
        The file's encoding.
    decimal : {None, ".", ","}, default None
        The decimal mark of the numbers.  None detects it: "," when numbers such as
        ``16847646,84`` occur (and the separator is not ","), "." otherwise; a file with
        both is refused.

    Returns
    -------
    pandas.DataFrame
        One row per line: a column per explanatory variable (its codes, str), then a
        column per other variable in ``.rda`` order -- numeric, shadow, cost, max-score
        (top 1, 2, ...), frequency and protection-level columns as float (NaN where the
        field is empty or ``-``), the status column as str (as written; ``""`` if
        empty) -- then ``line`` (the 1-based line in the file).

    Raises
    ------
    FormatError
        A line with the wrong number of fields, a number that is not one, a frequency
        that is not a whole number, a status other than ``meta.safe``, ``meta.unsafe``,
        ``meta.protect``, ``E`` (empty) or ``M`` (secondary), in any case (the letters
        ``TableSet.buildCell`` accepts), an empty code (tau-Argus would read it as the
        total), the same cell twice.

    Examples
    --------
    >>> from riskengine._formats.rda import read_rda
    >>> meta = read_rda('''<SEPARATOR> ";"
    ... Region
    ...   <RECODEABLE>
    ...   <TOTCODE> "Total"
    ... Turnover
    ...   <NUMERIC>
    ... Freq
    ...   <FREQUENCY>
    ... ''')
    >>> frame = read_tab('"Total";12,5;3\\n" 1";12,5;3\\n', meta)
    >>> frame.to_dict("list")
    {'Region': ['Total', ' 1'], 'Turnover': [12.5, 12.5], 'Freq': [3.0, 3.0], 'line': [1, 2]}
    """
    name, text = read_source(source, encoding)
    separator = meta.separator
    if not separator:
        raise ValueError(f"{meta.name} has no <SEPARATOR>: fixed-width metadata does not "
                         "describe a .tab file")
    columns = _column_roles(meta)
    rows = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        fields = _split(name, lineno, line, separator)
        if len(fields) != len(columns):
            raise FormatError(name, lineno, f"{len(fields)} fields, but the metadata {meta.name} "
                              f"declares {len(columns)} variables "
                              f"({', '.join(v.name for v, _ in columns)}) separated by "
                              f"{separator!r}")
        rows.append((lineno, fields))
    numeric_idx = [i for i, (_, k) in enumerate(columns) if k in ("float", "int")]
    decimal = _detect_decimal(name, rows, numeric_idx, separator, decimal)
    statuses = {s.upper() for s in (meta.safe, meta.unsafe, meta.protect)} | {"E", "M"}
    data = {v.name: [] for v, _ in columns}
    seen: dict = {}
    code_idx = [i for i, (_, k) in enumerate(columns) if k == "code" and
                columns[i][0].is_explanatory]
    for lineno, fields in rows:
        for (var, kind), value in zip(columns, fields):
            if kind == "code":
                if value == "" and var.is_explanatory:
                    raise FormatError(name, lineno, f"empty code for {var.name!r} (tau-"
                                      f"Argus reads it as the total; write "
                                      f"{var.totcode!r})")
                data[var.name].append(value)
            elif kind == "status":
                if value.upper() not in statuses | {""}:
                    raise FormatError(name, lineno, f"status {value!r} of {var.name!r} "
                                      f"is not one of {', '.join(sorted(statuses))} "
                                      "(safe, unsafe, protect from the .rda; E empty; M "
                                      "secondary)")
                data[var.name].append(value)
            else:
                x = _float(name, lineno, value, f"{var.name}", decimal)
                if kind == "int" and not math.isnan(x) and x != int(x):
                    raise FormatError(name, lineno, f"frequency {value!r} of {var.name!r}"
                                      " is not an integer")
                data[var.name].append(x)
        key = tuple(fields[i] for i in code_idx)
        if key in seen:
            raise FormatError(name, lineno, f"duplicate cell {key}: the same codes as "
                              f"line {seen[key]}")
        seen[key] = lineno
    order = [v.name for v, k in columns if v.is_explanatory] + \
        [v.name for v, k in columns if not v.is_explanatory]
    kinds = {v.name: k for v, k in columns}
    frame = pd.DataFrame({c: pd.Series(data[c], dtype=object if kinds[c] in ("code", "status")
                                       else float) for c in order})
    frame["line"] = np.array([lineno for lineno, _ in rows], dtype=np.int64)
    return frame


def _decimals(meta):
    """Decimals per numeric column: a variable's own ``<DECIMALS>``; shadow, cost,
    max-score and protection-level columns without one take the largest of the
    response variables' (the layout of tau-Argus's own tables, e.g. pp.tab)."""
    resp = max((v.decimals for v in meta.variables if "numeric" in v.roles), default=0)
    out = {}
    for v in meta.variables:
        if "frequency" in v.roles:
            out[v.name] = 0
        elif v.decimals or "numeric" in v.roles:
            out[v.name] = v.decimals
        else:
            out[v.name] = resp
    return out


def _format_number(x, decimals, decimal):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    x = float(x)
    if math.isinf(x):
        raise ValueError(f"cannot write {x} to a .tab file")
    text = f"{x:.{decimals}f}" if decimals else (
        str(int(x)) if x == int(x) else repr(x))
    return text.replace(".", ",") if decimal == "," else text


def write_tab(frame, meta, path=None, decimal: str = ".", *, quote: bool = True) -> str:
    """Write cells as a tau-Argus ``.tab`` file.

    Normalisation (what a read-write round trip changes): codes are written in double
    quotes (``quote=True``, as tau-Argus's own ``pp.tab``) or bare; numbers with the
    variable's ``<DECIMALS>`` -- shadow, cost, max-score and protection-level columns
    without their own take the response variable's, frequencies are whole numbers, a
    column without decimals writes whole values bare and others in the shortest form
    that reads back the same; unknown numbers (NaN, read from ``""`` or ``-``) as
    ``""``; statuses as given; comments and blank lines are not kept.  With these,
    ``write_tab(read_tab(f), meta, decimal=",")`` reproduces ``pp.tab``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A column per variable of ``meta`` (as :func:`read_tab` returns; other columns,
        such as ``line``, are ignored).
    meta : Metadata
        The ``.rda`` metadata: field order and separator.
    path : str or os.PathLike, optional
        Where to write (atomically); when None only the text is returned.
    decimal : {".", ","}, default "."
        The decimal mark.
    quote : bool, default True
        Put codes in double quotes (a code with surrounding spaces is always quoted).

    Returns
    -------
    str
        The text of the file.
    """
    separator = meta.separator
    if not separator:
        raise ValueError(f"{meta.name} has no <SEPARATOR>")
    if decimal not in (".", ","):
        raise ValueError(f"decimal must be '.' or ',', not {decimal!r}")
    if decimal == separator:
        raise ValueError(f"decimal {decimal!r} equals the separator")
    columns = _column_roles(meta)
    missing = [v.name for v, _ in columns if v.name not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column for {missing}")
    decimals = _decimals(meta)
    lines = []
    for row_no, row in enumerate(zip(*(frame[v.name].tolist() for v, _ in columns))):
        fields = []
        for (var, kind), value in zip(columns, row):
            if kind in ("code", "status"):
                value = "" if value is None or (isinstance(value, float)
                                                and math.isnan(value)) else str(value)
                if separator in value or '"' in value or "\n" in value:
                    raise ValueError(f"row {row_no}: {var.name} {value!r} contains the "
                                     "separator, a quote or a newline")
                if kind == "code" and var.is_explanatory:
                    if value == "":
                        raise ValueError(f"row {row_no}: empty code for {var.name!r}")
                    fields.append(f'"{value}"' if quote or value != value.strip()
                                  else value)
                else:
                    fields.append(value)
            else:
                fields.append(_format_number(value, decimals[var.name], decimal))
        lines.append(separator.join(fields))
    text = "\n".join(lines) + ("\n" if lines else "")
    if path is not None:
        atomic_write_text(path, text)
    return text
