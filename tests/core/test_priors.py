import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from riskengine.data.seeds import S003


def _vals(shape, W=12):
    return np.broadcast_to(np.arange(W), shape + (W,)).copy()


def test_poisson_matches_scipy():
    """Reference: scipy.stats.poisson.logpmf; rtol 1e-12."""
    rate = np.array([[0.5, 2.0], [7.0, 30.0]])
    v = _vals((2, 2))
    lw = rk.priors.Poisson(rate).log_weights(v)
    assert np.allclose(lw, stats.poisson.logpmf(v, rate[..., None]), rtol=1e-12)


def test_negative_binomial_matches_scipy():
    """scipy's nbinom(n, p) with n = dispersion, p = n / (n + mean); rtol 1e-12."""
    mean, disp = 3.0, 1.7
    v = _vals((2, 3))
    lw = rk.priors.NegativeBinomial(mean, disp).log_weights(v)
    assert np.allclose(lw, stats.nbinom.logpmf(v, disp, disp / (disp + mean)), rtol=1e-12)


def test_flat_and_knowledge_bounds():
    v = _vals((2, 2))
    lw = rk.priors.Flat(low=1, high=5).log_weights(v)
    assert np.all(np.isinf(lw[..., 0])) and np.all(lw[..., 1:6] == 0) and np.isinf(lw[..., 6]).all()
    p = rk.priors.Uniform().at_least([(0, 1)], 2).known([(1, 1)], 4)
    lw = p.log_weights(v)
    assert np.isinf(lw[0, 1, :2]).all() and np.isfinite(lw[0, 1, 2:]).all()
    assert np.isfinite(lw[1, 1, 4]) and np.isinf(np.delete(lw[1, 1], 4)).all()
    assert np.isfinite(lw[0, 0]).all()
    mask = np.array([[True, False], [False, False]])
    lw = rk.priors.Uniform().at_least(mask, 3).log_weights(v)
    assert np.isinf(lw[0, 0, :3]).all()


def test_label_cells():
    p = rk.priors.Uniform().at_least({"v": "b", "w": "y"}, 1)
    lw = p.log_weights(_vals((2, 2)), dims=("v", "w"), coords={"v": ["a", "b"], "w": ["x", "y"]})
    assert np.isinf(lw[1, 1, 0]) and np.isfinite(lw[0, 0, 0])


def test_historical_is_centred_on_the_table():
    h = np.array([[0, 5], [10, 2]])
    lw = rk.priors.Historical(h).log_weights(_vals((2, 2), 20))
    mode = lw.argmax(-1)
    assert np.all(np.abs(mode - h) <= 1)


@pytest.mark.parametrize("make, msg", [
    (lambda: rk.priors.Poisson(-1.0), "rate must be finite and > 0"),
    (lambda: rk.priors.NegativeBinomial(1.0, 0.0), "dispersion"),
    (lambda: rk.priors.Flat(low=-1), "low must be >= 0"),
    (lambda: rk.priors.Uniform().at_least([(0, 0)], 3).at_most([(0, 0)], 1).bounds((2, 2)),
     "contradicts"),
    (lambda: rk.priors.parse("gamma:2"), "unknown prior 'gamma:2'"),
    (lambda: rk.priors.Poisson(np.ones(3)).log_weights(_vals((2, 2))), "does not broadcast"),
])
def test_prior_errors(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


def test_parse():
    assert isinstance(rk.priors.parse("uniform"), rk.priors.Uniform)
    assert rk.priors.parse("flat:1").low == 1
    assert float(rk.priors.parse("poisson:2.5").rate) == 2.5


def test_knowledge_changes_the_posterior():
    """An intruder who knows a cell is >= 1 rules out the published-0 reading."""
    rel = rk.Release(S003.PERTURBED_2D, mechanism=rk.CyclicPerturbation(
        rk.cycles.diagonal(4), alpha=S003.ALPHA, beta=S003.BETA), dims=("v", "w"))
    base = rk.posterior(rel)
    know = rk.posterior(rel, rk.priors.Uniform().at_least([(0, 1)], 1))
    assert base.prob(np.zeros((4, 4), int)).values[0, 1] > 0.5
    assert know.prob(np.zeros((4, 4), int)).values[0, 1] == 0.0
    assert know.n_candidates < base.n_candidates
