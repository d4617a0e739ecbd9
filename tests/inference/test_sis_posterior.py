"""The importance-sampling posterior (route ``sis``): the proposal against every table of
the fiber (explicit enumeration, tests/reference/tables.py), its draws against its own
probabilities, and the weighted posterior against the exact routes within its stated
Monte Carlo error, at small and at realistic counts; the choice of ``auto``; refusals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from kernels import sis as K
from riskengine.inference import sis_posterior as S
from riskengine.inference.gibbs import ConvergenceWarning
from riskengine.inference.resolve import plan as make_plan
from riskengine.inference.resolve import route_for
from tests.reference.tables import tables_with_windows


def _case(rng, r, m, kind):
    """Margins of a random r x m table and cell windows: ``flat`` (0 .. a bound, weight
    1), ``poisson`` (random rates), ``fixed`` (about a third of the cells published at
    their value, the rest flat: a suppression pattern), ``holes`` (random values
    impossible inside each window: the log-space path)."""
    x = rng.poisson(rng.uniform(0.5, 3.0), size=(r, m))
    R, C = x.sum(1), x.sum(0)
    W = int(x.max()) + 3
    clo = np.zeros((r, m), np.int64)
    clw = np.zeros((r, m, W))
    hi = np.minimum.outer(R, C)
    for i in range(r):
        for j in range(m):
            clw[i, j, hi[i, j] + 1:] = -np.inf
    if kind == "poisson":
        v = np.arange(W)
        lam = rng.uniform(0.3, 4.0, size=(r, m))
        clw = np.where(np.isfinite(clw), v * np.log(lam)[..., None]
                       - np.array([math.lgamma(k + 1) for k in v]), -np.inf)
    elif kind == "fixed":
        fixed = rng.random((r, m)) < 0.35
        for i, j in zip(*np.nonzero(fixed)):
            clw[i, j] = -np.inf
            clw[i, j, x[i, j]] = 0.0
    elif kind == "holes":
        hole = rng.random(clw.shape) < 0.2
        keep = np.zeros_like(hole)
        np.put_along_axis(keep, x[..., None], True, axis=-1)   # the truth stays possible
        clw = np.where(hole & ~keep, -np.inf, clw)
    return R, C, clo, clw


def _fiber(R, C, clo, clw):
    fin = np.isfinite(clw)
    lo = clo + np.argmax(fin, axis=-1)
    hi = clo + clw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
    out = []
    for T in tables_with_windows(lo, hi, [(v, v) for v in R], [(v, v) for v in C],
                                 (R.sum(), R.sum())):
        lw = float(np.take_along_axis(clw, (T - clo)[..., None], axis=-1).sum())
        if np.isfinite(lw):
            out.append((T, lw))
    return out


@pytest.mark.parametrize("ahead", [False, True])
@pytest.mark.parametrize("kind", ["flat", "poisson", "fixed", "holes"])
@pytest.mark.parametrize("seed", range(6))
def test_the_weight_times_the_proposal_is_the_target_on_every_table(kind, seed, ahead):
    """For every table of positive weight: q(T) > 0 and w(T) q(T) = weight(T) (within
    1e-9 in logs); the proposal's probabilities sum to at most 1 (walks that find no
    completion take the rest); with and without the rows' look-ahead."""
    rng = np.random.default_rng(100 * seed + len(kind))
    r, m = (2, 3) if seed % 3 == 0 else (3, 3) if seed % 3 == 1 else (3, 4)
    R, C, clo, clw = _case(rng, r, m, kind)
    arr = S.arrays_from(R, C, clo, clw, ahead=ahead)
    assert arr.linear == (kind != "holes")         # linear path unless windows have holes
    assert arr.flat == (kind in ("flat", "fixed") and not ahead)
    fiber = _fiber(R, C, clo, clw)
    assert fiber
    total_q = 0.0
    for T, lw in fiber:
        logw, logq = K.weighted_proposal(*arr, T)
        assert np.isfinite(logq), T
        assert logw + logq == pytest.approx(lw, abs=1e-9)
        total_q += math.exp(logq)
    assert total_q <= 1 + 1e-9
    if kind in ("flat", "poisson"):                # no window to cut a walk short
        assert total_q == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("kind", ["flat", "fixed"])
