"""The one labeller: a route's frozen :class:`~riskengine.protocol.RouteResult` -> the
read-only ``rk.Posterior``.

Routes compute per-cell windows (first value + probabilities), the log evidence, the
exact count, the totals' windows, draws and diagnostics in plain arrays; :func:`label`
attaches the release's dims and labels and the attrs every posterior carries, in one
vocabulary: ``method``, ``prior``, ``mechanism``, ``route``, ``route_reason``;
``approximate`` (1/0, on every posterior), with ``approximation`` (what is approximated)
and ``error`` (how large, where known) for anything that is not the exact posterior; ``converged`` and
``diagnostics`` for Monte Carlo routes; ``n_candidates_note`` where nothing was counted.
Nothing else constructs a ``Posterior`` (``tests/test_layers.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .._posterior import Posterior

__all__ = ["label", "totals_of"]


def label(release, prior, res, *, route: str, reason: str = "") -> Posterior:
    """The posterior of ``release`` under ``prior`` from the route's result ``res``."""
    mech = release.mechanism
    attrs = {"method": res.method or f"{mech.name}/{route}", "prior": prior.describe(),
             "mechanism": mech.describe(), "route": route}
    if reason:
        attrs["route_reason"] = reason
    attrs["approximate"] = int(bool(res.approximation))
    if res.approximation:
        attrs["approximation"] = res.approximation
        attrs["error"] = _error(res)
    if res.converged is not None:
        attrs["converged"] = int(bool(res.converged))
    attrs.update(res.notes)
    parts = tuple(_part(*part) for part in res.parts)
    return Posterior(start=res.start, probs=res.probs, dims=release.dims,
                     coords=release.coords, published=release.published,
                     n_candidates=res.n_candidates, log_evidence=res.log_evidence,
                     attrs=attrs, sampler=res.sampler, totals=_totals(release, res),
                     diagnostics=res.diagnostics, chains=res.chains, weights=res.weights,
                     releases=parts,
                     mechanism_weights=res.mechanism_weights, release=release, prior=prior)


def _error(res) -> str:
    """How large the approximation is, in words: a Monte Carlo route's largest MCSE of a
    cell's probability; an approximate likelihood's error is not bounded by its route."""
    dg = res.diagnostics
    if dg is not None and "mcse_max_prob" in dg:
        return (f"Monte Carlo error: largest MCSE of a cell's Pr(mode) "
                f"{float(np.max(dg['mcse_max_prob'])):.2g}")
    return ("not bounded by the route (an approximate likelihood; an exact route where one "
            "runs measures it)")


def totals_of(release, res) -> dict:
    """``{dims kept: thunk -> (start, probs)}`` of the result's totals."""
    if callable(res.totals):
        return {tuple(k): v for k, v in res.totals().items()}
    return {tuple(k): (lambda w=w: w) for k, w in (res.totals or {}).items()}


def _totals(release, res) -> Mapping:
    if callable(res.totals):
        return LazyTotals(release, res.totals)
    return {tuple(keep): _total(release, keep, lo, p)
            for keep, (lo, p) in (res.totals or {}).items()}


class LazyTotals(Mapping):
    """Posteriors of totals computed when first asked for (``make() -> {keep: thunk}``,
    each thunk returning ``(start, probs)``): a wide table's totals can cost more than its
    cells.  Read-only like the posterior that holds it."""

    def __init__(self, release, make):
        self._release = release
        self._thunks = {tuple(k): v for k, v in make().items()}
        self._done = {}

    def __getitem__(self, keep):
        keep = tuple(keep)
        if keep not in self._done:
            lo, p = self._thunks[keep]()
            self._done[keep] = _total(self._release, keep, lo, p)
        return self._done[keep]

    def __iter__(self):
        return iter(self._thunks)

    def __len__(self):
        return len(self._thunks)


def _total(release, keep, start, probs) -> Posterior:
    """The posterior of the totals keeping ``keep`` (labelled by those dims)."""
    keep = tuple(keep)
    coords = {d: release.coords[d] for d in keep}
    return Posterior(start=np.asarray(start), probs=np.asarray(probs), dims=keep, coords=coords,
                     published=release.margins.get(keep),
                     attrs={"description": f"posterior of the total {keep}"})


def _part(release, blocks: dict, description: str) -> Posterior:
    """The posterior of one release's original values within a larger analysis (a
    release set): ``blocks`` ``{dims kept: (start, probs)}`` with the interior under the
    release's dims and its totals under theirs."""
    lo, p = blocks[tuple(release.dims)]
    totals = {tuple(keep): _total(release, keep, klo, kp) for keep, (klo, kp) in blocks.items()
              if tuple(keep) != tuple(release.dims)}
    return Posterior(start=lo, probs=p, dims=release.dims, coords=release.coords,
                     published=release.published, attrs={"description": description},
                     totals=totals)
