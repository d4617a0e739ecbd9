import json

import numpy as np
import pytest
import xarray as xr

import riskengine as rk

CYC = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.25, beta=0.25)


def test_table_labels_and_totals():
    t = rk.Table(np.array([[1, 2, 3], [4, 5, 6]]), dims=("v", "w"),
                 coords={"v": ["a", "b"], "w": [10, 20, 30]})
    assert t.kind == "count"
    assert t.margins == (("v",), ("w",), ())
    tot = t.totals()
    assert tot[("v",)].tolist() == [6, 15]
    assert tot[("w",)].tolist() == [5, 7, 9]
    assert int(tot[()]) == 21
    da = t.data
    assert isinstance(da, xr.DataArray) and da.sel(v="b", w=20).item() == 5


def test_table_kd_default_margins():
    t = rk.Table(np.ones((2, 3, 2), int), dims=("i", "j", "k"))
    assert ("i", "j") in t.margins and ("j", "k") in t.margins and () in t.margins
    assert ("i", "j", "k") not in t.margins
    t2 = rk.Table(np.ones((2, 3, 2), int), dims=("i", "j", "k"), margins=[("i",), ("j", "k")])
    assert set(t2.margins) == {("j", "k"), ("i",), ("j",), ("k",), ()}


@pytest.mark.parametrize("bad, msg", [
    (np.array([[1, -2], [3, 4]]), "nonnegative"),
    (np.array([[1, 2.5], [3, 4]]), "magnitude"),
    (np.array([[1, np.nan], [3, 4]]), "NaN"),
])
def test_table_rejects_bad_counts(bad, msg):
    if msg == "magnitude":
        assert rk.Table(bad).kind == "magnitude"
        with pytest.raises(ValueError, match="integer counts"):
            rk.Table(bad, kind="count")
    else:
        with pytest.raises(ValueError, match=msg):
            rk.Table(bad)


def test_table_rejects_shape_disagreements():
    with pytest.raises(ValueError, match="dims"):
        rk.Table(np.ones((2, 2), int), dims=("a",))
    with pytest.raises(ValueError, match="labels"):
        rk.Table(np.ones((2, 2), int), dims=("a", "b"), coords={"a": ["x"]})


def test_release_json_round_trip_exact():
    P = np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])
    rel = rk.Release(P, mechanism=CYC, dims=("v", "w"), coords={"v": ["x", "y", "z"]})
    text = rel.to_json()
    back = rk.Release.from_json(text)
    assert back == rel
    assert back.to_json() == text
    assert json.loads(text)["version"] == 1
    assert back.mechanism.alpha == 0.25 and back.published.dtype == np.int64


def test_release_json_rejects_wrong_format_and_version():
    rel = rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=CYC)
    d = rel.to_dict()
    d["version"] = 99
    with pytest.raises(ValueError, match="version 99"):
        rk.Release.from_dict(d)
    with pytest.raises(ValueError, match="not a riskengine release"):
        rk.Release.from_json('{"format": "x"}')
    d = rel.to_dict()
    d["mechanism"]["name"] = "nope"
    with pytest.raises(ValueError, match="unknown mechanism 'nope'; known: .*cyclic"):
        rk.Release.from_dict(d)


def test_release_margins_must_add_up():
    P = np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])
    with pytest.raises(ValueError, match="does not add up to margin"):
        rk.Release(P, margins={("dim_0",): [6, 7, 8], ("dim_1",): [6, 8, 7], (): 21},
                   mechanism=CYC)
    with pytest.raises(ValueError, match="margins do not add up"):
        rk.Release(P, margins={("dim_0",): [6, 7, 8], (): 22}, mechanism=CYC)
    with pytest.raises(ValueError, match="must have shape"):
        rk.Release(P, margins={("dim_0",): [6, 7]}, mechanism=CYC)


def test_release_rejects_cycle_that_breaks_margin():
    bad = np.zeros((1, 3, 3), int)
    bad[0, 0, 0], bad[0, 0, 1] = 1, -1          # row total kept, column totals broken
    mech = rk.CyclicPerturbation(bad, alpha=0.2, beta=0.2)
    with pytest.raises(ValueError, match=r"cycle 0 breaks the published margin \('dim_1',\)"):
        rk.Release(np.ones((3, 3), int), mechanism=mech)


def test_release_rejects_negative_noninteger_and_nan_for_cyclic():
    with pytest.raises(ValueError, match="nonnegative counts, got -1"):
        rk.Release(np.array([[3, -1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=CYC)
    with pytest.raises(ValueError, match="integer"):
        rk.Release(np.array([[3, 1.5, 2], [2, 4, 1], [1, 2, 5]]), mechanism=CYC, kind="count")
    with pytest.raises(ValueError, match="no suppressed"):
        rk.Release(np.array([[3, np.nan, 2], [2, 4, 1], [1, 2, 5]]),
                   margins={(): 20}, mechanism=CYC)


def test_mechanism_parameter_errors():
    C = rk.cycles.diagonal(3)
    with pytest.raises(ValueError, match="alpha \\+ beta must be <= 1, got alpha=0.7, beta=0.5"):
        rk.CyclicPerturbation(C, alpha=0.7, beta=0.5)
    with pytest.raises(ValueError, match="probability in \\[0, 1\\]"):
        rk.CyclicPerturbation(C, alpha=-0.1, beta=0.5)
    with pytest.raises(ValueError, match="unknown rule 'zero'; known: 'negative', 'any_zero'"):
        rk.CyclicPerturbation(C, alpha=0.1, beta=0.1, rule="zero")
    with pytest.raises(ValueError, match="entries must be -1, 0 or \\+1"):
        rk.CyclicPerturbation(2 * C, alpha=0.1, beta=0.1)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        rk.CyclicPerturbation(C, alpha=0.1, beta=0.1).protect(rk.Table(np.ones((3, 3), int)), 1)
    with pytest.raises(ValueError, match="unknown route"):
        rk.posterior(rk.Release(np.ones((3, 3), int), mechanism=CYC), route="magic")


def test_protect_same_seed_same_release_and_margins_kept():
    t = rk.Table(np.random.default_rng(0).poisson(3, size=(5, 5)))
    mech = rk.CyclicPerturbation(rk.cycles.diagonal(5), alpha=0.3, beta=0.3)
    a = mech.protect(t, np.random.default_rng(7))
    b = mech.protect(t, np.random.default_rng(7))
    assert a == b
    for k, v in t.totals().items():
        assert np.array_equal(a.margins[k], v)
    assert a.published.min() >= 0
    assert t.values.flags.writeable is False   # the input is never modified


def test_empty_and_boolean_tables_are_refused_at_construction():
    """A zero-size table would fail later inside a reduction, a boolean array (a mask) is
    not a table of counts: both refused at once, naming the dim / the dtype (issue 26)."""
    import numpy as np
    import pytest

    import riskengine as rk
    with pytest.raises(ValueError, match="dim 'w' has none"):
        rk.Table(np.zeros((2, 0), int), dims=("v", "w"))
    with pytest.raises(TypeError, match="boolean array"):
        rk.Table(np.array([[True, False], [False, True]]))
    assert rk.Table(np.array([[True, False]]).astype(int)).values.tolist() == [[1, 0]]
