"""rk.ReleaseSet: the finest table from labels, and every refusal names the value and the
rule.  A set of one release is the release: the linked route equals the release's own
exact route (the table DP) to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk

CK = rk.CellKey(D=2, V=1.0)


def _rel(values, labels, mech=CK, margins=None, dims=("r", "c")):
    values = np.asarray(values)
    coords = {d: lab for d, lab in zip(dims, labels)}
    return rk.Release(values, margins=margins if margins is not None else {}, mechanism=mech,
                      dims=dims[:values.ndim], coords=coords)


def test_finest_table_from_labels_groups_and_missing_dims():
    a = _rel([[3, 4], [5, 6]], (["A", "B"], ["x", "y"]))
    b = _rel([[1, 2], [2, 2]], (["A1", "A2"], ["x", "y"]))
    c = _rel([7, 11], (["x", "y"],), dims=("c",))
    s = rk.ReleaseSet([a, b, c], groups={"r": {"A": ["A1", "A2"]}})
    assert s.dims == ("r", "c") and s.coords == {"r": ["A1", "A2", "B"], "c": ["x", "y"]}
    cells = {(e.release, e.keep, e.index): e.cells.tolist() for e in s.entries}
    assert cells[(0, ("r", "c"), (0, 1))] == [1, 3]            # A, y = A1 y + A2 y
    assert cells[(2, ("c",), (0,))] == [0, 2, 4]              # x over every region
    np.testing.assert_array_equal(s.published, [[1, 2], [2, 2], [5, 6]])
    lone = rk.ReleaseSet([a, c], groups={"r": {"A": ["A1", "A2"]}})
    assert np.isnan(lone.published[:2]).all() and lone.published[2, 1] == 6


@pytest.mark.parametrize("mech", [rk.CellKey(D=2, V=1.0), rk.RandomRounding(3),
                                  pytest.param(rk.NoisyCounts("geometric", scale=1.0),
                                               marks=pytest.mark.slow)])
def test_a_set_of_one_is_the_release(mech):
    t = rk.Table(np.array([[4, 1, 3], [2, 6, 0]]), dims=("r", "c"))
    rel = mech.protect(t, np.random.default_rng(3))
    prior = rk.priors.Poisson(3.0)
    # the set's routes multiply the entries' probabilities: the same likelihood as the
    # release's route 'dp' (under auto the cell key method's release goes to its key chains)
    one = rk.posterior(rel, prior, route="dp")
    via = rk.posterior(rk.ReleaseSet([rel]), prior)
    assert via.attrs["route"] == "linked-dp" and one.attrs["route"] == "dp"
    np.testing.assert_allclose(via.pmf.reindex_like(one.pmf, fill_value=0).values,
                               one.pmf.values, atol=1e-9)
    assert via.log_evidence == pytest.approx(one.log_evidence, abs=1e-8)
    for keep, tot in one.totals.items():
        np.testing.assert_allclose(
            via.releases[0].totals[keep].pmf.reindex_like(tot.pmf, fill_value=0).values,
            tot.pmf.values, atol=1e-9)


def test_a_list_of_releases_is_a_set():
    a = _rel([[3, 4]], (["A"], ["x", "y"]))
    b = _rel([[5, 6]], (["B"], ["x", "y"]))
    post = rk.posterior([a, b], rk.priors.Flat(0, 10))
    assert post.coords["r"] == ["A", "B"] and len(post.releases) == 2


@pytest.mark.parametrize("build, match", [
    (lambda: rk.ReleaseSet([]), "at least one release"),
    (lambda: rk.ReleaseSet([_rel([[1, 2]], (["A"], ["x", "y"]))],
                           groups={"r": {"Z": ["A1"]}}), "'Z' of dim 'r' is a label of no"),
    (lambda: rk.ReleaseSet([_rel([[1, 2]], (["A"], ["x", "y"]))],
                           groups={"q": {"A": ["A1"]}}), "groups name dims"),
    (lambda: rk.ReleaseSet([_rel([[1, 2], [3, 4]], (["A", "A1"], ["x", "y"]))],
                           groups={"r": {"A": ["A1", "A2"]}}), "overlap"),
    (lambda: rk.ReleaseSet([_rel([[1, 2]], (["A"], ["x", "y"]))],
                           groups={"r": {"A": ["A1", "A1"]}}), "twice"),
    (lambda: rk.ReleaseSet([_rel([[1, 2]], (["A"], ["x", "y"]))],
                           groups={"r": {"A": ["B"], "B": ["C"]}}), "itself a group"),
    (lambda: rk.ReleaseSet([_rel([[1, 2]], ([1], ["x", "y"])),
                            _rel([[1, 2]], (["1"], ["x", "y"]))]), "labels 1 and '1'"),
    (lambda: rk.ReleaseSet([rk.Release(None, margins={("r",): [3, 4]},
                                       mechanism=rk.MarginsOnly(), dims=("r", "c"),
                                       coords={"c": ["x", "y"]})]),
     "hides interior cells"),
])
def test_refusals(build, match):
    with pytest.raises((ValueError, TypeError), match=match):
        build()


def test_mechanisms_without_a_set_route_are_refused_by_name():
    t = rk.Table(np.array([[4, 1], [2, 6]]), dims=("r", "c"))
    rel = rk.BinomialPerturbation(5.0).protect(t, np.random.default_rng(0))
    with pytest.raises(ValueError, match="binomial cannot be analysed together"):
        rk.posterior(rk.ReleaseSet([rel]))


def test_controlled_roundings_in_a_set_carry_their_likelihoods_approximation():
    # the feasible likelihood is exact, the unbiased one a product of marginals: the set
    # route says so as the single-release route does, with the same numbers
    t = rk.Table(np.array([[4, 1], [2, 6]]), dims=("r", "c"))
    for lik in ("feasible", "unbiased"):
        rel = rk.ControlledRounding(3, likelihood=lik).protect(t, np.random.default_rng(0))
        one = rk.posterior(rel, rk.priors.Uniform())
        both = rk.posterior(rk.ReleaseSet([rel]), rk.priors.Uniform())
        assert both.attrs["route"] == "linked-dp"
        assert both.attrs["approximate"] == one.attrs["approximate"] == (lik == "unbiased")
        assert both.attrs.get("approximation", "") == one.attrs.get("approximation", "")
        np.testing.assert_allclose(both.pmf.values, one.pmf.values, atol=1e-12)


def test_keyed_releases_with_different_ptables_are_refused():
    a = _rel([[3, 4]], (["A"], ["x", "y"]))
    b = _rel([[3, 4]], (["A"], ["x", "y"]), mech=rk.CellKey(D=3, V=1.5))
    with pytest.raises(ValueError, match="different parameters"):
        rk.posterior(rk.ReleaseSet([a, b]), rk.priors.Flat(0, 9))


def test_a_finest_cell_no_number_counts_is_refused():
    a = _rel([[3, 4]], (["A"], ["x", "y"]))
    with pytest.raises(ValueError, match="counted by no published number"):
        rk.posterior(rk.ReleaseSet([a, _rel([[1]], (["B"], ["z"]))]), rk.priors.Flat(0, 9))
