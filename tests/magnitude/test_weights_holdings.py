"""Weights, holdings, negative contributions, zero/request rules and hierarchical tables in
rk.contributions + rk.sensitivity.assess, against plain-Python loops over the records
written from tau-Argus's definitions (libtauargus CDataCell::ComputeWeightedScoreCell,
GetPQCell, CTable::SetProtectionLevelCell, UnsafeCellMinRec, UnsafeCellPeep)."""

from collections import defaultdict

import numpy as np
import pytest

import riskengine as rk
from riskengine.magnitude.sensitivity import (
    PQ,
    Dominance,
    Frequency,
    Holdings,
    Max,
    PPercent,
    Request,
    Zero,
    assess,
    cell_vector,
)


# --- the reference: loops over records ---------------------------------------------------
def cells_of(row, dims, blocks):
    """The system cells (block keep, labels) a record enters."""
    return [(keep, tuple(row[d] for d in keep)) for keep in blocks]


def group(rows, dims, blocks, key=None, absolute=True):
    """{cell: [(|sum x| of the group, weight)]}: one entry per row, or per key group."""
    out = defaultdict(lambda: defaultdict(lambda: [0.0, None]))
    for i, r in enumerate(rows):
        g = i if key is None else r[key]
        for c in cells_of(r, dims, blocks):
            e = out[c][g]
            e[0] += r["v"]
            e[1] = r.get("w", 1.0)
    return {c: [(abs(x) if absolute else x, w) for x, w in d.values()] for c, d in out.items()}


def weighted_top(entries, n_units):
    """tau-Argus's weighted top-n: sorted by value, a record of weight w is w units, the
    last one in part."""
    e = sorted(entries, key=lambda t: -t[0])
    got, s = 0.0, 0.0
    for x, w in e:
        take = min(w, n_units - got)
        if take <= 0:
            break
        s += x * take
        got += take
    return s


def ref_dominance(entries, n, k):
    T = sum(x * w for x, w in entries)
    top = weighted_top(entries, n)
    S = top - k / (100 - k) * (T - top)
    P = 100.0 / k * top - T          # CTable::SetProtectionLevelCell
    return S, P


def ref_pq(entries, p, q, n):
    T = sum(x * w for x, w in entries)
    e = sorted(entries, key=lambda t: -t[0])
    x1 = e[0][0] if e else 0.0
    tail = T - weighted_top(entries, n + 1)
    S = x1 - q / p * tail
    P = p / q * x1 - tail            # p/q x1 + top_(n+1) - T
    return S, P


def random_rows(rng, n, *, weights=False, negative=False, holdings=False, ndim=2):
    dims = ["a", "b", "c"][:ndim]
    rows = []
    for i in range(n):
        r = {d: str(rng.choice(list("pqr")[: 2 + j])) for j, d in enumerate(dims)}
        v = float(np.round(rng.exponential(20.0) ** rng.uniform(0.6, 1.6), 3))
        if negative and rng.random() < 0.3:
            v = -v
        r["v"] = v
        r["w"] = float(np.round(rng.uniform(1.0, 5.0), 2)) if weights else 1.0
        r["h"] = f"h{rng.integers(0, max(2, n // 3))}" if holdings else f"h{i}"
        rows.append(r)
    return dims, rows


def as_cols(rows):
    return {k: [r[k] for r in rows] for k in rows[0]}


def system_cells(c):
    """(keep, labels) of every system cell, in system order."""
    out = []
    for b in c.system.blocks:
        for idx in np.ndindex(*b.shape):
            out.append((b.keep, tuple(c.table.coords[d][i] if c.table is not None else
                                      c.system.coords[d][i] for d, i in zip(b.keep, idx))))
    return out


