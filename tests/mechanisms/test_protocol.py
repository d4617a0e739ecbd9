"""The mechanism protocol, run over every registered mechanism.

Each registered mechanism is a case: the example it declares of itself
(``Mechanism.example()``: a table, its parameters and the inputs its ``protect`` needs; read
through ``tests/reference/registry_cases.py``); the first test fails when a mechanism is
registered without one.  For every case: the JSON round trip of the mechanism and of its
release, ``protect`` gives a release the mechanism validates, the true table is a candidate
(the posterior under a prior that knows every cell exists), every route name resolves, an
unknown route and an inapplicable route are refused with the known names, and a mechanism
without routes says what to use instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from riskengine.mechanisms import REGISTRY, mechanism_from_dict
from riskengine.inference.resolve import plan, route_for
from riskengine.protocol import Example, lookup
from tests.reference.registry_cases import names, protocol_case, protocol_cases


def _t2(rng, shape=(3, 3), lam=4.0):
    return rk.Table(rng.poisson(lam, size=shape) + 1, dims=("v", "w"))


def test_every_registered_mechanism_has_a_case():
    assert set(protocol_cases()) == set(REGISTRY)
    for name, cls in REGISTRY.items():
        ex = cls.example()       # NotImplementedError: "declares no example of itself"
        assert isinstance(ex, Example) and ex.cls is cls, name
        # the parameters build the mechanism, as a config or --param gives them
        again = cls.from_config(dict(ex.params), shape=ex.table.shape, dims=ex.table.dims)
        assert again.to_dict() == ex.mechanism.to_dict()


def test_a_mechanism_without_an_example_says_how_to_declare_one():
    with pytest.raises(NotImplementedError, match=r"mechanism 'mechanism' \(Mechanism\) "
                                                  r"declares no example of itself: give it a "
                                                  r"classmethod example"):
        rk.Mechanism.example()


def test_registry_names_and_aliases_resolve():
    for name, cls in REGISTRY.items():
        assert lookup(name) is cls
        for a in cls.aliases:
            assert lookup(a) is cls
    with pytest.raises(ValueError, match="unknown mechanism 'bogus'; known: .*cyclic"):
        lookup("bogus")


@pytest.fixture(params=names())
def case(request, rng):
    return protocol_case(request.param, rng)


def test_json_round_trips(case):
    mech, _, rel = case
    assert mech_from(mech).to_dict() == mech.to_dict()
    assert rk.Release.from_json(rel.to_json()) == rel


def mech_from(mech):
    return mechanism_from_dict(mech.to_dict())


def test_protect_gives_a_release_the_mechanism_validates(case):
    mech, table, rel = case
    assert isinstance(rel, rk.Release)
    assert rel.mechanism.to_dict() == mech.to_dict()
    assert rel.dims == table.dims and rel.shape == table.shape
    assert rel.coords == table.coords
    mech.validate_release(rel)


def test_true_table_is_a_candidate(case):
    mech, table, rel = case
    if not mech.routes:
        pytest.skip(f"{mech.name} has no inference route")
    if rel.kind != "count":
        pytest.skip("magnitude releases have no integer candidates")
    knows = rk.priors.Uniform().known(np.ones(table.shape, bool), table.values.ravel())
    post = rk.posterior(rel, knows)
    np.testing.assert_allclose(post.prob_exact(table).values, 1.0)
    assert post.n_candidates in (1, None)       # None: unbounded noise (noted in attrs)


@pytest.mark.slow
def test_route_names_resolve_and_unknown_routes_are_refused(case):
    mech, _, rel = case
    prior = rk.priors.Uniform()
    if not mech.routes:
        with pytest.raises(ValueError, match="no inference route") as exc:
            rk.posterior(rel, prior)
        assert mech.no_route in str(exc.value)
        with pytest.raises(ValueError, match="no inference route"):
            rk.count_candidates(rel, prior)
        return
    names = [r.name for r in mech.routes]
    for r in mech.routes:
        why = r.applies(plan(rel, prior))
        if why is None:
            post = rk.posterior(rel, prior, route=r.name)
            assert post.attrs["route"] == r.name
            np.testing.assert_allclose(post.probs.sum(-1), 1.0, rtol=1e-12)
        else:
            with pytest.raises(ValueError, match=f"route '{r.name}' cannot answer"):
                rk.posterior(rel, prior, route=r.name)
    auto = rk.posterior(rel, prior)
    assert auto.attrs["route"] in names and auto.attrs["route_reason"]
    for call in (rk.posterior, rk.count_candidates):
        with pytest.raises(ValueError, match="unknown route 'bogus' for .*known: auto"):
            call(rel, prior, route="bogus")
    if auto.n_candidates is None:
        assert auto.attrs["n_candidates_note"]


def test_auto_route_respects_the_memory_budget(rng):
    t = _t2(rng, (4, 4), 10.0)
    rel = rk.MarginsOnly().protect(t)
    with pytest.raises(ValueError, match=r"no posterior route fits .*more than the memory "
                                         r"budget of 1 kB.*raise memory="):
        rk.posterior(rel, memory=1000)
    with pytest.raises(ValueError, match=r"route 'dp' cannot answer .*memory budget"):
        rk.posterior(rel, route="dp", memory="1kB")
    route, reason = route_for(rel, rk.priors.Uniform(), memory="1GB")
    assert route.name == "halves" and "first route" in reason      # 4 rows, uniform prior
    route, reason = route_for(rel, rk.priors.Poisson(2.0), memory="1GB")
    assert route.name == "dp" and "halves: the half-split route covers" in reason


def test_a_forced_route_that_does_not_apply_names_the_reason(rng):
    rel = rk.MarginsOnly().protect(_t2(rng))
    with pytest.raises(ValueError, match="route 'enumerate' cannot answer this release: the "
                                         "3-D enumerator covers 3-D tables.*routes that apply: "
                                         "three-by-three, halves, dp"):
        rk.posterior(rel, route="enumerate")


def test_from_config_names_the_valid_keys():
    with pytest.raises(ValueError, match="unknown parameter 'bse' for mechanism "
                                         "'controlled_rounding'; valid: base, method"):
        rk.ControlledRounding.from_config({"bse": 3})
    with pytest.raises(ValueError, match="needs parameter 'base'"):
        rk.ControlledRounding.from_config({})
    m = rk.CyclicPerturbation.from_config({"design": "staircase", "alpha": 0.1}, shape=(3, 4))
    assert m.cycles.shape == (4, 3, 4) and m.alpha == 0.1 and m.beta == 0.25
