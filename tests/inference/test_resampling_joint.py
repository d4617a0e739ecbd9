"""The exact joint route of the resampling mechanisms (route ``joint``) and its kernels,
against brute force from the definitions (tests/reference/resampling_joint.py):

* ``kernels.multinomial_box.log_box`` against sums of scipy's multinomial pmf over every
  outcome (random boxes, zeros in p, empty boxes) and, for two cells, the binomial at N
  in the thousands (rtol 1e-9 on the probability, or on the log where it underflows);
* the bootstrap's and the binomial method's joint likelihoods against the brute-force
  laws (atol 1e-12), the laws summing to one over every release;
* posteriors (every cell, every unpublished total, log evidence, count) against the
  brute-force enumeration on 240 random small cases (2 x 2, 2 x 3, 3 x 2; n = 3..12;
  M in 1..5; S in 1..3; every prior form of rk.priors, with knowledge);
* ``protect`` simulated 20 000 times from fixed originals: release frequencies against the
  exact likelihood (chi-square, p > 1e-4 per mechanism);
* draws of the joint route against its own pmf; route selection and refusals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import riskengine as rk
from riskengine.inference.resolve import plan
from kernels import multinomial_box as mbox
from riskengine.inference import joint
from tests.reference import resampling_joint as ref
from tests.reference.agreement import check_against_reference

DIMS = ("v", "w")


# --- the multinomial box kernel ------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_log_box_against_enumeration(seed):
    rng = np.random.default_rng(seed)
    for _ in range(80):
        K = int(rng.integers(1, 5))
        N = int(rng.integers(0, 10))
        p = rng.dirichlet(np.ones(K))
        p[rng.random(K) < 0.25] = 0.0                      # zeros in p
        if p.sum() == 0:
            p[int(rng.integers(0, K))] = 1.0
        p /= p.sum()
        a = rng.integers(-2, N + 2, size=K)
        b = a + rng.integers(-2, N + 2, size=K)            # b < a: an empty box
        want = ref.multinomial_box(N, p, np.maximum(a, 0), b)
        with np.errstate(divide="ignore"):
            got = mbox.log_box(N, np.log(p), a.astype(np.int64), b.astype(np.int64))
        note = (N, p.tolist(), a.tolist(), b.tolist())
        if want == 0.0:
            assert got == -np.inf, note
        else:
            assert math.exp(got) == pytest.approx(want, rel=1e-10), note


def test_log_box_two_cells_is_a_binomial_at_large_n():
    rng = np.random.default_rng(5)
    for _ in range(60):
        N = int(rng.integers(100, 5000))
        p = float(rng.uniform(0.001, 0.999))
        a = int(rng.integers(0, N))
        b = int(rng.integers(a, N + 1))
        a2 = int(rng.integers(0, N + 1))
        b2 = int(rng.integers(a2, N + 1))
        y = np.arange(a, b + 1)
        y = y[(N - y >= a2) & (N - y <= b2)]
        want = logsumexp(stats.binom.logpmf(y, N, p)) if y.size else -np.inf
        got = mbox.log_box(N, np.log([p, 1 - p]), np.array([a, a2]), np.array([b, b2]))
        if y.size == 0:
            assert got == -np.inf
        else:        # far tails too (log probabilities down to about -1e4)
            assert got == pytest.approx(want, rel=1e-9, abs=1e-9), (N, p, a, b, a2, b2)


def test_log_sum_law_against_enumeration():
    rng = np.random.default_rng(6)
    for _ in range(100):
        K, W = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        lo = rng.integers(0, 4, size=K)
        lw = rng.normal(size=(K, W))
        lw[rng.random((K, W)) < 0.3] = -np.inf
        cap = int(rng.integers(-1, 12))
        want = {}
        for js in np.ndindex(*(W,) * K):
            w = sum(lw[k, j] for k, j in enumerate(js))
            s = int(sum(lo[k] + j for k, j in enumerate(js)))
            if np.isfinite(w) and (cap < 0 or s <= cap):
                want[s] = np.logaddexp(want.get(s, -np.inf), w)
        start, law = mbox.log_sum_law(lo.astype(np.int64), lw, cap)
        got = {int(start) + i: v for i, v in enumerate(law) if np.isfinite(v)}
        assert set(got) == set(want)
        for s, w in want.items():
            assert got[s] == pytest.approx(w, rel=1e-12, abs=1e-12)


# --- the joint likelihoods ------------------------------------------------------------------
def _release(mech, P, shape, n, rows=None, cols=None):
    margins = {(): n}
    if rows is not None:
        margins[(DIMS[0],)] = rows
    if cols is not None:
        margins[(DIMS[1],)] = cols
    return rk.Release(np.asarray(P).reshape(shape), margins=margins, mechanism=mech, dims=DIMS)


@pytest.mark.parametrize("x, M, S", [([2, 1, 1], 2, 1.5), ([1, 2, 0, 1], 2, 2.0),
                                     ([3, 1], 3, 1.0), ([1, 1, 1], 3, 3.0)])
def test_bootstrap_law_is_the_sum_of_m_tables(x, M, S):
    """The law of the release from the M bootstrap tables themselves equals the law through
    their sum (one multinomial(nM, x/n) table) and the library's likelihood, and sums to
    one over every release."""
    law = ref.bootstrap_law_from_tables(x, M, S)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    mech = rk.Bootstrap(M, S)
    n = sum(x)
    for P, pr in law.items():
        assert math.exp(ref.bootstrap_release_loglik(P, x, M, S)) == pytest.approx(pr, abs=1e-12)
        rel = _release(mech, P, (1, len(x)), n)
        assert math.exp(float(mech.log_likelihood(rel, np.array([x])))) == \
            pytest.approx(pr, abs=1e-12)


def _boxes(lo, hi):
    return [np.array(t) for t in np.ndindex(*(np.asarray(hi) - lo + 1))]


@pytest.mark.parametrize("seed", range(12))
def test_joint_likelihoods_sum_to_one_and_match(seed):
    """For a random original: the likelihood of every table in the quality box against
    the brute-force laws, summing to one."""
    rng = np.random.default_rng(seed)
    shape = [(2, 2), (1, 3), (2, 3)][seed % 3]
    n = int(rng.integers(2, 9 if shape == (2, 3) else 12))
    x = rng.multinomial(n, rng.dirichlet(np.ones(int(np.prod(shape))))).reshape(shape)
    S = float(rng.choice([1.0, 1.5, 2.0, 3.0]))
    lo, hi = zip(*(ref.quality_interval(int(v), n, S) for v in x.ravel()))
    lo, hi = np.array(lo), np.array(hi)
    M = int(rng.integers(1, 4))
    boot = rk.Bootstrap(M, S)
    binom = rk.BinomialPerturbation(S)
    tb = tn = 0.0
    for d in _boxes(lo, hi):
        P = (lo + d).reshape(shape)
        rel = _release(boot, P, shape, n)
        got = math.exp(float(boot.log_likelihood(rel, x)))
        want = math.exp(ref.bootstrap_release_loglik(P.ravel(), x.ravel(), M, S))
        assert got == pytest.approx(want, abs=1e-12), (x.tolist(), P.tolist(), M, S)
        tb += got
        if P.sum() == n:
            rel = _release(binom, P, shape, n)
            got = math.exp(float(binom.log_likelihood(rel, x)))
            assert got == pytest.approx(ref.binomial_group_prob(P.ravel(), x.ravel(), S),
                                        abs=1e-12), (x.tolist(), P.tolist(), S)
            tn += got
    assert tb == pytest.approx(1.0, abs=1e-10)
    assert tn == pytest.approx(1.0, abs=1e-10)


def test_log_likelihood_shapes_and_impossible_originals():
    mech = rk.Bootstrap(2, 2.0)
    rel = _release(mech, [[2, 1], [0, 3]], (2, 2), 6)
    X = np.array([[[2, 1], [0, 3]], [[2, 1], [1, 2]], [[2, 1], [0, 2]], [[0, 3], [0, 3]]])
    ll = mech.log_likelihood(rel, X.reshape(2, 2, 2, 2))
    assert ll.shape == (2, 2)
    assert np.isfinite(ll[0, 0]) and np.isfinite(ll[0, 1])
    assert ll[1, 0] == -np.inf        # total 5, not the published 6
    assert ll[1, 1] == -np.inf        # a cell published 2 from an original 0
    with pytest.raises(ValueError, match="table shape"):
        mech.log_likelihood(rel, np.zeros((3, 3)))


# --- posteriors against the brute force ------------------------------------------------------
def _random_prior(rng, shape, T0):
    kind = rng.choice(["uniform", "flat", "poisson", "poisson_cells", "negbin", "historical"])
    mx = int(T0.max())
    if kind == "uniform":
        prior, spec = rk.priors.Uniform(), {"kind": "uniform"}
    elif kind == "flat":
        low = int(rng.integers(0, 2))
        high = None if rng.random() < 0.5 else int(mx + rng.integers(0, 4))
        prior, spec = rk.priors.Flat(low, high), {"kind": "flat", "low": low, "high": high}
    elif kind == "poisson":
        r = float(10 ** rng.uniform(-1, 1.5))
        prior, spec = rk.priors.Poisson(r), {"kind": "poisson", "rate": r}
    elif kind == "poisson_cells":
        r = 10 ** rng.uniform(-1, 1.5, size=shape)
        prior, spec = rk.priors.Poisson(r), {"kind": "poisson", "rate": r}
    elif kind == "negbin":
        mu, d = float(10 ** rng.uniform(-0.5, 1.5)), float(10 ** rng.uniform(-1, 1))
        prior = rk.priors.NegativeBinomial(mu, d)
        spec = {"kind": "negbin", "mean": mu, "dispersion": d}
    else:
        hist = rng.poisson(np.maximum(T0, 1)).astype(np.int64)
        prior, spec = rk.priors.Historical(hist), {"kind": "historical", "table": hist,
                                                   "floor": 0.5}
    u = rng.random()
    cell = tuple(int(rng.integers(0, s)) for s in shape)
    if u < 0.2:
        k = int(rng.integers(0, int(T0[cell]) + 2))
        prior, spec["at_least"] = prior.at_least([cell], k), [(cell, k)]
    elif u < 0.3:
        v = int(T0[cell] + rng.integers(-1, 2))
        if v >= 0:
            prior, spec["known"] = prior.known([cell], v), [(cell, v)]
    return prior, spec


def _case(rng, kind):
    shape = [(2, 2), (2, 3), (3, 2)][int(rng.integers(0, 3))]
    small = shape != (2, 2)
    n = int(rng.integers(3, 9 if small else 13))
    T0 = rng.multinomial(n, rng.dirichlet(np.full(int(np.prod(shape)), 1.5))).reshape(shape)
    S = float(rng.choice([1.0, 1.5, 2.0, 3.0]))
    table = rk.Table(T0, dims=DIMS)
    if kind == "bootstrap":
        Ms = [M for M in (1, 2, 3, 4, 5) if n * M <= (20 if small else 60)]
        M = int(rng.choice(Ms))
        mech = rk.Bootstrap(M, S)
        desc = {"kind": "bootstrap", "M": M, "S": S, "n": n}
    else:
        preserve = str(rng.choice(["total", "rows", "columns"]))
        mech = rk.BinomialPerturbation(S, preserve=preserve)
        desc = {"kind": "binomial", "S": S, "preserve": preserve, "n": n,
                "rows": T0.sum(1).tolist(), "cols": T0.sum(0).tolist()}
    rel = mech.protect(table, rng)
    prior, spec = _random_prior(rng, shape, T0)
    return rel, prior, spec, desc, T0


@pytest.mark.parametrize("kind", ["bootstrap", "binomial"])
@pytest.mark.parametrize("part", [part if part < 1 else pytest.param(part, marks=pytest.mark.slow)
                                  for part in range(4)])
def test_joint_posterior_against_brute_force(kind, part):
    """30 random cases per part and mechanism (240 in all): the joint route (taken by
    route="auto") equals the brute-force posterior: cells and unpublished totals (rtol
    1e-9), log evidence, candidate count; an empty candidate set is refused."""
    rng = np.random.default_rng(1700 + 10 * part + (kind == "binomial"))
    for _ in range(30):
        rel, prior, spec, desc, T0 = _case(rng, kind)
        shape = rel.shape
        axes = {(DIMS[0],): (1,), (DIMS[1],): (0,)}
        wanted = {k: a for k, a in axes.items() if k not in rel.margins}
        res = ref.joint_posterior(rel.published, shape, desc, spec, tuple(wanted.values()))
        res["totals"] = {k: {(j[0],): v for j, v in res["totals"][a].items()}
                         for k, a in wanted.items()} if res["count"] else {}
        note = f"{rel.mechanism.describe()} {T0.tolist()} -> {rel.published.tolist()} {spec}"
        post = check_against_reference(rel, prior, res, note)
        if post is not None:
            assert post.attrs["route"] == "joint", note
            assert "approximation" not in post.attrs, note


# --- protect, simulated, against the exact likelihood -----------------------------------------
def _gof(mech, x, draws, rng, dims=DIMS):
    """Chi-square of the release frequencies of ``draws`` protects of ``x`` against the exact
    likelihood; categories with expected count < 5 pooled; returns (p-value, total
    probability of the releases seen)."""
    t = rk.Table(x, dims=dims)
    seen = {}
    for _ in range(draws):
        rel = mech.protect(t, rng)
        key = tuple(rel.published.ravel().tolist())
        seen[key] = seen.get(key, (0, rel))[0] + 1, rel
    keys = list(seen)
    prob = np.array([math.exp(float(mech.log_likelihood(seen[k][1], x))) for k in keys])
    obs = np.array([seen[k][0] for k in keys], float)
    exp = prob * draws
    big = exp >= 5
    o = np.append(obs[big], draws - obs[big].sum())
    e = np.append(exp[big], draws - exp[big].sum())
    chi2 = float(((o - e) ** 2 / e).sum())
    return stats.chi2.sf(chi2, len(o) - 1), prob.sum()


@pytest.mark.slow
@pytest.mark.parametrize("mech, x", [
    (rk.Bootstrap(1, 1.5), np.array([[2, 1], [0, 3]])),
    (rk.Bootstrap(3, 2.0), np.array([[1, 2, 1], [3, 0, 2]])),
    (rk.BinomialPerturbation(2.0), np.array([[2, 1], [4, 3]])),
    (rk.BinomialPerturbation(1.5, preserve="rows"), np.array([[2, 3, 1], [1, 1, 4]])),
])
def test_protect_frequencies_match_the_exact_likelihood(mech, x):
    """20 000 releases from one original: chi-square p-value above 1e-4 (a false alarm once
    in 10 000 runs; the per-cell likelihood of the binomial method fails this check), and
    the releases never seen carry little probability."""
    draws = 20_000 if isinstance(mech, rk.Bootstrap) else 6_000   # binomial protect: 0.6 ms
    p, seen_mass = _gof(mech, x, draws, np.random.default_rng(17))
    assert p > 1e-4, (mech, p)
    assert seen_mass > 0.99


# --- draws, routes, refusals ----------------------------------------------------------------
def test_joint_draws_follow_the_posterior():
    rel = rk.Bootstrap(2, 2.0).protect(rk.Table(np.array([[3, 1, 2], [0, 2, 4]]), dims=DIMS),
                                       np.random.default_rng(4))
    post = rk.posterior(rel, rk.priors.Poisson(2.0))
    assert post.attrs["route"] == "joint"
    D = post.sample(6000, np.random.default_rng(1)).values
    assert (D.sum(axis=(1, 2)) == rel.margins[()]).all()        # every draw has the total n
    for idx in np.ndindex(*rel.shape):
        got = np.bincount(D[(slice(None), *idx)] - post.start[idx],
                          minlength=post.probs.shape[-1]) / len(D)
        p = post.probs[idx]
        assert np.all(np.abs(got - p) <= 5 * np.sqrt(p * (1 - p) / len(D)) + 1e-12), idx


def test_auto_takes_joint_when_it_fits():
    small = rk.Bootstrap(3, 2.0).protect(rk.Table(np.array([[4, 1], [2, 3]]), dims=DIMS),
                                         np.random.default_rng(0))
    post = rk.posterior(small, rk.priors.Uniform())
    assert post.attrs["route"] == "joint" and "approximation" not in post.attrs
    assert post.attrs["method"] == "bootstrap/joint"
    cells = rk.posterior(small, rk.priors.Uniform(), route="cells")
    assert "independent" in cells.attrs["approximation"]
    assert "regeneration" in cells.attrs["approximation"]
    big = rk.Bootstrap(3, 2.0).protect(
        rk.Table(np.random.default_rng(1).poisson(6, size=(5, 5)), dims=DIMS),
        np.random.default_rng(0))
    from riskengine.inference.resolve import route_for
    r, why = route_for(big, rk.priors.Uniform())   # beyond the joint route: Monte Carlo
    assert r.name == "mcmc"                            # (test_resampling_mcmc.py)
    assert "joint:" in why and "more than" in why
    post = rk.posterior(big, rk.priors.Uniform(), route="cells")
    assert post.attrs["route"] == "cells"
    with pytest.raises(ValueError, match="route 'joint' cannot answer"):
        rk.posterior(big, rk.priors.Uniform(), route="joint")
    rel = rk.BinomialPerturbation(2.0).protect(rk.Table(np.array([[4, 1], [2, 3]])),
                                               np.random.default_rng(0))
    assert "compensation" in rk.posterior(rel, route="cells").attrs["approximation"]


def test_count_and_empty_candidate_sets():
    rel = _release(rk.Bootstrap(2, 2.0), [[3, 1], [2, 2]], (2, 2), 8)
    post = rk.posterior(rel, rk.priors.Uniform())
    assert rk.count_candidates(rel) == post.n_candidates
    # the only cell of a 1 x 1 table is n (the per-cell route would allow 9 values)
    one = rk.Release(np.array([[750]]), margins={(): 750}, mechanism=rk.Bootstrap(M=6, S=3))
    assert rk.posterior(one).n_candidates == 1
    # every candidate excluded by the prior
    with pytest.raises(ValueError, match="no original"):
        rk.posterior(rel, rk.priors.Flat(0, 1))


def test_work_limit_is_stated():
    assert joint.MAX_WORK > 0
    big = rk.Release(np.full((4, 4), 5), margins={(): 80}, mechanism=rk.Bootstrap(5, 3.0),
                     dims=DIMS)
    why = rk.Bootstrap.routes[0].applies(plan(big, rk.priors.Uniform()))
    assert why is not None and "candidate tables" in why
    P = np.full((200, 200), 3)                 # not even looked at: 4e4 cells x (n + 1) values
    huge = rk.Release(P, margins={(): int(P.sum())}, mechanism=rk.Bootstrap(2, 2.0))
    why = rk.Bootstrap.routes[0].applies(plan(huge, rk.priors.Uniform()))
    assert "(cell, original value) pairs" in why
    assert rk.posterior(huge).attrs["route"] == "cells"
