"""The reconstruct report (riskengine/report/reconstruct.py): what it says for an exact
publication, for one answered by Monte Carlo (APPROXIMATE, the units and their
diagnostics, the ranked claims flagged not exact) and read back from the netCDF file."""

from __future__ import annotations

import re
import warnings

import numpy as np

import riskengine as rk
from riskengine._io import atomic_write_netcdf
from riskengine.inference.gibbs import ConvergenceWarning
from riskengine.report import render_report, write_report
from riskengine.report.reconstruct import TOP_CLAIMS
from tests.uses.test_reconstruct import _mc_case


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_an_exact_publication_reports_its_certain_persons(tmp_path):
    ts = _mc_case()
    ds = rk.reconstruct(ts, unit="block", level=2)
    assert ds.attrs["riskengine_kind"] == "reconstruct"
    html, images = render_report(ds)
    assert images == {}
    assert "<title>Reconstruction audit of a table set" in html
    t = _text(html)
    a = ds.attrs
    assert (f"reconstructed with certainty (every consistent table agrees) "
            f"{a['persons_certain']} ({100 * a['share_certain']:.1f} %)") in t
    assert f"{a['persons']}" in t and "APPROXIMATE" not in t and "Monte Carlo" not in t
    # every unit is listed, with its persons in certain cells
    for u in np.unique(ds["unit"].values):
        assert f" {u} " in t
    # the file written and read back: the same report
    path = tmp_path / "reconstruct.nc"
    atomic_write_netcdf(ds, path)
    out = write_report(path, tmp_path)
    assert out.name == "reconstruct.html"
    assert _text(out.read_text()) == t


def test_a_monte_carlo_unit_is_named_and_its_claims_are_not_exact():
    ts = _mc_case()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2,
                            max_candidates=3, draws=2000, seed=4)
    html, _ = render_report(ds)
    t = _text(html)
    assert "APPROXIMATE:" in t and "Monte Carlo units" in t
    assert "1 units sampled (converged: 1)" in t
    # the ranked claims past the certain ones, most confident first, flagged not exact
    cert = ds["record_certain"].values
    conf = ds["confidence"].values
    rest = np.sort(conf[~cert])[::-1][:TOP_CLAIMS]
    table = html[html.index("most confident uncertain claims"):]
    shown = [float(x) for x in re.findall(r"<td>(0\.\d{4}|1\.0000)</td>", table)]
    assert shown == [round(float(c), 4) for c in rest]
    assert table.count("<td class=\"l\">false</td>") + table.count("<td>false</td>") \
        >= len(rest)
