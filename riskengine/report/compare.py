"""The compare report: risk and utility of several protection mechanisms."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _attr_pairs, _breakable, _dl, _Doc, _e, _Html, _num, _pm, _table


def _mean_se(a) -> str:
    """The mean of a mechanism's draws and its standard error, the ``± SE`` on a line of
    its own (``± 0`` when the draws agree up to float noise); one draw: its value."""
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return "-"
    if a.size == 1:
        return _num(a[0], 4)
    return _pm(a.mean(), a.std(ddof=1) / np.sqrt(a.size), html_out=True)


def _failures(ds: xr.Dataset) -> dict:
    """``{mechanism: why}`` of the mechanisms a compare result records as failed."""
    if "error" not in ds.coords:
        return {}
    out = {}
    for n, e in zip(ds["mechanism"].values, ds["error"].values):
        e = e.decode("utf-8") if isinstance(e, bytes) else str(e)
        if e:
            out[str(n)] = e
    return out


def _compare(doc: _Doc, ds: xr.Dataset) -> None:
    from .. import plots
    names = [str(x) for x in ds["mechanism"].values]
    failed = _failures(ds)
    setting = [("mechanisms", ", ".join(names))]
    if "draws" not in ds.attrs:
        setting.append(("draws", ds.sizes.get("draw", "-")))
    if failed:
        doc.add(f"<h2>Failed: {len(failed)} of {len(names)} mechanisms</h2>"
                "<p>These mechanisms have no numbers below; the others were compared as "
                "usual.</p>" + _table(["mechanism", "why it failed"], list(failed.items())))
    doc.add("<h2>Setting</h2>" + _dl(setting + _attr_pairs(ds)))
    if "approximate" in ds:
        ap = [n for i, n in enumerate(names) if np.nansum(
            ds["approximate"].transpose("mechanism", "draw").values[i]) > 0]
        if ap:
            routes = {str(n): str(r) for n, r in zip(ds["mechanism"].values,
                                                     ds["routes"].values)}
            doc.add('<p class="note">APPROXIMATE: the posteriors of '
                    + ", ".join(f"{_e(n)} (routes {_e(routes.get(n, '?'))})" for n in ap)
                    + " are approximate (Monte Carlo, or an approximate likelihood); "
                    "their risk and utility carry that error.</p>")
    doc.add("<h2>Risk-utility map</h2>")
    ok = [n for n in names if n not in failed]
    doc.figure("ru_map", plots.ru_map(ds.sel(mechanism=ok) if failed else ds),
               "R-U confidentiality map: each mechanism at its mean risk and utility; faint "
               "points are single draws, bars 1.96 standard errors over draws"
               + (f" (failed, not shown: {', '.join(failed)})" if failed else ""))
    per_draw = [v for v in ds.data_vars if ds[v].dims in (("mechanism", "draw"),
                                                           ("draw", "mechanism"))]
    per_mech = [v for v in ds.data_vars if ds[v].dims == ("mechanism",)]
    # approximate: in the note above the map (a column of it would widen the table)
    cols = per_mech + [v for v in per_draw if v not in ("risk_draw", "utility_draw",
                                                         "approximate")]
    header = ["mechanism"] + [_Html(f'{_breakable(c)}<span class="pm">mean ± SE</span>')
                              if c in per_draw else _breakable(c) for c in cols]
    rows = []
    for i, _ in enumerate(names):
        r = [names[i]]
        if names[i] in failed:
            rows.append(r + ["failed"] + [""] * (len(cols) - 1))
            continue
        for c in cols:
            if c in per_draw:
                r.append(_mean_se(ds[c].transpose("mechanism", "draw").values[i]))
            else:
                r.append(_num(ds[c].values[i], 4))
        rows.append(r)
    doc.add("<h2>Measures by mechanism</h2>" + _table(header, rows))
    defs = [(v, ds[v].attrs.get("definition") or ds[v].attrs.get("description"))
            for v in ds.data_vars]
    defs = [(k, d) for k, d in defs if d]
    if defs:
        doc.add('<h2>Definitions</h2><p class="note">Higher utility is better; lower risk is '
                "better. SE: standard error of the mean over draws.</p>" + _dl(defs))
