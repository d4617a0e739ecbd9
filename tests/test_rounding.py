"""Controlled rounding and margins only: seed numbers, protection properties, validation."""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

import riskengine as rk
from riskengine.mechanisms._cox import extended as _extended
from tests import seed003 as S

# Seed 004, "Controlled Random Rounding": the 4 x 5 original table (base 5)
SEED004 = np.array([[37, 3, 30, 6, 4], [1, 16, 23, 5, 15], [30, 15, 8, 27, 10], [7, 1, 4, 7, 21]])
# Seed 003, "Controlled Rounding": the base-3 rounding of its 4 x 4 table (interior)
SEED003_ROUNDED = np.array([[15, 0, 3, 0], [21, 9, 12, 15], [3, 9, 9, 3], [12, 15, 6, 3]])


def test_seed003_margins_only_count():
    """Seed 003: '18,272,363,056 tables have our margins' — exact."""
    rel = rk.MarginsOnly().protect(rk.Table(S.ORIGINAL_2D, dims=("v", "w")))
    assert rk.count_candidates(rel) == S.N_TABLES_MARGINS == 18_272_363_056


def test_seed003_rounding_count():
    """Seed 003: '1,025,908,683 possible original tables' for its base-3 rounding — exact."""
    rel = rk.Release(SEED003_ROUNDED, mechanism=rk.ControlledRounding(3), dims=("v", "w"))
    assert rk.count_candidates(rel) == S.N_TABLES_ROUNDING == 1_025_908_683
    # the seed's rounded table is a controlled rounding of its original
    assert np.abs(SEED003_ROUNDED - S.ORIGINAL_2D).max() <= 2
    post = rk.posterior(rel)
    assert post.n_candidates == 1_025_908_683
    assert post.prob_exact(S.ORIGINAL_2D).values.min() > 0


def _is_controlled_rounding(orig, rel, B):
    M = _extended(orig)
    r, c = orig.shape
    R = np.zeros_like(M)
    R[:r, :c] = rel.published
    R[:r, c] = -rel.margins[("dim_0",)]
    R[r, :c] = -rel.margins[("dim_1",)]
    R[r, c] = rel.margins[()]
    assert np.all(R % B == 0)
    assert np.all(np.abs(R - M) < B)                  # adjacent multiples
    assert np.all(R[M % B == 0] == M[M % B == 0])     # multiples (zeros) stay
    assert not R[:r, :c + 1].sum(axis=1).any() and not R[:, :c].sum(axis=0).any()


def test_unbiased_rounding_is_controlled_and_unbiased():
    """Over 3000 seeds on seed 004's 4 x 5 table (base 5): every release is a controlled
    rounding, and each entry's mean is within 4.5 standard errors of its original value."""
    mech = rk.ControlledRounding(5, method="unbiased")
    t = rk.Table(SEED004)
    rng = np.random.default_rng(2024)
    outs = []
    for _ in range(3000):
        rel = mech.protect(t, rng)
        _is_controlled_rounding(SEED004, rel, 5)
        outs.append(rel.published)
    outs = np.array(outs, dtype=float)
    mean = outs.mean(axis=0)
    se = outs.std(axis=0, ddof=1) / np.sqrt(len(outs))
    frac = SEED004 % 5 != 0
    assert np.all(np.abs(mean - SEED004)[frac] <= 4.5 * se[frac] + 1e-12)
    assert np.all(mean[~frac] == SEED004[~frac])


def test_same_seed_same_rounding():
    mech = rk.ControlledRounding(5)
    a = mech.protect(rk.Table(SEED004), np.random.default_rng(5))
    b = mech.protect(rk.Table(SEED004), np.random.default_rng(5))
    assert a == b


def _distortion(orig, pub):
    return np.abs(pub - orig).sum()


@pytest.mark.parametrize("seed", range(15))
def test_optimal_rounding_attains_optimum(seed):
    """The optimal method's distortion equals (a) the LP relaxation optimum (total
    unimodularity) and (b) the minimum over every controlled rounding (brute force)."""
    rng = np.random.default_rng(seed)
    B = int(rng.integers(2, 6))
    shape = [(2, 2), (2, 3), (3, 3)][seed % 3]
    T = rng.poisson(6, size=shape)
    rel = rk.ControlledRounding(B, method="optimal").protect(rk.Table(T))
    _is_controlled_rounding(T, rel, B)
    got = _distortion(T, rel.published)
    # brute force over all roundings of the extended matrix
    M = _extended(T)
    nm = np.argwhere(M % B != 0)
    best = np.inf
    for ups in itertools.product((0, 1), repeat=len(nm)):
        R = (M // B) * B
        for (i, j), u in zip(nm, ups):
            R[i, j] += B * u
        if R.sum(axis=0).any() or R.sum(axis=1).any():
            continue
        best = min(best, _distortion(T, R[:-1, :-1]))
    assert got == best
    # LP relaxation (y in [0, 1]) has the same optimum
    fl = (M // B) * B
    frac = M - fl
    n = len(nm)
    cost = np.array([(B - 2 * frac[i, j]) if (i < shape[0] and j < shape[1]) else 0.0
                     for i, j in nm])
    A = []
    b = []
    for i in range(M.shape[0]):
        A.append([1.0 if p[0] == i else 0.0 for p in nm])
        b.append(-fl[i].sum() / B)
    for j in range(M.shape[1]):
        A.append([1.0 if p[1] == j else 0.0 for p in nm])
        b.append(-fl[:, j].sum() / B)
    if n:
        lp = linprog(cost, A_eq=np.array(A), b_eq=np.array(b), bounds=(0, 1), method="highs")
        const = sum(frac[i, j] for i, j in nm if i < shape[0] and j < shape[1])
        assert lp.fun + const == pytest.approx(got, abs=1e-9)


def test_rounding_validation_errors():
    with pytest.raises(ValueError, match="value 7 is not a multiple of the rounding base 3"):
        rk.Release(np.array([[3, 6], [9, 7]]), mechanism=rk.ControlledRounding(3),
                   margins={("dim_0",): [9, 16], ("dim_1",): [12, 13], (): 25})
    with pytest.raises(ValueError, match="base must be >= 2"):
        rk.ControlledRounding(1)
    with pytest.raises(ValueError, match="unknown likelihood"):
        rk.ControlledRounding(3, likelihood="exact")
    with pytest.raises(ValueError, match="does not add up"):
        rk.Release(np.array([[3, 6], [9, 6]]), mechanism=rk.ControlledRounding(3),
                   margins={("dim_0",): [9, 18], ("dim_1",): [12, 15], (): 27})


def test_margins_only_release_json_and_errors():
    rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]]), dims=("a", "b")))
    assert rk.Release.from_json(rel.to_json()) == rel
    with pytest.raises(ValueError, match="margins do not add up"):
        rk.Release(None, margins={("a",): [3, 7], ("b",): [4, 5], (): 10},
                   mechanism=rk.MarginsOnly(), dims=("a", "b"))


def test_hypergeometric_poisson_prior_is_rate_free():
    """Given fixed margins, a constant Poisson rate drops out (the hypergeometric law):
    any two rates give the same posterior."""
    rel = rk.MarginsOnly().protect(rk.Table(np.array([[3, 1, 2], [0, 4, 2]])))
    a = rk.posterior(rel, rk.priors.Poisson(0.7))
    b = rk.posterior(rel, rk.priors.Poisson(9.0))
    assert np.allclose(a.probs, b.probs, atol=1e-12)
