"""The README's worked example: the bundled 8 x 6 table, rounded to base 3, assessed
from the command line to a verdict (beyond the exact route's default budget, so by the
Monte Carlo route, with its diagnostics)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import riskengine as rk
from riskengine.cli import _bundled, main


@pytest.mark.slow
def test_regions_by_ages_from_csv_to_verdict(tmp_path, capsys):
    csv = _bundled("regions_ages.csv")
    t = rk.read_table(csv)
    assert t.dims == ("region", "age") and t.shape == (8, 6)
    assert t.coords["age"] == ["0-15", "16-24", "25-34", "35-49", "50-64", "65+"]
    rel = tmp_path / "rounded.json"
    assert main(["protect", str(csv), "--mechanism", "rounding", "--param", "base=3",
                 "--param", "method=optimal", "--seed", "1", "--out", str(rel)]) == 0
    published = np.array(json.loads(rel.read_text())["published"])
    assert (published % 3 == 0).all()
    capsys.readouterr()
    code = main(["assess", str(rel), "--truth", str(csv), "--threshold", "0.5", "--strict",
                 "--memory", "4GB", "--out", str(tmp_path / "results")])
    out = capsys.readouterr().out
    assert "route: gibbs" in out and "APPROXIMATE (Monte Carlo)" in out
    assert "converged by the usual rules" in out
    verdict_line = next(line for line in out.splitlines() if line.startswith("VERDICT:"))
    assert code == (0 if "PASS" in verdict_line else 3)
    html = (tmp_path / "results" / "assess.html").read_text()
    assert "Monte Carlo diagnostics" in html and "Verdict" in html


def test_margins_only_count_is_estimated(tmp_path, capsys):
    csv = _bundled("regions_ages.csv")
    rel = tmp_path / "margins.json"
    assert main(["protect", str(csv), "--mechanism", "margins", "--out", str(rel)]) == 0
    capsys.readouterr()
    assert main(["count", str(rel), "--memory", "1GB", "--sis", "2000"]) == 0
    assert capsys.readouterr().out.startswith("approximately ")
