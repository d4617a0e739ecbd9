"""riskengine.plots: each plot's artists checked against the numbers it draws.

Synthetic ``compare`` / ``simulate`` datasets follow the schema of issue 6
(``compare_ds``, ``simulate_ds`` in tests/uses/synthetic.py; test_report.py uses them too).
"""

import math

import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from scipy import stats

import riskengine as rk
from riskengine import plots
from riskengine._io import read_table
from riskengine.cli import _bundled
from riskengine._simulate import calibration
from tests.reference.measures import calibration_bins
from tests.uses.synthetic import compare_ds, simulate_ds


# --- inputs ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def seed003():
    """Seed 003's 4 x 4 example: its posterior, release and true table."""
    rel = rk.Release.load(_bundled("seed003_release.json"))
    truth = read_table(_bundled("seed003_original.csv"))
    return rk.posterior(rel), rel, truth.data.values


def _images(fig):
    return [im for ax in fig.axes for im in ax.get_images()]


# --- risk_heatmap ----------------------------------------------------------------------
def test_heatmap_2d_colours_are_the_measure_and_texts_the_published(seed003):
    post, rel, _ = seed003
    fig = plots.risk_heatmap(post)
    assert isinstance(fig, Figure)
    (im,) = _images(fig)
    assert isinstance(im, AxesImage)
    np.testing.assert_allclose(im.get_array(), post.max_prob().values)
    assert im.get_clim() == (0.0, 1.0)
    ax = im.axes
    assert ax.get_xlabel() == "w" and ax.get_ylabel() == "v"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["v_1", "v_2", "v_3", "v_4"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w_1", "w_2", "w_3", "w_4"]
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in ax.texts}
    assert len(ax.texts) == 16
    for (i, j), s in texts.items():
        assert s == str(int(rel.published[i, j]))
    cbar = [a for a in fig.axes if a is not ax]
    assert cbar and "Pr(mode" in cbar[0].get_ylabel()


def test_heatmap_prob_exact_needs_truth_and_uses_it(seed003):
    post, _, truth = seed003
    with pytest.raises(ValueError, match="prob_exact.*truth"):
        plots.risk_heatmap(post, measure="prob_exact")
    fig = plots.risk_heatmap(post, measure="prob_exact", truth=truth)
    np.testing.assert_allclose(_images(fig)[0].get_array(), post.prob_exact(truth).values)
    fig = plots.risk_heatmap(post, measure="interval_width")
    iv = post.interval(0.95)
    np.testing.assert_allclose(_images(fig)[0].get_array(), (iv["upper"] - iv["lower"]).values)


def test_heatmap_bad_input(seed003):
    post, _, _ = seed003
    with pytest.raises(ValueError, match="unknown measure 'bogus'.*max_prob"):
        plots.risk_heatmap(post, measure="bogus")
    with pytest.raises(TypeError, match="Posterior or an xarray.Dataset"):
        plots.risk_heatmap(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="published has shape"):
        plots.risk_heatmap(post, published=np.zeros((3, 3)))
    with pytest.raises(TypeError, match="measure must be a str"):
        plots.risk_heatmap(post, measure=3)


def test_heatmap_published_false_and_suppressed(seed003):
    post, rel, _ = seed003
    assert len(plots.risk_heatmap(post, published=False).axes[0].texts) == 0
    pub = np.asarray(rel.published, dtype=float)
    pub[0, 1] = np.nan
    texts = [t.get_text() for t in plots.risk_heatmap(post, published=pub).axes[0].texts]
    assert texts.count("·") == 1 and len(texts) == 16


def test_heatmap_1d_and_3d(rng):
    ds1 = xr.Dataset({"max_prob": ("c", [0.2, 0.9, 0.5]), "published": ("c", [1, 2, 3])},
                     coords={"c": ["p", "q", "r"]})
    fig = plots.risk_heatmap(ds1)
    (im,) = _images(fig)
    assert im.get_array().shape == (1, 3)
    assert im.axes.get_xlabel() == "c" and len(im.axes.texts) == 3
    shape = (2, 3, 4)
    ds3 = xr.Dataset({"max_prob": (("a", "b", "c"), rng.uniform(size=shape)),
                      "published": (("a", "b", "c"), rng.integers(0, 9, shape))},
                     coords={"c": ["c0", "c1", "c2", "c3"]})
    fig = plots.risk_heatmap(ds3)
    ims = _images(fig)
    assert len(ims) == 4
    for k, im in enumerate(ims):
        assert im.axes.get_title() == f"c = c{k}"
        np.testing.assert_allclose(im.get_array(), ds3["max_prob"].values[:, :, k])
        assert len(im.axes.texts) == 6
        assert im.axes.get_xlabel() == "b" and im.axes.get_ylabel() == "a"
    ds4 = xr.Dataset({"max_prob": (("a", "b", "c", "d"), np.zeros((1, 1, 1, 1)))})
    with pytest.raises(ValueError, match="1-, 2- or 3-D"):
        plots.risk_heatmap(ds4)


