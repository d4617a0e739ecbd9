"""Every refusal a user can cause is one line on stderr and exit code 2; ``compare`` keeps
the mechanisms that work; each command writes (and ``--no-report`` removes) its own
report."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine._compare import MechanismFailed
from riskengine.cli import _bundled, main


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("riskengine: error: "), err
    return lines[0]


@pytest.fixture
def regions(tmp_path):
    """The bundled 8 x 6 table rounded to base 3 and under margins only: their exact
    routes need gigabytes (README's worked example)."""
    t = rk.read_table(_bundled("regions_ages.csv"))
    out = {}
    for name, mech in (("rounding", rk.ControlledRounding(3)), ("margins", rk.MarginsOnly())):
        out[name] = tmp_path / f"{name}.json"
        mech.protect(t, np.random.default_rng(1)).save(out[name])
    return out


def test_too_large_refusals_name_the_commands_way_forward(regions, tmp_path, capsys):
    # count: no exact count route fits (rounding: no estimator to fall back on)
    assert main(["count", str(regions["rounding"]), "--memory", "1MB"]) == 2
    line = one_line_error(capsys)
    assert "no count route fits" in line and "raise --memory" in line
    assert "memory=" not in line.replace("--memory", "")
    # assess: not even the Monte Carlo route fits 1 MB
    assert main(["assess", str(regions["margins"]), "--memory", "1MB", "--out",
                 str(tmp_path / "a")]) == 2
    line = one_line_error(capsys)
    assert "no posterior route fits" in line and "gibbs: needs" in line
    assert "raise --memory" in line
    assert not (tmp_path / "a").exists()
    # a named exact route that does not fit: the routes that do, and how to choose one
    assert main(["assess", str(regions["rounding"]), "--route", "dp", "--memory", "1GB",
                 "--no-report", "--out", str(tmp_path / "a")]) == 2
    line = one_line_error(capsys)
    assert "route 'dp' cannot answer this release" in line
    assert "routes that apply: gibbs (--route NAME chooses one)" in line
    # analyze: the same refusal through its own options
    assert main(["analyze", str(regions["rounding"]), "--route", "dp", "--memory", "1GB",
                 "--out", str(tmp_path / "b")]) == 2
    assert "(--route NAME chooses one)" in one_line_error(capsys)
    # compare: every mechanism refused -> one line, nothing written
    cfg = tmp_path / "big.toml"
    cfg.write_text(f'seed = 1\ndraws = 1\n[table]\npath = "{_bundled("regions_ages.csv")}"\n'
                   '[[mechanisms]]\ntype = "controlled_rounding"\nbase = 3\n')
    assert main(["compare", str(cfg), "--memory", "1MB", "--out", str(tmp_path / "c")]) == 2
    line = one_line_error(capsys)
    assert "every mechanism failed" in line and "raise --memory" in line
    assert not (tmp_path / "c").exists()


def test_cta_release_assess_gives_the_audit_count_refuses(tmp_path, capsys):
    """No posterior exists for a CTA release: ``assess`` answers with the audit (exit 0),
    ``count`` refuses in one line that points to ``riskengine audit``."""
    t = rk.Table(np.array([[20.0, 5, 30], [40, 8, 10], [6, 25, 12]]), dims=("r", "a"))
    sens = np.zeros((3, 3), bool)
    sens[0, 1] = sens[1, 1] = True
    rel = tmp_path / "cta.json"
    rk.cta(t, sens, protection=np.where(sens, 3.0, 0.0),
           capacity=np.full((3, 3), 10.0)).release.save(rel)
    assert main(["assess", str(rel), "--out", str(tmp_path / "o")]) == 0
    cap = capsys.readouterr()
    assert "a CTA release (ControlledTabularAdjustment(" in cap.out and cap.err == ""
    assert (tmp_path / "o" / "audit.html").is_file()
    assert main(["count", str(rel)]) == 2
    line = one_line_error(capsys)
    assert "a CTA release" in line and "magnitude releases have no integer posterior" in line
    assert f"riskengine audit {rel} derives what an intruder can" in line


def test_bad_files_and_options(tmp_path, capsys):
    good = tmp_path / "t.csv"
    good.write_text("\\,a,b\nx,3,1\ny,2,4\n")
    rel = tmp_path / "rel.json"
    assert main(["protect", str(good), "--mechanism", "margins", "--out", str(rel)]) == 0
    capsys.readouterr()
    notjson = tmp_path / "bad.json"
    notjson.write_text("{not json")
    badcsv = tmp_path / "bad.csv"
    badcsv.write_text("\\,a,b\nx,3,lots\n")
    cases = [
        (["assess", str(notjson)], "release JSON is not valid JSON"),
        (["count", str(tmp_path / "missing.json")], "no such file"),
        (["assess", str(rel), "--truth", str(tmp_path / "nope.csv")], "no such file"),
        (["count", str(tmp_path)], "is a folder; a file is needed"),
        (["protect", str(badcsv), "--mechanism", "margins"], ""),
        (["assess", str(rel), "--out", str(good)], "exists and is not a folder"),
        (["protect", str(good), "--mechanism", "nope"], "unknown mechanism 'nope'"),
        (["count", str(rel), "--route", "nope"], "unknown route 'nope'"),
        (["compare", str(good)], "not valid TOML"),
    ]
    for cmd, msg in cases:
        assert main(cmd) == 2, cmd
        assert msg in one_line_error(capsys), cmd
    # argparse's own errors: one line too
    for cmd, msg in [(["assess", "--level", "2"], "--level must be a probability"),
                     (["count", str(rel), "--memory", "lots"],
                      "--memory must be bytes or a size"),
                     (["count"], "required: release"), (["nope"], "invalid choice")]:
        with pytest.raises(SystemExit) as exc:
            main(cmd)
        assert exc.value.code == 2
        assert msg in one_line_error(capsys)


# --- compare keeps the mechanisms that work --------------------------------------------
def test_compare_keeps_the_others_when_one_mechanism_fails():
    """On the 8 x 6 table with a 20 MB budget, rounding to base 3 has no route (its exact
    DP needs GB, the Gibbs route 58 MB) while the bootstrap's independent cells fit:
    rounding fails, the bootstrap is compared as usual (the same numbers as alone: common
    random numbers do not depend on the other mechanisms)."""
    t = rk.read_table(_bundled("regions_ages.csv"))
    mechs = {"bootstrap": rk.Bootstrap(M=3, S=2.0), "rounding": rk.ControlledRounding(3)}
    kw = {"draws": 2, "memory": "20MB"}
    with pytest.warns(MechanismFailed, match="mechanism 'rounding' failed"):
        ds = rk.compare(t, mechs, rng=np.random.default_rng(3), **kw)
    alone = rk.compare(t, {"bootstrap": mechs["bootstrap"]}, rng=np.random.default_rng(3),
                       **kw)
    err = dict(zip(ds["mechanism"].values, ds["error"].values))
    assert err["bootstrap"] == ""
    assert re.match(r"draw 0: no posterior route fits this controlled_rounding release: "
                    r"dp: needs \d+(\.\d+)? GB", err["rounding"])
    for v in ("risk", "utility", "risk_draw", "prob_exact", "l1"):
        np.testing.assert_array_equal(ds[v].sel(mechanism="bootstrap"),
                                      alone[v].sel(mechanism="bootstrap"))
        assert np.isnan(ds[v].sel(mechanism="rounding")).all()
    with pytest.raises(ValueError, match="every mechanism failed; 'rounding': draw 0: "):
        rk.compare(t, {"rounding": mechs["rounding"]}, rng=np.random.default_rng(3), **kw)


def test_cli_compare_reports_the_failed_mechanism_and_writes_the_rest(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'seed = 3\ndraws = 2\n[table]\npath = "{_bundled("regions_ages.csv")}"\n'
                   '[[mechanisms]]\nlabel = "bootstrap"\ntype = "bootstrap"\nM = 3\nS = 2\n'
                   '[[mechanisms]]\nlabel = "rounding"\ntype = "controlled_rounding"\n'
                   'base = 3\n')
    out = tmp_path / "out"
    assert main(["compare", str(cfg), "--memory", "20MB", "--out", str(out)]) == 2
    cap = capsys.readouterr()
    (line,) = cap.err.strip().splitlines()
    assert line.startswith("riskengine: error: compare: mechanism 'rounding' failed: draw 0: "
                           "no posterior route fits")
    assert "raise --memory" in line
    assert any(ln.startswith("rounding") and "FAILED" in ln for ln in cap.out.splitlines())
    assert any(ln.startswith("bootstrap ") and "FAILED" not in ln
               for ln in cap.out.splitlines())
    with xr.open_dataset(out / "compare.nc") as ds:
        assert str(ds["error"].values[0]) == ""
        assert "no posterior route fits" in str(ds["error"].values[1])
        assert np.isfinite(float(ds["risk"].sel(mechanism="bootstrap")))
    html = (out / "compare.html").read_text()
    assert "Failed: 1 of 2 mechanisms" in html and "no posterior route fits" in html
    # the report rebuilt from the file says the same
    assert main(["report", str(out / "compare.nc"), "--out", str(tmp_path / "again")]) == 0
    assert "Failed: 1 of 2 mechanisms" in (tmp_path / "again" / "compare.html").read_text()


# --- each command its own report -------------------------------------------------------
@pytest.mark.slow
def test_each_command_writes_its_own_report_and_no_report_removes_it(tmp_path, capsys):
    out = tmp_path / "out"
    rel, truth = _bundled("seed003_release.json"), _bundled("seed003_original.csv")
    assert main(["assess", str(rel), "--truth", str(truth), "--out", str(out)]) == 0
    assert main(["compare", "--draws", "1", "--out", str(out)]) == 0
    assert main(["simulate", "--n-tables", "4", "--out", str(out)]) == 0
    assert main(["analyze", "--draws", "200", "--out", str(out)]) == 0
    capsys.readouterr()
    names = {p.name for p in out.iterdir()}
    assert {"assess.html", "compare.html", "simulate.html", "analyze.html"} <= names
    assert {"heatmap_prob_exact.png", "ru_map.png", "calibration.png",
            "statistic_0.png"} <= names
    assert "report.html" not in names
    kinds = {"assess": "Disclosure-risk assessment", "compare": "Comparison of protection",
             "simulate": "Intruder simulation", "analyze": "The user&#x27;s analysis"}
    for kind, title in kinds.items():
        assert f"<title>{title}" in (out / f"{kind}.html").read_text()
    # a later assess without the truth: its plot of Pr(true value) goes with the old report
    assert main(["assess", str(rel), "--out", str(out)]) == 0
    assert not (out / "heatmap_prob_exact.png").exists()
    assert (out / "heatmap_max_prob.png").exists()
    # --no-report: this command's report and plots go, the others' stay
    assert main(["assess", str(rel), "--no-report", "--out", str(out)]) == 0
    assert "earlier report removed" in capsys.readouterr().out
    left = {p.name for p in out.iterdir()}
    assert not {"assess.html", "heatmap_max_prob.png", "posterior_bars.png"} & left
    assert {"compare.html", "ru_map.png", "simulate.html", "analyze.html",
            "statistic_0.png", "posterior.nc"} <= left
    assert main(["compare", "--draws", "1", "--no-report", "--out", str(out)]) == 0
    left = {p.name for p in out.iterdir()}
    assert "compare.html" not in left and "ru_map.png" not in left
    assert "simulate.html" in left
    # report: named after the results' kind
    assert main(["report", str(out / "compare.nc")]) == 0
    assert (out / "compare.html").exists()
    assert {"simulate.nc", "analysis.nc", "compare.nc"} <= {p.name for p in out.iterdir()}


# --- misspelt keys: one line listing the valid ones -------------------------------------
@pytest.mark.parametrize("command,toml,msg", [
    ("compare", ('[table]\nvalues = [[3, 1], [2, 4]]\n[[mechanisms]]\ntype = "cyclic"\n'
                'alhpa = 0.1\n'),
     ("[[mechanisms]] block 1: unknown parameter 'alhpa' for mechanism 'cyclic'; valid: "
     "cycles, alpha, beta, rule, design")),
    ("compare", ('[table]\nvalues = [[3, 1], [2, 4]]\n[[mechanisms]]\ntype = "rounding"\n'
                'sweep = { bsae = [2, 3] }\n'),
     ("unknown parameter 'bsae' for mechanism 'controlled_rounding'; valid: base, method, "
     "zero_restricted, likelihood")),
    ("simulate", ('[generator]\ntype = "poisson"\nrate = 2.0\nshape = [3, 3]\n'
                 '[mechanism]\ntype = "noise"\nscael = 1.0\n'),
     ("[mechanism]: unknown parameter 'scael' for mechanism 'noisy_counts'; valid: "
     "distribution, scale, clip")),
    ("simulate", ('[generator]\ntype = "poisson"\nrate = 2.0\nshape = [3, 3]\n'
                 '[mechanism]\ntype = "cyclic"\n[intruder]\n'
                 'assumed = { type = "cyclic", beat = 0.1 }\n'),
     "[intruder] assumed: unknown parameter 'beat' for mechanism 'cyclic'; valid: "),
    ("simulate", ('[generator]\ntype = "poisson"\nrat = 2.0\nshape = [3, 3]\n'
                 '[mechanism]\ntype = "cyclic"\n'),
     "unknown key 'rat' in [generator]; known: type, rate, shape, dims, coords"),
])
def test_a_misspelt_toml_key_lists_the_valid_keys(tmp_path, capsys, command, toml, msg):
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    assert main([command, str(cfg), "--out", str(tmp_path / "o")]) == 2
    line = one_line_error(capsys)
    assert msg in line
    assert "__init__" not in line and "unexpected keyword" not in line
    assert not (tmp_path / "o").exists()


def test_a_misspelt_param_lists_the_valid_keys(tmp_path, capsys):
    t = tmp_path / "t.csv"
    t.write_text("\\,a,b\nx,3,1\ny,2,4\n")
    cases = [
        (["--mechanism", "rounding", "--param", "bsae=3"],
         ("--mechanism rounding: unknown parameter 'bsae' for mechanism "
         "'controlled_rounding'; valid: base, method, zero_restricted, likelihood")),
        (["--mechanism", "bootstrap", "--param", "m=3"],
         "unknown parameter 'm' for mechanism 'bootstrap'; valid: M, S, max_regenerations"),
        # the protect inputs are keys --param takes too: listed beside the parameters
        (["--mechanism", "cell_suppression", "--param", "sensitve=[[1, 0], [0, 0]]"],
         ("unknown parameter 'sensitve' for mechanism 'cell_suppression'; valid: method, "
         "cost, suppress_zeros, suppress_totals; inputs of protect: sensitive, protection")),
    ]
    for args, msg in cases:
        assert main(["protect", str(t), *args, "--out", str(tmp_path / "r.json")]) == 2
        line = one_line_error(capsys)
        assert msg in line and "__init__" not in line
    assert not (tmp_path / "r.json").exists()


def test_an_approximate_likelihood_is_named_in_the_text_and_the_report(tmp_path, capsys):
    """A binomial release assessed by the independent-cells route (the cells' dependence
    through the compensation stage left out) says APPROXIMATE, with what is approximated,
    in the command's text, the written posterior and the report - not only in attrs."""
    t = rk.Table(np.array([[5, 3, 2], [4, 6, 1]]), dims=("v", "w"))
    rel = rk.BinomialPerturbation(2.0).protect(t, np.random.default_rng(2))
    path = tmp_path / "rel.json"
    rel.save(path)
    out = tmp_path / "out"
    assert main(["assess", str(path), "--route", "cells", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    post = rk.posterior(rel, route="cells")
    assert not post.exact and post.attrs["approximation"]
    assert f"APPROXIMATE: {post.attrs['approximation']}" in text
    ds = xr.open_dataset(out / "posterior.nc")
    assert ds.attrs["approximation"] == post.attrs["approximation"]
    html = (out / "assess.html").read_text(encoding="utf-8")
    assert "APPROXIMATE" in html
