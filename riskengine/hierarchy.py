"""Hierarchies: the tree of codes of one dimension of a statistical table.

A hierarchical classification (region > province > municipality) nests a table's
margins: every internal code is the subtotal of the leaves below it, and the root,
the *total*, is the sum of all leaves.  tau-Argus describes such a dimension by digit
groups (``<HIERLEVELS> 3 1 1``: a code's parents are its prefixes) or by an ``.hrc``
file (one code per line, its depth given by repeated lead strings ``@``);
sdcTable/sdcHierarchies (R) use a frame of ``level`` strings (``"@"`` the total,
``"@@"`` its children, ...) and names.

`Hierarchy` holds one such tree, the total implied.  Constructors: a nested dict
(``Hierarchy(tree)``), a parent column (`Hierarchy.from_parents`), digit groups
(`Hierarchy.from_digits`), ``.hrc`` text (`Hierarchy.from_hrc`) and the level frame
(`Hierarchy.from_levels`); `Hierarchy.aggregation` is the 0/1 matrix that sums the
leaves into every code.

Examples
--------
>>> h = Hierarchy.from_digits(["111", "112", "121", "211"], levels=(1, 1, 1))
>>> h.children("1"), h.members("1")
(('11', '12'), ('111', '112', '121'))
>>> h.aggregation().toarray()[:3]
array([[1, 1, 1, 1],
       [1, 1, 1, 0],
       [1, 1, 0, 0]])
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["Hierarchy"]


def _missing(x) -> bool:
    """None, NaN or pandas' NA."""
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x))


def _tolist(x) -> list:
    return x.tolist() if hasattr(x, "tolist") else list(x)


