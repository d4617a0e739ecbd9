"""Seed 003 (Duncan & Roehrig): what its worked examples let us check.

Reproduced: the published tables are releases of the originals under the stated
designs; 81 possible perturbed tables and the +-2 feasibility interval; the
distribution of cell (1,4).  Not reproduced (the seed does not give its zero rule
or prior, see studies/duncan_roehrig/): cells (1,2), (3,4), (4,4) and the 3-way
numbers; the tests below pin what riskengine computes for them under the stated
definitions, each checked against the brute force of tests/reference/cyclic.py.
Seed numbers: riskengine/data/seeds.py (S003).
"""

import itertools

import numpy as np
import pytest

import riskengine as rk
from riskengine.data.seeds import S003 as S
from tests.reference import cyclic as ref
from tests.reference import tables as tab


def test_perturbed_2d_is_a_cycle_combination_of_the_original():
    C = rk.cycles.diagonal(4)
    diffs = {tuple(e) for e in itertools.product((-1, 0, 1), repeat=4)
             if np.array_equal(S.ORIGINAL_2D + np.tensordot(e, C, axes=1), S.PERTURBED_2D)}
    assert diffs == {(1, 0, -1, 0)}


def test_81_possible_perturbed_tables_and_interval_pm2():
    """Slides: 3^4 = 81 possible perturbed tables; feasibility interval original +- 2."""
    C = rk.cycles.diagonal(4)
    outs = {(S.ORIGINAL_2D + np.tensordot(e, C, axes=1)).tobytes()
            for e in itertools.product((-1, 0, 1), repeat=4)}
    # the four diagonal cycles sum to zero, so e and e + (1,1,1,1) coincide
    assert len(outs) == 81 - 16
    assert rk.cycles.coverage(C).max() == 2 == rk.cycles.coverage(C).min()
    mech = rk.CyclicPerturbation(C, alpha=S.ALPHA, beta=S.BETA)
    rng = np.random.default_rng(3)
    for _ in range(200):
        rel = mech.protect(rk.Table(S.ORIGINAL_2D), rng)
        assert np.abs(rel.published - S.ORIGINAL_2D).max() <= 2
        assert rel.published.tobytes() in outs


def test_cell_14_distribution_matches_seed():
    """Seed 003, 'Results for the Example', row Pr(t(1,4) = q): two decimals (tol 0.005)."""
    rel = rk.Release(S.PERTURBED_2D, mechanism=rk.CyclicPerturbation(
        rk.cycles.diagonal(4), alpha=S.ALPHA, beta=S.BETA), dims=("v", "w"))
    post = rk.posterior(rel, rk.priors.Uniform())
    got = [float(post.prob(np.full((4, 4), q)).values[0, 3]) for q in range(6)]
    assert got == pytest.approx(S.CELL_TABLE_2D[(0, 3)], abs=0.005 + 1e-9)


@pytest.mark.parametrize("rule", ["negative", "any_zero"])
def test_2d_example_against_brute_force(rule):
    C = rk.cycles.diagonal(4)
    rel = rk.Release(S.PERTURBED_2D, mechanism=rk.CyclicPerturbation(
        C, alpha=S.ALPHA, beta=S.BETA, rule=rule), dims=("v", "w"))
    post = rk.posterior(rel, rk.priors.Uniform())
    p_ref, n_ref, _ = ref.cyclic_brute(S.PERTURBED_2D, C, S.ALPHA, S.BETA, rule,
                                       tab.uniform_log_prior)
    pm = tab.cell_pmfs(p_ref, (4, 4))
    assert post.n_candidates == n_ref
    for cell in S.CELL_TABLE_2D:
        for q in range(6):
            assert float(post.prob(np.full((4, 4), q)).values[cell]) == pytest.approx(
                pm[cell].get(q, 0.0), abs=1e-12)


def test_three_way_design_and_release():
    C = rk.cycles.seed003_three_way()
    assert C.shape == (4, 4, 4, 3)
    rk.cycles.check(C, (4, 4, 3), ("i", "j", "k"))          # every 2-way margin preserved
    assert not C.sum(axis=0).any()                          # the four sum to zero
    assert np.array_equal(S.PERTURBED_3D - S.ORIGINAL_3D, C[3])


@pytest.mark.parametrize("rule", ["negative", "any_zero"])
def test_three_way_against_brute_force(rule):
    C = rk.cycles.seed003_three_way()
    third = 1.0 / 3.0
    rel = rk.Release(S.PERTURBED_3D, mechanism=rk.CyclicPerturbation(
        C, alpha=third, beta=third, rule=rule), dims=("i", "j", "k"))
    p_ref, n_ref, _ = ref.cyclic_brute(S.PERTURBED_3D, C, third, third, rule,
                                       tab.uniform_log_prior)
    pm = tab.cell_pmfs(p_ref, (4, 4, 3))
    for route in ("structured", "enumerate"):
        post = rk.posterior(rel, rk.priors.Uniform(), route=route)
        assert post.n_candidates == n_ref
        for q in range(4):
            assert float(post.prob(np.full((4, 4, 3), q)).values[0, 0, 0]) == pytest.approx(
                pm[(0, 0, 0)].get(q, 0.0), abs=1e-12)
    # the true original is always among the candidates
    assert post.prob_exact(S.ORIGINAL_3D).values.min() > 0
