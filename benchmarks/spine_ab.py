"""A/B timing of ``rk.posterior`` through the public API on two checkouts of riskengine.

Each case is a small release of one mechanism (its exact route, or a short Monte Carlo
run); each checkout runs in its own interpreter (``PYTHONPATH`` = the checkout), warmed up
first (compile, imports), then the two alternate ``--rounds`` times (in turn first, a
pause between) so machine load hits both alike.  A fresh release object is built for every call (no identity cache can
help).  Prints the median seconds per case and checkout and their ratio.

    python benchmarks/spine_ab.py --a /path/to/old/checkout --b . [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

WORKER = textwrap.dedent('''
    import json, sys, time
    import numpy as np
    import riskengine as rk

    T2 = np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]])
    T3 = np.arange(24).reshape(2, 3, 4) % 5 + 1

    def tab(a, dims=("v", "w", "z")):
        return rk.Table(a, dims=dims[:a.ndim])

    def cases():
        rng = lambda: np.random.default_rng(1)
        pt = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {1: 0.2, 2: 0.6, 3: 0.2},
              3: {2: 0.2, 3: 0.6, 4: 0.2}}
        yield "cyclic 4x4 (structured)", lambda: rk.CyclicPerturbation(
            rk.cycles.diagonal(4), 0.25, 0.25).protect(tab(T2), rng()), {}
        yield "controlled rounding 4x4 base 3 (dp)", lambda: rk.ControlledRounding(3).protect(
            tab(T2), rng()), {}
        yield "margins only 4x4 (halves)", lambda: rk.MarginsOnly().protect(tab(T2)), {}
        yield "margins only 4x4 Poisson(8) (dp)", lambda: rk.MarginsOnly().protect(tab(T2)), \\
            {"prior": rk.priors.Poisson(8.0)}
        yield "random rounding 4x4 base 3 (dp)", lambda: rk.RandomRounding(3).protect(
            tab(T2), rng()), {}
        yield "noisy counts 3x3 geometric b=0.5 (dp)", lambda: rk.NoisyCounts(
            "geometric", 0.5).protect(tab(T2[:3, :3]), rng()), {"prior": rk.priors.Poisson(8.0)}
        yield "controlled rounding 2x3x4 (enumerate)", lambda: rk.ControlledRounding(
            3).protect(tab(T3), rng()), {}
        yield "bootstrap 2x3 (joint)", lambda: rk.Bootstrap(3, 2.0).protect(
            tab(np.array([[5, 3, 2], [4, 6, 1]])), rng()), {}
        yield "rounding 4x4 Gibbs 2 x 200 draws", lambda: rk.ControlledRounding(3).protect(
            tab(T2), rng()), {"route": "gibbs",
                              "mcmc": rk.MonteCarlo(chains=2, warmup=50, draws=200)}

    def run(rounds_out):
        out = {}
        for name, make, kw in cases():
            prior = kw.pop("prior", rk.priors.Uniform())
            rk.posterior(make(), prior, **kw)                    # warm: compile, import
            t = []
            for _ in range(3):
                rel = make()
                t0 = time.perf_counter()
                rk.posterior(rel, prior, **kw)
                t.append(time.perf_counter() - t0)
            out[name] = min(t)
        return out

    import warnings
    warnings.simplefilter("ignore")
    run(None)                                                   # warm-up pass
    for line in sys.stdin:
        print(json.dumps(run(None)), flush=True)
''')


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="checkout A (e.g. the old main)")
    ap.add_argument("--b", required=True, help="checkout B (e.g. this change)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    procs = {}
    for k in ("a", "b"):
        env = {**os.environ, "PYTHONPATH": os.path.abspath(getattr(args, k))}
        procs[k] = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, env=env,
                                    cwd=os.path.abspath(getattr(args, k)))
    res = {"a": [], "b": []}
    for r in range(args.rounds):
        # alternate the order, and let the other process's idle threads settle (numba's
        # OpenMP threads spin after a parallel region: they would slow whoever runs next)
        for k in (("a", "b") if r % 2 == 0 else ("b", "a")):
            time.sleep(1.0)
            procs[k].stdin.write("go\n")
            procs[k].stdin.flush()
            res[k].append(json.loads(procs[k].stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    names = list(res["a"][0])
    print(f"| case | A s (median of {args.rounds}) | B s | B / A |")
    print("|---|---|---|---|")
    for n in names:
        a = sorted(r[n] for r in res["a"])[len(res["a"]) // 2]
        b = sorted(r[n] for r in res["b"])[len(res["b"]) // 2]
        print(f"| {n} | {a:.4f} | {b:.4f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
