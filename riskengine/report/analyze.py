"""The analyze report: the posterior of the user's statistics of the original table."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _attr_pairs, _breakable, _dl, _Doc, _num, _table

#: the quantities that say where a statistic is (its magnitude, against which a sd or MCSE
#: is float noise)
_LOCATION = ("mean", "hdi_lower", "hdi_upper", "plugin", "true")


def _analyze(doc: _Doc, ds: xr.Dataset) -> None:
    from .. import plots
    keys = sorted((v for v in ds.data_vars if v.endswith("_summary")),
                  key=lambda v: int(v[4:-8]))
    setting = [("draws", ds.attrs.get("draws", ds.sizes.get("draw", "-"))),
               ("draws are", "independent, from the exact posterior"
                if int(ds.attrs.get("exact_draws", 0)) else "Monte Carlo (see diagnostics)")]
    doc.add("<h2>Setting</h2>" + _dl(setting + _attr_pairs(ds, skip=("draws", "exact_draws"))))
    doc.add('<p class="note">Each statistic is computed on every table drawn from the '
            "posterior of the original table given the release: its posterior mean, sd, "
            "Monte Carlo standard error of the mean (MCSE) and highest-density interval "
            "(HDI). The plug-in value is the same statistic on the published table, the "
            "naive analysis that ignores the protection; the true value and its posterior "
            "quantile are shown when the original table was given.</p>")
    cols = ["mean", "sd", "mcse_mean", "hdi_lower", "hdi_upper", "plugin", "true",
            "true_quantile", "covered"]
    rows, notes = [], []
    for key in keys:
        s = ds[key]
        name = s.attrs.get("statistic", key)
        q = [str(x) for x in s["quantity"].values]
        other = [d for d in s.dims if d != "quantity"]
        idxs = list(np.ndindex(*[s.sizes[d] for d in other]))
        for idx in idxs[:_MAX_ROWS]:
            el = s.isel(dict(zip(other, idx)))
            lab = name if not other else name + "[" + ",".join(
                str(s[d].values[i]) if d in s.coords else str(i)
                for d, i in zip(other, idx)) + "]"
            r = [lab]
            vals = {c: float(el.sel(quantity=c)) for c in cols if c in q}
            # the statistic's magnitude: a sd or MCSE of 2.5e-15 beside a mean of 31.23 is
            # float noise (draws that all agree), shown as 0; a p-value of 1e-20 is not
            scale = max([abs(vals[c]) for c in _LOCATION if np.isfinite(vals.get(c, np.nan))]
                        or [0.0])
            for c, val in vals.items():
                if c == "covered":
                    r.append("yes" if val else "no")
                else:
                    r.append(_num(val, 4, scale=0.0 if c == "true_quantile" else scale))
            rows.append(r)
        if s.attrs.get("plugin_note"):
            notes.append((name, s.attrs["plugin_note"]))
    present = [c for c in cols if any(c in [str(x) for x in ds[k]["quantity"].values]
                                      for k in keys)]
    doc.add("<h2>Posterior of the statistics</h2>"
            + _table(["statistic"] + [_breakable(c) for c in present], rows))
    defs = [(ds[k].attrs.get("statistic", k), ds[k].attrs.get("description", ""))
            for k in keys]
    doc.add("<h2>Definitions</h2>" + _dl(defs + [(f"plug-in ({n})", t) for n, t in notes]))
    doc.add("<h2>Posterior plots</h2>")
    for key in keys:
        k = key[4:-8]
        name = ds[key].attrs.get("statistic", key)
        dr = ds[f"stat{k}_draws"].rename(name)
        doc.figure(f"statistic_{k}", plots.statistic_posterior(dr, ds[key]),
                   f"{name}: posterior over the original tables the release could have come "
                   "from (HDI shaded or as bars), the plug-in value on the published table "
                   "and the true value when known")
