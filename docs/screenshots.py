"""Screenshots of every kind of riskengine report, as a new user sees them in a browser.

Builds one report of each kind (assess, audit, analyze, compare, simulate) from the
bundled examples in ``riskengine/data/`` through the command line, with small settings
so that each runs in seconds, in a temporary folder; then renders each HTML page with
headless Chromium at 1280 px wide into ``docs/screenshots/<kind>.png``.

Run from the repository root (the venv active)::

    python docs/screenshots.py                 # every kind, into docs/screenshots/
    python docs/screenshots.py --keep out/     # also keep the reports in out/
    python docs/screenshots.py --kinds compare,audit

``tests/uses/test_report_screenshots.py`` builds the reports with :func:`build` and
renders them with :func:`chromium_command`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = ("assess", "audit", "analyze", "compare", "simulate")
WIDTH, HEIGHT = 1280, 2400
HERE = Path(__file__).resolve().parent

# small versions of the bundled compare / simulate examples (riskengine/data/*.toml):
# seconds, not minutes; compare keeps several mechanisms close together on the map
_COMPARE = """
seed = 2006
draws = 3
level = 0.95

[table]
path = "{table}"

[priors]
intruder = "uniform"
user = "poisson:8"

[[mechanisms]]
label = "cyclic"
type = "cyclic"
design = "diagonal"
sweep = {{ alpha = [0.05, 0.15, 0.25, 0.4], beta = [0.05, 0.15, 0.25, 0.4] }}

[[mechanisms]]
label = "rounding"
type = "controlled_rounding"
sweep = {{ base = [3, 5] }}

[[mechanisms]]
label = "bootstrap"
type = "bootstrap"
M = 3
S = 2.0

[[mechanisms]]
label = "binomial"
type = "binomial"
S = 2.0
"""

_SIMULATE = """
seed = 7
n_tables = 40
scheduler = "serial"

[generator]
type = "poisson"
rate = 3.0
shape = [3, 3]
dims = ["v", "w"]

[mechanism]
type = "cyclic"
design = "diagonal"
alpha = 0.25
beta = 0.25

[intruder]
prior = "poisson:3"
"""


def _data(name: str) -> str:
    from riskengine.data import __file__ as data_init
    return str(Path(data_init).parent / name)


def _commands(kind: str, work: Path) -> list:
    """The ``riskengine`` command lines (argument lists) that write ``kind``'s report
    into ``work / kind``."""
    out = str(work / kind)
    if kind == "assess":        # the bundled seed 003 release, its original, a policy
        return [["assess", "--truth", _data("seed003_original.csv"), "--threshold", "0.5",
                 "--out", out]]
    if kind == "analyze":
        return [["analyze", "--draws", "400", "--seed", "1", "--truth",
                 _data("seed003_original.csv"), "--out", out]]
    if kind == "audit":         # firms' turnover: suppress by the p% rule, then audit
        rel = str(work / "firms_release.json")
        return [["suppress", _data("firms.csv"), "--dims", "region,industry",
                 "--value", "turnover", "--rule", "p:15", "--out", rel],
                ["audit", rel, "--microdata", _data("firms.csv"), "--out", out]]
    if kind == "compare":
        cfg = work / "compare.toml"
        cfg.write_text(_COMPARE.format(table=_data("seed003_original.csv")
                                       .replace("\\", "/")), encoding="utf-8")
        return [["compare", str(cfg), "--out", out]]
    if kind == "simulate":
        cfg = work / "simulate.toml"
        cfg.write_text(_SIMULATE, encoding="utf-8")
        return [["simulate", str(cfg), "--out", out]]
    raise ValueError(f"unknown report kind {kind!r}; known: {', '.join(KINDS)}")


def build(kind: str, work) -> Path:
    """Write ``kind``'s report into ``work/kind/`` by the command line; its HTML path."""
    import contextlib
    import io

    from riskengine.cli import main
    work = Path(work)
    for argv in _commands(kind, work):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        if code != 0:
            raise RuntimeError(f"riskengine {' '.join(argv)} exited {code}:\n"
                               f"{out.getvalue()}\n{err.getvalue()}")
    return work / kind / f"{kind}.html"


def chromium() -> str | None:
    """The Chromium (or Chrome) binary on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_command(html: Path, png: Path, profile: Path, *, width: int = WIDTH,
                     height: int = HEIGHT) -> list:
    """Headless Chromium's command line that renders ``html`` into ``png`` at
    ``width`` x ``height`` CSS px (scale factor 1: the PNG is ``width`` px wide)."""
    return [chromium() or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--hide-scrollbars", "--force-device-scale-factor=1",
            f"--user-data-dir={profile}", f"--window-size={width},{height}",
            f"--screenshot={png}", Path(html).resolve().as_uri()]


def screenshot(html: Path, png: Path, profile: Path, **size) -> Path:
    """Render ``html`` into ``png`` with headless Chromium; ``png``."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    r = subprocess.run(chromium_command(html, png, profile, **size), check=False,
                       capture_output=True, text=True, timeout=120)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no {png.name} (exit {r.returncode}): "
                           f"{r.stderr[-800:]}")
    return png


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"comma-separated report kinds (default: {','.join(KINDS)})")
    ap.add_argument("--out", default=str(HERE / "screenshots"),
                    help="folder of the PNGs (default: docs/screenshots)")
    ap.add_argument("--keep", default=None,
                    help="a folder to keep the reports in (default: a temporary one)")
    args = ap.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        ap.error(f"unknown report kind(s) {unknown}; known: {', '.join(KINDS)}")
    if chromium() is None:
        print("no chromium on PATH: cannot take screenshots", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            html = build(kind, work)
            png = screenshot(html, Path(args.out) / f"{kind}.png", Path(tmp) / "profile")
            print(f"{kind}: {html.name} -> {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
