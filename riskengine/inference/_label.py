"""The one place that turns a route's plain arrays into a labelled ``rk.Posterior``.

Routes compute per-cell windows (first value + probabilities), the log evidence, the
exact count and the totals' windows; :func:`label` attaches the release's dims and
labels and the attrs every posterior carries (method, prior, mechanism, route, and
``approximation`` for anything that is not the exact posterior).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..posterior import Posterior

__all__ = ["label", "total"]


def label(release, prior, *, route: str, start, probs, log_evidence: float,
          n_candidates=None, totals=None, method: str | None = None, note: str = "",
          approximation: str = "", sampler=None) -> Posterior:
    """The posterior of ``release`` from plain arrays.

    Parameters
    ----------
    start, probs
        Per interior cell: first value of its window (table shape) and probabilities
        (table shape + window), each cell's row summing to 1.
    totals : dict or callable, optional
        ``{dims kept: (start, probs)}`` for totals that are not published exactly, or a
        callable returning ``{dims kept: thunk}`` to compute them when first asked for.
    method : str, optional
        ``attrs["method"]``; default ``"<mechanism name>/<route>"``.
    note : str
        Why ``n_candidates`` is None (``attrs["n_candidates_note"]``).
    approximation : str
        What is approximated (``attrs["approximation"]``); empty for exact posteriors.
    sampler : callable, optional
        ``sampler(n, rng) -> int64 (n, *table shape)``: whole-table draws in the release's
        dim order (:meth:`riskengine.Posterior.sample`).
    """
    mech = release.mechanism
    attrs = {"method": method or f"{mech.name}/{route}", "prior": prior.describe(),
             "mechanism": mech.describe(), "route": route}
    if note:
        attrs["n_candidates_note"] = note
    if approximation:
        attrs["approximation"] = approximation
    post = Posterior(start=start, probs=probs, dims=release.dims, coords=release.coords,
                     published=release.published, n_candidates=n_candidates,
                     log_evidence=log_evidence, attrs=attrs, sampler=sampler)
    if callable(totals):
        post.totals = LazyTotals(release, totals)
    else:
        for keep, (lo, p) in (totals or {}).items():
            post.totals[tuple(keep)] = total(release, keep, lo, p)
    return post


class LazyTotals(Mapping):
    """Posteriors of totals computed when first asked for (``make() -> {keep: thunk}``,
    each thunk returning ``(start, probs)``): a wide table's totals can cost more than its
    cells."""

    def __init__(self, release, make):
        self._release = release
        self._thunks = {tuple(k): v for k, v in make().items()}
        self._done = {}

    def __getitem__(self, keep):
        keep = tuple(keep)
        if keep not in self._done:
            lo, p = self._thunks[keep]()
            self._done[keep] = total(self._release, keep, lo, p)
        return self._done[keep]

    def __iter__(self):
        return iter(self._thunks)

    def __len__(self):
        return len(self._thunks)


def total(release, keep, start, probs) -> Posterior:
    """The posterior of the totals keeping ``keep`` (labelled by those dims)."""
    keep = tuple(keep)
    coords = {d: release.coords[d] for d in keep}
    return Posterior(start=np.asarray(start), probs=np.asarray(probs), dims=keep, coords=coords,
                     published=release.margins.get(keep),
                     attrs={"description": f"posterior of the total {keep}"})


def part(release, blocks: dict, description: str) -> Posterior:
    """The posterior of one release's original values within a larger analysis (a
    release set): ``blocks`` ``{dims kept: (start, probs)}`` with the interior under the
    release's dims and its totals under theirs."""
    lo, p = blocks[tuple(release.dims)]
    post = Posterior(start=lo, probs=p, dims=release.dims, coords=release.coords,
                     published=release.published, attrs={"description": description})
    for keep, (lo, p) in blocks.items():
        if tuple(keep) != tuple(release.dims):
            post.totals[tuple(keep)] = total(release, keep, lo, p)
    return post
