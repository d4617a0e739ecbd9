import numpy as np
import pytest

import riskengine as rk
from riskengine import cycles
from tests.reference import cyclic as ref
from tests.reference import tables as tab


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_diagonal_design(n):
    C = cycles.diagonal(n)
    cycles.check(C, (n, n))
    assert np.all(cycles.coverage(C) == 2)
    assert not C.sum(axis=0).any()          # the cycles sum to zero
    for k in range(n):                      # DESIGN.md definition, cell by cell
        for i in range(n):
            assert C[k, i, (i + k) % n] == 1 and C[k, i, (i + k + 1) % n] == -1


@pytest.mark.parametrize("shape", [(2, 3), (3, 5), (4, 4), (5, 2), (3, 7)])
def test_staircase_covers_every_cell_twice(shape):
    C = cycles.staircase(*shape)
    cycles.check(C, shape)
    assert np.all(cycles.coverage(C) == 2)
    assert np.all((C == 1).sum(axis=0) == 1) and np.all((C == -1).sum(axis=0) == 1)
    if shape[0] == shape[1]:
        assert np.array_equal(C, cycles.diagonal(shape[0]))


def test_elementary_moves_keep_all_margins(rng):
    for shape in [(2, 2), (3, 4), (2, 3, 2), (3, 3, 3)]:
        C = cycles.elementary_moves(shape, 5, rng)
        cycles.check(C, shape)
        assert np.all(np.abs(C).sum(axis=tuple(range(1, C.ndim))) == 2 ** len(shape))


def test_check_names_cycle_and_margin():
    C = np.zeros((2, 2, 2), int)
    C[0] = [[1, -1], [-1, 1]]
    C[1] = [[1, -1], [0, 0]]
    with pytest.raises(ValueError, match=r"cycle 1 breaks the published margin \('dim_1',\)"):
        cycles.check(C, (2, 2))
    with pytest.raises(ValueError, match="shape"):
        cycles.check(C, (3, 2))


def test_staircase_posterior_matches_brute_force():
    C = cycles.staircase(2, 4)
    T = np.array([[0, 3, 1, 2], [2, 0, 1, 4]])
    mech = rk.CyclicPerturbation(C, alpha=0.3, beta=0.3)
    rel = mech.protect(rk.Table(T), np.random.default_rng(2))
    post = rk.posterior(rel)
    pr, n, _ = ref.cyclic_brute(rel.published, C, 0.3, 0.3, "negative", tab.uniform_log_prior)
    pm = tab.cell_pmfs(pr, T.shape)
    assert post.n_candidates == n
    for idx, d in pm.items():
        for v, p in d.items():
            assert post.prob(np.full(T.shape, v)).values[idx] == pytest.approx(p, abs=1e-12)
