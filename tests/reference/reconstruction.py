"""Brute force for reconstruction: every finest table of a small population consistent
with what a table set publishes.

Independent of riskengine's integer programs and enumeration: the candidates are every
way of putting the ``N`` persons (the published grand total) into the finest cells
(``itertools.combinations_with_replacement``), kept when each table, aggregated from the
candidate with numpy over the dims it does not have and through its hierarchies' member
lists, matches the published numbers (within a window for rounded releases).
"""

from __future__ import annotations

import itertools

import numpy as np


def table_cells(ts, name, finest):
    """Every published cell of table ``name`` computed from a finest table: {codes: value}
    (codes per dim of the table, totals and subtotals included), by numpy sums."""
    t = ts.tables[name]
    fdims = list(ts.dims)
    # sum the finest table over the dims the table does not have
    keep = [fdims.index(d) for d in t.dims]
    other = tuple(i for i in range(len(fdims)) if i not in keep)
    arr = finest.sum(axis=other) if other else finest
    arr = np.moveaxis(arr, list(np.argsort(np.argsort(keep))), list(range(len(keep))))
    # per dim: each code of the table -> the finest codes it holds
    members = []
    for d in t.dims:
        fin = list(ts.coords[d])
        hs = (t.hierarchies or {}).get(d)
        opts = {}
        if hs:
            for h in hs:
                for c in h.codes:
                    leaves = h.members(c) if not h.is_leaf(c) else (c,)
                    opts[c] = _to_finest(leaves, fin, ts, d)
        else:
            for c in t.coords[d]:
                opts[c] = [fin.index(c)]
            opts["__total__"] = list(range(len(fin)))
        members.append(opts)
    out = {}
    for combo in itertools.product(*[list(m.items()) for m in members]):
        idx = np.ix_(*[np.asarray(v) for _, v in combo])
        out[tuple(c for c, _ in combo)] = int(arr[idx].sum())
    return out


def _to_finest(leaves, fin, ts, d):
    """Finest positions held by a table's leaf codes (a coarser table's leaf holds the
    finest codes below it in some other table's hierarchy)."""
    out = []
    for c in leaves:
        if c in fin:
            out.append(fin.index(c))
            continue
        for t in ts.tables.values():
            for h in (t.hierarchies or {}).get(d, ()):
                if c in h and set(h.leaves) <= set(fin):
                    out += [fin.index(x) for x in h.members(c)]
                    break
            else:
                continue
            break
    return sorted(set(out))


def consistent_tables(ts, published, N, window=0):
    """Every finest table (int array of ``ts.shape``) with ``N`` persons whose tables'
    cells all lie within ``window`` of ``published`` ({table: {codes: value}})."""
    shape = ts.shape
    K = int(np.prod(shape))
    out = []
    for combo in itertools.combinations_with_replacement(range(K), N):
        x = np.bincount(np.asarray(combo, np.int64), minlength=K).reshape(shape)
        ok = True
        for name, cells in published.items():
            mine = table_cells(ts, name, x)
            for k, v in cells.items():
                if abs(mine[k] - v) > window:
                    ok = False
                    break
            if not ok:
                break
        if ok:
            out.append(x)
    return np.array(out)
