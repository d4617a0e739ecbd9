"""Suppressed totals: audit, complementary suppression and integer completions when totals
(and the grand total) may be hidden, against an independent formulation.

The reference (tests/reference/intervals.py, suppression.py, completions.py) writes a
table with its totals as the *extended* array (one more entry on every axis: the last
entry of each line is the line's total), so every equation of the published structure is
"each line of the extended array sums to its last entry".  It never uses
riskengine.tabular; intervals come from HiGHS's dual simplex ("highs-ds") on dense
equations in the unknown entries, integer completions from brute-force enumeration.  The
helpers below only translate riskengine's cell vectors to and from the extended array.
"""

import itertools

import numpy as np
import pytest

import riskengine as rk
from tests.reference.completions import completions_ext
from tests.reference.intervals import extend, protected_ext, reference_intervals_ext
from tests.reference.suppression import brute_force_optimum_ext

TOL = 1e-6


def system_to_ext(system, vec):
    """A riskengine cell vector (interior, then every total block) as the extended array."""
    shape = system.shape
    e = np.full(tuple(s + 1 for s in shape), np.nan)
    for b in system.blocks:
        sl = tuple(slice(0, shape[i]) if d in b.keep else shape[i]
                   for i, d in enumerate(system.dims))
        e[sl] = np.asarray(vec[b.slice], dtype=float).reshape(b.shape)
    return e


def release_ext(rel):
    system = rel.system()
    return system, system_to_ext(system, rel.cell_vector(system))


def hidden_release(x, hide_e, dims, kind=None):
    """A CellSuppression release of table ``x`` hiding the extended entries ``hide_e``."""
    t = rk.Table(x, dims=dims)
    from riskengine.tabular import tabular_system
    system = tabular_system(dims, x.shape)
    ext_idx = system_to_ext(system, np.arange(system.n_var))
    vec = system.vector(x).astype(float)
    vec[ext_idx[hide_e].astype(int)] = np.nan
    parts = system.split(vec)
    margins = {b.keep: parts[(b.keep, None)] for b in system.blocks[1:]}
    return rk.Release(parts[(system.dims, None)], margins=margins,
                      mechanism=rk.CellSuppression(suppress_totals=True), dims=dims,
                      kind=kind or t.kind)


@pytest.mark.parametrize("case", range(12))
def test_audit_with_hidden_totals_matches_reference(case):
    rng = np.random.default_rng(900 + case)
    shape = (3, 4) if case < 6 else (3, 2, 2)
    dims = ("a", "b", "c")[: len(shape)]
    x = rng.integers(0, 30, shape).astype(float)
    if case % 3 == 2:
        x += rng.random(shape).round(2)            # decimals
    e = extend(x)
    hide = rng.random(e.shape) < 0.35
    hide.flat[-1] = case % 4 == 3                  # sometimes the grand total too
    rel = hidden_release(x, hide, dims)
    a = rk.audit(rel)
    system = rel.system()
    lo_ref, hi_ref = reference_intervals_ext(e, hide)
    got_lo = np.full(e.shape, np.nan)
    got_hi = np.full(e.shape, np.nan)
    for b in system.blocks:
        sl = tuple(slice(0, shape[i]) if d in b.keep else shape[i]
                   for i, d in enumerate(dims))
        got_lo[sl] = a["lower" + b.suffix].values.reshape(b.shape)
        got_hi[sl] = a["upper" + b.suffix].values.reshape(b.shape)
    fin = np.isfinite(hi_ref)
    assert np.allclose(got_lo, lo_ref, atol=TOL * max(e.max(), 1))
    assert np.array_equal(np.isfinite(got_hi), fin)
    assert np.allclose(got_hi[fin], hi_ref[fin], atol=TOL * max(e.max(), 1))
    assert a.attrs["n_suppressed"] == int(hide.sum())


