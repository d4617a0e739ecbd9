"""tau-Argus jobs run here: a table prepared for tau-Argus protected by riskengine
(:func:`protect_argus`), another tool's pattern read back and audited
(:func:`read_pattern`, :func:`audit_argus`), tau-Argus output files written
(:func:`write_argus_output`), and batch files run (:func:`run_batch`).

How tau-Argus's methods map onto riskengine's (``<SUPPRESS>``):

* ``MOD`` (modular), ``GH`` (hypercube), ``NET`` (network) -> riskengine's heuristic
  complementary suppression over the whole hierarchical table at once (one LP-driven
  pass over all levels: no sub-table back-tracking, so no unsafe pattern from the
  modular decomposition; the pattern is not the one tau-Argus finds);
* table 0 (tau-Argus's linked tables, GH / MOD only) -> :func:`protect_argus_linked`:
  every table in one system, a shared cell one unknown, audited jointly;
* ``OPT`` (optimal) -> riskengine's optimal model (Fischetti-Salazar, HiGHS), with the
  time limit given;
* ``RND``, ``CTA``, ``CKM`` -> refused by name (controlled rounding of hierarchical
  tables, CTA and the cell key method of tau-Argus's table input are not run from batch
  files here);
* microdata jobs (``<OPENMICRODATA>``, ``<READMICRODATA>``) tabulate every table from the
  records with :func:`riskengine._argus_micro.argus_microdata` (weights, holdings,
  request codes as tau-Argus applies them) and judge each cell on its contributions;
* ``<RECODE>``, ``<JJ>``, ``<ANCO>``, ``<COVER>`` -> refused by name before any work;
  ``<SOLVER>`` is accepted and noted (riskengine solves with HiGHS);
  ``<GOINTERACTIVE>`` ends the job; ``<LOGBOOK>`` / ``<VERSIONINFO>`` are noted.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._atomic import atomic_write_text
from ._formats._lines import FormatError
from ._formats.argus import ArgusTable, largest_of_sums, read_argus
from ._formats.status import FROM_LETTERS, TAUARGUS_CODES

__all__ = [
    "ARGUS_STATUS_NUMBERS",
    "BatchResult",
    "argus_sensitivity",
    "audit_argus",
    "protect_argus",
    "read_pattern",
    "run_batch",
    "write_argus_output",
]

#: the tau-Argus status number written for each riskengine status (WRITETABLE AS+):
#: a primary cell found by a rule is UNSAFE_RULE (3), by the frequency rule UNSAFE_FREQ
#: (5), by the status column or an apriori file UNSAFE_MANUAL (9)
ARGUS_STATUS_NUMBERS = {"safe": 1, "primary": 3, "primary_request": 4,
                        "primary_frequency": 5, "primary_zero": 6, "primary_manual": 9,
                        "forced_safe": 10, "secondary": 11, "empty": 14}
REFUSED = {"<RECODE>": "recoding (riskengine reads the codes as given: recode the data "
                       "or the .hrc file first)",
           "<JJ>": "running a JJ file (read it with riskengine's read_jj instead)",
           "<ANCO>": "tau-Argus's ANCO option", "<COVER>": "tau-Argus's internal cover table"}
_METHODS = {"MOD": "heuristic", "GH": "heuristic", "NET": "heuristic", "OPT": "optimal"}


def argus_sensitivity(at: ArgusTable, rules=None) -> tuple:
    """Primary cells and the protection they need, from the table's status column and
    protection levels, and from safety rules evaluated on each cell's summary.

    Parameters
    ----------
    at : ArgusTable
        From :func:`riskengine.read_argus`.
    rules : list of (name, parameters), optional
        tau-Argus safety rules as :func:`riskengine._formats.arb.read_arb` gives them
        (``[("P", (15.0, 1.0)), ("FREQ", (3.0, 10.0))]``); None or empty: the status
        column (and apriori file) alone says which cells are unsafe.

    Returns
    -------
    sensitive : numpy.ndarray
        Boolean per cell of ``at.system``.
    lower, upper : numpy.ndarray
        Protection below / above each cell's value.
    reason : numpy.ndarray
        Object array: ``"status"``, ``"frequency"``, ``"rule"`` or None, per cell.
    """
    s = at.system
    n = s.n_var
    sens = at.status_mask("primary")
    reason = np.where(sens, "status", None).astype(object)
    value = np.abs(at.vector("value", 0.0))
    lower = np.zeros(n)
    upper = np.zeros(n)
    man = 0.0
    if rules:
        r_sens, r_low, r_up, r_reason, man = _rule_sensitivity(at, rules)
        new = r_sens & ~sens
        reason[new] = r_reason[new]
        sens = sens | r_sens
        lower = np.maximum(lower, np.where(r_sens, r_low, 0.0))
        upper = np.maximum(upper, np.where(r_sens, r_up, 0.0))
    # a cell unsafe by status gets the manual safety margin (tau-Argus MAN, default 0) or
    # its protection levels from the file
    by_status = at.status_mask("primary")
    if "lower_pl" in at.cells and "upper_pl" in at.cells:
        lpl = at.vector("lower_pl", np.nan)
        upl = at.vector("upper_pl", np.nan)
        has = by_status & ~np.isnan(lpl) & ~np.isnan(upl)
        lower = np.where(has, np.maximum(lower, lpl), lower)
        upper = np.where(has, np.maximum(upper, upl), upper)
    need = by_status & (lower <= 0) & (upper <= 0)
    margin = value * (man / 100.0)
    floor = _min_lpl(at)
    lower = np.where(need, np.maximum(margin, floor), lower)
    upper = np.where(need, np.maximum(margin, floor), upper)
    lower = np.minimum(lower, value)          # no nonnegative table goes below 0
    return sens, lower, upper, reason


def _rule_text(rules) -> str:
    return "|".join(f"{n}(" + ",".join(f"{v:g}" for v in p) + ")" for n, p in rules)


def _rule_sensitivity(at: ArgusTable, rules) -> tuple:
    """tau-Argus safety rules on every cell's summary (value, frequency, top-n), as
    tau-Argus evaluates them on table input (``TauArgus::SetInTable``): on the shadow
    variable when the table has one."""
    from .magnitude.argus_rules import parse_safety_rule
    from .magnitude.sensitivity import Frequency, assess_summary

    sr = parse_safety_rule(_rule_text(rules))
    if sr.holding:
        raise ValueError("holding rules (the 3rd/4th NK or P rule, the 2nd FREQ rule) need "
                         "microdata with holdings: a table file has none")
    s = at.system
    base = "shadow" if "shadow" in at.cells and at.cells["shadow"].notna().all() else "value"
    value = np.abs(at.vector(base, 0.0))
    freq = at.vector("freq", np.nan) if "freq" in at.cells else value.copy()
    tops = sorted((c for c in at.cells.columns if c.startswith("top") and c[3:].isdigit()),
                  key=lambda c: int(c[3:]))
    top = np.stack([at.vector(c, np.nan) for c in tops], axis=1) if tops else \
        np.zeros((s.n_var, 0))
    # a cell without a line of the file (a computed total): its summary from its cells
    miss = (at.cells["line"].to_numpy() < 0) & s.published
    if miss.any():
        M = s.M.tocsr()                 # the finest cells are the system's first cells
        for j in np.flatnonzero(miss):
            freq[j] = np.nansum(freq[M.indices[M.indptr[j]:M.indptr[j + 1]]])
        if top.shape[1]:
            top = largest_of_sums(top, M, np.flatnonzero(miss))
    if np.isnan(freq).any():
        j = int(np.argmax(np.isnan(freq)))
        raise ValueError(f"{s.labels()[j]} has no frequency: the safety rules need the "
                         "number of contributors of every cell (<FREQUENCY> column)")
    ds = assess_summary(value, freq.astype(np.int64), top, sr.rule)
    sens = np.asarray(ds.sensitive.values, bool) & s.published
    up = np.asarray(ds.protection.values, float)
    low = np.asarray(ds.protection_lower.values, float) if "protection_lower" in ds else up
    if base == "shadow":
        # the rules judge the shadow; the protection is the same share of the published
        # response (libtauargus CTable::SetProtectionLevelCell: |Resp| * Distance / Shadow)
        resp = np.abs(at.vector("value", 0.0))
        ratio = np.divide(resp, value, out=np.ones_like(resp), where=value > 0)
        up, low = up * ratio, low * ratio
    reason = np.array([None] * s.n_var, dtype=object)
    freq_rules = [r for r in sr.individual if isinstance(r, Frequency)]
    by_freq = np.zeros(s.n_var, bool)
    if freq_rules:
        fds = assess_summary(value, freq.astype(np.int64), top[:, :0],
                             freq_rules[0] if len(freq_rules) == 1 else sr.rule)
        by_freq = np.asarray(fds.sensitive.values, bool)
    lin, lin_up, lin_low = _linear(value, freq, top, sr, s)
    if base == "shadow":
        lin_up, lin_low = lin_up * ratio, lin_low * ratio
    reason[sens] = "rule"
    reason[sens & by_freq & ~lin] = "frequency"
    up = np.where(lin, lin_up, up)           # a dominance / p % cell: that rule's protection
    low = np.where(lin, lin_low, low)
    # tau-Argus's protection of a cell unsafe by the frequency rule alone: |Resp| * range %,
    # at least MinLPL (1 for a frequency table, one unit of the response's last decimal:
    # libtauargus TauArgus::SetTableSafety, CTable::SetProtectionLevelCell)
    resp = np.abs(at.vector("value", 0.0))
    minlpl = _min_lpl(at)
    only_freq = sens & by_freq & ~lin
    if freq_rules:
        r = freq_rules[0].safety_range / 100.0
        up = np.where(only_freq, np.maximum(resp * r, minlpl), up)
        low = np.where(only_freq, np.minimum(up, resp), low)
    up = np.where(sens, np.maximum(up, minlpl), 0.0)
    low = np.where(sens, np.minimum(np.maximum(low, np.where(resp > 0, minlpl, 0.0)), resp),
                   0.0)
    return sens, low, up, reason, float(sr.manual_margin or 0.0)


def _min_lpl(at: ArgusTable) -> float:
    if at.table.kind == "count" or at.response is None:
        return 1.0
    return 10.0 ** (-max(at.metadata.variable(at.response).decimals, 0))


def _linear(value, freq, top, sr, s) -> tuple:
    """``(sensitive, upper, lower)`` by the dominance and p % rules alone (tau-Argus's
    UNSAFE_RULE cells and their protection)."""
    from .magnitude.sensitivity import PQ, Dominance, Max, assess_summary
    lin = [r for r in sr.individual if isinstance(r, (Dominance, PQ))]
    if not lin:
        z = np.zeros(s.n_var)
        return np.zeros(s.n_var, bool), z, z
    rule = lin[0] if len(lin) == 1 else Max(*lin)
    ds = assess_summary(value, freq.astype(np.int64), top, rule)
    up = np.asarray(ds.protection.values, float)
    low = np.asarray(ds.protection_lower.values, float) if "protection_lower" in ds else up
    return np.asarray(ds.sensitive.values, bool), up, low


def _costs(at: ArgusTable, cost) -> np.ndarray | None:
    """Per-cell suppression costs: tau-Argus's cost function of ``<SPECIFYTABLE>``."""
    value = np.abs(at.vector("value", 0.0))
    if cost is None:
        if "cost" in at.cells and at.cells["cost"].notna().any():
            c = at.vector("cost", np.nan)
            return np.where(np.isnan(c), value, c)
        return None
    if cost == "unity":
        return np.ones(at.system.n_var)
    if cost == "frequency":
        return at.vector("freq", 0.0)
    if cost == "distance":
        raise ValueError("the distance cost function (-3) is not implemented here: give a "
                         "cost variable, -1 (frequency) or -2 (unity)")
    names = {at.response: "value"}
    m = at.metadata
    for v, col in ((m.cost, "cost"), (m.shadow, "shadow")):
        if v is not None:
            names[v.name] = col
    col = names.get(cost, cost)
    if col not in at.cells:
        raise ValueError(f"cost variable {cost!r} is not a column of the table "
                         f"(columns: {list(at.cells.columns)})")
    c = at.vector(col, np.nan)
    return np.where(np.isnan(c), value, c)


