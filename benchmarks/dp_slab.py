"""The table DP's live-state layout (issue 30 item 5) against the layout before it.

Run:  python benchmarks/dp_slab.py --old PATH [--hogs] [--only NAME ...]

``PATH`` is a checkout of the commit before (``git worktree add /tmp/old d11887f``); each
case runs in a fresh process of each checkout in turn (the same interpreter and
environment, ``PYTHONPATH`` pointing at the checkout), after a warm-up on a tiny table in
that process (compiled kernels loaded), and prints its wall seconds and the process's peak
resident memory.  ``--hogs`` starts two busy-looping processes beside the runs (2 cores).

Cases: the 8 x 6 agency table (cell mean 15) rounded to base 3 -- its exact posterior under
a memory budget of 8 GB (the layout before refuses it there and runs with 20 GB) and its
exact count; the tables of ``benchmarks/dp_seconds.py`` (posterior and count); a 2 x 2
margins-only table of cells near 30,000 (route ``dp``); the Gibbs route on the 8 x 6
margins-only table (its block redraws call the DP's draws on pairs of rows).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r'''
import json, resource, sys, time, warnings
import numpy as np
import riskengine as rk
warnings.simplefilter("ignore")
sys.path.insert(0, {here!r})
name, arg = {name!r}, {arg!r}
rk.count_candidates(rk.MarginsOnly().protect(rk.Table(np.ones((2, 2), int))))
rk.posterior(rk.ControlledRounding(3).protect(rk.Table(np.full((3, 3), 4)),
                                                 np.random.default_rng(0)))
def agency():
    rng = np.random.default_rng(0)
    t = rk.Table(rng.poisson(15, size=(8, 6)), dims=("region", "age"))
    return rk.ControlledRounding(3, method="optimal").protect(t, rng)
t0 = time.perf_counter()
if name == "agency posterior":
    try:
        rk.posterior(agency(), route="dp", count=False, memory="8GB")
        note = "memory 8GB"
    except ValueError:
        t0 = time.perf_counter()
        rk.posterior(agency(), route="dp", count=False, memory="20GB")
        note = "refused at 8GB; memory 20GB"
elif name == "agency count":
    rk.count_candidates(agency(), memory="20GB")
    note = ""
elif name.startswith("dp_seconds"):
    from dp_seconds import CASES, release
    rel = release(*CASES[arg])
    t0 = time.perf_counter()
    if name.endswith("posterior"):
        rk.posterior(rel, route="dp")
    else:
        rk.count_candidates(rel, route="dp")
    note = ""
elif name == "2x2 at 3e4":
    T = np.array([[30012, 29986], [30040, 30013]])
    rk.posterior(rk.MarginsOnly().protect(rk.Table(T)), rk.priors.Poisson(3e4), route="dp")
    note = ""
elif name == "gibbs margins 8x6":
    rng = np.random.default_rng(0)
    rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(15, size=(8, 6))))
    t0 = time.perf_counter()
    rk.posterior(rel, route="gibbs", mcmc=rk.MonteCarlo(seed=1))
    note = "4 chains x 1000 draws"
dt = time.perf_counter() - t0
print(json.dumps({{"s": dt, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                  "note": note}}))
'''


def cases():
    from dp_seconds import CASES
    out = [("agency posterior", None), ("agency count", None), ("2x2 at 3e4", None),
           ("gibbs margins 8x6", None)]
    for k in range(len(CASES)):
        out += [("dp_seconds posterior", k), ("dp_seconds count", k)]
    return out


def label(name, arg):
    if arg is None:
        return name
    from dp_seconds import CASES
    r, c, mean, _, mech = CASES[arg]
    return f"{mech} {r} x {c}, mean {mean}: {name.split()[-1]}"


def run(root, name, arg):
    env = dict(os.environ, PYTHONPATH=root)
    code = CHILD.format(here=HERE, name=name, arg=arg)
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd="/tmp",
                       capture_output=True, text=True, timeout=1800, check=False)
    if r.returncode:
        return {"s": float("nan"), "rss": float("nan"),
                "note": r.stderr.strip().splitlines()[-1][:160]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--hogs", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, HERE)
    new = os.path.dirname(HERE)
    from _hogs import hogs
    with hogs(2 if a.hogs else 0):
        print("| case | before s | before GB | now s | now GB | ratio | note |")
        print("|---|---|---|---|---|---|---|")
        for name, arg in cases():
            if a.only and not any(o in label(name, arg) for o in a.only):
                continue
            old = run(a.old, name, arg)
            now = run(new, name, arg)
            print(f"| {label(name, arg)} | {old['s']:.2f} | {old['rss']:.2f} | {now['s']:.2f} "
                  f"| {now['rss']:.2f} | {old['s'] / now['s']:.2f} | "
                  f"{'; '.join(x for x in (old['note'], now['note']) if x)} |", flush=True)

if __name__ == "__main__":
    main()
