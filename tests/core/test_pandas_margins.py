"""Table.from_pandas reads a total row / column (``All`` of ``pd.crosstab(...,
margins=True)``, ``Total``, ... : riskengine.table.TOTAL_LABELS, which the CSV reader of
riskengine._io shares) as published margins, checked against the cells, never as a
category (issue 27 item 1).  Reference: the cells counted by hand from the records below;
the totals are pandas' own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine import _io
from riskengine.table import TOTAL_LABELS

#: 7 records: F/x 2, F/y 1, F/z 1, M/x 1, M/y 2, M/z 0
SEX = pd.Series(["F", "M", "F", "F", "M", "F", "M"], name="sex")
GRADE = pd.Series(["x", "y", "y", "x", "x", "z", "y"], name="grade")
CELLS = [[2, 1, 1], [1, 2, 0]]


def test_csv_reader_and_pandas_share_the_total_labels():
    assert _io.TOTAL_LABELS is TOTAL_LABELS
    assert "all" in TOTAL_LABELS and "total" in TOTAL_LABELS


@pytest.mark.parametrize("name", ["All", "Total"])
def test_crosstab_with_margins_keeps_them_as_published_margins(name):
    ct = pd.crosstab(SEX, GRADE, margins=True, margins_name=name)
    t = rk.Table.from_pandas(ct)
    assert t.dims == ("sex", "grade") and t.kind == "count"
    assert t.coords == {"sex": ["F", "M"], "grade": ["x", "y", "z"]}    # no total category
    assert t.values.tolist() == CELLS
    assert t.margins == (("sex",), ("grade",), ())
    tot = t.totals()
    assert tot[("sex",)].tolist() == [4, 3]            # not doubled by an 'All' cell
    assert tot[("grade",)].tolist() == [3, 3, 1]
    assert int(tot[()]) == 7
    # the same table as without margins (there the default structure is every total)
    assert t == rk.Table.from_pandas(pd.crosstab(SEX, GRADE))


def test_only_a_total_column_publishes_only_the_row_totals():
    ct = pd.crosstab(SEX, GRADE, margins=True).drop(index="All")
    t = rk.Table.from_pandas(ct)
    assert t.values.tolist() == CELLS
    assert t.margins == (("sex",), ())            # the grand total is a sum of row totals
    ct = pd.crosstab(SEX, GRADE, margins=True).drop(columns="All")
    assert rk.Table.from_pandas(ct).margins == (("grade",), ())


@pytest.mark.parametrize("name", ["All", "Total"])
def test_inconsistent_total_is_an_error_naming_labels_and_numbers(name):
    ct = pd.crosstab(SEX, GRADE, margins=True, margins_name=name)
    ct.loc["F", name] = 5                              # the cells of F add up to 4
    with pytest.raises(ValueError, match=rf"the crosstab: the total \(F, {name}\) is 5 but "
                                         r"the cells it sums \(over 'grade'\) add up to 4"):
        rk.Table.from_pandas(ct)
    ct = pd.crosstab(SEX, GRADE, margins=True, margins_name=name)
    ct.loc[name, name] = 8                             # grand total: 7
    with pytest.raises(ValueError, match=rf"the total \({name}, {name}\) is 8 but the cells it "
                                         r"sums \(over 'sex', 'grade'\) add up to 7"):
        rk.Table.from_pandas(ct)


def test_long_forms_carry_totals_too():
    ct = pd.crosstab(SEX, GRADE, margins=True)
    s = ct.stack()                                      # a Series indexed by (sex, grade)
    t = rk.Table.from_pandas(s)
    assert t.values.tolist() == CELLS and t.margins == (("sex",), ("grade",), ())
    df = s.rename("n").reset_index()                    # long DataFrame
    t2 = rk.Table.from_pandas(df, value="n")
    assert t2 == t
    # a whole block left out: not published
    s2 = s.drop([("F", "All"), ("M", "All"), ("All", "All")])
    assert rk.Table.from_pandas(s2).margins == (("grade",), ())
    # a block given in part: refused, naming the missing total
    with pytest.raises(ValueError, match=r"the totals over 'grade' are given for some "
                                         r"categories but not for \(M, All\)"):
        rk.Table.from_pandas(s.drop([("M", "All")]))
    bad = s.copy()
    bad[("All", "y")] = 4                               # y: 1 + 2 = 3
    with pytest.raises(ValueError, match=r"the long form: the total \(All, y\) is 4 but the "
                                         r"cells it sums \(over 'sex'\) add up to 3"):
        rk.Table.from_pandas(bad)


def test_magnitudes_and_margins_argument():
    ct = pd.crosstab(SEX, GRADE, values=np.arange(7) * 0.5, aggfunc="sum", margins=True)
    ct = ct.fillna(0.0)
    t = rk.Table.from_pandas(ct)
    assert t.kind == "magnitude" and t.margins == (("sex",), ("grade",), ())
    np.testing.assert_allclose(t.totals()[()], 0.5 * 21, rtol=1e-12)
    # margins= agreeing with the totals given is accepted; disagreeing is an error
    full = pd.crosstab(SEX, GRADE, margins=True)
    assert rk.Table.from_pandas(full, margins=[("sex",), ("grade",)]).margins == \
        (("sex",), ("grade",), ())
    with pytest.raises(ValueError, match=r"holds the totals \[\('sex',\), \('grade',\), \(\)\] "
                                         r"\(its total rows/columns\) but "
                                         r"margins=\[\('sex',\)\] publishes \[\('sex',\), \(\)\]"):
        rk.Table.from_pandas(full, margins=[("sex",)])


def test_forms_that_cannot_carry_totals_refuse():
    people = pd.DataFrame({"sex": ["F", "All", "M"], "grade": ["x", "y", "y"]})
    with pytest.raises(ValueError, match=r"column 'sex' has the category 'All', a total label"):
        rk.Table.from_pandas(people, dims=["sex", "grade"])
    two = pd.crosstab(SEX, GRADE, margins=True)
    two = two.rename(index={"F": "Total"})             # two total rows
    with pytest.raises(ValueError, match=r"dim 'sex' has 2 total categories \['Total', 'All'\]"):
        rk.Table.from_pandas(two)
    only = pd.DataFrame([[3]], index=pd.Index(["All"], name="sex"),
                        columns=pd.Index(["x"], name="grade"))
    with pytest.raises(ValueError, match=r"dim 'sex' holds only the total 'All'"):
        rk.Table.from_pandas(only)