def protect_argus(at: ArgusTable, rules=None, method: str = "heuristic",
                  time_limit: float | None = None, cost=None, sensitivity=None):
    """Complementary suppression of a tau-Argus table: every level of every hierarchy at
    once.

    Parameters
    ----------
    at : ArgusTable
        From :func:`riskengine.read_argus`.
    rules : list of (name, parameters), optional
        Safety rules (see :func:`argus_sensitivity`).
    method : {"heuristic", "optimal"}
        riskengine's suppression method (tau-Argus MOD / GH / NET -> heuristic, OPT ->
        optimal).
    time_limit : float, optional
        Seconds for the optimal method.
    cost : str, optional
        tau-Argus's cost function: a variable name, ``"unity"`` (-2), ``"frequency"``
        (-1); default: the rda's ``<COSTVAR>`` column where given, else the cell value.
    sensitivity : tuple, optional
        ``(sensitive, lower, upper, reason)`` computed elsewhere (from microdata:
        :func:`riskengine._argus_micro.argus_microdata`), used instead of ``rules``
        (cells unsafe by status are added).

    Returns
    -------
    release : rk.TableSetRelease
        NaN = suppressed.
    status : numpy.ndarray
        riskengine status per cell (safe, unsafe, protected, secondary, empty).
    """
    from .mechanisms.suppression import suppress
    from .table_set import TableSet

    sens, lower, upper, reason = _given_or_rules(at, rules, sensitivity)
    frozen = at.status_mask("forced_safe")
    forced = at.status_mask("secondary")
    costs = _costs(at, cost)
    ts = TableSet({at.table.name or "table": at.table})
    if np.any(sens & frozen):
        j = int(np.argmax(sens & frozen))
        raise ValueError(f"{at.system.labels()[j]} is unsafe and protected at once: a "
                         "protected cell (status P) is never suppressed")
    rel = suppress(ts, sens, (lower, upper), method=method, time_limit=time_limit,
                   forced=forced if forced.any() else None,
                   frozen=frozen if frozen.any() else None, costs=costs)
    status = _statuses(at, sens, rel.hidden)
    rel.info["reason"] = reason
    return rel, status


