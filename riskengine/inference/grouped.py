"""The grouped-subtotals route: a 2-D table with one level of subtotals along one dim.

With the totals of every category of the grouped dim and the subtotals of every group
published exactly, the table splits into independent 2-D tables, one per group (its
member rows, with the group's subtotal row as column totals and the group's subtotal as
grand total), each solved by the table DP; counts multiply, log evidences add and a
whole-table draw is one draw of each group's DP.  The column totals and the grand total
of the whole table are sums of the subtotals (the release checks that they agree).  For
releases whose published interior cells are exact (NaN = unknown): suppression, margins
only.
"""

from __future__ import annotations

import numpy as np

from ..protocol import Cost, Route, RouteResult
from . import table_dp as dp
from ._plan import prepared
from .windows import EntryWindows, exact, flat

__all__ = ["Grouped2D"]


class Grouped2D(Route):
    """Exact posterior of 2-D releases with one level of subtotals (see the module)."""

    name = "grouped-dp"
    needs = ("entry windows; 2-D count table with one level of subtotals, every total and "
             "subtotal published")

    def applies(self, plan):
        release = plan.release
        if release.kind != "count":
            return ("the exact routes walk integer tables and need a count release; this "
                    "release holds magnitudes (rk.audit gives their intervals)")
        if len(release.dims) != 2 or not release.groups:
            return "the grouped route covers 2-D tables with one level of subtotals"
        (g,) = release.groups
        if (g,) not in release.margins:
            return f"the grouped route needs the totals of every category of {g!r}"
        if release._hidden_totals():
            return "the grouped route needs every total and subtotal published"
        return None

    def estimate(self, plan, what="posterior"):
        _, pieces = prepared(plan, "grouped", lambda: _pieces(plan.release, plan.prior))
        wins = [win for _, _, win, _ in pieces if win is not None]
        need = [dp.memory(win, what) for win in wins]
        secs = sum(dp.seconds(win, what) for win in wins)     # the pieces run one by one
        return Cost(float(max((b for b, _ in need), default=0.0)),
                    "; ".join(d for _, d in need) or "no candidate", seconds=secs)

    def run(self, plan, *, count=True):
        release, memory = plan.release, plan.memory
        ax, pieces = prepared(plan, "grouped", lambda: _pieces(plan.release, plan.prior))
        g = next(iter(release.groups))
        shape = release.shape if ax == 0 else release.shape[::-1]
        results = []
        for k, (members, ew, win, shift) in enumerate(pieces):
            res = None if win is None else dp.solve_anchored(ew, win, shift, count, memory)
            if res is None:
                raise ValueError(f"no nonnegative integer table completes group {k} of {g!r} "
                                 "under this prior")
            results.append((members, res))
        W = max(res["cell"].shape[-1] for _, res in results)
        start = np.zeros(shape, np.int64)
        probs = np.zeros(shape + (W,))
        n_total, log_z = (1 if count else None), 0.0
        for members, res in results:
            start[members] = res["cell_lo"]
            probs[members, :, : res["cell"].shape[-1]] = res["cell"]
            log_z += res["log_z"]
            if count:
                n_total *= res["n"]
        if ax == 1:
            start, probs = start.T, probs.transpose(1, 0, 2)
        parts = [(members, res["windows"]) for members, res in results]
        return RouteResult(start=start, probs=probs,
                            log_evidence=log_z, n_candidates=n_total,
                            sampler=_sampler(parts, shape, ax, memory))

    def count(self, plan):
        memory = plan.memory
        _, pieces = prepared(plan, "grouped", lambda: _pieces(plan.release, plan.prior))
        n = 1
        for _, _, win, _ in pieces:
            n *= 0 if win is None else dp.count(win, max_states=memory / 8)
        return n


def _pieces(release, prior):
    """``(grouped axis, [(members, entry windows, DP windows, tilt), ...])``: one table DP per
    group of the grouped dim, each with its own totals."""
    (g, parts), = release.groups.items()
    d0, d1 = release.dims
    ax = release.dims.index(g)
    pub = (np.full(release.shape, np.nan) if release.published is None
           else np.asarray(release.published, dtype=float))
    lines = np.asarray(release.margins[(g,)], dtype=np.int64)       # g's category totals
    sub = np.asarray(release.subtotals[(d0, d1)], dtype=np.int64)   # grouped interior
    subtot = np.asarray(release.subtotals[(g,)], dtype=np.int64)    # group totals
    # interior windows with the prior, in the release's orientation: a free cell ranges
    # up to its category total and its group's subtotal in its column
    gid = np.empty(release.shape[ax], np.int64)
    for k, members in enumerate(parts):
        gid[list(members)] = k
    line_b = lines[:, None] if ax == 0 else lines[None, :]
    sub_b = sub[gid] if ax == 0 else sub[:, gid]
    bound = np.minimum(line_b, sub_b)
    free = np.isnan(pub)
    val = np.where(free, 0, pub).astype(np.int64)
    lo, lw = flat(np.where(free, 0, val), np.where(free, bound, val))
    vals = lo[..., None] + np.arange(lw.shape[-1])
    with np.errstate(invalid="ignore"):
        lw = lw + prior.log_weights(vals, release.dims, release.coords)
    lw = np.where(np.isnan(lw), -np.inf, lw)
    if ax == 1:
        lo, lw, sub = lo.T, lw.transpose(1, 0, 2), sub.T
    other = release.dims[1 - ax]
    pieces = []
    for k, members in enumerate(parts):
        members = list(members)
        blocks = {(g, other): (lo[members], lw[members]), (g,): exact(lines[members]),
                  (other,): exact(sub[k]), (): exact(subtot[k])}
        ew = EntryWindows((g, other), (len(members), lo.shape[1]),
                          {b: v[0] for b, v in blocks.items()},
                          {b: v[1] for b, v in blocks.items()}).trimmed()
        tilt = None if ew is None else ew.tilted()
        pieces.append((members, ew, None if tilt is None else dp.from_entries(tilt),
                       0.0 if tilt is None else tilt.shift))
    return ax, pieces


def _sampler(parts, shape, ax, budget):
    """Whole-table draws: the groups are independent given the published totals, so one
    draw of each group's DP (:func:`table_dp.sample`, in turn from the same generator)
    fills its rows of the table (``ax`` 1: the grouped dim is the release's second)."""
    def draw(n, rng):
        out = np.zeros((n,) + tuple(shape), np.int64)
        for members, win in parts:
            out[:, members] = dp.sample(win, n, rng, max_states=budget / 8)
        return out.transpose(0, 2, 1) if ax == 1 else out
    return draw
