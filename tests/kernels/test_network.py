"""kernels/network.py against scipy.optimize.linprog on the same flow LPs
(tests/reference/network.py; random small networks: parallel and opposite arcs, zero
capacities, zero and tied costs, limits).  Tolerance 1e-9."""

import numpy as np
import pytest

from kernels.network import adjacency, max_flow, min_cost_flow
from tests.reference.network import is_flow, max_flow_lp, min_cost_flow_lp

EPS = 1e-12


def random_network(rng):
    n = int(rng.integers(2, 8))
    m = int(rng.integers(1, 16))
    tail = rng.integers(0, n, m)
    head = (tail + rng.integers(1, n, m)) % n          # no loops
    fwd = np.where(rng.random(m) < 0.2, 0.0, rng.integers(1, 6, m) * rng.choice([1.0, 0.5], m))
    bwd = np.where(rng.random(m) < 0.3, 0.0, rng.integers(1, 6, m).astype(float))
    cost = np.where(rng.random(m) < 0.3, 0.0, rng.integers(1, 5, m).astype(float))
    s, t = rng.choice(n, 2, replace=False)
    return n, tail.astype(np.int64), head.astype(np.int64), fwd, bwd, cost, int(s), int(t)


@pytest.mark.parametrize("case", range(150))
def test_max_flow_matches_lp_and_min_cut(case):
    rng = np.random.default_rng(case)
    n, tail, head, fwd, bwd, _, s, t = random_network(rng)
    adj = adjacency(n, tail, head)
    value, flow, cut = max_flow(n, tail, head, fwd, bwd, s, t, np.inf, EPS, *adj)
    assert value == pytest.approx(max_flow_lp(n, tail, head, fwd, bwd, s, t), abs=1e-9)
    assert is_flow(n, tail, head, fwd, bwd, flow, s, t, value)
    # the last search's reach is a minimum cut (max-flow min-cut theorem)
    assert cut[s] and not cut[t]
    cap = (np.sum(fwd[cut[tail] & ~cut[head]]) + np.sum(bwd[cut[head] & ~cut[tail]]))
    assert cap == pytest.approx(value, abs=1e-9)
    # with a limit: stops at the limit exactly
    lim = 0.5 * value
    if lim > 0:
        v2, f2, _ = max_flow(n, tail, head, fwd, bwd, s, t, lim, EPS, *adj)
        assert v2 == pytest.approx(lim, abs=1e-12)
        assert is_flow(n, tail, head, fwd, bwd, f2, s, t, v2)


@pytest.mark.parametrize("case", range(150))
def test_min_cost_flow_matches_lp(case):
    rng = np.random.default_rng(1000 + case)
    n, tail, head, fwd, bwd, cost, s, t = random_network(rng)
    adj = adjacency(n, tail, head)
    top, _, _ = max_flow(n, tail, head, fwd, bwd, s, t, np.inf, EPS, *adj)
    for amount in (0.5 * top, top, top + 1.0, 0.0):
        ok, flow, total = min_cost_flow(n, tail, head, fwd, bwd, cost, s, t, amount, EPS,
                                        *adj)
        ref = min_cost_flow_lp(n, tail, head, fwd, bwd, cost, s, t, amount)
        if ref is None:
            assert not ok
            continue
        assert ok
        assert is_flow(n, tail, head, fwd, bwd, flow, s, t, amount)
        assert total == pytest.approx(ref, abs=1e-9)
        assert np.sum(cost * np.abs(flow)) == pytest.approx(ref, abs=1e-9)


def test_adjacency_lists_every_edge_once():
    tail = np.array([0, 1, 2, 0])
    head = np.array([1, 2, 0, 2])
    out_ptr, out_edge, in_ptr, in_edge = adjacency(3, tail, head)
    assert sorted(out_edge.tolist()) == list(range(8))
    assert sorted(in_edge.tolist()) == list(range(8))
    # edge 2a leaves the tail, 2a + 1 leaves the head
    for v in range(3):
        for e in out_edge[out_ptr[v]:out_ptr[v + 1]]:
            a = e >> 1
            assert (tail[a] if e % 2 == 0 else head[a]) == v
        for e in in_edge[in_ptr[v]:in_ptr[v + 1]]:
            a = e >> 1
            assert (head[a] if e % 2 == 0 else tail[a]) == v
