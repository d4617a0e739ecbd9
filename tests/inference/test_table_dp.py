"""Controlled rounding and margins-only inference (the table DP, inference/table_dp.py)
against brute force.

Reference: tests/reference/tables.py enumerates every candidate table explicitly and
weighs it (prior x likelihood written directly from DESIGN.md, the rounding probability
from tests/reference/rounding.py); the DP must agree to 1e-9 on every cell and total
probability, and exactly on the candidate count.
"""

import numpy as np
import pytest

import riskengine as rk
from tests.reference import tables as tab
from tests.reference.rounding import rounding_log_likelihood_2d

SHAPES_BASES = [((2, 2), 2), ((2, 2), 3), ((2, 2), 4), ((2, 2), 5), ((2, 3), 2), ((2, 3), 3),
                ((3, 2), 3), ((3, 3), 2), ((2, 4), 2), ((3, 4), 2)]


def _check(post, res, shape, tol=1e-9):
    assert post.n_candidates == res["n"]
    assert post.log_evidence == pytest.approx(res["log_z"], abs=1e-9, rel=1e-9)
    for idx in np.ndindex(*shape):
        for v, p in res["cells"][idx].items():
            assert post.prob(np.full(shape, v)).values[idx] == pytest.approx(p, abs=tol)
    assert np.allclose(post.probs.sum(-1), 1.0)
    d0, d1 = post.dims
    for key, want in (((d0,), res["rows"]), ((d1,), res["cols"])):
        tp = post.totals[key]
        for i, d in enumerate(want):
            for v, p in d.items():
                got = tp.prob(np.full(tp.shape, v)).values[i]
                assert got == pytest.approx(p, abs=tol)
    g = post.totals[()]
    for v, p in res["grand"].items():
        j = v - int(g.start)
        assert (g.probs[j] if 0 <= j < g.width else 0.0) == pytest.approx(p, abs=tol)


def _prior(i, shape, rng):
    if i % 3 == 0:
        return rk.priors.Uniform(), tab.uniform_log_prior
    if i % 3 == 1:
        rate = float(rng.uniform(0.5, 6.0))
        return rk.priors.Poisson(rate), tab.poisson_log_prior(rate)
    rate = rng.uniform(0.5, 6.0, size=shape)
    return rk.priors.Poisson(rate), tab.poisson_log_prior(rate)


@pytest.mark.parametrize("i", [i if i < 15 else pytest.param(i, marks=pytest.mark.slow)
                               for i in range(200)])
def test_rounding_posterior_matches_brute_force(i):
    rng = np.random.default_rng(500 + i)
    shape, B = SHAPES_BASES[i % len(SHAPES_BASES)]
    T = rng.poisson([0.5, 2.0, 5.0][(i // 10) % 3], size=shape)
    lk = ("feasible", "unbiased")[(i // 2) % 2]
    mech = rk.ControlledRounding(B, method=("unbiased", "optimal")[(i // 4) % 2], likelihood=lk)
    rel = mech.protect(rk.Table(T, dims=("v", "w")), rng)
    prior, lp = _prior(i, shape, rng)
    P = rel.published
    win = lambda a: (np.maximum(np.asarray(a) - B + 1, 0), np.asarray(a) + B - 1)
    lo, hi = win(P)
    rr = [win(v) for v in rel.margins[("v",)]]
    cc = [win(v) for v in rel.margins[("w",)]]
    gg = win(rel.margins[()])
    tables = list(tab.tables_with_windows(lo, hi, rr, cc, gg))

    def logw(Tc):
        if lk == "feasible":
            like = 0.0
        else:
            like = rounding_log_likelihood_2d(Tc, P, rel.margins[("v",)], rel.margins[("w",)],
                                              rel.margins[()], B)
        return lp(Tc) + like

    res = tab.posterior_over_tables(tables, logw)
    assert res is not None  # the true table is always a candidate
    post = rk.posterior(rel, prior)
    _check(post, res, shape)
    assert post.prob_exact(T).values.min() > 0


@pytest.mark.parametrize("i", [i if i < 15 else pytest.param(i, marks=pytest.mark.slow)
                               for i in range(200)])
def test_margins_only_posterior_matches_brute_force(i):
    rng = np.random.default_rng(900 + i)
    shape = [(2, 2), (2, 3), (3, 3), (3, 4), (2, 5), (4, 2)][i % 6]
    n_max = {4: 12, 6: 10, 9: 7, 12: 6, 10: 7, 8: 8}[shape[0] * shape[1]]
    T = rng.multinomial(int(rng.integers(0, n_max + 1)), np.ones(shape[0] * shape[1]) /
                        (shape[0] * shape[1])).reshape(shape)
    if i % 7 == 0:
        T[0] = 0                                   # an empty row
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    prior, lp = _prior(i, shape, rng)
    R, C, N = T.sum(1), T.sum(0), T.sum()
    hi = np.minimum(R[:, None], C[None, :])
    tables = list(tab.tables_with_windows(np.zeros(shape, int), hi, [(x, x) for x in R],
                                          [(x, x) for x in C], (N, N)))
    res = tab.posterior_over_tables(tables, lp)
    post = rk.posterior(rel, prior)
    _check(post, res, shape)
    assert rk.count_candidates(rel) == len(tables)
    # Frechet bounds are the support of the uniform posterior in 2-D (sharp)
    fb = rk.frechet_bounds(rel)
    lo = np.min(np.stack(tables), axis=0)
    up = np.max(np.stack(tables), axis=0)
    assert np.array_equal(fb["lower"].values, lo) and np.array_equal(fb["upper"].values, up)


@pytest.mark.parametrize("seed", [seed if seed < 2 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(12)])
def test_checkpointed_posterior_equals_the_full_one(seed):
    """With too little memory for every forward stage the DP keeps checkpoints and
    recomputes each segment in the backward pass: the same marginals, evidence and count."""
    from kernels.checkpoints import checkpoint_plan
    from riskengine.inference import table_dp as dp
    rng = np.random.default_rng(seed)
    shape = [(3, 5), (2, 7), (4, 4)][seed % 3]
    t = rk.Table(rng.poisson(4.0, size=shape), dims=("v", "w"))
    mech = rk.MarginsOnly() if seed % 2 else rk.ControlledRounding(3, method="optimal")
    rel = mech.protect(t)
    win = dp.release_windows(rel, rk.priors.Poisson(3.0))
    full = dp.solve(win, with_count=True)
    w, _ = dp._largest_row_last(win.trimmed())
    per = dp._args(w)[2].stage_states()
    keep, need = checkpoint_plan(per, 0.0)
    assert not keep.all() and need < per[:-1].sum()
    part = dp.solve(win, with_count=True, max_states=need)
    np.testing.assert_allclose(part["cell"], full["cell"], rtol=0, atol=1e-13)
    assert part["log_z"] == pytest.approx(full["log_z"], rel=1e-13)
    assert part["n"] == full["n"]
    with pytest.raises(MemoryError):
        dp.solve(win, max_states=need / 2)
