"""Noisy counts: independent integer noise on every cell and total (differential privacy).

``NoisyCounts("geometric", scale=b)`` adds two-sided geometric noise,
Pr(k) = (1 - q) / (1 + q) q^|k| with q = exp(-1 / b) (the geometric mechanism of
epsilon-differential privacy for counts, epsilon = 1 / b); ``NoisyCounts(
"discrete_gaussian", scale=sigma)`` adds discrete Gaussian noise,
Pr(k) proportional to exp(-k^2 / (2 sigma^2)).  Every interior cell and every total of the
table's structure gets its own draw: the table does not add up.  ``clip=True`` publishes
``max(0, x + noise)`` (then a published 0 says the noise was at most -x: its likelihood is
the noise's lower tail); ``clip=False`` publishes the raw noisy measurements (negative
values possible).

Likelihood (exact): the product over published cells and totals of Pr(noise = published -
original).  The noise has unbounded support, so every nonnegative table is a candidate
(``n_candidates`` is None, with a note); the routes work on windows that hold all but a
relative 1e-17 of each entry's likelihood, and are widened until the posterior's mass at
every window's edge is negligible (a prior far from the published values needs wider
windows).

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

import math
import numbers

import numpy as np

from .. import _validate as V
from ..inference import windows as win
from ..inference.enumerate_3d import Enumerate3D
from ..inference.table_dp import TableDP
from ..release import Release
from ..table import count_table
from ._base import Mechanism, register

__all__ = ["NoisyCounts"]

DISTRIBUTIONS = ("geometric", "discrete_gaussian")
#: relative likelihood left outside an entry's window
_TAIL = 1e-17
_INFINITE = ("every nonnegative table has positive likelihood under unbounded noise: "
             "infinitely many candidates")


class _Noise:
    """log pmf, lower tail and sampling of one noise distribution."""

    def __init__(self, distribution: str, scale: float):
        self.distribution, self.scale = distribution, scale
        if distribution == "geometric":
            self.q = math.exp(-1.0 / scale)
            self.half = math.ceil(math.log(_TAIL * (1 - self.q)) / math.log(self.q)) + 1
        else:
            self.half = math.ceil(scale * math.sqrt(-2.0 * math.log(_TAIL))) + 1
            k = np.arange(-self.half - 10 * int(scale) - 10, self.half + 10 * int(scale) + 11)
            self.support = k
            lw = -k.astype(float) ** 2 / (2 * scale ** 2)
            self.log_norm = float(np.log(np.exp(lw - lw.max()).sum()) + lw.max())
            cdf = np.cumsum(np.exp(lw - self.log_norm))
            self.cdf = cdf / cdf[-1]

    def logpmf(self, k):
        k = np.asarray(k, dtype=float)
        if self.distribution == "geometric":
            return math.log((1 - self.q) / (1 + self.q)) + np.abs(k) * math.log(self.q)
        return -k ** 2 / (2 * self.scale ** 2) - self.log_norm

    def log_lower_tail(self, k):
        """log Pr(noise <= k)."""
        k = np.asarray(k, dtype=float)
        if self.distribution == "geometric":
            lq = math.log(self.q)
            # k <= 0: q^|k| / (1 + q); k > 0: 1 - q^(k+1) / (1 + q)
            with np.errstate(over="ignore"):
                pos = np.log1p(-np.exp((np.maximum(k, 0) + 1) * lq) / (1 + self.q))
            return np.where(k <= 0, np.abs(k) * lq - math.log1p(self.q), pos)
        # discrete Gaussian: sum of the pmf up to k (log-sum-exp over the support)
        out = np.empty(k.shape)
        for idx, kk in np.ndenumerate(k):
            j = np.arange(min(kk, -self.half) - 10, kk + 1)
            lp = self.logpmf(j)
            m = lp.max()
            out[idx] = m + math.log(np.exp(lp - m).sum())
        return out

    def sample(self, shape, rng):
        if self.distribution == "geometric":
            p = 1 - self.q
            return rng.geometric(p, size=shape) - rng.geometric(p, size=shape)
        u = rng.random(shape)
        return self.support[np.searchsorted(self.cdf, u, side="right").clip(0,
                                                                          len(self.support) - 1)]


def entry_windows(release, widen: int = 1) -> win.EntryWindows:
    """Every published cell and total: the originals whose likelihood is within a relative
    ``_TAIL`` of the largest (times ``widen``), with the exact log-likelihood."""
    mech = release.mechanism
    noise = _Noise(mech.distribution, mech.scale)
    K = noise.half * widen
    lo, lw = {}, {}
    for keep, val in [(release.dims, release.published), *release.margins.items()]:
        y = np.asarray(val, dtype=np.int64)
        first = np.maximum(y - K, 0)
        x = first[..., None] + np.arange(2 * K + 1 + (K if mech.clip else 0))
        ll = noise.logpmf(y[..., None] - x)
        if mech.clip:                      # a published 0 is the lower tail
            ll = np.where(y[..., None] == 0, noise.log_lower_tail(-x), ll)
        lo[keep], lw[keep] = first, ll
    return win.EntryWindows(release.dims, release.shape, lo, lw)


def _edge_mass(post, ew: win.EntryWindows) -> float:
    """Largest posterior mass at a cut end of a noise window (its last value, and its
    first when that is above 0): the windows the posterior was computed on
    (``ew``), not the posterior's own support, which a prior may narrow."""
    edge = 0.0
    for keep, lo in ew.lo.items():
        p = post if keep == tuple(post.dims) else post.totals.get(keep)
        if p is None:
            continue
        hi = lo + ew.lw[keep].shape[-1] - 1
        edge = max(edge, float(np.max(p._prob_at(hi), initial=0.0)),
                   float(np.max(np.where(lo > 0, p._prob_at(lo), 0.0), initial=0.0)))
    return edge