def check(c, rule_obj, ref_fn, grouped, atol=1e-7):
    ds = assess(c, rule_obj)
    S = cell_vector(ds, "S", c.system)
    P = cell_vector(ds, "protection", c.system)
    for i, cell in enumerate(system_cells(c)):
        entries = grouped.get(cell, [])
        if not entries:
            continue
        s_ref, p_ref = ref_fn(entries)
        scale = max(1.0, sum(abs(x) * w for x, w in entries))
        assert S[i] == pytest.approx(s_ref, abs=atol * scale), (cell, entries)
        if s_ref > atol * scale:
            assert P[i] == pytest.approx(p_ref, abs=atol * scale), (cell, entries)
    return ds


# --- weights --------------------------------------------------------------------------------
@pytest.mark.parametrize("rule, ref", [
    (Dominance(1, 60), lambda e: ref_dominance(e, 1, 60)),
    (Dominance(2, 80), lambda e: ref_dominance(e, 2, 80)),
    (Dominance(3, 75), lambda e: ref_dominance(e, 3, 75)),
    (PPercent(10), lambda e: ref_pq(e, 10, 100, 1)),
    (PQ(15, 60), lambda e: ref_pq(e, 15, 60, 1)),
    (PQ(20, 80, 2), lambda e: ref_pq(e, 20, 80, 2)),
])
def test_weighted_rules_equal_the_unit_definition(rng, rule, ref):
    for _ in range(25):
        dims, rows = random_rows(rng, int(rng.integers(1, 25)), weights=True)
        c = rk.contributions(as_cols(rows), dims=dims, value="v", weight="w")
        blocks = [b.keep for b in c.system.blocks]
        check(c, rule, ref, group(rows, dims, blocks))
        # cell values are the weighted sums
        tot = defaultdict(float)
        for r in rows:
            for cell in cells_of(r, dims, blocks):
                tot[cell] += r["w"] * r["v"]
        vals = c.cell_values()
        for i, cell in enumerate(system_cells(c)):
            assert vals[i] == pytest.approx(tot.get(cell, 0.0))


def test_weights_at_realistic_size(rng):
    dims, rows = random_rows(rng, 3000, weights=True, ndim=3)
    c = rk.contributions(as_cols(rows), dims=dims, value="v", weight="w")
    blocks = [b.keep for b in c.system.blocks]
    g = group(rows, dims, blocks)
    check(c, Dominance(2, 85), lambda e: ref_dominance(e, 2, 85), g)
    check(c, PQ(10, 50, 1), lambda e: ref_pq(e, 10, 50, 1), g)


def test_unit_weights_reproduce_unweighted(rng):
    for _ in range(20):
        dims, rows = random_rows(rng, int(rng.integers(1, 40)))
        cols = as_cols(rows)
        a = rk.contributions(cols, dims=dims, value="v")
        b = rk.contributions(cols, dims=dims, value="v", weight="w")   # all 1
        for rule in (Dominance(2, 70), PQ(10, 40), Max(Frequency(3), PPercent(15))):
            da, db = assess(a, rule), assess(b, rule)
            for var in da.data_vars:
                np.testing.assert_allclose(da[var].values.astype(float),
                                           db[var].values.astype(float), atol=1e-9)


def test_weighted_example_by_hand():
    # x = 50 (w 1.5), 30 (w 4): top-2 units = 1.5*50 + 0.5*30 = 90, T = 195
    c = rk.contributions({"r": ["a", "a"], "v": [50.0, 30.0], "w": [1.5, 4.0]},
                         dims=["r"], value="v", weight="w")
    ds = assess(c, Dominance(2, 40))
    # S = 90 - 40/60 * 105 = 20 > 0; P = 100/40 * 90 - 195 = 30
    assert float(ds.S[0]) == pytest.approx(20.0)
    assert float(ds.protection[0]) == pytest.approx(30.0)


