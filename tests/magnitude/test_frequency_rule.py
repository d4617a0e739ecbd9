"""The threshold (minimum frequency) rule, rk.sensitivity.Frequency (issue 27 item 5):
which cells are sensitive (against the rule stated cell by cell), its protection levels
(tau-Argus's FREQ rule: max(value * safety range %, 1) on both sides, never below 0; by
hand), the Rule family (microdata, Max with dominance), and rk.suppress with the rule on
a count table, its protection checked by enumerating every nonnegative integer table that
agrees with the release."""

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.magnitude.sensitivity import Dominance, Frequency, Max, PPercent, Sum

S = rk.sensitivity


def brute_sensitive(counts, n, zeros):
    """The rule as stated, one cell at a time."""
    return np.array([(0 < c < n) or (zeros and c == 0) for c in np.ravel(counts)]
                    ).reshape(np.shape(counts))


# --- which cells ----------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5, 10])
@pytest.mark.parametrize("zeros", [False, True])
def test_sensitive_equals_the_rule_cell_by_cell(rng, n, zeros):
    for _ in range(50):
        shape = tuple(int(k) for k in rng.integers(1, 5, int(rng.integers(1, 4))))
        counts = rng.integers(0, 12, shape)
        got = Frequency(n, zeros=zeros).sensitive(counts)
        assert got.dtype == bool and got.shape == shape
        np.testing.assert_array_equal(got, brute_sensitive(counts, n, zeros))


def test_sensitive_takes_tables_dataarrays_and_integral_floats():
    counts = np.array([[0, 1, 2], [3, 4, 2]])
    want = [[False, True, True], [False, False, True]]
    rule = Frequency(3)
    assert rule.sensitive(rk.Table(counts)).tolist() == want
    assert rule.sensitive(xr.DataArray(counts, dims=("a", "b"))).tolist() == want
    assert rule.sensitive(counts.astype(float)).tolist() == want
    assert rule.sensitive(2).tolist() is True     # a scalar: a 0-d array


@pytest.mark.parametrize("bad, match", [
    ([1, -1], r"nonnegative whole numbers, got -1"),
    ([1, 2.5], r"nonnegative whole numbers, got 2.5"),
    ([1, np.nan], r"nonnegative whole numbers, got nan"),
])
def test_bad_counts_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        Frequency(3).sensitive(bad)
    with pytest.raises(ValueError, match=match):
        Frequency(3).protection_levels(bad)


def test_a_mask_is_not_counts():
    with pytest.raises(TypeError, match="not a mask"):
        Frequency(3).sensitive(np.array([True, False]))


@pytest.mark.parametrize("kw, err, match", [
    ({"n": 0}, ValueError, r"n must be >= 1.*got n=0"),
    ({"n": 2.5}, TypeError, r"n must be an integer, got 2.5"),
    ({"n": True}, TypeError, r"n must be an integer"),
    ({"n": 3, "zeros": "yes"}, TypeError, r"zeros must be True or False, got 'yes'"),
    ({"n": 3, "safety_range": 120}, ValueError,
     r"safety_range must be a percentage in \[0, 100\], got safety_range=120"),
    ({"n": 3, "safety_range": -1}, ValueError, r"got safety_range=-1"),
    ({"n": 3, "min_protection": 0}, ValueError,
     r"min_protection must be > 0, got min_protection=0"),
    ({"n": 3, "safety_range": np.inf}, ValueError, r"safety_range must be finite"),
])
def test_bad_parameters_are_refused(kw, err, match):
    with pytest.raises(err, match=match):
        Frequency(**kw)


# --- protection levels ----------------------------------------------------------------
def test_protection_levels_by_hand():
    # default: max(c * 10 %, 1) = 1 for every count below 10; nothing below 0
    lo, hi = Frequency(3).protection_levels([0, 1, 2, 3, 7])
    assert lo.tolist() == [0, 1, 1, 0, 0] and hi.tolist() == [0, 1, 1, 0, 0]
    # zeros: an empty cell needs 1 above it, nothing below (it cannot go below 0)
    lo, hi = Frequency(3, zeros=True).protection_levels([0, 2, 4])
    assert lo.tolist() == [0, 1, 0] and hi.tolist() == [1, 1, 0]
    # safety range 30 %: 15 -> 4.5 each way; 2 -> max(0.6, 1) = 1
    lo, hi = Frequency(20, safety_range=30).protection_levels([15, 2, 20])
    assert lo.tolist() == [4.5, 1, 0] and hi.tolist() == [4.5, 1, 0]
    # a floor of 3 is capped below at the count: 2 -> (2, 3)
    lo, hi = Frequency(5, min_protection=3).protection_levels([[2, 4], [5, 0]])
    assert lo.tolist() == [[2, 3], [0, 0]] and hi.tolist() == [[3, 3], [0, 0]]


