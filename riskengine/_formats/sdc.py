"""The R packages' formats: SSBtools to-from hierarchies, sdcHierarchies' positional
("len" / "endpos") codes and sdcTable's cell status tables.

* SSBtools (and GaussSuppression, easySdcTable) describe a hierarchy by a frame with
  columns ``mapsFrom``, ``mapsTo``, ``sign`` and ``level`` (e.g. ``SSBtoolsData(
  "FIFA2018ABCD")`` in ``R/SSBtoolsData.R``): ``mapsTo`` is the signed sum of its
  ``mapsFrom`` codes, recursively, so ``EU = Europe - nonEU`` is allowed.  `read_tofrom`
  resolves every code to its signed leaf composition; `tofrom_hierarchies` turns the
  frame into riskengine's alternative hierarchies (trees over the same leaves), and
  `hierarchies_to_tofrom` writes them back.
* sdcHierarchies' ``hier_compute(inp, dim_spec, method = "len")`` cuts codes into groups
  of characters (``R/hier_compute.R``, ``.from_len``): `hierarchy_from_len`.  The level
  frame (``"@"``, ``"@@"``, ...) is `riskengine.Hierarchy.from_levels` / ``to_levels``.
* sdcTable's results (``getInfo(prob, "finalData")``, ``protectTable(...)@results``)
  have the dims' codes, the values and ``sdcStatus`` (``s``, ``u``, ``x``, ``z``; see
  `riskengine._formats.status`): `write_sdc_status` and `read_sdc_status`.
"""

from __future__ import annotations

import io
import itertools
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..hierarchy import Hierarchy
from ._lines import FormatError, read_source
from .status import FROM_LETTERS, TO_LETTERS

__all__ = ["hierarchies_to_tofrom", "hierarchy_from_len", "read_sdc_status", "read_tofrom",
           "tofrom_hierarchies", "write_sdc_status"]


# --- reading frames -----------------------------------------------------------------------

def _frame(source, encoding: str = "utf-8") -> tuple:
    """``(name, frame, offset)``: a DataFrame as given, or a CSV (path or text) read with
    every column as str; ``offset`` turns a row position into a line number (None for a
    frame: errors then name the row)."""
    if isinstance(source, pd.DataFrame):
        return "<frame>", source.reset_index(drop=True), None
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"expected a DataFrame, a CSV path or CSV text, got "
                        f"{type(source).__name__}")
    name, text = read_source(source, encoding)
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise FormatError(name, None, f"not a CSV table ({exc})") from None
    return name, frame, 2                         # line 1 is the header


def _where(name, offset, i):
    """``(file, line, prefix)`` for row ``i``."""
    if offset is None:
        return name, None, f"row {i}: "
    return name, i + offset, ""


def _missing(x) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) or (
        isinstance(x, str) and not x.strip())


def _need(frame, cols, name) -> None:
    absent = [c for c in cols if c not in frame.columns]
    if absent:
        raise FormatError(name, 1 if name != "<frame>" else None,
                          f"missing column(s) {absent}; the columns are {list(frame.columns)}")


# --- SSBtools to-from hierarchies ---------------------------------------------------------

_SIGNS = {"1": 1, "+1": 1, "+": 1, "-1": -1, "-": -1, "1.0": 1, "-1.0": -1}


