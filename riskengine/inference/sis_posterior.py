"""The importance-sampling posterior: independent weighted tables where the exact routes
do not fit (route ``sis``).

A 2-D count table whose every total is published exactly (margins only, cell
suppression: the interior cells' windows and every row, column and grand total) is drawn
column by column (Chen, Diaconis, Holmes & Liu 2005), and each column from the exact law
of its cells among the compositions its sum and the rows' remaining sums allow, each cell
cut to what its row's later cells can still complete (:func:`kernels.sis.sample_weighted`):
under a flat prior each column uniform among them (the proposal of the count estimate,
:mod:`.sis`), under any other prior each value weighted by the cell's weight (prior x
likelihood) times its row's *look-ahead*, the total weight of the ways the row's later
cells hold what is left, the column sums ignored (:func:`kernels.sis.lookahead`).  Under
a Poisson prior of equal rates the look-ahead makes each column's proposal its exact
conditional law (every weight equal); measured on margins-only tables under Poisson and
negative binomial priors the Kish ESS is 99-100 % of the draws.  A table's importance weight is its
weight over its proposal probability; the posterior of each cell is the weighted share of
the draws at each value (self-normalised importance sampling), and its error is the
delta-method MCSE ``sqrt(sum w_n^2 (f_n - mean)^2) / sum w_n`` (Owen 2013, "Monte Carlo
theory, methods and examples", ch. 9).  The draws are independent: no burn-in, no
chains to mix, every candidate reachable (the proposal gives each table of positive
weight a positive probability; a walk that finds no completion weighs 0).

How far to trust it: the importance weights' Kish effective sample size ``(sum w)^2 /
sum w^2`` and the Pareto shape ``k`` of their largest values (arviz's PSIS, Vehtari et
al. 2024: above 0.7 the estimates are not reliable whatever the number of draws).  The
route draws in batches until the Kish ESS reaches the requested number of draws
(``MonteCarlo.chains x draws``, 4,000 by default) or its draw cap; ``converged`` is 1
when the ESS reached :data:`ESS_MIN` and ``k <= 0.7``.

``auto`` takes it before the Gibbs route when a seeded pilot run of :data:`PILOT` draws
finds the weights even enough (Pareto k <= 0.7) and its estimate -- the draws the
pilot's ESS share says reach the ESS target, at the seconds a draw's work takes -- is
at most :data:`QUICK` seconds or shorter than the Gibbs route's own estimate for its
draws (a Markov chain's ESS is at most its draws, so that comparison favours Gibbs).
The estimates are models, not timings, so the route taken is the same on every run.
Measured side by side in ``benchmarks/sis_posterior.py`` (16 releases, 4 x 4 to 20 x
20): where ``auto`` takes this route its ESS per second is 0.12-99 times the Gibbs
route's (below 1 only on tables both answer in under 2 s; 15-99 on suppressed tables);
where the pilot finds the weights uneven, Gibbs's is 16 times this route's or more.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from kernels import sis as _k
from kernels._jit import threads_for

from .._posterior import weighted_mcse
from .._seeding import release_seed
from ..protocol import Cost, MonteCarloRoute, RouteResult
from .gibbs import ESS_MIN, BlockGibbs, ConvergenceWarning

__all__ = ["PARETO_K_MAX", "ImportanceSampling", "Proposal", "arrays", "arrays_from",
           "look_seconds", "weighted_draws", "with_look"]

#: the largest Pareto shape of the weights' tail at which the estimates are trusted
PARETO_K_MAX = 0.7
#: the largest ratio between the weights of PSIS's tail at which it has no tail to fit
TAIL_RATIO = 1.5
#: draws of the pilot run that predicts the route's ESS (fewer, down to PILOT_MIN, where
#: a draw is costly); the weights' Pareto k from 1,000 draws separates the instances of
#: benchmarks/sis_posterior.py: k 1.3-3.7 where the run would end unreliable, <= 0.3
#: where it reaches its ESS target
PILOT = 1000
PILOT_MIN = 256
#: draws at most, as a multiple of the ESS target (weights too uneven: stop and say so)
MAX_DRAWS_PER_ESS = 50
#: seconds per unit of work (a cell value visited by a column's suffix sums, on the
#: machine's two threads), flat weights and others, measured on 3 x 3 .. 20 x 20 margins-
#: only tables and 10 x 10, 20 x 20 suppressed ones (benchmarks/sis_posterior.py): flat
#: 3.7-4.2e-9 (1.2-1.7e-9 where most walks end early), others 1.1e-10 - 1.2e-9 (the work
#: model counts whole windows where the column sums cut them)
SECONDS_PER_WORK = {True: 4e-9, False: 3e-10}
#: seconds a value of the rows' look-ahead takes to compute (:func:`kernels.sis.lookahead`)
SECONDS_PER_LOOK = 5e-9
#: seconds of the route around its draws (weights, diagnostics)
OVERHEAD = 0.2
#: estimated seconds of the pilot run above which it is not run (the route refuses)
PILOT_SECONDS = 2.0
#: estimated seconds within which ``auto`` takes the route before the Gibbs route
#: whatever the latter's estimate: independent draws, no chain that can fail to mix --
#: as the Gibbs route's chains do on suppressed tables (benchmarks/sis_posterior.py: a
#: 10 x 10 table with 28 cells hidden, R-hat 2e7 after 4 x 1,000 draws), which its
#: estimate cannot see; where the Gibbs route would have been faster, measured, it
#: saves at most 1.4 s
QUICK = 10.0


class Proposal(NamedTuple):
    """Plain arrays of the column proposal (:func:`kernels.sis.sample_weighted`, in its
    argument order)."""

    R: np.ndarray            #: row sums (int64)
    C: np.ndarray            #: column sums (int64)
    clo: np.ndarray          #: each cell's first value (int64, r x m)
    clw: np.ndarray          #: each cell's log-weights from there (r x m x W; -inf)
    flo: np.ndarray          #: each cell's first and last possible value
    fhi: np.ndarray
    rmin: np.ndarray         #: the later columns' least and largest sums, per row
    rmax: np.ndarray
    linear: bool             #: no window has holes (sums in linear space where they fit)
    flat: bool               #: every possible value of a cell weighs 1 (no look-ahead)
    look: np.ndarray | None  #: the rows' look-ahead (:func:`kernels.sis.lookahead`; None:
                             #: not computed yet, :func:`with_look`)
    ahead: bool              #: whether the proposal uses it (weights not flat)


def arrays(ew, look: bool = True) -> Proposal:
    """The proposal's arrays from trimmed (and tilted, unless flat) entry windows ``ew``
    of a 2-D table whose totals are exact (``look=False``: the rows' look-ahead not
    computed yet).  A ValueError when a total is a window of several values."""
    d0, d1 = ew.dims
    for k in ((d0,), (d1,), ()):
        if k not in ew.lw or (np.isfinite(ew.lw[k]).sum(axis=-1) != 1).any():
            raise ValueError(f"the importance-sampling route needs every total published "
                             f"exactly; the total over {k or 'the whole table'} is a window")
    R = (np.ravel(ew.lo[(d0,)]) + np.argmax(np.isfinite(ew.lw[(d0,)]), axis=-1)).astype(
        np.int64)
    C = (np.ravel(ew.lo[(d1,)]) + np.argmax(np.isfinite(ew.lw[(d1,)]), axis=-1)).astype(
        np.int64)
    return arrays_from(R, C, *ew.interior, look=look)


def arrays_from(R, C, clo, clw, ahead: bool | None = None, look: bool = True) -> Proposal:
    """:func:`arrays` from plain arrays: row sums ``R``, column sums ``C``, each cell's
    first value ``clo`` (r, m) and log-weights ``clw`` (r, m, W) of its values from there
    (-inf: impossible); ``ahead``: use the rows' look-ahead (default: where the weights
    are not flat); ``look=False``: not computed yet (:func:`with_look`)."""
    R = np.ascontiguousarray(R, dtype=np.int64)
    C = np.ascontiguousarray(C, dtype=np.int64)
    clo = np.ascontiguousarray(clo, dtype=np.int64)
    clw = np.ascontiguousarray(clw, dtype=float)
    if R.sum() != C.sum():
        raise ValueError(f"the margins disagree: rows sum to {R.sum()}, columns to {C.sum()}")
    fin = np.isfinite(clw)
    if not fin.any(axis=-1).all():
        raise ValueError("a cell has no possible value")
    W = clw.shape[-1]
    first = np.argmax(fin, axis=-1)
    last = W - 1 - np.argmax(fin[..., ::-1], axis=-1)
    flo, fhi = clo + first, clo + last
    cols = np.arange(W)
    inside = (cols >= first[..., None]) & (cols <= last[..., None])
    linear = bool(not (inside & ~fin).any())
    flat = linear and _flat(clw)
    ahead = (not flat) if ahead is None else bool(ahead)
    # the later columns' least and largest sums per row (0 after the last column)
    rmin = np.zeros_like(flo)
    rmax = np.zeros_like(fhi)
    rmin[:, :-1] = np.cumsum(flo[:, ::-1], axis=1)[:, ::-1][:, 1:]
    rmax[:, :-1] = np.cumsum(fhi[:, ::-1], axis=1)[:, ::-1][:, 1:]
    look = (_k.lookahead(R, clo, clw) if look else None) if ahead else np.zeros((1, 1, 1))
    return Proposal(R, C, clo, clw, flo, fhi, rmin, rmax, linear, flat and not ahead, look,
                    ahead)


def look_seconds(arr: Proposal) -> float:
    """Seconds the rows' look-ahead takes (0 where the proposal does not use it)."""
    if not arr.ahead:
        return 0.0
    r, m, W = arr.clw.shape
    return float(r * m * (int(arr.R.max()) + 1) * W) * SECONDS_PER_LOOK