@pytest.mark.parametrize("seed", range(4))
def test_the_exact_flat_path_equals_the_guarded_one(kind, seed):
    """Flat weights: the exact column counts (integers in float64) and the guarded linear
    sums (prefix / suffix differences, rescaled rows) give every table the same weight
    and proposal probability (1e-12 in logs), and the same draws from the same
    uniforms."""
    rng = np.random.default_rng(500 + 10 * seed + len(kind))
    r, m = [(2, 3), (3, 3), (3, 4), (4, 4)][seed]
    R, C, clo, clw = _case(rng, r, m, kind)
    arr = S.arrays_from(R, C, clo, clw, ahead=False)
    assert arr.flat and K._exact_flat(R, C, True, False)
    none = np.zeros((0, 0))
    for T, _ in _fiber(R, C, clo, clw):
        a = K._weighted_walk(*arr, none, T.copy(), False, True)
        b = K._weighted_walk(*arr, none, T.copy(), False, False)
        assert a == pytest.approx(b, abs=1e-12)
    u = rng.random((200, r, m))
    for k in range(len(u)):
        Ta, Tb = np.zeros((r, m), np.int64), np.zeros((r, m), np.int64)
        a = K._weighted_walk(*arr, u[k], Ta, True, True)
        b = K._weighted_walk(*arr, u[k], Tb, True, False)
        assert np.array_equal(Ta, Tb) and a == pytest.approx(b, abs=1e-12)


@pytest.mark.parametrize("ahead", [False, True])
@pytest.mark.parametrize("kind", ["flat", "poisson", "fixed", "holes"])
def test_draws_follow_the_proposal(kind, ahead):
    """20,000 draws against the proposal's own probabilities (chi-square), and each
    draw's weight equals the one the walk along it gives."""
    rng = np.random.default_rng(7)
    R, C, clo, clw = _case(rng, 3, 3, kind)
    arr = S.arrays_from(R, C, clo, clw, ahead=ahead)
    tables, logw = S.weighted_draws(arr, 20000, np.random.default_rng(1))
    ok = np.isfinite(logw)
    fiber = _fiber(R, C, clo, clw)
    q = np.array([math.exp(K.weighted_proposal(*arr, T)[1]) for T, _ in fiber])
    index = {T.tobytes(): k for k, (T, _) in enumerate(fiber)}
    seen = np.bincount([index[t.tobytes()] for t in tables[ok]], minlength=len(fiber))
    dead = 1.0 - q.sum()
    assert (~ok).sum() == pytest.approx(20000 * dead, abs=5 * math.sqrt(20000 * dead + 1))
    expected = 20000 * q
    big = expected >= 5
    obs = np.append(seen[big], seen[~big].sum() + (~ok).sum())
    exp_ = np.append(expected[big], expected[~big].sum() + 20000 * dead)
    keep = exp_ > 0
    p = stats.chisquare(obs[keep], exp_[keep] * obs[keep].sum() / exp_[keep].sum()).pvalue
    assert p > 1e-4
    for t, lw in zip(tables[ok][:50], logw[ok][:50]):
        assert K.weighted_proposal(*arr, t)[0] == pytest.approx(lw, abs=1e-9)


def _within_mcse(post, exact, z=5.0):
    """Every cell's mean within z MCSE of the exact one (plus 1e-9), and its cdf within
    3 / sqrt(Kish ESS) of the exact cdf everywhere (a Kolmogorov-Smirnov bound at the
    weights' effective sample size, p ~ 1e-8 per cell)."""
    import xarray as xr
    d = post.diagnostics
    diff = np.abs(post.mean().values - exact.mean().values)
    assert np.all(diff <= z * d["mcse_mean"].values + 1e-9), (diff, d["mcse_mean"].values)
    ess = max(float(d.attrs["kish_ess"]), 1.0)
    pa, pe = (v.fillna(0) for v in xr.align(post.pmf, exact.pmf, join="outer"))
    gap = np.abs(pa.cumsum("value").values - pe.cumsum("value").values).max()
    assert gap <= 3.0 / math.sqrt(ess), (gap, ess)


