"""``riskengine assess CONFIG.toml``: a census publication (swapping, then the cell key
method) judged by the intruder's simulation-based posterior (riskengine/_census_posterior.py):
the verdict line, census.nc and census.html, the bundled example config, ``--no-report``,
``--strict`` and one-line errors for bad configs."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from riskengine.cli import main
from riskengine.cli.output import bundled

SMALL = """
seed = 5
sims = 12
min_cells = 10
[population]
districts = 2
areas = 3
households = [5, 20]
[swapping]
swaprate = 0.1
k_anonymity = 3
[cell_key]
D = 2
V = 1.0
[intruder]
swaprate = [0.05, 0.1]
[policy]
threshold = {threshold}
"""


def _config(tmp_path, threshold=0.5, extra=""):
    p = tmp_path / "census.toml"
    p.write_text(SMALL.format(threshold=threshold) + extra)
    return str(p)


def test_a_config_gives_the_verdict_and_writes_census_nc_and_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["assess", _config(tmp_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "APPROXIMATE: simulation-based" in text
    assert "expected exact disclosures" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("VERDICT: "))
    with xr.open_dataset(out / "census.nc", engine="scipy") as ds:
        ds = ds.load()
    assert ds.attrs["riskengine_kind"] == "census"
    assert line.startswith(f"VERDICT: {ds.attrs['verdict']} ")
    assert ds.attrs["approximate"] == 1 and ds.attrs["sims"] == 12
    assert "TRS swaprate 0.05" in ds.attrs["settings"] and "swaprate 0.1" in \
        ds.attrs["settings"]
    p = ds["prob_exact"].values
    assert np.nanmin(p) >= 0 and np.nanmax(p) <= 1
    small = np.isin(ds["published"].values, ds.attrs["small"])
    np.testing.assert_allclose(ds.attrs["expected_exact"], p[small].sum())
    html = (out / "census.html").read_text()
    assert "APPROXIMATE" in html and f"VERDICT: {ds.attrs['verdict']}" in html
    # riskengine report reads census.nc back
    assert main(["report", str(out / "census.nc"), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "census.html").exists()
    # --no-report takes the earlier report away
    assert main(["assess", _config(tmp_path), "--out", str(out), "--no-report"]) == 0
    assert not (out / "census.html").exists()


def test_the_verdict_follows_the_threshold_and_strict_exits_3(tmp_path, capsys):
    # a threshold every published 1 or 2 reaches (Pr >= 0.001 beyond 2 s.e.) -> FAIL
    cfg = _config(tmp_path, threshold=0.001)
    assert main(["assess", cfg, "--out", str(tmp_path / "a"), "--no-report",
                 "--strict"]) == 3
    assert "VERDICT: FAIL" in capsys.readouterr().out
    # a threshold of 1 no estimate reaches beyond its margin -> not FAIL
    cfg = _config(tmp_path, threshold=1.0)
    assert main(["assess", cfg, "--out", str(tmp_path / "b"), "--no-report"]) == 0
    assert "VERDICT: FAIL" not in capsys.readouterr().out


def test_the_bundled_example_config_parses():
    from riskengine._config import census_args, load
    cfg, base = load(bundled("census_example.toml"))
    c = census_args(cfg, base)
    assert len(c["settings"]) == 6 and c["sims"] == 40 and c["threshold"] == 0.5
    assert c["publication"].release.system.published.sum() > 0
    # V defaults to D / 2, D to 2, and the intruder's candidate to the true p-table
    c = census_args({"seed": 1, "sims": 2, "population": {"districts": 2, "areas": 2,
                                                         "households": [5, 10]},
                     "cell_key": {"V": 1.0}}, base)
    assert [s.describe() for s in c["settings"]] == [
        "no swapping; CellKey(D=2, V=1.0, js=0) (weight 1)"]


@pytest.mark.parametrize("extra, match", [
    ("color = 1\n", "color"),
    ("[cell_key2]\nD = 1\n", "cell_key2"),
])
def test_unknown_keys_are_named(tmp_path, capsys, extra, match):
    assert main(["assess", _config(tmp_path, extra=extra), "--out", str(tmp_path)]) != 0
    assert match in capsys.readouterr().err


def test_bad_values_give_one_line_errors(tmp_path, capsys):
    bad = SMALL.format(threshold=1.5)
    p = tmp_path / "c.toml"
    p.write_text(bad)
    assert main(["assess", str(p), "--out", str(tmp_path)]) != 0
    assert "[policy] threshold must lie in (0, 1]" in capsys.readouterr().err
    p.write_text(SMALL.format(threshold=0.5).replace("swaprate = [0.05, 0.1]",
                                                     "swaprate = 0.1"))
    assert main(["assess", str(p), "--out", str(tmp_path)]) != 0
    assert "[intruder] swaprate must be a non-empty list" in capsys.readouterr().err
    p.write_text("seed = 1\n[population]\ndistricts = 2\n")
    assert main(["assess", str(p), "--out", str(tmp_path)]) != 0
    assert "protects nothing" in capsys.readouterr().err
