"""The block-redraw chains over cells tied by exact sums (riskengine.inference.sums_gibbs,
kernels/sum_redraw.py) against brute force (tests/reference/sum_enum.py: every assignment
by itertools) on random census-like systems: groups (areas) x types, rows per group over
classes of types and per type over all groups."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from riskengine.inference import sums_gibbs
from tests.reference.sum_enum import candidates


def _system(seed):
    """Groups x types cells; per group: sums over a random partition of the types; per
    type: the sum over the groups.  A random table 0..2 a cell gives the sums."""
    rng = np.random.default_rng(seed)
    G = int(rng.integers(3, 5))
    T = int(rng.integers(2, 4)) if G == 4 else int(rng.integers(2, 5))
    n = G * T
    rows = []
    for g in range(G):
        cls = rng.integers(0, 2, size=T)          # two classes of types per group
        for c in (0, 1):
            cells = [g * T + t for t in range(T) if cls[t] == c]
            if cells:
                rows.append(cells)
    for t in range(T):
        rows.append([g * T + t for g in range(G)])
    R = sp.csr_matrix((np.ones(sum(map(len, rows))),
                       (np.repeat(np.arange(len(rows)), [len(r) for r in rows]),
                        np.concatenate(rows))), shape=(len(rows), n))
    x = rng.integers(0, 3, size=n)
    target = (R @ x).astype(np.int64)
    ub = np.array([min(target[R[:, i].nonzero()[0]]) for i in range(n)], np.int64)
    lb = np.zeros(n, np.int64)
    W = int(ub.max()) + 1
    if seed % 2:                                     # a Poisson-like prior
        lw = -np.log(np.arange(1, W + 1)).cumsum()[None, :] + 0.3 * np.arange(W)
        lw = np.repeat(lw, n, axis=0)
    else:                                            # random weights per cell and value
        lw = rng.normal(size=(n, W))
    lw = np.where(np.arange(W)[None, :] <= ub[:, None], lw, -np.inf)
    groups = np.repeat(np.arange(G), T)
    return R, target, lb, ub, lw, groups, x


def _exact(R, target, lb, ub, lw):
    X, logw = candidates(lb, ub - lb + 1, lw, R.indptr, R.indices, target)
    w = np.exp(logw - logw.max())
    return X, w / w.sum()


@pytest.mark.parametrize("seed", range(12))
def test_draws_follow_the_exact_posterior_on_random_systems(seed):
    R, target, lb, ub, lw, groups, x = _system(seed)
    X, w = _exact(R, target, lb, ub, lw)
    sd = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, chains=4, draws=1500,
                           seed=seed)
    flat = sd.draws.reshape(-1, R.shape[1])
    # every draw is a consistent table of positive weight
    assert (R @ flat.T == target[:, None]).all()
    assert {tuple(v) for v in flat} <= {tuple(v) for v in X}
    assert sd.converged, sd.summary
    mean = w @ X
    mcse = sd.diagnostics["mcse_mean"].values
    # 5 Monte Carlo standard errors (a cell the chains hold constant has mcse 0: it must
    # then be constant in every consistent table)
    assert (np.abs(flat.mean(axis=0) - mean) <= 5 * mcse + 1e-9).all()
    W = int(ub.max()) + 1
    for i in range(R.shape[1]):
        p = np.bincount(X[:, i], weights=w, minlength=W)
        q = np.bincount(flat[:, i], minlength=W) / len(flat)
        # each value's share within 5 binomial standard errors at the cell's ESS
        ess = max(float(sd.diagnostics["ess_bulk"].values[i]), 1.0)
        p = np.clip(p, 0.0, 1.0)
        assert (np.abs(q - p) <= 5 * np.sqrt(p * (1 - p) / ess) + 0.01).all()


def test_rounds_run_on_at_doubled_thinning_until_the_budget():
    # 4 chains x 50 draws can never reach ESS 400: the rounds go on, each at twice the
    # thinning of the last, until the next would pass the budget; the draws stay draws
    # of the exact law
    R, target, lb, ub, lw, groups, x = _system(3)
    X, w = _exact(R, target, lb, ub, lw)
    sd = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, chains=4, draws=50, seed=3,
                           max_seconds=2.0, until_converged=True)
    assert sd.rounds >= 2 and sd.thin == 2 ** (sd.rounds - 1)
    assert not sd.converged
    assert f"(every {sd.thin} sweeps) in the last of {sd.rounds} rounds" in sd.summary
    assert sd.draws.shape == (4, 50, R.shape[1])
    flat = sd.draws.reshape(-1, R.shape[1])
    assert {tuple(v) for v in flat} <= {tuple(v) for v in X}
    mcse = sd.diagnostics["mcse_mean"].values
    assert (np.abs(flat.mean(axis=0) - w @ X) <= 5 * mcse + 1e-9).all()
    # a run that converges in its first round stops there
    one = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, chains=4, draws=1500, seed=3,
                            max_seconds=600.0, until_converged=True)
    assert one.converged and one.rounds == 1 and one.thin == 1
    # thinning by hand: the same law, draws every 3 sweeps
    th = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, chains=4, draws=500, seed=3,
                           thin=3)
    assert th.thin == 3 and th.rounds == 1
    flat = th.draws.reshape(-1, R.shape[1])
    mcse = th.diagnostics["mcse_mean"].values
    assert (np.abs(flat.mean(axis=0) - w @ X) <= 5 * mcse + 1e-9).all()


def test_chains_the_redraws_cannot_join_are_flagged():
    # a ring of 4 groups of one cell each: x0 + x1 = x1 + x2 = x2 + x3 = x3 + x0 = 1 has
    # two solutions, and fixing any one group fixes every other: no redraw of 2 or 3
    # groups moves.  Chains started at both solutions never meet: not converged.
    rows = [[0, 1], [1, 2], [2, 3], [3, 0]]
    R = sp.csr_matrix((np.ones(8), (np.repeat(np.arange(4), 2), np.ravel(rows))),
                      shape=(4, 4))
    target = np.ones(4, np.int64)
    lw = np.zeros((4, 2))
    args = (R, target, np.zeros(4, np.int64), np.ones(4, np.int64), lw, np.arange(4),
            np.array([1, 0, 1, 0]))
    sd = sums_gibbs.sample(*args, chains=8, draws=100, seed=3, max_groups=3)
    starts = {tuple(sd.draws[c, 0]) for c in range(8)}
    assert starts == {(1, 0, 1, 0), (0, 1, 0, 1)}
    assert sd.moved == 0.0
    assert not sd.converged
    assert "not converged" in sd.summary
    assert np.isinf(sd.diagnostics.attrs["max_rhat"])
    # with every group in reach (the default), a redraw of all four is an exact draw of
    # the whole table: the chains cross between the two solutions, each half the time
    sd = sums_gibbs.sample(*args, chains=8, draws=2000, seed=3)
    assert sd.moved > 0.05 and sd.converged, sd.summary
    share = sd.draws[..., 0].mean()
    assert abs(share - 0.5) <= 5 * float(sd.diagnostics["mcse_mean"].values[0])


def test_bad_inputs_are_refused_by_name():
    R, target, lb, ub, lw, groups, x = _system(0)
    with pytest.raises(ValueError, match="chains must be >= 2"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, chains=1)
    with pytest.raises(ValueError, match="draws must be >= 10"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, draws=3)
    with pytest.raises(ValueError, match="at least 2 groups"):
        sums_gibbs.sample(R, target, lb, ub, lw, np.zeros_like(groups))
    with pytest.raises(ValueError, match="one group per cell"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups[:-1])
    with pytest.raises(ValueError, match="max_groups must be >= 2"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, max_groups=1)
    with pytest.raises(ValueError, match="thin must be >= 1"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, thin=0)
    with pytest.raises(ValueError, match="until_converged needs max_seconds"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, until_converged=True)
    with pytest.raises(ValueError, match="box_codes must be"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, box_codes=np.zeros(len(x)))
    with pytest.raises(ValueError, match=r"box_share must be in \[0, 1\]"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, box_codes=np.zeros((len(x), 1)),
                          box_share=1.5)
    bad = x.copy()
    bad[0] += 1
    with pytest.raises(ValueError, match="x0 is not a consistent table"):
        sums_gibbs.sample(R, target, lb, ub, lw, groups, bad)


def _boxed(seed, G, A, B, vmax, ub_max=None):
    """Groups x types, a type being (a, b) of A x B codes (census-like: a block's cells
    by age and race).  Rows per group and ``a`` (the sum over ``b``), one random coarse
    row per group (a random set of its types), and per type the sum over the groups (the
    tract table).  A random table 0..vmax gives the sums.  Returns the system, the
    groups and the types' codes (the box dims)."""
    rng = np.random.default_rng(seed)
    T = A * B
    n = G * T
    rows = []
    for g in range(G):
        for a in range(A):
            rows.append([g * T + a * B + b for b in range(B)])
        sub = rng.choice(T, size=int(rng.integers(2, T)), replace=False)
        rows.append(sorted(g * T + int(t) for t in sub))
    for t in range(T):
        rows.append([g * T + t for g in range(G)])
    R = sp.csr_matrix((np.ones(sum(map(len, rows))),
                       (np.repeat(np.arange(len(rows)), [len(r) for r in rows]),
                        np.concatenate(rows))), shape=(len(rows), n))
    x = rng.integers(0, vmax + 1, size=n)
    target = (R @ x).astype(np.int64)
    ub = np.array([min(target[R[:, i].nonzero()[0]]) for i in range(n)], np.int64)
    if ub_max is not None:
        ub = np.minimum(ub, ub_max)
    lb = np.zeros(n, np.int64)
    W = int(ub.max()) + 1
    lw = rng.normal(size=(n, W)) if seed % 2 else np.zeros((n, W))
    lw = np.where(np.arange(W)[None, :] <= ub[:, None], lw, -np.inf)
    t = np.arange(n) % T
    codes = np.stack([t // B, t % B], axis=1)
    return R, target, lb, ub, lw, np.arange(n) // T, x, codes


def _close_to(sd, X, w, n):
    flat = sd.draws.reshape(-1, n)
    mcse = sd.diagnostics["mcse_mean"].values
    return np.abs(flat.mean(axis=0) - w @ X) <= 5 * mcse + 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_box_steps_alone_follow_the_exact_posterior(seed):
    # two groups of 4 x 2 types, cells 0..1: a box takes 3 of the 4 ages, both codes of
    # the other dim; every step a box (box_share=1).  Against every assignment.
    R, target, lb, ub, lw, groups, x, codes = _boxed(seed, 2, 4, 2, 1, ub_max=1)
    X, w = _exact(R, target, lb, ub, lw)
    sd = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, chains=4, draws=1500,
                           seed=seed, box_codes=codes, box_share=1.0)
    n = R.shape[1]
    flat = sd.draws.reshape(-1, n)
    assert sd.boxes == 1.0
    assert (R @ flat.T == target[:, None]).all()
    assert {tuple(v) for v in flat} <= {tuple(v) for v in X}
    assert sd.converged, sd.summary
    assert _close_to(sd, X, w, n).all()


@pytest.mark.parametrize("seed", range(4))
def test_mixed_steps_on_larger_systems_match_the_exact_enumeration(seed):
    # 4 groups of 5 x 2 types (40 cells, 0..2): against the exact enumeration of the
    # sums route (kernels.sum_enum, itself checked against brute force), half the steps
    # boxes
    from kernels.sum_enum import enumerate_sums, suggest_order
    R, target, lb, ub, lw, groups, x, codes = _boxed(100 + seed, 4, 5, 2, 2)
    n = R.shape[1]
    ip, ix = R.indptr.astype(np.int64), R.indices.astype(np.int64)
    out = enumerate_sums(lb, ub - lb + 1, lw, ip, ix, target, suggest_order(ip, ix, n),
                         keep=0, max_leaves=10**7, max_nodes=10**9)
    assert out[4]                                  # complete
    probs = out[6]
    mean = probs @ np.arange(probs.shape[1])
    sd = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, chains=4, draws=1500,
                           seed=seed, box_codes=codes, box_share=0.5)
    assert 0.4 < sd.boxes < 0.6
    flat = sd.draws.reshape(-1, n)
    assert (R @ flat.T == target[:, None]).all()
    assert sd.converged, sd.summary
    mcse = sd.diagnostics["mcse_mean"].values
    assert (np.abs(flat.mean(axis=0) - mean) <= 5 * mcse + 1e-9).all()


def test_box_share_follows_the_skipped_group_steps(monkeypatch):
    # whole groups past the caps (a cap of 2 solutions): every step a box; within the
    # caps: half; no box dims: none
    R, target, lb, ub, lw, groups, x, codes = _boxed(3, 4, 5, 2, 2)
    kw = {"chains": 2, "draws": 20, "seed": 1}
    assert sums_gibbs.sample(R, target, lb, ub, lw, groups, x, **kw).boxes == 0.0
    half = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, box_codes=codes, **kw)
    assert 0.3 < half.boxes < 0.7
    monkeypatch.setattr(sums_gibbs, "MAX_KEPT", 2)
    only = sums_gibbs.sample(R, target, lb, ub, lw, groups, x, box_codes=codes, **kw)
    assert only.boxes == 1.0
    # a sweep redraws about as many cells as one redraw of each group: 4 groups, boxes of
    # 2 or 3 of 5 ages (half the steps each) and both codes of the other dim: a box
    # holds half a group's cells on average
    assert only.sweep == 4 * 2
