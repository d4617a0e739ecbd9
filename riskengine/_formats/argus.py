"""A table prepared for tau-Argus, read whole: metadata (``.rda``), the table (``.tab``),
its hierarchies (``.hrc`` files or digit levels) and an apriori file (``.hst``) become one
hierarchical :class:`~riskengine.Table` with every published cell's row of the file
(frequency, top contributions, shadow, cost, status, protection levels).

The line-level readers are :mod:`.rda`, :mod:`.tab`, :mod:`.hst`; this module assembles
them the way tau-Argus does when it reads a table (``<READTABLE>``):

* every explanatory variable is a dimension; its codes are the hierarchy of its ``.hrc``
  file (``<HIERCODELIST>``, lead string ``<HIERLEADSTRING>``), of its digit groups
  (``<HIERLEVELS>``), or the distinct codes of the file (flat); the total code is
  ``<TOTCODE>`` (default ``Total``); a missing-value code that the hierarchy does not
  hold is one more code under the total (libtauargus ``SetTotalsInCodeList``);
* every combination of codes is a published cell (all levels of all dims);
* a line of the file is one cell; a leaf cell without a line is empty (0, frequency 0);
  a line whose code is unknown is an error naming the line;
* additivity (``<READTABLE>`` 0, the default): every total and subtotal line must equal
  the sum of its cells (within half a unit of the response's last decimal); ``"compute"``
  (``<READTABLE> 1``) recomputes totals from the cells as tau-Argus does; non-additive
  tables (``<READTABLE> 2``) are refused: riskengine's protection and audit need the
  linear system that additivity gives.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..hierarchy import Hierarchy
from ..table import Table
from ._lines import FormatError
from .status import STATUSES

__all__ = ["ArgusTable", "code_index", "largest_of_sums", "read_argus"]


@dataclass(frozen=True)
class ArgusTable:
    """A tau-Argus table read into riskengine.

    Parameters
    ----------
    table : rk.Table
        The response variable over the explanatory variables' leaf codes, with their
        hierarchies (kind ``"count"`` for a frequency table, ``"magnitude"`` otherwise).
    cells : pandas.DataFrame
        One row per cell of ``table.system()`` (its order): the codes of each dim,
        ``value``, ``freq``, ``top1`` ... (the rda's ``<MAXSCORE>`` columns, in order),
        ``shadow``, ``cost``, ``lower_pl``, ``upper_pl`` where the file has them, ``status``
        (riskengine's vocabulary, :data:`riskengine._formats.status.STATUSES`; ``None`` for a cell without a
        status), ``status_code`` (the letter as written), ``line`` (the file's line; -1
        for a cell the file does not hold).
    metadata : riskengine._formats.rda.Metadata
        The rda.
    response : str or None
        The response variable's name (None: the frequency).
    explanatory : tuple of str
        The dims.
    apriori : pandas.DataFrame or None
        The apriori file's lines (applied to ``cells``).
    """

    table: Table
    cells: pd.DataFrame
    metadata: object
    response: str | None
    explanatory: tuple
    apriori: pd.DataFrame | None = None

    @property
    def system(self):
        """The cell system of the table (every published cell; see ``cells``)."""
        return self.table.system()

    def code_index(self) -> tuple:
        """Where each cell of the table is in its cell system, by its codes.

        Returns
        -------
        tuple
            ``(pos, ids)``: the cell of codes ``c`` is ``ids[tuple(pos[k][c[k]] ...)]``
            (:func:`code_index`: the rda's ``<TOTCODE>`` an alias of the total).
        """
        return code_index(self.system, self.explanatory, self.metadata)

    def vector(self, column: str, fill=np.nan) -> np.ndarray:
        """Column ``column`` of ``cells`` as a float vector in the system's cell order.

        Parameters
        ----------
        column : str
            E.g. ``"freq"``, ``"top1"``, ``"cost"``.
        fill : float, default NaN
            The value where the column is missing.

        Returns
        -------
        numpy.ndarray
            One float per cell of the system.
        """
        if column not in self.cells:
            raise KeyError(f"the table has no column {column!r}; columns: "
                           f"{list(self.cells.columns)}")
        return np.array(self.cells[column].astype(float).fillna(fill).to_numpy(), dtype=float)

    def status_mask(self, *names) -> np.ndarray:
        """Which cells have one of these statuses.

        Parameters
        ----------
        *names : str
            Statuses of :data:`riskengine._formats.status.STATUSES`.

        Returns
        -------
        numpy.ndarray
            Boolean, one per cell of the system.
        """
        bad = [n for n in names if n not in STATUSES]
        if bad:
            raise ValueError(f"unknown status {bad[0]!r}; statuses are {STATUSES}")
        return self.cells["status"].isin(names).to_numpy()


def code_index(s, dims, meta) -> tuple:
    """``(pos, ids)`` of a table's cell system: ``pos[k]`` maps dim ``k``'s codes to their
    grid positions (the rda's ``<TOTCODE>`` an alias of the system's ``"Total"``), and the
    cell of codes ``c`` is ``ids[tuple(pos[k][c[k]] for k ...)]`` (-1: not a cell)."""
    _, grid_codes, ids = s.grids[next(iter(s.grids))]
    pos = [{c: j for j, c in enumerate(cs)} for cs in grid_codes]
    for k, e in enumerate(dims):             # the total code as the system names it
        tot = meta.variable(e).totcode
        if tot not in pos[k] and "Total" in pos[k]:
            pos[k][tot] = pos[k]["Total"]
    return pos, ids


def largest_of_sums(top, M, cells) -> np.ndarray:
    """``top`` (system cells x n, the largest contributions of each) with every cell of
    ``cells`` given the n largest among its finest cells' (zero-padded; contributors of
    different finest cells are different).  ``M``: the system's membership matrix (the
    finest cells are its first columns)."""
    top = np.array(top, float)
    M = M.tocsr()
    n = top.shape[1]
    for j in cells:
        rows = M.indices[M.indptr[j]:M.indptr[j + 1]]
        allv = np.sort(np.nan_to_num(top[rows].ravel()))[::-1][:n]
        top[j] = np.pad(allv, (0, n - allv.size))
    return top


def _hierarchy(var, codes_seen, base: Path | None, name: str) -> tuple:
    """``(Hierarchy or None, leaf codes)`` of an explanatory variable."""
    total = var.totcode
    extra = [c for c in var.missing if c in codes_seen]
    if var.hiercodelist:
        path = Path(var.hiercodelist)
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise FormatError(name, var.line, f"variable {var.name!r}: hierarchy file "
                              f"{var.hiercodelist!r} not found (looked in {path.parent})")
        try:
            h = Hierarchy.from_hrc(path, total=total, lead=var.hierleadstring or "@",
                                   name=var.name, encoding="latin-1")
        except ValueError as exc:
            raise FormatError(path, None, str(exc)) from None
    elif var.hierlevels:
        width = sum(var.hierlevels)
        leaves = sorted({c for c in codes_seen if c != total and len(c) == width
                         and c not in var.missing})
        try:
            h = Hierarchy.from_digits(leaves, tuple(var.hierlevels), total=total,
                                      name=var.name)
        except ValueError as exc:
            raise FormatError(name, var.line, f"variable {var.name!r}: {exc}") from None
    else:
        leaves, seen = [], set()
        for c in codes_seen:
            if c != total and c not in seen:
                seen.add(c)
                leaves.append(c)
        return None, leaves
    extra = [c for c in extra if c not in h]
    if extra:                      # tau-Argus: a missing code is a level-1 code
        tree = h.to_dict()
        for c in extra:
            tree[c] = {}
        h = Hierarchy(tree, total=total, name=var.name)
    return h, list(h.leaves)


def read_argus(rda, tab, hst=None, *, explanatory=None, response=None,
               additivity: str = "check", encoding: str = "latin-1", decimal=None,
               hst_separator=None) -> ArgusTable:
    """Read a table prepared for tau-Argus: ``.rda`` + ``.tab`` (+ ``.hrc`` files it names,
    + an apriori ``.hst``).

    Parameters
    ----------
    rda : str or os.PathLike
        The metadata file (``.hrc`` files it names are looked up next to it).
    tab : str or os.PathLike
        The table file: one line per cell, totals included.
    hst : str or os.PathLike, optional
        An apriori file: statuses (S safe, U primary, P protected (forced safe), M / ML
        secondary),
        costs (C / W), bounds (AB) and protection levels (PL) of some cells, applied
        after the table's own status column (as tau-Argus's ``<APRIORI>``).
    explanatory : sequence of str, optional
        The dims (default: every explanatory variable of the rda, in order).
    response : str, optional
        The response variable (default: the first ``<NUMERIC>`` variable that is not a
        shadow, cost, protection-level or top-n column; the frequency when there is none).
    additivity : {"check", "compute"}, default "check"
        tau-Argus's ``<READTABLE>`` 0 (totals must add up) or 1 (totals are recomputed
        from the cells).
    encoding : str, default "latin-1"
        Of every file.
    decimal : str, optional
        The decimal mark of the table file (default: detected).
    hst_separator : str, optional
        The apriori file's separator (default: detected).

    Returns
    -------
    ArgusTable
        The table and every published cell's row.
    """
    from .rda import read_rda
    from .tab import read_tab

    if additivity not in ("check", "compute"):
        if additivity in ("none", 2, "2"):
            raise ValueError("non-additive tables (tau-Argus <READTABLE> 2) cannot be "
                             "protected or audited here: suppression and audit solve the "
                             "table's equations (a total = the sum of its cells); give "
                             "additivity='compute' to recompute the totals from the cells")
        raise ValueError(f"additivity must be 'check' or 'compute', got {additivity!r}")
    meta = read_rda(rda, encoding=encoding)
    frame = read_tab(tab, meta, encoding=encoding, decimal=decimal)
    tname = str(tab)
    base = Path(rda).parent if isinstance(rda, (str, Path)) and Path(rda).is_file() else None
    expl = tuple(explanatory) if explanatory is not None else \
        tuple(v.name for v in meta.explanatory)
    if not expl:
        raise FormatError(meta.name, None, "no explanatory variable (<RECODEABLE>): a table "
                          "needs at least one")
    for e in expl:
        v = meta.variable(e)
        if "recodeable" not in v.roles:
            raise FormatError(meta.name, v.line, f"variable {e!r} is not explanatory "
                              "(<RECODEABLE>)")
    skip = {x.name for x in (meta.shadow, meta.cost, meta.lower_pl, meta.upper_pl)
            if x is not None}
    skip |= {x.name for x in meta.maxscore}
    if response is None:
        cands = [v.name for v in meta.numeric if v.name not in skip]
        response = cands[0] if cands else None
    freq_var = meta.frequency.name if meta.frequency is not None else None
    if response is None and freq_var is None:
        raise FormatError(meta.name, None, "no response variable: the rda has neither a "
                          "<NUMERIC> nor a <FREQUENCY> variable")
    count_table = response is None
    vcol = freq_var if count_table else response
    if vcol not in frame:
        raise FormatError(tname, None, f"the table file has no column {vcol!r}")

    hier, leaves = {}, {}
    for e in expl:
        h, lv = _hierarchy(meta.variable(e), frame[e].tolist(), base, meta.name)
        if h is not None:
            hier[e] = h
        leaves[e] = lv
    return _assemble(meta, frame, expl, response, count_table, freq_var, vcol, hier, leaves,
                     tname, additivity, hst, hst_separator)


def _assemble(meta, frame, expl, response, count_table, freq_var, vcol, hier, leaves,
              tname, additivity, hst=None, hst_separator=None) -> ArgusTable:
    """The table and every cell's row from a frame of lines (one per cell) and the dims'
    hierarchies / leaf codes: shared by tau-Argus ``.tab`` and sdcTable result files."""
    from .hst import read_hst
    for e in expl:
        if not leaves[e]:
            raise FormatError(tname, None, f"variable {e!r} has no code but its total")
    # every line's codes, to each dim's position in the system's grid
    margins = [c for r in range(len(expl)) for c in itertools.combinations(expl, r)]
    shape = tuple(len(leaves[e]) for e in expl)
    leaf_pos = {e: {c: i for i, c in enumerate(leaves[e])} for e in expl}
    values = np.zeros(shape)
    # the leaf cells first (the table's values), then every line checked against the system
    lines = frame["line"].to_numpy()
    code_cols = [frame[e].to_numpy(dtype=object) for e in expl]
    known = [set(leaves[e]) | ({meta.variable(e).totcode} | set(hier[e].codes)
                               if e in hier else {meta.variable(e).totcode}) for e in expl]
    for k, e in enumerate(expl):
        bad = [i for i, c in enumerate(code_cols[k]) if c not in known[k]]
        if bad:
            i = bad[0]
            raise FormatError(tname, int(lines[i]), f"code {code_cols[k][i]!r} of variable "
                              f"{e!r} is not in its code list (hierarchy / codes of the "
                              "file)")
    is_leaf = np.ones(len(frame), bool)
    for k, e in enumerate(expl):
        is_leaf &= np.array([c in leaf_pos[e] for c in code_cols[k]], bool)
    val = frame[vcol].to_numpy(dtype=float)
    if np.isnan(val).any():
        i = int(np.argmax(np.isnan(val)))
        raise FormatError(tname, int(lines[i]), f"no value for {vcol!r} (a missing number):"
                          " every cell of the table needs its value")
    for i in np.flatnonzero(is_leaf):
        idx = tuple(leaf_pos[e][code_cols[k][i]] for k, e in enumerate(expl))
        values[idx] = val[i]
    if count_table and (np.any(values < 0) or np.any(values != np.round(values))):
        raise FormatError(tname, None, "a frequency table holds nonnegative whole counts")
    t = Table(values, dims=expl, coords={e: leaves[e] for e in expl}, margins=margins,
              kind="count" if count_table else "magnitude", hierarchies=hier or None,
              name=vcol)
    s = t.system()
    pos, ids = code_index(s, expl, meta)
    cell_of = np.array([ids[tuple(pos[k][code_cols[k][i]] for k in range(len(expl)))]
                        for i in range(len(frame))], np.int64)
    dup = pd.Series(cell_of).duplicated(keep=False).to_numpy() & \
        pd.DataFrame({e: code_cols[k] for k, e in enumerate(expl)}).duplicated(keep=False
                                                                             ).to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        raise FormatError(tname, int(lines[i]), "the same cell is given twice: "
                          + ", ".join(f"{e}={code_cols[k][i]!r}" for k, e in enumerate(expl)))
    x = s.vector(values) if hasattr(s, "vector") else None
    x = np.asarray(x, float)
    decimals = meta.variable(vcol).decimals if vcol else 0
    tol = 0.5 * 10.0 ** (-decimals) if decimals else 0.5
    tol = max(tol, 1e-9 * float(np.abs(values).sum()))
    if additivity == "check":
        off = np.flatnonzero(np.abs(val - x[cell_of]) > tol)
        if off.size:
            # the smallest offending cell: the one whose own cells are given
            size = np.asarray(s.M.sum(axis=1)).ravel()[cell_of[off]]
            i = int(off[np.argmin(size)])
            more = f"; {off.size - 1} more lines do not add up" if off.size > 1 else ""
            raise FormatError(tname, int(lines[i]), "the table does not add up: cell "
                              + ", ".join(f"{e}={code_cols[k][i]!r}" for k, e in enumerate(expl))
                              + f" is {val[i]:.{max(decimals, 0)}f} but its cells sum to "
                              f"{x[cell_of[i]]:.{max(decimals, 0)}f}{more} (tau-Argus "
                              "<READTABLE> 0 checks additivity; give additivity='compute' to "
                              "recompute totals from the cells, as <READTABLE> 1 does)")
    cells = s.cells[list(expl)].copy()
    cells["value"] = x
    cells["line"] = -1
    first = ~pd.Series(cell_of).duplicated().to_numpy()
    cells.loc[cell_of[first], "line"] = lines[first]
    extra_cols = [c for c in frame.columns if c not in expl and c != "line" and c != vcol]
    for c in extra_cols:
        col = frame[c].to_numpy()
        dst = np.full(s.n_var, None if col.dtype == object else np.nan,
                      dtype=object if col.dtype == object else float)
        dst[cell_of[first]] = col[first]
        cells[c] = dst
    # additive columns of cells without a line (or recomputed totals): from the leaves
    rename = {}
    if freq_var is not None and freq_var in frame:
        rename[freq_var] = "freq"
        if not count_table:
            fl = np.zeros(shape)
            fcol = frame[freq_var].to_numpy(dtype=float)
            for i in np.flatnonzero(is_leaf):
                fl[tuple(leaf_pos[e][code_cols[k][i]] for k, e in enumerate(expl))] = fcol[i]
            fv = np.asarray(s.vector(fl), float)
            if additivity == "compute":
                cells[freq_var] = fv
            else:
                miss = cells[freq_var].isna().to_numpy()
                cells.loc[miss, freq_var] = fv[miss]
    if count_table:
        cells["freq"] = x
    # the largest contributions of a cell without a line (or of every total, recomputed):
    # the largest among its finest cells' (contributors of different cells are different)
    if meta.maxscore:
        redo = (cells["line"].to_numpy() < 0) if additivity == "check" else \
            ~s.cells["finest"].to_numpy()
        redo &= s.published
        if redo.any():
            cols = [v.name for v in meta.maxscore]
            top = largest_of_sums(np.stack([cells[c].astype(float).to_numpy() for c in cols],
                                           axis=1), s.M, np.flatnonzero(redo))
            for k, c in enumerate(cols):
                cells[c] = top[:, k]
    for j, v in enumerate(meta.maxscore):
        rename[v.name] = f"top{j + 1}"
    for v, nm in ((meta.shadow, "shadow"), (meta.cost, "cost"), (meta.lower_pl, "lower_pl"),
                  (meta.upper_pl, "upper_pl")):
        if v is not None:
            rename[v.name] = nm
    st = meta.status.name if meta.status is not None else None
    cells = cells.rename(columns=rename)
    letters = {meta.safe.upper(): "safe", meta.unsafe.upper(): "primary",
               meta.protect.upper(): "forced_safe", "E": "empty", "M": "secondary"}
    if st is not None and st in cells:
        codes = cells[st]
        cells["status_code"] = codes
        cells["status"] = [None if c is None or (isinstance(c, float) and np.isnan(c))
                           else letters.get(str(c).strip().upper()) for c in codes]
        cells = cells.drop(columns=[st])
    else:
        cells["status_code"] = None
        cells["status"] = None
    # empty cells: no contributor
    if "freq" in cells:
        empty = (cells["freq"].fillna(-1).to_numpy() == 0) & cells["status"].isna().to_numpy()
        cells.loc[empty, "status"] = "empty"
    cells["status"] = cells["status"].where(cells["status"].notna(), "safe")
    ap = None
    if hst is not None:
        ap = read_hst(hst, n_dims=len(expl), separator=hst_separator)
        cells = _apply_apriori(cells, ap, expl, pos, ids, str(hst))
    return ArgusTable(t, cells.reset_index(drop=True), meta, None if count_table else response,
                      expl, ap)


def _apply_apriori(cells, ap, expl, pos, ids, name) -> pd.DataFrame:
    """tau-Argus's apriori actions on the cells (``TableSet.processAprioryFile``)."""
    cells = cells.copy()
    for col in ("cost", "lower_bound", "upper_bound", "lower_pl", "upper_pl"):
        if col not in cells:
            cells[col] = np.nan
    for row in ap.itertuples(index=False):
        codes = tuple(row.codes)
        try:
            j = int(ids[tuple(pos[k][c] for k, c in enumerate(codes))])
        except KeyError:
            raise FormatError(name, int(row.line), "no such cell: "
                              + ", ".join(f"{e}={c!r}" for e, c in zip(expl, codes))) from None
        a = row.action
        if a == "S":
            cells.at[j, "status"] = "safe"
        elif a == "U":
            cells.at[j, "status"] = "primary"
        elif a == "P":
            cells.at[j, "status"] = "forced_safe"
        elif a in ("M", "ML"):
            cells.at[j, "status"] = "secondary"
        elif a in ("C", "W"):
            cells.at[j, "cost"] = float(row.cost)
        elif a == "AB":
            cells.at[j, "lower_bound"] = float(row.lower)
            cells.at[j, "upper_bound"] = float(row.upper)
        elif a == "PL":
            cells.at[j, "lower_pl"] = float(row.lower)
            cells.at[j, "upper_pl"] = float(row.upper)
    return cells
