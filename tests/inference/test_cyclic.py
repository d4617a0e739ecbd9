"""Cyclic perturbation: both exact routes (inference/cyclic_structured.py,
cyclic_enumerate.py) against the plain-Python brute force.

Reference: tests/reference/cyclic.py (forward simulation of the mechanism from every
candidate original, candidates deduplicated in a dict).  Tolerance: 1e-9 on every
cell probability, exact equality of the candidate count.
"""

import math

import numpy as np
import pytest

import riskengine as rk
from riskengine import cycles
from tests.reference import cyclic as ref
from tests.reference import tables as tab


def _case(i):
    """Deterministic random case number i: (true table, cycles, alpha, beta, rule, prior)."""
    rng = np.random.default_rng(1000 + i)
    kind = i % 3
    if kind == 0:
        n = 3 + (i // 3) % 3                       # diagonal 3x3 .. 5x5
        C = cycles.diagonal(n)
        shape = (n, n)
    elif kind == 1:
        shape = [(2, 2), (2, 3), (3, 3), (3, 4), (2, 4)][(i // 3) % 5]
        C = cycles.elementary_moves(shape, int(rng.integers(1, 7)), rng)
    else:
        shape = [(2, 2, 2), (2, 3, 2), (3, 2, 2)][(i // 3) % 3]
        C = cycles.elementary_moves(shape, int(rng.integers(1, 5)), rng)
    lam = [0.6, 1.5, 3.0][(i // 7) % 3]            # small counts: zeros and blocking
    T = rng.poisson(lam, size=shape)
    ab = rng.dirichlet([1.0, 1.0, 1.0])
    alpha, beta = float(ab[0]), float(ab[1])
    if i % 11 == 0:
        alpha, beta = 0.5, 0.5                      # gamma = 0
    if i % 13 == 0:
        alpha, beta = 0.0, float(ab[1])             # no additions
    rule = ("negative", "any_zero")[(i // 2) % 2]
    pk = i % 4
    if pk == 0:
        prior, lp = rk.priors.Uniform(), tab.uniform_log_prior
    elif pk == 1:
        rate = float(rng.uniform(0.5, 4.0))
        prior, lp = rk.priors.Poisson(rate), tab.poisson_log_prior(rate)
    elif pk == 2:
        rate = rng.uniform(0.5, 4.0, size=shape)
        prior, lp = rk.priors.Poisson(rate), tab.poisson_log_prior(rate)
    else:
        prior = rk.priors.Flat(low=1)
        lp = lambda t: 0.0 if t.min() >= 1 else -math.inf
    return T, C, alpha, beta, rule, prior, lp


def _dense_ours(post, vmax):
    out = np.zeros(post.shape + (vmax + 1,))
    for v in range(vmax + 1):
        out[..., v] = post.prob(np.full(post.shape, v)).values
    return out


CASES = list(range(216))


@pytest.mark.parametrize("i", CASES)
def test_routes_match_brute_force(i):
    T, C, alpha, beta, rule, prior, lp = _case(i)
    table = rk.Table(T)
    mech = rk.CyclicPerturbation(C, alpha=alpha, beta=beta, rule=rule)
    rel = mech.protect(table, np.random.default_rng(i))
    post_ref, n_ref, Z = ref.cyclic_brute(rel.published, C, alpha, beta, rule, lp)
    if n_ref == 0:
        with pytest.raises(ValueError, match="no original table"):
            rk.posterior(rel, prior)
        return
    vmax = int(rel.published.max()) + C.shape[0] + 1
    want = tab.dense_cell_pmfs(tab.cell_pmfs(post_ref, T.shape), T.shape, vmax)
    for route in ("structured", "enumerate"):
        post = rk.posterior(rel, prior, route=route)
        got = _dense_ours(post, vmax)
        assert np.abs(got - want).max() <= 1e-9, route
        assert post.n_candidates == n_ref, route
        assert np.allclose(post.probs.sum(-1), 1.0, atol=1e-12)
        assert post.log_evidence == pytest.approx(math.log(Z), rel=1e-9, abs=1e-9)
        # prob_exact of the true table equals the reference marginal at the truth
        pe = post.prob_exact(T).values
        pe_ref = np.take_along_axis(want, T[..., None], axis=-1)[..., 0]
        assert np.abs(pe - pe_ref).max() <= 1e-9
    assert rk.count_candidates(rel, prior) == n_ref


@pytest.mark.parametrize("i", range(0, 60, 3))
def test_likelihood_matches_brute_force(i):
    T, C, alpha, beta, rule, _, _ = _case(i)
    mech = rk.CyclicPerturbation(C, alpha=alpha, beta=beta, rule=rule)
    rel = mech.protect(rk.Table(T), np.random.default_rng(i))
    _post_ref, _n_ref, Z = ref.cyclic_brute(rel.published, C, alpha, beta, rule,
                                          lambda t: 0.0 if np.array_equal(t, T) else -math.inf)
    assert mech.likelihood(rel, T) == pytest.approx(Z, rel=1e-12)


@pytest.mark.parametrize("seed", [seed if seed < 4 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(12)])
def test_many_dependent_moves(seed):
    """More moves than the move space has dimensions: null spaces of dimension up to 8
    (the key-deduplication path of the enumerator, and its 3-level tail)."""
    rng = np.random.default_rng(seed)
    shape = [(2, 2), (2, 3), (3, 3)][seed % 3]
    C = cycles.elementary_moves(shape, 7 + seed % 3, rng)
    T = rng.poisson(1.2, size=shape)
    alpha, beta = [(0.3, 0.2), (0.25, 0.25), (0.6, 0.1)][seed % 3]
    rule = ("negative", "any_zero")[seed % 2]
    mech = rk.CyclicPerturbation(C, alpha=alpha, beta=beta, rule=rule)
    rel = mech.protect(rk.Table(T), np.random.default_rng(seed))
    post_ref, n_ref, _ = ref.cyclic_brute(rel.published, C, alpha, beta, rule,
                                          tab.uniform_log_prior)
    vmax = int(rel.published.max()) + C.shape[0] + 1
    want = tab.dense_cell_pmfs(tab.cell_pmfs(post_ref, T.shape), T.shape, vmax)
    for route in ("structured", "enumerate"):
        post = rk.posterior(rel, rk.priors.Uniform(), route=route)
        assert np.abs(_dense_ours(post, vmax) - want).max() <= 1e-9
        assert post.n_candidates == n_ref


def test_enumeration_survives_extreme_prior_weights():
    """A prior far from the data (Poisson(0.001) on counts near 100): relative to each
    group's maximum every leaf weight underflows; the enumerator retries relative to the
    published table and agrees with the log-space structured route."""
    rng = np.random.default_rng(0)
    T = rng.poisson(100, size=(7, 7))
    mech = rk.CyclicPerturbation(cycles.diagonal(7), alpha=0.25, beta=0.25)
    rel = mech.protect(rk.Table(T), rng)
    prior = rk.priors.Poisson(0.001)
    a = rk.posterior(rel, prior, route="structured")
    b = rk.posterior(rel, prior, route="enumerate")
    assert np.abs(a.probs - b.probs).max() <= 1e-9
    assert a.log_evidence == pytest.approx(b.log_evidence, rel=1e-12)
    assert a.n_candidates == b.n_candidates