def _tofrom_rows(source, encoding):
    """Validated rows ``(from, to, sign, line-or-None, prefix)`` and the source name."""
    name, frame, off = _frame(source, encoding)
    _need(frame, ["mapsFrom", "mapsTo"], name)
    has_sign, has_level = "sign" in frame.columns, "level" in frame.columns
    rows, seen = [], {}
    for i in range(len(frame)):
        file, line, pre = _where(name, off, i)
        a, b = frame["mapsFrom"].iat[i], frame["mapsTo"].iat[i]
        for col, v in (("mapsFrom", a), ("mapsTo", b)):
            if _missing(v):
                raise FormatError(file, line, f"{pre}empty {col}: every row needs a code")
        s = frame["sign"].iat[i] if has_sign else 1
        if isinstance(s, (int, float, np.number)) and not isinstance(s, bool):
            key = str(int(s)) if math.isfinite(s) and float(s) == int(s) else str(s)
        else:
            key = str(s).strip()
        if key not in _SIGNS:
            raise FormatError(file, line, f"{pre}sign {s!r} of {a!r} -> {b!r}: a sign must be "
                              "1 or -1 (or '+' / '-')")
        if has_level:
            lv = frame["level"].iat[i]
            try:
                ok = float(lv) == int(float(lv)) and int(float(lv)) >= 1
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise FormatError(file, line, f"{pre}level {lv!r}: a level must be an integer "
                                  ">= 1")
        if a == b:
            raise FormatError(file, line, f"{pre}{a!r} maps to itself: a cycle")
        if (a, b) in seen:
            raise FormatError(file, line, f"{pre}duplicate row {a!r} -> {b!r} (first at "
                              f"{seen[(a, b)]}): each pair at most once")
        seen[(a, b)] = f"line {line}" if line is not None else f"row {i}"
        rows.append((a, b, _SIGNS[key], line, pre))
    if not rows:
        raise FormatError(name, None, "no rows: a to-from table needs at least one row")
    return name, rows


def _compositions(name, rows) -> tuple:
    """``(comp, order, first, parts)``: every code's signed leaf composition, the codes
    in order of first appearance, the first row defining each aggregate and its terms."""
    parts, order, first = {}, {}, {}
    for a, b, s, line, pre in rows:
        for c in (b, a):
            order.setdefault(c, len(order))
        parts.setdefault(b, []).append((a, s))
        first.setdefault(b, (line, pre))
    comp: dict = {}
    for code in order:                            # iterative post-order, cycles detected
        if code in comp:
            continue
        stack, on = [code], {code: None}
        while stack:
            c = stack[-1]
            pending = [a for a, _ in parts.get(c, ()) if a not in comp]
            if pending:
                a = pending[0]
                if a in on:
                    cyc = [a]
                    x = c
                    while x != a:
                        cyc.append(x)
                        x = on[x]
                    cyc.append(a)
                    line, pre = first[c]
                    raise FormatError(name, line, pre + "the codes form a cycle: "
                                      + " <- ".join(map(repr, cyc)))
                on[a] = c
                stack.append(a)
                continue
            stack.pop()
            if c not in parts:
                comp[c] = {c: 1}
                continue
            acc: dict = {}
            for a, s in parts[c]:
                for leaf, k in comp[a].items():
                    acc[leaf] = acc.get(leaf, 0) + s * k
            comp[c] = {leaf: k for leaf, k in acc.items() if k != 0}
    ordered = {c: comp[c] for c in sorted(order, key=lambda c: (c in parts, order[c]))}
    return ordered, order, first, parts


def read_tofrom(source, encoding: str = "utf-8") -> dict:
    """The signed leaf composition of every code of an SSBtools to-from hierarchy.

    Parameters
    ----------
    source : pandas.DataFrame, str or os.PathLike
        A frame, or a CSV (path or text), with columns ``mapsFrom`` and ``mapsTo`` and
        optionally ``sign`` (1 / -1, or ``"+"`` / ``"-"``; default 1) and ``level``
        (integers >= 1; checked, otherwise unused).  A leaf is a code that appears in
        ``mapsFrom`` only.
    encoding : str, default "utf-8"
        The CSV's encoding.

    Returns
    -------
    dict
        ``{code: {leaf: coefficient}}``: the leaves first (``{leaf: {leaf: 1}}``), then
        the aggregates, each in order of first appearance; zero coefficients dropped.

    Raises
    ------
    FormatError
        An empty code, a sign other than +-1, a bad level, a duplicate row, a cycle.

    Examples
    --------
    >>> import pandas as pd
    >>> h = pd.DataFrame({"mapsFrom": ["Spain", "Iceland", "Portugal", "Europe", "nonEU"],
    ...                   "mapsTo": ["Europe", "Europe", "Europe", "EU", "EU"],
    ...                   "sign": [1, 1, 1, 1, -1]})
    >>> read_tofrom(pd.concat([h, pd.DataFrame({"mapsFrom": ["Iceland"], "mapsTo": ["nonEU"],
    ...                                         "sign": [1]})]))["EU"]
    {'Spain': 1, 'Portugal': 1}
    """
    name, rows = _tofrom_rows(source, encoding)
    return _compositions(name, rows)[0]


