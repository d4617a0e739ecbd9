"""The cell key method: the exact key integration (route ``keys``) against the per-entry
product it replaces, and its speed.

1. Error of the product: over random small releases where both run (1-D tables of 2 to 4
   cells and their total; p-tables on grids of 10 and 20; zeros), the largest difference
   of any cell's posterior probability, product (route line) vs exact (route keys).
2. 2 x 2 tables with every total (the totals cross): the product (route dp) against the
   exact route keys-crossing, and a Monte Carlo integral over the keys (``--keys`` keys
   per candidate table) against it, with the Monte Carlo standard error.
3. Seconds of the ``keys`` and ``keys-crossing`` routes at realistic sizes (counts in the
   hundreds; a set of two tables of the same records).

    python benchmarks/cell_key_keys.py [--cases 200] [--keys 100000] [--hogs 2]

``--hogs N`` runs N busy-looping processes beside the measurements (a shared machine).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import riskengine as rk

HANDBOOK = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2}, 3: {2: 0.3, 3: 0.4, 4: 0.3}}


def _hog():
    while True:
        pass


def grid_ptable(rng, grid, D=None):
    """A random p-table on a grid of ``grid``: rows 0..top, perturbations up to D (top and
    D drawn, each row 1 value or more); with ``D`` given: rows 0..3, 2 values or more."""
    if D is None:
        top, D, least = int(rng.integers(1, 4)), int(rng.integers(1, 3)), 1
    else:
        top, least = 3, 2
    rows = {0: {0: 1.0}}
    for i in range(1, top + 1):
        cand = np.arange(max(i - D, 0), i + D + 1)
        js = rng.choice(cand, size=int(rng.integers(least, min(cand.size, grid) + 1)),
                        replace=False)
        p = (1 + rng.multinomial(grid - js.size, np.ones(js.size) / js.size)) / grid
        rows[i] = dict(zip(js.tolist(), p.tolist()))
    return rows


def product_error(cases: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    shapes = [((2,), ("v",), None), ((3,), ("v",), None), ((4,), ("v",), None)]
    errs = []
    for i in range(cases):
        shape, dims, margins = shapes[i % len(shapes)]
        d = HANDBOOK if i % 7 == 0 else grid_ptable(rng, int(rng.choice([10, 20])))
        ck = rk.CellKey.from_matrix(d)
        T = rng.poisson(rng.uniform(0, 4), size=shape)
        T[rng.random(shape) < 0.3] = 0
        rel = ck.protect(rk.Table(T, dims=dims, margins=margins), rng)
        prior = rk.priors.Flat(0, int(np.max(rel.published)) + 4)
        try:
            ex = rk.posterior(rel, prior)
            pr = rk.posterior(rel, prior, route="line")
        except ValueError:               # no table is consistent with the release
            continue
        assert ex.attrs["route"] == "keys"
        lo = int(min(ex.start.min(), pr.start.min()))
        hi = int(max((ex.start + ex.width).max(), (pr.start + pr.width).max()))
        e = max(float(np.abs(ex.prob(np.full(ex.shape, v)).values
                             - pr.prob(np.full(pr.shape, v)).values).max())
                for v in range(lo, hi + 1))
        errs.append(e)
    return np.array(errs)


def _key_likelihood_mc(d, rel, T, n_keys, rng):
    """Pr(published | T) by Monte Carlo over the cells' keys (every total from them)."""
    ck = rel.mechanism
    pt = ck.ptable
    keys = rng.random((n_keys,) + T.shape)
    keys = np.where(T > 0, keys, 0.0)
    ok = np.ones(n_keys, bool)
    ok &= (pt.perturb(np.broadcast_to(T, keys.shape), keys) == rel.published).reshape(
        n_keys, -1).all(axis=1)
    dims = rel.dims
    for keep, val in rel.margins.items():
        axes = tuple(1 + i for i, dd in enumerate(dims) if dd not in keep)
        k = np.mod(keys.sum(axis=axes), 1.0)
        x = T.sum(axis=tuple(a - 1 for a in axes))
        pub = pt.perturb(np.broadcast_to(x, k.shape), k)
        ok &= (pub == np.asarray(val)).reshape(n_keys, -1).all(axis=1)
    p = ok.mean()
    return p, np.sqrt(p * (1 - p) / n_keys)


