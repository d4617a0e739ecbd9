"""rk.audit: LP intervals of suppressed cells, against an independent formulation.

The reference (tests/reference/intervals.py) builds the equations by hand from the
table's row / column / margin / subtotal sums (dense, one unknown per suppressed cell,
right-hand side = published total minus the published cells), never through
riskengine.tabular, and solves each min / max with HiGHS's dual simplex ("highs-ds")
instead of the default choice.  Seed 004's exercise: tests/seeds/test_seed004_suppression.py.
"""

import numpy as np
import pytest

import riskengine as rk
from tests.reference.intervals import reference_intervals, sums_2d, sums_3d, sums_groups

TOL = 1e-6


def random_mask(rng, shape, frac):
    m = rng.random(shape) < frac
    return m


def release_of(x, supp, dims, groups=None):
    t = rk.Table(x, dims=dims)
    pub = np.where(supp, np.nan, x)
    sub = None
    if groups:
        from riskengine.tabular import tabular_system
        s = tabular_system(dims, x.shape, t.margins, groups)
        full = s.vector(x)
        sub = {b.keep: full[b.slice].reshape(b.shape) for b in s.blocks if b.grouped}
    return rk.Release(pub, margins=t.totals(), mechanism=rk.CellSuppression(), dims=dims,
                      kind="magnitude" if x.dtype.kind == "f" else "count", groups=groups,
                      subtotals=sub)


@pytest.mark.parametrize("case", range(12))
def test_2d_intervals_match_reference(case, rng):
    shape = tuple(rng.integers(2, 6, 2))
    x = np.round(rng.gamma(1.0, 50.0, shape), 2) if case % 2 else rng.integers(0, 30, shape)
    if case % 3 == 0:
        x[rng.random(shape) < 0.2] = 0
    supp = random_mask(rng, shape, 0.4)
    a = rk.audit(release_of(x, supp, ("r", "c")))
    lo, hi = reference_intervals(x.astype(float), supp, sums_2d(x))
    np.testing.assert_allclose(a["lower"].values, lo, atol=TOL)
    np.testing.assert_allclose(a["upper"].values, hi, atol=TOL)
    assert (a["suppressed"].values == supp).all()


@pytest.mark.parametrize("case", range(6))
def test_3d_intervals_match_reference(case, rng):
    shape = tuple(rng.integers(2, 4, 3))
    x = rng.integers(0, 15, shape) if case % 2 else np.round(rng.gamma(2.0, 10.0, shape), 3)
    supp = random_mask(rng, shape, 0.35)
    a = rk.audit(release_of(x, supp, ("a", "b", "c")))
    lo, hi = reference_intervals(x.astype(float), supp, sums_3d(x))
    np.testing.assert_allclose(a["lower"].values, lo, atol=TOL)
    np.testing.assert_allclose(a["upper"].values, hi, atol=TOL)


@pytest.mark.parametrize("case", range(6))
def test_subtotal_intervals_match_reference(case, rng):
    shape = (5, int(rng.integers(2, 5)))
    parts = [[0, 1], [2, 3, 4]] if case % 2 else [[0], [1, 2], [3, 4]]
    x = rng.integers(0, 20, shape)
    supp = random_mask(rng, shape, 0.4)
    a = rk.audit(release_of(x, supp, ("v", "w"), groups={"v": parts}))
    lo, hi = reference_intervals(x.astype(float), supp, sums_groups(x, parts))
    np.testing.assert_allclose(a["lower"].values, lo, atol=TOL)
    np.testing.assert_allclose(a["upper"].values, hi, atol=TOL)


