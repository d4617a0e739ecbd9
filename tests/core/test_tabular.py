"""The tabular system T x = 0 (riskengine.tabular, formerly riskengine.linear)."""

import numpy as np
import pytest
import scipy.linalg as sl

from riskengine.table import default_margins
from riskengine.tabular import tabular_system

CASES = [
    (("a",), (5,), None, None),
    (("a", "b"), (3, 4), None, None),
    (("a", "b"), (1, 4), None, None),
    (("a", "b"), (3, 4), [("a",)], None),
    (("a", "b", "c"), (2, 3, 4), None, None),
    (("a", "b", "c"), (2, 3, 2), [("a", "b"), ("c",)], None),
    (("v", "w"), (5, 3), None, {"v": [[0, 1], [2, 3, 4]]}),
    (("v", "w"), (4, 3), None, {"v": [[0], [1, 2, 3]], "w": [[0, 2], [1]]}),
]


@pytest.mark.parametrize("dims, shape, structure, groups", CASES)
def test_table_vectors_solve_the_system(dims, shape, structure, groups, rng):
    s = tabular_system(dims, shape, structure, groups)
    for _ in range(5):
        v = rng.integers(0, 20, shape)
        x = s.vector(v)
        assert np.all(s.A @ x == 0)
        assert np.array_equal(s.split(x)[(tuple(dims), None)], v)
    assert len(s.labels()) == s.n_var


@pytest.mark.parametrize("dims, shape, structure, groups", CASES)
def test_every_solution_is_a_table(dims, shape, structure, groups):
    # the totals are determined by the interior: the null space of T has dimension
    # equal to the number of interior cells, and the interior coordinates of a
    # null-space basis are independent
    s = tabular_system(dims, shape, structure, groups)
    null = sl.null_space(s.A.toarray())
    assert null.shape[1] == s.n_interior
    assert np.linalg.matrix_rank(null[: s.n_interior]) == s.n_interior


def test_structure_and_groups_are_validated():
    with pytest.raises(ValueError, match="partition"):
        tabular_system(("v", "w"), (3, 2), groups={"v": [[0, 1]]})
    with pytest.raises(ValueError, match="unknown dim"):
        tabular_system(("v", "w"), (3, 2), groups={"x": [[0, 1, 2]]})
    with pytest.raises(ValueError, match="disagree"):
        tabular_system(("v", "w"), (3,))
    s = tabular_system(("v", "w"), (2, 2), default_margins(("v", "w")))
    with pytest.raises(KeyError, match="no block"):
        s.block(("v",), grouped="v")
    assert s.block(("w",)).shape == (2,)
