"""A table prepared for tau-Argus, read whole (rk.read_argus), protected and audited here
(rk.protect_argus, rk.audit_argus), its pattern written as tau-Argus / sdcTable write it and
read back (rk.write_argus_output, rk.read_pattern), and batch files run (rk.run_batch).

References: tau-Argus's own example table (data/tableinput/pp.rda, pp.tab, region2.hrc of
sdcTools/tauargus @ 52aa410): 162 lines = 9 Size codes x 18 Region codes; its status column
holds 110 S, 9 U, 43 E; four of its total lines do not add up (by 1.00).  Every check of
values below is against a computation written here from the file's lines."""

import itertools
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine._formats._lines import FormatError
from riskengine._formats.rda import read_rda
from riskengine._formats.tab import read_tab, write_tab

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"


@pytest.fixture(scope="module")
def pp():
    return rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", additivity="compute")


@pytest.fixture(scope="module")
def frame():
    return read_tab(DATA / "pp.tab", read_rda(DATA / "pp.rda"))


def test_pp_every_line_is_one_cell_of_every_level(pp, frame):
    s = pp.system
    assert s.published.sum() == 162 == len(frame)
    assert pp.explanatory == ("Size", "Region") and pp.table.kind == "magnitude"
    # region2.hrc's tree, with the missing code 99 under the total (SetTotalsInCodeList)
    h = pp.table.hierarchies["Region"][0]
    assert h.children("Nr") == (" 1", " 2", " 3") and h.parent("99") == "Total"
    assert set(pp.table.coords["Size"]) == {" 2", " 4", " 5", " 6", " 7", " 8", " 9", "99"}
    # every line found its cell: its line number and status letter are on it
    got = pp.cells[pp.cells.line > 0]
    assert sorted(got.line) == sorted(frame.line)
    assert Counter(got.status_code) == Counter(frame.StatusVar) == {"S": 110, "E": 43, "U": 9}
    assert Counter(pp.cells.status) == {"safe": 110, "empty": 43, "primary": 9}


def test_pp_leaves_as_given_and_totals_recomputed_from_them(pp, frame):
    h = pp.table.hierarchies["Region"][0]
    leaf = frame[frame.Size.isin(pp.table.coords["Size"])
                 & frame.Region.isin(pp.table.coords["Region"])]
    cells = pp.cells.set_index(["Size", "Region"])
    for r in leaf.itertuples():
        assert cells.loc[(r.Size, r.Region), "value"] == r.Var2
    # a subtotal (Nr) / total of the leaves, by hand from the lines
    by = {(r.Size, r.Region): r.Var2 for r in leaf.itertuples()}
    for size, region in itertools.product(["Total", " 7"], ["Total", "Nr", "Ws"]):
        sizes = pp.table.coords["Size"] if size == "Total" else [size]
        regs = h.members(region) if region != "Total" else pp.table.coords["Region"]
        want = sum(by.get((a, b), 0.0) for a in sizes for b in regs)
        assert cells.loc[(size, region), "value"] == pytest.approx(want, abs=1e-6)


def test_pp_additivity_is_checked_and_the_smallest_offending_cell_named():
    with pytest.raises(FormatError, match="does not add up") as e:
        rk.read_argus(DATA / "pp.rda", DATA / "pp.tab")
    assert e.value.line == 7 and "124336.00" in str(e.value) and "124335.00" in str(e.value)
    assert "3 more lines" in str(e.value)
    with pytest.raises(ValueError, match="non-additive"):
        rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", additivity="none")


