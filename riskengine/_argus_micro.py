"""tau-Argus tables from microdata: an ``.rda`` + ``.asc`` microdata file (and the ``.hrc``
files the rda names) tabulated the way libtauargus tabulates them, into the same
:class:`~riskengine._formats.argus.ArgusTable` that :func:`~riskengine.read_argus` builds
from a ``.tab`` file, with the sensitivity of every cell computed from its contributions.

What is mirrored (libtauargus ``src/TauArgus.cpp``, ``src/Table.cpp``,
``src/DataCell.cpp``; tau-Argus ``TableService.java``, ``TableSet.java``):

* **tabulation** (``TauArgus::FillTables``, ``AddTableCells``, ``AddTableCell``): every
  record adds to its cell and to every (sub)total above it; the cell value is the sum of
  the response (``Resp``), times the record's weight when the table is weighted
  (``WGT(1)``: ``ApplyWeight``); a frequency table (no response) adds 1 (its weight when
  weighted) per record; ``Freq`` counts records, unweighted; the largest contributions
  (``MaxScoreCell``) are the *unweighted absolute* values of the shadow variable (the
  response unless ``shadow=`` names another);
* **codes**: a code of a hierarchical variable with an ``.hrc`` file must be one of its
  codes (``TauArgus::DoMicroRecord``: ``CODENOTINCODELIST``); a missing code is one more
  code under the total (``SetTotalsInCodeList``); other variables' code lists are the
  codes seen, sorted (``AddCode``, ``BinSearchStringArray``), missing codes last;
* **holdings** (``FillTables``: ``CurrentHoldingNr`` grows when the holding code differs
  from the previous record's): a holding is a run of consecutive records; here a holding
  code met again after another holding is refused (tau-Argus would silently count it as a
  second holding: sort the file by holding).  Holdings are applied only when a holding
  rule is given (``TableSet.holding``), and never with weights
  (``TauArgus::SetTableSafety`` returns false);
* **rules** (``CTable::ComputeCellSafeCode``): an empty cell is empty; else dominance /
  p% (individual, then holdings) -> unsafe by rule; else the request rule
  (``UnsafeCellPeep``) -> unsafe by request; else the minimum frequency
  (``UnsafeCellMinRec``: records and holdings, or the sum of the weights when weighted,
  the minimum frequency being 1 when no FREQ rule is given) -> unsafe by frequency; else
  the zero rule -> unsafe by zero; ``MIS(1)``: a cell with a missing code is safe
  (``TauArgus::ComputeCellStatuses``);
* **protection levels** (``CTable::SetProtectionLevelCell``): a cell unsafe by rule needs
  ``Distance = max over the failing rules of (100/k * top_n)`` or
  ``(p/q * x_1 + top_(n+1))``, minus the shadow total, i.e. the rules' protection, as a
  share ``Distance / Shadow`` of ``|Resp|``; unsafe by request: ``|Resp|`` times the
  request rule's range (the larger of the individual and holding ranges); by frequency:
  ``|Resp|`` times the FREQ range (with holdings the larger of the two ranges,
  ``TableService.java``); at least ``MinLPL`` (10^-decimals of the response, 1 for a
  frequency table); a cell of value 0 with records needs the zero rule's range above and
  nothing below.

Differences from tau-Argus, on purpose: the protection below a cell is capped at its
value (riskengine's nonnegative tables, as :func:`riskengine._batch.argus_sensitivity`);
a cell of value 0 that is unsafe gets ``MinLPL`` above it when no zero range is given
(tau-Argus: 0); negative contributions are ranked by absolute value and the rules'
total is the sum of absolute values (``contributions(negative="absolute")``), tau-Argus
adds the signed shadow; a record with a missing response or weight is refused (tau-Argus
adds the missing code as a number); a table whose finest cells sum to a negative value is
refused (an ``rk.Table`` holds nonnegative values).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ._formats._lines import FormatError
from ._formats.argus import ArgusTable, _hierarchy
from ._formats.asc import read_asc
from ._formats.rda import read_rda
from .magnitude.argus_rules import parse_safety_rule
from .magnitude.contributions import contributions
from .magnitude.sensitivity import PQ, Dominance, Frequency, Holdings, Request, Zero, assess
from .table import Table

__all__ = ["argus_microdata", "rules_text", "with_sensitivity"]

_FREQ_COL = "<FREQ>"          # tau-Argus's name of the frequency "response"
_VALUE, _WEIGHT, _HOLD, _REQ = "__value__", "__weight__", "__holding__", "__request__"
_MANUAL_DEFAULT = 20          # TableSet.manualMarge


def rules_text(rules) -> str:
    """Safety rules as the text of a ``<SAFETYRULE>``.

    Parameters
    ----------
    rules : str or sequence of (name, parameters)
        ``[("NK", (3.0, 75.0)), ("FREQ", (3.0, 10.0))]`` (the batch-file form,
        :func:`riskengine._formats.arb.read_arb`), or the text itself.

    Returns
    -------
    str
        E.g. ``"NK(3,75)|FREQ(3,10)"``.

    Examples
    --------
    >>> rules_text([("NK", (3.0, 75.0)), ("FREQ", (3.0, 10.0)), ("WGT", (1.0,))])
    'NK(3,75)|FREQ(3,10)|WGT(1)'
    """
    if isinstance(rules, str):
        return rules
    parts = []
    for item in rules:
        try:
            name, params = item
        except (TypeError, ValueError):
            raise ValueError(f"a rule is (name, parameters), e.g. ('NK', (3, 75)); got "
                             f"{item!r}") from None
        if isinstance(params, (int, float)):
            params = (params,)
        parts.append(f"{str(name).upper()}(" + ",".join(f"{float(v):g}" for v in params)
                     + ")")
    return "|".join(parts)


def _run_ids(codes, lines, name, var) -> np.ndarray:
    """tau-Argus's holding numbers: a new one whenever the code changes
    (``FillTables``: ``CurrentHoldingNr``); a code met again later is refused."""
    ids = np.zeros(len(codes), np.int64)
    seen, last, run = {}, object(), -1
    for i, c in enumerate(codes):
        if c != last:
            if c in seen:
                raise FormatError(name, int(lines[i]), f"holding {c!r} ({var}) is met again "
                                  f"after other holdings (first run at line {seen[c]}): "
                                  "tau-Argus numbers holdings by runs of consecutive records "
                                  "(TauArgus::FillTables) and would count it twice; sort the "
                                  "file by holding")
            run += 1
            seen[c] = int(lines[i])
            last = c
        ids[i] = run
    return ids


def _number_column(frame, var, name, what) -> np.ndarray:
    """A numeric variable's values (NaN refused with the record's line)."""
    col = frame[var.name]
    lines = frame["line"].to_numpy()
    if col.dtype == object:                 # a numeric code variable read as text
        vals = pd.to_numeric(col.str.strip(), errors="coerce").to_numpy(float)
        bad = np.flatnonzero(np.isnan(vals) & ~col.str.strip().isin(
            [m.strip() for m in var.missing]).to_numpy())
        if bad.size:
            i = int(bad[0])
            raise FormatError(name, int(lines[i]), f"{what} {var.name} {col.iloc[i]!r} is "
                              "not a number")
        miss = np.flatnonzero(np.isnan(vals))
    else:
        vals = col.to_numpy(float)
        miss = np.flatnonzero(np.isnan(vals))
    if miss.size:
        i = int(miss[0])
        raise FormatError(name, int(lines[i]), f"{what} {var.name} has a missing value "
                          f"(code {var.missing}): tau-Argus would add the missing code as "
                          "a number (TauArgus::FillTables reads it with atof); remove or "
                          "impute the record")
    return vals


def _explanatory(meta, frame, expl, base, name):
    """``(hierarchies, leaves, coded var)`` of every dim; unknown codes refused."""
    hier, leaves, coded = {}, {}, {}
    lines = frame["line"].to_numpy()
    for e in expl:
        var = meta.variable(e)
        width = var.width or 0
        # tau-Argus compares missing codes left-padded to the width (normaliseMissing)
        var = dataclasses.replace(var, missing=tuple(m.rjust(width) for m in var.missing))
        col = frame[var.name].tolist()
        miss = set(var.missing)
        # the code list as tau-Argus sorts it: codes, then the missing codes
        seen = sorted({c for c in col if c not in miss}) + \
            [m for m in var.missing if m in set(col)]
        h, lv = _hierarchy(var, seen, base, meta.name)
        known = set(lv)
        for i, c in enumerate(col):
            if c in known:
                continue
            if c == var.totcode or c.strip() == var.totcode.strip():
                why = "is the total code: a record belongs to a code below the total"
            elif h is not None and c in h:
                why = ("is a subtotal of the hierarchy, not one of its lowest codes (a record "
                       "belongs to a lowest code)")
            elif var.hierlevels:
                why = (f"does not have the {sum(var.hierlevels)} digits of the levels "
                       f"{var.hierlevels}")
            else:
                why = (f"is not in the hierarchy file {var.hiercodelist!r} (tau-Argus "
                       "TauArgus::DoMicroRecord: CODENOTINCODELIST)")
            raise FormatError(name, int(lines[i]), f"code {c!r} of variable {e!r} {why}")
        if h is not None:
            hier[e] = h
        leaves[e] = lv
        coded[e] = var
    return hier, leaves, coded


def _top(c, k) -> np.ndarray:
    """The ``k`` largest contributions of every cell (0 where fewer)."""
    n = c.n_cells
    out = np.zeros((n, k))
    start, end = c.offsets[:-1], c.offsets[1:]
    for j in range(k):
        idx = start + j
        ok = idx < end
        out[ok, j] = c.values[idx[ok]]
    return out


def _check_order(ds, s, expl) -> None:
    """``assess`` gives the cells in the system's order: checked code by code."""
    for e in expl:
        want = s.cells[e].astype(str).to_numpy()
        got = np.asarray(ds[e].values).astype(str)
        if want.shape != got.shape or not np.array_equal(want, got):
            raise AssertionError(f"the sensitivity's cells are not in the table system's "
                                 f"order (dim {e!r})")


