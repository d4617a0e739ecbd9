"""kernels/key_carries.py: the joint law of the carries of sums of uniform remainders,
and the cell-key likelihood summed over the keys' grid segments.

References: Eulerian numbers (one total: Pr(floor(r_1 + ... + r_m) = c) = A(m, c) / m!,
exact); tests/reference/cell_key.py's ``carry_probabilities`` (qhull volumes made exact
rationals: equal as Fractions); a brute-force sum over every vector of grid segments
(``itertools.product``) for the likelihood (1e-12).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from kernels import key_carries as kc
from tests.reference import cell_key as ref


def _eulerian(m, c):
    return sum((-1) ** j * math.comb(m + 1, j) * (c + 1 - j) ** m for j in range(c + 2))


@pytest.mark.parametrize("m", range(1, 7))
def test_one_total_gives_the_eulerian_numbers(m):
    carries, probs, exact = kc.carry_law(np.ones((1, m), bool))
    assert carries.ravel().tolist() == list(range(m))
    assert list(exact) == [Fraction(_eulerian(m, c), math.factorial(m)) for c in range(m)]
    assert probs.sum() == pytest.approx(1.0, abs=1e-15)


def _table_structure(rng, R, C, margins):
    """The totals (two nonempty cells or more) of an R x C table with random zeros."""
    nonempty = rng.random((R, C)) < 0.8
    cells = [(i, j) for i in range(R) for j in range(C) if nonempty[i, j]]
    sets = set()
    for keep in margins:
        for t in itertools.product(*[range((R, C)[a]) for a in keep]):
            held = tuple(k for k, c in enumerate(cells)
                         if all(c[a] == t[q] for q, a in enumerate(keep)))
            if len(held) > 1:
                sets.add(held)
    return tuple(sorted(sets)), len(cells)


def test_tables_equal_the_reference_exactly():
    """40 random 2-D structures (2 x 2 to 2 x 4 and 3 x 3, rows / columns / grand total
    in every combination, random empty cells): every carry vector's probability equals the
    reference's as a Fraction."""
    rng = np.random.default_rng(26)
    margins = [[(0,), (1,), ()], [(0,), (1,)], [(0,), ()], [(1,), ()]]
    checked = 0
    for i in range(40):
        R, C = [(2, 2), (2, 3), (3, 2), (2, 4)][i % 4]
        sets, m = _table_structure(rng, R, C, margins[i % len(margins)])
        if not sets:
            continue
        members = np.zeros((len(sets), m), bool)
        for t, s in enumerate(sets):
            members[t, list(s)] = True
        carries, _, exact = kc.carry_law(members)
        want = ref.carry_probabilities(sets, m)
        got = {tuple(int(v) for v in c): p for c, p in zip(carries, exact)}
        assert got == want, (R, C, sets)
        checked += 1
    assert checked >= 30


def test_any_set_system_is_exact_or_refused():
    """Random systems of 2-4 sets over 3-5 remainders (not all totally unimodular): the law
    equals the reference exactly, or the kernel refuses -- never a wrong law."""
    rng = np.random.default_rng(7)
    answered = 0
    for _ in range(40):
        m = int(rng.integers(3, 6))
        k = int(rng.integers(2, 5))
        sets = set()
        while len(sets) < k:
            size = int(rng.integers(2, m + 1))
            sets.add(tuple(sorted(rng.choice(m, size, replace=False).tolist())))
        sets = tuple(sorted(sets))
        members = np.zeros((k, m), bool)
        for t, s in enumerate(sets):
            members[t, list(s)] = True
        try:
            carries, _, exact = kc.carry_law(members)
        except kc.CarryLawError:
            continue
        answered += 1
        got = {tuple(int(v) for v in c): p for c, p in zip(carries, exact)}
        assert got == ref.carry_probabilities(sets, m), sets
    assert answered >= 30


