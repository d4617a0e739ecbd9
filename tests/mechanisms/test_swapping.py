"""Targeted record swapping (rk.TargetedSwapping) against its reference and its rules.

The reference (tests/reference/trs_reference.py) is plain loops over dicts.  With the
same random numbers (``draws="keys"``) the output must be identical record for record;
with its own draws (``draws="sequential"``: weighted draws one household at a time) the
distribution of the outcome on a tiny population must agree (chi-square homogeneity).

Speed (``-m slow`` prints it): 1e5 persons (28 571 households, 3 levels, 3 risk
variables) in about 0.15 s warm on the 2-core machine, 1e6 persons in about 1.5 s.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

import riskengine as rk
from tests.reference.trs_reference import must_levels, reference_swap

H = ["region", "district", "area"]


def population(seed: int, n_hh: int = 40, n_risk: int = 2, shuffle: bool = True):
    """Households of 1-6 persons in 2 regions x 2 districts x 2 areas (nested codes)."""
    rng = np.random.default_rng(seed)
    rows = []
    for h in range(n_hh):
        size = int(rng.integers(1, 7))
        reg = int(rng.integers(1, 3))
        dis = reg * 10 + int(rng.integers(1, 3))
        are = dis * 10 + int(rng.integers(1, 3))
        ten = int(rng.integers(0, 3))
        for _ in range(size):
            r = {"hid": 100 + 7 * h, "region": reg, "district": dis, "area": are,
                 "hsize": size, "age": int(rng.integers(0, 4)), "sex": int(rng.integers(0, 2)),
                 "one": 1, "tenure": ten}
            if n_risk > 2:
                r["nat"] = int(rng.integers(0, 2))
            rows.append(r)
    df = pd.DataFrame(rows)
    if shuffle:
        df = df.sample(frac=1, random_state=seed).reset_index(drop=True)
    return df


def census(n_persons: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    nh = int(n_persons / 3.5)
    size = rng.integers(1, 7, nh)
    region = rng.integers(1, 5, nh)
    district = region * 100 + rng.integers(0, 20, nh)
    area = district * 100 + rng.integers(0, 25, nh)
    hid = np.repeat(np.arange(nh), size)
    n = hid.size
    return pd.DataFrame({"hid": hid, "region": region[hid], "district": district[hid],
                         "area": area[hid], "hsize": size[hid], "age": rng.integers(0, 18, n),
                         "sex": rng.integers(0, 2, n),
                         "nat": rng.choice(5, n, p=[.9, .04, .03, .02, .01]),
                         "tenure": rng.integers(0, 4, nh)[hid]})


def swaps_of(out):
    a = out.attrs["swapped"]
    return list(zip(a["household"], a["donor"], [H.index(x) for x in a["level"]],
                    a["profile"]))


def fails_of(out):
    a = out.attrs["unswapped"]
    return list(zip(a["household"], [H.index(x) for x in a["level"]]))


def household_geo(df):
    return df.groupby("hid")[H].first()


CASES = [(0.1, 2), (0.3, 1), (0.05, 3), (0.5, 2)]


# --- the reference, draw for draw ------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_identical_to_reference_with_same_draws(seed):
    n_hh = int(np.random.default_rng(seed).integers(3, 60))
    df = population(seed, n_hh=n_hh, n_risk=2 + seed % 2)
    risk_vars = ["age", "sex"] + (["nat"] if seed % 2 else [])
    sim = [["hsize"], ["one"]] if seed % 3 else [["hsize", "tenure"], ["tenure"]]
    for swaprate, k in CASES:
        trs = rk.TargetedSwapping(H, risk_vars, sim, swaprate, k, carry_along=["tenure"])
        out = trs.protect(df, np.random.default_rng(seed))
        new, swaps, fails = reference_swap(df.to_dict("records"), H, risk_vars, sim,
                                           swaprate, k, np.random.default_rng(seed),
                                           carry_along=["tenure"])
        assert swaps_of(out) == swaps
        assert fails_of(out) == fails
        pd.testing.assert_frame_equal(out, pd.DataFrame(new))


@pytest.mark.parametrize("seed", range(10))
def test_must_swap_levels_agree_exactly(seed):
    df = population(seed, n_hh=50, n_risk=3)
    for k in (1, 2, 3, 5):
        trs = rk.TargetedSwapping(H, ["age", "sex", "nat"], [["hsize"]], 0.1, k)
        ms = trs.must_swap(df)
        ids, risk, level = must_levels(df.to_dict("records"), H, ["age", "sex", "nat"],
                                       "hid", 1.0 / k)
        assert ms["hid"].tolist() == ids
        assert ms["level"].tolist() == [H[level[h]] if level[h] < 3 else None for h in ids]
        for j, c in enumerate(H):
            np.testing.assert_array_equal(ms[f"risk_{c}"], [risk[h][j] for h in ids])


def test_outcome_distribution_agrees_with_sequential_reference():
    """Tiny population (6 households, 3 levels): the frequency of every outcome (the set of
    swaps and failures) over 2500 seeds, riskengine vs the reference drawing one household
    at a time; chi-square homogeneity (outcomes seen < 5 times pooled)."""
    df = population(3, n_hh=6)
    risk_vars = ["age", "sex"]
    sim = [["hsize"], ["one"]]
    n = 2500
    fast, ref = Counter(), Counter()
    trs = rk.TargetedSwapping(H, risk_vars, sim, 0.4, 2)
    recs = df.to_dict("records")
    for seed in range(n):
        out = trs.protect(df, np.random.default_rng(seed))
        fast[(tuple(sorted(swaps_of(out))), tuple(sorted(fails_of(out))))] += 1
        _, swaps, fails = reference_swap(recs, H, risk_vars, sim, 0.4, 2,
                                         np.random.default_rng(10 ** 6 + seed),
                                         draws="sequential")
        ref[(tuple(sorted(swaps)), tuple(sorted(fails)))] += 1
    keys = sorted(set(fast) | set(ref))
    assert len(keys) > 5                      # the test has something to compare
    big = [k for k in keys if fast[k] + ref[k] >= 10]
    small = [k for k in keys if k not in big]
    table = [[fast[k] for k in big] + [sum(fast[k] for k in small)],
             [ref[k] for k in big] + [sum(ref[k] for k in small)]]
    if table[0][-1] + table[1][-1] == 0:
        table = [row[:-1] for row in table]
    p = chi2_contingency(np.array(table))[1]
    assert p > 1e-3, (p, table)


# --- the rules -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(15))
def test_risky_households_cross_their_level_or_are_logged(seed):
    df = population(seed, n_hh=60, n_risk=3)
    trs = rk.TargetedSwapping(H, ["age", "sex", "nat"], [["hsize"], ["one"]], 0.1, 3)
    ms = trs.must_swap(df).set_index("hid")
    out = trs.protect(df, np.random.default_rng(seed))
    before, after = household_geo(df), household_geo(out)
    logged = dict(fails_of(out))
    for h, lev in ms["level"].items():
        if lev is None:
            continue
        j = H.index(lev)
        moved = tuple(before.loc[h, H[:j + 1]]) != tuple(after.loc[h, H[:j + 1]])
        assert moved or logged.get(h) == j, (h, lev)
        if h in logged:
            assert logged[h] == j
    # every swap crosses the area of its level
    for s, d, j, p in swaps_of(out):
        assert tuple(before.loc[s, H[:j + 1]]) != tuple(before.loc[d, H[:j + 1]])
        assert ms.loc[s, "level"] in (H[j], None)


def test_failures_are_logged_when_no_similar_donor_exists():
    # one household of size 6, unique: no donor of the same size anywhere else
    df = population(5, n_hh=30)
    df = pd.concat([df, pd.DataFrame([{"hid": 9999, "region": 1, "district": 11,
                                       "area": 111, "hsize": 6, "age": 9 + i, "sex": 0,
                                       "one": 1, "tenure": 0} for i in range(6)])],
                   ignore_index=True)
    df.loc[(df.hsize == 6) & (df.hid != 9999), "hsize"] = 5
    trs = rk.TargetedSwapping(H, ["age"], [["hsize"]], 0.0, 2)
    out = trs.protect(df, np.random.default_rng(0))
    assert (9999, 0) in fails_of(out)
    un = pd.DataFrame(out.attrs["unswapped"])
    assert "'region' area" in un.loc[un.household == 9999, "reason"].iloc[0]
    # with a fallback profile it finds one, and the log says which profile
    trs2 = rk.TargetedSwapping(H, ["age"], [["hsize"], ["one"]], 0.0, 2)
    out2 = trs2.protect(df, np.random.default_rng(0))
    rec = [sw for sw in swaps_of(out2) if sw[0] == 9999]
    assert rec and rec[0][3] == 1


@pytest.mark.parametrize("seed", range(10))
def test_donors_match_the_profile_they_used(seed):
    df = population(seed, n_hh=50)
    sim = [["hsize", "tenure"], ["hsize"], ["one"]]
    trs = rk.TargetedSwapping(H, ["age", "sex"], sim, 0.3, 2)
    out = trs.protect(df, np.random.default_rng(seed))
    first = df.groupby("hid").first()
    for s, d, j, p in swaps_of(out):
        for c in sim[p]:
            assert first.loc[s, c] == first.loc[d, c]


@pytest.mark.parametrize("seed", range(10))
def test_invariants(seed):
    """Households per area at every level stay (a swap exchanges two households'
    geography); persons per area stay too when household size is in every profile;
    nothing but the hierarchy and carry-along columns changes; the two households of a
    swap exchange their geography exactly."""
    df = population(seed, n_hh=60, n_risk=3)
    trs = rk.TargetedSwapping(H, ["age", "sex", "nat"], [["hsize"]], 0.2, 3,
                              carry_along=["tenure"])
    out = trs.protect(df, np.random.default_rng(seed))
    b, a = df.groupby("hid").first(), out.groupby("hid").first()
    for j in range(3):
        assert Counter(map(tuple, b[H[:j + 1]].to_numpy())) == \
            Counter(map(tuple, a[H[:j + 1]].to_numpy()))
        assert (df.groupby(H[:j + 1]).size() == out.groupby(H[:j + 1]).size()).all()
    assert (out.groupby("hid")[H + ["tenure"]].nunique() == 1).all().all()
    rest = [c for c in df.columns if c not in H + ["tenure"]]
    pd.testing.assert_frame_equal(out[rest], df[rest])
    swapped = set()
    for s, d, j, p in swaps_of(out):
        assert list(a.loc[s, H + ["tenure"]]) == list(b.loc[d, H + ["tenure"]])
        assert list(a.loc[d, H + ["tenure"]]) == list(b.loc[s, H + ["tenure"]])
        assert not ({s, d} & swapped)        # each household at most once
        swapped |= {s, d}
    unmoved = b.index.difference(list(swapped))
    pd.testing.assert_frame_equal(a.loc[unmoved, H], b.loc[unmoved, H])
    assert out.attrs["swap_rate"] == pytest.approx(len(swapped) / len(b))


def test_swap_rate_in_expectation():
    """k = 1 (nobody must swap), any household a donor: the number of swaps is the
    randomly rounded swaprate * households / 2 = 20.05 here (the C++'s coin flip would
    give 20.5 on average), each lowest area's share n_a * 20.05 / 401 on average.
    Tolerance: 4 standard errors of the mean over 600 seeds (Bernoulli parts: sd <= 0.5)."""
    df = population(11, n_hh=401, shuffle=False)
    trs = rk.TargetedSwapping(H, ["age"], [["one"]], 0.1, 1)
    n, nh = 600, 401
    pairs = np.empty(n)
    areas = household_geo(df)["area"]
    n_a = areas.value_counts().sort_index()
    share = pd.DataFrame(0.0, index=range(n), columns=n_a.index)
    for seed in range(n):
        out = trs.protect(df, np.random.default_rng(seed))
        sw = out.attrs["swapped"]
        pairs[seed] = len(sw["household"])
        assert set(sw["reason"]) <= {"swaprate"}
        share.loc[seed] = areas.loc[list(sw["household"])].value_counts().reindex(
            n_a.index, fill_value=0)
    target = 0.1 * nh / 2
    assert np.abs(pairs - target).max() < 1                    # floor or ceil
    assert abs(pairs.mean() - target) < 4 * 0.5 / np.sqrt(n)
    rate = 2 * pairs / nh
    assert abs(rate.mean() - 0.1) < 4 * 1.0 / nh / np.sqrt(n)
    expect = n_a * target / nh
    assert (np.abs(share.mean() - expect) < 4 * 0.5 / np.sqrt(n)).all()


def test_same_seed_same_output_and_input_untouched():
    df = population(2, n_hh=50)
    df.index = pd.Index(np.arange(len(df))[::-1] * 3, name="row")
    df.attrs["source"] = "test"
    keep = df.copy(deep=True)
    trs = rk.TargetedSwapping(H, ["age", "sex"], [["hsize"]], 0.3, 2, carry_along=["tenure"])
    a = trs.protect(df, np.random.default_rng(7))
    b = trs.protect(df, np.random.default_rng(7))
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["swapped"] == b.attrs["swapped"]
    pd.testing.assert_frame_equal(df, keep)
    assert df.attrs == {"source": "test"}
    assert a.attrs["source"] == "test"
    assert a.index.equals(df.index) and list(a.columns) == list(df.columns)
    c = trs.protect(df, np.random.default_rng(8))
    assert c.attrs["swapped"] != a.attrs["swapped"]


def test_dtypes_kept_and_labels_any_type():
    df = population(4, n_hh=40)
    df["region"] = df["region"].map({1: "north", 2: "south"}).astype("category")
    df["district"] = "d" + df["district"].astype(str)
    df["area"] = df["area"].astype("int32")
    df["tenure"] = df["tenure"].astype(float)
    df["hid"] = "h" + df["hid"].astype(str)
    trs = rk.TargetedSwapping(H, ["age", "sex"], [["hsize"]], 0.3, 2, carry_along=["tenure"])
    out = trs.protect(df, np.random.default_rng(0))
    assert (out.dtypes == df.dtypes).all()
    assert len(out.attrs["swapped"]["household"]) > 0
    assert all(isinstance(h, str) for h in out.attrs["swapped"]["household"])
    # the swapped logs survive pandas operations (attrs copied) and concatenation
    pd.concat([out.head(), out.tail()])
    with pytest.raises(TypeError, match="read-only"):
        out.attrs["swapped"]["household"] = ()


def test_user_risk_equals_counts():
    """sdcMicro's own test: the counts' risk given as risk columns, threshold 1/k, swaps
    as with k."""
    df = population(6, n_hh=50)
    ms = rk.TargetedSwapping(H, ["age", "sex"], [["hsize"]], 0.1, 2).must_swap(df)
    r = ms.set_index("hid")
    for c in H:
        df[f"r_{c}"] = df["hid"].map(r[f"risk_{c}"])
    a = rk.TargetedSwapping(H, ["age", "sex"], [["hsize"]], 0.1, 2)
    b = rk.TargetedSwapping(H, None, [["hsize"]], 0.1, risk=[f"r_{c}" for c in H],
                            risk_threshold=0.5)
    oa = a.protect(df, np.random.default_rng(3))
    ob = b.protect(df, np.random.default_rng(3))
    pd.testing.assert_frame_equal(oa, ob)


def test_carry_along_at_person_level_warns():
    df = population(1, n_hh=20)
    trs = rk.TargetedSwapping(H, ["age"], [["hsize"]], 0.3, 2, carry_along=["sex"])
    with pytest.warns(UserWarning, match="'sex' differs within household"):
        trs.protect(df, np.random.default_rng(0))


def test_parameters_round_trip_and_describe():
    trs = rk.TargetedSwapping(H, ["age"], "hsize", 0.2, 4, carry_along=["tenure", "area"],
                              household="hid")
    assert trs.similar == [["hsize"]]
    assert trs.carry_along == ["tenure"]
    assert rk.TargetedSwapping.from_dict(trs.to_dict()) == trs
    assert "swaprate=0.2" in trs.describe() and repr(trs) == trs.describe()
    assert rk.TargetedSwapping(H, ["age"], ["hsize", "tenure"]).similar == [["hsize", "tenure"]]


def test_empty_microdata():
    df = population(1, n_hh=5).iloc[:0]
    out = rk.TargetedSwapping(H, ["age"], [["hsize"]]).protect(df, np.random.default_rng(0))
    assert out.empty and out.attrs["swap_rate"] == 0.0


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"hierarchy": []}, ValueError, "hierarchy must name at least one column"),
    ({"hierarchy": ["region", "region"]}, ValueError, "names the column 'region' twice"),
    ({"swaprate": 1.5}, ValueError, r"swaprate must lie in \[0, 1\], got swaprate=1.5"),
    ({"swaprate": -0.1}, ValueError, "swaprate must lie in"),
    ({"swaprate": "0.1"}, TypeError, "swaprate must be a number"),
    ({"swaprate": float("nan")}, ValueError, "swaprate must be a number, got swaprate=nan"),
    ({"k_anonymity": 0}, ValueError, "k_anonymity must be >= 1"),
    ({"k_anonymity": 2.5}, TypeError, "k_anonymity must be an integer"),
    ({"k_anonymity": True}, TypeError, "k_anonymity must be an integer"),
    ({"similar": []}, ValueError, "at least one similarity profile"),
    ({"similar": [["hsize"], []]}, ValueError, r"similar\[1\] is an empty similarity profile"),
    ({"similar": [["hsize"], "one"]}, TypeError, r"similar\[1\] must be a list"),
    ({"risk_variables": None}, ValueError, "risk_variables must name at least one column"),
    ({"risk_threshold": -1}, ValueError, "risk_threshold must be >= 0"),
    ({"household": "region"}, ValueError, "household column 'region' is also in hierarchy"),
    ({"carry_along": ["hid"]}, ValueError, "cannot be carried along"),
    ({"risk": ["a"]}, ValueError, "one column per hierarchy level"),
    ({"check_nesting": "yes"}, TypeError, "check_nesting must be True or False"),
])
def test_bad_parameters(kwargs, exc, match):
    base = {"hierarchy": H, "risk_variables": ["age"], "similar": [["hsize"]], "swaprate": 0.1,
                "k_anonymity": 2}
    base.update(kwargs)
    with pytest.raises(exc, match=match):
        rk.TargetedSwapping(**base)


def _bad(df, **kw):
    base = {"hierarchy": H, "risk_variables": ["age"], "similar": [["hsize"]], "swaprate": 0.1,
                "k_anonymity": 2}
    base.update(kw)
    return rk.TargetedSwapping(**base).protect(df, np.random.default_rng(0))


def test_bad_microdata():
    df = population(8, n_hh=20, shuffle=False)
    with pytest.raises(TypeError, match="microdata must be a pandas.DataFrame"):
        _bad(df.to_dict("records"))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        rk.TargetedSwapping(H, ["age"], [["hsize"]]).protect(df, 1)
    with pytest.raises(KeyError, match="risk_variables names the column 'income'"):
        _bad(df, risk_variables=["income"])
    with pytest.raises(KeyError, match=r"similar\[0\] names the column 'size'"):
        _bad(df, similar=[["size"]])
    with pytest.raises(KeyError, match="household names the column 'hhid'"):
        _bad(df, household="hhid")
    with pytest.raises(KeyError, match="hierarchy names the column 'nuts3'"):
        _bad(df, hierarchy=["region", "nuts3"])
    d = df.copy()
    d.loc[1, "area"] = 999           # row 1 is the second person of the first household
    assert d.loc[0, "hid"] == d.loc[1, "hid"]
    with pytest.raises(ValueError, match=r"hierarchy column 'area' differs within "
                                         r"household 100 \(rows 0 and 1"):
        _bad(d)
    d = df.copy()
    d.loc[d.hid == d.hid.iloc[0], "district"] = 21          # district 21 lies in region 2
    d.loc[d.hid == d.hid.iloc[0], "area"] = 211
    if (d.region.iloc[0]) == 2:
        d.loc[d.hid == d.hid.iloc[0], ["district", "area"]] = [11, 111]
    with pytest.raises(ValueError, match="geography is not nested: district="):
        _bad(d)
    _bad(d, check_nesting=False)     # relative codes accepted on request
    d = df.copy()
    d.loc[3, "age"] = np.nan
    with pytest.raises(ValueError, match="column 'age' has a missing value"):
        _bad(d)
    d = df.copy()
    d["hsize"] = np.arange(len(d))
    with pytest.raises(ValueError, match="similarity column 'hsize' differs within household"):
        _bad(d)
    d = df.copy()
    d["r1"], d["r2"], d["r3"] = 0.1, -0.5, 0.2
    with pytest.raises(ValueError, match="risk column 'r2' must hold finite values >= 0"):
        _bad(d, risk_variables=None, risk=["r1", "r2", "r3"])
    d["r2"] = "x"
    with pytest.raises(TypeError, match="risk column 'r2' must be numeric"):
        _bad(d, risk_variables=None, risk=["r1", "r2", "r3"])
    d = df.copy()
    d.columns = [*d.columns[:-1], "age"]
    with pytest.raises(ValueError, match="two columns named 'age'"):
        _bad(d)


# --- size ------------------------------------------------------------------------------


@pytest.mark.slow
def test_census_size_run(capsys):
    """1e5 persons: every rule holds; the time is printed, not asserted."""
    df = census(100_000)
    trs = rk.TargetedSwapping(H, ["age", "sex", "nat"], [["hsize"], ["tenure"]], 0.05, 3,
                              carry_along=["tenure"])
    trs.protect(df.head(1000), np.random.default_rng(0))        # compile / load the kernel
    t = time.perf_counter()
    out = trs.protect(df, np.random.default_rng(1))
    dt = time.perf_counter() - t
    with capsys.disabled():
        print(f"\nTargetedSwapping: {len(df)} persons, {df.hid.nunique()} households: "
              f"{dt:.2f} s, swap rate {out.attrs['swap_rate']:.3f}")
    b, a = household_geo(df), household_geo(out)
    for j in range(3):
        assert (df.groupby(H[:j + 1]).size() == out.groupby(H[:j + 1]).size()).all()
    ms = trs.must_swap(df).set_index("hid")["level"]
    logged = set(out.attrs["unswapped"]["household"])
    for j, c in enumerate(H):
        hs = ms.index[ms == c]
        hs = hs[~hs.isin(list(logged))]
        moved = (b.loc[hs, H[:j + 1]].to_numpy() != a.loc[hs, H[:j + 1]].to_numpy()).any(1)
        assert moved.all()
