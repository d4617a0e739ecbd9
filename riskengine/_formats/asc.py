"""tau-Argus microdata files (``.asc`` fixed width, or separated when the ``.rda`` has
``<SEPARATOR>``), read as libtauargus reads them (``src/TauArgus.cpp``:
``ReadMicroRecord``, ``DoMicroRecord``, ``ReadVariablesFreeFormat``,
``ConvertNumeric``; ``src/Variable.cpp``: ``CVariable::NormaliseCode``).

* A record is a line with trailing control characters removed (trailing spaces are
  kept); empty lines are skipped.
* Fixed width: a variable's code is the ``width`` characters from the 1-based
  ``start``, verbatim -- codes are right-aligned in the file, so ``" 1"`` stays
  ``" 1"``, as in ``.hrc`` files.
* Separated: the record is split at the (one-character) separator; a code is stripped
  of spaces and tabs, its double quotes removed, and left-padded with spaces to the
  variable's width (``NormaliseCode``): ``1`` with width 2 becomes ``" 1"`` -- the same
  code as in a fixed-width file, and as in the ``.hrc`` file.
* A numeric field is missing (NaN) when its code equals one of the variable's missing
  codes left-padded to the width (``Variable.normaliseMissing`` then a plain string
  comparison); otherwise it is read as C ``strtod`` reads it: spaces around are
  allowed, and a blank field reads as 0.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from riskengine._atomic import atomic_write_text
from riskengine._formats._lines import FormatError, read_source

__all__ = ["read_asc", "write_asc"]

_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
#: Roles read as numbers (tau-Argus ``Type.isNumeric`` for microdata, less CAT_RESP,
#: whose code is also a category and is kept as str).
_NUMERIC_ROLES = ("numeric", "weight", "recordkey")


def _is_float_column(var) -> bool:
    return bool(set(_NUMERIC_ROLES) & var.roles) and not var.is_explanatory


def _normalise(code: str, width: int) -> str:
    code = code.strip(" \t").replace('"', "")
    return code.rjust(width)


def read_asc(source, meta, encoding: str = "latin-1") -> pd.DataFrame:
    """Read a tau-Argus microdata file described by ``meta``.

    Parameters
    ----------
    source : str or os.PathLike
        A path, or the file's text.
    meta : Metadata
        Microdata metadata (:func:`riskengine._formats.rda.read_rda`): fixed width
        (``start``/``width`` per variable) or separated (``meta.separator``, fields in
        variable order).
    encoding : str, default "latin-1"
        The file's encoding.

    Returns
    -------
    pandas.DataFrame
        A column per variable in ``.rda`` order, then ``line`` (the 1-based line in the
        file).  Numeric, weight and record-key variables are float (NaN for a missing
        code); every other variable -- explanatory (also one that is numeric too),
        holding, request -- is str, the code as tau-Argus sees it (see the module notes:
        right-aligned to the width).

    Raises
    ------
    FormatError
        A fixed-width record too short for a variable, a separated record with the wrong
        number of fields, a separated code longer than its width (tau-Argus would cut
        it), a numeric field that is not a number.

    Examples
    --------
    >>> from riskengine._formats.rda import read_rda
    >>> meta = read_rda('''Region 1 2 "99"
    ...   <RECODEABLE>
    ... Income 3 6 "999999"
    ...   <NUMERIC>
    ... ''')
    >>> read_asc(" 1  12.5\\n10999999\\n", meta).to_dict("list")
    {'Region': [' 1', '10'], 'Income': [12.5, nan], 'line': [1, 2]}
    """
    if meta.kind != "micro":
        raise ValueError(f"{meta.name} is tabular metadata; microdata needs microdata "
                         "metadata")
    if meta.spss:
        raise ValueError(f"{meta.name} describes an SPSS system file (<SPSS>)")
    name, text = read_source(source, encoding)
    variables = meta.variables
    sep = meta.separator
    if sep is not None and (len(sep) != 1 or sep == " "):
        raise FormatError(meta.name, meta.lines.get("separator"), f"separator {sep!r}: "
                          "tau-Argus reads microdata separated by one character other "
                          "than a space (ReadVariablesFreeFormat)")
    data = {v.name: [] for v in variables}
    lines = []
    floats = {v.name: _is_float_column(v) for v in variables}
    missing = {v.name: {m.rjust(v.width) for m in v.missing} for v in variables}
    for lineno, line in enumerate(text.split("\n"), start=1):
        record = re.sub(r"[\x00-\x1f]+$", "", line)
        if record == "":
            continue
        if sep is None:
            codes = []
            for v in variables:
                end = v.start - 1 + v.width
                if len(record) < end:
                    raise FormatError(name, lineno, f"record of {len(record)} characters "
                                      f"is too short for {v.name!r} (columns {v.start}-"
                                      f"{end})")
                codes.append(record[v.start - 1:end])
        else:
            fields = record.split(sep)
            if len(fields) != len(variables):
                raise FormatError(name, lineno, f"{len(fields)} fields, but the metadata {meta.name} "
                                  f"declares {len(variables)} variables separated by "
                                  f"{sep!r}")
            codes = []
            for v, field in zip(variables, fields):
                code = _normalise(field, v.width)
                if len(code) > v.width:
                    raise FormatError(name, lineno, f"{v.name} {field.strip()!r} is "
                                      f"longer than its width {v.width}")
                codes.append(code)
        for v, code in zip(variables, codes):
            if not floats[v.name]:
                data[v.name].append(code)
            elif code in missing[v.name]:
                data[v.name].append(math.nan)
            elif code.strip() == "":
                data[v.name].append(0.0)            # strtod("") is 0
            elif _NUMBER.fullmatch(code):
                data[v.name].append(float(code))
            else:
                raise FormatError(name, lineno, f"{v.name} {code!r} is not a number")
        lines.append(lineno)
    frame = pd.DataFrame({v.name: pd.Series(data[v.name], dtype=float if floats[v.name]
                                            else object) for v in variables})
    frame["line"] = np.array(lines, dtype=np.int64)
    return frame


def _format(var, value) -> str:
    """A numeric value as text: the variable's decimals; without them whole numbers
    bare and others in the shortest form that reads back the same; NaN as the first
    missing code."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        if not var.missing:
            raise ValueError(f"{var.name}: a missing value (NaN) but the variable has no "
                             "missing code")
        return var.missing[0]
    x = float(value)
    if math.isinf(x):
        raise ValueError(f"{var.name}: cannot write {x}")
    if var.decimals:
        return f"{x:.{var.decimals}f}"
    return str(int(x)) if x == int(x) and abs(x) < 1e16 else repr(x)


