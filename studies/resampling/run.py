"""Seed 001 (Domingo-Ferrer & Mateo-Sanz 1999): bootstrap vs binomial perturbation.

Run:  python studies/resampling/run.py      (writes results.md beside this file)

1. Table 1 (P(X = k | published k), flat prior on x >= 1) side by side with the seed.
2. Which method discloses small counts more at equal quality S.
3. Expected regenerations of the M = 1 bootstrap as the table grows (seed 001, section 4).
4. The cell-independence approximation against the exact joint posterior (enumeration
   over every original table of a small 2 x 2 table, written here from the definitions;
   the library's exact route 'joint' beside it), and the calibration of both routes.
5. The error of the per-cell route against the exact joint route (max |pmf difference|
   over cells and values) on 2 x 2 and 2 x 3 tables with n = 5..10, several M and S.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import stats

import riskengine as rk
from riskengine._io import atomic_write_text
from riskengine.data.seeds import S001
from riskengine.mechanisms._resampling import quality_interval

HERE = Path(__file__).resolve().parent
TABLE1, MS = S001.TABLE1, S001.TABLE1_MS          # seed 001, Table 1 and its (M, S) columns


def p_exact(mech, k, n, prior=None, route="auto"):
    rel = rk.Release(np.array([[k, n - k]]), margins={(): n}, mechanism=mech)
    post = rk.posterior(rel, prior or rk.priors.Flat(low=1), route=route)
    return float(post.prob_published().values[0, 0])


def max_pmf_diff(a, b) -> float:
    """Largest |difference| of two posteriors' cell probabilities (values aligned)."""
    pa, pb = xr.align(a.pmf, b.pmf, join="outer", fill_value=0.0)
    return float(np.abs(pa.values - pb.values).max())


def exact_joint_m1(pub, S, prior_lw):
    """Exact posterior of a 2 x 2 original given an M = 1 bootstrap release: over all
    originals x with the same total, weight prior(x) Mult(pub; n, x/n) 1[pub in Q(x)] / Pr_x(Q)."""
    n = int(pub.sum())
    comps = [np.array(c).reshape(2, 2) for c in itertools.product(range(n + 1), repeat=4)
             if sum(c) == n]
    def in_q(y, x):
        lo, hi = quality_interval(x, n, S)
        pos = x > 0
        return np.all((y[pos] >= lo[pos]) & (y[pos] <= hi[pos])) and np.all(y[~pos] == 0)
    def mult(y, x):
        return stats.multinomial.pmf(y.ravel(), n, x.ravel() / n)
    post = []
    for x in comps:
        if not in_q(pub, x):
            continue
        pq = sum(mult(y, x) for y in comps if in_q(y, x))
        post.append((x, np.exp(prior_lw(x)) * mult(pub, x) / pq))
    Z = sum(w for _, w in post)
    return [(x, w / Z) for x, w in post]


