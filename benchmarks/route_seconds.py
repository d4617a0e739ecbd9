"""Issue 27: each route's time estimate (``Route.estimate(...).seconds``, what
``route="auto"`` holds against its time budget) beside the measured wall time of the same
run, on releases of growing size.  A route whose estimate is far too high is passed over
when it would have answered; far too low, ``auto`` waits on it.

    python benchmarks/route_seconds.py [--hogs 2]

Each case runs once to compile (not timed), then is timed; ratio = estimate / measured.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

import numpy as np

import riskengine as rk
from riskengine.inference.resolve import plan


def _hog():
    while True:
        pass


def _poisson(shape, rate, seed=0):
    return rk.Table(np.random.default_rng(seed).poisson(rate, size=shape),
                    dims=tuple("vwx"[:len(shape)]))


def cases():
    rng = np.random.default_rng(1)
    grid_pt = {0: {0: 1.0}, 1: {0: .5, 2: .5}, 2: {1: .15, 2: .7, 3: .15},
               3: {2: .3, 3: .4, 4: .3}}
    for rate in (2, 4, 6):
        t = _poisson((3, 3), rate)
        yield f"binomial 3x3 mean {rate}", "joint", \
            rk.BinomialPerturbation(S=2.0).protect(t, rng)
    for shape in ((3, 3), (4, 4), (6, 6)):
        t = _poisson(shape, 8)
        yield f"binomial {shape} mean 8", "mcmc", rk.BinomialPerturbation(S=2.0).protect(t, rng)
        yield f"bootstrap {shape} mean 8", "cells", rk.Bootstrap(M=3, S=2.0).protect(t, rng)
    for n in (4, 8, 16):
        t = rk.Table(np.random.default_rng(n).poisson(2, size=n), dims=("v",))
        ck = rk.CellKey.from_matrix(grid_pt)
        yield f"cell key 1-D n={n}", "keys", ck.protect(t, rng)
    for shape, rate in (((3, 4), 10), ((3, 5), 10), ((4, 5), 8)):
        t = _poisson(shape, rate)
        yield f"margins {shape} mean {rate}", "halves", rk.MarginsOnly().protect(t)
    for m in (4, 5, 6):
        t = _poisson((m, m), 6)
        mech = rk.CyclicPerturbation(rk.cycles.diagonal(m), 0.25, 0.25)
        rel = mech.protect(t, rng)
        yield f"cyclic diagonal {m}x{m}", "structured", rel
        if m <= 5:
            yield f"cyclic diagonal {m}x{m}", "enumerate", rel
        yield f"cyclic diagonal {m}x{m}", "gibbs", rel
    for shape in ((3, 3), (4, 4)):
        t = _poisson(shape, 5)
        a = rk.RandomRounding(base=3).protect(t, rng)
        b = rk.RandomRounding(base=5).protect(t, rng)
        yield f"random rounding set {shape}", "linked-dp", rk.ReleaseSet([a, b])
        yield f"random rounding set {shape}", "gibbs", rk.ReleaseSet([a, b])
    for shape in ((2, 2), (3, 3)):
        t = _poisson(shape, 3)
        yield f"cell key {shape} with totals", "keys_mcmc", \
            rk.CellKey.from_matrix(grid_pt).protect(t, rng)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hogs", type=int, default=0)
    a = ap.parse_args()
    hogs = [mp.Process(target=_hog, daemon=True) for _ in range(a.hogs)]
    for h in hogs:
        h.start()
    try:
        print(f"load average at start: {os.getloadavg()}; hogs: {a.hogs}")
        print(f"{'case':32} {'route':11} {'estimate s':>10} {'measured s':>10} {'ratio':>6}")
        for name, route, rel in cases():
            r = next(x for x in rel.mechanism.routes if x.name == route)
            p = plan(rel)
            why = r.applies(p)
            if why:
                print(f"{name:32} {route:11} does not apply: {why[:60]}")
                continue
            est = r.estimate(p).seconds
            rk.posterior(rel, route=route, count=False)         # compile, caches
            t0 = time.perf_counter()
            rk.posterior(rel, route=route, count=False)
            sec = time.perf_counter() - t0
            print(f"{name:32} {route:11} {est:10.3g} {sec:10.3g} {est / sec:6.2g}",
                  flush=True)
        print(f"load average at end: {os.getloadavg()}")
    finally:
        for h in hogs:
            h.terminate()


if __name__ == "__main__":
    main()
