"""riskengine.report and `riskengine report`: self-contained, well-formed HTML whose every
image is an embedded PNG, for assess, compare and simulate results; and a real headless
browser (Chromium) showing every image loaded."""

import base64
import json
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine._io import atomic_write_netcdf
from riskengine._verdict import annotate
from riskengine.cli import main
from riskengine.report import _kind, describe_release, render_report, write_report
from tests.uses.synthetic import compare_ds, simulate_ds

_VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "source", "wbr"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Checker(HTMLParser):
    """Collects tags, checks nesting, images and references."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.imgs, self.refs, self.tags, self.text = [], [], [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        for k in ("src", "href", "action", "data", "poster"):
            if k in a:
                self.refs.append(a[k])
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _png_size(data: bytes):
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def check_html(text: str) -> _Checker:
    """Well-formed, self-contained; every <img> a decodable PNG data URI."""
    assert text.startswith("<!DOCTYPE html>")
    p = _Checker()
    p.feed(text)
    p.close()
    assert p.errors == [] and p.stack == []
    assert "script" not in p.tags and "link" not in p.tags and "iframe" not in p.tags
    assert not re.search(r"url\(|@import|https?://|//[a-z]", text.split("<body>")[0])
    for ref in p.refs:
        assert ref.startswith("data:image/png;base64,"), ref[:60]
    assert p.imgs
    for img in p.imgs:
        data = base64.b64decode(img["src"].split(",", 1)[1], validate=True)
        w, h = _png_size(data)
        assert w > 0 and h > 0
        assert img.get("alt")
    return p


@pytest.fixture(scope="module")
def small():
    """A 3 x 3 cyclic release (diagonal design), its posterior and a true table."""
    truth = np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])
    mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    rel = mech.protect(rk.Table(truth, dims=("v", "w")), np.random.default_rng(3))
    return rk.posterior(rel), rel, truth


# --- assess ----------------------------------------------------------------------------
def test_assess_report_from_posterior(tmp_path, small):
    post, rel, truth = small
    path = write_report(post, tmp_path / "out", release=rel, truth=truth)
    assert path == tmp_path / "out" / "assess.html"
    text = path.read_text(encoding="utf-8")
    p = check_html(text)
    body = " ".join(p.text)
    assert f"candidate original tables {post.n_candidates} " in body
    pe = post.prob_exact(truth).values
    assert f"{pe.sum():.3f} of 9" in body
    assert f"{post.max_prob().values.sum():.3f} of 9" in body
    assert "CyclicPerturbation(m=3, alpha=0.25, beta=0.25, rule=&#x27;negative&#x27;)" in text
    assert "Uniform()" in body and "all 9 interior cells" in body
    pngs = sorted(q.name for q in path.parent.glob("*.png"))
    assert pngs == ["heatmap_max_prob.png", "heatmap_prob_exact.png", "posterior_bars.png"]
    embedded = {base64.b64decode(i["src"].split(",", 1)[1]) for i in p.imgs}
    assert embedded == {(path.parent / n).read_bytes() for n in pngs}
    assert "Pr(true)" in text
    # the per-cell table: one row per cell (+ the summary table's rows)
    assert text.count('<td class="l">(') == 9  # the per-cell table: one row per cell


def test_assess_report_from_dataset_without_truth(small):
    post, _, _ = small
    text, images = render_report(post.to_dataset())
    check_html(text)
    assert sorted(images) == ["heatmap_max_prob.png", "posterior_bars.png"]
    assert "Pr(true)" not in text


def test_describe_release(small):
    _, rel, _ = small
    d = describe_release(rel)
    assert d["table"] == "count table, v (3) x w (3)"
    assert d["published totals"] == "by v, by w, grand total"
    with pytest.raises(TypeError, match="rk.Release"):
        describe_release({"published": 1})


# --- compare and simulate --------------------------------------------------------------
def test_compare_report(tmp_path, rng):
    ds = compare_ds(rng)
    path = write_report(ds, tmp_path)
    text = path.read_text(encoding="utf-8")
    p = check_html(text)
    assert len(p.imgs) == 1 and (tmp_path / "ru_map.png").exists()
    body = " ".join(p.text)
    for name in ds["mechanism"].values:
        assert f">{name}</td>" in text
    assert "-L1(published, true)" in body and "sum |published - true|" in body
    assert text.count("<dt>draws</dt>") == 1
    se = ds["l1"].values[0].std(ddof=1) / np.sqrt(5)
    assert f"{ds['l1'].values[0].mean():.4g} ± {se:.2g}" in body


def test_simulate_report(tmp_path, rng):
    ds = simulate_ds(rng, n_tables=100)
    path = write_report(ds, tmp_path)
    text = path.read_text(encoding="utf-8")
    p = check_html(text)
    body = " ".join(p.text)
    rate = ds["map_hit"].values.mean()
    assert f"{rate:.4f}" in body and "Poisson(2.0)" in body
    assert (tmp_path / "calibration.png").exists() and (tmp_path / "hit_rates.png").exists()
    assert len(p.imgs) == 2
    for cell in ("(v1, w1)", "(v3, w3)"):
        assert cell in body


def test_reports_from_netcdf_files(tmp_path, rng, small):
    post, _, truth = small
    for kind, ds in [("compare", compare_ds(rng)), ("simulate", simulate_ds(rng, 30)),
                     ("assess", post.to_dataset(truth))]:
        f = tmp_path / f"{kind}.nc"
        atomic_write_netcdf(ds, f)
        text, _ = render_report(f)
        check_html(text)
        # without the attr, the kind is recognised from the variables
        with xr.open_dataset(f) as g:
            ds2 = g.load()
        del ds2.attrs["riskengine_kind"]
        assert _kind(ds2) == kind


def test_escaping_and_bad_input(tmp_path, rng):
    ds = compare_ds(rng, names=("<b>bold</b>", "a & b", "x\"y"))
    ds.attrs["intruder"] = "<script>alert(1)</script>"
    text, _ = render_report(ds)
    p = check_html(text)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "b" not in p.tags
    assert "a &amp; b" in text
    bad = ds.copy()
    bad.attrs["riskengine_kind"] = "nonsense"
    with pytest.raises(ValueError, match="'nonsense'; known kinds: assess, compare, simulate"):
        render_report(bad)
    with pytest.raises(ValueError, match="cannot tell which riskengine result"):
        render_report(xr.Dataset({"x": ("a", [1, 2])}))
    with pytest.raises(TypeError, match="got int"):
        render_report(3)
    with pytest.raises(FileNotFoundError):
        write_report(tmp_path / "missing.nc", tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        write_report(ds, tmp_path / "file")


# --- CLI -------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_assess_writes_report_and_report_rereads_it(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["assess", "--out", str(out)]) == 0
    assert f"report written to {out / 'assess.html'}" in capsys.readouterr().out
    check_html((out / "assess.html").read_text(encoding="utf-8"))
    ds = xr.open_dataset(out / "posterior.nc")
    assert ds.attrs["riskengine_kind"] == "assess"
    assert "by v, by w, grand total" in ds.attrs["release"]
    ds.close()
    assert main(["report", str(out / "posterior.nc"), "--out", str(tmp_path / "r")]) == 0
    text = (tmp_path / "r" / "assess.html").read_text(encoding="utf-8")
    check_html(text)
    assert "by v, by w, grand total" in text
    assert main(["assess", "--out", str(tmp_path / "n"), "--no-report"]) == 0
    assert sorted(q.name for q in (tmp_path / "n").iterdir()) == ["posterior.nc"]


def test_cli_report_defaults_to_the_results_folder(tmp_path, rng):
    f = tmp_path / "sim" / "results.nc"
    atomic_write_netcdf(simulate_ds(rng, 20), f)
    assert main(["report", str(f)]) == 0
    check_html((tmp_path / "sim" / "simulate.html").read_text(encoding="utf-8"))


def test_cli_report_bad_input_exit_2_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.nc"
    bad.write_text("not netcdf")
    f = tmp_path / "x.nc"
    atomic_write_netcdf(xr.Dataset({"x": ("a", [1, 2])}), f)
    for arg, msg in [(bad, "cannot read it as netCDF"), (tmp_path / "missing.nc", "no such file"),
                     (f, "cannot tell which riskengine result")]:
        assert main(["report", str(arg)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("riskengine: error: ") and msg in err
        assert len(err.strip().splitlines()) == 1



# --- no table wider than the page -------------------------------------------------------
def _scrolling_selectors(text: str) -> list:
    """The selectors (``tag``, ``.class`` or ``tag.class``) of the report's CSS rules that
    let an element scroll horizontally (``overflow-x: auto`` or ``scroll``)."""
    css = re.search(r"<style>(.*?)</style>", text, re.DOTALL).group(1)
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    out = []
    for sels, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        if re.search(r"overflow-x\s*:\s*(auto|scroll)", body):
            out += [sel.strip() for sel in sels.split(",")]
    return out


class _TableParents(HTMLParser):
    """The element each <table> sits in: (tag, classes)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.parents = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.parents.append(self.stack[-1] if self.stack else (None, set()))
        if tag not in _VOID:
            self.stack.append((tag, set((dict(attrs).get("class") or "").split())))

    def handle_endtag(self, tag):
        if tag not in _VOID:
            self.stack.pop()