def main() -> str:
    t0 = time.time()
    out = ["# Resampling (seed 001): bootstrap and binomial perturbation", ""]

    out += ["## 1. Table 1: P(X = k | published k), flat prior on x >= 1", ""]
    head = "| k | " + " | ".join(f"M={M}, S={S}" for M, S in MS) + " |"
    out += [head, "|" + "---|" * (len(MS) + 1)]
    worst = {"joint": 0.0, "cells": 0.0}
    for n in (1000, 100_000):
        for k, row in TABLE1.items():
            for route in ("joint", "cells"):
                got = [p_exact(rk.Bootstrap(M, S), k, n, route=route) for M, S in MS]
                worst[route] = max(worst[route], max(abs(g - w) for g, w in zip(got, row)))
                out.append(f"| {k} (n={n}, {route}) | " + " | ".join(f"{g:.3f}" for g in got)
                           + " |")
    for k, row in TABLE1.items():
        out.append(f"| {k} (seed) | " + " | ".join(f"{w:.2f}" for w in row) + " |")
    out += ["", (f"Largest difference to the seed over the 27 values and both n: "
            f"{worst['joint']:.4f} by the exact joint route (the release [[k, n - k]]: the "
            f"second cell is n minus the first), {worst['cells']:.4f} by the per-cell route "
            "(the seed prints two decimals).")]
    out.append("")

    out += ["## 2. Equal quality S: which method discloses small counts more?", "",
            "P(X = k | published k), flat prior on x >= 1, n = 100 000 (per-cell likelihoods).",
            "", "| S | k | binomial | bootstrap M=1 | bootstrap M=3 | bootstrap M=5 |",
            "|---|---|---|---|---|---|"]
    for S in (3.0, 2.0, 1.5):
        for k in (1, 2, 3):
            vals = [p_exact(rk.BinomialPerturbation(S), k, 100_000)] + \
                   [p_exact(rk.Bootstrap(M, S), k, 100_000) for M in (1, 3, 5)]
            out.append(f"| {S} | {k} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
    out += ["", ("The binomial method's disclosure probabilities equal those of the bootstrap "
            "without averaging (M = 1): the sum of M bootstrap draws of a cell is binomial(nM, "
            "x/n), and for M = 1 the two per-cell laws coincide. Averaging (M > 1) shrinks the "
            "variance and raises the disclosure probability of small counts sharply, as the "
            "seed concludes."), ""]

    out += ["## 3. Expected regenerations of the M = 1 bootstrap as the table grows", "",
            ("Cells Poisson(10), S = 2; expected regenerations = 1/P(all cells pass) - 1. "
            "'simulated' counts draws until acceptance (200 tables); 'independent cells' "
            "multiplies per-cell pass probabilities."), "",
            "| cells | simulated mean regenerations | independent-cells prediction |",
            "|---|---|---|"]
    rng = np.random.default_rng(1)
    mech = rk.Bootstrap(1, 2.0)
    for cells in (4, 10, 25, 50, 100):
        sims, preds = [], []
        for _ in range(200):
            x = rng.poisson(10, size=(1, cells))
            x[x == 0] = 1
            rel = mech.protect(rk.Table(x), rng)
            sims.append(rel.info["regenerations"])
            n = x.sum()
            lo, hi = quality_interval(x, n, 2.0)
            pp = stats.binom.cdf(hi, n, x / n) - stats.binom.cdf(lo - 1, n, x / n)
            preds.append(1.0 / np.prod(pp) - 1.0)
        out.append(f"| {cells} | {np.mean(sims):.2f} | {np.mean(preds):.2f} |")
    out += ["", ("Regenerations grow exponentially with the number of cells (each cell fails "
            "with probability about 5 % at S = 2): the M = 1 bootstrap becomes impractical "
            "for large tables, which is why Heer averages M > 1 tables, at the cost shown "
            "in section 2."), ""]

    out += ["## 4. How good is the cell-independence approximation?", ""]
    prior = rk.priors.Poisson(2.0)
    lw = lambda x: float(stats.poisson.logpmf(x, 2.0).sum())
    worst, rows = 0.0, []
    rng = np.random.default_rng(7)
    for _ in range(6):
        x = rng.poisson(2.0, size=(2, 2))
        if x.sum() < 2:
            x[0, 0] += 2
        rel = rk.Bootstrap(1, 2.0).protect(rk.Table(x), rng)
        joint = exact_joint_m1(rel.published, 2.0, lw)
        post = rk.posterior(rel, prior, route="cells")
        exact = rk.posterior(rel, prior, route="joint")
        diff = dj = 0.0
        for idx in np.ndindex(2, 2):
            for v in range(int(rel.margins[()]) + 1):
                pj = sum(w for t, w in joint if t[idx] == v)
                pi = float(post.prob(np.full((2, 2), v)).values[idx])
                pe = float(exact.prob(np.full((2, 2), v)).values[idx])
                diff, dj = max(diff, abs(pj - pi)), max(dj, abs(pj - pe))
        worst = max(worst, diff)
        rows.append(f"| {x.tolist()} | {rel.published.tolist()} | {int(x.sum())} | {diff:.3f} "
                    f"| {dj:.1e} |")
    out += [("Exact joint posterior (every original 2 x 2 table with the same total n, weight "
            "prior x multinomial x quality indicator / acceptance probability, written in this "
            "script) against riskengine's per-cell route and its exact route 'joint', M = 1 "
            "bootstrap, S = 2, Poisson(2) prior:"), "",
            ("| original | published | n | max abs difference, per-cell route | same, joint "
             "route |"), "|---|---|---|---|---|"] + rows
    out += ["", (f"Worst difference of the per-cell route {worst:.3f}. On tiny tables the "
            "cells are far from independent (they share the total n and the whole-table "
            "acceptance), so the per-cell posterior is a rough approximation there; the "
            "joint route is exact (route='auto' takes it on such tables; section 5 measures "
            "the per-cell route's error more widely)."), ""]
    rng = np.random.default_rng(3)
    out += [("Calibration of the per-cell route: P(published value is true) among published "
            "cells >= 1 (400 tables of Poisson(3) cells, 5 x 5, intruder prior = generator; "
            "too large for the joint route):"), "",
            "| mechanism | claimed | observed | difference | s.e. |", "|---|---|---|---|---|"]
    for mech in (rk.Bootstrap(1, 2.0), rk.Bootstrap(3, 2.0), rk.BinomialPerturbation(2.0),
                 rk.BinomialPerturbation(1.5)):
        c, h = [], []
        for _ in range(400):
            T = rng.poisson(3.0, size=(5, 5))
            rel = mech.protect(rk.Table(T), rng)
            m = rel.published >= 1
            c.append(rk.posterior(rel, rk.priors.Poisson(3.0), route="cells")
                     .prob_published().values[m].mean())
            h.append((rel.published == T)[m].mean())
        d = np.array(c) - np.array(h)
        out.append(f"| {mech.describe()} | {np.mean(c):.3f} | {np.mean(h):.3f} | "
                   f"{d.mean():+.3f} | {d.std(ddof=1) / np.sqrt(len(d)):.3f} |")
    out += ["", ("The bootstrap is calibrated within Monte Carlo error. The binomial method's "
            "per-cell posterior under-claims: its compensation stage pulls published values "
            "back towards the originals, which the truncated-binomial likelihood leaves out."),
            ""]
    out += [("Both routes on tables the joint route takes (300 tables of Poisson(2) cells, "
            "2 x 3, intruder prior = generator; mean over cells of P(published value is "
            "true) claimed minus observed):"), "",
            "| mechanism | joint: difference | s.e. | cells: difference | s.e. |",
            "|---|---|---|---|---|"]
    for mech in (rk.Bootstrap(1, 2.0), rk.Bootstrap(3, 2.0), rk.BinomialPerturbation(2.0),
                 rk.BinomialPerturbation(1.5), rk.BinomialPerturbation(2.0, preserve="rows")):
        cells = []
        for route in ("joint", "cells"):
            rng = np.random.default_rng(11)
            d = []
            for _ in range(300):
                T = rng.poisson(2.0, size=(2, 3))
                if T.sum() == 0:
                    continue
                rel = mech.protect(rk.Table(T), rng)
                post = rk.posterior(rel, rk.priors.Poisson(2.0), route=route)
                d.append(post.prob_published().values.mean() - (rel.published == T).mean())
            d = np.array(d)
            cells += [f"{d.mean():+.3f}", f"{d.std(ddof=1) / np.sqrt(len(d)):.3f}"]
        out.append(f"| {mech.describe()} | " + " | ".join(cells) + " |")
    out += ["", ("The exact joint route is calibrated within Monte Carlo error for both "
            "mechanisms; the per-cell route under-claims for the binomial method (the "
            "compensation stage) by about 6 standard errors."), ""]
    out += section5()
    out.append(f"_Computed in {time.time() - t0:.0f} s._")
    return "\n".join(out) + "\n"


def section5() -> list:
    """The per-cell route against the exact joint route on small tables."""
    out = ["## 5. Error of the per-cell route against the exact joint posterior", "",
           ("For each mechanism and shape, 25 originals: n uniform on 5..10, cell "
            "probabilities Dirichlet(1.5); each protected once; the posterior of every cell "
            "by the per-cell route ('cells') and the exact route ('joint'); the error of a "
            "release is the largest |difference| of a cell probability over cells and values. "
            "Columns: the largest and the mean error over the 25 releases, Uniform prior "
            "(over tables) and Poisson(2) prior; t: mean seconds per posterior of the joint "
            "route / of the per-cell route."), "",
           ("| mechanism | shape | Uniform: max | mean | Poisson(2): max | mean | t joint / "
            "cells (s) |"), "|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(2024)
    mechs = ([rk.Bootstrap(M, S) for M in (1, 3, 5) for S in (1.5, 2.0, 3.0)]
             + [rk.BinomialPerturbation(S, preserve=p) for S in (1.5, 2.0, 3.0)
                for p in ("total", "rows")])
    worst = {}
    for shape in ((2, 2), (2, 3)):
        for mech in mechs:
            errs = {"u": [], "p": []}
            tj = tc = 0.0
            for _ in range(25):
                n = int(rng.integers(5, 11))
                x = rng.multinomial(n, rng.dirichlet(np.full(shape[0] * shape[1], 1.5)))
                rel = mech.protect(rk.Table(x.reshape(shape)), rng)
                for key, prior in (("u", rk.priors.Uniform()), ("p", rk.priors.Poisson(2.0))):
                    t0 = time.perf_counter()
                    exact = rk.posterior(rel, prior, route="joint")
                    t1 = time.perf_counter()
                    approx = rk.posterior(rel, prior, route="cells")
                    tj, tc = tj + t1 - t0, tc + time.perf_counter() - t1
                    errs[key].append(max_pmf_diff(exact, approx))
            kind = mech.name
            worst[kind] = max(worst.get(kind, 0.0), max(errs["u"] + errs["p"]))
            out.append(f"| {mech.describe()} | {shape[0]} x {shape[1]} | {max(errs['u']):.3f} | "
                       f"{np.mean(errs['u']):.3f} | {max(errs['p']):.3f} | "
                       f"{np.mean(errs['p']):.3f} | {tj / 50:.3f} / {tc / 50:.3f} |")
    out += ["", (f"Largest error of the per-cell route: bootstrap {worst['bootstrap']:.3f}, "
            f"binomial {worst['binomial']:.3f}. On tables this small the per-cell route "
            "is a rough approximation; route='auto' takes the exact joint route wherever its "
            "work estimate is within riskengine.inference.joint.MAX_WORK and falls back to "
            "the per-cell route (labelled an approximation in attrs) beyond."), ""]
    return out


if __name__ == "__main__":
    text = main()
    atomic_write_text(HERE / "results.md", text)
    print(text)
