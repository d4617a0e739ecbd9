"""The importance-sampling posterior (route ``sis``) against the Gibbs route, side by side
on the same releases and priors (issue 30, item 4): seconds, the smallest ESS of a cell
(``sis``: the weighted draws' per-cell ESS; ``gibbs``: arviz's bulk ESS), ESS per second,
the largest difference of a cell's mean between the two in units of their joint MCSE, and
the route ``auto`` takes past the exact routes (its estimates: ``sis``'s and ``gibbs``'s).

    python benchmarks/sis_posterior.py [--repeat 3] [--hogs]

``--hogs`` runs two busy Python processes beside the benchmark (a loaded machine).
Times are the minimum of ``--repeat`` runs (each route's draws are seeded: every run
gives the same numbers; a run longer than :data:`SLOW` seconds is not repeated), after
runs on a tiny table that load the kernels.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np

import riskengine as rk
from riskengine.inference.gibbs import BlockGibbs
from riskengine.inference.resolve import plan as make_plan
from riskengine.inference.sis_posterior import ImportanceSampling

#: seconds past which a run is not repeated
SLOW = 10.0


def _instances():
    for shape, mean, seed in [((4, 4), 100, 7), ((6, 6), 8, 7), ((8, 6), 15, 7),
                              ((12, 12), 3, 7), ((20, 20), 5, 7)]:
        t = rk.Table(np.random.default_rng(seed).poisson(mean, size=shape))
        yield (f"margins only {shape[0]}x{shape[1]}, mean {mean}", rk.MarginsOnly().protect(t),
               mean)
    rel = rk.Release(None, margins={("dim_0",): np.array([220, 215, 93, 64]),
                                    ("dim_1",): np.array([108, 286, 71, 127]),
                                    (): np.array(592)},
                     mechanism=rk.MarginsOnly(), dims=("dim_0", "dim_1"), kind="count")
    yield "margins only, De Loera & Sturmfels 4x4 (n 592)", rel, 37
    for shape, mean, seed in [((10, 10), 4, 1), ((20, 20), 3, 2)]:
        t = rk.Table(np.random.default_rng(seed).poisson(mean, size=shape))
        rel = rk.suppress(t, rk.sensitivity.Frequency(3))
        yield (f"suppression {shape[0]}x{shape[1]}, mean {mean}, "
               f"{int(np.isnan(rel.published).sum())} hidden"), rel, mean


def _run(rel, prior, route):
    t0 = time.perf_counter()
    post = rk.posterior(rel, prior, route=route)
    return time.perf_counter() - t0, post


def _min_ess(post) -> float:
    d = post.diagnostics
    return float(d["ess"].min() if "ess" in d else d["ess_bulk"].min())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hogs", action="store_true", help="two busy processes beside")
    args = ap.parse_args(argv)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(2 if args.hogs else 0)]
    try:
        time.sleep(2 if hogs else 0)
        print(f"load average at start {os.getloadavg()[0]:.2f}"
              + (" (two CPU hogs running)" if hogs else ""))
        print("| release | prior | sis s | sis min ESS | sis ESS/s | gibbs s | gibbs min ESS | "
              "gibbs ESS/s | sis / gibbs ESS/s | max z of means | auto (estimates s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        warnings.simplefilter("ignore")
        tiny = rk.MarginsOnly().protect(rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]])))
        for route in ("sis", "gibbs"):                      # kernels loaded, arviz imported
            for prior in (rk.priors.Uniform(), rk.priors.Poisson(2.0)):
                _run(tiny, prior, route)
        for name, rel, mean in _instances():
            for prior in (rk.priors.Uniform(), rk.priors.Poisson(float(mean))):
                res = {}
                for route in ("sis", "gibbs"):
                    runs = [_run(rel, prior, route)]
                    while len(runs) < args.repeat and runs[0][0] < SLOW:
                        runs.append(_run(rel, prior, route))
                    secs = min(r[0] for r in runs)
                    res[route] = (secs, runs[0][1])
                (ts, ps), (tg, pg) = res["sis"], res["gibbs"]
                es, eg = _min_ess(ps), _min_ess(pg)
                se = np.hypot(ps.diagnostics["mcse_mean"].values,
                              pg.diagnostics["mcse_mean"].values)
                diff = np.abs(ps.mean().values - pg.mean().values)
                moves = se > 0                     # cells that vary in either route
                z = float(np.max(np.where(moves, diff / np.where(moves, se, 1), 0.0)))
                p = make_plan(rel, prior)
                cs = ImportanceSampling().estimate(p)
                cg = BlockGibbs().estimate(p)
                auto = "gibbs" if cs.too_long else "sis"
                print(f"| {name} | {prior.describe()} | {ts:.3f} | {es:.0f} | {es / ts:,.0f} | "
                      f"{tg:.3f} | {eg:.0f} | {eg / tg:,.0f} | {es / ts / (eg / tg):.2f} | "
                      f"{z:.2f} | {auto} ({cs.seconds:.2g} / {cg.seconds:.2g}) |", flush=True)
        print(f"load average at end {os.getloadavg()[0]:.2f}")
    finally:
        for h in hogs:
            h.kill()


if __name__ == "__main__":
    main()
