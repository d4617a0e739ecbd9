"""Plots of risk, posteriors, risk-utility trade-offs and calibration (matplotlib).

Every function returns a :class:`matplotlib.figure.Figure` built directly (no
``pyplot`` state): nothing opens a window, the user's backend choice is left
alone, and ``fig.savefig(...)`` renders through Agg.  In a notebook, display a
figure by leaving it as the last expression of a cell.

- :func:`risk_heatmap` per-cell risk, published values written in the cells
- :func:`posterior_bars` per-cell posterior pmfs as small multiples
- :func:`ru_map` the R-U confidentiality map (Duncan et al.) of a ``compare`` result
- :func:`calibration` claimed ``map_prob`` against the observed ``map_hit`` rate of a
  ``simulate`` result (:func:`riskengine._simulate.calibration` gives the numbers)
- :func:`hit_rates` each cell's observed MAP hit rate with its interval, and its mean claim
- :func:`statistic_posterior` the posterior of a statistic of the original table
  (``rk.analyze``) with its HDI, the plug-in value on the published table and the truth
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from scipy import stats

from ._simulate import calibration as calibration_stats

__all__ = ["MEASURES", "binomial_interval", "calibration", "hit_rates",
           "posterior_bars", "risk_heatmap", "ru_map", "statistic_posterior"]

#: per-cell measures a heatmap can show, with their colour-bar labels
MEASURES = {
    "max_prob": "Pr(mode | release)",
    "prob_exact": "Pr(true value | release)",
    "prob_published": "Pr(published value | release)",
    "interval_width": "credible-interval width",
    "sd": "posterior sd",
    "mean": "posterior mean",
    "mode": "posterior mode",
}
_PROBABILITIES = ("max_prob", "prob_exact", "prob_published", "map_prob", "map_hit")
MAX_ANNOTATED = 400  # cells; beyond this the numbers are unreadable and are left out


# --- inputs ----------------------------------------------------------------------------
def _summary(obj, truth=None, level: float = 0.95) -> xr.Dataset:
    """Per-cell summary Dataset of a Posterior or of an assess Dataset."""
    from ._posterior import Posterior
    if isinstance(obj, Posterior):
        return obj.summary(truth, level)
    if isinstance(obj, xr.Dataset):
        if truth is not None:
            raise ValueError("truth= is only used with a Posterior; a Dataset carries its "
                             "own 'true' variable")
        return obj
    raise TypeError(f"expected an rk.Posterior or an xarray.Dataset, got {type(obj).__name__}")


def _cell_dims(ds: xr.Dataset, var: str) -> tuple:
    dims = tuple(ds[var].dims)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"variable {var!r} has dims {dims}: plots need a 1-, 2- or 3-D table")
    return dims


def _measure(ds: xr.Dataset, measure: str) -> xr.DataArray:
    if not isinstance(measure, str):
        raise TypeError(f"measure must be a str, got {type(measure).__name__}")
    if measure == "interval_width" and "lower" in ds and "upper" in ds:
        return (ds["upper"] - ds["lower"]).rename("interval_width")
    if measure in ds.data_vars:
        return ds[measure]
    known = sorted({*ds.data_vars, *(["interval_width"] if "lower" in ds else [])} - {"pmf"})
    hint = " (prob_exact needs the true table: pass truth=)" if measure == "prob_exact" else ""
    raise ValueError(f"unknown measure {measure!r}{hint}; this input has: {', '.join(known)}")


def _published(ds: xr.Dataset, published, dims, shape):
    if published is False:
        return None
    if published is None:
        return ds["published"].transpose(*dims).values if "published" in ds else None
    if isinstance(published, xr.DataArray):
        published = published.transpose(*dims).values
    elif hasattr(published, "data") and isinstance(published.data, xr.DataArray):  # rk.Table
        published = published.data.transpose(*dims).values
    arr = np.asarray(published, dtype=float)
    if arr.shape != shape:
        raise ValueError(f"published has shape {arr.shape}, the table {shape}")
    return arr


def _labels(ds, dim) -> list:
    if dim in ds.coords:
        return [str(x) for x in ds.coords[dim].values]
    return [str(i) for i in range(ds.sizes[dim])]


def _fmt(v) -> str:
    v = float(v)
    if math.isnan(v):
        return "·"
    return f"{int(v)}" if v == int(v) else f"{v:.3g}"


# --- heatmap ---------------------------------------------------------------------------
def risk_heatmap(obj, published=None, measure: str = "max_prob", *, truth=None,
                 level: float = 0.95, cmap: str = "Reds") -> Figure:
    """Per-cell risk as a heatmap, with the published values written in the cells.

    Parameters
    ----------
    obj : rk.Posterior or xarray.Dataset
        A posterior, or its per-cell dataset (``Posterior.to_dataset`` /
        ``summary``, or such a dataset read back from netCDF).
    published : array-like, False or None
        Values written in the cells; ``None`` takes the release's published
        values, ``False`` writes none.  ``NaN`` (suppressed) shows as ``·``.
    measure : str
        The colour: ``"max_prob"``, ``"prob_exact"`` (needs the truth),
        ``"prob_published"``, ``"interval_width"``, ``"sd"`` or any per-cell
        variable of the dataset.  Probabilities use the fixed scale [0, 1].
    truth : table, optional
        The original table, for ``measure="prob_exact"`` on a Posterior.
    level : float
        Credible level for ``interval_width``.
    cmap : str
        Matplotlib colour map.

    Returns
    -------
    matplotlib.figure.Figure
        Rows: the first dim, columns: the second; a 3-D table gets one panel
        per category of its last dim.  Tables over 400 cells are drawn without
        the numbers.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    >>> post = rk.posterior(rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=mech))
    >>> fig = rk.plots.risk_heatmap(post)
    >>> len(fig.axes[0].texts)
    9
    """
    ds = _summary(obj, truth, level)
    da = _measure(ds, measure)
    dims = tuple(da.dims)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"measure {measure!r} has dims {dims}: the heatmap needs a 1-, 2- or "
                         "3-D table")
    vals = da.transpose(*dims).values.astype(float)
    pub = _published(ds, published, dims, vals.shape)
    if len(dims) == 1:
        vals, pub = vals[None, :], (None if pub is None else pub[None, :])
    if vals.ndim == 2:
        vals, pub = vals[..., None], (None if pub is None else pub[..., None])
    nr, nc, nf = vals.shape
    prob = measure in _PROBABILITIES
    finite = vals[np.isfinite(vals)]
    vmin, vmax = (0.0, 1.0) if prob else ((float(finite.min()), float(finite.max()))
                                          if finite.size else (0.0, 1.0))
    if vmax == vmin:
        vmax = vmin + 1.0
    fcols = min(nf, 3)
    frows = math.ceil(nf / fcols)
    w = min(max(2.2, 0.55 * nc + 1.2), 9.0)
    h = min(max(1.4, 0.45 * nr + 0.9), 8.0)
    fig = Figure(figsize=(w * fcols + 1.2, h * frows + 0.6), layout="constrained")
    axes = fig.subplots(frows, fcols, squeeze=False)
    annotate = pub is not None and nr * nc * nf <= MAX_ANNOTATED
    im = None
    for f, ax in enumerate(axes.flat):
        if f >= nf:
            ax.set_visible(False)
            continue
        im = ax.imshow(vals[:, :, f], cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                       interpolation="nearest")
        if len(dims) == 1:
            ax.set_yticks([])
            ax.set_xlabel(dims[0])
            ax.set_xticks(range(nc), _labels(ds, dims[0]), rotation=_rot(nc))
        else:
            ax.set_ylabel(dims[0])
            ax.set_xlabel(dims[1])
            ax.set_yticks(range(nr), _labels(ds, dims[0]))
            ax.set_xticks(range(nc), _labels(ds, dims[1]), rotation=_rot(nc))
        if len(dims) == 3:
            ax.set_title(f"{dims[2]} = {_labels(ds, dims[2])[f]}")
        if annotate:
            for i in range(nr):
                for j in range(nc):
                    v = vals[i, j, f]
                    dark = np.isfinite(v) and (v - vmin) / (vmax - vmin) > 0.55
                    ax.text(j, i, _fmt(pub[i, j, f]), ha="center", va="center", fontsize=9,
                            color="white" if dark else "black")
    fig.colorbar(im, ax=axes.ravel().tolist(), label=MEASURES.get(measure, measure),
                 shrink=0.9)
    what = " (published value in each cell)" if annotate else ""
    fig.suptitle(f"{measure} by cell{what}", fontsize=11)
    return fig


def _rot(n: int) -> int:
    return 0 if n <= 8 else 90


# --- posterior bars --------------------------------------------------------------------
def _pmf_getter(obj, ds):
    """(index tuple) -> (values, probabilities) over the support of that cell's pmf."""
    from ._posterior import Posterior
    if isinstance(obj, Posterior):
        def get(idx):
            return obj.start[idx] + np.arange(obj.width), obj.probs[idx]
    else:
        if "pmf" not in ds:
            raise ValueError("posterior_bars needs the pmf: pass an rk.Posterior or a dataset "
                             "with a 'pmf' variable (Posterior.to_dataset)")
        pmf = ds["pmf"].transpose(*[d for d in ds["pmf"].dims if d != "value"], "value")
        vals = np.asarray(pmf["value"].values, dtype=np.int64)
        dense = pmf.values

        def get(idx):
            return vals, dense[idx]
    return get


