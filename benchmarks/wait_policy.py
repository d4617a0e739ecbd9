"""Busy-machine speed of the parallel kernels (issue 30, item 1): the OpenMP wait policy.

Each case runs in a fresh process (warm numba cache), once with the environment's
default OpenMP wait policy and once with ``OMP_WAIT_POLICY=PASSIVE`` (what
``kernels/_jit.py`` now sets unless the user set it), idle and beside two CPU hogs of our
own; the minimum of ``--repeat`` runs, wall seconds of the call alone.

    python benchmarks/wait_policy.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys

CASE = r"""
import json, time, numpy as np, riskengine as rk
t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]))
rel = rk.ControlledRounding(base=3, method="optimal").protect(t, np.random.default_rng(1))
rk.count_candidates(rel)                                # load the kernels
out = {}
t0 = time.perf_counter(); rk.count_candidates(rel); out["count 4x4 base 3"] = time.perf_counter() - t0
rel2 = rk.MarginsOnly().protect(t, np.random.default_rng(1))
rk.posterior(rel2, rk.priors.Uniform())
t0 = time.perf_counter(); rk.posterior(rel2, rk.priors.Uniform()); out["margins-only posterior 4x4"] = time.perf_counter() - t0
big = rk.Table(np.random.default_rng(5).poisson(6, (6, 5)) + 1)
rel3 = rk.ControlledRounding(base=3, method="optimal").protect(big, np.random.default_rng(1))
rk.count_candidates(rel3)
t0 = time.perf_counter(); rk.count_candidates(rel3); out["count 6x5 base 3 (parallel)"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def hog():
    x = 0
    while True:
        x += 1


def run(policy, repeat):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env["RISKENGINE_WAIT_POLICY"] = policy          # "default" keeps OpenMP's own
    best = {}
    for _ in range(repeat):
        r = subprocess.run([sys.executable, "-c", CASE], env=env, capture_output=True,
                           text=True, check=True)
        for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items():
            best[k] = min(best.get(k, v), v)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    for hogs in (0, 2):
        procs = [mp.Process(target=hog, daemon=True) for _ in range(hogs)]
        for p in procs:
            p.start()
        res = {pol: run(pol, a.repeat) for pol in ("default", "passive")}
        load = os.getloadavg()[0]
        for p in procs:
            p.terminate()
        for case in res["default"]:
            d, p = res["default"][case], res["passive"][case]
            print(f"{hogs} hogs (load {load:.1f}) {case:<28} default {d:7.3f} s  "
                  f"passive {p:7.3f} s  ratio {d / p:5.1f}x", flush=True)


if __name__ == "__main__":
    main()
