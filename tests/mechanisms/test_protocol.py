"""The mechanism protocol, run over every registered mechanism.

Each registered mechanism has a case below (a mechanism, a table, and the extra inputs its
``protect`` needs); the first test fails when a mechanism is registered without one.  For
every case: the JSON round trip of the mechanism and of its release, ``protect`` gives a
release the mechanism validates, the true table is a candidate (the posterior under a
prior that knows every cell exists), every route name resolves, an unknown route and an
inapplicable route are refused with the known names, and a mechanism without routes says
what to use instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from riskengine.mechanisms import REGISTRY, mechanism_from_dict
from riskengine.mechanisms._base import lookup, select_route


def _t2(rng, shape=(3, 3), lam=4.0):
    return rk.Table(rng.poisson(lam, size=shape) + 1, dims=("v", "w"))


def _suppression(rng):
    t = rk.Table(np.array([[20, 10, 20], [10, 10, 20], [40, 10, 10]]), dims=("v", "w"))
    sens = np.zeros((3, 3), bool)
    sens[0, 0] = True
    return rk.CellSuppression(), t, {"sensitive": sens, "protection": 0.5 * t.values}


def _cta(rng):
    t = rk.Table(np.array([[20.0, 10, 20], [10, 10, 20], [40, 10, 10]]), dims=("v", "w"))
    sens = np.zeros((3, 3), bool)
    sens[0, 0] = True
    return (rk.ControlledTabularAdjustment(), t,
            {"sensitive": sens, "protection": 5.0, "capacity": 0.5 * t.values})


CASES = {
    "cyclic": lambda rng: (rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.3, 0.2), _t2(rng), {}),
    "controlled_rounding": lambda rng: (rk.ControlledRounding(3), _t2(rng), {}),
    "margins_only": lambda rng: (rk.MarginsOnly(), _t2(rng), {}),
    "bootstrap": lambda rng: (rk.Bootstrap(M=3, S=3.0), _t2(rng, (2, 3), 6.0), {}),
    "binomial": lambda rng: (rk.BinomialPerturbation(S=3.0), _t2(rng, (2, 3), 6.0), {}),
    "cell_suppression": _suppression,
    "cta": _cta,
    "random_rounding": lambda rng: (rk.RandomRounding(3), _t2(rng), {}),
    # 2 x 3: geometric windows (all but 1e-17 of each entry's likelihood) are 2 x 40 + 1
    # wide at scale 1, a 3 x 3 table's exact DP would need tens of GB
    "noisy_counts": lambda rng: (rk.NoisyCounts("geometric", scale=1.0, clip=True),
                                 _t2(rng, (2, 3)), {}),
    "cell_key": lambda rng: (rk.CellKey(D=2, V=1.0), _t2(rng, (2, 3)), {}),
}


def test_every_registered_mechanism_has_a_case():
    assert set(CASES) == set(REGISTRY), "add a case for each registered mechanism"


def test_registry_names_and_aliases_resolve():
    for name, cls in REGISTRY.items():
        assert lookup(name) is cls
        for a in cls.aliases:
            assert lookup(a) is cls
    with pytest.raises(ValueError, match="unknown mechanism 'bogus'; known: .*cyclic"):
        lookup("bogus")


@pytest.fixture(params=sorted(CASES))
def case(request, rng):
    mech, table, kw = CASES[request.param](rng)
    rel = mech.protect(table, rng, **kw) if kw else mech.protect(table, rng)
    return mech, table, rel


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
        why = r.applies(rel, prior)
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
    route, reason = select_route(rel, rk.priors.Uniform(), memory="1GB")
    assert route.name == "halves" and "first route" in reason      # 4 rows, uniform prior
    route, reason = select_route(rel, rk.priors.Poisson(2.0), memory="1GB")
    assert route.name == "dp" and "halves: the half-split route covers" in reason


def test_a_forced_route_that_does_not_apply_names_the_reason(rng):
    rel = rk.MarginsOnly().protect(_t2(rng))
    with pytest.raises(ValueError, match="route 'enumerate' cannot answer this release: the "
                                         "3-D enumerator covers 3-D tables.*routes that apply: "
                                         "halves, dp"):
        rk.posterior(rel, route="enumerate")


def test_from_config_names_the_valid_keys():
    with pytest.raises(ValueError, match="unknown parameter 'bse' for mechanism "
                                         "'controlled_rounding'; valid: base, method"):
        rk.ControlledRounding.from_config({"bse": 3})
    with pytest.raises(ValueError, match="needs parameter 'base'"):
        rk.ControlledRounding.from_config({})
    m = rk.CyclicPerturbation.from_config({"design": "staircase", "alpha": 0.1}, shape=(3, 4))
    assert m.cycles.shape == (4, 3, 4) and m.alpha == 0.1 and m.beta == 0.25
