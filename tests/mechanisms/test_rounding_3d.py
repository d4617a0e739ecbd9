"""3-D controlled rounding (seed 004, "3-D Controlled Rounding"): protect, existence, exact
inference, and the exact bounds of margins-only releases.  Seed 004's "Frechet Bounds" /
"Counter examples": tests/seeds/test_seed004_frechet.py.

References (tests/reference/rounding.py) are brute force: every up/down pattern of the
non-multiple cells (existence, optimal distortion), and every integer table in the box of
cell windows (inference).
"""

import math

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from riskengine.mechanisms import _rounding3d as R3
from tests.reference import rounding as ref

DIMS = ("a", "b", "c")


def _pub_totals(margins):
    """Published totals (keyed by dims) in the reference's order (MARGINS_3D)."""
    return [margins[tuple(DIMS[a] for a in keep)] for keep in ref.MARGINS_3D]


# --- protect --------------------------------------------------------------------------------
# Found by a random search over 2 x 2 x 2 tables (base 2), confirmed by brute force below:
# zero-restricted controlled rounding does not exist (Ernst 1989, as cited in seed 004).
NO_ROUNDING = np.array([[[0, 0], [1, 3]], [[1, 3], [1, 2]]])


def test_2x2x2_without_controlled_rounding_raises():
    assert len(ref.all_roundings_3d(NO_ROUNDING, 2)) == 0
    t = rk.Table(NO_ROUNDING, dims=DIMS)
    for method in ("unbiased", "optimal"):
        with pytest.raises(ValueError, match="no controlled rounding to base 2 exists"):
            rk.ControlledRounding(2, method=method).protect(t, np.random.default_rng(0))


@pytest.mark.parametrize("seed", range(40))
def test_milp_existence_and_optimum_match_brute_force(seed):
    """The HiGHS MILP's verdict equals brute force over all up/down patterns, and its optimum
    attains the brute-force minimum total absolute distortion of the interior."""
    rng = np.random.default_rng(1000 + seed)
    shape = [(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)][seed % 4]
    B = int(rng.integers(2, 5))
    x = rng.integers(0, 2 * B + 1, size=shape) * (rng.random(shape) > 0.2)
    allr = ref.all_roundings_3d(x, B)
    got = R3.milp_rounding(x, B)
    assert (got is None) == (len(allr) == 0)
    feas = R3.milp_rounding(x, B, objective="none")
    assert (feas is None) == (len(allr) == 0)
    if len(allr):
        assert R3.is_controlled_rounding(x, got, B)
        best = np.abs(allr - x).reshape(len(allr), -1).sum(1).min()
        assert np.abs(got - x).sum() == best
        assert any(np.array_equal(got, r) for r in allr)


@pytest.mark.parametrize("seed", range(16))
def test_protect_3d_outputs_are_controlled_roundings(seed):
    """Random small 3-D tables, bases 2-5, both methods: every release is a controlled rounding
    of the table; a ValueError exactly when brute force finds none."""
    rng = np.random.default_rng(seed)
    shape = [(2, 2, 2), (2, 3, 2), (3, 2, 3), (2, 2, 4)][seed % 4]
    B = int(rng.integers(2, 6))
    x = rng.integers(0, 3 * B, size=shape) * (rng.random(shape) > 0.25)
    exists = len(ref.all_roundings_3d(x, B)) > 0 if (x % B != 0).sum() <= 14 else None
    t = rk.Table(x, dims=DIMS)
    for method in ("unbiased", "optimal"):
        mech = rk.ControlledRounding(B, method=method)
        try:
            rel = mech.protect(t, np.random.default_rng(seed))
        except ValueError as e:
            assert exists is False or "Ernst's plane stacking" in str(e), str(e)
            continue
        assert exists in (True, None)
        assert ref.controlled_rounding_faults_3d(x, rel.published, _pub_totals(rel.margins),
                                                 B) == []
        assert rk.Release.from_json(rel.to_json()) == rel


