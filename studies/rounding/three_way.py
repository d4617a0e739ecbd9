"""Three-way tables: controlled rounding (Ernst's plane stacking, MILP), where no controlled
rounding exists, seed 004's non-sharp bounds, and an exact 3-D rounding posterior.

Run:  python studies/rounding/three_way.py     (writes results_three_way.md beside this file)

1. Seed 003's 4 x 4 x 3 table protected by 3-D controlled rounding (bases 3 and 5): Ernst's
   plane stacking (Cox's unbiased 2-D steps, every output checked) and the optimal MILP.
2. How often Ernst's stacking works on random tables, how often a controlled rounding exists
   at all, and what conditioning on success does to the per-entry means.
3. A 2 x 2 x 2 table with no controlled rounding; seed 004's infeasible margin systems.
4. Seed 004's 3-D examples: Fréchet-type bounds from the 2-way margins vs the exact range.
5. Exact posterior of every cell of a rounded 3-D table (both likelihoods).
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine._io import atomic_write_text
from riskengine.data.seeds import S003 as S
from riskengine.data.seeds import S004
from riskengine.mechanisms import _rounding3d as R3
from riskengine.mechanisms._cox import cox_unbiased as _cox_unbiased

HERE = Path(__file__).resolve().parent
DIMS = ("i", "j", "k")
# a 2 x 2 x 2 table without a zero-restricted controlled rounding at base 2, found by a
# random search (the same table as NO_ROUNDING in tests/mechanisms/test_rounding_3d.py)
NO_ROUNDING = np.array([[[0, 0], [1, 3]], [[1, 3], [1, 2]]])


def _planes(x) -> str:
    """A 3-D array as its planes (last dim), side by side."""
    return " ‖ ".join("; ".join(" ".join(f"{v:>3}" for v in row) for row in x[:, :, k])
                      for k in range(x.shape[2]))


def section_protect(out):
    x = S.ORIGINAL_3D
    t = rk.Table(x, dims=DIMS)
    out += ["## 1. Seed 003's 4 x 4 x 3 table, 3-D controlled rounding", "",
            ("Every release below passed the check that each interior cell and each of the "
            "2-way, 1-way and grand totals is a multiple of the base adjacent to the "
            "original (multiples stay), computed from the rounded interior."), "",
            ("| base | method | controlled rounding exists | Ernst draws | L1 distortion "
            "(interior) | seconds |"), "|---|---|---|---|---|---|"]
    for B in (3, 5):
        exists = R3.milp_rounding(x, B, objective="none") is not None
        for method in ("unbiased", "optimal"):
            t0 = time.perf_counter()
            try:
                rel = rk.ControlledRounding(B, method=method).protect(
                    t, np.random.default_rng(2026))
                dist = int(np.abs(rel.published - x).sum())
                draws = rel.info.get("ernst_draws", "-")
            except ValueError as e:
                dist, draws = f"ValueError: {str(e)[:60]}...", "-"
            out.append(f"| {B} | {method} | {exists} | {draws} | {dist} | "
                       f"{time.perf_counter() - t0:.2f} |")
    rel = rk.ControlledRounding(5, method="optimal").protect(t)
    out += ["", "Original (planes k = 1, 2, 3; rows i; columns j):", "",
            f"`{_planes(x)}`", "", "Optimal base-5 rounding:", "",
            f"`{_planes(np.asarray(rel.published))}`", ""]


def section_ernst(out, rng):
    out += ["## 2. Ernst's plane stacking on random tables", "",
            ("200 random 3 x 3 x 3 tables per row (Poisson counts, mean 2B, a fifth of the "
            "cells zero).  'exists': a controlled rounding exists (HiGHS MILP).  'one draw': "
            "a single Ernst stacking (Cox steps) is already a controlled rounding.  'protect "
            "ok': `protect(method='unbiased')` returned one within its 50 draws."), "",
            "| base | exists | one draw | protect ok | mean draws when ok |",
            "|---|---|---|---|---|"]
    for B in (2, 3, 5):
        ex = one = ok = 0
        draws = []
        for _ in range(200):
            x = rng.poisson(2 * B, size=(3, 3, 3)) * (rng.random((3, 3, 3)) > 0.2)
            ex += R3.milp_rounding(x, B, objective="none") is not None
            one += R3.is_controlled_rounding(
                x, R3.ernst_stack(x, B, lambda M, B=B: _cox_unbiased(M, B, rng)), B)
            try:
                rel = rk.ControlledRounding(B).protect(rk.Table(x, dims=DIMS), rng)
                ok += 1
                draws.append(rel.info["ernst_draws"])
            except ValueError:
                pass
        out.append(f"| {B} | {ex / 2:.1f}% | {one / 2:.1f}% | {ok / 2:.1f}% | "
                   f"{np.mean(draws):.1f} |")
    x = np.array([[[4, 1, 7], [2, 5, 0], [8, 3, 1]], [[1, 1, 5], [7, 2, 2], [0, 4, 6]]])
    n = 1000
    plain = np.array([R3.ernst_stack(x, 3, lambda M: _cox_unbiased(M, 3, rng))
                      for _ in range(n)], float)
    cond, failed = [], 0
    for _ in range(n):
        try:
            cond.append(rk.ControlledRounding(3).protect(rk.Table(x, dims=DIMS), rng).published)
        except ValueError:
            failed += 1
    cond = np.array(cond, float)
    out += ["", (f"Per-entry means over {n} draws for the 2 x 3 x 3 table "
            f"`{_planes(x)}` (base 3), as z = (mean - original) / standard error:"), ""]
    for name, d in (("plain stacking (relaxed rounding, unconditioned)", plain),
                    ((f"protect (stacking conditioned on being a controlled rounding; "
                     f"{failed} of {n} calls raised after 50 draws)"), cond)):
        se = d.std(0, ddof=1) / np.sqrt(len(d))
        z = np.where(se > 0, (d.mean(0) - x) / np.where(se > 0, se, 1), 0.0)
        ok = np.mean([R3.is_controlled_rounding(x, r.astype(int), 3) for r in d])
        out.append(f"- {name}: max |z| = {np.abs(z).max():.1f}, cells with |z| > 4: "
                   f"{int((np.abs(z) > 4).sum())} of {x.size}; controlled roundings: "
                   f"{100 * ok:.0f}%")
    out += ["", ("The plain stacking is unbiased (each plane is an unbiased rounding of the "
            "cumulative original minus the cumulative rounding below) but it is only Ernst's "
            "relaxed rounding: entries of higher planes, zeros included, can move by up to two "
            "bases.  Conditioning on a controlled rounding biases the means; the bias is "
            "reported, not hidden."), ""]


def section_infeasible(out):
    B = 2
    nm = int((NO_ROUNDING % B != 0).sum())
    floor = B * (NO_ROUNDING // B)
    good = 0
    for pat in itertools.product((0, 1), repeat=nm):
        R = floor.copy()
        R[NO_ROUNDING % B != 0] += B * np.array(pat)
        good += R3.is_controlled_rounding(NO_ROUNDING, R, B)
    try:
        rk.ControlledRounding(B, method="optimal").protect(rk.Table(NO_ROUNDING, dims=DIMS))
        msg = "(no error)"
    except ValueError as e:
        msg = str(e)
    out += ["## 3. Where no controlled rounding exists", "",
            (f"The 2 x 2 x 2 table `{_planes(NO_ROUNDING)}` at base 2 (found by a random "
            f"search): of its 2^{nm} = {2 ** nm} up/down patterns, {good} is a controlled "
            "rounding (brute force), and the MILP agrees:"), "", f"> ValueError: {msg}", "",
            ("Seed 004's 'Example 1/1a: Infeasible 3-D Table' and 'Example 2/2a: Infeasible "
            "Frechet Consistent 3-D Table' are margin systems, not tables: their 2-way margins "
            "agree on every 1-way margin, yet no nonnegative table has them, so they cannot be "
            "rounded (there is nothing to round).  Checked by LP (real tables) and MILP:"), "",
            "| example | shape | Fréchet lower <= upper | nonnegative table exists |",
            "|---|---|---|---|"]
    for name, m in S004.FRECHET_INFEASIBLE.items():
        rel = _margins_release(m)
        fb = rk.frechet_bounds(rel)
        try:
            rk.exact_bounds(rel, method="lp")
            feas = "yes"
        except ValueError:
            feas = "no (LP infeasible)"
        out.append(f"| {name} | {'x'.join(map(str, rel.shape))} | "
                   f"{bool((fb['lower'] <= fb['upper']).all())} | {feas} |")
    out.append("")


def _margins_release(ex):
    """A margins-only release of one of seed 004's 3-D examples (S004.FRECHET_*: its 2-way
    margins; the 1-way and grand totals follow from them)."""
    ab, ac, bc = ex["ab"], ex["ac"], ex["bc"]
    m = {("a", "b"): ab, ("a", "c"): ac, ("b", "c"): bc, ("a",): ab.sum(1), ("b",): ab.sum(0),
         ("c",): ac.sum(0), (): ab.sum()}
    shape = ab.shape + (ac.shape[1],)
    return rk.Release(None, margins=m, mechanism=rk.MarginsOnly(), dims=("a", "b", "c"),
                      coords={d: list(range(n)) for d, n in zip(("a", "b", "c"), shape)})


def section_bounds(out):
    out += ["## 4. Seed 004: Fréchet bounds are not sharp in 3-D", "",
            ("Upper: min(n_ab, n_ac, n_bc); lower: max(0, n_ab + n_ac - n_a, n_ab + n_bc - n_b, "
            "n_ac + n_bc - n_c).  Exact range by integer programming (HiGHS), equal to the "
            "support found by the enumerator.  Cells listed where the bounds are not "
            "attained, as (a, b, c): Fréchet [lower, upper] vs exact [lower, upper]."), "",
            "| example | tables | cells | cells with a non-sharp bound | examples |",
            "|---|---|---|---|---|"]
    for name, m in S004.FRECHET_FEASIBLE.items():
        rel = _margins_release(m)
        fb = rk.frechet_bounds(rel)
        ex = rk.exact_bounds(rel)
        en = rk.exact_bounds(rel, method="enumerate")
        assert np.array_equal(ex["lower"], en["lower"]) and np.array_equal(ex["upper"], en["upper"])
        bad = np.argwhere(((fb["lower"] < ex["lower"]) | (fb["upper"] > ex["upper"])).values)
        ex_txt = "; ".join(
            f"{tuple(int(v) for v in c)}: [{int(fb['lower'].values[tuple(c)])}, "
            f"{int(fb['upper'].values[tuple(c)])}] vs [{int(ex['lower'].values[tuple(c)])}, "
            f"{int(ex['upper'].values[tuple(c)])}]" for c in bad[:3])
        out.append(f"| {name} | {rk.count_candidates(rel)} | {rel.shape} | {len(bad)} | "
                   f"{ex_txt} |")
    out += ["", ("Example 3 (caption 'Feasible (unique) 3-D Table with Inexact Upper Bounds'): "
            "every usual upper bound is 1, yet 12 of the 27 cells are 0 in the only table.  "
            "Example 4 ('Inexact Frechet Bounds'): at cell (0, 0, 0) the Fréchet lower bound is "
            "1 but the only table has 2.  Example 5 ('3 df and 4 Integer Solutions'): 4 tables, "
            "and the real solution set has dimension 3.  The OCR prints only margins (planes' "
            "row and column totals and the totals plane); each example read with its caption "
            "after it has exactly the property its caption states."), ""]


def section_posterior(out):
    x = S.ORIGINAL_3D[:2, :3, :3]
    B = 2
    rel = rk.ControlledRounding(B, method="optimal").protect(rk.Table(x, dims=DIMS))
    out += ["## 5. Exact posterior of a rounded 3-D table", "",
            (f"The 2 x 3 x 3 corner of seed 003's 3-D table, `{_planes(x)}`, optimal base-{B} "
            f"rounding `{_planes(np.asarray(rel.published))}`; uniform prior."), "",
            ("| likelihood | candidates | seconds | expected exactly disclosed cells | "
            "mean P(mode) | mean P(original) |"), "|---|---|---|---|---|---|"]
    posts = {}
    for lk in ("feasible", "unbiased"):
        r = rk.Release(rel.published, margins=rel.margins,
                       mechanism=rk.ControlledRounding(B, likelihood=lk), dims=DIMS)
        t0 = time.perf_counter()
        p = rk.posterior(r)
        dt = time.perf_counter() - t0
        posts[lk] = p
        pe = p.prob_exact(x).values
        out.append(f"| {lk} | {p.n_candidates:,} | {dt:.2f} | {pe.sum():.2f} of {x.size} | "
                   f"{p.max_prob().values.mean():.3f} | {pe.mean():.3f} |")
    out += ["", ("Per cell (i, j, k): original, published, then P(original) under each "
            "likelihood, and the 95% interval (feasible):"), "",
            ("| cell | original | published | P(orig) feasible | P(orig) unbiased | "
            "95% (feasible) |"), "|---|---|---|---|---|---|"]
    iv = posts["feasible"].interval(0.95)
    for idx in np.ndindex(*x.shape):
        out.append(f"| {idx} | {x[idx]} | {int(rel.published[idx])} | "
                   f"{posts['feasible'].prob_exact(x).values[idx]:.3f} | "
                   f"{posts['unbiased'].prob_exact(x).values[idx]:.3f} | "
                   f"[{int(iv['lower'].values[idx])}, {int(iv['upper'].values[idx])}] |")
    g = posts["feasible"].totals[()]
    out += ["", (f"Grand total: published {int(rel.margins[()])}, original {int(x.sum())}, "
            f"posterior P(original) {float(g.prob_exact(np.array(x.sum())).values):.3f} "
            "(feasible)."), "",
            "Timings on the shared 2-core machine (other jobs running): indicative only.", ""]


def main() -> str:
    rng = np.random.default_rng(20261122)
    out = ["# Three-way tables: controlled rounding, existence, bounds, posterior", "",
           "Written by `studies/rounding/three_way.py`.", ""]
    section_protect(out)
    section_ernst(out, rng)
    section_infeasible(out)
    section_bounds(out)
    section_posterior(out)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = main()
    atomic_write_text(HERE / "results_three_way.md", text)
    print(text)
