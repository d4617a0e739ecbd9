"""rk.NoisyCounts: protect against its definition, and the exact posterior against a brute
force over every original table in a box around the published values
(tests/reference/noise.py).

Definition (DESIGN.md, riskengine/mechanisms/noise.py): every interior cell and every
published total gets its own noise, two-sided geometric Pr(k) = (1 - q) / (1 + q) q^|k|
with q = exp(-1 / scale), or discrete Gaussian Pr(k) = exp(-k^2 / (2 sigma^2)) / C;
``clip=True`` publishes max(0, x + noise).  Likelihood: the product over entries of
Pr(published | original); every nonnegative table is a candidate.

The boxes of the brute force reach as far from each published value as the noise's mass
beyond is 1e-15; the reference reports the posterior mass at the box's cut sides and the
tests check it is negligible (the box holds the posterior).  Goodness-of-fit tests run
at a fixed seed (deterministic); each would raise a false alarm with probability 1e-3
under a random seed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import riskengine as rk
from riskengine.cli import main
from riskengine.mechanisms import mechanism_from_dict
from tests.reference import noise as ref
from tests.reference.agreement import check_against_reference

ALPHA = 1e-3          # false-alarm rate of each goodness-of-fit test
BOX_TAIL = 1e-17      # noise mass beyond the brute force's box, per entry


def _gof(values, logpmf, note=""):
    """Chi-square goodness of fit of integer ``values`` to the pmf ``exp(logpmf(k))``: one
    class per value expected at least 5 times, the two tails pooled."""
    values = np.asarray(values).ravel()
    n = values.size
    k = np.arange(values.min() - 50, values.max() + 51)
    p = np.exp([logpmf(int(j)) for j in k])
    p /= p.sum()      # mass beyond +-50 of the sample's range: below 1e-20 for these scales
    keep = n * p >= 5
    lo, hi = k[keep].min(), k[keep].max()
    obs = [np.sum(values < lo)] + [np.sum(values == j) for j in range(lo, hi + 1)] + \
        [np.sum(values > hi)]
    exp = [p[k < lo].sum()] + [p[k == j][0] for j in range(lo, hi + 1)] + [p[k > hi].sum()]
    obs, exp = np.array(obs, float), n * np.array(exp)
    m = exp > 0
    res = stats.chisquare(obs[m], exp[m] * obs[m].sum() / exp[m].sum())
    assert res.pvalue > ALPHA, (note, res)


# --- protect ---------------------------------------------------------------------------------


@pytest.mark.parametrize("distribution, scale", [("geometric", 2.0), ("geometric", 0.4),
                                                 ("discrete_gaussian", 1.5),
                                                 ("discrete_gaussian", 0.6)])
def test_noise_follows_its_pmf(distribution, scale):
    """Unclipped: published - original over every cell and total of 1500 protections of
    a 2 x 3 table (independent draws of the noise) against the definition's pmf."""
    T = np.array([[30, 0, 2], [14, 7, 50]])
    t = rk.Table(T, dims=("v", "w"))
    mech = rk.NoisyCounts(distribution, scale, clip=False)
    noise = ref.Noise(distribution, scale, clip=False)
    rng = np.random.default_rng(21)
    truth = [T] + [np.asarray(v) for v in t.totals().values()]
    out = []
    for _ in range(1500):
        rel = mech.protect(t, rng)
        pubs = [rel.published] + [np.asarray(v) for v in rel.margins.values()]
        out.extend(np.concatenate([np.ravel(p - x) for p, x in zip(pubs, truth)]).tolist())
    _gof(out, noise.logpmf, f"{distribution} {scale}")
    # the noise is symmetric with the definition's variance (geometric: 2q / (1 - q)^2)
    if distribution == "geometric":
        q = math.exp(-1 / scale)
        var = 2 * q / (1 - q) ** 2
        assert abs(np.var(out) / var - 1) < 0.1


@pytest.mark.parametrize("distribution, scale", [("geometric", 1.5),
                                                 ("discrete_gaussian", 1.2)])
