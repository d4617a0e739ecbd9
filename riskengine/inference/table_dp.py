"""The exact table DP route: 2-D count tables with all their totals (kernels.table_dp).

Everything is described as log-weights over windows (:mod:`.windows`): every interior
cell, every row total, every column total and the grand total has a first value and a
row of log-weights (-inf = impossible).  ``solve`` returns the log evidence and the
marginal of every entry; ``count`` returns the exact number of tables with positive
weight (exact integers: the kernel adds 64-bit limbs with carries, with enough limbs for
an upper bound of the count).  :class:`TableDP` is the route every mechanism with
per-entry windows on a 2-D table offers (margins only, controlled rounding, suppression).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from kernels import table_dp
from kernels.checkpoints import checkpoint_plan

from .._budget import fmt_bytes
from ..protocol import Cost, Route, RouteResult
from ..priors import Uniform
from ._plan import prepared
from . import halves
from .windows import EntryWindows

__all__ = ["TableDP", "Windows", "count", "from_entries", "release_windows", "sample",
           "sampler", "seconds", "solve", "states"]


@dataclass
class Windows:
    """Log-weight windows of every entry of a 2-D table with totals."""
    cell_lo: np.ndarray      # (r, c) int64
    cell_lw: np.ndarray      # (r, c, W) float
    row_lo: np.ndarray       # (r,)
    row_lw: np.ndarray       # (r, Wr)
    col_lo: np.ndarray       # (c,)
    col_lw: np.ndarray       # (c, Wc)
    grand_lo: int
    grand_lw: np.ndarray     # (Wg,)

    def trimmed(self) -> Windows:
        """Drop impossible values at the ends of every window (tighter DP state)."""
        def trim(lo, lw):
            fin = np.isfinite(lw)
            if not fin.any(axis=-1).all():
                raise _Empty()
            first = np.argmax(fin, axis=-1)
            last = lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
            W = int((last - first).max()) + 1
            idx = first[..., None] + np.arange(W)
            ok = idx <= last[..., None]
            vals = np.take_along_axis(lw, np.minimum(idx, lw.shape[-1] - 1), axis=-1)
            return lo + first, np.where(ok, vals, -np.inf)
        cl, cw = trim(self.cell_lo, self.cell_lw)
        rl, rw = trim(self.row_lo, self.row_lw)
        kl, kw = trim(self.col_lo, self.col_lw)
        gl, gw = trim(np.array(self.grand_lo), self.grand_lw)
        return Windows(cl, cw, rl, rw, kl, kw, int(gl), gw)


    def rows_permuted(self, perm) -> Windows:
        """The same windows with the rows in the order ``perm``."""
        return Windows(self.cell_lo[perm], self.cell_lw[perm], self.row_lo[perm],
                       self.row_lw[perm], self.col_lo, self.col_lw, self.grand_lo,
                       self.grand_lw)


def _largest_row_last(win: Windows):
    """With every total fixed, put the row with the largest total last (the others keep
    their order): the DP numbers the other rows' remaining sums in mixed radix and walks
    the last row's live values within each, so the widest row is the cheapest last."""
    r, _, derived = _prepare(win)
    perm = np.arange(r)
    if derived and r > 1:
        k = int(np.argmax(win.row_lo))
        perm = np.concatenate([perm[perm != k], [k]])
    return win.rows_permuted(perm), np.argsort(perm)


class _Empty(Exception):
    pass


def _prepare(win: Windows):
    r = win.cell_lo.shape[0]
    row_lo_hi = np.stack([win.row_lo, win.row_lo + win.row_lw.shape[1] - 1], axis=1)
    derived = (win.row_lw.shape[1] == 1 and win.col_lw.shape[1] == 1
               and win.grand_lw.shape[0] == 1)
    return r, row_lo_hi.astype(np.int64), derived


#: largest log-weight a float weight is allowed: every DP step multiplies by at most
#: e^300 (then rescales), so sums of many such products stay finite
_TOP = 300.0


