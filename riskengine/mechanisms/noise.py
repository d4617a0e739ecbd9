"""Noisy counts: independent integer noise on every cell and total (differential privacy).

``NoisyCounts("geometric", scale=b)`` adds two-sided geometric noise,
Pr(k) = (1 - q) / (1 + q) q^|k| with q = exp(-1 / b) (the geometric mechanism of
epsilon-differential privacy for counts, epsilon = 1 / b); ``NoisyCounts(
"discrete_gaussian", scale=sigma)`` adds discrete Gaussian noise,
Pr(k) proportional to exp(-k^2 / (2 sigma^2)).  Every interior cell and every total of the
table's structure gets its own draw: the table does not add up.  ``clip=True`` (the
default: no published count is negative) publishes ``max(0, x + noise)`` (then a published
0 says the noise was at most -x: its likelihood is the noise's lower tail, exactly);
``clip=False`` publishes the raw noisy measurements (negative values possible: ask for
them only where the users need unbiased sums of the measurements).  ``describe()`` and the
release (its mechanism, in its JSON and in ``release.data.attrs["mechanism"]``) say which
(``NoisyCounts(distribution=geometric, scale=2.0, clip=True)``).

Likelihood (exact): the product over published cells and totals of Pr(noise = published -
original).  The noise has unbounded support, so every nonnegative table is a candidate
(``n_candidates`` is None, with a note; counting raises).  The routes (the table DP for
2-D tables with every total, the 3-D enumerator, the line route of 1-D tables and of
tables without totals) work on windows around each entry's most likely original: first
narrow ones (all but a relative 1e-10 of the entry's likelihood: a cell tied to its totals
has a posterior that falls faster than its own likelihood), then, entry by entry and side
by side wherever the posterior keeps more than 1e-15 of its mass at a cut edge, the full
window (a relative 1e-17) and doublings of it up to 16 times (a prior far from the
published values needs them); past that the route refuses.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[3, 7], [12, 1]]), dims=("v", "w"))
>>> rel = rk.NoisyCounts("geometric", scale=2.0, clip=True).protect(t, np.random.default_rng(0))
>>> post = rk.posterior(rel, rk.priors.Poisson(5.0))
>>> post.n_candidates is None, post.attrs["route"]
(True, 'dp')
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from .. import _validate as V
from .._budget import budget, check_fits, fmt_number
from ..inference import windows as win
from ..inference._label import totals_of
from ..inference.enumerate_3d import Enumerate3D
from ..inference.gibbs import BlockGibbs
from ..inference.line import Line
from ..inference.linked import LinkedDP
from ..inference.linked_gibbs import LinkedGibbs
from ..inference.table_dp import TableDP
from ..protocol import Example, Mechanism, register
from ..release import Release
from ..table import count_table
from ._examples import counts_3x3

__all__ = ["NoisyCounts"]

DISTRIBUTIONS = ("geometric", "discrete_gaussian")
#: relative likelihood left outside an entry's full window
_TAIL = 1e-17
#: relative likelihood left outside the first, narrower windows (the posterior of a cell
#: tied to its totals decays faster than its own likelihood: most releases stop there)
_START_TAIL = 1e-10
#: posterior mass at a cut window edge below which the windows hold the posterior
_EDGE = 1e-15
#: the widest window, in full windows (``_TAIL``)
_WIDEST = 16
#: log-likelihood drop from one original to the next beyond which the noise is frozen
_FROZEN = 700.0
#: discrete Gaussian: the support table is made at construction up to this many values
#: (its sum is the normaliser); larger ones only to sample from (Poisson summation gives
#: the normaliser)
_TABLE = 2 ** 20
#: arrays of the table's length alive while it is made (values, log-weights, weights,
#: cumulative sums, cdf)
_TABLE_ARRAYS = 5
_INFINITE = ("every nonnegative table has positive likelihood under unbounded noise: "
             "infinitely many candidates")


class _Noise:
    """log pmf, lower tail and sampling of one noise distribution."""

    def __init__(self, distribution: str, scale: float):
        self.distribution, self.scale = distribution, scale
        # log q directly: q = exp(-1 / scale) underflows to 0 for scales below 1/745
        self.log_q = -1.0 / scale
        self.q = math.exp(self.log_q)
        # 1 - q without cancellation (q rounds to 1 for scales above about 1e16)
        self._one_minus_q = -math.expm1(self.log_q)
        #: a noise of +-1 is below e^-700 times as likely as 0 (geometric scale < 1/700,
        #: discrete Gaussian sigma < 0.0267): no float weight holds the likelihood of any
        #: original but the most likely one, and its windows hold that one alone
        step = self.log_q if distribution == "geometric" else -0.5 / scale / scale
        self.frozen = step < -_FROZEN
        self.support = self.cdf = None
        if distribution == "geometric":
            self.log_c = math.log(self._one_minus_q) - math.log1p(self.q)
        elif 2 * self.reach(1e-40) + 1 <= _TABLE:
            self._table()
        else:
            # the sum over all integers of exp(-k^2 / (2 sigma^2)) is sigma sqrt(2 pi) (1 +
            # 2 sum_n exp(-2 pi^2 sigma^2 n^2)) (Poisson summation): past sigma = 6 the
            # correction is below 1e-300
            self.log_c = -(math.log(scale) + 0.5 * math.log(2 * math.pi))
        self.half = self.reach(_TAIL)

    def _table(self, memory=None):
        """The discrete Gaussian's support (to ``reach(1e-40)``) and cdf, for sampling
        (and its normaliser where the table is small); refused, before it is made, when it
        exceeds the memory budget ``memory`` (default: :func:`riskengine._budget.budget`)."""
        K = self.reach(1e-40)
        n = 2.0 * (self.reach_float(1e-40) + 1) + 1
        if n > _TABLE:
            check_fits(f"NoisyCounts scale {fmt_number(self.scale)} (discrete_gaussian)",
                       8.0 * _TABLE_ARRAYS * n,
                       f"a table of the {n:.3g} noise values within {n / 2:.3g} of 0, the "
                       "discrete Gaussian's support to a relative 1e-40, to draw the noise "
                       f"from; {_TABLE_ARRAYS} arrays of 8 bytes a value",
                       budget(memory))
        k = np.arange(-K, K + 1)
        lw = -k.astype(float) ** 2 / (2 * self.scale ** 2)
        log_c = -float(np.log(np.exp(lw - lw.max()).sum()) + lw.max())
        if self.support is None and 2 * K + 1 <= _TABLE:
            self.log_c = log_c            # the sum itself where the table is small
        cdf = np.cumsum(np.exp(lw + log_c))
        self.support, self.cdf = k, cdf / cdf[-1]

    def reach(self, tail: float) -> int:
        """Distance from the mode at which the pmf has fallen below ``tail`` times its
        largest value (and the mass beyond is below ``tail``); 0 for a frozen noise.  At
        most 2**62 (a scale near the largest float: no window of that reach is ever
        made, the memory budget refuses it first)."""
        if self.frozen:
            return 0
        r = self.reach_float(tail)
        return math.ceil(r) + 1 if r < 2.0 ** 62 else 2 ** 62

    def reach_float(self, tail: float) -> float:
        """:meth:`reach` as a float before rounding up (``inf`` past the largest float)."""
        if self.frozen:
            return 0.0
        if self.distribution == "geometric":
            return (math.log(tail) + math.log(self._one_minus_q)) / self.log_q
        return self.scale * math.sqrt(-2.0 * math.log(tail))

    def logpmf(self, k):
        k = np.asarray(k, dtype=float)
        if self.distribution == "geometric":
            return self.log_c + np.abs(k) * self.log_q
        return -k ** 2 / (2 * self.scale ** 2) + self.log_c

    def log_lower_tail(self, k):
        """log Pr(noise <= k)."""
        k = np.asarray(k, dtype=np.int64)
        if self.distribution == "geometric":
            lq = self.log_q
            # k <= 0: q^|k| / (1 + q); k > 0: 1 - q^(k+1) / (1 + q)
            with np.errstate(over="ignore"):
                pos = np.log1p(-np.exp((np.maximum(k, 0) + 1) * lq) / (1 + self.q))
            return np.where(k <= 0, np.abs(k) * lq - math.log1p(self.q), pos)
        # discrete Gaussian: log Pr(|noise| >= m) / 2-sided by symmetry, summed from the far
        # end (log-sum-exp accumulated backwards: exact to the last bit at any depth)
        m_max = int(np.abs(k).max(initial=0)) + 2
        m = np.arange(m_max + self.half + 2)
        upper = np.logaddexp.accumulate(self.logpmf(m)[::-1])[::-1]   # log Pr(noise >= m)
        neg = upper[np.minimum(np.abs(k), m.size - 1)]                # k <= 0: Pr(noise >= -k)
        with np.errstate(divide="ignore"):
            pos = np.log1p(-np.exp(upper[np.minimum(np.maximum(k, 0) + 1, m.size - 1)]))
        return np.where(k <= 0, neg, pos)

    def sample(self, shape, rng):
        if self.distribution == "geometric":
            p = self._one_minus_q
            return rng.geometric(p, size=shape) - rng.geometric(p, size=shape)
        if self.support is None:
            self._table()
        u = rng.random(shape)
        return self.support[np.searchsorted(self.cdf, u, side="right").clip(0,
                                                                          len(self.support) - 1)]


def _blocks(release):
    return [(release.dims, release.published), *release.margins.items()]


def entry_windows(release, reach: dict | None = None) -> win.EntryWindows:
    """Every published cell and total: its most likely original ``c = max(published, 0)``
    and the originals from ``c - down`` (cut at 0) to ``c + up`` with their exact
    log-likelihood.  ``reach``: ``{block: (down, up)}`` (arrays of the block's shape);
    default: the full window (all but a relative ``_TAIL`` of each entry's likelihood)
    on both sides.

    Parameters
    ----------
    release : rk.Release
        A noisy-counts release (its mechanism's ``distribution``, ``scale`` and ``clip``
        are read).
    reach : dict, optional
        ``{block: (down, up)}``, the window's extent below and above ``c`` per entry
        (blocks keyed by the dims they keep); None: the full window.

    Returns
    -------
    riskengine.inference.windows.EntryWindows
        The windows of the interior and of every published total (log-likelihood
        ``-inf`` past an entry's own window), with ``cut``: every end cut (the noise goes
        on past it) but a start at 0.
    """
    mech = release.mechanism
    noise = _Noise(mech.distribution, mech.scale)
    lo, lw, cut = {}, {}, {}
    for keep, val in _blocks(release):
        y = np.asarray(val, dtype=np.int64)
        down, up = (noise.half, noise.half) if reach is None else reach[keep]
        down, up = np.broadcast_to(down, y.shape), np.broadcast_to(up, y.shape)
        c = np.maximum(y, 0)
        first = np.maximum(c - down, 0)
        last = c + up
        W = int((last - first).max(initial=0)) + 1
        x = first[..., None] + np.arange(W)
        inside = x <= last[..., None]
        ll = noise.logpmf(y[..., None] - x)
        zero = y == 0
        if mech.clip and zero.any():       # a published 0 is the noise's lower tail
            ll = np.where(zero[..., None], noise.log_lower_tail(np.where(zero[..., None],
                                                                         -x, 0)), ll)
        lo[keep], lw[keep] = first, np.where(inside, ll, -np.inf)
        # the noise's support is unbounded: every end is cut but a window's start at 0 and
        # a frozen noise's (the likelihood one value away is below e^-700 of its own)
        cut[keep] = (first > 0) & (not noise.frozen), np.full(y.shape, not noise.frozen)
    return win.EntryWindows(release.dims, release.shape, lo, lw, cut=cut)


def window_cost(release, reach: dict | None = None):
    """The memory of :func:`entry_windows` (``reach`` as there), from the published
    values alone (nothing of the windows' size is made): ``(what, bytes, detail)``, the
    ``window_cost`` input that routes check against the budget first.

    Parameters
    ----------
    release : rk.Release
        A noisy-counts release.
    reach : dict, optional
        ``{block: (down, up)}`` as for :func:`entry_windows`; None: the full window.

    Returns
    -------
    tuple
        ``(what, bytes, detail)``: ``what`` names the scale (and the distribution),
        ``bytes`` the peak memory of making the windows, ``detail`` what was counted.
    """
    mech = release.mechanism
    noise = _Noise(mech.distribution, mech.scale)
    sizes, width, top = [], 1.0, 0.0
    for keep, val in _blocks(release):
        y = np.asarray(val, dtype=float)          # floats: a reach near 2**62 overflows no sum
        full = noise.reach_float(_TAIL) + 1
        down, up = (full, full) if reach is None else reach[keep]
        c = np.maximum(y, 0)
        first = np.maximum(c - np.asarray(down, dtype=float), 0)
        last = c + np.asarray(up, dtype=float)
        sizes.append(int(y.size))
        width = max(width, float(np.max(last - first, initial=0)) + 1)
        top = max(top, float(np.max(last, initial=0)))
    need = win.window_bytes(sizes, width)
    if mech.clip and mech.distribution == "discrete_gaussian":
        need += 8.0 * 3 * (top + noise.half)    # the lower tail's sums (log_lower_tail)
    if reach is None:
        side = (f"the noise's reach of {noise.reach_float(_TAIL):.3g} values on each side "
                "of each published value")
    else:
        widest = max(float(np.max(r, initial=0)) for rs in reach.values() for r in rs)
        side = f"the windows widened to {widest:.3g} values on a side"
    detail = (f"a window of up to {width:.3g} original values ({side}) for each of the "
              f"{sum(sizes)} published cells and totals, 8 bytes a value")
    return f"NoisyCounts scale {fmt_number(mech.scale)} ({mech.distribution})", need, detail


def _edges(res, release, ew: win.EntryWindows) -> dict:
    """Per block, the posterior mass (route result ``res``) at the low end of each entry's
    window (0 where the window starts at 0: nothing is cut there) and at its high end: the
    windows the posterior was computed on (``ew``), not its own support, which a prior may
    narrow."""
    out = {}
    totals = totals_of(release, res)
    for keep, lo in ew.lo.items():
        if keep == tuple(release.dims):
            p = (res.start, res.probs)
        elif keep in totals:
            p = totals[keep]()
        else:
            continue
        fin = np.isfinite(ew.lw[keep])
        hi = lo + fin.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
        out[keep] = (np.where(lo > 0, _mass_at(*p, lo), 0.0), _mass_at(*p, hi))
    return out


def _mass_at(start, probs, values) -> np.ndarray:
    """Each entry's posterior probability of ``values`` (0 outside its window)."""
    start, probs = np.asarray(start), np.asarray(probs)
    j = np.asarray(values, dtype=np.int64) - start
    inside = (j >= 0) & (j < probs.shape[-1])
    p = np.take_along_axis(probs, np.where(inside, j, 0)[..., None], axis=-1)[..., 0]
    return np.where(inside, p, 0.0)


class _Widening:
    """Routes over noise windows: run on narrow windows, and widen, entry by entry and
    side by side, every window whose cut edge holds more than ``_EDGE`` of the posterior
    (to the full window first, then doubling it), until none does.  The result attrs say
    how far the widest window reached (``attrs["noise_window"]``: in values on each side of
    the most likely original)."""

    _base: type = None
    uncountable = _INFINITE

    def run(self, plan, *, count=True):
        release = plan.release
        mech = release.mechanism
        noise = _Noise(mech.distribution, mech.scale)
        full, start = noise.half, min(noise.reach(_START_TAIL), noise.half)
        widest = _WIDEST * full
        reach = {k: (np.full(np.shape(v), start), np.full(np.shape(v), start))
                 for k, v in _blocks(release)}

        def wider(r):
            return np.where(r < full, full, np.minimum(2 * r, widest))

        while True:
            check_fits(*window_cost(release, reach), plan.memory)
            ew = entry_windows(release, reach)
            try:
                res = self._base().run(plan.with_inputs(windows=lambda ew=ew: ew), count=False)
            except ValueError as e:
                # no table in the windows has positive weight (the prior's knowledge lies
                # outside them: a known cell far from its published value): widen every
                # window, up to the widest
                if noise.frozen or not str(e).startswith("no original table"):
                    raise
                if all((r >= widest).all() for rs in reach.values() for r in rs):
                    raise ValueError(
                        f"no original table within {_WIDEST} times the noise's width ({widest} "
                        "values) of the published values has a weight that floats hold under "
                        "this prior (every nonnegative table has positive likelihood under "
                        "unbounded noise: the prior's knowledge lies farther from the "
                        "published values, or rules out every table)") from None
                reach = {k: (wider(a), wider(b)) for k, (a, b) in reach.items()}
                continue
            grown, worst = False, (0.0, None)
            for keep, masses in ({} if noise.frozen else _edges(res, release, ew)).items():
                for side, mass in enumerate(masses):
                    r = reach[keep][side]
                    cut = mass > _EDGE
                    if not cut.any():
                        continue
                    if (r[cut] >= widest).any():
                        at = tuple(int(i) for i in np.argwhere(cut & (r >= widest))[0])
                        worst = max(worst, (float(np.max(mass[cut & (r >= widest)])),
                                            (keep, at, "low" if side == 0 else "high")),
                                    key=lambda w: w[0])
                        continue
                    r = r.copy()
                    r[cut] = wider(r[cut])
                    reach[keep] = ((r, reach[keep][1]) if side == 0 else (reach[keep][0], r))
                    grown = True
            if worst[1] is not None:
                keep, at, side = worst[1]
                what = "cell" if keep == tuple(release.dims) else f"total {keep}"
                raise FloatingPointError(
                    f"the posterior keeps {worst[0]:.3g} of its mass at the {side} edge of the "
                    f"window of {what} {at}, {_WIDEST} times the noise's width ({widest} "
                    f"values from the published value): the prior puts its mass far from "
                    f"the published values")
            if not grown:                          # the windows' tables are not all of them
                return dataclasses.replace(res, n_candidates=None).with_notes(
                    n_candidates_note=_INFINITE,
                    noise_window=int(max(max(int(r.max(initial=0)) for r in rs)
                                         for rs in reach.values())))



class _NoiseDP(_Widening, TableDP):
    _base = TableDP


class _Noise3D(_Widening, Enumerate3D):
    _base = Enumerate3D


class _NoiseLine(_Widening, Line):
    _base = Line


class _NoiseGibbs(BlockGibbs):
    """The Monte Carlo route on the full noise windows (all but a relative ``_TAIL`` of each
    entry's likelihood): where the exact routes need more memory than the budget.  A chain
    that reaches a cut window edge (a cell's or a total's) is refused, as the exact routes
    refuse a posterior with mass at a cut edge: the prior puts its mass far from the
    published values.  Every total of a noisy release is a window of many values, so the
    chains move by the line moves alone (single cells, pairs, 2 x 2 patterns; no row-pair
    DP, which the wide windows make costly); the agreement with the exact DP is tested."""

    block_every = 0

    def run(self, plan, *, count=True):
        release = plan.release
        res = super().run(plan, count=count)
        ew = plan.inputs["windows"]
        draws = res.chains.reshape((-1,) + tuple(release.shape))
        for keep, lo in ew.lo.items():
            axes = tuple(1 + release.dims.index(d) for d in release.dims if d not in keep)
            vals = draws.sum(axis=axes) if axes else draws
            fin = np.isfinite(ew.lw[keep])
            hi = lo + fin.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
            cut = ((vals == lo) & (lo > 0)) | (vals == hi)
            if cut.any():
                at = tuple(int(i) for i in np.argwhere(cut.any(axis=0))[0])
                what = "cell" if keep == tuple(release.dims) else f"total {keep}"
                raise FloatingPointError(
                    f"the Monte Carlo chains reached the edge of the noise window of {what} "
                    f"{at} (the values within the noise's full reach of the published value): "
                    "the prior puts its mass far from the published values")
        return dataclasses.replace(res, n_candidates=None).with_notes(
            noise_window=int(_Noise(release.mechanism.distribution,
                                    release.mechanism.scale).half),
            n_candidates_note=_INFINITE)


@register
class NoisyCounts(Mechanism):
    """Independent geometric or discrete Gaussian noise on every cell and total.

    Parameters
    ----------
    distribution : {"geometric", "discrete_gaussian"}
        The noise's law: two-sided geometric or discrete Gaussian.
    scale : float > 0
        ``b`` of the geometric noise (epsilon = 1 / b), or ``sigma`` of the discrete
        Gaussian.
    clip : bool, default True
        Publish ``max(0, x + noise)`` (True: no published count is negative; the
        likelihood of a published 0 is the noise's lower tail) or the raw noisy values
        (False: negative values possible).
    """

    name = "noisy_counts"
    additive = False
    published_signed = True     # raw noisy measurements can be negative
    aliases = ("noise",)
    windows = staticmethod(entry_windows)
    window_cost = staticmethod(window_cost)
    windows_truncated = True
    # every route refuses first a scale whose windows alone exceed the memory budget
    set_routes = (LinkedDP(), LinkedGibbs())
    routes = (_NoiseDP(), _Noise3D(), _NoiseLine(), _NoiseGibbs())

    def __init__(self, distribution: str = "geometric", scale: float = 1.0, clip: bool = True):
        self.distribution = V.choice(distribution, "distribution", DISTRIBUTIONS)
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            raise TypeError(f"scale must be a number, got scale={scale!r}")
        if not (math.isfinite(float(scale)) and float(scale) > 0):
            raise ValueError(f"scale must be a finite number > 0, got scale={scale!r}")
        self.scale = float(scale)
        if not isinstance(clip, bool):
            raise TypeError(f"clip must be True or False, got {clip!r}")
        self.clip = clip

    def _params(self) -> dict:
        return {"distribution": self.distribution, "scale": self.scale, "clip": self.clip}

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts with geometric noise of scale 0.3,
        clipped at 0 (narrow windows: the exact DP answers); ``rng``: geometric noise of
        scale 0.3 to 0.8 or discrete Gaussian of scale 0.5 to 2, clipped or not.

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Draw the distribution, scale and clipping with it; None: the parameters above.

        Returns
        -------
        Example
        """
        table = counts_3x3() if table is None else table
        if rng is None:
            params = {"distribution": "geometric", "scale": 0.3, "clip": True}
        elif rng.random() < 0.5:
            params = {"distribution": "geometric", "scale": float(rng.uniform(0.3, 0.8)),
                      "clip": bool(rng.random() < 0.5)}
        else:
            params = {"distribution": "discrete_gaussian", "scale": float(rng.uniform(0.5, 2)),
                      "clip": bool(rng.random() < 0.5)}
        return Example(cls, table, params)

    def protect(self, table, rng: np.random.Generator):
        """Add independent noise to every cell and every published total of ``table``.

        Parameters
        ----------
        table : rk.Table, rk.TableSet or array_like
            The original table of counts (a hierarchical table or a TableSet: every
            published cell of every level and table, each once; an rk.TableSetRelease).
        rng : numpy.random.Generator
            The only source of randomness (same state, same release).

        Returns
        -------
        rk.Release
            The noisy cells in ``published`` and the noisy totals in ``margins`` (clipped
            at 0 when ``clip``, the default).
        """
        from ..table_set import is_structure, protect_each_cell
        if is_structure(table):         # every cell of every level / table, once
            return protect_each_cell(table, self, rng)
        table = count_table(table, self.describe())
        rng = self._rng(rng)
        noise = _Noise(self.distribution, self.scale)
        # noise past 2**62 saturates NumPy's int64 draws (a geometric draw of p = 1e-300
        # is 2**63 - 1 every time: the two draws cancel, no noise): refused
        far = noise.reach_float(_TAIL) + max(int(table.values.max(initial=0)),
                                             *(int(np.max(v, initial=0))
                                               for v in table.totals().values()), 0)
        if not far < 2.0 ** 62:
            raise ValueError(
                f"NoisyCounts scale {fmt_number(self.scale)} ({self.distribution}) draws "
                f"noise up to {noise.reach_float(_TAIL):.3g} (all but a relative {_TAIL:g} "
                "of its mass), past the 2**62 that counts hold as exact 64-bit integers")

        def noisy(x):
            y = np.asarray(x, dtype=np.int64) + noise.sample(np.shape(x), rng)
            return np.maximum(y, 0) if self.clip else y

        cells = noisy(table.values)
        margins = {k: noisy(v) for k, v in table.totals().items()}
        return Release(published=cells, margins=margins, mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a noisy-counts release publishes the noisy count table")
        if np.isnan(np.asarray(release.published, dtype=float)).any():
            raise ValueError("a noisy-counts release has no suppressed (NaN) cells")
        if self.clip:
            for name, arr in _blocks(release):
                a = np.atleast_1d(np.asarray(arr))
                if (a < 0).any():
                    what = "published" if name == release.dims else f"margin {name}"
                    raise ValueError(f"{what} value {int(a[a < 0][0])} is negative, but "
                                     "clipped noisy counts are never below 0 (clip=True); "
                                     "raw noisy measurements are a release of "
                                     "NoisyCounts(..., clip=False) (the default clips)")
        if release.groups:
            raise ValueError("noisy-counts releases with subtotals are not supported")
