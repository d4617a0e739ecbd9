"""3-D margins-only releases (all 2-way margins): streaming enumeration vs brute force."""

import itertools

import numpy as np
import pytest
from scipy import stats

import riskengine as rk


def _brute(T, lp):
    I, J, K = T.shape
    m_ij, m_ik, m_jk = T.sum(2), T.sum(1), T.sum(0)
    hi = np.minimum(np.minimum(m_ij[:, :, None], m_ik[:, None, :]), m_jk[None, :, :])
    tabs, ws = [], []
    for vals in itertools.product(*[range(int(h) + 1) for h in hi.ravel()]):
        X = np.array(vals).reshape(T.shape)
        if (np.array_equal(X.sum(2), m_ij) and np.array_equal(X.sum(1), m_ik)
                and np.array_equal(X.sum(0), m_jk)):
            tabs.append(X)
            ws.append(lp(X))
    ws = np.exp(np.array(ws) - max(ws))
    ws /= ws.sum()
    return tabs, ws


@pytest.mark.parametrize("seed", range(24))
def test_3d_margins_only_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    shape = [(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)][seed % 4]
    while True:   # keep the brute force small: at most 20 000 raw value combinations
        T = rng.poisson([0.8, 1.5][seed % 2], size=shape)
        hi = np.minimum(np.minimum(T.sum(2)[:, :, None], T.sum(1)[:, None, :]),
                        T.sum(0)[None, :, :])
        if np.prod(hi + 1.0) <= 20_000:
            break
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("i", "j", "k")))
    if seed % 3 == 0:
        prior, lp = rk.priors.Uniform(), (lambda X: 0.0)
    else:
        rate = float(rng.uniform(0.5, 3))
        prior, lp = rk.priors.Poisson(rate), (lambda X: float(stats.poisson.logpmf(X, rate).sum()))
    tabs, ws = _brute(T, lp)
    post = rk.posterior(rel, prior)
    assert post.n_candidates == len(tabs) == rk.count_candidates(rel)
    for idx in np.ndindex(*shape):
        for v in range(int(max(t[idx] for t in tabs)) + 2):
            want = sum(w for t, w in zip(tabs, ws) if t[idx] == v)
            assert post.prob(np.full(shape, v)).values[idx] == pytest.approx(want, abs=1e-9)
    assert post.prob_exact(T).values.min() > 0


def test_latin_square_margins_hand_count():
    """Hand derivation: a 2 x 2 x 2 table whose 2-way margins are all 1 is a Latin square;
    there are exactly two (T and its complement), each cell 0 or 1 with probability 1/2."""
    T = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("i", "j", "k")))
    post = rk.posterior(rel)
    assert post.n_candidates == 2
    assert np.allclose(post.prob(np.ones((2, 2, 2), int)).values, 0.5)