def _statuses(at, sens, hidden) -> np.ndarray:
    st = np.array(["safe"] * at.system.n_var, dtype=object)
    empty = at.status_mask("empty")
    st[empty] = "empty"
    st[at.status_mask("forced_safe")] = "forced_safe"
    st[hidden] = "secondary"
    st[sens] = "primary"
    return st


def read_pattern(at: ArgusTable, source, status_column: str | None = None,
                 encoding: str = "latin-1") -> tuple:
    """Another tool's suppression pattern of the same table, read back: a tau-Argus output
    (WRITETABLE type 2/3 code-value file: ``x`` for a suppressed value, or the status
    number with ``AS+``) or an sdcTable / status CSV (a column of status letters).

    Parameters
    ----------
    at : ArgusTable
        The table the pattern protects (its codes and hierarchies).
    source : str or os.PathLike
        The pattern file: one line per cell, the explanatory codes first (in the order of
        ``at.explanatory``), then the value (``x`` = suppressed, ``-`` = empty), then
        optionally a status (tau-Argus status number, or a letter: tau-Argus S/U/P/M/E,
        sdcTable s/u/x/z).
    status_column : str, optional
        Ignored for headerless files; with a header, the status column's name.
    encoding : str, default "latin-1"
        The file's encoding.

    Returns
    -------
    release : rk.TableSetRelease
        The pattern (NaN = suppressed) on ``at``'s values.
    status : numpy.ndarray
        riskengine status per cell of ``at.system``.
    """
    from ._formats._lines import read_source
    from .mechanisms.suppression import CellSuppression
    from .table_set import TableSet, TableSetRelease

    name, text = read_source(source, encoding)
    s = at.system
    dims = at.explanatory
    pos, ids = at.code_index()
    letters = {**FROM_LETTERS["tauargus"], **FROM_LETTERS["sdctable"],
               "V": "safe", "A": "primary", "B": "primary", "C": "primary", "D": "secondary",
               "F": "primary"}          # the SBS output's letters (WRITETABLE type 4)
    hidden = np.zeros(s.n_var, bool)
    status = np.array([None] * s.n_var, dtype=object)
    seen = np.zeros(s.n_var, bool)
    sep = ";" if text.count(";") > text.count(",") else ","
    header = None
    given = {}
    code_at, value_at, status_at = list(range(len(dims))), len(dims), None
    for lineno, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        f = _split_quoted(raw.rstrip("\r"), sep)
        if header is None and lineno == 1 and not all(
                c in pos[k] for k, c in enumerate(f[:len(dims)])):
            header = f
            absent = [d for d in dims if d not in header]
            if absent:
                raise FormatError(name, lineno, f"the header names no column {absent[0]!r}: "
                                  f"a pattern needs the codes of {', '.join(dims)}")
            code_at = [header.index(d) for d in dims]
            named = status_column or next((c for c in ("sdcStatus", "Status", "status")
                                           if c in header), None)
            if status_column is not None and status_column not in header:
                raise FormatError(name, lineno, f"no status column {status_column!r} in "
                                  f"the header {header}")
            status_at = header.index(named) if named is not None else None
            rest = [i for i in range(len(header)) if i not in code_at and i != status_at]
            value_at = rest[0] if rest else None
            if value_at is None and status_at is None:
                raise FormatError(name, lineno, "a pattern needs a value (x = suppressed) or "
                                  "a status column")
            continue
        width = max(code_at + [i for i in (value_at, status_at) if i is not None]) + 1
        if len(f) < width:
            raise FormatError(name, lineno, f"{len(f)} fields: a pattern line holds the "
                              f"{len(dims)} codes ({', '.join(dims)}) and the value"
                              + (" and the status" if status_at is not None else ""))
        try:
            j = int(ids[tuple(pos[k][f[i]] for k, i in enumerate(code_at))])
        except KeyError:
            raise FormatError(name, lineno, "no such cell in the table: " + ", ".join(
                f"{e}={f[i]!r}" for e, i in zip(dims, code_at))) from None
        key = tuple(f[i] for i in code_at)
        if key in given:
            raise FormatError(name, lineno, f"{s.labels()[j]} is given twice (line "
                              f"{given[key]})")
        given[key] = lineno
        again = seen[j]         # a code with a single child is the same cell as the child
        seen[j] = True
        v = f[value_at] if value_at is not None else ""
        st = None
        code = None
        if status_at is not None:
            code = f[status_at]
        elif header is None and len(f) > len(dims) + 1:
            code = f[-1]
        if code is not None:
            if code.isdigit():
                if int(code) not in TAUARGUS_CODES:
                    raise FormatError(name, lineno, f"status {code}: tau-Argus's status "
                                      "numbers are 1-14")
                st = TAUARGUS_CODES[int(code)][1]
            elif code in letters:
                st = letters[code]
            else:
                raise FormatError(name, lineno, f"status {code!r}: a status is a tau-Argus "
                                  "number (1-14) or letter (S U P M E), or an sdcTable "
                                  "letter (s u x z)")
        if v.lower() == "x":
            hidden[j] = True
            st = st if st in ("primary", "secondary") else "secondary"
        elif st in ("primary", "secondary"):
            hidden[j] = True
        elif v not in ("-", ""):
            try:
                float(v.replace(",", ".") if sep == ";" else v)
            except ValueError:
                raise FormatError(name, lineno, f"value {v!r} is neither a number, x "
                                  "(suppressed) nor - (empty)") from None
        st = st if st is not None else ("empty" if v == "-" else "safe")
        if again and st != status[j]:
            raise FormatError(name, lineno, f"{s.labels()[j]} is {st} here and "
                              f"{status[j]} on another line: the codes name one cell (a "
                              "subtotal with a single member)")
        status[j] = st
    missing = s.published & ~seen
    if missing.any():
        j = int(np.argmax(missing))
        raise FormatError(name, None, f"the pattern has no line for {s.labels()[j]}: every "
                          "published cell needs one (a cell left out cannot be audited)")
    x = at.vector("value", 0.0)
    ts = TableSet({at.table.name or "table": at.table})
    rel = TableSetRelease(ts, np.where(hidden | ~s.published, np.nan, x),
                          CellSuppression(suppress_totals=True),
                          info={"n_suppressed": int(hidden.sum()), "source": name})
    return rel, status