def test_rules_on_the_cells_summaries_match_a_hand_computation(pp):
    """NK(2,75) and P(15) from value (the shadow), the two top contributions and the
    frequency, as tau-Argus's table input defines them, cell by cell."""
    from riskengine._batch import _rule_sensitivity
    c = pp.cells
    x = c.shadow.to_numpy(float)
    t1, t2 = c.top1.to_numpy(float), c.top2.to_numpy(float)
    f = c.freq.to_numpy(float)
    sens, *_ = _rule_sensitivity(pp, [("NK", (2.0, 75.0))])
    want = (t1 + t2 > 0.75 * x) & (x > 0)
    np.testing.assert_array_equal(sens, want)
    sens, *_ = _rule_sensitivity(pp, [("P", (15.0, 1.0))])
    want = (x - t1 - t2 < 0.15 * t1) & (f > 0) & (x > 0)
    np.testing.assert_array_equal(sens, want)
    sens, low, up, reason, _ = _rule_sensitivity(pp, [("FREQ", (3.0, 10.0))])
    want = (f > 0) & (f < 3)
    np.testing.assert_array_equal(sens, want)
    assert set(reason[sens]) == {"frequency"}
    # tau-Argus: |response| * 10 %, at least one unit of the last decimal (MinLPL = 0.01)
    np.testing.assert_allclose(up[sens], np.maximum(0.1 * np.abs(c.value.to_numpy()[sens]),
                                                    0.01))
    np.testing.assert_allclose(low[sens], up[sens])
    # NK(2,75): 100/k * (x1 + x2) - shadow, as a share of the shadow, on the response
    sens, low, up, *_ = _rule_sensitivity(pp, [("NK", (2.0, 75.0))])
    v = np.abs(c.value.to_numpy())
    want = (100 / 75 * (t1 + t2) - x) * np.divide(v, x, out=np.ones_like(v), where=x > 0)
    np.testing.assert_allclose(up[sens], np.maximum(want[sens], 0.01))
    # the file's own U cells are exactly the NK(2,75) cells
    sens, *_ = _rule_sensitivity(pp, [("NK", (2.0, 75.0))])
    np.testing.assert_array_equal(sens, pp.status_mask("primary"))


@pytest.mark.parametrize("method", ["heuristic", "optimal"])
def test_protect_audit_and_write_read_the_pattern(pp, tmp_path, method):
    rules = [("NK", (2.0, 75.0)), ("FREQ", (3.0, 10.0))]
    rel, st = rk.protect_argus(pp, rules, method=method, time_limit=60)
    a = rk.audit_argus(pp, rel, rules)
    assert a.attrs["n_under_protected"] == 0 and a.attrs["n_exact"] == 0
    prim = st == "primary"
    assert prim.sum() == 9 and rel.hidden[prim].all()
    assert set(st[rel.hidden]) <= {"primary", "secondary"}
    # tau-Argus code-value with status numbers, then without (x = suppressed)
    for opts in ({"add_status": True}, {}):
        p = tmp_path / "out.csv"
        rk.write_argus_output(pp, rel, st, p, kind=3, options=opts)
        rel2, st2 = rk.read_pattern(pp, p)
        np.testing.assert_array_equal(rel2.hidden, rel.hidden)
        if opts:
            np.testing.assert_array_equal(st2, st)
    # sdcTable's sdcStatus file
    from riskengine._formats.sdc import write_sdc_status
    pub = pp.system.published
    cells = pp.cells[list(pp.explanatory)][pub].reset_index(drop=True)
    cells["Var2"] = np.where(rel.hidden[pub], np.nan, pp.vector("value")[pub])
    cells["Size"] = '"' + cells["Size"] + '"'           # codes with spaces, quoted
    cells["Region"] = '"' + cells["Region"] + '"'
    write_sdc_status(cells, list(st[pub]), tmp_path / "sdc.csv")
    rel3, st3 = rk.read_pattern(pp, tmp_path / "sdc.csv")
    np.testing.assert_array_equal(rel3.hidden, rel.hidden)
    np.testing.assert_array_equal(st3[pub & (st != "empty")], st[pub & (st != "empty")])


def test_the_files_own_pattern_primaries_alone_is_disclosed(pp):
    """tau-Argus's example has U cells and no secondaries: each one is derived exactly."""
    from riskengine.mechanisms.suppression import CellSuppression
    hidden = pp.status_mask("primary")
    rel = rk.TableSetRelease(rk.TableSet({"Var2": pp.table}),
                             np.where(hidden, np.nan, pp.vector("value")),
                             CellSuppression(suppress_totals=True))
    a = rk.audit_argus(pp, rel)
    assert a.attrs["n_exact"] == 9 and a.attrs["n_under_protected"] == 9


