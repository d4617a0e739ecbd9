"""The simulate report: an intruder simulation study (MAP hit rates, calibration)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _attr_pairs, _cell_name, _dl, _Doc, _e, _num, _table


def _simulate(doc: _Doc, ds: xr.Dataset) -> None:
    from .. import plots
    dims = tuple(d for d in ds["map_prob"].dims if d != "table")
    ntab = ds.sizes["table"]
    hit = ds["map_hit"].transpose("table", *dims).values.astype(float)
    mp = ds["map_prob"].transpose("table", *dims).values.astype(float)
    ok = np.isfinite(hit) & np.isfinite(mp)
    k, n = hit[ok].sum(), ok.sum()
    lo, hi = plots.binomial_interval(k, n)
    if int(ds.attrs.get("n_approximate", 0)):
        doc.add(f'<p class="note">APPROXIMATE: {int(ds.attrs["n_approximate"])} of {ntab} '
                f"posteriors are approximate (routes {_e(str(ds.attrs.get('routes')))}): "
                "their probabilities carry Monte Carlo or likelihood error.</p>")
    if int(ds.attrs.get("n_not_converged", 0)):
        doc.add(f'<p class="note">NOT CONVERGED: {int(ds.attrs["n_not_converged"])} of '
                f"{ntab} Monte Carlo posteriors failed the usual rules (R-hat &lt;= 1.01, "
                "ESS &gt;= 400; variable not_converged): treat their numbers as rough.</p>")
    doc.add("<h2>Setting</h2>" + _dl([("tables", _num(ntab)),
                                       ("cells per table", _num(np.prod(hit.shape[1:])))]
                                      + _attr_pairs(ds)))
    nums = [("cells (table x cell)", _num(n)),
            ("MAP hit rate (intruder's best guess equals the truth)",
             f"{k / n:.4f}  [95% CI {float(lo):.4f}, {float(hi):.4f}]"),
            ("mean claimed Pr(MAP), map_prob", f"{mp[ok].mean():.4f}")]
    if "prob_exact" in ds:
        nums.append(("mean Pr(true value), prob_exact",
                     f"{np.nanmean(ds['prob_exact'].values.astype(float)):.4f}"))
    if "n_candidates" in ds:
        nc = np.asarray(ds["n_candidates"].values, dtype=float)
        counted = nc[np.isfinite(nc)]
        nums.append(("candidate tables per release: median [min, max]",
                     f"{_num(np.median(counted))} [{_num(counted.min())}, "
                     f"{_num(counted.max())}]"
                     + (f" ({nc.size - counted.size} of {nc.size} releases not counted)"
                        if counted.size < nc.size else "") if counted.size else
                     "not counted (infinitely many under unbounded noise, or a Monte Carlo "
                     "route)"))
    doc.add("<h2>Summary</h2>" + _table(["quantity", "value"], nums))
    doc.add("<h2>Calibration</h2>")
    doc.figure("calibration", plots.calibration(ds),
               "claimed Pr(MAP) against the observed hit rate, per bin, with the range a "
               "calibrated intruder's rate falls in (95%, cluster-robust); n the number of "
               "cells in the bin")
    from .._simulate import calibration  # here: the report package stays light
    tab = calibration(ds)
    rows = [[f"[{tab['lower'].values[b]:.2f}, {tab['upper'].values[b]:.2f}]",
             _num(tab["n"].values[b]), _num(tab["claimed"].values[b], 4),
             _num(tab["observed"].values[b], 4),
             f"[{tab['ci_low'].values[b]:.3f}, {tab['ci_high'].values[b]:.3f}]",
             _num(tab["z"].values[b], 2)]
            for b in range(tab.sizes["bin"]) if tab["n"].values[b] > 0]
    doc.add(_table(["map_prob bin", "cells", "mean claimed", "observed hit rate",
                    "calibrated 95% range", "z"], rows))
    gap = tab.attrs["overall_observed"] - tab.attrs["overall_claimed"]
    doc.add('<p class="note">The same statistic the command line prints: the standard error '
            "is cluster-robust (tables are independent, the cells of one table are not); "
            f"over all cells, observed - claimed = {gap:+.4f}, "
            f"z = {tab.attrs['overall_z']:+.2f}.</p>")
    doc.add("<h2>Hit rate by cell</h2>")
    doc.figure("hit_rates", plots.hit_rates(ds), "each cell's MAP hit rate with its exact 95% "
               "binomial interval, and the mean claimed map_prob (x)")
    hk, hn = np.nansum(np.where(ok, hit, np.nan), 0), ok.sum(0)
    clo, chi = plots.binomial_interval(hk, hn)
    rows = []
    for idx in list(np.ndindex(*hit.shape[1:]))[:_MAX_ROWS]:
        m = ok[(slice(None), *idx)]
        r = [_cell_name(ds, dims, idx), _num(hn[idx]),
             _num(mp[(slice(None), *idx)][m].mean() if m.any() else np.nan, 4),
             _num(hk[idx] / hn[idx] if hn[idx] else np.nan, 4),
             f"[{clo[idx]:.3f}, {chi[idx]:.3f}]"]
        rows.append(r)
    if hit[0].size > _MAX_ROWS:
        doc.add(f'<p class="note">first {_MAX_ROWS} of {hit[0].size} cells.</p>')
    doc.add(_table(["cell", "tables", "mean claimed", "hit rate", "95% CI"], rows))