def check_tables_scroll(text: str) -> int:
    """Every <table> sits directly in an element the CSS lets scroll horizontally, so a
    table wider than the page scrolls inside it instead of widening the page (a table's
    own ``max-width: 100%`` would not do: a table grows to its content's minimum width).
    Returns the number of tables."""
    sels = _scrolling_selectors(text)
    p = _TableParents()
    p.feed(text)
    for tag, classes in p.parents:
        assert any(_selects(sel, tag, classes) for sel in sels), (
            f"a <table> sits in <{tag} class={sorted(classes)}>, which does not scroll "
            f"horizontally (scrolling selectors: {sels})")
    return len(p.parents)


def _selects(selector: str, tag, classes) -> bool:
    """Whether a simple selector (``tag``, ``.class``, ``tag.class``) selects the element."""
    m = re.fullmatch(r"([a-z]*)(?:\.([\w-]+))?", selector)
    return bool(m) and m.group(1) in ("", tag) and (m.group(2) is None or m.group(2) in classes)


@pytest.mark.slow
def test_every_table_scrolls_inside_the_page(tmp_path, rng, small):
    """Static (no browser): the assess report (the verdict's failing cells included), the
    compare report with many long-named mechanisms, and the simulate report."""
    post, rel, truth = small
    texts = {
        "assess": write_report(annotate(post.to_dataset(truth), rk.verdict(
            post, truth, policy=rk.Policy(cells="all", baseline=None, threshold=0.3))),
            tmp_path / "a", release=rel),
        "compare": write_report(compare_ds(rng, names=tuple(
            f"controlled rounding base={b} method=optimal" for b in range(2, 10))),
            tmp_path / "c"),
        "simulate": write_report(simulate_ds(rng, 20), tmp_path / "s")}
    for kind, path in texts.items():
        text = path.read_text(encoding="utf-8")
        n = check_tables_scroll(text)
        assert n >= {"assess": 3, "compare": 1, "simulate": 2}[kind], (kind, n)
    # assess: the verdict's failing cells, the summary, the per-cell table
    assert ">state</th>" in texts["assess"].read_text(encoding="utf-8")


