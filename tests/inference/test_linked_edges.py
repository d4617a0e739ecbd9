"""The linked route's edge check (issue 26 item 3): only window ends that cut an unbounded
likelihood (noise) are checked; a hard end (a random-rounding window, a count's 0) holds
any posterior mass.

The mixed set: random rounding (base 3) of a 2 x 3 table with every total, two-sided
geometric noise on its row sums and grand total, and clipped discrete Gaussian noise on
its column sums and grand total.  The brute force enumerates every finest table in a box
that holds every table the rounding allows (each cell within base - 1 of its published
multiple, so the box cuts nothing off) and weighs it by the prior times every published
number's likelihood from the definitions (tests/reference/noise.py: DESIGN.md's random
rounding, geometric and discrete Gaussian noise, a clipped 0 as the noise's lower tail),
normalised in log space.  Tolerance 1e-9 on every probability and on the log evidence
(both sides are exact sums in floating point).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import riskengine as rk
from tests.reference import noise as ref_noise

A = ["a0", "a1"]
B = ["b0", "b1", "b2"]
BASE = 3
# published values (the original [[2, 1, 4], [0, 3, 1]] rounded, and noised)
ROUNDED = np.array([[3, 0, 3], [0, 3, 3]])
ROUNDED_ROWS, ROUNDED_COLS, ROUNDED_ALL = np.array([6, 6]), np.array([3, 3, 6]), 12
GEO_ROWS, GEO_ALL, GEO_SCALE = np.array([8, 3]), 10, 1.0
GAUSS_COLS, GAUSS_ALL, GAUSS_SIGMA = np.array([0, 5, 5]), 12, 1.5


def _mixed_set():
    rr = rk.Release(ROUNDED, margins={("a",): ROUNDED_ROWS, ("b",): ROUNDED_COLS,
                                      (): np.array(ROUNDED_ALL)},
                    mechanism=rk.RandomRounding(BASE), dims=("a", "b"),
                    coords={"a": A, "b": B})
    geo = rk.Release(GEO_ROWS, margins={(): np.array(GEO_ALL)},
                     mechanism=rk.NoisyCounts("geometric", GEO_SCALE), dims=("a",),
                     coords={"a": A})
    gauss = rk.Release(GAUSS_COLS, margins={(): np.array(GAUSS_ALL)},
                       mechanism=rk.NoisyCounts("discrete_gaussian", GAUSS_SIGMA, clip=True),
                       dims=("b",), coords={"b": B})
    return rk.ReleaseSet([rr, geo, gauss])


def _brute_force(log_prior):
    """(per-cell pmf (2, 3, hi + 1), log evidence) over every table in the box."""
    hi = int(ROUNDED.max()) + BASE - 1
    rnd = ref_noise.rounding_loglik(BASE)
    geo = ref_noise.Noise("geometric", GEO_SCALE, False).loglik
    gauss = ref_noise.Noise("discrete_gaussian", GAUSS_SIGMA, True).loglik
    T = np.array(list(itertools.product(range(hi + 1), repeat=6))).reshape(-1, 2, 3)
    rows, cols, tot = T.sum(axis=2), T.sum(axis=1), T.sum(axis=(1, 2))

    def ll(f, values, y):
        table = {int(v): f(int(v), int(y)) for v in np.unique(values)}
        return np.array([table[int(v)] for v in values])

    lw = log_prior(T)
    for i, j in np.ndindex(2, 3):
        lw = lw + ll(rnd, T[:, i, j], ROUNDED[i, j])
    for i in range(2):
        lw = lw + ll(rnd, rows[:, i], ROUNDED_ROWS[i]) + ll(geo, rows[:, i], GEO_ROWS[i])
    for j in range(3):
        lw = lw + ll(rnd, cols[:, j], ROUNDED_COLS[j]) + ll(gauss, cols[:, j], GAUSS_COLS[j])
    lw = lw + ll(rnd, tot, ROUNDED_ALL) + ll(geo, tot, GEO_ALL) + ll(gauss, tot, GAUSS_ALL)
    log_z = logsumexp(lw)
    w = np.exp(lw - log_z)
    pmf = np.zeros((2, 3, hi + 1))
    for i, j in np.ndindex(2, 3):
        pmf[i, j] = np.bincount(T[:, i, j], weights=w, minlength=hi + 1)
    return pmf, float(log_z)


def _uniform(T):
    return np.zeros(T.shape[0])


def _poisson(T):
    return stats.poisson.logpmf(T, 2.5).sum(axis=(1, 2))


def _negbin(T):
    mean, size = 2.0, 1.5
    return stats.nbinom.logpmf(T, size, size / (size + mean)).sum(axis=(1, 2))


PRIORS = {"uniform": (rk.priors.Uniform(), _uniform),
          "poisson": (rk.priors.Poisson(2.5), _poisson),
          "negbin": (rk.priors.NegativeBinomial(2.0, 1.5), _negbin)}


@pytest.mark.parametrize("name", list(PRIORS))
def test_mixed_rounding_and_noise_equals_the_brute_force(name):
    prior, log_prior = PRIORS[name]
    want, log_z = _brute_force(log_prior)
    post = rk.posterior(_mixed_set(), prior)
    assert post.attrs["route"] == "linked-dp"
    got = np.zeros_like(want)
    for idx in np.ndindex(2, 3):
        start, q = int(post.start[idx]), post.probs[idx]
        for w in np.flatnonzero(q):
            assert start + w < want.shape[-1], (idx, start + w)
            got[idx + (start + w,)] = q[w]
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert post.log_evidence == pytest.approx(log_z, abs=1e-9)
    # what the old check refused: mass at the low end (above 0) of a rounding window,
    # a hard end (nothing below it rounds to the published multiple)
    low_ends = np.maximum(ROUNDED - (BASE - 1), 0)
    at_low = [want[idx + (low_ends[idx],)] for idx in np.ndindex(2, 3) if low_ends[idx] > 0]
    assert max(at_low) > 1e-3


def test_a_hard_end_of_a_cell_window_holds_any_mass():
    """A cell published by random rounding and by noise: the rounding's hard window is
    the cell's; a prior far above it puts almost all the mass on its top, and nothing is
    refused (brute force over the rounding window: the noise's likelihood times the
    rounding's times the prior, normalised)."""
    rr = rk.Release(np.array([3]), margins={}, mechanism=rk.RandomRounding(BASE),
                    dims=("r",), coords={"r": ["x"]})
    geo = rk.Release(np.array([4]), margins={}, mechanism=rk.NoisyCounts("geometric", 1.0),
                     dims=("r",), coords={"r": ["x"]})
    post = rk.posterior(rk.ReleaseSet([rr, geo]), rk.priors.Poisson(200.0))
    xs = np.arange(1, 6)
    rnd = ref_noise.rounding_loglik(BASE)
    noise = ref_noise.Noise("geometric", 1.0, False).loglik
    lw = np.array([rnd(x, 3) + noise(x, 4) + stats.poisson.logpmf(x, 200.0) for x in xs])
    want = np.exp(lw - logsumexp(lw))
    got = np.array([post.prob(np.array([x])).values[0] for x in xs])
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert got[-1] > 0.5


def test_a_cut_cell_window_with_mass_still_raises_naming_it():
    """Noise alone bounds the cells: a prior far above the published values piles the
    posterior at a noise window's top, which was cut (the noise goes on past it)."""
    geo = rk.Release(np.array([5, 3]), margins={},
                     mechanism=rk.NoisyCounts("geometric", 1.0), dims=("r",),
                     coords={"r": ["x", "y"]})
    other = rk.Release(np.array([6]), margins={},
                       mechanism=rk.NoisyCounts("geometric", 1.0), dims=("r",),
                       coords={"r": ["x"]})
    with pytest.raises(ValueError) as info:
        rk.posterior(rk.ReleaseSet([geo, other]), rk.priors.Poisson(500.0))
    msg = str(info.value)
    assert "at the high end" in msg and "was cut there" in msg
    assert "finest cell {'r': '" in msg
    assert "release 0's cell" in msg and "NoisyCounts(distribution=geometric" in msg


def test_a_cut_sum_window_with_mass_still_raises_naming_it():
    """Cells held by wide rounding windows (hard ends 1 .. 99), their sum (region G)
    published with geometric noise at 10: a Poisson(80) prior pulls the sum to the top of
    the noise's window (the likelihood falls by e^-1 a step, the prior rises by more),
    which was cut there: refused, naming the noisy region and the high end."""
    rr = rk.Release(np.array([50, 50]), margins={}, mechanism=rk.RandomRounding(50),
                    dims=("r",), coords={"r": ["x", "y"]})
    geo = rk.Release(np.array([10]), margins={}, mechanism=rk.NoisyCounts("geometric", 1.0),
                     dims=("r",), coords={"r": ["G"]})
    rset = rk.ReleaseSet([rr, geo], groups={"r": {"G": ["x", "y"]}})
    with pytest.raises(ValueError) as info:
        rk.posterior(rset, rk.priors.Poisson(80.0))
    msg = str(info.value)
    assert "at the high end" in msg and "was cut there" in msg
    assert "the sum of the records counted by release 1's cell {'r': 'G'}" in msg
    assert "release 1's cell {'r': 'G'} (published 10, NoisyCounts(" in msg
