"""What ``route="auto"`` costs on small cell-key tables with totals now that it takes the
key chains (``keys_mcmc``) instead of the product over entries (issue 26): seconds per
posterior, split into the chains' starts (mixed-integer programs), the chains and the
diagnostics, beside the product (``route="dp"``) on the same releases.

Run:  python benchmarks/keys_auto.py [--hogs] [--releases 6]
      python benchmarks/keys_auto.py --differences   (the product against the chains)

Releases: Poisson(3) tables (seeded), ``rk.CellKey(D=3, V=2, js=1)`` (a designed p-table:
on no grid, so no exact route), every total; posterior under Poisson(3).  Cases: 3 x 3
with the default settings (4 chains x 1,000 draws) and with 2 x 500; 2 x 3 through
``rk.simulate`` with 2 x 1,000 (the calibration test's setting).  One process, after a
warm-up call; wall seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import sys
import time
import warnings

import numpy as np
import xarray as xr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _hogs import hogs

import riskengine as rk

PRIOR = rk.priors.Poisson(3.0)
MECH = rk.CellKey(D=3, V=2, js=1)


def _releases(shape, k):
    gen = rk.generators.Poisson(3.0, shape=shape, dims=("v", "w"))
    return [MECH.protect(gen.draw(np.random.default_rng(i)), np.random.default_rng(100 + i))
            for i in range(k)]


def _split(fn) -> dict:
    """Seconds of ``fn()`` in all, and in the starts, the chains and the diagnostics."""
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    fn()
    pr.disable()
    total = time.perf_counter() - t
    st = pstats.Stats(pr).stats
    parts = {"starts": "_start", "chains": "run", "diagnostics": "judge"}
    files = {"starts": "keyed_gibbs.py", "chains": "_chains.py", "diagnostics": "gibbs.py"}
    out = {"total": total}
    for k, name in parts.items():
        out[k] = sum(v[3] for (f, _, fn_), v in st.items()
                     if fn_ == name and f.endswith(files[k]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hogs", action="store_true", help="two CPU hogs beside the runs")
    ap.add_argument("--releases", type=int, default=6)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    ctx = hogs(2) if a.hogs else contextlib.nullcontext()
    with ctx:
        print(f"load average: {os.getloadavg()[0]:.2f}")
        rk.posterior(_releases((3, 3), 1)[0], PRIOR)                      # warm-up
        for label, mc in (("3 x 3, 4 x 1,000", None),
                          ("3 x 3, 2 x 500", rk.MonteCarlo(chains=2, draws=500))):
            for rel in _releases((3, 3), a.releases):
                box = {}

                def run(rel=rel, mc=mc, box=box):
                    box["p"] = rk.posterior(rel, PRIOR, mcmc=mc)
                s = _split(run)
                t = time.perf_counter()
                rk.posterior(rel, PRIOR, route="dp")
                dp = time.perf_counter() - t
                p = box["p"]
                print(f"{label}: route {p.attrs['route']}, {s['total']:.2f} s (starts "
                      f"{s['starts']:.2f}, chains {s['chains']:.2f}, diagnostics "
                      f"{s['diagnostics']:.2f}); product {dp:.3f} s; "
                      f"{p.attrs['diagnostics']}", flush=True)
        gen = rk.generators.Poisson(3.0, shape=(2, 3), dims=("v", "w"))
        t = time.perf_counter()
        ds = rk.simulate(gen, rk.CellKey(D=3, V=3, js=1), PRIOR, n_tables=150,
                         rng=np.random.default_rng(4),
                         mcmc=rk.MonteCarlo(chains=2, draws=1000))
        s = time.perf_counter() - t
        print(f"2 x 3 simulate, 150 tables, 2 x 1,000: {s:.1f} s ({s / 150:.2f} s a table), "
              f"routes {ds.attrs['routes']}, not converged {ds.attrs['n_not_converged']}")


if __name__ == "__main__" and "--differences" not in sys.argv:
    main()


def differences(k: int = 20) -> None:
    """How far the product over entries is from the key chains on designed p-tables (no
    exact route there): per release, the largest difference of a cell's probability at
    any value and of a cell's mean, beside the chains' largest MCSE of a mean."""
    warnings.simplefilter("ignore")
    dp_, dm_ = [], []
    for rel in _releases((3, 3), k):
        mc = rk.posterior(rel, PRIOR)
        pr = rk.posterior(rel, PRIOR, route="dp")
        a, b = xr.align(mc.pmf, pr.pmf, join="outer", fill_value=0.0)
        dp_.append(float(abs(a - b).max()))
        dm_.append(float(abs(mc.mean() - pr.mean()).max()))
        print(f"max |dP| {dp_[-1]:.3f}, max |d mean| {dm_[-1]:.3f} (chains' max MCSE of a "
              f"mean {float(mc.diagnostics['mcse_mean'].max()):.3f})", flush=True)
    print(f"over {k} releases: max |dP| median {np.median(dp_):.3f}, max {max(dp_):.3f}; "
          f"max |d mean| median {np.median(dm_):.3f}, max {max(dm_):.3f}")


if __name__ == "__main__" and "--differences" in sys.argv:
    differences()