# --- a real browser --------------------------------------------------------------------
def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


_PROBE = """<script>
window.addEventListener("load", function () {
  var out = [];
  for (var img of document.images) out.push([img.complete, img.naturalWidth, img.naturalHeight]);
  var pre = document.createElement("pre");
  pre.id = "imgcheck";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _probe(path, script: str, pre_id: str, profile, *flags):
    """Open a copy of the report at ``path`` with ``script`` added in headless Chromium;
    the script writes JSON into ``<pre id=pre_id>``: returns it, parsed.  The report
    itself has no script."""
    probe = path.with_name("probe.html")
    probe.write_text(path.read_text(encoding="utf-8").replace("</body>", script + "</body>"),
                     encoding="utf-8")
    r = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", "--virtual-time-budget=10000", *flags,
         "--dump-dom", probe.as_uri()], check=False,
        capture_output=True, text=True, timeout=120)
    m = re.search(rf'<pre id="{pre_id}">(.*?)</pre>', r.stdout)
    assert m, f"{path.name}: no probe output; chromium stderr: {r.stderr[-500:]}"
    return json.loads(m.group(1).replace("&quot;", '"'))


_WIDTH_PROBE = """<script>
window.addEventListener("load", function () {
  var body = document.body, root = document.documentElement;
  var right = body.getBoundingClientRect().right
              - parseFloat(getComputedStyle(body).paddingRight);
  var out = {window: window.innerWidth, page: [root.scrollWidth, root.clientWidth],
             content_right: right, tables: []};
  for (var t of document.querySelectorAll("table")) {
    var box = t;   // the table, or the element it scrolls in
    for (var el = t.parentElement; el && el !== body; el = el.parentElement) {
      var ox = getComputedStyle(el).overflowX;
      if (ox === "auto" || ox === "scroll") { box = el; break; }
    }
    out.tables.push({width: t.getBoundingClientRect().width, scrolls: box !== t,
                     right: box.getBoundingClientRect().right,
                     box: [box.scrollWidth, box.clientWidth]});
  }
  var pre = document.createElement("pre");
  pre.id = "widthcheck";
  pre.textContent = JSON.stringify(out);
  body.appendChild(pre);
});
</script>"""


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no Chromium binary on PATH (Debian: "
                    "apt-get install chromium); the headless-browser check needs one")
def test_no_table_is_wider_than_the_page_in_headless_chromium(tmp_path, small):
    """At a 1000 px window, no table reaches past the page's content box and the page
    does not scroll sideways: a table wider than the page (compare's measures of seven
    mechanisms: about 1700 px) scrolls inside its own box.  Before the box, the compare
    page was 1717 px wide in a 985 px window."""
    post, rel, truth = small
    t = rk.Table(truth, dims=("v", "w"))
    mechs = {"cyclic": rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25),
             "controlled rounding base=2": rk.ControlledRounding(2),
             "controlled rounding base=3": rk.ControlledRounding(3),
             "margins only": rk.MarginsOnly(), "bootstrap": rk.Bootstrap(M=3, S=2.0),
             "random rounding base=3": rk.RandomRounding(3),
             "cell key D=2 V=1": rk.CellKey(D=2, V=1)}
    reports = {"compare": write_report(rk.compare(t, mechs, draws=2,
                                                  rng=np.random.default_rng(1)),
                                       tmp_path / "c"),
               "assess": write_report(post, tmp_path / "a", release=rel, truth=truth,
                                      threshold=0.3)}
    for kind, path in reports.items():
        got = _probe(path, _WIDTH_PROBE, "widthcheck", tmp_path / "profile",
                     "--window-size=1000,800")
        assert got["window"] == 1000, got
        scroll, client = got["page"]
        assert scroll <= client, f"{kind}: the page is {scroll} px wide in {client} px"
        for tab in got["tables"]:
            assert tab["right"] <= got["content_right"] + 0.5, (kind, tab, got)
            assert tab["scrolls"], (kind, tab)
        if kind == "compare":   # the case this guards: a table wider than the page
            assert max(tab["width"] for tab in got["tables"]) > got["content_right"]
            assert any(sw > cw for sw, cw in (tab["box"] for tab in got["tables"]))
        # the browser saw every table the static check sees
        assert len(got["tables"]) == check_tables_scroll(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no Chromium binary on PATH (Debian: "
                    "apt-get install chromium); the headless-browser check needs one")
def test_report_opens_in_headless_chromium_with_every_image_loaded(tmp_path, rng, small):
    """Every <img> of each kind of report has naturalWidth > 0 (and equal to the PNG's own
    width) in a real browser.  The probe script is added to a copy of the report only:
    the report itself has no script."""
    post, rel, truth = small
    reports = {"assess": write_report(post, tmp_path / "a", release=rel, truth=truth),
               "compare": write_report(compare_ds(rng), tmp_path / "c"),
               "simulate": write_report(simulate_ds(rng, 50), tmp_path / "s")}
    for kind, path in reports.items():
        text = path.read_text(encoding="utf-8")
        widths = [_png_size(base64.b64decode(i["src"].split(",", 1)[1]))
                  for i in check_html(text).imgs]
        loaded = _probe(path, _PROBE, "imgcheck", tmp_path / "profile")
        assert len(loaded) == len(widths) > 0
        for (complete, w, h), (pw, ph) in zip(loaded, widths):
            assert complete and w > 0 and h > 0, kind
            assert (w, h) == (pw, ph), kind
