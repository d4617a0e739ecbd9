"""tau-Argus tables from microdata (riskengine._argus_micro.argus_microdata).

Every expected number below is computed here, in plain Python over the records: a cell
holds the records whose codes it covers at every level of every hierarchy (the region
hierarchy of ``r.hrc``, the missing code ``99`` one more code under the total), its value
is the (weighted) sum, its contributions the records' values sorted from largest, and the
NK / P / FREQ / REQ rules and their protection levels are evaluated by hand as libtauargus
does (CTable::ComputeCellSafeCode, CDataCell::ComputeWeightedScoreCell,
CTable::SetProtectionLevelCell)."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine._argus_micro import argus_microdata, rules_text, with_sensitivity
from riskengine._batch import argus_sensitivity, protect_argus
from riskengine._formats._lines import FormatError
from riskengine._formats.asc import write_asc
from riskengine._formats.rda import read_rda
from riskengine._formats.tab import write_tab

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"

RDA = """Region 1 2 "99"
  <RECODEABLE>
  <TOTCODE> "Total"
  <HIERARCHICAL>
  <HIERCODELIST> "r.hrc"
  <HIERLEADSTRING> "@"
Size 3 1 "9"
  <RECODEABLE>
Sales 4 8 "99999999"
  <NUMERIC>
Label 12 1
  <RECODEABLE>
Wgt 13 4
  <WEIGHT>
  <DECIMALS> 1
Hold 17 3
  <HOLDING>
Req 20 1
  <REQUEST> "1" "2"
