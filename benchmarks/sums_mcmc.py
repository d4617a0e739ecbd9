"""The Monte Carlo route of suppressed hierarchical tables (``gibbs``:
riskengine.inference.sums.SumsGibbs) against the exact sums route, and past it.

    python benchmarks/sums_mcmc.py [--seeds 0 1 2 ...] [--big 0 1 2 ...] [--dense]

Cases: a 2-level geography (3 regions x 4 districts) x 5 columns, counts Poisson with
rates drawn from {1, 2, 4, 30}, suppressed by ``rk.suppress(ts, Frequency(3))`` (the
pattern agencies publish: small hidden cells and their complements), uniform prior.  Per
seed: the exact route's candidates and seconds (or its refusal past 5e7 candidates),
the Monte Carlo route's seconds and diagnostics (4 chains x 1000 draws after 300), and
where both ran: the largest |mean difference| in units of sd / sqrt(ESS) and the largest
total-variation distance between a cell's two pmfs.  ``--big``: 4 regions x 6 districts x
8 columns (72-84 hidden cells, far past the exact walk): the Monte Carlo route alone, its
rounds and diagnostics.  ``--dense``: every interior cell of
a 3 x 4 / 4 x 5 table with counts 40-60 hidden, against the 2-D exact routes on the same
margins (where the block redraws do not mix: they say so).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import riskengine as rk


def hierarchical(seed, R=3, D=4, C=5):
    rng = np.random.default_rng(seed)
    geo = rk.Hierarchy({f"R{r}": [f"R{r}D{d}" for d in range(D)] for r in range(R)})
    rate = rng.choice([1.0, 2.0, 4.0, 30.0], size=(R * D, C), p=[.3, .3, .2, .2])
    t = rk.Table(rng.poisson(rate), dims=("geo", "col"),
                 coords={"geo": list(geo.leaves), "col": [f"c{i}" for i in range(C)]},
                 hierarchies={"geo": geo}, name="T")
    return rk.suppress(rk.TableSet(t), rk.sensitivity.Frequency(3))


def dense(shape, rate, seed=3):
    x = np.random.default_rng(seed).poisson(rate, size=shape)
    ts = rk.TableSet(rk.Table(x, dims=("r", "c")))
    v = ts.values.copy()
    v[: ts.system.n_interior] = np.nan
    flat = rk.Release(np.full(shape, np.nan), margins={("r",): x.sum(1), ("c",): x.sum(0),
                                                       (): x.sum()},
                      mechanism=rk.CellSuppression(), dims=("r", "c"))
    return rk.TableSetRelease(ts, v, rk.CellSuppression()), flat


def agreement(ex, mc) -> str:
    me, mm, sd = (ex.mean().values.ravel(), mc.mean().values.ravel(),
                  ex.sd().values.ravel())
    ess = mc.diagnostics["ess_bulk"].values.ravel()
    ok = sd > 0
    z = np.abs(mm - me)[ok] / (sd[ok] / np.sqrt(ess[ok]))
    a, b = ex.pmf, mc.pmf
    lo = min(int(a["value"][0]), int(b["value"][0]))
    hi = max(int(a["value"][-1]), int(b["value"][-1]))
    A = np.zeros((me.size, hi - lo + 1))
    B = np.zeros_like(A)
    A[:, int(a["value"][0]) - lo:int(a["value"][-1]) - lo + 1] = a.values.reshape(me.size, -1)
    B[:, int(b["value"][0]) - lo:int(b["value"][-1]) - lo + 1] = b.values.reshape(me.size, -1)
    tv = 0.5 * np.abs(A - B).sum(axis=1)
    return f"max z {z.max():.2f}, max TV {tv.max():.3f}"


def monte_carlo(rel, prior):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mc = rk.posterior(rel, prior, route="gibbs")
    return mc, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=list(range(8)))
    ap.add_argument("--big", type=int, nargs="*", default=[])
    ap.add_argument("--dense", action="store_true")
    args = ap.parse_args()
    prior = rk.priors.Uniform()
    monte_carlo(hierarchical(0), prior)                 # compile / load the kernels
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    for seed in args.seeds:
        rel = hierarchical(seed)
        hidden = int(np.isnan(rel.values[: rel.system.n_interior]).sum())
        t0 = time.perf_counter()
        try:
            ex = rk.posterior(rel, prior, route="sums")
            exact = f"{ex.n_candidates:,} candidates in {time.perf_counter() - t0:.1f} s"
        except ValueError as e:
            ex, exact = None, f"refused after {time.perf_counter() - t0:.0f} s ({e})"[:120]
        mc, tm = monte_carlo(rel, prior)
        line = (f"seed {seed}: {hidden} hidden finest cells; exact: {exact}; Monte Carlo "
                f"{tm:.1f} s, {mc.attrs['diagnostics']}, converged {mc.attrs['converged']}, "
                f"{mc.attrs['rounds']}")
        if ex is not None:
            line += "; " + agreement(ex, mc)
        print(line, flush=True)
    for seed in args.big:
        rel = hierarchical(seed, 4, 6, 8)
        hidden = int(np.isnan(rel.values[: rel.system.n_interior]).sum())
        mc, tm = monte_carlo(rel, prior)
        print(f"big seed {seed}: {hidden} hidden finest cells; Monte Carlo {tm:.1f} s, "
              f"{mc.attrs['diagnostics']}, converged {mc.attrs['converged']}, "
              f"{mc.attrs['rounds']}", flush=True)
    if args.dense:
        for shape, rate in (((3, 4), 40), ((4, 5), 60)):
            rel, flat = dense(shape, rate)
            t0 = time.perf_counter()
            ex = rk.posterior(flat, prior, count=False)
            te = time.perf_counter() - t0
            mc, tm = monte_carlo(rel, prior)
            print(f"dense {shape} rate {rate}: 2-D route {ex.attrs['route']} {te:.1f} s; "
                  f"Monte Carlo {tm:.1f} s, {mc.attrs['diagnostics']}, converged "
                  f"{mc.attrs['converged']}, {mc.attrs['rounds']}; {agreement(ex, mc)}",
                  flush=True)


if __name__ == "__main__":
    main()
