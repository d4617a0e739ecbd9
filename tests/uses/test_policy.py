"""The verdict's policy (issue 27): which cells are judged, the baseline of what the totals
alone disclose, Monte Carlo error as UNDECIDED, approximate likelihoods never passing, the
policy file and the CLI, provenance in the result file and report."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main

ABS = rk.Policy(cells="all", baseline=None)


# --- which cells are judged ---------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_sensitive_cells_are_the_small_counts_brute_force(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=tuple(rng.integers(1, 5, size=2)))
    small, zeros = int(rng.integers(0, 4)), bool(rng.integers(2))
    coords = {"a": list(range(values.shape[0])), "b": list(range(values.shape[1]))}
    got = rk.Policy(small=small, zeros=zeros).judged(values, coords, ("a", "b"))
    for idx in np.ndindex(*values.shape):       # the rule, cell by cell
        x = values[idx]
        assert got[idx] == ((1 <= x <= small) or (zeros and x == 0))
    assert rk.Policy(cells="all").judged(values, coords, ("a", "b")).all()
    pub = np.where(rng.random(values.shape) < 0.3, np.nan, 1.0)
    hidden = rk.Policy(cells="hidden").judged(values, coords, ("a", "b"), published=pub)
    assert (hidden == np.isnan(pub)).all()


def test_declared_cells_by_labels():
    coords = {"region": ["North", "South"], "age": ["0-15", "85+"]}
    p = rk.Policy(small=0, declared=[["South", "85+"]])
    m = p.judged(np.array([[1, 1], [9, 9]]), coords, ("region", "age"))
    assert m.tolist() == [[False, False], [False, True]]
    with pytest.raises(ValueError, match=r"'85\+ ' is not a label of 'age'"):
        rk.Policy(declared=[["South", "85+ "]]).judged(np.ones((2, 2)), coords,
                                                      ("region", "age"))


@pytest.mark.parametrize("kw, msg", [
    ({"cells": "some"}, "policy cells must be one of"),
    ({"measure": "p"}, "policy measure must be one of"),
    ({"threshold": 1.5}, r"policy threshold must be a number in \(0, 1\]"),
    ({"threshold": 0}, r"policy threshold must be a number in \(0, 1\]"),
    ({"small": -1}, "policy small must be an integer >= 0"),
    ({"small": 1.5}, "policy small must be an integer >= 0"),
    ({"baseline": "totals"}, "policy baseline must be 'margins' or None"),
    ({"mc_sigmas": -2}, "policy mc_sigmas must be a number >= 0"),
    ({"measure": "expected"}, "needs max_expected"),
])
def test_bad_policies_name_the_key(kw, msg):
    with pytest.raises(ValueError, match=msg):
        rk.Policy(**kw)


def test_policy_toml_round_trip_and_unknown_key(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[policy]\ncells = "all"\nthreshold = 0.4\nbaseline = "none"\n'
                 'declared = [["a", "b"]]\n')
    p = rk.Policy.from_toml(f)
    assert p == rk.Policy(cells="all", threshold=0.4, baseline=None, declared=[["a", "b"]])
    assert rk.Policy.from_dict(p.to_dict()) == p
    f.write_text('[policy]\ncell = "all"\n')
    with pytest.raises(ValueError, match=r"p.toml: unknown key 'cell'; known: "):
        rk.Policy.from_toml(f)


# --- the baseline: what the totals alone disclose ---------------------------------------
SPARSE = np.array([[5, 0, 4], [3, 1, 6], [7, 0, 2]])    # a column totalling 1


def test_margins_only_release_is_judged_against_itself():
    """The 8 x 6 complaint in small: a margins-only release whose zero cells reach
    P(0) >= 0.5.  The absolute rule fails it; the default policy's baseline is the release
    itself, so nothing is the release's doing, and the cells are listed apart."""
    t = rk.Table(SPARSE, dims=("r", "c"))
    rel = rk.MarginsOnly().protect(t)
    post = rk.posterior(rel)
    pe = post.prob_exact(t).values
    want = {(i, j) for i, j in zip(*np.nonzero(pe >= 0.5))}
    assert want                              # the case has cells the margins disclose
    absolute = rk.verdict(post, truth=t, policy=ABS)
    assert absolute.label == "FAIL" and len(absolute.failing) == len(want)
    base = rk.verdict(post, truth=t, policy=rk.Policy(cells="all"))
    assert base.label == "PASS" and not base.failing
    assert {c for c, _, _ in base.by_baseline} == {f"({i}, {j})" for i, j in want}
    assert "the release itself" in base.baseline
    assert rk.verdict(post, truth=t).label == "PASS"      # default: cells 1-2 judged