def test_weighted_frequency_counts_weights_or_contributors():
    data = {"r": ["a", "a", "b"], "v": [5.0, 6.0, 7.0], "w": [1.5, 1.0, 4.0]}
    c = rk.contributions(data, dims=["r"], value="v", weight="w")
    # unweighted: a has 2 contributors, b 1 -> both < 3
    assert assess(c, Frequency(3)).sensitive.values.tolist() == [True, True]
    # weighted (tau-Argus with WGT: GetWeight() < SafeMinRec): a 2.5 < 3, b 4 >= 3
    assert assess(c, Frequency(3, weighted=True)).sensitive.values.tolist() == [True, False]
    with pytest.raises(ValueError, match="weight="):
        assess(rk.contributions(data, dims=["r"], value="v"), Frequency(3, weighted=True))


def test_weight_errors():
    ok = {"r": ["a", "b"], "v": [1.0, 2.0], "w": [1.0, 0.0], "h": [1, 2], "id": [1, 1]}
    with pytest.raises(ValueError, match="finite and > 0"):
        rk.contributions(ok, dims=["r"], value="v", weight="w")
    with pytest.raises(ValueError, match="cannot be combined"):
        rk.contributions(ok, dims=["r"], value="v", weight="v", holding="h")
    with pytest.raises(ValueError, match="share one weight"):
        rk.contributions(dict(ok, w=[1.0, 2.0]), dims=["r"], value="v", weight="w",
                         respondent="id")


# --- holdings ------------------------------------------------------------------------------
@pytest.mark.parametrize("rule, ref", [
    (Dominance(1, 50), lambda e: ref_dominance(e, 1, 50)),
    (Dominance(2, 80), lambda e: ref_dominance(e, 2, 80)),
    (PPercent(20), lambda e: ref_pq(e, 20, 100, 1)),
])
def test_holding_rules_on_holding_sums(rng, rule, ref):
    for _ in range(25):
        dims, rows = random_rows(rng, int(rng.integers(1, 30)), holdings=True)
        c = rk.contributions(as_cols(rows), dims=dims, value="v", holding="h")
        blocks = [b.keep for b in c.system.blocks]
        check(c, Holdings(rule), ref, group(rows, dims, blocks, key="h"))
        check(c, rule, ref, group(rows, dims, blocks))       # individual level kept


def test_holding_frequency_counts_holdings(rng):
    for _ in range(20):
        dims, rows = random_rows(rng, int(rng.integers(1, 30)), holdings=True)
        c = rk.contributions(as_cols(rows), dims=dims, value="v", holding="h")
        blocks = [b.keep for b in c.system.blocks]
        nh, nr = defaultdict(set), defaultdict(int)
        for r in rows:
            for cell in cells_of(r, dims, blocks):
                nh[cell].add(r["h"])
                nr[cell] += 1
        sh = cell_vector(assess(c, Holdings(Frequency(3))), "sensitive", c.system)
        si = cell_vector(assess(c, Frequency(3)), "sensitive", c.system)
        for i, cell in enumerate(system_cells(c)):
            assert sh[i] == (0 < len(nh[cell]) < 3)
            assert si[i] == (0 < nr[cell] < 3)


def test_one_record_per_holding_reproduces_no_holdings(rng):
    for _ in range(15):
        dims, rows = random_rows(rng, int(rng.integers(1, 40)))      # h = "h<i>"
        cols = as_cols(rows)
        a = rk.contributions(cols, dims=dims, value="v")
        b = rk.contributions(cols, dims=dims, value="v", holding="h")
        for rule in (Dominance(2, 70), PQ(10, 40), Frequency(3)):
            np.testing.assert_allclose(assess(a, rule).S.values,
                                       assess(b, Holdings(rule)).S.values, atol=1e-9)
            np.testing.assert_allclose(assess(a, rule).protection.values,
                                       assess(b, Holdings(rule)).protection.values, atol=1e-9)


def test_holdings_at_realistic_size(rng):
    dims, rows = random_rows(rng, 4000, holdings=True, ndim=3)
    c = rk.contributions(as_cols(rows), dims=dims, value="v", holding="h")
    blocks = [b.keep for b in c.system.blocks]
    check(c, Holdings(Dominance(1, 40)), lambda e: ref_dominance(e, 1, 40),
          group(rows, dims, blocks, key="h"))