def test_one_cell_of_contributions():
    # two contributors: S = 3 - 2 = 1; value 150 -> protection 10 % = 15
    rule = Frequency(3)
    assert rule.sensitivity([120.0, 30.0]) == 1.0 and rule.protection([120.0, 30.0]) == 15.0
    # three contributors: safe (S = 0), protection 0
    assert rule.sensitivity([1, 1, 1]) == 0.0 and rule.protection([1, 1, 1]) == 0.0
    # a contribution of value 0 is a contributor all the same: 0 < 1 < 3
    assert rule.sensitivity([0.0]) == 2.0 and rule.protection([0.0]) == 1.0
    # no contribution: sensitive only with zeros (S = n)
    assert rule.sensitivity([]) == 0.0
    assert Frequency(3, zeros=True).sensitivity([]) == 3.0


# --- the Rule family -------------------------------------------------------------------
def test_to_dict_describe_and_equality():
    r = Frequency(3, zeros=True, safety_range=20)
    assert r.to_dict() == {"rule": "frequency", "n": 3, "zeros": True, "safety_range": 20.0,
                           "min_protection": 1.0}
    assert r.describe() == "Frequency(n=3, zeros=True, safety_range=20)"
    assert repr(Frequency(5)) == "Frequency(n=5, safety_range=10)"
    assert Frequency(4, min_protection=0.5).describe() == \
        "Frequency(n=4, safety_range=10, min_protection=0.5)"
    assert r == Frequency(3, True, 20.0) and r != Frequency(3, zeros=True)
    assert r != Frequency(3, False, 20) and Frequency(3) != PPercent(3)
    m = Max(Frequency(3), Dominance(2, 85))
    assert m.to_dict() == {"rule": "max", "rules": [Frequency(3).to_dict(),
                                                    Dominance(2, 85).to_dict()]}
    assert m == Max(Frequency(3), Dominance(2, 85))
    with pytest.raises(TypeError):
        hash(r)


def test_sum_refuses_it_and_it_has_no_weights():
    with pytest.raises(TypeError, match=r"Sum adds linear measures; Frequency\(n=3, "
                                        r"safety_range=10\) is not one"):
        Sum(Frequency(3), PPercent(10))
    with pytest.raises(TypeError, match="not a linear measure"):
        Frequency(3).weights([0, 1])
    with pytest.raises(AttributeError, match="no tail weight"):
        _ = Frequency(3).tail_weight


#: microdata: cell (a) 50, 1, 1 (3 contributors, dominated), (b) four of 10 (safe),
#: (c) 3, 4 (2 contributors), (d) none
DATA = {"r": list("aaabbbbcc"), "v": [50.0, 1, 1, 10, 10, 10, 10, 3, 4]}


def _contribs(**kw):
    return rk.contributions(DATA, dims=["r"], value="v",
                            categories={"r": ["a", "b", "c", "d"]}, **kw)


def test_assess_counts_contributors():
    ds = S.assess(_contribs(), Frequency(3))
    # counts 3, 4, 2, 0: only c; its value 7 -> max(0.7, 1) = 1; the total (9) is safe
    assert ds.sensitive.values.tolist() == [False, False, True, False]
    assert ds.S.values.tolist() == [0, -1, 1, 0]
    assert ds.protection.values.tolist() == [0, 0, 1, 0]
    assert ds.protection_lower.values.tolist() == [0, 0, 1, 0]
    assert not bool(ds.sensitive_total) and float(ds.S_total) == 3 - 9
    ds = S.assess(_contribs(), Frequency(3, zeros=True))
    assert ds.sensitive.values.tolist() == [False, False, True, True]
    assert ds.protection.values.tolist() == [0, 0, 1, 1]
    assert ds.protection_lower.values.tolist() == [0, 0, 1, 0]     # d: 0, never below 0