def argus_microdata(rda, asc, explanatory, response=None, shadow=None, rules=None, *,
                    top: int | None = None, encoding: str = "latin-1") -> tuple:
    """A tau-Argus table tabulated from microdata, with the sensitivity of every cell
    computed from its contributions.

    Parameters
    ----------
    rda : str or os.PathLike
        The microdata metadata (``.hrc`` files it names are looked up next to it).
    asc : str or os.PathLike
        The microdata (fixed width, or separated when the rda has ``<SEPARATOR>``).
    explanatory : sequence of str
        The table's dims (``<RECODEABLE>`` variables).
    response : str, optional
        The ``<NUMERIC>`` response; None: a frequency table (tau-Argus ``<FREQ>``): the
        number of records of every cell, the sum of their weights under ``WGT(1)``.
    shadow : str, optional
        The variable the safety rules judge (tau-Argus's shadow; default the response).
    rules : str or sequence of (name, parameters), optional
        tau-Argus safety rules (``[("NK", (3.0, 75.0)), ("FREQ", (3.0, 10.0)),
        ("WGT", (1.0,))]`` or ``"NK(3,75)|FREQ(3,10)|WGT(1)"``).  ``WGT(1)`` weights the
        table with the rda's ``<WEIGHT>`` variable; holding rules (3rd/4th NK or P, 2nd
        FREQ or REQ) use its ``<HOLDING>`` variable; ``REQ`` its ``<REQUEST>`` variable.
        None: no cell is sensitive.
    top : int, optional
        How many largest contributions every cell shows (``top1``...); default: as many
        as the rules read (at least 1 for a magnitude table, none for a frequency table).
    encoding : str, default "latin-1"
        Of every file.

    Returns
    -------
    table : ArgusTable
        ``cells`` in the order of ``table.system()``: the codes of every dim, ``value``
        (the weighted cell value), ``freq`` (records), ``top1``... (the largest
        unweighted absolute contributions of the shadow), ``shadow`` (when a shadow other
        than the response is given: the weighted sum of its absolute values), ``weight``
        (the sum of the weights, when weighted), ``holding_freq`` (holdings, when holding
        rules apply), ``status`` ("safe" or "empty"), ``status_code`` (None), ``line``
        (-1).
    sensitivity : tuple
        ``(sensitive, lower, upper, reason)`` over the system's cells: boolean, the
        protection below and above each sensitive cell (0 elsewhere), and the reason
        (``"rule"``, ``"request"``, ``"frequency"``, ``"zero"`` or None).

    Raises
    ------
    FormatError
        A malformed file, a code not in its hierarchy (naming the record's line), a
        missing response or weight, a holding met in two runs.
    ValueError
        A response that is not numeric, rules the data cannot support (weights with
        holdings, a holding rule without a ``<HOLDING>`` variable, ``WGT(1)`` without a
        ``<WEIGHT>`` variable, ``REQ`` without a ``<REQUEST>`` variable, dominance / p%
        / request rules on a frequency table), a negative cell.
    """
    meta = read_rda(rda, encoding=encoding, kind="micro")
    frame = read_asc(asc, meta, encoding=encoding)
    name = str(asc) if isinstance(asc, os.PathLike) or (
        isinstance(asc, str) and "\n" not in asc and Path(asc).is_file()) else "<text>"
    base = Path(rda).parent if isinstance(rda, (str, Path)) and "\n" not in str(rda) \
        and Path(rda).is_file() else None
    if isinstance(explanatory, str):
        explanatory = (explanatory,)
    expl = tuple(explanatory)
    if not expl:
        raise ValueError("a table needs at least one explanatory variable")
    if len(set(expl)) != len(expl):
        raise ValueError(f"explanatory variables must be distinct, got {expl}")
    for e in expl:
        v = meta.variable(e)
        if "recodeable" not in v.roles:
            raise ValueError(f"variable {e!r} is not explanatory (<RECODEABLE>) in "
                             f"{meta.name}")
    if len(frame) == 0:
        raise FormatError(name, None, "no record: the microdata file is empty")
    lines = frame["line"].to_numpy()

    # --- the rules and what they need ------------------------------------------------
    sr = parse_safety_rule(rules_text(rules)) if rules else None
    weighted = bool(sr and sr.weighted)
    holding_rules = bool(sr and sr.holding)
    count_table = response is None
    if count_table and shadow is not None:
        raise ValueError("a frequency table has no shadow variable")
    if sr is not None and count_table:
        bad = [r for r in sr.individual + sr.holding
               if isinstance(r, (Dominance, PQ, Request))]
        if bad:
            raise ValueError(f"rule {bad[0].describe()} needs a response: a frequency "
                             "table (response None) takes the FREQ (and ZERO) rules only")
    if weighted and meta.weight is None:
        raise ValueError(f"WGT(1) weights the table, but {meta.name} has no <WEIGHT> "
                         "variable")
    if holding_rules and meta.holding is None:
        raise ValueError(f"holding rules ({', '.join(r.describe() for r in sr.holding)}) "
                         f"need a <HOLDING> variable; {meta.name} has none")
    if weighted and holding_rules:
        raise ValueError("weights (WGT(1)) and holding rules cannot be combined: tau-Argus "
                         "refuses them together (TauArgus::SetTableSafety)")
    needs_request = bool(sr) and any(
        isinstance(r, Request) or (isinstance(r, Holdings) and isinstance(r.rule, Request))
        for r in sr.individual + [Holdings(h) for h in sr.holding])
    if needs_request and not meta.request:
        raise ValueError(f"the request rule (REQ) needs a <REQUEST> variable; {meta.name} "
                         "has none")

    # --- the response (and shadow) -----------------------------------------------------
    if not count_table:
        rvar = meta.variable(response)
        if "numeric" not in rvar.roles:
            raise ValueError(f"response {response!r} is not numeric (<NUMERIC>) in "
                             f"{meta.name}")
        if rvar.name in expl:
            raise ValueError(f"response {response!r} is also an explanatory variable")
        resp = _number_column(frame, rvar, name, "response")
        response = rvar.name
    else:
        rvar = None
        resp = np.ones(len(frame))
    if shadow is not None:
        svar = meta.variable(shadow)
        if "numeric" not in svar.roles:
            raise ValueError(f"shadow {shadow!r} is not numeric (<NUMERIC>) in {meta.name}")
        shadow = svar.name
        if shadow == response:
            shadow = None
    shad = _number_column(frame, meta.variable(shadow), name, "shadow") \
        if shadow is not None else None

    # --- dims and the table system ---------------------------------------------------
    hier, leaves, coded = _explanatory(meta, frame, expl, base, name)
    margins = [c for r in range(len(expl)) for c in itertools.combinations(expl, r)]
    shape = tuple(len(leaves[e]) for e in expl)
    t0 = Table(np.zeros(shape), dims=expl, coords={e: leaves[e] for e in expl},
               margins=margins, kind="magnitude", hierarchies=hier or None,
               name=response or _FREQ_COL)
    s = t0.system()

    # --- contributions ---------------------------------------------------------------
    data = {e: frame[e].to_numpy(dtype=object) for e in expl}
    kw = {}
    if weighted:
        wvar = meta.weight
        w = _number_column(frame, wvar, name, "weight")
        bad = np.flatnonzero(w <= 0)
        if bad.size:
            i = int(bad[0])
            raise FormatError(name, int(lines[i]), f"weight {wvar.name} is {w[i]:g}: sampling "
                              "weights must be > 0")
        data[_WEIGHT] = w
        kw["weight"] = _WEIGHT
    if holding_rules:
        data[_HOLD] = _run_ids(frame[meta.holding.name].tolist(), lines, name,
                               meta.holding.name)
        kw["holding"] = _HOLD
    if needs_request:
        rq = meta.request[0]
        codes = [c.strip() for c in rq.request_codes]
        if not codes:
            raise ValueError(f"request variable {rq.name!r} has no request codes "
                             "(<REQUEST> \"1\" \"2\")")
        col = frame[rq.name].astype(str).str.strip()
        req = np.zeros(len(frame), np.int64)
        req[col.to_numpy() == codes[0]] = 1
        if len(codes) > 1:
            req[(col.to_numpy() == codes[1]) & (req == 0)] = 2
        data[_REQ] = req
        kw["request"] = _REQ

    def build(values):
        d = dict(data)
        d[_VALUE] = values
        neg = "absolute" if np.any(values < 0) else "refuse"
        return contributions(d, expl, _VALUE, negative=neg, system=s, **kw)

    c_resp = build(resp)
    c_rule = build(shad) if shad is not None else c_resp
    value = np.asarray(c_resp.cell_values(), float)
    interior = value[:s.n_interior].reshape(tuple(s.shape))
    if np.any(interior < 0):
        j = int(np.flatnonzero(interior.reshape(-1) < 0)[0])
        raise ValueError(f"cell {s.labels()[j]} sums to {interior.reshape(-1)[j]:g}: "
                         "riskengine's tables hold nonnegative cells (tau-Argus protects "
                         "negative cells; riskengine's suppression and audit do not)")
    kind = "count" if count_table and np.all(interior == np.round(interior)) else \
        "magnitude"
    t = Table(interior if kind == "magnitude" else interior.astype(np.int64), dims=expl,
              coords={e: list(s.coords[e]) for e in expl}, margins=margins, kind=kind,
              hierarchies=hier or None, name=response or _FREQ_COL)
    s_t = t.system()
    for e in expl:
        if not np.array_equal(s_t.cells[e].astype(str).to_numpy(),
                              s.cells[e].astype(str).to_numpy()):
            raise AssertionError(f"the table's system differs from the tabulated one "
                                 f"(dim {e!r})")
    freq = np.diff(c_resp.offsets) if c_resp.records is None else \
        np.asarray(c_resp.records)
    freq = np.asarray(freq, np.int64)

    # --- the cells -------------------------------------------------------------------
    if top is None:
        need = [r.n_top for r in (sr.individual if sr else [])]
        top = max(need + [0 if count_table else 1])
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top}")
    cells = s.cells[list(expl)].copy().reset_index(drop=True)
    cells["value"] = value
    cells["freq"] = freq
    tp = _top(c_rule, top)
    for k in range(top):
        cells[f"top{k + 1}"] = tp[:, k]
    if shad is not None:
        cells["shadow"] = _rule_total(c_rule)
    if weighted:
        cells["weight"] = np.asarray(c_resp.weight_sums, float)
    if holding_rules:
        cells["holding_freq"] = c_resp.holdings.counts()
    cells["status"] = np.where(freq == 0, "empty", "safe").astype(object)
    cells["status_code"] = None
    cells["line"] = -1
    at = ArgusTable(t, cells, meta, None if count_table else response, expl, None)

    sens = _sensitivity(at, s, c_rule, sr, value, freq, coded, rvar, count_table)
    return at, sens