def test_write_grid_type_1(pp):
    rel, st = rk.protect_argus(pp, [("NK", (2.0, 75.0))])
    text = rk.write_argus_output(pp, rel, st, None, kind=1)
    rows = text.strip().split("\n")
    assert rows[0].split(",")[1:3] == ['"Total"', '"Nr"'] and len(rows) == 1 + 9
    hid = {tuple(r) for r in pp.cells[rel.hidden][["Size", "Region"]].itertuples(index=False)}
    codes = [c.strip('"') for c in rows[0].split(",")[1:]]
    n_x = 0
    for r in rows[1:]:
        f = r.split(",")
        for code, v in zip(codes, f[1:]):
            if v == "x":
                n_x += 1
                assert (f[0].strip('"'), code) in hid
    assert n_x == len(hid)
    with pytest.raises(ValueError, match="types 1"):
        rk.write_argus_output(pp, rel, st, None, kind=6)


# --- apriori files --------------------------------------------------------------------
def test_apriori_statuses_costs_and_protection_levels(tmp_path):
    hst = tmp_path / "pp.hst"
    hst.write_text('" 5";" 1";P\n" 7";" 4";U\n" 8";" 4";C;1000000\n" 9";" 5";PL;5;7\n'
                   '" 6";" 6";S\n')
    at = rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", hst, additivity="compute")
    c = at.cells.set_index(["Size", "Region"])
    assert c.loc[(" 5", " 1"), "status"] == "forced_safe"
    assert c.loc[(" 7", " 4"), "status"] == "primary"
    assert c.loc[(" 8", " 4"), "cost"] == 1e6
    assert (c.loc[(" 9", " 5"), "lower_pl"], c.loc[(" 9", " 5"), "upper_pl"]) == (5, 7)
    rel, st = rk.protect_argus(at, [("NK", (2.0, 75.0))])
    stc = pd.Series(st, index=c.index)
    assert stc[(" 5", " 1")] == "forced_safe" and stc[(" 7", " 4")] == "primary"
    assert not rel.hidden[at.status_mask("forced_safe")].any()
    bad = tmp_path / "bad.hst"
    bad.write_text('" 5";"XX";P\n')
    with pytest.raises(FormatError, match="no such cell") as e:
        rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", bad, additivity="compute")
    assert e.value.line == 1


# --- malformed tables -------------------------------------------------------------------
def _copy(tmp_path):
    for f in ("pp.rda", "pp.tab", "region2.hrc"):
        shutil.copy(DATA / f, tmp_path / f)
    return tmp_path / "pp.rda", tmp_path / "pp.tab"


@pytest.mark.parametrize("edit,line,rule", [
    (lambda t: t.replace('"Total";"Nr"', '"Total";"Xx"', 1), 2, "not in its code list"),
    (lambda t: t + t.splitlines()[5] + "\n", 163, "duplicate cell"),
    (lambda t: t.replace('" 2";" 1";5,00', '" 2";" 1";6,00', 1), None, "does not add up"),
])
def test_malformed_tables(tmp_path, edit, line, rule):
    rda, tab = _copy(tmp_path)
    tab.write_text(edit(tab.read_text(encoding="latin-1")), encoding="latin-1")
    with pytest.raises(FormatError, match=rule) as e:
        rk.read_argus(rda, tab, additivity="compute" if rule != "does not add up" else "check")
    if line is not None:
        assert e.value.line == line
    assert str(tab) in str(e.value)


def test_missing_hierarchy_file_is_named(tmp_path):
    rda, tab = _copy(tmp_path)
    (tmp_path / "region2.hrc").unlink()
    with pytest.raises(FormatError, match="region2.hrc.*not found"):
        rk.read_argus(rda, tab, additivity="compute")


