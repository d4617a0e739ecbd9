"""riskengine performance suite.

Run:  python benchmarks/run.py [--quick] [--markdown]

Prints one row per case: case, size, candidates, seconds, candidates/s.
Numba compile (or cache-load) time is measured once per kernel on a tiny problem
and reported separately; every timed case runs after that warm-up.
Targets (issue 2, this 2-core machine): diagonal design n = 20 exact by enumeration
<= 10 s; n = 100 by the structured route <= 10 s.  Issue 3: seed 003 rounding example
exact count <= 5 s and full posterior <= 10 s; margins-only example count + posterior
<= 2 s (the posterior's forward pass also gives the exact count).  Scaling of the
table DP: benchmarks/scaling.py; side by side with Normaliz: benchmarks/normaliz.py.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import riskengine as rk


def _release(n, seed=0, lam=20):
    rng = np.random.default_rng(seed)
    t = rk.Table(rng.poisson(lam, size=(n, n)))
    mech = rk.CyclicPerturbation(rk.cycles.diagonal(n), alpha=0.25, beta=0.25)
    return mech.protect(t, rng)


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the largest cases")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)

    import numba
    rows = []
    tiny = _release(4)
    _, warm_enum = _time(lambda: rk.posterior(tiny, route="enumerate"))
    _, warm_struct = _time(lambda: rk.posterior(tiny, route="structured"))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numba threads {numba.get_num_threads()}, python {platform.python_version()}, "
          f"numba {numba.__version__}")
    print(f"warm-up (JIT compile or cache load): enumeration {warm_enum:.2f} s, "
          f"structured {warm_struct:.2f} s")

    enum_ns = [4, 8, 12, 16] + ([] if args.quick else [20])
    for n in enum_ns:
        rel = _release(n)
        post, dt = _time(lambda rel=rel: rk.posterior(rel, route="enumerate"))
        rows.append(("diagonal, enumeration", f"{n}x{n} (m={n})", post.n_candidates, dt,
                     3 ** n / dt))
    struct_ns = [20, 50, 100] + ([] if args.quick else [200])
    for n in struct_ns:
        rel = _release(n)
        post, dt = _time(lambda rel=rel: rk.posterior(rel, route="structured"))
        rows.append(("diagonal, structured", f"{n}x{n} (m={n})", post.n_candidates, dt,
                     None))

    # controlled rounding and margins only (exact table DP; issue 3)
    from riskengine.data.seeds import S003 as S
    seed_t = rk.Table(S.ORIGINAL_2D, dims=("v", "w"))
    rounded = rk.Release(S.ROUNDED_2D, mechanism=rk.ControlledRounding(S.ROUNDING_BASE),
                         dims=("v", "w"))
    n, dt = _time(lambda: rk.count_candidates(rounded))
    rows.append(("rounding base 3 (seed 003), count", "4x4", n, dt, None))
    post, dt = _time(lambda: rk.posterior(rounded))
    rows.append(("rounding base 3 (seed 003), posterior + count", "4x4", post.n_candidates, dt,
                 None))
    margins = rk.MarginsOnly().protect(seed_t)
    n, dt = _time(lambda: rk.count_candidates(margins))
    rows.append(("margins only (seed 003), count", "4x4, n=135", n, dt, None))
    post, dt = _time(lambda: rk.posterior(margins))
    rows.append(("margins only (seed 003), posterior + count", "4x4, n=135", post.n_candidates,
                 dt, None))
    big = rk.ControlledRounding(3, method="optimal").protect(
        rk.Table(np.random.default_rng(0).poisson(15, size=(5, 5))))
    post, dt = _time(lambda: rk.posterior(big))
    rows.append(("rounding base 3, posterior + count", "5x5", post.n_candidates, dt, None))

    # resampling: per-cell posterior of a 1000 x 1000 table (issue 4 target <= 5 s)
    rng = np.random.default_rng(0)
    x = rk.Table(rng.poisson(5, size=(1000, 1000)))
    rel_b, dt_p = _time(lambda: rk.BinomialPerturbation(2.0).protect(x, rng))
    rows.append(("binomial perturbation, protect", "1000x1000", None, dt_p, None))
    boot = rk.Release(rel_b.published, margins={(): int(x.values.sum())},
                      mechanism=rk.Bootstrap(3, 2.0))
    for name, rel, prior in (("binomial, per-cell posterior, Flat(low=1)", rel_b,
                              rk.priors.Flat(low=1)),
                             ("bootstrap M=3, per-cell posterior, Poisson(5)", boot,
                              rk.priors.Poisson(5.0))):
        post, dt = _time(lambda rel=rel, prior=prior: rk.posterior(rel, prior, count=False))
        rows.append((name, "1000x1000", None, dt, None))

    head = ("case", "size", "candidates", "seconds", "candidates/s")
    def c(x):
        return "-" if x is None else (f"{x:.3e}" if x >= 1e7 else str(x))
    table = [(a, b, c(n), f"{dt:.3f}", f"{n / dt:.3e}" if n else "-") for a, b, n, dt, _ in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in table:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(x) for h, x in zip(head, w)))
        for r in table:
            print("  ".join(v.ljust(x) for v, x in zip(r, w)))
    print("(enumeration visits 3^m sign vectors; the structured route's cost does not depend "
          "on the number of candidates)")


if __name__ == "__main__":
    main()
