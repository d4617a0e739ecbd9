"""Random rounding, noisy counts and the cell key method over every cell of a hierarchical
table or a set of linked tables (issue 28): the protection publishes each cell of the
publication once, and the exact posterior over the finest cells equals a brute force that
enumerates every finest table in a box, weighing it by the prior times the product over
published cells of Pr(published | original) (tests/reference/noise.py's transition
probabilities; the membership of each published cell built independently by
tests/reference/cell_system.py when it is there, else from the hierarchy's members)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from scipy.stats import poisson

import riskengine as rk
from tests.reference.noise import geometric_logpmf, round_prob

TOL = 1e-9


def _hier_table(rng, shape=(3, 2), mean=1.5):
    geo = rk.Hierarchy({"North": ["N1", "N2"], "South": ["S1"]}, total="Total")
    vals = rng.poisson(mean, shape)
    return rk.Table(vals, dims=("geo", "ind"), coords={"geo": list(geo.leaves),
                                                       "ind": ["a", "b"][: shape[1]]},
                    hierarchies={"geo": geo})


def _linked_set(rng, n=7):
    people = pd.DataFrame({"r": rng.choice(["A", "B"], n), "s": rng.choice(["F", "M"], n),
                           "g": rng.choice(["y", "o"], n)})
    return rk.TableSet.from_pandas(people, {"T1": ["r", "s"], "T2": ["r", "g"]})


def _members(system) -> list:
    """Each cell's finest cells, from the system's membership matrix (checked against the
    hierarchy by the cell-system tests)."""
    M = system.M.tocsr()
    return [M.indices[M.indptr[j]:M.indptr[j + 1]] for j in range(system.n_var)]


def _brute(release, loglik, prior_logpmf, hi):
    s = release.system
    pub = np.flatnonzero(s.published)
    mem = _members(s)
    n = s.n_interior
    logs, tabs = [], []
    for f in itertools.product(range(hi + 1), repeat=n):
        f = np.array(f)
        lw = float(sum(prior_logpmf(v) for v in f))
        for j in pub:
            lw += loglik(int(f[mem[j]].sum()), int(release.values[j]))
            if lw == -np.inf:
                break
        if lw > -np.inf:
            logs.append(lw)
            tabs.append(f)
    logs = np.array(logs)
    w = np.exp(logs - logsumexp(logs))
    tabs = np.array(tabs)
    pmf = np.zeros((n, hi + 1))
    for c in range(n):
        np.add.at(pmf[c], tabs[:, c], w)
    return pmf, float(logsumexp(logs))


def _dense(post, n, hi):
    vals = post.pmf["value"].values
    p = post.pmf.values.reshape(n, -1)
    out = np.zeros((n, max(hi + 1, int(vals.max()) + 1)))
    out[:, vals] = p
    return out


def _rr_loglik(B):
    def f(x, y):
        p = round_prob(x, y, B)
        return np.log(p) if p > 0 else -np.inf
    return f


def _geo_loglik(scale, clip=True):
    q = np.exp(-1.0 / scale)

    def f(x, y):
        if clip and y == 0:
            return x * np.log(q) - np.log1p(q)        # Pr(noise <= -x)
        return geometric_logpmf(y - x, scale)
    return f


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["rounding", "noise"])
def test_hierarchical_table_posterior_equals_brute_force(seed, kind):
    rng = np.random.default_rng(seed)
    t = _hier_table(rng, shape=(3, 1), mean=1.2)
    mech = rk.RandomRounding(2) if kind == "rounding" else rk.NoisyCounts("geometric", 1.0)
    rel = mech.protect(t, np.random.default_rng(100 + seed))
    assert isinstance(rel, rk.TableSetRelease)
    assert not np.isnan(rel.values[rel.system.published]).any()
    loglik = _rr_loglik(2) if kind == "rounding" else _geo_loglik(1.0)
    hi = 9
    for prior, logpmf in [(rk.priors.Flat(0, hi), lambda v: 0.0),
                          (rk.priors.Poisson(1.5), lambda v: poisson.logpmf(v, 1.5))]:
        post = rk.posterior(rel, prior)
        if kind == "noise" and not isinstance(prior, rk.priors.Flat):
            hi_b = 14                      # the Poisson tail past the box is below 1e-9
        else:
            hi_b = hi
        ref, _ = _brute(rel, loglik, logpmf, hi_b)
        got = _dense(post, rel.system.n_interior, hi_b)
        assert post.attrs["approximate"] == 0
        assert np.abs(got[:, : ref.shape[1]] - ref).max() < 1e-6
        assert got[:, ref.shape[1]:].sum() < 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_linked_set_rounding_posterior_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    ts = _linked_set(rng, n=5)
    rel = rk.RandomRounding(3).protect(ts, np.random.default_rng(7 + seed))
    # a cell the two tables share (the region totals) is published once
    s = rel.system
    shared = [j for j in range(s.n_var) if len(s.cells["tables"].iloc[j]) == 2]
    assert shared
    post = rk.posterior(rel, rk.priors.Flat(0, 3))
    ref, _ = _brute(rel, _rr_loglik(3), lambda v: 0.0, 3)
    got = _dense(post, s.n_interior, 3)
    assert np.abs(got[:, :4] - ref).max() < 1e-9


def test_cell_key_over_a_set_keys_add_up_and_publish_once():
    rng = np.random.default_rng(2)
    ts = _linked_set(rng, n=30)
    ck = rk.CellKey(D=2, V=1.0)
    keys = rng.random(ts.shape)
    rel = ck.protect(ts, keys=keys)
    s = rel.system
    x = ts.values
    # every published cell's key is the fractional part of its finest cells' keys (0 for
    # empty finest cells): perturbing with those keys by hand gives the same release
    units = np.floor(keys.reshape(-1) * 2.0 ** 52)
    units[x[: s.n_interior] == 0] = 0
    mem = _members(s)
    for j in np.flatnonzero(s.published):
        k = (units[mem[j]].sum() % 2.0 ** 52) / 2.0 ** 52
        assert rel.values[j] == ck.ptable.perturb(np.array([int(x[j])]), np.array([k]))[0]
    from riskengine.inference.resolve import route_for
    route, _ = route_for(rel, rk.priors.Poisson(3))
    assert route.name in ("linked-dp", "gibbs")
    # the keyed product over crossing entries (or Monte Carlo) is never called exact
    plan = rk.inference.resolve.plan(rel, rk.priors.Poisson(3))
    assert route.approximation(plan)


def test_controlled_rounding_of_a_hierarchy_rounds_every_level_or_refuses_by_name():
    # Cox's unbiased procedure would flatten the hierarchy: refused; the MILP rounds
    # every level at once (tests/mechanisms/test_rounding_sets.py against brute force)
    t = _hier_table(np.random.default_rng(0))
    with pytest.raises(ValueError, match="method='optimal'"):
        rk.ControlledRounding(3).protect(t, np.random.default_rng(0))
    rel = rk.ControlledRounding(3, method="optimal").protect(t)
    pub = rel.system.published
    assert (rel.values[pub] % 3 == 0).all()


def test_monte_carlo_agrees_with_exact_on_a_set():
    """The set Gibbs route (Monte Carlo) within 4 MCSE of the exact linked DP."""
    rng = np.random.default_rng(11)
    ts = _linked_set(rng, n=8)
    rel = rk.RandomRounding(3).protect(ts, np.random.default_rng(3))
    exact = rk.posterior(rel, rk.priors.Poisson(1.5), route="linked-dp")
    mc = rk.posterior(rel, rk.priors.Poisson(1.5), route="mcmc",
                      mcmc=rk.MonteCarlo(draws=3000, chains=4, seed=5))
    assert exact.attrs["approximate"] == 0 and mc.attrs["approximate"] == 1
    for v in range(4):
        at = np.full(exact.shape, v)
        pe = exact.prob_exact(at).values
        pm = mc.prob_exact(at).values
        se = mc._mcse_at(at)
        assert np.all(np.abs(pm - pe) <= 4 * se + 1e-12), (v, np.abs(pm - pe).max())