def test_respondents_within_holdings():
    data = {"r": ["a", "a", "a", "b"], "v": [10.0, 5.0, 20.0, 4.0],
            "id": ["x", "x", "y", "z"], "h": ["H1", "H1", "H1", "H2"]}
    c = rk.contributions(data, dims=["r"], value="v", respondent="id", holding="h")
    assert c.cell(0).tolist() == [20.0, 15.0] and c.level == "respondent"
    assert c.holdings.cell(0).tolist() == [35.0] and c.holdings.total(()).tolist() == [35.0, 4.0]
    with pytest.raises(ValueError, match="share one holding"):
        rk.contributions(dict(data, h=["H1", "H2", "H1", "H2"]), dims=["r"], value="v",
                         respondent="id", holding="h")
    with pytest.raises(ValueError, match="holding="):
        assess(rk.contributions(data, dims=["r"], value="v"), Holdings(Dominance(1, 50)))


# --- negative contributions -----------------------------------------------------------------
def test_negative_refused_by_default_with_the_way_out():
    with pytest.raises(ValueError, match='negative="absolute"'):
        rk.contributions({"r": ["a"], "v": [-1.0]}, dims=["r"], value="v")
    with pytest.raises(ValueError, match="negative must be one of"):
        rk.contributions({"r": ["a"], "v": [1.0]}, dims=["r"], value="v", negative="abs")


@pytest.mark.parametrize("rule, ref", [
    (Dominance(2, 75), lambda e: ref_dominance(e, 2, 75)),
    (PQ(10, 50), lambda e: ref_pq(e, 10, 50, 1)),
])
def test_negative_absolute(rng, rule, ref):
    for _ in range(25):
        dims, rows = random_rows(rng, int(rng.integers(1, 30)), negative=True, holdings=True)
        c = rk.contributions(as_cols(rows), dims=dims, value="v", negative="absolute",
                             holding="h")
        blocks = [b.keep for b in c.system.blocks]
        check(c, rule, ref, group(rows, dims, blocks))
        check(c, Holdings(rule), ref, group(rows, dims, blocks, key="h"))
        signed = defaultdict(float)
        for r in rows:
            for cell in cells_of(r, dims, blocks):
                signed[cell] += r["v"]
        vals = c.cell_values()
        for i, cell in enumerate(system_cells(c)):
            assert vals[i] == pytest.approx(signed.get(cell, 0.0), abs=1e-9)


def test_negative_with_weights_and_table():
    data = {"r": ["a", "a", "b"], "v": [-10.0, 4.0, 3.0], "w": [2.0, 1.0, 1.0]}
    c = rk.contributions(data, dims=["r"], value="v", weight="w", negative="absolute")
    assert c.cell_values().tolist() == [-16.0, 3.0, -13.0]
    assert c.table is None and c.signed
    ds = assess(c, Dominance(1, 80))        # a: top unit 10 of |T| 24 -> safe
    assert ds.sensitive.values.tolist() == [False, True, False]
    c2 = rk.contributions({"r": ["a", "a"], "v": [-1.0, 4.0]}, dims=["r"], value="v",
                          negative="absolute")
    assert c2.table.values.tolist() == [3.0] and c2.cell(0).tolist() == [4.0, 1.0]


# --- zero and request rules ---------------------------------------------------------------
def test_zero_rule():
    data = {"r": ["a", "a", "b", "c"], "v": [0.0, 0.0, 5.0, 0.0]}
    c = rk.contributions(data, dims=["r"], value="v", categories={"r": list("abcd")})
    ds = assess(c, Zero(3))
    assert ds.sensitive.values.tolist() == [True, False, True, False]
    assert ds.protection.values.tolist() == [3, 0, 3, 0]
    assert ds.protection_lower.values.tolist() == [0, 0, 0, 0]
    neg = rk.contributions({"r": ["a", "a"], "v": [2.5, -2.5]}, dims=["r"], value="v",
                           negative="absolute")
    assert bool(assess(neg, Zero(1)).sensitive[0])


