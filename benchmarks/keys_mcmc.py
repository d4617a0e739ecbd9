"""The cell key method's Monte Carlo route (``keys_mcmc``: chains over counts and keys,
the likelihood integrated over the keys) on 2-D tables with every total, where no exact
route fits: this checkout against another (issue 26: the chains mixed slowly beyond 4 x
4).

Run:  python benchmarks/keys_mcmc.py [--old PATH] [--hogs] [--draws 1000]

Each case runs in a fresh process of each checkout in turn (``PYTHONPATH`` pointing at
it; a first run on a 3 x 3 table loads the kernels): its wall seconds (the chains'
starts, their rounds and the diagnostics), max R-hat, min bulk and tail ESS, and
whether the draws pass the usual rules (R-hat <= 1.01, ESS >= 400).  Cases: Poisson
tables of 5 x 5 .. 10 x 10 (seeded), published by ``rk.CellKey(D=2, V=1)`` with rows,
columns and the grand total, posterior under the Poisson prior of their mean.
``--hogs`` starts two busy-looping processes beside the runs (2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r'''
import json, time, warnings
import numpy as np
import riskengine as rk
warnings.simplefilter("ignore")

def release(n, mean):
    T = np.random.default_rng(1).poisson(mean, size=(n, n))
    return rk.CellKey(D=2, V=1.0).protect(rk.Table(T), rng=np.random.default_rng(2))

rk.posterior(release(3, 5), rk.priors.Poisson(5.0), route="keys_mcmc",
             mcmc=rk.MonteCarlo(draws=50, warmup=20))
n, mean, draws = {n}, {mean}, {draws}
t0 = time.perf_counter()
p = rk.posterior(release(n, mean), rk.priors.Poisson(float(mean)), route="keys_mcmc",
                 mcmc=rk.MonteCarlo(draws=draws))
a = p.diagnostics.attrs
print(json.dumps({{"seconds": time.perf_counter() - t0, "rhat": float(a["max_rhat"]),
                  "ess": float(a["min_ess_bulk"]), "tail": float(a["min_ess_tail"]),
                  "converged": bool(p.attrs["converged"]),
                  "how": p.attrs["approximation"]}}))
'''

CASES = [(5, 30), (6, 5), (8, 15), (10, 30)]


def _run(path: str, n: int, mean: int, draws: int) -> dict:
    env = dict(os.environ, PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", CHILD.format(n=n, mean=mean, draws=draws)],
                         env=env, capture_output=True, text=True, check=True, cwd=path)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", help="a checkout of the code to compare with")
    ap.add_argument("--hogs", action="store_true", help="two busy processes beside")
    ap.add_argument("--draws", type=int, default=1000)
    a = ap.parse_args(argv)
    sys.path.insert(0, HERE)
    from _hogs import hogs
    here = os.path.dirname(HERE)
    sides = [("new", here)] + ([("old", a.old)] if a.old else [])
    print("| table | checkout | seconds | max R-hat | min bulk ESS | min tail ESS | "
          "converged | run |")
    print("|---|---|---|---|---|---|---|---|")
    with hogs(2 if a.hogs else 0):
        for n, mean in CASES:
            for name, path in sides:
                r = _run(path, n, mean, a.draws)
                how = r["how"].split(": ", 1)[-1].split(" (the likelihood")[0]
                print(f"| {n} x {n}, mean {mean} | {name} | {r['seconds']:.1f} | "
                      f"{r['rhat']:.4f} | {r['ess']:.0f} | {r['tail']:.0f} | "
                      f"{'yes' if r['converged'] else 'no'} | {how} |", flush=True)


if __name__ == "__main__":
    main()