"""
HRC = "N\n@ 1\n@ 2\nS\n@ 3\n@11\n"
TREE = {"N": [" 1", " 2"], "S": [" 3", "11"]}
LEAVES = [" 1", " 2", " 3", "11", "99"]


def records(seed, n=60, negative=False):
    rng = np.random.default_rng(seed)
    sales = rng.integers(0, 1000, n).astype(float)
    # a few dominant records
    sales[rng.choice(n, 6, replace=False)] *= 20
    if negative:
        sales[rng.choice(n, 5, replace=False)] *= -0.01
        sales = np.round(sales)
    hold = np.sort(rng.integers(0, n // 3, n))
    return pd.DataFrame({
        "Region": rng.choice(LEAVES, n, p=[0.25, 0.2, 0.25, 0.2, 0.1]),
        "Size": rng.choice(["1", "2", "9"], n, p=[0.45, 0.45, 0.1]),
        "Sales": sales,
        "Label": ["a"] * n,
        "Wgt": rng.choice([1.0, 1.5, 2.5, 4.0], n),
        "Hold": [f"{h:3d}" for h in hold],
        "Req": rng.choice([" ", "1", "2"], n, p=[0.7, 0.15, 0.15]),
    })


@pytest.fixture
def job(tmp_path):
    def make(frame, rda=RDA):
        (tmp_path / "m.rda").write_text(rda)
        (tmp_path / "r.hrc").write_text(HRC)
        write_asc(frame, read_rda(rda, kind="micro"), tmp_path / "m.asc")
        return tmp_path / "m.rda", tmp_path / "m.asc"
    return make


# ------------------------------------------------------------------ the hand computation


def covers(dim, code, rec_code):
    if dim == "Region":
        if code == "Total":
            return True
        if code in TREE:
            return rec_code in TREE[code]
        return rec_code == code
    return code == "Total" or rec_code == code


def cell_records(frame, cells, dims):
    """The row numbers of the records of every cell (a list per cell)."""
    out = []
    for _, c in cells.iterrows():
        mask = np.ones(len(frame), bool)
        for d in dims:
            mask &= np.array([covers(d, c[d], r) for r in frame[d]])
        out.append(np.flatnonzero(mask))
    return out


def weighted_top(xs, ws, n):
    """ComputeWeightedScoreCell: the n largest units, the last record in part."""
    score, used = 0.0, 0.0
    for x, w in zip(xs, ws):
        if used + w < n:
            score += x * w
            used += w
        else:
            score += x * (n - used)
            break
    return score


def hand(frame, rows, rules, weighted=False, decimals=0, count=False):
    """(value, freq, sorted contributions, sensitive, lower, upper, reason) of one cell."""
    x = np.ones(len(rows)) if count else frame["Sales"].to_numpy()[rows]
    w = frame["Wgt"].to_numpy()[rows] if weighted else np.ones(len(rows))
    value = float(np.sum(w * x))
    freq = len(rows)
    order = sorted(range(len(rows)), key=lambda i: -abs(x[i]))
    xs = [abs(x[i]) for i in order]
    ws = [w[i] for i in order]
    T = float(np.sum(w * np.abs(x)))
    minlpl = 1.0 if count else 10.0 ** -decimals
    out = {"value": value, "freq": freq, "tops": xs, "sens": False, "lower": 0.0,
           "upper": 0.0, "reason": None}
    if freq == 0:
        return out
    dist = None
    for name, p in rules:
        if name == "NK":
            n, k = p
            top = weighted_top(xs, ws, n)
            if top > k / 100 * T + 1e-9:
                d = 100 / k * top - T
                dist = d if dist is None else max(dist, d)
        if name == "P":
            pp, n = p
            top = weighted_top(xs, ws, n + 1)
            d = pp / 100 * xs[0] + top - T
            if d > 1e-9:
                dist = d if dist is None else max(dist, d)
    if dist is not None:
        up = max(abs(value) * dist / T, minlpl)
        out.update(sens=True, upper=up, lower=min(up, abs(value)), reason="rule")
        return out
    for name, p in rules:
        if name == "FREQ":
            m, r = p
            n_units = float(np.sum(w)) if weighted else freq
            if n_units < m:
                up = max(abs(value) * r / 100, minlpl)
                out.update(sens=True, upper=up, lower=min(up, abs(value)), reason="frequency")
    return out


def check(at, sens, frame, rules, dims, **kw):
    rows = cell_records(frame, at.cells, dims)
    s, lo, up, why = sens
    assert len(rows) == at.system.n_var == len(at.cells)
    for j, r in enumerate(rows):
        h = hand(frame, r, rules, **kw)
        c = at.cells.iloc[j]
        label = at.system.labels()[j]
        assert c["value"] == pytest.approx(h["value"]), label
        assert c["freq"] == h["freq"], label
        for k in range(1, 4):
            if f"top{k}" in at.cells:
                want = h["tops"][k - 1] if k <= len(h["tops"]) else 0.0
                assert c[f"top{k}"] == pytest.approx(want), (label, k)
        assert c["status"] == ("empty" if h["freq"] == 0 else "safe"), label
        assert bool(s[j]) == h["sens"], label
        assert why[j] == h["reason"], label
        assert up[j] == pytest.approx(h["upper"]), label
        assert lo[j] == pytest.approx(h["lower"]), label


# ------------------------------------------------------------------ tests


RULES = [("NK", (2.0, 80.0)), ("P", (15.0, 1.0)), ("FREQ", (3.0, 10.0))]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_magnitude_table_cell_by_cell(job, seed):
    frame = records(seed)
    rda, asc = job(frame)
    at, sens = argus_microdata(rda, asc, ["Region", "Size"], "Sales", rules=RULES)
    assert at.table.kind == "magnitude" and at.response == "Sales"
    assert at.explanatory == ("Region", "Size")
    assert [c for c in at.cells.columns if c.startswith("top")] == ["top1", "top2"]
    check(at, sens, frame, RULES, ("Region", "Size"))
    # the system's cells, every level: 5 leaves + N + S + Total by 3 sizes + Total
    assert at.system.n_var == 8 * 4
    assert set(at.cells["Region"]) == {" 1", " 2", " 3", "11", "99", "N", "S", "Total"}
    assert sens[0].any() and (sens[3][sens[0]] == "rule").all()
    # the cell order is the system's
    assert at.cells["value"].to_numpy() == pytest.approx(at.system.vector(at.table.values))


def test_weighted_table(job):
    frame = records(3)
    rda, asc = job(frame)
    rules = [("NK", (2.0, 70.0)), ("FREQ", (4.0, 20.0)), ("WGT", (1.0,))]
    at, sens = argus_microdata(rda, asc, ["Region", "Size"], "Sales", rules=rules)
    check(at, sens, frame, [r for r in rules if r[0] != "WGT"], ("Region", "Size"),
          weighted=True)
    rows = cell_records(frame, at.cells, ("Region", "Size"))
    assert at.cells["weight"].to_numpy() == pytest.approx(
        [frame["Wgt"].to_numpy()[r].sum() for r in rows])


def test_weights_are_ignored_without_wgt(job):
    frame = records(4)
    rda, asc = job(frame)
    at, _ = argus_microdata(rda, asc, ["Size"], "Sales", rules="NK(2,80)|WGT(0)")
    assert at.cells["value"].iloc[-1] == pytest.approx(frame["Sales"].sum())
    assert "weight" not in at.cells


def test_frequency_table(job):
    frame = records(5)
    rda, asc = job(frame)
    rules = [("FREQ", (3.0, 10.0))]
    at, sens = argus_microdata(rda, asc, ["Region", "Size"], rules=rules)
    assert at.response is None and at.table.kind == "count"
    assert (at.cells["value"] == at.cells["freq"]).all()
    check(at, sens, frame, rules, ("Region", "Size"), count=True)
    # a small count needs 1 on both sides (MinLPL of a frequency table)
    small = sens[0]
    assert small.any() and (sens[2][small] == 1).all() and (sens[1][small] == 1).all()


def test_weighted_frequency_table(job):
    frame = records(6)
    rda, asc = job(frame)
    rules = [("FREQ", (3.0, 10.0)), ("WGT", (1.0,))]
    at, sens = argus_microdata(rda, asc, ["Region"], rules=rules)
    assert at.response is None and at.table.kind == "magnitude"
    check(at, sens, frame, rules[:1], ("Region",), weighted=True, count=True)


def test_negative_contributions(job):
    frame = records(7, negative=True)
    assert (frame["Sales"] < 0).any()
    rda, asc = job(frame)
    rules = [("NK", (1.0, 60.0))]
    at, (s, _lo, up, _why) = argus_microdata(rda, asc, ["Region"], "Sales", rules=rules)
    rows = cell_records(frame, at.cells, ("Region",))
    x = frame["Sales"].to_numpy()
    for j, r in enumerate(rows):
        a = np.sort(np.abs(x[r]))[::-1]
        assert at.cells["value"].iloc[j] == pytest.approx(x[r].sum())   # signed
        assert at.cells["top1"].iloc[j] == pytest.approx(a[0])
        T = a.sum()                                   # the rules see absolute values
        assert bool(s[j]) == (a[0] > 0.6 * T)
        if s[j]:
            assert up[j] == pytest.approx(max(abs(x[r].sum()) * (a[0] / 0.6 - T) / T, 1))


def test_same_as_the_tab_route(job, tmp_path):
    """A .tab of the same cells (written from the hand computation) read by read_argus
    gives the same values, and argus_sensitivity the same sensitive cells."""
    frame = records(8)
    rda, asc = job(frame)
    rules = [("NK", (3.0, 75.0)), ("P", (10.0, 1.0)), ("FREQ", (3.0, 10.0))]
    at, (s, lo, up, why) = argus_microdata(rda, asc, ["Region", "Size"], "Sales",
                                           rules=rules, top=3)
    tab_rda = """<SEPARATOR> ";"
