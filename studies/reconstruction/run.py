"""Reconstruction study (issue 32, item 4): which persons an intruder rebuilds from a
census-style publication, with certainty, and how protection changes it.

    python studies/reconstruction/run.py [--part county|tenx|protections|all|write]
                                         [--workers 2] [--out studies/reconstruction/results.md]

The population: riskengine.census_blocks.BlockPopulation (1 county > tracts > blocks of
5-120 persons; sex, 23 age bands, 6 race groups, Hispanic origin), seed 2010.  Two
publications modelled on the 2010 Summary File 1 (``BlockPopulation.tables``):
``"basic"`` (5 definitions, 10 SF1 tables: by block P1, P12, P11; by tract P12A-F,
P12H) and ``"sf1"`` (10 definitions, 21 SF1 tables: by block P1, P3, P4, P5, P10, P11,
P12, P12A-F, P12H; by tract PCT12H-N), published exactly or protected.

* **county**: the default design (20 tracts, 532 blocks, about 19,000 persons), each
  publication published exactly; rk.reconstruct tract by tract (the county's cells
  dropped: each is a sum of tract cells), LP bounds, on ``--workers`` local processes.
  The measures: persons reconstructed with certainty (every consistent finest table has
  them), blocks every cell of which is certain (the Census Bureau's "exactly
  reconstructed blocks"), time.
* **tenx**: ten counties of that size (``layout_seed`` 0-9, about 190,000 persons, 5,300
  blocks), the "sf1" publication, on a dask ``LocalCluster`` of ``--workers`` processes:
  each county is one publication (counties share no published cell but the state's, which
  the tract units drop anyway) and one ``rk.reconstruct(..., scheduler=client)`` call
  over its tracts; the first county is also run serially and compared cell by cell.
* **posterior**: the county under "sf1" with a uniform prior: exact posteriors per tract
  (the county's cells are implied by the tracts', so nothing is dropped), the records
  ranked by confidence.
* **protections** ("sf1"): a 3-tract design (about 30 blocks) published exactly and after
  targeted record swapping (5 %, 10 %; risk variables race and Hispanic origin, k = 2,
  persons as households); a 1-tract design of 3 blocks published exactly, by random
  rounding (base 2, 3), by the cell key method (p-tables D=1, D=2; known to the
  intruder: the worst case), swapping followed by the cell key method, and discrete
  Gaussian noise (sigma 0.5, 1, 2; certainty with probability >= 0.99 over the noise,
  ``coverage=0.99``).  The measures: persons certain, how many of the certain records are
  real (against the original records, ``truth=``), and the mean absolute deviation of the
  published cells.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine.census_blocks import BlockPopulation

SEED = 2010


def _sf1_count(publication: str) -> int:
    """The 2010 SF1 tables the publication's definitions stand for."""
    from riskengine.census_blocks import SF1_TABLES
    if publication == "sf1":
        return sum(len(v) for v in SF1_TABLES.values())
    return 3 + 6 + 1        # P1, P12, P11 by block; P12A-F, P12H by tract


def _set(pop, df, publication):
    return rk.TableSet.from_pandas(df, pop.tables(publication),
                                   hierarchies=pop.hierarchies(publication=publication))


def county(workers: int, out: Path, publication: str) -> dict:
    pop = BlockPopulation()
    df = pop.generate(np.random.default_rng(SEED))
    t0 = time.perf_counter()
    ts = _set(pop, df, publication)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()

    def progress(d, n):
        print(f"  county ({publication}): {d}/{n} tracts, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    ds = rk.reconstruct(ts, unit="block", level=2, bounds="lp", workers=workers,
                        out=out / f"county_{publication}_units", progress=progress)
    wall = time.perf_counter() - t0
    a = ds.attrs
    return {"publication": publication, "persons": len(df), "blocks": pop.n_blocks,
            "tracts": pop.n_tracts,
            "tables": len(pop.tables(publication)), "sf1_tables": _sf1_count(publication),
            "finest": int(np.prod(ts.shape)), "published": int(ts.system.published.sum()),
            "build_s": build, "wall_s": wall, "work_s": a["seconds"],
            "programs": a["integer_programs"], "units": a["units"],
            "persons_certain": a["persons_certain"], "share_certain": a["share_certain"],
            "areas_certain": a["areas_certain"], "areas": a["areas"],
            "cells_certain": a["cells_certain"], "cells": a["cells"],
            "resumed": a["units_resumed"], "workers": workers,
            "load": os.getloadavg()[0]}


