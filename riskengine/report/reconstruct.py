"""The reconstruct report: what a reconstruction audit of a table set proved (certain
persons, bounds) and, with a prior, how confident each further claim is -- with the
Monte Carlo units named and their diagnostics, and the probabilistic certainty of a noisy
release said at the top."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _attr_pairs, _dl, _Doc, _e, _num, _table

#: claims of the ranked-records table (the most confident uncertain ones)
TOP_CLAIMS = 50
#: the attrs of the summary (shown first, in this order) rather than under "Setting"
_SUMMARY = ("persons", "persons_certain", "share_certain", "persons_in_certain_cells",
            "cells", "cells_unknown", "cells_certain", "areas", "areas_certain",
            "records_confident", "share_confident", "threshold", "records_unranked",
            "units", "units_resumed", "integer_programs", "seconds", "confident_correct",
            "share_areas_certain", "prior", "posterior", "approximate", "approximation",
            "diagnostics", "coverage", "certainty", "dropped_note")


def _pct(x) -> str:
    x = float(x)
    return "-" if np.isnan(x) else f"{100 * x:.1f} %"


def _reconstruct(doc: _Doc, ds: xr.Dataset) -> None:
    a = ds.attrs
    if "coverage" in a:
        doc.add(f'<p class="note">PROBABILISTIC: certain {_e(str(a["certainty"]))}, not '
                f"always: the release's noise is unbounded, and each published cell is "
                f"read within a window that holds every noise at once with probability "
                f">= {_e(_num(a['coverage']))}.</p>")
    if int(a.get("approximate", 0)):
        doc.add(f'<p class="note">APPROXIMATE: {_e(str(a.get("approximation", "")))}</p>')
    if a.get("dropped_note"):
        doc.add(f'<p class="note">{_e(str(a["dropped_note"]))}</p>')
    rows = [("persons", _num(a["persons"])),
            ("reconstructed with certainty (every consistent table agrees)",
             f"{_num(a['persons_certain'])} ({_pct(a['share_certain'])})"),
            ("persons in cells whose value is certain", _num(a["persons_in_certain_cells"])),
            ("finest cells: all / unknown / certain among the unknown",
             (f"{_num(a['cells'])} / {_num(a['cells_unknown'])} / "
             f"{_num(a['cells_certain'])}"))]
    if "areas" in a:
        rows.append(("areas every cell of which is certain",
                     f"{_num(a['areas_certain'])} of {_num(a['areas'])}"))
    if "prior" in a:
        rows += [("prior", str(a["prior"])), ("posterior", str(a.get("posterior", ""))),
                 (f"records with confidence >= {_num(a['threshold'])}",
                  (f"{_num(a['records_confident'])} ({_pct(a['share_confident'])} of "
                  "persons)"))]
    if "confident_correct" in a:
        rows.append(("confident records that are right (against the truth)",
                     _pct(a["confident_correct"])))
    rows += [("units", (f"{_num(a['units'])} ({_num(a['units_resumed'])} read back from "
                       "an earlier run)")),
             ("integer programs", _num(a["integer_programs"])),
             ("work, summed over units", f"{float(a['seconds']):.1f} s")]
    doc.add("<h2>Summary</h2>" + _table(["quantity", "value"], rows))
    if "mc_units" in a:
        _monte_carlo(doc, ds)
    _claims(doc, ds)
    _units(doc, ds)
    doc.add("<h2>Setting</h2>" + _dl([(k, v) for k, v in _attr_pairs(ds, skip=_SUMMARY)]))


def _monte_carlo(doc: _Doc, ds: xr.Dataset) -> None:
    a = ds.attrs
    rh = ds["rhat"].values.ravel().astype(float)
    es = ds["ess"].values.ravel().astype(float)
    s = np.isfinite(rh)
    doc.add("<h2>Monte Carlo units</h2>"
            f"<p>{_num(a['mc_units'])} units sampled (converged: "
            f"{_num(a['mc_converged_units'])}); over their {_num(int(s.sum()))} uncertain "
            f"cells: max R-hat {_num(rh[s].max() if s.any() else np.nan)}, min ESS "
            f"{_num(es[s].min() if s.any() else np.nan, 4)}, cells with R-hat <= 1.01 and "
            f"ESS >= 400: {_pct(((rh[s] <= 1.01) & (es[s] >= 400)).mean()) if s.any() else '-'}"
            ". A claim resting on a Monte Carlo posterior has "
            "<code>record_confidence_exact</code> False.</p>"
            f'<p class="note">{_e(str(a.get("diagnostics", "")))}</p>')


def _claims(doc: _Doc, ds: xr.Dataset) -> None:
    """The most confident claims "this cell holds at least k persons" past the certain
    ones (with a prior), and how many claims are certain."""
    if "record" not in ds.dims:
        return
    dims = list(ds["lower"].dims)
    cert = ds["record_certain"].values.astype(bool)
    conf = ds["confidence"].values.astype(float)
    doc.add("<h2>Records</h2>"
            f"<p>{_num(int(cert.sum()))} claims \"this cell holds at least k persons\" are "
            f"certain (one per person reconstructed with certainty).</p>")
    rest = np.flatnonzero(~cert & np.isfinite(conf))
    if rest.size == 0:
        return
    rest = rest[np.argsort(-conf[rest], kind="stable")][:TOP_CLAIMS]
    extra = [c for c in ("record_true", "record_confidence_exact") if c in ds]
    header = dims + ["at least", "confidence"] + [
        {"record_true": "true", "record_confidence_exact": "exact"}[c] for c in extra]
    rows = []
    for i in rest:
        rows.append([str(ds[f"record_{d}"].values[i]) for d in dims]
                    + [_num(ds["record_k"].values[i]), f"{conf[i]:.4f}"]
                    + [str(bool(ds[c].values[i])).lower() for c in extra])
    doc.add(f"<p>The {len(rows)} most confident uncertain claims (of "
            f"{_num(int((~cert & np.isfinite(conf)).sum()))}):</p>"
            + _table(header, rows, left=len(dims)))


def _units(doc: _Doc, ds: xr.Dataset) -> None:
    """Per unit: finest cells, unknown ones, certain ones, persons certain."""
    unit = ds["unit"].values.ravel().astype(str)
    lower = ds["lower"].values.ravel()
    certain = ds["certain"].values.ravel().astype(bool)
    published = ds["published"].values.ravel().astype(bool)
    names, inv = np.unique(unit, return_inverse=True)
    cells = np.bincount(inv, minlength=names.size)
    unknown = np.bincount(inv, weights=~published, minlength=names.size)
    cert = np.bincount(inv, weights=certain & ~published, minlength=names.size)
    persons = np.bincount(inv, weights=lower * certain, minlength=names.size)
    order = np.argsort(unknown - cert, kind="stable")[::-1][:_MAX_ROWS]
    rows = [[names[u], _num(cells[u]), _num(unknown[u]), _num(cert[u]), _num(persons[u])]
            for u in order]
    note = (f" (the {_MAX_ROWS} with the most uncertain cells of {names.size})"
            if names.size > _MAX_ROWS else "")
    doc.add(f"<h2>Units</h2><p>Most uncertain cells first{note}.</p>"
            + _table(["unit", "finest cells", "unknown", "certain (of the unknown)",
                      "persons in certain cells"], rows))
