"""The fiber route: exact posteriors of 2-D releases whose candidates form a lattice of at
most two free dimensions, at any count (kernels.fiber).

Every total published exactly, every cell published or free on an interval (margins only,
cell suppression with its totals): fixing the published cells leaves the free cells with
their residual row and column sums.  The free cells are the edges of a bipartite graph
(rows, columns); a spanning forest of it leaves ``d`` edges out, and every candidate is
fixed by the values of those ``d`` cells (the parameters ``s``, ``t``): each forest cell is
its node's residual minus its other cells, peeled from the leaves, so every cell is
``base + a s + b t`` with ``a, b`` in {-1, 0, 1}.  A 2 x 2 margins-only table has
``d = 1``, a 2 x 3 one ``d = 2``, four suppressed cells in a rectangle ``d = 1``; this
route takes ``d <= 2``.

Two fundamental cycles of a forest share one path, on which both alternate, so every cell
moves with ``s`` alone, with ``t`` alone, or with ``s + t`` (the sign of ``t`` chosen so;
never with ``s - t`` as well): the weight of a candidate is ``F(s) G(t) H(s + t)``, each
factor the product of the weights of the cells that move with it.  The walk goes over
rows ``s``, each an interval of ``t``:

* **flat** priors (``Uniform``, ``Flat``, bounds: every finite log-weight of a cell
  equal): exact integer counts per ``s``, ``t`` and ``s + t`` in O(rows) (each row adds
  intervals to difference arrays); the exact number of candidates is their sum;
* **log-concave** weights (``Poisson``, ``NegativeBinomial`` with every dispersion
  ``>= 1``, ``Historical`` likewise, any of them with bounds; the windows of margins only
  and suppression are flat): the log-weight is the restriction to the lattice of a concave
  function (the cells' piecewise-linear concave extensions composed with affine maps), so
  each row is unimodal in ``t``: its maximum by bisection, then the interval within ``T``
  nats of the global maximum ``M`` by bisection on both sides; only those points are
  summed.  Dropped mass: each point left out weighs less than ``exp(M - T)`` and there
  are fewer than ``P`` of them (``P``, the number of candidates, is counted exactly from
  the rows' intervals), while the evidence is at least ``exp(M)`` (the mode is kept):
  with ``T = ln P + 16 ln 10 + 1`` the share dropped is below ``e^-1 1e-16``
  (``attrs["fiber_dropped_mass"]`` holds the bound reached).  Each point costs a few
  multiply-adds: the factors are exponentiated once, tilted by ``exp(theta s)``,
  ``exp(theta t)``, ``exp(-theta (s + t))`` (which leaves every product unchanged) with
  ``theta`` the slope at the mode, so that each factor peaks there and no point within
  ``T`` of the maximum underflows; where floats cannot hold them the points are summed in
  log space;
* log-concave weights with a factor in ``s + t`` and more than :data:`FFT_POINTS` points
  within reach (a negative binomial prior on a 2 x 3 table at 1e5: 2.9e10 points, all of
  them near the mode): every point is summed at once by three FFT convolutions of the
  tilted factors, ``per_u = H (F * G)``, ``per_s = F (H (x) G)``, ``per_t = G (H (x) F)``,
  in O(L log L) for factors of length L; the values outside the fiber's exact support
  (from the rows' intervals) are set to 0, and ``attrs["fiber_fft_rounding_bound"]``
  holds a bound on the FFTs' rounding relative to the evidence (below 1e-10, or the points
  are summed one by one); measured against the point sums within 1e-17 per value;
* any other weights: every candidate is summed; the estimate says how long.

Cost: O(rows x log(window)) to plan, plus the points summed (flat: none).  Totals are
published exactly (their posteriors are point masses).  Draws: exact, a row by its
weight, then a point by the row's cumulative weights.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass

import numpy as np

from kernels import fiber as _k
from kernels.table_dp import parallel_region

from ..protocol import Cost, Route, RouteResult
from ._fiber_lattice import FiberPlan, _flat_cells, _NoCandidate, _Refusal, build, log_concave
from ._plan import prepared


def _par(kernel, *args):
    """A parallel kernel's call, one thread at a time where numba's threading layer is not
    threadsafe (:func:`kernels.table_dp.parallel_region`)."""
    with parallel_region():
        return kernel(*args)

__all__ = ["Fiber", "FiberPlan", "Walk", "build", "log_concave", "posterior_arrays",
           "sampler", "table_windows", "walk"]

#: points summed per second by :func:`kernels.fiber.accumulate` on one core, and planning
#: steps (a bisection step of a row) per second (measured with benchmarks/large_counts.py
#: on the 2-core reference machine: 1.6e10 points in 27 s on both cores, rounded down)
POINTS_PER_SECOND = 3e8
STEPS_PER_SECOND = 3e7
#: points per second summed in log space (:func:`kernels.fiber.accumulate_log`)
LOG_POINTS_PER_SECOND = 4e7

#: the log-concave walk keeps the points within ``ln P + DROP_NATS`` of the maximum
DROP_NATS = 16 * math.log(10) + 1.0

#: points per kernel call at most: progress is reported between calls
CHUNK_POINTS = 5e7

#: a scaled product below this may have lost precision to underflow
_TINY = 1e-290

#: log-concave fibers with more points than this to sum (and a factor in ``s + t``) are
#: summed by FFT convolutions instead of point by point (:func:`_sum_fft`)
FFT_POINTS = 2e7
#: the FFT sums are used when the bound on their rounding (relative to the evidence) is
#: below this; otherwise the points are summed one by one
ROUNDING_LIMIT = 1e-10
#: the FFT's sums per second (a length-L convolution costs about L log2 L of them)
FFT_OPS_PER_SECOND = 3e8


# --- the walk -------------------------------------------------------------------------------
@dataclass
class Walk:
    """Which points of the fiber a run sums (:func:`walk`): per row ``k`` (``s = smin +
    k``) the interval ``[tl, th]`` of ``t`` with positive weight and the interval ``[kl,
    kh]`` summed; ``top``: the largest log-weight (``M``; 0 for flat weights, NaN not
    known), ``cut``: the log-weight below which points are left out; ``n``: the exact
    number of candidates; ``kept``: the points summed; ``m``, ``h``: each row's mode and
    its log-weight (log-concave weights)."""

    tl: np.ndarray
    th: np.ndarray
    kl: np.ndarray
    kh: np.ndarray
    top: float
    cut: float
    n: int
    kept: int
    m: np.ndarray | None = None
    h: np.ndarray | None = None


def _rows(fp: FiberPlan):
    """Per row ``s``: the interval ``[tl, th]`` of ``t`` where every factor is finite."""
    S = fp.n_rows
    s = fp.smin + np.arange(S, dtype=np.int64)
    tl = np.full(S, fp.tmin, np.int64)
    th = np.full(S, fp.tmin + fp.LG.shape[0] - 1, np.int64)
    if fp.hs:              # u = s + t within LH's range
        tl = np.maximum(tl, fp.umin - s)
        th = np.minimum(th, fp.umin + fp.LH.shape[0] - 1 - s)
    dead = ~np.isfinite(fp.LF)
    tl[dead], th[dead] = 1, 0
    return tl, th


def walk(fp: FiberPlan) -> Walk:
    """The rows of the fiber, the exact number of candidates, and (log-concave weights) the
    points within ``ln P + DROP_NATS`` of the maximum, found by bisection (every point for
    other weights).  O(rows x log(window)).

    Parameters
    ----------
    fp : FiberPlan

    Returns
    -------
    Walk
    """
    tl, th = _rows(fp)
    lens = np.maximum(th - tl + 1, 0)
    n = int(lens.sum(dtype=np.int64))
    if fp.kind == "flat" or n == 0:
        return Walk(tl, th, tl, th, 0.0, -np.inf, n, n)
    if fp.kind == "concave":
        m, h = _par(_k.row_modes, *fp.args(), tl, th)
        top = float(h.max())
        cut = top - (math.log(n) + DROP_NATS)
        kl, kh = _par(_k.superlevel, *fp.args(), tl, th, m, h, cut)
        kept = int(np.maximum(kh - kl + 1, 0).sum(dtype=np.int64))
        return Walk(tl, th, kl, kh, top, cut, n, kept, m, h)
    return Walk(tl, th, tl, th, np.nan, -np.inf, n, n)


def _cores() -> int:
    try:
        return max(1, min(len(os.sched_getaffinity(0)), os.cpu_count() or 1))
    except AttributeError:             # pragma: no cover - not Linux
        return os.cpu_count() or 1


def seconds(fp: FiberPlan, wk: Walk) -> float:
    """Estimated wall time of :func:`posterior_arrays` after :func:`walk` (which the route
    runs while it decides whether it applies), on the machine's cores.

    Parameters
    ----------
    fp : FiberPlan
    wk : Walk

    Returns
    -------
    float
    """
    if fp.kind == "flat":
        return fp.n_rows / STEPS_PER_SECOND
    if use_fft(fp, wk):
        L = _fft_length(fp)
        return 9 * L * math.log2(L) / FFT_OPS_PER_SECOND + fp.n_rows / STEPS_PER_SECOND
    if fp.kind == "any":        # the scaled floats may not hold them: log space
        return wk.kept / LOG_POINTS_PER_SECOND / min(2, _cores()) + fp.n_rows / STEPS_PER_SECOND
    return wk.kept / POINTS_PER_SECOND / min(2, _cores()) + fp.n_rows / STEPS_PER_SECOND


def _chunks(lens, parts: int) -> np.ndarray:
    """Row boundaries of at most ``parts`` pieces of about equal points."""
    cum = np.concatenate([[0], np.cumsum(lens, dtype=np.float64)])
    if cum[-1] == 0 or parts <= 1:
        return np.array([0, len(lens)], np.int64)
    cuts = np.searchsorted(cum, np.linspace(0, cum[-1], parts + 1)[1:-1], side="right") - 1
    return np.unique(np.concatenate([[0], np.clip(cuts, 0, len(lens)), [len(lens)]])
                     ).astype(np.int64)


def _slopes(L, k):
    """``(up, down)``: the increments of ``L`` after and before index ``k`` (``-inf`` /
    ``inf`` at the ends of its support)."""
    up = L[k + 1] - L[k] if k + 1 < L.size and np.isfinite(L[k + 1]) else -np.inf
    down = L[k] - L[k - 1] if k > 0 and np.isfinite(L[k - 1]) else np.inf
    return up, down


def _theta(fp: FiberPlan, wk: Walk) -> float:
    """The tilt that makes each factor peak at the mode ``(s*, t*)``: ``F + theta s`` at
    ``s*`` needs ``theta`` in ``[-down_F, -up_F]``, ``G + theta t`` at ``t*`` in ``[-down_G,
    -up_G]``, ``H - theta u`` at ``u* = s* + t*`` in ``[up_H, down_H]`` (the mode's
    optimality makes them meet, up to the lattice); the middle of their intersection, or
    of ``F``'s interval when they miss by a step."""
    if not fp.hs or wk.h is None:
        return 0.0
    k = int(np.argmax(wk.h))
    t = int(wk.m[k]) - fp.tmin
    u = fp.smin + k + int(wk.m[k]) - fp.umin
    uF, dF = _slopes(fp.LF, k)
    uG, dG = _slopes(fp.LG, t)
    uH, dH = _slopes(fp.LH, u)
    lo_, hi_ = max(-dF, -dG, uH), min(-uF, -uG, dH)
    if not lo_ <= hi_:
        lo_, hi_ = -dF, -uF
    if np.isfinite(lo_) and np.isfinite(hi_):
        return 0.5 * (lo_ + hi_)
    return float(lo_ if np.isfinite(lo_) else hi_ if np.isfinite(hi_) else 0.0)


