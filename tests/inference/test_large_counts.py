"""Counts of any size (issue 26 item 2): the fiber route (inference/fiber.py) and the
hypergeometric route (inference/hypergeometric.py) against brute force, and the resolver
passing over routes that refuse or would run too long.

References (tests/reference/fibers.py, no code shared with riskengine): every candidate
table listed from the definition (the (r-1) x (c-1) upper-left cells over every value,
the rest from the totals, published cells checked), weighed by scipy.stats' Poisson and
negative binomial pmfs; at realistic counts a 2 x 2 table is a 1-D numpy sum over its one
free cell and a 2 x 3 table a 2-D sum.  Equality within rtol 1e-9 / atol 1e-12 per value
(tests.reference.agreement.excess), the log evidence within 1e-9, counts exactly.
Timings are in benchmarks/large_counts.py, not here.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from riskengine.inference import resolve
from riskengine.inference.fiber import Fiber
from riskengine.inference.resolve import plan
from riskengine.inference.table_dp import TableDP
from riskengine.protocol import Cost, Route
from tests.reference import fibers as ref
from tests.reference.agreement import excess

DIMS = ("v", "w")


def _prior(spec: dict):
    kind = spec["kind"]
    if kind == "uniform":
        p = rk.priors.Uniform()
    elif kind == "flat":
        p = rk.priors.Flat(low=spec["low"], high=spec["high"])
    elif kind == "poisson":
        p = rk.priors.Poisson(spec["rate"])
    else:
        p = rk.priors.NegativeBinomial(spec["mean"], spec["dispersion"])
    for cell, k in spec.get("at_least", ()):
        p = p.at_least([cell], k)
    return p


def _margins(T):
    T = np.asarray(T)
    return {("v",): T.sum(1), ("w",): T.sum(0), (): int(T.sum())}


def _check(post, want, route, count=True):
    assert post.attrs["route"] == route, post.attrs.get("route_reason")
    assert excess(post.start, post.probs, want["cells"]) <= 1
    assert post.log_evidence == pytest.approx(want["log_z"], rel=1e-9, abs=1e-9)
    if count:
        assert post.n_candidates == want["count"]


SPECS = [
    {"kind": "uniform"},
    {"kind": "poisson", "rate": 40.0},
    {"kind": "poisson", "rate": "cells"},            # a rate per cell
    {"kind": "nb", "mean": 60.0, "dispersion": 3.0},
    {"kind": "nb", "mean": 60.0, "dispersion": 0.5},  # not log-concave: every point summed
    {"kind": "flat", "low": 3, "high": 150},
    {"kind": "poisson", "rate": 40.0, "at_least": [((0, 0), 50)]},
]


def _spec(spec, shape, rng):
    if spec.get("rate") == "cells":
        return {**spec, "rate": rng.uniform(5.0, 120.0, size=shape)}
    return spec


def _margins_checked(shape, scale, k, seed):
    """A random margins-only table under ``SPECS[k]``: its posterior checked against the
    brute force (refused when no table fits: None); ``(post, release, prior, want)``."""
    rng = np.random.default_rng(seed)
    spec = _spec(SPECS[k], shape, rng)
    T = rng.integers(scale // 2, scale + 1, size=shape)
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    want = ref.posterior(T.sum(1), T.sum(0), spec)
    prior = _prior(spec)
    if want["count"] == 0:
        with pytest.raises(ValueError, match="no original"):
            rk.posterior(rel, prior)
        return None
    post = rk.posterior(rel, prior)
    _check(post, want, "fiber")
    return post, rel, prior, want


@pytest.mark.parametrize("shape,scale", [((2, 2), 300), ((2, 3), 60), ((3, 2), 60),
                                         ((2, 2), 7)])
@pytest.mark.parametrize("k", range(len(SPECS)))
def test_margins_only_equals_the_brute_force(shape, scale, k):
    got = _margins_checked(shape, scale, k, 100 * k + scale)
    if got is None:
        return
    post, rel, prior, want = got
    assert rk.count_candidates(rel, prior) == want["count"]
    for keep, tot in post.totals.items():        # published exactly: point masses
        np.testing.assert_array_equal(tot.start, np.asarray(rel.margins[keep]))
        np.testing.assert_allclose(tot.probs[..., 0], 1.0)
    if post.attrs["fiber_weights"] == "concave":
        assert post.attrs["fiber_dropped_mass"] < 1e-16


PATTERNS = {"rectangle": [(0, 0), (0, 2), (2, 0), (2, 2)],                 # d = 1
            "two rows": [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)],   # d = 2
            "two columns": [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)],
            "L": [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]}


SUPPRESSION_SPECS = [
    {"kind": "uniform"},
    {"kind": "poisson", "rate": 12.0},
    {"kind": "poisson", "rate": "cells"},
    {"kind": "nb", "mean": 10.0, "dispersion": 2.0},
    {"kind": "poisson", "rate": 12.0, "at_least": [((0, 0), 9)]},
]


def _suppression_checked(name, k, seed):
    """A random 3 x 3 table with the cells of ``PATTERNS[name]`` suppressed, under
    ``SUPPRESSION_SPECS[k]``: its posterior checked against the brute force (refused when
    no table fits: None), its draws keep the totals and the published cells."""
    rng = np.random.default_rng(seed)
    spec = _spec(SUPPRESSION_SPECS[k], (3, 3), rng)
    T = rng.integers(5, 16, size=(3, 3))
    P = T.astype(float)
    for c in PATTERNS[name]:
        P[c] = np.nan
    rel = rk.Release(P, margins=_margins(T), mechanism=rk.CellSuppression(), dims=DIMS)
    want = ref.posterior(T.sum(1), T.sum(0), spec, published=P)
    if want["count"] == 0:
        with pytest.raises(ValueError, match="no original"):
            rk.posterior(rel, _prior(spec))
        return None
    post = rk.posterior(rel, _prior(spec))
    _check(post, want, "fiber")
    draws = post.sample(200, np.random.default_rng(1)).values
    np.testing.assert_array_equal(draws.sum(2), np.broadcast_to(T.sum(1), (200, 3)))
    np.testing.assert_array_equal(draws.sum(1), np.broadcast_to(T.sum(0), (200, 3)))
    pub = ~np.isnan(P)
    assert (draws[:, pub] == T[pub]).all() and (draws >= 0).all()
    return post


@pytest.mark.parametrize("name", sorted(PATTERNS))
@pytest.mark.parametrize("k", range(len(SUPPRESSION_SPECS)))
def test_suppression_equals_the_brute_force(name, k):
    post = _suppression_checked(name, k, 7 + k)
    if post is not None:
        assert post.attrs["fiber_dimensions"] == (1 if name == "rectangle" else 2)


@pytest.mark.parametrize("spec", [{"kind": "poisson", "rate": 30000.0}, {"kind": "uniform"},
                                  {"kind": "nb", "mean": 30000.0, "dispersion": 20.0}])
def test_two_by_two_at_30000_equals_the_1d_sum(spec):
    """The external check's case: a 2 x 2 margins-only table with cells near 30,000 (the
    table DP needed 3.6e9 stored states and raised MemoryError from route 'auto')."""
    T = np.array([[30012, 29986], [30040, 30013]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    want = ref.two_by_two(T.sum(1), T.sum(0), spec)
    post = rk.posterior(rel, _prior(spec))
    _check(post, want, "fiber")


def test_two_by_three_at_realistic_counts_equals_the_2d_sum():
    """A 2 x 3 table with cells near 800 (2 free dimensions, 1.3e6 candidates) under a
    per-cell Poisson prior and a negative binomial one: the 2-D numpy sum."""
    T = np.array([[800, 730, 910], [780, 850, 690]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    rates = np.array([[700.0, 800.0, 900.0], [850.0, 750.0, 600.0]])
    for spec in ({"kind": "poisson", "rate": rates},
                 {"kind": "nb", "mean": 800.0, "dispersion": 40.0}):
        want = ref.two_by_three(T.sum(1), T.sum(0), spec)
        post = rk.posterior(rel, _prior(spec))
        _check(post, want, "fiber")
        assert post.attrs["fiber_dropped_mass"] < 1e-16


def test_draws_follow_the_posterior():
    """Whole-table draws of the fiber route: the share of draws at each value of a cell
    against its exact pmf (within 5 binomial standard errors)."""
    T = np.array([[40, 25, 30], [35, 45, 20]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    for prior in (rk.priors.Uniform(), rk.priors.Poisson(30.0)):
        post = rk.posterior(rel, prior)
        n = 20000
        d = post.sample(n, np.random.default_rng(3)).values
        for (i, j) in ((0, 0), (1, 2), (0, 1)):
            p = post.probs[i, j]
            got = np.bincount(d[:, i, j] - post.start[i, j], minlength=p.size)[:p.size] / n
            assert np.all(np.abs(got - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-3)


def test_large_fibers_answer_with_a_tiny_dropped_mass():
    """2 x 3 at cells near 1e5 under Poisson: the walk sums ~1e7 of 3.6e10 candidates; the
    dropped mass is bounded below 1e-16, the count is exact (the uniform count, every
    candidate having positive weight), and the cells' means match the hypergeometric ones
    of the scalar-rate prior (Fisher's law given the margins)."""
    T = np.array([[100412, 98765, 101033], [99871, 100220, 100987]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    post = rk.posterior(rel, rk.priors.Poisson(1e5))
    uni = rk.posterior(rel, rk.priors.Uniform())
    assert post.attrs["route"] == uni.attrs["route"] == "fiber"
    assert post.n_candidates == uni.n_candidates
    assert post.attrs["fiber_dropped_mass"] < 1e-16
    N, R, C = T.sum(), T.sum(1), T.sum(0)
    for i in range(2):
        for j in range(3):
            v = post.start[i, j] + np.arange(post.probs.shape[-1])
            want = stats.hypergeom.pmf(v, N, R[i], C[j])
            np.testing.assert_allclose(post.probs[i, j], want, atol=1e-12, rtol=1e-7)


# --- the hypergeometric route -------------------------------------------------------------
@pytest.mark.parametrize("rate", ["scalar", "rank one"])
def test_three_by_three_poisson_equals_the_brute_force(rate):
    rng = np.random.default_rng(4)
    T = rng.integers(3, 9, size=(3, 3))
    lam = 6.0 if rate == "scalar" else np.outer([1.0, 2.5, 0.7], [3.0, 1.5, 4.0])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    spec = {"kind": "poisson", "rate": lam}
    want = ref.posterior(T.sum(1), T.sum(0), spec)
    post = rk.posterior(rel, _prior(spec), route="hypergeometric")
    _check(post, want, "hypergeometric")          # small: the DP counts for it
    n = 20000
    d = post.sample(n, np.random.default_rng(2)).values
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(T.sum(1), (n, 3)))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(T.sum(0), (n, 3)))
    for (i, j) in ((0, 0), (1, 2), (2, 1)):       # draws follow the exact pmf
        p = post.probs[i, j]
        got = np.bincount(d[:, i, j] - post.start[i, j], minlength=p.size)[:p.size] / n
        assert np.all(np.abs(got - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-3)


def test_hypergeometric_refuses_what_it_does_not_cover():
    T = np.array([[4, 5, 6], [7, 3, 2], [5, 5, 5]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    for prior in (rk.priors.Uniform(), rk.priors.NegativeBinomial(5.0, 3.0),
                  rk.priors.Poisson(np.arange(1.0, 10.0).reshape(3, 3)),   # not rank one
                  rk.priors.Poisson(5.0).at_least([(0, 0)], 1)):
        with pytest.raises(ValueError, match="route 'hypergeometric' cannot answer"):
            rk.posterior(rel, prior, route="hypergeometric")


def test_three_by_three_at_1e5_under_poisson_answers_in_closed_form():
    """4 free dimensions at 1e5: no walk or DP fits; the hypergeometric route answers
    (each cell hypergeometric), without a count, and says why."""
    T = np.array([[100412, 98765, 101033], [99871, 100220, 100987], [97000, 103500, 99800]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    post = rk.posterior(rel, rk.priors.Poisson(1e5))
    assert post.attrs["route"] == "hypergeometric"
    assert post.n_candidates is None and "not counted" in post.attrs["n_candidates_note"]
    assert "dp: " in post.attrs["route_reason"]         # too long (or too large)
    N, R, C = T.sum(), T.sum(1), T.sum(0)
    for i in range(3):
        for j in range(3):
            v = post.start[i, j] + np.arange(post.probs.shape[-1])
            np.testing.assert_allclose(post.probs[i, j], stats.hypergeom.pmf(v, N, R[i], C[j]),
                                       atol=1e-12, rtol=1e-7)


# --- the resolver: refusals, time, progress -----------------------------------------------
def test_auto_refuses_what_would_run_too_long_instead_of_hanging():
    """3 x 3 margins only at 1e5 under a negative binomial prior of dispersion 0.5 (not
    log-concave: the Gibbs route lists every line and redraws pairs of rows by the DP):
    4 free dimensions; the DP and the Gibbs sampler are estimated far past the time
    budget; auto refuses at once, naming both.  (Under Uniform the Gibbs route's
    log-concave lines answer: tests/inference/test_gibbs_concave.py.)"""
    T = np.array([[100412, 98765, 101033], [99871, 100220, 100987], [97000, 103500, 99800]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    with pytest.raises(ValueError) as exc:
        rk.posterior(rel, rk.priors.NegativeBinomial(1e5, 0.5))
    text = str(exc.value)
    assert "no posterior route fits" in text
    assert re.search(r"dp: (would take about|needs)", text)     # time, or memory first
    assert "gibbs: would take about" in text
    assert "fiber: the fiber route walks at most two free dimensions" in text


def test_estimates_include_time():
    """The DP stores live states only: one free cell (2 x 2) costs about the count, two
    free cells (2 x 3) its square -- estimated past the time budget at 1e5, where the
    fiber's FFT sums are quick; the Gibbs route's estimate follows its lines."""
    T = np.array([[100012, 99986, 100100], [100040, 100013, 99950]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    p = plan(rel, rk.priors.Poisson(1e5))
    assert TableDP().estimate(p).seconds > resolve.TIME_BUDGET     # square of the counts
    assert 0 < Fiber().estimate(p).seconds < 1.0
    T = np.array([[30012, 29986], [30040, 30013]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    p = plan(rel, rk.priors.Poisson(3e4))
    assert TableDP().estimate(p).seconds < 1.0                     # about the count
    fiber_cost = Fiber().estimate(p)
    assert 0 < fiber_cost.seconds < 1.0
    gibbs = next(r for r in rel.mechanism.routes if r.name == "gibbs")
    # log-concave lines: exact rejection draws, O(log(count)) a line
    lines = gibbs.estimate(p).seconds
    assert lines < 10.0
    # not log-concave: each block redraw is the pair of rows' exact DP, about the count
    p = plan(rel, rk.priors.NegativeBinomial(3e4, 0.5))
    assert gibbs.estimate(p).seconds > 5 * lines


class _Refuses(Route):
    """A route that accepts at its estimate and refuses at its run (as the table DP did:
    MemoryError from the kernel)."""

    name = "refuses"
    needs = "nothing"

    def applies(self, plan):
        return None

    def estimate(self, plan, what="posterior"):
        return Cost(1.0, "one byte")

    def run(self, plan, *, count=True):
        raise MemoryError("the exact table DP needs 3.6e+09 stored states")


def test_auto_goes_on_after_a_route_refuses(monkeypatch):
    T = np.array([[3, 4], [5, 2]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    monkeypatch.setattr(rk.MarginsOnly, "routes", (_Refuses(), TableDP()))
    post = rk.posterior(rel, rk.priors.Poisson(3.0))
    assert post.attrs["route"] == "dp"
    assert "refuses: refused while running: MemoryError" in post.attrs["route_reason"]
    with pytest.raises(MemoryError):                     # a named route: its own answer
        rk.posterior(rel, rk.priors.Poisson(3.0), route="refuses")
    monkeypatch.setattr(rk.MarginsOnly, "routes", (_Refuses(),))
    with pytest.raises(ValueError, match="no posterior route fits.*refused while running"):
        rk.posterior(rel, rk.priors.Poisson(3.0))


def test_the_case_that_raised_memory_error_answers(monkeypatch):
    """The external check's case (2 x 2, cells near 30,000, Poisson): route 'auto' answers
    by the fiber route; with the routes it had then (the table DP, then Gibbs) the DP
    answers it exactly now (it stores live states only: about the count, where it once
    stored their square and raised MemoryError), equal to the fiber route under Poisson
    and under a negative binomial prior.  Where the DP is estimated past the time budget
    (2 x 3 at 1e5) it is passed over by name and the Gibbs route answers, labelled."""
    T = np.array([[30012, 29986], [30040, 30013]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    priors = [rk.priors.Poisson(30000.0), rk.priors.NegativeBinomial(3e4, 0.5)]
    fib = [rk.posterior(rel, prior) for prior in priors]
    assert fib[0].attrs["route"] == "fiber"
    gibbs = next(r for r in rk.MarginsOnly.routes if r.name == "gibbs")
    monkeypatch.setattr(rk.MarginsOnly, "routes", (TableDP(), gibbs))
    for prior, f in zip(priors, fib):
        post = rk.posterior(rel, prior)
        assert post.attrs["route"] == "dp" and post.exact
        assert post.n_candidates == f.n_candidates == 59999
        assert post.log_evidence == pytest.approx(f.log_evidence, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(post.mean().values, f.mean().values, rtol=1e-10)
    T = np.array([[100012, 99986, 100100], [100040, 100013, 99950]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    post = rk.posterior(rel, rk.priors.Poisson(1e5), memory="64GB")
    assert post.attrs["route"] == "gibbs" and not post.exact
    assert re.search(r"dp: would take about", post.attrs["route_reason"])


class _Silent(Route):
    """A route that works for a while without reporting progress."""

    name = "silent"
    needs = "nothing"

    def applies(self, plan):
        return None

    def estimate(self, plan, what="posterior"):
        return Cost(1.0, "one byte", seconds=1.0)

    def run(self, plan, *, count=True):
        time.sleep(0.8)
        return TableDP().run(plan, count=count)


def test_progress_is_called_on_a_route_that_reports_nothing(monkeypatch):
    T = np.array([[3, 4], [5, 2]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    monkeypatch.setattr(rk.MarginsOnly, "routes", (_Silent(), TableDP()))
    monkeypatch.setattr(resolve, "HEARTBEAT_SECONDS", 0.2)
    seen = []
    post = rk.posterior(rel, progress=lambda d, t: seen.append((d, t)))
    assert post.attrs["route"] == "silent"
    assert len(seen) >= 2 and seen[-1][0] == seen[-1][1]


def test_the_fiber_route_reports_progress():
    T = np.array([[1500, 1430, 1610], [1480, 1550, 1390]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    seen = []
    rk.posterior(rel, rk.priors.Poisson(1500.0), progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1]


# --- the fiber's FFT sums ---------------------------------------------------------------
@pytest.fixture
def fft_always(monkeypatch):
    """Every log-concave fiber with a factor in s + t summed by FFT convolutions."""
    from riskengine.inference import fiber
    monkeypatch.setattr(fiber, "FFT_POINTS", 0)


CONCAVE = [1, 2, 3, 6]      # the log-concave specs of SPECS


@pytest.mark.parametrize("shape,scale", [((2, 3), 60), ((3, 2), 60), ((2, 3), 9)])
@pytest.mark.parametrize("k", CONCAVE)
def test_fft_sums_equal_the_brute_force(shape, scale, k, fft_always):
    got = _margins_checked(shape, scale, k, 300 * k + scale)
    if got is None:
        return
    post, _, _, want = got
    assert post.attrs["fiber_fft_rounding_bound"] < 1e-10
    assert post.attrs["fiber_points_summed"] == want["count"]
    assert post.attrs["fiber_dropped_mass"] < 1e-16


@pytest.mark.parametrize("name", ["two rows", "two columns", "L"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_fft_sums_of_suppression_equal_the_brute_force(name, k, fft_always):
    post = _suppression_checked(name, k, 70 + k)
    if post is not None:
        assert post.attrs["fiber_fft_rounding_bound"] < 1e-10


def test_fft_sums_at_realistic_counts_equal_the_2d_sum(fft_always):
    """Cells near 800 (1.3e6 candidates): the FFT sums against the 2-D numpy sum."""
    T = np.array([[800, 730, 910], [780, 850, 690]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    spec = {"kind": "nb", "mean": 800.0, "dispersion": 40.0}
    want = ref.two_by_three(T.sum(1), T.sum(0), spec)
    post = rk.posterior(rel, _prior(spec))
    _check(post, want, "fiber")
    assert post.attrs["fiber_fft_rounding_bound"] < 1e-10


def test_fft_sums_equal_the_point_sums_at_30000(monkeypatch):
    """A 2 x 3 table with cells near 30,000 under a negative binomial prior (1.6e9
    candidates): the FFT sums (taken by default at this size) and the point-by-point sums
    of the walk (within its bound of 1e-16 on the mass left out) agree within 1e-12 per
    value and 1e-9 on the log evidence; the draws follow the margins."""
    from riskengine.inference import fiber
    T = np.array([[30412, 29765, 31033], [29871, 30220, 30987]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    prior = rk.priors.NegativeBinomial(30000.0, 50.0)
    fft = rk.posterior(rel, prior)
    assert fft.attrs["route"] == "fiber" and fft.attrs["fiber_fft_rounding_bound"] < 1e-10
    monkeypatch.setattr(fiber, "FFT_POINTS", 1e30)
    walk = rk.posterior(rel, prior)
    assert "fiber_fft_rounding_bound" not in walk.attrs
    pmfs = {idx: {int(walk.start[idx]) + j: float(p) for j, p in enumerate(walk.probs[idx])
                  if p > 0} for idx in np.ndindex(2, 3)}
    assert excess(fft.start, fft.probs, pmfs, rtol=0.0, atol=1e-12) <= 1
    assert fft.log_evidence == pytest.approx(walk.log_evidence, abs=1e-9)
    assert fft.n_candidates == walk.n_candidates
    d = fft.sample(500, np.random.default_rng(5)).values
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(T.sum(1), (500, 2)))