# --- posterior_bars --------------------------------------------------------------------
def _bars(ax):
    return [(round(p.get_x() + p.get_width() / 2), p.get_height()) for p in ax.patches]


def _vlines(ax):
    """{colour: x} of the vertical lines drawn."""
    return {ln.get_color(): ln.get_xdata()[0] for ln in ax.lines}


def test_posterior_bars_every_cell_with_its_pmf(seed003):
    post, rel, truth = seed003
    fig = plots.posterior_bars(post, truth=truth)
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 16
    pmf = post.pmf
    for k, ax in enumerate(axes):
        i, j = divmod(k, 4)  # panels laid out as the table
        assert ax.get_title().startswith(f"(v_{i + 1}, w_{j + 1})")
        p = pmf.values[i, j]
        support = np.flatnonzero(p >= 1e-4)
        bars = _bars(ax)
        assert [x for x, _ in bars] == pmf["value"].values[support].tolist()
        np.testing.assert_allclose([h for _, h in bars], p[support])
        lines = _vlines(ax)
        assert lines["black"] == rel.published[i, j]
        assert lines["#c0392b"] == truth[i, j]
    assert axes[-1].get_xlabel() == "original value" and axes[0].get_ylabel() == "probability"


def test_posterior_bars_from_dataset_equals_from_posterior(seed003):
    post, _, truth = seed003
    a = plots.posterior_bars(post, truth=truth)
    b = plots.posterior_bars(post.to_dataset(truth))
    for x, y in zip(a.axes, b.axes):
        np.testing.assert_allclose(_bars(x), _bars(y), rtol=1e-12)
        assert _vlines(x) == _vlines(y)


def test_posterior_bars_cells_and_cap(seed003):
    post, _, truth = seed003
    fig = plots.posterior_bars(post, cells=[("v_2", "w_3"), {"w": "w_1", "v": "v_4"}])
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["(v_2, w_3)", "(v_4, w_1)"]
    with pytest.raises(ValueError, match="'v_9' is not a category of 'v'"):
        plots.posterior_bars(post, cells=[("v_9", "w_1")])
    with pytest.raises(ValueError, match="one per dim"):
        plots.posterior_bars(post, cells=[("v_1",)])
    with pytest.raises(ValueError, match="cells is empty"):
        plots.posterior_bars(post, cells=[])
    # more cells than max_cells: the riskiest (largest Pr(true)) are shown, riskiest first
    fig = plots.posterior_bars(post, truth=truth, max_cells=3)
    axes = [a for a in fig.axes if a.get_visible()]
    pe = post.prob_exact(truth).values.ravel()
    top = np.argsort(-pe, kind="stable")[:3]
    want = [f"(v_{k // 4 + 1}, w_{k % 4 + 1})" for k in top]
    assert [a.get_title() for a in axes] == want
    assert "3 of 16 cells" in fig.get_suptitle()
    with pytest.raises(ValueError, match="max_cells must be >= 1"):
        plots.posterior_bars(post, max_cells=0)


def test_posterior_bars_needs_pmf():
    ds = xr.Dataset({"max_prob": (("a",), [0.5])})
    with pytest.raises(ValueError, match="needs the pmf"):
        plots.posterior_bars(ds)


# --- R-U map ---------------------------------------------------------------------------
def test_ru_map_one_labelled_point_per_mechanism(rng):
    ds = compare_ds(rng)
    fig = plots.ru_map(ds)
    (ax,) = fig.axes
    names = list(ds["mechanism"].values)
    assert [t.get_text() for t in ax.texts] == names
    scat = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(scat) == 3
    for i, c in enumerate(scat):  # the per-draw points
        np.testing.assert_allclose(c.get_offsets(),
                                   np.c_[ds["risk_draw"].values[i], ds["utility_draw"].values[i]])
    assert len(ax.containers) == 3
    for i, cont in enumerate(ax.containers):
        line, _, (xbar, ybar) = cont
        np.testing.assert_allclose(line.get_xydata(), [[ds["risk"][i], ds["utility"][i]]])
        rd, ud = ds["risk_draw"].values[i], ds["utility_draw"].values[i]
        half = xbar.get_segments()[0][:, 0]
        assert half[1] - half[0] == pytest.approx(2 * 1.96 * rd.std(ddof=1) / math.sqrt(5))
        half = ybar.get_segments()[0][:, 1]
        assert half[1] - half[0] == pytest.approx(2 * 1.96 * ud.std(ddof=1) / math.sqrt(5))
    assert ax.get_xlabel().startswith("disclosure risk")
    assert "sum of Pr(true value)" in ax.get_xlabel()
    assert ax.get_ylabel().startswith("data utility")