def _chromatic_colouring(n: int, conflict: list) -> list:
    """A colouring of the conflict graph with as few colours as found: DSatur, then an
    exact search for fewer colours when the graph is small (<= 24 vertices with edges)."""
    colour = [-1] * n
    for _ in range(n):                            # DSatur
        best, key = -1, None
        for v in range(n):
            if colour[v] >= 0:
                continue
            sat = len({colour[u] for u in conflict[v] if colour[u] >= 0})
            k = (sat, len(conflict[v]), -v)
            if key is None or k > key:
                best, key = v, k
        used = {colour[u] for u in conflict[best] if colour[u] >= 0}
        colour[best] = next(c for c in itertools.count() if c not in used)
    k = max(colour, default=-1) + 1
    hard = [v for v in range(n) if conflict[v]]
    if len(hard) > 24 or k <= 2:
        return colour
    order = sorted(hard, key=lambda v: -len(conflict[v]))
    while k > 2:                                  # try k - 1 colours exactly
        trial: dict = {}
        if not _colour_within(order, conflict, k - 1, trial, 0, [200_000]):
            break                                 # impossible, or the step budget ran out
        for v, c in trial.items():
            colour[v] = c
        for v in range(n):
            if not conflict[v]:
                colour[v] = 0
        k -= 1
    return colour


def _colour_within(order, conflict, target, trial, i, budget) -> bool:
    """Backtracking: colour ``order[i:]`` with colours ``< target`` (symmetry broken by
    opening at most one new colour per step); ``trial`` holds the assignment; False also
    when ``budget[0]`` steps are spent (the caller then keeps DSatur's colouring)."""
    if i == len(order):
        return True
    budget[0] -= 1
    if budget[0] < 0:
        return False
    v = order[i]
    used = {trial[u] for u in conflict[v] if u in trial}
    for c in range(min(target, max(trial.values(), default=-1) + 2)):
        if c not in used:
            trial[v] = c
            if _colour_within(order, conflict, target, trial, i + 1, budget):
                return True
            del trial[v]
    return False


