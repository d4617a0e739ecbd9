"""The JJ format: the cell-suppression problem as tau-Argus hands it to the solvers of
Salazar-Gonzalez (and as sdcTable's ``createJJFormat`` / ``writeJJFormat`` write it).

Layout, as libtauargus writes it (``src/JJFormat.cpp``, ``CJJFormat::WriteCells`` and
``WriteRestrictions``)::

    0                                      a constant
    N                                      the number of cells
    i value cost status lb ub lpl upl spl  N lines, i = 0 .. N-1 in order
    R                                      the number of relations
    rhs n : j1 (s1) j2 (s2) ...            R lines: rhs = sum_k s_k * cell[j_k]

``status`` is ``s`` (safe: CS_SAFE, CS_SAFE_MANUAL, CS_EMPTY_NONSTRUCTURAL), ``u``
(primary unsafe: every CS_UNSAFE_*), ``z`` (never to be suppressed: CS_PROTECT_MANUAL and
the structural empty CS_EMPTY) or ``m`` (secondary: CS_SECONDARY_UNSAFE[_MANUAL];
tauargus ``OptiSuppress.addSecondariesToJJFile`` turns a solver's ``s`` into ``m``).
sdcTable writes its own ``sdcStatus`` letters unchanged, so its files may also hold
``x`` (secondary); the reader accepts ``x`` as well.  ``lb``/``ub`` are the a priori
bounds of the cell, ``lpl``/``upl`` its lower and upper protection levels (nonzero for
``u`` cells), ``spl`` the sliding protection level.  A relation names ``n`` cells,
each with its coefficient in parentheses: libtauargus writes ``0 4 : 12 (-1) 0 (1) 1
(1) 2 (1) `` (the aggregate with -1, a trailing space), tauargus's Java post-processing
(``SaveTable.opschonenJJFileforKomma``, reading through ``Tokenizer``) strips the line,
and sdcTable writes ``0.0 4 : 12(-1) 0(1) 1(1) 2(1)``.  The count ``n`` includes the
aggregate.

Number formatting is kept so that ``write_jj(read_jj(text)) == text`` for every file
this reader accepts whose tokens are separated by single spaces and whose relation lines
either all or none end in one space, and that ends in one newline (CRLF line ends,
several trailing newlines, a mix of ``12 (1)`` and ``12(1)`` terms and ``+1`` signs are
normalised): each number keeps its own number of decimals (tau-Argus writes the bounds
of ``z`` cells and of the other cells with different decimals), and a number not in
plain ``[-]digits[.digits]`` notation (R's ``1e+05``) is written as it was read as long
as its value is unchanged.  A `JJ` built directly writes integral numbers as integers
and the others as Python's shortest ``repr``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._lines import FormatError, read_source

__all__ = ["JJ", "JJ_STATUSES", "read_jj", "write_jj"]

#: The status letters a JJ file may hold (see the module docstring).
JJ_STATUSES = ("s", "u", "z", "m", "x")

#: The numeric columns of a cell line after index, in file order (status sits after cost).
_NUMERIC = ("value", "cost", "lower", "upper", "lower_pl", "upper_pl", "sliding_pl")

_PLAIN = re.compile(r"-?[0-9]+(?:\.([0-9]+))?")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     r"|[+-]?(?:inf|Inf|INF|infinity|Infinity)")
_INT = re.compile(r"[0-9]+")
_TERM = re.compile(r"([^\s()]+)(\s*)\(\s*([^\s()]*)\s*\)")


def _general(x: float) -> str:
    """An integral float as an integer, any other as its shortest repr."""
    x = float(x)
    if np.isfinite(x) and x == int(x) and abs(x) < 2.0 ** 53:
        return str(int(x)) if x != 0 or not np.signbit(x) else "-0"
    return repr(x)


def _fmt(x: float, dec: int, raw) -> str:
    """``x`` with ``dec`` decimals (``dec < 0``: as the raw token ``raw`` if it still reads
    as ``x``, else `_general`)."""
    if dec >= 0:
        return f"{float(x):.{dec}f}"
    if raw is not None and float(raw) == float(x):
        return raw
    return _general(x)


@dataclass(frozen=True)
class JJStyle:
    """How a JJ file wrote its numbers, so that writing it back gives the same text.

    Parameters
    ----------
    decimals : numpy.ndarray
        int8, ``N x 7``: the decimals of each numeric field of each cell line (value,
        cost, lower, upper, lower_pl, upper_pl, sliding_pl); -1: not plain notation,
        the raw token is in ``raw``.
    rhs_decimals : numpy.ndarray
        int8, one per relation, the same for the right-hand sides.
    raw : dict
        ``{(row, column): token}`` for the cell fields that were not plain (column 0..6
        as in ``decimals``) and ``{("rhs", r): token}`` for right-hand sides.
    term_space : bool
        ``12 (1)`` (tau-Argus) rather than ``12(1)`` (sdcTable).
    trailing_space : bool
        Relation lines end in a space (libtauargus before tauargus's clean-up).
    """

    decimals: np.ndarray
    rhs_decimals: np.ndarray
    raw: dict = field(default_factory=dict)
    term_space: bool = True
    trailing_space: bool = False


@dataclass(frozen=True, eq=False)
class JJ:
    """A cell-suppression problem in JJ form: cells with bounds and protection levels, and
    the linear relations between them.

    Parameters
    ----------
    value, cost : array_like of float
        The cell values and their suppression costs (length N).
    status : array_like of str
        One of `JJ_STATUSES` per cell.
    lower, upper : array_like of float
        The a priori bounds of each cell (``lower <= value <= upper``).
    lower_pl, upper_pl, sliding_pl : array_like of float
        The protection levels (nonnegative).
    relations : sequence of (rhs, indices, signs)
        One per relation: ``rhs == sum(signs * cells[indices])``; indices 0-based, each at
        most once per relation, signs +1 / -1.  Stored as a tuple of ``(float,
        int64 array, int8 array)``.
    style : JJStyle, optional
        The number formatting read from a file (`read_jj` sets it); None: integral
        numbers as integers, others as their shortest repr, terms as ``12 (1)``.

    Examples
    --------
    >>> jj = JJ(value=[3, 1, 2], cost=[1, 1, 1], status=["s", "u", "s"],
    ...         lower=[0, 0, 0], upper=[30, 10, 20], lower_pl=[0, 1, 0],
    ...         upper_pl=[0, 1, 0], sliding_pl=[0, 0, 0],
    ...         relations=[(0, [0, 1, 2], [-1, 1, 1])])
    >>> print(write_jj(jj), end="")
    0
    3
    0 3 1 s 0 30 0 0 0
    1 1 1 u 0 10 1 1 0
    2 2 1 s 0 20 0 0 0
    1
    0 3 : 0 (-1) 1 (1) 2 (1)
    >>> jj.to_matrix().toarray()
    array([[-1,  1,  1]])
    """

    value: np.ndarray
    cost: np.ndarray
    status: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lower_pl: np.ndarray
    upper_pl: np.ndarray
    sliding_pl: np.ndarray
    relations: tuple = ()
    style: JJStyle | None = None

    def __post_init__(self):
        n = None
        for name in _NUMERIC:
            a = np.asarray(getattr(self, name), dtype=np.float64).reshape(-1)
            if n is None:
                n = a.size
            elif a.size != n:
                raise ValueError(f"{name} has {a.size} entries, value has {n}; every cell "
                                 "field needs one entry per cell")
            if np.isnan(a).any():
                raise ValueError(f"{name}[{int(np.flatnonzero(np.isnan(a))[0])}] is NaN")
            object.__setattr__(self, name, a)
        st = np.asarray(self.status, dtype=str).reshape(-1)
        if st.size != n:
            raise ValueError(f"status has {st.size} entries, value has {n}")
        bad = ~np.isin(st, JJ_STATUSES)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"status[{i}] = {st[i]!r}: a status must be one of "
                             f"{', '.join(JJ_STATUSES)}")
        object.__setattr__(self, "status", st)
        for i in range(n):
            msg = _cell_rule(self.value[i], self.lower[i], self.upper[i],
                             self.lower_pl[i], self.upper_pl[i], self.sliding_pl[i])
            if msg:
                raise ValueError(f"cell {i}: {msg}")
        rels = []
        for r, rel in enumerate(self.relations):
            rhs, idx, sgn = rel
            idx = np.asarray(idx, dtype=np.int64).reshape(-1)
            sgn = np.asarray(sgn).reshape(-1)
            if idx.size != sgn.size:
                raise ValueError(f"relation {r}: {idx.size} indices but {sgn.size} signs")
            if idx.size == 0:
                raise ValueError(f"relation {r} is empty: a relation needs a cell")
            if ((idx < 0) | (idx >= n)).any():
                raise ValueError(f"relation {r}: cell index out of range 0..{n - 1}: "
                                 f"{idx[(idx < 0) | (idx >= n)][0]}")
            if np.unique(idx).size != idx.size:
                raise ValueError(f"relation {r} names a cell twice")
            if not np.isin(sgn, (-1, 1)).all():
                raise ValueError(f"relation {r}: a sign must be +1 or -1, got "
                                 f"{sgn[~np.isin(sgn, (-1, 1))][0]!r}")
            rels.append((float(rhs), idx, sgn.astype(np.int8)))
        object.__setattr__(self, "relations", tuple(rels))
        if self.style is not None and (self.style.decimals.shape != (n, len(_NUMERIC))
                                       or self.style.rhs_decimals.shape != (len(rels),)):
            raise ValueError("style does not match the cells and relations")

    @property
    def n_cells(self) -> int:
        """The number of cells N."""
        return int(self.value.size)

    @property
    def rhs(self) -> np.ndarray:
        """The right-hand sides of the relations (float64, one per relation)."""
        return np.array([r[0] for r in self.relations], dtype=np.float64)

    def to_matrix(self) -> sp.csr_array:
        """The signed relation matrix.

        Returns
        -------
        scipy.sparse.csr_array
            int64, ``R x N``: row ``r`` holds relation ``r``'s signs in the columns of its
            cells, so that ``to_matrix() @ cells == rhs``.
        """
        counts = np.array([r[1].size for r in self.relations], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        if self.relations:
            indices = np.concatenate([r[1] for r in self.relations])
            data = np.concatenate([r[2] for r in self.relations]).astype(np.int64)
        else:
            indices, data = np.zeros(0, np.int64), np.zeros(0, np.int64)
        m = sp.csr_array((data, indices, indptr), shape=(len(self.relations), self.n_cells))
        m.sort_indices()
        return m


def _cell_rule(value, lower, upper, lpl, upl, spl) -> str:
    """The first rule a cell's numbers break ('' if none)."""
    if lower > upper:
        return f"lower bound {lower:g} > upper bound {upper:g}: bounds must satisfy lb <= ub"
    if not lower <= value <= upper:
        return (f"value {value:g} outside its bounds [{lower:g}, {upper:g}]: a value must "
                "lie within lb..ub")
    for nm, pl in (("lower", lpl), ("upper", upl), ("sliding", spl)):
        if pl < 0:
            return f"{nm} protection level {pl:g} is negative: protection levels must be >= 0"
    return ""


def read_jj(source, encoding: str = "utf-8") -> JJ:
    """Read a JJ file.

    Parameters
    ----------
    source : str or os.PathLike
        A path, or the file's text (a str holding a newline).
    encoding : str, default "utf-8"
        The file's encoding.

    Returns
    -------
    JJ
        With the file's number formatting in ``style`` (see the module docstring).

    Raises
    ------
    FormatError
        On the first malformed line: the file, the line number, the value and the rule.

    Examples
    --------
    >>> jj = read_jj("0\\n3\\n0 3 1 s 0 30 0 0 0\\n1 1 1 u 0 10 1 1 0\\n"
    ...              "2 2 1 s 0 20 0 0 0\\n1\\n0.0 3 : 0(-1) 1(1) 2(1)\\n")
    >>> jj.status.tolist(), jj.relations[0][1].tolist()
    (['s', 'u', 's'], [0, 1, 2])
    >>> print(write_jj(jj).splitlines()[-1])
    0.0 3 : 0(-1) 1(1) 2(1)
    """
    name, text = read_source(source, encoding)
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()                              # trailing blank lines: not junk

    def err(k, msg):
        return FormatError(name, k + 1, msg)

    def line(k, what):
        if k >= len(lines):
            raise FormatError(name, k + 1, f"the file ends; expected {what}")
        if not lines[k].strip():
            raise err(k, f"empty line; expected {what}")
        return lines[k]

    def count(k, what):
        s = line(k, what).strip()
        if not _INT.fullmatch(s):
            raise err(k, f"{s!r} is not a count: expected {what} (a nonnegative integer)")
        return int(s)

    first = line(0, "the constant 0").strip()
    if first != "0":
        raise err(0, f"{first!r}: the first line must be the constant 0")
    n = count(1, "the number of cells")
    cols = {nm: np.empty(n) for nm in _NUMERIC}
    status = np.empty(n, dtype="<U1")
    decimals = np.empty((n, len(_NUMERIC)), dtype=np.int8)
    raw: dict = {}
    for i in range(n):
        k = 2 + i
        toks = line(k, f"cell {i} of the {n} cells declared on line 2").split()
        if len(toks) != 9:
            if len(toks) in (1, 2) or (len(toks) > 2 and toks[2] == ":"):
                raise err(k, f"{lines[k].strip()!r} is not a cell line: line 2 declares {n} "
                          f"cells but the file holds {i}")
            raise err(k, f"{len(toks)} fields: a cell line has 9 fields (index value cost "
                      "status lb ub lpl upl spl)")
        if not _INT.fullmatch(toks[0]):
            raise err(k, f"cell index {toks[0]!r} is not a nonnegative integer")
        if int(toks[0]) != i:
            raise err(k, f"cell index {toks[0]} out of order: expected {i} (cells are "
                      "numbered 0, 1, ... in order)")
        if toks[3] not in JJ_STATUSES:
            raise err(k, f"unknown status {toks[3]!r}: a status is one of "
                      f"{', '.join(JJ_STATUSES)}")
        status[i] = toks[3]
        for c, (nm, tok) in enumerate(zip(_NUMERIC, toks[1:3] + toks[4:])):
            x, d = _number(tok, err, k, nm)
            cols[nm][i] = x
            decimals[i, c] = d
            if d < 0:
                raw[(i, c)] = tok
        msg = _cell_rule(*(cols[nm][i] for nm in ("value", "lower", "upper", "lower_pl",
                                                  "upper_pl", "sliding_pl")))
        if msg:
            raise err(k, f"cell {i}: {msg}")
    kr = 2 + n
    n_rel = count(kr, f"the number of relations (line 2 declares {n} cells)")
    relations, rhs_dec = [], np.empty(n_rel, dtype=np.int8)
    spaces, trailing = set(), set()
    for r in range(n_rel):
        k = kr + 1 + r
        s = line(k, f"relation {r} of the {n_rel} relations declared on line {kr + 1}")
        head, colon, rest = s.partition(":")
        htoks = head.split()
        if not colon or len(htoks) != 2:
            raise err(k, f"{s.strip()!r}: a relation line is 'rhs n : cell (sign) ...'")
        rhs, d = _number(htoks[0], err, k, "right-hand side")
        rhs_dec[r] = d
        if d < 0:
            raw[("rhs", r)] = htoks[0]
        if not _INT.fullmatch(htoks[1]):
            raise err(k, f"term count {htoks[1]!r} is not a nonnegative integer")
        declared = int(htoks[1])
        idx, sgn, pos = [], [], 0
        body = rest.rstrip(" \t")
        trailing.add(rest.endswith(" ") and not rest.endswith("  "))
        for m in _TERM.finditer(body):
            gap = body[pos:m.start()]
            if gap.strip():
                raise err(k, f"{gap.strip()!r}: a term is 'cell (sign)'")
            pos = m.end()
            cell, space, sign = m.groups()
            spaces.add(space == " ")
            if not _INT.fullmatch(cell):
                raise err(k, f"cell {cell!r} in a relation is not a nonnegative integer")
            j = int(cell)
            if j >= n:
                raise err(k, f"cell {j} out of range: the file has cells 0..{n - 1}")
            try:
                sv = float(sign) if _NUMBER.fullmatch(sign) else None
            except ValueError:                   # pragma: no cover - regex guards it
                sv = None
            if sv not in (1.0, -1.0):
                raise err(k, f"sign {sign!r} of cell {j}: a sign must be +1 or -1")
            if j in idx:
                raise err(k, f"cell {j} appears twice in the relation: each cell at most once")
            idx.append(j)
            sgn.append(int(sv))
        if body[pos:].strip():
            raise err(k, f"{body[pos:].strip()!r}: a term is 'cell (sign)'")
        if len(idx) != declared:
            raise err(k, f"the relation declares {declared} terms but holds {len(idx)}: the "
                      "count must equal the number of terms")
        if not idx:
            raise err(k, "empty relation: a relation needs at least one term")
        relations.append((rhs, idx, sgn))
    k = kr + 1 + n_rel
    if k < len(lines):
        raise err(k, f"trailing junk {lines[k].strip()[:40]!r} after the {n_rel} relations "
                  f"declared on line {kr + 1}")
    style = JJStyle(decimals, rhs_dec, raw, term_space=spaces != {False},
                    trailing_space=bool(trailing) and trailing == {True})
    return JJ(status=status, relations=relations, style=style, **cols)


def _number(tok: str, err, k: int, what: str) -> tuple:
    """``(value, decimals)`` of a numeric token; decimals -1 when not plain notation."""
    m = _PLAIN.fullmatch(tok)
    if m:
        return float(tok), len(m.group(1) or "")
    if _NUMBER.fullmatch(tok):
        return float(tok), -1
    raise err(k, f"{what} {tok!r} is not a number")


def write_jj(jj: JJ, path=None) -> str:
    """The JJ text of a problem.

    Parameters
    ----------
    jj : JJ
        The problem.
    path : str or os.PathLike, optional
        Also write the text there (UTF-8, ``"\\n"`` line ends, atomically).

    Returns
    -------
    str
        The text; for a `JJ` from `read_jj` the file's own formatting (see the module
        docstring).
    """
    if not isinstance(jj, JJ):
        raise TypeError(f"jj must be a JJ, got {type(jj).__name__}")
    n = jj.n_cells
    st = jj.style
    dec = st.decimals if st is not None else np.full((n, len(_NUMERIC)), -1, np.int8)
    raw = st.raw if st is not None else {}
    cols = [getattr(jj, nm) for nm in _NUMERIC]
    out = ["0\n", f"{n}\n"]
    for i in range(n):
        f = [_fmt(cols[c][i], int(dec[i, c]), raw.get((i, c))) for c in range(len(_NUMERIC))]
        out.append(f"{i} {f[0]} {f[1]} {jj.status[i]} {f[2]} {f[3]} {f[4]} {f[5]} {f[6]}\n")
    out.append(f"{len(jj.relations)}\n")
    space = " " if st is None or st.term_space else ""
    tail = " " if st is not None and st.trailing_space else ""
    for r, (rhs, idx, sgn) in enumerate(jj.relations):
        d = int(st.rhs_decimals[r]) if st is not None else -1
        terms = " ".join(f"{j}{space}({s})" for j, s in zip(idx.tolist(), sgn.tolist()))
        out.append(f"{_fmt(rhs, d, raw.get(('rhs', r)))} {idx.size} : {terms}{tail}\n")
    text = "".join(out)
    if path is not None:
        from .._atomic import atomic_write_bytes
        atomic_write_bytes(path, text.encode("utf-8"))
    return text
