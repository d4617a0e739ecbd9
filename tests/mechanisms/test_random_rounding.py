"""rk.RandomRounding: protect against its definition, and the exact posterior against a
brute force over every original table in the candidate box (tests/reference/noise.py).

Definition (DESIGN.md): every interior cell and every published total is rounded on its
own to one of its two adjacent multiples of the base B, up with probability
(x mod B) / B (a multiple stays); the table need not add up.  Candidates of a release:
the tables whose every cell is within B - 1 of its published multiple and whose every
total is within B - 1 of its own; likelihood: the product of the entries' rounding
probabilities.

Goodness-of-fit tests run at a fixed seed, so they are deterministic; each would raise
a false alarm with probability 1e-3 under a random seed (the p-value threshold).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import riskengine as rk
from riskengine.cli import main
from riskengine.mechanisms import mechanism_from_dict
from tests.reference import noise as ref
from tests.reference.agreement import check_against_reference
from tests.reference.priors import random_prior

ALPHA = 1e-3          # false-alarm rate of each goodness-of-fit test


def _entries(rel):
    """Every published entry of a release: [(name, array)]."""
    return [("cells", np.asarray(rel.published))] + [
        (str(k), np.asarray(v)) for k, v in rel.margins.items()]


# --- protect ---------------------------------------------------------------------------------


@pytest.mark.parametrize("B", [3, 5])
def test_each_entry_rounds_up_with_probability_remainder_over_base(B):
    T = np.array([[0, 1, 2], [4, 7, 10]])
    t = rk.Table(T, dims=("v", "w"))
    mech = rk.RandomRounding(B)
    rng = np.random.default_rng(7)
    N = 3000
    orig = _entries(mech.protect(t, np.random.default_rng(0)))   # names and shapes
    truth = [("cells", T)] + [(str(k), np.asarray(v)) for k, v in t.totals().items()]
    ups = [np.zeros(np.shape(v), np.int64) for _, v in orig]
    for _ in range(N):
        rel = mech.protect(t, rng)
        for i, ((_, pub), (_, x)) in enumerate(zip(_entries(rel), truth)):
            below = x - x % B
            # every entry is one of its two adjacent multiples; multiples stay
            assert np.all((pub == below) | ((pub == below + B) & (x % B != 0)))
            ups[i] += pub == below + B
    # chi-square over every entry that is not a multiple (up / down), df = their number
    stat, df = 0.0, 0
    for (_, x), up in zip(truth, ups):
        p = (x % B) / B
        m = x % B != 0
        exp_up = N * p[m]
        stat += float((((up[m] - exp_up) ** 2) / exp_up
                       + ((up[m] - exp_up) ** 2) / (N - exp_up)).sum())
        df += int(m.sum())
    assert stats.chi2.sf(stat, df) > ALPHA, (stat, df)


def test_cells_and_totals_are_rounded_independently():
    """x = [1, 1] to base 3: each cell up w.p. 1/3, the grand total 2 up w.p. 2/3, all
    independent: the 8 joint outcomes of (cell 0, cell 1, grand total) against the
    product of the marginals (chi-square, 7 df); the table often does not add up."""
    t = rk.Table(np.array([[1, 1]]), dims=("v", "w"))
    mech = rk.RandomRounding(3)
    rng = np.random.default_rng(11)
    N = 4000
    counts = np.zeros((2, 2, 2))
    unequal = 0
    for _ in range(N):
        rel = mech.protect(t, rng)
        a, b = (rel.published[0] == 3).astype(int)
        g = int(rel.margins[()] == 3)
        counts[a, b, g] += 1
        unequal += int(rel.published.sum() != rel.margins[()])
    p = np.einsum("i,j,k->ijk", [2 / 3, 1 / 3], [2 / 3, 1 / 3], [1 / 3, 2 / 3])
    res = stats.chisquare(counts.ravel(), N * p.ravel())
    assert res.pvalue > ALPHA, res
    assert unequal > N / 4          # Pr(sum of the cells != total) = 5/9


def test_protect_keeps_labels_and_leaves_the_input_alone():
    T = np.array([[3, 7, 0], [12, 1, 5]])
    before = T.copy()
    coords = {"age": ["young", "old"], "area": ["n", "s", "e"]}
    t = rk.Table(T, dims=("age", "area"), coords=coords)
    rel = rk.RandomRounding(5).protect(t, np.random.default_rng(3))
    np.testing.assert_array_equal(T, before)
    np.testing.assert_array_equal(t.values, before)
    assert rel.dims == ("age", "area")
    assert rel.coords == coords
    assert list(rel.data.coords["area"].values) == ["n", "s", "e"]
    assert set(rel.margins) == {("age",), ("area",), ()}
    # a DataArray input too, and the same seed gives the same release
    da = xr.DataArray(T, dims=("age", "area"), coords=coords)
    again = rk.RandomRounding(5).protect(rk.Table(da), np.random.default_rng(3))
    assert again == rel
    np.testing.assert_array_equal(da.values, before)
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        rk.RandomRounding(5).protect(t, 3)


# --- the posterior against the brute force ------------------------------------------------------


SHAPES = [((2,), ("v",), None), ((3,), ("v",), None), ((3,), ("v",), []),
          ((1, 2), ("v", "w"), None), ((2, 1), ("v", "w"), None), ((2, 2), ("v", "w"), None),
          ((2, 3), ("v", "w"), None), ((2, 2), ("v", "w"), [])]


@pytest.mark.parametrize("seed", [seed if seed < 4 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(8)])
def test_posterior_equals_brute_force(seed):
    """200 random small cases: 1-D tables with and without their total, 1 x 2, 2 x 1,
    2 x 2, 2 x 3 and a 2 x 2 table without totals; zeros; bases 2 to 10; every prior
    kind."""
    rng = np.random.default_rng(100 + seed)
    for i in range(25):
        shape, dims, margins = SHAPES[i % len(SHAPES)]
        cells = int(np.prod(shape))
        B = int(rng.integers(2, 11 if cells <= 4 else 5))
        T = rng.poisson(rng.uniform(0, 3 * B), size=shape)
        T[rng.random(shape) < 0.2] = 0
        t = rk.Table(T, dims=dims, margins=margins)
        rel = rk.RandomRounding(B).protect(t, rng)
        P = rel.published
        prior, spec = random_prior(rng, shape, P, flat_extra=6)
        res = ref.posterior(P, rel.margins, dims, ref.rounding_loglik(B), spec,
                            np.maximum(P - (B - 1), 0), P + (B - 1))
        check_against_reference(rel, prior, res, f"B={B} {T.tolist()} -> {P.tolist()} "
                                f"{ {k: v.tolist() for k, v in rel.margins.items()} } {spec}")


def test_posterior_3d_equals_brute_force():
    """2 x 2 x 2 tables with every 2-way margin (the streaming enumerator)."""
    rng = np.random.default_rng(5)
    for B in (2, 2, 3):
        T = rng.poisson(2.0, size=(2, 2, 2))
        rel = rk.RandomRounding(B).protect(rk.Table(T, dims=("a", "b", "c")), rng)
        P = rel.published
        prior, spec = random_prior(rng, T.shape, P, flat_extra=6)
        res = ref.posterior(P, rel.margins, ("a", "b", "c"), ref.rounding_loglik(B), spec,
                            np.maximum(P - (B - 1), 0), P + (B - 1))
        post = check_against_reference(rel, prior, res, f"3-D B={B} {T.tolist()} {spec}")
        assert post is None or post.attrs["route"] == "enumerate"


def test_hand_computed_one_cell_posterior():
    """A 1-D table of one cell published 5 with its total 5, base 5, flat prior: the
    original x in 1..9 weighs Pr(x -> 5)^2 = ((x mod 5) / 5)^2 for x < 5, 1 for x = 5 and
    (1 - (x mod 5) / 5)^2 above: weights 1, 4, 9, 16, 25, 16, 9, 4, 1 (/25)."""
    rel = rk.Release(np.array([5]), margins={(): 5}, mechanism=rk.RandomRounding(5),
                     dims=("v",))
    post = rk.posterior(rel, rk.priors.Uniform())
    w = np.array([1, 4, 9, 16, 25, 16, 9, 4, 1]) / 85
    np.testing.assert_allclose(post.prob(np.array([5])).values, w[4], rtol=1e-12)
    got = np.array([post._prob_at(np.array([x]))[0] for x in range(1, 10)])
    np.testing.assert_allclose(got, w, rtol=1e-12)
    assert post.n_candidates == 9 == rk.count_candidates(rel)
    assert post.attrs["route"] == "line"


def test_draws_of_a_1d_release_follow_the_posterior():
    """Whole-table draws of the line route against the enumerated joint posterior
    (chi-square over the candidate tables)."""
    rel = rk.Release(np.array([3, 0, 6]), margins={(): 9}, mechanism=rk.RandomRounding(3),
                     dims=("v",))
    prior = rk.priors.Poisson(2.5)
    P = rel.published
    T = ref.tables_in_box(np.maximum(P - 2, 0), P + 2)
    logw = ref.log_prior({"kind": "poisson", "rate": 2.5}, T)
    f = ref.rounding_loglik(3)
    for i in range(3):
        logw = logw + np.array([f(x, P[i]) for x in T[:, i]])
    logw = logw + np.array([f(s, 9) for s in T.sum(1)])
    ok = np.isfinite(logw)
    T, p = T[ok], np.exp(logw[ok] - logw[ok].max())
    p /= p.sum()
    draws = rk.posterior(rel, prior).sample(20000, np.random.default_rng(2)).values
    index = {tuple(x): j for j, x in enumerate(T.tolist())}
    counts = np.bincount([index[tuple(x)] for x in draws.tolist()], minlength=len(T))
    big = 20000 * p >= 5                      # pool the rare tables into one class
    obs = np.append(counts[big], counts[~big].sum())
    exp = 20000 * np.append(p[big], p[~big].sum())
    res = stats.chisquare(obs[exp > 0], exp[exp > 0])
    assert res.pvalue > ALPHA, res


def test_realistic_counts_against_brute_force():
    """Cells in the hundreds to 1e5 (1 x 2 and 2 x 1 tables: a (2B - 1)^2 box at any
    count; a 2 x 2 table whose prior knows two cells), under priors near and far from
    the published values."""
    rng = np.random.default_rng(8)
    for i in range(10):
        shape = [(1, 2), (2, 1)][i % 2]
        B = int(rng.integers(2, 11))
        T = rng.poisson(10 ** rng.uniform(2, 5), size=shape)
        rel = rk.RandomRounding(B).protect(rk.Table(T, dims=("v", "w")), rng)
        P = rel.published
        rate = float(P.mean() * rng.choice([1.0, 0.9, 0.01]))
        prior, spec = rk.priors.Poisson(rate), {"kind": "poisson", "rate": rate}
        res = ref.posterior(P, rel.margins, ("v", "w"), ref.rounding_loglik(B), spec,
                            np.maximum(P - (B - 1), 0), P + (B - 1))
        check_against_reference(rel, prior, res, f"B={B} {T.tolist()} {spec}")
    T = np.array([[40000, 123], [977, 56000]])
    rel = rk.RandomRounding(10).protect(rk.Table(T, dims=("v", "w")), rng)
    P = rel.published
    known = [((0, 1), 123), ((1, 0), 977)]
    prior = rk.priors.Poisson(30000.0).known([(0, 1)], 123).known([(1, 0)], 977)
    spec = {"kind": "poisson", "rate": 30000.0, "known": known}
    lo, hi = np.maximum(P - 9, 0), P + 9
    for cell, v in known:
        lo[cell] = hi[cell] = v
    res = ref.posterior(P, rel.margins, ("v", "w"), ref.rounding_loglik(10), spec, lo, hi)
    check_against_reference(rel, prior, res, f"2 x 2 pinned {P.tolist()}")


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("base, err, msg", [
    (1, ValueError, "base must be >= 2, got base=1"),
    (0, ValueError, "base must be >= 2, got base=0"),
    (-3, ValueError, "base must be >= 2, got base=-3"),
    (2.5, TypeError, "base must be an integer, got 2.5"),
    ("5", TypeError, "base must be an integer, got '5'"),
    (True, TypeError, "base must be an integer, got base=True"),
    (None, TypeError, "base must be an integer, got None")])
def test_bad_base_is_refused_naming_the_value(base, err, msg):
    with pytest.raises(err, match=msg):
        rk.RandomRounding(base)


def test_an_integral_float_base_is_accepted():
    assert rk.RandomRounding(5.0).base == 5


def test_bad_releases_are_refused():
    mech = rk.RandomRounding(5)
    R = {("v",): [10], ("w",): [5, 5], (): 10}
    with pytest.raises(ValueError, match="published must be nonnegative counts, got -5"):
        rk.Release(np.array([[-5, 10]]), margins=R, mechanism=mech, dims=("v", "w"))
    with pytest.raises(ValueError, match=r"margin \('w',\) must be nonnegative counts, got -5"):
        rk.Release(np.array([[5, 5]]), margins={**R, ("w",): [-5, 10]}, mechanism=mech,
                   dims=("v", "w"))
    with pytest.raises(ValueError, match="published value 3 is not a multiple of the "
                                         "rounding base 5"):
        rk.Release(np.array([[3, 5]]), margins=R, mechanism=mech, dims=("v", "w"))
    with pytest.raises(ValueError, match=r"margin \(\) value 12 is not a multiple"):
        rk.Release(np.array([[5, 5]]), margins={**R, (): 12}, mechanism=mech, dims=("v", "w"))
    with pytest.raises(ValueError, match="no suppressed"):
        rk.Release(np.array([[np.nan, 5]]), margins=R, mechanism=mech, dims=("v", "w"))
    with pytest.raises(ValueError, match="do not add up to the original totals: give the "
                                         "published totals"):
        rk.Release(np.array([[5, 5]]), mechanism=mech, dims=("v", "w"))


def test_releases_with_subtotals_are_refused():
    with pytest.raises(ValueError, match="random-rounding releases with subtotals are not "
                                         "supported"):
        rk.Release(np.array([[5, 5, 0], [10, 0, 5]]),
                   margins={("v",): [10, 20], ("w",): [15, 10, 5], (): 30},
                   mechanism=rk.RandomRounding(5), dims=("v", "w"),
                   groups={"w": [[0, 1], [2]]},
                   subtotals={("v", "w"): [[10, 0], [15, 5]], ("w",): [25, 5]})


def test_a_release_with_some_totals_says_which_routes_do_not_apply():
    rel = rk.RandomRounding(3).protect(
        rk.Table(np.array([[1, 4], [2, 2]]), dims=("v", "w"), margins=[("v",)]),
        np.random.default_rng(0))
    with pytest.raises(ValueError, match="table DP needs every total .*line route covers"):
        rk.posterior(rel)


# --- round trips ----------------------------------------------------------------------------------


def test_json_round_trips():
    mech = rk.RandomRounding(7)
    assert mech.to_dict() == {"name": "random_rounding", "base": 7}
    assert mechanism_from_dict(json.loads(json.dumps(mech.to_dict()))).base == 7
    assert mechanism_from_dict({"name": "randomrounding", "base": 3}).base == 3
    t = rk.Table(np.array([[3, 7], [12, 1]]), dims=("v", "w"),
                 coords={"v": ["a", "b"], "w": ["x", "y"]})
    rel = mech.protect(t, np.random.default_rng(1))
    back = rk.Release.from_json(rel.to_json())
    assert back == rel and isinstance(back.mechanism, rk.RandomRounding)
    np.testing.assert_allclose(rk.posterior(back).probs, rk.posterior(rel).probs)


def test_cli_protect_then_assess_then_count(tmp_path, capsys):
    csv = tmp_path / "t.csv"
    csv.write_text("\\,a,b,c\nx,3,0,12\ny,1,4,7\n")
    out = tmp_path / "rel.json"
    assert main(["protect", str(csv), "--mechanism", "random_rounding", "--param", "base=5",
                 "--seed", "3", "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["mechanism"] == {"name": "random_rounding", "base": 5}
    rel = rk.Release.from_json(out.read_text())
    assert np.all(rel.published % 5 == 0)
    assert main(["assess", str(out), "--truth", str(csv), "--no-report",
                 "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    n = rk.count_candidates(rel)
    assert f"candidate original tables: {n:,}" in text and "RandomRounding(base=5)" in text
    assert main(["count", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(n)
    assert main(["protect", str(csv), "--mechanism", "random_rounding",
                 "--param", "base=1"]) == 2
    assert "base must be >= 2, got base=1" in capsys.readouterr().err
