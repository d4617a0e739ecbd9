import json
import subprocess
import sys

import numpy as np
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