def test_ru_map_without_draws_and_bad_input(rng):
    ds = compare_ds(rng)[["risk", "utility"]]
    fig = plots.ru_map(ds)
    assert len(fig.axes[0].texts) == 3
    assert not [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    with pytest.raises(ValueError, match="'utility'"):
        plots.ru_map(ds[["risk"]])
    with pytest.raises(TypeError, match="xarray.Dataset"):
        plots.ru_map(ds["risk"])


# --- calibration -----------------------------------------------------------------------
def test_binomial_interval_matches_scipy_exact_interval():
    for k, n in [(0, 5), (5, 5), (3, 10), (17, 40), (1, 1000), (999, 1000)]:
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        lo, hi = plots.binomial_interval(k, n)
        assert (float(lo), float(hi)) == pytest.approx((ci.low, ci.high), abs=1e-10)
    lo, hi = plots.binomial_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)


def test_calibration_table_against_a_plain_loop(rng):
    ds = simulate_ds(rng, n_tables=60)
    ds["map_prob"][0, 0, 0] = 1.0  # the right edge belongs to the last bin
    ds["map_prob"][0, 0, 1] = 0.0
    ds["map_prob"][0, 0, 2] = np.nan  # left out
    edges = [0.0, 0.25, 0.5, 0.6, 1.0]
    tab = calibration(ds, bins=edges)
    p, h = ds["map_prob"].values.ravel(), ds["map_hit"].values.ravel()
    for b, (n, hits, claimed, observed) in enumerate(calibration_bins(p, h, edges)):
        assert tab["n"].values[b] == n
        assert tab["hits"].values[b] == hits
        assert tab["claimed"].values[b] == pytest.approx(claimed)
        assert tab["observed"].values[b] == pytest.approx(observed)
    assert tab.attrs["n_cells"] == p.size - 1
    with pytest.raises(ValueError, match="bins must be"):
        calibration(ds, bins=[0.5, 0.2])
    with pytest.raises(ValueError, match="bins must be >= 1"):
        calibration(ds, bins=0)
    with pytest.raises(ValueError, match="'map_hit'"):
        calibration(ds[["map_prob"]])


def test_calibration_detects_over_confidence(rng):
    """Calibrated synthetic data: every bin's observed rate is in its calibrated range (bins
    of ~360 cells, 95% ranges: all 10 hold with probability ~0.6, so allow one miss);
    over-confident data (hit probability map_prob**3) misses in most bins."""
    good = calibration(simulate_ds(rng, n_tables=400))
    cover = (good["ci_low"] <= good["observed"]) & (good["observed"] <= good["ci_high"])
    assert int(cover.sum()) >= 9
    bad = calibration(simulate_ds(rng, n_tables=400, calibrated=False))
    cover = (bad["ci_low"] <= bad["observed"]) & (bad["observed"] <= bad["ci_high"])
    assert int(cover.sum()) <= 3


def test_calibration_plot_artists(rng):
    ds = simulate_ds(rng, n_tables=50)
    ds["map_prob"][:] = np.clip(ds["map_prob"], 0.31, 1.0)  # bins below 0.3 empty
    fig = plots.calibration(ds, bins=10)
    ax, axn = fig.axes
    tab = calibration(ds, bins=10)
    ne = tab["n"].values > 0
    assert ne.sum() == 7
    (pts,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(pts.get_xydata(),
                               np.c_[tab["claimed"].values[ne], tab["observed"].values[ne]])
    (bars,) = ax.collections           # the calibrated ranges, claimed +- q se
    segs = np.array(bars.get_segments())
    np.testing.assert_allclose(segs[:, :, 1], np.c_[tab["ci_low"].values[ne],
                                                    tab["ci_high"].values[ne]])
    assert [t.get_text() for t in ax.texts] == [f"n={n}" for n in tab["n"].values[ne]]
    diag = [ln for ln in ax.lines if list(ln.get_xdata()) == [0, 1]]
    assert diag and list(diag[0].get_ydata()) == [0, 1]
    assert [p.get_height() for p in axn.patches] == tab["n"].values.tolist()
    assert ax.get_ylabel() == "observed: map_hit rate"


def test_hit_rates_per_cell_against_plain_counts(rng):
    ds = simulate_ds(rng, n_tables=30, shape=(2, 3))
    fig = plots.hit_rates(ds)
    (ax,) = fig.axes
    (cont,) = ax.containers
    h, p = ds["map_hit"].values, ds["map_prob"].values
    pts = cont[0].get_xydata()
    np.testing.assert_allclose(pts[:, 1], h.reshape(30, -1).mean(0))
    (claim,) = [ln for ln in ax.lines if ln.get_marker() == "x"]
    np.testing.assert_allclose(claim.get_ydata(), p.reshape(30, -1).mean(0))
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "(v1, w1)", "(v1, w2)", "(v1, w3)", "(v2, w1)", "(v2, w2)", "(v2, w3)"]
    (seg,) = cont[2]
    k, n = h.reshape(30, -1).sum(0), 30
    lo, hi = plots.binomial_interval(k, n)
    np.testing.assert_allclose([s[:, 1] for s in seg.get_segments()], np.c_[lo, hi])
    assert "first 4 of 6 cells" in plots.hit_rates(ds, max_cells=4).axes[0].get_title()