def _resolve_cells(cells, dims, ds) -> list:
    labels = {d: _labels(ds, d) for d in dims}
    out = []
    for c in cells:
        if isinstance(c, dict):
            missing = [d for d in dims if d not in c]
            if missing or len(c) != len(dims):
                raise ValueError(f"cell {c!r} must name every dim {dims}")
            c = tuple(c[d] for d in dims)
        elif isinstance(c, (str, int, np.integer)) and len(dims) == 1:
            c = (c,)
        if not isinstance(c, tuple) or len(c) != len(dims):
            raise ValueError(f"cell {c!r}: give a tuple of {len(dims)} labels (one per dim "
                             f"{dims}) or a dict {{dim: label}}")
        idx = []
        for d, lab in zip(dims, c):
            if str(lab) not in labels[d]:
                raise ValueError(f"cell {c!r}: {lab!r} is not a category of {d!r}; "
                                 f"categories: {labels[d]}")
            idx.append(labels[d].index(str(lab)))
        out.append(tuple(idx))
    return out


def posterior_bars(post, cells=None, *, truth=None, published=None, max_cells: int = 36,
                   tail: float = 1e-4) -> Figure:
    """Each cell's posterior pmf as a bar chart, one small panel per cell.

    Parameters
    ----------
    post : rk.Posterior or xarray.Dataset
        A posterior, or a dataset with its dense ``pmf`` (``Posterior.to_dataset``).
    cells : list, optional
        Cells to show, each a tuple of category labels (``("v_1", "w_2")``) or a
        dict ``{dim: label}``.  Default: every cell when the table has at most
        ``max_cells`` cells, else the ``max_cells`` riskiest (largest
        ``prob_exact`` when the truth is known, else largest ``max_prob``).
    truth : table, optional
        Original table (a Posterior only; a dataset uses its ``true`` variable).
    published : array-like, False or None
        Published values to mark (dashed line); ``None`` takes the release's.
    max_cells : int
        Cap on the default selection.
    tail : float
        Values with probability below ``tail`` at either end of a cell's support are
        not drawn (the title says how much mass is left out when it is not zero).

    Returns
    -------
    matplotlib.figure.Figure
        For 2-D tables of at most 8 columns the panels are laid out as the table.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    >>> t = np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])
    >>> post = rk.posterior(rk.Release(t, mechanism=mech))
    >>> fig = rk.plots.posterior_bars(post, truth=t)
    >>> sum(ax.get_visible() for ax in fig.axes)
    9
    """
    if not isinstance(max_cells, (int, np.integer)) or isinstance(max_cells, bool):
        raise TypeError(f"max_cells must be an int, got {type(max_cells).__name__}")
    if max_cells < 1:
        raise ValueError(f"max_cells must be >= 1, got {max_cells}")
    ds = _summary(post, truth)
    dims = (_cell_dims(ds, "max_prob") if "max_prob" in ds
            else tuple(d for d in ds["pmf"].dims if d != "value") if "pmf" in ds else ())
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"posterior_bars needs the posterior of a 1-, 2- or 3-D table; "
                         f"got dims {dims}")
    shape = tuple(ds.sizes[d] for d in dims)
    get = _pmf_getter(post, ds)
    true = ds["true"].transpose(*dims).values if "true" in ds else None
    pub = _published(ds, published, dims, shape)
    note = ""
    if cells is None:
        idxs = list(np.ndindex(*shape))
        if len(idxs) > max_cells:
            key = "prob_exact" if "prob_exact" in ds else "max_prob"
            risk = ds[key].transpose(*dims).values.ravel()
            order = np.argsort(-risk, kind="stable")[:max_cells]
            idxs = [np.unravel_index(int(k), shape) for k in order]
            note = f" ({max_cells} of {len(risk)} cells: the largest {key})"
    else:
        idxs = _resolve_cells(list(cells), dims, ds)
        if not idxs:
            raise ValueError("cells is empty: give at least one cell")
    n = len(idxs)
    grid = cells is None and len(dims) == 2 and shape[1] <= 8 and n == shape[0] * shape[1]
    ncols = shape[1] if grid else min(n, max(1, math.ceil(math.sqrt(n))))
    nrows = math.ceil(n / ncols)
    narrow = ncols < 3  # legend in one column under the title
    top = 1.05 if narrow else 0.62
    W, H = 2.3 * ncols + 0.6, 1.8 * nrows + 0.5 + top
    fig = Figure(figsize=(W, H))
    # fixed margins (inches), not a layout engine: a grid of many panels lays out 2x faster
    axes = fig.subplots(nrows, ncols, squeeze=False, gridspec_kw={
        "left": 0.62 / W, "right": 1 - 0.12 / W, "bottom": 0.5 / H, "top": 1 - top / H,
        "wspace": 0.28, "hspace": 0.55})
    labels = {d: _labels(ds, d) for d in dims}
    handles = {}
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
            continue
        idx = tuple(int(i) for i in idxs[k])
        v, p = get(idx)
        keep = np.flatnonzero(p >= tail)
        lo, hi = (keep[0], keep[-1] + 1) if keep.size else (0, len(p))
        out_mass = float(p[:lo].sum() + p[hi:].sum())
        h = ax.bar(v[lo:hi], p[lo:hi], width=0.85, color="#7a9cc6")
        handles.setdefault("posterior", h)
        if pub is not None and np.isfinite(pub[idx]):
            handles["published"] = ax.axvline(pub[idx], color="black", ls="--", lw=1.2,
                                              zorder=4)
        if true is not None:  # under the dashed published line where the two coincide
            handles["true value"] = ax.axvline(true[idx], color="#c0392b", lw=2.2, zorder=3)
        name = "(" + ", ".join(labels[d][i] for d, i in zip(dims, idx)) + ")"
        extra = f"  [{out_mass:.0e} not shown]" if out_mass > 0 else ""
        ax.set_title(name + extra, fontsize=8)
        ax.set_ylim(0, 1.05 * max(float(p.max()), 1e-12))
        pad = 0.6 + (hi - lo < 3)  # a narrow support still gets integer ticks
        left = v[lo] - pad if v[lo] < 0 else max(v[lo] - pad, -0.6)  # counts: no ticks < 0
        ax.set_xlim(left, v[hi - 1] + pad)
        ax.tick_params(labelsize=7)
        ax.xaxis.get_major_locator().set_params(integer=True)
    for k, ax in enumerate(axes.flat):
        if k < n and k + ncols >= n:  # the lowest panel of its column
            ax.set_xlabel("original value", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("probability", fontsize=8)
    fig.legend(list(handles.values()), list(handles), fontsize=8,
               loc="lower left" if narrow else "upper right",
               bbox_to_anchor=(0.01, 1 - (top - 0.05) / H) if narrow else None,
               ncols=1 if narrow else len(handles))
    fig.suptitle("posterior of each cell" + note, fontsize=11, x=0.02, ha="left")
    return fig


# --- R-U map ---------------------------------------------------------------------------
def _axis_label(da: xr.DataArray, name: str) -> str:
    lab = str(da.attrs.get("long_name", name))
    d = da.attrs.get("definition")
    if d and len(str(d)) <= 60:
        lab += f"\n{d}"
    return lab


def ru_map(compare_ds: xr.Dataset, *, z: float = 1.96) -> Figure:
    """The R-U confidentiality map (Duncan, Keller-McNulty & Stokes) of a ``compare`` result.

    Disclosure risk on the horizontal axis, data utility on the vertical one
    (higher is better): each mechanism is one labelled point at its ``risk`` and
    ``utility``, its per-draw values (``risk_draw``, ``utility_draw``) a faint
    scatter behind it, and error bars of ``z`` standard errors of the mean over
    the draws (a 95% Monte Carlo interval for ``z = 1.96``; none with one draw).
    Labels are placed where they overlap no other label or point, inside the axes
    (mechanisms of near-equal risk and utility: farther out, with a leader line).

    Parameters
    ----------
    compare_ds : xarray.Dataset
        Output of ``rk.compare`` (dims ``mechanism``, ``draw``).
    z : float
        Half-width of the error bars in standard errors.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, xarray as xr, riskengine as rk
    >>> r = np.array([[0.2, 0.3], [0.6, 0.5]]); u = np.array([[0.4, 0.5], [0.9, 0.8]])
    >>> ds = xr.Dataset({"risk": ("mechanism", r.mean(1)), "utility": ("mechanism", u.mean(1)),
    ...                  "risk_draw": (("mechanism", "draw"), r),
    ...                  "utility_draw": (("mechanism", "draw"), u)},
    ...                 coords={"mechanism": ["rounding", "cyclic"]})
    >>> [t.get_text() for t in rk.plots.ru_map(ds).axes[0].texts]
    ['rounding', 'cyclic']
    """
    if not isinstance(compare_ds, xr.Dataset):
        raise TypeError(f"ru_map needs the xarray.Dataset of rk.compare, got "
                        f"{type(compare_ds).__name__}")
    for v in ("risk", "utility"):
        if v not in compare_ds or compare_ds[v].dims != ("mechanism",):
            raise ValueError(f"ru_map needs a variable {v!r} with dims ('mechanism',) "
                             "(the output of rk.compare)")
    ds = compare_ds
    names = _labels(ds, "mechanism")
    risk, util = ds["risk"].values.astype(float), ds["utility"].values.astype(float)
    fig = Figure(figsize=(7, 5.2), layout="constrained")
    ax = fig.subplots()
    colors = [f"C{i % 10}" for i in range(len(names))]
    has_draws = "risk_draw" in ds and "utility_draw" in ds
    for i, name in enumerate(names):
        xerr = yerr = None
        if has_draws:
            rd = ds["risk_draw"].transpose("mechanism", "draw").values[i].astype(float)
            ud = ds["utility_draw"].transpose("mechanism", "draw").values[i].astype(float)
            ax.scatter(rd, ud, s=10, alpha=0.2, color=colors[i], linewidths=0)
            nr, nu = np.isfinite(rd).sum(), np.isfinite(ud).sum()
            if nr > 1:
                xerr = z * np.nanstd(rd, ddof=1) / math.sqrt(nr)
            if nu > 1:
                yerr = z * np.nanstd(ud, ddof=1) / math.sqrt(nu)
        ax.errorbar(risk[i], util[i], xerr=xerr, yerr=yerr, fmt="o", ms=7, color=colors[i],
                    capsize=3, label=name)
    ax.set_xlabel(_axis_label(ds["risk"], "disclosure risk"))
    ax.set_ylabel(_axis_label(ds["utility"], "data utility"))
    ax.grid(alpha=0.3)
    ax.margins(0.12)                        # room for the labels inside the axes
    bars = (f"; bars: ±{z:g} SE over draws" if has_draws else "")
    ax.set_title(f"R-U confidentiality map (better: up and to the left{bars})", fontsize=10)
    _place_labels(fig, ax, names, risk, util, colors)
    return fig


# --- labels that do not overlap --------------------------------------------------------
#: where a point's label may go: directions (unit steps), nearest first, then farther
#: out along each (a leader line joins a label to its point beyond the first ring)
_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
_RINGS = (6, 14, 26, 40, 58, 80, 105, 135, 170)     # points from the point


def _overlaps(a, b) -> bool:
    """Whether two display boxes ``(x0, y0, x1, y1)`` overlap (touching is not)."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _crosses(box, seg) -> bool:
    """Whether an axis-parallel segment ``((x0, y0), (x1, y1))`` (an error bar) passes
    through a display box ``(x0, y0, x1, y1)``."""
    (ax0, ay0), (ax1, ay1) = seg
    sx0, sx1, sy0, sy1 = min(ax0, ax1), max(ax0, ax1), min(ay0, ay1), max(ay0, ay1)
    return sx0 <= box[2] and box[0] <= sx1 and sy0 <= box[3] and box[1] <= sy1


def _place_labels(fig: Figure, ax, names, xs, ys, colors, fontsize: float = 9) -> list:
    """Label each point ``(xs[i], ys[i])`` with ``names[i]`` where no label overlaps
    another label or a point, inside the axes: deterministic greedy placement.

    The figure is laid out first (its constrained layout fixes where the axes are); then,
    point by point (those with the most neighbours first), of the candidate spots
    :data:`_DIRECTIONS` x :data:`_RINGS` inside the axes, the one that overlaps the
    fewest labels and points (none, unless there is no room) is taken, and among those
    the one that crosses the fewest error bars and is nearest the point; a label away
    from its point gets a leader line.  Offsets are in points, so the figure can be
    saved at any dpi; the labels are left out of the layout, so saving does not move the
    axes under them.  Returns the annotations, in the order of ``names`` (also
    ``ax.texts``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)                # a renderer to measure text with
    fig.draw_without_rendering()            # the constrained layout: axes final
    renderer = fig.canvas.get_renderer()
    px = fig.dpi / 72.0                     # display pixels per point
    xy = ax.transData.transform(np.c_[np.asarray(xs, float), np.asarray(ys, float)])
    ok = np.isfinite(xy).all(axis=1)
    frame = ax.get_window_extent(renderer)
    pad = 2 * px
    inside = (frame.x0 + pad, frame.y0 + pad, frame.x1 - pad, frame.y1 - pad)
    r = 4.5 * px                            # a marker's half width (ms=7 -> 3.5 pt, + room)
    markers = [(x - r, y - r, x + r, y + r) for (x, y), good in zip(xy, ok) if good]
    segments = [seg for c in ax.collections if isinstance(c, LineCollection)
                for seg in (c.get_transform().transform(s) for s in c.get_segments())
                if len(seg) == 2]             # the error bars: better not written over
    sizes = []
    for name in names:                      # each label's size, measured once
        t = ax.text(0, 0, name, fontsize=fontsize)
        bb = t.get_window_extent(renderer)
        sizes.append((bb.width, bb.height))
        t.remove()
    # crowded points first: they have the fewest free spots
    near = [int(((np.abs(xy[ok] - xy[i]) < 60 * px).all(axis=1)).sum()) if ok[i] else 0
            for i in range(len(names))]
    placed, spots = [], {}
    gap = 1.5 * px                          # labels keep this far apart
    for i in sorted(range(len(names)), key=lambda i: (-near[i], i)):
        if not ok[i]:
            continue
        w, h = sizes[i]
        best = None
        for k, ring in enumerate(_RINGS):
            for j, (dx, dy) in enumerate(_DIRECTIONS):
                ox, oy = dx * ring * px, dy * ring * px
                x0 = xy[i, 0] + ox - (w if dx < 0 else w / 2 if dx == 0 else 0)
                y0 = xy[i, 1] + oy - (h if dy < 0 else h / 2 if dy == 0 else 0)
                box = (x0 - gap, y0 - gap, x0 + w + gap, y0 + h + gap)
                if not (box[0] >= inside[0] and box[1] >= inside[1]
                        and box[2] <= inside[2] and box[3] <= inside[3]):
                    continue
                hard = (sum(_overlaps(box, b) for b in placed)
                        + sum(_overlaps(box, m) for m in markers))
                soft = sum(_crosses(box, seg) for seg in segments)
                # no overlap first; then crossing few error bars; then near the point
                cost = (hard, 3 * soft + k, j)
                if best is None or cost < best[0]:
                    best = (cost, k, dx, dy, box)
        if best is None:                    # nothing fits inside: beside the point
            best = (None, 0, 1, 1, (xy[i, 0], xy[i, 1], xy[i, 0] + w, xy[i, 1] + h))
        placed.append(best[4])
        spots[i] = best[1:4]
    anns = []
    for i, name in enumerate(names):        # in the order of names: ax.texts
        k, dx, dy = spots.get(i, (0, 1, 1))
        arrow = ({"arrowstyle": "-", "color": colors[i], "lw": 0.6, "alpha": 0.7,
                  "shrinkA": 0, "shrinkB": 4} if k > 0 else None)  # away from it: a leader
        a = ax.annotate(name, (xs[i], ys[i]), xytext=(dx * _RINGS[k], dy * _RINGS[k]),
                        textcoords="offset points", fontsize=fontsize, color=colors[i],
                        ha="right" if dx < 0 else "center" if dx == 0 else "left",
                        va="top" if dy < 0 else "center" if dy == 0 else "bottom",
                        arrowprops=arrow, annotation_clip=False,
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                              "alpha": 0.75})
        a.set_in_layout(False)              # saving does not move the axes under it
        a.set_visible(bool(ok[i]))          # a point that is not drawn has no label
        anns.append(a)
    return anns


