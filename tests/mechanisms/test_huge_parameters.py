"""Huge but valid parameters (issue 26 item 5): refused before anything of their size is
allocated, in one line naming the parameter, the memory it needs and the budget; moderate
parameters still answer, against brute forces from the definitions.

A rounding base B makes every published entry a window of the 2B - 1 originals within
B - 1 of it (DESIGN.md: random and controlled rounding); a noise scale makes every entry a
window of every original whose noise keeps more than a relative 1e-17 of the mode's
probability (riskengine/mechanisms/noise.py): for the two-sided geometric noise,
q^k >= 1e-17 with q = exp(-1 / b), so k up to 17 ln(10) b on each side.  Whatever a route
does, it keeps those windows: 8 bytes a value, times the entries.  The tests read the
memory named in the refusal and check it against that lower bound, and the budget.
"""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import riskengine as rk
from tests.reference import noise as ref_noise

BUDGET = "6 GiB"
GIB = 2.0 ** 30
_UNITS = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40,
          "PiB": 2 ** 50}


def _table():
    return rk.Table(np.array([[3, 7], [12, 1]]), dims=("v", "w"))


def _entries(release) -> int:
    return int(np.size(release.published)) + sum(int(np.size(v))
                                                 for v in release.margins.values())


def _refusal(call, what: str, budget: float | None = GIB * 6):
    """Run ``call``; it must raise a one-line ValueError within 2 s naming ``what`` and
    the budget.  Returns the bytes the message says are needed."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as info:
        call()
    assert time.perf_counter() - t0 < 2.0
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(what), msg
    m = re.search(r" needs ([0-9.e+]+) (B|KiB|MiB|GiB|TiB|PiB) \(", msg)
    assert m, msg
    need = float(m.group(1)) * _UNITS[m.group(2)]
    b = re.search(r"the memory budget is ([0-9.e+]+) (B|KiB|MiB|GiB|TiB|PiB)", msg)
    assert b, msg
    have = float(b.group(1)) * _UNITS[b.group(2)]
    if budget is not None:
        assert have == pytest.approx(budget, rel=1e-3)
    assert need > have
    return need


# --- rounding ----------------------------------------------------------------------------


@pytest.mark.parametrize("cls, base", [(rk.RandomRounding, 10 ** 12),
                                       (rk.ControlledRounding, 10 ** 9)])
def test_a_huge_rounding_base_is_refused_by_the_posterior(cls, base):
    mech = cls(base)
    rel = mech.protect(_table(), np.random.default_rng(0))     # protect allocates nothing
    assert all((np.asarray(v) % base == 0).all() for v in [rel.published, *rel.margins.values()])
    what = f"{cls.__name__} base 10**{round(math.log10(base))} needs"
    need = _refusal(lambda: rk.posterior(rel, rk.priors.Poisson(5.0), memory=BUDGET), what)
    # every entry's window of 2B - 1 originals, 8 bytes a value, is kept whatever the route
    assert need >= 8.0 * (2 * base - 1) * _entries(rel) * (1 - 1e-3)
    # a named route, the Monte Carlo route and the count are refused the same way
    _refusal(lambda: rk.posterior(rel, rk.priors.Poisson(5.0), memory=BUDGET, route="mcmc"),
             what)
    _refusal(lambda: rk.posterior(rel, rk.priors.Poisson(5.0), memory=BUDGET, route="dp"),
             what)
    _refusal(lambda: rk.count_candidates(rel, memory=BUDGET), what)


def test_a_rounding_base_refused_in_a_release_set_names_its_release():
    big = rk.RandomRounding(10 ** 12).protect(_table(), np.random.default_rng(0))
    small = rk.NoisyCounts("geometric", 1.0).protect(_table(), np.random.default_rng(1))
    need = _refusal(lambda: rk.posterior(rk.ReleaseSet([small, big]), rk.priors.Poisson(5.0),
                                         memory=BUDGET),
                    "RandomRounding base 10**12 (release 1 of the set) needs")
    assert need >= 8.0 * (2 * 10 ** 12 - 1) * _entries(big) * (1 - 1e-3)


def test_a_base_past_64_bit_counts_is_refused_at_construction():
    for cls in (rk.RandomRounding, rk.ControlledRounding):
        with pytest.raises(ValueError, match=r"base must be below 2\*\*62.*base=10\*\*19"):
            cls(10 ** 19)


# --- noise -------------------------------------------------------------------------------


def test_a_huge_geometric_scale_is_refused_by_the_posterior():
    scale = 1e9
    mech = rk.NoisyCounts("geometric", scale)
    rel = mech.protect(_table(), np.random.default_rng(0))
    need = _refusal(lambda: rk.posterior(rel, rk.priors.Poisson(5.0), memory=BUDGET),
                    "NoisyCounts scale 1e+09 (geometric) needs")
    # each window reaches at least 17 ln(10) b above its most likely original
    assert need >= 8.0 * 17 * math.log(10) * scale * _entries(rel)
    _refusal(lambda: rk.posterior(rel, rk.priors.Poisson(5.0), memory=BUDGET, route="mcmc"),
             "NoisyCounts scale 1e+09 (geometric) needs")


def test_a_huge_discrete_gaussian_scale_is_refused_by_protect_and_the_posterior():
    sigma = 1e9
    mech = rk.NoisyCounts("discrete_gaussian", sigma)
    # protect draws from a table of the support out to a relative 1e-40: sigma sqrt(2 *
    # 40 ln 10) on each side, 8 bytes a value (the budget: the machine's default)
    need = _refusal(lambda: mech.protect(_table(), np.random.default_rng(0)),
                    "NoisyCounts scale 1e+09 (discrete_gaussian) needs", budget=None)
    assert need >= 8.0 * 2 * sigma * math.sqrt(2 * 40 * math.log(10))
    rel = rk.Release(np.array([[3, 7], [12, 1]]), mechanism=mech, dims=("v", "w"),
                     margins={("v",): np.array([10, 13]), ("w",): np.array([15, 8]),
                              (): np.array(23)})
    need = _refusal(lambda: rk.posterior(rel, rk.priors.Poisson(5.0), memory=BUDGET),
                    "NoisyCounts scale 1e+09 (discrete_gaussian) needs")
    # each window reaches sigma sqrt(2 * 17 ln 10) above its most likely original
    assert need >= 8.0 * sigma * math.sqrt(2 * 17 * math.log(10)) * _entries(rel)


def test_a_geometric_scale_past_64_bit_counts_is_refused_by_protect():
    """NumPy's geometric draws saturate at 2**63 - 1 for tiny p: the two draws would
    cancel and the release would carry no noise at all."""
    with pytest.raises(ValueError, match=r"NoisyCounts scale 1e\+300 \(geometric\) draws "
                                         r"noise up to .*2\*\*62"):
        rk.NoisyCounts("geometric", 1e300).protect(_table(), np.random.default_rng(0))


def test_large_scales_that_fit_still_protect():
    """A geometric scale of 1e16 (noise far beyond the counts, below 2**62) and a discrete
    Gaussian sigma of 1e5 (its sampling table made when first drawn from, past the size
    made at construction): the noise's spread is the definition's."""
    x = np.arange(2500).reshape(50, 50) % 7
    t = rk.Table(x)
    rel = rk.NoisyCounts("geometric", 1e16, clip=False).protect(t, np.random.default_rng(2))
    noise = np.asarray(rel.published) - x
    assert (noise != 0).all()
    # two-sided geometric: variance 2 q / (1 - q)^2, about 2 b^2
    assert np.std(noise) == pytest.approx(math.sqrt(2) * 1e16, rel=0.1)
    rel = rk.NoisyCounts("discrete_gaussian", 1e5, clip=False).protect(
        t, np.random.default_rng(3))
    noise = np.asarray(rel.published) - x
    assert np.std(noise) == pytest.approx(1e5, rel=0.05)
    assert abs(np.mean(noise)) < 4 * 1e5 / 50


# --- moderate parameters: still answered, exactly ------------------------------------------


def _line(mech, cells, total):
    return rk.Release(np.array(cells), margins={(): np.array(total)}, mechanism=mech,
                      dims=("r",), coords={"r": ["x", "y"]})


def _brute(loglik, cells, total, rate, hi):
    """Per cell pmf over 0..hi of two cells and their total, each published through
    ``loglik(x, y)``, under independent Poisson(rate) cells (every pair in the box)."""
    xs = np.arange(hi + 1)
    ll = [np.array([loglik(int(v), int(y)) for v in xs]) for y in cells]
    lt = np.array([loglik(int(v), int(total)) for v in range(2 * hi + 1)])
    lp = stats.poisson.logpmf(xs, rate)
    lw = (lp + ll[0])[:, None] + (lp + ll[1])[None, :] + lt[xs[:, None] + xs[None, :]]
    p = np.exp(lw - logsumexp(lw))
    return p.sum(axis=1), p.sum(axis=0)


@pytest.mark.parametrize("case", ["random_rounding", "geometric", "discrete_gaussian"])
def test_moderate_parameters_still_answer_exactly(case):
    if case == "random_rounding":       # base 300: windows of 599 values
        B = 300
        mech, cells, total, rate = rk.RandomRounding(B), [300, 600], 900, 700.0
        loglik = ref_noise.rounding_loglik(B)
        hi = 600 + B - 1                 # every original the rounding allows
    elif case == "geometric":            # scale 20: windows of about 1,600 values
        mech, cells, total, rate = rk.NoisyCounts("geometric", 20.0), [40, 55], 80, 50.0
        loglik = ref_noise.Noise("geometric", 20.0, False).loglik
        hi = 400                         # prior and likelihood beyond: below 1e-40
    else:
        mech, cells, total, rate = (rk.NoisyCounts("discrete_gaussian", 15.0, clip=True),
                                    [0, 25], 30, 8.0)
        loglik = ref_noise.Noise("discrete_gaussian", 15.0, True).loglik
        hi = 120
    want = _brute(loglik, cells, total, rate, hi)
    post = rk.posterior(_line(mech, cells, total), rk.priors.Poisson(rate), memory=BUDGET)
    for c in range(2):
        start, q = int(post.start[c]), np.asarray(post.probs[c])
        got = np.zeros(hi + 1)
        inside = start + np.arange(q.size) <= hi
        got[start:start + int(inside.sum())] = q[inside]
        assert q[~inside].sum() < 1e-12
        np.testing.assert_allclose(got, want[c], atol=1e-9)


def test_resampling_and_designed_ptable_parameters_are_refused_or_bounded():
    """Bootstrap(M=10**12) would draw 10**12 tables at once: refused in one line naming M
    and the budget.  A p-table designed with D = 10**9 (10**9 maximum-entropy rows) is
    refused at once.  A binomial perturbation with S = 1e300 (quality intervals wider than
    any count) protects: the cells still sum to the grand total."""
    import time

    t = rk.Table(np.array([[3, 4], [5, 6]]), dims=("a", "b"))
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"^Bootstrap M=10\*\*12 needs .* TiB .*the memory "
                                         r"budget is .*GiB") as e:
        rk.Bootstrap(10**12, 2.0).protect(t, np.random.default_rng(0))
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="D=1000000000, js=0 is beyond the 1000 this designs"):
        rk.CellKey(D=10**9, V=1.0)
    assert time.perf_counter() - start < 2.0
    rel = rk.BinomialPerturbation(1e300).protect(t, np.random.default_rng(0))
    assert int(np.asarray(rel.published).sum()) == 18
    assert (np.asarray(rel.published) >= 0).all()
