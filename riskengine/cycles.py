"""Cycle designs for cyclic perturbation (Duncan & Roehrig, seed 003).

A design is an integer array of shape ``(m, *table_shape)`` with entries in
{-1, 0, +1}; every published margin of every cycle must be zero
(:func:`check` verifies it against a table structure).
"""

from __future__ import annotations

import numpy as np

from . import _validate as V
from .table import default_margins, margin_closure

__all__ = ["DESIGNS", "check", "coverage", "design", "diagonal", "elementary_moves", "entries",
           "seed003_three_way", "staircase"]


def staircase(n: int, m: int) -> np.ndarray:
    """An n x m design in which every cell is covered exactly twice (once +, once -).

    For n <= m there are m cycles; cycle k puts +1 at (i, (i + k) mod m) for every
    row i, and -1 at (i, (i + k + 1) mod m) for i < n - 1 and at (n - 1, k), so each
    cycle is a closed alternating path through n distinct columns.  For n > m the
    design of the transposed table is used.  With n == m this is :func:`diagonal`.

    Parameters
    ----------
    n, m : int
        The table's numbers of rows and columns, each >= 2.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(max(n, m), n, m)``, entries in {-1, 0, +1}.

    Examples
    --------
    >>> import riskengine as rk
    >>> rk.cycles.coverage(rk.cycles.staircase(2, 3)).tolist()
    [[2, 2, 2], [2, 2, 2]]
    """
    n = V.integer(n, "n", 2)
    m = V.integer(m, "m", 2)
    if n > m:
        return np.ascontiguousarray(np.swapaxes(staircase(m, n), 1, 2))
    c = np.zeros((m, n, m), dtype=np.int64)
    rows = np.arange(n)
    for k in range(m):
        c[k, rows, (rows + k) % m] += 1
        c[k, rows[:-1], (rows[:-1] + k + 1) % m] -= 1
        c[k, n - 1, k] -= 1
    return c


def diagonal(n: int) -> np.ndarray:
    """Seed 003's n x n design: cycle k has +1 at (i, i+k mod n), -1 at (i, i+k+1 mod n).

    Every cell lies in exactly two cycles; the n cycles sum to zero (linearly dependent).

    Parameters
    ----------
    n : int
        The table's number of rows and of columns, >= 2.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(n, n, n)``, entries in {-1, 0, +1}.
    """
    n = V.integer(n, "n", 2)
    c = np.zeros((n, n, n), dtype=np.int64)
    rows = np.arange(n)
    for k in range(n):
        c[k, rows, (rows + k) % n] += 1
        c[k, rows, (rows + k + 1) % n] -= 1
    return c


# Seed 003, slide "A Set of Margin-Preserving Perturbations": M1 for the 4 x 4 x 3
# table, layers k = 1, 2, 3 ("0" and "." are both zero); M2, M3, M4 roll its rows.
_SEED003_M1 = np.array([
    [[1, -1, 0, 0], [0, 1, -1, 0], [0, 0, 1, -1], [-1, 0, 0, 1]],
    [[0, 1, -1, 0], [0, 0, 1, -1], [-1, 0, 0, 1], [1, -1, 0, 0]],
    [[-1, 0, 1, 0], [0, -1, 0, 1], [1, 0, -1, 0], [0, 1, 0, -1]],
], dtype=np.int64)  # axes (k, i, j)


def seed003_three_way() -> np.ndarray:
    """Seed 003's four perturbations of a 4 x 4 x 3 table (dims i, j, k), shape (4, 4, 4, 3).

    M_s is M_1 with its rows rolled down by s - 1; every 2-way margin of each is zero
    and the four sum to zero.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(4, 4, 4, 3)``, entries in {-1, 0, +1}.
    """
    m1 = np.transpose(_SEED003_M1, (1, 2, 0))  # (i, j, k)
    return np.stack([np.roll(m1, s, axis=0) for s in range(4)])


