"""The Monte Carlo route of release sets against the exact linked route (itself tested
against the definitions in test_linked.py): random sets of tables (a region split and
whole, sub-tables, 1-D tables, random totals) under the cell key method, random rounding
and noise; agreement as issue 17 defines it (tests/reference/agreement.py: means within 5
MCSE, >= 99% of (cell, value) probabilities within 4 MCSE, every probability within
0.05); each release's own cells from the same draws; same seed, same draws."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from tests.inference.test_linked import _case
from tests.reference.agreement import monte_carlo_agrees

# agreement, not convergence, is what these tests check (short chains warn on ESS)
pytestmark = pytest.mark.filterwarnings(
    "ignore::riskengine.inference.gibbs.ConvergenceWarning")
MC = rk.MonteCarlo(chains=4, warmup=200, draws=1000)
GROUPS = {"r": {"G": ["r0", "r1"]}}


@pytest.mark.parametrize("seed", [seed if seed < 2 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(8)])
@pytest.mark.parametrize("kind", ["cellkey", "rounding", "noise"])
def test_monte_carlo_agrees_with_the_exact_route(seed, kind):
    _, _, releases, _, _, _ = _case(5000 + seed, kind)
    rset = rk.ReleaseSet(releases, groups=GROUPS)
    prior = rk.priors.Poisson(2.0)
    # the set Gibbs route's likelihood is the linked route's (for the cell key method the
    # product over entries, which the exact set route keys-crossing does not take)
    route = "linked-dp" if kind == "cellkey" else "auto"
    try:
        exact = rk.posterior(rset, prior, route=route)
    except ValueError:
        with pytest.raises(ValueError):
            rk.posterior(rset, prior, route="mcmc", mcmc=MC)
        return
    mc = rk.posterior(rset, prior, route="mcmc", mcmc=MC)
    assert mc.attrs["route"] == "gibbs" and not mc.exact
    assert mc.diagnostics is not None
    monte_carlo_agrees(mc, exact)
    for part_mc, part_ex in zip(mc.releases, exact.releases):
        assert part_mc.dims == part_ex.dims
        diff = np.abs(part_mc.mean().values - part_ex.mean().values)
        assert diff.max() < 0.2


def test_same_seed_same_draws_and_auto_takes_exact_when_it_fits():
    _, _, releases, _, _, _ = _case(11, "rounding")
    rset = rk.ReleaseSet(releases, groups=GROUPS)
    a = rk.posterior(rset, rk.priors.Poisson(2.0), route="mcmc",
                     mcmc=rk.MonteCarlo(chains=2, warmup=50, draws=100, workers=1))
    b = rk.posterior(rset, rk.priors.Poisson(2.0), route="mcmc",
                     mcmc=rk.MonteCarlo(chains=2, warmup=50, draws=100, workers=2))
    assert np.array_equal(a.chains, b.chains)
    assert rk.posterior(rset, rk.priors.Poisson(2.0)).attrs["route"] == "linked-dp"


@pytest.mark.slow
def test_an_ordinary_agency_table_with_a_region_split_goes_to_monte_carlo():
    """8 regions x 6 age groups (700 records), region R7 also published as R7a + R7b, cell
    key from the records: far beyond the exact route (its estimate says why), answered by
    the chains with converged diagnostics; every draw is a candidate (each published
    number's window holds its sum)."""
    rng = np.random.default_rng(3)
    fine = [f"R{i}" for i in range(7)] + ["R7a", "R7b"]
    ages = [f"a{j}" for j in range(6)]
    p = np.r_[np.full(7, 0.11), 0.17, 0.06]
    rec = {"region": rng.choice(fine, 700, p=p / p.sum()), "age": rng.choice(ages, 700),
           "record_key": rk.CellKey.record_keys(700, rng)}
    whole = {**rec, "region": np.where(np.isin(rec["region"], ["R7a", "R7b"]), "R7",
                                       rec["region"])}
    ck = rk.CellKey(D=2, V=1.0)
    a = ck.protect_records(rec, ("region", "age"), categories={"region": fine, "age": ages})
    b = ck.protect_records(whole, ("region", "age"),
                           categories={"region": [f"R{i}" for i in range(8)], "age": ages})
    rset = rk.ReleaseSet([a, b], groups={"region": {"R7": ["R7a", "R7b"]}})
    post = rk.posterior(rset, rk.priors.Uniform())
    assert post.attrs["route"] == "gibbs" and "linked-dp:" in post.attrs["route_reason"]
    assert post.attrs["converged"] == 1
    flat = post.chains.reshape(-1, post.chains[0, 0].size)
    span = ck.ptable
    for e in rset.entries:
        sums = flat[:, e.cells].sum(axis=1)
        y = e.value
        ok = [span.prob(y, s) > 0 for s in np.unique(sums)]
        assert all(ok), (e, np.unique(sums))


@pytest.mark.parametrize("scale", [300, pytest.param(40_000, marks=pytest.mark.slow)])
def test_monte_carlo_at_realistic_counts(scale):
    """A region of hundreds (tens of thousands) published whole and in two parts, cell
    key and random rounding together in one set: the chains agree with the exact route."""
    rng = np.random.default_rng(scale)
    x = rng.integers(scale // 2, scale, 2)
    ck, rr = rk.CellKey(D=3, V=1.5), rk.RandomRounding(10)
    keys = rng.random(3)
    parts = np.array([ck.ptable.perturb(np.array([v]), np.array([k]))[0]
                      for v, k in zip(x, keys[:2])])
    whole = int(x.sum()) + int(rng.integers(-9, 10))
    split = rk.Release(parts, margins={}, mechanism=ck, dims=("r",), coords={"r": ["a", "b"]})
    merged = rk.Release(np.array([whole - whole % 10]), margins={}, mechanism=rr, dims=("r",),
                        coords={"r": ["G"]})
    rset = rk.ReleaseSet([split, merged], groups={"r": {"G": ["a", "b"]}})
    prior = rk.priors.Poisson(0.75 * scale)
    exact = rk.posterior(rset, prior)
    mc = rk.posterior(rset, prior, route="mcmc", mcmc=MC)
    monte_carlo_agrees(mc, exact)
