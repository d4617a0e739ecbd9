"""compare(table, mechanisms, intruder, user, draws, rng): risk and utility of several
mechanisms on one table, ready for the R-U map.

For every draw d = 0..draws-1 and every mechanism, the table is protected with a
generator seeded by ``SeedSequence(entropy, spawn_key=(d,))``, where ``entropy``
is drawn once from ``rng``.  Every mechanism sees the same seed at draw d
(common random numbers: two settings of one mechanism are compared on the same
coin flips), and a mechanism's results do not depend on which other mechanisms
are compared or in which order.  The release is attacked with the intruder's
prior (risk) and read with the user's prior (utility).  Identical releases
(deterministic mechanisms, or repeats) are analysed once.

A mechanism that fails (its protection refuses the table, or no route fits one of its
releases within the memory budget) does not stop the others: its numbers are NaN, the
coordinate ``error`` holds why (``""`` for the mechanisms that worked), and a
:class:`MechanismFailed` warning says so.  Only when every mechanism fails is it an error.

Dataset schema (fixed; ``riskengine report`` plots it):

- dims ``mechanism`` (coord: the names; non-index coords ``description`` and ``error``,
  the failure of a mechanism that failed, else ``""``), ``draw``, and the table dims;
- ``risk`` (mechanism): mean over draws of ``risk_draw``;
  ``risk_draw`` (mechanism, draw): mean over interior cells of the intruder's ``prob_exact``;
- ``utility`` (mechanism): mean over draws of ``utility_draw``;
  ``utility_draw`` (mechanism, draw): 1 / (1 + mean user credible-interval width);
- detail (mechanism, draw): ``expected_exact``, ``max_prob_mean``, ``prob_small_mean``,
  ``prob_published_mean``, ``interval_width``, ``l1``, ``hellinger``,
  ``chi_square_change``, ``cramers_v_change``;
- per cell: ``prob_exact`` and ``published`` (mechanism, draw, *dims; ``published`` is NaN
  where not published), ``true`` (*dims).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import xarray as xr

from . import measures as M
from ._analyze import analyze
from ._seeding import derived_rng, root_entropy
from .inference.resolve import _prior, posterior
from .table import Table

__all__ = ["MechanismFailed", "compare"]


class MechanismFailed(UserWarning):
    """A mechanism of :func:`compare` failed; the others' results are kept."""


#: the failures of one mechanism that leave the others standing: a refusal (ValueError:
#: bad parameters for this table, no route within the memory budget), a type the mechanism
#: does not take, memory that ran out
FAILURES = (ValueError, TypeError, MemoryError, FloatingPointError)

_DETAIL = ("expected_exact", "max_prob_mean", "prob_small_mean", "prob_published_mean",
           "interval_width", "l1", "hellinger", "chi_square_change", "cramers_v_change",
           "cramers_v_hdi_width", "cramers_v_covered")

#: whole-table draws behind the statistic-based utility (rk.analyze) per release
ANALYSIS_DRAWS = 1000
ANALYSIS_LEVEL = 0.94

_DETAIL_DEF = {
    "expected_exact": M.DEFINITIONS["expected_exact"],
    "max_prob_mean": "mean over interior cells of max_prob (" + M.DEFINITIONS["max_prob"] + ")",
    "prob_small_mean": "mean over interior cells of prob_small (" + M.DEFINITIONS["prob_small"]
                       + ")",
    "prob_published_mean": "mean over published interior cells of prob_published ("
                           + M.DEFINITIONS["prob_published"] + "); NaN if none published",
    "interval_width": "mean over interior cells of the user's credible-interval width",
    "l1": M.DEFINITIONS["l1"],
    "hellinger": M.DEFINITIONS["hellinger"],
    "chi_square_change": M.DEFINITIONS["chi_square_change"] + " (released = user's reading)",
    "cramers_v_change": M.DEFINITIONS["cramers_v_change"] + " (released = user's reading)",
    "cramers_v_hdi_width": f"width of the user's {round(100 * ANALYSIS_LEVEL)}% HDI of the "
                           "original table's Cramer's V (rk.analyze, "
                           f"{ANALYSIS_DRAWS} exact draws); NaN where the route gives no "
                           "draws",
    "cramers_v_covered": "1 if that HDI holds the true Cramer's V, else 0 (over draws: "
                         "the coverage rate)",
}

RISK_DEF = ("mean over interior cells of the intruder's Pr(cell = true value | release) "
            "(prob_exact)")


