"""Complementary cell suppression and its audit on the seeds' tables.

Run:  python studies/magnitude/suppression.py   (writes results_suppression.md beside it)

1. Seed 000's 4 x 9 magnitude table with its seven protection limits (transcribed in
   riskengine/data/seeds.py): the seed's "optimal suppression" pattern audited, our
   optimal and heuristic patterns (by value and by count) with their audits.
2. Seed 004 §3.1 Table 1 (4 x 5, four disclosure cells needing 50 % of their value):
   the seed's ideal pattern (4 complements, value 35) and its network-method pattern
   (6 complements, value 50), against ours; seed 004's exercise (one cell disclosed).
3. Seed 003's suppression pattern of its 4 x 4 count table: the integer completions
   ("only three possible original tables") and their posterior.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import riskengine as rk
from riskengine._io import atomic_write_text
from riskengine.data.seeds import S000, S003, S004

# seed 000, slides "Example 1" (the 4 x 9 table in thousands, protection limits of its 7
# disclosure cells) and "Example 1a" (the seed's 11-cell pattern); seed 003, slide "Suppress
# Primary Cells + Complementary Cells": transcribed in riskengine/data/seeds.py
SEED000 = S000.ROUNDED
SEED000_PROT = S000.ROUNDED_PROTECTION
SEED000_PATTERN = S000.SUPPRESSION_PATTERN
SEED003 = np.array(S003.ORIGINAL_2D)
SEED003_SUPP = S003.SUPPRESSED_CELLS


def mask(shape, cells):
    m = np.zeros(shape, bool)
    for c in cells:
        m[c] = True
    return m


def release(x, supp, dims):
    t = rk.Table(x, dims=dims)
    return rk.Release(np.where(supp, np.nan, x), margins=t.totals(),
                      mechanism=rk.CellSuppression(), dims=dims)


def grid(x, supp, fmt="{:g}"):
    rows = ["| " + " | ".join("**D**" if s else fmt.format(v) for v, s in zip(xr, sr))
            + f" | {fmt.format(xr.sum())} |" for xr, sr in zip(x, supp)]
    head = "| " + " | ".join(f"c{j + 1}" for j in range(x.shape[1])) + " | total |"
    sep = "|" + "---|" * (x.shape[1] + 1)
    foot = "| " + " | ".join(fmt.format(v) for v in x.sum(0)) + f" | {fmt.format(x.sum())} |"
    return [head, sep, *rows, foot]


def audit_lines(a, cells):
    out = ["| cell | value | protection | lower | upper | room below | room above | flag |",
           "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        flag = ("EXACT" if a["exact"].values[c] else
                "under-protected" if a["under_protected"].values[c] else "ok")
        out.append(f"| ({c[0] + 1},{c[1] + 1}) | {a['value'].values[c]:g} | "
                   f"{a['protection_lower'].values[c]:g} | {a['lower'].values[c]:.6g} | "
                   f"{a['upper'].values[c]:.6g} | {a['room_below'].values[c]:.6g} | "
                   f"{a['room_above'].values[c]:.6g} | {flag} |")
    return out


def seed000(out):
    x = SEED000
    sens = mask(x.shape, SEED000_PROT)
    prot = np.zeros(x.shape)
    for c, p in SEED000_PROT.items():
        prot[c] = p
    out += ["## 1. Seed 000's 4 x 9 table, seven sensitive cells", "",
            "Protection limits (seed 000, Example 1): " + ", ".join(
                f"({c[0] + 1},{c[1] + 1}) = {x[c]:g} needs {p}" for c, p in SEED000_PROT.items())
            + ". Protection is required on both sides (the interval reaches value - p and "
            "value + p); zeros are structural and never suppressed.", ""]
    seed = mask(x.shape, SEED000_PATTERN)
    a = rk.audit(release(x, seed, ("r", "c")), sens, prot, table=x)
    out += [f"### The seed's pattern ({int(seed.sum())} cells, {x[seed].sum():g} units)", "",
            *grid(x, seed), "", *audit_lines(a, sorted(SEED000_PROT)), "",
            (f"Audit: {a.attrs['n_under_protected']} sensitive cell(s) under-protected, "
            f"{a.attrs['n_exact']} exact disclosure(s). Cell (3,8) = 300 can only fall by 36: "
            "row 3's other suppressed cell is (3,2), whose column's other suppressed cell is "
            "(4,2) = 36. **Seed 000's 11 cells / 2759 units are not reproduced as a "
            "protecting pattern.**"), ""]
    rows = [("| method | cost | cells | value | complements | seconds | under-protected | "
            "exact |"), "|---|---|---|---|---|---|---|---|"]
    best = None
    for method in ("optimal", "heuristic"):
        for cost in ("value", "count"):
            t0 = time.perf_counter()
            rel = rk.suppress(x, sens, prot, method=method, cost=cost)
            sec = time.perf_counter() - t0
            a = rk.audit(rel, sens, prot, table=x)
            i = rel.info
            rows.append(f"| {method} | {cost} | {i['n_suppressed']} | "
                        f"{i['value_suppressed']:g} | {i['n_complementary']} | {sec:.2f} | "
                        f"{a.attrs['n_under_protected']} | {a.attrs['n_exact']} |")
            if method == "optimal" and cost == "value":
                best = rel
    supp = np.isnan(np.asarray(best.published, float))
    out += ["### riskengine", "", *rows, "", "Optimal by value:", "", *grid(x, supp), "",
            "Cells it adds to the seed's pattern: " + ", ".join(
                f"({c[0] + 1},{c[1] + 1}) = {x[tuple(c)]:g}" for c in np.argwhere(supp & ~seed))
            + "; cells of the seed's pattern it drops: " + (", ".join(
                f"({c[0] + 1},{c[1] + 1})" for c in np.argwhere(seed & ~supp)) or "none") + ".",
            ""]


def seed004(out):
    x = np.array(S004.TABLE1)
    sens = mask(x.shape, S004.TABLE1_SENSITIVE)
    prot = np.where(sens, S004.TABLE1_PROTECTION_SHARE * x, 0.0)
    out += ["## 2. Seed 004 §3.1 Table 1", "",
            ("Disclosure cells (1,1) = 20, (2,3) = 20, (3,4) = 20, (4,4) = 10, each needing "
            "50 % of its value."), "",
            "| pattern | complements | value of complements | under-protected | exact |",
            "|---|---|---|---|---|"]
    for name, cells in (("seed: ideal (combinatorial)", S004.TABLE1_IDEAL),
                        ("seed: network method", S004.TABLE1_NETWORK)):
        supp = sens | mask(x.shape, cells)
        a = rk.audit(release(x, supp, ("r", "c")), sens, prot, table=x)
        out.append(f"| {name} | {len(cells)} | {x[mask(x.shape, cells)].sum():g} | "
                   f"{a.attrs['n_under_protected']} | {a.attrs['n_exact']} |")
    for method in ("optimal", "heuristic"):
        for cost in ("value", "count"):
            rel = rk.suppress(x, sens, prot, method=method, cost=cost)
            a = rk.audit(rel, sens, prot, table=x)
            out.append(f"| riskengine {method}, cost={cost} | {rel.info['n_complementary']} | "
                       f"{rel.info['value_complementary']:g} | "
                       f"{a.attrs['n_under_protected']} | {a.attrs['n_exact']} |")
    rel = rk.suppress(x, sens, prot, method="heuristic")
    out += ["", ("Seed 004: the ideal pattern \"suppresses the fewest number of cells possible "
            "(4) [and] the least total value possible (35)\" - reproduced by the optimal "
            "method (4 complements, 35). The heuristic's pattern:"), "",
            *grid(x, np.isnan(np.asarray(rel.published, float))), ""]
    ex = rk.Release(np.array(S004.EXERCISE),
                    margins={("r",): list(S004.EXERCISE_ROW_TOTALS),
                             ("c",): list(S004.EXERCISE_COL_TOTALS),
                             (): S004.EXERCISE_GRAND_TOTAL},
                    mechanism=rk.CellSuppression(), dims=("r", "c"))
    a = rk.audit(ex)
    cells = [tuple(int(i) for i in c) for c in np.argwhere(a["exact"].values)]
    out += [("### Seed 004's exercise (\"INTRA condition satisfied but one cell disclosed "
            "exactly\")"), "",
            f"Audit: {a.attrs['n_exact']} exact disclosure(s): " + ", ".join(
                f"({c[0] + 1},{c[1] + 1}) = {a['lower'].values[c]:.6g}" for c in cells)
            + ". Intervals of the suppressed cells:", "",
            "| cell | lower | upper |", "|---|---|---|"]
    for c in map(tuple, np.argwhere(a["suppressed"].values)):
        out.append(f"| ({c[0] + 1},{c[1] + 1}) | {a['lower'].values[c]:.6g} | "
                   f"{a['upper'].values[c]:.6g} |")
    out.append("")


def seed003(out):
    x = SEED003
    supp = mask(x.shape, SEED003_SUPP)
    rel = rk.Release(np.where(supp, np.nan, x), margins=rk.Table(x, dims=("v", "w")).totals(),
                     mechanism=rk.CellSuppression(), dims=("v", "w"), kind="count")
    n0 = rk.count_candidates(rel)
    post = rk.posterior(rel, rk.priors.Flat(low=1))
    a = rk.audit(rel)
    out += ["## 3. Seed 003's suppressed 4 x 4 count table", "",
            *grid(x.astype(float), supp), "",
            ("Seed 003: \"only three possible original tables\". Integer completions: "
            f"**{post.n_candidates}** when every cell is known to be >= 1 "
            f"(`rk.priors.Flat(low=1)`; the table has no zeros), {n0} with cells >= 0."), "",
            "| cell | true | LP interval | posterior (cells >= 1) |", "|---|---|---|---|"]
    for c in SEED003_SUPP:
        pm = post.pmf.sel(v=c[0], w=c[1])
        dist = ", ".join(f"{int(v)}: {p:.3f}" for v, p in zip(pm["value"].values, pm.values)
                         if p > 0)
        out.append(f"| ({c[0] + 1},{c[1] + 1}) | {x[c]} | [{a['lower'].values[c]:.6g}, "
                   f"{a['upper'].values[c]:.6g}] | {dist} |")
    out += ["", "Pr(true value) per suppressed cell (cells >= 1): " + ", ".join(
        f"({c[0] + 1},{c[1] + 1}) {post.prob_exact(x).values[c]:.3f}" for c in SEED003_SUPP),
        ""]


def main() -> str:
    out = ["# Cell suppression and its audit on the seeds' tables", "",
           ("Generated by `python studies/magnitude/suppression.py`. Audits are riskengine's LP "
           "intervals (HiGHS) over the published cells and totals with x >= 0; 'room below / "
           "above' = value - lower / upper - value."), ""]
    seed000(out)
    seed004(out)
    seed003(out)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = main()
    atomic_write_text(HERE / "results_suppression.md", text)
    print(text)
