"""Rules from tabular input (tau-Argus table input with <MAXSCORE> columns):
assess_summary against the microdata route (rk.contributions + assess) with the top-n
taken from the same microdata, and against tau-Argus's formulas written out."""

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
    Sum,
    Zero,
    assess,
    assess_summary,
    cell_vector,
)

RULES = [Dominance(1, 60), Dominance(3, 80), PPercent(10), PQ(15, 60), PQ(20, 70, 2),
         Frequency(3), Zero(2), Max(Dominance(2, 85), Frequency(4)),
         Max(PPercent(12), Zero(1), Frequency(3, zeros=True)),
         Sum(PPercent(15), Dominance(2, 75))]


def summary_of(c, m):
    """value, freq and the m largest contributions of every system cell."""
    top = np.zeros((c.n_cells, m))
    for i in range(c.n_cells):
        x = c.cell(i)[:m]
        top[i, :x.size] = x
    return c.cell_values(), c.counts(), top


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.describe())
def test_summary_equals_microdata_route(rng, rule):
    for size in [int(rng.integers(1, 40)) for _ in range(15)] + [3000]:
        data = {"a": rng.choice(list("pqr"), size).tolist(),
                "b": rng.choice(list("xyzw"), size).tolist(),
                "v": (np.round(rng.exponential(10.0, size) ** rng.uniform(0.5, 2.0), 3)
                      * (rng.random(size) > 0.1)).tolist()}
        c = rk.contributions(data, dims=["a", "b"], value="v")
        value, freq, top = summary_of(c, max(rule.n_top, 1) + int(rng.integers(0, 3)))
        got = assess_summary(value, freq, top, rule)
        want = assess(c, rule)
        for var in ("S", "sensitive", "protection") + (
                ("protection_lower",) if rule.asymmetric else ()):
            w = cell_vector(want, var, c.system).astype(float)
            np.testing.assert_allclose(got[var].values.astype(float), w,
                                       atol=1e-8 * max(1.0, float(value.max())), err_msg=var)


def test_tau_argus_formulas_by_hand():
    # value 100, top 70, 15, 5; (3, 80): perc 90 > 80; protection 100/80 * 90 - 100 = 12.5
    ds = assess_summary([100.0], [5], [[70.0, 15.0, 5.0]], Dominance(3, 80))
    assert bool(ds.sensitive[0]) and float(ds.protection[0]) == pytest.approx(12.5)
    # pq p=20 q=50 n=1: p/100 x1 + q/100 (x1 + x2 - T) = 14 - 7.5 > 0;
    # protection p/q x1 + x1 + x2 - T = 28 - 15 = 13
    ds = assess_summary([100.0], [5], [[70.0, 15.0]], PQ(20, 50))
    assert float(ds.protection[0]) == pytest.approx(13.0)
    # frequency: 2 < 3, 10 % of 150 = 15
    ds = assess_summary([150.0, 9.0], [2, 5], np.zeros((2, 0)), Frequency(3))
    assert ds.sensitive.values.tolist() == [True, False]
    assert ds.protection.values.tolist() == [15.0, 0.0]
    # weighted frequency from a given weighted count
    ds = assess_summary([150.0], [2], np.zeros((1, 0)), Frequency(3, weighted=True),
                        wsum=[7.5])
    assert not bool(ds.sensitive[0])


def test_shapes_are_kept():
    v = np.array([[100.0, 50.0], [30.0, 0.0]])
    f = np.array([[4, 2], [1, 0]])
    top = np.array([[[60.0, 20.0], [30.0, 20.0]], [[30.0, 0.0], [np.nan, np.nan]]])
    ds = assess_summary(v, f, top, Dominance(1, 50))
    assert ds.S.shape == (2, 2)
    assert ds.sensitive.values.tolist() == [[True, True], [True, False]]


@pytest.mark.parametrize("rule, need", [
    (Dominance(3, 70), 3), (PPercent(10), 2), (PQ(10, 50, 3), 4),
    (Max(Frequency(3), Dominance(4, 90)), 4), (Sum(PPercent(5), Dominance(3, 90)), 3)])
def test_too_few_top_columns_are_refused(rule, need):
    top = np.zeros((2, need - 1))
    with pytest.raises(ValueError, match=rf"needs the {need} largest contributions of every "
                                         rf"cell; the table gives {need - 1} \(<MAXSCORE>"):
        assess_summary([1.0, 2.0], [3, 3], top, rule)
    assess_summary([1.0, 2.0], [3, 3], np.zeros((2, need)), rule)      # enough: fine


def test_bad_summary_input():
    with pytest.raises(ValueError, match="shape of value"):
        assess_summary([1.0, 2.0], [1], [[1.0], [2.0]], Dominance(1, 50))
    with pytest.raises(ValueError, match="top must have shape"):
        assess_summary([1.0, 2.0], [1, 1], [1.0, 2.0], Dominance(1, 50))
    with pytest.raises(ValueError, match="sorted largest first"):
        assess_summary([10.0], [2], [[1.0, 2.0]], Dominance(1, 50))
    with pytest.raises(ValueError, match="more than its value"):
        assess_summary([1.0], [2], [[5.0, 2.0]], Dominance(1, 50))
    with pytest.raises(ValueError, match="whole numbers"):
        assess_summary([1.0], [1.5], [[1.0]], Dominance(1, 50))
    with pytest.raises(TypeError, match="needs microdata"):
        assess_summary([1.0], [1], [[1.0]], Holdings(Dominance(1, 50)))
    with pytest.raises(TypeError, match="needs microdata"):
        assess_summary([1.0], [1], [[1.0]], Max(Request(10), Frequency(2)))
