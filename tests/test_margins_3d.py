"""3-D margins-only releases (all 2-way margins): streaming enumeration vs brute force."""


import numpy as np
import pytest
from scipy import stats

import riskengine as rk


def _brute(T, lp):
    """Every table with T's 2-way margins: row-major recursion over cells, values bounded by
    what is left of the margins through the cell, each leaf checked against all margins."""
    _I, _J, K = T.shape
    m_ij, m_ik, m_jk = T.sum(2), T.sum(1), T.sum(0)
    X = np.zeros(T.shape, dtype=np.int64)
    tabs = []

    def rec(c):
        if c == T.size:
            if (np.array_equal(X.sum(2), m_ij) and np.array_equal(X.sum(1), m_ik)
                    and np.array_equal(X.sum(0), m_jk)):
                tabs.append(X.copy())
            return
        i, j, k = np.unravel_index(c, T.shape)
        room = min(m_ij[i, j] - X[i, j].sum(), m_ik[i, k] - X[i, :, k].sum(),
                   m_jk[j, k] - X[:, j, k].sum())
        values = range(int(room) + 1)
        if k == K - 1:      # the last cell of a line must use up its margin
            values = [m_ij[i, j] - X[i, j].sum()] if room >= 0 else []
        for v in values:
            if v < 0:
                continue
            X[i, j, k] = v
            rec(c + 1)
        X[i, j, k] = 0

    rec(0)
    ws = np.array([lp(t) for t in tabs])
    ws = np.exp(ws - ws.max())
    return tabs, ws / ws.sum()


@pytest.mark.parametrize("seed", range(24))
def test_3d_margins_only_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    shape = [(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)][seed % 4]
    T = rng.poisson([1.5, 3.0][seed % 2] if shape == (2, 2, 2) else 1.5, size=shape)
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("i", "j", "k")))
    if seed % 3 == 0:
        prior, lp = rk.priors.Uniform(), (lambda X: 0.0)
    else:
        rate = float(rng.uniform(0.5, 3))
        prior, lp = rk.priors.Poisson(rate), (lambda X: float(stats.poisson.logpmf(X, rate).sum()))
    tabs, ws = _brute(T, lp)
    post = rk.posterior(rel, prior)
    assert post.n_candidates == len(tabs) == rk.count_candidates(rel)
    vmax = int(max(t.max() for t in tabs)) + 1
    want = np.zeros(shape + (vmax + 1,))
    for t, w in zip(tabs, ws):
        np.put_along_axis(want, t[..., None], np.take_along_axis(want, t[..., None], -1) + w, -1)
    got = post.pmf.sel(value=slice(0, vmax)).values
    assert np.abs(got - want[..., :got.shape[-1]]).max() <= 1e-9
    assert post.pmf.sel(value=slice(vmax + 1, None)).sum() == 0
    assert post.prob_exact(T).values.min() > 0


def test_latin_square_margins_hand_count():
    """Hand derivation: a 2 x 2 x 2 table whose 2-way margins are all 1 is a Latin square;
    there are exactly two (T and its complement), each cell 0 or 1 with probability 1/2."""
    T = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("i", "j", "k")))
    post = rk.posterior(rel)
    assert post.n_candidates == 2
    assert np.allclose(post.prob(np.ones((2, 2, 2), int)).values, 0.5)
