"""Tables from and to pandas: Series, long DataFrames, microdata and crosstabs, labels and
dim order kept (the reference is a cell-by-cell lookup by label)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import riskengine as rk


def _lookup(t: rk.Table, **labels):
    idx = tuple(t.coords[d].index(labels[d]) for d in t.dims)
    return t.values[idx]


@pytest.mark.parametrize("shape", [(2, 3), (3, 2, 2), (4,)])
def test_round_trip_through_a_series(shape):
    rng = np.random.default_rng(sum(shape))
    dims = ("region", "age", "sex")[:len(shape)]
    coords = {d: [f"{d}{i}" for i in range(n)][::-1] for d, n in zip(dims, shape)}
    coords[dims[0]] = list(range(10, 10 + shape[0]))          # integer labels too
    t = rk.Table(rng.poisson(5, size=shape), dims=dims, coords=coords)
    s = t.to_pandas()
    assert list(s.index.names) == list(dims)
    back = rk.Table.from_pandas(s)
    assert back == t
    shuffled = rk.Table.from_pandas(s.sample(frac=1.0, random_state=1))  # rows in any order
    assert shuffled.dims == t.dims                       # labels in order of appearance
    for d in t.dims:
        assert sorted(shuffled.coords[d]) == sorted(t.coords[d])
    for key, v in s.items():
        key = key if isinstance(key, tuple) else (key,)
        assert _lookup(shuffled, **dict(zip(t.dims, key))) == v


def test_long_frame_with_columns_in_another_order():
    df = pd.DataFrame({"n": [5, 1, 7, 2, 0, 3], "age": ["y", "o", "y", "o", "y", "o"],
                       "region": ["N", "N", "S", "S", "E", "E"]})
    t = rk.Table.from_pandas(df, value="n", dims=["region", "age"])
    assert t.dims == ("region", "age") and t.coords == {"region": ["N", "S", "E"],
                                                       "age": ["y", "o"]}
    for _, r in df.iterrows():
        assert _lookup(t, region=r.region, age=r.age) == r.n
    t2 = rk.Table.from_pandas(df, value="n")                   # dims: the other columns
    assert t2.dims == ("age", "region")
    np.testing.assert_array_equal(t2.values, t.values.T)


def test_microdata_crosstab_and_groupby_agree():
    rng = np.random.default_rng(3)
    people = pd.DataFrame({"sex": rng.choice(["F", "M"], 200),
                           "grade": rng.choice(["a", "b", "c"], 200)})
    t = rk.Table.from_pandas(people, dims=["sex", "grade"])
    ct = rk.Table.from_pandas(pd.crosstab(people.sex, people.grade))
    gb = rk.Table.from_pandas(people.groupby(["sex", "grade"]).size())
    for other in (ct, gb):
        for s in ("F", "M"):
            for g in ("a", "b", "c"):
                assert _lookup(t, sex=s, grade=g) == _lookup(other, sex=s, grade=g) == \
                    int(((people.sex == s) & (people.grade == g)).sum())
    assert t.values.sum() == 200 and t.kind == "count"


def test_categorical_keeps_its_order_and_unobserved_categories():
    df = pd.DataFrame({"age": pd.Categorical(["old", "young", "old"],
                                             categories=["young", "mid", "old"]),
                       "sex": ["F", "F", "M"]})
    t = rk.Table.from_pandas(df, dims=["age", "sex"])
    assert t.coords["age"] == ["young", "mid", "old"]
    assert t.values.tolist() == [[1, 0], [0, 0], [1, 1]]


def test_magnitudes_stay_floats():
    df = pd.DataFrame({"k": ["a", "b"], "sales": [10.5, 3.0]})
    t = rk.Table.from_pandas(df, value="sales")
    assert t.kind == "magnitude" and t.values.tolist() == [10.5, 3.0]


@pytest.mark.parametrize("frame, kw, msg", [
    (pd.DataFrame({"a": ["x", "x"], "n": [1, 2]}), {"value": "n"}, "appears more than once"),
    (pd.DataFrame({"a": ["x", "y"], "b": ["u", "v"], "n": [1, 2]}), {"value": "n"},
     "is missing"),
    (pd.DataFrame({"a": ["x", "y"], "n": [1, np.nan]}), {"value": "n"}, "missing value"),
    (pd.DataFrame({"a": ["x", None], "b": ["u", "v"]}), {"dims": ["a", "b"]},
     "column 'a' has missing labels"),
    (pd.DataFrame({"a": ["x"], "n": [1]}), {"value": "count"}, "no value column 'count'"),
    (pd.DataFrame({"a": ["x"], "n": [1]}), {"value": "n", "dims": ["b"]}, "no column 'b'"),
    (pd.DataFrame([[1, 2], [3, 4]]), {}, "a crosstab needs a named index"),
    (pd.Series([1, 2]), {}, "a Series needs named index levels"),
])
def test_bad_frames_are_refused_by_name(frame, kw, msg):
    with pytest.raises(ValueError, match=msg):
        rk.Table.from_pandas(frame, **kw)
    with pytest.raises(TypeError, match="pandas Series or DataFrame"):
        rk.Table.from_pandas([[1, 2]])