def tofrom_hierarchies(source, total=None, aliases: str = "error", name: str | None = None,
                       encoding: str = "utf-8") -> list:
    """riskengine hierarchies (trees over the same leaves) from an SSBtools to-from table.

    Every code is resolved to its signed leaf composition (`read_tofrom`); it must be a
    set of leaves (each coefficient 1).  The sets form trees where they nest: two codes
    that overlap without one holding the other (``EU`` and ``Schengen``) cannot share a
    tree, so the codes are spread over as few trees as found (a colouring of the graph of
    such overlaps: DSatur, then an exact search when at most 24 codes overlap, within a
    step budget); each tree then takes every other code that nests with all of its
    codes, so a code that overlaps no other (``Europe``) is in every tree.  Each tree is a `riskengine.Hierarchy` over all
    the leaves with the common total.

    Parameters
    ----------
    source : pandas.DataFrame, str or os.PathLike
        The to-from table (see `read_tofrom`).
    total : hashable, optional
        The total's code.  Default: the code that holds every leaf, if there is one,
        else ``"Total"``.
    aliases : {"error", "nest"}, default "error"
        Two codes holding the same leaves: an error naming both, or nested as a chain of
        single-child nodes (the first to appear outermost).  A code holding one leaf
        (``Oceania = Australia``) is always allowed: a node whose only child is that leaf.
        A code holding every leaf other than ``total`` counts as an alias of the total.
    name : str, optional
        The variable's name, given to every hierarchy.
    encoding : str, default "utf-8"
        The CSV's encoding.

    Returns
    -------
    list of riskengine.Hierarchy
        One tree when the codes nest, more when they overlap.  Children in the order the
        codes first appear in the table.

    Raises
    ------
    FormatError
        As `read_tofrom`, and a code that is not a set of leaves (naming the code, the
        leaf and its coefficient), a code holding no leaf, aliases (``aliases="error"``).

    Examples
    --------
    >>> import pandas as pd
    >>> h = pd.DataFrame({
    ...     "mapsFrom": ["Spain", "Iceland", "Portugal", "Norway", "Iceland", "Norway",
    ...                  "Europe", "nonEU", "Spain", "Portugal", "Iceland"],
    ...     "mapsTo": ["Europe"] * 4 + ["nonEU"] * 2 + ["EU"] * 2 + ["West"] * 3,
    ...     "sign": [1, 1, 1, 1, 1, 1, 1, -1, 1, 1, 1]})
    >>> a, b = tofrom_hierarchies(h)          # Europe holds every leaf: the total
    >>> a.total, a.children("Europe"), b.children("Europe")
    ('Europe', ('nonEU', 'EU'), ('Norway', 'West'))
    >>> b.children("West")
    ('Iceland', 'EU')
    """
    if aliases not in ("error", "nest"):
        raise ValueError(f"aliases must be 'error' or 'nest', got {aliases!r}")
    src, rows = _tofrom_rows(source, encoding)
    comp, order, first, parts = _compositions(src, rows)
    leaves = [c for c in comp if c not in parts]
    allset = frozenset(leaves)
    sets: dict = {}
    for code in parts:
        line, pre = first[code]
        bad = next(((lf, k) for lf, k in comp[code].items() if k != 1), None)
        if bad is not None:
            raise FormatError(src, line, f"{pre}code {code!r} is not a set of leaves: leaf "
                              f"{bad[0]!r} has coefficient {bad[1]} (a hierarchy code holds "
                              "each leaf 0 or 1 times)")
        if not comp[code]:
            raise FormatError(src, line, f"{pre}code {code!r} holds no leaf (its terms "
                              "cancel): a hierarchy code needs at least one leaf")
        sets[code] = frozenset(comp[code])
    # total
    full = [c for c in parts if sets[c] == allset]
    if total is None:
        total = full[0] if full else "Total"
        if not full and total in order:
            raise FormatError(src, None, "no code holds every leaf and 'Total' is a code: "
                              "pass total=")
    elif total in order and total not in full:
        raise FormatError(src, None, f"total {total!r} is a code of the table that does not "
                          "hold every leaf")
    # aliases: codes with the same leaves (a one-leaf code is a single-child node)
    groups: dict = {}
    for code in parts:
        if code != total:
            groups.setdefault(sets[code], []).append(code)
    for s, codes in groups.items():
        named = codes + ([total] if s == allset else [])
        if len(named) > 1 and aliases == "error":
            line, pre = first[codes[-1]] if codes[-1] != total else first[codes[0]]
            raise FormatError(src, line, f"{pre}codes {', '.join(map(repr, named))} hold the "
                              "same leaves (aliases): pass aliases='nest' to chain them")
    units = [s for s in groups]                   # distinct sets, order of first code
    units.sort(key=lambda s: order[groups[s][0]])
    n = len(units)
    conflict = [[] for _ in range(n)]
    for i, j in itertools.combinations(range(n), 2):
        a, b = units[i], units[j]
        if (a & b) and not (a <= b or b <= a):
            conflict[i].append(j)
            conflict[j].append(i)
    colour = _chromatic_colouring(n, conflict)
    k = max(colour, default=0) + 1
    trees = []
    for c in range(k):
        members = [i for i in range(n) if colour[i] == c]
        bad = set()
        for i in members:
            bad.update(conflict[i])
        for i in range(n):                        # extend with everything that nests
            if colour[i] != c and i not in bad:
                members.append(i)
                bad.update(conflict[i])
        trees.append(_tree(sorted(members, key=lambda i: order[groups[units[i]][0]]),
                           units, groups, leaves, order, total, name))
    return trees