def test_approximate_disclosure_and_protection_flags():
    # one 2x2 cycle of suppressions through small cells: the sensitive cell (value 50)
    # can only move by 1 (the smallest cell of the cycle): interval [49, 51], width 2,
    # not exact, far narrower than its protection 10 -> approximate disclosure
    x = np.array([[50.0, 1.0, 30.0], [2.0, 1.0, 25.0], [10.0, 10.0, 10.0]])
    supp = np.zeros((3, 3), bool)
    supp[0, 0] = supp[0, 1] = supp[1, 0] = supp[1, 1] = True
    rel = release_of(x, supp, ("r", "c"))
    sens = np.zeros((3, 3), bool)
    sens[0, 0] = True
    a = rk.audit(rel, sens, np.full((3, 3), 10.0), table=x)
    assert abs(float(a["lower"][0, 0]) - 49) < TOL and abs(float(a["upper"][0, 0]) - 51) < TOL
    assert not a["exact"].values.any()
    assert a["approximate_disclosure"].values.tolist() == sens.tolist()
    assert a["under_protected"].values.tolist() == sens.tolist()
    assert abs(float(a["room_above"][0, 0]) - 1) < TOL
    # with protection 1 the same cell is protected and not approximately disclosed
    b = rk.audit(rel, sens, np.full((3, 3), 1.0), table=x)
    assert not b["approximate_disclosure"].values.any()
    assert not b["under_protected"].values.any()
    # a published sensitive cell is under-protected
    c = rk.audit(rel, ~supp & (np.arange(9).reshape(3, 3) == 8), np.full((3, 3), 1.0), table=x)
    assert int(c["under_protected"].sum()) == 1


def test_published_cells_get_their_value_and_no_flags(rng):
    x = rng.integers(1, 20, (3, 4))
    supp = np.zeros((3, 4), bool)
    supp[:2, :2] = True
    a = rk.audit(release_of(x, supp, ("r", "c")))
    assert np.array_equal(a["lower"].values[~supp], x[~supp])
    assert np.array_equal(a["upper"].values[~supp], x[~supp])
    assert not a["exact"].values[~supp].any()
    assert a.attrs["n_suppressed"] == 4


def test_decimal_and_large_magnitudes_are_additive():
    # 0.1 + 0.2 != 0.3 in binary floating point, and 1e12-scale sums lose the last
    # digits: additivity is checked with a tolerance scaled to the magnitudes
    x = np.array([[0.1, 0.2, 0.7], [0.3, 0.6, 1e12 + 0.1]])
    tot = {("r",): [0.1 + 0.2 + 0.7 + 1e-17, 0.9 + 1e12 + 0.1], ("c",): [0.4, 0.8, 1e12 + 0.8],
           (): 1e12 + 2.0}
    rel = rk.Release(np.where([[True, False, False], [True, False, False]], np.nan, x),
                     margins=tot, mechanism=rk.CellSuppression(), dims=("r", "c"))
    a = rk.audit(rel)
    assert abs(float(a["lower"][0, 0]) - 0.1) < 1e-3
    # a fully published decimal table adds up as well
    rk.Release(x, margins=tot, mechanism=rk.CellSuppression(), dims=("r", "c"))
    # a genuinely inconsistent release is still refused (off by 0.05 on a 1e12 table is
    # fine; off by 1e5 is not)
    bad = dict(tot)
    bad[("r",)] = [1.0, 1e12 + 1e5]
    bad[()] = 1e12 + 1e5 + 1.0
    bad[("c",)] = [0.4, 0.8, 1e12 + 1e5 - 0.2]
    with pytest.raises(ValueError, match="add up"):
        rk.Release(x, margins=bad, mechanism=rk.CellSuppression(), dims=("r", "c"))


def test_release_validation_published_part_exceeds_total():
    with pytest.raises(ValueError, match="cannot add up"):
        rk.Release(np.array([[5.0, np.nan], [1.0, 2.0]]),
                   margins={("r",): [4.0, 3.0], ("c",): [6.0, 1.0], (): 7.0},
                   mechanism=rk.CellSuppression(), dims=("r", "c"))


def test_audit_input_errors():
    rel = release_of(np.array([[1, 2], [3, 4]]), np.eye(2, dtype=bool), ("r", "c"))
    with pytest.raises(TypeError, match="rk.Release"):
        rk.audit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="together"):
        rk.audit(rel, sensitive=np.eye(2, dtype=bool))
    with pytest.raises(ValueError, match="shape"):
        rk.audit(rel, np.eye(3, dtype=bool), np.ones((3, 3)))
    with pytest.raises(ValueError, match="nonnegative"):
        rk.audit(rel, np.eye(2, dtype=bool), -np.ones((2, 2)))
    with pytest.raises(ValueError, match="boolean"):
        rk.audit(rel, np.full((2, 2), 3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="does not match"):
        rk.audit(rel, np.eye(2, dtype=bool), np.ones((2, 2)), table=np.ones((2, 2)))
