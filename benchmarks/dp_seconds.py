"""The table DP's time estimate against its runs (route ``dp``, wall seconds), on
margins-only and rounded tables of 0.3-25 s.

    python benchmarks/dp_seconds.py

Each row: the posterior's and the count's wall time and ``TableDP().estimate`` of each
(what ``route="auto"`` holds against its time budget).  Tables whose estimate passes 60 s
are skipped.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import riskengine as rk
from riskengine.inference import resolve
from riskengine.inference.table_dp import TableDP

CASES = [  # rows, columns, cell mean, seed, mechanism
    (4, 5, 6, 3, "margins"), (5, 5, 5, 3, "margins"), (5, 5, 4, 4, "margins"),
    (5, 6, 3, 5, "margins"), (6, 6, 2, 6, "margins"), (6, 5, 3, 9, "margins"),
    (6, 6, 15, 3, "controlled 3"), (5, 5, 20, 4, "random 5"), (6, 5, 10, 2, "controlled 3"),
]


def release(r, c, mean, seed, mech):
    t = rk.Table(np.random.default_rng(seed).poisson(mean, size=(r, c)))
    if mech == "margins":
        return rk.MarginsOnly().protect(t)
    m = (rk.ControlledRounding(3, method="unbiased") if mech == "controlled 3"
         else rk.RandomRounding(5))
    return m.protect(t, np.random.default_rng(seed))


def main():
    warnings.simplefilter("ignore")
    print("| table | posterior s | estimate | count s | estimate |")
    print("|---|---|---|---|---|")
    for r, c, mean, seed, mech in CASES:
        rel = release(r, c, mean, seed, mech)
        p = resolve.plan(rel)
        ep = TableDP().estimate(p, "posterior").seconds
        ec = TableDP().estimate(p, "count").seconds
        if ep > 60:
            print(f"| {mech} {r} x {c}, mean {mean} | skipped | {ep:.3g} | | |")
            continue
        t0 = time.perf_counter()
        rk.posterior(rel, route="dp")
        tp = time.perf_counter() - t0
        t0 = time.perf_counter()
        rk.count_candidates(rel, route="dp")
        tc = time.perf_counter() - t0
        print(f"| {mech} {r} x {c}, mean {mean} | {tp:.2f} | {ep:.3g} | {tc:.2f} | {ec:.3g} |",
              flush=True)


if __name__ == "__main__":
    main()
