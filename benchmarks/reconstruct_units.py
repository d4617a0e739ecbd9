"""Reconstruction audit: seconds and memory per unit (one census tract), idle and beside
two CPU hogs of our own.

    python benchmarks/reconstruct_units.py [--repeat 1] [--cases NAME ...]

Each measurement runs in a fresh process: a tract of riskengine.census_blocks.
BlockPopulation (seed 2010) with one of its publications modelled on the 2010 SF1
(``basic`` or ``sf1``), published exactly or protected (random rounding base 3, the cell
key method D=2, discrete Gaussian noise sigma 1 with ``coverage=0.99``), then
``rk.reconstruct(..., bounds=...)``; printed: wall seconds, programs, persons certain and
the process's peak resident memory.  The 2010 replication of the Census Bureau (Abowd
et al. 2023) is given beside it in RESULTS.md for scale: one Gurobi program per tract,
about 73,000 tracts, 30 nodes x 96 vCPU for about 3 days.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys

CASE = """
import json, resource, sys, time
import numpy as np, riskengine as rk
from riskengine.census_blocks import BlockPopulation
lo, hi, pmax, bounds, publication, protection = sys.argv[1:7]
pop = BlockPopulation(tracts=1, blocks=(int(lo), int(hi)), persons=(5, int(pmax)))
df = pop.generate(np.random.default_rng(2010))
ts = rk.TableSet.from_pandas(df, pop.tables(publication),
                             hierarchies=pop.hierarchies(publication=publication))
mech = {"exact": None, "rr3": rk.RandomRounding(3),
        "ck2": rk.CellKey(ptable=rk.PTable.design(D=2, V=1.0)),
        "dg1": rk.NoisyCounts("discrete_gaussian", 1.0)}[protection]
rel = ts if mech is None else mech.protect(ts, np.random.default_rng(1))
kw = {"coverage": 0.99} if protection == "dg1" else {}
rk.reconstruct(rk.TableSet.from_pandas(df.head(3), {"a": ["block"]}))   # imports, HiGHS
t0 = time.perf_counter()
ds = rk.reconstruct(rel, bounds=bounds, **kw)
out = {"seconds": time.perf_counter() - t0, "programs": ds.attrs["integer_programs"],
       "persons": len(df), "certain": ds.attrs["persons_certain"],
       "cells": ds.attrs["cells"], "blocks": pop.n_blocks,
       "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
print(json.dumps(out))
"""

#: name: (blocks low, high, persons high, bounds, publication, protection)
CASES = {
    "basic-lp": (8, 12, 120, "lp", "basic", "exact"),
    "basic-exact": (8, 12, 120, "exact", "basic", "exact"),
    "sf1-lp": (8, 12, 120, "lp", "sf1", "exact"),
    "sf1-exact": (8, 12, 120, "exact", "sf1", "exact"),
    "sf1-rr3": (3, 3, 20, "lp", "sf1", "rr3"),
    "sf1-ck2": (3, 3, 20, "lp", "sf1", "ck2"),
    "sf1-dg1": (3, 3, 20, "lp", "sf1", "dg1"),
}


def hog():
    x = 0
    while True:
        x += 1


def one(case):
    r = subprocess.run([sys.executable, "-c", CASE, *map(str, CASES[case])],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    a = ap.parse_args()
    for hogs in (0, 2):
        procs = [mp.Process(target=hog, daemon=True) for _ in range(hogs)]
        for p in procs:
            p.start()
        for case in a.cases:
            best = None
            for _ in range(a.repeat):
                r = one(case)
                best = r if best is None or r["seconds"] < best["seconds"] else best
            load = os.getloadavg()[0]
            print(f"{hogs} hogs (load {load:.1f}) {case:<12} blocks {best['blocks']} "
                  f"persons {best['persons']} cells {best['cells']}: "
                  f"{best['seconds']:.1f} s, {best['programs']} programs, certain "
                  f"{best['certain']}, peak RSS {best['rss_mb']:.0f} MB", flush=True)
        for p in procs:
            p.terminate()


if __name__ == "__main__":
    main()
