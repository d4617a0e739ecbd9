"""The assess report: a posterior of one release (verdict, release, summary, risk by cell,
posterior bars, per-cell risk table, Monte Carlo diagnostics)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._page import _MAX_ROWS, _cell_name, _count, _dl, _Doc, _e, _num, _table, describe_release


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
    _provenance(doc, ds)
    mp = ds["max_prob"].transpose(*dims).values
    lvl = float(ds.attrs.get("level", 0.95))
    width = (ds["upper"] - ds["lower"]).transpose(*dims).values
    top = np.unravel_index(int(np.argmax(mp)), shape)
    nums = [("cells", f"{mp.size:,} ({' x '.join(str(s) for s in shape)})"),
            ("candidate original tables", _count(ds.attrs.get("n_candidates", "unknown"))),
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
    if "rhat" in ds or "kish_ess" in ds.attrs:
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
    base = "baseline_prob" in ds
    if base:
        what = _e(str(ds.attrs.get("baseline", "")))
        doc.add('<p class="note">From the totals alone (or the reference release): the same '
                f"probability under the verdict's baseline ({what}); judged: the cells the "
                "policy judges.</p>")
    header = ["cell", "published", "mode", "Pr(mode)", "Pr(published)"]
    header += ["true", "Pr(true)"] if has_true else []
    ref = str(ds.attrs.get("baseline", "")).startswith("the reference release")
    if base:                         # the verdict's baseline beside the release
        header += ["from the reference release" if ref else "from the totals alone"]
    if "judged" in ds:
        header += ["judged"]
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
        if base:
            r.append(f"{v('baseline_prob'):.3f}")
        if "judged" in ds:
            r.append("yes" if v("judged") else "")
        r.append(f"[{_num(v('lower'))}, {_num(v('upper'))}]")
        rows.append(r)
    doc.add(_table(header, rows))


def _verdict(doc: _Doc, ds: xr.Dataset) -> None:
    """The risk policy's PASS / FAIL / UNDECIDED, the policy in words, the baseline, the
    cells that fail, are undecided or are disclosed by the totals alone."""
    import json

    from .._policy import Policy
    from .._verdict import verdict
    if "policy" in ds.attrs:
        policy = Policy.from_dict(json.loads(ds.attrs["policy"]))
    else:                     # a file of an earlier version: its threshold, every cell
        mx = ds.attrs.get("max_expected")
        policy = Policy(cells="all", baseline=None, threshold=float(ds.attrs["threshold"]),
                        max_expected=None if mx is None or np.isnan(float(mx))
                        else float(mx))
    v = verdict(ds, policy=policy)
    color = {"PASS": "#1a7f37", "FAIL": "#b42318"}.get(v.label, "#9a6700")
    doc.add(f'<h2>Verdict: <span style="color:{color}">{v.label}</span>'
            + (" (approximate posterior)" if v.approximate else "") + "</h2>"
            f"<p>Policy: {_e(v.rule)}.</p>"
            + (f"<p>Baseline: {_e(v.baseline)}.</p>" if v.baseline else "")
            + ("<ul>" + "".join(f"<li>{_e(r)}</li>" for r in v.reasons) + "</ul>"
               if v.reasons else f"<p>No judged cell breaks the policy ({v.n_judged} of "
               f"{v.n_cells} cells judged).</p>"))
    rows = []
    base = v.cells["baseline_prob"].values if "baseline_prob" in v.cells else None
    dims = tuple(v.cells["prob"].dims)
    for what, items in (("fails", v.failing), ("undecided", v.undecided),
                        ("totals alone", v.by_baseline)):
        for c, val, p in items[:_MAX_ROWS]:
            rows.append([c, _num(val), f"{p:.3f}", what])
    if rows:
        header = ["cell", "true value" if v.measure == "Pr(true value)" else "best guess",
                  v.measure, "state"]
        if base is not None:
            names = {c: i for i, c in enumerate(
                _cell_name(ds, dims, idx) for idx in np.ndindex(*v.cells["prob"].shape))}
            flat = base.ravel()
            header.insert(3, "Pr from the totals alone")
            for r in rows:
                k = names.get(r[0])
                r.insert(3, "-" if k is None else f"{flat[k]:.3f}")
        doc.add(_table(header, rows))
    doc.add(f'<p class="note">{_e(v.measure)}: the posterior probability that the cell '
            "equals " + ("its true value (the original table was given)" if
                         v.measure == "Pr(true value)" else "the intruder's best guess, "
                         "the posterior mode (no original table was given)")
            + f"; expected exactly disclosed judged cells: {v.expected:.3f} of "
            f"{v.n_judged} judged ({v.n_cells} cells).</p>")


def _provenance(doc: _Doc, ds: xr.Dataset) -> None:
    """Date, version, inputs and their hashes, the release's hash, the seed."""
    names = {"provenance_date": "date", "provenance_version": "version",
             "provenance_inputs": "input files", "provenance_release_sha256":
             "release (SHA-256 of its JSON, first 16 hex digits)",
             "provenance_seed": "Monte Carlo seed"}
    items = [(label, str(ds.attrs[k])) for k, label in names.items() if k in ds.attrs]
    if items:
        doc.add("<h2>Provenance</h2>" + _dl(items))


def _mc_diagnostics(doc: _Doc, ds: xr.Dataset) -> None:
    """A Monte Carlo posterior: its convergence (arviz's R-hat, ESS, MCSE) and verdict."""
    ok = bool(int(ds.attrs.get("converged", 0)))
    if "rhat" not in ds:                  # importance sampling: independent weighted draws
        verdict = ("reliable by the usual rules (Kish ESS >= 400, Pareto k <= 0.7)" if ok
                   else "NOT RELIABLE by the usual rules (Kish ESS >= 400, Pareto k <= "
                   "0.7): treat every number in this report as rough")
        rows = [("method", str(ds.attrs.get("approximation", "importance sampling"))),
                ("draws (completed a table)",
                 f"{int(ds.attrs.get('draws', 0)):,} ({int(ds.attrs.get('completed', 0)):,})"),
                ("Kish effective sample size of the weights",
                 f"{float(ds.attrs['kish_ess']):,.0f}"),
                ("Pareto k of the largest weights (PSIS)",
                 _num(float(ds.attrs.get("pareto_k", np.nan)), 3)),
                ("smallest ESS of a cell's mean", f"{float(ds['ess'].min()):.0f}"),
                ("largest MCSE of a cell's posterior mean",
                 _num(float(ds["mcse_mean"].max()), 3)),
                ("largest MCSE of a cell's Pr(mode)", _num(float(ds["mcse_max_prob"].max()), 3)),
                ("verdict", verdict)]
        doc.add('<h2>Monte Carlo diagnostics</h2><p class="note">This posterior is '
                "approximate: it was estimated from independent weighted draws (importance "
                "sampling; the exact routes do not fit this release); the Pareto k is "
                "arviz's.</p>" + _table(["quantity", "value"], rows))
        return
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
