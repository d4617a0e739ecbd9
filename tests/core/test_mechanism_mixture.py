"""rk.posterior(..., candidates=...): the intruder does not know the mechanism's parameters
(a p-table's D and V withheld).  Against the definitions (tests/reference/release_set.py:
every table in a box, the p-table probabilities of each published number; a 1-D table
with its total: tests/reference/cell_key.py's likelihood integrated over the keys, the
route ``keys``'s): the posterior
is sum_k pi_k posterior_k with pi_k proportional to w_k Z_k (Z_k the evidence under
candidate k); probabilities, candidate weights and evidence to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from tests.reference import cell_key as ref_ck
from tests.reference import release_set as ref

PTABS = {
    "narrow": {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {1: 0.2, 2: 0.6, 3: 0.2},
               3: {2: 0.25, 3: 0.5, 4: 0.25}},
    "wide": {0: {0: 1.0}, 1: {0: 0.4, 1: 0.2, 2: 0.4}, 2: {0: 0.1, 1: 0.2, 2: 0.4, 3: 0.2,
                                                           4: 0.1},
             3: {1: 0.1, 2: 0.2, 3: 0.4, 4: 0.2, 5: 0.1}},
}


def _loglik(ptab):
    def f(x, y):
        p = ref_ck.prob(ptab, x, y)
        return np.log(p) if p > 0 else -np.inf
    return f


@pytest.mark.parametrize("seed", range(30))
def test_mixture_equals_the_definitions(seed):
    rng = np.random.default_rng(seed)
    shape = (2, 2) if seed % 3 else (3,)
    dims = ("r", "c")[:len(shape)]
    x = rng.integers(0, 4, shape)
    truth_key = list(PTABS)[seed % 2]
    mech = rk.CellKey.from_matrix(PTABS[truth_key])
    options = [(0,), (1,), ()] if len(shape) == 2 else [()]
    totals = options if rng.random() < 0.6 else []     # the cell key routes: all or none
    rel0 = mech.protect(rk.Table(x, dims=dims), np.random.default_rng(seed))
    margins = {tuple(dims[a] for a in k): rel0.margins[tuple(dims[a] for a in k)]
               for k in totals}
    rel = rk.Release(rel0.published, margins=margins, mechanism=mech, dims=dims)
    spec = {"maps": {a: list(range(n)) for a, n in enumerate(shape)}, "shape": shape,
            "totals": totals}
    values = {"cells": np.asarray(rel.published, int),
              **{k: np.asarray(margins[tuple(dims[a] for a in k)], int) for k in totals}}
    numbers = ref.published_numbers(shape, spec, values)
    w = np.array([0.3, 0.7]) if seed % 4 == 0 else None
    poisson = seed % 2 == 0
    hi = int(max(y for _, y in numbers)) + 3
    prior = rk.priors.Poisson(2.0) if poisson else rk.priors.Flat(0, hi)

    def log_prior(T):
        return stats.poisson.logpmf(T, 2.0).sum(axis=1) if poisson else np.zeros(len(T))
    n = int(np.prod(shape))
    refs = []
    keyed = bool(totals)                   # totals: the exact routes integrate the keys
    for ptab in PTABS.values():            # a p-table that cannot give the release: Z = 0
        if keyed:                          # over the keys (tests/reference)
            pspec = ({"kind": "poisson", "rate": 2.0} if poisson else
                     {"kind": "flat", "low": 0, "high": hi})
            res = ref_ck.posterior(ptab, rel.published, dict(rel.margins), dims, pspec,
                                   keys=True, crossing=True)
            probs = np.zeros((n, hi + 1))
            for idx, pmf in res["cells"].items():
                c = int(np.ravel_multi_index(idx, shape))
                for v, q in pmf.items():
                    if v <= hi:
                        probs[c, v] = q
            refs.append((probs, res["log_z"]))
            continue
        with np.errstate(invalid="ignore"):
            probs, log_z, _ = ref.posterior(numbers, True, _loglik(ptab), n, hi, log_prior)
        refs.append((np.nan_to_num(probs) if np.isfinite(log_z) else 0.0, log_z))
    wk = np.array([0.5, 0.5]) if w is None else w
    logs = np.log(wk) + np.array([r[1] for r in refs])
    pi = np.exp(logs - logs.max())
    pi /= pi.sum()
    want = sum(p * r[0] for p, r in zip(pi, refs))
    cands = {k: rk.CellKey.from_matrix(v) for k, v in PTABS.items()}
    post = rk.posterior(rel, prior, candidates=cands, weights=w)
    assert post.mechanism_weights == pytest.approx(dict(zip(PTABS, pi)), abs=1e-9)
    got = np.stack([post.prob(np.full(shape, v)).values.reshape(n) for v in range(hi + 1)], -1)
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert post.log_evidence == pytest.approx(float(np.log(np.exp(logs - logs.max()).sum())
                                                    + logs.max()), abs=1e-8)
    d = post.sample(20, np.random.default_rng(0))
    assert d.shape == (20, *shape)


def test_a_candidate_that_cannot_have_made_the_release_weighs_zero():
    t = rk.Table(np.array([[4, 7], [12, 3]]), dims=("r", "c"))
    rel = rk.RandomRounding(5).protect(t, np.random.default_rng(1))
    post = rk.posterior(rel, rk.priors.Poisson(5.0),
                        candidates={"base 3": rk.RandomRounding(3),
                                    "base 5": rk.RandomRounding(5)})
    if (np.asarray(rel.published) % 3).any():
        assert post.mechanism_weights["base 3"] == 0.0
        assert post.mechanism_weights["base 5"] == pytest.approx(1.0)
        alone = rk.posterior(rel, rk.priors.Poisson(5.0))
        np.testing.assert_allclose(post.pmf.reindex_like(alone.pmf, fill_value=0).values,
                                   alone.pmf.values, atol=1e-12)


def test_refusals():
    t = rk.Table(np.array([[4, 7], [11, 3]]), dims=("r", "c"))
    rel = rk.RandomRounding(5).protect(t, np.random.default_rng(1))
    with pytest.raises(ValueError, match="no candidate mechanism can have produced"):
        rk.posterior(rel, candidates=[rk.RandomRounding(7), rk.RandomRounding(11)]) \
            if (np.asarray(rel.published) % 77).any() else None
    with pytest.raises(ValueError, match="weights must be 2 nonnegative"):
        rk.posterior(rel, candidates=[rk.RandomRounding(5), rk.RandomRounding(10)],
                     weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="weights= are the prior probabilities"):
        rk.posterior(rel, weights=[1.0])
    with pytest.raises(TypeError, match="not a mechanism"):
        rk.posterior(rel, candidates={"x": 5})