@pytest.mark.parametrize("seed", range(8))
def test_margins_only_against_the_exact_posterior(seed):
    rng = np.random.default_rng(seed)
    shape = [(2, 3), (3, 3), (3, 4), (4, 4)][seed % 4]
    t = rk.Table(rng.poisson(rng.uniform(1, 6), size=shape))
    rel = rk.MarginsOnly().protect(t)
    prior = [rk.priors.Uniform(), rk.priors.Poisson(3.0),
             rk.priors.NegativeBinomial(4.0, 2.0)][seed % 3]
    exact = rk.posterior(rel, prior, route="dp")
    post = rk.posterior(rel, prior, route="sis")
    assert post.attrs["route"] == "sis" and post.attrs["approximate"] == 1
    assert post.attrs["converged"] == 1
    _within_mcse(post, exact)


@pytest.mark.parametrize("seed", range(6))
def test_suppression_against_the_exact_posterior(seed):
    """Cell suppression (published cells fixed in the middle of the columns, where walks
    can find no completion) against the exact DP."""
    rng = np.random.default_rng(50 + seed)
    t = rk.Table(rng.poisson(4, size=(4, 5)))
    rel = rk.suppress(t, rk.sensitivity.Frequency(3))
    if not np.isnan(rel.published).any():
        pytest.skip("nothing suppressed")
    prior = [rk.priors.Uniform(), rk.priors.Poisson(4.0)][seed % 2]
    exact = rk.posterior(rel, prior, route="dp")
    post = rk.posterior(rel, prior, route="sis")
    _within_mcse(post, exact)
    published = ~np.isnan(rel.published)
    assert np.allclose(post.max_prob().values[published], 1.0, atol=1e-12)


def test_counts_in_the_hundreds_and_ten_thousands():
    """A 3 x 3 table with cells near 300 (exact: the 3 x 3 closed form) and a 2 x 3 one
    with cells near 20,000 (exact: the fiber walk), under Uniform; an 8 x 6 table with
    cells near 15 under Poisson (exact: the hypergeometric route)."""
    t = rk.Table(np.array([[310, 280, 295], [260, 330, 305], [300, 290, 270]]))
    rel = rk.MarginsOnly().protect(t)
    _within_mcse(rk.posterior(rel, rk.priors.Uniform(), route="sis"),
                 rk.posterior(rel, rk.priors.Uniform(), route="three-by-three"))
    t = rk.Table(np.array([[20100, 19800, 20350], [19900, 20210, 19700]]))
    rel = rk.MarginsOnly().protect(t)
    post = rk.posterior(rel, rk.priors.Uniform(), route="sis",
                        mcmc=rk.MonteCarlo(chains=1, draws=1000))
    _within_mcse(post, rk.posterior(rel, rk.priors.Uniform(), route="fiber"))
    # the agency table: 8 x 6, cells near 15, under Poisson(15) (exact: hypergeometric)
    t = rk.Table(np.random.default_rng(7).poisson(15, size=(8, 6)))
    rel = rk.MarginsOnly().protect(t)
    _within_mcse(rk.posterior(rel, rk.priors.Poisson(15.0), route="sis"),
                 rk.posterior(rel, rk.priors.Poisson(15.0), route="hypergeometric"))


def test_counts_past_the_float64_bound_take_the_guarded_sums():
    """8 x 2 margins with column sums near 1,600 (the compositions of a column number
    about 1e18, past 2**53: the flat walk takes the guarded linear sums, not the exact
    counts) under Uniform, against the exact table DP."""
    t = rk.Table(np.random.default_rng(11).poisson(200, size=(8, 2)))
    rel = rk.MarginsOnly().protect(t)
    arr = S.ImportanceSampling()._prepared(make_plan(rel, rk.priors.Uniform()))
    assert arr.flat and arr.linear and not K._exact_flat(arr.R, arr.C, arr.flat, arr.ahead)
    post = rk.posterior(rel, rk.priors.Uniform(), route="sis",
                        mcmc=rk.MonteCarlo(chains=1, draws=2000))
    _within_mcse(post, rk.posterior(rel, rk.priors.Uniform(), route="dp"))