def test_clipping_publishes_the_lower_tail_as_zero(distribution, scale):
    """Clipped, cells with original 0, 1 and 3: the published value is 0 with probability
    Pr(noise <= -x) and k > 0 with probability Pr(noise = k - x)."""
    T = np.array([0, 1, 3])
    t = rk.Table(T, dims=("v",), margins=[])
    mech = rk.NoisyCounts(distribution, scale, clip=True)
    noise = ref.Noise(distribution, scale, clip=True)
    rng = np.random.default_rng(22)
    pubs = np.array([mech.protect(t, rng).published for _ in range(4000)])
    assert pubs.min() == 0
    for i, x in enumerate(T.tolist()):
        _gof(pubs[:, i], lambda y, x=x: noise.loglik(x, y) if y >= 0 else -math.inf,
             f"clip x={x}")


def test_cells_and_totals_get_independent_noise():
    """The signs of the noise of a cell, of its row total and of the grand total: the 27
    joint outcomes against the product of the definition's marginals (chi-square, 26 df);
    the table does not add up."""
    t = rk.Table(np.array([[5, 6], [7, 8]]), dims=("v", "w"))
    mech = rk.NoisyCounts("geometric", 1.0)
    q = math.exp(-1.0)
    p0 = (1 - q) / (1 + q)
    marg = np.array([(1 - p0) / 2, p0, (1 - p0) / 2])       # Pr(< 0), Pr(0), Pr(> 0)
    rng = np.random.default_rng(23)
    N = 4000
    counts = np.zeros((3, 3, 3))
    unequal = 0
    for _ in range(N):
        rel = mech.protect(t, rng)
        a = int(np.sign(rel.published[0, 0] - 5)) + 1
        b = int(np.sign(rel.margins[("v",)][0] - 11)) + 1
        c = int(np.sign(rel.margins[()] - 26)) + 1
        counts[a, b, c] += 1
        unequal += int(rel.published.sum() != rel.margins[()])
    p = np.einsum("i,j,k->ijk", marg, marg, marg)
    res = stats.chisquare(counts.ravel(), N * p.ravel())
    assert res.pvalue > ALPHA, res
    assert unequal > N / 2


@pytest.mark.parametrize("clip", [False, True])
def test_protect_keeps_labels_and_leaves_the_input_alone(clip):
    T = np.array([[0, 1, 0], [12, 1, 5]])
    before = T.copy()
    coords = {"age": ["young", "old"], "area": ["n", "s", "e"]}
    t = rk.Table(T, dims=("age", "area"), coords=coords)
    mech = rk.NoisyCounts("discrete_gaussian", 3.0, clip=clip)
    rel = mech.protect(t, np.random.default_rng(3))
    np.testing.assert_array_equal(T, before)
    np.testing.assert_array_equal(t.values, before)
    assert rel.dims == ("age", "area") and rel.coords == coords
    assert list(rel.data.coords["age"].values) == ["young", "old"]
    assert set(rel.margins) == {("age",), ("area",), ()}
    da = xr.DataArray(T, dims=("age", "area"), coords=coords)
    assert mech.protect(rk.Table(da), np.random.default_rng(3)) == rel
    low = min(np.min(rel.published), *(np.min(v) for v in rel.margins.values()))
    assert (low >= 0) if clip else True
    if not clip:       # sigma 3 around zeros: some raw measurement is negative here
        assert low < 0


# --- the posterior against the brute force ------------------------------------------------------


