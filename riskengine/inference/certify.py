"""Exact integer bounds of unknown cells tied by published sums, and which are certain.

A reconstruction attack (Abowd et al. 2023; Dick, Dwork, Kearns et al. 2023) asks of every
finest cell of a publication (person type x smallest area): over *every* nonnegative
integer table consistent with what is published, what are its least and its greatest
value?  When they are equal the cell is reconstructed with certainty: an intruder can
verify it from the published numbers alone.

:func:`integer_bounds` answers on plain arrays: unknowns ``x`` (integers in
``[lo, hi]``) and rows ``row_lower <= R x <= row_upper`` (equalities for exactly published
sums; windows for rounded or noisy ones).  The work, by mixed-integer programs (HiGHS):

1. one consistent ``x0`` (none: :class:`NoTable`, which proves the publication
   inconsistent); two more solutions from random objectives start a pool of solutions;
   a cell that differs in the pool is not certain;
2. **certification** of the cells the pool has only seen at a box end (most are 0): a
   point of the LP relaxation's relative interior (interior point method, no crossover)
   is off every end some LP point is off, so it splits them into candidates that may
   move and the rest; one simplex LP moving as many of the rest as it can
   (``max sum t_j``, ``t_j <= x_j - lo_j``, ``t_j <= 1``) with an optimum below 1 proves
   them all certain at once.  With ``groups`` (the cells of one block), each candidate
   is first pushed off its end by an LP over its own block alone, every other cell
   held at ``x0`` (:func:`_local_moves`), then over its block and one other (up to
   ``_PARTNERS``, those with cells that can give way in the candidate's tight sums
   first): small programs whose integral vertices are tables of the whole system
   (checked exactly).  Each candidate left is then pushed off its end by the LP alone
   (``max x_j`` from the last basis, a few primal simplex pivots): the rows are sums over
   nested codes, so that vertex is often an integer table -- checked exactly, it moves
   the candidate (and others) with no integer program.  The candidates left go to
   integer programs that must move at least one of them (``sum t_j >= 1``): infeasible
   proves every one certain, a table found removes the cells it moves, and it repeats.  Then **exclusion** for the cells
   ``U`` the pool has never seen move that are inside their box: one program asks for a
   consistent table that differs from ``x0`` in at least one cell of ``U`` (binaries
   ``up_j``: ``x_j >= x0_j + 1``, ``down_j``: ``x_j <= x0_j - 1``, their sum at least 1);
   infeasible: every cell of ``U`` is certain; feasible: the cells that moved leave
   ``U``; repeat.  A cell is flagged certain only on a proof (an LP optimum below 1 or
   an infeasible program); a solver stopped by its time limit leaves the cells it did
   not decide *uncertain* (``decided`` False) -- never certain;
3. **bounds** (``bounds="exact"``): for every cell that is not certain, ``min x_j`` and
   ``max x_j`` as integer programs, skipped where the pool already reaches the cell's
   box bound ``lo_j`` / ``hi_j``, or an outer bound from the cell's block alone (the
   other cells free in their boxes: :class:`_LocalBounds`), or the LP relaxation's
   bound (rounded inward: integer tables cannot pass it) is already reached by a
   table found.  ``bounds="lp"`` stops at
   the LP bound: an outer bound, flagged not exact where no table reaches it.  The
   objective is an integer, so HiGHS stops at an absolute gap below 1 (``mip_abs_gap`` 0.999, ``mip_rel_gap`` 0): its incumbent is
   then the optimum.  A program stopped by the time limit gives the dual bound, rounded
   outward: an outer bound, flagged ``exact`` False.

Every solution HiGHS returns is rounded and checked in integer arithmetic against every
row and box bound before it is used (a tolerance-sized violation would otherwise make a
certain cell look uncertain, or worse): a failed check raises.

Every model kept alive over many objectives gets each run's own time limit
(:func:`riskengine._highs_quiet.run`: HiGHS's clock adds up over a model's runs).

Cost (measured, benchmarks/RESULTS.md "Issue 32"): a tract of 8 blocks (2,944 cells)
takes 20 programs and 8 s with ``bounds="lp"``, 68 programs and 22 s with ``"exact"``; a
tract of 34 blocks (12,512 cells) about 25 programs of about 2.5 s that each move one in
three of the remaining candidates.  Windows on every row (rounding, cell key) make far
more candidates, each moved by its own table (the windows let few move together); the
local stage finds most of those tables with LPs of one or two blocks, a few ms each,
where an LP of the whole tract takes 0.05-0.5 s (benchmarks/certify_local.py).
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["IntegerBounds", "NoTable", "integer_bounds"]

#: seconds one program may take before its answer is taken as undecided / an outer bound
TIME_LIMIT = 60.0
#: LP vertices tried before their rate of success is judged, and the least rate (one in
#: _VERTEX_RATE) at which they go on
_VERTEX_TRIES, _VERTEX_RATE = 30, 10
#: other groups a cell's group is paired with when it cannot move alone (_local_moves):
#: by LP, then by integer program; the seconds one such integer program may take; and
#: the least number of groups for pairs (with fewer, a pair is most of the system, whose
#: own programs then do better: measured on 3 blocks, benchmarks/certify_local.py)
_PARTNERS, _MILP_PARTNERS, _LOCAL_SECONDS, _PAIRED_GROUPS = 5, 2, 5.0, 6
#: seconds of the first table's program past which the pool's two more tables need not
#: be optima (integer_bounds)
_QUICK_POOL = 1.0


class NoTable(ValueError):
    """No nonnegative integer table meets every row: the publication is inconsistent."""


@dataclass(frozen=True)
class IntegerBounds:
    """Exact integer bounds of the unknowns (see the module).

    Attributes
    ----------
    lower, upper : numpy.ndarray
        int64 per unknown: the least and greatest value over every consistent table
        (where ``exact`` is False, outer bounds).
    certain : numpy.ndarray
        bool: ``lower == upper`` proven (the cell has one value in every consistent table).
    exact : numpy.ndarray
        bool: both bounds proven optimal.
    decided : numpy.ndarray
        bool: the certification reached a proof for the cell (False only when a time
        limit stopped it: such a cell is reported uncertain, never certain).
    solution : numpy.ndarray
        One consistent table (int64 per unknown).
    n_programs : int
        Integer programs over the whole system solved (not the local stage's small
        ones over one or two groups).
    seconds : float
    """

    lower: np.ndarray
    upper: np.ndarray
    certain: np.ndarray
    exact: np.ndarray
    decided: np.ndarray
    solution: np.ndarray
    n_programs: int
    seconds: float


class _Model:
    """A HiGHS model of the rows and the box, kept alive over many objectives."""

    def __init__(self, R, rlo, rhi, lo, hi, time_limit, integer=True):
        from .._highs_quiet import model
        self.n = R.shape[1]
        self.integer = integer
        self.h = h = model(self.n, R, lo, hi, np.zeros(self.n), rlo, rhi,
                           integer=np.full(self.n, integer))
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.999)
        self.time_limit = float(time_limit)
        self.cost = np.zeros(self.n)
        self.n_programs = 0

    def solve(self, cost, sense_max=False):
        """(status, x or None, dual bound): status 'optimal', 'infeasible' or 'limit'."""
        import highspy

        from .._highs_quiet import run
        h = self.h
        cost = np.asarray(cost, float)
        ch = np.flatnonzero(cost != self.cost)
        if ch.size:
            h.changeColsCost(ch.size, ch.astype(np.int32), cost[ch])
            self.cost = cost.copy()
        h.changeObjectiveSense(highspy.ObjSense.kMaximize if sense_max
                               else highspy.ObjSense.kMinimize)
        run(h, self.time_limit)        # this run's limit (HiGHS's own clock accumulates)
        if self.integer:
            self.n_programs += 1
        return _status(h, self.n)

    def objective(self) -> float:
        return float(self.h.getInfo().objective_function_value)


def _status(h, n):
    import highspy
    st = h.getModelStatus()
    S = highspy.HighsModelStatus
    info = h.getInfo()
    if st == S.kInfeasible:
        return "infeasible", None, None
    has = info.primal_solution_status == 2     # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value[:n], float) if has else None
    if st == S.kOptimal:
        return "optimal", x, info.mip_dual_bound
    if st in (S.kTimeLimit, S.kIterationLimit, S.kSolutionLimit, S.kInterrupt):
        return "limit", x, info.mip_dual_bound
    raise RuntimeError(f"HiGHS stopped with status {h.modelStatusToString(st)}")


class _Checker:
    """Rounds a solution and checks it against every row and box bound exactly."""

    def __init__(self, R, rlo, rhi, lo, hi):
        self.R = sp.csr_matrix(R, dtype=np.int64)
        self.rlo, self.rhi, self.lo, self.hi = rlo, rhi, lo, hi

    def integral(self, x):
        """``x`` rounded when it is an integer table meeting every row and box bound
        exactly (an LP vertex that happens to be one), else None."""
        xi = np.rint(x).astype(np.int64)
        if np.abs(x - xi).max(initial=0.0) > 1e-7:
            return None
        r = self.R @ xi
        if (xi < self.lo).any() or (xi > self.hi).any() or (r < self.rlo).any() or \
                (r > self.rhi).any():
            return None
        return xi

    def __call__(self, x) -> np.ndarray:
        xi = np.rint(x).astype(np.int64)
        if np.abs(x - xi).max(initial=0.0) > 1e-4:
            raise RuntimeError("HiGHS returned a solution that is not integral "
                               f"(max distance {np.abs(x - xi).max():.3g})")
        r = self.R @ xi
        if (xi < self.lo).any() or (xi > self.hi).any() or (r < self.rlo).any() or \
                (r > self.rhi).any():
            raise RuntimeError("HiGHS returned a solution that misses a published sum once "
                               "rounded to integers")
        return xi


def integer_bounds(rows, row_lower, row_upper, lo, hi, *, bounds: bool = True,
                   time_limit: float = TIME_LIMIT, rng=None, progress=None, groups=None
                   ) -> IntegerBounds:
    """Exact integer bounds and certainty of the unknowns (see the module).

    Parameters
    ----------
    rows : scipy.sparse matrix
        ``m x n`` integer coefficients (0/1 for sums of cells).
    row_lower, row_upper : array-like
        int per row: ``row_lower <= rows @ x <= row_upper`` (equal for an exact sum).
    lo, hi : array-like
        int per unknown: the box (``hi`` finite: e.g. the smallest published sum holding
        the cell).
    bounds : {"exact", "lp", "none"} or bool
        The bounds of the uncertain cells: ``"exact"`` (True) by integer programs;
        ``"lp"`` by the LP relaxation, rounded inward (exact where a table already found
        reaches it, else an outer bound flagged not exact); ``"none"`` (False): the box
        ``lo`` / ``hi`` (outer bounds, flagged not exact).
    time_limit : float
        Seconds per integer program.
    rng : numpy.random.Generator, optional
        For the random objectives of the first solutions (default: seeded 0).
    progress : callable, optional
        ``progress(done, total)`` after each program of the bounds stage.
    groups : array-like, optional
        int per unknown: cells that may move together while the rest stay put (the
        cells of one block).  Before any program of the whole system, each candidate
        cell is first pushed off its value by an LP over its own group alone, every other
        unknown held at the first table (:func:`_local_moves`); only what that leaves
        goes to the programs of the whole system.  The answer is the same with or
        without; only the time differs.  Used where some row is a window (rounded or
        noisy sums); ignored where every row is an exact sum.

    Returns
    -------
    IntegerBounds

    Raises
    ------
    NoTable
        No nonnegative integer table meets every row.
    """
    t0 = _time.perf_counter()
    R = sp.csr_matrix(rows)
    n = R.shape[1]
    rlo = np.asarray(row_lower, np.int64)
    rhi = np.asarray(row_upper, np.int64)
    lo = np.asarray(lo, np.int64)
    hi = np.asarray(hi, np.int64)
    if bounds not in (True, False, "exact", "lp", "none"):
        raise ValueError(f"bounds must be 'exact', 'lp' or 'none' (True / False), got "
                         f"{bounds!r}")
    if (hi < lo).any():
        j = int(np.argmax(hi < lo))
        raise NoTable(f"unknown {j} has an empty box [{lo[j]}, {hi[j]}]")
    if n == 0:
        if ((rlo > 0) | (rhi < 0)).any():
            raise NoTable("a published sum of no unknown cell differs from 0")
        e = np.zeros(0, np.int64)
        b = np.zeros(0, bool)
        return IntegerBounds(e, e, b, b, b, e, 0, 0.0)
    rng = np.random.default_rng(0) if rng is None else rng
    if groups is not None:
        groups = np.asarray(groups).reshape(-1)
        if groups.size != n:
            raise ValueError(f"groups has {groups.size} entries for {n} unknowns")
        if (rlo == rhi).all():
            # exact sums: one LP vertex of the whole system moves many cells at once and
            # its programs are quick; the local stage only added time there (a tract of
            # 12 blocks: 0.7 s -> 1.3 s; benchmarks/certify_local.py)
            groups = None
    check = _Checker(R, rlo, rhi, lo, hi)
    model = _Model(R, rlo, rhi, lo, hi, time_limit)
    started = _time.perf_counter()
    st, x, _ = model.solve(np.zeros(n))
    first_seconds = _time.perf_counter() - started
    if st == "infeasible":
        raise NoTable("no nonnegative integer table meets every published number")
    if x is None:
        raise RuntimeError(f"HiGHS found no consistent table within {time_limit:g} s "
                           "(raise time_limit)")
    x0 = check(x)
    seen_lo, seen_hi = x0.copy(), x0.copy()

    def see(y):
        np.minimum(seen_lo, y, out=seen_lo)
        np.maximum(seen_hi, y, out=seen_hi)

    # two more tables from random objectives.  Where the first table took more than
    # _QUICK_POOL seconds, any table will do, so HiGHS stops at its first one that
    # improves on the start (a windowed tract of 3,680 cells: 5-12 s each against 32-40 s
    # for an optimum); below, optima (spread further: fewer programs after them)
    c = rng.standard_normal(n)
    keep = model.h.getOptionValue("mip_max_improving_sols")
    keep = int(keep[-1] if isinstance(keep, tuple) else keep)   # (status, value) in 1.16
    if first_seconds > _QUICK_POOL:
        model.h.setOptionValue("mip_max_improving_sols", 1)
    for sign in (1.0, -1.0):
        st, y, _ = model.solve(sign * c)
        if y is not None:
            see(check(y))
    model.h.setOptionValue("mip_max_improving_sols", keep)   # the bounds need optima

    # 2a. cells never seen off a box end (most are 0).  The LP relaxation first: pushing
    # them all off their end together, an LP optimum of less than 1 in all proves every
    # one certain (each integer table would move them by at least 1); cells the LP moves
    # go to integer programs that ask for one table moving at least one of them
    decided = np.zeros(n, bool)
    certain = np.zeros(n, bool)
    relax = _Model(R, rlo, rhi, lo, hi, time_limit, integer=False)
    # re-solved from its last basis after each change of objective: the primal simplex
    # keeps the vertex (still feasible) and needs a few pivots, the dual thousands
    relax.h.setOptionValue("presolve", "off")
    relax.h.setOptionValue("simplex_strategy", 4)
    center = _center(R, rlo, rhi, lo, hi, time_limit)
    for end in ("low", "high"):
        at = (seen_hi == lo) if end == "low" else (seen_lo == hi)
        U = np.flatnonzero(at & ~decided)
        pending = np.zeros(0, np.int64)
        if center is not None and U.size:
            # a point inside the LP polytope is off every end some LP point is off
            off = ((center[U] - lo[U]) if end == "low" else (hi[U] - center[U])) > 1e-6
            pending = U[off]
            U = U[~off]
        while U.size:
            st, y = _spread(R, rlo, rhi, lo, hi, U, end, time_limit, integer=False)
            if st != "optimal" or y is None:
                pending = np.union1d(pending, U)
                break
            gap = np.minimum((y[U] - lo[U]) if end == "low" else (hi[U] - y[U]), 1.0)
            if gap.sum() < 0.5:
                certain[U] = decided[U] = True
                break
            moved = gap > 1e-7
            pending = np.union1d(pending, U[moved])
            U = U[~moved]
        # the same, first over each cell's own group (the rest held at x0): small LPs
        if groups is not None and pending.size:
            _local_moves(R, rlo, rhi, lo, hi, x0, groups, pending,
                         np.full(pending.size, end == "low"), seen_lo, seen_hi, check, see,
                         time_limit)
        # an LP vertex pushing one pending cell off its end is often integral where the
        # rows are windows (rounding, noise): such a vertex is a consistent table, found
        # by a few warm simplex pivots instead of an integer program.  Tried while it
        # pays: past _VERTEX_TRIES tries, it stops once fewer than one in _VERTEX_RATE
        # moved its cell (exact sums rarely give an integral vertex)
        tries = hits = 0
        for j in pending:
            if tries >= _VERTEX_TRIES and hits * _VERTEX_RATE < tries:
                break
            if (seen_hi[j] > lo[j]) if end == "low" else (seen_lo[j] < hi[j]):
                continue                          # an earlier vertex moved it already
            cost = np.zeros(n)
            cost[j] = 1.0
            st, y, _ = relax.solve(cost, sense_max=(end == "low"))
            yi = check.integral(y) if st == "optimal" and y is not None else None
            tries += 1
            if yi is not None and ((yi[j] > lo[j]) if end == "low" else (yi[j] < hi[j])):
                see(yi)
                hits += 1
        still = (seen_hi[pending] == lo[pending]) if end == "low" else \
            (seen_lo[pending] == hi[pending])
        pending = pending[still]
        while pending.size:
            # the cells proven certain are fixed: the programs shrink to the rest
            flo, fhi = np.where(certain, x0, lo), np.where(certain, x0, hi)
            st, y = _spread(R, rlo, rhi, flo, fhi, pending, end, time_limit, integer=True)
            model.n_programs += 1
            if st == "infeasible":
                certain[pending] = decided[pending] = True
                break
            if y is None:                # stopped by the time limit: left undecided
                break
            see(check(y))
            still = (seen_hi[pending] == lo[pending]) if end == "low" else \
                (seen_lo[pending] == hi[pending])
            pending = pending[still]
    # 2b. the rest by exclusion rounds (cells a table of their own group moves first)
    U = np.flatnonzero((seen_lo == seen_hi) & ~decided)
    if groups is not None and U.size:
        both = np.concatenate([U, U])
        _local_moves(R, rlo, rhi, lo, hi, x0, groups, both,
                     np.concatenate([np.ones(U.size, bool), np.zeros(U.size, bool)]),
                     seen_lo, seen_hi, check, see, time_limit)
    while True:
        U = np.flatnonzero((seen_lo == seen_hi) & ~decided)
        if U.size == 0:
            break
        flo, fhi = np.where(certain, x0, lo), np.where(certain, x0, hi)
        st, y = _exclusion(R, rlo, rhi, flo, fhi, x0, U, time_limit)
        model.n_programs += 1
        if st == "infeasible":
            certain[U] = True
            decided[U] = True
            break
        if y is None:            # time limit, no table found: these cells stay undecided
            break
        see(check(y))
    decided |= seen_lo != seen_hi

    # 3. exact bounds of the cells that move
    lower, upper = seen_lo.copy(), seen_hi.copy()
    exact = certain.copy()
    mode = {True: "exact", False: "none"}.get(bounds, bounds)
    if mode == "none":              # the box: outer bounds, never a claim the pool only saw
        lower[~certain], upper[~certain] = lo[~certain], hi[~certain]
    else:
        fix = np.flatnonzero(certain)
        if fix.size:                  # certain cells fixed in both models
            for mdl in (model, relax):
                mdl.h.changeColsBounds(fix.size, fix.astype(np.int32),
                                       x0[fix].astype(float), x0[fix].astype(float))
        todo = np.flatnonzero(~certain)
        local = None
        if groups is not None and todo.size:
            todo = todo[np.argsort(groups[todo], kind="stable")]   # a group's models reused
            local = _LocalBounds(R, rlo, rhi, np.where(certain, x0, lo),
                                 np.where(certain, x0, hi), x0, groups, check, time_limit)
        total = 2 * todo.size
        done = 0
        for j in todo:
            ok = True
            for side in ("lower", "upper"):
                done += 1
                if (side == "lower" and seen_lo[j] == lo[j]) or \
                        (side == "upper" and seen_hi[j] == hi[j]):
                    continue
                if local is not None and local.reached(j, side == "upper", seen_lo, seen_hi,
                                                       see):
                    continue             # a table reaches an outer bound: exact, no LP
                cost = np.zeros(n)
                cost[j] = 1.0
                st, y, _ = relax.solve(cost, sense_max=(side == "upper"))
                if st == "optimal":      # the LP bound, rounded inward, already seen: exact
                    yi = None if y is None else check.integral(y)
                    if yi is not None:   # an integer vertex: a table reaching the bound
                        see(yi)
                    v = relax.objective()
                    if (side == "lower" and np.ceil(v - 1e-6) >= seen_lo[j]) or \
                            (side == "upper" and np.floor(v + 1e-6) <= seen_hi[j]):
                        continue
                    if mode == "lp":     # the LP bound, rounded inward: an outer bound
                        ok = False
                        if side == "lower":
                            lower[j] = max(int(lo[j]), int(np.ceil(v - 1e-6)))
                        else:
                            upper[j] = min(int(hi[j]), int(np.floor(v + 1e-6)))
                        continue
                st, y, dual = model.solve(cost, sense_max=(side == "upper"))
                if y is not None:
                    see(check(y))
                if st == "optimal":
                    continue
                ok = False
                if dual is not None and np.isfinite(dual):
                    if side == "lower":
                        lower[j] = max(int(lo[j]), int(np.ceil(dual - 1e-6)))
                    else:
                        upper[j] = min(int(hi[j]), int(np.floor(dual + 1e-6)))
                else:
                    if side == "lower":
                        lower[j] = lo[j]
                    else:
                        upper[j] = hi[j]
            if ok:
                lower[j], upper[j] = seen_lo[j], seen_hi[j]
                exact[j] = True
            else:
                lower[j] = min(lower[j], seen_lo[j])
                upper[j] = max(upper[j], seen_hi[j])
            if progress is not None:
                progress(done, total)
    return IntegerBounds(lower, upper, certain, exact, decided, x0, model.n_programs,
                         _time.perf_counter() - t0)


def _held(R, Rc, rlo, rhi, lo, hi, ref, cols, time_limit, integer=False):
    """An LP (``integer``: an integer program) over the unknowns ``cols`` alone, every
    other unknown held at the table ``ref`` (the rows they share shifted by its values):
    its integral solutions, put into ``ref``, are tables of the whole system.  With
    ``ref`` None the others are free in their boxes instead (each shared row widened by
    their least and greatest share): an outer relaxation, whose optimum bounds the whole
    system's.  The LP is re-solved warm (primal simplex, as the whole system's
    relaxation); the integer program stops at its first table, within
    ``_LOCAL_SECONDS``."""
    rows = np.unique(Rc[:, cols].indices)
    Rr = R[rows]
    Rg = Rr[:, cols]
    if ref is None:
        least, most = Rr @ lo - Rg @ lo[cols], Rr @ hi - Rg @ hi[cols]
    else:
        least = most = Rr @ ref - Rg @ ref[cols]     # the others' share at ref
    m = _Model(Rg, rlo[rows] - most, rhi[rows] - least, lo[cols], hi[cols],
               min(time_limit, _LOCAL_SECONDS) if integer else time_limit, integer=integer)
    m.h.setOptionValue("presolve", "off")    # 3x faster on these small programs
    if integer:
        m.h.setOptionValue("mip_max_improving_sols", 1)
    else:
        m.h.setOptionValue("simplex_strategy", 4)
    return m


def _local_moves(R, rlo, rhi, lo, hi, x0, groups, cells, up, seen_lo, seen_hi, check,
                 see, time_limit, partners=_PARTNERS, rng=None) -> None:
    """Tables that move ``cells`` (``up``: maximise the cell, else minimise it) found by
    LPs over each cell's own group alone, every other unknown held at ``x0``
    (:func:`_held`); the cells that cannot move so then over their group and one other
    (up to ``partners`` others, :func:`_partners`: a person moved into a block often has
    to leave another where tract sums are tight); the cells still left by integer
    programs over their group and one other (up to ``_MILP_PARTNERS``: where the pair's
    LP vertex is fractional).  Each solution that is integral makes a table of the whole
    system, which the checker verifies exactly before ``see`` takes it.  Nothing is
    proven here: a cell these programs cannot move goes on to those of the whole system.
    Each pass is tried while it pays, over all groups together (as the vertex loop of
    :func:`integer_bounds`: exact sums seldom let one group move alone), and only when
    the pass before it paid; pairs only with at least ``_PAIRED_GROUPS`` groups."""
    Rc = R.tocsc()
    rng = np.random.default_rng(0) if rng is None else rng
    names = np.unique(groups)
    tries = hits = 0
    if names.size < 2:
        return
    order = np.argsort(groups[cells], kind="stable")
    cells, up = cells[order], up[order]
    sums = R @ x0
    # passes: one group by LP; it and a partner by LP; it and a partner by integer program
    for paired, integer in ((False, False), (True, False), (True, True)):
        if paired and (partners < 1 or names.size < _PAIRED_GROUPS or
                       (tries >= _VERTEX_TRIES and hits * _VERTEX_RATE < tries)):
            break             # a pair is most of the system, or the last pass did not pay
        tries = hits = 0
        todo = seen_lo[cells] == seen_hi[cells]
        cells, up = cells[todo], up[todo]
        if not cells.size:
            return
        starts = np.flatnonzero(np.r_[True, np.diff(groups[cells]) != 0])
        for a, b in zip(starts, np.r_[starts[1:], cells.size]):
            g = groups[cells[a]]
            models = {}
            for j, u in zip(cells[a:b], up[a:b]):
                if tries >= _VERTEX_TRIES and hits * _VERTEX_RATE < tries:
                    break                          # judged per cell, all its sets tried
                if seen_lo[j] != seen_hi[j]:
                    continue                       # a table found already moves it
                tries += 1
                others = [g] if not paired else _partners(
                    R, Rc, rlo, rhi, lo, hi, x0, sums, groups, names, j, bool(u),
                    _MILP_PARTNERS if integer else partners, rng)
                for q in others:
                    if q not in models:
                        cols = np.flatnonzero((groups == g) | (groups == q))
                        models[q] = (cols, _held(R, Rc, rlo, rhi, lo, hi, x0, cols,
                                                 time_limit, integer))
                    cols, m = models[q]
                    at = int(np.searchsorted(cols, j))
                    if integer:                    # any table moving j
                        k = np.array([at], np.int32)
                        b_lo, b_hi = (x0[j] + 1, hi[j]) if u else (lo[j], x0[j] - 1)
                        m.h.changeColsBounds(1, k, np.array([b_lo], float),
                                             np.array([b_hi], float))
                        st, y, _ = m.solve(np.zeros(cols.size))
                        m.h.changeColsBounds(1, k, np.array([lo[j]], float),
                                             np.array([hi[j]], float))
                        if y is None:
                            continue
                        full = x0.copy()
                        full[cols] = np.rint(y).astype(np.int64)
                        yi = check(full.astype(float))
                    else:
                        cost = np.zeros(cols.size)
                        cost[at] = 1.0
                        st, y, _ = m.solve(cost, sense_max=bool(u))
                        if st != "optimal" or y is None:
                            continue
                        full = x0.astype(float)
                        full[cols] = y
                        yi = check.integral(full)
                    if yi is not None and yi[j] != x0[j]:
                        see(yi)
                        hits += 1
                        break


def _partners(R, Rc, rlo, rhi, lo, hi, x0, sums, groups, names, j, up, k, rng):
    """Up to ``k`` other groups to move cell ``j`` with (``up``: raising it): first those
    holding cells that could give way in the sums that hold ``j`` and are at a window's
    end in ``x0`` (lowered where ``j`` rises, raised where it falls), most such cells
    first; then others at random."""
    rows = Rc.indices[Rc.indptr[j]:Rc.indptr[j + 1]]
    tight = rows[(sums[rows] >= rhi[rows]) if up else (sums[rows] <= rlo[rows])]
    score = {}
    if tight.size:
        sub = R[tight].tocoo()
        c = sub.col
        give = (x0[c] > lo[c]) if up else (x0[c] < hi[c])
        gs = groups[c[give]]
        gs = gs[gs != groups[j]]
        if gs.size:
            qs, counts = np.unique(gs, return_counts=True)
            score = dict(zip(qs.tolist(), counts.tolist()))
    first = sorted(score, key=lambda q: -score[q])
    rest = [q for q in rng.permutation(names).tolist() if q != groups[j] and q not in score]
    return (first + rest)[:k]


class _LocalBounds:
    """A cell's bound from its own group before any program of the whole system.

    Two LPs over the group's cells: the *outer* one lets every other unknown take any
    value of its box (each shared row's bounds widened by the others' least and
    greatest share), so its optimum bounds the whole system's LP and integer optimum;
    the *inner* one holds the others at ``x0``, so an integral vertex of it is a table of
    the whole system (checked exactly).  When the tables seen, with the inner one's,
    reach the outer bound rounded inward, that is the cell's exact bound and no program
    of the whole system is needed; otherwise it goes on to them.  Tried while it pays
    (as :func:`_local_moves`)."""

    def __init__(self, R, rlo, rhi, lo, hi, x0, groups, check, time_limit):
        self.R, self.Rc, self.rlo, self.rhi = R, R.tocsc(), rlo, rhi
        self.lo, self.hi, self.x0, self.groups = lo, hi, x0, groups
        self.check, self.time_limit = check, time_limit
        self.group = None
        self.tries = self.hits = 0

    def _models(self, g):
        cols = np.flatnonzero(self.groups == g)
        args = (self.R, self.Rc, self.rlo, self.rhi, self.lo, self.hi)
        self.outer = _held(*args, None, cols, self.time_limit)
        self.inner = _held(*args, self.x0, cols, self.time_limit)
        self.group, self.cols = g, cols

    def reached(self, j, up, seen_lo, seen_hi, see) -> bool:
        """True when a table seen (or found here, then passed to ``see``) reaches the
        outer bound of cell ``j`` (``up``: its greatest value, else its least)."""
        if self.tries >= _VERTEX_TRIES and self.hits * _VERTEX_RATE < self.tries:
            return False
        g = self.groups[j]
        if g != self.group:
            if (self.groups == g).all():
                return False
            self._models(g)
        self.tries += 1
        cost = np.zeros(self.cols.size)
        cost[np.searchsorted(self.cols, j)] = 1.0
        st, _, _ = self.outer.solve(cost, sense_max=up)
        if st != "optimal":
            return False
        v = self.outer.objective()
        bound = np.floor(v + 1e-6) if up else np.ceil(v - 1e-6)
        if (seen_hi[j] if up else seen_lo[j]) != bound:
            st, y, _ = self.inner.solve(cost, sense_max=up)
            if st == "optimal" and y is not None:
                full = self.x0.astype(float)
                full[self.cols] = y
                yi = self.check.integral(full)
                if yi is not None:
                    see(yi)
        if (seen_hi[j] if up else seen_lo[j]) == bound:
            self.hits += 1
            return True
        return False


def _exclusion(R, rlo, rhi, lo, hi, x0, U, time_limit):
    """One exclusion program (see the module): ('infeasible', None) or (status, table)."""
    import highspy

    from .._highs_quiet import model, run
    n = R.shape[1]
    up_ok = U[x0[U] < hi[U]]
    dn_ok = U[x0[U] > lo[U]]
    k_up, k_dn = up_ok.size, dn_ok.size
    if k_up + k_dn == 0:
        return "infeasible", None
    nb = k_up + k_dn
    ncol = n + nb
    # rows: R x in [rlo, rhi]; x_j - (x0_j + 1 - lo_j) u_j >= lo_j;
    # x_j + (hi_j - x0_j + 1) d_j <= hi_j; sum u + sum d >= 1
    rr, cc, vv = [], [], []
    Rc = sp.coo_matrix(R)
    rr.append(Rc.row)
    cc.append(Rc.col)
    vv.append(Rc.data.astype(float))
    m0 = R.shape[0]
    r_up = m0 + np.arange(k_up)
    rr += [r_up, r_up]
    cc += [up_ok, n + np.arange(k_up)]
    vv += [np.ones(k_up), -(x0[up_ok] + 1 - lo[up_ok]).astype(float)]
    r_dn = m0 + k_up + np.arange(k_dn)
    rr += [r_dn, r_dn]
    cc += [dn_ok, n + k_up + np.arange(k_dn)]
    vv += [np.ones(k_dn), (hi[dn_ok] - x0[dn_ok] + 1).astype(float)]
    r_any = m0 + nb
    rr.append(np.full(nb, r_any))
    cc.append(n + np.arange(nb))
    vv.append(np.ones(nb))
    A = sp.csc_matrix((np.concatenate(vv), (np.concatenate(rr), np.concatenate(cc))),
                      shape=(r_any + 1, ncol))
    inf = highspy.kHighsInf
    row_lo = np.concatenate([rlo, lo[up_ok], np.full(k_dn, -inf), [1.0]]).astype(float)
    row_hi = np.concatenate([rhi, np.full(k_up, inf), hi[dn_ok], [inf]]).astype(float)
    h = model(ncol, A, np.concatenate([lo, np.zeros(nb)]), np.concatenate([hi, np.ones(nb)]),
              np.concatenate([np.zeros(n), -np.ones(nb)]), row_lo, row_hi,
              integer=np.ones(ncol, bool))
    # move as many undecided cells as a few improving solutions reach: fewer rounds
    h.setOptionValue("mip_max_improving_sols", 3)
    run(h, time_limit)
    st, x, _ = _status(h, ncol)
    return st, (None if x is None else x[:n])


def _center(R, rlo, rhi, lo, hi, time_limit):
    """A point of the LP relaxation's relative interior (HiGHS's interior point method,
    no objective, no crossover), or None: its cells at a box end are the candidates for
    being there in every table (the simplex programs then prove it)."""
    m = _Model(R, rlo, rhi, lo, hi, time_limit, integer=False)
    m.h.setOptionValue("solver", "ipm")
    m.h.setOptionValue("run_crossover", "off")
    st, y, _ = m.solve(np.zeros(R.shape[1]))
    return y if st == "optimal" else None


def _spread(R, rlo, rhi, lo, hi, cells, end, time_limit, integer):
    """Move as many of ``cells`` off their box's ``end`` as one table can: ``max sum
    t_j`` with ``t_j <= x_j - lo_j`` (low end; ``t_j <= hi_j - x_j`` at the high end),
    ``0 <= t_j <= 1``.  As an LP (``integer`` False): an optimum below 1 proves every one
    of them certain, and the cells it moves are candidates.  As an integer program (``x``
    integer, ``t`` not, and ``sum t >= 1``): a table moving at least one, as many as a
    couple of improving solutions reach, or ('infeasible', None): every one certain."""
    import highspy

    from .._highs_quiet import model, run
    n = R.shape[1]
    m = R.shape[0]
    k = cells.size
    inf = highspy.kHighsInf
    sign = -1.0 if end == "low" else 1.0          # t - x <= -lo  |  t + x <= hi
    link = sp.csr_matrix((np.concatenate([np.ones(k), np.full(k, sign)]),
                          (np.tile(np.arange(k), 2), np.concatenate([n + np.arange(k),
                                                                     cells]))),
                         shape=(k, n + k))
    rows = [sp.hstack([sp.csr_matrix(R, dtype=float), sp.csr_matrix((m, k))]), link]
    row_lo = [rlo.astype(float), np.full(k, -inf)]
    row_hi = [rhi.astype(float), (-lo[cells] if end == "low" else hi[cells]).astype(float)]
    if integer:
        rows.append(sp.csr_matrix((np.ones(k), (np.zeros(k, np.int64), n + np.arange(k))),
                                  shape=(1, n + k)))
        row_lo.append(np.array([1.0]))
        row_hi.append(np.array([inf]))
    A = sp.vstack(rows).tocsc()
    h = model(n + k, A, np.concatenate([lo, np.zeros(k)]), np.concatenate([hi, np.ones(k)]),
              np.concatenate([np.zeros(n), -np.ones(k)]), np.concatenate(row_lo),
              np.concatenate(row_hi),
              integer=np.concatenate([np.full(n, integer), np.zeros(k, bool)]))
    if integer:
        h.setOptionValue("mip_max_improving_sols", 2)
    run(h, time_limit)
    st, x, _ = _status(h, n + k)
    return st, (None if x is None else x[:n])
