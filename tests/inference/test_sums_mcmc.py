"""The Monte Carlo route of suppressed hierarchical tables and linked sets (``gibbs``:
riskengine.inference.sums.SumsGibbs, the block redraws of riskengine.inference.sums_gibbs)
against the exact sums route and the brute force of tests/reference/cell_system.py; and
``route="auto"`` going on to it when the exact walk passes its limit."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from riskengine.inference import sums
from tests.inference.test_sums_route import big_release, random_releases
from tests.reference import cell_system as ref_cs


def _agree(mc, pmf, n_fin):
    """Every cell's share of draws at every value within 5 binomial standard errors at
    the cell's ESS (+0.01) of the exact pmf ``{(cell, value): p}`` (a value never drawn:
    share 0)."""
    da = mc.pmf
    values = da["value"].values
    got = da.values.reshape(n_fin, len(values))
    ess = mc.diagnostics["ess_bulk"].values.reshape(-1)
    lo = min(int(values[0]), min(v for _, v in pmf))
    hi = max(int(values[-1]), max(v for _, v in pmf))
    for j in range(n_fin):
        want = np.zeros(hi - lo + 1)
        for (jj, v), p in pmf.items():
            if jj == j:
                want[v - lo] = p
        have = np.zeros(hi - lo + 1)
        have[values[0] - lo:values[-1] - lo + 1] = got[j]
        want = np.clip(want, 0.0, 1.0)
        e = max(float(ess[j]), 1.0) if np.isfinite(ess[j]) else np.inf
        tol = 5 * np.sqrt(want * (1 - want) / e) + 0.01
        assert (np.abs(have - want) <= tol).all(), (j, have, want)


def test_monte_carlo_route_agrees_with_brute_force_on_random_releases():
    checked = 0
    for r, f in random_releases(np.random.default_rng(21), 14):
        if len(f) < 3 or np.isnan(r.rel.values[: r.system.n_interior]).sum() < 2:
            continue
        logw = ref_cs.log_prior(("poisson", 2.5), f)
        _, _, pmf = ref_cs.posterior_from(f, logw)
        mc = rk.posterior(r.rel, rk.priors.Poisson(2.5), route="gibbs")
        a = mc.attrs
        assert a["route"] == "gibbs" and a["converged"] == 1, a.get("diagnostics")
        assert "Monte Carlo" in a["approximation"]
        assert "not proven to reach every candidate" in a["approximation"]
        assert mc.n_candidates is None
        _agree(mc, pmf, r.system.n_interior)
        d = mc.sample(500, np.random.default_rng(1)).values.reshape(500, -1)
        assert r.meets_every_sum(d)                 # whole tables replayed from the chains
        checked += 1
    assert checked >= 6


def test_auto_goes_on_to_monte_carlo_past_the_walk_limit(monkeypatch):
    # counts near 150, R1's districts hidden in every column: two free dimensions and
    # thousands of candidates; the walk's limit lowered to 50 candidates
    r, _ = big_release("two free")
    f = ref_cs.param_completions(r.E, r.b, r.system.n_interior)
    _, _, pmf = ref_cs.posterior_from(f, ref_cs.log_prior(("poisson", 150.0), f))
    monkeypatch.setattr(sums, "MAX_LEAVES", 50)
    with pytest.raises(ValueError, match=r"stopped after 50 candidate tables .*\(route='gibbs' "
                       "samples it"):
        rk.posterior(r.rel, rk.priors.Poisson(150), route="sums")
    mc = rk.posterior(r.rel, rk.priors.Poisson(150))
    a = mc.attrs
    assert a["route"] == "gibbs"
    assert "sums:" in a["route_reason"]
    assert a["converged"] == 1, a.get("diagnostics")
    _agree(mc, pmf, r.system.n_interior)


def test_fewer_than_two_unknown_cells_do_not_apply():
    r, _ = big_release("block")
    route = sums.SumsGibbs()
    p = rk.inference.resolve.plan(r.rel, rk.priors.Uniform())
    assert route.applies(p) is None
    assert sums.SumsGibbs._groups(r.rel, sums.SumEnumerate._problem(p)).max() + 1 >= 2


def _suppressed_hierarchy(seed):
    """3 regions x 4 districts x 5 columns, counts Poisson with rates from {1, 2, 4, 30},
    suppressed by Frequency(3) (benchmarks/sums_mcmc.py's cases)."""
    rng = np.random.default_rng(seed)
    geo = rk.Hierarchy({f"R{r}": [f"R{r}D{d}" for d in range(4)] for r in range(3)})
    rate = rng.choice([1.0, 2.0, 4.0, 30.0], size=(12, 5), p=[.3, .3, .2, .2])
    t = rk.Table(rng.poisson(rate), dims=("geo", "col"),
                 coords={"geo": list(geo.leaves), "col": [f"c{i}" for i in range(5)]},
                 hierarchies={"geo": geo}, name="T")
    return rk.suppress(rk.TableSet(t), rk.sensitivity.Frequency(3))


def test_rounds_run_on_until_converged_on_an_agency_pattern():
    # 31 hidden cells, 281,400 candidate tables: the first round of 4 x 1000 draws falls
    # short of ESS 400; the next, at twice the thinning, reaches it within the budget
    rel = _suppressed_hierarchy(5)
    ex = rk.posterior(rel, rk.priors.Uniform())
    assert ex.attrs["route"] == "sums" and ex.n_candidates == 281_400
    mc = rk.posterior(rel, rk.priors.Uniform(), route="gibbs")
    a = mc.attrs
    assert a["converged"] == 1, a["diagnostics"]
    rounds = int(a["rounds"].split()[0])
    assert rounds >= 2 and f"every {2 ** (rounds - 1)} sweeps" in a["rounds"]
    assert f"(every {2 ** (rounds - 1)} sweeps)" in a["approximation"]
    pmf = {}
    vals = ex.pmf["value"].values
    P = ex.pmf.values.reshape(rel.system.n_interior, -1)
    for j in range(P.shape[0]):
        for k in np.flatnonzero(P[j] > 0):
            pmf[(j, int(vals[k]))] = float(P[j, k])
    _agree(mc, pmf, rel.system.n_interior)


def test_a_dense_table_mixes_by_its_basic_moves(monkeypatch):
    # every interior cell of a 3 x 3 table of counts near 12 hidden, the margins
    # published: with the redraws' cap lowered to 100 solutions, a redraw of two whole
    # columns (3 x 2 cells, up to ~200 solutions) is skipped, and so is most of a box of
    # 3 rows; boxes of 2 rows x 2 columns (the basic moves, at most ~25 solutions) carry
    # the chains, and every step is a box (benchmarks/sums_mcmc.py --dense: 3 x 4 tables
    # near 40 at the real cap)
    from riskengine.inference import sums_gibbs
    x = np.random.default_rng(3).poisson(12, size=(3, 3))
    ts = rk.TableSet(rk.Table(x, dims=("r", "c")))
    v = ts.values.copy()
    v[: ts.system.n_interior] = np.nan
    rel = rk.TableSetRelease(ts, v, rk.CellSuppression())
    ex = rk.posterior(rel, rk.priors.Uniform(), route="sums")
    monkeypatch.setattr(sums_gibbs, "MAX_KEPT", 100)
    mc = rk.posterior(rel, rk.priors.Uniform(), route="gibbs")
    a = mc.attrs
    assert a["converged"] == 1, a["diagnostics"]
    assert "boxes within them (100% of redraws" in a["moves"]
    vals = ex.pmf["value"].values
    P = ex.pmf.values.reshape(9, -1)
    pmf = {(j, int(vals[k])): float(P[j, k]) for j in range(9) for k in np.flatnonzero(P[j])}
    _agree(mc, pmf, 9)


def test_the_time_estimate_counts_box_steps():
    """A sweep has as many steps as redraw about as many cells as one redraw of each
    group; a box takes 2 or 3 codes of each other dim, so it counts for a fraction of a
    group (issue 28: the route's estimate counted G redraws a sweep).  The sampler and
    the route's estimate count them alike (boxes at their default share)."""
    from riskengine.inference import sums_gibbs
    from riskengine.inference.resolve import plan
    # 10 groups, boxes over one dim of 4 codes: a box takes 2/4 or 3/4 of a group's cells,
    # 0.625 on average, so a box step counts 1 / 1.6 of a group: 10 (0.5 + 0.5 * 1.6) = 13
    assert sums_gibbs.steps_per_sweep(10, [4], 0.5) == 13
    assert sums_gibbs.steps_per_sweep(10, [4], 1.0) == 16
    assert sums_gibbs.steps_per_sweep(10, [], 0.5) == 10
    # two dims of 2 and 6 codes: (1 * 2/6 + 1 * 3/6) / 2 = 5/12 of a group, 12/5 a box
    assert sums_gibbs.steps_per_sweep(5, [2, 6], 0.5) == round(5 * (0.5 + 0.5 * 12 / 5))
    rel = _suppressed_hierarchy(5)
    p = plan(rel, rk.priors.Uniform())
    route = sums.SumsGibbs()
    prob = sums.SumEnumerate._problem(p)
    G = int(route._groups(rel, prob).max()) + 1
    bsize = sums_gibbs.box_dims(route._codes(rel, prob)[:, 1:], prob.unknown.size)[1]
    assert bsize.size
    steps = sums_gibbs.steps_per_sweep(G, bsize, sums_gibbs.BOX_SHARE)
    assert steps > G
    cost = route.estimate(p)
    sweeps = route.chains * (route.warmup + route.draws)
    want = sweeps * steps * sums.SECONDS_PER_REDRAW / min(route.chains, sums._cores())
    assert cost.seconds == pytest.approx(want, rel=1e-12)
    assert f"({steps} redraws a sweep)" in cost.detail