def _prior(rng, shape, P):
    """A random prior near the published values and its spec for the reference."""
    top = float(max(np.max(P), 1))
    kind = rng.choice(["uniform", "flat", "poisson", "poisson_cells"])
    if kind == "uniform":
        prior, spec = rk.priors.Uniform(), {"kind": "uniform"}
    elif kind == "flat":
        low = int(rng.integers(0, 2))
        high = None if rng.random() < 0.5 else int(top + rng.integers(0, 4))
        prior, spec = rk.priors.Flat(low, high), {"kind": "flat", "low": low, "high": high}
    elif kind == "poisson":
        r = float(rng.uniform(0.5, top + 3))
        prior, spec = rk.priors.Poisson(r), {"kind": "poisson", "rate": r}
    else:
        r = rng.uniform(0.5, top + 3, size=shape)
        prior, spec = rk.priors.Poisson(r), {"kind": "poisson", "rate": r}
    u = rng.random()
    if u < 0.15:
        cell = tuple(int(rng.integers(0, s)) for s in shape)
        k = int(rng.integers(1, 3))
        prior, spec["at_least"] = prior.at_least([cell], k), [(cell, k)]
    elif u < 0.25:
        cell = tuple(int(rng.integers(0, s)) for s in shape)
        v = int(max(P[cell] + rng.integers(-1, 2), 0))
        prior, spec["known"] = prior.known([cell], v), [(cell, v)]
    return prior, spec


def box(P, noise, spec):
    """The brute force's box: every cell within the noise's reach of its most likely
    original, cut by what the prior rules out (bounds, knowledge); and the sides where
    the box, not the prior, cuts (the posterior must be negligible there)."""
    c = np.maximum(np.asarray(P), 0)
    M = noise.reach(BOX_TAIL)
    lo, hi = np.maximum(c - M, 0), c + M
    prior_lo, prior_hi = np.zeros(lo.shape, np.int64), np.full(hi.shape, np.iinfo(np.int64).max)
    if spec["kind"] == "flat":
        prior_lo[...] = spec["low"]
        if spec["high"] is not None:
            prior_hi[...] = spec["high"]
    for cell, k in spec.get("at_least", ()):
        prior_lo[cell] = max(prior_lo[cell], k)
    for cell, v in spec.get("known", ()):
        prior_lo[cell] = prior_hi[cell] = v
    lo, hi = np.maximum(lo, prior_lo), np.minimum(hi, prior_hi)
    hi = np.maximum(hi, lo)
    return lo, hi, (lo > prior_lo, hi < prior_hi)


def check_noise(rel, prior, spec, note=""):
    """The posterior of a noisy release against the brute force in its box."""
    m = rel.mechanism
    noise = ref.Noise(m.distribution, m.scale, m.clip)
    lo, hi, cut = box(rel.published, noise, spec)
    res = ref.posterior(rel.published, rel.margins, rel.dims, noise.loglik, spec, lo, hi, cut)
    assert res["edge"] < 1e-13, (note, "the reference's box is too narrow", res["edge"])
    post = check_against_reference(rel, prior, res, note, count=False)
    if post is not None:
        assert post.n_candidates is None
        assert "infinitely many candidates" in post.attrs["n_candidates_note"]
    return post


#: shape, dims, margins, largest scale (the box stays below ~5e5 tables), Flat-bounded
CASES = [((2,), ("v",), None, 3.0), ((3,), ("v",), None, 0.8), ((3,), ("v",), [], 1.0),
         ((1, 2), ("v", "w"), None, 3.0), ((2, 1), ("v", "w"), None, 3.0),
         ((2, 2), ("v", "w"), None, 0.35), ((2, 2), ("v", "w"), [], 0.5)]


@pytest.mark.parametrize("seed", [seed if seed < 1 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(8)])
def test_posterior_equals_brute_force(seed):
    """200 random small cases: 1-D tables with and without their total, 1 x 2, 2 x 1 and
    2 x 2 tables with and without totals; zeros and negative raw measurements; clip on and
    off; both distributions at scales 0.3 to 3; every prior kind."""
    rng = np.random.default_rng(200 + seed)
    for i in range(25):
        shape, dims, margins, top = CASES[i % len(CASES)]
        dist = str(rng.choice(["geometric", "discrete_gaussian"]))
        scale = float(rng.uniform(0.3, top if dist == "geometric" else 1.6 * top))
        clip = bool(rng.random() < 0.5)
        T = rng.poisson(rng.uniform(0, 4), size=shape)
        T[rng.random(shape) < 0.2] = 0
        rel = rk.NoisyCounts(dist, scale, clip).protect(rk.Table(T, dims=dims, margins=margins),
                                                        rng)
        prior, spec = _prior(rng, shape, rel.published)
        check_noise(rel, prior, spec, f"{rel.mechanism} {T.tolist()} -> "
                    f"{rel.published.tolist()} {spec}")


