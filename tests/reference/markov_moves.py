"""Markov moves of I x J x K tables with fixed 2-way margins, by their definitions, and the
parts a set of moves splits a list of tables into (breadth-first over explicit moves).

Independent of the route's own check (``riskengine.inference.gibbs3d.components``, which
classifies the difference of every pair of tables): here every move is written out as a
vector and applied to every table.

* ``lifted_cycles(shape, lengths)``: +1 / -1 around an even cycle through ``m`` indices
  of two axes in one layer of the third axis and the opposite in another (``m = 2``: the
  degree-4 basic moves; ``m = 3``: the degree-6 moves).
* ``orbit(pattern, shape)``: every placement of a 3 x 3 x L pattern on three indices of
  two axes (either order: the pattern and its transpose) and L of the third, in every
  orientation, with both signs.
* The 2 x 2 x L blocks the chain redraws exactly: two tables are joined when they differ
  only on two indices of each of two axes (the whole third axis).

Aoki & Takemura's (2003) degree-8 and degree-10 moves of 3 x 3 x K tables, as 4ti2's
``markov`` lists them for 3 x 3 x 4 and 3 x 3 x 5 tables with the three 2-way margins
(one type each, up to permuting levels, exchanging the first two axes and the sign);
written layer by layer (``[k][i][j]``), transcribed apart from ``kernels/gibbs.py``.
"""

from __future__ import annotations

import itertools

import numpy as np

AT_DEG8_LAYERS = [[[0, 0, 0], [-1, 0, 1], [1, 0, -1]],
                  [[0, 0, 0], [1, -1, 0], [-1, 1, 0]],
                  [[0, 1, -1], [0, 0, 0], [0, -1, 1]],
                  [[0, -1, 1], [0, 1, -1], [0, 0, 0]]]
AT_DEG10_LAYERS = [[[0, -1, 1], [0, 0, 0], [0, 1, -1]],
                   [[0, 0, 0], [-1, 0, 1], [1, 0, -1]],
                   [[0, 0, 0], [0, 1, -1], [0, -1, 1]],
                   [[1, 0, -1], [0, 0, 0], [-1, 0, 1]],
                   [[-1, 1, 0], [1, -1, 0], [0, 0, 0]]]


def pattern(layers) -> np.ndarray:
    """A 3 x 3 x L pattern from its layers ``[k][i][j]``."""
    return np.transpose(np.asarray(layers, np.int64), (1, 2, 0))


def _axes(o):
    return [a for a in range(3) if a != o]


def lifted_cycles(shape, lengths) -> set:
    """Every lifted cycle of the given lengths in a table of ``shape``, as bytes of the
    flat int64 vector."""
    out = set()
    for o in range(3):
        a1, a2 = _axes(o)
        for z0, z1 in itertools.permutations(range(shape[o]), 2):
            for m in lengths:
                if m > min(shape[a1], shape[a2]):
                    continue
                for r in itertools.permutations(range(shape[a1]), m):
                    for q in itertools.permutations(range(shape[a2]), m):
                        x = np.zeros(shape, np.int64)
                        for u in range(m):
                            for z, s in ((z0, 1), (z1, -1)):
                                at = [0, 0, 0]
                                at[o], at[a1], at[a2] = z, r[u], q[u]
                                x[tuple(at)] += s
                                at[a2] = q[(u + 1) % m]
                                x[tuple(at)] -= s
                        out.add(x.ravel().tobytes())
    return out


def orbit(pat, shape) -> set:
    """Every placement of the 3 x 3 x L pattern ``pat`` in a table of ``shape``."""
    L = pat.shape[2]
    out = set()
    for o in range(3):
        for a1, a2 in itertools.permutations(_axes(o)):
            if shape[o] < L or shape[a1] < 3 or shape[a2] < 3:
                continue
            for z in itertools.permutations(range(shape[o]), L):
                for r in itertools.permutations(range(shape[a1]), 3):
                    for q in itertools.permutations(range(shape[a2]), 3):
                        x = np.zeros(shape, np.int64)
                        for u, v, w in itertools.product(range(3), range(3), range(L)):
                            at = [0, 0, 0]
                            at[o], at[a1], at[a2] = z[w], r[u], q[v]
                            x[tuple(at)] = pat[u, v, w]
                        out.add(x.ravel().tobytes())
                        out.add((-x).ravel().tobytes())
    return out


def blocks(shape) -> list:
    """Boolean masks of every 2 x 2 x L block."""
    out = []
    for f in range(3):
        a1, a2 = _axes(f)
        for p in itertools.combinations(range(shape[a1]), 2):
            for q in itertools.combinations(range(shape[a2]), 2):
                mask = np.zeros(shape, bool)
                for u, v in itertools.product(p, q):
                    at = [slice(None)] * 3
                    at[a1], at[a2] = u, v
                    mask[tuple(at)] = True
                out.append(mask)
    return out


def part_labels(tables, shape, moves: set, use_blocks: bool = True) -> np.ndarray:
    """The part of each of ``tables`` (0, 1, ... in order of first appearance) that the
    moves (and the block redraws) split them into: tables are joined by ``x -> x + t m``
    (any integer ``t``, ``m`` in ``moves``) that lands on a listed table, and, with
    ``use_blocks``, when they differ only inside one block."""
    tables = [np.asarray(t, np.int64).ravel() for t in tables]
    index = {t.tobytes(): k for k, t in enumerate(tables)}
    vecs = [np.frombuffer(m, np.int64) for m in moves]
    masks = [~b.ravel() for b in blocks(shape)] if use_blocks else []
    top = max(int(t.max()) for t in tables) + 1
    label = np.full(len(tables), -1)
    count = 0
    for s in range(len(tables)):
        if label[s] >= 0:
            continue
        label[s] = count
        count += 1
        todo = [s]
        while todo:
            k = todo.pop()
            x = tables[k]
            nbrs = []
            for m in vecs:
                for t in range(-top, top + 1):
                    if t:
                        y = x + t * m
                        if y.min() >= 0:
                            nbrs.append(index.get(y.tobytes()))
            for keep in masks:
                nbrs += [j for j, y in enumerate(tables) if np.array_equal(x[keep], y[keep])]
            for j in nbrs:
                if j is not None and label[j] < 0:
                    label[j] = label[s]
                    todo.append(j)
    return label


def parts(tables, shape, moves: set, use_blocks: bool = True) -> int:
    """How many parts :func:`part_labels` finds."""
    return int(part_labels(tables, shape, moves, use_blocks).max()) + 1
