"""The Monte Carlo route on 3-D tables against exact answers.

References: the exact 3-D enumerator's posterior on the same release (a walk over every
candidate, no Markov chain; itself tested against brute force in test_enumerate_3d.py and
test_completions.py), and on tables small enough to list, every candidate table listed by
brute force from the definition (every nonnegative table with the published 2-way
margins).  Tolerances as in test_gibbs.py: a cell's posterior mean within 5 of its arviz
MCSE of the exact mean (plus 1e-9), every probability within 0.05 of the exact one.
"""

from __future__ import annotations

import itertools
import warnings
import zlib

import numpy as np
import pytest

import riskengine as rk
from riskengine.inference import gibbs3d
from riskengine.inference.gibbs import ConvergenceWarning
from tests.reference.agreement import monte_carlo_agrees

DIMS = ("a", "b", "c")


def _run(rel, prior, **kw):
    """The Gibbs route with these chain settings (rk.MonteCarlo's)."""
    return rk.posterior(rel, prior, route="gibbs", memory=4e9, mcmc=rk.MonteCarlo(**kw))


def _suppressed(t, rng):
    x = t.values
    supp = rng.random(x.shape) < 0.5
    supp.ravel()[0] = True
    return rk.Release(np.where(supp, np.nan, x), margins=t.totals(),
                      mechanism=rk.CellSuppression(), dims=t.dims, kind="count")


CASES = [  # name, protect, shape, cell mean
    ("margins 3x3x2", lambda t, rng: rk.MarginsOnly().protect(t), (3, 3, 2), 3.0),
    ("margins 2x3x3", lambda t, rng: rk.MarginsOnly().protect(t), (2, 3, 3), 2.0),
    ("margins 3x3x3", lambda t, rng: rk.MarginsOnly().protect(t), (3, 3, 3), 1.5),
    ("suppression 3x3x2", _suppressed, (3, 3, 2), 4.0),
    ("rounding B=3 2x2x3", lambda t, rng: rk.ControlledRounding(3, method="optimal")
     .protect(t, rng), (2, 2, 3), 4.0),
    ("random rounding B=3 2x2x2", lambda t, rng: rk.RandomRounding(3).protect(t, rng),
     (2, 2, 2), 3.0),
    ("cell key 2x2x2", lambda t, rng: rk.CellKey(D=1, V=0.5).protect(
        t, rng, keys=rng.random(t.shape)), (2, 2, 2), 3.0),
    # realistic counts: cells in the hundreds (one free cell with margins, narrow windows)
    ("margins 2x2x2 mean 300", lambda t, rng: rk.MarginsOnly().protect(t), (2, 2, 2), 300.0),
    ("rounding B=5 2x2x2 mean 200", lambda t, rng: rk.ControlledRounding(5, method="optimal")
     .protect(t, rng), (2, 2, 2), 200.0),
]


