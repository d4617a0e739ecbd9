"""Maximum flow and minimum-cost flow on small networks (Numba).

The tabular system of a 2-D table with its totals is a network matrix: every cell is
an arc between two equations (row i -> column j, totals to and from the grand-total
equations), and a deviation ``y`` that keeps every published total is a circulation
(riskengine/magnitude/csp/network.py builds the network).  The suppression LPs then become:

* the intruder's "how far can cell s move" = a maximum flow from one end of s to the
  other over the other suppressed cells (its minimum cut is the capacity cut of
  Fischetti and Salazar);
* the cheapest completion / certificate = a minimum-cost flow of ``amount`` units.

Graph: ``n_nodes`` nodes, ``m`` arcs ``tail[a] -> head[a]``.  Arc ``a`` may carry flow
``f[a]`` in ``[-cap_bwd[a], cap_fwd[a]]`` (positive: tail to head), at cost
``cost[a] * |f[a]|``.  Internally each arc is two edges, ``2a`` (tail to head, up to
``cap_fwd``) and ``2a + 1`` (head to tail, up to ``cap_bwd``), each with its reverse
residual.  Capacities are floats; a residual of ``eps`` or less counts as none.

Plain arrays in, plain arrays out; the references (tests/reference/network.py, used by
tests/kernels/test_network.py) are ``scipy.optimize.linprog`` on the same circulation LPs.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

__all__ = ["adjacency", "max_flow", "min_cost_flow"]


def adjacency(n_nodes: int, tail: np.ndarray, head: np.ndarray):
    """CSR lists of the edges leaving and entering each node (the edges of
    :func:`max_flow` and :func:`min_cost_flow`: ``2a`` tail to head, ``2a + 1`` head to
    tail).  Returns ``(out_ptr, out_edge, in_ptr, in_edge)``, int64."""
    tail = np.asarray(tail, np.int64)
    head = np.asarray(head, np.int64)
    m = tail.size
    frm = np.empty(2 * m, np.int64)
    to = np.empty(2 * m, np.int64)
    frm[0::2], to[0::2] = tail, head
    frm[1::2], to[1::2] = head, tail
    edges = np.arange(2 * m, dtype=np.int64)
    o = np.argsort(frm, kind="stable")
    out_ptr = np.zeros(n_nodes + 1, np.int64)
    np.add.at(out_ptr, frm + 1, 1)
    i = np.argsort(to, kind="stable")
    in_ptr = np.zeros(n_nodes + 1, np.int64)
    np.add.at(in_ptr, to + 1, 1)
    return np.cumsum(out_ptr), edges[o], np.cumsum(in_ptr), edges[i]


@njit
def _edge_ends(e, tail, head):
    a = e >> 1
    if e & 1:
        return head[a], tail[a]
    return tail[a], head[a]


@njit
def _augment(g, cap, parent, pdir, source, sink, b, tail, head):
    """Push the path's bottleneck (at most ``b``) from ``source`` to ``sink`` along the
    edges recorded in ``parent`` / ``pdir`` (+1: the edge itself, -1: its reverse);
    returns the amount pushed."""
    v = sink
    while v != source:
        e = parent[v]
        if pdir[v] > 0:
            r = cap[e] - g[e]
            v, _ = _edge_ends(e, tail, head)
        else:
            r = g[e]
            _, v = _edge_ends(e, tail, head)
        b = min(b, r)
    v = sink
    while v != source:
        e = parent[v]
        if pdir[v] > 0:
            g[e] += b
            v, _ = _edge_ends(e, tail, head)
        else:
            g[e] -= b
            _, v = _edge_ends(e, tail, head)
    return b


@njit
def max_flow(n_nodes, tail, head, cap_fwd, cap_bwd, source, sink, limit, eps,
             out_ptr, out_edge, in_ptr, in_edge):
    """Maximum flow from ``source`` to ``sink`` (shortest augmenting paths), stopped
    once it reaches ``limit`` (``inf``: no limit).

    Returns ``(value, flow, cut)``: ``flow`` per arc (signed), ``cut[v]`` True for the
    nodes the last search reached -- when ``value < limit`` the source side of a
    minimum cut."""
    m = tail.size
    cap = np.empty(2 * m)
    cap[0::2] = cap_fwd
    cap[1::2] = cap_bwd
    g = np.zeros(2 * m)                     # flow on each edge (>= 0)
    value = 0.0
    parent = np.empty(n_nodes, np.int64)    # edge used to reach the node, sign: +/-
    pdir = np.empty(n_nodes, np.int64)
    seen = np.zeros(n_nodes, np.bool_)
    queue = np.empty(n_nodes, np.int64)
    while value < limit - eps:
        seen[:] = False
        seen[source] = True
        queue[0] = source
        qh, qt = 0, 1
        while qh < qt and not seen[sink]:
            u = queue[qh]
            qh += 1
            for k in range(out_ptr[u], out_ptr[u + 1]):
                e = out_edge[k]
                if cap[e] - g[e] > eps:
                    _, v = _edge_ends(e, tail, head)
                    if not seen[v]:
                        seen[v] = True
                        parent[v], pdir[v] = e, 1
                        queue[qt] = v
                        qt += 1
            for k in range(in_ptr[u], in_ptr[u + 1]):
                e = in_edge[k]
                if g[e] > eps:
                    v, _ = _edge_ends(e, tail, head)
                    if not seen[v]:
                        seen[v] = True
                        parent[v], pdir[v] = e, -1
                        queue[qt] = v
                        qt += 1
        if not seen[sink]:
            break
        value += _augment(g, cap, parent, pdir, source, sink, limit - value, tail, head)
    flow = g[0::2] - g[1::2]
    return value, flow, seen.copy()


@njit
def min_cost_flow(n_nodes, tail, head, cap_fwd, cap_bwd, cost, source, sink, amount, eps,
                  out_ptr, out_edge, in_ptr, in_edge):
    """Cheapest flow of ``amount`` from ``source`` to ``sink`` (successive shortest
    paths, Dijkstra on reduced costs; ``cost >= 0``).

    Returns ``(ok, flow, total cost)``; ``ok`` False (and a partial flow) when less than
    ``amount`` can be sent."""
    m = tail.size
    cap = np.empty(2 * m)
    cap[0::2] = cap_fwd
    cap[1::2] = cap_bwd
    g = np.zeros(2 * m)
    pot = np.zeros(n_nodes)
    dist = np.empty(n_nodes)
    done = np.zeros(n_nodes, np.bool_)
    parent = np.empty(n_nodes, np.int64)
    pdir = np.empty(n_nodes, np.int64)
    sent = 0.0
    inf = np.inf
    while sent < amount - eps:
        dist[:] = inf
        done[:] = False
        dist[source] = 0.0
        while True:
            # closest open node (O(V) scan: the networks have a few hundred nodes)
            u = -1
            best = inf
            for v in range(n_nodes):
                if not done[v] and dist[v] < best:
                    best = dist[v]
                    u = v
            if u < 0:
                break
            done[u] = True
            if u == sink:
                break
            du = dist[u] + pot[u]
            for k in range(out_ptr[u], out_ptr[u + 1]):
                e = out_edge[k]
                if cap[e] - g[e] > eps:
                    _, v = _edge_ends(e, tail, head)
                    nd = du + cost[e >> 1] - pot[v]
                    if nd < dist[v] and not done[v]:
                        dist[v] = nd
                        parent[v], pdir[v] = e, 1
            for k in range(in_ptr[u], in_ptr[u + 1]):
                e = in_edge[k]
                if g[e] > eps:
                    v, _ = _edge_ends(e, tail, head)
                    nd = du - cost[e >> 1] - pot[v]
                    if nd < dist[v] and not done[v]:
                        dist[v] = nd
                        parent[v], pdir[v] = e, -1
        if not done[sink] or dist[sink] == inf:
            break
        ds = dist[sink]
        for v in range(n_nodes):
            pot[v] += dist[v] if (done[v] and dist[v] < ds) else ds
        sent += _augment(g, cap, parent, pdir, source, sink, amount - sent, tail, head)
    flow = g[0::2] - g[1::2]
    total = 0.0
    for a in range(m):
        total += cost[a] * (g[2 * a] + g[2 * a + 1])
    return sent >= amount - eps, flow, total

