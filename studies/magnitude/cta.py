"""Controlled tabular adjustment of seed 000's 4 x 9 magnitude table.

Run:  python studies/magnitude/cta.py     (writes results_cta.md beside this file)

1. The transcription of seed 000's Table 1 (totals) and Table 3 from its own Table 2.
2. The seed's "min sum |y|" solution in our model: feasible with unbounded capacities,
   and our MILP optimum in that model (HiGHS, gap 0).
3. The issue's setting (capacities 20 % of each cell's value): minimum sum |y| and the
   L(y) variants, statistics side by side with seed 000's Table 3.
4. The L(y) variants with the seed's own down/up directions (seed 000: "assume the
   down/up decisions have already been made").
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
from riskengine.data.seeds import S000 as S
from riskengine.magnitude.cta_bivariate import bivariate_stats
from riskengine.magnitude.cta_milp import cta_stats
from riskengine.tabular import tabular_system

CELLS = list(S.PROTECTION)


def sensitive_mask():
    """Seed 000 Table 1's seven sensitive cells (those with a protection limit)."""
    m = np.zeros(S.ORIGINAL.shape, bool)
    for ij in CELLS:
        m[ij] = True
    return m


def protection_array():
    """Seed 000 Table 1's protection limits, 0 on the other cells."""
    p = np.zeros(S.ORIGINAL.shape)
    for ij, v in S.PROTECTION.items():
        p[ij] = v
    return p


def fmt(x, d=2):
    return "nan" if not np.isfinite(x) else f"{round(x, d) + 0.0:.{d}f}"


def stats_row(st, cells):
    r = st.sel(cells=cells)
    return (f"{fmt(float(r.corr), 3)} | {fmt(float(r.slope), 3)} | {fmt(float(r.var_ratio), 3)} "
            f"| {fmt(float(r.mean_change), 0)}")


def run(t, sens, prot, cap, **kw):
    t0 = time.perf_counter()
    try:
        r = rk.cta(t, sens, prot, cap, **kw)
    except ValueError as exc:
        return None, time.perf_counter() - t0, str(exc)
    return r, time.perf_counter() - t0, ""


