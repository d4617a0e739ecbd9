"""The assess report: a posterior of one release (verdict, release, summary, risk by cell,
posterior bars, per-cell risk table, Monte Carlo diagnostics)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _cell_name, _dl, _Doc, _e, _num, _table, describe_release


def _assess(doc: _Doc, ds: xr.Dataset, post=None, release=None) -> None:
    from .. import plots
    dims = tuple(ds["max_prob"].dims)
    shape = tuple(ds.sizes[d] for d in dims)
    has_true = "true" in ds and "prob_exact" in ds
    info = describe_release(release) if release is not None else {}
    if not info and "release" in ds.attrs:
        info = {"release": ds.attrs["release"]}
    info.setdefault("mechanism", ds.attrs.get("mechanism", "unknown"))
    info["intruder prior"] = ds.attrs.get("prior", "unknown")
    info["inference"] = f"{ds.attrs.get('method', '?')} (route {ds.attrs.get('route', '?')})"
    if ds.attrs.get("approximation") or int(ds.attrs.get("approximate", 0)):  # (old files)
        info["inference"] += "; APPROXIMATE: " + "; ".join(
            x for x in (ds.attrs.get("approximation", "Monte Carlo"),
                        ds.attrs.get("diagnostics", "")) if x)
    if "threshold" in ds.attrs:
        _verdict(doc, ds)
    doc.add("<h2>Release</h2>" + _dl(info.items()))
    mp = ds["max_prob"].transpose(*dims).values
    lvl = float(ds.attrs.get("level", 0.95))
    width = (ds["upper"] - ds["lower"]).transpose(*dims).values
    top = np.unravel_index(int(np.argmax(mp)), shape)
    nums = [("cells", f"{mp.size} ({' x '.join(str(s) for s in shape)})"),
            ("candidate original tables", ds.attrs.get("n_candidates", "unknown")),
            ("log evidence", _num(ds.attrs.get("log_evidence", np.nan), 8))]
    if has_true:
        pe = ds["prob_exact"].transpose(*dims).values
        nums += [("expected exactly disclosed cells, sum of Pr(true value)",
                  f"{pe.sum():.3f} of {pe.size}"),
                 ("cells with Pr(true value) >= 0.5", int((pe >= 0.5).sum())),
                 ("largest Pr(true value)", f"{pe.max():.3f} at " + _cell_name(
                     ds, dims, np.unravel_index(int(np.argmax(pe)), shape)))]
    nums += [("intruder's expected number of correct guesses (sum of Pr(mode))",
              f"{mp.sum():.3f} of {mp.size}"),
             ("largest Pr(mode)", f"{mp.max():.3f} at {_cell_name(ds, dims, top)}"),
             (f"mean {round(lvl * 100)}% credible-interval width", f"{width.mean():.3f}")]
    doc.add("<h2>Summary</h2>" + _table(["quantity", "value"], nums))
    if "rhat" in ds:
        _mc_diagnostics(doc, ds)
    doc.add("<h2>Risk by cell</h2>")
    numbers = ("; numbers are the published values" if "published" in ds
               and mp.size <= plots.MAX_ANNOTATED else "")
    doc.figure("heatmap_max_prob", plots.risk_heatmap(ds, measure="max_prob"),
               "Pr(mode | release) by cell: how sure the intruder's best guess is" + numbers)
    if has_true:
        doc.figure("heatmap_prob_exact", plots.risk_heatmap(ds, measure="prob_exact"),
                   "Pr(true value | release) by cell: exact-disclosure probability" + numbers)
    doc.add("<h2>Posterior of each cell</h2>")
    if post is not None:
        bars = plots.posterior_bars(post, truth=ds["true"].values if has_true else None)
    else:
        bars = plots.posterior_bars(ds)
    doc.figure("posterior_bars", bars, "posterior pmf of each original cell"
               + ("; dashed: published value" if "published" in ds else "")
               + ("; red: true value" if has_true else ""))
    doc.add("<h2>Per-cell risk table</h2>")
    header = ["cell", "published", "mode", "Pr(mode)", "Pr(published)"]
    header += ["true", "Pr(true)"] if has_true else []
    header += [f"{round(lvl * 100)}% interval"]
    key = ds["prob_exact" if has_true else "max_prob"].transpose(*dims).values.ravel()
    order = list(range(key.size))
    if key.size > _MAX_ROWS:
        order = sorted(np.argsort(-key, kind="stable")[:_MAX_ROWS].tolist())
        doc.add(f'<p class="note">{_MAX_ROWS} of {key.size} cells: those with the largest '
                f'{"Pr(true)" if has_true else "Pr(mode)"}.</p>')
    rows = []
    arrs = {name: ds[name].transpose(*dims).values for name in ds.data_vars
            if ds[name].dims and set(ds[name].dims) == set(dims)}
    for k in order:
        idx = np.unravel_index(k, shape)

        def v(name, idx=idx):
            return arrs[name][idx]
        r = [_cell_name(ds, dims, idx), _num(v("published")) if "published" in ds else "-",
             _num(v("mode")), f"{v('max_prob'):.3f}", _num(v("prob_published"), 3)]
        if has_true:
            r += [_num(v("true")), f"{v('prob_exact'):.3f}"]
        r.append(f"[{_num(v('lower'))}, {_num(v('upper'))}]")
        rows.append(r)
    doc.add(_table(header, rows))


def _verdict(doc: _Doc, ds: xr.Dataset) -> None:
    """The risk policy's PASS / FAIL, the rule in words and the cells that fail."""
    from .._verdict import verdict
    mx = ds.attrs.get("max_expected")
    v = verdict(ds, threshold=float(ds.attrs["threshold"]),
                max_expected=None if mx is None or np.isnan(float(mx)) else float(mx))
    color = "#1a7f37" if v.passed else "#b42318"
    doc.add(f'<h2>Verdict: <span style="color:{color}">{v.label}</span></h2>'
            f"<p>Rule: {_e(v.rule)}.</p>"
            + ("<ul>" + "".join(f"<li>{_e(r)}</li>" for r in v.reasons) + "</ul>"
               if v.reasons else "<p>No cell breaks the rule.</p>"))
    if v.failing:
        rows = [(c, _num(val), f"{p:.3f}", "yes" if (c, val, p) in v.small else "")
                for c, val, p in v.failing[:_MAX_ROWS]]
        doc.add(_table(["cell", "true value" if v.measure == "Pr(true value)" else
                        "best guess", v.measure, "small count (1-2)"], rows))
    doc.add(f'<p class="note">{_e(v.measure)}: the posterior probability that the cell '
            "equals " + ("its true value (the original table was given)" if
                         v.measure == "Pr(true value)" else "the intruder's best guess, "
                         "the posterior mode (no original table was given)")
            + f"; expected exactly disclosed cells: {v.expected:.3f} of {v.n_cells}.</p>")