def status_pattern(at: ArgusTable):
    """The pattern a table's own statuses describe (tau-Argus's intermediate file: U and M
    suppressed; sdcTable's result: u and x suppressed) as a release.

    Parameters
    ----------
    at : ArgusTable
        From :func:`riskengine.read_argus` or :func:`riskengine.formats.read_sdc_result`.

    Returns
    -------
    release : rk.TableSetRelease
        NaN = suppressed (primary or secondary).
    status : numpy.ndarray
        riskengine status per cell.
    """
    from .mechanisms.suppression import CellSuppression
    from .table_set import TableSet, TableSetRelease
    s = at.system
    hidden = at.status_mask("primary", "secondary") & s.published
    ts = TableSet({at.table.name or "table": at.table})
    rel = TableSetRelease(ts, np.where(hidden | ~s.published, np.nan, at.vector("value", 0.0)),
                          CellSuppression(suppress_totals=True),
                          info={"n_suppressed": int(hidden.sum())})
    return rel, _statuses(at, at.status_mask("primary"), hidden)


def _split_quoted(line: str, sep: str) -> list:
    """Fields of a separated line: a quoted field as written between its quotes (``" 1"``
    keeps its space, as tau-Argus codes do), an unquoted one stripped."""
    out, cur, q, quoted = [], [], False, False
    for ch in line:
        if ch == '"':
            q, quoted = not q, True
        elif ch == sep and not q:
            out.append("".join(cur) if quoted else "".join(cur).strip())
            cur, quoted = [], False
        else:
            cur.append(ch)
    out.append("".join(cur) if quoted else "".join(cur).strip())
    return out


def _given_or_rules(at, rules, sensitivity) -> tuple:
    if sensitivity is None:
        return argus_sensitivity(at, rules)
    if rules:
        raise ValueError("give the safety rules or the sensitivity computed from them, not "
                         "both")
    sens, lower, upper, reason = (np.asarray(v) for v in sensitivity)
    n = at.system.n_var
    if sens.shape != (n,) or lower.shape != (n,) or upper.shape != (n,):
        raise ValueError(f"sensitivity must hold one entry per cell of the table's system "
                         f"({n})")
    st_sens, st_low, st_up, st_reason = argus_sensitivity(at, None)
    reason = np.where(sens, reason, st_reason).astype(object)
    return (sens.astype(bool) | st_sens, np.maximum(lower.astype(float), st_low),
            np.maximum(upper.astype(float), st_up), reason)


def audit_argus(at: ArgusTable, release, rules=None, sensitivity=None):
    """The audit of a pattern of a tau-Argus table: every hidden cell's feasible interval
    (LP over every level at once), exact disclosure, and, for every primary cell, whether
    it gets its protection.

    Parameters
    ----------
    at : ArgusTable
        The original table (the auditor's view).
    release : rk.TableSetRelease
        The pattern (from :func:`protect_argus` or :func:`read_pattern`).
    rules : list of (name, parameters), optional
        The safety rules (see :func:`argus_sensitivity`).
    sensitivity : tuple, optional
        ``(sensitive, lower, upper, reason)`` computed elsewhere (see
        :func:`protect_argus`).

    Returns
    -------
    xarray.Dataset
        :func:`riskengine.audit`'s Dataset over the ``cell`` dim.
    """
    from .magnitude.audit import audit
    from .table_set import TableSet

    sens, lower, upper, _ = _given_or_rules(at, rules, sensitivity)
    ts = TableSet({at.table.name or "table": at.table})
    ds = audit(release, sens, (lower, upper), table=ts)
    bounds = _apriori_bounds(at)
    if bounds is None:
        return ds
    # an intruder who knows a-priori bounds of some cells (apriori AB lines) narrows the
    # intervals: the audit solves with them (never a wider interval than the intruder has)
    from .magnitude.bounded import bounded_intervals
    s = at.system
    lb, ub = bounds
    lo, hi, tol = bounded_intervals(s.A, np.zeros(s.A.shape[0]), release.cell_vector(), lb,
                                    ub)
    unknown = np.isnan(release.cell_vector())
    width = hi - lo
    exact = unknown & (width <= tol)
    val = ds["value"].values
    below, above = val - lo, hi - val
    plo, phi = ds["protection_lower"].values, ds["protection_upper"].values
    sens_v = ds["sensitive"].values
    supp = ds["suppressed"].values
    ds["lower"].values[:] = lo
    ds["upper"].values[:] = hi
    ds["width"].values[:] = width
    ds["exact"].values[:] = exact
    ds["room_below"].values[:] = below
    ds["room_above"].values[:] = above
    ds["approximate_disclosure"].values[:] = (sens_v & ~exact & supp
                                              & (width < np.maximum(plo, phi) - tol))
    ds["under_protected"].values[:] = sens_v & ((below < plo - tol) | (above < phi - tol))
    pub = s.published
    ds.attrs.update({"n_exact": int((exact & pub).sum()),
                     "n_exact_unpublished": int((exact & ~pub).sum()),
                     "n_approximate_disclosure": int(ds["approximate_disclosure"].sum()),
                     "n_under_protected": int(ds["under_protected"].sum()),
                     "apriori_bounds": int((np.isfinite(ub) | (lb > 0)).sum()),
                     "method": ds.attrs["method"] + "; with the a-priori bounds (AB) the "
                     "intruder is given"})
    return ds


