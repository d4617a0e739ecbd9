"""``riskengine warmup``: compile every numerical kernel ahead (a tiny instance of every
inference route of every registered mechanism).

The instances come from the registry: each mechanism's own example
(``Mechanism.example()``) and its parameters on a 2-D, a 3-D and a 1-D table
(``example(table)``), so a new mechanism is warmed up with no edit here."""

from __future__ import annotations

import time


def _warmup_tables():
    import numpy as np

    from ..table import Table
    return [Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w")),
            Table(np.array([[[2, 1], [1, 3]], [[1, 2], [3, 1]]]), dims=("v", "w", "x")),
            Table(np.array([3, 1, 4, 2]), dims=("v",)),
            Table(np.array([[3, 1], [2, 4]]), dims=("v", "w"))]        # one free cell


def _warmup_mechanism(cls, tables, priors_, rng) -> set:
    """Every route of ``cls`` that applies to a tiny release of its own example and of
    each table of another shape (the example's parameters and protect inputs for it):
    posterior, count and a few draws.  Returns the routes run."""
    from ..inference.resolve import count_candidates, plan, posterior
    from ..protocol import MonteCarlo
    short = MonteCarlo(warmup=20, draws=20)
    ran = set()
    own = cls.example()              # NotImplementedError: the mechanism declares none
    others = [t for t in tables if tuple(t.shape) != tuple(own.table.shape)]
    for table in (None, *others):
        try:
            rel = (own if table is None else cls.example(table)).release(rng)
        except (ValueError, TypeError):
            continue                       # the mechanism does not take tables of this shape
        mech = rel.mechanism
        for prior in priors_:
            for route in mech.routes:
                if route.applies(plan(rel, prior)) is not None:
                    continue
                try:
                    post = posterior(rel, prior, route=route.name, count=False,
                                     mcmc=None if route.exact else short)  # Monte Carlo: short
                except ValueError:         # e.g. no candidate under this prior: no kernel ran
                    continue
                ran.add(route.name)
                try:
                    if route.counts:
                        count_candidates(rel, prior, route=route.name)
                except ValueError:         # no count (unbounded noise): no kernel ran
                    pass
                try:
                    post.sample(3, rng)
                except ValueError:         # no draws from this route
                    pass
    return ran


def _warmup_grouped(table, priors_, rng) -> str:
    """The grouped-subtotals route: a margins-only release whose rows come in two groups
    with published subtotals (no mechanism's protect makes one)."""
    import numpy as np

    from ..inference.resolve import count_candidates, posterior
    from ..mechanisms.margins_only import MarginsOnly
    from ..release import Release
    x = table.values
    rel = Release(None, margins={("v",): x.sum(1), ("w",): x.sum(0), (): x.sum()},
                  mechanism=MarginsOnly(), dims=("v", "w"), groups={"v": [[0, 1], [2]]},
                  subtotals={("v", "w"): np.stack([x[:2].sum(0), x[2]]),
                             ("v",): np.array([x[:2].sum(), x[2].sum()])})
    for prior in priors_:
        posterior(rel, prior, route="grouped-dp").sample(3, rng)
        count_candidates(rel, prior, route="grouped-dp")
    return "margins-only 3 x 3, rows in 2 groups: route grouped-dp"


def _warmup_sets(priors_, rng) -> str:
    """The routes for sets of releases (rk.ReleaseSet): a release of the own example of
    every mechanism that has them, twice (the same records published twice), exactly and
    by short chains."""
    from ..inference.resolve import plan, posterior
    from ..mechanisms import REGISTRY
    from ..protocol import MonteCarlo
    from ..release_set import ReleaseSet
    short = MonteCarlo(warmup=20, draws=20)
    ran = set()
    for name, cls in sorted(REGISTRY.items()):
        if not cls.set_routes:
            continue
        rel = cls.example().release(rng)
        both = ReleaseSet([rel, rel])
        for prior in priors_:
            for route in cls.set_routes:
                if route.applies(plan(both, prior)) is not None:   # e.g. an off-grid
                    continue                                      # p-table: no keys route
                posterior(both, prior, route=route.name, count=False,
                          mcmc=None if route.exact else short).sample(3, rng)
                ran.add(route.name)
    return "routes " + ", ".join(sorted(ran))


