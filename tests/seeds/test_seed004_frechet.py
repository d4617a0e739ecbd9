"""Seed 004 (Cox, course notes), "Frechet Bounds" / "Counter examples": 3-D tables given
by their 2-way margins, where the Fréchet bounds fail.  Seed numbers (each example as it
is printed, with its caption): riskengine/data/seeds.py (S004.FRECHET_*).  Counts and
bounds are compared exactly; the tables' controlled roundings against the brute force of
tests/reference/rounding.py."""

import numpy as np
import pytest

import riskengine as rk
from riskengine.data.seeds import S004
from tests.reference import rounding as ref
from tests.reference.tables import tables_with_2way_margins

DIMS = ("a", "b", "c")
INFEASIBLE = S004.FRECHET_INFEASIBLE
FEASIBLE = S004.FRECHET_FEASIBLE


def _margins(ex):
    """Every margin of an example (its 2-way margins and the 1-way and grand totals they
    imply), keyed by dims."""
    ab, ac, bc = ex["ab"], ex["ac"], ex["bc"]
    return {("a", "b"): ab, ("a", "c"): ac, ("b", "c"): bc, ("a",): ab.sum(1),
            ("b",): ab.sum(0), ("c",): ac.sum(0), (): ab.sum()}


def _margins_release(ex):
    shape = ex["ab"].shape + (ex["ac"].shape[1],)
    return rk.Release(None, margins=_margins(ex), mechanism=rk.MarginsOnly(), dims=DIMS,
                      coords={d: list(range(n)) for d, n in zip(DIMS, shape)})


@pytest.mark.parametrize("name", sorted(INFEASIBLE))
def test_seed004_infeasible_margins(name):
    """Seed 004, 'Example 1/1a: Infeasible 3-D Table' and 'Example 2/2a: Infeasible Frechet
    Consistent 3-D Table': the margins agree on every 1-way total, the Fréchet bounds are
    consistent (lower <= upper), yet no nonnegative table (real or integer) has them."""
    rel = _margins_release(INFEASIBLE[name])
    fb = rk.frechet_bounds(rel)
    if name in S004.FRECHET_CONSISTENT:                  # "Frechet consistent"
        assert (fb["lower"] <= fb["upper"]).all()
    for method in ("ilp", "lp"):
        with pytest.raises(ValueError, match="no nonnegative table"):
            rk.exact_bounds(rel, method=method)
    with pytest.raises(ValueError, match="no original table is consistent"):
        rk.posterior(rel)
    with pytest.raises(ValueError, match="no original table is consistent"):
        rk.count_candidates(rel)               # the same answer as the posterior's


@pytest.mark.parametrize("name", ["3", "3a", "4", "5"])
def test_seed004_feasible_examples_and_exact_bounds(name):
    """Seed 004, Examples 3, 3a, 4 ('Feasible (unique)') and 5 ('3 df and 4 Integer
    Solutions'): the number of tables (exact), and the exact bounds by enumeration equal those
    by integer programming."""
    n_tables = S004.FRECHET_N_TABLES[name]
    rel = _margins_release(FEASIBLE[name])
    assert rk.count_candidates(rel) == n_tables
    ex_e = rk.exact_bounds(rel, method="enumerate")
    ex_i = rk.exact_bounds(rel, method="ilp")
    assert np.array_equal(ex_e["lower"], ex_i["lower"])
    assert np.array_equal(ex_e["upper"], ex_i["upper"])
    fb = rk.frechet_bounds(rel)
    assert (fb["lower"] <= ex_i["lower"]).all() and (ex_i["upper"] <= fb["upper"]).all()
    if n_tables == 1:
        assert np.array_equal(ex_i["lower"], ex_i["upper"])


def test_seed004_example3_inexact_upper_bounds():
    """Seed 004, 'Example 3: Feasible (unique) 3-D Table with Inexact Upper Bounds': every usual
    upper bound min(n_ab, n_ac, n_bc) is 1, yet 12 of the 27 cells are 0 in the only table
    (hand count, exact); the grand total 15 is the one printed."""
    ex3 = FEASIBLE["3"]
    fb = rk.frechet_bounds(_margins_release(ex3))
    ex = rk.exact_bounds(_margins_release(ex3))
    assert (fb["upper"] == 1).all()
    assert int((ex["upper"] < fb["upper"]).sum()) == 12
    assert int(ex["upper"].sum()) == 15 == _margins(ex3)[()]