class _Widening:
    """Routes over noise windows: run, and widen the windows until the posterior mass at
    every window's cut edge is negligible."""

    _base: type = None

    def run(self, release, prior, *, count=True, progress=None, memory):
        for widen in (1, 2, 4, 8, 16):
            route = self._base(lambda rel, w=widen: entry_windows(rel, w))
            post = route.run(release, prior, count=False, progress=progress, memory=memory)
            edge = _edge_mass(post, entry_windows(release, widen))
            if edge < 1e-15:
                post.attrs["n_candidates_note"] = _INFINITE
                return post
        raise FloatingPointError(f"the posterior keeps {edge:.3g} of its mass at the edge of "
                                 "windows 16 times the noise's width: the prior puts its "
                                 "mass far from the published values")

    def count(self, release, prior, *, progress=None, memory):
        raise ValueError(_INFINITE)


class _NoiseDP(_Widening, TableDP):
    _base = TableDP


class _Noise3D(_Widening, Enumerate3D):
    _base = Enumerate3D


@register
class NoisyCounts(Mechanism):
    """Independent geometric or discrete Gaussian noise on every cell and total.

    Parameters
    ----------
    distribution : {"geometric", "discrete_gaussian"}
    scale : float > 0
        ``b`` of the geometric noise (epsilon = 1 / b), or ``sigma`` of the discrete
        Gaussian.
    clip : bool
        Publish ``max(0, x + noise)`` (True) or the raw noisy values (False).
    """

    name = "noisy_counts"
    additive = False
    published_signed = True     # raw noisy measurements can be negative
    aliases = ("noise",)
    routes = (_NoiseDP(entry_windows), _Noise3D(entry_windows))

    def __init__(self, distribution: str = "geometric", scale: float = 1.0, clip: bool = False):
        self.distribution = V.choice(distribution, "distribution", DISTRIBUTIONS)
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or \
                not (math.isfinite(float(scale)) and float(scale) > 0):
            raise ValueError(f"scale must be a finite number > 0, got scale={scale!r}")
        self.scale = float(scale)
        if not isinstance(clip, bool):
            raise TypeError(f"clip must be True or False, got {clip!r}")
        self.clip = clip

    def _params(self) -> dict:
        return {"distribution": self.distribution, "scale": self.scale, "clip": self.clip}

    def protect(self, table, rng: np.random.Generator):
        """Add independent noise to every cell and every published total of ``table``."""
        table = count_table(table, self.describe())
        rng = self._rng(rng)
        noise = _Noise(self.distribution, self.scale)

        def noisy(x):
            y = np.asarray(x, dtype=np.int64) + noise.sample(np.shape(x), rng)
            return np.maximum(y, 0) if self.clip else y

        cells = noisy(table.values)
        margins = {k: noisy(v) for k, v in table.totals().items()}
        return Release(published=cells, margins=margins, mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.published is None:
            raise ValueError("a noisy-counts release publishes the noisy table")
        if release.groups:
            raise ValueError("noisy-counts releases with subtotals are not supported")