def main() -> str:
    t = rk.Table(S.ORIGINAL, dims=("row", "col"), kind="magnitude")
    sens, prot = sensitive_mask(), protection_array()
    a_s = np.array([S.ORIGINAL[ij] for ij in CELLS])
    out = ["# Controlled tabular adjustment: seed 000's 4 x 9 table", ""]
    out += [("Seed 000 (Cox 2003, slides, \"Examples\"): Table 1 (original, protection limits of the "
            "seven sensitive cells), Table 2 (adjusted tables of four LP variants), Table 3 "
            "(Corr(a, a+y), regression slope of a+y on a, Var(a+y)/Var(a) over the sensitive "
            "cells). Transcription: `riskengine/data/seeds.py` (S000); acceptance checks: "
            "`tests/seeds/test_seed000_cta.py`. Moments are population moments."), ""]
    ok_rows = np.allclose(S.ORIGINAL.sum(1), S.ROW_TOTALS)
    ok_cols = np.allclose(S.ORIGINAL.sum(0), S.COL_TOTALS)
    out += [(f"Transcription check: the interior adds up to the printed row totals ({ok_rows}), "
            f"column totals ({ok_cols}) and grand total "
            f"({S.ORIGINAL.sum() == S.GRAND_TOTAL})."), ""]

    out += ["## 1. Seed 000 Table 3 recomputed from its own Table 2", "",
            ("| variant | seed Table 3 (corr, slope, var ratio) | from seed Table 2 | "
            "mean change (sensitive) |"), "|---|---|---|---|"]
    for k, v in S.SENSITIVE_ADJUSTED.items():
        st = cta_stats(a_s, np.array(v, float) - a_s, np.ones(7, bool)).sel(cells="all")
        out.append(f"| {k.replace('|', chr(92) + '|')} | {S.TABLE3[k]} | {fmt(float(st.corr))}, {fmt(float(st.slope))}, "
                   f"{fmt(float(st.var_ratio))} | {fmt(float(st.mean_change), 0)} |")
    out += ["", ("Every entry agrees with the printed Table 3 within 0.01 (two correlations, "
            "0.955 and 0.977, are printed as 0.95 and 0.97, i.e. truncated, while 0.699 is "
            "printed as 0.70): Table 3 describes the Table 2 solutions. The three L variants keep the mean of the sensitive cells exactly "
            "(mean change 0); none reaches L(y) = 0 exactly (slopes 0.93, 1.20, 0.93), so the "
            "seed's directions were fixed beforehand (\"assume the down/up decisions have "
            "already been made\") and its capacities are not stated."), ""]

    # --- 2. the seed's min |y| solution in our model --------------------------------------
    sysm = tabular_system_of(t)
    a = sysm.vector(S.ORIGINAL)
    y_seed = sysm.vector(S.MIN_ABS) - a
    seed_obj = float(np.abs(y_seed).sum())
    r_inf, sec, _ = run(t, sens, prot, np.inf)
    sens_idx = np.flatnonzero(sens.ravel())        # the interior block comes first
    same_dirs = np.array_equal(np.sign(r_inf.y[sens_idx]), np.sign(y_seed[sens_idx]))
    out += ["## 2. The seed's \"min sum |y|\" solution and our MILP", "",
            (f"The seed's Table 2 \"min sum |y_i|\" table moves every sensitive cell by exactly "
            f"its protection, adds up (max |T y| = {np.abs(sysm.A @ y_seed).max():g}), and "
            f"moves the zero cell (4, 8) to 36375: it is infeasible under 20 % capacities. "
            f"Its sum of |y| over all cells of the tabular system (interior and totals, the "
            f"seed's objective) is **{seed_obj:,.0f}** "
            f"({np.abs(y_seed[:sysm.n_interior]).sum():,.0f} on the interior)."), "",
            f"The slides state no capacities and the seed's solution moves a zero cell, so we "
            f"take them unbounded. Our MILP: optimum **{r_inf.objective:,.0f}**, "
            f"status {r_inf.status}, gap {r_inf.gap:g}, {sec:.2f} s. "
            + ("This equals the seed's value: the seed's solution is optimal. Ours is "
               + ("the same table." if np.allclose(r_inf.y, y_seed) else
                  "an alternative optimum, " + ("with the seed's directions" if same_dirs else
                                                "with other directions")
                  + (", keeping every total." if np.allclose(r_inf.y[sysm.n_interior:], 0)
                     else "."))
               if abs(r_inf.objective - seed_obj) < 1e-6 else
               "This differs from the seed's value."), "",
            "| sensitive cells | corr | slope | var ratio | mean change |", "|---|---|---|---|---|",
            (f"| seed Table 3, min sum abs y | {S.TABLE3['min |y|'][0]} | {S.TABLE3['min |y|'][1]} "
            f"| {S.TABLE3['min |y|'][2]} | (not given) |"),
            f"| ours, capacities unbounded | {stats_row(r_inf.stats, 'sensitive')} |", ""]

    # --- 3. capacities 20 % -----------------------------------------------------------------
    cap = 0.2 * S.ORIGINAL
    variants = [
        ("min sum abs y (MILP)", {}),
        ("min sum abs y, ordering heuristic", {"directions": "ordering"}),
        ("min sum abs y / a (relative)", {"objective": "relative"}),
        ("mean (sensitive)", {"preserve": ("mean",), "over": "sensitive"}),
        ("mean + abs L <= 0.05 (sensitive)", {"preserve": ("mean", "variance"),
                                              "over": "sensitive", "epsilon": 0.05}),
        ("mean + L = 0 (sensitive)", {"preserve": ("mean", "variance"), "over": "sensitive"}),
        ("mean + L = 0 (interior)", {"preserve": ("mean", "variance"), "over": "interior"}),
        ("mean + L = 0 (all cells)", {"preserve": ("mean", "variance"), "over": "all"}),
    ]
    out += ["## 3. Capacities 20 % of each cell's value (the issue's setting)", "",
            ("Every cell of the tabular system is adjustable; sensitive cells move by at least "
            "their protection (no upper bound but the big-M); nonsensitive cells by at most 20 % "
            "of their value (totals: 20 % of the total). Objective sum |y| over all cells "
            "(relative: sum |y|/a)."), "",
            ("Columns: S = sensitive cells, I = interior cells; corr = Corr(a, a+y), slope of "
            "a+y on a, var = Var(a+y)/Var(a), mean = mean change."), "",
            ("| variant | objective | status | gap | s | S corr | S slope | S var | S mean "
            "| I corr | I slope | I var | I mean |"),
            "|---" * 13 + "|"]
    best = None
    for name, kw in variants:
        r, sec, _err = run(t, sens, prot, cap, **kw)
        if r is None:
            out.append(f"| {name} | infeasible | | | {sec:.2f} |" + " |" * 8)
            continue
        if best is None:
            best = r
        out.append(f"| {name} | {r.objective:,.4g} | {r.status} | {r.gap:g} | {sec:.2f} | "
                   f"{stats_row(r.stats, 'sensitive')} | {stats_row(r.stats, 'interior')} |")
    out += ["", ("The minimum of sum |y| is attained by many tables (the LP has ties); HiGHS "
            "returns one of them, deterministically, and the statistics of the sensitive cells "
            "differ between equally good optima (seed 002 section 4 makes the same observation: "
            "covariance varies across solutions, absolute deviation does not). The L(y) "
            "constraints are how to choose among them."), "",
            "Seed 000 Table 3 for comparison (sensitive cells; all cells 1.00, 1.00, 1.00):", "",
            "| seed variant | corr | slope | var ratio |", "|---|---|---|---|"]
    for k, v in S.TABLE3.items():
        out.append(f"| {k.replace('|', chr(92) + '|')} | {v[0]} | {v[1]} | {v[2]} |")
    out += ["", "Adjusted table, min sum |y| with 20 % capacities (rounded to units; totals last):",
            "", _table_md(best)]

    # --- 4. the seed's directions -----------------------------------------------------------
    dirs = np.zeros(S.ORIGINAL.shape)
    for ij, v in zip(CELLS, S.SENSITIVE_ADJUSTED["min L (reg.)"]):
        dirs[ij] = 1 if v > S.ORIGINAL[ij] else -1
    out += ["## 4. L(y) variants with the seed's directions", "",
            "Directions of the seed's L variants (Table 2): "
            + ", ".join(f"({i + 1},{j + 1}) {'up' if dirs[i, j] > 0 else 'down'}"
                        for i, j in CELLS) + ". Capacities unbounded and 20 %.", "",
            "| variant | capacities | objective | S corr | S slope | S var | S mean |",
            "|---" * 7 + "|"]
    for name, kw in [("min sum abs y", {}), ("mean (sensitive)", {"preserve": ("mean",),
                                                                   "over": "sensitive"}),
                     ("mean + L = 0 (sensitive)", {"preserve": ("mean", "variance"),
                                                   "over": "sensitive"})]:
        for cname, c in (("unbounded", np.inf), ("20 %", cap)):
            r, sec, _err = run(t, sens, prot, c, directions=dirs, **kw)
            if r is None:
                out.append(f"| {name} | {cname} | infeasible |" + " |" * 4)
            else:
                out.append(f"| {name} | {cname} | {r.objective:,.0f} | "
                           f"{stats_row(r.stats, 'sensitive')} |")
    out += _bivariate_section(t, sens, prot, cap)
    out += ["", "## What is reproduced", "",
            "* Table 3 from the seed's own Table 2 (all four rows, within 0.01).",
            ("* Table 3's \"all cells 1.00, 1.00, 1.00\": every variant here gives 1.00 on the "
            "interior to two decimals (section 3)."),
            ("* The seed's min sum |y| value (its Table 2 solution): our MILP proves it optimal "
            "with unbounded capacities (zero gap), and our solution has the same sensitive-cell "
            "statistics as Table 3's first row."),
            ("* Not reproducible: the seed's L-variant tables (capacities and the exact "
            "objective of each variant are not given); under 20 % capacities the numbers differ "
            "from the seed's (section 3). With L(y) = 0 imposed our slope is exactly 1 on the "
            "chosen cells, which the seed's variants do not reach."), ""]
    return "\n".join(out)


