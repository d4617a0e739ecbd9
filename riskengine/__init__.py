"""riskengine: Bayesian disclosure-risk analysis of statistical tables.

Given a published table and the public description of how it was protected,
riskengine computes what anyone can infer about each original cell: it walks
every original table consistent with the release, weighs each by prior x
likelihood, and reports per-cell posterior distributions, exact-disclosure
probabilities and utility.  It also implements the protection methods.

>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]),
...              dims=("v", "w"))
>>> mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(4), alpha=0.25, beta=0.25)
>>> rel = mech.protect(t, rng=np.random.default_rng(1))
>>> post = rk.posterior(rel, prior=rk.priors.Uniform())
>>> post.pmf.dims
('v', 'w', 'value')
"""

from . import cycles, generators, measures, priors, sensitivity
from ._io import read_csv_long, read_csv_wide, read_netcdf, read_table
from .audit import audit
from .compare import compare
from .contributions import Contributions, contributions
from .cta import CTAResult, cta
from .cta_bivariate import cta_bivariate
from .mechanisms import (
    BinomialPerturbation,
    Bootstrap,
    CellSuppression,
    ControlledRounding,
    ControlledTabularAdjustment,
    CyclicPerturbation,
    MarginsOnly,
    Mechanism,
    exact_bounds,
    frechet_bounds,
)
from .posterior import Posterior, count_candidates, posterior
from .release import Release
from .simulate import simulate
from .suppress import suppress
from .table import Table

__version__ = "0.1.0"

__all__ = [  # noqa: RUF022  (grouped by topic, not sorted)
    # tables, releases, inference
    "Table", "Release", "Posterior", "posterior", "count_candidates", "priors",
    "read_table", "read_csv_long", "read_csv_wide", "read_netcdf",
    # mechanisms
    "Mechanism", "CyclicPerturbation", "cycles", "ControlledRounding", "MarginsOnly",
    "frechet_bounds", "exact_bounds", "Bootstrap", "BinomialPerturbation",
    "ControlledTabularAdjustment",
    # magnitude tables
    "contributions", "Contributions", "sensitivity", "suppress", "audit", "CellSuppression",
    "cta", "cta_bivariate", "CTAResult",
    # the three uses
    "measures", "compare", "simulate", "generators", "plots", "write_report",
]


def __getattr__(name):
    # plots and reports load matplotlib only when first used (keeps `import riskengine` fast)
    import importlib
    if name == "plots":
        return importlib.import_module(".plots", __name__)
    if name == "write_report":
        return importlib.import_module(".report", __name__).write_report
    raise AttributeError(f"module 'riskengine' has no attribute {name!r}")
