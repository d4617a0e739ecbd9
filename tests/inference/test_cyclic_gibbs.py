"""The Monte Carlo route for cyclic perturbation against the exact routes.

Reference: the structured route's exact posterior (sum-product over the cycle signs,
itself tested against brute force in test_cyclic.py) on the same release.  Tolerances as
for the other Gibbs routes: every cell's posterior mean within 5 of its arviz MCSE (plus
1e-9), >= 99 % of the (cell, value) probabilities within 4 of their own MCSE (plus 1e-3),
every probability within 0.05.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.inference.cyclic_gibbs import CyclicGibbs


def _pmf_on(post, lo, hi):
    return np.stack([post.prob(np.full(post.shape, v)).values for v in range(lo, hi + 1)], -1)


def _indicator_mcse(post, lo, hi):
    from riskengine import _arviz
    ch = post.chains.reshape(post.chains.shape[:2] + (-1,))
    ind = (ch[..., None] == np.arange(lo, hi + 1)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _arviz.arviz().mcse(xr.Dataset({"p": (("chain", "draw", "cell", "v"), ind)}))
    m = m["p"].values
    const = ind.min(axis=(0, 1)) == ind.max(axis=(0, 1))
    return np.where(const, 0.0, m).reshape(post.shape + (-1,))


CASES = [(design, rule, k) for design in ("staircase", "diagonal")
         for rule in ("negative", "any_zero") for k in range(2)]


@pytest.mark.parametrize("design, rule, k", CASES)
@pytest.mark.parametrize("prior", [rk.priors.Uniform(), rk.priors.Poisson(2.0)],
                         ids=["uniform", "poisson"])
def test_cyclic_gibbs_agrees_with_the_exact_route(design, rule, k, prior):
    rng = np.random.default_rng(hash((design, rule, k)) % 2**32)
    shape = (3, 4) if design == "staircase" else (4, 4)
    cyc = rk.cycles.design(design, shape)
    t = rk.Table(rng.poisson(float(rng.uniform(0.5, 3)), size=shape), dims=("a", "b"))
    alpha, beta = float(rng.uniform(0.1, 0.45)), float(rng.uniform(0.1, 0.45))
    rel = rk.CyclicPerturbation(cyc, alpha, beta, rule=rule).protect(t, rng)
    exact = rk.posterior(rel, prior, route="structured")
    mc = CyclicGibbs(draws=1500).run(rel, prior, memory=4e9)
    assert mc.attrs["converged"] == 1, mc.attrs["diagnostics"]
    assert mc.attrs["approximate"] == 1
    diff = np.abs(mc.mean().values - exact.mean().values)
    assert (diff <= 5 * mc.diagnostics["mcse_mean"].values + 1e-9).all()
    lo = int(min(exact.start.min(), mc.start.min()))
    hi = int(max((exact.start + exact.width).max(), (mc.start + mc.width).max()))
    err = np.abs(_pmf_on(mc, lo, hi) - _pmf_on(exact, lo, hi))
    assert err.max() <= 0.05
    assert (err <= 4 * _indicator_mcse(mc, lo, hi) + 1e-3).mean() >= 0.99
    # every draw keeps the margins and is published table minus a signed sum of cycles
    d = mc.chains.reshape((-1,) + shape)
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(t.values.sum(1), (len(d), shape[0])))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(t.values.sum(0), (len(d), shape[1])))
    assert (d >= 0).all()


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
    assert post.attrs["approximate"] == 1 and post.n_candidates is None
    d = post.sample(500, np.random.default_rng(1)).values
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(t.values.sum(1), (500, 5)))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(t.values.sum(0), (500, 5)))
