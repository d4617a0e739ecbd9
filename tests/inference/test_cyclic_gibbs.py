"""The Monte Carlo route for cyclic perturbation against the exact routes.

Reference: the structured route's exact posterior (sum-product over the cycle signs,
itself tested against brute force in test_cyclic.py) on the same release.  Tolerances as
for the other Gibbs routes: every cell's posterior mean within 5 of its arviz MCSE (plus
1e-9), >= 99 % of the (cell, value) probabilities within 4 of their own MCSE (plus 1e-3),
every probability within 0.05.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import riskengine as rk
from tests.reference.agreement import monte_carlo_agrees

CASES = [(design, rule, k) for design in ("staircase", "diagonal")
         for rule in ("negative", "any_zero") for k in range(3)]


@pytest.mark.parametrize("design, rule, k", CASES)
@pytest.mark.parametrize("prior", [rk.priors.Uniform(),
                                   pytest.param(rk.priors.Poisson(2.0), marks=pytest.mark.slow)],
                         ids=["uniform", "poisson"])
def test_cyclic_gibbs_agrees_with_the_exact_route(design, rule, k, prior):
    # a stable seed: Python's hash() of strings is salted per process, which made the case
    # (and its outcome) change from run to run
    rng = np.random.default_rng(zlib.crc32(repr((design, rule, k)).encode()))
    shape = (3, 4) if design == "staircase" else (4, 4)
    cyc = rk.cycles.design(design, shape)
    lam = 300.0 if k == 2 else float(rng.uniform(0.5, 3))    # k = 2: cells in the hundreds
    t = rk.Table(rng.poisson(lam, size=shape), dims=("a", "b"))
    alpha, beta = float(rng.uniform(0.1, 0.45)), float(rng.uniform(0.1, 0.45))
    rel = rk.CyclicPerturbation(cyc, alpha, beta, rule=rule).protect(t, rng)
    exact = rk.posterior(rel, prior, route="structured")
    mc = rk.posterior(rel, prior, route="gibbs", memory=4e9, mcmc=rk.MonteCarlo(draws=1500))
    assert mc.attrs["converged"] == 1, mc.attrs["diagnostics"]
    assert not mc.exact
    monte_carlo_agrees(mc, exact)
    # every draw keeps the margins and is published table minus a signed sum of cycles
    d = mc.chains.reshape((-1,) + shape)
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(t.values.sum(1), (len(d), shape[0])))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(t.values.sum(0), (len(d), shape[1])))
    assert (d >= 0).all()


@pytest.mark.slow
def test_auto_takes_gibbs_when_no_exact_route_fits():
    """Every 2 x 2 elementary move of a 5 x 5 table (100 cycles, each meeting many others):
    the clique tree is too wide and 3^100 sign vectors too many; the Monte Carlo route
    answers, says so, and its draws keep the margins."""
    rng = np.random.default_rng(0)
    t = rk.Table(rng.poisson(6.0, size=(5, 5)), dims=("a", "b"))
    cyc = rk.cycles.elementary_moves((5, 5), 100, rng)
    rel = rk.CyclicPerturbation(cyc, 0.2, 0.2).protect(t, rng)
    post = rk.posterior(rel)
    assert post.attrs["route"] == "gibbs"
    assert "structured:" in post.attrs["route_reason"]
    assert not post.exact and post.n_candidates is None
    d = post.sample(500, np.random.default_rng(1)).values
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(t.values.sum(1), (500, 5)))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(t.values.sum(0), (500, 5)))


def test_random_starts_outside_the_support_restart_from_the_other_chains():
    # any_zero blocking on small counts: most random sign vectors have weight 0, and a
    # one-sweep warm-up leaves 3 of the 4 chains outside the support; they restart from
    # draws of the chain that got in (said in attrs), and the answer is still the exact one
    rng = np.random.default_rng(4)
    shape = (3, 4)
    t = rk.Table(rng.poisson(1.0, size=shape), dims=("a", "b"))
    rel = rk.CyclicPerturbation(rk.cycles.design("staircase", shape), 0.3, 0.3,
                                rule="any_zero").protect(t, rng)
    exact = rk.posterior(rel, rk.priors.Uniform(), route="structured")
    mc = rk.posterior(rel, rk.priors.Uniform(), route="gibbs",
                      mcmc=rk.MonteCarlo(warmup=1, draws=1500))
    assert mc.attrs["restarted_chains"].startswith("3 of 4 chains found no sign vector")
    assert mc.attrs["converged"] == 1, mc.attrs["diagnostics"]
    monte_carlo_agrees(mc, exact)