def posterior(workers: int, out: Path) -> dict:
    """The county under "sf1" with a uniform prior: each tract's exact posterior where
    its candidate tables can be enumerated, the records ranked by confidence."""
    pop = BlockPopulation()
    df = pop.generate(np.random.default_rng(SEED))
    ts = _set(pop, df, "sf1")
    t0 = time.perf_counter()
    ds = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2, bounds="lp",
                        workers=workers, out=out / "posterior_units")
    a = ds.attrs
    unsure = ~ds["certain"].values
    return {"wall_s": time.perf_counter() - t0, "posterior": a["posterior"],
            "approximate": a["approximate"], "persons": a["persons"],
            "persons_certain": a["persons_certain"],
            "records_confident": a["records_confident"],
            "share_confident": a["share_confident"], "threshold": a["threshold"],
            "cells_uncertain": int(unsure.sum()),
            "mean_prob_mode_uncertain": float(np.nanmean(ds["prob_mode"].values[unsure]))
            if unsure.any() else float("nan"),
            "implied": a["implied_cells"], "dropped": a["dropped_cells"],
            "diagnostics": a.get("diagnostics", ""), "converged": a.get("converged", -1)}


def monte_carlo(workers: int, out: Path) -> dict:
    """The ``basic`` publication of 3 tracts (10-30 blocks) with a uniform prior: no
    tract's candidates can be enumerated, so every posterior is Monte Carlo; how far the
    block redraws get, by their diagnostics."""
    import warnings

    from riskengine.inference.gibbs import ConvergenceWarning
    pop = BlockPopulation(tracts=3, blocks=(10, 30), persons=(5, 120))
    df = pop.generate(np.random.default_rng(SEED))
    ts = _set(pop, df, "basic")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ds = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2, bounds="lp",
                            workers=workers, out=out / "mc_units")
    a = ds.attrs
    unsure = ~ds["certain"].values
    return {"wall_s": time.perf_counter() - t0, "persons": a["persons"],
            "blocks": pop.n_blocks, "tracts": pop.n_tracts,
            "posterior": a["posterior"], "diagnostics": a.get("diagnostics", ""),
            "cells_uncertain": int(unsure.sum()),
            "share_rhat_ok": float((ds["rhat"].values[unsure] <= 1.01).mean()),
            "share_rhat_11": float((ds["rhat"].values[unsure] <= 1.1).mean()),
            "share_ess_ok": float((ds["ess"].values[unsure] >= 400).mean()),
            "persons_certain": a["persons_certain"], "load": os.getloadavg()[0]}


def mc_check(workers: int, out: Path, seeds=(0, 1, 2)) -> dict:
    """The county's posterior under ``sf1`` again with other seeds of the Monte Carlo
    units: independent runs of the chains (from other dispersed starts) must agree on
    every sampled cell within their Monte Carlo error: ``z = |mean_a - mean_b| /
    sqrt(sd_a**2 / ESS_a + sd_b**2 / ESS_b)``, each cell's posterior sd and ESS read from
    the unit files (``units/*.nc``: the pmf over each cell's window, R-hat, ESS)."""
    import xarray as xr
    pop = BlockPopulation()
    df = pop.generate(np.random.default_rng(SEED))
    ts = _set(pop, df, "sf1")
    runs, walls, diags = [], [], []
    for seed in seeds:
        t0 = time.perf_counter()
        ds = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2, bounds="lp",
                            workers=workers, seed=seed, out=out / f"mccheck_{seed}")
        walls.append(time.perf_counter() - t0)
        diags.append(ds.attrs.get("diagnostics", ""))
        units = {}
        for f in sorted((out / f"mccheck_{seed}" / "units").glob("*.nc")):
            with xr.open_dataset(f) as u:
                if u.attrs["posterior"] == "monte carlo":
                    P = u["probs"].values
                    w = np.arange(P.shape[1])
                    m = P @ w
                    units[u.attrs["key"]] = (m, np.sqrt(np.maximum(P @ w**2 - m**2, 0)),
                                             u["ess"].values, u["lower"].values
                                             != u["upper"].values)
        runs.append(units)
    pairs = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            z, dm = [], []
            for key, (ma, sa, ea, unc) in runs[i].items():
                mb, sb, eb, _ = runs[j][key]
                se = np.sqrt(sa[unc] ** 2 / ea[unc] + sb[unc] ** 2 / eb[unc])
                d = np.abs(ma - mb)[unc]
                z.append(np.where(se > 0, d / np.where(se > 0, se, 1), 0.0))
                dm.append(d)
            z, dm = np.concatenate(z), np.concatenate(dm)
            pairs.append({"seeds": [seeds[i], seeds[j]], "max_abs_mean_diff": float(dm.max()),
                          "max_z": float(z.max()), "share_z_over_3": float((z > 3).mean())})
    cells = sum(int(u[3].sum()) for u in runs[0].values())
    return {"cells": cells, "units": sorted(runs[0]), "pairs": pairs, "diagnostics": diags,
            "wall_s": walls, "load": os.getloadavg()[0]}