def _mc_diagnostics(doc: _Doc, ds: xr.Dataset) -> None:
    """A Monte Carlo posterior: its convergence (arviz's R-hat, ESS, MCSE) and verdict."""
    ok = bool(int(ds.attrs.get("converged", 0)))
    verdict = ("converged by the usual rules (R-hat <= 1.01, bulk and tail ESS >= 400)"
               if ok else "NOT CONVERGED by the usual rules (R-hat <= 1.01, bulk and tail ESS "
               ">= 400): treat every number in this report as rough")
    rows = [("method", str(ds.attrs.get("approximation", "Monte Carlo"))),
            ("largest R-hat (rank-normalised, split)", _num(float(ds["rhat"].max()), 4)),
            ("smallest bulk ESS", f"{float(ds['ess_bulk'].min()):.0f}"),
            ("smallest tail ESS", f"{float(ds['ess_tail'].min()):.0f}"),
            ("largest MCSE of a cell's posterior mean", _num(float(ds["mcse_mean"].max()), 3)),
            ("largest MCSE of a cell's Pr(mode)", _num(float(ds["mcse_max_prob"].max()), 3)),
            ("verdict", verdict)]
    doc.add('<h2>Monte Carlo diagnostics</h2><p class="note">This posterior is approximate: '
            "it was sampled by Markov chains (the exact routes do not fit this release); "
            "the diagnostics are arviz's.</p>" + _table(["quantity", "value"], rows))
