"""The audit report of a magnitude release (cell suppression, CTA): what an intruder can
derive of each suppressed or sensitive cell, and whether every sensitive cell is
protected; :func:`audit_rows` and :func:`audit_verdict` are also the text of
``riskengine audit``."""

from __future__ import annotations

import re

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _dl, _Doc, _e, _table

__all__ = ["audit_rows", "audit_verdict", "magnitude"]


def magnitude(x) -> str:
    """A magnitude as text: up to 10 significant digits, without float noise
    (1963.2999999999997 -> ``1963.3``); ``-`` for NaN (not published)."""
    x = float(x)
    if np.isnan(x):
        return "-"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{round(x, 6) + 0.0:.10g}"


def _grouped(text: str) -> str:
    """A :func:`magnitude` with thousands separators for the page (``1234567.5`` ->
    ``1,234,567.5``); other text as it is.  (The command line's table keeps the plain
    digits: it is also read by scripts.)"""
    m = re.fullmatch(r"(-?)(\d+)(\.\d+)?", text)
    return text if m is None else f"{m.group(1)}{int(m.group(2)):,}{m.group(3) or ''}"


def _audit_blocks(ds: xr.Dataset) -> list:
    """``[(suffix, dims)]`` of the cell blocks an audit Dataset holds (interior first)."""
    return [(name[len("published"):], ds[name].dims) for name in ds.data_vars
            if name.startswith("published")]


def _audit_cell(ds: xr.Dataset, table_dims, bdims, idx) -> str:
    """``(North, food)``; a total names the dims it sums over ``total``, a subtotal its
    group: ``(North, total)``, ``(group 1, food)``."""
    pos = dict(zip(bdims, idx))
    if tuple(table_dims) == ("cell",) and "label" in ds.coords:   # a publication's cells
        return str(ds["label"].values[idx[0]])
    parts = []
    for d in table_dims:
        if d in pos:
            parts.append(str(ds[d].values[pos[d]]) if d in ds.coords else str(pos[d]))
        elif f"{d}_group" in pos:
            parts.append(f"group {pos[f'{d}_group'] + 1}")
        else:
            parts.append("total")
    return "(" + ", ".join(parts) + ")"


def _audit_status(v) -> str:
    if v("under_protected"):
        return "UNDER-PROTECTED"
    if v("exact"):
        return "exactly disclosed"
    if v("approximate_disclosure"):
        return "approximately disclosed"
    if v("sensitive"):
        return "protected"
    if v("suppressed"):
        return "complementary" if v("has_sensitive") else "suppressed"
    return "-"


def audit_rows(ds: xr.Dataset) -> tuple:
    """``(header, rows)`` of an audit Dataset: one row per suppressed or sensitive cell
    (totals included), the text of ``riskengine audit`` and of the audit report.

    A suppression audit (:func:`riskengine.audit`) gives each cell's LP interval, and
    with the sensitive cells and the original table the room below and above the true
    value against the protection needed; a CTA audit gives the adjusted (published)
    value, the true value, the adjustment and the protection needed.
    """
    table_dims = ds["published"].dims
    cta = ds.attrs.get("audit_of") == "cta"
    has_sens = "sensitive" in ds
    has_value = "value" in ds
    if cta:
        cols = [("published", "published (adjusted)")]
        cols += [("value", "true value"), ("adjustment", "adjustment")] if has_value else []
    else:
        cols = [("published", "published"), ("lower", "lower"), ("upper", "upper")]
        cols += [("value", "true value"), ("room_below", "room below"),
                 ("room_above", "room above")] if has_value else []
    if has_sens:
        symmetric = all(np.array_equal(ds[k].values, ds[k.replace("lower", "upper")].values)
                        for k in ds.data_vars if k.startswith("protection_lower"))
        cols += ([("protection_lower", "protection")] if symmetric else
                 [("protection_lower", "protection below"),
                  ("protection_upper", "protection above")])
    header = ["cell"] + [h for _, h in cols] + ["status"]
    rows = []
    for suffix, bdims in _audit_blocks(ds):
        arrs = {k: ds[k + suffix].transpose(*bdims).values for k in
                ("published", "suppressed", "lower", "upper", "exact", "sensitive",
                 "approximate_disclosure", "under_protected", "value", "room_below",
                 "room_above", "adjustment", "protection_lower", "protection_upper")
                if k + suffix in ds}
        shape = arrs["published"].shape
        for idx in np.ndindex(*shape):
            def v(k, idx=idx, arrs=arrs):
                if k == "has_sensitive":
                    return has_sens
                return bool(arrs[k][idx]) if k in arrs else False
            if not (v("suppressed") or v("sensitive")):
                continue
            rows.append([_audit_cell(ds, table_dims, bdims, idx)]
                        + [magnitude(arrs[k][idx]) if k in arrs else "-" for k, _ in cols]
                        + [_audit_status(v)])
    return header, rows