@pytest.mark.parametrize("name, protect, shape, lam",
                         [c if "mean" not in c[0] and not c[0].startswith("rounding")
                          else pytest.param(*c, marks=pytest.mark.slow) for c in CASES],
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("prior", [rk.priors.Uniform(),
                                   pytest.param(rk.priors.Poisson(3.0), marks=pytest.mark.slow)],
                         ids=["uniform", "poisson"])
def test_gibbs_3d_agrees_with_exact_enumeration(name, protect, shape, lam, prior):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    t = rk.Table(rng.poisson(lam, size=shape), dims=DIMS)
    rel = protect(t, rng)
    exact = rk.posterior(rel, prior, route="enumerate")
    mc = _run(rel, prior, chains=4, warmup=100, draws=1500)
    assert mc.attrs["converged"] == 1, mc.attrs["diagnostics"]
    monte_carlo_agrees(mc, exact)       # >= 99 % of (cell, value) within 4 MCSE
    d = mc.chains.reshape((-1,) + shape)
    assert (d >= 0).all()
    if isinstance(rel.mechanism, (rk.MarginsOnly, rk.CellSuppression)):
        for axis in range(3):          # every 2-way margin holds in every draw
            np.testing.assert_array_equal(
                d.sum(axis + 1), np.broadcast_to(t.values.sum(axis), d.shape[:1] +
                                                 t.values.sum(axis).shape))
    if isinstance(rel.mechanism, rk.CellSuppression):
        pub = ~np.isnan(np.asarray(rel.published, float))
        assert (d[:, pub] == t.values[pub]).all()


def _candidates(x):
    """Every nonnegative I x J x 2 table with the 2-way margins of ``x`` (brute force over
    the first layer; the second is the ij margin minus it)."""
    ij = x.sum(2)
    out = set()
    for first in itertools.product(*[range(v + 1) for v in ij.ravel()]):
        a = np.reshape(first, ij.shape)
        y = np.stack([a, ij - a], axis=2)
        if (y.sum(0) == x.sum(0)).all() and (y.sum(1) == x.sum(1)).all():
            out.add(y.astype(np.int64).tobytes())
    return out


# the last fiber holds two tables, joined by a degree-6 move only: the identity and the
# cyclic shift swapped between the two layers (Aoki & Takemura 2003's basic example)
_SWAP = np.stack([np.eye(3, dtype=int), np.roll(np.eye(3, dtype=int), 1, axis=1)], axis=2)


@pytest.mark.parametrize("x", [
    np.array([[[1, 0], [0, 2], [1, 1]], [[0, 1], [2, 0], [1, 0]], [[1, 1], [0, 0], [0, 1]]]),
    np.array([[[0, 2], [1, 0]], [[1, 0], [0, 1]], [[0, 1], [2, 0]]]),
    _SWAP,
], ids=["3x3x2", "3x2x2", "degree-6 fiber"])
def test_the_chain_reaches_every_candidate(x):
    """Irreducibility on small cases: the tables the chains visit are the candidate set
    listed by brute force, each visited about as often as the others (uniform prior)."""
    rel = rk.MarginsOnly().protect(rk.Table(x, dims=DIMS))
    want = _candidates(x)
    post = _run(rel, rk.priors.Uniform(), chains=4, warmup=50, draws=3000)
    flat = post.chains.reshape((-1,) + x.shape).astype(np.int64)
    seen = [t.tobytes() for t in flat]
    assert set(seen) == want
    assert len(want) == rk.count_candidates(rel, route="enumerate")
    freq = np.array([seen.count(k) for k in want]) / len(seen)
    assert np.abs(freq - 1 / len(want)).max() < 0.25 / len(want) + 0.02


@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
def test_a_reducible_move_set_is_caught():
    """Without the degree-6 moves the two tables of the degree-6 fiber never meet: chains
    started in both stay there, and R-hat says so (the route's own move set passes)."""
    rel = rk.MarginsOnly().protect(rk.Table(_SWAP, dims=DIMS))
    ew = rel.mechanism.inputs(rel)["windows"].with_prior(rk.priors.Uniform(), rel.coords)
    from riskengine.inference.gibbs import diagnostics
    for seed in range(20):          # starts are random vertices: find one run with both
        draws = gibbs3d.chains(ew, 4, 10, 400, np.random.default_rng(seed), degree6=False)
        starts = {d[0].tobytes() for d in draws}
        if len(starts) == 2:
            break
    assert len(starts) == 2
    for d in draws:                  # every chain stays where it started
        assert all(t.tobytes() == d[0].tobytes() for t in d)
    lo = draws.min(axis=(0, 1))
    probs = np.stack([(draws == lo + w).mean(axis=(0, 1)) for w in range(2)], -1)
    diag = diagnostics(draws, lo, probs, DIMS, rel.coords)
    assert not diag.attrs["max_rhat"] <= 1.01        # inf or nan: stuck chains
    ok = gibbs3d.chains(ew, 4, 10, 3000, np.random.default_rng(seed))
    diag = diagnostics(ok, lo, probs, DIMS, rel.coords)
    assert diag.attrs["max_rhat"] <= 1.01


@pytest.mark.slow
def test_rounded_totals_move():
    """Under controlled rounding the 2-way totals are windows: the chain's single-cell
    moves must visit several values of them, with the exact posterior's frequencies."""
    rng = np.random.default_rng(7)
    t = rk.Table(rng.poisson(4.0, size=(2, 2, 3)), dims=DIMS)
    rel = rk.ControlledRounding(3, method="optimal").protect(t, rng)
    post = _run(rel, rk.priors.Uniform(), chains=4, warmup=100, draws=2000)
    d = post.chains.reshape((-1, 2, 2, 3)).sum(axis=2)        # the (a, c) totals
    exact = rk.posterior(rel, route="enumerate").sample(20000, np.random.default_rng(1))
    e = exact.values.sum(axis=2)
    assert len(np.unique(d[:, 0, 0])) > 1
    for idx in np.ndindex(2, 3):
        for v in np.unique(e[(slice(None),) + idx]):
            got = (d[(slice(None),) + idx] == v).mean()
            want = (e[(slice(None),) + idx] == v).mean()
            assert abs(got - want) < 0.05, (idx, v, got, want)


def test_same_release_same_answer():
    rng = np.random.default_rng(3)
    rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(2.0, size=(3, 3, 2)), dims=DIMS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = _run(rel, rk.priors.Uniform(), chains=2, warmup=20, draws=300)
        b = _run(rel, rk.priors.Uniform(), chains=2, warmup=20, draws=300)
    np.testing.assert_array_equal(a.chains, b.chains)
    assert a.diagnostics["rhat"].dims == DIMS


@pytest.mark.slow
def test_auto_takes_gibbs_when_the_enumeration_is_too_long():
    """A 4 x 3 x 3 margins-only table with cells about 4: the enumerator gives up after its
    probe (the issue's 25-minute run), the resolver says so and the Monte Carlo route
    answers; a small table is still enumerated exactly."""
    rng = np.random.default_rng(0)
    t = rk.Table(rng.poisson(4, size=(4, 3, 3)), dims=DIMS)
    rel = rk.MarginsOnly().protect(t)
    post = rk.posterior(rel)
    assert post.attrs["route"] == "gibbs"
    assert "enumerate: the enumeration did not finish" in post.attrs["route_reason"]
    assert not post.exact
    d = post.sample(200, np.random.default_rng(1)).values
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(t.values.sum(0), (200, 3, 3)))
    with pytest.raises(ValueError, match="route='enumerate' runs it to the end"):
        rk.count_candidates(rel)
    small = rk.MarginsOnly().protect(rk.Table(rng.poisson(2, size=(3, 3, 2)), dims=DIMS))
    assert rk.posterior(small).attrs["route"] == "enumerate"