def _tree(members, units, groups, leaves, order, total, name) -> Hierarchy:
    """One Hierarchy from a laminar family of leaf sets."""
    by_size = sorted(members, key=lambda i: len(units[i]))

    def parent_unit(s, strict=True):
        for i in by_size:                        # smallest superset
            u = units[i]
            if (s < u) if strict else (s <= u):
                return i
        return None

    pairs = []
    for i in members:
        p = parent_unit(units[i])
        top = total if p is None else groups[units[p]][-1]
        chain = groups[units[i]]
        pairs.append((chain[0], top))
        pairs.extend((chain[j], chain[j - 1]) for j in range(1, len(chain)))
    for lf in leaves:
        p = parent_unit(frozenset([lf]), strict=False)
        pairs.append((lf, total if p is None else groups[units[p]][-1]))
    pairs.sort(key=lambda cp: order.get(cp[0], -1))
    return Hierarchy.from_parents([c for c, _ in pairs], [p for _, p in pairs], total=total,
                                  name=name)


def hierarchies_to_tofrom(hierarchies) -> pd.DataFrame:
    """An SSBtools to-from table of riskengine hierarchies (the inverse of
    `tofrom_hierarchies`, with positive signs).

    Parameters
    ----------
    hierarchies : riskengine.Hierarchy or sequence of them
        Alternative hierarchies: the same total and leaves; a code in several holds the
        same leaves in each.

    Returns
    -------
    pandas.DataFrame
        Columns ``mapsFrom``, ``mapsTo``, ``sign`` (1) and ``level`` (the height of
        ``mapsTo``: 1 when its children are all leaves), one row per child of each
        aggregate, in preorder.  A code is defined once, by the first hierarchy that has
        it as an aggregate (a later tree's other split of it, such as ``Europe =
        Schengen + nonSchengen`` after ``Europe = EU + nonEU``, is implied, not written).
    """
    hs = [hierarchies] if isinstance(hierarchies, Hierarchy) else list(hierarchies)
    if not hs or not all(isinstance(h, Hierarchy) for h in hs):
        raise TypeError("hierarchies must be a Hierarchy or a non-empty list of them")
    total, leafset = hs[0].total, set(hs[0].leaves)
    members: dict = {}
    for h in hs:
        if h.total != total:
            raise ValueError(f"the hierarchies have different totals: {total!r} and "
                             f"{h.total!r}")
        if set(h.leaves) != leafset:
            raise ValueError("the hierarchies have different leaves: "
                             f"{sorted(map(str, set(h.leaves) ^ leafset))[:5]}")
        for c in h.internal:
            m = frozenset(h.members(c))
            if members.setdefault(c, m) != m:
                raise ValueError(f"code {c!r} holds different leaves in two hierarchies")
    rows, defined = [], set()
    for h in hs:
        height: dict = {}
        for c in reversed(h.codes):
            kids = h.children(c)
            height[c] = 0 if not kids else 1 + max(height[k] for k in kids)
        new = [c for c in h.internal if c not in defined]
        for c in h.codes[1:]:
            p = h.parent(c)
            if p in new:
                rows.append((c, p, 1, height[p]))
        defined.update(new)
    return pd.DataFrame(rows, columns=["mapsFrom", "mapsTo", "sign", "level"])


# --- sdcHierarchies positional codes -------------------------------------------------------

