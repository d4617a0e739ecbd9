"""Whole-table draws (issue 16): 10,000 exact draws per case, time and memory.

Run:  python benchmarks/draws.py [--draws 10000] [--markdown]

Every case runs in a fresh subprocess (``--one CASE``): it loads the kernels on a tiny
release of the same route first (compile or cache load, reported apart), computes the
posterior (timed), then draws (timed), and reports its peak resident memory
(``ru_maxrss``: the interpreter and the kernels included; the baseline after the warm-up
is printed beside it).  Cases: seed 003's base-3 rounding example (table DP), seed 003's
margins-only example (half-split route, drawing through the table DP), the 100 x 100
diagonal-cycle release (structured route, clique tree), a 6 x 6 base-3 rounding (table
DP, Poisson prior) and a 100 x 100 binomial release (independent cells; 10,000 draws of
it are 800 MB of int64).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

CASES = ("rounding_seed003", "margins_seed003", "rounding_6x6_base3", "cyclic_100x100",
         "binomial_100x100")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _case(name: str):
    """(release, prior, tiny release for the warm-up, size text)."""
    import riskengine as rk
    from riskengine.data.seeds import S003 as S
    if name == "rounding_seed003":
        rel = rk.Release(S.ROUNDED_2D, mechanism=rk.ControlledRounding(S.ROUNDING_BASE),
                         dims=("v", "w"))
        tiny = rk.ControlledRounding(3).protect(rk.Table(np.array([[1, 2], [4, 5]])),
                                                np.random.default_rng(0))
        return rel, rk.priors.Uniform(), tiny, "4x4"
    if name == "margins_seed003":
        rel = rk.MarginsOnly().protect(rk.Table(S.ORIGINAL_2D, dims=("v", "w")))
        tiny = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2, 1], [4, 5, 1], [1, 1, 1]])))
        return rel, rk.priors.Uniform(), tiny, "4x4, n=135"
    if name == "rounding_6x6_base3":
        t = rk.Table(np.random.default_rng(0).poisson(5, size=(6, 6)))
        rel = rk.ControlledRounding(3, method="optimal").protect(t)
        tiny = rk.ControlledRounding(3).protect(rk.Table(np.array([[1, 2], [4, 5]])),
                                                np.random.default_rng(0))
        return rel, rk.priors.Poisson(5.0), tiny, "6x6, mean 5"
    if name == "cyclic_100x100":
        rng = np.random.default_rng(0)
        mech = rk.CyclicPerturbation(rk.cycles.diagonal(100), alpha=0.25, beta=0.25)
        rel = mech.protect(rk.Table(rng.poisson(20, size=(100, 100))), rng)
        small = rk.CyclicPerturbation(rk.cycles.diagonal(4), alpha=0.25, beta=0.25)
        tiny = small.protect(rk.Table(rng.poisson(20, size=(4, 4))), rng)
        return rel, rk.priors.Uniform(), tiny, "100x100 (m=100)"
    if name == "binomial_100x100":
        rng = np.random.default_rng(0)
        rel = rk.BinomialPerturbation(2.0).protect(rk.Table(rng.poisson(5, size=(100, 100))),
                                                   rng)
        tiny = rk.BinomialPerturbation(2.0).protect(rk.Table(rng.poisson(5, size=(3, 3))), rng)
        return rel, rk.priors.Flat(low=1), tiny, "100x100"
    raise SystemExit(f"unknown case {name!r}; known: {', '.join(CASES)}")


def one(name: str, n: int) -> dict:
    import riskengine as rk
    rel, prior, tiny, size = _case(name)
    t0 = time.perf_counter()
    rk.posterior(tiny, prior).sample(10, np.random.default_rng(0))
    warm = time.perf_counter() - t0
    base = _rss_mb()
    t0 = time.perf_counter()
    post = rk.posterior(rel, prior)
    t_post = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = post.sample(n, np.random.default_rng(1))
    t_draw = time.perf_counter() - t0
    assert d.shape == (n, *rel.shape)
    return {"case": name, "size": size, "route": post.attrs.get("route"), "warm": warm,
            "posterior": t_post, "draws": t_draw, "n": n, "rss_base": base,
            "rss_peak": _rss_mb()}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.draws)))
        return
    import numba
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numba threads {numba.get_num_threads()}, python {platform.python_version()}, "
          f"numba {numba.__version__}; {args.draws} draws per case")
    head = ("case", "size", "route", "warm-up s", "posterior s", "draws s",
            "peak RSS MB (after warm-up)")
    rows = []
    for c in args.cases:
        out = subprocess.run([sys.executable, __file__, "--one", c, "--draws", str(args.draws)],
                             capture_output=True, text=True, check=False)
        if out.returncode:
            rows.append((c, "-", "-", "-", "-", "-", out.stderr.strip().splitlines()[-1][:60]))
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append((r["case"], r["size"], r["route"], f"{r['warm']:.2f}",
                     f"{r['posterior']:.3f}", f"{r['draws']:.3f}",
                     f"{r['rss_peak']:.0f} ({r['rss_base']:.0f})"))
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(x) for h, x in zip(head, w)))
        for r in rows:
            print("  ".join(v.ljust(x) for v, x in zip(r, w)))


if __name__ == "__main__":
    main()