def test_seed004_example3a_inexact_upper_bounds():
    """Example 3a: the usual upper bound 2 at cell (1, 1, 2) (n_ab = 2, n_ac = 2, n_bc = 2)
    while that cell is 0 in the only table; the other cells bounded by 2 attain it."""
    fb = rk.frechet_bounds(_margins_release(FEASIBLE["3a"]))
    ex = rk.exact_bounds(_margins_release(FEASIBLE["3a"]))
    two = np.argwhere(fb["upper"].values == 2).tolist()
    assert two == [[1, 1, 1], [1, 1, 2], [2, 1, 2]]
    assert [int(ex["upper"].values[tuple(c)]) for c in two] == [2, 0, 2]


def test_seed004_example4_inexact_frechet_bounds():
    """Example 4 (3 x 2 x 3), 'Inexact Frechet Bounds': at cell (0, 0, 0) the Fréchet lower
    bound is 1 but the only table has 2 there; the interval bounds are those of the LP too."""
    rel = _margins_release(FEASIBLE["4"])
    fb = rk.frechet_bounds(rel)
    ex = rk.exact_bounds(rel)
    assert int(fb["lower"][0, 0, 0]) == 1 and int(ex["lower"][0, 0, 0]) == 2
    assert int((fb["lower"] < ex["lower"]).sum()) >= 1
    assert int((ex["upper"] < fb["upper"]).sum()) >= 1
    lp = rk.exact_bounds(rel, method="lp")
    assert np.allclose(lp["lower"], ex["lower"]) and np.allclose(lp["upper"], ex["upper"])


def test_seed004_example5_three_df():
    """Example 5: '3 df and 4 integer solutions' — 4 tables (above); the real solution set has
    dimension 3 (number of cells the LP lets be positive minus the rank of their constraints)."""
    rel = _margins_release(FEASIBLE["5"])
    lp = rk.exact_bounds(rel, method="lp")
    free = (lp["upper"].values > 1e-9).ravel()
    A = []
    shape = (3, 3, 3)
    for keep in ref.MARGINS_3D[:3]:
        for pos in np.ndindex(*[shape[a] for a in keep]):
            z = np.zeros(shape)
            sl = [slice(None)] * 3
            for a, p in zip(keep, pos):
                sl[a] = p
            z[tuple(sl)] = 1
            A.append(z.ravel())
    A = np.array(A)[:, free]
    assert int(free.sum()) - np.linalg.matrix_rank(A) == S004.FRECHET_EX5_DF


@pytest.mark.parametrize("name", ["3", "3a", "4", "5"])
def test_seed004_feasible_tables_round_correctly(name):
    """The tables of seed 004's feasible 3-D examples (recovered exactly from their margins)
    protected at bases 2 and 3, both methods: a controlled rounding (checked against the table
    and all its totals), or a ValueError exactly when brute force over all up/down patterns
    finds none (Ernst's stacking may also give up after its draws: then a rounding exists and
    method='optimal' returns one)."""
    m = FEASIBLE[name]
    rel = _margins_release(m)
    post = rk.posterior(rel)
    tables = [post.start + np.argmax(post.probs > 0, -1)] if post.n_candidates == 1 else []
    if not tables:                                        # Example 5: walk its 4 tables
        tables = [T.astype(np.int64) for T in tables_with_2way_margins(m["ab"], m["ac"],
                                                                        m["bc"])]
    assert len(tables) == post.n_candidates
    for x in tables:
        for B in (2, 3):
            exists = len(ref.all_roundings_3d(x, B)) > 0
            for method in ("unbiased", "optimal"):
                try:
                    out = rk.ControlledRounding(B, method=method).protect(
                        rk.Table(x, dims=DIMS), np.random.default_rng(11))
                except ValueError as e:
                    assert not exists or (method == "unbiased" and "Ernst" in str(e))
                    continue
                assert exists
                pub = [out.margins[tuple(DIMS[a] for a in keep)] for keep in ref.MARGINS_3D]
                assert ref.controlled_rounding_faults_3d(x, out.published, pub, B) == []