def _check_mechanisms(mechanisms) -> dict:
    if not isinstance(mechanisms, dict) or not mechanisms:
        raise TypeError("mechanisms must be a non-empty dict {name: mechanism}, got "
                        f"{type(mechanisms).__name__}")
    for name, mech in mechanisms.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"mechanism names must be non-empty str, got {name!r}")
        if not callable(getattr(mech, "protect", None)):
            raise TypeError(f"mechanism {name!r} has no protect(table, rng) method: {mech!r}")
    return dict(mechanisms)


def _statistic_utility(rel, upost, truth, rng, memory=None) -> tuple:
    """The user's HDI of Cramér's V: (width, covered), NaN where it cannot be drawn."""
    if truth.ndim < 2 or min(truth.shape) < 2:
        return float("nan"), float("nan")
    try:
        res = analyze(rel, None, "cramers_v", draws=ANALYSIS_DRAWS, rng=rng, truth=truth,
                      level=ANALYSIS_LEVEL, post=upost, memory=memory)
    except ValueError:                    # no draws from this route, or over the budget
        return float("nan"), float("nan")
    ds = res["cramers_v"]
    return float(ds["hdi_upper"] - ds["hdi_lower"]), float(bool(ds["covered"]))


def _analyse(rel, truth, intruder, user, level, rng, memory=None):
    ipost = posterior(rel, intruder, memory=memory)
    upost = ipost if user is intruder else posterior(rel, user, memory=memory)
    pe = ipost.prob_exact(truth).values
    pp = ipost.prob_published().values
    u = M.utility(upost, truth, rel, level)
    det = {
        "expected_exact": float(pe.sum()),
        "max_prob_mean": float(ipost.max_prob().values.mean()),
        "prob_small_mean": float(ipost.prob_small((1, 2)).values.mean()),
        "prob_published_mean": (float(np.nanmean(pp)) if np.isfinite(pp).any()
                                else float("nan")),
        **{k: float(u[k]) for k in ("interval_width", "l1", "hellinger",
                                    "chi_square_change", "cramers_v_change")},
    }
    det["cramers_v_hdi_width"], det["cramers_v_covered"] = _statistic_utility(
        rel, upost, truth, rng, memory)
    pub = (np.full(truth.shape, np.nan) if rel.published is None
           else np.asarray(rel.published, dtype=float))
    approx = int(bool(ipost.attrs.get("approximate")) or bool(upost.attrs.get("approximate")))
    return {"risk": float(pe.mean()), "utility": float(u["utility"]), "detail": det,
            "prob_exact": pe, "published": pub, "approximate": approx,
            "route": str(ipost.attrs.get("route"))}


