"""The risk policy's verdict: PASS / FAIL against the posterior's own numbers, the CLI's
--threshold / --strict, and the report opening with it."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main
from riskengine.data import seeds

#: the absolute rule these tests check: every cell judged, no baseline
ABS = rk.Policy(cells="all", baseline=None)


@pytest.fixture(scope="module")
def seed003():
    t = rk.Table(seeds.S003.ORIGINAL_2D, dims=("v", "w"),
                 coords={"v": ["a", "b", "c", "d"], "w": ["p", "q", "r", "s"]})
    rel = rk.CyclicPerturbation(rk.cycles.diagonal(4), 0.25, 0.25).protect(
        t, np.random.default_rng(1))
    return t, rel, rk.posterior(rel)


@pytest.mark.parametrize("threshold", [0.2, 0.35, 0.5, 0.9, 1.0])
def test_failing_cells_are_those_at_or_above_the_threshold(seed003, threshold):
    t, _, post = seed003
    pe = post.prob_exact(t).values
    v = rk.verdict(post, truth=t, threshold=threshold, policy=ABS)
    want = {(i, j) for i, j in zip(*np.nonzero(pe >= threshold))}
    assert len(v.failing) == len(want)
    assert v.passed == (not want)
    labels = {f"({'abcd'[i]}, {'pqrs'[j]})": (i, j) for i, j in want}
    assert {c for c, _, _ in v.failing} == set(labels)
    for c, val, p in v.failing:
        i, j = labels[c]
        assert val == t.values[i, j] and p == pytest.approx(pe[i, j], abs=1e-15)
    assert [c for c, _, _ in v.small] == [c for c, val, _ in v.failing if val in (1, 2)]
    assert v.expected == pytest.approx(pe.sum())
    assert v.measure == "Pr(true value)" and "true value" in v.rule
    assert v.label == ("PASS" if v.passed else "FAIL")


def test_without_truth_the_intruder_s_best_guess(seed003):
    _, _, post = seed003
    mp = post.max_prob().values
    v = rk.verdict(post, threshold=0.4, policy=ABS)
    assert v.measure == "Pr(best guess)" and "best guess" in v.rule
    assert len(v.failing) == int((mp >= 0.4).sum())
    assert v.expected == pytest.approx(mp.sum())


def test_expected_disclosures_rule_and_dataset_input(seed003):
    t, _, post = seed003
    pe = post.prob_exact(t).values.sum()
    strict = rk.verdict(post, truth=t, threshold=1.0, max_expected=pe - 0.01, policy=ABS)
    loose = rk.verdict(post, truth=t, threshold=1.0, max_expected=pe + 0.01, policy=ABS)
    assert not strict.passed and "expected exactly disclosed judged cells" in strict.reasons[0]
    assert loose.passed
    ds = post.to_dataset(t)
    assert rk.verdict(ds, threshold=0.3, policy=ABS) == rk.verdict(post, truth=t,
                                                                   threshold=0.3, policy=ABS)


def test_an_unconverged_monte_carlo_posterior_never_passes(seed003):
    t, _, post = seed003
    ds = post.to_dataset(t)
    ds.attrs.update(approximate=1, converged=0, diagnostics="max R-hat 1.2")
    v = rk.verdict(ds, threshold=1.0, policy=ABS)
    assert not v.passed and v.label == "UNDECIDED" and "has not converged" in v.reasons[0]


@pytest.mark.parametrize("kw, msg", [
    ({"threshold": 0.0}, "threshold must be a probability in"),
    ({"threshold": 1.5}, "threshold must be a probability in"),
    ({"threshold": True}, "threshold must be a probability in"),
    ({"max_expected": -1.0}, "max_expected must be a number >= 0"),
])
def test_bad_policies_are_refused(seed003, kw, msg):
    _, _, post = seed003
    with pytest.raises(ValueError, match=msg):
        rk.verdict(post, **kw)


@pytest.mark.slow
def test_cli_threshold_strict_and_report(tmp_path, capsys):
    out = tmp_path / "pass"
    assert main(["assess", "--out", str(out), "--strict", "--threshold", "0.9"]) == 0
    text = capsys.readouterr().out
    assert "VERDICT: PASS under the policy: sensitive cells judged" in text
    assert "Pr(true value) >= 0.9" in text
    html = (out / "assess.html").read_text()
    assert "Verdict: " in html and ">PASS<" in html
    assert html.index("Verdict") < html.index("<h2>Release</h2>")
    fail = tmp_path / "fail"
    assert main(["assess", "--out", str(fail), "--strict", "--threshold", "0.3",
                 "--max-expected", "1", "--cells", "all", "--baseline", "none"]) == 3
    cap = capsys.readouterr()
    assert "VERDICT: FAIL" in cap.out and "--strict: the verdict is FAIL" in cap.err
    assert (fail / "assess.html").exists()          # results are written on FAIL
    with xr.open_dataset(fail / "posterior.nc") as ds:
        assert ds.attrs["threshold"] == 0.3 and ds.attrs["max_expected"] == 1.0
    again = tmp_path / "again"
    assert main(["report", str(fail / "posterior.nc"), "--out", str(again)]) == 0
    assert ">FAIL<" in (again / "assess.html").read_text()
