"""The Monte Carlo route (blocked Gibbs) beside the exact routes, and beyond them.

Run:  python benchmarks/montecarlo.py [--quick] [--markdown]

Where the exact table DP also runs, both are timed and compared: the largest difference
of a cell probability, and the largest difference of a cell's posterior mean in units of
its MCSE.  Beyond the exact frontier (8 x 6, cell mean 15: the ordinary agency table)
only the Monte Carlo route answers; its time and arviz diagnostics are reported.  The
resampling cases (bootstrap, binomial) run their own Monte Carlo route ``mcmc`` (pairs
of cells redrawn with the exact joint likelihood), beside the per-cell approximation;
``--only bootstrap --only binomial`` runs just those.
JIT compile (or cache load) is measured once on a tiny table and reported apart.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
import xarray as xr

import riskengine as rk
from riskengine.inference.resolve import route_for


def _release(kind, shape, lam, seed):
    rng = np.random.default_rng(seed)
    dims = ("region", "age", "sex")[:len(shape)]
    t = rk.Table(rng.poisson(lam, size=shape), dims=dims)
    if kind == "margins":
        return t, rk.MarginsOnly().protect(t)
    if kind == "bootstrap":                       # issue 17 item 5: resampling, n ~ 700
        return t, rk.Bootstrap(M=3, S=2.0).protect(t, rng)
    if kind == "binomial":
        return t, rk.BinomialPerturbation(S=2.0).protect(t, rng)
    if kind == "set_cellkey":                     # issue 18: a region split in two
        return _split_set(shape, lam, rng)
    base = int(kind.split("_")[1])
    return t, rk.ControlledRounding(base, method="optimal").protect(t, rng)


def _split_set(shape, lam, rng):
    """Records of an R x C table (the last region split into two parts in the finest
    table), cell key protection of the split table and the whole one: the finest truth and
    the rk.ReleaseSet of both."""
    R, C = shape
    fine = [f"R{i}" for i in range(R - 1)] + [f"R{R - 1}a", f"R{R - 1}b"]
    ages = [f"a{j}" for j in range(C)]
    counts = rng.poisson(lam, size=(R + 1, C))
    counts[-1] = rng.poisson(max(1, lam // 5), size=C)        # the small part
    region = np.repeat(np.repeat(fine, C), counts.ravel())
    age = np.repeat(np.tile(ages, R + 1), counts.ravel())
    n = region.size
    rec = {"region": region, "age": age, "record_key": rk.CellKey.record_keys(n, rng)}
    last = f"R{R - 1}"
    whole = {**rec, "region": np.where(np.char.startswith(region.astype(str), last), last,
                                       region)}
    ck = rk.CellKey(D=2, V=1.0)
    a = ck.protect_records(rec, ("region", "age"), categories={"region": fine, "age": ages})
    b = ck.protect_records(whole, ("region", "age"),
                           categories={"region": [f"R{i}" for i in range(R)], "age": ages})
    truth = rk.Table(counts, dims=("region", "age"), coords={"region": fine, "age": ages})
    return truth, rk.ReleaseSet([a, b], groups={"region": {last: fine[-2:]}})


def _pmf(post, lo, hi):
    return np.stack([post.prob(np.full(post.shape, v)).values for v in range(lo, hi + 1)], -1)


CASES = [  # (kind, shape, mean, exact too)
    ("rounding_3", (4, 4), 20, True),
    ("margins", (6, 4), 8, True),
    ("margins", (3, 3, 3), 2, True),
    ("rounding_3", (8, 6), 15, False),
    ("margins", (8, 6), 15, False),
    # issue 17's acceptance instances
    ("rounding_5", (8, 6), 15, False),
    ("rounding_5", (20, 30), 10, False),
    ("margins", (10, 10), 20, False),
    ("margins", (10, 10, 5), 20, False),
    # issue 17 item 5: resampling beyond the joint route (route mcmc, exact joint likelihood)
    ("bootstrap", (8, 6), 15, False),
    ("binomial", (8, 6), 15, False),
    # issue 18: two tables of the same records (8 regions x 6 ages, one region split in two),
    # cell key; the linked DP does not fit, the set's Gibbs route answers
    ("set_cellkey", (8, 6), 15, False),
]

#: the Monte Carlo route of each kind (the resampling mechanisms' is "mcmc")
MC_ROUTE = {"bootstrap": "mcmc", "binomial": "mcmc"}

#: how the cost grows: n x (3n/2) tables, mean 10, rounded to base 5
SCALING = [(4, 6), (8, 12), (12, 18), (16, 24), (20, 30), (24, 36)]


def _gibbs(rel, prior, **kw):
    """The release's Gibbs route with these chain settings (rk.MonteCarlo's)."""
    return rk.posterior(rel, prior, route="gibbs", memory=4e9, mcmc=rk.MonteCarlo(**kw))


def _indicator_mcse(chains, lo, hi):
    """arviz MCSE of Pr(cell = v) for every cell and v in lo..hi, from (chain, draw, r, c)."""
    from riskengine import _arviz
    az = _arviz.arviz()
    shape = chains.shape[2:]
    flat = chains.reshape(chains.shape[:2] + (-1,))
    vals = np.arange(lo, hi + 1)
    ind = (flat[..., None] == vals).astype(float)             # (chain, draw, cell, V)
    ds = xr.Dataset({"p": (("chain", "draw", "cell", "v"), ind)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = az.mcse(ds)["p"].values
    const = ind.min(axis=(0, 1)) == ind.max(axis=(0, 1))
    return (np.where(const, 0.0, m).reshape(shape + (-1,)),
            ind.mean(axis=(0, 1)).reshape(shape + (-1,)))


VALIDATE_KINDS = ["margins", "rounding_3", "random_3", "cellkey", "suppression",
                  "margins_3d", "rounding_3d"]


def _validation_release(kind, rng):
    """A random small release of ``kind`` whose exact posterior is quick."""
    if kind.endswith("_3d"):
        shape = (2, 2, 3) if kind == "rounding_3d" else ((3, 3, 2), (2, 3, 3))[
            int(rng.integers(2))]
        lam = float(rng.uniform(1, 4))
    else:
        shape = (int(rng.integers(4, 6)), int(rng.integers(2, 4)))
        lam = float(rng.uniform(2, 8))
    dims = ("a", "b", "c")[:len(shape)]
    T = rk.Table(rng.poisson(lam, size=shape), dims=dims)
    if kind in ("margins", "margins_3d"):
        return rk.MarginsOnly().protect(T)
    if kind in ("rounding_3", "rounding_3d"):
        return rk.ControlledRounding(3, method="optimal").protect(T, rng)
    if kind == "random_3":
        return rk.RandomRounding(3).protect(T, rng)
    if kind == "cellkey":
        return rk.CellKey(D=2, V=1.0).protect(T, rng)
    supp = rng.random(shape) < 0.4
    supp.ravel()[0] = True
    return rk.Release(np.where(supp, np.nan, T.values), margins=T.totals(),
                      mechanism=rk.CellSuppression(), dims=dims, kind="count")


def validate(n_tables: int, repeats: int, seed: int = 0):
    """Monte Carlo pmfs against the exact DP on random small tables: the share of
    (cell, value) pairs within 4 MCSE; then, on a few tables, the MCSE against the
    spread of the estimates over repeated runs with other seeds."""
    rng = np.random.default_rng(seed)
    within, total, worst = 0, 0, 0.0
    kinds = VALIDATE_KINDS
    cases = []
    per_kind = {k: [0, 0] for k in kinds}
    t0 = time.perf_counter()
    for k in range(n_tables):
        kind = kinds[k % len(kinds)]
        rel = _validation_release(kind, rng)
        exact = rk.posterior(rel, route="dp" if len(rel.dims) == 2 else "enumerate")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mc = _gibbs(rel, rk.priors.Uniform(), warmup=200, draws=1000)
        lo = int(min(exact.start.min(), mc.start.min()))
        hi = int(max((exact.start + exact.width).max(), (mc.start + mc.width).max()))
        mcse, p_mc = _indicator_mcse(mc.chains, lo, hi)
        p_ex = _pmf(exact, lo, hi)
        err = np.abs(p_mc - p_ex)
        ok = err <= 4 * mcse + 1e-12
        within += int(ok.sum())
        total += ok.size
        per_kind[kind][0] += int(ok.sum())
        per_kind[kind][1] += ok.size
        worst = max(worst, float((err / np.maximum(mcse, 1e-12)).max()))
        cases.append((rel, exact, lo, hi))
    t_val = time.perf_counter() - t0
    print(f"validation: {n_tables} tables ({', '.join(kinds)}; 2-D 4-5 x 2-3, means 2-8; "
          f"3-D 3x3x2, 2x3x3, 2x2x3, means 1-4), 4 chains x 1000 draws: {within} of {total} "
          f"(cell, value) pairs within 4 MCSE ({100 * within / total:.2f}%), largest "
          f"|error| / MCSE {worst:.1f}; {t_val:.0f} s")
    for kind, (w, n) in per_kind.items():
        print(f"  {kind}: {w} of {n} ({100 * w / max(n, 1):.2f}%)")
    ratios = []
    for rel, exact, lo, hi in cases[:3]:
        ests, ses = [], []
        for r in range(repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mc = _gibbs(rel, rk.priors.Uniform(), warmup=200, draws=1000, seed=r)
            mcse, p_mc = _indicator_mcse(mc.chains, lo, hi)
            ests.append(p_mc)
            ses.append(mcse)
        ests, ses = np.array(ests), np.array(ses)
        sd = ests.std(axis=0, ddof=1)
        keep = sd > 0.005                   # pairs that vary enough to compare
        ratios.append(float(np.median(ses.mean(axis=0)[keep] / sd[keep])))
    print(f"MCSE / observed sd over {repeats} runs with other seeds (median over (cell, value) "
          f"pairs with sd > 0.005), first 3 tables: {', '.join(f'{x:.2f}' for x in ratios)}")


def scaling(markdown: bool):
    """Seconds and seconds per 1000 effective draws of the Monte Carlo route on n x (3n/2)
    tables of mean 10 rounded to base 5 (4 chains x 1000 draws, 300 warm-up sweeps)."""
    rows = []
    for shape in SCALING:
        _, rel = _release("rounding_5", shape, 10, 7)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mc = rk.posterior(rel, route="gibbs", count=False)
        dt = time.perf_counter() - t0
        dg = mc.diagnostics.attrs
        rows.append((f"{shape[0]}x{shape[1]}", shape[0] * shape[1], dt, dg["max_rhat"],
                     dg["min_ess_bulk"], 1000 * dt / dg["min_ess_bulk"]))
        print(rows[-1], flush=True)
    if markdown:
        print("| size | cells | s | max R-hat | min bulk ESS | s per 1000 ESS |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.4f} | {r[4]:.0f} | {r[5]:.2f} |")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only the cases the exact DP answers")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--validate", type=int, metavar="N", default=0,
                    help="also check N random small tables against the exact DP (4 MCSE)")
    ap.add_argument("--repeats", type=int, default=20,
                    help="runs with other seeds for the MCSE-vs-observed-error check")
    ap.add_argument("--only-validate", action="store_true")
    ap.add_argument("--scaling", action="store_true",
                    help="only the growth of the cost with the table's size")
    ap.add_argument("--only", metavar="KIND", action="append", default=None,
                    help="only the CASES of this kind (repeatable), e.g. --only bootstrap")
    args = ap.parse_args(argv)
    if args.scaling:
        scaling(args.markdown)
        return
    if args.validate:
        validate(args.validate, args.repeats)
        if args.only_validate:
            return
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}")
    t0 = time.perf_counter()
    _, tiny = _release("margins", (4, 3), 3, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rk.posterior(tiny, route="gibbs")
    print(f"warm-up (JIT compile or cache load, tiny table): {time.perf_counter() - t0:.2f} s")
    rows = []
    for kind, shape, lam, exact in CASES:
        if args.quick and not exact or args.only and kind not in args.only:
            continue
        t, rel = _release(kind, shape, lam, 7)
        route = MC_ROUTE.get(kind, "gibbs")
        if route != "gibbs":                   # compile / cache load of its kernels, apart
            _, tiny = _release(kind, (2, 3), 4, 0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rk.posterior(tiny, route=route, mcmc=rk.MonteCarlo(2, 5, 20))
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            mc = rk.posterior(rel, route=route, count=False)
        t_mc = time.perf_counter() - t0
        dg = mc.diagnostics.attrs
        row = {"case": f"{kind.replace('_', ' base ')}", "size": "x".join(map(str, shape)) +
               f", mean {lam}", "gibbs s": f"{t_mc:.1f}", "route": route,
               "max R-hat": f"{dg['max_rhat']:.4f}",
               "s per 1000 ESS": f"{1000 * t_mc / dg['min_ess_bulk']:.2f}",
               "min ESS bulk / tail": f"{dg['min_ess_bulk']:.0f} / {dg['min_ess_tail']:.0f}",
               "warnings": str(len(w)),
               "E[exact disclosures]": f"{float(mc.prob_exact(t).sum()):.2f}"}
        if exact:
            t0 = time.perf_counter()
            ex = rk.posterior(rel, route="dp" if len(shape) == 2 else "enumerate")
            row["exact s"] = f"{time.perf_counter() - t0:.2f}"
            lo = int(min(ex.start.min(), mc.start.min()))
            hi = int(max((ex.start + ex.width).max(), (mc.start + mc.width).max()))
            row["max |pmf diff|"] = f"{np.abs(_pmf(mc, lo, hi) - _pmf(ex, lo, hi)).max():.3f}"
            z = np.abs(mc.mean().values - ex.mean().values) / np.maximum(
                mc.diagnostics["mcse_mean"].values, 1e-12)
            row["max |mean diff| / MCSE"] = f"{z.max():.2f}"
            row["E[exact disclosures]"] += f" (exact {float(ex.prob_exact(t).sum()):.2f})"
        elif route == "mcmc":
            r, why = route_for(rel, rk.priors.Uniform())
            row["exact s"] = "joint route refused: " + why.split("joint: ")[1].split(";")[0]
            row["case"] += f" (n = {int(t.values.sum())}, {rel.mechanism.describe()})"
            row["auto"] = r.name
            row["fallbacks"] = mc.attrs["exact_fallbacks"]
            cells = rk.posterior(rel, route="cells", count=False)
            row["max |mean mcmc - cells|"] = \
                f"{np.abs(mc.mean().values - cells.mean().values).max():.2f}"
            row["E[exact disclosures]"] += \
                f" (cells route {float(cells.prob_exact(t).sum()):.2f})"
        elif kind.startswith("set"):
            r, why = route_for(rel, rk.priors.Uniform())
            row["exact s"] = "linked-dp passed over: " + why.split("linked-dp: ")[1].split(
                ";")[0]
            row["case"] = "release set, cell key D=2 V=1"
            row["size"] = (f"{shape[0]}x{shape[1]} + region split ({rel.shape[0]}x"
                           f"{rel.shape[1]} finest), mean {lam}")
        else:
            try:
                r, _ = route_for(rel, rk.priors.Uniform(),
                                    "dp" if len(shape) == 2 else "auto")
                row["exact s"] = ("fits (not run)" if r.exact else
                                  "enumeration gave up after its 5e7-step probe")
            except ValueError as e:
                need = str(e).split("needs ")[1].split(" (")[0] if "needs " in str(e) else "?"
                row["exact s"] = f"refused (needs {need})"
        rows.append(row)
        print(row, flush=True)
    if args.markdown:
        cols = ["case", "size", "exact s", "gibbs s", "s per 1000 ESS", "max R-hat",
                "min ESS bulk / tail",
                "max |pmf diff|", "max |mean diff| / MCSE", "E[exact disclosures]", "warnings"]
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(r.get(c, "-") for c in cols) + " |")


if __name__ == "__main__":
    main()