def test_the_posterior_carries_its_weights_and_diagnostics(tmp_path):
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w"))
    rel = rk.MarginsOnly().protect(t)
    post = rk.posterior(rel, rk.priors.Poisson(2.0), route="sis")
    assert post.weights is not None and post.weights.sum() == pytest.approx(1.0)
    assert post.chains.shape[0] == 1 and post.chains.shape[1] == post.weights.size
    d = post.diagnostics
    assert {"ess", "mcse_mean", "mcse_max_prob"} <= set(d.data_vars)
    assert d.attrs["kish_ess"] >= 4000 and d.attrs["pareto_k"] <= S.PARETO_K_MAX
    assert "importance sampling" in post.attrs["approximation"]
    assert "Kish ESS" in post.attrs["diagnostics"]
    # each cell's mean is the weighted mean of its draws
    assert np.allclose(post.mean().values,
                       np.tensordot(post.weights, post.chains[0], axes=1))
    # the MCSE of Pr(cell == truth) is the weighted (delta-method) one
    s = post.summary(t)
    hit = (post.chains[0] == t.values).astype(float)
    p = np.tensordot(post.weights, hit, axes=1)
    want = np.sqrt(np.tensordot(post.weights ** 2, (hit - p) ** 2, axes=1))
    assert np.allclose(s["mcse_prob_exact"].values, want)
    assert np.allclose(s["prob_exact"].values, p)
    draws = post.sample(200, np.random.default_rng(0))
    assert draws.shape == (200, 3, 3)
    assert np.all(draws.sum(axis=2) == t.values.sum(1))
    idata = post.to_arviz(50, np.random.default_rng(0))
    assert idata.posterior["table"].shape[:2] == (1, 50)
    ds = post.to_dataset(t)
    assert "ess" in ds and "kish_ess" in ds.attrs


def test_uneven_weights_are_said_not_converged(monkeypatch):
    """A 12 x 12 table under Uniform weighs very unevenly under the column proposal
    (Kish ESS 95 of 200,000 draws): capped at the ESS target's number of draws, the
    route warns and says so."""
    monkeypatch.setattr(S, "MAX_DRAWS_PER_ESS", 1)
    t = rk.Table(np.random.default_rng(7).poisson(3, size=(12, 12)))
    rel = rk.MarginsOnly().protect(t)
    with pytest.warns(ConvergenceWarning, match="not reliable"):
        post = rk.posterior(rel, rk.priors.Uniform(), route="sis",
                            mcmc=rk.MonteCarlo(chains=1, draws=2000))
    assert post.attrs["converged"] == 0
    assert post.diagnostics.attrs["kish_ess"] < 2000


def test_auto_takes_it_when_quick_or_faster_than_gibbs_and_its_weights_are_even(
        monkeypatch):
    """Past the exact routes (an 8 x 6 margins-only table), ``auto`` takes ``sis`` when
    its estimate is within ``QUICK`` seconds whatever the Gibbs route's, or shorter than
    the Gibbs route's, else Gibbs, and says why; where a pilot's weights are too uneven
    (a 12 x 12 table under Uniform: Pareto k > 0.7) it never takes it.  The estimate (a
    seeded pilot and a work model) is the same on every call."""
    from riskengine.inference.gibbs import BlockGibbs
    from riskengine.protocol import Cost
    t = rk.Table(np.random.default_rng(7).poisson(15, size=(8, 6)))
    rel = rk.MarginsOnly().protect(t)
    cost = S.ImportanceSampling().estimate(make_plan(rel, rk.priors.Uniform()))
    assert cost.seconds == S.ImportanceSampling().estimate(
        make_plan(rel, rk.priors.Uniform())).seconds
    assert cost.seconds <= S.QUICK and not cost.too_long
    fast = Cost(1e6, "fast", seconds=cost.seconds / 2)
    monkeypatch.setattr(BlockGibbs, "estimate", lambda self, plan, what="posterior": fast)
    assert route_for(rel, rk.priors.Uniform())[0].name == "sis"        # quick: taken
    monkeypatch.setattr(S, "QUICK", 0.0)
    route, reason = route_for(rel, rk.priors.Uniform())
    assert route.name == "gibbs"
    assert "sis: the Gibbs route is estimated faster" in reason
    slow = Cost(1e6, "slow", seconds=cost.seconds * 2)
    monkeypatch.setattr(BlockGibbs, "estimate", lambda self, plan, what="posterior": slow)
    assert route_for(rel, rk.priors.Uniform())[0].name == "sis"
    monkeypatch.undo()
    t = rk.Table(np.random.default_rng(7).poisson(3, size=(12, 12)))
    route, reason = route_for(rk.MarginsOnly().protect(t), rk.priors.Uniform())
    assert route.name == "gibbs"
    assert "sis: the importance weights are too uneven: a pilot's Pareto k is" in reason