def elementary_moves(shape, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` random basic moves (2 x 2, or 2 x 2 x 2 for 3-way tables), random sign.

    A 2 x 2 move is +1 at (i, j), (i', j'), -1 at (i, j'), (i', j); the 2 x 2 x 2 move
    has sign (-1)^(number of primed indices).  They keep every (k-1)-way margin.

    Parameters
    ----------
    shape : sequence of int
        The table's shape; every dim needs >= 2 categories.
    count : int
        The number of moves.
    rng : numpy.random.Generator
        The source of randomness.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(count, *shape)``, entries in {-1, 0, +1}.
    """
    shape = tuple(int(s) for s in shape)
    if any(s < 2 for s in shape):
        raise ValueError(f"every dimension needs >= 2 categories for a move, got shape {shape}")
    out = np.zeros((count, *shape), dtype=np.int64)
    for t in range(count):
        pairs = [rng.choice(s, size=2, replace=False) for s in shape]
        for corner in np.ndindex(*(2,) * len(shape)):
            idx = tuple(p[c] for p, c in zip(pairs, corner))
            out[(t, *idx)] = (-1) ** sum(corner)
        if rng.random() < 0.5:
            out[t] = -out[t]
    return out


def coverage(cycles: np.ndarray) -> np.ndarray:
    """Number of cycles touching each cell.

    Parameters
    ----------
    cycles : array-like
        A design, shape ``(m, *table_shape)``.

    Returns
    -------
    numpy.ndarray
        int array of the table's shape.
    """
    return (np.asarray(cycles) != 0).sum(axis=0)


def entries(cycles) -> np.ndarray:
    """A design's entries as int64 ``(m, *shape)``: integers in {-1, 0, +1}, no cycle all
    zero, at least one cycle; else ``ValueError`` naming the cycle.

    Parameters
    ----------
    cycles : array-like
        A design, shape ``(m, *table_shape)``.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(m, *table_shape)``, entries in {-1, 0, +1}.
    """
    c = np.asarray(cycles)
    if c.ndim < 2:
        raise ValueError(f"cycles must have shape (m, *table_shape), got shape {c.shape}")
    if c.size == 0 or c.shape[0] == 0:
        raise ValueError("cycles must hold at least one cycle")
    if not np.issubdtype(c.dtype, np.integer):
        cf = c.astype(float)
        if not np.all(np.isfinite(cf)) or not np.all(cf == np.round(cf)):
            raise ValueError("cycle entries must be integers in {-1, 0, +1}")
    c = c.astype(np.int64)
    bad = ~np.isin(c, (-1, 0, 1))
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        raise ValueError(f"cycle {k} has entry {int(c[bad][0])}; entries must be -1, 0 or +1")
    for k in range(c.shape[0]):
        if not c[k].any():
            raise ValueError(f"cycle {k} is all zero")
    return c


def check(cycles, shape, dims=None, margins=None) -> np.ndarray:
    """Validate a design against a table structure; return it as int64 (m, *shape).

    Parameters
    ----------
    cycles : array-like
        A design, shape ``(m, *shape)`` (or one cycle of ``shape``).
    shape : sequence of int
        The table's shape.
    dims : sequence of str, optional
        The table's dims (default ``dim_0, dim_1, ...``).
    margins : sequence of tuples, optional
        The published margin configurations (default: as for :class:`~riskengine.Table`).

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(m, *shape)``, entries in {-1, 0, +1}.

    Raises
    ------
    ValueError
        Naming the cycle and the entry or published margin it breaks.
    """
    c = np.asarray(cycles)
    shape = tuple(int(s) for s in shape)
    if c.ndim == len(shape):
        c = c[None]
    if c.ndim != len(shape) + 1 or tuple(c.shape[1:]) != shape:
        raise ValueError(f"cycles must have shape (m, {', '.join(map(str, shape))}) to match "
                         f"the table, got {c.shape}")
    c = entries(c)
    return keeps_margins(c, dims, margins)


def keeps_margins(c: np.ndarray, dims=None, margins=None) -> np.ndarray:
    """``c`` (validated entries) if every published margin of every cycle is zero, else
    ``ValueError`` naming the cycle and the margin it breaks."""
    shape = c.shape[1:]
    dims = tuple(dims) if dims is not None else tuple(f"dim_{i}" for i in range(len(shape)))
    margins = default_margins(dims) if margins is None else margin_closure(margins, dims)
    for keep in margins:
        axes = tuple(i + 1 for i, d in enumerate(dims) if d not in keep)
        tot = c.sum(axis=axes) if axes else c
        bad = np.atleast_2d(tot.reshape(c.shape[0], -1)) != 0
        if bad.any():
            k, j = (int(x) for x in np.argwhere(bad)[0])
            tshape = tuple(shape[i] for i, d in enumerate(dims) if d in keep)
            where = np.unravel_index(j, tshape) if tshape else ()
            where = tuple(int(i) for i in where) if tshape else (0,)
            val = int(tot.reshape(c.shape[0], -1)[k, j])
            raise ValueError(f"cycle {k} breaks the published margin {keep}: its total "
                             f"at {where} is {val}, must be 0")
    return c


#: named designs of :func:`design`
DESIGNS = ("diagonal", "staircase", "seed003_three_way")


def design(name: str, shape) -> np.ndarray:
    """The named design for a table of ``shape``: ``"diagonal"`` (n x n), ``"staircase"``
    (n x m) or ``"seed003_three_way"`` (4 x 4 x 3).

    Parameters
    ----------
    name : {"diagonal", "staircase", "seed003_three_way"}
        The design.
    shape : sequence of int
        The table's shape, which the design must fit.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(m, *shape)``, entries in {-1, 0, +1}.
    """
    V.choice(name, "design", DESIGNS)
    shape = tuple(int(s) for s in shape)
    if name == "seed003_three_way":
        if shape != (4, 4, 3):
            raise ValueError(f"design 'seed003_three_way' is for 4 x 4 x 3 tables, got shape "
                             f"{shape}")
        return seed003_three_way()
    if len(shape) != 2:
        raise ValueError(f"design {name!r} needs a 2-D table, got shape {shape}; give the "
                         "cycles instead")
    n, m = shape
    if name == "diagonal":
        if n != m:
            raise ValueError(f"the diagonal design needs a square table, got {n} x {m}; "
                             "use design 'staircase'")
        return diagonal(n)
    return staircase(n, m)