# --- random hierarchical count tables: written, read, protected, posterior ------------------
def _random_count_table(rng, tmp_path):
    regions = {f"R{i}": [f"R{i}{j}" for j in range(int(rng.integers(1, 4)))]
               for i in range(int(rng.integers(2, 4)))}
    (tmp_path / "r.hrc").write_text("".join(r + "\n" + "".join("@" + d + "\n" for d in ds)
                                            for r, ds in regions.items()))
    (tmp_path / "t.rda").write_text(
        '   <SEPARATOR> ";"\nRegion\n    <RECODEABLE>\n    <TOTCODE> "Total"\n'
        '    <HIERARCHICAL>\n    <HIERCODELIST> "r.hrc"\n    <HIERLEADSTRING> "@"\n'
        'Sex\n    <RECODEABLE>\n    <TOTCODE> "Total"\nFreq\n    <FREQUENCY>\n')
    meta = read_rda(tmp_path / "t.rda")
    leaves = [d for ds in regions.values() for d in ds]
    rows = [(d, s, int(rng.integers(0, 9))) for d in leaves for s in ("m", "f")]
    frame = pd.DataFrame(rows, columns=["Region", "Sex", "Freq"])
    (tmp_path / "t.tab").write_text(write_tab(frame, meta))
    return regions, frame


def test_random_count_tables_read_back_with_every_total(rng, tmp_path):
    for _ in range(10):
        regions, frame = _random_count_table(rng, tmp_path)
        at = rk.read_argus(tmp_path / "t.rda", tmp_path / "t.tab", additivity="compute")
        assert at.table.kind == "count" and at.response is None
        v = at.vector("value")
        for r, ds in regions.items():
            for s in ("m", "f", "Total"):
                sexes = ("m", "f") if s == "Total" else (s,)
                want = frame[frame.Region.isin(ds) & frame.Sex.isin(sexes)].Freq.sum()
                assert v[at.system.find(Region=r, Sex=s)] == want
        assert v[at.system.find(Region="Total", Sex="Total")] == frame.Freq.sum()


def test_a_count_tables_pattern_has_the_exact_posterior(rng, tmp_path):
    """Another tool's pattern of a count table read back: the posterior of every hidden
    cell (sums route) against a brute force over every nonnegative completion."""
    checked = 0
    for _ in range(6):
        _random_count_table(rng, tmp_path)
        at = rk.read_argus(tmp_path / "t.rda", tmp_path / "t.tab", additivity="compute")
        rel, st = rk.protect_argus(at, [("FREQ", (3.0, 10.0))])
        if not rel.hidden.any():
            continue
        p = tmp_path / "pattern.csv"
        rk.write_argus_output(at, rel, st, p, kind=3)
        rel2, _ = rk.read_pattern(at, p)
        np.testing.assert_array_equal(rel2.hidden, rel.hidden)
        post = rk.posterior(rel2, prior=rk.priors.Uniform())
        assert post.attrs["route"] == "sums" and post.attrs["approximate"] == 0
        s = at.system
        n_fin = int(s.cells["finest"].sum())
        M = s.M.toarray()
        known = ~np.isnan(rel2.values) & s.published
        hid_fin = [j for j in range(n_fin) if np.isnan(rel2.values[j])]
        # each hidden cell is at most the smallest published cell it belongs to
        Mk = M[known]
        cap = [int(min(rel2.values[known][Mk[:, j] > 0])) for j in hid_fin]
        size = int(np.prod([c + 1 for c in cap]))
        if size > 2_000_000:
            continue
        x0 = np.nan_to_num(rel2.values[:n_fin])
        grid = np.stack(np.meshgrid(*[np.arange(c + 1) for c in cap], indexing="ij"),
                        axis=-1).reshape(-1, len(hid_fin))
        X = np.repeat(x0[None, :], len(grid), axis=0)
        X[:, hid_fin] = grid
        ok = np.all(np.abs(X @ M[known].T - rel2.values[known]) < 1e-9, axis=1)
        n = int(ok.sum())
        counts = {j: Counter(grid[ok, k].tolist()) for k, j in enumerate(hid_fin)}
        assert post.n_candidates == n
        for j in hid_fin:
            r, sx = s.cells.Region[j], s.cells.Sex[j]
            pm = post.pmf.sel(Region=r, Sex=sx).values
            want = np.array([counts[j][v] / n for v in range(pm.size)])
            np.testing.assert_allclose(pm, want, atol=1e-12)
        checked += 1
    assert checked >= 2


