"""Magnitude tables from the command line (issue 19 item 1): ``riskengine suppress``
(microdata -> sensitive cells by rules -> complementary suppression -> release) and
``riskengine audit``, each checked against the library called directly on the same data
(``rk.contributions``, ``rk.sensitivity.assess``, ``rk.suppress``, ``rk.audit``);
``assess`` of a magnitude release gives the audit, ``count`` refuses it."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main

S = rk.sensitivity

#: contributions per (region, industry) cell.  By hand (seed 004's linear measures):
#: (A, y) = 90, 4, 3, 2, 1 is sensitive under p = 15 % (S = 90 - 100/15 * 6 = 50) and
#: (3,80)-dominance; (B, x) = 40, 38, 30, 5, 4 under dominance only (S = 108 - 4 * 9 = 72;
#: p-percent: 40 - 100/15 * 39 < 0); every other cell and every total is safe
CELLS = {("A", "x"): [12, 10, 9, 8, 11], ("A", "y"): [90, 4, 3, 2, 1],
         ("A", "z"): [15, 14, 13, 12, 10], ("B", "x"): [40, 38, 30, 5, 4],
         ("B", "y"): [20, 18, 16, 15, 14], ("B", "z"): [11, 12, 13, 14, 15],
         ("C", "x"): [25, 22, 20, 18, 17], ("C", "y"): [30, 28, 27, 26],
         ("C", "z"): [19, 17, 16, 15, 13]}
RULES = ["--rule", "p:15", "--rule", "nk:3,80"]
ARGS = ["--dims", "region,industry", "--value", "turnover", *RULES]


@pytest.fixture
def micro(tmp_path):
    path = tmp_path / "micro.csv"
    rows = [(f"f{n}", r, i, v) for n, ((r, i), v) in enumerate(
        ((k, v) for k, vs in CELLS.items() for v in vs), start=1)]
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([("firm", "region", "industry", "turnover"), *rows])
    return path


def direct(method="heuristic", cost="value"):
    """The library on the same data: contributions, sensitivity, suppression."""
    data = {"region": [r for (r, _), vs in CELLS.items() for _ in vs],
            "industry": [i for (_, i), vs in CELLS.items() for _ in vs],
            "turnover": np.array([v for vs in CELLS.values() for v in vs], float)}
    c = rk.contributions(data, dims=("region", "industry"), value="turnover")
    sens = S.assess(c, S.Max(S.PPercent(15), S.Dominance(3, 80)))
    return c, sens, rk.suppress(c, sens, method=method, cost=cost)


def run(argv) -> int:
    """The exit code of ``riskengine ARGV`` (argparse's errors exit through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("riskengine: error: "), err
    return lines[0]


def test_the_data_exercise_both_rules():
    c, sens, rel = direct()
    p = S.assess(c, S.PPercent(15)).sensitive.values
    nk = S.assess(c, S.Dominance(3, 80)).sensitive.values
    assert p.sum() == 1 and nk.sum() == 2 and (nk & ~p).sum() == 1
    assert sens.sensitive.values.sum() == 2 and rel.info["n_complementary"] >= 1


@pytest.mark.parametrize("method,cost", [("heuristic", "value"), ("optimal", "count")])
def test_suppress_writes_the_library_s_release(micro, tmp_path, capsys, method, cost):
    out = tmp_path / "release.json"
    assert main(["suppress", str(micro), *ARGS, "--method", method, "--cost", cost,
                 "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    got = rk.Release.load(out)
    _, _, want = direct(method, cost)
    # the same pattern and published numbers, totals and mechanism
    np.testing.assert_array_equal(np.isnan(got.published), np.isnan(want.published))
    np.testing.assert_allclose(got.published, want.published, rtol=1e-12)
    assert got.margins.keys() == want.margins.keys()
    for k in want.margins:
        np.testing.assert_allclose(got.margins[k], want.margins[k], rtol=1e-12)
    assert got.mechanism.to_dict() == want.mechanism.to_dict()
    assert got.kind == "magnitude" and got.coords == want.coords
    i = want.info
    assert f"primary suppressions: {i['n_sensitive']} (sensitive cells)" in stdout
    assert f"secondary suppressions: {i['n_complementary']}" in stdout
    assert "audit: PROTECTED" in stdout and "every sensitive cell (2) is protected" in stdout
    if cost == "value":
        assert f"pattern cost (--cost value, --method heuristic): {i['value_complementary']:g}" \
            in stdout
    else:
        assert "status optimal, gap 0" in stdout
    # how it was made is recorded (public: the rules are the agency's stated policy)
    assert json.loads(out.read_text())["info"]["microdata"] == {
        "value": "turnover", "rules": ["p:15", "nk:3,80"]}


def test_suppress_without_out_writes_the_json_to_stdout(micro, capsys):
    assert main(["suppress", str(micro), *ARGS]) == 0
    cap = capsys.readouterr()
    rel = rk.Release.from_json(cap.out)
    assert np.isnan(rel.published).sum() == direct()[2].info["n_suppressed"]
    assert "primary suppressions: 2" in cap.err


def _audit_nc(path) -> xr.Dataset:
    with xr.open_dataset(path) as ds:
        return ds.load()


def test_audit_gives_rk_audit_s_intervals(micro, tmp_path, capsys):
    rel_path = tmp_path / "release.json"
    assert main(["suppress", str(micro), *ARGS, "--out", str(rel_path)]) == 0
    c, sens, _ = direct()
    rel = rk.Release.load(rel_path)
    capsys.readouterr()
    # the auditor's view: the microdata and rules (recorded in the release: defaults)
    assert main(["audit", str(rel_path), "--microdata", str(micro),
                 "--out", str(tmp_path / "a")]) == 0
    stdout = capsys.readouterr().out
    got, want = _audit_nc(tmp_path / "a" / "audit.nc"), rk.audit(rel, sens, table=c)
    for v in ("lower", "upper", "room_below", "room_above", "protection_lower"):
        np.testing.assert_allclose(got[v].values, want[v].values, rtol=1e-9, atol=1e-9)
    for v in ("suppressed", "sensitive", "under_protected", "exact"):
        np.testing.assert_array_equal(got[v].values.astype(bool), want[v].values)
    assert "AUDIT: PROTECTED" in stdout
    assert "(A, y)" in stdout and "(B, x)" in stdout and "complementary" in stdout
    html = (tmp_path / "a" / "audit.html").read_text(encoding="utf-8")
    assert ">PROTECTED</span>" in html and "<td class=\"l\">(A, y)</td>" in html
    assert html.count("<table") == html.count('<div class="wide"><table') >= 1
    # the same rules given explicitly: the same audit
    assert main(["audit", str(rel_path), "--microdata", str(micro), "--value", "turnover",
                 *RULES, "--no-report", "--out", str(tmp_path / "b")]) == 0
    xr.testing.assert_identical(_audit_nc(tmp_path / "b" / "audit.nc"), got)
    # the intruder's view: the release alone
    capsys.readouterr()
    assert main(["audit", str(rel_path), "--out", str(tmp_path / "i")]) == 0
    stdout = capsys.readouterr().out
    got, want = _audit_nc(tmp_path / "i" / "audit.nc"), rk.audit(rel)
    np.testing.assert_allclose(got["lower"].values, want["lower"].values, atol=1e-9)
    np.testing.assert_allclose(got["upper"].values, want["upper"].values, atol=1e-9)
    assert "sensitive" not in got and "AUDIT: NOT CHECKED" in stdout


def test_audit_of_a_cta_release_checks_each_adjustment(micro, tmp_path, capsys):
    c, sens, _ = direct()
    res = rk.cta(c, sens, capacity=0.5 * c.table.values)
    path = tmp_path / "cta.json"
    res.release.save(path)
    assert main(["audit", str(path), "--microdata", str(micro), "--value", "turnover",
                 *RULES, "--out", str(tmp_path / "a")]) == 0
    assert "AUDIT: PROTECTED" in capsys.readouterr().out
    got = _audit_nc(tmp_path / "a" / "audit.nc")
    np.testing.assert_allclose(got["adjustment"].values, res.adjustment.values, atol=1e-9)
    np.testing.assert_array_equal(got["sensitive"].values.astype(bool),
                                  sens.sensitive.values)
    assert not got["under_protected"].values.any()
    # an adjustment made with smaller protection levels than the rules ask: each sensitive
    # cell moved by 1 falls short of its protection (18 and 21.25)
    weak = rk.cta(c, sens.sensitive.values, protection=1.0, capacity=0.5 * c.table.values)
    weak.release.save(path)
    capsys.readouterr()
    assert main(["audit", str(path), "--microdata", str(micro), "--value", "turnover",
                 *RULES, "--no-report", "--out", str(tmp_path / "w")]) == 0
    stdout = capsys.readouterr().out
    assert "AUDIT: NOT PROTECTED" in stdout and "2 of 2 sensitive cells are NOT protected" \
        in stdout
    assert sum(r.endswith("  UNDER-PROTECTED") for r in stdout.splitlines()) == 2
    got = _audit_nc(tmp_path / "w" / "audit.nc")
    np.testing.assert_array_equal(got["under_protected"].values.astype(bool),
                                  sens.sensitive.values)


def test_assess_gives_the_audit_and_count_points_to_it(micro, tmp_path, capsys):
    rel_path = tmp_path / "release.json"
    assert main(["suppress", str(micro), *ARGS, "--out", str(rel_path)]) == 0
    capsys.readouterr()
    out = tmp_path / "o"
    assert main(["assess", str(rel_path), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "magnitude releases (CellSuppression(" in stdout
    assert "have no integer posterior; the audit is the answer" in stdout
    assert "AUDIT: NOT CHECKED" in stdout
    assert (out / "audit.html").is_file() and not (out / "posterior.nc").exists()
    want = rk.audit(rk.Release.load(rel_path))
    np.testing.assert_allclose(_audit_nc(out / "audit.nc")["upper"].values,
                               want["upper"].values, atol=1e-9)
    assert main(["count", str(rel_path)]) == 2
    line = one_line_error(capsys)
    assert "have no integer posterior" in line and f"riskengine audit {rel_path}" in line


def test_bad_rules_columns_and_releases_are_one_line(micro, tmp_path, capsys):
    base = ["suppress", str(micro), "--dims", "region,industry", "--value", "turnover"]
    bad = {("--rule", "p:abc"): "argument --rule: rule 'p:abc': p must be a number, got 'abc'",
           ("--rule", "q:5"): "unknown rule 'q' in 'q:5'; known: p:P, pq:P,Q, nk:N,K",
           ("--rule", "nk:3"): "rule nk takes 2 numbers (nk:N,K), got 'nk:3'",
           ("--rule", "nk:2.5,80"): "n must be an integer, got '2.5'",
           ("--rule", "nk:3,120"): "--rule nk:3,120: k must be a percentage in (0, 100), "
                                   "got k=120.0",
           ("--rule", "p:0"): "--rule p:0: p must be > 0, got p=0.0"}
    for extra, msg in bad.items():
        assert run([*base, *extra]) == 2
        assert msg in one_line_error(capsys), extra
    assert main(["suppress", str(micro), "--dims", "region,sector", "--value", "sales",
                 *RULES]) == 2
    line = one_line_error(capsys)
    assert "no columns 'sector', 'sales'" in line and "'turnover'" in line
    assert run(["suppress", str(micro), "--dims", "region,industry", *RULES]) == 2
    assert "the following arguments are required: --value" in one_line_error(capsys)
    assert main(["suppress", str(tmp_path / "nope.csv"), *ARGS]) == 2
    assert "no such file" in one_line_error(capsys)
    # audit: a release that is neither suppression nor CTA; microdata options without it
    rel = tmp_path / "cyclic.json"
    rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25).protect(
        rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])),
        np.random.default_rng(1)).save(rel)
    assert main(["audit", str(rel)]) == 2
    assert "riskengine audit takes a cell-suppression or CTA release" in one_line_error(capsys)
    good = tmp_path / "release.json"
    assert main(["suppress", str(micro), *ARGS, "--out", str(good)]) == 0
    capsys.readouterr()
    assert main(["audit", str(good), "--rule", "p:15"]) == 2
    assert "--rule describes the microdata: give --microdata too" in one_line_error(capsys)


def test_a_sensitive_total_names_the_option(tmp_path, capsys):
    """One respondent dominates the x column: its total is sensitive, which needs totals to
    be suppressible: the library's 'suppress_totals=True' in the command's words."""
    path = tmp_path / "m.csv"
    path.write_text("region,industry,turnover\nA,x,500\nA,x,1\nA,x,1\nA,x,1\nB,x,1\nB,x,1\n"
                    "B,x,1\nA,y,10\nA,y,11\nA,y,12\nA,y,13\nB,y,10\nB,y,12\nB,y,11\nB,y,9\n")
    assert main(["suppress", str(path), "--dims", "region,industry", "--value", "turnover",
                 "--rule", "p:15"]) == 2
    line = one_line_error(capsys)
    assert "is sensitive, but totals are published: pass --suppress-totals" in line
    assert main(["suppress", str(path), "--dims", "region,industry", "--value", "turnover",
                 "--rule", "p:15", "--suppress-totals", "--out", str(tmp_path / "r.json")]) == 0
    assert "audit: PROTECTED" in capsys.readouterr().out


def test_help_lists_the_rule_syntax(capsys):
    for cmd in ("suppress", "audit"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"])
        assert e.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        for spec in ("p:P (p-percent rule", "pq:P,Q (pq rule", "nk:N,K ((n,k)-dominance",
                     "e.g. p:15", "e.g. nk:3,80", "repeatable"):
            assert spec in text, (cmd, spec)