def tenx(workers: int, out: Path, counties: int = 10) -> dict:
    """Ten counties on a dask LocalCluster; the first also serially (equal, cell by
    cell)."""
    import resource

    import distributed
    rows = []
    t_all = time.perf_counter()
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for k in range(counties):
            pop = BlockPopulation(layout_seed=k)
            df = pop.generate(np.random.default_rng([SEED, k]))
            t0 = time.perf_counter()
            ts = _set(pop, df, "sf1")
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            ds = rk.reconstruct(ts, unit="block", level=2, bounds="lp", scheduler=client,
                                out=out / f"tenx_units_{k}")
            wall = time.perf_counter() - t0
            a = ds.attrs
            row = {"county": k, "persons": len(df), "blocks": pop.n_blocks,
                   "tracts": pop.n_tracts, "build_s": build, "wall_s": wall,
                   "work_s": a["seconds"], "persons_certain": a["persons_certain"],
                   "areas_certain": a["areas_certain"], "areas": a["areas"],
                   "resumed": a["units_resumed"]}
            if k == 0:
                t1 = time.perf_counter()
                ser = rk.reconstruct(ts, unit="block", level=2, bounds="lp")
                row["serial_s"] = time.perf_counter() - t1
                row["serial_equal"] = bool(all(
                    np.array_equal(ds[v].values, ser[v].values)
                    for v in ("lower", "upper", "certain", "exact")))
            rows.append(row)
            print(f"  tenx: county {k + 1}/{counties}: {row}", flush=True)
        worker_rss = client.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"counties": rows, "workers": workers, "wall_s": time.perf_counter() - t_all,
            "worker_peak_rss_mb": max(worker_rss.values()),
            "main_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "load": os.getloadavg()[0]}


def _mad(ts, rel) -> float:
    pub = ts.system.published
    v = np.asarray(rel.values, float)[pub]
    return float(np.nanmean(np.abs(v - ts.values[pub])))