def _apriori_bounds(at: ArgusTable):
    """``(lower, upper)`` per cell from an apriori file's AB lines (an intruder's
    knowledge), or None when it has none."""
    if "lower_bound" not in at.cells or not at.cells["lower_bound"].notna().any():
        return None
    lb = at.vector("lower_bound", 0.0)
    ub = at.vector("upper_bound", np.inf)
    x = at.vector("value", 0.0)
    bad = (lb > x) | (ub < x)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"the a-priori bounds of {at.system.labels()[j]} "
                         f"[{lb[j]:g}, {ub[j]:g}] do not hold its value {x[j]:g}")
    return np.maximum(lb, 0.0), ub


def _code_order(at: ArgusTable, k: int) -> list:
    e = at.explanatory[k]
    tot = at.metadata.variable(e).totcode
    hs = (at.table.hierarchies or {}).get(e)
    h = hs[0] if hs else None
    if h is not None:
        return [tot] + [c for c in _depth_first(h) if c != h.total]
    return [tot] + list(at.table.coords[e])


def _depth_first(h) -> list:
    out = []

    def walk(c):
        out.append(c)
        for ch in h.children(c):
            walk(ch)
    walk(h.total)
    return out


def write_argus_output(at: ArgusTable, release, status, path, kind: int = 3,
                       options=None) -> str:
    """A protected table as tau-Argus writes it (``<WRITETABLE>`` types 1, 2 and 3).

    Type 2 (pivot) and 3 (code-value): one line per cell, codes then value, ``x`` for a
    suppressed cell and ``-`` for an empty one (libtauargus ``WriteCellRecord``); with
    ``add_status`` the value is always shown and tau-Argus's status number follows
    (:data:`ARGUS_STATUS_NUMBERS`).  Type 1: the table as a grid, one block per layer.

    Parameters
    ----------
    at : ArgusTable
        The table.
    release : rk.TableSetRelease
        Its protection (NaN = suppressed).
    status : array of str
        riskengine status per cell.
    path : str or os.PathLike or None
        Written atomically; None returns the text only.
    kind : {1, 2, 3}
        tau-Argus's output type.
    options : dict, optional
        ``add_status``, ``suppress_empty``, ``names_first_line``, ``quotes`` (as
        :func:`riskengine._formats.arb.read_arb` gives them).

    Returns
    -------
    str
        The file's text.
    """
    opts = {"add_status": False, "suppress_empty": False, "names_first_line": kind == 2,
            "quotes": True}
    opts.update(options or {})
    if kind not in (1, 2, 3):
        raise ValueError(f"tau-Argus output type {kind}: riskengine writes types 1 (CSV), "
                         "2 (CSV for pivot tables) and 3 (code-value); types 4-7 (SBS, "
                         "intermediate, JJ, CKM) are not written here (JJ: write_jj)")
    pos, ids = at.code_index()
    dims = at.explanatory
    reasons = release.info.get("reason")
    resp = at.table.name
    dec = max(at.metadata.variable(resp).decimals, 0) if resp else 0
    q = '"' if opts["quotes"] else ""
    x = at.vector("value", 0.0)
    freq = at.vector("freq", np.nan) if "freq" in at.cells else None
    orders = [_code_order(at, k) for k in range(len(dims))]

    def cell_text(j, show):
        st = status[j]
        if st == "empty" and not opts["add_status"]:
            return "-"
        if st in ("primary", "secondary") and not show:
            return "x"
        return f"{x[j]:.{dec}f}"

    lines = []
    if kind in (2, 3):
        if opts["names_first_line"]:
            head = [f"{q}{e}{q}" for e in dims] + [f"{q}{resp or 'Freq'}{q}"]
            if opts["add_status"]:
                head.append(f"{q}Status{q}")
            lines.append(",".join(head))
        for combo in itertools.product(*orders):
            j = int(ids[tuple(pos[k][c] for k, c in enumerate(combo))])
            if opts["suppress_empty"] and freq is not None and freq[j] == 0:
                continue
            row = [f"{q}{c}{q}" for c in combo] + [cell_text(j, opts["add_status"])]
            if opts["add_status"]:
                row.append(str(ARGUS_STATUS_NUMBERS[_argus_status(status[j], reasons,
                                                                  j)]))
            lines.append(",".join(row))
    else:
        *layers, rows, cols = range(len(dims)) if len(dims) >= 2 else (None, 0)
        for lay in itertools.product(*[orders[k] for k in layers]):
            if layers:
                lines.append(", ".join(f"Var {k + 1},{q}{c}{q}" for k, c in
                                       zip(layers, lay)))
            lines.append("," + ",".join(f"{q}{c}{q}" for c in orders[cols]))
            for r in (orders[rows] if rows is not None else [None]):
                vals = []
                for c in orders[cols]:
                    combo = list(lay) + ([r] if rows is not None else []) + [c]
                    j = int(ids[tuple(pos[k][cc] for k, cc in enumerate(combo))])
                    vals.append(cell_text(j, False))
                lines.append(("" if r is None else f"{q}{r}{q}") + "," + ",".join(vals))
            lines.append("")
    text = "\n".join(lines) + "\n"
    if path is not None:
        atomic_write_text(path, text)
    return text


