"""Every kind of report in a real browser at 1280 px (issue 27, item 4): headless Chromium
renders a screenshot 1280 px wide, the page does not scroll sideways and every table fits
the page without scrolling; with the print style sheet applied at the width of an A4
page, nothing is wider than the paper.  The reports are the ones docs/screenshots.py
takes its pictures of (the bundled examples, through the command line)."""

import importlib.util
import json
import re
import struct
import subprocess
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("_screenshots",
                                                  _ROOT / "docs" / "screenshots.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


shots = _script()
pytestmark = [
    pytest.mark.slow,   # five reports through the CLI, three Chromium runs each: about a minute
    pytest.mark.skipif(shots.chromium() is None,
                       reason="no Chromium binary on PATH (Debian: apt-get install "
                              "chromium); the headless-browser checks need one")]

#: A4 (210 mm) less 10 mm margins each side, in CSS px (96 per inch)
A4_PX = round((210 - 20) / 25.4 * 96)

_PROBE = """<script>
window.addEventListener("load", function () {
  var body = document.body, root = document.documentElement;
  var out = {window: window.innerWidth, page: [root.scrollWidth, root.clientWidth],
             body_right: body.getBoundingClientRect().right, tables: [], images: []};
  for (var t of document.querySelectorAll("table")) {
    var box = t.parentElement;
    out.tables.push({right: t.getBoundingClientRect().right,
                     box: [box.scrollWidth, box.clientWidth],
                     head: t.querySelector("th").textContent});
  }
  for (var img of document.images)
    out.images.push([img.complete, img.naturalWidth, img.getBoundingClientRect().right]);
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  body.appendChild(pre);
});
</script>"""


def _probe(html: Path, profile: Path, width: int, print_style: bool = False) -> dict:
    """Open a copy of ``html`` with the probe script in headless Chromium at ``width`` px;
    ``print_style``: with the ``@media print`` rules applied on screen (as when printed).
    The report itself has no script."""
    text = html.read_text(encoding="utf-8")
    if print_style:
        assert "@media print" in text
        text = text.replace("@media print", "@media all")
    probe = html.with_name(f"probe_{width}.html")
    probe.write_text(text.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    r = subprocess.run(
        [shots.chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--hide-scrollbars", "--force-device-scale-factor=1", f"--user-data-dir={profile}",
         f"--window-size={width},2400", "--virtual-time-budget=10000", "--dump-dom",
         probe.as_uri()], check=False, capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout)
    assert m, f"{html.name}: no probe output; chromium stderr: {r.stderr[-500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def _png_size(path: Path):
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """``{kind: path of its HTML}``, built as docs/screenshots.py builds them."""
    work = tmp_path_factory.mktemp("reports")
    return {kind: shots.build(kind, work) for kind in shots.KINDS}


@pytest.mark.parametrize("kind", shots.KINDS)
def test_screenshot_is_1280_px_wide(reports, kind, tmp_path):
    png = shots.screenshot(reports[kind], tmp_path / f"{kind}.png", tmp_path / "profile")
    assert _png_size(png) == (shots.WIDTH, shots.HEIGHT)


@pytest.mark.parametrize("kind", shots.KINDS)
def test_no_horizontal_overflow_at_1280_px(reports, kind, tmp_path):
    got = _probe(reports[kind], tmp_path / "profile", 1280)
    assert got["window"] == 1280, got
    scroll, client = got["page"]
    assert scroll <= client, f"{kind}: the page is {scroll} px wide in a {client} px window"
    assert got["tables"], kind
    for tab in got["tables"]:      # every table fits: nothing scrolls inside its box
        sw, cw = tab["box"]
        assert sw <= cw, f"{kind}: the table of {tab['head']!r} is {sw} px in {cw} px"
        assert tab["right"] <= got["body_right"] + 0.5, (kind, tab)
    for complete, natural, right in got["images"]:
        assert complete and natural > 0 and right <= got["body_right"] + 0.5, (kind, got)


@pytest.mark.parametrize("kind", shots.KINDS)
def test_printed_page_is_not_cut(reports, kind, tmp_path):
    """The print style sheet, applied at the width of an A4 page (718 px): no table
    scrolls (what scrolls is cut off on paper), nothing is wider than the paper."""
    got = _probe(reports[kind], tmp_path / "profile", A4_PX, print_style=True)
    scroll, client = got["page"]
    assert scroll <= client, f"{kind}: printed {scroll} px wide on a {client} px page"
    for tab in got["tables"]:
        sw, cw = tab["box"]
        assert sw <= cw and tab["right"] <= client + 0.5, (kind, tab, client)
    for _, _, right in got["images"]:
        assert right <= client + 0.5, (kind, got["images"], client)
