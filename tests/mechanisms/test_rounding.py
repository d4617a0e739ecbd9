"""Controlled rounding and margins only: protection properties (checked against the
definition in tests/reference/rounding.py), optimality (brute force and LP relaxation),
validation.  Seed 003's counts: tests/seeds/test_seed003_rounding.py."""

import numpy as np
import pytest

import riskengine as rk
from riskengine.data.seeds import S004
from tests.reference import rounding as ref

# seed 004, "Controlled Random Rounding": the 4 x 5 original table, base 5
SEED004, B004 = S004.ROUNDING_TABLE, S004.ROUNDING_BASE


def _faults(orig, rel, B):
    """What the release breaks of the definition of a controlled rounding of ``orig``."""
    return ref.controlled_rounding_faults_2d(orig, rel.published, rel.margins[("dim_0",)],
                                             rel.margins[("dim_1",)], rel.margins[()], B)


@pytest.mark.slow
def test_unbiased_rounding_is_controlled_and_unbiased():
    """Over 3000 seeds on seed 004's 4 x 5 table (base 5): every release is a controlled
    rounding, and each entry's mean is within 4.5 standard errors of its original value."""
    mech = rk.ControlledRounding(B004, method="unbiased")
    t = rk.Table(SEED004)
    rng = np.random.default_rng(2024)
    outs = []
    for _ in range(3000):
        rel = mech.protect(t, rng)
        assert _faults(SEED004, rel, B004) == []
        outs.append(rel.published)
    outs = np.array(outs, dtype=float)
    mean = outs.mean(axis=0)
    se = outs.std(axis=0, ddof=1) / np.sqrt(len(outs))
    frac = SEED004 % B004 != 0
    assert np.all(np.abs(mean - SEED004)[frac] <= 4.5 * se[frac] + 1e-12)
    assert np.all(mean[~frac] == SEED004[~frac])


def test_same_seed_same_rounding():
    mech = rk.ControlledRounding(5)
    a = mech.protect(rk.Table(SEED004), np.random.default_rng(5))
    b = mech.protect(rk.Table(SEED004), np.random.default_rng(5))
    assert a == b


@pytest.mark.parametrize("seed", range(15))
def test_optimal_rounding_attains_optimum(seed):
    """The optimal method's distortion equals (a) the LP relaxation optimum (total
    unimodularity) and (b) the minimum over every controlled rounding (brute force)."""
    rng = np.random.default_rng(seed)
    B = int(rng.integers(2, 6))
    shape = [(2, 2), (2, 3), (3, 3)][seed % 3]
    T = rng.poisson(6, size=shape)
    rel = rk.ControlledRounding(B, method="optimal").protect(rk.Table(T))
    assert _faults(T, rel, B) == []
    got = ref.distortion(T, rel.published)
    # brute force over all roundings of the extended matrix
    assert got == ref.min_distortion_2d(T, B)
    # LP relaxation (y in [0, 1]) has the same optimum
    lp = ref.lp_relaxation_distortion_2d(T, B)
    if lp is not None:
        assert lp == pytest.approx(got, abs=1e-9)


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