def test_baseline_is_the_margins_only_posterior_of_the_true_totals():
    t = rk.Table(SPARSE, dims=("r", "c"))
    rel = rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25).protect(
        t, np.random.default_rng(2))
    post = rk.posterior(rel)
    v = rk.verdict(post, truth=t, policy=rk.Policy(cells="all"))
    ref = rk.posterior(rk.MarginsOnly().protect(t)).prob_exact(t).values
    np.testing.assert_allclose(v.cells["baseline_prob"].values, ref, rtol=0, atol=1e-12)
    p = post.prob_exact(t).values
    fail = (p >= 0.5) & (p - ref > 1e-9)
    assert {c for c, _, _ in v.failing} == {f"({i}, {j})" for i, j in zip(*np.nonzero(fail))}
    # a reference release given by name: the same numbers
    named = rk.verdict(post, truth=t, policy=rk.Policy(cells="all"),
                       baseline=rk.MarginsOnly().protect(t))
    np.testing.assert_allclose(named.cells["baseline_prob"].values, ref, atol=1e-12)
    assert named.failing == v.failing


def test_a_release_without_totals_has_no_baseline():
    t = rk.Table(SPARSE, dims=("r", "c"), margins=[])
    rel = rk.RandomRounding(base=3).protect(t, np.random.default_rng(0))
    v = rk.verdict(rk.posterior(rel), truth=t)
    assert v.baseline.startswith("none") and "baseline_prob" not in v.cells


# --- Monte Carlo error and approximate likelihoods ---------------------------------------
def _mc_summary(p, mcse, converged=1):
    ds = xr.Dataset({"true": (("a",), np.array([1])), "prob_exact": (("a",), [p]),
                     "mcse_prob_exact": (("a",), [mcse]), "mode": (("a",), [1]),
                     "max_prob": (("a",), [p]), "rhat": (("a",), [1.001])},
                    coords={"a": ["x"]},
                    attrs={"converged": converged, "approximate": 1,
                           "approximation": "Monte Carlo"})
    return ds


@pytest.mark.parametrize("p, label", [(0.503, "UNDECIDED"), (0.49, "UNDECIDED"),
                                      (0.53, "FAIL"), (0.47, "PASS")])
def test_cells_within_two_mcse_of_the_threshold_are_undecided(p, label):
    """The issue's case: 0.503 with MCSE 0.009 is not a FAIL; 2 x 0.009 decides."""
    v = rk.verdict(_mc_summary(p, 0.009), policy=ABS)
    assert v.label == label
    assert (len(v.undecided) == 1) == (label == "UNDECIDED")
    assert v.approximate and "(on an approximate posterior)" in v.lines()[0]


def test_an_approximate_likelihood_never_passes():
    t = rk.Table(np.array([[3, 1], [2, 4]]), dims=("r", "c"))
    rel = rk.BinomialPerturbation(S=2.0).protect(t, np.random.default_rng(1))
    post = rk.posterior(rel, route="cells")
    assert post.attrs["approximate"] == 1 and "not bounded" in post.attrs["error"]
    v = rk.verdict(post, truth=t, policy=rk.Policy(cells="all", baseline=None,
                                                   threshold=1.0))
    assert not v.failing and v.label == "UNDECIDED"
    assert "approximate" in v.reasons[-1] and "no PASS" in v.reasons[-1]
    exact = rk.posterior(rel, route="joint")
    assert exact.attrs["approximate"] == 0 and "error" not in exact.attrs


def test_mcse_of_the_true_value_from_the_chains():
    t = rk.Table(SPARSE, dims=("r", "c"))
    rel = rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25).protect(
        t, np.random.default_rng(2))
    post = rk.posterior(rel, route="gibbs")
    m = post.summary(t)["mcse_prob_exact"].values
    hit = (np.asarray(post.chains) == SPARSE).astype(float)
    n_draws = hit.shape[0] * hit.shape[1]
    p = hit.mean(axis=(0, 1))
    assert np.isfinite(m).all() and (m >= 0).all()
    varying = (p > 0) & (p < 1)
    assert (m[~varying] == 0).all()
    # at least the independent-draws standard error's order (autocorrelation only adds)
    iid = np.sqrt(p * (1 - p) / n_draws)
    assert (m[varying] > 0.5 * iid[varying]).all()


