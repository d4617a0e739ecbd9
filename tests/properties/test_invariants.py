"""DESIGN's invariants, for every registered mechanism (Hypothesis over small tables).

For each mechanism with an inference route: the release its ``protect`` makes validates
and round-trips through JSON; the true table is a candidate (its posterior under a prior
that knows every cell exists and puts all mass on the truth); the posterior is finite and
every cell's pmf sums to one; permuting the dims of the release permutes the posterior
(matched by labels); and a labelled truth given in another dim order gives the same
exact-disclosure probabilities.  The cases come from the registry: each mechanism's
``example(table, rng)`` (its parameters drawn from ``rng``) protects the drawn table
(``tests/reference/registry_cases.py``); ``test_every_mechanism_is_covered`` fails when a
mechanism is registered without an example.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import riskengine as rk
from riskengine.mechanisms import REGISTRY
from tests.reference.registry_cases import invariant_case, invariant_cases

#: the mechanisms with an inference route (None: the mechanism has no posterior to check)
WITH_ROUTES = [n for n, f in invariant_cases().items() if f is not None]


def test_every_mechanism_is_covered():
    assert set(invariant_cases()) == set(REGISTRY)
    for name, cls in REGISTRY.items():
        ex = cls.example(_labelled(np.ones((2, 3), np.int64)), np.random.default_rng(0))
        assert ex.cls is cls and ex.table.shape == (2, 3), name


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


@pytest.mark.slow
@pytest.mark.parametrize("name", WITH_ROUTES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables)
def test_invariants(name, tab):
    T, seed = tab
    rng = np.random.default_rng(seed)
    t = _labelled(T)
    rel = invariant_case(name)(t, rng)
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
    if post.diagnostics is not None:
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
        assert "infinitely many" in note or (post.diagnostics is not None
                                             and "Monte Carlo" in note), note
    # a labelled truth in the other dim order (and another label order) is matched by labels
    swapped = xr.DataArray(T.T[::-1], dims=("w", "v"),
                           coords={"w": t.coords["w"][::-1], "v": t.coords["v"]})
    np.testing.assert_array_equal(post.prob_exact(swapped).values, post.prob_exact(t).values)