def _factors(fp: FiberPlan, wk: Walk):
    """``(E, scale)``: the factors ``F``, ``G``, ``H`` tilted to peak at the mode
    (:func:`_theta`), each exponentiated after subtracting its maximum; ``scale``: the sum
    of those maxima (the log of the scale of every product)."""
    theta = _theta(fp, wk)
    sv = fp.smin + np.arange(fp.n_rows)
    tv = fp.tmin + np.arange(fp.LG.size)
    uv = fp.umin + np.arange(fp.LH.size)
    tilt = [fp.LF + theta * sv, fp.LG + theta * tv, fp.LH - (theta * uv if fp.hs else 0.0)]
    tops = [float(L.max()) for L in tilt]
    with np.errstate(under="ignore"):
        E = [np.exp(L - t) for L, t in zip(tilt, tops)]
    return E, sum(tops)


def use_fft(fp: FiberPlan, wk: Walk) -> bool:
    """Whether :func:`posterior_arrays` sums by FFT convolutions (:func:`_sum_fft`):
    log-concave weights with a factor in ``s + t`` and more than :data:`FFT_POINTS` points
    to sum.

    Parameters
    ----------
    fp : FiberPlan
    wk : Walk

    Returns
    -------
    bool
    """
    return fp.kind == "concave" and bool(fp.hs) and wk.kept > FFT_POINTS