def test_posterior_2x3_with_bounded_prior_equals_brute_force():
    """2 x 3 tables with every total, under priors that bound the cells (Flat with an
    upper end, or knowledge of a cell), which keeps the brute force's box small."""
    rng = np.random.default_rng(31)
    for i in range(6):
        dist = ["geometric", "discrete_gaussian"][i % 2]
        scale = float(rng.uniform(0.3, 2.0))
        T = rng.poisson(1.5, size=(2, 3))
        rel = rk.NoisyCounts(dist, scale, bool(i % 3 == 0)).protect(
            rk.Table(T, dims=("v", "w")), rng)
        high = int(T.max() + 2)
        prior = rk.priors.Flat(0, high)
        spec = {"kind": "flat", "low": 0, "high": high}
        if i % 2:
            prior = prior.known([(1, 2)], int(T[1, 2]))
            spec["known"] = [((1, 2), int(T[1, 2]))]
        post = check_noise(rel, prior, spec, f"2 x 3 {rel.mechanism} {T.tolist()} {spec}")
        assert post.attrs["route"] == "dp"


def test_posterior_3d_equals_brute_force():
    """A 2 x 2 x 2 table with every 2-way margin (the 3-D enumerator), six cells known."""
    rng = np.random.default_rng(32)
    T = rng.poisson(3.0, size=(2, 2, 2))
    rel = rk.NoisyCounts("geometric", 0.5, clip=True).protect(
        rk.Table(T, dims=("a", "b", "c")), rng)
    free = [(0, 0, 0), (1, 1, 1)]
    known = [(c, int(T[c])) for c in np.ndindex(2, 2, 2) if c not in free]
    prior = rk.priors.Uniform()
    for c, v in known:
        prior = prior.known([c], v)
    post = check_noise(rel, prior, {"kind": "uniform", "known": known}, "3-D")
    assert post.attrs["route"] == "enumerate"


def test_negative_raw_measurements():
    """Unclipped releases may publish negative values (cells and totals); clipped ones
    may not."""
    P = np.array([[-3, 2]])
    R = {("v",): [-1], ("w",): [-2, 4], (): 1}
    for dist, scale in (("geometric", 1.5), ("discrete_gaussian", 2.0)):
        rel = rk.Release(P, margins=R, mechanism=rk.NoisyCounts(dist, scale, clip=False),
                         dims=("v", "w"))
        for prior, spec in ((rk.priors.Uniform(), {"kind": "uniform"}),
                            (rk.priors.Poisson(2.0), {"kind": "poisson", "rate": 2.0})):
            check_noise(rel, prior, spec, f"negative {dist} {spec}")
    with pytest.raises(ValueError, match="published value -3 is negative, but clipped noisy "
                                         r"counts are never below 0 \(clip=True\)"):
        rk.Release(P, margins=R, mechanism=rk.NoisyCounts("geometric", 1.5, clip=True),
                   dims=("v", "w"))
    with pytest.raises(ValueError, match=r"margin \('v',\) value -1 is negative"):
        rk.Release(np.array([[3, 2]]), margins=R,
                   mechanism=rk.NoisyCounts("geometric", 1.5, clip=True), dims=("v", "w"))