def test_refusals():
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]))
    rounded = rk.RandomRounding(3).protect(t, rng=np.random.default_rng(0))
    why = S.ImportanceSampling().applies(make_plan(rounded, rk.priors.Uniform()))
    assert "every total published exactly" in why
    t3 = rk.Table(np.ones((2, 2, 2), np.int64))
    with pytest.raises(ValueError, match="route 'sis' cannot answer|unknown route"):
        rk.posterior(rk.MarginsOnly().protect(t3), rk.priors.Uniform(), route="sis")
    with pytest.raises(ValueError, match="margins disagree"):
        S.arrays_from([3, 1], [2, 3], np.zeros((2, 2)), np.zeros((2, 2, 4)))


def test_no_completion_anywhere_is_an_error():
    """Windows no table fits: every walk weighs 0, and the route says so."""
    R, C = np.array([2, 2]), np.array([2, 2])
    clw = np.full((2, 2, 3), -np.inf)
    clw[:, :, 0] = 0.0                       # every cell 0: no table has these margins
    arr = S.arrays_from(R, C, np.zeros((2, 2)), clw)
    _, logw = S.weighted_draws(arr, 100, np.random.default_rng(0))
    assert not np.isfinite(logw).any()


def test_quiet_on_good_cases():
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rk.posterior(rk.MarginsOnly().protect(t), rk.priors.Uniform(), route="sis")


@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
def test_cli_assess_reports_the_importance_sampler(tmp_path, capsys, monkeypatch):
    """``riskengine assess`` past the exact routes (a 5 x 5 margins-only release under a
    60 MB budget) takes ``sis``, prints and writes its diagnostics; ``--strict`` refuses
    an unreliable one (weights capped short of the ESS target)."""
    import xarray as xr

    from riskengine.cli import main
    t = rk.Table(np.random.default_rng(1).poisson(6, size=(5, 5)), dims=("region", "age"))
    path = tmp_path / "rel.json"
    rk.MarginsOnly().protect(t).save(path)
    out = tmp_path / "out"
    assert main(["assess", str(path), "--memory", "60MB", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "route: sis" in text
    assert "APPROXIMATE (Monte Carlo): Monte Carlo: importance sampling" in text
    assert "Kish ESS" in text
    ds = xr.open_dataset(out / "posterior.nc")
    assert {"ess", "mcse_mean", "mcse_max_prob"} <= set(ds.data_vars)
    assert ds.attrs["kish_ess"] >= 4000 and ds.attrs["converged"] == 1
    ds.close()
    html = (out / "assess.html").read_text()
    assert "Monte Carlo diagnostics" in html and "Kish effective sample size" in html
    assert "reliable by the usual rules" in html
    monkeypatch.setattr(S, "MAX_DRAWS_PER_ESS", 0.01)
    assert main(["assess", str(path), "--memory", "60MB", "--route", "sis",
                 "--out", str(tmp_path / "strict"), "--strict"]) == 3
    assert "--strict: the Monte Carlo posterior has not converged" in capsys.readouterr().err
