"""The network route of the suppression solvers (2-D tables with their totals).

When every cell of the tabular system enters at most two equations with coefficients
+-1 and the equations can be signed so that each cell enters one with +1 and the other
with -1, ``T`` is the incidence matrix of a network: equations are nodes, cells are
arcs (a cell in one equation only runs to a ground node), and a deviation ``y`` that
keeps every published cell is a circulation.  That holds for a 2-D table with any of
its totals (seed 004 §3.3: "the network method"), suppressed or not; 3-D tables and
subtotals are not networks and take the LP route.

The two LPs of the CSP (:mod:`.problem`) then become flows (kernels/network.py):

* :class:`NetIntruder` -- how far the intruder can move cell ``s``: a maximum flow from
  one end of ``s`` to the other through the other suppressed cells, stopped at the
  protection; its minimum cut gives the duals of the capacity cut;
* :class:`NetCompletion` -- the cheapest completion / certificate: a minimum-cost flow.

Both have the interface of their LP twins (:class:`.lp.Intruder`,
:class:`.lp.LPCompletion`) and the same optima; where several optima tie they may return
another one.  :func:`network_for` decides the route of a problem (flows or LPs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

from kernels.network import adjacency, max_flow, min_cost_flow

from .lp import clip_pattern
from .problem import REACH, Problem

__all__ = ["ROUTES", "NetCompletion", "NetIntruder", "Network", "network_for", "network_form"]

#: how a problem's LPs are solved: by flows when ``T`` is a network, by flows only, by LPs
ROUTES = ("auto", "network", "lp")


@dataclass(frozen=True, eq=False)
class Network:
    """``T`` as a network: arc ``j`` (cell ``j``) runs ``tail[j] -> head[j]``; node
    ``r < n_rows`` is equation ``r`` multiplied by ``sign[r]``, node ``n_rows`` (if any
    cell needs it) the ground."""

    n_nodes: int
    tail: np.ndarray
    head: np.ndarray
    sign: np.ndarray
    adj: tuple


def network_form(A) -> Network | None:
    """The network of ``T`` (rows = equations), or None when ``T`` is not one."""
    A = sp.csc_matrix(A)
    A.sort_indices()
    n_rows, n = A.shape
    if n == 0 or A.nnz == 0 or not np.all(np.abs(A.data) == 1.0):
        return None
    cnt = np.diff(A.indptr)
    if cnt.min() < 1 or cnt.max() > 2:
        return None
    # sign the rows: a cell in rows r1, r2 needs sign[r1] a1 = -sign[r2] a2, i.e.
    # sign[r2] = par * sign[r1] with par = -a1 a2; spread along spanning trees, check all
    two = np.flatnonzero(cnt == 2)
    k = A.indptr[two]
    r1, r2 = A.indices[k], A.indices[k + 1]
    par = -A.data[k] * A.data[k + 1]
    # parity of each pair of rows joined by a cell (the first such cell's; every cell is
    # checked below)
    first = np.unique(np.minimum(r1, r2) * n_rows + np.maximum(r1, r2), return_index=True)[1]
    P = sp.coo_matrix((par[first], (r1[first], r2[first])), shape=(n_rows, n_rows)).tocsr()
    P = P + P.T
    ncomp, comp = connected_components(P, directed=False)
    sg = [0.0] * n_rows
    roots = np.unique(comp, return_index=True)[1]
    for root in roots[:ncomp].tolist():
        order, pred = breadth_first_order(P, root, directed=False, return_predecessors=True)
        sg[root] = 1.0
        q = np.asarray(P[pred[order[1:]], order[1:]]).ravel().tolist()
        for v, u, pq in zip(order[1:].tolist(), pred[order[1:]].tolist(), q):
            sg[v] = sg[u] * pq
    sign = np.array(sg)
    if np.any(sign[r2] != par * sign[r1]):
        return None
    signed = A.data * sign[A.indices]
    col = np.repeat(np.arange(n), cnt)
    ground = n_rows
    tail = np.full(n, ground, np.int64)
    head = np.full(n, ground, np.int64)
    head[col[signed > 0]] = A.indices[signed > 0]
    tail[col[signed < 0]] = A.indices[signed < 0]
    if np.any(tail == head):
        return None
    n_nodes = n_rows + int(np.any(cnt == 1))
    return Network(n_nodes, tail, head, sign, adjacency(n_nodes, tail, head))


def network_for(A, route: str = "auto") -> Network | None:
    """The network a problem on ``T`` is solved on (the ``net`` of
    :func:`.problem.make_problem`).  ``route``: ``"auto"`` the network when ``T`` is one
    (2-D tables), else None (LPs); ``"network"`` insists on flows (a ``ValueError`` when
    ``T`` is not a network), ``"lp"`` on LPs (None)."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    net = None if route == "lp" else network_form(A)
    if route == "network" and net is None:
        raise ValueError("route='network' needs a tabular system that is a network "
                         "(a 2-D table with its totals, no subtotals)")
    return net


def _ends(net: Network, s: int, d: int):
    """Source and sink of the return flow when cell ``s`` moves in direction ``d``: moving
    ``s`` up sends flow tail -> head along it, which comes back from head to tail."""
    return (net.head[s], net.tail[s]) if d > 0 else (net.tail[s], net.head[s])


