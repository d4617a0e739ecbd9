"""The census report: the intruder's simulation-based posterior of a publication
protected by targeted record swapping and the cell key method with secret parameters
(riskengine/_census_posterior.py), its verdict, and the riskiest published cells."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _attr_pairs, _dl, _Doc, _e, _num, _table

_SUMMARY = ("verdict", "verdict_reasons", "approximate", "approximation", "threshold",
            "small", "sims", "cells_without_estimate")


def _census(doc: _Doc, ds: xr.Dataset) -> None:
    a = ds.attrs
    if "verdict" in a:
        doc.add(f"<p><b>VERDICT: {_e(str(a['verdict']))}</b> -- "
                f"{_e(str(a.get('verdict_reasons', '')))}</p>")
    doc.add(f'<p class="note">APPROXIMATE: {_e(str(a.get("approximation", "")))}</p>')
    y = ds["published"].values
    p = ds["prob_exact"].values
    kinds = ds["kind"].values.astype(str)
    small = [int(v) for v in np.atleast_1d(a.get("small", [1, 2]))]
    rows = []
    for k in np.unique(kinds):
        for v in small:
            m = (kinds == k) & (y == v)
            if not m.any():
                continue
            ok = m & np.isfinite(p)
            one = ds["prob_real_one"].values[ok] if v == 1 else np.array([])
            rows.append([k, _num(v), _num(int(m.sum())), _num(int(ok.sum())),
                         f"{np.mean(p[ok]):.3f}" if ok.any() else "-",
                         f"{np.nanmean(one):.3f}" if one.size and np.isfinite(one).any()
                         else "-"])
    doc.add("<h2>Published small counts, by kind of cell</h2>"
            "<p>Kind: table | geography level | dims not at their totals.  "
            "Pr(original = published) averaged over the kind's cells; Pr(real one): a "
            "published 1 is one original person of that area and characteristics, not "
            "swapped out.</p>"
            + _table(["kind", "published", "cells", "answered", "Pr(original = published)",
                      "Pr(real one)"], rows, left=1))
    judged = np.flatnonzero(np.isin(y, small) & np.isfinite(p))
    order = judged[np.argsort(-p[judged], kind="stable")][:_MAX_ROWS]
    se = ds["prob_exact_se"].values
    cells = [[str(ds["label"].values[i]), kinds[i], _num(int(y[i])),
              f"{p[i]:.3f} ± {se[i]:.3f}", _num(int(ds["n_similar"].values[i]))]
             for i in order]
    doc.add(f"<h2>Riskiest cells</h2><p>The {len(cells)} published small counts with the "
            "highest Pr(original = published) (± its Monte Carlo s.e.).</p>"
            + _table(["cell", "kind", "published", "Pr(original = published)",
                      "similar simulated cells"], cells, left=2))
    doc.add("<h2>Setting</h2>" + _dl([(k, v) for k, v in _attr_pairs(ds, skip=_SUMMARY)]))