def test_ernst_stacking_is_unbiased_per_entry():
    """Ernst's stacking with Cox's 2-D steps (no conditioning on success): each rounded plane is
    a rounding of (original up to k) - (rounded below), so E[rounded entry] = original.
    1200 draws of a 2 x 3 x 3 table, base 3: every cell mean within 4.5 standard errors."""
    from riskengine.mechanisms._cox import cox_unbiased as _cox_unbiased
    x = np.array([[[4, 1, 7], [2, 5, 0], [8, 3, 1]], [[1, 1, 5], [7, 2, 2], [0, 4, 6]]])
    rng = np.random.default_rng(7)
    draws = np.array([R3.ernst_stack(x, 3, lambda M: _cox_unbiased(M, 3, rng))
                      for _ in range(1200)], dtype=float)
    assert np.all(draws % 3 == 0)
    # the totals plane (sum over the stacking axis) is always a controlled rounding
    assert ref.adjacent(x.sum(2), draws.sum(3).astype(np.int64), 3).all()
    assert np.all(np.abs(draws - x) < 6)          # Ernst's relaxed rounding: within 2 bases
    mean = draws.mean(0)
    se = draws.std(0, ddof=1) / math.sqrt(len(draws))
    assert np.all(np.abs(mean - x) <= 4.5 * se)   # multiples included: in planes above
    assert np.array_equal(mean[..., 0][x[..., 0] % 3 == 0], x[..., 0][x[..., 0] % 3 == 0])
    # ... the bottom plane keeps its multiples, but higher planes may move them (here: zeros
    # become -3 or 3), which is why the stacked result must be checked
    assert draws[..., 1:].min() < 0