def with_look(arr: Proposal) -> Proposal:
    """``arr`` with its rows' look-ahead computed (where it uses one)."""
    if arr.look is not None:
        return arr
    return arr._replace(look=_k.lookahead(arr.R, arr.clo, arr.clw))


def _flat(lw) -> bool:
    """Whether every possible value of every cell weighs the same (per cell), of cell
    log-weights ``lw`` (cells x values, -inf impossible)."""
    fin = np.isfinite(lw)
    top = np.where(fin, lw, -np.inf).max(axis=-1, keepdims=True)
    return bool(np.all(np.where(fin, lw == top, True)))


def work_per_draw(arr: Proposal) -> float:
    """Cell values one draw visits (the columns' suffix sums): sum over columns of rows x
    column sum, times the rows' mean range where the weights are not flat."""
    width = np.minimum(arr.fhi - arr.flo + 1, arr.C[None, :] + 1).mean(axis=0)
    per = 3.0 if arr.flat else width[:-1]
    return float(np.sum(len(arr.R) * (arr.C[:-1] + 1) * per)) + 1.0


def weighted_draws(arr: Proposal, n: int, rng: np.random.Generator) -> tuple:
    """``n`` tables of the proposal and their log importance weights."""
    u = rng.random((n, len(arr.R), len(arr.C)))
    with threads_for(n * work_per_draw(arr)):
        return _k.sample_weighted(*arr, u)


