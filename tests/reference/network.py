"""Network flows as linear programs (scipy.optimize.linprog, HiGHS), independent of
kernels/network.py.  A network: ``n`` nodes, arcs ``tail -> head`` with capacities ``fwd``
forward and ``bwd`` backward (a flow f on an arc lies in [-bwd, fwd])."""

import numpy as np
from scipy.optimize import linprog


def incidence(n, tail, head):
    """Node-arc incidence matrix: +1 where an arc's flow enters (head), -1 where it leaves."""
    B = np.zeros((n, tail.size))
    B[head, np.arange(tail.size)] += 1.0      # flow enters head
    B[tail, np.arange(tail.size)] -= 1.0
    return B


def max_flow_lp(n, tail, head, fwd, bwd, s, t):
    """Value of a maximum s-t flow: maximise the outflow at s subject to conservation at
    every other node but t and the arc capacities."""
    B = incidence(n, tail, head)
    keep = [v for v in range(n) if v not in (s, t)]
    c = B[s]                                   # minimise inflow at s = maximise outflow
    res = linprog(c, A_eq=B[keep] if keep else None, b_eq=np.zeros(len(keep)) if keep else None,
                  bounds=list(zip(-bwd, fwd)), method="highs")
    assert res.status == 0
    return -res.fun


def min_cost_flow_lp(n, tail, head, fwd, bwd, cost, s, t, amount):
    """Cost of a cheapest s-t flow of value ``amount`` (cost per unit |f| on each arc; the
    flow split as f = f+ - f-), None when no such flow exists."""
    B = incidence(n, tail, head)
    A = np.hstack([B, -B])                     # f = f+ - f-
    b = np.zeros(n)
    b[s], b[t] = -amount, amount
    res = linprog(np.r_[cost, cost], A_eq=A, b_eq=b,
                  bounds=[(0, u) for u in fwd] + [(0, u) for u in bwd], method="highs")
    return None if res.status == 2 else res.fun


def is_flow(n, tail, head, fwd, bwd, flow, s, t, value):
    """``flow`` respects the capacities and conservation, sending ``value`` from s to t
    (to 1e-9)."""
    if not (np.all(flow <= fwd + 1e-9) and np.all(flow >= -bwd - 1e-9)):
        return False
    net = incidence(n, tail, head) @ flow
    expect = np.zeros(n)
    expect[s], expect[t] = -value, value
    return bool(np.allclose(net, expect, atol=1e-9))
