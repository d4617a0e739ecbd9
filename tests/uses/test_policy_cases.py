"""Issue 27's acceptance cases: under the default policy, the bundled 8 x 6 table, a
margins-only release, a suppression release and a binomial release each get the verdict a
board would expect (README, "The verdict"), and the absolute rule's complaints are gone."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main
from riskengine.cli.output import bundled

ABS = rk.Policy(cells="all", baseline=None)
COUNTS = np.array([[12, 1, 9, 7], [8, 14, 2, 11], [10, 6, 13, 9]])


def test_a_suppression_pattern_is_judged_on_its_hidden_small_counts():
    """The issue's complaint: every published cell (P = 1) failed every pattern.  Under the
    default policy the published cells are not judged; the frequency rule's pattern
    (counts 1 and 2 suppressed, +-1 protection) passes; the absolute rule still fails on
    the published cells alone."""
    t = rk.Table(COUNTS, dims=("r", "c"))
    rel = rk.suppress(t, rk.sensitivity.Frequency(3))
    assert np.isnan(rel.published[0, 1]) and np.isnan(rel.published[1, 2])
    post = rk.posterior(rel)
    v = rk.verdict(post, truth=t)
    assert v.label == "PASS" and v.n_judged == 2
    pe = post.prob_exact(t).values
    assert pe[0, 1] < 0.5 and pe[1, 2] < 0.5          # the hidden 1 and 2: not pinned
    absolute = rk.verdict(post, truth=t, policy=ABS)
    published = ~np.isnan(rel.published)
    assert absolute.label == "FAIL"
    assert {c for c, _, p in absolute.failing} == {
        f"({i}, {j})" for i, j in zip(*np.nonzero(published))}
    # a pattern that publishes a small count fails: the 1 is out in the open
    leaky = rk.Release(np.where(np.arange(12).reshape(3, 4) == 6, np.nan, COUNTS),
                       margins={("r",): COUNTS.sum(1), ("c",): COUNTS.sum(0),
                                (): COUNTS.sum()},
                       mechanism=rk.CellSuppression(), dims=("r", "c"))
    lv = rk.verdict(rk.posterior(leaky), truth=t)
    assert lv.label == "FAIL" and [c for c, _, _ in lv.failing] == ["(0, 1)", "(1, 2)"]


def test_a_binomial_release_of_small_counts_fails_exactly():
    """Binomial perturbation (S = 2) leaves a 1 more likely than not: the exact joint
    route answers, and the verdict names the cell; the approximate per-cell route of the
    same release cannot pass."""
    truth = np.array([[3, 1], [2, 5]])
    rel = rk.BinomialPerturbation(S=2.0).protect(rk.Table(truth, dims=("r", "c")),
                                                 np.random.default_rng(4))
    post = rk.posterior(rel)
    assert post.attrs["route"] == "joint" and post.attrs["approximate"] == 0
    v = rk.verdict(post, truth=truth)
    pe = post.prob_exact(truth).values
    want = {f"({i}, {j})" for i, j in zip(*np.nonzero((pe >= 0.5) & (truth >= 1)
                                                     & (truth <= 2)))}
    assert v.label == "FAIL" and {c for c, _, _ in v.failing} == want == {"(0, 1)"}
    cells = rk.verdict(rk.posterior(rel, route="cells"), truth=truth)
    assert cells.label in ("FAIL", "UNDECIDED") and cells.approximate


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", [["margins"], ["rounding", "--base", "3"]])
def test_the_bundled_8x6_table_passes_and_says_how(tmp_path, capsys, mechanism):
    """regions_ages.csv (no count below 8): PASS under the default policy, through the
    CLI, with the policy, the baseline and provenance written; the Monte Carlo route says
    it is approximate everywhere the answer appears (a 4 GB budget: the rounded table's
    exact DP needs 6.7 GB)."""
    src = bundled("regions_ages.csv")
    rel = tmp_path / "rel.json"
    assert main(["protect", str(src), "--mechanism", *mechanism, "--seed", "1",
                 "--out", str(rel)]) == 0
    capsys.readouterr()
    out = tmp_path / "o"
    assert main(["assess", str(rel), "--truth", str(src), "--out", str(out),
                 "--strict", "--memory", "4GB"]) == 0
    text = capsys.readouterr().out
    assert "VERDICT: PASS (on an approximate posterior)" in text
    assert "APPROXIMATE (Monte Carlo)" in text and "baseline: " in text
    with xr.open_dataset(out / "posterior.nc") as ds:
        assert ds.attrs["verdict"] == "PASS" and ds.attrs["approximate"] == 1
        assert "provenance_date" in ds.attrs
    html = (out / "assess.html").read_text()
    assert "(approximate posterior)" in html and "<h2>Provenance</h2>" in html


def test_a_margins_only_release_through_the_cli(tmp_path, capsys):
    """The sparse column's zeros reach P(0) >= 0.5 from the margins alone: listed apart,
    not a FAIL of the release; --cells all --baseline none reproduces the old FAIL."""
    csv = tmp_path / "t.csv"
    csv.write_text("r\\c,a,b,c\nx,5,0,4\ny,3,1,6\nz,7,0,2\n")
    rel = tmp_path / "rel.json"
    assert main(["protect", str(csv), "--mechanism", "margins", "--out", str(rel)]) == 0
    capsys.readouterr()
    assert main(["assess", str(rel), "--truth", str(csv), "--no-report", "--cells", "all",
                 "--out", str(tmp_path / "o"), "--strict"]) == 0
    text = capsys.readouterr().out
    assert "VERDICT: PASS" in text and "disclosed by the totals alone" in text
    assert main(["assess", str(rel), "--truth", str(csv), "--no-report", "--cells", "all",
                 "--baseline", "none", "--out", str(tmp_path / "o"), "--strict"]) == 3
    assert "VERDICT: FAIL" in capsys.readouterr().out
