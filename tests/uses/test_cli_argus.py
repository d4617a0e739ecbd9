"""The command line on tau-Argus files: ``riskengine suppress --rda --tab``, ``riskengine
audit --rda --tab [--pattern]`` and ``riskengine run JOB.arb`` (tau-Argus's own example
table, data/tableinput of sdcTools/tauargus)."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"


@pytest.fixture
def job(tmp_path):
    for f in ("pp.rda", "pp.tab", "region2.hrc", "job.arb"):
        shutil.copy(DATA / f, tmp_path / f)
    return tmp_path


def test_suppress_then_audit_the_written_pattern(job, capsys):
    out = job / "out"
    assert main(["suppress", "--rda", str(job / "pp.rda"), "--tab", str(job / "pp.tab"),
                 "--additivity", "compute", "--safety-rule", "NK(2,75)|FREQ(3,10)",
                 "--out", str(out), "--no-report"]) == 0
    text = capsys.readouterr().out
    assert "primary: 9, secondary: 6" in text and "AUDIT: PROTECTED" in text
    ds = xr.open_dataset(out / "audit.nc")
    assert int(ds.attrs["n_under_protected"]) == 0 and int(ds.suppressed.sum()) == 15
    ds.close()
    status_csv = out / "pp_protected.csv"
    assert status_csv.read_text().splitlines()[0] == '"Size","Region","Var2","Status"'
    sdc = (out / "pp_protected_sdcstatus.csv").read_text().splitlines()
    assert sdc[0] == "Size,Region,value,sdcStatus"
    assert sum(line.endswith(",u") for line in sdc) == 9
    assert sum(line.endswith(",x") for line in sdc) == 6
    # the pattern read back and audited: the same verdict
    assert main(["audit", "--rda", str(job / "pp.rda"), "--tab", str(job / "pp.tab"),
                 "--additivity", "compute", "--safety-rule", "NK(2,75)|FREQ(3,10)",
                 "--pattern", str(status_csv), "--out", str(job / "a"), "--no-report"]) == 0
    assert "AUDIT: PROTECTED" in capsys.readouterr().out


def test_audit_of_the_tables_own_statuses_finds_the_disclosure(job, capsys):
    assert main(["audit", "--rda", str(job / "pp.rda"), "--tab", str(job / "pp.tab"),
                 "--additivity", "compute", "--out", str(job / "a"), "--no-report",
                 "--strict"]) == 3
    out = capsys.readouterr()
    assert "NOT PROTECTED" in out.out and "9 of them exactly disclosed" in out.out
    assert "--strict" in out.err


def test_run_batch_file(job, capsys):
    assert main(["run", str(job / "job.arb"), "--no-report"]) == 0
    text = capsys.readouterr().out
    assert "MOD run as riskengine's heuristic" in text and "AUDIT: PROTECTED" in text
    for f in ("pp_mod.csv", "pp_grid.csv", "table1/table1.csv", "table1/audit.nc"):
        assert (job / f).is_file(), f
    at = rk.read_argus(job / "pp.rda", job / "pp.tab", additivity="compute")
    rel, st = rk.read_pattern(at, job / "pp_mod.csv")
    assert rel.hidden.sum() == 15 and (st == "primary").sum() == 9
    assert np.isnan(rel.values[rel.hidden]).all()


@pytest.mark.parametrize("argv,msg", [
    (["suppress", "--tab", "x.tab"], "--tab belongs to a table prepared for tau-Argus"),
    (["suppress", "{d}/pp.tab", "--rda", "{d}/pp.rda", "--tab", "{d}/pp.tab"],
     "either MICRODATA or"),
    (["suppress", "--rda", "{d}/pp.rda", "--tab", "{d}/pp.tab", "--rule", "p:10"],
     "--safety-rule"),
    (["suppress", "--rda", "{d}/pp.rda"], "--rda needs --tab"),
    (["suppress"], "required: microdata and --rule"),
    (["audit"], "required: release"),
    (["suppress", "--rda", "{d}/pp.rda", "--tab", "{d}/pp.tab"], "does not add up"),
    (["suppress", "--rda", "{d}/pp.rda", "--tab", "{d}/pp.tab", "--additivity", "compute",
      "--safety-rule", "NK(2)"], "needs 2 parameters"),
    (["run", "{d}/nothere.arb"], "no such file"),
])
def test_clear_one_line_errors(job, capsys, argv, msg):
    argv = [a.format(d=job) for a in argv]
    assert main(argv + ["--out", str(job / "o")] if argv[0] != "run" else argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1, err