def crossing_error(cases: int, n_keys: int, seed: int = 1):
    """2 x 2 tables with every total: the exact posterior (route keys-crossing) against the
    product (route dp) and against a Monte Carlo integral over the keys, candidate table
    by candidate table.  Per release ``(product error, Monte Carlo error, its s.e.)``: the
    largest difference of any cell's posterior probability."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(cases):
        d = HANDBOOK if rng.random() < 0.3 else grid_ptable(rng, 10)
        ck = rk.CellKey.from_matrix(d)
        T = rng.poisson(2.0, size=(2, 2))
        T[rng.random((2, 2)) < 0.3] = 0
        rel = ck.protect(rk.Table(T, dims=("v", "w")), rng)
        prior = rk.priors.Flat(0, int(np.max(rel.published)) + 4)
        ex = rk.posterior(rel, prior)
        assert ex.attrs["route"] == "keys-crossing" and ex.exact
        pr = rk.posterior(rel, prior, route="dp")
        vmin, vmax = ck.ptable.vmin, ck.ptable.vmax
        P = rel.published
        axes = [range(max(int(p) - vmax, 0), int(p) - vmin + 1) for p in P.ravel()]
        w, se, tabs = [], [], []
        for x in itertools.product(*axes):
            Tx = np.array(x).reshape(2, 2)
            if Tx.max() > int(np.max(rel.published)) + 4:
                continue
            p, s = _key_likelihood_mc(d, rel, Tx, n_keys, rng)
            if p > 0:
                w.append(p), se.append(s), tabs.append(Tx)
        w, se = np.array(w), np.array(se)
        post = w / w.sum()
        worst_pr, worst_mc, worst_se = 0.0, 0.0, 0.0
        for c in np.ndindex(2, 2):
            first = int(ex.start[c])
            for v in {int(t[c]) for t in tabs} | set(range(first, first + ex.probs.shape[-1])):
                exact = float(ex.prob(np.full((2, 2), v)).values[c])
                worst_pr = max(worst_pr, abs(exact - float(pr.prob(np.full((2, 2), v))
                                                         .values[c])))
                mc = sum(q for q, t in zip(post, tabs) if t[c] == v)
                mse = np.sqrt(sum((s / w.sum()) ** 2 for s, t in zip(se, tabs) if t[c] == v))
                if abs(mc - exact) > worst_mc:
                    worst_mc, worst_se = abs(mc - exact), mse
        out.append((worst_pr, worst_mc, worst_se))
    return out


def crossing_timings():
    """Seconds of route keys-crossing (route auto) at counts in the hundreds, Uniform and
    Poisson(250) priors, posterior with the count; and a set of two tables."""
    rows = []
    for shape, grid, D in [((2, 2), 10, 2), ((2, 2), 100, 2), ((2, 3), 10, 2),
                           ((2, 3), 20, 2), ((2, 3), 100, 2), ((3, 3), 10, 1),
                           ((3, 3), 10, 2), ((3, 3), 20, 2)]:
        rng = np.random.default_rng(sum(shape) * grid + D)
        d = grid_ptable(rng, grid, D)
        ck = rk.CellKey.from_matrix(d)
        T = rng.integers(100, 500, size=shape)
        rel = ck.protect(rk.Table(T, dims=("v", "w"), margins=[("v",), ("w",), ()]), rng)
        for prior in (rk.priors.Uniform(), rk.priors.Poisson(250.0)):
            t = time.perf_counter()
            post = rk.posterior(rel, prior)
            sec = time.perf_counter() - t
            name = (f"{shape[0]} x {shape[1]}, every total, grid {grid}, D {D}, "
                    f"{type(prior).__name__}")
            rows.append((name, post.attrs["route"], post.n_candidates, sec))
    rng = np.random.default_rng(5)
    d = grid_ptable(rng, 10, 2)
    ck = rk.CellKey.from_matrix(d)
    T = rng.integers(100, 500, size=(3, 2))
    labels = {"r": ["r0", "r1", "r2"], "c": ["c0", "c1"]}
    rows_ = [(labels["r"][i], labels["c"][j]) for i, j in np.ndindex(3, 2)
             for _ in range(int(T[i, j]))]
    recs = {"r": [a for a, _ in rows_], "c": [b for _, b in rows_],
            "record_key": rk.CellKey.record_keys(len(rows_), rng)}
    grouped = dict(recs, r=["G" if r in ("r0", "r1") else r for r in recs["r"]])
    rels = [ck.protect_records(recs, ("r", "c"), categories=labels, margins=[("c",)]),
            ck.protect_records(grouped, ("r", "c"), categories={"r": ["G", "r2"],
                                                                "c": labels["c"]},
                               margins=[("r",), ("c",), ()])]
    rset = rk.ReleaseSet(rels, groups={"r": {"G": ["r0", "r1"]}})
    t = time.perf_counter()
    post = rk.posterior(rset, rk.priors.Uniform())
    rows.append(("set: 3 x 2 (column totals) + (r0 + r1, r2) x 2 (every total), grid 10",
                 post.attrs["route"], post.n_candidates, time.perf_counter() - t))
    return rows


def timings():
    rng = np.random.default_rng(3)
    rows = []
    for n, grid in [(10, 10), (50, 10), (100, 10), (20, 100)]:
        d = grid_ptable(np.random.default_rng(n), grid)
        while max(d) < 2:
            d = grid_ptable(rng, grid)
        ck = rk.CellKey.from_matrix(d)
        T = rng.poisson(300, size=n)
        T[:3] = [0, 1, 2]
        rel = ck.protect(rk.Table(T, dims=("v",)), rng)
        t = time.perf_counter()
        post = rk.posterior(rel, rk.priors.Poisson(300.0), count=False)
        rows.append((f"1-D, {n} cells and the total, grid {grid}", post.attrs["route"],
                     time.perf_counter() - t))
    for r, c in [(3, 3), (5, 5)]:
        ck = rk.CellKey.from_matrix(HANDBOOK)
        T = rng.poisson(200, size=(r, c))
        rel = ck.protect(rk.Table(T, dims=("v", "w"), margins=[()]), rng)
        t = time.perf_counter()
        post = rk.posterior(rel, rk.priors.Uniform(), count=False)
        rows.append((f"{r} x {c} and the grand total, grid 10", post.attrs["route"],
                     time.perf_counter() - t))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--crossing", type=int, default=20)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--hogs", type=int, default=0)
    a = ap.parse_args(argv)
    hogs = [mp.Process(target=_hog, daemon=True) for _ in range(a.hogs)]
    for h in hogs:
        h.start()
    try:
        print(f"load: {os.getloadavg()}; hogs: {a.hogs}")
        rk.posterior(rk.Release(np.array([0, 4]), margins={(): np.array(3)},
                                mechanism=rk.CellKey.from_matrix(HANDBOOK), dims=("v",)))
        e = product_error(a.cases)
        print(f"product vs exact over {e.size} releases: max {e.max():.3g}, median "
              f"{np.median(e):.3g}, share above 0.01: {(e > 0.01).mean():.2f}")
        ce = np.array(crossing_error(a.crossing, a.keys))
        print(f"2 x 2 with every total, {len(ce)} releases: product vs exact (keys-crossing) "
              f"max {ce[:, 0].max():.3g}, median {np.median(ce[:, 0]):.3g}; Monte Carlo over "
              f"keys ({a.keys} a table) vs exact: max {ce[:, 1].max():.3g}, largest "
              f"|difference| / s.e. {np.max(ce[:, 1] / np.maximum(ce[:, 2], 1e-12)):.2f}")
        print("| case | route | candidates | seconds |\n|---|---|---|---|")
        for name, route, n, sec in crossing_timings():
            print(f"| {name} | {route} | {n} | {sec:.3f} |")
        print("| case | route | seconds |\n|---|---|---|")
        for name, route, sec in timings():
            print(f"| {name} | {route} | {sec:.3f} |")
        print(f"load after: {os.getloadavg()}")
    finally:
        for h in hogs:
            h.terminate()


if __name__ == "__main__":
    main()