def _warmup_structures(table, priors_, rng) -> str:
    """Hierarchical tables and table sets: the sums route on a suppressed hierarchical
    table (its kernel, sum_enum), exactly, with draws."""
    from ..hierarchy import Hierarchy
    from ..inference.resolve import count_candidates, posterior
    from ..magnitude.sensitivity import Frequency
    from ..mechanisms.suppression import suppress
    from ..table import Table
    h = Hierarchy({"a": [0, 1], "b": [2]})
    t = Table(table.values, dims=table.dims, coords={"v": [0, 1, 2]}, hierarchies={"v": h})
    rel = suppress(t, Frequency(3))
    for prior in priors_:
        posterior(rel, prior, route="sums").sample(3, rng)
        count_candidates(rel, prior, route="sums")
    return "suppressed 3 x 3 with a 2-level hierarchy: route sums"


def _warmup_large(rng) -> str:
    """Counts past the tiny tables' windows: the Gibbs route's log-concave lines (longer
    than ``kernels.gibbs.SHORT_LINE`` values: ``sweeps_2d_concave``) on a 3 x 3
    margins-only table with cells near 60, and the fiber route's sums on a 2 x 3 one."""
    import numpy as np

    from ..inference.resolve import posterior
    from ..mechanisms.margins_only import MarginsOnly
    from ..priors import NegativeBinomial
    from ..protocol import MonteCarlo
    from ..table import Table
    t3 = Table(np.array([[61, 55, 70], [48, 66, 59], [72, 50, 63]]), dims=("v", "w"))
    posterior(MarginsOnly().protect(t3), NegativeBinomial(60.0, 5.0), route="gibbs",
              mcmc=MonteCarlo(warmup=20, draws=20)).sample(3, rng)
    t2 = Table(np.array([[61, 55, 70], [48, 66, 59]]), dims=("v", "w"))
    posterior(MarginsOnly().protect(t2), NegativeBinomial(60.0, 5.0),
              route="fiber").sample(3, rng)
    return "margins-only 3 x 3 and 2 x 3 near 60: routes gibbs (long lines), fiber"


def cmd_warmup(args) -> int:
    import warnings

    import numpy as np

    from kernels._jit import watch_compiles

    from .. import priors
    from ..inference.sis import estimate_count
    from ..mechanisms import REGISTRY
    print("riskengine warmup: a tiny instance of every inference route of every mechanism; "
          "each numerical kernel compiles once for this machine or loads from numba's cache",
          flush=True)
    tables = _warmup_tables()
    priors_ = (priors.Uniform(), priors.Poisson(2.0))
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    with watch_compiles() as watch, warnings.catch_warnings():
        warnings.simplefilter("ignore")     # tiny Monte Carlo runs do not converge: no matter
        steps = [(name, cls) for name, cls in sorted(REGISTRY.items()) if cls.routes]
        steps += [("grouped subtotals", "grouped"), ("release sets", "sets"),
                  ("hierarchies", "structures"), ("large counts", "large"),
                  ("count estimate (SIS)", "sis")]
        for name, cls in steps:
            t0, before = time.perf_counter(), dict(watch.seconds)
            if cls == "grouped":
                what = _warmup_grouped(tables[0], priors_, rng)
            elif cls == "sets":
                what = _warmup_sets(priors_, rng)
            elif cls == "structures":
                what = _warmup_structures(tables[0], priors_, rng)
            elif cls == "large":
                what = _warmup_large(rng)
            elif cls == "sis":
                from ..mechanisms.margins_only import MarginsOnly
                estimate_count(MarginsOnly().protect(tables[0]), n=200)
                what = "margins-only 3 x 3"
            else:
                ran = _warmup_mechanism(cls, tables, priors_, rng)
                what = "routes " + (", ".join(sorted(ran)) or "none")
            new = sorted(m.rpartition(".")[2] for m in watch.seconds if m not in before)
            print(f"  {name:<20} {what}: {time.perf_counter() - t0:.1f} s"
                  + (f" (compiled {', '.join(new)})" if new else ""), flush=True)
    total = time.perf_counter() - start
    compiled = ", ".join(f"{m.rpartition('.')[2]} {s:.1f} s"
                         for m, s in sorted(watch.seconds.items(), key=lambda x: -x[1]))
    print(f"warmup done in {total:.1f} s: " + (
        f"{watch.count} kernel{'s' if watch.count > 1 else ''} compiled ({compiled}); the "
        "rest loaded from the cache"
        if watch.count else "every kernel loaded from numba's cache, nothing to compile"))
    return 0

