"""Several tables from the same microdata, from the definitions: the posterior over the
finest table by enumerating every finest table in a box.

A *table* of the set is described by, per finest dim, the table category of every finest
category (``-1``: the category is not in the table); a finest dim the table lacks is
summed over.  Its published numbers are its cells and the totals it publishes (sums of
its cells over the dims a total drops).  Each published number counts the records of a
set of finest cells.  The likelihood (DESIGN.md, the cell key method, random rounding,
noise): the product over published numbers of Pr(published | original); with keyed noise
(the cell key method) numbers holding the same set of finest cells are the same cell with
the same key and count once; with independent noise each publication counts.
Plain Python / NumPy; no code shared with riskengine.
"""

from __future__ import annotations

from itertools import product

import numpy as np
from scipy.special import logsumexp


def tables_in_box(n_cells: int, hi: int, lo=None) -> np.ndarray:
    """Every vector of ``n_cells`` values, cell c in lo[c]..hi (K, n_cells); lo default 0."""
    lo = [0] * n_cells if lo is None else [int(v) for v in lo]
    return np.array(list(product(*[range(a, hi + 1) for a in lo])), dtype=np.int64).reshape(
        -1, n_cells)


def published_numbers(finest_shape, table: dict, values: dict) -> list:
    """``[(frozenset of finest flat indices, published value)]`` of one table.

    ``table``: ``{"maps": {finest dim index: [table category per finest category]},
    "shape": table shape (in the order of its dims, which are the keys of maps sorted),
    "totals": [tuple of table axes kept]}``; ``values``: ``{keep: array}`` with the
    interior under the key ``"cells"``."""
    maps = table["maps"]
    axes = sorted(maps)
    out = []
    for keep, arr in [("cells", values["cells"])] + [(k, values[k]) for k in table["totals"]]:
        kept = tuple(range(len(axes))) if keep == "cells" else keep
        arr = np.asarray(arr)
        for index in np.ndindex(arr.shape):
            want = dict(zip(kept, index))
            cells = []
            for f in np.ndindex(*finest_shape):
                ok = True
                for a, d in enumerate(axes):
                    cat = maps[d][f[d]]
                    if cat < 0 or (a in want and cat != want[a]):
                        ok = False
                        break
                if ok:
                    cells.append(int(np.ravel_multi_index(f, finest_shape)))
            out.append((frozenset(cells), int(arr[index])))
    return out


def aggregate(finest: np.ndarray, table: dict) -> dict:
    """A table's cells and totals from a finest table (the definitions above)."""
    maps = table["maps"]
    axes = sorted(maps)
    cells = np.zeros(table["shape"], np.int64)
    for f in np.ndindex(*finest.shape):
        cat = tuple(maps[d][f[d]] for d in axes)
        if min(cat) >= 0:
            cells[cat] += finest[f]
    out = {"cells": cells}
    for keep in table["totals"]:
        drop = tuple(a for a in range(len(axes)) if a not in keep)
        out[keep] = cells.sum(axis=drop) if drop else cells
    return out


def posterior(numbers: list, keyed: bool, loglik, n_cells: int, hi: int, log_prior,
              lo=None) -> tuple:
    """``(probs (n_cells, hi + 1), log evidence, number marginals)`` over every finest
    table in the box 0..hi per cell: ``numbers`` every published number of every table;
    ``loglik(x, y)`` log Pr(published y | original x); ``log_prior(T) -> (K,)``.  Number
    marginals: per distinct cell set, ``{value: probability}`` of its original sum.
    ``lo``: per cell the first value of the box (default 0)."""
    T = tables_in_box(n_cells, hi, lo)
    lw = np.asarray(log_prior(T), float)
    seen = set()
    for cells, y in numbers:
        if keyed and cells in seen:
            continue
        seen.add(cells)
        s = T[:, sorted(cells)].sum(axis=1)
        base = int(s.min())
        table = np.array([loglik(int(x), y) for x in range(base, int(s.max()) + 1)])
        lw = lw + table[s - base]
    log_z = logsumexp(lw)
    p = np.exp(lw - log_z)
    probs = np.zeros((n_cells, hi + 1))
    for c in range(n_cells):
        probs[c] = np.bincount(T[:, c], weights=p, minlength=hi + 1)
    sums = {}
    for cells in {c for c, _ in numbers}:
        s = T[:, sorted(cells)].sum(axis=1)
        m = np.bincount(s, weights=p)
        sums[cells] = {v: float(m[v]) for v in range(m.size) if m[v] > 0}
    return probs, float(log_z), sums