# --- calibration -----------------------------------------------------------------------
def binomial_interval(k, n, level: float = 0.95):
    """Exact (Clopper-Pearson) interval for a binomial proportion k/n; NaN where n = 0.

    Parameters
    ----------
    k : array-like
        Numbers of successes.
    n : array-like
        Numbers of trials (broadcast with ``k``).
    level : float, default 0.95
        The confidence level.

    Returns
    -------
    lower, upper : numpy.ndarray
        The interval's bounds, NaN where ``n <= 0``.

    Examples
    --------
    >>> [round(float(x), 4) for x in binomial_interval(3, 10)]
    [0.0667, 0.6525]
    """
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
        hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, n - k), 1.0)
    bad = n <= 0
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def calibration(sim_ds: xr.Dataset, bins=10, level: float = 0.95) -> Figure:
    """Calibration plot: claimed ``map_prob`` against the observed ``map_hit`` rate.

    Each non-empty bin of :func:`riskengine._simulate.calibration` is a point at (mean
    claimed, observed rate) with its count written beside it, and the bar of where a
    calibrated intruder's rate falls (claimed +- the cluster-robust interval at ``level``);
    the diagonal is perfect calibration; a lower panel shows the counts.

    Parameters
    ----------
    sim_ds : xarray.Dataset
        The output of :func:`riskengine.simulate`: ``map_prob`` and ``map_hit`` over
        ``table`` and the table's dims.
    bins : int or sequence of float, default 10
        A number of equal bins on [0, 1], or increasing bin edges.
    level : float, default 0.95
        The level of the calibrated range.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not attached to pyplot: save it with ``fig.savefig``).

    Examples
    --------
    >>> import numpy as np, xarray as xr, riskengine as rk
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=(50, 2, 2))
    >>> ds = xr.Dataset({"map_prob": (("table", "v", "w"), p),
    ...                  "map_hit": (("table", "v", "w"), rng.uniform(size=p.shape) < p)})
    >>> fig = rk.plots.calibration(ds, bins=5)
    >>> fig.axes[0].get_xlabel()
    'claimed: map_prob (mean in bin)'
    """
    tab = calibration_stats(sim_ds, bins, level)
    fig = Figure(figsize=(6, 6.4), layout="constrained")
    ax, axn = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    ax.plot([0, 1], [0, 1], color="grey", ls="--", lw=1, label="perfect calibration")
    ne = tab["n"].values > 0
    x, y = tab["claimed"].values[ne], tab["observed"].values[ne]
    ax.vlines(x, tab["ci_low"].values[ne], tab["ci_high"].values[ne], color="C1", lw=6,
              alpha=0.35, label=f"calibrated range, {round(level * 100)}% (cluster-robust)")
    ax.plot(x, y, "o", color="C0", label="observed hit rate")
    for xi, yi, ni in zip(x, y, tab["n"].values[ne]):
        ax.annotate(f"n={int(ni)}", (xi, yi), xytext=(5, -10), textcoords="offset points",
                    fontsize=7, color="#444444")
    ax.set_xlim(float(tab["lower"].values[0]), float(tab["upper"].values[-1]))
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("observed: map_hit rate")
    ax.set_xlabel("claimed: map_prob (mean in bin)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(f"calibration of the intruder's MAP guess ({tab.attrs['n_cells']} cells)",
                 fontsize=10)
    axn.bar(tab["lower"].values, tab["n"].values,
            width=tab["upper"].values - tab["lower"].values, align="edge", color="#bbbbbb",
            edgecolor="white")
    axn.set_ylabel("cells")
    axn.set_xlabel("map_prob")
    return fig


