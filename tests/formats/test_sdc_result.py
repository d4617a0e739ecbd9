"""sdcTable results read whole (rk.formats.read_sdc_result): cells, values, sdcStatus and
the dims' hierarchies (to-from, level frames); their patterns audited and, for counts, the
exact posterior of each primary cell (riskengine audit --sdc ... --posterior)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine._batch import status_pattern
from riskengine._formats._lines import FormatError
from riskengine.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "sdc"


def test_the_example_result_read_audited():
    at = rk.formats.read_sdc_result(DATA / "sdctable_result.csv", ["region", "gender"])
    assert at.table.kind == "count" and at.system.published.sum() == 9
    c = at.cells.set_index(["region", "gender"])
    assert c.loc[("A", "male"), "status"] == "primary"
    assert c.loc[("B", "Total"), "status"] == "forced_safe"
    assert c.loc[("Total", "Total"), "value"] == 100
    rel, _ = status_pattern(at)
    assert rel.hidden.sum() == 4
    a = rk.audit_argus(at, rel)
    assert a.attrs["n_exact"] == 0 and a.attrs["n_under_protected"] == 0
    # the magnitude column of the same result
    atv = rk.formats.read_sdc_result(DATA / "sdctable_result.csv", ["region", "gender"],
                                     value="val")
    assert atv.table.kind == "magnitude"
    assert atv.vector("value")[atv.system.find(region="Total", gender="Total")] == 1500.5


def _hier_result(rng, tmp_path):
    geo = rk.Hierarchy({"North": {"N1": {}, "N2": {}}, "South": {"S1": {}, "S2": {},
                                                                 "S3": {}}}, total="Total")
    counts = {(g, s): int(rng.integers(0, 7)) for g in geo.leaves for s in ("f", "m")}
    rows = []
    for code in geo.codes:
        leaves = geo.members(code) if code != "Total" else geo.leaves
        for s in ("f", "m", "Total"):
            sexes = ("f", "m") if s == "Total" else (s,)
            rows.append((code, s, sum(counts[(g, x)] for g in leaves for x in sexes)))
    df = pd.DataFrame(rows, columns=["geo", "sex", "freq"])
    status = np.where((df.freq > 0) & (df.freq < 3), "u", "s")
    df["sdcStatus"] = status
    return geo, df


def test_hierarchical_results_with_a_to_from_hierarchy(rng, tmp_path):
    for _ in range(5):
        geo, df = _hier_result(rng, tmp_path)
        # sdcTable's pattern: here its primaries and, as secondaries, every other cell of
        # their districts' rows -- whatever it is, the audit is computed from it
        prim = df.sdcStatus == "u"
        df.loc[~prim & df.geo.isin(df.geo[prim]) & (df.sex != "Total"), "sdcStatus"] = "x"
        p = tmp_path / "res.csv"
        df.to_csv(p, index=False)
        tofrom = rk.formats.hierarchies_to_tofrom([geo])
        hp = tmp_path / "geo.csv"
        tofrom.to_csv(hp, index=False)
        (h,) = rk.formats.tofrom_hierarchies(hp)
        at = rk.formats.read_sdc_result(p, ["geo", "sex"], {"geo": h})
        v = at.vector("value")
        for r in df.itertuples():
            assert v[at.system.find(geo=r.geo, sex=r.sex)] == r.freq
        rel, _ = status_pattern(at)
        hid = {(a, b) for a, b in df[df.sdcStatus.isin(["u", "x"])][["geo", "sex"]]
               .itertuples(index=False)}
        got = {(at.cells.geo[j], at.cells.sex[j]) for j in np.flatnonzero(rel.hidden)}
        # a code with one member is the same cell: compare by cell index
        want = {at.system.find(geo=a, sex=b) for a, b in hid}
        assert set(np.flatnonzero(rel.hidden)) == want, (got, hid)
        a = rk.audit_argus(at, rel)
        assert a.attrs["n_suppressed"] == len(want)


def test_malformed_results(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("g,freq,sdcStatus\nTotal,9,s\na,1,u\nb,3,q\n")
    with pytest.raises(FormatError, match="q") as e:
        rk.formats.read_sdc_result(p, ["g"])
    assert e.value.line == 4
    p.write_text("g,freq,sdcStatus\nTotal,10,s\na,1,u\nb,3,s\nc,5,s\n")
    with pytest.raises(FormatError, match="does not add up"):
        rk.formats.read_sdc_result(p, ["g"])
    p.write_text("g,freq,sdcStatus\nTotal,9,s\na,1,u\nb,3,s\nc,5,s\n")
    with pytest.raises(FormatError, match="no column 'val'"):
        rk.formats.read_sdc_result(p, ["g"], value="val")
    geo = rk.Hierarchy({"X": {"a": {}, "b": {}}}, total="Total")
    with pytest.raises(FormatError, match="'c'"):
        rk.formats.read_sdc_result(p, ["g"], {"g": geo})


def test_cli_audit_sdc_with_posterior(tmp_path, capsys):
    assert main(["audit", "--sdc", str(DATA / "sdctable_result.csv"), "--dims",
                 "region,gender", "--posterior", "--no-report", "--out",
                 str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "route sums, exact" in out and "AUDIT: PROTECTED" in out
    # 31 tables: (A,male) = k takes every value 0..30 given the published cells
    assert "the 31 tables" in out
    assert (tmp_path / "audit.nc").is_file()


def test_cli_audit_sdc_needs_dims(tmp_path, capsys):
    assert main(["audit", "--sdc", str(DATA / "sdctable_result.csv"), "--out",
                 str(tmp_path)]) == 2
    assert "--dims" in capsys.readouterr().err
