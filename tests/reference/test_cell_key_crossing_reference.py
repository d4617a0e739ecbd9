"""The reference's likelihood integrated over the record keys when totals cross
(``cell_key.crossing_likelihood``), checked against the definition: the exact
inclusion-exclusion ``key_likelihood`` where totals do not cross, the record-level
simulation of ``protect_records`` (frequencies within 4.5 binomial standard errors), the
outcomes of one table adding up to 1, and the carries of one sum (Eulerian numbers).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from tests.reference import cell_key as ref

HANDBOOK = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2}, 3: {2: 0.3, 3: 0.4, 4: 0.3}}
SCALE = 2 ** 53                     # a float from rng.random() is an integer over 2^53
FULL = [("a",), ("b",), ()]         # every row, column and the grand total


def grid_ptable(rng, grid: int, width: int | None = None) -> dict:
    """A random p-table (top 1..3, row 0 = {0: 1}) whose probabilities are multiples of
    1/grid; each row ``width`` values (random 1..3 if None) among i-1, i, i+1."""
    top = int(rng.integers(1, 4))
    rows = {0: {0: 1.0}}
    for i in range(1, top + 1):
        cand = np.arange(i - 1, i + 2)
        k = int(rng.integers(1, 4)) if width is None else width
        js = np.sort(rng.choice(cand, size=k, replace=False))
        p = (1 + rng.multinomial(grid - k, np.ones(k) / k)) / grid
        rows[i] = dict(zip(js.tolist(), p.tolist()))
    return rows


def entry_sets(shape: tuple, dims: tuple, margins: list) -> list:
    """Every published entry's cells: the interior cells, then each margin's totals (C
    order), as ``protect_records`` returns them."""
    cells = list(np.ndindex(*shape))
    out = [frozenset([c]) for c in cells]
    for keep in margins:
        kept = [dims.index(d) for d in keep]
        for t in np.ndindex(*[shape[i] for i in kept]):
            out.append(frozenset(c for c in cells if tuple(c[i] for i in kept) == t))
    return out


def likelihood(ptab: dict, T: np.ndarray, sets: list, values, fn=None):
    """``fn`` (default :func:`crossing_likelihood`) of the table T publishing ``values``
    on ``sets``: entries holding the same cells counted once (they must agree, else 0)."""
    pub: dict = {}
    for h, y in zip(sets, values):
        if pub.setdefault(h, int(y)) != int(y):
            return 0.0
    return (fn or ref.crossing_likelihood)(ptab, list(pub.items()),
                                           lambda h: int(sum(T[c] for c in h)))


def _ends(ptab: dict, x: int):
    """The lookup of original x (as ``lookup`` cumulates the Fraction of each float p):
    the interval ends as integers over 2^53 (key k < cum iff k 2^53 < ceil(cum 2^53)) and
    the published values."""
    top = max(ptab)
    r = min(x, top)
    js = [j for j in sorted(ptab[r]) if ptab[r][j] > 0]
    cum, ends = Fraction(0), []
    for j in js:
        cum += Fraction(ptab[r][j])
        ends.append(math.ceil(cum * SCALE))
    return ends, np.array([x + (j - r) for j in js])


def simulate(ptab: dict, T: np.ndarray, sets: list, n: int, rng):
    """``n`` draws of the published entries (columns in the order of ``sets``) of the
    table T with one uniform float key per record, the records in C order of their cells,
    as ``protect_records`` publishes them: each entry's key the exact fractional part of
    the sum of its records' keys (integers over 2^53, summed exactly in int64), an empty
    entry published 0.  Returns (published, the record keys as integers over 2^53)."""
    recs = [c for c in np.ndindex(*T.shape) for _ in range(T[c])]
    u = rng.integers(0, SCALE, size=(n, len(recs)), dtype=np.int64)
    out = np.zeros((n, len(sets)), np.int64)
    for e, h in enumerate(sets):
        cols = [r for r, c in enumerate(recs) if c in h]
        if cols:
            key = u[:, cols].sum(axis=1) % SCALE
            ends, values = _ends(ptab, len(cols))
            k = sum((key >= end).astype(np.int64) for end in ends)
            out[:, e] = values[np.minimum(k, len(values) - 1)]
    return out, u


def check_with_protect_records(ptab, T, dims, margins, sets, pub, u, n):
    """The first n simulated draws equal ``protect_records`` with the same record keys."""
    recs = [c for c in np.ndindex(*T.shape) for _ in range(T[c])]
    for d in range(n):
        keys = (u[d] / SCALE).tolist()                   # exact: integers below 2^53
        _, interior, totals = ref.protect_records(ptab, recs, keys, T.shape, dims, margins)
        row = list(interior.ravel()) + [v for keep in margins for v in totals[keep].ravel()]
        assert row == pub[d].tolist()


def random_table(rng, shape, high: int, zeros: int) -> np.ndarray:
    """Counts 1..high in every cell but ``zeros`` random ones, which are 0."""
    T = rng.integers(1, high + 1, size=shape)
    T.flat[rng.choice(T.size, size=zeros, replace=False)] = 0
    return T


# --- the carries of one sum -----------------------------------------------------------------


def test_the_carries_of_one_sum_are_the_eulerian_numbers():
    """floor(r_1 + ... + r_n) = k with probability A(n, k)/n! exactly (one total)."""
    def eulerian(n, k):
        return sum((-1) ** j * math.comb(n + 1, j) * (k + 1 - j) ** n for j in range(k + 2))
    for n in range(2, 7):
        got = ref.carry_probabilities((tuple(range(n)),), n)
        assert got == {(k,): Fraction(eulerian(n, k), math.factorial(n)) for k in range(n)}
    # a 2 x 2 table's rows, columns and grand total: exact, adding up to exactly 1
    full = ref.carry_probabilities(((0, 1), (2, 3), (0, 2), (1, 3), (0, 1, 2, 3)), 4)
    assert sum(full.values()) == 1 and len(full) == 20
    assert full[(0, 0, 0, 0, 0)] == Fraction(1, 24) and full[(0, 0, 0, 0, 1)] == Fraction(1, 8)


# --- where the totals do not cross: the exact inclusion-exclusion -----------------------------

NONCROSSING = [((2,), ("a",), [()]), ((3,), ("a",), [()]), ((4,), ("a",), [()]),
               ((2, 2), ("a", "b"), [()]), ((2, 3), ("a", "b"), [()])]


@pytest.mark.parametrize("seed", range(3))
def test_equals_key_likelihood_where_totals_do_not_cross(seed):
    """1-D tables with their total, 2-D tables with the grand total only; counts 0..5 with
    zeros; p-tables on grids of 4, 5, 10 and 20; outcomes drawn (possible) and perturbed
    (mostly impossible): within 1e-12 of the exact rational inclusion-exclusion."""
    rng = np.random.default_rng(7100 + seed)
    positive = 0
    for i in range(20):
        shape, dims, margins = NONCROSSING[i % len(NONCROSSING)]
        grid = int(rng.choice([4, 5, 10] if len(shape) == 2 else [4, 5, 10, 20]))
        ptab = HANDBOOK if i % 7 == 3 else grid_ptable(rng, grid)
        T = random_table(rng, shape, 5, int(rng.integers(0, 3)))
        sets = entry_sets(shape, dims, margins)
        pub, _ = simulate(ptab, T, sets, 4, rng)
        outcomes = list(pub) + [p + rng.integers(-1, 2, size=p.shape) for p in pub[:2]]
        for y in outcomes:
            got = likelihood(ptab, T, sets, y)
            want = likelihood(ptab, T, sets, y, fn=ref.key_likelihood)
            assert want is not None and abs(got - want) <= 1e-12, (T, y, got, want)
            positive += want > 0
    assert positive >= 60


# --- totals that cross: the record-level simulation and the outcomes' sum ------------------


SIMULATED = [((2, 2), ("a", "b"), FULL, 4, 2, 0), ((2, 3), ("a", "b"), FULL, 5, 2, 0),
             ((2, 2), ("a", "b"), FULL, 10, 3, 1), ((2, 3), ("a", "b"), FULL, 4, 2, 1),
             ((2, 2), ("a", "b"), FULL, 5, 3, 2), ((2, 3), ("a", "b"), FULL, 10, 2, 0),
             ((2, 3), ("a", "b"), [("a",), ()], 10, 2, 0),                        # nested
             ((2, 2, 2), ("a", "b", "c"), [("a", "b"), ("a",), ()], 5, 2, 1),     # nested, 3-D
             ((2, 2, 2), ("a", "b", "c"), [("a", "b"), ("c",)], 4, 2, 0)]         # crossing


@pytest.mark.parametrize("case", range(len(SIMULATED)))
def test_crossing_totals_equal_the_record_simulation(case):
    """2 x 2 and 2 x 3 tables with every row, column and the grand total, a 2 x 3 table's
    rows and grand total (nested), 2 x 2 x 2 tables with nested or crossing margins;
    counts 1..5 and 0..2 zeros; p-tables on grids of 4, 5 and 10, two or three values a
    row.  The five most frequent published outcomes of a pilot of 20,000 draws of the
    record keys (its first 1,000 draws equal to ``protect_records`` draw by draw) have, in
    200,000 fresh draws, frequencies within 4.5 binomial standard errors of the
    likelihood (outcomes chosen on the pilot: no selection bias)."""
    shape, dims, margins, grid, width, zeros = SIMULATED[case]
    rng = np.random.default_rng(7200 + case)
    ptab = grid_ptable(rng, grid, width=width)
    T = random_table(rng, shape, 5 if len(shape) == 2 else 3, zeros)
    sets = entry_sets(shape, dims, margins)
    pilot, u = simulate(ptab, T, sets, 20_000, rng)
    check_with_protect_records(ptab, T, dims, margins, sets, pilot, u, 1_000)
    outcomes, freq = np.unique(pilot, axis=0, return_counts=True)
    chosen = outcomes[np.argsort(-freq)[:5]]
    n = 200_000
    pub, _ = simulate(ptab, T, sets, n, rng)
    for y in chosen:
        p = likelihood(ptab, T, sets, y)
        f = np.all(pub == y, axis=1).mean()
        assert p > 1e-3 and abs(f - p) <= 4.5 * math.sqrt(p * (1 - p) / n), (T, ptab, f, p)


def _outcomes(ptab: dict, T: np.ndarray, sets: list):
    """Every published outcome of T the p-table allows entry by entry."""
    top = max(ptab)
    choices = []
    for h in sets:
        x = int(sum(T[c] for c in h))
        r = min(x, top)
        choices.append([0] if x == 0 else
                       [x + (j - r) for j, p in ptab[r].items() if p > 0])
    return product(*choices)


@pytest.mark.parametrize("shape, grid, width, zeros", [((2, 2), 4, 3, 0), ((2, 2), 10, 3, 1),
                                                       ((2, 3), 5, 2, 0), ((2, 3), 10, 2, 1)])
def test_the_outcomes_of_one_table_add_up_to_one(shape, grid, width, zeros):
    """Every published outcome of one table with every total (2 x 2 with three values a
    p-table row, 2 x 3 with two; up to 3^9 outcomes): the likelihoods add up to 1 within
    1e-9."""
    rng = np.random.default_rng(7300 + 10 * grid + width)
    ptab = grid_ptable(rng, grid, width=width)
    T = random_table(rng, shape, 4, zeros)
    sets = entry_sets(shape, ("a", "b"), FULL)
    total = math.fsum(likelihood(ptab, T, sets, y) for y in _outcomes(ptab, T, sets))
    assert abs(total - 1) <= 1e-9


# --- the issue case and the posterior ------------------------------------------------------------


def test_the_issue_case_an_empty_cell_shares_its_total_key():
    """Cells (0 or 1, 3) with their total, the handbook's p-table, published (0, 4; total
    3): with cell 0 empty the total holds cell 1's records, so the same key would publish
    3 as 4 and as 3: likelihood 0; with cell 0 = 1 it is positive."""
    sets = entry_sets((2,), ("a",), [()])
    assert likelihood(HANDBOOK, np.array([0, 3]), sets, [0, 4, 3]) == 0.0
    assert ref.prob(HANDBOOK, 3, 4) * ref.prob(HANDBOOK, 3, 3) > 0      # the product's 0.12
    assert likelihood(HANDBOOK, np.array([1, 3]), sets, [0, 4, 3]) > 0
    post = ref.posterior(HANDBOOK, [0, 4], {(): np.array(3)}, ("a",), {"kind": "uniform"},
                         keys=True, crossing=True)
    assert post["keys"] and post["count"] == 1
    assert post["cells"][(0,)].get(1) == pytest.approx(1.0)
    assert post["cells"][(1,)].get(3) == pytest.approx(1.0)


def test_posterior_with_crossing_totals():
    """A 2 x 2 table with every total: ``crossing=True`` weighs each candidate by
    :func:`crossing_likelihood` (keys True), ``crossing=False`` keeps the product (keys
    False); where totals do not cross the flag changes nothing."""
    ptab = {0: {0: 1.0}, 1: {0: 0.25, 1: 0.5, 2: 0.25}, 2: {1: 0.2, 2: 0.6, 3: 0.2}}
    P = np.array([[1, 2], [0, 3]])
    margins = {("a",): np.array([3, 3]), ("b",): np.array([1, 5]), (): np.array(6)}
    spec = {"kind": "uniform"}
    post = ref.posterior(ptab, P, margins, ("a", "b"), spec, keys=True, crossing=True)
    old = ref.posterior(ptab, P, margins, ("a", "b"), spec, keys=True)
    assert post["keys"] and not old["keys"]
    # the same by hand over the box of candidates
    sets = entry_sets((2, 2), ("a", "b"), FULL)
    values = list(P.ravel()) + [3, 3, 1, 5, 6]
    w = {}
    for t in product(*[range(max(v - 1, 0), v + 2) for v in P.ravel()]):
        T = np.array(t).reshape(2, 2)
        w[t] = likelihood(ptab, T, sets, values)
    z = sum(w.values())
    assert post["count"] == sum(v > 0 for v in w.values())
    assert post["log_z"] == pytest.approx(math.log(z), abs=1e-12)
    for i, c in enumerate(np.ndindex(2, 2)):
        pm: dict = {}
        for t, v in w.items():
            pm[t[i]] = pm.get(t[i], 0.0) + v / z
        got = post["cells"][c]
        assert set(got) <= set(pm)
        for x, p in pm.items():
            assert got.get(x, 0.0) == pytest.approx(p, abs=1e-12)
    one = ref.posterior(ptab, P, {(): np.array(6)}, ("a", "b"), spec, keys=True)
    two = ref.posterior(ptab, P, {(): np.array(6)}, ("a", "b"), spec, keys=True, crossing=True)
    assert one["keys"] and two["keys"] and one["log_z"] == two["log_z"]
    assert one["cells"] == two["cells"]
