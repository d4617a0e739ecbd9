"""The Monte Carlo route (blocked Gibbs with exact block updates) against exact answers.

References: the exact table DP's posterior on the same release (independent of the
chain: forward filtering over the whole table, no Markov chain), and on tables small
enough to list, every candidate table enumerated by brute force from the definition
(margins only: every nonnegative table with the published margins).  Tolerances: a
cell's Gibbs posterior mean within 5 of its arviz MCSE of the exact mean (plus 1e-9),
every probability within 0.05 of the exact one (6,000 draws: the standard error of a
probability is at most 0.5 / sqrt(ESS) < 0.025 at the ESS >= 400 the route demands).
"""

from __future__ import annotations

import itertools
import warnings
import zlib

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.inference.gibbs import ConvergenceWarning
from tests.reference.agreement import monte_carlo_agrees


def _run(rel, prior, **kw):
    """The mechanism's own Gibbs route with these chain settings (rk.MonteCarlo's)."""
    return rk.posterior(rel, prior, route="gibbs", memory=4e9, mcmc=rk.MonteCarlo(**kw))


def _table(rng, shape, lam):
    return rk.Table(rng.poisson(lam, size=shape), dims=("region", "age"),
                    coords={"region": [f"r{i}" for i in range(shape[0])],
                            "age": [f"a{j}" for j in range(shape[1])]})


CASES = [
    ("margins 4x3", lambda t, rng: rk.MarginsOnly().protect(t), (4, 3), 3.0),
    ("margins 5x3", lambda t, rng: rk.MarginsOnly().protect(t), (5, 3), 2.0),
    ("rounding B=3 4x3", lambda t, rng: rk.ControlledRounding(3, method="optimal")
     .protect(t, rng), (4, 3), 6.0),
    ("random rounding B=3 4x2", lambda t, rng: rk.RandomRounding(3).protect(t, rng),
     (4, 2), 5.0),
    ("margins 3x4 (transposed blocks)", lambda t, rng: rk.MarginsOnly().protect(t), (3, 4), 3.0),
    ("noise geometric b=0.5 3x2", lambda t, rng: rk.NoisyCounts("geometric", 0.5)
     .protect(t, rng), (3, 2), 4.0),
    ("noise discrete Gaussian s=1 3x2", lambda t, rng: rk.NoisyCounts("discrete_gaussian", 1.0)
     .protect(t, rng), (3, 2), 4.0),
    ("noise geometric b=0.5 clipped 3x3", lambda t, rng: rk.NoisyCounts("geometric", 0.5,
                                                                        clip=True)
     .protect(t, rng), (3, 3), 1.5),
    # realistic counts: cells in the hundreds (the exact DP's windows stay narrow)
    ("rounding B=5 4x2 mean 400", lambda t, rng: rk.ControlledRounding(5, method="optimal")
     .protect(t, rng), (4, 2), 400.0),
]


