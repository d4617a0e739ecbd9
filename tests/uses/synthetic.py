"""Synthetic results with the schema of rk.compare and rk.simulate (issue 6): values random,
structure exact.  Shared by tests/uses/test_plots.py and test_report.py."""

import numpy as np
import xarray as xr


def compare_ds(rng, names=("cyclic", "rounding 3", "margins only"), draws=5, shape=(2, 3)):
    """A dataset with the schema of rk.compare (values random, structure exact)."""
    m, dims = len(names), ("v", "w")
    rd = rng.uniform(0, 1, (m, draws))
    ud = -rng.uniform(0, 5, (m, draws))
    true = rng.integers(0, 9, shape)
    pub = true + rng.integers(-1, 2, (m, draws, *shape))
    ds = xr.Dataset(
        {"risk": ("mechanism", rd.mean(1), {"definition": "sum of Pr(true value)"}),
         "utility": ("mechanism", ud.mean(1), {"definition": "-L1(published, true)"}),
         "risk_draw": (("mechanism", "draw"), rd),
         "utility_draw": (("mechanism", "draw"), ud),
         "expected_exact": (("mechanism", "draw"), rd * 6,
                            {"definition": "sum over cells of Pr(true)"}),
         "l1": (("mechanism", "draw"), -ud, {"definition": "sum |published - true|"}),
         "hellinger": (("mechanism", "draw"), rng.uniform(0, 1, (m, draws))),
         "prob_exact": (("mechanism", "draw", *dims), rng.uniform(0, 1, (m, draws, *shape))),
         "published": (("mechanism", "draw", *dims), pub),
         "true": (dims, true)},
        coords={"mechanism": list(names), "draw": np.arange(draws),
                "v": ["a", "b"][: shape[0]], "w": ["x", "y", "z"][: shape[1]]},
        attrs={"intruder": "Uniform()", "user": "Flat(0)", "draws": draws,
               "riskengine_kind": "compare"})
    return ds


def simulate_ds(rng, n_tables=400, shape=(3, 3), calibrated=True):
    """A dataset with the schema of rk.simulate; map_hit ~ Bernoulli(map_prob) when
    ``calibrated``, else Bernoulli(map_prob ** 3) (over-confident intruder)."""
    dims = ("table", "v", "w")
    p = rng.uniform(0.05, 1.0, (n_tables, *shape))
    hit = rng.uniform(size=p.shape) < (p if calibrated else p ** 3)
    true = rng.poisson(3, p.shape)
    return xr.Dataset(
        {"true": (dims, true), "published": (dims, true),
         "map_value": (dims, np.where(hit, true, true + 1)), "map_prob": (dims, p),
         "map_hit": (dims, hit), "prob_exact": (dims, np.where(hit, p, 0.5 * (1 - p))),
         "n_candidates": ("table", rng.integers(1, 100, n_tables))},
        coords={"table": np.arange(n_tables), "v": ["v1", "v2", "v3"][: shape[0]],
                "w": ["w1", "w2", "w3"][: shape[1]]},
        attrs={"mechanism": "CyclicPerturbation(m=3, alpha=0.25, beta=0.25)",
               "prior": "Poisson(2.0)", "seed": 7, "riskengine_kind": "simulate"})