def _argus_status(st, reasons, j) -> str:
    if st == "primary" and reasons is not None:
        return {"frequency": "primary_frequency", "rule": "primary",
                "request": "primary_request", "zero": "primary_zero",
                "status": "primary_manual"}.get(reasons[j], "primary")
    return st if st in ARGUS_STATUS_NUMBERS else "safe"


@dataclass
class BatchResult:
    """What :func:`run_batch` did.

    Parameters
    ----------
    tables : list of ArgusTable
        The tables read, in order (``<SPECIFYTABLE>`` order).
    releases : dict
        Table number (1-based) -> (release, status) after ``<SUPPRESS>``.
    audits : dict
        Table number -> the audit Dataset of its pattern.
    written : list of pathlib.Path
        Files written.
    notes : list of str
        Where riskengine differs from tau-Argus on this job.
    rules : dict
        Table number -> the safety rules it was protected by.
    """

    tables: list = field(default_factory=list)
    releases: dict = field(default_factory=dict)
    audits: dict = field(default_factory=dict)
    written: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    rules: dict = field(default_factory=dict)


def run_batch(source, out_dir=None, progress=None) -> BatchResult:
    """Run a tau-Argus batch file: the commands riskengine implements, in order; the
    others are refused by name before any work starts.

    Parameters
    ----------
    source : str or os.PathLike
        The ``.arb`` file.
    out_dir : str or os.PathLike, optional
        Where relative output names go (default: next to the batch file, as tau-Argus).
    progress : callable, optional
        Called with a one-line message per command.

    Returns
    -------
    BatchResult
    """
    from ._formats.arb import read_arb

    batch = read_arb(source)
    say = progress or (lambda m: None)
    for c in batch.commands:
        if c.keyword in REFUSED:
            raise FormatError(batch.name, c.line, f"{c.keyword} is not run by riskengine: "
                              f"{REFUSED[c.keyword]}")
        if c.keyword == "<SUPPRESS>" and c.args["method"] not in _METHODS:
            raise FormatError(batch.name, c.line, f"<SUPPRESS> {c.args['method']} is not run "
                              "by riskengine from a batch file (it runs MOD, GH, NET as its "
                              "heuristic and OPT as its optimal suppression)")
    res = BatchResult()
    out = Path(out_dir) if out_dir is not None else batch.directory or Path(".")
    data = meta = None
    specs = []
    for c in batch.commands:
        a = c.args
        if c.keyword == "<GOINTERACTIVE>":
            res.notes.append(f"line {c.line}: <GOINTERACTIVE> ends the job")
            break
        if c.keyword in ("<OPENTABLEDATA>", "<OPENMICRODATA>"):
            data = batch.resolve(a["file"])
        elif c.keyword == "<OPENMETADATA>":
            meta = batch.resolve(a["file"])
        elif c.keyword == "<SPECIFYTABLE>":
            specs.append({"spec": a, "rules": [], "data": data, "meta": meta})
        elif c.keyword == "<SAFETYRULE>":
            specs[-1]["rules"] = a["rules"]
        elif c.keyword == "<READTABLE>":
            add = {0: "check", 1: "compute"}.get(a["additivity"])
            if add is None:
                raise FormatError(batch.name, c.line, "<READTABLE> 2 (no additivity) is "
                                  "not run: suppression and audit need a table that adds up")
            for sp in specs[len(res.tables):]:
                sa = sp["spec"]
                at = read_argus(sp["meta"], sp["data"], explanatory=sa["explanatory"],
                                response=sa["response"], additivity=add)
                res.tables.append(at)
                sp["table"] = at
                say(f"read table {len(res.tables)}: {' x '.join(sa['explanatory'])}, "
                    f"{at.system.n_var} cells")
        elif c.keyword == "<READMICRODATA>":
            from ._argus_micro import argus_microdata
            for sp in specs[len(res.tables):]:
                sa = sp["spec"]
                at, sv = argus_microdata(sp["meta"], sp["data"], sa["explanatory"],
                                         response=sa["response"], shadow=sa["shadow"],
                                         rules=sp["rules"] or None)
                res.tables.append(at)
                sp["table"], sp["sensitivity"] = at, sv
                say(f"tabulated table {len(res.tables)} from microdata: "
                    f"{' x '.join(sa['explanatory'])}, {at.system.n_var} cells, "
                    f"{int(np.asarray(sv[0]).sum())} unsafe by the rules")
        elif c.keyword == "<APRIORI>":
            from ._formats.argus import _apply_apriori
            from ._formats.hst import read_hst
            k = a["table"]
            if k > len(res.tables):
                raise FormatError(batch.name, c.line, f"table {k}: only {len(res.tables)} "
                                  "tables are read")
            at = res.tables[k - 1]
            ap = read_hst(batch.resolve(a["file"]), n_dims=len(at.explanatory),
                          separator=a["separator"])
            pos, ids = at.code_index()
            cells = _apply_apriori(at.cells, ap, at.explanatory, pos, ids, a["file"])
            res.tables[k - 1] = ArgusTable(at.table, cells, at.metadata, at.response,
                                           at.explanatory, ap)
            specs[k - 1]["table"] = res.tables[k - 1]
        elif c.keyword == "<SUPPRESS>":
            ks = range(1, len(res.tables) + 1) if a["table"] == 0 else [a["table"]]
            method = _METHODS[a["method"]]
            tl = a["params"][0] if a["method"] == "OPT" and a["params"] else None
            if a["method"] != "OPT":
                res.notes.append(f"line {c.line}: {a['method']} run as riskengine's heuristic "
                                 "suppression of every level at once (its pattern differs "
                                 "from tau-Argus's)")
            if a["table"] == 0 and len(ks) > 1:
                names = {k: f"T{k}" for k in ks}
                say(f"suppressing tables {', '.join(map(str, ks))} together (linked, "
                    f"{method})")
                sv = {names[k]: specs[k - 1].get("sensitivity") for k in ks
                      if specs[k - 1].get("sensitivity") is not None}
                rl = {names[k]: specs[k - 1]["rules"] for k in ks
                      if specs[k - 1].get("sensitivity") is None}
                joint, ds, per = protect_argus_linked(
                    {names[k]: res.tables[k - 1] for k in ks}, rl, method=method,
                    time_limit=tl * 60 if tl else None, sensitivities=sv)
                res.notes.append(f"line {c.line}: linked tables protected together: one "
                                 "system over every cell of every table (a shared cell is "
                                 "one unknown), audited jointly")
                for k in ks:
                    res.releases[k] = per[names[k]]
                    res.rules[k] = specs[k - 1]["rules"]
                    res.audits[k] = ds
                res.audits[0] = ds
                say(f"linked tables: {int(joint.hidden.sum())} cells suppressed, "
                    f"{ds.attrs.get('n_under_protected', 0)} under-protected")
                continue
            for k in ks:
                at = res.tables[k - 1]
                say(f"suppressing table {k} ({method})")
                sv = specs[k - 1].get("sensitivity")
                rules = None if sv is not None else specs[k - 1]["rules"]
                rel, st = protect_argus(at, rules, method=method,
                                        time_limit=tl * 60 if tl else None,
                                        cost=specs[k - 1]["spec"]["cost"], sensitivity=sv)
                res.releases[k] = (rel, st)
                res.rules[k] = specs[k - 1]["rules"]
                res.audits[k] = audit_argus(at, rel, rules, sensitivity=sv)
                say(f"table {k}: {int((st == 'primary').sum())} primary, "
                    f"{int((st == 'secondary').sum())} secondary suppressions")
        elif c.keyword == "<WRITETABLE>":
            k = a["table"]
            if k not in res.releases:
                raise FormatError(batch.name, c.line, f"table {k} has not been protected "
                                  "(<SUPPRESS>) before <WRITETABLE>")
            if a["type"] not in (1, 2, 3, 6):
                raise FormatError(batch.name, c.line, f"output type {a['type']} "
                                  f"({a['format']}) is not written by riskengine (types 1-3 "
                                  "and 6, JJ)")
            p = Path(a["file"])
            if not p.is_absolute() and not any(ch in a["file"] for ch in ":/\\"):
                p = out / p
            rel, st = res.releases[k]
            if a["type"] == 6:
                from ._formats.jj import write_jj
                sv = specs[k - 1].get("sensitivity")
                write_jj(to_jj(res.tables[k - 1], rel, st,
                               None if sv is not None else res.rules.get(k),
                               sensitivity=sv), p)
            else:
                write_argus_output(res.tables[k - 1], rel, st, p, kind=a["type"],
                                   options=a["options"])
            res.written.append(p)
            say(f"wrote {p}")
        elif c.keyword == "<SOLVER>":
            res.notes.append(f"line {c.line}: solver {a['solver']} asked; riskengine solves "
                             "with HiGHS")
    return res


