"""Magnitude tables from microdata (rk.contributions) against a plain-Python reference
(tests/reference/contributions.py)."""

import numpy as np
import pytest

import riskengine as rk
from tests.reference.contributions import contributions_by_loops


def _rows(data):
    n = len(data["v"])
    return [{k: data[k][i] for k in data} for i in range(n)]


@pytest.mark.parametrize("respondent", [False, True])
def test_cells_and_totals_hold_the_union_of_contributions(rng, respondent):
    for ndim in (1, 2, 3):
        dims = ["a", "b", "c"][:ndim]
        n = int(rng.integers(1, 60))
        data = {d: rng.choice(list("pqrs")[: 2 + i], n).tolist() for i, d in enumerate(dims)}
        data["v"] = np.round(rng.exponential(5.0, n), 3).tolist()
        data["id"] = rng.integers(0, 8, n).tolist()
        c = rk.contributions(data, dims=dims, value="v",
                             respondent="id" if respondent else None)
        keeps = [b.keep for b in c.system.blocks]
        ref = contributions_by_loops(_rows(data), dims, keeps, respondent)
        for b in c.system.blocks:
            for idx in np.ndindex(*b.shape):
                labels = tuple(c.table.coords[d][i] for d, i in zip(b.keep, idx))
                got = c.cell(b.offset + (int(np.ravel_multi_index(idx, b.shape)) if idx else 0))
                assert got.tolist() == pytest.approx(ref.get((b.keep, labels), [])), (b.label, idx)
        # the table is the interior sums; totals of the table are the total cells' sums
        x = c.system.vector(c.table.values)
        assert np.allclose(x, c.cell_values())
        assert np.all(np.diff(c.values[c.offsets[0]:c.offsets[1]]) <= 0)


def test_categories_order_and_empty_cells():
    data = {"r": ["N", "S"], "s": ["x", "x"], "v": [1.0, 2.0]}
    c = rk.contributions(data, dims=("r", "s"), value="v",
                         categories={"r": ["S", "N", "E"], "s": ["y", "x"]})
    assert c.table.coords == {"r": ["S", "N", "E"], "s": ["y", "x"]}
    assert c.table.values.tolist() == [[0.0, 2.0], [0.0, 1.0], [0.0, 0.0]]
    assert c.table.kind == "magnitude"
    assert c.interior(2, 0).size == 0
    assert c.counts().sum() == 2 * len(c.system.blocks)


def test_dataframe_input():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"r": ["a", "a", "b"], "v": [3.0, 1.0, 2.0]})
    c = rk.contributions(df, dims=["r"], value="v")
    assert c.table.values.tolist() == [4.0, 2.0]
    assert c.total(()).tolist() == [3.0, 2.0, 1.0]


def test_margins_structure():
    data = {"a": [0, 1], "b": [0, 1], "c": [1, 0], "v": [1.0, 2.0]}
    c = rk.contributions(data, dims=["a", "b", "c"], value="v", margins=[("a", "b")])
    assert [b.keep for b in c.system.blocks] == [("a", "b", "c"), ("a", "b"), ("a",), ("b",), ()]


def test_bad_input():
    ok = {"r": ["a", "b"], "v": [1.0, 2.0]}
    with pytest.raises(ValueError, match="unknown columns"):
        rk.contributions(ok, dims=["x"], value="v")
    with pytest.raises(ValueError, match="nonnegative"):
        rk.contributions({"r": ["a"], "v": [-1.0]}, dims=["r"], value="v")
    with pytest.raises(ValueError, match="finite"):
        rk.contributions({"r": ["a"], "v": [np.nan]}, dims=["r"], value="v")
    with pytest.raises(ValueError, match="not among its categories"):
        rk.contributions(ok, dims=["r"], value="v", categories={"r": ["a"]})
    with pytest.raises(TypeError, match="numeric"):
        rk.contributions({"r": ["a"], "v": ["x"]}, dims=["r"], value="v")
    with pytest.raises(TypeError, match="DataFrame or a dict"):
        rk.contributions([1, 2], dims=["r"], value="v")
    with pytest.raises(ValueError, match="rows"):
        rk.contributions({"r": ["a"], "v": [1.0, 2.0]}, dims=["r"], value="v")
    with pytest.raises(ValueError, match="cannot also be a dim"):
        rk.contributions(ok, dims=["r", "v"], value="v")
    # user input is not modified
    v = np.array([2.0, 1.0])
    rk.contributions({"r": ["a", "a"], "v": v}, dims=["r"], value="v")
    assert v.tolist() == [2.0, 1.0]
