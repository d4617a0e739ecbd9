"""Controlled rounding and margins-only releases of seed 003's 4 x 4 table.

Run:  python studies/rounding/run.py      (writes results.md beside this file)

1. The two counts seed 003 reports, reproduced exactly, with the time taken
   (the seed: "three days of computing time for a 4 x 4 table").
2. Per-cell posteriors for the seed's base-3 rounding, uniform prior, under the
   'feasible' (set-valued) and 'unbiased' (product of marginal rounding
   probabilities) likelihoods.
3. How the candidate count and the posterior spread grow with the base
   (optimal controlled rounding of the same table, bases 2..7).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine._io import atomic_write_text
from riskengine.data.seeds import S003 as S

HERE = Path(__file__).resolve().parent
ROUNDED = S.ROUNDED_2D           # seed 003, slide "Controlled Rounding" (base 3)


def main() -> str:
    out = ["# Controlled rounding and margins only: seed 003's 4 x 4 table", ""]
    t = rk.Table(S.ORIGINAL_2D, dims=("v", "w"),
                 coords={"v": ["v1", "v2", "v3", "v4"], "w": ["w1", "w2", "w3", "w4"]})

    out += ["## 1. The seed's counts", "", "| release | seed 003 | riskengine | seconds |",
            "|---|---|---|---|"]
    rel_m = rk.MarginsOnly().protect(t)
    t0 = time.perf_counter()
    n_m = rk.count_candidates(rel_m)
    dt_m = time.perf_counter() - t0
    out.append(f"| margins only | {S.N_TABLES_MARGINS:,} | {n_m:,} | {dt_m:.2f} |")
    rel_r = rk.Release(ROUNDED, mechanism=rk.ControlledRounding(3), dims=("v", "w"),
                       coords=t.coords)
    t0 = time.perf_counter()
    n_r = rk.count_candidates(rel_r)
    dt_r = time.perf_counter() - t0
    out.append(f"| base-3 controlled rounding | {S.N_TABLES_ROUNDING:,} | {n_r:,} | {dt_r:.2f} |")
    out.append("")
    out.append("Both match exactly (" + ("yes" if (n_m, n_r) == (S.N_TABLES_MARGINS,
                                                              S.N_TABLES_ROUNDING) else "NO")
               + "). The seed reports three days of computing for a Bayesian analysis of the "
               "rounded table; the exact DP over row-sum states gives the count and every "
               "posterior marginal without enumerating a single table.")
    out.append("")

    out += ["## 2. Posterior of each cell given the base-3 rounding (uniform prior)", ""]
    out.append("Original, rounded, then for each likelihood: posterior mode, P(mode), "
               "P(original value), 95% interval.")
    out.append("")
    posts = {}
    for lk in ("feasible", "unbiased"):
        rel = rk.Release(ROUNDED, mechanism=rk.ControlledRounding(3, likelihood=lk),
                         dims=("v", "w"), coords=t.coords)
        posts[lk] = rk.posterior(rel)
    out.append("| cell | original | rounded | feasible: mode, P(mode), P(orig), 95% | "
               "unbiased: mode, P(mode), P(orig), 95% |")
    out.append("|---|---|---|---|---|")
    for idx in np.ndindex(4, 4):
        cells = []
        for lk in ("feasible", "unbiased"):
            p = posts[lk]
            iv = p.interval(0.95)
            cells.append(f"{int(p.mode().values[idx])}, {p.max_prob().values[idx]:.3f}, "
                         f"{p.prob_exact(t).values[idx]:.3f}, "
                         f"[{int(iv['lower'].values[idx])}, {int(iv['upper'].values[idx])}]")
        out.append(f"| ({idx[0] + 1},{idx[1] + 1}) | {S.ORIGINAL_2D[idx]} | {ROUNDED[idx]} | "
                   + " | ".join(cells) + " |")
    for lk in ("feasible", "unbiased"):
        pe = posts[lk].prob_exact(t).values
        out.append("")
        out.append(f"- {lk}: expected number of exactly disclosed cells {pe.sum():.2f} of 16; "
                   f"max P(original) {pe.max():.3f}; mean P(mode) "
                   f"{posts[lk].max_prob().values.mean():.3f}")
    out.append("")
    out.append("The seed's remark that 'for uniform priors, the posterior cell distributions "
               "were nearly uniform' holds for the feasible likelihood (P(mode) between "
               f"{posts['feasible'].max_prob().values.min():.2f} and "
               f"{posts['feasible'].max_prob().values.max():.2f} over windows of 3-5 values). "
               "The unbiased likelihood concentrates the posterior: an entry is more likely to "
               "have come from a value close to the published multiple.")
    out.append("")

    out += ["## 3. Growth with the base (optimal rounding of the same table, feasible likelihood)",
            "", "| base | candidates | mean posterior sd | mean P(mode) | mean P(original) |",
            "|---|---|---|---|---|"]
    for B in range(2, 8):
        rel = rk.ControlledRounding(B, method="optimal").protect(t)
        p = rk.posterior(rel)
        out.append(f"| {B} | {p.n_candidates:,} | {p.sd().values.mean():.3f} | "
                   f"{p.max_prob().values.mean():.3f} | {p.prob_exact(t).values.mean():.3f} |")
    out.append("")
    out.append("The number of candidate originals grows roughly geometrically with the base "
               "(each of the 9 free cells gains about two values per unit of base), and the "
               "posterior spread grows about linearly in B; the intruder's confidence in any "
               "single value falls accordingly.")
    out.append("")

    out += ["## 4. Margins only: posterior and Fréchet bounds", ""]
    p = rk.posterior(rel_m)
    fb = rk.frechet_bounds(rel_m)
    out.append("| cell | original | Fréchet bounds | posterior mode | P(mode) | 95% interval |")
    out.append("|---|---|---|---|---|---|")
    iv = p.interval(0.95)
    for idx in np.ndindex(4, 4):
        out.append(f"| ({idx[0] + 1},{idx[1] + 1}) | {S.ORIGINAL_2D[idx]} | "
                   f"[{int(fb['lower'].values[idx])}, {int(fb['upper'].values[idx])}] | "
                   f"{int(p.mode().values[idx])} | {p.max_prob().values[idx]:.3f} | "
                   f"[{int(iv['lower'].values[idx])}, {int(iv['upper'].values[idx])}] |")
    out.append("")
    out.append("In 2-D the Fréchet bounds are the exact support of the posterior (tested on "
               "200 random tables). Seed 004 notes that in 3-D tables with 2-way margins the "
               "bounds computed from margins are not sharp: `rk.exact_bounds` gives the exact "
               "3-D ranges, and studies/rounding/results_three_way.md shows the seed's "
               "examples.")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = main()
    atomic_write_text(HERE / "results.md", text)
    print(text)
