"""``riskengine reconstruct``: the bundled example, a config of one's own (microdata CSV,
tables, a protection), resuming from the units written, and one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from riskengine.cli import main


def test_bundled_example_reports_certain_persons_and_writes_its_files(tmp_path, capsys):
    assert main(["reconstruct", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "reconstructed with certainty:" in out
    with xr.open_dataset(tmp_path / "reconstruct.nc", engine="scipy") as ds:
        ds = ds.load()
    persons = int(ds.attrs["persons"])
    assert f"persons: {persons}; reconstructed with certainty: " \
           f"{int(ds.attrs['persons_certain'])}" in out
    # the certain records are real persons: the truth of the generated population
    certain = ds["certain"].values.astype(bool)
    assert (ds["lower"].values[certain] == ds["value"].values[certain]).all()
    rec = pd.read_csv(tmp_path / "records.csv", dtype={"age": str})
    assert len(rec) == int(ds["lower"].sum())          # no prior: certain claims only
    assert rec["true"].all() and rec["certain"].all()
    units = sorted((tmp_path / "units").glob("*.nc"))
    assert len(units) == ds.attrs["units"] == 3
    assert f"report written to {tmp_path / 'reconstruct.html'}" in out
    html = (tmp_path / "reconstruct.html").read_text()
    assert "<title>Reconstruction audit of a table set" in html
    # a second run reads every unit back; --no-report takes the earlier report away
    assert main(["reconstruct", "--out", str(tmp_path), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "(3 read back from an earlier run)" in out and "earlier report removed" in out
    assert not (tmp_path / "reconstruct.html").exists()


def _run_config(tmp_path, text: str) -> xr.Dataset:
    """Write ``text`` as a config, run ``riskengine reconstruct`` on it (exit 0) and
    return the result it wrote."""
    (tmp_path / "recon.toml").write_text(text)
    assert main(["reconstruct", str(tmp_path / "recon.toml"), "--out",
                 str(tmp_path / "o")]) == 0
    with xr.open_dataset(tmp_path / "o" / "reconstruct.nc", engine="scipy") as ds:
        return ds.load()


def test_own_config_with_microdata_and_rounding(tmp_path, capsys):
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"area": rng.choice(["a1", "a2", "a3"], 30),
                       "sex": rng.choice(["F", "M"], 30),
                       "age": rng.choice(["young", "old"], 30)})
    df.to_csv(tmp_path / "people.csv", index=False)
    ds = _run_config(tmp_path, 'seed = 1\n[population]\npath = "people.csv"\n'
                     '[tables]\nA = ["area", "sex"]\nB = ["area", "age"]\n'
                     '[protection]\ntype = "random_rounding"\nbase = 2\n'
                     '[reconstruct]\nbounds = "exact"\n')
    assert "people.csv: 30 persons" in capsys.readouterr().out
    assert ds.attrs["mechanism"] == "random_rounding"
    assert int(ds.attrs["exact_bounds"]) == 1


def test_sf1_publication_with_noise_and_coverage(tmp_path, capsys):
    ds = _run_config(
        tmp_path,
        'seed = 2\n[population]\ngenerator = "blocks"\npublication = "sf1"\ntracts = 1\n'
        'blocks = 2\npersons = [3, 6]\n'
        '[protection]\ntype = "noise"\ndistribution = "discrete_gaussian"\nscale = 0.3\n'
        '[reconstruct]\nunit = "block"\nlevel = 2\ncoverage = 0.99\nbounds = "lp"\n')
    out = capsys.readouterr().out
    assert "PROBABILISTIC: certain with probability >= 0.99 over the noise" in out
    assert "P12AF_block_sex_age_race" in out and "PCT12_tract_sex_age_race_hisp" in out
    assert ds.attrs["mechanism"] == "noisy_counts"
    assert float(ds.attrs["coverage"]) == 0.99
    assert "PROBABILISTIC: certain with probability &gt;= 0.99 over the noise" in \
        (tmp_path / "o" / "reconstruct.html").read_text()


@pytest.mark.parametrize("text,msg", [
    ('[population]\ngenerator = "nope"\n', "generator must be one of"),
    ('[population]\ngenerator = "blocks"\ntracts = 0\n', "tracts"),
    ('[population]\ngenerator = "blocks"\n[reconstruct]\nunits = "x"\n',
     "unknown key 'units' in [reconstruct]"),
    ('[population]\ngenerator = "census"\npublication = "sf1"\n',
     "the 'census' generator has one publication only"),
    ('[population]\ngenerator = "blocks"\ntracts = 1\n[protection]\ntype = "exact"\nbase = 3\n',
     "'base' does not apply to type = 'exact'"),
    ('[population]\ngenerator = "blocks"\ntracts = 1\n[protection]\ntype = "noise"\n',
     "scale"),
    ('[population]\ngenerator = "blocks"\ntracts = 1\n[protection]\ntype = "swap"\n',
     "[protection] type must be"),
    ('[population]\npath = "missing.csv"\n', "no such file"),
])
def test_config_errors_are_one_line(tmp_path, capsys, text, msg):
    (tmp_path / "c.toml").write_text(text)
    assert main(["reconstruct", str(tmp_path / "c.toml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.startswith("riskengine: error:")
