"""Agreement of a posterior with a brute-force enumeration (``{"cells", "totals",
"log_z", "count"}`` as :mod:`tests.reference.noise` and :mod:`tests.reference.cell_key`
build them from the mechanisms' definitions)."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk

__all__ = ["check_against_reference", "excess"]


def excess(start, probs, pmfs: dict, rtol: float = 1e-9, atol: float = 1e-12) -> float:
    """Largest ``|got - want| / (atol + rtol want)`` between a posterior given as windows
    (``start``: first value per entry, ``probs``: probabilities from there) and the
    enumerated ``pmfs`` ``{entry: {value: want}}``, over every value either one gives mass
    (mass the posterior puts where the enumeration has none counts against it).  At most
    1: they agree within the tolerances."""
    start, probs = np.asarray(start), np.asarray(probs)
    worst = 0.0
    for idx, pmf in pmfs.items():
        got = {int(start[idx]) + j: float(p) for j, p in enumerate(probs[idx]) if p != 0.0}
        for v in set(got) | set(pmf):
            want = pmf.get(v, 0.0)
            worst = max(worst, abs(got.get(v, 0.0) - want) / (atol + rtol * abs(want)))
    return worst


def check_against_reference(rel, prior, res, note="", count=True):
    """The posterior of ``rel`` under ``prior`` equals the enumeration ``res``: every
    cell's pmf and every published total's (rtol 1e-9), the log evidence, and (``count``)
    the number of candidates; an empty enumeration must be refused."""
    if res["count"] == 0:
        with pytest.raises(ValueError, match="no original"):
            rk.posterior(rel, prior)
        return None
    post = rk.posterior(rel, prior)
    assert excess(post.start, post.probs, res["cells"]) <= 1, note
    for keep, pmfs in res["totals"].items():
        tp = post.totals[keep]
        assert excess(tp.start, tp.probs, pmfs) <= 1, (note, keep)
    assert post.log_evidence == pytest.approx(res["log_z"], rel=1e-9, abs=1e-9), note
    if count:
        assert post.n_candidates == res["count"], (note, post.n_candidates, res["count"])
        assert rk.count_candidates(rel, prior) == res["count"], note
    return post
