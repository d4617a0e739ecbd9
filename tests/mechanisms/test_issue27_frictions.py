"""Issue 27, the library side: noisy counts clipped at 0 by default (exact likelihood against
the brute force of tests/reference/noise.py), CTA on a count table in whole numbers (a
count release that adds up and meets every protection), a biased p-table warned about
(not refused), and additivity errors naming cells by their labels."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import riskengine as rk
from riskengine.tabular import tabular_system
from tests.mechanisms.test_noise import check_noise

# --- noisy counts: clip at 0 by default ------------------------------------------------------


def test_noisy_counts_clip_by_default_and_say_so():
    mech = rk.NoisyCounts("geometric", 2.0)
    assert mech.clip is True
    assert mech.describe() == "NoisyCounts(distribution=geometric, scale=2.0, clip=True)"
    # scale 2 around zeros: unclipped, this seed publishes negative values (checked below)
    t = rk.Table(np.array([[0, 1, 0], [2, 0, 1]]), dims=("v", "w"))
    rel = mech.protect(t, np.random.default_rng(7))
    raw = rk.NoisyCounts("geometric", 2.0, clip=False).protect(t, np.random.default_rng(7))
    blocks = [rel.published, *rel.margins.values()]
    raw_blocks = [raw.published, *raw.margins.values()]
    assert min(np.min(b) for b in raw_blocks) < 0
    assert min(np.min(b) for b in blocks) >= 0
    for b, r in zip(blocks, raw_blocks):          # same draws: clipped = max(0, raw)
        np.testing.assert_array_equal(b, np.maximum(r, 0))
    assert json.loads(rel.to_json())["mechanism"]["clip"] is True
    assert rel.data.attrs["mechanism"].endswith("clip=True)")
    # a release of negative values without clip=False is refused, saying how to mark it
    with pytest.raises(ValueError, match=r"published value -2 is negative, but clipped noisy "
                                         r"counts are never below 0 \(clip=True\); raw noisy "
                                         r"measurements are a release of NoisyCounts\(\.\.\., "
                                         r"clip=False\) \(the default clips\)"):
        rk.Release(np.array([-2, 3]), margins={}, mechanism=rk.NoisyCounts(), dims=("v",))


def test_default_clipped_posterior_equals_brute_force():
    """The default (clipped) mechanism: releases with published zeros in cells and totals
    (whose likelihood is the noise's lower tail), both distributions, against the
    enumeration over a box (tests/reference/noise.py, Noise(..., clip=True))."""
    rng = np.random.default_rng(2705)
    zeros = 0
    for i in range(8):
        dist = ["geometric", "discrete_gaussian"][i % 2]
        scale = float(rng.uniform(0.4, 1.0))
        shape, margins = [((3,), None), ((1, 2), None), ((2, 2), [])][i % 3]
        T = rng.poisson(0.8, size=shape)
        dims = ("v", "w")[:len(shape)]
        rel = rk.NoisyCounts(dist, scale).protect(rk.Table(T, dims=dims, margins=margins), rng)
        zeros += int((rel.published == 0).sum())
        prior, spec = rk.priors.Poisson(1.5), {"kind": "poisson", "rate": 1.5}
        check_noise(rel, prior, spec, f"default {rel.mechanism} {T.tolist()}")
    assert zeros > 0


def test_default_clipped_single_zero_by_hand():
    """One cell published 0, no total, geometric scale 1 (q = 1/e), clipped by default,
    uniform prior: x weighs Pr(noise <= -x) = q^x / (1 + q), so Pr(x) = (1 - q) q^x."""
    q = math.exp(-1.0)
    rel = rk.Release(np.array([0]), margins={}, mechanism=rk.NoisyCounts("geometric", 1.0),
                     dims=("v",))
    post = rk.posterior(rel, rk.priors.Uniform())
    got = [post._prob_at(np.array([x]))[0] for x in range(6)]
    np.testing.assert_allclose(got, [(1 - q) * q ** x for x in range(6)], rtol=1e-12)


# --- CTA on a count table ------------------------------------------------------------------


def _check_count_cta(t, sens, prot, res):
    rel = res.release
    assert rel.kind == "count"
    assert np.asarray(rel.published).dtype == np.int64
    assert res.adjustment.dtype == np.int64
    adj = np.asarray(rel.published)
    np.testing.assert_array_equal(adj - t.values, res.adjustment.values)
    # additive: every published total is the sum of the adjusted cells
    for keep, val in rel.margins.items():
        axes = tuple(i for i, d in enumerate(t.dims) if d not in keep)
        np.testing.assert_array_equal(adj.sum(axis=axes), val)
    assert (adj >= 0).all()
    # every sensitive cell moved by at least its protection rounded up
    moved = np.abs(res.adjustment.values[sens])
    assert (moved >= np.ceil(prot[sens] - 1e-9)).all(), (moved, prot[sens])
    assert np.all(res.y == np.round(res.y))


def test_cta_on_counts_moves_whole_numbers_and_stays_a_count_release():
    t = rk.Table(np.array([[12, 3, 7], [5, 9, 2], [8, 1, 10]]), dims=("r", "c"),
                 coords={"r": ["a", "b", "c"], "c": ["x", "y", "z"]})
    sens = np.zeros((3, 3), bool)
    sens[0, 1] = sens[2, 1] = True
    prot = np.where(sens, 2.4, 0.0)                    # at least 3 in whole numbers
    res = rk.cta(t, sens, prot, capacity=0.5 * t.values)
    _check_count_cta(t, sens, prot, res)
    assert res.status == "optimal"
    # the magnitude MILP on the same values moves by 2.4 and costs 4 x 2.4 = 9.6 at best;
    # in whole numbers each sensitive cell moves 3 and the others make up 3 each: 12
    assert res.objective == pytest.approx(12.0, abs=1e-9)
    mag = rk.cta(rk.Table(t.values, dims=t.dims, kind="magnitude"), sens, prot,
                 capacity=0.5 * t.values)
    assert mag.release.kind == "magnitude" and mag.objective == pytest.approx(9.6, abs=1e-6)
    # the ordering heuristic and preserving the mean: whole numbers too
    for kw in ({"directions": "ordering"}, {"preserve": ["mean"]}):
        _check_count_cta(t, sens, prot, rk.cta(t, sens, prot, capacity=0.5 * t.values, **kw))


def test_cta_on_random_count_tables():
    rng = np.random.default_rng(27)
    for _ in range(6):
        T = rng.integers(1, 20, size=(3, 4))
        t = rk.Table(T, dims=("r", "c"))
        sens = np.zeros(T.shape, bool)
        sens[tuple(rng.integers(0, s) for s in T.shape)] = True
        prot = np.where(sens, rng.uniform(0.5, 4.0), 0.0)
        res = rk.cta(t, sens, prot, capacity=T.astype(float))
        _check_count_cta(t, sens, prot, res)


def test_cta_on_counts_refuses_an_upper_bound_below_the_whole_protection():
    t = rk.Table(np.array([[20, 30, 10], [15, 5, 40]]), dims=("r", "c"),
                 coords={"r": ["north", "south"], "c": ["p", "q", "s"]})
    sens = np.array([[True, False, False], [False, False, False]])
    prot = np.where(sens, 2.5, 0.0)
    with pytest.raises(ValueError, match=r"on a count table moves are whole numbers: at "
                                         r"\(north, p\) upper=2.9 rounds down to 2, below the "
                                         r"protection rounded up, 3"):
        rk.cta(t, sens, prot, 0.5 * t.values, upper=np.where(sens, 2.9, 0.0))


# --- biased p-tables --------------------------------------------------------------------------


def test_biased_ptable_warns_naming_counts_and_biases(tmp_path):
    biased = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2},
              3: {2: 0.3, 3: 0.4, 4: 0.3}, 4: {3: 0.2, 4: 0.5, 5: 0.2, 6: 0.1}}
    with pytest.warns(UserWarning, match=r"the p-table \(matrix\) is biased: the expected "
                                         r"perturbation E\[published - original \| original\] "
                                         r"is not 0 for the original counts 2: \+0\.2, "
                                         r"4 and above: \+0\.2 \(tolerance 1e-09\)"):
        pt = rk.PTable.from_matrix(biased)
    assert pt.bias() == pytest.approx({2: 0.2, 4: 0.2}, abs=1e-12)
    # not refused: the cell key mechanism takes it and protects with it
    with pytest.warns(UserWarning, match="is biased"):
        ck = rk.CellKey.from_matrix(biased)
    assert ck.ptable == pt
    # a file: the same warning, naming the file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pt.write(tmp_path / "b.txt")
    with pytest.warns(UserWarning, match=r"the p-table \(file b\.txt\) is biased.*counts 2: "
                                         r"\+0\.2"):
        rk.PTable.read(tmp_path / "b.txt")


def test_unbiased_ptables_do_not_warn(tmp_path):
    """filterwarnings = error (pyproject): any warning would fail these."""
    unbiased = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {0: 0.1, 2: 0.7, 3: 0.2},
                3: {2: 0.3, 3: 0.4, 4: 0.3}}
    pt = rk.PTable.from_matrix(unbiased)
    assert pt.bias() == {}
    designed = rk.PTable.design(D=3, V=1.5, js=1)
    assert designed.bias(1e-7) == {}
    designed.write(tmp_path / "d.txt")
    rk.PTable.read(tmp_path / "d.txt")
    rk.PTable.from_dict(designed.to_dict())
    # the library's own examples (the 1-D one on a grid, the designed 2-D one)
    for table in (None, rk.Table(np.array([3, 1, 4]), dims=("v",))):
        ex = rk.CellKey.example(table)
        rel = ex.release(np.random.default_rng(0))
        assert rel.mechanism.ptable.bias() == {}


# --- errors name cells by their labels --------------------------------------------------------


def test_inconsistent_release_names_cells_by_label():
    coords = {"region": ["North East", "North West"], "age": ["0-64", "65-84", "85+"]}
    P = np.array([[10, 4, 1], [7, 3, 2]])
    margins = {("region",): [15, 12], ("age",): [17, 7, 3], (): 27}
    cta = rk.ControlledTabularAdjustment()                   # additive, publishes every cell
    # adds up: accepted
    rk.Release(P, margins=margins, mechanism=cta, dims=("region", "age"), coords=coords)
    P2 = P.copy()
    P2[1, 0] = 8
    with pytest.raises(ValueError, match=r"published table does not add up to margin "
                                         r"\('region',\): at \(1,\) \(North West, total\) the "
                                         r"cells sum to 13 but the margin is 12"):
        rk.Release(P2, margins=margins, mechanism=cta, dims=("region", "age"), coords=coords)
    # suppressed entries: the general check over T x = 0 names the labels too (the
    # column 85+ is published 0 but its known cell is 1)
    Ps = P.astype(float)
    Ps[1, 2] = np.nan
    bad = {("region",): np.array([15, np.nan]), ("age",): np.array([17.0, 7, 0]),
           (): np.array(24.0)}
    with pytest.raises(ValueError, match=r"published cells and totals cannot add up: "
                                         r"- \(North East, 85\+\) - \(North West, 85\+\) "
                                         r"\+ \(total, 85\+\) = 0 fails: the published cells "
                                         r"leave -1 for the unknown ones"):
        rk.Release(Ps, margins=bad, mechanism=rk.CellSuppression(), dims=("region", "age"),
                   coords=coords)
    # no labels given: positions, as before
    with pytest.raises(ValueError, match=r"- interior\[0, 2\] - interior\[1, 2\] \+ "
                                         r"total\(age\)\[2\] = 0 fails"):
        rk.Release(Ps, margins=bad, mechanism=rk.CellSuppression(), dims=("region", "age"))


def test_labels_by_position_without_labels():
    s = tabular_system(("v", "w"), (2, 2), groups={"v": [[0, 1]]})
    assert s.labels()[:2] == ["interior[0, 0]", "interior[0, 1]"]
    assert s.labels({"v": [0, 1], "w": [0, 1]}) == s.labels()       # default labels
    named = s.labels({"v": ["a", "b"], "w": ["x", "y"]})
    assert named[:4] == ["(a, x)", "(a, y)", "(b, x)", "(b, y)"]
    assert "(group a + b, x)" in named and "(total, total)" in named


def test_solver_errors_name_cells_by_label():
    """The tabular system carries the table's categories: the suppression solver's and
    the protection inputs' errors name cells by label, not position."""
    t = rk.Table(np.array([[20., 10, 20], [10, 10, 20]]), dims=("r", "c"),
                 coords={"r": ["North", "South"], "c": ["0-15", "16-64", "65+"]})
    sens = np.array([[True, False, False], [False, False, False]])
    with pytest.raises(ValueError, match=r"got -1 at \(North, 0-15\)"):
        rk.suppress(t, sens, protection=-1)
    nan = np.nan
    rel = rk.Release(np.array([[nan, nan, 3.0], [nan, nan, 4.0]]),
                     margins={("r",): [6.0, 9.0], ("c",): [5.0, 3.0, 7.0], (): 15.0},
                     mechanism=rk.CellSuppression(), dims=("r", "c"),
                     coords={"r": ["North", "South"], "c": ["0-15", "16-64", "65+"]})
    assert rel.system().labels()[:2] == ["(North, 0-15)", "(North, 16-64)"]
    assert rel.system().labels()[-1] == "(total, total)"
