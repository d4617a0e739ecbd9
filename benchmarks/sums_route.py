"""The sums route (exact enumeration over the unknown finest cells of a hierarchical or
linked release): candidates per second, against the rate its time estimate assumes
(riskengine.inference.sums.RATE).

Run:  python benchmarks/sums_route.py

Cases: a 3 x 4 table whose every interior cell is hidden (only its totals published;
two margin sizes), and a 2-level hierarchy of 6 districts x 2 with the districts of
both regions hidden.  Each is run twice (the first compiles), the second timed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import riskengine as rk
from riskengine.inference import sums


def hidden_interior(t) -> rk.TableSetRelease:
    ts = rk.TableSet(t)
    v = ts.values.copy()
    v[: ts.system.n_interior] = np.nan
    return rk.TableSetRelease(ts, v, rk.CellSuppression())


def cases():
    yield "3x4 margins (20,25,15 / 18,14,16,12)", hidden_interior(rk.Table(
        np.array([[6, 5, 5, 4], [7, 5, 7, 6], [5, 4, 4, 2]]), dims=("r", "c")))
    yield "3x4 margins (30,35,25 / 25,22,23,20)", hidden_interior(rk.Table(
        np.array([[9, 8, 7, 6], [9, 8, 10, 8], [7, 6, 6, 6]]), dims=("r", "c")))
    geo = rk.Hierarchy({"N": ["N1", "N2", "N3"], "S": ["S1", "S2", "S3"]})
    vals = np.array([[9, 4], [7, 6], [5, 8], [6, 6], [8, 3], [4, 9]])
    yield "6 districts x 2, districts hidden", hidden_interior(rk.Table(
        vals, dims=("geo", "sex"), coords={"geo": list(geo.leaves), "sex": ["F", "M"]},
        hierarchies={"geo": geo}))


def main():
    print(f"{'case':40s} {'candidates':>12s} {'seconds':>9s} {'cand/s':>10s} "
          f"{'estimate s':>10s}")
    for name, rel in cases():
        prior = rk.priors.Uniform()
        rk.posterior(rel, prior)                       # compile / warm
        est = rk.inference.resolve.route_for(rel, prior)
        plan = rk.inference.resolve.plan(rel, prior)
        seconds_est = sums.SumEnumerate().estimate(plan).seconds
        t0 = time.perf_counter()
        post = rk.posterior(rel, prior)
        dt = time.perf_counter() - t0
        print(f"{name:40s} {post.n_candidates:12d} {dt:9.2f} {post.n_candidates / dt:10.3g} "
              f"{seconds_est:10.3g}  ({est[0].name})")


if __name__ == "__main__":
    main()