def test_hand_computed_single_cell():
    """One cell published 2, no total, geometric noise with scale 1 (q = 1/e), uniform
    prior: the weights of x = 0, 1, 2, 3, ... are q^2, q, 1, q, q^2, ..., which sum to
    q^2 + q + 1 / (1 - q); clipped and published 0: x weighs Pr(noise <= -x) = q^x / (1 + q),
    so Pr(x) = (1 - q) q^x."""
    q = math.exp(-1.0)
    rel = rk.Release(np.array([2]), margins={}, mechanism=rk.NoisyCounts("geometric", 1.0),
                     dims=("v",))
    post = rk.posterior(rel, rk.priors.Uniform())
    z = q ** 2 + q + 1 / (1 - q)
    got = [post._prob_at(np.array([x]))[0] for x in range(6)]
    np.testing.assert_allclose(got, [q ** 2 / z, q / z, 1 / z, q / z, q ** 2 / z, q ** 3 / z],
                               rtol=1e-12)
    rel = rk.Release(np.array([0]), margins={},
                     mechanism=rk.NoisyCounts("geometric", 1.0, clip=True), dims=("v",))
    post = rk.posterior(rel, rk.priors.Uniform())
    got = [post._prob_at(np.array([x]))[0] for x in range(6)]
    np.testing.assert_allclose(got, [(1 - q) * q ** x for x in range(6)], rtol=1e-12)


def test_candidates_are_infinitely_many():
    t = rk.Table(np.array([[3, 1], [0, 4]]), dims=("v", "w"))
    rel = rk.NoisyCounts("discrete_gaussian", 0.7).protect(t, np.random.default_rng(4))
    with pytest.raises(ValueError, match="infinitely many candidates"):
        rk.count_candidates(rel)
    assert not any(r.counts for r in rel.mechanism.routes)     # rk.routes() says so too
    routes = rk.routes()
    assert not routes[routes["mechanism"] == "noisy_counts"]["counts"].any()
    post = rk.posterior(rel)
    assert post.n_candidates is None
    assert post.attrs["n_candidates_note"].startswith("every nonnegative table has positive "
                                                      "likelihood")
    one_d = rk.NoisyCounts("geometric", 0.7).protect(rk.Table(np.array([3, 1]), dims=("v",)),
                                                     np.random.default_rng(4))
    with pytest.raises(ValueError, match="infinitely many candidates"):
        rk.count_candidates(one_d)


# --- realistic counts, widening ------------------------------------------------------------------