def protections() -> list:
    from riskengine._publication import protect_publication
    rows = []

    def run(label, ts, publication, truth=None, mad=0.0, **kw):
        t0 = time.perf_counter()
        ds = rk.reconstruct(publication, unit="block", level=2, bounds="lp", truth=truth,
                            **kw)
        a = ds.attrs
        cert = ds["record_certain"].values
        true = ds["record_true"].values if "record_true" in ds else np.ones_like(cert)
        rows.append({"setting": label, "persons": int(ts.values[
                         ts.system.find(table="P1_block_total")]),
                     "certain": int(a["persons_certain"]),
                     "certain_true": int((cert & true).sum()),
                     "blocks_certain": a["areas_certain"], "blocks": a["areas"],
                     "mad": mad, "seconds": time.perf_counter() - t0,
                     "certainty": a["certainty"]})
        print(f"  {label}: {rows[-1]}", flush=True)

    def trs(rate):
        return rk.TargetedSwapping(hierarchy=["county", "tract", "block"],
                                   risk_variables=["race", "hispanic"], similar=[["sex"]],
                                   swaprate=rate, k_anonymity=2)

    # swapping keeps the tables exact (of other records): 3 tracts
    pop = BlockPopulation(tracts=3, blocks=(8, 12), persons=(5, 60))
    df = pop.generate(np.random.default_rng(SEED))
    ts = _set(pop, df, "sf1")
    run("3 tracts: published exactly", ts, ts)
    people = df.assign(hid=df["pid"])
    for rate in (0.05, 0.10):
        swapped = trs(rate).protect(people, np.random.default_rng([SEED, int(rate * 100)]))
        moved = float((swapped["block"].to_numpy() != people["block"].to_numpy()).mean())
        ts_s = _set(pop, swapped, "sf1")
        pub = ts_s.system.published
        mad = float(np.mean(np.abs(ts_s.values[pub] - ts.values[pub])))
        run(f"3 tracts: swapping {rate:.0%} ({moved:.1%} of persons moved)", ts, ts_s,
            truth=ts, mad=mad)
    # noise gives every cell a window: many more programs, so one small tract
    pop = BlockPopulation(tracts=1, blocks=(3, 3), persons=(5, 20))
    df = pop.generate(np.random.default_rng(SEED))
    ts = _set(pop, df, "sf1")
    run("1 tract of 3 blocks: published exactly", ts, ts)
    for B in (2, 3):
        rel = rk.RandomRounding(B).protect(ts, np.random.default_rng([SEED, B]))
        run(f"1 tract: random rounding, base {B}", ts, rel, truth=ts, mad=_mad(ts, rel))
    for D in (1, 2):
        m = rk.CellKey(ptable=rk.PTable.design(D=D, V=0.5 * D))
        rel = m.protect(ts, np.random.default_rng([SEED, 10 + D]))
        run(f"1 tract: cell key, D={D}, V={0.5 * D:g}", ts, rel, truth=ts,
            mad=_mad(ts, rel))
    people = df.assign(hid=df["pid"])
    pub = protect_publication(people, pop.tables("sf1"), pop.hierarchies(publication="sf1"),
                              trs(0.10), rk.CellKey(ptable=rk.PTable.design(D=1, V=0.5)),
                              np.random.default_rng([SEED, 20]))
    moved = float((pub.swapped["block"].to_numpy() != people["block"].to_numpy()).mean())
    run(f"1 tract: swapping 10% ({moved:.1%} moved), then cell key D=1", ts, pub.release,
        truth=ts, mad=_mad(ts, pub.release))
    for sigma in (0.5, 1.0, 2.0):
        rel = rk.NoisyCounts("discrete_gaussian", sigma).protect(
            ts, np.random.default_rng([SEED, 30 + int(10 * sigma)]))
        run(f"1 tract: discrete Gaussian noise, sigma {sigma:g}", ts, rel, truth=ts,
            mad=_mad(ts, rel), coverage=0.99)
    return rows


def _county_lines(c: dict) -> list:
    return [
        (f"{c['persons']:,} persons in {c['blocks']} blocks of {c['tracts']} tracts; "
         f"{c['tables']} table definitions standing for {c['sf1_tables']} SF1 tables "
         f"({c['published']:,} published cells; {c['finest']:,} finest cells: block x "
         "sex x age x race x Hispanic origin)."), "",
        "| measure | value |", "|---|---|",
        (f"| persons reconstructed with certainty | {c['persons_certain']:,} "
         f"({100 * c['share_certain']:.1f} %) |"),
        (f"| blocks every cell of which is certain | {c['areas_certain']} of {c['areas']} "
         f"({100 * c['areas_certain'] / c['areas']:.1f} %) |"),
        f"| finest cells certain | {c['cells_certain']:,} of {c['cells']:,} |",
        f"| units (tracts) | {c['units']} ({c['resumed']} read back) |",
        f"| integer programs | {c['programs']:,} |",
        f"| TableSet build | {c['build_s']:.1f} s |",
        (f"| reconstruction, wall ({c['workers']} worker processes) | "
         f"{c['wall_s']:.0f} s |"),
        (f"| reconstruction, work summed over units | {c['work_s']:.0f} s "
         f"({60 * c['units'] / max(c['work_s'], 1e-9):.2f} tracts per minute per core) |"),
        f"| load average at the end | {c['load']:.1f} |", ""]


