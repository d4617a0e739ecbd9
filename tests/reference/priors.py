"""Random priors for the brute-force tests: each a library prior paired with the spec the
references evaluate independently (:func:`tests.reference.numerics.log_prior`)."""

from __future__ import annotations

import riskengine as rk

__all__ = ["random_prior"]


def random_prior(rng, shape, P, flat_extra: int = 4):
    """A random prior and its spec for :func:`log_prior`: Uniform, Flat (upper bound up to
    ``flat_extra`` above the largest published value ``P``), Poisson (one rate or one per
    cell), with knowledge (a cell at least k, a known cell) now and then."""
    kind = rng.choice(["uniform", "flat", "poisson", "poisson_cells"])
    if kind == "uniform":
        prior, spec = rk.priors.Uniform(), {"kind": "uniform"}
    elif kind == "flat":
        low = int(rng.integers(0, 3))
        high = None if rng.random() < 0.5 else int(max(P.max(), low) + rng.integers(0, flat_extra))
        prior, spec = rk.priors.Flat(low, high), {"kind": "flat", "low": low, "high": high}
    elif kind == "poisson":
        r = float(rng.uniform(0.3, 2 * P.max() + 3))
        prior, spec = rk.priors.Poisson(r), {"kind": "poisson", "rate": r}
    else:
        r = rng.uniform(0.3, 2 * P.max() + 3, size=shape)
        prior, spec = rk.priors.Poisson(r), {"kind": "poisson", "rate": r}
    u = rng.random()
    if u < 0.2:
        cell = tuple(int(rng.integers(0, s)) for s in shape)
        k = int(rng.integers(1, 4))
        prior, spec["at_least"] = prior.at_least([cell], k), [(cell, k)]
    elif u < 0.3:
        cell = tuple(int(rng.integers(0, s)) for s in shape)
        v = int(max(P[cell] + rng.integers(-2, 3), 0))
        prior, spec["known"] = prior.known([cell], v), [(cell, v)]
    return prior, spec