def test_realistic_counts_against_brute_force():
    """Cells in the hundreds to 1e5 (1 x 2 and 2 x 1 tables; a 2 x 2 table whose prior
    knows two cells), both distributions, scales 0.3 to 3, priors at and near the counts."""
    rng = np.random.default_rng(41)
    for i in range(8):
        shape = [(1, 2), (2, 1)][i % 2]
        dist = ["geometric", "discrete_gaussian"][(i // 2) % 2]
        scale = float(rng.uniform(0.3, 3.0))
        T = rng.poisson(10 ** rng.uniform(2, 5), size=shape)
        rel = rk.NoisyCounts(dist, scale, bool(i % 3 == 0)).protect(
            rk.Table(T, dims=("v", "w")), rng)
        rate = float(T.mean() * rng.choice([1.0, 0.999]))
        prior, spec = ((rk.priors.Uniform(), {"kind": "uniform"}) if i % 4 == 0 else
                       (rk.priors.Poisson(rate), {"kind": "poisson", "rate": rate}))
        check_noise(rel, prior, spec, f"{rel.mechanism} {T.tolist()} {spec}")
    T = np.array([[40000, 123], [977, 56000]])
    rel = rk.NoisyCounts("geometric", 2.0).protect(rk.Table(T, dims=("v", "w")), rng)
    known = [((0, 1), 123), ((1, 0), 977)]
    prior = rk.priors.Poisson(50000.0).known([(0, 1)], 123).known([(1, 0)], 977)
    check_noise(rel, prior, {"kind": "poisson", "rate": 50000.0, "known": known}, "2 x 2")


def test_windows_widen_when_the_prior_is_far_from_the_published_values():
    """Published about 100 under Poisson(5): the posterior sits near 10-40, far outside
    the noise's own window around the published values; the route widens (the reported
    window grows) and still equals the brute force over 0 .. published + reach."""
    rel = rk.Release(np.array([[95, 104]]), margins={("v",): [201], ("w",): [97, 99],
                                                      (): 198},
                     mechanism=rk.NoisyCounts("geometric", 3.0), dims=("v", "w"))
    near = rk.posterior(rel, rk.priors.Uniform())
    for rate in (60.0, 5.0):
        spec = {"kind": "poisson", "rate": rate}
        noise = ref.Noise("geometric", 3.0, False)
        hi = rel.published + noise.reach(BOX_TAIL)
        res = ref.posterior(rel.published, rel.margins, rel.dims, noise.loglik, spec,
                            np.zeros_like(hi), hi)
        assert res["edge"] < 1e-13
        post = check_against_reference(rel, rk.priors.Poisson(rate), res, f"rate {rate}",
                                       count=False)
        if rate == 5.0:
            assert post.attrs["noise_window"] > near.attrs["noise_window"]
            assert float(post.mean().max()) < 50


def test_clear_error_when_even_the_widest_window_keeps_mass_at_its_edge():
    rel = rk.Release(np.array([[50000, 60000]]),
                     margins={("v",): [110000], ("w",): [50000, 60000], (): 110000},
                     mechanism=rk.NoisyCounts("geometric", 2.0), dims=("v", "w"))
    # auto passes the refusing routes over and then names each one's reason
    with pytest.raises(ValueError, match=r"no posterior route fits .*the posterior keeps .* of "
                                         r"its mass at the low edge of the window of .*16 times "
                                         r"the noise's width .*the prior puts its mass far from "
                                         r"the published values"):
        rk.posterior(rel, rk.priors.Poisson(1.0))
    with pytest.raises(FloatingPointError, match=r"the posterior keeps .* of its mass at the "
                                                 r"low edge"):
        rk.posterior(rel, rk.priors.Poisson(1.0), route="dp")      # a named route: its own


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw, err, msg", [
    ({"scale": 0}, ValueError, "scale must be a finite number > 0, got scale=0"),
    ({"scale": -1.5}, ValueError, r"scale must be a finite number > 0, got scale=-1.5"),
    ({"scale": float("nan")}, ValueError, "got scale=nan"),
    ({"scale": float("inf")}, ValueError, "got scale=inf"),
    ({"scale": "2"}, TypeError, "scale must be a number, got scale='2'"),
    ({"scale": True}, TypeError, "scale must be a number, got scale=True"),
    ({"distribution": "laplace"}, ValueError,
     "unknown distribution 'laplace'; known: 'geometric', 'discrete_gaussian'"),
    ({"clip": 1}, TypeError, "clip must be True or False, got 1"),
    ({"clip": "yes"}, TypeError, "clip must be True or False, got 'yes'")])
def test_bad_parameters_are_refused_naming_the_value(kw, err, msg):
    with pytest.raises(err, match=msg):
        rk.NoisyCounts(**kw)


@pytest.mark.parametrize("distribution, scale", [("geometric", 1e-3), ("geometric", 1e-9),
                                                 ("discrete_gaussian", 0.02)])
def test_tiny_scales_freeze_the_noise(distribution, scale):
    """A scale so small that a noise of +-1 is below e^-700 times as likely as 0 (geometric
    scale < 1/700; q = exp(-1 / scale) underflows to 0 below 1/745): the noise is 0 to
    floating point, every window holds the published value alone, the posterior is the
    published table (no domain error, no float range error)."""
    t = rk.Table(np.array([[3, 1], [0, 4]]), dims=("v", "w"))
    for clip in (False, True):
        rel = rk.NoisyCounts(distribution, scale, clip).protect(t, np.random.default_rng(0))
        np.testing.assert_array_equal(rel.published, t.values)
        post = rk.posterior(rel)
        np.testing.assert_allclose(post.prob_exact(t).values, 1.0)
        assert post.attrs["noise_window"] == 0


