"""The Monte Carlo route of the resampling mechanisms (route ``mcmc``: Gibbs over pairs of
cells with the exact joint likelihood) against exact answers.

References: the exact joint likelihood (``mechanism.log_likelihood``, itself tested
against brute force from the definitions in test_resampling_joint.py) and the joint
route's enumeration of every candidate (also tested against brute force there).
Tolerances: the chain's incremental likelihoods equal the exact ones within 1e-9
(absolute, in log); posteriors as for the other Monte Carlo routes (issue 17): >= 99 % of
the (cell, value) probabilities within 4 of their arviz MCSE (+ 1e-3), every cell's mean
within 5 MCSE, every probability within 0.05.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import riskengine as rk
from riskengine.inference import joint_mcmc
from riskengine.inference.gibbs import ConvergenceWarning
from riskengine.inference.resolve import plan, route_for
from tests.reference.agreement import indicator_mcse, monte_carlo_agrees, pmf_on

DIMS = ("v", "w")


def _route(mech) -> joint_mcmc.JointMCMC:
    return next(r for r in mech.routes if r.name == "mcmc")


def _mc(rel, prior, warmup, draws):
    """The Monte Carlo route's posterior with these chain settings."""
    return rk.posterior(rel, prior, route="mcmc", memory=4e9,
                        mcmc=rk.MonteCarlo(warmup=warmup, draws=draws))


def _mech(kind, rng):
    S = float(rng.choice([1.5, 2.0, 3.0]))
    if kind == "bootstrap":
        return rk.Bootstrap(int(rng.integers(1, 4)), S)
    return rk.BinomialPerturbation(S, preserve=str(rng.choice(["total", "rows", "columns"])))


def _prior(rng):
    return [rk.priors.Uniform(), rk.priors.Poisson(float(rng.uniform(1, 8))),
            rk.priors.Flat(1)][int(rng.integers(0, 3))]


# --- the chain's likelihood is the exact joint likelihood ---------------------------------
@pytest.mark.parametrize("mech, shape, lam", [
    (rk.Bootstrap(3, 2.0), (2, 3), 4.0), (rk.Bootstrap(1, 1.5), (3, 3), 2.0),
    (rk.Bootstrap(2, 1.5), (8, 6), 15.0),
    pytest.param(rk.Bootstrap(5, 3.0), (4, 4), 40.0, marks=pytest.mark.slow),
    (rk.BinomialPerturbation(2.0), (2, 3), 4.0),
    (rk.BinomialPerturbation(1.5, preserve="rows"), (3, 4), 5.0),
    (rk.BinomialPerturbation(2.0), (8, 6), 15.0),
    (rk.BinomialPerturbation(3.0, preserve="columns"), (5, 3), 60.0),
])
def test_pair_likelihoods_are_the_exact_joint_likelihood(mech, shape, lam):
    """Every candidate split of random pairs at random states of the chain's support: the
    incremental likelihood (forward x backward messages) and the chain's log-space
    reference equal the group's factor of ``mechanism.log_likelihood`` (the function the
    joint route enumerates with); no candidate needed the exact fallback at these sizes
    (n up to ~700)."""
    rng = np.random.default_rng(int(lam * 10) + shape[0])
    t = rk.Table(rng.poisson(lam, size=shape) + (rng.random(shape) < 0.7), dims=DIMS)
    rel = mech.protect(t, rng)
    route = _route(mech)
    stats = np.zeros(2, np.int64)
    for gc in route._groups(plan(rel, rk.priors.Uniform())):
        if len(gc.cells) < 2:
            continue
        x = t.values.reshape(-1)[gc.cells].astype(np.int64)
        for _ in range(4):
            c, d = rng.choice(len(gc.cells), 2, replace=False)
            cand, ll = gc.pair_logliks(x, c, d, stats)
            X = np.repeat(x[None], len(cand), 0)
            X[:, c], X[:, d] = cand, x[c] + x[d] - cand
            want = gc.loglik(X)              # the group's factor of log_likelihood
            fin = np.isfinite(want)
            np.testing.assert_array_equal(np.isfinite(ll), fin)
            np.testing.assert_allclose(ll[fin], want[fin], rtol=0, atol=1e-9)
            ref = np.array([gc.chain_loglik(xi) for xi in X])
            np.testing.assert_allclose(ref[fin], want[fin], rtol=0, atol=1e-9)
            # the next state: a random candidate of positive weight
            x = X[rng.choice(np.flatnonzero(fin))]
    assert stats[0] == 0 and stats[1] > 0


# --- posteriors against the joint route ------------------------------------------------------
def _small_case(kind, rng):
    shape = [(2, 2), (2, 3), (3, 2)][int(rng.integers(0, 3))]
    T = rng.poisson(float(rng.uniform(1.5, 4)), size=shape) + 1
    mech = _mech(kind, rng)
    return rk.Table(T, dims=DIMS), mech.protect(rk.Table(T, dims=DIMS), rng)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bootstrap", "binomial"])