def ref_request(entries, req, p1, p2, mf):
    T = sum(entries)
    for x, r in zip(entries, req):
        share = p1 if r == 1 else p2 if r == 2 else 0
        if share > 0 and x > share / 100 * T:
            return True
    return mf > 0 and any(r > 0 for r in req) and len(entries) < mf


def test_request_rule(rng):
    for _ in range(30):
        n = int(rng.integers(1, 30))
        data = {"r": rng.choice(["a", "b", "c"], n).tolist(),
                "v": np.round(rng.exponential(10, n), 2).tolist(),
                "q": rng.choice([0, 0, 0, 1, 2], n).tolist()}
        c = rk.contributions(data, dims=["r"], value="v", request="q")
        rule = Request(25, 40, 4, 10)
        ds = assess(c, rule)
        for i, lab in enumerate(c.table.coords["r"]):
            idx = [j for j in range(n) if data["r"][j] == lab]
            want = ref_request([data["v"][j] for j in idx], [data["q"][j] for j in idx],
                               25, 40, 4)
            assert bool(ds.sensitive.values[i]) == want
            if want:
                val = sum(data["v"][j] for j in idx)
                assert float(ds.protection.values[i]) == pytest.approx(max(val * 0.1, 1))
    with pytest.raises(ValueError, match="request="):
        assess(rk.contributions({"r": ["a"], "v": [1.0]}, dims=["r"], value="v"),
               Request(10))
    with pytest.raises(ValueError, match="request codes"):
        rk.contributions({"r": ["a"], "v": [1.0], "q": [3]}, dims=["r"], value="v",
                         request="q")


# --- hierarchical tables --------------------------------------------------------------------
def test_hierarchical_contributions_are_unions_of_children(rng):
    geo = rk.Hierarchy({"North": ["N1", "N2"], "South": ["S1", "S2"]}, total="Total")
    n = 400
    data = {"geo": rng.choice(["N1", "N2", "S1", "S2"], n).tolist(),
            "sex": rng.choice(["F", "M"], n).tolist(),
            "v": np.round(rng.exponential(10, n), 2).tolist(),
            "id": rng.integers(0, 60, n).tolist()}
    c = rk.contributions(data, dims=["geo", "sex"], value="v", respondent="id",
                         hierarchies={"geo": geo})
    assert c.hierarchical and c.n_cells == c.system.n_var
    kids = {"North": {"N1", "N2"}, "South": {"S1", "S2"}, "Total": {"N1", "N2", "S1", "S2"}}
    rule = Max(Dominance(1, 40), Frequency(5))
    ds = assess(c, rule)
    assert ds.S.dims == ("cell",) and ds.S.size == c.system.n_var
    cells = c.system.cells
    for j in range(c.system.n_var):
        g, s = cells["geo"].iloc[j], cells["sex"].iloc[j]
        leaves = kids.get(g, {g})
        sexes = {"F", "M"} if s not in ("F", "M") else {s}
        per = defaultdict(float)
        for i in range(n):
            if data["geo"][i] in leaves and data["sex"][i] in sexes:
                per[data["id"][i]] += data["v"][i]
        want = sorted(per.values(), reverse=True)
        assert c.cell(j).tolist() == pytest.approx(want)
        assert float(ds.S.values[j]) == pytest.approx(rule.sensitivity(want), abs=1e-9)
    j = c.system.find(geo="North")
    assert float(ds.protection.values[j]) == pytest.approx(
        rule.protection(c.cell(j)) if rule.sensitivity(c.cell(j)) > 0 else 0.0)
    # the table carries the hierarchy; its cells are the system's
    assert c.table.hierarchies and np.allclose(c.cell_values(),
                                               c.system.vector(c.table.values))
