"""Issue 19's last CLI items: releases read from the published table (CSV) with the
mechanism named on the command line, their totals used or refused; magnitudes written
without float noise; ``audit --strict``; a reader that goes away (``| head -1``);
``simulate --memory``.  (Every registered mechanism's CSV round trip is in
``test_cli_every_mechanism``.)"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import _bundled, main


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("riskengine: error: "), err
    return lines[0]


def last_int(capsys) -> int:
    return int(capsys.readouterr().out.strip().splitlines()[-1])


# --- totals: used, or refused -----------------------------------------------------------
def test_published_totals_are_used(tmp_path, capsys):
    """Random rounding rounds each total on its own: the Total row and column narrow the
    candidates.  The count from the CSV is that of the release built in Python with the
    same margins; without the totals (the interior only) it is larger."""
    with_totals = tmp_path / "rr.csv"
    with_totals.write_text("v\\w,a,b,Total\nx,3,0,3\ny,3,6,9\nTotal,6,6,12\n")
    interior = tmp_path / "rr0.csv"
    interior.write_text("v\\w,a,b\nx,3,0\ny,3,6\n")
    mech = ["--mechanism", "random_rounding", "--param", "base=3"]
    ref = rk.count_candidates(rk.Release(
        np.array([[3, 0], [3, 6]]), margins={("v",): [3, 9], ("w",): [6, 6], (): 12},
        mechanism=rk.RandomRounding(3), dims=("v", "w"),
        coords={"v": ["x", "y"], "w": ["a", "b"]}))
    ref0 = rk.count_candidates(rk.Release(np.array([[3, 0], [3, 6]]), margins={},
                                          mechanism=rk.RandomRounding(3), dims=("v", "w")))
    assert main(["count", str(with_totals), *mech]) == 0
    assert last_int(capsys) == ref
    assert main(["count", str(interior), *mech]) == 0
    assert last_int(capsys) == ref0 > ref
    # the same table as pandas writes a crosstab with margins (row dim named in the
    # corner, totals labelled "All"), and in long form with a Total category
    df = pd.DataFrame({"v": ["x", "y"], "a": [3, 3], "b": [0, 6]}).set_index("v")
    df["All"] = df.sum(axis=1)
    df.loc["All"] = df.sum()
    crosstab = tmp_path / "crosstab.csv"
    df.to_csv(crosstab)
    assert crosstab.read_text().splitlines()[0] == "v,a,b,All"
    long = tmp_path / "long.csv"
    long.write_text("v,w,count\n" + "".join(
        f"{r},{c},{df.loc[r, c]}\n" for r in ("x", "y", "All") for c in ("a", "b", "All"))
        .replace("All", "Total"))
    for path in (crosstab, long):
        assert main(["count", str(path), *mech]) == 0
        assert last_int(capsys) == ref, path


def test_totals_that_contradict_the_mechanism_are_refused(tmp_path, capsys):
    """Cyclic perturbation keeps every total: a Total column that does not add up is a
    refusal naming the file and the totals, not a silently dropped row."""
    bad = tmp_path / "bad.csv"
    bad.write_text("v\\w,a,b,Total\nx,3,0,4\ny,3,6,9\nTotal,6,6,13\n")
    assert main(["count", str(bad), "--mechanism", "cyclic"]) == 2
    line = one_line_error(capsys)
    assert f"{bad} with --mechanism cyclic: published margins do not add up" in line
    assert "gives 13" in line and "gives 12" in line
    bad.write_text("v\\w,a,b,Total\nx,3,0,4\ny,3,6,8\nTotal,6,6,12\n")
    assert main(["assess", str(bad), "--mechanism", "cyclic", "--out", str(tmp_path)]) == 2
    assert ("published table does not add up to margin ('v',): at (0,) (x, total) the cells "
            "sum to 3 but the margin is 4") in one_line_error(capsys)


@pytest.mark.parametrize("text,args,msg", [
    ("v\\w,a,b,Total,total\nx,1,2,3,3\n", ["--mechanism", "cyclic"],
     "dim 'w' has 2 total categories ['Total', 'total']"),
    ("v\\w,a,b,Total\nx,1,2,\ny,3,4,7\nTotal,4,6,10\n", ["--mechanism", "cyclic"],
     "an empty entry among the totals over 'w'"),
    ("v\\w,a,b\nx,1,zz\n", ["--mechanism", "cyclic"], "'zz' is not a number"),
    ("v\\w,a,b\nx,1,2\n", [], ("is a published table: say how it was protected with "
                               "--mechanism NAME")),
    ("v\\w,a,b\nx,1,2\ny,0,3\n", ["--mechanism", "cell_suppression", "--param",
                                  "sensitive=[[1, 0], [0, 0]]"],
     "--param sensitive: an input of protect"),
    ("v\\w,a,b\nx,1,2\ny,0,3\n", ["--mechanism", "rounding", "--param", "bsae=3"],
     "unknown parameter 'bsae' for mechanism 'controlled_rounding'; valid: base, method"),
])
def test_published_csv_refusals(tmp_path, capsys, text, args, msg):
    path = tmp_path / "pub.csv"
    path.write_text(text)
    assert main(["count", str(path), *args]) == 2
    assert msg in one_line_error(capsys)


def test_a_release_json_records_its_mechanism(tmp_path, capsys):
    rel = _bundled("seed003_release.json")
    assert main(["count", str(rel), "--mechanism", "cyclic"]) == 2
    assert "is a release JSON: it records its mechanism" in one_line_error(capsys)
    assert main(["protect", str(_bundled("seed003_original.csv")), "--out",
                 str(tmp_path / "rel.csv")]) == 2
    assert "names the release JSON" in one_line_error(capsys)
    assert not (tmp_path / "rel.csv").exists()


def test_suppressed_cells_and_hidden_totals_round_trip(tmp_path, capsys):
    """A count suppression release whose totals are suppressed too: written with x, read
    back as the same release (NaN where suppressed), audited the same."""
    t = rk.Table(np.array([[1, 5, 6], [7, 1, 4], [3, 8, 2]]), dims=("v", "w"))
    sens = np.zeros((3, 3), bool)
    sens[0, 0] = sens[1, 1] = True
    rel = rk.suppress(t, sens, protection=1.0)
    assert np.isnan(np.asarray(rel.published, float)).sum() >= 2
    js = tmp_path / "sup.json"
    rel.save(js)
    from riskengine._io import read_published, write_published
    write_published(rel, tmp_path / "sup.csv")
    text = (tmp_path / "sup.csv").read_text()
    assert text.splitlines()[0] == "v\\w,0,1,2,Total" and ",x," in text
    pub, margins, coords = read_published(tmp_path / "sup.csv")
    np.testing.assert_array_equal(pub.values, np.asarray(rel.published, float))
    assert set(margins) == set(rel.margins) and coords == rel.coords
    for k, v in rel.margins.items():
        np.testing.assert_array_equal(margins[k].values, np.asarray(v, float))
    for i, src in enumerate((["--mechanism", "cell_suppression"], [])):
        path = tmp_path / ("sup.csv" if src else "sup.json")
        assert main(["audit", str(path), *src, "--no-report", "--out",
                     str(tmp_path / f"a{i}")]) == 0
    with xr.open_dataset(tmp_path / "a0" / "audit.nc") as a, \
            xr.open_dataset(tmp_path / "a1" / "audit.nc") as b:
        xr.testing.assert_equal(a.load().drop_attrs(), b.load().drop_attrs())


# --- magnitudes without float noise -----------------------------------------------------
def test_suppress_writes_the_decimals_the_data_has(tmp_path, capsys):
    """firms.csv has one decimal; the cell sums are computed exactly with Decimal and the
    release JSON, the CSV beside it and audit.nc hold those numbers (11144.2, not
    11144.199999999999)."""
    firms = _bundled("firms.csv")
    exact = defaultdict(Decimal)
    with open(firms, newline="") as fh:
        for r in csv.DictReader(fh):
            exact[(r["region"], r["industry"])] += Decimal(r["turnover"])
    out = tmp_path / "sup.json"
    assert main(["suppress", str(firms), "--dims", "region,industry", "--value", "turnover",
                 "--rule", "p:15", "--out", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text() + (tmp_path / "sup.csv").read_text()
    assert not re.search(r"\d\.\d{6,}", text), re.search(r"\d\.\d{6,}", text)
    d = json.loads(out.read_text())
    pub = np.array(d["published"], dtype=float)
    for (r, i), v in exact.items():
        x = pub[d["coords"]["region"].index(r), d["coords"]["industry"].index(i)]
        assert np.isnan(x) or x == float(v), (r, i, x, v)
    grand = sum(exact.values())
    assert [m["values"] for m in d["margins"] if m["keep"] == []] == [float(grand)]
    assert f",{grand}\n" in (tmp_path / "sup.csv").read_text()
    assert main(["audit", str(out), "--no-report", "--out", str(tmp_path / "a")]) == 0
    with xr.open_dataset(tmp_path / "a" / "audit.nc") as ds:
        vals = ds["published"].values
    assert [float(f"{v:.1f}") for v in vals[~np.isnan(vals)]] == vals[~np.isnan(vals)].tolist()


# --- audit --strict ---------------------------------------------------------------------
def test_audit_strict_exit_codes(tmp_path, capsys):
    """One suppressed cell alone in its row is derived exactly from the row total:
    --strict exits 3 (results still written); a pattern that hides it exits 0."""
    nan = np.nan
    exposed = rk.Release(np.array([[nan, 5.0, 6.0], [7.0, 2.5, 4.0]]),
                         margins={("v",): [12.5, 13.5], ("w",): [8.5, 7.5, 10.0],
                                  (): 26.0}, mechanism=rk.CellSuppression(), dims=("v", "w"))
    hidden = rk.Release(np.array([[nan, nan, 6.0], [nan, nan, 4.0]]),
                        margins=exposed.margins, mechanism=rk.CellSuppression(),
                        dims=("v", "w"))
    for name, rel, code in (("exposed", exposed, 3), ("hidden", hidden, 0)):
        path = tmp_path / f"{name}.json"
        rel.save(path)
        out = tmp_path / name
        assert main(["audit", str(path), "--strict", "--out", str(out)]) == code
        cap = capsys.readouterr()
        assert (out / "audit.nc").is_file() and (out / "audit.html").is_file()
        if code:
            assert cap.err.strip() == ("riskengine audit: --strict: the audit finds a "
                                       "disclosure (1 suppressed cells exactly disclosed)")
        else:
            assert cap.err == ""
        # without --strict the finding is in the report, the exit code is 0
        assert main(["audit", str(path), "--no-report", "--out", str(out)]) == 0
        # assess of a magnitude release gives the audit: --strict there too
        assert main(["assess", str(path), "--strict", "--no-report", "--out", str(out)]) \
            == code
        capsys.readouterr()


# --- a reader that goes away ------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("args", [["assess", "--no-report"], ["protect", "SEED003"]])
def test_broken_pipe_is_no_traceback(tmp_path, args):
    """``riskengine assess | head -1``: the reader closes the pipe before the output is
    written; the command ends quietly with the status of a command ended by SIGPIPE."""
    args = [str(_bundled("seed003_original.csv")) if a == "SEED003" else a for a in args]
    if args[0] == "assess":
        args += ["--out", str(tmp_path)]
    p = subprocess.Popen([sys.executable, "-m", "riskengine.cli", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                     # the reader is gone before anything is written
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=300) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception" not in err


# --- simulate --memory ------------------------------------------------------------------
def test_simulate_takes_memory(tmp_path, capsys):
    """The budget of each posterior, as the other commands take it: a bad size is one
    line; a budget the bundled example fits changes nothing (exact routes)."""
    with pytest.raises(SystemExit) as exc:       # refused as the options are read
        main(["simulate", "--n-tables", "3", "--memory", "lots", "--no-report",
              "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "--memory must be bytes or a size" in one_line_error(capsys)
    assert main(["simulate", "--n-tables", "3", "--memory", "1kB", "--no-report",
                 "--out", str(tmp_path / "small")]) == 2
    assert "raise --memory" in one_line_error(capsys)
    for name, more in (("default", []), ("budget", ["--memory", "2GB"])):
        assert main(["simulate", "--n-tables", "3", "--seed", "5", "--no-report",
                     "--out", str(tmp_path / name), *more]) == 0
    capsys.readouterr()
    with xr.open_dataset(tmp_path / "default" / "simulate.nc") as a, \
            xr.open_dataset(tmp_path / "budget" / "simulate.nc") as b:
        xr.testing.assert_identical(a.load(), b.load())
