"""Self-contained HTML reports for the uses: assess, compare, simulate, analyze, audit.

:func:`write_report` takes a result (an :class:`~riskengine.Posterior`, a result
``xarray.Dataset`` or the path of its netCDF file) and writes the report, named after its
kind (``assess.html``, ``compare.html``, ``simulate.html``, ``analyze.html``,
``audit.html``: one folder holds one of each), plus each plot as a PNG into a folder.  Each kind's plots have their
own names (:data:`FIGURES`), so :func:`remove_report` can take a kind's report away with
its plots.  The HTML needs nothing else: images are
embedded as ``data:image/png;base64`` URIs, the style is inline, there is no
script and no external reference, so the file can be mailed or archived alone.

Which report a dataset gets is read from ``attrs["riskengine_kind"]``
(``"assess"``, ``"compare"``, ``"simulate"``, ``"analyze"`` or ``"audit"``); without it the
kind is recognised from the variables (``pmf`` -> assess, ``risk``/``utility`` over
``mechanism`` -> compare, ``map_hit`` over ``table`` -> simulate, ``suppressed`` /
``lower`` / ``exact`` of :func:`riskengine.audit` -> audit).
"""

from __future__ import annotations

import base64
import fnmatch
import html
import io
from pathlib import Path

import numpy as np
import xarray as xr

from ._io import atomic_write_bytes
from ._version import __version__
from .simulate import calibration

__all__ = ["FIGURES", "KINDS", "KIND_ATTR", "audit_rows", "audit_verdict", "describe_release",
           "magnitude", "remove_report", "render_report", "report_name", "write_report"]

#: the dataset attribute that says which kind of result a dataset is
KIND_ATTR = "riskengine_kind"
KINDS = ("assess", "compare", "simulate", "analyze", "audit")
#: the PNG names (without ``.png``; shell patterns) each kind of report writes: no two
#: kinds share one, so a folder holds every kind's report and plots side by side
FIGURES = {"assess": ("heatmap_max_prob", "heatmap_prob_exact", "posterior_bars"),
           "compare": ("ru_map",),
           "simulate": ("calibration", "hit_rates"),
           "analyze": ("statistic_*",),
           "audit": ()}