def write(path: Path, counties: dict, ten: dict | None, rows: list | None,
          post: dict | None = None, mc: dict | None = None,
          check: dict | None = None) -> None:
    lines = ["# Reconstruction study (issue 32)", "",
             ("Made by `python studies/reconstruction/run.py` "
              f"({time.strftime('%Y-%m-%d')}, 2-core machine).  Population: "
              "`riskengine.census_blocks.BlockPopulation`, seed 2010; two publications "
              "modelled on the 2010 Summary File 1: `basic` (by block P1, P12, P11; by "
              "tract P12A-F, P12H) and `sf1` (by block P1, P3, P4, P5, P10, P11, P12, "
              "P12A-F, P12H; by tract PCT12H-N; age in the 23 bands of P12, where the "
              "2010 PCT12 tables count single years)."), ""]
    for name, c in counties.items():
        lines += [f"## A county published exactly: the `{name}` publication", ""]
        lines += _county_lines(c)
    if counties:
        lines += [
            ("Certainty is exact (integer programs: no consistent table differs there); "
             "the county's own cells span the tract units, and each is the sum of "
             "published tract cells (checked cell by cell, values included), so they are "
             "implied and nothing is dropped.  The block-level race tables (P12A-F) are "
             "what pins the records: the `sf1` publication leaves few blocks with any "
             "uncertain cell.  For scale: the Census Bureau's replication ran one Gurobi "
             "program per tract on 30 nodes of 96 vCPU for about 3 days for the whole "
             "2010 census (about 6.2 million blocks, 308 million persons), plus 14 days "
             "for the uniqueness check (Abowd et al. 2023)."), ""]
    if post:
        lines += [
            "## Posteriors at county scale (`sf1`, uniform prior)", "",
            (f"Every tract's posterior: exact (the sums route's enumeration) up to 1e6 "
             f"candidate tables, Monte Carlo beyond (block redraws): "
             f"{post['posterior']}; approximate: {'yes' if post['approximate'] else 'no'} "
             f"({post['implied']} county cells implied by the tract cells, "
             f"{post['dropped']} dropped).  Records with confidence >= "
             f"{post['threshold']:g}: {post['records_confident']:,} "
             f"({100 * post['share_confident']:.1f} % of persons; {post['persons_certain']:,} "
             f"certain).  The {post['cells_uncertain']:,} uncertain finest cells have a "
             f"mean Pr(mode) of {post['mean_prob_mode_uncertain']:.3f}.  "
             f"{post['wall_s']:.0f} s on 2 processes."), ""]
        if post.get("diagnostics"):
            lines[-1:-1] = ["", f"Monte Carlo diagnostics: {post['diagnostics']}."]
        if check:
            worst = max(check["pairs"], key=lambda p: p["max_z"])
            lines += [
                (f"Independent runs of the Monte Carlo unit ({', '.join(check['units'])}; "
                 f"seeds {', '.join(str(p['seeds']) for p in check['pairs'])}, other "
                 f"dispersed starts): over its {check['cells']} sampled cells the means "
                 f"differ by at most "
                 f"{max(p['max_abs_mean_diff'] for p in check['pairs']):.3f} persons; the "
                 f"largest |z| (difference over its Monte Carlo standard error, sd / "
                 f"sqrt(ESS) of both runs) is {worst['max_z']:.2f} (seeds {worst['seeds']}), "
                 f"and {100 * max(p['share_z_over_3'] for p in check['pairs']):.1f} % of "
                 "cells have |z| > 3 in the worst pair.  Runs: "
                 + "; ".join(f"{w:.0f} s" for w in check["wall_s"])
                 + f" (load {check['load']:.1f}).  Diagnostics: "
                 + " | ".join(check["diagnostics"]) + "."), ""]
    if mc:
        lines += [
            ("## Monte Carlo posteriors where nothing can be enumerated (`basic`, uniform "
            "prior)"), "",
            (f"{mc['tracts']} tracts ({mc['blocks']} blocks, {mc['persons']:,} persons) of "
             f"the `basic` publication: {mc['posterior']}.  Of the "
             f"{mc['cells_uncertain']:,} uncertain finest cells (those of a tract with no "
             f"posterior count as failing), "
             f"{100 * mc['share_rhat_ok']:.1f} % have R-hat <= 1.01"
             + (f" ({100 * mc['share_rhat_11']:.1f} % <= 1.1)" if "share_rhat_11" in mc
                else "")
             + f" and {100 * mc['share_ess_ok']:.1f} % an ESS >= 400 ({mc['wall_s']:.0f} s "
             f"on 2 processes, load {mc['load']:.1f}).  The chains redraw boxes (2 or 3 "
             "ages, races, ... of a few blocks) besides whole blocks: two whole blocks "
             "have more solutions than a redraw lists where race is published by tract "
             f"alone.  Per tract: {mc['diagnostics']}."), ""]
    if ten:
        cs = ten["counties"]
        P = sum(r["persons"] for r in cs)
        B = sum(r["blocks"] for r in cs)
        T = sum(r["tracts"] for r in cs)
        work = sum(r["work_s"] for r in cs)
        c0 = cs[0]
        lines += [
            "## Ten counties on a dask LocalCluster (the `sf1` publication)", "",
            (f"{len(cs)} counties (`layout_seed` 0-{len(cs) - 1}), {P:,} persons in "
             f"{B:,} blocks of {T} tracts; each county one `rk.reconstruct(..., "
             f"scheduler=client)` call over its tracts on a LocalCluster of "
             f"{ten['workers']} worker processes."), "",
            "| measure | value |", "|---|---|",
            (f"| persons reconstructed with certainty | "
             f"{sum(r['persons_certain'] for r in cs):,} "
             f"({100 * sum(r['persons_certain'] for r in cs) / P:.1f} %) |"),
            (f"| blocks every cell of which is certain | "
             f"{sum(r['areas_certain'] for r in cs):,} of {B:,} |"),
            f"| wall, all counties (build + reconstruction) | {ten['wall_s']:.0f} s |",
            f"| TableSet builds | {sum(r['build_s'] for r in cs):.0f} s |",
            (f"| reconstruction, wall | {sum(r['wall_s'] for r in cs):.0f} s |"),
            (f"| reconstruction, work summed over tracts | {work:.0f} s "
             f"({60 * T / max(work, 1e-9):.1f} tracts per minute per core) |"),
            f"| peak memory of a worker process | {ten['worker_peak_rss_mb']:.0f} MB |",
            f"| peak memory of the main process | {ten['main_peak_rss_mb']:.0f} MB |",
            (f"| county 1 serially: equal to the cluster's, cell by cell | "
             f"{'yes' if c0.get('serial_equal') else 'NO'} ({c0.get('serial_s', 0):.0f} s) |"),
            f"| load average at the end | {ten['load']:.1f} |", ""]
    if rows:
        lines += [
            "## Protection against reconstruction (the `sf1` publication)", "",
            ("Persons certain: the records an intruder can claim with certainty from the "
             "publication alone (every finest table consistent with it has them; for "
             "noise, every table within the windows that hold all noises at once with "
             "probability >= 0.99).  Real: of those, the ones that exist in the original "
             "records (after swapping the claims are about the swapped records).  MAD: "
             "mean absolute deviation of the published cells from the original.  The "
             "p-tables are taken as known to the intruder (the worst case)."), "",
            ("| setting | persons | certain | certain and real | blocks all certain | MAD | "
             "seconds |"), "|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['setting']} | {r['persons']} | {r['certain']} | "
                         f"{r['certain_true']} | {r['blocks_certain']} of {r['blocks']} | "
                         f"{r['mad']:.3f} | {r['seconds']:.1f} |")
        lines.append("")
    path.write_text("\n".join(lines))