def _rule_total(c) -> np.ndarray:
    """The rules' total of every cell: the weighted sum of the absolute contributions
    (tau-Argus's ``Shadow``)."""
    cell, _ = c.rank()
    _, width = c.units()
    return np.bincount(cell, weights=c.values * width, minlength=c.n_cells)


def _sensitivity(at, s, c, sr, value, freq, coded, rvar, count_table) -> tuple:
    """tau-Argus's cell statuses and protection levels (see the module notes)."""
    n = s.n_var
    sens = np.zeros(n, bool)
    lower = np.zeros(n)
    upper = np.zeros(n)
    reason = np.array([None] * n, dtype=object)
    if sr is None:
        return sens, lower, upper, reason
    expl = at.explanatory
    minlpl = 1.0 if count_table else 10.0 ** (-max(rvar.decimals, 0))
    resp = np.abs(value)
    shadow_tot = _rule_total(c)
    open_ = (freq > 0) & s.published

    def run(rule):
        ds = assess(c, rule)
        _check_order(ds, s, expl)
        return (np.asarray(ds.sensitive.values, bool),
                np.asarray(ds.protection.values, float))

    ind = [(r, r) for r in sr.individual]
    hold = [(r, Holdings(r)) for r in sr.holding]
    # 1. dominance / p % (CS_UNSAFE_RULE): the largest protection of the failing rules
    dist = np.zeros(n)
    by_rule = np.zeros(n, bool)
    for base, rule in ind + hold:
        if isinstance(base, (Dominance, PQ)):
            sv, pv = run(rule)
            by_rule |= sv
            dist = np.where(sv, np.maximum(dist, pv), dist)
    by_rule &= open_
    # 2. request rule (CS_UNSAFE_PEEP)
    by_req = np.zeros(n, bool)
    req_range = 0.0
    for base, rule in ind + hold:
        if isinstance(base, Request):
            sv, _ = run(rule)
            by_req |= sv
            req_range = max(req_range, base.safety_range)
    by_req &= open_ & ~by_rule
    # 3. minimum frequency (CS_UNSAFE_FREQ); weighted: the sum of the weights, at least 1
    freq_rules = [(b, r) for b, r in ind + hold if isinstance(b, Frequency)]
    if sr.weighted and not any(isinstance(b, Frequency) for b, _ in ind):
        freq_rules.append((None, Frequency(1, safety_range=1.0, weighted=True)))
    by_freq = np.zeros(n, bool)
    # TableSet.frequencyMarge (default 1 %); TableService: the holdings' range when larger
    r_ind = [b.safety_range for b, _ in ind if isinstance(b, Frequency)]
    r_hold = [b.safety_range for b, _ in hold if isinstance(b, Frequency)]
    freq_range = max((r_ind or [1.0]) + r_hold)
    for _, rule in freq_rules:
        sv, _ = run(rule)
        by_freq |= sv
    by_freq &= open_ & ~by_rule & ~by_req
    # 4. zero rule (CS_UNSAFE_ZERO): Resp == 0 with records
    zero_rules = [b for b in sr.individual if isinstance(b, Zero)]
    zero_range = zero_rules[0].safety_range if zero_rules else 0.0
    by_zero = np.zeros(n, bool)
    if zero_rules:
        scale = np.maximum(shadow_tot, 1.0)
        by_zero = open_ & (np.abs(value) <= 1e-12 * scale) & ~by_rule & ~by_req & ~by_freq
    # MIS(1): a cell with a missing code is safe (TauArgus::ComputeCellStatuses)
    if sr.missing_safe:
        has_missing = np.zeros(n, bool)
        for e in expl:
            miss = set(coded[e].missing)
            if miss:
                has_missing |= s.cells[e].isin(miss).to_numpy()
        for a in (by_rule, by_req, by_freq, by_zero):
            a &= ~has_missing
    # protection levels (CTable::SetProtectionLevelCell)
    perc = np.zeros(n)
    man = (sr.manual_margin if sr.manual_margin is not None else _MANUAL_DEFAULT) / 100.0
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(shadow_tot > 0, dist / shadow_tot, man)
    perc = np.where(by_rule, share, perc)
    perc = np.where(by_req, req_range / 100.0, perc)
    perc = np.where(by_freq, freq_range / 100.0, perc)
    sens = by_rule | by_req | by_freq | by_zero
    nonzero = resp > 1e-12 * np.maximum(shadow_tot, 1.0)
    up = np.maximum(resp * perc, minlpl)
    upper = np.where(sens & nonzero, up, 0.0)
    lower = np.where(sens & nonzero, np.minimum(up, resp), 0.0)
    upper = np.where(sens & ~nonzero, zero_range if zero_range > 0 else minlpl, upper)
    reason[by_rule] = "rule"
    reason[by_req] = "request"
    reason[by_freq] = "frequency"
    reason[by_zero] = "zero"
    return sens, lower, upper, reason


