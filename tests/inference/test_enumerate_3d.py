"""3-D margins-only releases (all 2-way margins): streaming enumeration
(inference/enumerate_3d.py) vs brute force (tests/reference/tables.py: every table with
the 2-way margins, cell by cell).  Tolerance 1e-9 on every cell probability."""

import numpy as np
import pytest

import riskengine as rk
from tests.reference import tables as tab


@pytest.mark.parametrize("seed", range(24))
def test_3d_margins_only_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    shape = [(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)][seed % 4]
    T = rng.poisson([1.5, 3.0][seed % 2] if shape == (2, 2, 2) else 1.5, size=shape)
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("i", "j", "k")))
    if seed % 3 == 0:
        prior, lp = rk.priors.Uniform(), tab.uniform_log_prior
    else:
        rate = float(rng.uniform(0.5, 3))
        prior, lp = rk.priors.Poisson(rate), tab.poisson_log_prior(rate)
    tabs = tab.tables_with_2way_margins(T.sum(2), T.sum(1), T.sum(0))
    ws = tab.posterior_weights(tabs, lp)
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