def to_jj(at: ArgusTable, release, status, rules=None, bounds=None, sensitivity=None):
    """A protected tau-Argus table as a JJ file's content: every published cell (system
    order), its value, cost, status (``s``, ``u``, ``m``, ``z``), a-priori bounds and
    protection levels, and the table's relations (each subtotal = the sum of its cells).

    Parameters
    ----------
    at : ArgusTable
        The table.
    release : rk.TableSetRelease
        Its pattern.
    status : array of str
        riskengine status per cell.
    rules : list of (name, parameters), optional
        The safety rules: the protection levels of the primary cells.
    bounds : (lower, upper), optional
        A-priori bounds per cell (default ``0`` and the grand total: what anybody knows
        of a nonnegative table, narrowed by the apriori file's AB lines).
    sensitivity : tuple, optional
        ``(sensitive, lower, upper, reason)`` computed elsewhere (see
        :func:`protect_argus`), instead of ``rules``.

    Returns
    -------
    riskengine._formats.jj.JJ
        Write it with :func:`riskengine.write_jj`.
    """
    from ._formats.jj import JJ
    from ._formats.status import to_letters

    s = at.system
    pub = np.flatnonzero(s.published)
    new = -np.ones(s.n_var, np.int64)
    new[pub] = np.arange(pub.size)
    x = at.vector("value", 0.0)
    _, low, up, _ = _given_or_rules(at, rules, sensitivity)
    costs = _costs(at, None)
    cost = np.abs(x) if costs is None else costs
    if bounds is None:
        lb, ub = np.zeros(s.n_var), np.full(s.n_var, float(np.abs(x).max()))
        known = _apriori_bounds(at)          # apriori AB lines: the intruder's knowledge
        if known is not None:
            lb, ub = np.maximum(lb, known[0]), np.minimum(ub, known[1])
    else:
        lb, ub = (np.broadcast_to(np.asarray(b, float), (s.n_var,)) for b in bounds)
    A = s.A.tocsr()
    rel = []
    for r in range(A.shape[0]):
        idx = A.indices[A.indptr[r]:A.indptr[r + 1]]
        val = A.data[A.indptr[r]:A.indptr[r + 1]]
        if np.any(new[idx] < 0):
            raise ValueError("the table's system has cells no table publishes: a JJ file "
                             "holds published cells only")
        if not np.all(np.isin(val, (-1.0, 1.0))):
            raise ValueError("a relation with coefficients other than +-1 cannot be written "
                             "to a JJ file")
        rel.append((0.0, new[idx], val.astype(np.int8)))
    letters = np.array(to_letters([str(v) for v in np.asarray(status)[pub]], "jj"))
    prim = np.asarray(status)[pub] == "primary"
    return JJ(value=x[pub], cost=cost[pub], status=letters, lower=lb[pub], upper=ub[pub],
              lower_pl=np.where(prim, low[pub], 0.0), upper_pl=np.where(prim, up[pub], 0.0),
              sliding_pl=np.zeros(pub.size), relations=tuple(rel))


