"""A real tau-Argus run, side by side (rtauargus's vignette example 1, tests/data/argus/
rtauargus_ex1/SOURCE.md): the table rtauargus prepared, the batch job it gave tau-Argus
(FREQ(3,10)|NK(1,85), MOD), and the pattern tau-Argus wrote.

Reference numbers (tau-Argus's output ``ex1.csv``): primary cells (02, tr1) by frequency
(A, 2 contributors) and (06, tr2) by dominance (B, top contribution 38 of 40 = 95 % >
85 %); secondary cells (02, tr2) and (06, tr1) (D); every other cell safe (V).  Exact
(statuses are categorical)."""

import shutil
from pathlib import Path

import numpy as np
import pytest

import riskengine as rk
from riskengine._batch import _rule_sensitivity
from riskengine._formats.arb import read_arb

DATA = Path(__file__).resolve().parents[1] / "data" / "argus" / "rtauargus_ex1"
TAU_PRIMARY = {("02", "tr1"): "frequency", ("06", "tr2"): "rule"}
TAU_SECONDARY = {("02", "tr2"), ("06", "tr1")}


@pytest.fixture(scope="module")
def ex1():
    job = read_arb(DATA / "ex1.arb")
    rules = job.commands[3].args["rules"]
    assert rules == [("FREQ", (3.0, 10.0)), ("NK", (1.0, 85.0))]
    assert job.commands[4].args == {"additivity": 1, "keep_status": False}
    at = rk.read_argus(DATA / "ex1.rda", DATA / "ex1.tab", additivity="compute")
    return at, rules


def _cells(at, mask):
    return {(at.cells.ACTIVITY[j], at.cells.SIZE[j]) for j in np.flatnonzero(mask)}


def test_the_same_primary_cells_as_tau_argus(ex1):
    at, rules = ex1
    sens, low, up, reason, _ = _rule_sensitivity(at, rules)
    assert _cells(at, sens) == set(TAU_PRIMARY)
    for j in np.flatnonzero(sens):
        assert reason[j] == TAU_PRIMARY[(at.cells.ACTIVITY[j], at.cells.SIZE[j])]
    # tau-Argus's protection levels (CTable::SetProtectionLevelCell): FREQ: 10 % of 30;
    # NK(1,85): 100/85 * 38 - 40
    j = at.system.find(ACTIVITY="02", SIZE="tr1")
    assert (low[j], up[j]) == (pytest.approx(3.0), pytest.approx(3.0))
    j = at.system.find(ACTIVITY="06", SIZE="tr2")
    assert up[j] == pytest.approx(100 / 85 * 38 - 40)


def test_tau_argus_pattern_read_back_and_audited(ex1):
    at, rules = ex1
    rel, st = rk.read_pattern(at, DATA / "ex1.csv")
    assert _cells(at, st == "primary") == set(TAU_PRIMARY)
    assert _cells(at, st == "secondary") == TAU_SECONDARY
    a = rk.audit_argus(at, rel, rules)
    assert a.attrs["n_suppressed"] == 4
    assert a.attrs["n_exact"] == 0 and a.attrs["n_under_protected"] == 0
    # the interval of (06, tr2) = x, by hand: (06, tr1) = 100 - x, (02, tr2) = 60 - x,
    # (02, tr1) = x - 10, all >= 0: [10, 60]
    j = at.system.find(ACTIVITY="06", SIZE="tr2")
    assert (a.lower.values[j], a.upper.values[j]) == (pytest.approx(10.0),
                                                     pytest.approx(60.0))


def test_riskengine_protects_it_with_the_same_pattern(ex1):
    at, rules = ex1
    for method in ("heuristic", "optimal"):
        _rel, st = rk.protect_argus(at, rules, method=method)
        assert _cells(at, st == "primary") == set(TAU_PRIMARY)
        assert _cells(at, st == "secondary") == TAU_SECONDARY, method


def test_the_batch_job_itself(tmp_path):
    """tau-Argus's job, its Windows paths made relative and the SBS output (type 4, not
    written here) changed to code-value (type 3): the same pattern."""
    for f in ("ex1.rda", "ex1.tab", "ex1.csv"):
        shutil.copy(DATA / f, tmp_path / f)
    text = (DATA / "ex1.arb").read_text()
    text = text.replace("Z:\\SDC\\OutilsConfidentialite\\rtauargus\\vignettes\\"
                        "tauargus_files\\ex1\\", "")
    text = text.replace('(1,4,,"ex1.csv")', '(1,3,AS+,"ours.csv")')
    (tmp_path / "ex1.arb").write_text(text)
    res = rk.run_batch(tmp_path / "ex1.arb")
    at = res.tables[0]
    ours, st = rk.read_pattern(at, tmp_path / "ours.csv")
    theirs, st_t = rk.read_pattern(at, tmp_path / "ex1.csv")
    np.testing.assert_array_equal(ours.hidden, theirs.hidden)
    np.testing.assert_array_equal(st, st_t)
    # the original job names tau-Argus's files by absolute Windows paths: refused clearly
    with pytest.raises(Exception, match=r"ex1\.rda: cannot read the file"):
        rk.run_batch(DATA / "ex1.arb")


def test_apriori_in_a_batch_names_totals_by_the_rdas_totcode(tmp_path):
    # SIZE's total coded "Tot" (its <TOTCODE>), and an apriori file protecting the total
    # of activity 01 by that code: the batch's <APRIORI> finds the cell (one code index,
    # riskengine._formats.argus.code_index, for every reader and writer)
    shutil.copy(DATA / "ex1.csv", tmp_path / "ex1.csv")
    rda = (DATA / "ex1.rda").read_text()
    (tmp_path / "ex1.rda").write_text(rda.replace('SIZE\n  <RECODEABLE>\n  <TOTCODE> "Total"',
                                                  'SIZE\n  <RECODEABLE>\n  <TOTCODE> "Tot"'))
    assert (tmp_path / "ex1.rda").read_text() != rda
    tab = [line.split(",") for line in (DATA / "ex1.tab").read_text().splitlines()]
    (tmp_path / "ex1.tab").write_text("".join(
        ",".join([f[0], "Tot" if f[1] == "Total" else f[1], *f[2:]]) + "\n" for f in tab))
    (tmp_path / "a.hst").write_text("01,Tot,P\n")
    (tmp_path / "job.arb").write_text(
        '<OPENTABLEDATA> "ex1.tab"\n<OPENMETADATA> "ex1.rda"\n'
        '<SPECIFYTABLE> "ACTIVITY""SIZE"|"VAL"||\n<SAFETYRULE> FREQ(3,10)|NK(1,85)\n'
        '<READTABLE> 1\n<APRIORI> "a.hst", 1, ","\n<SUPPRESS> MOD(1,5,1,0,0)\n')
    res = rk.run_batch(tmp_path / "job.arb")
    at = res.tables[0]
    c = at.cells
    row = c[(c["ACTIVITY"].astype(str).str.strip() == "01")
            & (c["SIZE"].astype(str).str.strip().isin(["Tot", "Total"]))]
    assert len(row) == 1 and row["status"].iloc[0] == "forced_safe"