def test_knowledge_far_from_the_published_values_widens_the_windows():
    """A cell known to be 30 where 3 was published (scale 0.5: a window of 10): every
    window widens until the known value is inside, and the posterior equals the brute
    force; a known value beyond 16 windows is refused, saying why."""
    t = rk.Table(np.array([[3, 1], [0, 4]]), dims=("v", "w"))
    rel = rk.NoisyCounts("geometric", 0.5).protect(t, np.random.default_rng(0))
    spec = {"kind": "uniform", "known": [((0, 0), 30)]}
    post = check_noise(rel, rk.priors.Uniform().known([(0, 0)], 30), spec, "known 30")
    assert post.attrs["noise_window"] >= 27
    with pytest.raises(ValueError, match="no original table within 16 times the noise's "
                                         "width .* of the published values"):
        rk.posterior(rel, rk.priors.Uniform().known([(0, 0)], 2000))


def test_bad_releases_are_refused():
    mech = rk.NoisyCounts()
    with pytest.raises(ValueError, match="no suppressed"):
        rk.Release(np.array([[np.nan, 5]]), margins={("v",): [5], ("w",): [0, 5], (): 5},
                   mechanism=mech, dims=("v", "w"))
    with pytest.raises(ValueError, match="noisy-counts releases with subtotals are not "
                                         "supported"):
        rk.Release(np.array([[5, 5, 0], [10, 0, 5]]),
                   margins={("v",): [10, 20], ("w",): [15, 10, 5], (): 30},
                   mechanism=mech, dims=("v", "w"), groups={"w": [[0, 1], [2]]},
                   subtotals={("v", "w"): [[10, 0], [15, 5]], ("w",): [25, 5]})


# --- round trips ----------------------------------------------------------------------------------


def test_json_round_trips():
    mech = rk.NoisyCounts("discrete_gaussian", 1.25, clip=True)
    d = mech.to_dict()
    assert d == {"name": "noisy_counts", "distribution": "discrete_gaussian", "scale": 1.25,
                 "clip": True}
    back = mechanism_from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d
    assert mechanism_from_dict({"name": "noise", "scale": 2}).to_dict()["scale"] == 2.0
    t = rk.Table(np.array([[3, 7], [12, 1]]), dims=("v", "w"),
                 coords={"v": ["a", "b"], "w": ["x", "y"]})
    rel = rk.NoisyCounts("geometric", 0.5).protect(t, np.random.default_rng(1))
    again = rk.Release.from_json(rel.to_json())
    assert again == rel
    np.testing.assert_allclose(rk.posterior(again).probs, rk.posterior(rel).probs)


def test_cli_protect_then_assess(tmp_path, capsys):
    csv = tmp_path / "t.csv"
    csv.write_text("\\,a,b,c\nx,3,0,2\ny,1,4,1\n")
    out = tmp_path / "rel.json"
    assert main(["protect", str(csv), "--mechanism", "noisy_counts",
                 "--param", "distribution=geometric", "--param", "scale=2", "--seed", "5",
                 "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["mechanism"] == {"name": "noisy_counts", "distribution": "geometric",
                              "scale": 2.0, "clip": True}       # the default: clipped at 0
    assert main(["assess", str(out), "--truth", str(csv), "--no-report",
                 "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "NoisyCounts(distribution=geometric, scale=2.0, clip=True)" in text
    assert "P(true)" in text
    ds = xr.open_dataset(tmp_path / "o" / "posterior.nc")
    assert np.allclose(ds["pmf"].sum("value"), 1.0)
    ds.close()
    out2 = tmp_path / "clip.json"
    assert main(["protect", str(csv), "--mechanism", "noise", "--param",
                 "distribution=discrete_gaussian", "--param", "scale=1.5", "--param",
                 "clip=false", "--seed", "5", "--out", str(out2)]) == 0
    assert json.loads(out2.read_text())["mechanism"]["clip"] is False
    assert main(["count", str(out)]) == 2
    assert "infinitely many candidates" in capsys.readouterr().err
    assert main(["protect", str(csv), "--mechanism", "noisy_counts", "--param",
                 "scale=0"]) == 2
    assert "scale must be a finite number > 0, got scale=0" in capsys.readouterr().err