def _brute(N, cell_ok, total_ok, members, carries, probs):
    m, k = cell_ok.shape[0], total_ok.shape[0]
    s = 0.0
    for g in itertools.product(range(N), repeat=m):
        if not all(cell_ok[i, g[i]] for i in range(m)):
            continue
        sums = [sum(g[i] for i in range(m) if members[t, i]) for t in range(k)]
        for c, p in zip(carries, probs):
            if all(total_ok[t, (sums[t] + c[t]) % N] for t in range(k)):
                s += p
    return s / N ** m


def test_likelihood_equals_the_sum_over_every_segment():
    """120 random cases (grids of 2 to 7 segments, 2-4 nonempty cells, 1-3 totals that
    nest or cross, random allowed segments, totals that finish before the last cell):
    the chain equals the brute-force sum within 1e-12, with and without a memo of mask
    vectors shared across cases."""
    rng = np.random.default_rng(31)
    memos: dict = {}                          # shared by the cases of one structure
    for _ in range(120):
        N = int(rng.integers(2, 8))
        m = int(rng.integers(2, 5))
        k = int(rng.integers(1, 4))
        sets = set()
        for _ in range(10 * k):
            if len(sets) == k:
                break
            size = int(rng.integers(2, m + 1))
            sets.add(tuple(sorted(rng.choice(m, size, replace=False).tolist())))
        members = np.zeros((len(sets), m), bool)
        for t, s in enumerate(sorted(sets)):
            members[t, list(s)] = True
        try:
            carries, probs, _ = kc.carry_law(members)
        except kc.CarryLawError:
            continue
        cell_ok = rng.random((m, N)) < 0.6
        total_ok = rng.random((len(sets), N)) < 0.5
        got = kc.likelihood(N, cell_ok, total_ok, members, carries, probs)
        want = _brute(N, cell_ok, total_ok, members, carries, probs)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (N, sorted(sets))
        memo = memos.setdefault((N, members.tobytes(), members.shape), {})
        again = kc.likelihood(N, cell_ok, total_ok, members, carries, probs, memo=memo)
        assert again == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_limits_refuse_by_name():
    members = np.ones((1, 6), bool)
    with pytest.raises(kc.CarryLawError, match="more than 10 states"):
        kc.carry_law(members, max_states=10)
    # a 2 x 3 table with every total: the two rows' segment sums stay open (100 of them)
    rows = [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]]
    cols = [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 1]]
    members = np.array(rows + cols + [[1] * 6], bool)
    carries, probs, _ = kc.carry_law(members)
    ok = np.ones((6, 10), bool)
    with pytest.raises(kc.CarryLawError, match="more than 50 segment sums"):
        kc.likelihood(10, ok, np.ones((6, 10), bool), members, carries, probs,
                      max_states=50)
    assert kc.likelihood(10, ok, np.ones((6, 10), bool), members, carries, probs,
                         max_states=10_000) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.slow
def test_a_3_by_3_table_s_law_against_simulation():
    """The 3 x 3 table with every total (1,071 carry vectors; the qhull reference takes
    25 s there): 2,000,000 draws of nine uniform remainders fit the law (chi-square,
    p > 1e-4) and reach no vector outside it."""
    from tests.reference.agreement import gof_pvalue

    rows = [[1 if k // 3 == i else 0 for k in range(9)] for i in range(3)]
    cols = [[1 if k % 3 == j else 0 for k in range(9)] for j in range(3)]
    members = np.array(rows + cols + [[1] * 9], bool)
    carries, probs, exact = kc.carry_law(members)
    assert len(exact) == 1071 and sum(exact) == 1
    rng = np.random.default_rng(2026)
    draws = []
    for _ in range(4):
        r = rng.random((500_000, 9))
        draws.extend(map(tuple, np.floor(r @ members.T).astype(np.int64).tolist()))
    expected = {tuple(int(v) for v in c): float(p) for c, p in zip(carries, probs)}
    assert gof_pvalue(draws, expected) > 1e-4
