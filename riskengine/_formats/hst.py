"""tau-Argus a-priori ``.hst`` files: one line per cell, the codes of the table's
explanatory variables, then an action and its numbers, separated by a separator the
user chooses in tau-Argus.

The syntax is that of ``src/tauargus/model/APriori.java`` (``processAprioryFile``):

========  ===========  ===============================================================
action    numbers      meaning
========  ===========  ===============================================================
S, U, P   --           set the cell safe / unsafe / protected (manual)
M         --           set the cell secondary unsafe (manual)
ML        --           set the cell secondary unsafe (for linked tables)
C, W      cost         a new cost for the cell; ``W`` is the same as ``C`` (tau-Argus
                       treats both as ``AP_ADJUST_COST``); a cost <= 0 is replaced by 1
AB        lower upper  a-priori bounds (read but not applied by tau-Argus 4: "Change
                       apriory bounds is not yet possible")
PL        lower upper  new lower and upper protection levels (unsafe cells only)
========  ===========  ===============================================================

Fields are split at the separator and each is stripped; a field in double quotes loses
its quotes and keeps what they enclose (``" 1"`` is the code ``" 1"``; tau-Argus strips
it once more, ``codes[i].trim()``, and compares it with the stripped code list, so
compare stripped codes to match it).  The action is case-insensitive.  Blank lines and
lines starting with ``//`` are skipped.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from riskengine._atomic import atomic_write_text
from riskengine._formats._lines import FormatError, read_source
from riskengine._formats.tab import _NUMBER, _split

__all__ = ["ACTIONS", "read_hst", "write_hst"]

#: ``{action: names of its numbers}``.
ACTIONS = {"S": (), "U": (), "P": (), "M": (), "ML": (), "C": ("cost",), "W": ("cost",),
           "AB": ("lower", "upper"), "PL": ("lower", "upper")}
_SEPARATORS = (";", ",", "\t", "|")


def _is_number(text: str) -> bool:
    return bool(_NUMBER.fullmatch(text))


def read_hst(source, n_dims=None, separator=None, encoding: str = "latin-1"
             ) -> pd.DataFrame:
    """Read a tau-Argus a-priori (``.hst``) file.

    Parameters
    ----------
    source : str or os.PathLike
        A path, or the file's text.
    n_dims : int, optional
        The number of explanatory variables of the table (codes per line).  By default
        found from the first line as tau-Argus does (``NumberOfVarsInAprioryFile``): the
        fields before the action, the action being the last field that is not a number;
        every later line must then have as many codes.
    separator : str, optional
        The field separator.  By default the first of ``;``, ``,``, tab, ``|`` found in
        the first line (tau-Argus requires the separator in the first line).
    encoding : str, default "latin-1"
        The file's encoding.

    Returns
    -------
    pandas.DataFrame
        Columns ``line`` (1-based line in the file), ``codes`` (tuple of str, one per
        dimension), ``action`` (upper case; one of :data:`ACTIONS`), ``cost`` (C, W),
        ``lower`` and ``upper`` (AB: the bounds; PL: the lower and upper protection
        levels), NaN where the action has no such number.

    Raises
    ------
    FormatError
        An unknown action, the wrong number of numbers for the action, a number that is
        not one, a negative cost, a negative protection level, bounds with lower >
        upper, the wrong number of codes, an empty code, no separator in the first line.

    Examples
    --------
    >>> frame = read_hst('Total;" 1";U\\n2;Total;C;10\\n2;" 1";PL;5;7.5\\n')
    >>> frame[["codes", "action", "cost", "lower", "upper"]].values.tolist()
    [[('Total', ' 1'), 'U', nan, nan, nan], [('2', 'Total'), 'C', 10.0, nan, nan], [('2', ' 1'), 'PL', nan, 5.0, 7.5]]
    """
    name, text = read_source(source, encoding)
    if n_dims is not None and (not isinstance(n_dims, (int, np.integer)) or n_dims < 1):
        raise ValueError(f"n_dims must be a positive integer, not {n_dims!r}")
    rows = []
    inferred = None         # the line n_dims was inferred from
    for lineno, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if separator is None:
            separator = next((s for s in _SEPARATORS if s in stripped), None)
            if separator is None:
                raise FormatError(name, lineno, f"no separator ({', '.join(map(repr, _SEPARATORS))})"
                                  f" in the first line {stripped!r}; give separator=")
        elif not rows and separator not in stripped:
            raise FormatError(name, lineno, f"separator {separator!r} not found in the "
                              f"first line {stripped!r}")
        fields = _split(name, lineno, line, separator)
        if n_dims is None or inferred:
            k = len(fields) - 1
            while k >= 0 and _is_number(fields[k]):
                k -= 1
            if k < 1:
                raise FormatError(name, lineno, f"no action in {stripped!r}: a line is "
                                  "codes, an action, then its numbers")
            if n_dims is None:
                n_dims, inferred = k, lineno
            elif k != n_dims:
                raise FormatError(name, lineno, f"{k} codes before the action "
                                  f"{fields[k]!r}, but the first line (line {inferred}) "
                                  f"has {n_dims}: every line gives one code per "
                                  "dimension")
        if len(fields) <= n_dims:
            raise FormatError(name, lineno, f"{len(fields)} fields: {n_dims} codes and an "
                              "action expected")
        codes = tuple(fields[:n_dims])
        action = fields[n_dims].upper()
        args = fields[n_dims + 1:]
        if action not in ACTIONS:
            hint = ""
            if _is_number(action) or any(a.upper() in ACTIONS for a in args):
                hint = f" (is the number of codes {n_dims} right?)"
            raise FormatError(name, lineno, f"unknown action {fields[n_dims]!r}{hint}; "
                              f"known: {', '.join(ACTIONS)}")
        for i, code in enumerate(codes):
            if code == "":
                raise FormatError(name, lineno, f"empty code in dimension {i + 1}")
        names = ACTIONS[action]
        if len(args) != len(names):
            raise FormatError(name, lineno, f"action {action} takes {len(names)} "
                              f"number{'s' * (len(names) != 1)} "
                              f"({', '.join(names) or 'none'}), got {len(args)}: "
                              f"{separator.join(args) or '(none)'}")
        values = {"cost": math.nan, "lower": math.nan, "upper": math.nan}
        for key, arg in zip(names, args):
            if not _is_number(arg):
                raise FormatError(name, lineno, f"{key} {arg!r} of action {action} is not "
                                  "a number")
            values[key] = float(arg)
        if action in ("C", "W") and values["cost"] < 0:
            raise FormatError(name, lineno, f"cost {args[0]} is negative: a cost must be "
                              ">= 0 (tau-Argus replaces a cost <= 0 by 1)")
        if action == "PL" and (values["lower"] < 0 or values["upper"] < 0):
            raise FormatError(name, lineno, f"protection levels {args[0]}, {args[1]}: a "
                              "protection level may not be negative")
        if action == "AB" and values["lower"] > values["upper"]:
            raise FormatError(name, lineno, f"bounds {args[0]} > {args[1]}: the lower "
                              "bound exceeds the upper bound")
        rows.append({"line": lineno, "codes": codes, "action": action, **values})
    frame = pd.DataFrame(rows, columns=["line", "codes", "action", "cost", "lower",
                                        "upper"])
    frame["line"] = frame["line"].astype(np.int64)
    for col in ("cost", "lower", "upper"):
        frame[col] = frame[col].astype(float)
    frame["action"] = frame["action"].astype(object)
    frame["codes"] = frame["codes"].astype(object)
    return frame


def _number(x) -> str:
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"cannot write {x} to an .hst file")
    return str(int(x)) if x == int(x) and abs(x) < 1e16 else repr(x)


def write_hst(frame, path=None, separator: str = ";") -> str:
    """Write an a-priori (``.hst``) file.

    Normalisation: codes are written bare, or in double quotes when they have
    surrounding spaces; the action upper case; whole numbers without decimals, others
    in the shortest form that reads back the same; comments are not kept.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``codes``, ``action`` and, as the actions need them, ``cost``, ``lower``,
        ``upper`` (as :func:`read_hst` returns).
    path : str or os.PathLike, optional
        Where to write (atomically); when None only the text is returned.
    separator : str, default ";"
        The field separator.

    Returns
    -------
    str
        The text of the file.
    """
    if not separator or separator.strip() != separator or '"' in separator:
        raise ValueError(f"separator {separator!r} cannot be used")
    lines = []
    for i, row in enumerate(frame.to_dict("records")):
        action = str(row["action"]).upper()
        if action not in ACTIONS:
            raise ValueError(f"row {i}: unknown action {row['action']!r}")
        fields = []
        for code in row["codes"]:
            code = str(code)
            if code == "" or separator in code or '"' in code or "\n" in code:
                raise ValueError(f"row {i}: code {code!r} is empty or holds the "
                                 "separator, a quote or a newline")
            fields.append(f'"{code}"' if code != code.strip() else code)
        fields.append(action)
        fields += [_number(row[key]) for key in ACTIONS[action]]
        lines.append(separator.join(fields))
    text = "\n".join(lines) + ("\n" if lines else "")
    if path is not None:
        atomic_write_text(path, text)
    return text
