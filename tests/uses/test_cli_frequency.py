"""The threshold rule from the command line (issue 27 item 5): ``riskengine suppress
TABLE.csv --rule freq:3`` on a count table, ``freq:N,R,zeros`` spellings, and ``freq``
with the p / nk rules on microdata, each checked against the library called directly
(``rk.read_table``, ``rk.sensitivity.Frequency``, ``rk.suppress``, ``rk.audit``)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main
from riskengine.cli.rules import rule_spec, sensitivity_rule

S = rk.sensitivity

#: counts by (region, age): by hand, under freq:3 the 1 at (N, old) and the 2 at (S, young)
#: are sensitive; the 0 at (E, mid) only under freq:3,zeros; every total is >= 3
COUNTS = {("N", "young"): 5, ("N", "mid"): 4, ("N", "old"): 1,
          ("S", "young"): 2, ("S", "mid"): 6, ("S", "old"): 7,
          ("E", "young"): 8, ("E", "mid"): 0, ("E", "old"): 9}


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


@pytest.fixture
def counts_csv(tmp_path):
    path = tmp_path / "counts.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([("region", "age", "n"),
                                  *((r, a, v) for (r, a), v in COUNTS.items())])
    return path


def _audit_nc(path) -> xr.Dataset:
    with xr.open_dataset(path) as ds:
        return ds.load()


@pytest.mark.parametrize("spec, rule", [
    ("freq:3", S.Frequency(3)),
    ("freq:3,zeros", S.Frequency(3, zeros=True)),
    ("freq:3,20", S.Frequency(3, safety_range=20)),
    ("freq:4,20,zeros", S.Frequency(4, zeros=True, safety_range=20)),
    ("frequency:3", S.Frequency(3)),
    ("FREQ:3,ZEROS", S.Frequency(3, zeros=True)),
])
def test_rule_spellings(spec, rule):
    assert sensitivity_rule([rule_spec(spec)]) == rule


def test_suppress_a_count_table(counts_csv, tmp_path, capsys):
    out = tmp_path / "release.json"
    assert main(["suppress", str(counts_csv), "--rule", "freq:3", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    table = rk.read_table(counts_csv)
    want = rk.suppress(table, S.Frequency(3))
    got = rk.Release.load(out)
    np.testing.assert_array_equal(np.isnan(got.published), np.isnan(want.published))
    np.testing.assert_array_equal(np.nan_to_num(got.published, nan=-1),
                                  np.nan_to_num(want.published, nan=-1))
    for k in want.margins:
        np.testing.assert_array_equal(got.margins[k], want.margins[k])
    assert got.kind == "count" and got.mechanism.to_dict() == want.mechanism.to_dict()
    # the two sensitive counts are hidden (the 1 and the 2), the 0 is published
    r, a = list(got.coords["region"]), list(got.coords["age"])
    assert np.isnan(got.published[r.index("N"), a.index("old")])
    assert np.isnan(got.published[r.index("S"), a.index("young")])
    assert got.published[r.index("E"), a.index("mid")] == 0
    assert ("riskengine suppress: count table " in stdout
            and "(region (3) x age (3), 42 units); rule Frequency(n=3, safety_range=10)" in stdout)
    assert "primary suppressions: 2 (sensitive cells)" in stdout
    assert "audit: PROTECTED" in stdout and "every sensitive cell (2) is protected" in stdout
    assert json.loads(out.read_text())["info"]["count_table"] == {"rules": ["freq:3"]}
    # the auditor's view from the count table and the recorded rule: every cell protected,
    # the same intervals as rk.audit with the rule's assessment
    capsys.readouterr()
    assert main(["audit", str(out), "--microdata", str(counts_csv), "--no-report",
                 "--out", str(tmp_path / "a")]) == 0
    assert "AUDIT: PROTECTED" in capsys.readouterr().out
    nc = _audit_nc(tmp_path / "a" / "audit.nc")
    ref = rk.audit(want, S.assess(table, S.Frequency(3)), table=table)
    for v in ("lower", "upper", "protection_lower", "protection_upper"):
        np.testing.assert_allclose(nc[v].values, ref[v].values, atol=1e-9)
    assert int(nc.under_protected.sum()) == 0 and int(nc.sensitive.sum()) == 2
    # a count of 1 must reach 0, a count of 2 must reach 1 and 3 (protection 1 each way)
    i, j = r.index("N"), a.index("old")
    assert nc.lower.values[i, j] <= 0 and nc.upper.values[i, j] >= 2
    i, j = r.index("S"), a.index("young")
    assert nc.lower.values[i, j] <= 1 and nc.upper.values[i, j] >= 3


def test_the_zero_rule_hides_the_empty_cell(counts_csv, tmp_path, capsys):
    out = tmp_path / "release.json"
    assert main(["suppress", str(counts_csv), "--rule", "freq:3,zeros", "--out",
                 str(out)]) == 0
    stdout = capsys.readouterr().out
    got = rk.Release.load(out)
    want = rk.suppress(rk.read_table(counts_csv), S.Frequency(3, zeros=True))
    np.testing.assert_array_equal(np.isnan(got.published), np.isnan(want.published))
    r, a = list(got.coords["region"]), list(got.coords["age"])
    assert np.isnan(got.published[r.index("E"), a.index("mid")])
    assert "primary suppressions: 3 (sensitive cells)" in stdout
    assert "audit: PROTECTED" in stdout
    # the empty cell can be 1 or more in some table consistent with the release
    audit = rk.audit(got)
    assert audit.upper.values[r.index("E"), a.index("mid")] >= 1


@pytest.mark.parametrize("argv, message", [
    (["--rule", "p:15"],
     ("--rule p:15: a count table has no contributions, only the threshold rule applies "
      "to it (--rule freq:N)")),
    (["--rule", "freq:3", "--rule", "freq:5"],
     "a count table takes one --rule freq:N (got freq:3, freq:5)"),
    (["--rule", "freq:3", "--dims", "region,age"],
     "--dims describes microdata, so the following arguments are required: --value"),
    (["--rule", "freq:0"], "--rule freq:0: n must be >= 1"),
    (["--rule", "freq:3,150"],
     "safety_range must be a percentage in [0, 100], got safety_range=150"),
])
def test_count_table_refusals(counts_csv, capsys, argv, message):
    assert run(["suppress", str(counts_csv), *argv]) == 2
    assert message in one_line_error(capsys)


@pytest.mark.parametrize("spec, message", [
    ("freq", "rule freq takes freq:N, freq:N,R or either with ',zeros'"),
    ("freq:3,10,20", "rule freq takes freq:N, freq:N,R or either with ',zeros'"),
    ("freq:a", "rule 'freq:a': n must be an integer, got 'a'"),
    ("freq:3,x", "the safety range R must be a number (or 'zeros' last), got 'x'"),
])
def test_bad_freq_spellings_are_argument_errors(counts_csv, capsys, spec, message):
    assert run(["suppress", str(counts_csv), "--rule", spec]) == 2
    assert message in one_line_error(capsys)


def test_a_magnitude_table_is_not_counted(tmp_path, capsys):
    path = tmp_path / "sales.csv"
    path.write_text("region,sales\nN,1.5\nS,20.25\n")
    assert run(["suppress", str(path), "--rule", "freq:3"]) == 2
    assert "holds magnitudes (values that are not whole numbers), not counts" in \
        one_line_error(capsys)


#: microdata: contributions per (region, industry).  By hand: (A, y) has 2 contributors
#: (sensitive under freq:3), (B, x) = 90, 4, 3, 2 is dominated under nk:1,80 only
#: (S = 90 - 4 * 9 = 54); every other cell has >= 3 contributors and no dominance
CELLS = {("A", "x"): [12, 10, 9, 8], ("A", "y"): [30, 25],
         ("B", "x"): [90, 4, 3, 2], ("B", "y"): [20, 18, 16, 15],
         ("C", "x"): [25, 22, 20], ("C", "y"): [19, 17, 16, 15]}


@pytest.fixture
def micro(tmp_path):
    path = tmp_path / "micro.csv"
    rows = [(r, i, v) for (r, i), vs in CELLS.items() for v in vs]
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([("region", "industry", "turnover"), *rows])
    return path


def test_freq_with_dominance_on_microdata(micro, tmp_path, capsys):
    out = tmp_path / "release.json"
    assert main(["suppress", str(micro), "--dims", "region,industry", "--value", "turnover",
                 "--rule", "freq:3", "--rule", "nk:1,80", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    data = {"region": [r for (r, _), vs in CELLS.items() for _ in vs],
            "industry": [i for (_, i), vs in CELLS.items() for _ in vs],
            "turnover": np.array([v for vs in CELLS.values() for v in vs], float)}
    c = rk.contributions(data, dims=("region", "industry"), value="turnover")
    rule = S.Max(S.Frequency(3), S.Dominance(1, 80))
    sens = S.assess(c, rule)
    assert sens.sensitive.values.tolist() == [[False, True], [True, False], [False, False]]
    # protections: (A, y) 10 % of 55 = 5.5; (B, x) P = 54 / 4 = 13.5
    np.testing.assert_allclose(sens.protection.values, [[0, 5.5], [13.5, 0], [0, 0]])
    want = rk.suppress(c, rule)
    got = rk.Release.load(out)
    np.testing.assert_array_equal(np.isnan(got.published), np.isnan(want.published))
    np.testing.assert_allclose(got.published, want.published, rtol=1e-12)
    assert ("rule Max(Frequency(n=3, safety_range=10), Dominance(n=1, k=80))" in stdout
            and "primary suppressions: 2 (sensitive cells)" in stdout
            and "audit: PROTECTED" in stdout)
    assert json.loads(out.read_text())["info"]["microdata"]["rules"] == ["freq:3", "nk:1,80"]
    capsys.readouterr()
    assert main(["audit", str(out), "--microdata", str(micro), "--no-report",
                 "--out", str(tmp_path / "a")]) == 0
    assert "AUDIT: PROTECTED" in capsys.readouterr().out


def test_microdata_needs_dims(micro, capsys):
    assert run(["suppress", str(micro), "--value", "turnover", "--rule", "freq:3"]) == 2
    assert "--value names the column of microdata contributions: give --dims too" in \
        one_line_error(capsys)
