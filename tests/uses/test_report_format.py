"""Numbers, tables and plots of the reports as people read them (issue 27, item 4): counts
with thousands separators and huge counts in scientific notation with the exact integer
in a title; float noise around 0 shown as 0 and a ± that is noise as ± 0; numbers
right-aligned, text left; a print style sheet; risk-utility map labels that do not
overlap.  (docs/screenshots.py and test_report_screenshots.py check the pages in a real
browser.)"""

import re
from html.parser import HTMLParser

import numpy as np
import pytest
import xarray as xr
from matplotlib.text import Text

import riskengine as rk
from riskengine import plots
from riskengine._posterior import _count_text
from riskengine.report import render_report
from riskengine.report._page import _count, _Html, _num, _numeric, _pm, _table
from riskengine.report.audit import _grouped
from tests.uses.synthetic import compare_ds, simulate_ds

# float noise as the new user saw it in the reports (issue 27): a log evidence of one half
# ulp of 1 (2**-53) and an sd of a few ulps of 31.23 (draws that all agree)
EPS_HALF = 2.0 ** -53          # 1.1102230246251565e-16
HUGE = 1234567890123456789012345678          # 28 digits: candidate tables of a big table


# --- the helpers -----------------------------------------------------------------------
@pytest.mark.parametrize("x, want", [
    (0, "0"), (-0.0, "0"), (37, "37"), (1234, "1,234"), (1234567.0, "1,234,567"),
    (-98765, "-98,765"), (999_999_999_999, "999,999,999,999"),
    (1e12, "1.000e+12"), (1.234567e27, "1.235e+27"),
    (0.5, "0.5"), (41.59123, "41.59"), (1.089e-5, "1.089e-05"), (12345.6, "12,346"),
    (EPS_HALF, "0"), (-5e-14, "0"), (3e-12, "3e-12"),
    (np.nan, "-"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_num(x, want):
    assert _num(x) == want


def test_num_noise_is_relative_to_the_scale_given():
    assert _num(EPS_HALF, 8) == "0"                    # a log evidence (scale 1)
    assert _num(2.5e-15, 4, scale=31.23) == "0"        # an sd beside a mean of 31.23
    assert _num(1e-20, 4, scale=0) == "1e-20"          # a p-value is never noise
    assert _num(1e-20, 4, scale=1e-20) == "1e-20"      # ... nor at its own scale
    assert _num(12345.6, 8) == "12,345.6"


def test_pm_noise_is_zero_and_nan_is_left_out():
    assert _pm(31.23, 2.5e-15) == "31.23 ± 0"          # the example
    assert _pm(13.06, 1.3e-15) == "13.06 ± 0"
    assert _pm(0.8161, 7.9e-17) == "0.8161 ± 0"
    assert _pm(13.06, 0.82) == "13.06 ± 0.82"
    assert _pm(1e-20, 1e-21, scale=0) == "1e-20 ± 1e-21"   # small but real
    assert _pm(0.0, 0.0) == "0 ± 0"
    assert _pm(0.5, np.nan) == "0.5"
    h = _pm(13.06, 0.82, html_out=True)
    assert isinstance(h, _Html) and h == '13.06<span class="pm">± 0.82</span>'


def test_count_reuses_the_exact_count_text():
    assert _count(37) == "37" and _count("37") == "37"
    assert _count(1_234_567) == "1,234,567" and _count(np.int64(10 ** 6)) == "1,000,000"
    assert _count(10 ** 12 - 1) == "999,999,999,999"
    for n in (HUGE, str(HUGE)):                  # an int, or the netCDF attribute's text
        got = _count(n)
        assert isinstance(got, _Html)
        assert got == f'<span title="exactly {_count_text(HUGE)}">1.23e+27</span>'
    assert _count(10 ** 12) == '<span title="exactly 1000000000000">1.00e+12</span>'
    huge = _count_text(2 ** 50000)               # too long to write out: as it is
    assert huge.startswith("~1e") and _count(huge) == huge
    assert _count(None) == "unknown" == _count("unknown")


def test_numeric_cells_right_aligned_text_left():
    assert all(_numeric(t) for t in ("1,234", "-0.5", "1.23e+27", "[0, 3]", "12.5 ± 0.3",
                                     "-", "13.06<span class=\"pm\">± 0.82</span>"))
    assert not any(_numeric(t) for t in ("yes", "(v_1, w_2)", "0.312 at (v_1, w_2)",
                                         "16 (4 x 4)", "protected"))
    html = _table(["cell", "n", "status", "p"],
                  [["(a)", "1,234", "protected", "0.5"], ["(b)", "-", "exact", "failed"]])
    heads = re.findall(r"<th( class=\"l\")?>", html)
    cells = re.findall(r"<td( class=\"l\")?>", html)
    assert heads == [' class="l"', "", ' class="l"', ""]
    assert cells == [' class="l"', "", ' class="l"', ""] * 2


def test_grouped_magnitudes_of_the_audit_page():
    assert [_grouped(x) for x in ("1234567.5", "-1963.3", "0", "20.08", "-", "protected")] \
        == ["1,234,567.5", "-1,963.3", "0", "20.08", "-", "protected"]


# --- in the reports --------------------------------------------------------------------
class _Cells(HTMLParser):
    """The text of each table row (``[[cell text]]``) and the title of each span."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.titles, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "span" and dict(attrs).get("title"):
            self.titles.append(dict(attrs)["title"])

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(" ".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data.strip())


def _cells(text):
    p = _Cells()
    p.feed(text)
    return p


@pytest.fixture(scope="module")
def small():
    truth = np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])
    mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    rel = mech.protect(rk.Table(truth, dims=("v", "w")), np.random.default_rng(3))
    return rk.posterior(rel), rel, truth


def test_assess_huge_count_and_noise_log_evidence(small):
    post, _, truth = small
    ds = post.to_dataset(truth)
    ds.attrs.update(n_candidates=_count_text(HUGE), log_evidence=EPS_HALF)
    text, _ = render_report(ds)
    p = _cells(text)
    rows = {r[0]: r[1] for r in p.rows if len(r) == 2}
    assert rows["candidate original tables"] == "1.23e+27"
    assert f"exactly {HUGE}" in p.titles                 # the exact integer, on hover
    assert rows["log evidence"] == "0"
    assert "1.110223e-16" not in text and str(HUGE)[:20] not in text.split("title=")[0]
    ds.attrs.update(n_candidates="1234567", log_evidence=-12.3456789)
    rows = {r[0]: r[1] for r in _cells(render_report(ds)[0]).rows if len(r) == 2}
    assert rows["candidate original tables"] == "1,234,567"
    assert rows["log evidence"] == "-12.345679"


def test_compare_se_that_is_noise_is_zero(rng):
    ds = compare_ds(rng)
    # a deterministic mechanism: its draws agree up to float noise
    ds["l1"][0] = 13.06 + np.array([0, 1, -1, 2, 0]) * 1e-15
    ds["hellinger"][0] = 0.0
    text, _ = render_report(ds)
    rows = _cells(text).rows
    header = next(r for r in rows if r and r[0] == "mechanism")
    first = next(r for r in rows if r and r[0] == "cyclic")
    assert first[header.index("l1 mean ± SE")] == "13.06 ± 0"
    assert first[header.index("hellinger mean ± SE")] == "0 ± 0"
    assert not re.search(r"± [\d.]+e-1\d", text)
    # a real SE is kept (as before: .4g ± .2g)
    se = ds["l1"].values[1].std(ddof=1) / np.sqrt(5)
    second = next(r for r in rows if r and r[0] == "rounding 3")
    assert second[header.index("l1 mean ± SE")] == f"{ds['l1'].values[1].mean():.4g} ± {se:.2g}"


def test_analyze_sd_that_is_noise_is_zero_and_small_p_values_stay(small):
    post, rel, truth = small
    ds = rk.analyze(rel, None, ["chi2", "chi2_pvalue"], draws=50,
                    rng=np.random.default_rng(0), truth=truth, post=post).to_dataset()
    q = list(ds["quantity"].values)
    s0 = ds["stat0_summary"].values.copy()
    s0[q.index("mean")], s0[q.index("sd")], s0[q.index("mcse_mean")] = 31.23, 2.5e-15, 3e-16
    ds["stat0_summary"].values = s0
    s1 = ds["stat1_summary"].values.copy()
    s1[q.index("mean")], s1[q.index("sd")] = 1e-20, 3e-21
    s1[q.index("hdi_lower")] = s1[q.index("hdi_upper")] = s1[q.index("plugin")] = 1e-20
    s1[q.index("true")] = 2e-20
    ds["stat1_summary"].values = s1
    rows = _cells(render_report(ds)[0]).rows
    header = next(r for r in rows if r and r[0] == "statistic")
    col = {h.replace(" ", ""): i for i, h in enumerate(header)}   # mcse_ mean: <wbr>
    chi2 = next(r for r in rows if r and r[0] == "chi2")
    assert chi2[col["mean"]] == "31.23" and chi2[col["sd"]] == "0"
    assert chi2[col["mcse_mean"]] == "0"
    pv = next(r for r in rows if r and r[0] == "chi2_pvalue")
    assert pv[col["mean"]] == "1e-20" and pv[col["sd"]] == "3e-21"


def test_simulate_counts_with_separators(rng):
    ds = simulate_ds(rng, n_tables=20)
    ds["n_candidates"] = ("table", np.full(20, 1_234_567.0))
    rows = {r[0]: r[1] for r in _cells(render_report(ds)[0]).rows if len(r) == 2}
    assert rows["candidate tables per release: median [min, max]"] == \
        "1,234,567 [1,234,567, 1,234,567]"


def test_print_style_sheet(small):
    text, _ = render_report(small[0])
    css = re.search(r"@media print \{(.*)\}\s*</style>", text, re.DOTALL).group(1)
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    rules = {sel.strip(): body for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)}
    assert "overflow: visible" in rules["div.wide"]              # nothing scrolled away
    assert "break-inside: avoid" in rules["tr, figure, img, dt, dd"]
    assert "overflow-wrap: anywhere" in rules["th, td"]          # wide tables shrink
    assert "table-header-group" in rules["thead"]


# --- the risk-utility map's labels -----------------------------------------------------
def _near_equal(rng, m=8, draws=4):
    names = ([f"cyclic alpha={a} beta={a}" for a in (0.05, 0.1, 0.15, 0.2)]
             + ["rounding base=3", "rounding base=5", "bootstrap", "binomial"])[:m]
    r = 0.3 + rng.normal(0, 0.002, (m, draws))
    u = 0.5 + rng.normal(0, 0.002, (m, draws))
    return xr.Dataset({"risk": ("mechanism", r.mean(1)), "utility": ("mechanism", u.mean(1)),
                       "risk_draw": (("mechanism", "draw"), r),
                       "utility_draw": (("mechanism", "draw"), u)},
                      coords={"mechanism": names})


def _label_boxes(fig):
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.savefig(io.BytesIO(), format="png", dpi=100)      # as the report saves it
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    return ([Text.get_window_extent(t, renderer) for t in ax.texts],
            ax.get_window_extent(renderer), ax)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ru_map_labels_do_not_overlap(seed):
    """Eight mechanisms within 0.002 of each other in risk and utility (their points and
    error bars on top of one another): no two labels' boxes (the renderer's) overlap, each
    lies inside the axes, and none covers a mechanism's point."""
    ds = _near_equal(np.random.default_rng(seed))
    boxes, frame, ax = _label_boxes(plots.ru_map(ds))
    names = [str(n) for n in ds["mechanism"].values]
    assert [t.get_text() for t in ax.texts] == names
    for i in range(len(boxes)):
        for j in range(i):
            assert not boxes[i].overlaps(boxes[j]), (names[i], names[j])
        b = boxes[i]
        assert frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1
    points = ax.transData.transform(np.c_[ds["risk"].values, ds["utility"].values])
    for b in boxes:
        for x, y in points:
            assert not b.contains(x, y)


def test_ru_map_labels_identical_points_and_deterministic():
    """Two mechanisms at the very same point (no draws) still get separate labels; the
    same input gives the same placement."""
    ds = xr.Dataset({"risk": ("mechanism", [0.2, 0.2, 0.21, 0.8]),
                     "utility": ("mechanism", [0.5, 0.5, 0.5, 0.1])},
                    coords={"mechanism": ["same A", "same B", "close", "far away"]})
    boxes, _, ax = _label_boxes(plots.ru_map(ds))
    assert not any(boxes[i].overlaps(boxes[j]) for i in range(4) for j in range(i))
    _, _, ax2 = _label_boxes(plots.ru_map(ds))
    assert [t.xyann for t in ax.texts] == [t.xyann for t in ax2.texts]


def test_ru_map_nan_point_has_no_label():
    ds = xr.Dataset({"risk": ("mechanism", [0.2, np.nan]),
                     "utility": ("mechanism", [0.5, 0.4])},
                    coords={"mechanism": ["ok", "failed"]})
    fig = plots.ru_map(ds)
    assert [t.get_visible() for t in fig.axes[0].texts] == [True, False]