# --- the command line ---------------------------------------------------------------------
@pytest.mark.slow
def test_cli_policy_file_provenance_and_report(tmp_path, capsys):
    f = tmp_path / "board.toml"
    f.write_text('[policy]\ncells = "all"\nbaseline = "none"\nthreshold = 0.3\n')
    out = tmp_path / "o"
    assert main(["assess", "--out", str(out), "--policy", str(f)]) == 0
    text = capsys.readouterr().out
    assert "VERDICT: FAIL under the policy: every cell judged; fails when Pr(true value) " \
           ">= 0.3" in text
    with xr.open_dataset(out / "posterior.nc") as ds:
        assert json.loads(ds.attrs["policy"])["cells"] == "all"
        assert ds.attrs["verdict"] == "FAIL"
        digest = hashlib.sha256(f.read_bytes()).hexdigest()[:16]
        assert f"policy {f} sha256:{digest}" in ds.attrs["provenance_inputs"]
        assert ds.attrs["provenance_version"].startswith("riskengine ")
        assert ds.attrs["provenance_release_sha256"]
    html = (out / "assess.html").read_text()
    assert "<h2>Provenance</h2>" in html and digest in html
    assert "Policy: every cell judged" in html
    # the report of the file read back gives the same verdict
    again = tmp_path / "again"
    assert main(["report", str(out / "posterior.nc"), "--out", str(again)]) == 0
    assert ">FAIL<" in (again / "assess.html").read_text()
    # options override the file
    assert main(["assess", "--out", str(out), "--policy", str(f), "--cells", "sensitive",
                 "--baseline", "margins", "--no-report"]) == 0
    text = capsys.readouterr().out
    assert "sensitive cells judged (counts 1..2)" in text and "baseline: a margins-only" in text


def test_cli_time_budget_says_the_route_passed_over(tmp_path, capsys):
    t = tmp_path / "t.csv"
    t.write_text("r\\c,a,b,c\nx,5,0,4\ny,3,1,6\nz,7,0,2\n")
    rel = tmp_path / "rel.json"
    assert main(["protect", str(t), "--mechanism", "rounding", "--base", "3", "--seed", "1",
                 "--out", str(rel)]) == 0
    capsys.readouterr()
    assert main(["assess", str(rel), "--time", "1e-9", "--no-report",
                 "--out", str(tmp_path / "o")]) == 0
    cap = capsys.readouterr()
    assert "passed over" in cap.err and "more than route='auto' waits (1e-09 s)" in cap.err
    assert "route: gibbs" in cap.out
    with pytest.raises(SystemExit):
        main(["assess", str(rel), "--time", "-1"])


def test_the_frequency_rule_says_which_counts_are_sensitive():
    coords = {"a": [0, 1, 2]}
    p = rk.Policy(rule=rk.sensitivity.Frequency(4, zeros=True))
    assert (p.small, p.zeros) == (3, True)
    vals = np.array([0, 3, 4])
    np.testing.assert_array_equal(p.judged(vals, coords, ("a",)),
                                  rk.sensitivity.Frequency(4, zeros=True).sensitive(vals))
    with pytest.raises(ValueError, match="policy rule must be the frequency rule"):
        rk.Policy(rule=rk.sensitivity.PPercent(10))