def _scaled(lw):
    """Float weights ``exp(lw - c)`` per row and the ``c`` taken out: rows below 1 are
    raised to a maximum of 1, rows that would overflow lowered to a maximum of e^300, the
    rest kept as they are (tilted windows are anchored near the posterior's mass: keeping
    their scale keeps those values representable)."""
    fin = np.isfinite(lw)
    mx = np.where(fin, lw, -np.inf).max(axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    c = np.where(mx < 0, mx, np.where(mx > _TOP, mx - _TOP, 0.0))
    with np.errstate(under="ignore"):
        return np.where(fin, np.exp(lw - c[..., None]), 0.0), c


def _lost_mass(ind, w, marg) -> float:
    """Largest posterior mass at a representable value next to values that are possible
    (``ind``) but whose float weight ``w`` underflowed: when it is not negligible, the
    values beyond it may carry mass the floats could not hold."""
    lost = ind & ~(w > 0)
    if not lost.any():
        return 0.0
    rep = w > 0
    nb = np.zeros_like(rep)
    nb[..., 1:] |= lost[..., :-1]
    nb[..., :-1] |= lost[..., 1:]
    edge = rep & nb
    W = min(marg.shape[-1], edge.shape[-1])
    return float(np.max(np.where(edge[..., :W], marg[..., :W], 0.0), initial=0.0))


class DPArgs(NamedTuple):
    """The kernel's arguments (:func:`kernels.table_dp.run`), in its order."""

    start: tuple                 #: (row_lo, row_lw, grand_lo, grand_lw): the start weights
    row_lo_hi: np.ndarray        #: (r, 2) range of each row total
    lo: np.ndarray               #: (r, c) first value of each cell's window
    cw: np.ndarray               #: (r, c, W) float weights (scaled)
    cind: np.ndarray             #: (r, c, W) possible values
    clo: np.ndarray              #: (c,) first value of each column total's window
    kw: np.ndarray               #: (c, Wc) float weights of the column totals
    kind: np.ndarray             #: (c, Wc) possible column totals

    def stage_states(self) -> np.ndarray:
        return table_dp.stage_states(self.start, self.row_lo_hi, self.lo, self.cw, self.clo,
                                     self.kw)


def _args(win: Windows):
    """``(r, derived, DPArgs, log scale taken out of the weights)``."""
    r, row_lo_hi, derived = _prepare(win)
    cw, cmx = _scaled(win.cell_lw)
    kw, kmx = _scaled(win.col_lw)
    start = (np.asarray(win.row_lo, np.int64), np.asarray(win.row_lw, float),
             int(win.grand_lo), np.asarray(win.grand_lw, float))
    args = DPArgs(start, row_lo_hi, win.cell_lo.astype(np.int64), cw, np.isfinite(win.cell_lw),
                  win.col_lo.astype(np.int64), kw, np.isfinite(win.col_lw))
    return r, derived, args, cmx.sum() + kmx.sum()


def _limbs(win: Windows, derived: bool) -> int:
    """64-bit limbs enough for the count: it is at most the product of the number of
    possible values of the cells that are not implied by the margins."""
    n = np.isfinite(win.cell_lw).sum(axis=-1)
    if derived:                        # last row and column follow from the fixed totals
        n = n[:-1, :-1]
    bound = math.prod(int(x) for x in n.ravel())
    return bound.bit_length() // 64 + 1


def states(win: Windows) -> tuple:
    """(largest stage, total) number of stored DP states, without running the DP."""
    try:
        win = win.trimmed()
    except _Empty:
        return 0.0, 0.0
    win, _ = _largest_row_last(win)
    per = _args(win)[2].stage_states()
    return float(per.max()), float(per.sum())


def solve(win: Windows, with_count: bool = False, max_states: float = np.inf) -> dict | None:
    """Log evidence and all marginals (and with ``with_count`` the exact number of
    tables with positive weight, key ``n``, from the same forward pass); None when no
    table has positive weight."""
    try:
        win = win.trimmed()
    except _Empty:
        return None
    win, inv = _largest_row_last(win)
    r, derived, args, shift = _args(win)
    L = _limbs(win, derived) if with_count else 0
    res = table_dp.run(*args, limbs=L, posterior=True, max_states=max_states)
    if np.isnan(res["log_z"]) or res["log_z"] == np.inf or (
            "cell" in res and not np.all(np.isfinite(res["cell"]))):
        raise FloatingPointError(_RANGE.format("tables whose weights overflow"))
    if not np.isfinite(res["log_z"]):
        if with_count and res["count"] > 0:
            raise FloatingPointError(_RANGE.format(f"all {res['count']} candidates"))
        return None
    lost = max(_lost_mass(args.cind, args.cw, res["cell"]),
               _lost_mass(args.kind, args.kw, res["col"]))
    if lost > 1e-12:
        raise FloatingPointError(_RANGE.format(f"values with posterior mass {lost:.3g}"))
    log_z = res["log_z"] + res["start_scale"] + shift
    start, roff, rsize = res["start"], res["roff0"], res["rsize0"]
    grid = start.reshape(tuple(int(x) for x in rsize))
    rows = [grid.sum(axis=tuple(k for k in range(r) if k != i)) for i in range(r)]
    tot = np.zeros(1, np.int64)
    for i in range(r):
        tot = (tot[:, None] + np.arange(rsize[i])[None, :]).ravel()
    grand = np.bincount(tot, weights=start)
    return {"log_z": log_z, "cell_lo": win.cell_lo[inv], "cell": res["cell"][inv],
            "row_lo": roff.astype(np.int64)[inv], "row": _pad(rows)[inv],
            "col_lo": win.col_lo, "col": res["col"],
            "grand_lo": int(roff.sum()), "grand": grand,
            "n": int(res["count"]) if with_count else None}


_RANGE = ("the weights of this release's candidates span more than floating point holds "
          "({} would be lost to floats that under- or overflow): the table DP cannot "
          "represent this prior here; a prior closer to the totals (or to independence) "
          "can be computed")


def _pad(rows):
    W = max(len(x) for x in rows)
    return np.array([np.concatenate([x, np.zeros(W - len(x))]) for x in rows])


def count(win: Windows, max_states: float = np.inf) -> int:
    """Exact number of tables with positive weight (one forward pass in exact
    multi-limb integer arithmetic)."""
    try:
        win = win.trimmed()
    except _Empty:
        return 0
    win, _ = _largest_row_last(win)
    _, derived, args, _ = _args(win)
    res = table_dp.run(*args, limbs=_limbs(win, derived), posterior=False,
                       max_states=max_states)
    return int(res["count"])


def sample(win: Windows, n: int, rng: np.random.Generator,
           max_states: float = np.inf) -> np.ndarray:
    """``n`` tables drawn independently from the exact posterior the windows define
    (forward filtering, backward sampling: :func:`kernels.table_dp.sample`), int64
    ``(n, r, c)`` with the rows in ``win``'s order.  The forward pass is recomputed here
    (checkpoints within ``max_states`` stored states, as :func:`solve`); the draws
    depend only on the state of ``rng``.  ValueError when no table has positive weight,
    FloatingPointError when the weights leave the floats' range (:func:`solve_anchored`
    gives windows that do not)."""
    try:
        w = win.trimmed()
    except _Empty:
        raise ValueError("no table has positive weight under these windows") from None
    w, inv = _largest_row_last(w)
    _, _, args, _ = _args(w)
    res = table_dp.sample(*args, int(n), rng, max_states=max_states)
    if np.isnan(res["log_z"]) or res["log_z"] == np.inf:
        raise FloatingPointError(_RANGE.format("tables whose weights overflow"))
    if res["tables"] is None:
        raise ValueError("no table has positive weight under these windows")
    return res["tables"][:, inv]


def sample_memory(win: Windows) -> float:
    """Bytes the draws need at least besides the tables drawn: the forward stages kept
    as checkpoints and one segment recomputed at a time (no backward message)."""
    try:
        w = win.trimmed()
    except _Empty:
        return 0.0
    w, _ = _largest_row_last(w)
    per = _args(w)[2].stage_states()
    _, kept = checkpoint_plan(per, 0.0)
    return float(min(kept, per[:-1].sum()) + per.max()) * 8


def from_entries(ew: EntryWindows) -> Windows:
    """The DP's windows from a release's entry windows (2-D, every total)."""
    d0, d1 = ew.dims
    glo, glw = ew.lo[()], ew.lw[()]
    return Windows(ew.lo[ew.dims], ew.lw[ew.dims], ew.lo[(d0,)], ew.lw[(d0,)], ew.lo[(d1,)],
                   ew.lw[(d1,)], int(glo), np.asarray(glw).reshape(-1))


#: wall time per stored (live) DP state (forward pass, checkpoint recomputation, backward
#: pass) where some total is a window, whatever the number of rows: re-measured 2026-11-28
#: after the DP stored live states only, on rounded (base 3, 5) 5 x 5 .. 8 x 6 tables of
#: 0.4-40 s (2-core machine, ``benchmarks/dp_seconds.py``), the estimate is 1.4-2x the run
#: (the former factor 3 per row beyond two made it 12x (4 rows) to 250x (6 rows) the run,
#: so that ``auto`` refused 3-second counts)
SECONDS_PER_STATE = 5e-8
#: the same where every total is fixed (margins only, suppression): one value of the
#: column sum per state, so fewer states for the same work; on margins-only 4 x 5 .. 6 x 6
#: tables of 0.5-6 s the estimate is then 0.8-2x the run
SECONDS_PER_STATE_FIXED = 1e-7
#: the count's share of :data:`SECONDS_PER_STATE` per limb (its forward pass only): the
#: same tables' counts then take 0.5-1.2x the estimate
COUNT_SHARE = 0.2
#: wall time per column-sum vector of the half-split count
HALVES_SECONDS_PER_VECTOR = 2e-8


def seconds(win: Windows, what: str = "posterior") -> float:
    """Estimated wall time of the DP on ``win`` for ``what`` (``"posterior"``,
    ``"posterior+count"``, ``"count"``): its stored states times :data:`SECONDS_PER_STATE`
    (the count: its limbs, :data:`COUNT_SHARE` each, instead of the backward pass).

    Parameters
    ----------
    win : Windows
        The DP's windows.
    what : str
        What is computed.

    Returns
    -------
    float
        Seconds (0 when no table has positive weight).
    """
    try:
        w = win.trimmed()
    except _Empty:
        return 0.0
    w, _ = _largest_row_last(w)
    _, derived, args, _ = _args(w)
    # every possible value counts, also those whose float weight underflows here: the run
    # re-anchors the weights at the mode when they do, and then holds them
    total = float(table_dp.stage_states(args.start, args.row_lo_hi, args.lo,
                                        args.cind.astype(float), args.clo,
                                        args.kind.astype(float)).sum())
    per = SECONDS_PER_STATE_FIXED if derived else SECONDS_PER_STATE
    if what == "count":
        return total * per * COUNT_SHARE * _limbs(w, derived)
    return total * per * (1.5 if what == "posterior+count" else 1.0)


def memory(win: Windows, what: str) -> tuple:
    """``(bytes, detail)`` the DP needs at least for ``what`` (``"posterior"``: the forward
    stages kept as checkpoints and one segment recomputed at a time, the backward pass and
    the count's limbs; ``"count"``: two stages of limbs).  With more memory the posterior
    keeps every stage (no recomputation)."""
    try:
        w = win.trimmed()
    except _Empty:
        return 0.0, "no candidate"
    w, _ = _largest_row_last(w)
    _, derived, args, _ = _args(w)
    per = args.stage_states()
    big, tot = float(per.max()), float(per.sum())
    limbs = _limbs(w, derived)
    count_bytes = 2 * big * 8 * limbs
    if what == "count":
        return count_bytes, f"{big:.3g} states in the largest DP stage x {limbs} limbs"
    _, kept = checkpoint_plan(per, 0.0)
    kept = min(kept, tot)
    post_bytes = (kept + 2 * big) * 8
    # counting in the same pass adds the limbs; apart, the count runs after the posterior
    need = max(post_bytes, count_bytes) if what == "posterior+count" else post_bytes
    return need, f"{tot:.3g} DP states, {kept:.3g} stored with checkpoints"


def solve_anchored(ew: EntryWindows, win: Windows, shift: float, with_count: bool,
                   budget: float) -> dict | None:
    """:func:`solve` on tilted windows (``win``, the tilt's log factor ``shift`` added to
    the evidence); when the floats cannot hold the weights around that anchor, once more
    anchored at the constrained mode of the weights (:meth:`EntryWindows.mode`, an LP),
    which puts the most probable tables at weight about 1.  The count is taken in the same
    forward pass when the ``budget`` (bytes) holds both, else after the posterior.  The
    result's ``"windows"`` are the windows solved (the re-anchored ones when it re-anchored:
    draws use them)."""
    fused = with_count and budget >= memory(win, "posterior")[0] + memory(win, "count")[0]
    try:
        res = solve(win, with_count=fused, max_states=budget / 8)
    except FloatingPointError:
        trim = ew.trimmed()
        tilt = trim.tilted(anchor=trim.mode())
        win = from_entries(tilt)
        res, shift = solve(win, with_count=fused, max_states=budget / 8), tilt.shift
    if res is not None:
        res["log_z"] += shift
        res["windows"] = win           # the windows solved (their draws: :func:`sample`)
        if with_count and not fused:   # apart: the posterior's stages are freed by now
            res["n"] = count(win, max_states=budget / 8)
    return res


class TableDP(Route):
    """Exact forward-backward DP over the cells of a 2-D table with its totals.

    Reads the mechanism's entry windows (``plan.inputs["windows"]``, without the prior).
    """

    name = "dp"
    needs = "entry windows; 2-D count table with every total published"

    def applies(self, plan):
        release = plan.release
        if release.kind != "count":
            return ("the exact routes walk integer tables and need a count release; this "
                    "release holds magnitudes (rk.audit gives their intervals)")
        if len(release.dims) != 2:
            return f"the table DP covers 2-D tables; this release has dims {release.dims}"
        d0, d1 = release.dims
        missing = [k for k in ((d0,), (d1,), ()) if k not in release.margins]
        if missing:
            return (f"the table DP needs every total of the 2-D table published; missing "
                    f"{missing}")
        if release.groups:
            return "the table DP does not use published subtotals"
        return None

    @staticmethod
    def prepared(plan):
        """The plans of both orientations: ``[(entry windows with the prior in that
        orientation, DP windows or None when no candidate, the tilt's log factor, states
        (largest stage, total)), ...]``, prepared once per call (``plan.memo``)."""
        return prepared(plan, "table_dp", lambda: _orientations(plan.inputs["windows"],
                                                            plan.prior, plan.release.coords))

    def orientation(self, plan, what: str):
        """The orientation that needs the least memory for ``what``: rows of the DP are the
        dim with the fewest stored states (fewest rows, narrowest ranges)."""
        key = 0 if what == "count" else 1
        return min(self.prepared(plan), key=lambda p: (p[3][key], p[3][1 - key]))

    def estimate(self, plan, what="posterior"):
        ew, win, _, _ = self.orientation(plan, what)
        if win is None:
            return Cost(0.0, "no candidate")
        if what == "count":
            grid = _halves(win, size_only=True)
            if grid is not None:
                return Cost(60.0 * min(grid, 2.0 ** 20),
                            f"{grid:.3g} column-sum vectors of two row halves",
                            seconds=grid * HALVES_SECONDS_PER_VECTOR)
        need, detail = memory(win, what)
        secs = seconds(win, what)
        return Cost(need, f"{detail}, rows = {ew.dims[0]!r}, about {secs:.2g} s",
                    seconds=secs)

    def run(self, plan, *, count=True):
        release, memory = plan.release, plan.memory
        ew, win, shift, _ = self.orientation(plan, "posterior")
        res = None if win is None else solve_anchored(ew, win, shift, count, memory)
        if res is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        d0, d1 = ew.dims                       # the DP's rows, columns
        start, probs = res["cell_lo"], res["cell"]
        if ew.dims != release.dims:
            start, probs = start.T, np.swapaxes(probs, 0, 1)
        totals = {(d0,): (res["row_lo"], res["row"]), (d1,): (res["col_lo"], res["col"]),
                  (): (np.array(res["grand_lo"]), res["grand"])}
        return RouteResult(start=start, probs=probs, log_evidence=res["log_z"],
                           n_candidates=res["n"], totals=totals,
                           approximation=ew.approximation,
                           sampler=sampler(res["windows"], memory, ew.dims != release.dims))

    def draws(self, plan, who: str = "this route"):
        """``draw(n, rng)``: whole-table draws of this route's windows for the plan's
        release and prior (for a route that computes marginals another way: ``who``).  A
        ValueError when the DP's stages do not fit the plan's memory budget."""
        ew, win, _, _ = self.orientation(plan, "posterior")
        budget = plan.memory
        if win is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{plan.release.mechanism.name} release under this prior")
        need = sample_memory(win)
        if need > budget:
            big, tot = states(win)
            raise ValueError(
                f"whole-table draws of {who} go through the table DP, which needs "
                f"{fmt_bytes(need)} here ({tot:.3g} DP states, {big:.3g} in the largest "
                f"stage, stored with checkpoints), more than the memory budget of "
                f"{fmt_bytes(budget)}; raise memory= if the machine has more")
        return sampler(win, budget, ew.dims != plan.release.dims)

    def count(self, plan):
        _, win, _, _ = self.orientation(plan, "count")
        if win is None:
            return 0
        n = _halves(win)
        return count(win, max_states=plan.memory / 8) if n is None else n


def _orientations(windows: EntryWindows, prior, coords) -> list:
    ew = windows.with_prior(prior, coords)
    plans = []
    for e in (ew, ew.transposed()):
        trim = e.trimmed()
        tilt = None if trim is None else trim.tilted()
        win = None if tilt is None else from_entries(tilt)
        plans.append((e, win, 0.0 if tilt is None else tilt.shift,
                      (0.0, 0.0) if win is None else states(win)))
    return plans


def sampler(win: Windows, budget: float, transpose: bool = False):
    """``sampler(n, rng) -> int64 (n, r, c)``: draws of the tables of ``win`` (the forward
    pass recomputed at each call within ``budget`` bytes, nothing large kept), transposed
    to ``(n, c, r)`` when the DP ran with the release's dims swapped."""
    def draw(n, rng):
        t = sample(win, n, rng, max_states=budget / 8)
        return np.ascontiguousarray(t.transpose(0, 2, 1)) if transpose else t
    return draw


def release_windows(release, prior=None) -> Windows | None:
    """The table DP's windows of ``release`` under ``prior`` (default ``Uniform()``), in the
    release's own orientation, tilted (None when no table has positive weight)."""
    if not any(isinstance(r, TableDP) for r in release.mechanism.routes):
        raise ValueError(f"{release.mechanism.name} releases have no table-DP route")
    ew = release.mechanism.inputs(release)["windows"]
    return _orientations(ew, prior or Uniform(), release.coords)[0][1]


def _halves(win: Windows, size_only: bool = False):
    """The count by meeting in the middle over row halves (3 or 4 rows, every total
    fixed), or None where it does not apply; ``size_only``: the grid it would walk."""
    try:
        w = win.trimmed()
    except _Empty:
        return None
    if w.row_lw.shape[1] != 1 or w.col_lw.shape[1] != 1 or w.grand_lw.shape[0] != 1:
        return None
    f = halves.grid_size if size_only else halves.count
    return f(w.cell_lo, w.cell_lw, w.row_lo, w.col_lo)
