"""rk.TableSet.from_pandas: tables cut from one microdata, one of them coarser than the
records (regions where the records carry districts)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import riskengine as rk

GEO = rk.Hierarchy({"N": ["N1", "N2"], "S": ["S1", "S2"]})
COARSE = rk.Hierarchy({"N": {}, "S": {}})


def _people(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"geo": rng.choice(list(GEO.leaves), n),
                         "sex": rng.choice(["F", "M"], n)})


def test_a_coarser_table_counts_the_records_of_its_finer_codes():
    df = _people()
    ts = rk.TableSet.from_pandas(df, {"A": ["geo", "sex"], "B": ["geo"]},
                                 hierarchies={"A": {"geo": GEO}, "B": {"geo": COARSE}})
    region = df["geo"].str[0]
    b = ts.tables["B"]
    assert b.values.tolist() == [int((region == r).sum()) for r in b.coords["geo"]]
    s = ts.system
    # B's N is A's subtotal N (both sexes): one cell of the set, published by both
    j = s.find(table="B", geo="N")
    assert j == s.find(table="A", geo="N")
    assert set(s.cells["tables"].iloc[j]) == {"A", "B"}
    assert ts.values[j] == int((region == "N").sum())
    # the finest cells are the districts x sex, counted from the records
    assert ts.shape == (4, 2)
    fin = ts.values[: s.n_interior].reshape(ts.shape)
    for i, d in enumerate(s.coords["geo"]):
        for k, x in enumerate(s.coords["sex"]):
            assert fin[i, k] == int(((df["geo"] == d) & (df["sex"] == x)).sum())


def test_a_record_code_under_no_leaf_of_a_table_is_named():
    df = _people()
    df.loc[0, "geo"] = "W1"
    with pytest.raises(ValueError, match=r"column 'geo' has 'W1'.*table 'B'"):
        rk.TableSet.from_pandas(df, {"B": ["geo"]}, hierarchies={"B": {"geo": COARSE}})
