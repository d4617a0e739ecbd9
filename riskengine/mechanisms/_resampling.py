"""What the two resampling protections of seed 001 (Domingo-Ferrer & Mateo-Sanz 1999),
:class:`~riskengine.Bootstrap` (``bootstrap.py``) and
:class:`~riskengine.BinomialPerturbation` (``binomial.py``), share: the quality interval
[l(x), u(x)] (|published - x| <= S sqrt(x(1 - x/n)); zeros stay zero), the quality bound
S, and the likelihoods and routes below (each mechanism gives its own law).

Two likelihoods, two routes:

``joint`` (exact, :meth:`log_likelihood`): the law of the whole published table given
the whole original, a product over the groups whose totals are published.  The
candidates are finite whatever the prior: n (and every preserved total) is published, so
every cell lies in 0..n; the route enumerates them (``riskengine.inference.joint``) when
that fits its work limit.

``cells`` (fast approximation, :meth:`log_likelihood_cells`): each cell on its own,
the law of its published value given its original, renormalised to its quality
interval.  This treats the cells as independent: it ignores that they share n and the
whole-table regeneration (bootstrap) and leaves out the compensation stage (binomial); its
error against the exact joint posterior is measured in ``studies/resampling``.
``mcmc`` (Monte Carlo, ``riskengine.inference.joint_mcmc``): beyond the joint route's
limit, a Markov chain over the same candidates targeting prior x the same exact joint
likelihood (pairs of cells redrawn from their exact conditional, the likelihood kept as
per-cell factors of laws of sums so a pair costs a fraction of one likelihood), with
arviz diagnostics.

``route="auto"`` takes ``joint`` when it fits, ``mcmc`` when its estimated time is below
``joint_mcmc.MAX_SECONDS``, and ``cells`` otherwise; a ``cells`` posterior says so in
``attrs["approximation"]``.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from scipy import stats

from ..inference.cells import CellWindows, IndependentCells
from ..inference.joint import Group, JointEnumeration, JointModel
from ..inference.joint_mcmc import JointMCMC, SumFactors
from ..protocol import Inputs, Mechanism


def quality_interval(x, n, S):
    """[l(x), u(x)]: integers within S sqrt(x (1 - x/n)) of x (x = 0: [0, 0])."""
    x = np.asarray(x, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(x * (1.0 - x / np.where(n > 0, n, 1.0)), 0.0))
    lo = np.maximum(np.ceil(x - S * sd - 1e-9), 0).astype(np.int64)
    # a huge S: ends beyond any count stay within int64 (2**62) instead of overflowing
    hi = np.floor(np.minimum(x + S * sd + 1e-9, 2.0 ** 62)).astype(np.int64)
    return lo, hi


def _log_binom_central(a, b, N, p):
    """log Pr(a <= T <= b), T ~ binomial(N, p), for an interval around the mean (a quality
    interval): one minus the two tails, each accurate on its own side."""
    tails = stats.binom.cdf(a - 1, N, p) + stats.binom.sf(b, N, p)
    return np.log1p(-np.minimum(tails, 1.0))


def _x_window(k, S):
    """All originals x that can publish k satisfy x - S sqrt(x) <= k <= x + S sqrt(x)."""
    k = np.asarray(k, dtype=float)
    r = np.sqrt(S * S + 4 * k)
    lo = np.floor(np.maximum((r - S) / 2, 0) ** 2) - 1
    hi = np.ceil(((r + S) / 2) ** 2) + 1
    return np.maximum(lo, 0).astype(np.int64), hi.astype(np.int64)


class _Resampling(Mechanism):
    """Shared per-cell likelihood of the resampling mechanisms."""

    additive = True
    routes = (JointEnumeration(), JointMCMC(), IndependentCells())

    def inputs(self, release) -> Inputs:
        """The routes' inputs: ``joint_model(max_values) -> JointModel`` (the exact joint
        likelihood by groups; only its refusal past ``max_values`` (cell, value) pairs) and
        ``cells`` (the per-cell likelihood windows).

        Parameters
        ----------
        release : rk.Release
            A release of this mechanism.

        Returns
        -------
        Inputs
            ``joint_model`` (:meth:`joint_model` bound to ``release``) and ``cells``
            (:meth:`cell_windows`), each computed when a route first reads it.
        """
        return Inputs(joint_model=lambda: functools.partial(self.joint_model, release),
                      cells=lambda: self.cell_windows(release))

    #: what the per-cell route leaves out (``attrs["approximation"]`` of its posteriors)
    _cells_note = ""

    def _cell_loglik(self, k, x, n):          # pragma: no cover - abstract
        raise NotImplementedError

    def _n_for_cells(self, release) -> np.ndarray:
        raise NotImplementedError             # pragma: no cover

    def log_likelihood_cells(self, k, x, n) -> np.ndarray:
        """log Pr(published k | original x), per cell (broadcasting), -inf if impossible.

        Parameters
        ----------
        k : array_like of int
            Published values.
        x : array_like of int
            Original values.
        n : array_like of int
            The table's (or the cell's group's) total n.

        Returns
        -------
        ndarray of float64
            The log-likelihoods, of the broadcast shape of ``k``, ``x`` and ``n``: 0 for
            x = k = 0, -inf where k is outside x's quality interval or x > n.
        """
        k = np.asarray(k, dtype=np.int64)
        x = np.asarray(x, dtype=np.int64)
        n = np.asarray(n, dtype=np.int64)
        k, x, n = np.broadcast_arrays(k, x, n)
        out = np.full(k.shape, -np.inf)
        zero = x == 0
        out[zero & (k == 0)] = 0.0
        pos = (x > 0) & (x <= n)
        if pos.any():
            lo, hi = quality_interval(x[pos], n[pos], self.S)
            inside = (k[pos] >= lo) & (k[pos] <= hi)
            ll = np.full(inside.shape, -np.inf)
            ll[inside] = self._cell_loglik(k[pos][inside], x[pos][inside], n[pos][inside],
                                           lo[inside], hi[inside])
            out[pos] = ll
        return out

    def cell_windows(self, release):
        """Per distinct (published value, n): the window of originals that can publish it and
        their log-likelihood, and which row each cell uses (the route
        :class:`~riskengine.inference.cells.IndependentCells`).

        Parameters
        ----------
        release : rk.Release
            A release of this mechanism.

        Returns
        -------
        riskengine.inference.cells.CellWindows
            One window per distinct (published value, n), the row of each cell, and
            what the per-cell likelihood leaves out (``approximation``).
        """
        P = np.asarray(release.published, dtype=np.int64)
        n = np.broadcast_to(self._n_for_cells(release), P.shape)
        keys = np.stack([P.ravel(), n.ravel()], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.ravel()
        ulo, uhi = _x_window(uniq[:, 0], self.S)
        uhi = np.minimum(uhi, uniq[:, 1])
        W = int((uhi - ulo).max()) + 1
        uvals = ulo[:, None] + np.arange(W)
        # the likelihood depends on (k, n) only: computed once per distinct pair
        ull = self.log_likelihood_cells(uniq[:, :1], uvals, uniq[:, 1:])
        ull = np.where(uvals <= uniq[:, 1:], ull, -np.inf)
        return CellWindows(ulo, ull, inv.reshape(P.shape), self._cells_note)

    # --- the exact joint likelihood ------------------------------------------------------
    def _joint_groups(self, release) -> list:
        """``[(flat cell indices, preserved total)]``: cells whose likelihood is one factor."""
        raise NotImplementedError             # pragma: no cover

    def _group_loglik(self, P, n: int, X) -> np.ndarray:
        """log Pr(published ``P`` (K,) | original ``X[i]`` (C, K)) of one group of total n."""
        raise NotImplementedError             # pragma: no cover

    def _group_cost(self, n: int, width: int, K: int) -> float:
        """Inner-loop steps of one :meth:`_group_loglik` (quality intervals <= ``width``)."""
        raise NotImplementedError             # pragma: no cover

    def _group_factors(self, P, n: int, vlo, V: int) -> SumFactors:
        """:meth:`_group_loglik` of one group as per-cell factors of laws of sums, for the
        values ``vlo[c] .. vlo[c] + V - 1`` of each cell (the Monte Carlo route)."""
        raise NotImplementedError             # pragma: no cover

    def log_likelihood(self, release, originals) -> np.ndarray:
        """Exact log Pr(``release`` | original table), for one original or a stack
        ``(..., *table shape)``; -inf where impossible (an original whose totals differ from
        the published ones included).  See the module docstring.

        Parameters
        ----------
        release : rk.Release
            A release of this mechanism (validated first).
        originals : array_like of int
            One original table, or a stack of them, shape ``(..., *table shape)``.

        Returns
        -------
        ndarray of float64
            The log-likelihoods, of shape ``originals.shape[:-table ndim]`` (0-D for one
            table).

        Raises
        ------
        ValueError
            If the release is not one of this mechanism, or ``originals`` does not end
            with the table shape.
        """
        self.validate_release(release)
        P = np.asarray(release.published, dtype=np.int64)
        X = np.asarray(originals, dtype=np.int64)
        if X.shape[X.ndim - P.ndim:] != P.shape:
            raise ValueError(f"originals must end with the table shape {P.shape}, got {X.shape}")
        lead = X.shape[:X.ndim - P.ndim]
        X = X.reshape(-1, P.size)
        out = np.zeros(len(X))
        for cells, n in self._joint_groups(release):
            Xg = np.ascontiguousarray(X[:, cells])
            ok = (Xg >= 0).all(axis=1) & (Xg.sum(axis=1) == n)
            ll = np.full(len(X), -np.inf)
            if ok.any():
                ll[ok] = self._group_loglik(P.reshape(-1)[cells], n, Xg[ok])
            out += ll
        return out.reshape(lead)

    def joint_model(self, release, max_values=None):
        """The release as the joint route's groups (:class:`~riskengine.inference.joint.Group`):
        per group, the values each cell can take (x = 0 only where 0 is published; x > 0
        where the published value is in [l(x), u(x)] with the group's n) and the exact
        likelihood.  The support is finite whatever the prior: each group's total is
        published, so its cells lie in 0..n.  With ``max_values``: only the reason
        (``refusal``) when the groups hold more (cell, value) pairs than that.

        Parameters
        ----------
        release : rk.Release
            A release of this mechanism.
        max_values : int or float, optional
            The most (cell, original value) pairs to build the groups for; None: no limit.

        Returns
        -------
        riskengine.inference.joint.JointModel
            The groups, or only a ``refusal`` past ``max_values``.
        """
        P = np.asarray(release.published, dtype=np.int64).reshape(-1)
        parts = self._joint_groups(release)
        values = sum(len(cells) * (int(n) + 1) for cells, n in parts)
        if max_values is not None and values > max_values:
            return JointModel(refusal=f"{values:.3g} (cell, original value) pairs (cells x "
                              f"(n + 1)), more than the joint enumeration looks at "
                              f"({max_values:.0e})")
        groups = []
        for cells, n in parts:
            n = int(n)
            x = np.arange(n + 1)
            lo, hi = quality_interval(x, max(n, 1), self.S)
            k = P[cells][:, None]
            allowed = np.where(x == 0, k == 0, (lo <= k) & (k <= hi))
            used = allowed.any(axis=0)
            width = int((hi - lo)[used].max()) + 1 if used.any() else 1
            Pg = P[cells].copy()
            groups.append(Group(cells=np.asarray(cells), total=n, allowed=allowed,
                                loglik=lambda X, Pg=Pg, n=n: self._group_loglik(Pg, n, X),
                                cost=self._group_cost(n, width, len(cells)),
                                factors=lambda vlo, V, Pg=Pg, n=n:
                                self._group_factors(Pg, n, vlo, V)))
        return JointModel(tuple(groups))

    def _margins_needed(self, dims) -> tuple:
        """The published totals this mechanism's likelihood uses (and nothing else)."""
        return ((),)

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError(f"a {self.name} release publishes a table of counts")
        if np.isnan(np.asarray(release.published, float)).any():
            raise ValueError(f"a {self.name} release has no suppressed (NaN) cells")
        need = set(self._margins_needed(release.dims))
        missing = sorted(need - set(release.margins))
        if missing:
            raise ValueError(f"a {self.describe()} release must publish the original totals "
                             f"{missing} (the likelihood's n); it has {sorted(release.margins)}")
        extra = sorted(set(release.margins) - need)
        if extra or release.groups:
            raise ValueError(f"a {self.describe()} release publishes only the original totals "
                             f"{sorted(need)}; this one also has "
                             f"{extra or 'subtotals'}, which its inference would not use")


def _quality_bound(S) -> float:
    """The quality bound S: a finite real number > 0 (numpy numbers accepted)."""
    if isinstance(S, bool) or not isinstance(S, numbers.Real):
        raise TypeError(f"S must be a real number, got {type(S).__name__} {S!r}")
    if not (np.isfinite(float(S)) and float(S) > 0):
        raise ValueError(f"S must be a finite number > 0 (the quality bound in standard "
                         f"deviations), got S={S!r}")
    return float(S)
