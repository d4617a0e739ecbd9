"""Protection mechanisms: one module each, the same small surface.

Every mechanism has public parameters (``to_dict``), ``protect(table, rng)``
returning a :class:`~riskengine.Release`, ``validate_release`` (is a release
consistent with the mechanism?), and its inference routes (``posterior``,
``count_candidates``).  ``mechanism_from_dict`` resolves a name through the
registry; an unknown name is an error listing the known ones.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "REGISTRY",
    "BinomialPerturbation",
    "Bootstrap",
    "CellSuppression",
    "ControlledRounding",
    "ControlledTabularAdjustment",
    "CyclicPerturbation",
    "MarginsOnly",
    "Mechanism",
    "exact_bounds",
    "frechet_bounds",
    "mechanism_from_dict",
    "register",
]

REGISTRY: dict = {}


def register(cls):
    REGISTRY[cls.name] = cls
    return cls


class Mechanism:
    """Base class of protection mechanisms."""

    name = "mechanism"
    additive = True  #: releases add up to their published margins
    suppressible_totals = False  #: releases may hide totals (NaN in margins / subtotals)

    def to_dict(self) -> dict:
        return {"name": self.name, **self._params()}

    @classmethod
    def from_dict(cls, d: dict):
        params = {k: v for k, v in d.items() if k != "name"}
        return cls(**params)

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self._params().items()
                          if not isinstance(v, (list, np.ndarray)))
        return f"{type(self).__name__}({inner})"

    def __repr__(self) -> str:
        return self.describe()

    def validate_release(self, release) -> None:  # pragma: no cover - overridden
        pass

    def _count_table(self, table):
        """The input as an rk.Table of counts (an array is wrapped), or a clear error."""
        from ..table import Table
        if not isinstance(table, Table):
            table = Table(table)
        if table.kind != "count":
            raise ValueError(f"{self.describe()} protects tables of counts; this table holds "
                             "non-integer magnitudes")
        return table

    def _rng(self, rng):
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator "
                            f"(np.random.default_rng(seed)), got {type(rng).__name__}")
        return rng


def mechanism_from_dict(d: dict) -> Mechanism:
    if not isinstance(d, dict) or "name" not in d:
        raise ValueError(f"a mechanism description needs a 'name', got {d!r}")
    name = d["name"]
    if name not in REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name].from_dict(d)


from .cta import ControlledTabularAdjustment
from .cyclic import CyclicPerturbation
from .margins_only import MarginsOnly, exact_bounds, frechet_bounds
from .resampling import BinomialPerturbation, Bootstrap
from .rounding import ControlledRounding
from .suppression import CellSuppression