_MAX_ROWS = 200  # per-cell tables longer than this show the riskiest rows only

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       max-width: 1150px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #c0392b; padding-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; color: #333; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .9em; }
div.wide { max-width: 100%; overflow-x: auto; }  /* a wide table scrolls inside the page */
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1.2em; }
dt { font-weight: 600; } dd { margin: 0; font-family: monospace; white-space: pre-wrap; }
figure { margin: 1em 0; } figcaption { font-size: .9em; color: #555; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
p.note { font-size: .9em; color: #555; }
footer { margin-top: 3em; font-size: .8em; color: #777; }
"""


# --- small HTML helpers ----------------------------------------------------------------
def _e(x) -> str:
    return html.escape(str(x), quote=True)


_LEFT = ' class="l"'


def _table(header, rows, left=1) -> str:
    def cells(tag, row):
        return "".join(f"<{tag}{_LEFT if i < left else ''}>{_e(c)}</{tag}>"
                       for i, c in enumerate(row))
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    # in a horizontally scrolling box: a table wider than the page (compare's measures
    # with many mechanisms or columns) scrolls inside it instead of widening the page
    return (f'<div class="wide"><table><thead><tr>{cells("th", header)}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _dl(pairs) -> str:
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in pairs) + "</dl>"


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


class _Doc:
    """HTML body parts plus the PNGs they embed."""

    def __init__(self, title: str, kind: str):
        self.title, self.kind = title, kind
        self.parts: list[str] = []
        self.images: dict[str, bytes] = {}

    def add(self, s: str) -> None:
        self.parts.append(s)

    def figure(self, name: str, fig, caption: str) -> None:
        if not any(fnmatch.fnmatchcase(name, pat) for pat in FIGURES[self.kind]):
            raise AssertionError(f"plot {name!r} of a {self.kind} report is not in "
                                 f"report.FIGURES[{self.kind!r}]")
        data = _png(fig)
        self.images[f"{name}.png"] = data
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        self.add(f'<figure><img src="{uri}" alt="{_e(caption)}">'
                 f"<figcaption>{_e(caption)} ({_e(name)}.png)</figcaption></figure>")

    def html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{_e(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<h1>{_e(self.title)}</h1>" + "".join(self.parts)
                + f"<footer>riskengine {_e(__version__)}</footer></body></html>\n")


# --- shared pieces ---------------------------------------------------------------------
def _num(x, digits: int = 4) -> str:
    x = float(x)
    if np.isnan(x):
        return "-"
    return f"{int(x)}" if x == int(x) and abs(x) < 1e15 else f"{x:.{digits}g}"


def _cell_name(ds, dims, idx) -> str:
    return "(" + ", ".join(str(ds[d].values[i]) if d in ds.coords else str(i)
                           for d, i in zip(dims, idx)) + ")"


def _attr_pairs(ds: xr.Dataset, skip=()) -> list:
    return [(k, v) for k, v in ds.attrs.items() if k not in (KIND_ATTR, *skip)]


def describe_release(release) -> dict:
    """What a release publishes, in words: ``{field: text}`` (table, published, totals,
    mechanism)."""
    from .release import Release
    from .release_set import ReleaseSet
    if isinstance(release, ReleaseSet):
        dims = " x ".join(f"{d} ({n})" for d, n in zip(release.dims, release.shape))
        out = {"table": f"{len(release)} tables of the same records, analysed together; "
                        f"finest table {dims}"}
        for i, r in enumerate(release.releases):
            one = describe_release(r)
            out[f"table {i + 1}"] = (f"{one['table']}; {one['published']}; totals: "
                                     f"{one['published totals']}")
        for d, g in release.groups.items():
            out[f"groups of {d}"] = "; ".join(f"{k} = {' + '.join(map(str, v))}"
                                             for k, v in g.items())
        out["mechanism"] = release.mechanism.describe()
        return out
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    dims = " x ".join(f"{d} ({n})" for d, n in zip(release.dims, release.shape))
    out = {"table": f"{release.kind} table, {dims}"}
    if release.published is None:
        out["published"] = "totals only (no interior cell)"
    else:
        pub = np.asarray(release.published, dtype=float)
        ns = int(np.isnan(pub).sum())
        out["published"] = (f"all {pub.size} interior cells" if ns == 0 else
                            f"{pub.size - ns} of {pub.size} interior cells ({ns} suppressed)")
    tot = ["grand total" if not k else "by " + " x ".join(k) for k in release.margins]
    out["published totals"] = ", ".join(tot) if tot else "none"
    out["mechanism"] = release.mechanism.describe()
    return out


def _kind(ds: xr.Dataset) -> str:
    k = ds.attrs.get(KIND_ATTR)
    if k is not None:
        if k not in KINDS:
            raise ValueError(f"attrs[{KIND_ATTR!r}] is {k!r}; known kinds: {', '.join(KINDS)}")
        return str(k)
    if "pmf" in ds and "max_prob" in ds:
        return "assess"
    if "mechanism" in ds.dims and "risk" in ds and "utility" in ds:
        return "compare"
    if "table" in ds.dims and "map_hit" in ds:
        return "simulate"
    if "stat0_summary" in ds and "quantity" in ds.dims:
        return "analyze"
    if "suppressed" in ds and "lower" in ds and "exact" in ds:
        return "audit"
    raise ValueError(f"cannot tell which riskengine result this is: no attrs[{KIND_ATTR!r}] and "
                     f"variables {sorted(ds.data_vars)} fit none of {', '.join(KINDS)}")


# --- assess ----------------------------------------------------------------------------
def _assess(doc: _Doc, ds: xr.Dataset, post=None, release=None) -> None:
    from . import plots
    dims = tuple(ds["max_prob"].dims)
    shape = tuple(ds.sizes[d] for d in dims)
    has_true = "true" in ds and "prob_exact" in ds
    info = describe_release(release) if release is not None else {}
    if not info and "release" in ds.attrs:
        info = {"release": ds.attrs["release"]}
    info.setdefault("mechanism", ds.attrs.get("mechanism", "unknown"))
    info["intruder prior"] = ds.attrs.get("prior", "unknown")
    info["inference"] = f"{ds.attrs.get('method', '?')} (route {ds.attrs.get('route', '?')})"
    if int(ds.attrs.get("approximate", 0)):
        info["inference"] += f"; APPROXIMATE (Monte Carlo): {ds.attrs.get('diagnostics', '')}"
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
    from .verdict import verdict
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


# --- compare ---------------------------------------------------------------------------
def _mean_se(a) -> str:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return "-"
    if a.size == 1:
        return f"{a[0]:.4g}"
    return f"{a.mean():.4g} ± {a.std(ddof=1) / np.sqrt(a.size):.2g}"


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
    from . import plots
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
    doc.add("<h2>Risk-utility map</h2>")
    ok = [n for n in names if n not in failed]
    doc.figure("ru_map", plots.ru_map(ds.sel(mechanism=ok) if failed else ds),
               "R-U confidentiality map: each mechanism at its mean risk and utility; faint "
               "points are single draws, bars 1.96 standard errors over draws"
               + (f" (failed, not shown: {', '.join(failed)})" if failed else ""))
    per_draw = [v for v in ds.data_vars if ds[v].dims in (("mechanism", "draw"),
                                                           ("draw", "mechanism"))]
    per_mech = [v for v in ds.data_vars if ds[v].dims == ("mechanism",)]
    cols = per_mech + [v for v in per_draw if v not in ("risk_draw", "utility_draw")]
    header = ["mechanism"] + [f"{c} (mean ± SE)" if c in per_draw else c for c in cols]
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


# --- simulate --------------------------------------------------------------------------
def _simulate(doc: _Doc, ds: xr.Dataset) -> None:
    from . import plots
    dims = tuple(d for d in ds["map_prob"].dims if d != "table")
    ntab = ds.sizes["table"]
    hit = ds["map_hit"].transpose("table", *dims).values.astype(float)
    mp = ds["map_prob"].transpose("table", *dims).values.astype(float)
    ok = np.isfinite(hit) & np.isfinite(mp)
    k, n = hit[ok].sum(), ok.sum()
    lo, hi = plots.binomial_interval(k, n)
    doc.add("<h2>Setting</h2>" + _dl([("tables", ntab),
                                       ("cells per table", int(np.prod(hit.shape[1:])))]
                                      + _attr_pairs(ds)))
    nums = [("cells (table x cell)", int(n)),
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
                     f"{np.median(counted):.4g} [{counted.min():.4g}, {counted.max():.4g}]"
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
    tab = calibration(ds)
    rows = [[f"[{tab['lower'].values[b]:.2f}, {tab['upper'].values[b]:.2f}]",
             int(tab["n"].values[b]), _num(tab["claimed"].values[b], 4),
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
        r = [_cell_name(ds, dims, idx), int(hn[idx]),
             _num(mp[(slice(None), *idx)][m].mean() if m.any() else np.nan, 4),
             _num(hk[idx] / hn[idx] if hn[idx] else np.nan, 4),
             f"[{clo[idx]:.3f}, {chi[idx]:.3f}]"]
        rows.append(r)
    if hit[0].size > _MAX_ROWS:
        doc.add(f'<p class="note">first {_MAX_ROWS} of {hit[0].size} cells.</p>')
    doc.add(_table(["cell", "tables", "mean claimed", "hit rate", "95% CI"], rows))


# --- analyze ---------------------------------------------------------------------------
def _analyze(doc: _Doc, ds: xr.Dataset) -> None:
    from . import plots
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
            for c in cols:
                if c in q:
                    val = float(el.sel(quantity=c))
                    r.append(("yes" if val else "no") if c == "covered" else _num(val, 4))
            rows.append(r)
        if s.attrs.get("plugin_note"):
            notes.append((name, s.attrs["plugin_note"]))
    present = [c for c in cols if any(c in [str(x) for x in ds[k]["quantity"].values]
                                      for k in keys)]
    doc.add("<h2>Posterior of the statistics</h2>" + _table(["statistic"] + present, rows))
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


# --- audit (magnitude releases: cell suppression, CTA) -----------------------------------
def magnitude(x) -> str:
    """A magnitude as text: up to 10 significant digits, without float noise
    (1963.2999999999997 -> ``1963.3``); ``-`` for NaN (not published)."""
    x = float(x)
    if np.isnan(x):
        return "-"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{round(x, 6) + 0.0:.10g}"


def _audit_blocks(ds: xr.Dataset) -> list:
    """``[(suffix, dims)]`` of the cell blocks an audit Dataset holds (interior first)."""
    return [(name[len("published"):], ds[name].dims) for name in ds.data_vars
            if name.startswith("published")]


def _audit_cell(ds: xr.Dataset, table_dims, bdims, idx) -> str:
    """``(North, food)``; a total names the dims it sums over ``total``, a subtotal its
    group: ``(North, total)``, ``(group 1, food)``."""
    pos = dict(zip(bdims, idx))
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
    doc.add(_table(header, rows))


# --- entry points ----------------------------------------------------------------------
def _load(obj, truth, level):
    """(kind, dataset, posterior or None)."""
    from .posterior import Posterior
    if isinstance(obj, Posterior):
        return "assess", obj.to_dataset(truth, level), obj
    if truth is not None:
        raise ValueError("truth= is only used with a Posterior")
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        try:
            with xr.open_dataset(path) as f:
                ds = f.load()
        except (ValueError, OSError, TypeError) as exc:
            raise ValueError(f"{path}: cannot read it as netCDF ({exc})") from None
        return _kind(ds), ds, None
    if isinstance(obj, xr.Dataset):
        return _kind(obj), obj, None
    raise TypeError("write_report needs an rk.Posterior, a result xarray.Dataset or the path "
                    f"of its netCDF file, got {type(obj).__name__}")


_TITLES = {"assess": "Disclosure-risk assessment of a release",
           "compare": "Comparison of protection mechanisms: risk and utility",
           "simulate": "Intruder simulation study",
           "analyze": "The user's analysis: statistics of the original table",
           "audit": "Audit of a magnitude release: what an intruder can derive"}


def render_report(obj, *, release=None, truth=None, level: float = 0.95,
                  title: str | None = None, threshold: float | None = None,
                  max_expected: float | None = None) -> tuple[str, dict]:
    """The report's HTML text and its images ``{file name: PNG bytes}``, without writing.

    Arguments as for :func:`write_report`.
    """
    _, text, images = _render(obj, release=release, truth=truth, level=level, title=title,
                              threshold=threshold, max_expected=max_expected)
    return text, images


def _render(obj, *, release, truth, level, title, threshold, max_expected) -> tuple:
    """``(kind, html, images)``."""
    kind, ds, post = _load(obj, truth, level)
    if threshold is not None or max_expected is not None:
        if kind != "assess":
            raise ValueError(f"threshold= / max_expected= set the verdict of an assess "
                             f"report, this is a {kind} result")
        ds = ds.copy()
        ds.attrs["threshold"] = 0.5 if threshold is None else float(threshold)
        if max_expected is not None:
            ds.attrs["max_expected"] = float(max_expected)
    if release is not None and kind != "assess":
        raise ValueError(f"release= is only used for an assess report, this is a {kind} result")
    doc = _Doc(title or _TITLES[kind], kind)
    if kind == "assess":
        _assess(doc, ds, post, release)
    elif kind == "compare":
        _compare(doc, ds)
    elif kind == "analyze":
        _analyze(doc, ds)
    elif kind == "audit":
        _audit(doc, ds)
    else:
        _simulate(doc, ds)
    return kind, doc.html(), doc.images


def write_report(obj, out_dir, *, release=None, truth=None, level: float = 0.95,
                 title: str | None = None, threshold: float | None = None,
                 max_expected: float | None = None) -> Path:
    """Write a self-contained HTML report and its plots as PNG files.

    Parameters
    ----------
    obj : rk.Posterior, xarray.Dataset, str or Path
        A posterior (assess report), a result dataset of ``Posterior.to_dataset``,
        ``rk.compare``, ``rk.simulate``, ``rk.analyze`` or ``rk.audit`` (the audit report
        of a suppressed or adjusted magnitude release), or the path of such a dataset's
        netCDF file.  Datasets are dispatched on ``attrs["riskengine_kind"]``.
    out_dir : str or Path
        Folder to write the report (``KIND.html``, see :func:`report_name`) and the PNGs
        into (created if needed; files of the same names are replaced, and plots of an
        earlier report of the same kind that this one does not draw are removed).
    release : rk.Release, optional
        The release a posterior came from, described at the top of an assess report.
    truth : table, optional
        The original table, for exact-disclosure risk (a Posterior only).
    level : float
        Credible level of the intervals (a Posterior only).
    title : str, optional
        Report title.
    threshold, max_expected : float, optional
        An assess report opens with the verdict of this risk policy
        (:func:`riskengine.verdict.verdict`); default: the policy stored in the dataset's
        attrs (``riskengine assess`` stores its ``--threshold``), else none.

    Returns
    -------
    Path
        The report written (``assess.html``, ``compare.html``, ``simulate.html``,
        ``analyze.html`` or ``audit.html``).  Every file is written atomically, the HTML last.

    Examples
    --------
    >>> import numpy as np, riskengine as rk, tempfile
    >>> mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    >>> rel = rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=mech)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = rk.write_report(rk.posterior(rel), d, release=rel)
    ...     sorted(p.name for p in path.parent.iterdir())
    ['assess.html', 'heatmap_max_prob.png', 'posterior_bars.png']
    """
    kind, text, images = _render(obj, release=release, truth=truth, level=level, title=title,
                                 threshold=threshold, max_expected=max_expected)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {str(out)!r} exists and is not a folder")
    for name, data in images.items():
        atomic_write_bytes(out / name, data)
    path = out / report_name(kind)
    atomic_write_bytes(path, text.encode("utf-8"))
    for stale in _figures(out, kind):       # plots of an earlier report this one lacks
        if stale.name not in images:
            stale.unlink(missing_ok=True)
    return path


def report_name(kind: str) -> str:
    """The file name of a report of ``kind``: ``"assess.html"`` and so on."""
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r}; known: {', '.join(KINDS)}")
    return f"{kind}.html"


def _figures(out: Path, kind: str) -> list:
    if not out.is_dir():
        return []
    return sorted(p for p in out.iterdir() if p.suffix == ".png" and any(
        fnmatch.fnmatchcase(p.stem, pat) for pat in FIGURES[kind]))


def remove_report(out_dir, kind: str) -> list:
    """Remove the report of ``kind`` from ``out_dir`` with its plots (``riskengine ...
    --no-report``: a report of an earlier run would describe other results).  Returns
    the paths removed; nothing else in the folder is touched."""
    out = Path(out_dir)
    gone = [p for p in [out / report_name(kind), *_figures(out, kind)] if p.is_file()]
    for p in gone:
        p.unlink()
    return gone
