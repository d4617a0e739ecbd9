"""kernels.sum_chain against brute force: random variables with windows and log-weights
(impossible values included) tied by random sum factors over random subsets; the log
normaliser, every variable's marginal and every factor's sum's marginal to 1e-9 / 1e-12
(exact sums in floating point on both sides); draws by backward sampling: every draw has
positive weight and the frequencies lie within 0.12 of the marginals (400 draws)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernels import sum_chain as sc


def _random_model(rng):
    N = int(rng.integers(1, 6))
    W = int(rng.integers(1, 5))
    lo = rng.integers(0, 4, N)
    lw = rng.normal(size=(N, W)) * 3
    lw[rng.random((N, W)) < 0.2] = -np.inf
    for k in range(N):
        if not np.isfinite(lw[k]).any():
            lw[k, rng.integers(W)] = 0.0
    M = int(rng.integers(0, 4)) if N >= 2 else 0
    members, elo, elw = [], [], []
    for _ in range(M):
        m = np.sort(rng.choice(N, int(rng.integers(2, N + 1)), replace=False))
        smin, smax = int(lo[m].sum()), int((lo[m] + W - 1).sum())
        a = int(rng.integers(smin, smax + 1))
        b = int(rng.integers(a, smax + 2))
        w = rng.normal(size=b - a + 1)
        w[rng.random(w.size) < 0.2] = -np.inf
        members.append(m)
        elo.append(a)
        elw.append(w)
    return N, W, lo, lw, members, elo, elw


def _brute(N, W, lo, lw, members, elo, elw):
    rows = []
    for xs in itertools.product(range(W), repeat=N):
        x = lo + np.array(xs)
        weight = sum(lw[k, xs[k]] for k in range(N))
        for e, m in enumerate(members):
            i = int(x[m].sum()) - elo[e]
            weight += elw[e][i] if 0 <= i < elw[e].size else -np.inf
        rows.append((xs, x, weight))
    return rows


@pytest.mark.parametrize("seed", [seed if seed < 25 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(150)])
def test_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    N, W, lo, lw, members, elo, elw = _random_model(rng)
    rows = _brute(N, W, lo, lw, members, elo, elw)
    L = np.array([w for *_, w in rows])
    if not np.isfinite(L).any():
        with pytest.raises((ValueError, FloatingPointError)):
            sc.marginals(sc.plan(lo, lw, members, elo, elw))
        return
    Z = np.log(np.exp(L - L.max()).sum()) + L.max()
    P = np.exp(L - Z)
    probs = np.zeros((N, W))
    fac = [{} for _ in members]
    for (xs, x, _), pr in zip(rows, P):
        for k in range(N):
            probs[k, xs[k]] += pr
        for e, m in enumerate(members):
            s = int(x[m].sum())
            fac[e][s] = fac[e].get(s, 0.0) + pr
    p = sc.plan(lo, lw, members, elo, elw)
    z, vp, fp, alphas = sc.marginals(p)
    assert z == pytest.approx(Z, abs=1e-9)
    for k in range(N):
        full = np.zeros(W)
        a = int(p.vlo[k] - lo[k])
        full[a:a + vp[k].size] = vp[k]
        np.testing.assert_allclose(full, probs[k], atol=1e-12)
    for e in range(len(members)):
        o, q = fp[e]
        for s, pr in fac[e].items():
            have = q[s - o] if 0 <= s - o < q.size else 0.0
            assert have == pytest.approx(pr, abs=1e-12)
    draws = sc.sample(p, alphas, rng.random((400, N)))
    weight = {xs: w for xs, _, w in rows}
    for row in draws[:60]:
        assert np.isfinite(weight[tuple(int(v) for v in row - lo)])
    emp = np.array([[(draws[:, k] == lo[k] + w).mean() for w in range(W)] for k in range(N)])
    assert np.abs(emp - probs).max() < 0.12


def test_the_state_is_cut_to_the_windows():
    """Ten variables 0..9 summing to exactly 5: the partial sums never pass 5."""
    lo = np.zeros(10, np.int64)
    lw = np.zeros((10, 10))
    p = sc.plan(lo, lw, [np.arange(10)], [5], [np.zeros(1)])
    assert max(max(s, default=1) for s in p.size) == 6
    z, vp, _, _ = sc.marginals(p)
    # compositions of 5 into 10 parts: C(14, 9)
    assert np.exp(z) == pytest.approx(2002, rel=1e-12)
    assert vp[0][0] == pytest.approx(1287 / 2002)        # C(13, 8) with x_0 = 0