def test_mcmc_agrees_with_the_joint_route_on_random_tables(kind):
    """30 random small tables per mechanism where the joint route runs (2 x 2 to 3 x 2,
    n 8-35, M 1-3, S 1.5-3, every
    preserve, three priors): >= 99 % of all (cell, value) probabilities within 4 MCSE of
    the exact joint posterior; per table every mean within 5 MCSE and every probability
    within 0.05; every draw keeps the published totals."""
    rng = np.random.default_rng(17 if kind == "bootstrap" else 18)
    inside = pairs = 0
    done = 0
    while done < 30:
        t, rel = _small_case(kind, rng)
        prior = _prior(rng)
        if route_for(rel, prior)[0].name != "joint":
            continue                                 # beyond the joint route: no reference
        done += 1
        exact = rk.posterior(rel, prior)
        mc = _mc(rel, prior, 100, 1000)
        assert mc.attrs["converged"] == 1, mc.attrs["diagnostics"]
        lo = int(min(exact.start.min(), mc.start.min()))
        hi = int(max((exact.start + exact.width).max(), (mc.start + mc.width).max()))
        err = np.abs(pmf_on(mc, lo, hi) - pmf_on(exact, lo, hi))
        inside += int((err <= 4 * indicator_mcse(mc, lo, hi) + 1e-3).sum())
        pairs += err.size
        assert err.max() <= 0.05, (rel.mechanism, t.values.tolist())
        z = np.abs(mc.mean().values - exact.mean().values)
        assert (z <= 5 * mc.diagnostics["mcse_mean"].values + 1e-9).all()
        d = mc.chains.reshape((-1,) + rel.shape)
        for cells, n in rel.mechanism._joint_groups(rel):
            assert (d.reshape(len(d), -1)[:, cells].sum(1) == n).all()
    assert inside / pairs >= 0.99, inside / pairs


@pytest.mark.slow
def test_realistic_counts_against_the_joint_route():
    """n in the hundreds with two free cells (a 1 x 3 table: the joint route enumerates a
    few hundred candidates): the chain agrees with the exact joint posterior."""
    rng = np.random.default_rng(3)
    for mech in (rk.Bootstrap(3, 2.0), rk.BinomialPerturbation(2.0)):
        t = rk.Table(np.array([[180, 95, 240]]), dims=DIMS)
        rel = mech.protect(t, rng)
        exact = rk.posterior(rel, rk.priors.Uniform())
        assert exact.attrs["route"] == "joint" and exact.n_candidates > 100
        mc = _mc(rel, rk.priors.Uniform(), 100, 1500)
        assert mc.attrs["converged"] == 1
        monte_carlo_agrees(mc, exact)


# --- irreducibility -----------------------------------------------------------------------------
def _connected(X: np.ndarray) -> bool:
    """Whether the candidate vectors ``X`` (C, K) are connected by moves that change two
    cells (the pair redraws' moves)."""
    index = {x.tobytes(): i for i, x in enumerate(X)}
    seen = {0}
    stack = [0]
    K = X.shape[1]
    while stack:
        x = X[stack.pop()]
        for c in range(K):
            for d in range(K):
                if c == d:
                    continue
                for a in range(x[c] + x[d] + 1):
                    y = x.copy()
                    y[c], y[d] = a, x[c] + x[d] - a
                    j = index.get(y.tobytes())
                    if j is not None and j not in seen:
                        seen.add(j)
                        stack.append(j)
    return len(seen) == len(X)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bootstrap", "binomial"])
def test_the_candidate_sets_are_connected_by_pair_moves(kind):
    """The joint route's enumeration of every candidate (positive prior x likelihood) on
    40 random small cases, published zeros included: connected by the pair moves, as the
    proof in joint_mcmc says; and the chain's candidate values per cell are those the
    enumeration uses."""
    rng = np.random.default_rng(5 if kind == "bootstrap" else 6)
    joint = rk.Bootstrap.routes[0]
    for _ in range(40):
        shape = [(2, 2), (2, 3), (1, 4)][int(rng.integers(0, 3))]
        T = rng.poisson(float(rng.uniform(0.5, 4)), size=shape)
        T.flat[0] += 1
        mech = _mech(kind, rng)
        rel = mech.protect(rk.Table(T, dims=DIMS), rng)
        prior = _prior(rng)
        try:
            model, parts = joint._run(plan(rel, prior))
        except ValueError:
            continue
        groups = _route(mech)._groups(plan(rel, prior))
        for g, p, gc in zip(model.groups, parts, groups):
            assert _connected(p.X), (mech, T.tolist(), rel.published.tolist())
            used = np.zeros_like(gc.ok)
            used[np.arange(len(g.cells))[None, :].repeat(len(p.X), 0), p.X] = True
            assert (used <= gc.ok).all()


