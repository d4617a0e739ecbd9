"""Counts by meeting in the middle over row halves (inference/halves.py) and the table DP's
choice of orientation, against the column-by-column Python-integer reference
(tests/reference/tables.py) and De Loera & Sturmfels' published count."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from riskengine.inference.resolve import plan
from riskengine.inference import halves
from riskengine.inference import table_dp as dp
from tests.reference.tables import count_tables_with_windows, tables_with_windows


def _windows(rel, prior=None):
    """The table DP's windows of a release, in its own orientation."""
    return dp.release_windows(rel, prior)


def test_de_loera_sturmfels_count():
    """Rows 220, 215, 93, 64; columns 108, 286, 71, 127: 1,225,914,276,768,514 tables
    (De Loera & Sturmfels; the count seed 003 thanks them for), exactly."""
    R, C = [220, 215, 93, 64], [108, 286, 71, 127]
    rel = rk.Release(None, margins={("v",): R, ("w",): C, (): sum(R)},
                     mechanism=rk.MarginsOnly(), dims=("v", "w"))
    assert rk.count_candidates(rel) == 1_225_914_276_768_514
    win = _windows(rel).trimmed()
    assert halves.count(win.cell_lo, win.cell_lw, win.row_lo, win.col_lo) == \
        1_225_914_276_768_514


@pytest.mark.parametrize("seed", [seed if seed < 4 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(60)])
def test_halves_against_reference(seed):
    rng = np.random.default_rng(seed)
    r, m = int(rng.integers(3, 5)), int(rng.integers(2, 5))
    # the reference walks every column vector: keep 4-row cases small
    T = rng.poisson(float(rng.choice([1.0, 2.0] if r == 4 else [1.0, 3.0, 8.0])), size=(r, m))
    t = rk.Table(T, dims=("v", "w"))
    prior = rk.priors.Uniform()
    if rng.random() < 0.4:                 # knowledge: lower and upper bounds on cells
        cell = (int(rng.integers(0, r)), int(rng.integers(0, m)))
        prior = prior.at_least([cell], int(T[cell]) // 2).at_most([cell], int(T[cell]) + 1)
    rel = rk.MarginsOnly().protect(t)
    win = _windows(rel, prior).trimmed()
    want = count_tables_with_windows(win)
    assert halves.count(win.cell_lo, win.cell_lw, win.row_lo, win.col_lo) == want
    assert rk.count_candidates(rel, prior) == want


def test_halves_refuse_what_they_do_not_cover():
    lo = np.zeros((2, 3), np.int64)
    lw = np.zeros((2, 3, 4))
    assert halves.count(lo, lw, [3, 3], [2, 2, 2]) is None          # 2 rows: the DP's
    lw5 = np.zeros((3, 3, 4))
    lw5[0, 0, 1] = -np.inf                                          # a hole in a window
    assert halves.count(np.zeros((3, 3), np.int64), lw5, [3, 3, 3], [3, 3, 3]) is None


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (7, 2)])
def test_dp_picks_the_cheaper_orientation(shape):
    """Same posterior either way; the plan with fewer stored states is run (rows = the
    shorter dim), and the result is labelled in the release's own orientation."""
    rng = np.random.default_rng(sum(shape))
    T = rng.poisson(4.0, size=shape)
    t = rk.Table(T, dims=("a", "b"), coords={"a": list("PQRSTUV"[: shape[0]]),
                                              "b": list("xyzuvw"[: shape[1]])})
    for mech in (rk.MarginsOnly(), rk.ControlledRounding(3, method="optimal")):
        rel = mech.protect(t)
        route = next(r for r in rel.mechanism.routes if r.name == "dp")
        pl = plan(rel, rk.priors.Poisson(4.0))
        plans = route.prepared(pl)
        chosen = route.orientation(pl, "posterior")
        assert chosen[3][1] == min(p[3][1] for p in plans)
        post = rk.posterior(rel, rk.priors.Poisson(4.0), route="dp")
        flip = rk.Release(None if rel.published is None else rel.published.T,
                          margins=dict(rel.margins), mechanism=mech, dims=("b", "a"),
                          coords={"b": t.coords["b"], "a": t.coords["a"]})
        other = rk.posterior(flip, rk.priors.Poisson(4.0), route="dp")
        np.testing.assert_allclose(post.pmf.values,
                                   other.pmf.transpose("a", "b", "value").values, atol=1e-12)
        assert post.n_candidates == other.n_candidates
        assert post.log_evidence == pytest.approx(other.log_evidence, rel=1e-12)
        for keep in (("a",), ("b",), ()):
            np.testing.assert_allclose(post.totals[keep].mean().values,
                                       other.totals[keep].mean().values, rtol=1e-12)
        assert dp.states(chosen[1])[1] <= max(dp.states(p[1])[1] for p in plans)


@pytest.mark.parametrize("seed", [seed if seed < 10 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(40)])
def test_half_split_posterior_against_brute_force(seed):
    """Uniform (and flat-with-bounds) posteriors of 3- and 4-row tables by the half-split
    route equal the brute force over every table (tests/reference/numerics.py enumerates
    tables in their windows; the totals are filtered there)."""
    from tests.reference import numerics as ref
    rng = np.random.default_rng(1000 + seed)
    shape = [(3, 2), (3, 3), (4, 2), (2, 4), (4, 3)][seed % 5]
    T = rng.poisson(2.0, size=shape)
    t = rk.Table(T, dims=("v", "w"))
    prior = rk.priors.Uniform() if seed % 3 else rk.priors.Flat(low=0, high=int(T.max()) + 1)
    rel = rk.MarginsOnly().protect(t)
    post = rk.posterior(rel, prior, route="halves")     # (auto: the fiber walk for <= 2 free cells)
    assert post.attrs["route"] == "halves"
    assert rk.posterior(rel, prior).attrs["route"] in ("halves", "fiber", "three-by-three")
    hi = np.minimum.outer(T.sum(1), T.sum(0))
    if isinstance(prior, rk.priors.Flat):
        hi = np.minimum(hi, prior.high)
    R, C = T.sum(1), T.sum(0)
    cand = np.array(list(tables_with_windows(np.zeros(shape, int), hi, [(x, x) for x in R],
                                             [(x, x) for x in C], (T.sum(), T.sum()))))
    cells, logz, n = ref.cell_posteriors(cand, np.zeros(len(cand)))
    assert post.n_candidates == n and rk.count_candidates(rel, prior) == n
    assert post.log_evidence == pytest.approx(logz, rel=1e-12, abs=1e-12)
    for idx, pmf in cells.items():
        j = np.array(list(pmf)) - post.start[idx]
        got = post.probs[idx][j]
        np.testing.assert_allclose(got, list(pmf.values()), atol=1e-12)
    dp_post = rk.posterior(rel, prior, route="dp")
    np.testing.assert_allclose(post.pmf.values, dp_post.pmf.transpose(*post.pmf.dims).values,
                               atol=1e-12)