def compare(table, mechanisms: dict, intruder=None, user=None, draws: int = 20,
            rng: np.random.Generator | None = None, progress=None,
            level: float = 0.95, memory=None) -> xr.Dataset:
    """Risk and utility of each mechanism on ``table``, over ``draws`` protections.

    Parameters
    ----------
    table : rk.Table or array-like of counts
        The original table.
    mechanisms : dict {name: mechanism}
        Any objects with ``protect(table, rng) -> rk.Release`` whose releases have a
        posterior route (``rk.posterior``).  Deterministic mechanisms work too.
    intruder, user : rk.priors.Prior, default ``Uniform()``
        Priors for risk (intruder) and utility (user).
    draws : int >= 1
        Protections of the table per mechanism.
    rng : numpy.random.Generator
        Only its first draw (the root entropy) is used; see the module docstring.
    progress : callable(done, total) or None
        Called after each release analysed.
    level : float
        Credible level of the interval widths.
    memory : int or str, optional
        Memory budget of each posterior (as for :func:`riskengine.posterior`).

    Returns
    -------
    xarray.Dataset
        See the module docstring for the schema.  A mechanism that failed has NaN
        numbers and its reason in the coordinate ``error`` (see the module docstring).

    Raises
    ------
    ValueError
        When every mechanism fails (the first one's reason).

    Warns
    -----
    MechanismFailed
        For each mechanism that failed while others worked.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w"))
    >>> mechs = {f"cyclic {a}": rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=a, beta=a)
    ...          for a in (0.1, 0.4)}
    >>> ds = rk.compare(t, mechs, intruder=rk.priors.Poisson(3.0),
    ...                 user=rk.priors.Poisson(3.0), draws=3, rng=np.random.default_rng(0))
    >>> ds["risk"].dims, ds["prob_exact"].dims
    (('mechanism',), ('mechanism', 'draw', 'v', 'w'))
    >>> bool(ds["risk"].sel(mechanism="cyclic 0.1") > ds["risk"].sel(mechanism="cyclic 0.4"))
    True
    """
    from . import _validate as V
    if not isinstance(table, Table):
        table = Table(table)
    if table.kind != "count":
        raise ValueError("compare needs a table of counts")
    mechanisms = _check_mechanisms(mechanisms)
    intruder, user = _prior(intruder), _prior(user)
    draws = V.integer(draws, "draws", 1)
    level = V.probability(level, "level")
    if rng is None:
        raise TypeError("compare needs rng=np.random.default_rng(seed) (results are "
                        "reproducible from it)")
    entropy = root_entropy(rng)
    truth = table.values
    names = list(mechanisms)
    nm, shape = len(names), table.shape
    risk = np.full((nm, draws), np.nan)
    util = np.full((nm, draws), np.nan)
    det = {k: np.full((nm, draws), np.nan) for k in _DETAIL}
    pe = np.full((nm, draws) + shape, np.nan)
    pub = np.full((nm, draws) + shape, np.nan)
    approx = np.full((nm, draws), np.nan)
    routes = [set() for _ in range(nm)]
    errors = [""] * nm
    total, done = nm * draws, 0
    for i, name in enumerate(names):
        cache: dict = {}
        for d in range(draws):
            try:
                rel = mechanisms[name].protect(table, derived_rng(entropy, d))
                key = json.dumps({k: v for k, v in rel.to_dict().items() if k != "info"})
                if key not in cache:
                    cache[key] = _analyse(rel, truth, intruder, user, level,
                                          derived_rng(entropy, d, 1), memory)
            except FAILURES as exc:            # this mechanism is out; the others go on
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                errors[i] = f"draw {d}: {msg}"
                done += draws - d
                if progress is not None:
                    progress(done, total)
                break
            r = cache[key]
            risk[i, d], util[i, d] = r["risk"], r["utility"]
            for k in _DETAIL:
                det[k][i, d] = r["detail"][k]
            pe[i, d], pub[i, d] = r["prob_exact"], r["published"]
            approx[i, d] = r["approximate"]
            routes[i].add(r["route"])
            done += 1
            if progress is not None:
                progress(done, total)
        if errors[i]:
            for a in (risk, util, *det.values(), pe, pub, approx):
                a[i] = np.nan                  # no mean over the draws that did run
    if all(errors):
        raise ValueError(f"every mechanism failed; {names[0]!r}: {errors[0]}")
    for name, err in zip(names, errors):
        if err:
            warnings.warn(f"compare: mechanism {name!r} failed ({err}); the other "
                          "mechanisms' results are kept", MechanismFailed, stacklevel=2)

    md = ("mechanism", "draw")
    cell = md + table.dims
    coords = {"mechanism": names, "draw": np.arange(draws), **table.coords,
              "description": ("mechanism", [_describe(mechanisms[n]) for n in names]),
              "error": ("mechanism", errors),
              "routes": ("mechanism", [", ".join(sorted(r)) for r in routes])}
    util_def = M.DEFINITIONS["utility"]
    data = {
        "risk": (("mechanism",), risk.mean(axis=1),
                 {"definition": "mean over draws of risk_draw; risk_draw = " + RISK_DEF}),
        "utility": (("mechanism",), util.mean(axis=1),
                    {"definition": "mean over draws of utility_draw; utility_draw = "
                                   + util_def}),
        "risk_draw": (md, risk, {"definition": RISK_DEF}),
        "utility_draw": (md, util, {"definition": util_def}),
        **{k: (md, det[k], {"definition": _DETAIL_DEF[k]}) for k in _DETAIL},
        "prob_exact": (cell, pe, {"definition": M.DEFINITIONS["prob_exact"]}),
        "published": (cell, pub, {"definition": "published interior value; NaN where the "
                                                "cell is not published"}),
        "true": (table.dims, truth, {"definition": "the original table"}),
        "approximate": (md, approx, {"definition": "1 where the intruder's or the user's "
                                     "posterior of this draw is approximate (Monte Carlo, "
                                     "or an approximate likelihood), 0 where exact"}),
    }
    return xr.Dataset(data, coords=coords, attrs={
        "riskengine_kind": "compare",
        "approximate": int(np.nansum(approx) > 0),
        "intruder": intruder.describe(),
        "user": user.describe(),
        "draws": draws,
        "level": level,
        "seed_entropy": str(entropy),
        "seeding": "draw d protects with PCG64(SeedSequence(seed_entropy, spawn_key=(d,))), "
                   "the same for every mechanism",
    })


def _describe(mech) -> str:
    f = getattr(mech, "describe", None)
    return f() if callable(f) else repr(mech)