def sensitive_case(rng, shape, n_int, total=True):
    """Random table with ``n_int`` sensitive interior cells and (``total``) one sensitive
    one-way or two-way total; protection 30 % of the value (at least 1)."""
    from riskengine.tabular import tabular_system
    dims = ("a", "b", "c")[: len(shape)]
    x = rng.integers(1, 40, shape).astype(float)
    system = tabular_system(dims, shape)
    xv = system.vector(x).astype(float)
    sens = np.zeros(system.n_var, bool)
    sens[rng.permutation(system.n_interior)[:n_int]] = True
    if total:
        # a total that is not the grand total
        sens[rng.integers(system.n_interior, system.n_var - 1)] = True
    prot = np.where(sens, np.floor(0.3 * xv) + 1, 0.0)
    return dims, x, system, xv, sens, prot


@pytest.mark.parametrize("method", ["heuristic", "optimal"])
@pytest.mark.parametrize("case", range(6))
def test_sensitive_totals_are_protected(method, case):
    rng = np.random.default_rng(40 + case)
    shape = (3, 4) if case < 4 else (2, 3, 2)
    dims, x, system, _xv, sens, prot = sensitive_case(rng, shape, 2)
    rel = rk.suppress(rk.Table(x, dims=dims), sens, prot, method=method,
                      suppress_totals=True)
    _, ext = release_ext(rel)
    hide = np.isnan(ext)
    e = extend(x)
    sens_e = system_to_ext(system, sens.astype(float)) > 0
    prot_e = system_to_ext(system, prot)
    # 3-D: the 2-way margins may pin a cell whatever is hidden; rk.suppress then raises,
    # so every returned pattern must pass the independent audit
    assert protected_ext(e, hide, sens_e, prot_e, prot_e)
    assert rel.info["n_sensitive_totals"] == int(sens[system.n_interior:].sum())
    assert rel.info["n_totals_suppressed"] == int(hide.sum() - np.isnan(rel.published).sum())
    assert rk.Release.from_json(rel.to_json()) == rel
    if method == "optimal":
        assert rel.info["status"] == "optimal" and rel.info["gap"] == 0.0


@pytest.mark.parametrize("case", [case if case < 1 else pytest.param(case, marks=pytest.mark.slow)
                                  for case in range(3)])
def test_optimal_with_totals_matches_brute_force(case):
    rng = np.random.default_rng(70 + case)
    dims, x, system, xv, sens, prot = sensitive_case(rng, (2, 3), 1)
    cand = xv > 0
    rel = rk.suppress(rk.Table(x, dims=dims), sens, prot, method="optimal",
                      suppress_totals=True)
    got = np.nansum(np.where(np.isnan(rel.cell_vector()), xv, 0.0))
    e = extend(x)
    best = brute_force_optimum_ext(e, system_to_ext(system, sens.astype(float)) > 0,
                                   system_to_ext(system, prot),
                                   system_to_ext(system, cand.astype(float)) > 0)
    assert abs(got - best) <= 1e-6 * best      # optimum to the solver's 1e-7 cutoff
    heur = rk.suppress(rk.Table(x, dims=dims), sens, prot, suppress_totals=True)
    assert np.nansum(np.where(np.isnan(heur.cell_vector()), xv, 0.0)) >= best - 1e-6


def test_sensitive_total_needs_suppress_totals():
    rng = np.random.default_rng(3)
    dims, x, _system, _xv, sens, prot = sensitive_case(rng, (3, 3), 1)
    with pytest.raises(ValueError, match="suppress_totals=True"):
        rk.suppress(rk.Table(x, dims=dims), sens, prot)


def test_hidden_totals_only_for_suppression_releases():
    with pytest.raises(ValueError, match="publish every total"):
        rk.Release(np.array([[1, 2], [3, 4]]), margins={("v",): [np.nan, 7],
                                                        ("w",): [4, 6], (): 10},
                   mechanism=rk.MarginsOnly(), dims=("v", "w"))
    # a hidden total must still leave a nonnegative completion
    with pytest.raises(ValueError, match="cannot add up"):
        rk.Release(np.array([[5.0, np.nan], [3.0, 4.0]]), margins={("v",): [np.nan, 7.0],
                   ("w",): [4.0, 6.0], (): 10.0},
                   mechanism=rk.CellSuppression(suppress_totals=True), dims=("v", "w"))