def test_protect_3d_same_seed_same_release_and_errors():
    x = np.array([[[4, 1, 7], [2, 5, 0]], [[1, 1, 5], [7, 2, 2]]])
    t = rk.Table(x, dims=DIMS)
    mech = rk.ControlledRounding(3)
    a = mech.protect(t, np.random.default_rng(3))
    assert a == mech.protect(t, np.random.default_rng(3))
    assert a.info["ernst_draws"] >= 1
    with pytest.raises(ValueError, match="every 2-way and 1-way margin"):
        mech.protect(rk.Table(x, dims=DIMS, margins=[("a", "b")]), np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        mech.protect(t, 3)


# --- inference --------------------------------------------------------------------------------
def _assert_matches(start, probs, values, ws):
    """Each entry's posterior window equals the brute-force pmf (<= 1e-9).  ``start`` (n,),
    ``probs`` (n, W), ``values`` (N tables, n entries)."""
    for e in range(len(start)):
        want = np.bincount(values[:, e], weights=ws)
        got = np.zeros(max(len(want), start[e] + probs.shape[1]))
        got[start[e]:start[e] + probs.shape[1]] = probs[e]
        want = np.pad(want, (0, len(got) - len(want)))
        assert np.abs(got - want).max() <= 1e-9, e


def _random_release(rng, shape, B, sparse=False):
    """A rounded release: a protected random table when a rounding exists, else a random
    table of multiples (any such table is a valid release); ``sparse``: mostly zeros."""
    x = rng.poisson(float(rng.uniform(0.5, 2.5)) * B / 2, size=shape) * (rng.random(shape) > 0.2)
    R = R3.milp_rounding(x, B) if rng.random() < 0.7 and not sparse else None
    if R is None:
        R = B * rng.integers(0, 3, size=shape) * (rng.random(shape) < (0.4 if sparse else 0.8))
    return R


@pytest.mark.parametrize("seed", [seed if seed < 20 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(60)])
def test_3d_rounding_posterior_matches_brute_force(seed):
    rng = np.random.default_rng(500 + seed)
    shape = [(2, 2, 2), (3, 2, 2)][seed % 2]
    # 3 x 2 x 2 at base 3 has up to ~1e6 candidates and 2 x 2 x 2 at base 4 ~1e5 (slow brute
    # force): there mostly sparse releases
    B = int(rng.integers(2, 5)) if shape == (2, 2, 2) else 2 + (seed % 10 == 1)
    R = _random_release(rng, shape, B, sparse=B + shape[0] >= 6)
    likelihood = ("feasible", "unbiased")[(seed // 2) % 2]
    mech = rk.ControlledRounding(B, likelihood=likelihood)
    margins = {tuple(DIMS[a] for a in keep): t for keep, t in zip(ref.MARGINS_3D,
                                                                   ref.totals_3d(R))}
    rel = rk.Release(R, margins=margins, mechanism=mech, dims=DIMS)
    kind = seed % 3
    rate = float(rng.uniform(0.5, 4))
    if kind == 0:
        prior, lp = rk.priors.Uniform(), (lambda T: np.zeros(len(T)))
    elif kind == 1:
        prior = rk.priors.Poisson(rate)
        lp = (lambda T: stats.poisson.logpmf(T, rate).sum((1, 2, 3)))
    else:                              # Poisson plus the knowledge that cell (0, 0, 0) >= 1
        prior = rk.priors.Poisson(rate).at_least([(0, 0, 0)], 1)
        lp = (lambda T: np.where(T[:, 0, 0, 0] >= 1,
                                 stats.poisson.logpmf(T, rate).sum((1, 2, 3)), -np.inf))
    tabs, ws = ref.rounding_posterior_3d(R, _pub_totals(margins), B, likelihood, lp)
    if not len(tabs):
        with pytest.raises(ValueError, match="no original table"):
            rk.posterior(rel, prior)
        return
    post = rk.posterior(rel, prior)
    assert post.n_candidates == len(tabs)
    if kind == 0:
        assert rk.count_candidates(rel) == len(tabs)
    assert np.allclose(post.probs.sum(-1), 1.0)
    W = post.probs.shape[-1]
    _assert_matches(post.start.ravel(), post.probs.reshape(-1, W), tabs.reshape(len(tabs), -1),
                    ws)
    for m, keep in enumerate(ref.MARGINS_3D):
        tp = post.totals[tuple(DIMS[a] for a in keep)]
        _assert_matches(np.atleast_1d(tp.start).ravel(), tp.probs.reshape(-1, W),
                        ref.totals_3d(tabs)[m].reshape(len(tabs), -1), ws)


def test_3d_rounding_posterior_true_table_is_candidate():
    x = np.array([[[4, 1, 2], [2, 5, 0]], [[1, 1, 5], [3, 2, 2]]])
    rel = rk.ControlledRounding(3, method="optimal").protect(rk.Table(x, dims=DIMS))
    post = rk.posterior(rel)
    assert post.prob_exact(x).values.min() > 0
    assert post.attrs["route"] == "enumerate"
    with pytest.raises(ValueError, match="route 'dp' cannot answer .*covers 2-D tables"):
        rk.posterior(rel, route="dp")
    with pytest.raises(ValueError, match="unknown route 'structured'"):
        rk.posterior(rel, route="structured")


@pytest.mark.parametrize("seed", [seed if seed < 1 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(6)])
def test_exact_bounds_2d_equal_frechet(seed):
    """2-D margins-only releases: integer programming, LP and the DP support all give the
    Fréchet bounds (sharp in 2-D)."""
    rng = np.random.default_rng(seed)
    x = rng.poisson(2.0, size=(2 + seed % 2, 3))
    rel = rk.MarginsOnly().protect(rk.Table(x, dims=("v", "w")))
    fb = rk.frechet_bounds(rel)
    for method in ("ilp", "lp", "enumerate"):
        eb = rk.exact_bounds(rel, method=method)
        assert np.allclose(eb["lower"], fb["lower"]) and np.allclose(eb["upper"], fb["upper"])


def test_exact_bounds_bad_input():
    x = np.array([[[4, 1], [2, 5]], [[1, 1], [7, 2]]])
    rel = rk.MarginsOnly().protect(rk.Table(x, dims=DIMS))
    with pytest.raises(ValueError, match="unknown method"):
        rk.exact_bounds(rel, method="guess")
    with pytest.raises(TypeError, match="rk.Release"):
        rk.exact_bounds(rel.margins)
    rounded = rk.ControlledRounding(3, method="optimal").protect(rk.Table(x, dims=DIMS))
    with pytest.raises(TypeError, match="margins-only"):
        rk.exact_bounds(rounded)