class NetIntruder:
    """:class:`.lp.Intruder` by maximum flows (stopped at the protection)."""

    def __init__(self, prob: Problem):
        self.prob = prob
        self.net = prob.net
        self._z = np.zeros(prob.n)
        self.n_solves = 0
        #: return the duals of a sparse minimum cut (for the optimal method's capacity
        #: cuts; one more maximum flow per unprotected task)
        self.sparse_cuts = False

    def pattern(self, z) -> np.ndarray:
        """Pattern ``z`` for the next solves (:func:`clip_pattern`); returns it."""
        self._z = clip_pattern(z)
        return self._z

    def move(self, s: int, d: int, p: float = 1.0):
        """``(d * y_s, y, duals)``: a deviation that moves ``s`` by ``p`` in direction
        ``d`` if the pattern allows it, else the largest one, with the duals of ``T y = 0``
        (``sign * [node on the source side of a minimum cut]``) for the capacity cut."""
        prob, net, z = self.prob, self.net, self._z
        fwd, bwd = prob.M * z, prob.x * z
        own = fwd[s] if d > 0 else bwd[s]
        limit = min(p, own)
        fwd[s] = bwd[s] = 0.0
        src, snk = _ends(net, s, d)
        value, flow, cut = max_flow(net.n_nodes, net.tail, net.head, fwd, bwd, src, snk,
                                    limit, 1e-12 * p, *net.adj)
        self.n_solves += 1
        if value < limit and self.sparse_cuts:
            cut = self._sparse_cut(s, p, fwd, bwd, src, snk, cut)
        y = flow
        y[s] = d * value
        # duals = node potentials (1 on the source side), shifted so that the ground node,
        # which has no equation, sits at 0
        n_rows = net.sign.size
        if own < p and value >= limit:
            # the cell's own room is what stops it (the last search reached the sink: no
            # cut); zero duals give the cut on the cell alone, as the LP's would
            return value, y, np.zeros(n_rows)
        pot = cut[:n_rows].astype(float)
        if net.n_nodes > n_rows:
            pot -= float(cut[n_rows])
        return value, y, net.sign * pot

    def _sparse_cut(self, s, p, fwd, bwd, src, snk, cut):
        """Among the minimum cuts, one crossing few cells: the capacity cut of a cut
        ``S`` is ``sum over crossing cells j of min(room_j, p) z_j >= p``, so a cut that
        crosses many cells with ``z_j = 0`` is weak.  A maximum flow with capacities
        ``room_j z_j + 1e-6 min(room_j, p)`` finds a minimum cut that crosses as few
        (and as small) cells as the first term allows; kept when still violated."""
        prob, net = self.prob, self.net
        cf = np.where(prob.cand, np.minimum(prob.M, p), 0.0)
        cb = np.where(prob.cand, np.minimum(prob.x, p), 0.0)
        cf[s] = cb[s] = 0.0
        _, _, cut2 = max_flow(net.n_nodes, net.tail, net.head, fwd + 1e-6 * cf,
                              bwd + 1e-6 * cb, src, snk, np.inf, 1e-12 * p, *net.adj)
        out = cut2[net.tail] & ~cut2[net.head]
        inn = cut2[net.head] & ~cut2[net.tail]
        cap = float(fwd[out].sum() + bwd[inn].sum())
        return cut2 if cap < p * (1 - 1e-6) else cut

    def protected(self, task) -> tuple:
        s, d, p = task
        v, y, u = self.move(s, d, p)
        return v >= p * (1 - REACH), y, u


class NetCompletion:
    """:class:`.lp.LPCompletion` by minimum-cost flows."""

    def __init__(self, prob: Problem, cols=None, margin: float = 0.0):
        """``cols``: the only cells that may ever move (the clean-up's pattern): the
        flows run on the network of those arcs alone."""
        self.prob = prob
        net = prob.net
        self.cols = np.arange(prob.n) if cols is None else np.sort(np.asarray(cols))
        self.tail, self.head = net.tail[self.cols], net.head[self.cols]
        self.adj = net.adj if cols is None else adjacency(net.n_nodes, self.tail, self.head)
        self.n_nodes = net.n_nodes
        self.margin = margin
        self.wn = prob.w / prob.w.max()

    def solve(self, supp, task, within: bool = False, basis=None):
        """The cheapest deviation moving ``s`` by ``p`` (``p (1 + margin)`` within the
        pattern), as :meth:`.lp.LPCompletion.solve`; None if none exists.
        ``basis`` is ignored (flows start from nothing)."""
        prob, c = self.prob, self.cols
        s, d, p = task
        supp = np.asarray(supp, bool)[c]
        if within:
            room = supp
            cost = np.where(prob.sens[c], 0.0, self.wn[c])
            amount = p * (1.0 + self.margin)
        else:
            room = supp | prob.cand[c]
            cost = np.where(supp, 0.0, self.wn[c])
            amount = p
        own = prob.M[s] if d > 0 else prob.x[s]
        if own < amount * (1 - 1e-12):
            return None
        fwd = np.where(room, prob.M[c], 0.0)
        bwd = np.where(room, prob.x[c], 0.0)
        k = int(np.searchsorted(c, s))              # cols are sorted and hold s
        fwd[k] = bwd[k] = 0.0
        src, snk = _ends(prob.net, s, d)
        ok, flow, _ = min_cost_flow(self.n_nodes, self.tail, self.head, fwd, bwd, cost,
                                    src, snk, amount, 1e-12 * p, *self.adj)
        if not ok:
            return None
        y = np.zeros(prob.n)
        y[c] = flow
        y[s] = d * amount
        return y

    def basis(self):
        return None
