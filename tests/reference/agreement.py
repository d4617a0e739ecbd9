"""Agreement of a posterior with a brute-force enumeration (``{"cells", "totals",
"log_z", "count"}`` as :mod:`tests.reference.noise` and :mod:`tests.reference.cell_key`
build them from the mechanisms' definitions)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

import riskengine as rk

__all__ = ["check_against_reference", "excess", "gof_pvalue", "indicator_mcse",
           "monte_carlo_agrees", "pmf_on"]


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


def check_against_reference(rel, prior, res, note="", count=True, route="auto"):
    """The posterior of ``rel`` under ``prior`` (by ``route``) equals the enumeration
    ``res``: every cell's pmf and every published total's (rtol 1e-9), the log evidence,
    and (``count``) the number of candidates; an empty enumeration must be refused."""
    if res["count"] == 0:
        with pytest.raises(ValueError, match="no original"):
            rk.posterior(rel, prior, route=route)
        return None
    post = rk.posterior(rel, prior, route=route)
    assert excess(post.start, post.probs, res["cells"]) <= 1, note
    for keep, pmfs in res["totals"].items():
        tp = post.totals[keep]
        assert excess(tp.start, tp.probs, pmfs) <= 1, (note, keep)
    assert post.log_evidence == pytest.approx(res["log_z"], rel=1e-9, abs=1e-9), note
    if count:
        assert post.n_candidates == res["count"], (note, post.n_candidates, res["count"])
        if "approximation" in post.attrs:    # a count under an approximate likelihood
            with pytest.raises(ValueError, match=f"route .* counts the {res['count']} tables "
                                                 "each of whose published entries is possible "
                                                 "on its own"):
                rk.count_candidates(rel, prior, route=route)
        else:
            assert rk.count_candidates(rel, prior, route=route) == res["count"], note
    return post


# --- Monte Carlo posteriors against exact ones ----------------------------------------------
def pmf_on(post, lo: int, hi: int) -> np.ndarray:
    """Probabilities of the values lo..hi of every cell, shape ``post.shape + (V,)``."""
    return np.stack([post.prob(np.full(post.shape, v)).values for v in range(lo, hi + 1)], -1)


def indicator_mcse(post, lo: int, hi: int) -> np.ndarray:
    """arviz's MCSE of a Monte Carlo posterior's estimate of Pr(cell = v), every cell and
    v in lo..hi (0 where the indicator never varies), from its chains."""
    import warnings

    import xarray as xr

    from riskengine import _arviz
    ch = post.chains.reshape(post.chains.shape[:2] + (-1,))
    ind = (ch[..., None] == np.arange(lo, hi + 1)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _arviz.arviz().mcse(xr.Dataset({"p": (("chain", "draw", "cell", "v"), ind)}))
    const = ind.min(axis=(0, 1)) == ind.max(axis=(0, 1))
    return np.where(const, 0.0, m["p"].values).reshape(post.shape + (-1,))


def monte_carlo_agrees(mc, exact, mean_z: float = 5.0, share: float = 0.99,
                       pmf_tol: float = 0.05) -> None:
    """Assert the issue-17 agreement of a Monte Carlo posterior with the exact one: every
    cell's mean within ``mean_z`` of its MCSE (1e-3 for a cell the chains never moved), at least ``share`` of the (cell, value)
    probabilities within 4 of their own MCSE (+ 1e-3), every probability within
    ``pmf_tol``."""
    diff = np.abs(mc.mean().values - exact.mean().values)
    tol = mean_z * mc.diagnostics["mcse_mean"].values + 1e-9
    # a cell the chains never moved has MCSE 0, but its exact posterior may hold mass the
    # draws had no chance to see (below about 1 / draws): allow that much, as for the pmf
    const = mc.chains.min(axis=(0, 1)) == mc.chains.max(axis=(0, 1))
    tol = np.where(const, np.maximum(tol, 1e-3), tol)
    assert (diff <= tol).all(), (diff, tol)
    lo = int(min(exact.start.min(), mc.start.min()))
    hi = int(max((exact.start + exact.width).max(), (mc.start + mc.width).max()))
    err = np.abs(pmf_on(mc, lo, hi) - pmf_on(exact, lo, hi))
    assert err.max() <= pmf_tol, err.max()
    assert (err <= 4 * indicator_mcse(mc, lo, hi) + 1e-3).mean() >= share


def gof_pvalue(observed, expected: dict) -> float:
    """Chi-square goodness of fit of the values ``observed`` to the pmf ``expected``
    ({value: probability}); bins with expected count < 5 pooled, smallest first, until the
    pooled bin reaches 5 (a last small remainder joins the largest bin)."""
    counts = Counter(observed)
    support = {k for k, q in expected.items() if q > 0}
    outside = set(counts) - support
    assert not outside, f"draws outside the support: {sorted(outside, key=str)[:5]}"
    n = sum(counts.values())
    keys = list(support)
    q = np.array([expected[k] for k in keys], float)
    e = q / q.sum() * n
    o = np.array([counts.get(k, 0) for k in keys], float)
    order = np.argsort(e, kind="stable")
    bins_e, bins_o = [], []
    acc_e = acc_o = 0.0
    for ei, oi in zip(e[order], o[order]):
        acc_e += ei
        acc_o += oi
        if acc_e >= 5.0:
            bins_e.append(acc_e)
            bins_o.append(acc_o)
            acc_e = acc_o = 0.0
    if acc_e > 0 or acc_o > 0:
        if bins_e:
            bins_e[-1] += acc_e
            bins_o[-1] += acc_o
        else:
            bins_e.append(acc_e)
            bins_o.append(acc_o)
    if len(bins_e) < 2:
        return 1.0
    be, bo = np.array(bins_e), np.array(bins_o)
    return float(stats.chi2.sf(((bo - be) ** 2 / be).sum(), len(be) - 1))