def test_the_chain_visits_every_candidate():
    """A tiny case with few candidates: the chains visit exactly the enumerated set."""
    rel = rk.Release(np.array([[3, 2, 1]]), margins={(): 6}, mechanism=rk.Bootstrap(1, 3.0),
                     dims=DIMS)
    _, parts = rk.Bootstrap.routes[0]._run(plan(rel, rk.priors.Uniform()))
    want = {x.tobytes() for x in parts[0].X}
    mc = _mc(rel, rk.priors.Uniform(), 20, 3000)
    seen = {x.tobytes() for x in mc.chains.reshape(-1, 3).astype(np.int64)}
    assert seen == want and len(want) >= 8


# --- reproducibility, routes, labels -------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
def test_same_seed_same_draws_whatever_the_workers():
    rng = np.random.default_rng(8)
    t = rk.Table(rng.poisson(5, size=(3, 3)) + 1, dims=DIMS)
    rel = rk.BinomialPerturbation(2.0, preserve="rows").protect(t, rng)
    runs = [rk.posterior(rel, route="mcmc", memory=4e9,
                         mcmc=rk.MonteCarlo(chains=3, warmup=10, draws=200, workers=w))
            for w in (1, 2, 3)]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0].chains, other.chains)
    again = rk.posterior(rel, route="mcmc", mcmc=rk.MonteCarlo(3, 10, 200, seed=2))
    other = rk.posterior(rel, route="mcmc", mcmc=rk.MonteCarlo(3, 10, 200, seed=3))
    same = rk.posterior(rel, route="mcmc", mcmc=rk.MonteCarlo(3, 10, 200, seed=2, workers=1))
    np.testing.assert_array_equal(again.chains, same.chains)
    assert not np.array_equal(again.chains, other.chains)


def test_auto_takes_joint_then_mcmc_then_cells():
    """route='auto': the joint route where it fits (unchanged), the chain beyond it when its
    estimated time is below MAX_SECONDS, the per-cell approximation beyond that; each
    says why."""
    small = rk.Bootstrap(3, 2.0).protect(rk.Table(np.array([[4, 1], [2, 3]]), dims=DIMS),
                                         np.random.default_rng(0))
    assert route_for(small, rk.priors.Uniform())[0].name == "joint"
    big = rk.Bootstrap(3, 2.0).protect(
        rk.Table(np.random.default_rng(1).poisson(6, size=(5, 5)), dims=DIMS),
        np.random.default_rng(0))
    r, why = route_for(big, rk.priors.Uniform())
    assert r.name == "mcmc" and "passed over: joint: " in why and "candidate tables" in why
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        post = rk.posterior(big, rk.priors.Uniform(),
                            mcmc=rk.MonteCarlo(chains=2, warmup=30, draws=300))
    assert post.attrs["route"] == "mcmc" and not post.exact
    assert post.attrs["method"] == "bootstrap/mcmc"
    assert post.attrs["approximation"].startswith("Monte Carlo: Gibbs over pairs of cells "
                                                  "with the exact joint likelihood, 2 chains")
    assert "recomputed in log space" in post.attrs["exact_fallbacks"]
    assert post.n_candidates is None and post.diagnostics.attrs["chains"] == 2
    d = post.sample(200, np.random.default_rng(0)).values
    assert (d.sum(axis=(1, 2)) == big.margins[()]).all()
    tot = post.totals[("v",)]                       # row totals: unpublished, from the draws
    np.testing.assert_allclose(tot.probs.sum(-1), 1.0)
    cost = r.estimate(plan(big, rk.priors.Uniform()))
    assert not cost.too_long and "sweeps of pair redraws" in cost.detail
    old = joint_mcmc.MAX_SECONDS
    try:
        joint_mcmc.MAX_SECONDS = 1e-6
        r, why = route_for(big, rk.priors.Uniform())
        assert r.name == "cells" and "mcmc: the Monte Carlo route would take about" in why
        assert route_for(big, rk.priors.Uniform(), "mcmc")[0].name == "mcmc"
    finally:
        joint_mcmc.MAX_SECONDS = old
    P = np.full((200, 200), 3)                      # too large to build: per-cell route
    huge = rk.Release(P, margins={(): int(P.sum())}, mechanism=rk.Bootstrap(2, 2.0))
    why = next(r for r in rk.Bootstrap.routes if r.name == "mcmc").applies(
        plan(huge, rk.priors.Uniform()))
    assert "(cell, original value) pairs" in why and "Monte Carlo route" in why