def hierarchy_from_len(codes, dim_spec, total=None, method: str = "len",
                       name: str | None = None) -> Hierarchy:
    """A hierarchy from positional codes, as sdcHierarchies' ``hier_compute(inp,
    dim_spec, tot_lev, method = "len" | "endpos")``.

    With ``method="len"`` ``dim_spec`` gives the characters of each level; with
    ``"endpos"`` their end positions.  With ``total=None`` (sdcHierarchies' ``tot_lev =
    NULL``) the first group is the total's code: every code starts with it, it is cut
    off the other codes, and a code equal to it alone stands for the total.  Otherwise
    every group is a level below ``total``.  A node is named by the code's prefix up to
    its group; codes may stop at any group boundary (``"2."`` a leaf at level 1 when
    ``"1.1."`` goes deeper), and a code equal to a subtotal's prefix is that subtotal.
    Children are sorted, as sdcHierarchies sorts its tree.  Differs from
    `riskengine.Hierarchy.from_digits` (tau-Argus ``<HIERLEVELS>``): codes of unequal
    length and the total's code in the codes.

    Parameters
    ----------
    codes : iterable of str
        The codes (no duplicates, as ``hier_compute`` requires).
    dim_spec : sequence of int
        Group lengths (``"len"``) or end positions (``"endpos"``), positive / increasing.
    total : hashable, optional
        The total's code when it is not encoded in the codes (``tot_lev``).
    method : {"len", "endpos"}, default "len"
        How ``dim_spec`` is meant.
    name : str, optional
        The variable's name.

    Returns
    -------
    riskengine.Hierarchy

    Examples
    --------
    >>> h = hierarchy_from_len(["Tot01051", "Tot01053", "Tot02000", "Tot"], [3, 2, 1, 2])
    >>> h.total, h.levels[1], h.members("010")
    ('Tot', ('01', '02'), ('01051', '01053'))
    """
    if method not in ("len", "endpos"):
        raise ValueError(f"method must be 'len' or 'endpos', got {method!r}")
    spec = list(dim_spec)
    if not spec or any(isinstance(g, bool) or not isinstance(g, (int, np.integer))
                       for g in spec):
        raise ValueError(f"dim_spec must be a non-empty sequence of ints, got {dim_spec!r}")
    lens = spec if method == "len" else [b - a for a, b in zip([0] + spec[:-1], spec)]
    if any(g <= 0 for g in lens):
        raise ValueError(f"dim_spec {spec} ({method}) gives a group of <= 0 characters")
    codes = list(codes)
    seen = set()
    for c in codes:
        if not isinstance(c, str) or not c:
            raise ValueError(f"codes must be non-empty str, got {c!r}")
        if c in seen:
            raise ValueError(f"duplicated code {c!r}: hier_compute requires distinct codes")
        seen.add(c)
    if total is None:
        head, lens = lens[0], lens[1:]
        prefixes = sorted({c[:head] for c in codes})
        if len(prefixes) > 1:
            raise ValueError(f"the total should be the first {head} characters of every "
                             f"code, but they hold {prefixes[:5]}: pass total= or fix the "
                             "codes")
        total = prefixes[0]
        if len(total) < head:
            raise ValueError(f"code {total!r} is shorter than the total's {head} characters")
        codes = [c[head:] for c in codes if len(c) > head]
        if not lens:
            raise ValueError("dim_spec has only the total's group: no codes below it")
    cuts = np.cumsum(lens).tolist()
    parent: dict = {}
    for c in codes:
        if len(c) > cuts[-1]:
            raise ValueError(f"code {c!r} has {len(c)} characters; dim_spec {spec} "
                             f"({method}) allows at most {cuts[-1]} below the total")
        if len(c) not in cuts:
            raise ValueError(f"code {c!r} ends inside a group: its length {len(c)} is not "
                             f"one of the group ends {cuts}")
        p = total
        for e in cuts:
            if e > len(c):
                break
            node = c[:e]
            parent.setdefault(node, p)
            p = node
    if not parent:
        raise ValueError("no codes below the total")
    nodes = sorted(parent)                         # a prefix sorts first: preorder
    return Hierarchy.from_parents(nodes, [parent[c] for c in nodes], total=total, name=name)


# --- sdcTable status tables ----------------------------------------------------------------

