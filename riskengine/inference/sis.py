"""Counts by sequential importance sampling where the exact count does not fit.

The number of nonnegative integer tables with given margins (a margins-only release of
a 2-D table) is estimated as the mean of ``1 / q(T)`` over tables T drawn from a
proposal q that reaches every such table (Chen, Diaconis, Holmes & Liu 2005; the
proposals are :mod:`kernels.sis`'s, column by column: by default, ``"columns"``, each
column uniform among the compositions the remaining row sums allow, counted exactly; or
``"cells"``, each cell's value weighted by the number of ways its row's remainder spreads
over the columns left).  The estimate is
unbiased; its standard error is the weights' sample standard deviation over
``sqrt(n)``, and the effective sample size ``(sum w)^2 / sum w^2`` says how many draws
carry the estimate.

Known failure mode: on margins where the proposal is far from uniform over the tables
(for ``"cells"``: a permutation matrix's margins; for either: very unequal margins, e.g.
one large row and many small ones) the weights are heavy
tailed, the estimate can be far from the truth while its own standard error looks small,
and the ESS is a small fraction of ``n``.  :class:`CountEstimate` says
``reliable = False`` (and a :class:`~riskengine.inference.gibbs.ConvergenceWarning` is
raised) when the ESS is below 1 % of the draws or 100, or the relative standard error
above 10 %.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[3, 1, 2], [2, 4, 1]])))
>>> est = rk.estimate_count(rel, n=20000, rng=np.random.default_rng(0))
>>> rk.count_candidates(rel), round(est.estimate)
(20, 20)
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from kernels import sis as _k

from .. import _validate as V
from .._seeding import release_seed
from .gibbs import ConvergenceWarning

__all__ = ["CountEstimate", "applies", "estimate_count"]

#: draws per kernel call (the uniforms of a batch: batch x (r - 1) x (m - 1) floats)
_BATCH = 20000


@dataclass(frozen=True)
class CountEstimate:
    """An estimated number of candidate tables, with its Monte Carlo error.

    Parameters
    ----------
    log_estimate : float
        Natural log of the estimate (counts can pass 1e308).
    rel_se : float
        Standard error / estimate.
    ess : float
        Effective sample size of the importance weights.
    n : int
        Number of draws.
    method : str, default "sequential importance sampling (Chen, Diaconis, Holmes & Liu 2005)"
        How the estimate was made.
    """

    log_estimate: float        #: natural log of the estimate (counts can pass 1e308)
    rel_se: float              #: standard error / estimate
    ess: float                 #: effective sample size of the importance weights
    n: int                     #: draws
    method: str = "sequential importance sampling (Chen, Diaconis, Holmes & Liu 2005)"

    @property
    def estimate(self) -> float:
        return math.exp(self.log_estimate) if self.log_estimate < 709 else math.inf

    @property
    def se(self) -> float:
        return self.estimate * self.rel_se

    @property
    def reliable(self) -> bool:
        return self.ess >= max(100.0, 0.01 * self.n) and self.rel_se <= 0.1

    def interval(self, z: float = 2.0) -> tuple:
        """``estimate -/+ z standard errors`` (normal approximation, lower end >= 0).

        Parameters
        ----------
        z : float, default 2.0
            Number of standard errors on each side.

        Returns
        -------
        tuple of float
            ``(lower, upper)``.
        """
        return max(self.estimate * (1 - z * self.rel_se), 0.0), \
            self.estimate * (1 + z * self.rel_se)

    def __str__(self) -> str:
        mant = self.log_estimate / math.log(10)
        head = f"{self.estimate:.4g}" if mant < 300 else f"~1e{mant:.2f}"
        return (f"approximately {head} (relative standard error {100 * self.rel_se:.2g}%, "
                f"ESS {self.ess:,.0f} of {self.n:,} draws; {self.method})"
                + ("" if self.reliable else "; UNRELIABLE: the importance weights are too "
                   "uneven for this estimate to be trusted"))


def applies(release) -> str | None:
    """None when SIS can estimate the count of ``release``, else why not."""
    if release.kind != "count" or len(release.dims) != 2:
        return "SIS counts cover 2-D count tables"
    if release.mechanism.name != "margins_only":
        return (f"SIS counts cover margins-only releases (tables with fixed margins); this "
                f"is a {release.mechanism.name} release")
    d0, d1 = release.dims
    missing = [k for k in ((d0,), (d1,)) if k not in release.margins]
    if missing or release.groups:
        return "SIS counts need both margins of the 2-D table and no subtotals"
    return None


PROPOSALS = ("cells", "columns")


def estimate_count(release, n: int = 10000, rng: np.random.Generator | None = None,
                   progress=None, proposal: str = "columns") -> CountEstimate:
    """Estimate the number of original tables consistent with a margins-only release of
    a 2-D table by sequential importance sampling (``n`` draws; ``rng`` default: seeded
    from the release, so the same release gives the same estimate).  ``proposal``:
    ``"columns"`` (each column uniform among the compositions the remaining row sums
    allow, counted exactly; 2.4-8x the ESS of ``"cells"`` on the benchmark's margins,
    exact on permutation margins, and faster, ``benchmarks/RESULTS.md``) or ``"cells"``
    (each cell weighted by the ways its row's rest spreads over the later columns).

    Parameters
    ----------
    release : riskengine.Release
        A margins-only release of a 2-D count table with both margins and no subtotals.
    n : int, default 10000
        Number of importance-sampling draws, at least 2.
    rng : numpy.random.Generator, optional
        Source of randomness; default: seeded from the release.
    progress : callable, optional
        Called as ``progress(done, n)`` after each batch of draws.
    proposal : {"columns", "cells"}, default "columns"
        The proposal distribution.

    Returns
    -------
    CountEstimate
        The estimate, its relative standard error and ESS.  A single row or column gives
        the exact count 1.

    Raises
    ------
    ValueError
        If SIS does not apply to ``release``, the margins disagree, or ``n`` or
        ``proposal`` is invalid.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator``.

    Warns
    -----
    ConvergenceWarning
        When the estimate is not :attr:`CountEstimate.reliable`.
    """
    why = applies(release)
    if why is not None:
        raise ValueError(why)
    n = V.integer(n, "n", 2)
    proposal = V.choice(proposal, "proposal", PROPOSALS)
    if rng is None:
        rng = np.random.default_rng(release_seed(release))
    elif not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {type(rng).__name__}")
    d0, d1 = release.dims
    R = np.asarray(release.margins[(d0,)], dtype=np.int64).ravel()
    C = np.asarray(release.margins[(d1,)], dtype=np.int64).ravel()
    if R.sum() != C.sum():
        raise ValueError(f"the margins disagree: rows sum to {R.sum()}, columns to {C.sum()}")
    if len(R) == 1 or len(C) == 1:            # one table: no sampling
        return CountEstimate(0.0, 0.0, float(n), n, "exact (a single row or column)")
    logw = np.empty(n)
    done = 0
    while done < n:
        b = min(_BATCH, n - done)
        u = rng.random((b, len(R) - 1, len(C) - 1))
        logw[done:done + b] = _k.sample(R, C, u, proposal == "columns")
        done += b
        if progress is not None:
            progress(done, n)
    top = float(logw.max())
    w = np.exp(logw - top)
    mean = float(w.mean())
    log_est = top + math.log(mean)
    rel_se = float(w.std(ddof=1) / (mean * math.sqrt(n)))
    ess = float(math.exp(2 * logsumexp(logw) - logsumexp(2 * logw)))
    est = CountEstimate(log_est, rel_se, ess, n) if proposal == "cells" else CountEstimate(
        log_est, rel_se, ess, n, "sequential importance sampling, each column uniform among "
        "its bounded compositions (Chen, Diaconis, Holmes & Liu 2005)")
    if not est.reliable:
        warnings.warn(f"the SIS count estimate is unreliable: ESS {ess:.0f} of {n} draws, "
                      f"relative standard error {100 * rel_se:.2g}% (heavy-tailed importance "
                      "weights; more draws may not help on these margins)", ConvergenceWarning,
                      stacklevel=2)
    return est
