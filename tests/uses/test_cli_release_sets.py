"""``riskengine assess RELEASE --also RELEASE --group DIM:LABEL=A,B``: several tables of the
same records analysed together from the command line (rk.ReleaseSet): the posterior over
the finest table equals the library's, the report describes every table, and the
refusals are one line with exit code 2."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main


def _releases(tmp_path):
    ck = rk.CellKey(D=2, V=1.0)
    rng = np.random.default_rng(4)
    n = 90
    rec = {"region": rng.choice(["A1", "A2", "B"], n, p=[0.55, 0.07, 0.38]),
           "age": rng.choice(["young", "old"], n), "record_key": rk.CellKey.record_keys(n, rng)}
    whole = {**rec, "region": np.where(rec["region"] == "B", "B", "A")}
    split = ck.protect_records(rec, ("region", "age"))
    merged = ck.protect_records(whole, ("region", "age"))
    split.save(tmp_path / "split.json")
    merged.save(tmp_path / "whole.json")
    return split, merged


def test_assess_a_set_of_releases(tmp_path, capsys):
    split, merged = _releases(tmp_path)
    out = tmp_path / "out"
    code = main(["assess", str(tmp_path / "split.json"), "--also", str(tmp_path / "whole.json"),
                 "--group", "region:A=A1,A2", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "2 releases of the same records together" in text and "VERDICT" in text
    want = rk.posterior(rk.ReleaseSet([split, merged], groups={"region": {"A": ["A1", "A2"]}}))
    ds = xr.open_dataset(out / "posterior.nc")
    assert ds["pmf"].dims[:2] == ("region", "age")
    assert list(ds["region"].values) == ["A1", "A2", "B"]
    got = ds["pmf"].reindex_like(want.pmf, fill_value=0).values
    np.testing.assert_allclose(got, want.pmf.values, atol=1e-12)
    html = (out / "assess.html").read_text()
    assert "2 tables of the same records" in html and "A = A1 + A2" in html


@pytest.mark.parametrize("argv, match", [
    (["--group", "region:A=A1,A2"], "give the other releases with --also"),
    (["--also", "{whole}", "--group", "region:A"], "expected DIM:LABEL=A,B"),
    (["--also", "{whole}", "--group", "region:Z=A1,A2"], "'Z' of dim 'region' is a label of no"),
])
def test_refusals_are_one_line(tmp_path, capsys, argv, match):
    _releases(tmp_path)
    argv = [a.format(whole=tmp_path / "whole.json") for a in argv]
    code = main(["assess", str(tmp_path / "split.json"), *argv, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and match in err[0], err