def write_asc(frame, meta, path=None) -> str:
    """Write microdata as tau-Argus reads them: fixed width, or separated when
    ``meta.separator`` is set.

    Normalisation: fixed width -- every field right-aligned to its width at its start,
    gaps filled with spaces, the record as long as the last field's end; separated --
    codes without their left padding (tau-Argus pads them again when reading).
    Numbers use the variable's ``<DECIMALS>`` (rounded to them), whole numbers without
    decimals, others in the shortest form that reads back the same; NaN is written as
    the variable's first missing code.  ``read_asc(write_asc(read_asc(f)))`` equals
    ``read_asc(f)`` (up to ``line``).

    Parameters
    ----------
    frame : pandas.DataFrame
        A column per variable of ``meta`` (as :func:`read_asc` returns; other columns
        are ignored).
    meta : Metadata
        Microdata metadata.
    path : str or os.PathLike, optional
        Where to write (atomically); when None only the text is returned.

    Returns
    -------
    str
        The text of the file.
    """
    if meta.kind != "micro":
        raise ValueError(f"{meta.name} is tabular metadata")
    variables = meta.variables
    absent = [v.name for v in variables if v.name not in frame.columns]
    if absent:
        raise ValueError(f"frame has no column for {absent}")
    sep = meta.separator
    floats = {v.name: _is_float_column(v) for v in variables}
    out = []
    for row_no, row in enumerate(zip(*(frame[v.name].tolist() for v in variables))):
        texts = []
        for v, value in zip(variables, row):
            text = _format(v, value) if floats[v.name] else str(value)
            if len(text.strip()) > v.width or (sep is None and len(text) > v.width):
                raise ValueError(f"row {row_no}: {v.name} {text!r} is wider than "
                                 f"{v.width}")
            if sep is not None and (sep in text or '"' in text or "\n" in text):
                raise ValueError(f"row {row_no}: {v.name} {text!r} holds the separator, "
                                 "a quote or a newline")
            texts.append(text)
        if sep is not None:
            out.append(sep.join(t.strip(" \t") for t in texts))
            continue
        chars = [" "] * max(v.start - 1 + v.width for v in variables)
        for v, text in zip(variables, texts):
            text = text.rjust(v.width)
            for i, ch in enumerate(text, start=v.start - 1):
                if chars[i] != " " and chars[i] != ch:
                    raise ValueError(f"row {row_no}: {v.name} overlaps another variable "
                                     f"at column {i + 1} with a different character")
                chars[i] = ch
        out.append("".join(chars))
    text = "\n".join(out) + ("\n" if out else "")
    if path is not None:
        atomic_write_text(path, text)
    return text