# --- batch files --------------------------------------------------------------------------
def test_run_batch_protects_audits_and_writes(tmp_path):
    for f in ("pp.rda", "pp.tab", "region2.hrc", "job.arb"):
        shutil.copy(DATA / f, tmp_path / f)
    said = []
    res = rk.run_batch(tmp_path / "job.arb", progress=said.append)
    assert len(res.tables) == 1 and 1 in res.releases
    assert any("MOD run as riskengine's heuristic" in n for n in res.notes)
    rel, st = res.releases[1]
    assert res.audits[1].attrs["n_under_protected"] == 0
    assert [p.name for p in res.written] == ["pp_mod.csv", "pp_grid.csv"]
    _, st2 = rk.read_pattern(res.tables[0], tmp_path / "pp_mod.csv")
    np.testing.assert_array_equal(st2, st)
    at = rk.read_argus(tmp_path / "pp.rda", tmp_path / "pp.tab", additivity="compute")
    direct, _ = rk.protect_argus(at, [("NK", (2.0, 75.0)), ("FREQ", (3.0, 10.0))],
                                 cost="Var2")
    np.testing.assert_array_equal(direct.hidden, rel.hidden)
    assert any("wrote" in m for m in said)


@pytest.mark.parametrize("text,rule", [
    (('<OPENTABLEDATA> "pp.tab"\n<OPENMETADATA> "pp.rda"\n<SPECIFYTABLE> "Size""Region"|'
      '"Var2"||\n<SAFETYRULE> NK(2,75)\n<READTABLE> 1\n<SUPPRESS> RND(1, 5)\n'), "RND"),
    (('<OPENTABLEDATA> "pp.tab"\n<OPENMETADATA> "pp.rda"\n<SPECIFYTABLE> "Size""Region"|'
      '"Var2"||\n<SAFETYRULE> NK(2,75)\n<READTABLE> 1\n<SUPPRESS> CTA(1)\n'), "CTA"),
    (('<OPENTABLEDATA> "pp.tab"\n<OPENMETADATA> "pp.rda"\n<SPECIFYTABLE> "Size""Region"|'
      '"Var2"||\n<SAFETYRULE> NK(2,75)\n<READTABLE> 1\n<RECODE> 1, Size, 2\n'), "RECODE"),
])
def test_run_batch_refuses_what_it_does_not_run_by_name(tmp_path, text, rule):
    p = tmp_path / "job.arb"
    p.write_text(text)
    with pytest.raises(FormatError, match=rule):
        rk.run_batch(p)


def test_apriori_bounds_are_the_intruders_and_the_audit_uses_them(tmp_path):
    """An AB line (a-priori bounds an intruder knows) narrows a suppressed cell's interval:
    the audit that ignored it would call the cell protected when it is not."""
    rules = [("NK", (2.0, 75.0))]
    at = rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", additivity="compute")
    rel, st = rk.protect_argus(at, rules)
    j = at.system.find(Size=" 2", Region=" 1")            # primary, value 5, needs 1.67
    assert st[j] == "primary"
    plain = rk.audit_argus(at, rel, rules)
    assert not plain.under_protected.values[j]
    hst = tmp_path / "ab.hst"
    hst.write_text('" 2";" 1";AB;4.5;5.5\n')
    atb = rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", hst, additivity="compute")
    a = rk.audit_argus(atb, rel, rules)
    assert (a.lower.values[j], a.upper.values[j]) == (pytest.approx(4.5), pytest.approx(5.5))
    assert a.under_protected.values[j] and a.attrs["n_under_protected"] >= 1
    assert a.attrs["apriori_bounds"] == 1
    # the JJ file carries the same bounds, and its audit agrees
    from riskengine._batch import audit_jj, to_jj
    jj = to_jj(atb, rel, st, rules)
    aj = audit_jj(jj)
    k = int(np.flatnonzero(np.flatnonzero(atb.system.published) == j)[0])
    assert (jj.lower[k], jj.upper[k]) == (4.5, 5.5) and aj.under_protected.values[k]
    bad = tmp_path / "bad.hst"
    bad.write_text('" 2";" 1";AB;6;7\n')
    atx = rk.read_argus(DATA / "pp.rda", DATA / "pp.tab", bad, additivity="compute")
    with pytest.raises(ValueError, match="do not hold its value"):
        rk.audit_argus(atx, rel, rules)
