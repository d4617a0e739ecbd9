"""DESIGN's invariants, for every registered mechanism (Hypothesis over small tables).

For each mechanism with an inference route: the release its ``protect`` makes validates
and round-trips through JSON; the true table is a candidate (its posterior under a prior
that knows every cell exists and puts all mass on the truth); the posterior is finite and
every cell's pmf sums to one; permuting the dims of the release permutes the posterior
(matched by labels); and a labelled truth given in another dim order gives the same
exact-disclosure probabilities.  ``test_every_mechanism_is_covered`` fails when a
mechanism is registered without a case here.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import riskengine as rk
from riskengine.mechanisms import REGISTRY


def _cyclic(T, rng):
    n, m = T.shape
    return rk.CyclicPerturbation(rk.cycles.staircase(n, m), 0.3, 0.2,
                                 rule=str(rng.choice(["negative", "any_zero"])))


def _suppression_release(T, rng):
    pub = T.astype(float)
    pub[:2, :2] = np.nan                       # a suppressed rectangle
    d0, d1 = "v", "w"
    return rk.Release(pub, margins={(d0,): T.sum(1), (d1,): T.sum(0), (): T.sum()},
                      mechanism=rk.CellSuppression(), dims=(d0, d1),
                      coords={d0: [f"r{i}" for i in range(T.shape[0])],
                              d1: [f"c{j}" for j in range(T.shape[1])]})


#: name -> release of a labelled 2-D table T (None: the mechanism has no inference route)
CASES = {
    "cyclic": lambda t, rng: _cyclic(t.values, rng).protect(t, rng),
    "controlled_rounding": lambda t, rng: rk.ControlledRounding(
        int(rng.integers(2, 4)), method="optimal",
        likelihood=str(rng.choice(["feasible", "unbiased"]))).protect(t, rng),
    "margins_only": lambda t, rng: rk.MarginsOnly().protect(t),
    "bootstrap": lambda t, rng: rk.Bootstrap(M=2, S=3.0).protect(t, rng),
    "binomial": lambda t, rng: rk.BinomialPerturbation(S=3.0, preserve=str(
        rng.choice(["total", "rows", "columns"]))).protect(t, rng),
    "cell_suppression": lambda t, rng: _suppression_release(t.values, rng),
    "cta": None,
    "random_rounding": lambda t, rng: rk.RandomRounding(int(rng.integers(2, 5))).protect(t, rng),
    # geometric windows are wide (scale 1: 81 values per entry); the exact DP of a 3 x 3
    # table takes scales below 1 within the memory budget
    "noisy_counts": lambda t, rng: (
        rk.NoisyCounts("geometric", scale=float(rng.uniform(0.3, 0.8)),
                       clip=bool(rng.random() < 0.5)) if rng.random() < 0.5 else
        rk.NoisyCounts("discrete_gaussian", scale=float(rng.uniform(0.5, 2)),
                       clip=bool(rng.random() < 0.5))).protect(t, rng),
    "cell_key": lambda t, rng: rk.CellKey(D=int(rng.integers(1, 3)), V=float(rng.uniform(0.3, 0.6)),
                                          ).protect(t, rng),
}


def test_every_mechanism_is_covered():
    assert set(CASES) == set(REGISTRY)


tables = st.tuples(st.integers(2, 3), st.integers(2, 3), st.integers(0, 2 ** 31)).map(
    lambda a: (np.random.default_rng(a[2]).poisson(4.0, size=(a[0], a[1])) + 1, a[2]))


def _labelled(T):
    return rk.Table(T, dims=("v", "w"), coords={"v": [f"r{i}" for i in range(T.shape[0])],
                                               "w": [f"c{j}" for j in range(T.shape[1])]})


def _transposed(rel):
    """The same release with its dims in the other order (cycles transposed too)."""
    mech = rel.mechanism
    if isinstance(mech, rk.CyclicPerturbation):
        mech = rk.CyclicPerturbation(np.swapaxes(mech.cycles, 1, 2), mech.alpha, mech.beta,
                                     rule=mech.rule)
    elif isinstance(mech, rk.BinomialPerturbation):    # "rows" / "columns" name positions
        swap = {"rows": "columns", "columns": "rows", "total": "total"}
        mech = rk.BinomialPerturbation(mech.S, preserve=swap[mech.preserve])
    pub = None if rel.published is None else np.asarray(rel.published).T
    return rk.Release(pub, margins=dict(rel.margins), mechanism=mech, dims=rel.dims[::-1],
                      coords={d: rel.coords[d] for d in rel.dims[::-1]}, kind=rel.kind)


@pytest.mark.parametrize("name", [n for n, f in CASES.items() if f is not None])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables)
def test_invariants(name, tab):
    T, seed = tab
    rng = np.random.default_rng(seed)
    t = _labelled(T)
    rel = CASES[name](t, rng)
    # the release validates and round-trips
    rel.mechanism.validate_release(rel)
    assert rk.Release.from_json(rel.to_json()) == rel
    # posterior: finite, each pmf sums to one
    post = rk.posterior(rel, rk.priors.Uniform())
    assert np.all(np.isfinite(post.probs))
    np.testing.assert_allclose(post.probs.sum(-1), 1.0, rtol=0, atol=1e-12)
    # the truth is a candidate
    knows = rk.priors.Uniform().known(np.ones(T.shape, bool), T.ravel())
    sure = rk.posterior(rel, knows)
    np.testing.assert_allclose(sure.prob_exact(t).values, 1.0)
    assert post.prob_exact(t).values.min() > 0
    # permuting the dims permutes the posterior (matched by labels)
    post_t = rk.posterior(_transposed(rel), rk.priors.Uniform())
    a, b = post.pmf, post_t.pmf.transpose(*post.pmf.dims)
    if post.attrs.get("approximate"):
        # Monte Carlo (the seed follows the release's JSON, so the chains differ): the
        # means agree within 5 combined MCSE (1e-3 where a chain never moved)
        sa = post.diagnostics["mcse_mean"]
        sb = post_t.diagnostics["mcse_mean"].transpose(*sa.dims)
        tol = 5 * np.sqrt(sa.values ** 2 + sb.values ** 2) + 1e-3
        diff = np.abs(post.mean().values - post_t.mean().transpose(*sa.dims).values)
        assert (diff <= tol).all(), (diff, tol)
    else:
        xr.testing.assert_allclose(a.drop_attrs(), b.drop_attrs(), atol=1e-12)
    assert post_t.n_candidates == post.n_candidates
    if post.n_candidates is None:                 # unbounded noise: every table a candidate;
        note = post.attrs["n_candidates_note"]   # Monte Carlo: draws do not count
        assert "infinitely many" in note or (post.attrs.get("approximate")
                                             and "Monte Carlo" in note), note
    # a labelled truth in the other dim order (and another label order) is matched by labels
    swapped = xr.DataArray(T.T[::-1], dims=("w", "v"),
                           coords={"w": t.coords["w"][::-1], "v": t.coords["v"]})
    np.testing.assert_array_equal(post.prob_exact(swapped).values, post.prob_exact(t).values)
