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

import sys as _sys

from ._version import __version__


def _imported_by_the_command() -> bool:
    """True only when the ``riskengine`` console script imports ``riskengine.cli``.

    The command then loads what a subcommand needs when it runs, so that ``riskengine
    --help`` and argument errors answer without importing NumPy, xarray, SciPy or Numba.
    Every other import (``import riskengine``, a test, ``python -m riskengine.cli``, a
    worker unpickling a task) loads the whole library here, as always.
    """
    script = _sys.argv[0] if _sys.argv and isinstance(_sys.argv[0], str) else ""
    script = script.replace("\\", "/").rpartition("/")[2]
    if script.removesuffix(".exe").removesuffix("-script.py") != "riskengine":
        return False
    f = _sys._getframe(1)
    while f is not None:           # this package imported as the parent of riskengine.cli
        if f.f_code.co_name == "_find_and_load" and f.f_locals.get("name") == f"{__name__}.cli":
            return True
        f = f.f_back
    return False


#: the library is not loaded yet (the command line's fast start; see above): the first
#: attribute asked for loads it (``__getattr__``)
_LAZY = _imported_by_the_command()

if not _LAZY:
    # this block also loads the deprecated module paths (riskengine.linear, .audit, .suppress,
    # .cta, .cta_bivariate, .sensitivity, .contributions) before the functions of the same names
    # are bound below, so that importing them later cannot rebind rk.audit & co. to modules
    from . import (  # noqa: F401
        audit,
        contributions,
        cta,
        cta_bivariate,
        cycles,
        generators,
        linear,
        priors,
        sensitivity,
        suppress,
        tabular,
    )
    from . import mechanisms as _mechanisms
    from ._io import read_csv_long, read_csv_wide, read_netcdf, read_table
    from .inference.sis import CountEstimate, estimate_count
    from .mechanisms import Mechanism
    from .mechanisms._base import MonteCarlo
    from .posterior import Posterior, count_candidates, posterior
    from .release import Release
    from .release_set import ReleaseSet
    from .table import Table

    # every mechanism class and functional form (rk.suppress, rk.cta, rk.frechet_bounds, ...):
    # a new mechanism module's __all__ lands here without an edit
    globals().update(_mechanisms.load())

    from . import measures, statistics
    from .analyze import Analysis, analyze
    from .compare import compare
    from .magnitude import sensitivity  # noqa: F811
    from .magnitude.audit import audit  # noqa: F811
    from .magnitude.contributions import Contributions, contributions  # noqa: F811
    from .simulate import simulate
    from .verdict import Verdict, verdict

    __all__ = [  # noqa: RUF022  (grouped by topic, not sorted)
        # tables, releases, inference
        "Table", "Release", "ReleaseSet", "Posterior", "posterior", "count_candidates", "estimate_count",
        "CountEstimate", "MonteCarlo", "priors", "tabular",
        "read_table", "read_csv_long", "read_csv_wide", "read_netcdf", "__version__",
        # mechanisms (and below, every name a mechanism module exports)
        "Mechanism", "cycles",
        # magnitude tables
        "contributions", "Contributions", "sensitivity", "audit",
        # the three uses
        "measures", "compare", "simulate", "generators", "plots", "write_report",
        # the user's analysis
        "analyze", "Analysis", "statistics",
        # the review board's verdict
        "verdict", "Verdict",
    ]
    __all__ += sorted(_mechanisms.EXPORTS)  # noqa: PLE0605  (the mechanism modules' names)


def __getattr__(name):
    # plots and reports load matplotlib only when first used (keeps `import riskengine` fast)
    import importlib
    if name == "plots":
        return importlib.import_module(".plots", __name__)
    if name == "write_report":
        return importlib.import_module(".report", __name__).write_report
    # the command line's fast start: the first name asked for (not by the import system
    # probing for a submodule, `from . import x`) runs this file again, loading everything
    if _LAZY and _sys._getframe(1).f_globals.get("__name__") != "importlib._bootstrap":
        module = importlib.reload(_sys.modules[__name__])
        return getattr(module, name)
    raise AttributeError(f"module 'riskengine' has no attribute {name!r}")