def test_assess_with_respondents_counts_respondents():
    # one firm with two rows in cell a: 2 respondents there, the total has 8 (of 9 rows)
    data = dict(DATA, firm=["f1", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"])
    c = rk.contributions(data, dims=["r"], value="v", respondent="firm")
    ds = S.assess(c, Frequency(3))
    assert ds.sensitive.values.tolist() == [True, False, True]
    assert float(ds.S_total) == 3 - 8
    # a: value 52, 10 % = 5.2
    np.testing.assert_allclose(ds.protection.values, [5.2, 0, 1], rtol=1e-12)


def test_max_with_dominance_on_microdata():
    # (1,80)-dominance: a: S = 50 - 4 * 2 = 42, P = 10.5 (sensitive); b, c safe.
    # frequency: c sensitive, protection 1.  Max: both cells, each its rule's protection
    rule = Max(Frequency(3), Dominance(1, 80))
    ds = S.assess(_contribs(), rule)
    assert ds.sensitive.values.tolist() == [True, False, True, False]
    assert ds.protection.values.tolist() == [10.5, 0, 1, 0]
    assert ds.protection_lower.values.tolist() == [10.5, 0, 1, 0]
    assert "protection_lower" not in S.assess(_contribs(), Dominance(1, 80))
    # suppression with the rule object is suppression with its assessment
    c = _contribs()
    a = rk.suppress(c, rule, suppress_zeros=True)
    b = rk.suppress(c, S.assess(c, rule), suppress_zeros=True)
    np.testing.assert_array_equal(a.published, b.published)
    assert a.info == b.info and a.info["n_sensitive"] == 2


def test_assess_a_count_table():
    t = rk.Table(np.array([[1, 4, 0], [5, 3, 7]]), dims=("v", "w"))
    ds = S.assess(t, Frequency(3))
    assert ds.sensitive.values.tolist() == [[True, False, False], [False, False, False]]
    # totals are cells too: column w=2 holds 7, row v=0 holds 5; column w=0 holds 6
    assert ds.sensitive_total_w.values.tolist() == [False, False, False]
    assert ds.S.values.tolist() == [[2, -1, 0], [-2, 0, -4]]
    assert ds.protection.values.tolist() == [[1, 0, 0], [0, 0, 0]]
    assert ds.attrs["rule"] == "Frequency(n=3, safety_range=10)"
    # a total below the threshold: column w=0 of [[1], [1]] holds 2
    ds = S.assess(rk.Table(np.array([[1, 5], [1, 6]]), dims=("v", "w")), Frequency(3))
    assert ds.sensitive_total_w.values.tolist() == [True, False]
    assert ds.sensitive.attrs[S.SENSITIVE_TOTALS] == 1
    # the same from a plain array
    xr.testing.assert_identical(S.assess(np.array([[1, 5], [1, 6]]), Frequency(3)),
                                S.assess(rk.Table(np.array([[1, 5], [1, 6]])), Frequency(3)))


def test_assess_refuses_what_a_count_table_cannot_give():
    t = rk.Table(np.array([[1, 4], [5, 3]]))
    with pytest.raises(TypeError, match=r"rule PPercent\(p=10\) needs a Contributions "
                                        r"object \(the microdata"):
        S.assess(t, PPercent(10))
    with pytest.raises(ValueError, match="this table holds magnitudes"):
        S.assess(rk.Table(np.array([[1.5, 4], [5, 3]])), Frequency(3))
    with pytest.raises(TypeError, match="got str"):
        S.assess("table.csv", Frequency(3))
    with pytest.raises(TypeError, match=r"Frequency\(n\)"):
        S.assess(t, 3)


# --- suppression of a count table, checked by enumeration -----------------------------
def brute_ranges(rel):
    """``{(i, j): (min, max)}`` of every suppressed interior cell over every nonnegative
    integer table that agrees with the published cells and the row, column and grand
    totals: a depth-first walk over the hidden cells in row order, each from 0 to what
    its row and column have left (the last hidden cell of a row takes the rest of it)."""
    pub = rel.published
    rows = np.asarray(rel.margins[(rel.dims[0],)], dtype=np.int64)
    cols = np.asarray(rel.margins[(rel.dims[1],)], dtype=np.int64)
    hidden = list(zip(*np.nonzero(np.isnan(pub))))
    known = np.where(np.isnan(pub), 0, pub).astype(np.int64)
    row_left = rows - known.sum(axis=1)
    col_left = cols - known.sum(axis=0)
    last = {}
    for k, (i, _) in enumerate(hidden):
        last[i] = k
    lo = {c: np.inf for c in hidden}
    hi = {c: -np.inf for c in hidden}
    vals = [0] * len(hidden)
    found = [0]

    def walk(k):
        if k == len(hidden):
            if (row_left == 0).all() and (col_left == 0).all():
                found[0] += 1
                for c, v in zip(hidden, vals):
                    lo[c], hi[c] = min(lo[c], v), max(hi[c], v)
            return
        i, j = hidden[k]
        top = min(row_left[i], col_left[j])
        options = [row_left[i]] if last[i] == k else range(top + 1)
        for v in options:
            if v < 0 or v > col_left[j]:
                continue
            vals[k] = v
            row_left[i] -= v
            col_left[j] -= v
            walk(k + 1)
            row_left[i] += v
            col_left[j] += v

    walk(0)
    assert found[0] >= 1               # the true table is a completion
    return {c: (lo[c], hi[c]) for c in hidden}


CASES = [
    np.array([[1, 4, 6], [5, 3, 7], [8, 9, 2]]),
    np.array([[1, 4, 6, 0], [5, 3, 7, 2], [8, 9, 2, 4]]),
    np.array([[2, 5, 3], [6, 1, 4]]),
    np.array([[0, 3, 4], [2, 5, 6], [3, 0, 1]]),
]


@pytest.mark.parametrize("counts", CASES)
@pytest.mark.parametrize("rule", [Frequency(3), Frequency(3, zeros=True), Frequency(4)])
def test_suppress_protects_every_sensitive_count(counts, rule):
    t = rk.Table(counts, dims=("r", "c"))
    rel = rk.suppress(t, rule, suppress_zeros=rule.zeros)
    sens = brute_sensitive(counts, rule.n, rule.zeros)
    hidden = np.isnan(rel.published)
    assert (hidden[sens]).all() and rel.info["n_sensitive"] == sens.sum()
    ranges = brute_ranges(rel)
    lo, hi = rule.protection_levels(counts)
    for (i, j) in zip(*np.nonzero(sens)):
        r_lo, r_hi = ranges[(i, j)]
        c = counts[i, j]
        # the hidden count may be as low as c - lower and as high as c + upper
        assert r_lo <= c - lo[i, j] and r_hi >= c + hi[i, j], ((i, j), c, ranges[(i, j)])
        if c == 1:
            assert r_lo == 0          # an intruder cannot tell that the group has a member
    # rk.audit's LP intervals are the integer ranges here (2-D, all totals: the
    # constraint matrix is totally unimodular), and the audit finds every cell protected
    a = rk.audit(rel, S.assess(t, rule), table=t)
    for (i, j), (r_lo, r_hi) in ranges.items():
        assert a.lower.values[i, j] == pytest.approx(r_lo, abs=1e-7)
        assert a.upper.values[i, j] == pytest.approx(r_hi, abs=1e-7)
    assert int(a.under_protected.sum()) == 0 and int(a.exact.sum()) == 0
    assert a.attrs["n_under_protected"] == 0


def test_suppress_with_the_rule_is_suppress_with_its_levels():
    counts = CASES[1]
    t = rk.Table(counts, dims=("r", "c"))
    rule = Frequency(3, zeros=True)
    a = rk.suppress(t, rule, suppress_zeros=True, method="optimal", cost="count")
    b = rk.suppress(t, rule.sensitive(counts), rule.protection_levels(counts),
                    suppress_zeros=True, method="optimal", cost="count")
    np.testing.assert_array_equal(np.isnan(a.published), np.isnan(b.published))
    assert a.info["n_suppressed"] == b.info["n_suppressed"]
    assert a.kind == "count" and a.mechanism.to_dict() == rk.CellSuppression(
        cost="count", method="optimal", suppress_zeros=True).to_dict()
    # an explicit protection overrides the rule's: 1 below and 3 above every sensitive
    # cell, e.g. the 2 at (1, 3) must reach 1 and 5
    c = rk.suppress(t, Frequency(3), protection=(1.0, 3.0))
    ranges = brute_ranges(c)
    assert ranges[(1, 3)][0] <= 1 and ranges[(1, 3)][1] >= 5


def test_an_empty_sensitive_cell_needs_one_above():
    # zeros=True: (0, 0) is empty; its row and column let it reach 1 only if a
    # complement moves with it
    counts = np.array([[0, 5, 6], [4, 5, 7], [6, 8, 9]])
    t = rk.Table(counts, dims=("r", "c"))
    rel = rk.suppress(t, Frequency(3, zeros=True), suppress_zeros=False)
    assert brute_ranges(rel)[(0, 0)][1] >= 1
    assert rk.suppress(t, Frequency(3)).info["n_suppressed"] == 0


def test_suppress_a_sensitive_total_with_groups():
    # subtotals: columns {0, 1} and {2}; the subtotal of row 0 over {0, 1} is 1 + 1 = 2
    counts = np.array([[1, 1, 5], [4, 6, 5], [7, 3, 6]])
    t = rk.Table(counts, dims=("r", "c"))
    rule = Frequency(3)
    rel = rk.suppress(t, rule, groups={"c": [[0, 1], [2]]}, suppress_totals=True)
    assert rel.info["n_sensitive_totals"] >= 1
    assert np.isnan(rel.subtotals[("r", "c")][0, 0])


def test_suppress_refuses_rules_a_count_table_cannot_take():
    t = rk.Table(np.array([[1, 4], [5, 3]]))
    with pytest.raises(TypeError, match="needs a Contributions object"):
        rk.suppress(t, PPercent(10))
    with pytest.raises(TypeError, match="needs a Contributions object"):
        rk.suppress(t, Max(Frequency(3), Dominance(1, 80)))
    with pytest.raises(ValueError, match="holds magnitudes"):
        rk.suppress(rk.Table(np.array([[1.5, 4], [5, 3]])), Frequency(3))