def _bivariate_section(t, sens, prot, cap) -> list:
    """Seed 002 section 3 on seed 000's table with a synthetic second variable."""
    rng = np.random.default_rng(2004)
    b_vals = np.round(S.ORIGINAL ** 0.9 * rng.lognormal(0.0, 0.3, S.ORIGINAL.shape))
    tb = rk.Table(b_vals, dims=t.dims, kind="magnitude")
    prot_b = np.where(sens, np.round(prot / S.ORIGINAL.clip(1) * b_vals), 0.0)
    sens_b = sens & (prot_b > 0)
    prot_b = np.where(sens_b, prot_b, 0.0)
    kw = {"preserve": ("mean", "variance"), "over": "interior"}
    t0 = time.perf_counter()
    ra = rk.cta(t, sens, prot, cap, **kw)
    rb = rk.cta(tb, sens_b, prot_b, 0.2 * b_vals, **kw)
    t_uni = time.perf_counter() - t0
    idx = np.arange(S.ORIGINAL.size)
    uni = bivariate_stats(ra.original, rb.original, ra.y, rb.y, idx)
    t0 = time.perf_counter()
    bi = rk.cta_bivariate(t, tb, sens, prot, cap, sens_b, prot_b, 0.2 * b_vals, **kw,
                          max_iter=6)
    t_bi = time.perf_counter() - t0
    cols = ["covariance_change", "correlation_change", "regression_change",
            "variance_a_change", "variance_b_change"]
    out = ["", "## 5. Bivariate CTA (seed 002 section 3)", "",
           ("Seed 002 gives no tables, so this is a demonstration, not a reproduction: variable "
           "a is seed 000's table, variable b a synthetic companion (a^0.9 times lognormal "
           "noise, seed 2004) with the same sensitive cells and proportional protections, "
           "capacities 20 %, mean and L(y) = 0 preserved over the interior for each variable. "
           "Percent changes over the interior cells (the columns of seed 002 Table 1):"), "",
           "| method | cov % | corr % | regression % | var a % | var b % | seconds |",
           "|---|---|---|---|---|---|---|"]
    for name, st, sec in (("two univariate CTAs", uni, t_uni),
                          ("alternating LPs (cta_bivariate)", bi.stats, t_bi)):
        out.append(f"| {name} | " + " | ".join(fmt(float(st[c]), 3) for c in cols)
                   + f" | {sec:.2f} |")
    out += ["", "|dCov| after the univariate start (y from the univariate CTA of a, b not yet adjusted) and after each alternating step: "
            + ", ".join(f"{h:.4g}" for h in bi.history)
            + f" (original Cov(a, b) = {float(np.cov(S.ORIGINAL.ravel(), b_vals.ravel(), bias=True)[0, 1]):.4g}; "
            f"original correlation {float(bi.stats.original_correlation):.3f}).", ""]
    return out


def tabular_system_of(t):
    return tabular_system(t.dims, t.shape, t.margins)


def _table_md(r) -> str:
    pub = np.asarray(r.release.published)
    rows = pub.shape[0]
    rt = r.release.margins[("row",)]
    ct = r.release.margins[("col",)]
    gt = r.release.margins[()]
    lines = ["| | " + " | ".join(f"c{j + 1}" for j in range(pub.shape[1])) + " | total |",
             "|---" * (pub.shape[1] + 2) + "|"]
    for i in range(rows):
        lines.append(f"| r{i + 1} | " + " | ".join(f"{v:,.0f}" for v in pub[i])
                     + f" | {rt[i]:,.0f} |")
    lines.append("| total | " + " | ".join(f"{v:,.0f}" for v in ct) + f" | {float(gt):,.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = main()
    atomic_write_text(HERE / "results_cta.md", text)
    print(text)