Region "99"
  <RECODEABLE>
  <TOTCODE> "Total"
  <HIERARCHICAL>
  <HIERCODELIST> "r.hrc"
  <HIERLEADSTRING> "@"
Size "9"
  <RECODEABLE>
  <TOTCODE> "Total"
Sales
  <NUMERIC>
Freq
  <FREQUENCY>
Top1
  <MAXSCORE>
Top2
  <MAXSCORE>
Top3
  <MAXSCORE>
"""
    (tmp_path / "t.rda").write_text(tab_rda)
    codes = {"Region": LEAVES + ["N", "S", "Total"], "Size": ["1", "2", "9", "Total"]}
    rows = []
    for reg in codes["Region"]:
        for size in codes["Size"]:
            r = np.flatnonzero(np.array([covers("Region", reg, a) and covers("Size", size, b)
                                         for a, b in zip(frame["Region"], frame["Size"])]))
            x = np.sort(frame["Sales"].to_numpy()[r])[::-1]
            top = list(x[:3]) + [0.0] * (3 - min(3, len(x)))
            rows.append({"Region": reg, "Size": size, "Sales": x.sum(), "Freq": len(x),
                         "Top1": top[0], "Top2": top[1], "Top3": top[2]})
    write_tab(pd.DataFrame(rows), read_rda(tab_rda, kind="table"), tmp_path / "t.tab")
    ref = rk.read_argus(tmp_path / "t.rda", tmp_path / "t.tab")
    key = ["Region", "Size"]
    a = at.cells.set_index(key)
    b = ref.cells.set_index(key).loc[a.index]
    for col in ("value", "freq", "top1", "top2", "top3"):
        assert a[col].to_numpy(float) == pytest.approx(b[col].to_numpy(float)), col
    assert (b["status"] == a["status"]).all()
    rs, rlo, rup, _rwhy = argus_sensitivity(ref, rules)
    # ref's cells in at's order
    pos = {k: i for i, k in enumerate(ref.cells.set_index(key).index)}
    order = np.array([pos[k] for k in a.index])
    assert (rs[order] == s).all() and s.any()
    # levels agree where a single kind of rule fails (argus_sensitivity gives a cell
    # failing both NK/P and FREQ the larger protection; tau-Argus the rule's)
    nk_only = s & (why == "rule") & (np.asarray(at.cells["freq"]) >= 3)
    freq_only = s & (why == "frequency")
    for m in (nk_only, freq_only):
        assert up[m] == pytest.approx(rup[order][m])
        assert lo[m] == pytest.approx(rlo[order][m])


def test_holdings(job):
    frame = records(9)
    rda, asc = job(frame)
    rules = "NK(0,0)|NK(0,0)|NK(1,60)|FREQ(0,0)|FREQ(2,15)"
    at, (s, _lo, up, why) = argus_microdata(rda, asc, ["Region"], "Sales", rules=rules)
    rows = cell_records(frame, at.cells, ("Region",))
    x = frame["Sales"].to_numpy()
    hold = frame["Hold"].to_numpy()
    for j, r in enumerate(rows):
        sums = {}
        for i in r:
            sums[hold[i]] = sums.get(hold[i], 0.0) + x[i]
        hs = sorted(sums.values(), reverse=True)
        T = x[r].sum()
        assert at.cells["holding_freq"].iloc[j] == len(hs)
        assert at.cells["freq"].iloc[j] == len(r)
        dom = bool(hs) and hs[0] > 0.6 * T
        few = 0 < len(hs) < 2
        assert bool(s[j]) == (dom or few)
        if dom:
            assert why[j] == "rule" and up[j] == pytest.approx(hs[0] / 0.6 - T)
        elif few:
            assert why[j] == "frequency" and up[j] == pytest.approx(max(T * 0.15, 1))


def test_unsorted_holdings_are_refused(job):
    frame = records(10)
    frame.loc[frame.index[-1], "Hold"] = frame["Hold"].iloc[0]
    rda, asc = job(frame)
    with pytest.raises(FormatError, match=rf"line {len(frame)}: holding .* sort the file"):
        argus_microdata(rda, asc, ["Region"], "Sales", rules="NK(0,0)|NK(0,0)|NK(1,60)")


def test_request_rule(job):
    frame = records(11)
    rda, asc = job(frame)
    at, (s, _lo, up, why) = argus_microdata(rda, asc, ["Region", "Size"], "Sales",
                                           rules="REQ(30,40,0,5)")
    rows = cell_records(frame, at.cells, ("Region", "Size"))
    x = frame["Sales"].to_numpy()
    req = frame["Req"].to_numpy()
    for j, r in enumerate(rows):
        T = x[r].sum()
        hit = any((req[i] == "1" and x[i] > 0.3 * T) or (req[i] == "2" and x[i] > 0.4 * T)
                  for i in r)
        assert bool(s[j]) == hit
        if hit:
            assert why[j] == "request" and up[j] == pytest.approx(max(0.05 * T, 1))


def test_missing_codes_under_the_total_and_mis(job):
    frame = records(12)
    rda, asc = job(frame)
    at, (s, *_ ) = argus_microdata(rda, asc, ["Region"], "Sales", rules="FREQ(100,10)")
    cells = at.cells.set_index("Region")
    assert cells.loc["99", "freq"] == (frame["Region"] == "99").sum()
    assert cells.loc["Total", "freq"] == len(frame)
    assert s[list(cells.index).index("99")]
    _, (s2, *_) = argus_microdata(rda, asc, ["Region"], "Sales", rules="FREQ(100,10)|MIS(1)")
    assert not s2[list(cells.index).index("99")]
    assert s2[list(cells.index).index(" 1")]


def test_with_sensitivity_feeds_protect_argus(job):
    frame = records(13)
    rda, asc = job(frame)
    at, sens = argus_microdata(rda, asc, ["Region", "Size"], "Sales", rules=RULES)
    marked = with_sensitivity(at, sens)
    s2, lo2, up2, _ = argus_sensitivity(marked)
    assert (s2 == sens[0]).all()
    assert lo2[sens[0]] == pytest.approx(sens[1][sens[0]])
    assert up2[sens[0]] == pytest.approx(sens[2][sens[0]])
    _rel, status = protect_argus(marked)
    assert (status[sens[0]] == "primary").all()


def test_rules_text():
    assert rules_text([("NK", (3.0, 75.0)), ("P", (15.0, 1.0)), ("WGT", (1.0,))]) == \
        "NK(3,75)|P(15,1)|WGT(1)"
    assert rules_text("FREQ(3,10)") == "FREQ(3,10)"


def test_tau_testw_layout(tmp_path):
    """tau-Argus's own test metadata (fixed width, digit hierarchy, .hrc, weight,
    request): a few records written in its layout."""
    shutil.copy(DATA / "Tau_TestW.rda", tmp_path / "t.rda")
    shutil.copy(DATA / "region2.hrc", tmp_path / "region2.hrc")
    meta = read_rda(tmp_path / "t.rda", kind="micro")
    n = 12
    rng = np.random.default_rng(14)
    frame = pd.DataFrame({
        "Year": rng.choice([" 1", " 2"], n), "IndustryCode": rng.choice(
            ["11111", "11112", "11121", "22211"], n),
        "Size": rng.choice([" 1", " 2", " 3"], n), "Region": rng.choice([" 1", " 4", "99"], n),
        "Wgt": rng.choice([1.0, 2.5], n), "Request": rng.choice(["1", "2", " "], n)})
    for k in range(1, 9):
        frame[f"Var{k}"] = rng.integers(0, 500, n).astype(float)
    write_asc(frame, meta, tmp_path / "t.asc")
    at, (s, _lo, up, _why) = argus_microdata(tmp_path / "t.rda", tmp_path / "t.asc",
                                           ["IndustryCode", "Region"], "Var2",
                                           rules="NK(3,75)|FREQ(3,10)|WGT(1)")
    tot = at.cells[(at.cells["IndustryCode"] == "Total") & (at.cells["Region"] == "Total")]
    assert tot["value"].iloc[0] == pytest.approx((frame["Var2"] * frame["Wgt"]).sum())
    assert tot["freq"].iloc[0] == n
    assert {"111", "1111", "11111", "11112", "22211"} <= set(at.cells["IndustryCode"])
    assert "99" in set(at.cells["Region"])
    # Var2 has 2 decimals: MinLPL 0.01
    assert (up[s] >= 0.01).all()


# ------------------------------------------------------------------ malformed input


def test_code_not_in_the_hrc_names_the_line(job):
    frame = records(15)
    frame.loc[7, "Region"] = " 7"
    rda, asc = job(frame)
    with pytest.raises(FormatError, match=r"m\.asc, line 8: code ' 7' of variable 'Region' "
                                          r"is not in the hierarchy file"):
        argus_microdata(rda, asc, ["Region"], "Sales")


def test_subtotal_code_in_a_record(job):
    frame = records(16)
    frame.loc[2, "Region"] = " N"
    rda, asc = job(frame)
    with pytest.raises(FormatError, match=r"line 3: code ' N'"):
        argus_microdata(rda, asc, ["Region"], "Sales")


def test_response_not_numeric(job):
    rda, asc = job(records(17))
    with pytest.raises(ValueError, match="not numeric"):
        argus_microdata(rda, asc, ["Region"], "Wgt")
    with pytest.raises(ValueError, match="not numeric"):
        argus_microdata(rda, asc, ["Region"], "Size")
    with pytest.raises(ValueError, match="not explanatory"):
        argus_microdata(rda, asc, ["Sales"], None)
    with pytest.raises(KeyError):
        argus_microdata(rda, asc, ["Region"], "Turnover")


def test_missing_response_names_the_line(job):
    frame = records(18)
    frame["Sales"] = frame["Sales"].astype(float)
    frame.loc[4, "Sales"] = np.nan
    rda, asc = job(frame)
    with pytest.raises(FormatError, match=r"line 5: response Sales has a missing value"):
        argus_microdata(rda, asc, ["Region"], "Sales")


def test_rules_the_data_cannot_support(job, tmp_path):
    rda, asc = job(records(19))
    with pytest.raises(ValueError, match="cannot be combined"):
        argus_microdata(rda, asc, ["Region"], "Sales", rules="NK(0,0)|NK(0,0)|NK(1,60)|WGT(1)")
    with pytest.raises(ValueError, match="needs a response"):
        argus_microdata(rda, asc, ["Region"], None, rules="NK(3,75)")
    plain = "\n".join(RDA.splitlines()[:11]) + "\n"         # no weight, holding, request
    (tmp_path / "p.rda").write_text(plain)
    write_asc(records(19), read_rda(plain, kind="micro"), tmp_path / "p.asc")
    for rule, msg in (("NK(3,75)|WGT(1)", "no <WEIGHT>"),
                      ("NK(0,0)|NK(0,0)|NK(1,60)", "need a <HOLDING>"),
                      ("REQ(30,40,0,5)", "needs a <REQUEST>")):
        with pytest.raises(ValueError, match=msg):
            argus_microdata(tmp_path / "p.rda", tmp_path / "p.asc", ["Region"], "Sales",
                            rules=rule)


def test_negative_cell_is_refused(job):
    frame = records(20)
    frame.loc[frame["Region"] == " 2", "Sales"] = -5.0
    rda, asc = job(frame)
    with pytest.raises(ValueError, match="nonnegative"):
        argus_microdata(rda, asc, ["Region"], "Sales")


# ------------------------------------------------------------------ batch jobs on microdata


@pytest.mark.parametrize("rule", ["NK(2,75)|FREQ(3,10)", "NK(2,75)|FREQ(3,10)|WGT(1)",
                                  "P(15,1)|P(0,0)|NK(2,60)"])
def test_a_microdata_batch_job_runs_end_to_end(job, tmp_path, rule):
    """<OPENMICRODATA> ... <READMICRODATA> <SUPPRESS> MOD <WRITETABLE>: the table is the
    one argus_microdata tabulates, its primary cells the ones the rules find on the
    contributions, the pattern protects each, and the written file reads back."""
    import riskengine as rk
    from riskengine._formats.arb import read_arb
    frame = records(21, n=120)
    rda, asc = job(frame)
    arb = tmp_path / "m.arb"
    arb.write_text('<OPENMICRODATA> "m.asc"\n<OPENMETADATA> "m.rda"\n'
                   '<SPECIFYTABLE> "Region""Size"|"Sales"||\n'
                   f"<SAFETYRULE> {rule}\n<READMICRODATA>\n<SUPPRESS> MOD(1)\n"
                   '<WRITETABLE> (1, 3, AS+, "m_out.csv")\n<WRITETABLE> (1, 6, , "m.jj")\n')
    rules = read_arb(arb).commands[3].args["rules"]
    res = rk.run_batch(arb)
    at, sens = argus_microdata(rda, asc, ["Region", "Size"], "Sales", rules=rules)
    np.testing.assert_array_equal(res.tables[0].vector("value"), at.vector("value"))
    rel, st = res.releases[1]
    np.testing.assert_array_equal(st == "primary", sens[0])
    assert rel.hidden[sens[0]].all()
    assert res.audits[1].attrs["n_under_protected"] == 0
    back, _ = rk.read_pattern(res.tables[0], tmp_path / "m_out.csv")
    np.testing.assert_array_equal(back.hidden, rel.hidden)
    from riskengine._batch import audit_jj
    aj = audit_jj(tmp_path / "m.jj")
    assert aj.attrs["n_under_protected"] == 0
    assert aj.attrs["n_suppressed"] == int(rel.hidden.sum())


def test_linked_tables_of_one_microdata_are_protected_together(job, tmp_path):
    """<SUPPRESS> MOD(0): two tables of the same records (Region x Size, Region x Label)
    share the Region cells; protected in one system, the joint audit finds every primary
    cell of both protected, and each table's file reads back as its part of the pattern."""
    import riskengine as rk
    frame = records(5, n=150)
    frame["Label"] = np.random.default_rng(3).choice(["a", "b", "c"], len(frame))
    job(frame)
    arb = tmp_path / "l.arb"
    arb.write_text('<OPENMICRODATA> "m.asc"\n<OPENMETADATA> "m.rda"\n'
                   '<SPECIFYTABLE> "Region""Size"|"Sales"||\n<SAFETYRULE> NK(2,70)|FREQ(3,10)\n'
                   '<SPECIFYTABLE> "Region""Label"|"Sales"||\n<SAFETYRULE> NK(2,70)|FREQ(3,10)\n'
                   '<READMICRODATA>\n<SUPPRESS> MOD(0)\n'
                   '<WRITETABLE> (1, 3, AS+, "a.csv")\n<WRITETABLE> (2, 3, AS+, "b.csv")\n')
    res = rk.run_batch(arb)
    assert any("protected together" in n for n in res.notes)
    joint = res.audits[0]
    assert joint.attrs["n_under_protected"] == 0 and joint.attrs["n_exact"] == 0
    for k, f in ((1, "a.csv"), (2, "b.csv")):
        rel, _ = res.releases[k]
        back, _ = rk.read_pattern(res.tables[k - 1], tmp_path / f)
        np.testing.assert_array_equal(back.hidden, rel.hidden)
    # the Region totals are one cell in both tables: the same status in both files
    t1, t2 = res.tables
    for code in ["Total", "N", "S", " 1", " 2", " 3", "11", "99"]:
        h1 = res.releases[1][0].hidden[t1.system.find(Region=code, Size="Total")]
        h2 = res.releases[2][0].hidden[t2.system.find(Region=code, Label="Total")]
        assert h1 == h2, code