def kish(logw: np.ndarray) -> float:
    """The Kish effective sample size of log weights (0 when every weight is 0)."""
    fin = np.isfinite(logw)
    if not fin.any():
        return 0.0
    lw = logw[fin]
    return float(math.exp(2 * logsumexp(lw) - logsumexp(2 * lw)))


def pareto_k(logw: np.ndarray) -> float:
    """arviz's Pareto shape estimate of the weights' largest values (PSIS; ``inf`` when
    too few draws weigh anything; ``-inf`` when PSIS's tail -- its largest ``min(n / 5,
    3 sqrt(n))`` weights -- spans at most :data:`TAIL_RATIO`: bounded weights, no heavy
    tail, where the fit of a few distinct values is arbitrary: 1.6 to 20 measured on
    weights within 1 % of each other)."""
    from .. import _arviz
    lw = logw[np.isfinite(logw)]
    if lw.size < 20:
        return math.inf
    tail = np.sort(lw)[-math.ceil(min(0.2 * lw.size, 3 * math.sqrt(lw.size))):]
    if np.ptp(tail) <= math.log(TAIL_RATIO):
        return -math.inf         # no tail to fit (PSIS's own fit is arbitrary there)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # arviz warns when k is large: we report it
        _, k = _arviz.arviz().psislw(lw - lw.max())
    return float(k)