@pytest.mark.parametrize("case", [c if c not in (1, 5) else pytest.param(c, marks=pytest.mark.slow)
                                  for c in range(6)])
def test_posterior_with_hidden_totals_matches_brute_force(case):
    rng = np.random.default_rng(500 + case)
    x = rng.integers(0, 4, (2, 3))
    e = extend(x)
    hide = np.zeros(e.shape, bool)
    cells = [(0, 0), (0, 1), (1, 0), (1, 1)]
    for c in cells[: 2 + case % 3]:
        hide[c] = True
    hide[0, 3] = True                               # the first row total
    if case % 2:
        hide[2, 0] = True                           # and a column total
    rel = hidden_release(x, hide, ("v", "w"), kind="count")
    prior = rk.priors.Uniform() if case < 3 else rk.priors.Poisson(2.0)
    post = rk.posterior(rel, prior)
    comps = completions_ext(e, hide)
    assert post.n_candidates == len(comps)
    wts = np.array([np.exp(prior_lw(prior, c[:2, :3])) for c in comps])
    wts /= wts.sum()
    pmf = post.pmf.values
    for i, j in itertools.product(range(2), range(3)):
        ref = np.zeros(pmf.shape[-1])
        for c, wt in zip(comps, wts):
            ref[int(c[i, j]) - int(post.pmf.value.values[0])] += wt
        assert np.allclose(pmf[i, j], ref, atol=1e-9)
    # the hidden row total's posterior
    tot = post.totals[("v",)]
    ref = {}
    for c, wt in zip(comps, wts):
        ref[int(c[0, 3])] = ref.get(int(c[0, 3]), 0.0) + wt
    got = tot.pmf.sel(v=tot.pmf.v.values[0])
    for val, pr in ref.items():
        assert abs(float(got.sel(value=val)) - pr) < 1e-9
    assert abs(float(got.sum()) - 1.0) < 1e-9


def prior_lw(prior, table):
    vals = np.asarray(table)[..., None]
    return float(prior.log_weights(vals, ("v", "w"), {"v": [0, 1], "w": [0, 1, 2]}).sum())


def test_unbounded_completion_is_a_clear_error():
    x = np.array([[1, 2], [3, 4]])
    e = extend(x)
    hide = np.zeros(e.shape, bool)
    hide[0, 0] = hide[0, 2] = hide[2, 0] = hide[2, 2] = True    # cell, its totals, grand
    rel = hidden_release(x, hide, ("v", "w"), kind="count")
    assert np.isinf(rk.audit(rel)["upper"].values[0, 0])
    with pytest.raises(ValueError, match="unbounded"):
        rk.posterior(rel, rk.priors.Uniform())


def test_assess_dataset_drives_suppression_end_to_end():
    # microdata whose region N total is dominated by one respondent: a sensitive total
    rng = np.random.default_rng(11)
    n = 120
    micro = {"region": rng.choice(["N", "S", "E"], n),
             "industry": rng.choice(["retail", "food", "metal", "wood"], n),
             "sales": np.round(rng.lognormal(3, 0.5, n), 1)}
    micro["region"][0], micro["sales"][0] = "N", 5000.0
    c = rk.contributions(micro, dims=("region", "industry"), value="sales")
    sens = rk.sensitivity.assess(c, rk.sensitivity.PPercent(20))
    assert bool(sens.sensitive_total_region.sel(region="N"))
    rel = rk.suppress(c, sens, suppress_totals=True)
    aud = rk.audit(rel, sens, table=c.table)
    assert aud.attrs["n_under_protected"] == 0
    assert bool(aud.suppressed_total_region.sel(region="N"))
    assert not bool(aud.under_protected_total_region.any())