class Hierarchy:
    """A tree of codes below an implied total.

    Parameters
    ----------
    tree : dict
        ``{code: subtree}`` for the children of the total; a subtree is a dict of the
        same form, ``{}`` or ``None`` for a leaf, or a list/tuple of leaf codes.
        Children keep the given order; codes are kept as given (str, int, ...).
    total : hashable, default "Total"
        The code of the root.
    name : str, optional
        The name of the variable the hierarchy classifies.

    Notes
    -----
    A code appears once in the whole tree, is not None or NaN and never equals the
    total; a node with a single child is allowed (it equals that child).  Equality
    compares the total and the tree (child order included), not the name.

    Examples
    --------
    >>> h = Hierarchy({"North": ["N1", "N2"], "South": {"S1": {}, "S2": None, "S3": {}}})
    >>> h
    Hierarchy('Total': 2 levels below the total, 5 leaves, 8 codes)
    >>> h.members("South")
    ('S1', 'S2', 'S3')
    >>> h.levels
    (('Total',), ('North', 'South'), ('N1', 'N2', 'S1', 'S2', 'S3'))
    >>> h.parent("N2"), h.depth("N2"), h.is_leaf("North")
    ('North', 2, False)
    >>> print(h.to_hrc(), end="")
    North
    @N1
    @N2
    South
    @S1
    @S2
    @S3
    """

    __slots__ = ("_children", "_codes", "_depth", "_internal", "_key", "_leaves", "_levels",
                 "_name", "_parent", "_span", "_total")

    def __init__(self, tree, total: Hashable = "Total", name: str | None = None):
        pairs, stack = [], [(total, tree)]
        while stack:                             # iterative: no recursion limit on depth
            parent, sub = stack.pop()
            if sub is None:
                continue
            if isinstance(sub, Mapping):
                items = list(sub.items())
            elif isinstance(sub, (list, tuple)):
                items = [(c, None) for c in sub]
            else:
                raise TypeError(f"the children of {parent!r} must be a dict, a list/tuple of "
                                f"codes, {{}} or None, got {type(sub).__name__}: {sub!r}")
            pairs.extend((c, parent) for c, _ in items)
            stack.extend(reversed(items))
        self._setup(pairs, total, name)

    def _setup(self, pairs, total, name) -> None:
        """Build from ``(code, parent)`` pairs, children in the order given."""
        if total is None or not isinstance(total, Hashable):
            raise TypeError(f"total must be a hashable code other than None, got {total!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        parent, children = {total: None}, {total: []}
        for code, par in pairs:
            if not isinstance(code, Hashable):
                raise TypeError(f"codes must be hashable, got {code!r} (child of {par!r})")
            if _missing(code):
                raise ValueError(f"a code may not be None or NaN, got {code!r} (child of "
                                 f"{par!r})")
            if code == total:
                raise ValueError(f"code {code!r} (child of {par!r}) equals the total {total!r}; "
                                 "the total is implied and may not appear in the tree")
            if code in parent:
                raise ValueError(f"duplicate code {code!r}: child of {parent[code]!r} and of "
                                 f"{par!r}; a code may appear only once in a hierarchy")
            parent[code], children[code] = par, []
        for code, par in pairs:
            if par not in children:
                raise ValueError(f"unknown parent {par!r} of code {code!r}: it is neither a "
                                 f"code nor the total {total!r}")
            children[par].append(code)
        if not children[total]:
            raise ValueError(f"hierarchy {total!r} has no codes below the total; "
                             "it needs at least one leaf")
        codes, depth, stack = [], {total: 0}, [total]
        while stack:                             # preorder
            c = stack.pop()
            codes.append(c)
            depth.update((k, depth[c] + 1) for k in children[c])
            stack.extend(reversed(children[c]))
        if len(codes) < len(parent):
            _raise_cycle(parent, set(codes))
        leaves = [c for c in codes if not children[c]]
        first, span = {c: i for i, c in enumerate(leaves)}, {}
        for c in reversed(codes):                # leaf range of each code: members() slices
            k = children[c]
            span[c] = (span[k[0]][0], span[k[-1]][1]) if k else (first[c], first[c] + 1)
        levels = [[] for _ in range(max(depth.values()) + 1)]
        for c in codes:
            levels[depth[c]].append(c)
        self._total, self._name, self._parent, self._depth = total, name, parent, depth
        self._children = {c: tuple(k) for c, k in children.items()}
        self._codes, self._leaves = tuple(codes), tuple(leaves)
        self._internal = tuple(c for c in codes if children[c])
        self._levels, self._span = tuple(tuple(lv) for lv in levels), span
        self._key = (total, self._codes, tuple(parent[c] for c in codes))

    @classmethod
    def _from_pairs(cls, pairs, total, name) -> Hierarchy:
        h = cls.__new__(cls)
        h._setup(pairs, total, name)
        return h

    # --- constructors -------------------------------------------------------------------

    @classmethod
    def from_parents(cls, codes, parents=None, total: Hashable = "Total",
                     name: str | None = None) -> Hierarchy:
        """A hierarchy from a parent column.

        Parameters
        ----------
        codes : sequence or pandas.DataFrame
            The codes; or a frame with columns ``code`` and ``parent`` (``parents``
            then None).
        parents : sequence, optional
            ``parents[i]`` is the parent of ``codes[i]``; None, NaN or the total mean
            the top level.  Any other parent must itself be among the codes.
        total, name
            As for `Hierarchy`.

        Returns
        -------
        Hierarchy
            Children in their order of appearance in ``codes``.

        Examples
        --------
        >>> Hierarchy.from_parents(["A", "a1", "a2"], [None, "A", "A"]).members("A")
        ('a1', 'a2')
        """
        if parents is None:
            if not isinstance(codes, pd.DataFrame) or not {"code", "parent"} <= set(codes):
                raise TypeError("without parents, codes must be a DataFrame with columns "
                                "'code' and 'parent'")
            codes, parents = codes["code"], codes["parent"]
        codes, parents = _tolist(codes), _tolist(parents)
        if len(codes) != len(parents):
            raise ValueError(f"codes and parents must have the same length, got {len(codes)} "
                             f"and {len(parents)}")
        pairs = [(c, total if _missing(p) or p == total else p) for c, p in zip(codes, parents)]
        return cls._from_pairs(pairs, total, name)

    @classmethod
    def from_digits(cls, codes, levels, total: Hashable = "Total",
                    name: str | None = None) -> Hierarchy:
        """A hierarchy from digit groups (tau-Argus ``<HIERLEVELS>``).

        Every code has ``sum(levels)`` characters; its parent at depth ``k`` is its
        prefix of ``levels[0] + ... + levels[k-1]`` characters.  As in libtauargus
        (``src/Variable.cpp``, ``CVariable::ComputeHierarchicalCodes``: ``t.substr(0,
        n)``) the subtotal codes are the plain prefixes, not padded, and a code given
        many times (a data column) is one leaf.  Trailing zeros in ``levels`` are
        dropped, as tauargus does (``src/tauargus/utils/TauArgusUtils.java`` passes the
        groups up to the last nonzero one); a zero before a nonzero group is an error,
        as ``CVariable::SetHierarchicalDigits`` rejects it.  Children keep their order
        of first appearance (tau-Argus sorts its code list: pass ``sorted(codes)``).

        Parameters
        ----------
        codes : iterable of str
            The full-length (leaf) codes.
        levels : sequence of int
            Characters per group, e.g. ``(3, 1, 1)``.
        total, name
            As for `Hierarchy`.

        Returns
        -------
        Hierarchy

        Examples
        --------
        >>> Hierarchy.from_digits(["0111", "0112", "0121"], levels=(2, 1, 1)).levels
        (('Total',), ('01',), ('011', '012'), ('0111', '0112', '0121'))
        """
        levels = list(levels)
        for g in levels:
            if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 0:
                raise ValueError(f"levels must be positive ints (trailing zeros ignored), "
                                 f"got {g!r} in {levels}")
        while levels and levels[-1] == 0:
            levels.pop()
        if not levels or 0 in levels:
            raise ValueError(f"levels must be positive ints (trailing zeros ignored), got "
                             f"{levels}; tau-Argus rejects a zero before a nonzero group")
        cuts, width = np.cumsum(levels[:-1]).tolist(), sum(levels)
        pairs, seen = [], set()
        for code in _tolist(codes):
            if not isinstance(code, str):
                raise TypeError(f"digit codes must be str, got {code!r}")
            if len(code) != width:
                raise ValueError(f"code {code!r} has {len(code)} characters; with levels "
                                 f"{tuple(levels)} every code must have {width}")
            parent = total
            for node in [code[:n] for n in cuts] + [code]:
                if node not in seen:
                    seen.add(node)
                    pairs.append((node, parent))
                parent = node
        return cls._from_pairs(pairs, total, name)

    @classmethod
    def from_hrc(cls, source, total: Hashable = "Total", lead: str = "@",
                 name: str | None = None, encoding: str = "utf-8") -> Hierarchy:
        """A hierarchy from a tau-Argus ``.hrc`` file.

        The rules of libtauargus ``src/Variable.cpp`` (``CVariable::SetCodeList``): a
        line is right-trimmed of spaces, tabs, ``\\r`` and ``\\n``, not left-trimmed
        (``"@ 1"`` is the code ``" 1"``); lines then empty are ignored; the depth is
        the number of leads at the start; the first line has depth 0; the depth rises
        by at most 1 per line (``HC_LEVELINCORRECT``); no code is empty
        (``HC_CODEEMPTY``); a line is a leaf when the next is not deeper.  Stricter
        than libtauargus: a duplicate code or a code equal to the total is an error.

        Parameters
        ----------
        source : str, pathlib.Path or list of str
            A path to a file, the text itself (a str containing a newline), or lines.
        total : hashable, default "Total"
            The code of the root (an ``.hrc`` file does not name it).
        lead : str, default "@"
            The lead string (tau-Argus ``<HIERLEADSTRING>``).
        name : str, optional
            The variable's name.
        encoding : str, default "utf-8"
            The file's encoding.

        Returns
        -------
        Hierarchy

        Examples
        --------
        >>> Hierarchy.from_hrc("Nr\\n@ 1\\n@ 2\\nOs \\n@ 3\\n").members("Os")
        (' 3',)
        """
        if not isinstance(lead, str) or not lead:
            raise ValueError(f"lead must be a non-empty str, got {lead!r}")
        if isinstance(source, (list, tuple)):
            src, lines = "<text>", [str(s) for s in source]
        elif isinstance(source, str) and "\n" in source:
            src, lines = "<text>", source.split("\n")
        elif isinstance(source, (str, os.PathLike)):
            if not os.path.isfile(source):
                raise FileNotFoundError(f"no .hrc file {os.fspath(source)!r} (a text must "
                                        "contain a newline)")
            src = os.fspath(source)
            with open(source, encoding=encoding, newline="") as fh:
                lines = fh.read().split("\n")
        else:
            raise TypeError(f"source must be a path, a text or a list of lines, got "
                            f"{type(source).__name__}")
        entries = []
        for i, raw in enumerate(lines, start=1):
            line = raw.rstrip(" \t\r\n")
            if not line:
                continue                         # blank lines are ignored
            d = 0
            while line.startswith(lead, d * len(lead)):
                d += 1
            entries.append((d + 1, line[d * len(lead):], f"{src}, line {i}", repr(line)))
        pairs = _depth_pairs(entries, total, "line", "depth", lambda d: d - 1)
        return cls._from_pairs(pairs, total, name)

    @classmethod
    def from_levels(cls, frame, total: Hashable | None = None,
                    name: str | None = None) -> Hierarchy:
        """A hierarchy from sdcHierarchies' level frame.

        Parameters
        ----------
        frame : pandas.DataFrame or list of (level, name) pairs
            Columns ``level`` (``"@"`` the total, ``"@@"`` its children, ...) and
            ``name``; rows in preorder, the total first.
        total : hashable, optional
            The code of the root; default: the name in the first row.
        name : str, optional
            The variable's name.

        Returns
        -------
        Hierarchy

        Examples
        --------
        >>> Hierarchy.from_levels([("@", "Tot"), ("@@", "A"), ("@@@", "a1")]).codes
        ('Tot', 'A', 'a1')
        """
        if isinstance(frame, pd.DataFrame):
            if not {"level", "name"} <= set(frame.columns):
                raise ValueError(f"frame needs columns 'level' and 'name', got "
                                 f"{list(frame.columns)}")
            rows = list(zip(frame["level"].tolist(), frame["name"].tolist()))
        else:
            rows = [tuple(r) for r in frame]
        entries = []
        for i, (level, code) in enumerate(rows):
            if not isinstance(level, str) or not level or level.strip("@"):
                raise ValueError(f"row {i}: {(level, code)!r}: level must be a string of '@' "
                                 "('@' the total, '@@' its children, ...)")
            entries.append((len(level) - 1, code, f"row {i}", repr((level, code))))
        if not entries or entries[0][0] != 0:
            raise ValueError("the first row must be the total, with level '@', got "
                             f"{rows[0] if rows else 'no rows'!r}")
        total = entries[0][1] if total is None else total
        pairs = _depth_pairs(entries[1:], total, "row", "level", lambda d: "@" * (d + 1))
        return cls._from_pairs(pairs, total, name)

    # --- navigation ---------------------------------------------------------------------

    total = property(lambda self: self._total, doc="The root code.")
    name = property(lambda self: self._name, doc="The variable's name, or None.")
    codes = property(lambda self: self._codes, doc="Every code in preorder, the total first.")
    leaves = property(lambda self: self._leaves, doc="The leaf codes in preorder.")
    internal = property(lambda self: self._internal,
                        doc="The codes with children (the total included) in preorder.")
    levels = property(lambda self: self._levels,
                      doc="The codes at depth 0 (the total), 1, 2, ..., each in preorder.")
    n_levels = property(lambda self: len(self._levels),
                        doc="The number of depths, the total's included.")

    def _known(self, code) -> Hashable:
        if code not in self:
            raise KeyError(f"unknown code {code!r} in hierarchy {self._total!r}")
        return code

    def parent(self, code) -> Hashable | None:
        """The parent of ``code``; None for the total.

        Parameters
        ----------
        code : hashable
            A code of the hierarchy (KeyError otherwise), as are the other methods'.

        Returns
        -------
        hashable or None
        """
        return self._parent[self._known(code)]

    def children(self, code) -> tuple:
        """The direct children of ``code``; ``()`` for a leaf.

        Parameters
        ----------
        code : hashable

        Returns
        -------
        tuple
        """
        return self._children[self._known(code)]

    def depth(self, code) -> int:
        """The depth of ``code``: 0 for the total, 1 for its children, ...

        Parameters
        ----------
        code : hashable

        Returns
        -------
        int
        """
        return self._depth[self._known(code)]

    def members(self, code) -> tuple:
        """The leaves under ``code`` in preorder; ``(code,)`` for a leaf.

        Parameters
        ----------
        code : hashable

        Returns
        -------
        tuple
        """
        lo, hi = self._span[self._known(code)]
        return self._leaves[lo:hi]

    def is_leaf(self, code) -> bool:
        """Whether ``code`` has no children.

        Parameters
        ----------
        code : hashable

        Returns
        -------
        bool
        """
        return not self._children[self._known(code)]

    def aggregation(self) -> sp.csr_array:
        """The 0/1 matrix that sums the leaves into every code.

        Returns
        -------
        scipy.sparse.csr_array
            int64, ``len(codes) x len(leaves)``: row ``i`` has a 1 in the columns of
            ``members(codes[i])``; rows in the order of ``codes``, columns of ``leaves``.
        """
        lo, hi = np.array([self._span[c] for c in self._codes], dtype=np.int64).T
        counts = hi - lo
        indptr = np.concatenate([[0], np.cumsum(counts)])
        indices = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - lo, counts)
        return sp.csr_array((np.ones(indptr[-1], dtype=np.int64), indices, indptr),
                            shape=(len(self._codes), len(self._leaves)))

    # --- export -------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The nested dict, leaves as ``{}``: ``Hierarchy(h.to_dict(), h.total) == h``.

        Returns
        -------
        dict
        """
        sub = {c: {} for c in self._codes}
        for c in self._codes[1:]:
            sub[self._parent[c]][c] = sub[c]
        return sub[self._total]

    def to_hrc(self, path=None, lead: str = "@") -> str:
        """The ``.hrc`` text: one line per code below the total, in preorder.

        Parameters
        ----------
        path : str or pathlib.Path, optional
            Also write the text there, UTF-8, atomically (a temporary file beside it,
            then renamed into place).
        lead : str, default "@"
            The lead string; a code at depth ``d`` gets ``d - 1`` of them.

        Returns
        -------
        str
            Lines ending in ``"\\n"``; `from_hrc` reads it back equal (codes as str).
        """
        if not isinstance(lead, str) or not lead:
            raise ValueError(f"lead must be a non-empty str, got {lead!r}")
        lines = []
        for c in self._codes[1:]:
            s = str(c)
            if not s or s.startswith(lead) or s != s.rstrip(" \t\r\n") or "\n" in s or "\r" in s:
                raise ValueError(f"code {c!r} cannot be written to .hrc: a code must be "
                                 f"non-empty, not start with the lead {lead!r}, contain no "
                                 "line break and not end in whitespace")
            lines.append(lead * (self._depth[c] - 1) + s + "\n")
        text = "".join(lines)
        if path is not None:
            from ._atomic import atomic_write_bytes
            atomic_write_bytes(path, text.encode("utf-8"))
        return text

    def to_levels(self) -> pd.DataFrame:
        """sdcHierarchies' level frame: columns ``level`` (``"@"`` the total) and ``name``.

        Returns
        -------
        pandas.DataFrame
            One row per code in preorder; `from_levels` reads it back equal.
        """
        return pd.DataFrame({"level": ["@" * (self._depth[c] + 1) for c in self._codes],
                             "name": pd.Series(self._codes, dtype=object)})

    # --- protocol -----------------------------------------------------------------------

    def __contains__(self, code) -> bool:
        try:
            return code in self._parent
        except TypeError:                        # unhashable: not a code
            return False

    def __len__(self) -> int:
        return len(self._codes)

    def __iter__(self):
        return iter(self._codes)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Hierarchy):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        below = self.n_levels - 1
        named = f", name={self._name!r}" if self._name is not None else ""
        n = len(self._leaves)
        return (f"Hierarchy({self._total!r}{named}: {below} level{'s' * (below != 1)} below "
                f"the total, {n} {'leaf' if n == 1 else 'leaves'}, {len(self._codes)} codes)")


def _raise_cycle(parent: dict, reached: set) -> None:
    c = next(c for c in parent if c not in reached)
    path = []
    while c not in path:
        path.append(c)
        c = parent[c]
    cycle = path[path.index(c):] + [c]
    raise ValueError("the parents form a cycle that never reaches the total: "
                     + " -> ".join(map(repr, cycle)) + " (each code's parent follows it)")


def _depth_pairs(entries, total, unit: str, what: str, show) -> list:
    """``(code, parent)`` pairs from ``(depth, code, location, shown)`` entries in preorder
    (depth 1: a child of the total); ``show(depth)`` renders a depth as the user wrote it
    (the number of leads of an .hrc line, the level string of a frame row)."""
    stack, seen, pairs = [total], {}, []
    for depth, code, loc, shown in entries:
        where = f"{loc}: {shown}"
        if depth > len(stack):
            rule = (f"the first {unit} must have {what} {show(1)!r}, got {show(depth)!r}"
                    if len(stack) == 1 else
                    f"{what} {show(depth)!r} follows {what} {show(len(stack) - 1)!r}")
            raise ValueError(f"{where}: {rule}; the {what} may rise by at most 1 per {unit}")
        if depth < 1:
            raise ValueError(f"{where}: only the total (the first {unit}) may have {what} "
                             f"{show(0)!r}")
        if _missing(code) or code == "":
            raise ValueError(f"{where}: empty code; every {unit} needs a code")
        if code == total:
            raise ValueError(f"{where}: code {code!r} equals the total {total!r}; the total "
                             "is implied and may not appear in the tree")
        del stack[depth:]
        if code in seen:
            raise ValueError(f"{where}: duplicate code {code!r}, first at {seen[code][0]} "
                             f"(parents {seen[code][1]!r} and {stack[-1]!r}); a code may "
                             "appear only once")
        pairs.append((code, stack[-1]))
        seen[code] = (loc, stack[-1])
        stack.append(code)
    return pairs