@pytest.mark.parametrize("name, protect, shape, lam",
                         [c if c[0] == "margins 4x3" or c[0].startswith("noise")
                          else pytest.param(*c, marks=pytest.mark.slow) for c in CASES],
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("prior", [rk.priors.Uniform(),
                                   pytest.param(rk.priors.Poisson(4.0), marks=pytest.mark.slow)],
                         ids=["uniform", "poisson"])
def test_gibbs_agrees_with_the_exact_posterior(name, protect, shape, lam, prior):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    t = _table(rng, shape, lam)
    rel = protect(t, rng)
    exact = rk.posterior(rel, prior, route="dp")
    mc = _run(rel, prior, chains=4, warmup=100, draws=1500)
    assert mc.attrs["converged"] == 1
    monte_carlo_agrees(mc, exact)       # >= 99 % of (cell, value) within 4 MCSE
    # the published information holds in every draw
    d = mc.chains.reshape((-1,) + mc.shape)
    if isinstance(rel.mechanism, rk.MarginsOnly):
        np.testing.assert_array_equal(d.sum(2), np.broadcast_to(t.values.sum(1), d.shape[:2]))
        np.testing.assert_array_equal(d.sum(1), np.broadcast_to(t.values.sum(0),
                                                                (d.shape[0], shape[1])))
    assert (d >= 0).all()


def _margins_candidates(rows, cols):
    """Every nonnegative table with row sums ``rows`` and column sums ``cols`` (brute
    force over all but the last row and column)."""
    r, c = len(rows), len(cols)
    out = []
    ranges = [range(min(rows[i], cols[j]) + 1) for i in range(r - 1) for j in range(c - 1)]
    for inner in itertools.product(*ranges):
        x = np.zeros((r, c), np.int64)
        x[:-1, :-1] = np.reshape(inner, (r - 1, c - 1))
        x[:-1, -1] = rows[:-1] - x[:-1, :-1].sum(1)
        x[-1, :] = cols - x[:-1, :].sum(0)
        if (x >= 0).all() and x[-1].sum() == rows[-1]:
            out.append(x.tobytes())
    return set(out)


@pytest.mark.slow
@pytest.mark.parametrize("T", [
    [[1, 2], [2, 0], [0, 1], [1, 1]],
    [[1, 0, 2], [0, 1, 1], [2, 1, 0], [1, 1, 0]],
    [[0, 0, 3], [1, 0, 0], [0, 2, 0], [1, 0, 0], [0, 1, 1]],
])
def test_the_chain_reaches_every_candidate(T):
    """Irreducibility on small cases: the set of tables the chains visit equals the
    candidate set listed by brute force (margins only, where the candidates are few)."""
    T = np.asarray(T)
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    want = _margins_candidates(T.sum(1), T.sum(0))
    post = _run(rel, rk.priors.Uniform(), chains=4, warmup=50, draws=3000)
    seen = {x.tobytes() for x in post.chains.reshape((-1,) + T.shape).astype(np.int64)}
    assert seen == want
    assert len(want) == rk.count_candidates(rel, route="dp")


@pytest.mark.slow
def test_the_chain_moves_rounded_totals():
    """Moves that keep the margins cannot leave a margin: under controlled rounding the
    totals are free within their windows and the chain must visit several of them; the
    frequencies of each row total match the exact posterior's."""
    rng = np.random.default_rng(5)
    t = _table(rng, (4, 2), 6.0)
    rel = rk.ControlledRounding(3, method="optimal").protect(t, rng)
    post = _run(rel, rk.priors.Uniform(), chains=4, warmup=100, draws=2000)
    d = post.chains.reshape((-1, 4, 2))
    assert all(len(np.unique(d[:, i].sum(1))) > 1 for i in range(4))
    exact = rk.posterior(rel, route="dp").sample(20000, np.random.default_rng(1)).values
    for i in range(4):
        for v in np.unique(exact[:, i].sum(1)):
            assert abs((d[:, i].sum(1) == v).mean() - (exact[:, i].sum(1) == v).mean()) < 0.05


def test_diagnostics_are_on_the_posterior_and_labelled():
    rng = np.random.default_rng(2)
    t = _table(rng, (4, 3), 4.0)
    rel = rk.MarginsOnly().protect(t)
    post = _run(rel, rk.priors.Uniform(), chains=3, warmup=50, draws=800)
    dg = post.diagnostics
    assert isinstance(dg, xr.Dataset)
    assert set(dg.data_vars) == {"rhat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_max_prob"}
    assert dg["rhat"].dims == ("region", "age")
    assert list(dg.coords["region"].values) == ["r0", "r1", "r2", "r3"]
    assert dg.attrs["chains"] == 3 and dg.attrs["draws"] == 800
    assert dg.attrs["max_rhat"] == pytest.approx(float(dg["rhat"].max()))
    assert np.isfinite(dg["rhat"]).all() and (dg["ess_bulk"] > 0).all()
    assert (dg["mcse_mean"] >= 0).all()
    assert not post.exact
    assert post.attrs["approximation"].startswith("Monte Carlo: blocked Gibbs, 3 chains x 800")
    assert "max R-hat" in post.attrs["diagnostics"]
    assert post.n_candidates is None and "Monte Carlo" in post.attrs["n_candidates_note"]
    assert post.chains.shape == (3, 800, 4, 3)
    assert np.isfinite(post.pmf.values).all()
    np.testing.assert_allclose(post.pmf.sum("value").values, 1.0)


@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
def test_same_release_same_answer():
    rng = np.random.default_rng(3)
    rel = rk.MarginsOnly().protect(_table(rng, (4, 3), 3.0))
    a = _run(rel, rk.priors.Uniform(), chains=2, warmup=20, draws=500)
    b = _run(rel, rk.priors.Uniform(), chains=2, warmup=20, draws=500)
    np.testing.assert_array_equal(a.chains, b.chains)
    c = _run(rel, rk.priors.Poisson(2.0), chains=2, warmup=20, draws=500)
    assert not np.array_equal(a.chains, c.chains)


def test_too_few_draws_warn_and_say_so():
    rng = np.random.default_rng(4)
    rel = rk.MarginsOnly().protect(_table(rng, (4, 3), 5.0))
    with pytest.warns(ConvergenceWarning, match=r"R-hat <= 1.01, ESS >= 400.*min bulk ESS"):
        post = _run(rel, rk.priors.Uniform(), chains=2, warmup=5, draws=40)
    assert post.attrs["converged"] == 0


@pytest.mark.slow
def test_auto_takes_gibbs_beyond_the_exact_frontier_and_draws_from_it():
    """5 x 5 margins only: the DP needs ~0.8 GB; under a 60 MB budget the resolver
    passes it over (saying why) and a Monte Carlo route answers: the importance sampler,
    estimated faster than the chains here; ``route="mcmc"`` takes the chains."""
    t = _table(np.random.default_rng(1), (5, 5), 6.0)
    rel = rk.MarginsOnly().protect(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = rk.posterior(rel, rk.priors.Uniform(), memory="60MB")
        assert post.attrs["route"] == "sis"
        assert "dp: needs" in post.attrs["route_reason"]
        post = rk.posterior(rel, rk.priors.Uniform(), memory="60MB", route="mcmc")
    assert post.attrs["route"] == "gibbs"
    d = post.sample(300, np.random.default_rng(0))
    assert d.dims == ("draw", "region", "age")
    np.testing.assert_array_equal(d.sum("age").values,
                                  np.broadcast_to(t.values.sum(1), (300, 5)))
    idata = post.to_arviz(400, np.random.default_rng(0), statistics=["cramers_v"])
    assert idata.posterior.sizes["chain"] == 4 and idata.posterior.sizes["draw"] == 100
    with pytest.raises(ValueError, match="kept 4000 draws"):
        post.sample(5000, np.random.default_rng(0))
    with pytest.raises(ValueError, match="no count route|that counts candidates|unknown route"):
        rk.count_candidates(rel, route="gibbs")


def test_gibbs_refuses_what_it_does_not_cover():
    t4 = rk.Table(np.ones((2, 2, 2, 2), int), dims=("a", "b", "c", "d"))
    rel = rk.MarginsOnly().protect(t4)
    with pytest.raises(ValueError, match="route 'gibbs' cannot answer this release: the Gibbs "
                                         "route covers 2-D and 3-D count tables"):
        rk.posterior(rel, route="gibbs")
    t3 = rk.Table(np.ones((2, 2, 2), int), dims=("a", "b", "c"))
    rel = rk.Release(None, margins={("a", "b"): t3.values.sum(2), ("c",): t3.values.sum((0, 1))},
                     mechanism=rk.MarginsOnly(), dims=t3.dims, kind="count")
    with pytest.raises(ValueError, match="needs every 2-way margin published; missing"):
        rk.posterior(rel, route="gibbs")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
def test_cli_shows_the_diagnostics_and_strict_refuses(tmp_path, capsys, monkeypatch):
    from riskengine.cli import main
    t = _table(np.random.default_rng(1), (5, 5), 6.0)
    rel = rk.MarginsOnly().protect(t)
    path = tmp_path / "rel.json"
    rel.save(path)
    route = next(r for r in rk.MarginsOnly.routes if r.name == "gibbs")
    monkeypatch.setattr(route, "draws", 300)
    monkeypatch.setattr(route, "warmup", 30)
    out = tmp_path / "out"
    assert main(["assess", str(path), "--memory", "60MB", "--route", "mcmc",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "route: gibbs" in text
    assert "APPROXIMATE (Monte Carlo): Monte Carlo: blocked Gibbs, 4 chains x 300 draws" in text
    assert "max R-hat" in text and "largest MCSE of a cell's mean" in text
    ds = xr.open_dataset(out / "posterior.nc")
    assert {"rhat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_max_prob"} <= set(ds.data_vars)
    assert ds["rhat"].dims == ("region", "age") and "Monte Carlo" in ds.attrs["approximation"]
    ds.close()
    html = (out / "assess.html").read_text()
    assert "Monte Carlo diagnostics" in html and "smallest bulk ESS" in html
    monkeypatch.setattr(route, "draws", 40)
    strict = tmp_path / "strict"
    assert main(["assess", str(path), "--memory", "60MB", "--route", "mcmc",
                 "--out", str(strict), "--strict"]) == 3
    err = capsys.readouterr().err
    assert "--strict: the Monte Carlo posterior has not converged" in err
    assert not strict.exists()


def test_route_mcmc_names_the_monte_carlo_route():
    rel = rk.MarginsOnly().protect(_table(np.random.default_rng(0), (4, 3), 3.0))
    from riskengine.inference.resolve import route_for
    r, reason = route_for(rel, rk.priors.Uniform(), "mcmc")
    assert r.name == "gibbs" and reason == "requested"
    cyc = rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25)
    rel = cyc.protect(rk.Table(np.full((3, 3), 4)), np.random.default_rng(0))
    r, _ = route_for(rel, rk.priors.Uniform(), "mcmc")
    assert r.name == "gibbs" and not r.exact           # the cycle signs' Gibbs route
    rel = rk.Bootstrap(M=2, S=3.0).protect(rk.Table(np.full((2, 2), 4)),
                                           np.random.default_rng(0))
    r, _ = route_for(rel, rk.priors.Uniform(), "mcmc")
    assert r.name == "mcmc" and not r.exact            # the exact joint likelihood's chain


def test_a_reducible_move_set_is_caught(monkeypatch):
    """Blocks redrawn with their own totals held and only the basic moves in the line
    sweeps (margin-preserving moves only) cannot leave the starting tables' totals: under
    controlled rounding the chains, started at dispersed vertices, disagree -- R-hat flags
    it (and the exact comparison would)."""
    from riskengine.inference import gibbs
    from riskengine.inference import table_dp as dp

    real = gibbs._block

    def frozen(win, x, rows, transpose=False):
        b = real(win, x, rows, False)
        rs = x[rows].sum(1)
        cs = x[rows].sum(0)
        one = np.zeros((len(rows), 1))
        held = dp.Windows(b.cell_lo, b.cell_lw, rs, one, cs, np.zeros((len(cs), 1)),
                          int(rs.sum()), np.zeros(1))
        if not transpose:
            return held
        return dp.Windows(held.cell_lo.T, held.cell_lw.transpose(1, 0, 2), held.col_lo,
                          held.col_lw, held.row_lo, held.row_lw, held.grand_lo, held.grand_lw)

    monkeypatch.setattr(gibbs, "_block", frozen)
    monkeypatch.setattr(gibbs, "_totals_move", lambda ew: False)
    rng = np.random.default_rng(5)
    t = _table(rng, (4, 3), 6.0)
    rel = rk.ControlledRounding(3, method="optimal").protect(t, rng)
    with pytest.warns(ConvergenceWarning):
        post = _run(rel, rk.priors.Uniform(), chains=4, warmup=50, draws=500)
    assert post.attrs["converged"] == 0 and post.diagnostics.attrs["max_rhat"] > 1.1
    d = post.chains
    for ch in range(4):                       # each chain keeps its start's totals
        assert len({tuple(x.sum(1)) for x in d[ch]}) == 1
    exact = rk.posterior(rel, route="dp")
    assert np.abs(post.mean().values - exact.mean().values).max() > 0.1 or \
        post.diagnostics.attrs["max_rhat"] > 1.1


@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
@pytest.mark.parametrize("shape", [(4, 3), (3, 3, 2)], ids=["2-D", "3-D"])
def test_same_seed_same_draws_whatever_the_threads(shape):
    """Chains run on threads: their draws for a seed do not depend on how many."""
    rng = np.random.default_rng(8)
    dims = ("a", "b", "c")[:len(shape)]
    rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(3.0, size=shape), dims=dims))
    runs = [_run(rel, rk.priors.Uniform(), chains=3, warmup=10, draws=200, workers=w)
            for w in (1, 2, 3)]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0].chains, other.chains)


