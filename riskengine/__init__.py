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

from . import cycles, priors
from ._io import read_csv_long, read_csv_wide, read_netcdf, read_table
from .mechanisms import (BinomialPerturbation, Bootstrap, ControlledRounding, CyclicPerturbation, MarginsOnly, Mechanism,
                         frechet_bounds)
from .mechanisms import CellSuppression
from .audit import audit
from .suppress import suppress
from .posterior import Posterior, count_candidates, posterior
from .release import Release
from .table import Table

__version__ = "0.1.0"

__all__ = [
    "Table", "Release", "Posterior", "posterior", "count_candidates",
    "CyclicPerturbation", "ControlledRounding", "MarginsOnly", "frechet_bounds",
    "Bootstrap", "BinomialPerturbation",
    "CellSuppression", "suppress", "audit",
    "Mechanism", "cycles", "priors",
    "read_table", "read_csv_long", "read_csv_wide", "read_netcdf",
]