def _fft_length(fp: FiberPlan) -> int:
    return int(fp.n_rows + fp.LG.size + fp.LH.size)


def _sum_fft(fp: FiberPlan, wk: Walk, progress):
    """``(per_s, per_t, per_u, log scale, bound)`` over every point of the fiber by three
    FFT convolutions of the tilted factors: with ``u = s + t``, the weight ``F(s) G(t)
    H(u)`` sums to ``per_u = H (F * G)``, ``per_s = F (H (x) G)``, ``per_t = G (H (x) F)``
    (``*`` a convolution, ``(x)`` a correlation).  Nothing is left out but products below
    the floats (each factor peaks at 1 at the mode); ``bound`` is a bound on the rounding
    error of the FFTs relative to the evidence: each entry of a length-L convolution of
    ``a`` and ``b`` is within ``5 log2(L) eps sqrt(L) |a|_2 |b|_2`` (a generous constant
    over the standard bound of the Cooley-Tukey FFT, Higham 2002, section 24.1), summed
    against the third factor's ``|.|_1``."""
    from scipy.signal import fftconvolve

    E, scale = _factors(fp, wk)
    F, G, H = E
    off = fp.smin + fp.tmin - fp.umin          # H index of (i, j): i + j + off
    LF, LG, LH = F.size, G.size, H.size

    def window(x, first, n):
        """``x[first : first + n]``, zero outside ``x``."""
        out = np.zeros(n)
        a, b = max(first, 0), min(first + n, x.size)
        if a < b:
            out[a - first:b - first] = x[a:b]
        return out

    conv_fg = np.maximum(fftconvolve(F, G), 0.0)            # index i + j
    corr_g = np.maximum(fftconvolve(H, G[::-1]), 0.0)       # index m + LG - 1: sum_j G H[m+j]
    corr_f = np.maximum(fftconvolve(H, F[::-1]), 0.0)       # index m + LF - 1: sum_i F H[m+i]
    # the exact support (rows and columns of the fiber that hold a point): the FFT's
    # rounding must not give an impossible value a probability
    cs, ct, cu = _k.flat_counts(wk.tl, wk.th, fp.smin, fp.tmin, fp.umin, fp.hs, LG, LH)
    pu = np.where(cu > 0, H * window(conv_fg, -off, LH), 0.0)
    ps = np.where(cs > 0, F * window(corr_g, off + LG - 1, LF), 0.0)
    pt = np.where(ct > 0, G * window(corr_f, off + LF - 1, LG), 0.0)
    if progress is not None:
        progress(wk.kept, wk.kept)
    z = float(ps.sum())
    eps = np.finfo(float).eps
    n2 = [float(np.linalg.norm(x)) for x in E]
    n1 = [float(x.sum()) for x in E]

    def err(L, a, b):
        return 5.0 * math.log2(max(L, 2)) * eps * math.sqrt(L) * a * b

    bound = max(n1[0] * err(LH + LG, n2[2], n2[1]), n1[1] * err(LH + LF, n2[2], n2[0]),
                n1[2] * err(LF + LG, n2[0], n2[1])) / z if z > 0 else math.inf
    return ps, pt, pu, scale, bound