@pytest.mark.slow
def test_monte_carlo_settings_reach_the_route_and_are_checked():
    """rk.posterior(..., mcmc=rk.MonteCarlo(...)) sets chains, draws and seed of the Monte
    Carlo route it takes (and leaves exact routes alone); bad settings are refused."""
    rel = rk.MarginsOnly().protect(_table(np.random.default_rng(1), (5, 5), 6.0))
    mc = rk.MonteCarlo(chains=2, warmup=20, draws=150, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        post = rk.posterior(rel, route="mcmc", mcmc=mc)
        again = rk.posterior(rel, route="mcmc", mcmc=mc)
        other = rk.posterior(rel, route="mcmc", mcmc=rk.MonteCarlo(2, 20, 150, seed=4))
    assert post.chains.shape == (2, 150, 5, 5)
    np.testing.assert_array_equal(post.chains, again.chains)
    assert not np.array_equal(post.chains, other.chains)
    assert rk.posterior(rel, route="dp", mcmc=mc).attrs["route"] == "dp"
    with pytest.raises(ValueError, match="MonteCarlo draws must be an integer >= 1, got 0"):
        rk.MonteCarlo(draws=0)
    with pytest.raises(ValueError, match="unknown scheduler 'spark'"):
        rk.MonteCarlo(scheduler="spark")
    with pytest.raises(TypeError, match="mcmc must be an rk.MonteCarlo"):
        rk.posterior(rel, mcmc={"draws": 10})


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::riskengine.inference.gibbs.ConvergenceWarning")
def test_dask_scheduler_gives_the_same_draws():
    """The chains as tasks on a local dask cluster: the same draws for the seed."""
    pytest.importorskip("distributed")
    rng = np.random.default_rng(9)
    rel = rk.RandomRounding(3).protect(_table(rng, (4, 3), 5.0), rng)
    a = rk.posterior(rel, route="mcmc", mcmc=rk.MonteCarlo(2, 20, 200, seed=1))
    b = rk.posterior(rel, route="mcmc", mcmc=rk.MonteCarlo(2, 20, 200, seed=1,
                                                           scheduler="dask"))
    np.testing.assert_array_equal(a.chains, b.chains)


def test_noise_beyond_the_exact_dp_by_monte_carlo_and_its_window_edges():
    """Geometric noise b = 0.6 on a 5 x 5 table: the DP does not fit the memory budget, the
    chains answer (route gibbs on the full noise windows); a prior that drags the chains to
    a cut window edge is refused, as the exact routes refuse mass at a cut edge."""
    t = rk.Table(np.random.default_rng(1).poisson(5, size=(5, 5)), dims=("region", "age"))
    rel = rk.NoisyCounts("geometric", 0.6).protect(t, np.random.default_rng(2))
    small = rk.MonteCarlo(chains=2, warmup=50, draws=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # short chains
        post = rk.posterior(rel, rk.priors.Poisson(5.0), mcmc=small)
        assert post.attrs["route"] == "gibbs" and "dp: needs" in post.attrs["route_reason"]
        assert post.n_candidates is None and "infinitely many" in post.attrs["n_candidates_note"]
        x = np.array([[500, 600], [400, 300]])
        far = rk.Release(x, margins={("v",): x.sum(1), ("w",): x.sum(0), (): x.sum()},
                         mechanism=rk.NoisyCounts("geometric", 2.0), dims=("v", "w"))
        with pytest.raises(FloatingPointError, match="edge of the noise window"):
            rk.posterior(far, rk.priors.Poisson(1.0), route="gibbs", mcmc=small)