def audit_jj(jj):
    """The audit of a JJ file's pattern: the feasible interval of every suppressed cell
    (status ``u``, ``m`` or ``x``) given every other cell, the relations and each cell's
    a-priori bounds; exact disclosure; and, for primary cells, whether their protection
    levels are reached (the file's values are the true ones: a JJ file is the input of a
    suppression solver).

    Parameters
    ----------
    jj : riskengine._formats.jj.JJ or str or os.PathLike
        A JJ object or file.

    Returns
    -------
    xarray.Dataset
        Over ``cell`` (the file's cell index): ``value``, ``status``, ``suppressed``,
        ``lower``, ``upper``, ``width``, ``exact``, ``sensitive``, ``protection_lower``,
        ``protection_upper``, ``room_below``, ``room_above``, ``under_protected``;
        ``attrs``: the counts (``n_suppressed``, ``n_exact``, ``n_under_protected``).
    """
    import xarray as xr

    from ._formats.jj import JJ, read_jj
    from .magnitude.bounded import bounded_intervals

    if not isinstance(jj, JJ):
        jj = read_jj(jj)
    st = np.asarray(jj.status).astype(str)
    hidden = np.isin(st, ("u", "m", "x"))
    x = np.where(hidden, np.nan, jj.value)
    lo, hi, tol = bounded_intervals(jj.to_matrix(), jj.rhs, x, jj.lower, jj.upper)
    width = hi - lo
    exact = hidden & (width <= tol)
    sens = st == "u"
    below, above = jj.value - lo, hi - jj.value
    under = sens & ((below < jj.lower_pl - tol) | (above < jj.upper_pl - tol))
    ds = xr.Dataset({"value": ("cell", jj.value), "status": ("cell", st),
                     "suppressed": ("cell", hidden), "lower": ("cell", lo),
                     "upper": ("cell", hi), "width": ("cell", width),
                     "exact": ("cell", exact), "sensitive": ("cell", sens),
                     "protection_lower": ("cell", np.asarray(jj.lower_pl, float)),
                     "protection_upper": ("cell", np.asarray(jj.upper_pl, float)),
                     "room_below": ("cell", below), "room_above": ("cell", above),
                     "under_protected": ("cell", under)},
                    coords={"cell": np.arange(jj.n_cells)})
    ds.attrs.update({"method": "LP interval audit (HiGHS) of a JJ file: min/max of each "
                     "suppressed cell over its relations and a-priori bounds, the other "
                     "cells fixed", "n_suppressed": int(hidden.sum()),
                     "n_exact": int(exact.sum()), "n_sensitive": int(sens.sum()),
                     "n_under_protected": int(under.sum())})
    return ds


def protect_argus_linked(tables, rules=None, method: str = "heuristic",
                         time_limit: float | None = None, sensitivities=None):
    """Complementary suppression of several tau-Argus tables of one population at once
    (tau-Argus's linked tables, ``<SUPPRESS> MOD(0)``): one system over every cell of
    every table, a cell two tables share is one unknown, so no pattern of one table can
    be undone by differencing with another (protecting them one by one can be; issue 28,
    sdcTools/UserSupport #136).

    Parameters
    ----------
    tables : dict
        ``{name: ArgusTable}``.
    rules : dict, optional
        ``{name: safety rules}`` (see :func:`argus_sensitivity`).
    method : {"heuristic", "optimal"}
        riskengine's suppression method.
    time_limit : float, optional
        Seconds for the optimal method.
    sensitivities : dict, optional
        ``{name: (sensitive, lower, upper, reason)}`` computed elsewhere (microdata).

    Returns
    -------
    joint : rk.TableSetRelease
        The pattern over the set's system.
    audit : xarray.Dataset
        The joint audit (every table's equations at once).
    per_table : dict
        ``{name: (release, status)}``: each table's view of the joint pattern, for its
        output files.
    """
    from .magnitude.audit import audit
    from .mechanisms.suppression import suppress
    from .table_set import TableSet, TableSetRelease

    rules, sensitivities = dict(rules or {}), dict(sensitivities or {})
    ts = TableSet({name: at.table for name, at in tables.items()})
    s = ts.system
    n = s.n_var
    sens, low, up = np.zeros(n, bool), np.zeros(n), np.zeros(n)
    forced, frozen = np.zeros(n, bool), np.zeros(n, bool)
    maps = {}
    for name, at in tables.items():
        own = at.system
        _, _, ids = s.grids[name]
        _, _, own_ids = own.grids[next(iter(own.grids))]
        ok = (ids >= 0) & (own_ids >= 0)
        m = np.full(own.n_var, -1, np.int64)
        m[own_ids[ok]] = ids[ok]
        maps[name] = m
        k_sens, k_low, k_up, _ = _given_or_rules(at, rules.get(name), sensitivities.get(name))
        has = m >= 0
        j = m[has]
        sens[j] |= k_sens[has]
        np.maximum.at(low, j, np.where(k_sens[has], k_low[has], 0.0))
        np.maximum.at(up, j, np.where(k_sens[has], k_up[has], 0.0))
        forced[j] |= at.status_mask("secondary")[has]
        frozen[j] |= at.status_mask("forced_safe")[has]
    if np.any(sens & frozen):
        j = int(np.argmax(sens & frozen))
        raise ValueError(f"{s.labels()[j]} is unsafe and protected at once")
    joint = suppress(ts, sens, (low, up), method=method, time_limit=time_limit,
                     forced=forced if forced.any() else None,
                     frozen=frozen if frozen.any() else None)
    ds = audit(joint, sens, (low, up), table=ts)
    per_table = {}
    for name, at in tables.items():
        m = maps[name]
        hid = np.zeros(at.system.n_var, bool)
        hid[m >= 0] = joint.hidden[m[m >= 0]]
        own_ts = TableSet({at.table.name or "table": at.table})
        rel = TableSetRelease(own_ts, np.where(hid | ~at.system.published, np.nan,
                                               at.vector("value", 0.0)),
                              joint.mechanism.base if hasattr(joint.mechanism, "base")
                              else joint.mechanism,
                              info={"linked": list(tables)})
        k_sens = np.zeros(at.system.n_var, bool)
        k_sens[m >= 0] = sens[m[m >= 0]]
        per_table[name] = (rel, _statuses(at, k_sens, hid))
    return joint, ds, per_table