def write_sdc_status(cells_frame, status, path=None) -> str:
    """sdcTable's result table: the cells' columns and ``sdcStatus``.

    Parameters
    ----------
    cells_frame : pandas.DataFrame
        One row per cell: the dims' codes and the values (written as they are, in column
        order; no ``sdcStatus`` column).
    status : sequence of str
        Per row, a riskengine status (``"safe"``, ``"primary"``, ``"secondary"``,
        ``"forced_safe"``, ``"empty"``) or an sdcTable letter (``s``, ``u``, ``x``, ``z``).
    path : str or os.PathLike, optional
        Also write the CSV there (UTF-8, atomically).

    Returns
    -------
    str
        The CSV text (header line, ``"\\n"`` line ends, no row index).

    Examples
    --------
    >>> import pandas as pd
    >>> cells = pd.DataFrame({"region": ["Total", "A"], "gender": ["Total", "male"],
    ...                       "freq": [10, 2]})
    >>> print(write_sdc_status(cells, ["safe", "primary"]), end="")
    region,gender,freq,sdcStatus
    Total,Total,10,s
    A,male,2,u
    """
    if not isinstance(cells_frame, pd.DataFrame):
        raise TypeError(f"cells_frame must be a DataFrame, got {type(cells_frame).__name__}")
    if "sdcStatus" in cells_frame.columns:
        raise ValueError("cells_frame already has a column 'sdcStatus'")
    status = list(status)
    if len(status) != len(cells_frame):
        raise ValueError(f"{len(status)} statuses for {len(cells_frame)} cells")
    names, letters = TO_LETTERS["sdctable"], FROM_LETTERS["sdctable"]
    out = []
    for i, s in enumerate(status):
        if s in names:
            out.append(names[s])
        elif s in letters:
            out.append(s)
        else:
            raise ValueError(f"row {i}: status {s!r} is neither a riskengine status "
                             f"({', '.join(names)}) nor an sdcTable letter "
                             f"({', '.join(letters)})")
    frame = cells_frame.copy()
    frame["sdcStatus"] = out
    text = frame.to_csv(index=False, lineterminator="\n")
    if path is not None:
        from .._atomic import atomic_write_bytes
        atomic_write_bytes(Path(path), text.encode("utf-8"))
    return text


def read_sdc_status(source, dims, encoding: str = "utf-8") -> pd.DataFrame:
    """An sdcTable result table, its statuses checked.

    Parameters
    ----------
    source : pandas.DataFrame, str or os.PathLike
        The frame (``getInfo(prob, "finalData")`` exported), or a CSV path or text.
    dims : sequence of str
        The dims' columns (codes, read as str from a CSV).
    encoding : str, default "utf-8"
        The CSV's encoding.

    Returns
    -------
    pandas.DataFrame
        The dims' columns first, then the others (numeric where every entry parses),
        ``sdcStatus`` last; riskengine statuses via
        ``status.from_letters(df.sdcStatus, "sdctable")``.

    Raises
    ------
    FormatError
        A missing column, an empty code, an unknown status letter, a cell given twice;
        naming the line (CSV) or the row (frame).

    Examples
    --------
    >>> df = read_sdc_status("region,freq,sdcStatus\\nTotal,10,s\\nA,2,u\\n", ["region"])
    >>> df.sdcStatus.tolist(), df.freq.tolist()
    (['s', 'u'], [10, 2])
    """
    dims = [dims] if isinstance(dims, str) else list(dims)
    name, frame, off = _frame(source, encoding)
    _need(frame, dims + ["sdcStatus"], name)
    seen: dict = {}
    ok = FROM_LETTERS["sdctable"]
    for i in range(len(frame)):
        file, line, pre = _where(name, off, i)
        s = frame["sdcStatus"].iat[i]
        if s not in ok:
            raise FormatError(file, line, f"{pre}unknown sdcStatus {s!r}: sdcTable's statuses "
                              "are s (safe), u (primary), x (secondary), z (forced safe)")
        key = tuple(frame[d].iat[i] for d in dims)
        for d, v in zip(dims, key):
            if _missing(v):
                raise FormatError(file, line, f"{pre}empty code in column {d!r}: every cell "
                                  "needs its codes")
        if key in seen:
            raise FormatError(file, line, f"{pre}cell {key} given twice (first at {seen[key]}): "
                              "duplicate cell")
        seen[key] = f"line {line}" if line is not None else f"row {i}"
    rest = [c for c in frame.columns if c not in dims and c != "sdcStatus"]
    out = frame[dims + rest + ["sdcStatus"]].copy()
    if off is not None:
        for c in rest:
            try:
                out[c] = pd.to_numeric(out[c])
            except (ValueError, TypeError):
                pass
    return out