def test_cli_reference_release_and_approximate_route(tmp_path, capsys):
    """--baseline RELEASE judges against a named reference release; the binomial
    release's approximate per-cell route says APPROXIMATE and never PASSes."""
    csv = tmp_path / "t.csv"
    csv.write_text("r\\c,a,b\nx,3,1\ny,2,5\n")
    bi, mo = tmp_path / "bi.json", tmp_path / "mo.json"
    assert main(["protect", str(csv), "--mechanism", "binomial", "--param", "S=2",
                 "--seed", "4", "--out", str(bi)]) == 0
    assert main(["protect", str(csv), "--mechanism", "margins", "--out", str(mo)]) == 0
    capsys.readouterr()
    assert main(["assess", str(bi), "--truth", str(csv), "--route", "cells", "--no-report",
                 "--threshold", "1", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "route: cells" in out and "APPROXIMATE: per-cell likelihoods" in out
    assert "VERDICT: UNDECIDED (on an approximate posterior)" in out
    assert main(["assess", str(bi), "--truth", str(csv), "--no-report", "--cells", "all",
                 "--baseline", str(mo), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "baseline: the reference release given (MarginsOnly())" in out
    assert "what the reference release gives" in out
    with xr.open_dataset(tmp_path / "o" / "posterior.nc") as ds:
        assert f"baseline {mo} sha256:" in ds.attrs["provenance_inputs"]
        post = rk.posterior(rk.Release.load(bi))
        ref = rk.posterior(rk.Release.load(mo)).prob_exact(np.array([[3, 1], [2, 5]]))
        np.testing.assert_allclose(ds["baseline_prob"].values, ref.values, atol=1e-12)
        assert post.attrs["route"] == ds.attrs["route"]
    assert main(["assess", str(bi), "--baseline", str(tmp_path / "nope.json")]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_the_readme_policy_file_is_a_policy(tmp_path):
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", text, re.DOTALL) if "[policy]" in b]
    assert len(blocks) == 1
    f = tmp_path / "board.toml"
    f.write_text(blocks[0])
    assert rk.Policy.from_toml(f) == rk.Policy(declared=[["London", "85+"]])


@pytest.mark.slow
def test_cli_until_decided_runs_longer_chains(tmp_path, capsys):
    """A threshold at a Monte Carlo cell's own estimate: UNDECIDED; --until-decided runs
    again with 4x the draws (and says so) until decided or three rounds."""
    out = tmp_path / "o"
    base = ["assess", "--route", "gibbs", "--cells", "all", "--baseline", "none",
            "--no-report", "--out", str(out)]
    assert main(base) == 0
    capsys.readouterr()
    with xr.open_dataset(out / "posterior.nc") as ds:
        p = ds["prob_exact"].values
        m = ds["mcse_prob_exact"].values
        draws = int(ds.attrs["draws"])
    k = np.unravel_index(int(np.argmax(np.where(m > 0, p, -1))), p.shape)
    thr = float(p[k])
    assert main([*base, "--threshold", repr(thr), "--strict"]) == 3
    cap = capsys.readouterr()
    assert "VERDICT: UNDECIDED" in cap.out and "--strict: the verdict is UNDECIDED" in cap.err
    assert main([*base, "--threshold", repr(thr), "--until-decided"]) == 0
    cap = capsys.readouterr()
    assert f"running again with {4 * draws} draws per chain (round 1 of at most 3)" in cap.err
    with xr.open_dataset(out / "posterior.nc") as ds:
        assert int(ds.attrs["draws"]) >= 4 * draws
        assert ds.attrs["verdict"] in ("PASS", "FAIL", "UNDECIDED")


def test_compare_says_which_mechanisms_were_approximate():
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w"))
    ds = rk.compare(t, {"cell key": rk.CellKey(D=2, V=1.0, js=0),
                        "cyclic": rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25)},
                    draws=2, rng=np.random.default_rng(0))
    approx = ds["approximate"].sel(mechanism="cell key").values
    assert (approx == 1).all() and (ds["approximate"].sel(mechanism="cyclic") == 0).all()
    assert ds.attrs["approximate"] == 1
    assert str(ds["routes"].sel(mechanism="cell key").values) == "keys_mcmc"
    from riskengine.report import render_report
    html, _ = render_report(ds)
    assert "APPROXIMATE: the posteriors of cell key (routes keys_mcmc)" in html


def test_simulate_counts_the_approximate_posteriors():
    gen = rk.generators.Poisson(rate=2.0, shape=(3, 3))
    ds = rk.simulate(generator=gen, mechanism=rk.CellKey(D=2, V=1.0, js=0),
                     intruder=rk.priors.Uniform(), n_tables=3, rng=np.random.default_rng(0))
    assert ds.attrs["n_approximate"] == int(ds["approximate"].sum()) == 3
    assert "keys_mcmc" in ds.attrs["routes"]
    exact = rk.simulate(generator=gen, mechanism=rk.MarginsOnly(),
                        intruder=rk.priors.Uniform(), n_tables=2,
                        rng=np.random.default_rng(0))
    assert exact.attrs["n_approximate"] == 0
    from riskengine.report import render_report
    assert "APPROXIMATE: 3 of 3 posteriors" in render_report(ds)[0]