def audit_verdict(ds: xr.Dataset) -> tuple:
    """``(label, lines)``: ``"PROTECTED"`` when every sensitive cell is protected,
    ``"NOT PROTECTED"`` when one is not, ``"NOT CHECKED"`` without the sensitive cells
    (the agency's confidential inputs); the lines say what the audit found."""
    a = ds.attrs
    cta = a.get("audit_of") == "cta"
    n_supp = int(a.get("n_suppressed", 0))
    n_exact = int(a.get("n_exact", 0))
    lines = []
    if cta:
        lines.append("every cell is published, adjusted: no cell is suppressed, so there is "
                     "no interval to derive; a sensitive cell is protected when its "
                     "published value is at least its protection away from its true value")
    else:
        lines.append(f"{n_supp} suppressed cell{'s' if n_supp != 1 else ''}; "
                     f"{n_exact} of them exactly disclosed (LP interval of width 0)")
    if "sensitive" not in ds:
        lines.append("which cells are sensitive, and by how much they need protecting, "
                     "is the agency's confidential input: give the microdata and the rule "
                     "(riskengine audit --microdata ... --rule ...) to check each one")
        return "NOT CHECKED", lines
    n_sens = int(sum(int(ds[k].sum()) for k in ds.data_vars if k.startswith("sensitive")))
    n_under = int(sum(int(ds[k].sum()) for k in ds.data_vars
                      if k.startswith("under_protected")))
    if "n_approximate_disclosure" in a:
        lines.append(f"{int(a['n_approximate_disclosure'])} sensitive cells approximately "
                     "disclosed (interval narrower than their protection)")
    if n_under:
        lines.append(f"{n_under} of {n_sens} sensitive cells are NOT protected "
                     "(status UNDER-PROTECTED below)")
        return "NOT PROTECTED", lines
    lines.append(f"every sensitive cell ({n_sens}) is protected: "
                 + ("its published value is at least its protection away from its true "
                    "value" if cta else "some table consistent with the release puts it at "
                    "least its protection below and above its true value"))
    return "PROTECTED", lines


def _audit(doc: _Doc, ds: xr.Dataset) -> None:
    label, lines = audit_verdict(ds)
    color = {"PROTECTED": "#1a7f37", "NOT PROTECTED": "#b42318"}.get(label, "#555")
    doc.add(f'<h2>Verdict: <span style="color:{color}">{_e(label)}</span></h2>'
            "<ul>" + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>")
    info = [(k, ds.attrs[k]) for k in ("release", "mechanism", "auditor", "method")
            if k in ds.attrs]
    doc.add("<h2>Release</h2>" + _dl(info))
    header, rows = audit_rows(ds)
    doc.add("<h2>Cells</h2>")
    if ds.attrs.get("audit_of") == "cta":
        doc.add('<p class="note">A CTA release publishes every cell with an adjusted value. '
                "adjustment = published - true value; a sensitive cell needs to have moved "
                "down by at least its protection below, or up by at least its protection "
                "above.</p>")
    else:
        doc.add('<p class="note">lower / upper: the smallest and largest value the cell can '
                "take in any nonnegative table that agrees with every published cell and "
                "total (what an intruder derives by linear programming). room below / above: "
                "how far the interval reaches below and above the true value; a sensitive "
                "cell is protected when both are at least its protection. Complementary: "
                "suppressed to protect a sensitive cell, not sensitive itself.</p>")
    if not rows:
        doc.add('<p class="note">No cell is suppressed or known to be sensitive.</p>')
        return
    if len(rows) > _MAX_ROWS:
        order = sorted(range(len(rows)), key=lambda i: rows[i][-1] == "protected")
        rows = [rows[i] for i in sorted(order[:_MAX_ROWS])]
        doc.add(f'<p class="note">{_MAX_ROWS} of the cells shown: those not protected '
                "first.</p>")
    doc.add(_table(header, [[r[0], *map(_grouped, r[1:])] for r in rows]))
