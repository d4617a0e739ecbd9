import json
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from riskengine.cli import main


def test_assess_bundled_example(tmp_path, capsys):
    assert main(["assess", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "candidate original tables: 37" in out
    assert "(v_1, w_2)" in out and "P(true)" in out
    ds = xr.open_dataset(tmp_path / "posterior.nc")
    assert ds["pmf"].dims == ("v", "w", "value")
    assert np.allclose(ds["pmf"].sum("value"), 1.0)
    ds.close()


def test_protect_then_assess_then_count(tmp_path, capsys):
    t = tmp_path / "t.csv"
    t.write_text("\\,a,b,c\nx,3,0,2\ny,1,4,1\nz,2,2,5\n")
    rel = tmp_path / "rel.json"
    assert main(["protect", str(t), "--seed", "4", "--out", str(rel)]) == 0
    d = json.loads(rel.read_text())
    assert d["mechanism"]["name"] == "cyclic"
    assert main(["assess", str(rel), "--truth", str(t), "--prior", "poisson:2",
                 "--out", str(tmp_path / "o")]) == 0
    assert main(["count", str(rel)]) == 0
    n = int(capsys.readouterr().out.strip().splitlines()[-1])
    assert n >= 1
    # same seed, same release
    rel2 = tmp_path / "rel2.json"
    main(["protect", str(t), "--seed", "4", "--out", str(rel2)])
    assert rel2.read_text() == rel.read_text()


def test_bad_input_exit_2_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = subprocess.run([sys.executable, "-m", "riskengine.cli", "assess", str(bad)],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith("riskengine: error: release JSON is not valid JSON")
    assert len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run([sys.executable, "-m", "riskengine.cli", "assess", "--prior", "zzz"],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown prior 'zzz'" in r.stderr


@pytest.mark.slow
def test_protect_rounding_and_margins_then_assess(tmp_path, capsys):
    t = tmp_path / "t.csv"
    t.write_text("\\,a,b,c\nx,3,0,2\ny,1,4,1\nz,2,2,5\n")
    for mech, extra in (("rounding", ["--base", "3", "--method", "optimal"]), ("margins", [])):
        rel = tmp_path / f"{mech}.json"
        assert main(["protect", str(t), "--mechanism", mech, "--seed", "1", "--out", str(rel),
                     *extra]) == 0
        assert main(["assess", str(rel), "--truth", str(t), "--out", str(tmp_path / mech)]) == 0
        out = capsys.readouterr().out
        assert "candidate original tables:" in out
    assert main(["protect", str(t), "--mechanism", "bogus"]) == 2


def test_protect_builds_every_mechanism_through_the_registry(tmp_path, capsys):
    """bootstrap and binomial (unknown to the old if/elif) and options that do not apply."""
    t = tmp_path / "t.csv"
    t.write_text("\\,a,b,c\nx,13,10,12\ny,11,14,11\n")
    for args in (["--mechanism", "bootstrap", "--param", "M=3", "--param", "S=2"],
                 ["--mechanism", "binomial", "--param", "S=2", "--param", "preserve=rows"],
                 ["--mechanism", "controlled_rounding", "--base", "5"],
                 ["--mechanism", "cyclic", "--design", "staircase", "--alpha", "0.1"]):
        rel = tmp_path / "rel.json"
        assert main(["protect", str(t), "--seed", "2", "--out", str(rel), *args]) == 0, args
        assert main(["assess", str(rel), "--no-report", "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    assert main(["protect", str(t), "--mechanism", "cyclic", "--base", "3"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'base' for mechanism 'cyclic'; valid: cycles, alpha" in err


@pytest.mark.slow
def test_truth_is_matched_by_labels_not_position(tmp_path, capsys):
    """A truth CSV in long form sorted by label (another order than the release's) gives the
    same exact-disclosure numbers; a truth with other labels is refused (issue 14)."""
    wide = tmp_path / "t.csv"
    wide.write_text("\\,north,south,east\n0-17,13,10,12\n18-64,11,14,11\n65+,2,9,4\n")
    rel = tmp_path / "rel.json"
    assert main(["protect", str(wide), "--mechanism", "margins", "--out", str(rel)]) == 0
    assert main(["assess", str(rel), "--truth", str(wide), "--no-report",
                 "--out", str(tmp_path / "a")]) == 0
    want = [ln for ln in capsys.readouterr().out.splitlines() if "exactly disclosed" in ln]
    long = tmp_path / "long.csv"
    rows = [("0-17", "north", 13), ("0-17", "south", 10), ("0-17", "east", 12),
            ("18-64", "north", 11), ("18-64", "south", 14), ("18-64", "east", 11),
            ("65+", "north", 2), ("65+", "south", 9), ("65+", "east", 4)]
    d0, d1 = json.loads(rel.read_text())["dims"]
    long.write_text(f"{d1},{d0},count\n" + "".join(
        f"{b},{a},{v}\n" for a, b, v in sorted(rows, key=lambda r: (r[1], r[0]))))
    assert main(["assess", str(rel), "--truth", str(long), "--no-report",
                 "--out", str(tmp_path / "b")]) == 0
    got = [ln for ln in capsys.readouterr().out.splitlines() if "exactly disclosed" in ln]
    assert got == want and want
    other = tmp_path / "other.csv"
    other.write_text("\\,n,s,e\n0-17,13,10,12\n18-64,11,14,11\n65+,2,9,4\n")
    assert main(["assess", str(rel), "--truth", str(other), "--no-report",
                 "--out", str(tmp_path / "c")]) == 2
    assert "labels" in capsys.readouterr().err