class ImportanceSampling(MonteCarloRoute):
    """Self-normalised importance sampling of 2-D tables with exact totals (column-wise
    proposal, weights prior x likelihood over proposal).  Reads the mechanism's entry
    windows (``plan.inputs["windows"]``).  Of the Monte Carlo settings, the ESS target is
    ``chains x draws``; ``warmup``, ``workers`` and ``scheduler`` do not apply (the draws
    are independent and run on the machine's threads)."""

    name = "sis"
    markov = False
    needs = "entry windows; 2-D count table, every total exact (margins only, suppression)"

    @property
    def target(self) -> int:
        """The Kish ESS the route draws for."""
        return int(self.chains * self.draws)

    def applies(self, plan):
        release = plan.release
        if release.kind != "count" or len(release.dims) != 2 or release.groups:
            return "importance sampling covers 2-D count tables without subtotals"
        d0, d1 = release.dims
        missing = [k for k in ((d0,), (d1,), ()) if k not in release.margins]
        if missing:
            return (f"importance sampling needs every total of the 2-D table published; "
                    f"missing {missing}")
        try:
            ew = plan.inputs["windows"]
        except (KeyError, NotImplementedError):
            return "the mechanism gives no entry windows"
        except ValueError as exc:
            return str(exc)
        for k in ((d0,), (d1,), ()):
            if k not in ew.lw or (np.isfinite(ew.lw[k]).sum(axis=-1) > 1).any():
                return ("importance sampling needs every total published exactly (here a "
                        "total is a window of several values)")
        return None

    def _prepared(self, plan):
        key = ("sis_arrays",)
        if key not in plan.prepared:
            release = plan.release
            ew = plan.inputs["windows"].with_prior(plan.prior, release.coords).trimmed()
            if ew is None:
                raise ValueError(f"no original table is consistent with this "
                                 f"{release.mechanism.name} release under this prior")
            # flat windows (Uniform on margins only or suppression) stay untilted: their
            # sums are then windows of prefix sums
            plan.prepared[key] = arrays(ew if _flat(ew.interior[1]) else ew.tilted(),
                                        look=False)
        return plan.prepared[key]

    def _pilot(self, plan):
        """``(seconds per draw, Kish ESS per draw, Pareto k)``: the work model's seconds,
        and the ESS share and the weights' tail of a pilot run of :data:`PILOT` draws
        (fewer where a draw is costly; seeded by the release and the prior, so the
        estimate and the route ``auto`` takes are the same on every run); the share and
        k are None when even :data:`PILOT_MIN` draws would take longer than
        :data:`PILOT_SECONDS`."""
        key = ("sis_pilot",)
        if key not in plan.prepared:
            arr = self._prepared(plan)
            per = work_per_draw(arr) * SECONDS_PER_WORK[arr.flat]
            n = int(min(PILOT, PILOT_SECONDS / per))
            if n < PILOT_MIN or look_seconds(arr) > PILOT_SECONDS:
                plan.prepared[key] = (per, None, None)
            else:
                arr = plan.prepared[("sis_arrays",)] = with_look(arr)
                rng = np.random.default_rng(release_seed(plan.release, plan.prior, ("pilot",)))
                _, logw = weighted_draws(arr, n, rng)
                plan.prepared[key] = (per, kish(logw) / n, pareto_k(logw))
        return plan.prepared[key]

    def estimate(self, plan, what="posterior"):
        """Memory (the kept draws) and time: the draws to reach the ESS target at the
        pilot run's ESS per draw, at the work model's seconds per draw, plus the rows'
        look-ahead.  ``too_long`` when the weights are too uneven (the pilot's Pareto k
        above :data:`PARETO_K_MAX`, or its ESS share times the draw cap short of the
        target), or when the estimate passes :data:`QUICK` seconds and the Gibbs route's
        own estimate is shorter (then ``auto`` takes Gibbs)."""
        release = plan.release
        cells = int(np.prod(release.shape, dtype=np.int64))
        per, share, k = self._pilot(plan)
        look = look_seconds(self._prepared(plan))
        cap = self.target * MAX_DRAWS_PER_ESS
        if share is None:
            secs = per * self.target + look
            return Cost(8.0 * cells * self.target + 20e6,
                        f"weighted column draws of {release.shape[0]} x {release.shape[1]}",
                        too_long=(f"one draw takes about {per * 1e3:.3g} ms and the rows' "
                                  f"look-ahead about {look:.3g} s (the sums are wide): about "
                                  f"{secs:.3g} s for {self.target} draws"), seconds=secs)
        n = int(min(cap, math.ceil(self.target / max(share, 1e-12))))
        secs = per * n + look + OVERHEAD
        mem = float(8 * cells * n * 2 + 20e6)
        detail = (f"about {n:,} weighted draws for an ESS of {self.target:,} (pilot: "
                  f"{100 * share:.3g}% of draws effective, Pareto k {k:.2f}; "
                  f"{per * 1e3:.3g} ms a draw), about {secs:.2g} s")
        too_long = ""
        if k > PARETO_K_MAX or share * cap < self.target:
            too_long = (f"the importance weights are too uneven: a pilot's Pareto k is {k:.2f} "
                        f"and its ESS {100 * share:.2g}% of its draws ({cap:,} draws would "
                        f"{'not ' if share * cap < self.target else ''}reach an ESS of "
                        f"{self.target:,})")
        elif what != "count" and secs > QUICK:
            gibbs = BlockGibbs(self.chains, self.warmup, self.draws)
            g = gibbs.estimate(plan, what).seconds if gibbs.applies(plan) is None else 0.0
            if g and g < secs:
                too_long = (f"the Gibbs route is estimated faster (about {g:.2g} s for "
                            f"{self.chains} x {self.draws} draws, against {secs:.2g} s for an "
                            f"ESS of {self.target:,} here)")
        return Cost(mem, detail, too_long=too_long, seconds=secs)

    def run(self, plan, *, count=True):
        release, prior, progress = plan.release, plan.prior, plan.progress
        arr = with_look(self._prepared(plan))
        settings = (self.chains, self.draws) + (() if self.seed is None else (self.seed,))
        rng = np.random.default_rng(release_seed(release, prior, ("sis",) + settings))
        cells = int(np.prod(release.shape, dtype=np.int64))
        cap = self.target * MAX_DRAWS_PER_ESS
        cap = int(max(PILOT_MIN, min(cap, plan.memory / (16.0 * cells))))
        tables, logws = [], []
        n, ess, batch = 0, 0.0, max(PILOT_MIN, self.target // 4)
        while n < cap:
            b = min(batch, cap - n)
            t, lw = weighted_draws(arr, b, rng)
            tables.append(t)
            logws.append(lw)
            n += b
            logw = np.concatenate(logws)
            ess = kish(logw)
            if progress is not None:
                progress(min(ess, self.target), self.target)
            if ess >= self.target:
                break
            if ess > 0:      # the next batch: what the ESS per draw so far says is missing
                batch = int(min(max(PILOT_MIN, (self.target - ess) * n / ess * 1.1), 4 * n))
        draws = np.concatenate(tables)
        logw = np.concatenate(logws)
        if not np.isfinite(logw).any():
            raise ValueError(f"importance sampling: none of {n:,} draws completed a table "
                             "(the cells' windows leave the column-wise proposal no room); no "
                             "Monte Carlo answer from this route")
        keep = np.isfinite(logw)
        draws, logw = draws[keep], logw[keep]
        w = np.exp(logw - logw.max())
        w /= w.sum()
        k = pareto_k(logw)
        return _result(release, draws, w, n, ess, k, self.target)


def _result(release, draws, w, n: int, ess: float, k: float, target: int) -> RouteResult:
    """The weighted draws ``draws`` (n, *shape) with normalised weights ``w`` as a Monte
    Carlo result: each cell's weighted share at each value, per-cell MCSE and ESS,
    resampled whole tables."""
    shape = draws.shape[1:]
    lo = draws.min(axis=0)
    W = int((draws.max(axis=0) - lo).max()) + 1
    flat = draws.reshape(len(draws), -1) - lo.reshape(-1)
    ncell = flat.shape[1]
    idx = (np.arange(ncell) * W + flat).ravel()
    probs = np.bincount(idx, weights=np.repeat(w, ncell), minlength=ncell * W) \
        .reshape(shape + (W,))
    diag = diagnostics(draws, w, lo, probs, release.dims, release.coords)
    diag.attrs.update(kish_ess=float(ess), pareto_k=float(k), draws=int(n),
                      completed=len(draws), ess_target=int(target))
    ok = ess >= ESS_MIN and k <= PARETO_K_MAX
    summary = (f"importance sampling: Kish ESS {ess:,.0f} of {n:,} draws "
               f"({len(draws):,} completed a table), Pareto k {k:.2f}; smallest cell ESS "
               f"{diag.attrs['min_ess']:.0f}")
    if not ok:
        warnings.warn(f"the importance-sampling posterior is not reliable by the usual rules "
                      f"(Kish ESS >= {ESS_MIN}, Pareto k <= {PARETO_K_MAX}): {summary}",
                      ConvergenceWarning, stacklevel=3)
    notes = {"n_candidates_note": "not counted by the Monte Carlo route (draws visit "
                                  "candidates, they do not count them)",
             "diagnostics": summary,
             "moves": "independent draws: every candidate has a positive proposal "
                      "probability (no chain to connect)"}
    return RouteResult(start=lo, probs=probs, log_evidence=np.nan, n_candidates=None,
                       approximation=(f"Monte Carlo: importance sampling, {n:,} weighted "
                                      f"draws (Kish ESS {ess:,.0f})"),
                       sampler=_resampler(draws, w), diagnostics=diag,
                       chains=draws[None], weights=w, converged=ok, notes=notes)


def _resampler(draws, w):
    """Whole-table draws: the weighted draws resampled in proportion to their weights
    (with replacement: sampling-importance-resampling)."""
    def draw(n, rng):
        return draws[np.sort(rng.choice(len(draws), size=n, p=w))].copy()
    return draw


def diagnostics(draws, w, lo, probs, dims, coords) -> xr.Dataset:
    """Per cell: the MCSE of its mean and of its probability at the posterior mode, and
    its own ESS (the weighted variance over the squared MCSE: how many independent draws
    would give the same error)."""
    mode = lo + probs.argmax(axis=-1)
    x = draws.astype(float)
    hit = (draws == mode).astype(float)
    mcse = weighted_mcse(x, w)
    mcse_p = weighted_mcse(hit, w)
    wr = w.reshape((-1,) + (1,) * (x.ndim - 1))
    var = (wr * (x - (wr * x).sum(axis=0)) ** 2).sum(axis=0)
    const = draws.min(axis=0) == draws.max(axis=0)
    mcse = np.where(const, 0.0, mcse)               # not the rounding of a weighted mean
    mcse_p = np.where(const, 0.0, mcse_p)
    with np.errstate(divide="ignore", invalid="ignore"):
        ess = np.where(const, float(len(draws)), var / mcse ** 2)
    c = {d: coords[d] for d in dims}
    out = xr.Dataset({"ess": (dims, ess), "mcse_mean": (dims, mcse),
                      "mcse_max_prob": (dims, mcse_p)}, coords=c)
    out.attrs.update(min_ess=float(np.min(ess)), method="importance sampling")
    return out