def main() -> None:
    import json
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="all",
                    choices=("county", "tenx", "protections", "posterior", "mc", "mccheck",
                             "all", "write"))
    ap.add_argument("--publication", default="both", choices=("basic", "sf1", "both"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results.md")))
    args = ap.parse_args()
    out = Path(args.out)
    work = out.parent / "work"
    work.mkdir(parents=True, exist_ok=True)
    pubs = ("basic", "sf1") if args.publication == "both" else (args.publication,)
    if args.part in ("protections", "all"):
        (work / "protections.json").write_text(json.dumps(protections(), indent=1))
    if args.part in ("county", "all"):
        for p in pubs:
            (work / f"county_{p}.json").write_text(json.dumps(county(args.workers, work, p),
                                                              indent=1))
    if args.part in ("posterior", "all"):
        (work / "posterior.json").write_text(json.dumps(posterior(args.workers, work),
                                                        indent=1))
    if args.part in ("mc", "all"):
        (work / "mc.json").write_text(json.dumps(monte_carlo(args.workers, work), indent=1))
    if args.part in ("mccheck", "all"):
        (work / "mccheck.json").write_text(json.dumps(mc_check(args.workers, work), indent=1))
    if args.part in ("tenx", "all"):
        (work / "tenx.json").write_text(json.dumps(tenx(args.workers, work), indent=1))

    def read(name):
        f = work / name
        return json.loads(f.read_text()) if f.exists() else None
    counties = {p: read(f"county_{p}.json") for p in ("basic", "sf1")}
    write(out, {k: v for k, v in counties.items() if v}, read("tenx.json"),
          read("protections.json"), read("posterior.json"), read("mc.json"),
          read("mccheck.json"))
    print(f"written {out}")


if __name__ == "__main__":
    main()