def _sum(fp: FiberPlan, wk: Walk, progress):
    """``(per_s, per_t, per_u, log scale)`` over the points summed, in chunks."""
    lens = np.maximum(wk.kh - wk.kl + 1, 0)
    calls = max(1, min(64, int(wk.kept // CHUNK_POINTS)))
    outer = _chunks(lens, calls)
    E, scale = _factors(fp, wk)
    per = [np.zeros(fp.n_rows), np.zeros(fp.LG.size), np.zeros(fp.LH.size)]
    done = 0
    # per-chunk t and u sums: at most ~64 MB, at most 32 chunks per call
    inner = max(1, min(32, int(8e6 // (fp.LG.size + fp.LH.size))))
    for a, b in itertools.pairwise(outer):
        bounds = _chunks(lens[a:b], inner)
        ps, pt, pu = _par(_k.accumulate, E[0][a:], E[1], E[2], fp.smin + a, fp.tmin, fp.umin,
                                   fp.hs, wk.kl[a:b], wk.kh[a:b], bounds)
        per[0][a:b] = ps
        per[1] += pt
        per[2] += pu
        done += int(lens[a:b].sum())
        if progress is not None:
            progress(done, wk.kept)
    z = float(per[0].sum())
    # a product below _TINY may have lost precision; together at most kept x _TINY
    if not (z > 0 and np.isfinite(z)) or wk.kept * _TINY > 1e-17 * z:
        return _sum_log(fp, wk, progress)
    return per[0], per[1], per[2], scale


def _sum_log(fp: FiberPlan, wk: Walk, progress):
    """:func:`_sum` in log space (one ``exp`` per point): weights too spread for the
    scaled floats."""
    top = wk.top
    if not np.isfinite(top):
        top = float(_par(_k.row_max_full, *fp.args(), wk.tl, wk.th).max())
    lens = np.maximum(wk.kh - wk.kl + 1, 0)
    bounds = _chunks(lens, max(1, min(32, int(8e6 // (fp.LG.size + fp.LH.size)))))
    ps, pt, pu = _par(_k.accumulate_log, *fp.args(), wk.kl, wk.kh, top, bounds)
    if progress is not None:
        progress(wk.kept, wk.kept)
    return ps, pt, pu, top


def posterior_arrays(fp: FiberPlan, wk: Walk, progress=None) -> dict:
    """The posteriors of ``s``, ``t`` and ``u``, the log evidence and the row weights.

    Parameters
    ----------
    fp : FiberPlan
    wk : Walk
        The walk of ``fp`` (:func:`walk`).
    progress : callable(done, total), optional
        Called between kernel calls (points summed so far, of the points summed in all).

    Returns
    -------
    dict
        ``per``: the posteriors of ``s``, ``t``, ``u`` over ``smin ..``, ``tmin ..``,
        ``umin ..``; ``rows``: each row's weight (for draws); ``log_z``; ``dropped``: the
        bound on the posterior mass left out.
    """
    if wk.n == 0:
        raise _NoCandidate("no table fits the windows")
    if fp.kind == "flat":
        ps, pt, pu = _k.flat_counts(wk.tl, wk.th, fp.smin, fp.tmin, fp.umin, fp.hs,
                                    fp.LG.size, fp.LH.size)
        if progress is not None:
            progress(1, 1)
        return {"per": [x / float(wk.n) for x in (ps, pt, pu)], "rows": ps.astype(float),
                "per_row": ps, "log_z": fp.const + math.log(wk.n), "dropped": 0.0}
    rounding = None
    if use_fft(fp, wk):
        ps, pt, pu, scale, rounding = _sum_fft(fp, wk, progress)
        if not rounding < ROUNDING_LIMIT:    # the bound too loose: sum point by point
            rounding = None
    if rounding is None:
        ps, pt, pu, scale = _sum(fp, wk, progress)
    z = float(ps.sum())
    if not z > 0 or not np.isfinite(z):        # pragma: no cover - the mode is summed
        raise FloatingPointError("internal error: the fiber's weights left the floats")
    log_z = scale + math.log(z)
    dropped = 0.0
    rows = ps
    if rounding is not None:   # every point summed but those below the floats
        dropped = wk.n * _TINY * math.exp(scale - log_z)
        rows = np.where(wk.kh >= wk.kl, ps, 0.0)    # draws walk the rows' kept points
    elif wk.kept < wk.n:    # left out: fewer than n points below exp(cut), z >= exp(top)
        dropped = (wk.n - wk.kept) * math.exp(wk.cut - log_z)
    return {"per": [ps / z, pt / z, pu / z], "rows": rows, "log_z": fp.const + log_z,
            "dropped": dropped, "rounding": rounding}


def table_windows(fp: FiberPlan, out: dict):
    """``(start, probs)`` of every cell of the table: published cells (and free cells that
    cannot move) a point mass, the others their posterior trimmed to the values of
    positive probability.

    Parameters
    ----------
    fp : FiberPlan
    out : dict
        :func:`posterior_arrays`.

    Returns
    -------
    start : numpy.ndarray
        int64 (r, c): the first value of each cell's window.
    probs : numpy.ndarray
        float (r, c, W): the probabilities from there.
    """
    r, c = fp.shape
    firsts = (fp.smin, fp.tmin, fp.umin)
    segs = {}
    for e, (i, j) in enumerate(fp.cells):
        g = int(fp.group[e])
        if g < 0:
            segs[(i, j)] = (int(fp.base[e]), np.ones(1))
            continue
        p = out["per"][g]
        nz = np.flatnonzero(p > 0)
        a, b = (int(nz[0]), int(nz[-1])) if nz.size else (0, 0)
        seg = p[a:b + 1]
        first = int(fp.base[e]) + int(fp.mult[e]) * (firsts[g] + a)
        if fp.mult[e] < 0:
            seg = seg[::-1]
            first = int(fp.base[e]) - (firsts[g] + b)
        segs[(i, j)] = (first, seg)
    W = max([len(p) for _, p in segs.values()], default=1)
    start = fp.fixed.copy()
    probs = np.zeros((r, c, W))
    probs[..., 0] = 1.0
    for (i, j), (first, seg) in segs.items():
        start[i, j] = first
        probs[i, j] = 0.0
        probs[i, j, :seg.size] = seg
    return start, probs


def sampler(fp: FiberPlan, wk: Walk, out: dict):
    """``draw(n, rng) -> int64 (n, r, c)``: exact draws of whole tables (a row by its
    weight, then a point by the row's cumulative weights).

    Parameters
    ----------
    fp : FiberPlan
    wk : Walk
    out : dict
        :func:`posterior_arrays`.

    Returns
    -------
    callable
    """
    rows = out["rows"]
    cum = np.cumsum(rows)
    flat = fp.kind == "flat"
    scale: list = []

    def top() -> float:
        """The rows' largest log-weight (their scale in draws), found once."""
        if not scale:
            scale.append(float(wk.top) if np.isfinite(wk.top) else
                         float(_par(_k.row_max_full, *fp.args(), wk.kl, wk.kh).max()))
        return scale[0]

    def draw(n, rng):
        n = int(n)
        if flat:       # every point equally likely: an index among the exact count
            cnt = out["per_row"]
            cumc = np.cumsum(cnt)
            idx = rng.integers(0, wk.n, size=n)
            k = np.searchsorted(cumc, idx, side="right")
            ts = wk.tl[k] + (idx - (cumc[k] - cnt[k]))
        else:
            k = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"),
                           len(rows) - 1)
            order = np.argsort(k, kind="stable")
            ts = np.empty(n, np.int64)
            ts[order] = _k.sample_points(*fp.args(), wk.kl, wk.kh, top(),
                                         k[order].astype(np.int64), rng.random(n))
        s = fp.smin + k
        vals = (s, ts, fp.hs * (s + ts))
        tables = np.broadcast_to(fp.fixed, (n,) + fp.shape).copy()
        for e, (i, j) in enumerate(fp.cells):
            g = int(fp.group[e])
            tables[:, i, j] = fp.base[e] + (fp.mult[e] * vals[g] if g >= 0 else 0)
        return tables

    return draw


class Fiber(Route):
    """Exact posterior of a 2-D release whose candidates have at most two free dimensions
    (every total exact: margins only, cell suppression), at any count: a walk over the
    rows of the candidates' lattice (:mod:`kernels.fiber`).

    Reads the mechanism's entry windows (``plan.inputs["windows"]``, without the prior).
    """

    name = "fiber"
    needs = ("entry windows; 2-D count table, every total exact, candidates of at most two "
             "free dimensions (2 x 2, 2 x 3, suppressed rectangles)")

    @staticmethod
    def _plan(plan):
        """``(FiberPlan, Walk)``, or the reason the route does not apply (a str), or None
        when no table is a candidate; prepared once per call."""
        return prepared(plan, "fiber", lambda: _prepare(plan))

    def applies(self, plan):
        release = plan.release
        if release.kind != "count":
            return ("the exact routes walk integer tables and need a count release; this "
                    "release holds magnitudes (rk.audit gives their intervals)")
        if len(release.dims) != 2:
            return f"the fiber route covers 2-D tables; this release has dims {release.dims}"
        if release.groups:
            return "the fiber route does not use published subtotals"
        d0, d1 = release.dims
        missing = [k for k in ((d0,), (d1,), ()) if k not in release.margins]
        if missing:
            return f"the fiber route needs every total published; missing {missing}"
        got = self._plan(plan)
        return got if isinstance(got, str) else None

    def estimate(self, plan, what="posterior"):
        got = self._plan(plan)
        if got is None:
            return Cost(0.0, "no candidate")
        fp, wk = got
        if what == "count":
            return Cost(float(16 * fp.n_rows + 1e6), f"{fp.n_rows} rows of the fiber, "
                        "counted", seconds=fp.n_rows / STEPS_PER_SECOND)
        T, U = fp.LG.size, fp.LH.size
        mem = 8.0 * (8 * fp.n_rows + 40 * (T + U)) + 8e6 + (64e6 if fp.kind != "flat" else 0)
        secs = seconds(fp, wk)
        how = {"flat": "counted row by row",
               "concave": (f"all {wk.n:.3g} candidates summed by FFT convolutions"
                           if use_fft(fp, wk) else
                           f"{wk.kept:.3g} of {wk.n:.3g} candidates summed"),
               "any": f"{wk.n:.3g} candidates summed"}[fp.kind]
        return Cost(mem, f"{fp.n_rows} rows of a {fp.d}-dimensional fiber, {how}, "
                         f"about {secs:.2g} s", seconds=secs)

    def run(self, plan, *, count=True):
        release = plan.release
        got = self._plan(plan)
        if got is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        fp, wk = got
        out = posterior_arrays(fp, wk, plan.progress)
        start, probs = table_windows(fp, out)
        totals = {k: (np.asarray(v), np.ones(np.shape(v) + (1,)))
                  for k, v in fp.totals.items()}
        notes = {"fiber_dimensions": int(fp.d), "fiber_weights": fp.kind}
        if fp.kind == "concave":
            notes["fiber_dropped_mass"] = float(out["dropped"])
            notes["fiber_points_summed"] = int(wk.n if out["rounding"] is not None
                                               else wk.kept)
            if out["rounding"] is not None:
                notes["fiber_fft_rounding_bound"] = float(out["rounding"])
        return RouteResult(start=start, probs=probs, log_evidence=float(out["log_z"]),
                           n_candidates=int(wk.n) if count else None, totals=totals,
                           sampler=sampler(fp, wk, out), notes=notes)

    def count(self, plan):
        got = self._plan(plan)
        return 0 if got is None else int(got[1].n)


def _prepare(plan):
    """``(FiberPlan, Walk)``; a str: why the route does not apply; None: no candidate."""
    windows = plan.inputs["windows"]
    ew = windows.with_prior(plan.prior, plan.release.coords).trimmed()
    if ew is None:
        return None
    try:
        fp = build(ew, concave=log_concave(plan.prior) and _flat_cells(windows))
    except _Refusal as e:
        return str(e)
    except _NoCandidate:
        return None
    span = float(fp.n_rows) * float(fp.LG.size)
    if span >= 2.0 ** 62:
        return (f"the fiber route counts in 64-bit integers; this fiber's box holds "
                f"{span:.3g} points")
    if fp.n_rows + fp.LG.size + fp.LH.size > 3e8:
        return (f"the fiber's rows ({fp.n_rows:.3g}) and columns ({fp.LG.size:.3g}) are "
                "more than the walk stores")
    wk = walk(fp)
    if wk.n == 0:
        return None
    return fp, wk
