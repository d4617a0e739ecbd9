"""The 2-D Monte Carlo route's fast path for long log-concave lines
(kernels.gibbs.sweeps_2d_concave: exact rejection draws along each move, no row-pair DP)
against exact answers.

References: the exact routes on the same release (the table DP, the fiber route, the
half-split counts: no Markov chain), and for the rejection sampler alone, a 2 x 2
margins-only table: its candidates form one line, so every basic move redraws the whole
table from its exact posterior and the kept draws are independent exact draws (chi-square
against the fiber route's pmf, tests.reference.agreement.gof_pvalue, p > 1e-4 over fixed
seeds).  Agreement of the chains with
the exact posteriors: tests.reference.agreement.monte_carlo_agrees (means within 5 MCSE,
>= 99 % of probabilities within 4 MCSE, all within 0.05).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from kernels import gibbs as moves
from riskengine.inference.gibbs import _long_concave_lines
from tests.reference.agreement import gof_pvalue, monte_carlo_agrees

DIMS = ("v", "w")


def _gibbs(rel, prior, draws=1500):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return rk.posterior(rel, prior, route="gibbs",
                            mcmc=rk.MonteCarlo(chains=4, warmup=100, draws=draws))


def _margins(T):
    return rk.MarginsOnly().protect(rk.Table(np.asarray(T), dims=DIMS))


@pytest.mark.parametrize("prior", [rk.priors.Uniform(), rk.priors.NegativeBinomial(150.0, 3.0),
                                   rk.priors.Poisson(40.0), rk.priors.Poisson(400.0)],
                         ids=["uniform", "nb", "poisson far below", "poisson far above"])
def test_the_rejection_draws_are_exact_on_a_line(prior):
    """2 x 2 margins only, cells near 150 (a line of ~300 values): the pooled draws of the
    chains against the exact pmf of a cell; the Poisson priors put the mode at either end
    of the line (one-sided tails of the envelope)."""
    T = np.array([[140, 170], [155, 150]])
    rel = _margins(T)
    exact = rk.posterior(rel, prior, route="fiber")
    mc = _gibbs(rel, prior, draws=3000)
    assert "line_draws" in mc.attrs
    d = mc.chains[..., 0, 0].ravel()
    pmf = {int(exact.start[0, 0]) + v: float(q) for v, q in enumerate(exact.probs[0, 0])}
    assert gof_pvalue(d.tolist(), pmf) > 1e-4


CASES = [
    ("margins 3x3 mean 60", (3, 3), 60, None),
    ("margins 2x4 mean 80", (2, 4), 80, None),
    ("suppressed 4x4 mean 40, a cycle through 3 rows", (4, 4), 40,
     [(0, 0), (0, 1), (1, 1), (1, 2), (2, 0), (2, 2)]),
]


@pytest.mark.parametrize("name, shape, scale, hidden", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("prior", ["uniform", "nb", "poisson cells"])
def test_the_concave_chains_agree_with_the_exact_posterior(name, shape, scale, hidden, prior):
    rng = np.random.default_rng(len(name) + scale)
    T = rng.integers(scale // 2, 3 * scale // 2, size=shape)
    margins = {("v",): T.sum(1), ("w",): T.sum(0), (): int(T.sum())}
    if hidden is None:
        rel = rk.Release(None, margins=margins, mechanism=rk.MarginsOnly(), dims=DIMS)
    else:
        P = T.astype(float)
        for c in hidden:
            P[c] = np.nan
        rel = rk.Release(P, margins=margins, mechanism=rk.CellSuppression(), dims=DIMS)
    pr = {"uniform": rk.priors.Uniform(), "nb": rk.priors.NegativeBinomial(float(scale), 2.0),
          "poisson cells": rk.priors.Poisson(rng.uniform(0.5, 1.5, size=shape) * scale)}[prior]
    exact = rk.posterior(rel, pr, route="dp", memory=8e9)
    mc = _gibbs(rel, pr)
    assert "line_draws" in mc.attrs and "proven" in mc.attrs["moves"]
    assert mc.attrs["converged"] == 1
    monte_carlo_agrees(mc, exact)
    d = mc.chains.reshape((-1,) + shape)
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(T.sum(1), d.shape[:2]))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(T.sum(0), (d.shape[0], shape[1])))
    if hidden is not None:
        pub = np.ones(shape, bool)
        for c in hidden:
            pub[c] = False
        assert (d[:, pub] == T[pub]).all()


def test_the_fast_path_is_taken_only_where_it_is_proven():
    """Totals that are windows, windows with holes, convex log-weights and short windows
    keep the listing sweeps (and the row-pair DP)."""
    clo = np.zeros(4, np.int64)
    flat = np.zeros((4, 100))
    assert _long_concave_lines(clo, flat, False)
    assert not _long_concave_lines(clo, flat, True)                    # a total moves
    assert not _long_concave_lines(clo, flat[:, :moves.SHORT_LINE], False)  # short
    holes = flat.copy()
    holes[1, 50] = -np.inf
    assert not _long_concave_lines(clo, holes, False)
    late = flat.copy()                       # a window not starting at its first value
    late[2, :3] = -np.inf
    assert not _long_concave_lines(clo, late, False)
    convex = np.tile(0.01 * (np.arange(100) - 50.0) ** 2, (4, 1))
    assert not _long_concave_lines(clo, convex, False)
    v = np.arange(100.0)
    nb = stats.nbinom.logpmf(v, 0.5, 0.01)                             # dispersion < 1
    assert not _long_concave_lines(clo, np.tile(nb, (4, 1)), False)
    pois = stats.poisson.logpmf(v, 30.0)
    assert _long_concave_lines(clo, np.tile(pois, (4, 1)), False)


def test_3x3_at_1e5_answers_by_monte_carlo_and_says_so():
    """The case no exact route covers in time (four free cells near 1e5 under a negative
    binomial prior): route 'auto' takes the Monte Carlo route, labelled approximate, with
    its diagnostics, and every draw keeps the margins."""
    rng = np.random.default_rng(0)
    T = np.rint(1e5 * rng.uniform(0.9, 1.1, size=(3, 3))).astype(np.int64)
    rel = _margins(T)
    post = rk.posterior(rel, rk.priors.NegativeBinomial(1e5, 50.0))
    assert post.attrs["route"] == "gibbs" and not post.exact
    assert post.attrs["converged"] == 1 and "line_draws" in post.attrs
    assert post.diagnostics.attrs["max_rhat"] <= 1.01
    d = post.chains.reshape((-1, 3, 3))
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(T.sum(1), d.shape[:2]))
