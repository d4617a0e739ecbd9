"""Integer null spaces of small cycle matrices (which sign vectors give the same table).

For a cycle matrix A (cells x cycles) two sign vectors e, e' give the same
table iff A (e - e') = 0.  The helpers here find the integer vectors z with
A z = 0 that can separate two sign vectors (entries in [-2, 2]).
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from math import gcd

import numpy as np


def nullity(A: np.ndarray) -> int:
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return A.shape[1]
    return A.shape[1] - int(np.linalg.matrix_rank(A))


def rank1_generator(A: np.ndarray):
    """If the null lattice of A is spanned by one z with entries in {-1, 0, 1}, return z
    (first nonzero entry positive), else None.  Verified exactly in integers."""
    A = np.asarray(A)
    if nullity(A) != 1:
        return None
    _, _, vt = np.linalg.svd(A.astype(float))
    v = vt[-1]
    v = v / np.abs(v).max()
    z = np.rint(v).astype(np.int64)
    if not np.allclose(v, z, atol=1e-8) or np.any(A.astype(np.int64) @ z != 0):
        return None
    if np.any(np.abs(z) > 1):
        return None
    g = 0
    for x in z:
        g = gcd(g, int(abs(x)))
    if g != 1:
        return None
    if z[np.nonzero(z)[0][0]] < 0:
        z = -z
    return z


def _rref_null_basis(A: np.ndarray):
    """Exact rational null-space basis in RREF form: (free columns, basis rows)."""
    rows = [[Fraction(int(x)) for x in r] for r in np.asarray(A)]
    n = np.asarray(A).shape[1]
    pivots = []
    r = 0
    for c in range(n):
        piv = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if piv is None:
            continue
        rows[r], rows[piv] = rows[piv], rows[r]
        inv = 1 / rows[r][c]
        rows[r] = [x * inv for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r])]
        pivots.append(c)
        r += 1
        if r == len(rows):
            break
    free = [c for c in range(n) if c not in pivots]
    basis = []
    for f in free:
        z = [Fraction(0)] * n
        z[f] = Fraction(1)
        for i, p in enumerate(pivots):
            z[p] = -rows[i][f]
        basis.append(z)
    return free, basis


def small_lattice_vectors(A: np.ndarray, bound: int = 2, max_free: int = 6):
    """All z != 0 with A z = 0, entries in [-bound, bound], first nonzero negative.

    Returns an int64 array (n, m), or None when the null space has more than
    ``max_free`` dimensions (too many to list).
    """
    A = np.asarray(A, dtype=np.int64)
    m = A.shape[1]
    if nullity(A) == 0:
        return np.zeros((0, m), dtype=np.int64)
    free, basis = _rref_null_basis(A)
    r = len(free)
    if r > max_free:
        return None
    den = 1
    for z in basis:
        for x in z:
            den = den * x.denominator // gcd(den, x.denominator)
    N = np.array([[int(x * den) for x in z] for z in basis], dtype=np.int64)  # (r, m)
    coef = np.array(list(product(range(-bound, bound + 1), repeat=r)), dtype=np.int64)
    Z = coef @ N
    ok = np.all(Z % den == 0, axis=1)
    Z = Z[ok] // den
    Z = Z[np.all(np.abs(Z) <= bound, axis=1) & np.any(Z != 0, axis=1)]
    if len(Z):
        first = Z[np.arange(len(Z)), np.argmax(Z != 0, axis=1)]
        Z = Z[first < 0]
    assert not np.any(Z @ A.T), "lattice vectors must be in the null space"
    return np.ascontiguousarray(Z)


def row_basis(A: np.ndarray) -> np.ndarray:
    """Indices of rows of A forming a basis of its row space (greedy, in order)."""
    A = np.asarray(A, dtype=float)
    chosen = []
    rank = 0
    for i in range(A.shape[0]):
        r = np.linalg.matrix_rank(A[chosen + [i]])
        if r > rank:
            chosen.append(i)
            rank = r
    return np.array(chosen, dtype=np.int64)
