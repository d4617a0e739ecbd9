"""Generators of original tables: labels, determinism, and moments within Monte Carlo error.

Moment checks use N draws and a 5 standard-error tolerance (the s.e. from the
generator's own variance): a false failure has probability < 1e-5 per check.
"""

import numpy as np
import pytest

import riskengine as rk
from riskengine import generators as G

N = 4000


def _draws(gen, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([gen.draw(rng).values for _ in range(N)])


def test_poisson_scalar_moments_and_labels():
    g = G.Poisson(2.5, shape=(2, 3), dims=("v", "w"), coords={"v": ["x", "y"]})
    t = g.draw(np.random.default_rng(1))
    assert isinstance(t, rk.Table) and t.dims == ("v", "w") and t.shape == (2, 3)
    assert t.coords["v"] == ["x", "y"] and t.kind == "count"
    x = _draws(g)
    se_mean = np.sqrt(2.5 / N)
    assert np.all(np.abs(x.mean(0) - 2.5) <= 5 * se_mean)
    # variance of a Poisson(l) sample variance: (l + 2 l^2) / N approximately
    se_var = np.sqrt((2.5 + 2 * 2.5 ** 2) / N)
    assert np.all(np.abs(x.var(0, ddof=1) - 2.5) <= 5 * se_var)


def test_poisson_array_rate():
    rate = np.array([[0.5, 4.0], [10.0, 1.0]])
    x = _draws(G.Poisson(rate))
    assert np.all(np.abs(x.mean(0) - rate) <= 5 * np.sqrt(rate / N))
    with pytest.raises(ValueError, match="shape"):
        G.Poisson(rate, shape=(3, 3))


def test_multinomial_moments():
    p = np.array([[0.1, 0.2], [0.3, 0.4]])
    n = 50
    x = _draws(G.Multinomial(n, p))
    assert np.all(x.reshape(N, -1).sum(1) == n)
    assert np.all(np.abs(x.mean(0) - n * p) <= 5 * np.sqrt(n * p * (1 - p) / N))
    # Cov(X_00, X_11) = -n p_00 p_11; the s.e. of a sample covariance ~ sqrt(var0 var1 / N)
    c = np.cov(x[:, 0, 0], x[:, 1, 1])[0, 1]
    se = np.sqrt(n * 0.1 * 0.9 * n * 0.4 * 0.6 / N)
    assert abs(c - (-n * 0.1 * 0.4)) <= 5 * se


def test_resample_keeps_total_labels_and_proportions():
    t = rk.read_table("riskengine/data/seed003_original.csv")
    g = G.Resample(t)
    d = g.draw(np.random.default_rng(2))
    assert d.dims == t.dims and d.coords == t.coords and d.margins == t.margins
    x = _draws(g)
    n = int(t.values.sum())
    assert np.all(x.reshape(N, -1).sum(1) == n)
    p = t.values / n
    assert np.all(np.abs(x.mean(0) - t.values) <= 5 * np.sqrt(n * p * (1 - p) / N) + 1e-12)
    assert int(G.Resample(t, n=10).draw(np.random.default_rng(0)).values.sum()) == 10


def test_same_seed_same_table():
    for g in (G.Poisson(3.0, shape=(3, 3)), G.Multinomial(20, np.full(4, 0.25)),
              G.Resample(np.array([[1, 2], [3, 4]]))):
        a = g.draw(np.random.default_rng(9))
        b = g.draw(np.random.default_rng(9))
        assert a == b
        assert isinstance(g.describe(), str) and g.to_dict()["name"] == g.name


def test_bad_input():
    with pytest.raises(ValueError, match="needs shape"):
        G.Poisson(2.0)
    with pytest.raises(ValueError, match="> 0"):
        G.Poisson(-1.0, shape=(2, 2))
    with pytest.raises(ValueError, match="sum to 1"):
        G.Multinomial(10, [0.5, 0.6])
    with pytest.raises(ValueError, match=">= 0"):
        G.Multinomial(10, [1.5, -0.5])
    with pytest.raises(ValueError, match="n must be >= 0"):
        G.Multinomial(-1, [0.5, 0.5])
    with pytest.raises(ValueError, match="positive total"):
        G.Resample(np.zeros((2, 2), dtype=int))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        G.Poisson(1.0, shape=(2,)).draw(3)
    with pytest.raises(TypeError, match="shape"):
        G.Poisson(1.0, shape="ab")
