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

The namespace is lazy (PEP 562): ``import riskengine`` loads no mechanism, kernel,
NumPy, matplotlib, dask or arviz; each name imports its module when it is first used.
:data:`_NAMES` says where every name lives; the mechanism classes and their functional
forms (``rk.CellKey``, ``rk.suppress``, ``rk.frechet_bounds``, ...) are the names of the
mechanism modules' ``__all__``, found by :func:`riskengine.mechanisms.index` without
importing any mechanism module, so asking for one loads that mechanism only.
"""

from ._version import __version__ as __version__

#: public name -> "module:attribute" ("module" alone: the name is that module); the
#: mechanism modules' names are added by riskengine.mechanisms.index()
_NAMES = {  # grouped by topic, not sorted
    # tables, releases, inference
    "Table": "riskengine.table:Table",
    "Release": "riskengine.release:Release",
    "ReleaseSet": "riskengine.release_set:ReleaseSet",
    "Hierarchy": "riskengine.hierarchy:Hierarchy",
    "TableSet": "riskengine.table_set:TableSet",
    "TableSetRelease": "riskengine.table_set:TableSetRelease",
    "Posterior": "riskengine._posterior:Posterior",
    "posterior": "riskengine.inference.resolve:posterior",
    "count_candidates": "riskengine.inference.resolve:count_candidates",
    "routes": "riskengine.inference.registry:routes",
    "estimate_count": "riskengine.inference.sis:estimate_count",
    "CountEstimate": "riskengine.inference.sis:CountEstimate",
    "MonteCarlo": "riskengine.protocol:MonteCarlo",
    "priors": "riskengine.priors",
    "tabular": "riskengine.tabular",
    "read_table": "riskengine._io:read_table",
    "read_csv_long": "riskengine._io:read_csv_long",
    "read_csv_wide": "riskengine._io:read_csv_wide",
    "read_netcdf": "riskengine._io:read_netcdf",
    # the field's file formats (tau-Argus, sdcTable) and tau-Argus jobs
    "formats": "riskengine._formats",
    "FormatError": "riskengine._formats._lines:FormatError",
    "read_argus": "riskengine._formats.argus:read_argus",
    "ArgusTable": "riskengine._formats.argus:ArgusTable",
    "read_jj": "riskengine._formats.jj:read_jj",
    "write_jj": "riskengine._formats.jj:write_jj",
    "protect_argus": "riskengine._batch:protect_argus",
    "audit_argus": "riskengine._batch:audit_argus",
    "read_pattern": "riskengine._batch:read_pattern",
    "write_argus_output": "riskengine._batch:write_argus_output",
    "run_batch": "riskengine._batch:run_batch",
    "status_pattern": "riskengine._batch:status_pattern",
    # mechanisms (and every name a mechanism module exports)
    "Mechanism": "riskengine.protocol:Mechanism",
    "cycles": "riskengine.cycles",
    # magnitude tables
    "contributions": "riskengine.magnitude.contributions:contributions",
    "Contributions": "riskengine.magnitude.contributions:Contributions",
    "sensitivity": "riskengine.magnitude.sensitivity",
    "audit": "riskengine.magnitude.audit:audit",
    # the three uses
    "measures": "riskengine.measures",
    "compare": "riskengine._compare:compare",
    "simulate": "riskengine._simulate:simulate",
    "reconstruct": "riskengine._reconstruct:reconstruct",
    "generators": "riskengine.generators",
    "census": "riskengine.census",
    "plots": "riskengine.plots",
    "write_report": "riskengine.report:write_report",
    # the user's analysis
    "analyze": "riskengine._analyze:analyze",
    "Analysis": "riskengine._analyze:Analysis",
    "statistics": "riskengine.statistics",
    # the review board's verdict
    "verdict": "riskengine._verdict:verdict",
    "Verdict": "riskengine._verdict:Verdict",
    "Policy": "riskengine._policy:Policy",
}


def _mechanism_names() -> dict:
    """The names of the mechanism modules' ``__all__`` -> "module:attribute" (read from
    their source: no mechanism is imported)."""
    from .mechanisms import exports
    return {n: f"riskengine.mechanisms.{m}:{n}" for n, m in exports().items()
            if n not in _NAMES}


def _public() -> list:
    return ["__version__", *_NAMES, *sorted(_mechanism_names())]


def __getattr__(name: str):
    if name == "__all__":
        return _public()
    target = _NAMES.get(name)
    if target is None and not name.startswith("_"):
        target = _mechanism_names().get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    if attr:
        value = getattr(value, attr)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted({*globals(), *_public()})