def with_sensitivity(at: ArgusTable, sensitivity) -> ArgusTable:
    """The table with its sensitive cells marked primary and their protection levels in
    ``lower_pl`` / ``upper_pl``, so that :func:`riskengine._batch.protect_argus` with
    ``rules=None`` protects exactly them (their reason then reads ``"status"``).

    Parameters
    ----------
    at : ArgusTable
        From :func:`argus_microdata`.
    sensitivity : tuple
        ``(sensitive, lower, upper, reason)`` from :func:`argus_microdata`.

    Returns
    -------
    ArgusTable
        A copy with ``status`` "primary" on the sensitive cells, ``lower_pl`` and
        ``upper_pl`` set (NaN elsewhere).
    """
    sens, lower, upper, _ = sensitivity
    sens = np.asarray(sens, bool)
    if sens.shape != (len(at.cells),):
        raise ValueError(f"the sensitivity covers {sens.size} cells, the table has "
                         f"{len(at.cells)}")
    cells = at.cells.copy()
    cells.loc[sens, "status"] = "primary"
    cells["lower_pl"] = np.where(sens, np.asarray(lower, float), math.nan)
    cells["upper_pl"] = np.where(sens, np.asarray(upper, float), math.nan)
    return dataclasses.replace(at, cells=cells)