def hit_rates(sim_ds: xr.Dataset, level: float = 0.95, max_cells: int = 60) -> Figure:
    """Each cell's MAP hit rate over the simulated tables, with its exact binomial
    interval (Clopper-Pearson at ``level``), beside the cell's mean claimed ``map_prob``.

    Cells in table order; a table of more than ``max_cells`` cells shows the first
    ``max_cells`` (the title says so).

    Parameters
    ----------
    sim_ds : xarray.Dataset
        The output of :func:`riskengine.simulate`: ``map_prob`` and ``map_hit`` over
        ``table`` and the table's dims.
    level : float, default 0.95
        The level of the binomial intervals.
    max_cells : int, default 60
        The most cells shown.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not attached to pyplot: save it with ``fig.savefig``).

    Examples
    --------
    >>> import numpy as np, xarray as xr, riskengine as rk
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=(40, 2, 3))
    >>> ds = xr.Dataset({"map_prob": (("table", "v", "w"), p),
    ...                  "map_hit": (("table", "v", "w"), rng.uniform(size=p.shape) < p)})
    >>> len(rk.plots.hit_rates(ds).axes[0].get_xticklabels())
    6
    """
    calibration_stats(sim_ds, 1, level)  # validates the input
    dims = tuple(d for d in sim_ds["map_prob"].dims if d != "table")
    p = sim_ds["map_prob"].transpose("table", *dims).values.astype(float)
    h = sim_ds["map_hit"].transpose("table", *dims).values.astype(float)
    ok = np.isfinite(p) & np.isfinite(h)
    n = ok.sum(0).ravel()
    k = np.where(ok, h, 0.0).sum(0).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        claimed = np.where(ok, p, 0.0).sum(0).ravel() / n
        rate = k / n
    lo, hi = binomial_interval(k, n, level)
    shape = p.shape[1:]
    labels = {d: _labels(sim_ds, d) for d in dims}
    names = ["(" + ", ".join(labels[d][i] for d, i in zip(dims, idx)) + ")"
             for idx in np.ndindex(*shape)] if dims else ["table"]
    m = min(len(names), max_cells)
    x = np.arange(m)
    fig = Figure(figsize=(min(max(4.0, 0.35 * m + 1.5), 16.0), 4.2), layout="constrained")
    ax = fig.subplots()
    ax.errorbar(x, rate[:m], yerr=np.vstack([rate[:m] - lo[:m], hi[:m] - rate[:m]]), fmt="o",
                color="C0", capsize=3,
                label=f"observed hit rate, {round(level * 100)}% binomial interval")
    ax.plot(x, claimed[:m], "x", color="C3", ms=7, label="mean claimed map_prob")
    ax.set_xticks(x, names[:m], rotation=90 if m > 8 else 0, fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("cell")
    ax.set_ylabel("Pr(MAP guess = truth)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="best")
    more = f" (first {m} of {len(names)} cells)" if m < len(names) else ""
    ax.set_title(f"hit rate by cell over {p.shape[0]} tables{more}", fontsize=10)
    return fig


# --- the user's analysis ---------------------------------------------------------------
def statistic_posterior(draws: xr.DataArray, summary: xr.Dataset | xr.DataArray, *,
                        max_elements: int = 40) -> Figure:
    """Posterior of one statistic of the original table (a result of ``rk.analyze``).

    A scalar statistic: histogram of its draws, the HDI shaded, the plug-in value on the
    published table (dashed) and the true value (solid) when known.  A vector statistic
    (proportions, model coefficients): one row per element (the first ``max_elements``),
    posterior mean with its HDI, plug-in (x) and truth (o).

    Parameters
    ----------
    draws : xarray.DataArray
        The statistic's posterior draws, dims ``(draw, ...)``: ``Analysis.values[name]``.
    summary : xarray.Dataset or xarray.DataArray
        Its summary: ``Analysis.summary[name]``, or the ``stat{k}_summary`` DataArray of
        ``Analysis.to_dataset()`` (dim ``quantity``).
    max_elements : int, default 40
        The most elements of a vector statistic shown.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (not attached to pyplot: save it with ``fig.savefig``).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[5, 2], [1, 6]]), dims=("a", "b"))
    >>> res = rk.analyze(rk.MarginsOnly().protect(t), None, "cramers_v", draws=200,
    ...                  rng=np.random.default_rng(0))
    >>> fig = rk.plots.statistic_posterior(res.values["cramers_v"], res["cramers_v"])
    >>> fig.axes[0].get_xlabel()
    'cramers_v'
    """
    if isinstance(summary, xr.DataArray):
        summary = summary.to_dataset(dim="quantity")
    name = str(draws.name or summary.attrs.get("statistic", "statistic"))
    other = [d for d in draws.dims if d not in ("draw", "chain")]
    v = draws.transpose(*[d for d in draws.dims if d in ("chain", "draw")], *other).values
    v = v.reshape(-1, *v.shape[draws.ndim - len(other):]).astype(float)
    level = summary.attrs.get("level", None)
    hdi_lab = f"{round(100 * float(level))}% HDI" if level else "HDI"
    if not other:
        fig = Figure(figsize=(6.4, 3.6), layout="constrained")
        ax = fig.subplots()
        x = v[np.isfinite(v)]
        uniq = np.unique(x)
        bins = uniq.size if uniq.size <= 30 else 40
        ax.hist(x, bins=bins, color="C0", alpha=0.75, density=True)
        lo, hi = float(summary["hdi_lower"]), float(summary["hdi_upper"])
        ax.axvspan(lo, hi, color="C0", alpha=0.12, label=hdi_lab)
        if "plugin" in summary and np.isfinite(float(summary["plugin"])):
            ax.axvline(float(summary["plugin"]), color="C3", ls="--",
                       label="plug-in (published table)")
        if "true" in summary:
            ax.axvline(float(summary["true"]), color="k", lw=1.5, label="true value")
        ax.set_xlabel(name)
        ax.set_ylabel("posterior density")
        ax.legend(fontsize=8, frameon=False)
        return fig
    flat = v.reshape(v.shape[0], -1)
    n = min(flat.shape[1], max_elements)
    labels = [",".join(str(x) for x in idx) for idx in
              np.ndindex(*[draws.sizes[d] for d in other])]
    if all(d in draws.coords for d in other):
        labels = [",".join(str(draws.coords[d].values[i]) for d, i in zip(other, idx))
                  for idx in np.ndindex(*[draws.sizes[d] for d in other])]

    def flat_of(k):
        return summary[k].transpose(*other).values.reshape(-1).astype(float)

    fig = Figure(figsize=(6.4, 0.8 + 0.28 * n), layout="constrained")
    ax = fig.subplots()
    y = np.arange(n)[::-1]
    mean, lo, hi = flat_of("mean")[:n], flat_of("hdi_lower")[:n], flat_of("hdi_upper")[:n]
    ax.hlines(y, lo, hi, color="C0", lw=2, label=hdi_lab)
    ax.plot(mean, y, "|", color="C0", ms=10, label="posterior mean")
    if "plugin" in summary and np.isfinite(flat_of("plugin")[:n]).any():
        ax.plot(flat_of("plugin")[:n], y, "x", color="C3", label="plug-in (published table)")
    if "true" in summary:
        ax.plot(flat_of("true")[:n], y, "o", mfc="none", color="k", label="true value")
    ax.set_yticks(y, labels[:n], fontsize=8)
    ax.set_xlabel(name if flat.shape[1] <= max_elements else
                  f"{name} (first {max_elements} of {flat.shape[1]})")
    ax.legend(fontsize=8, frameon=False, loc="best")
    ax.grid(axis="x", alpha=0.3)
    return fig
