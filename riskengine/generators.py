"""Generators of original tables for intruder-simulation studies (``rk.simulate``).

Each generator has ``draw(rng) -> rk.Table`` (same dims, labels and published
structure every time), ``describe()`` and ``to_dict()``.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> g = rk.generators.Poisson(rate=2.0, shape=(3, 4), dims=("v", "w"))
>>> t = g.draw(np.random.default_rng(0))
>>> t.shape, t.dims
((3, 4), ('v', 'w'))
>>> r = rk.generators.Resample(t)
>>> int(r.draw(np.random.default_rng(1)).values.sum()) == int(t.values.sum())
True
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _validate as V
from .table import Table

__all__ = ["Generator", "Multinomial", "Poisson", "Resample"]


class Generator:
    """Base class: subclasses set ``shape``/``dims``/``coords``/``margins`` and ``_values(rng)``."""

    name = "generator"

    def _setup_labels(self, shape, dims, coords, margins):
        self.shape = tuple(int(s) for s in shape)
        proto = Table(np.zeros(self.shape, dtype=np.int64), dims=dims, coords=coords,
                      margins=margins)
        self.dims, self.coords, self.margins = proto.dims, proto.coords, proto.margins

    def draw(self, rng: np.random.Generator) -> Table:
        """One original table drawn with ``rng``.

        Parameters
        ----------
        rng : numpy.random.Generator
            The source of randomness (same seed, same table).

        Returns
        -------
        Table
            A table of counts with the generator's dims, labels and published structure.
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator "
                            f"(np.random.default_rng(seed)), got {type(rng).__name__}")
        return Table(self._values(rng), dims=self.dims, coords=self.coords,
                     margins=self.margins, kind="count")

    def _values(self, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The generator as plain JSON-able data.

        Returns
        -------
        dict
            ``{"name": ..., its parameters..., "dims": [...]}``.
        """
        return {"name": self.name, **self._params(), "dims": list(self.dims)}

    def __repr__(self) -> str:
        return self.describe()


def _shape(shape) -> tuple:
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    try:
        out = tuple(V.integer(s, "shape entry", 1) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of positive integers, got {shape!r}") from None
    if not out:
        raise ValueError("shape must have at least one dimension, got ()")
    return out


class Poisson(Generator):
    """Independent Poisson cells with mean ``rate`` (a scalar, or an array of the table shape).

    Parameters
    ----------
    rate : float or array-like
        Cell means (> 0, finite).
    shape : tuple of int, optional
        Table shape; required for a scalar rate, must match an array rate.
    dims, coords, margins
        As for :class:`rk.Table`.
    """

    name = "poisson"

    def __init__(self, rate, shape=None, dims=None, coords=None, margins=None):
        r = np.asarray(rate, dtype=float)
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(f"Poisson rate must be finite and > 0, got {rate!r}")
        if shape is None:
            if r.ndim == 0:
                raise ValueError("a scalar Poisson rate needs shape=, e.g. shape=(4, 4)")
            shape = r.shape
        shape = _shape(shape)
        if r.ndim and r.shape != shape:
            raise ValueError(f"rate has shape {r.shape} but shape={shape}")
        self.rate = r
        self._setup_labels(shape, dims, coords, margins)

    def _values(self, rng):
        return rng.poisson(np.broadcast_to(self.rate, self.shape))

    def _params(self):
        return {"rate": self.rate.tolist(), "shape": list(self.shape)}

    def describe(self) -> str:
        """A short name with the parameters (for reports and ``repr``).

        Returns
        -------
        str
            E.g. ``Poisson(rate=2.0, shape=(3, 4))``.
        """
        r = float(self.rate) if self.rate.ndim == 0 else f"array{self.rate.shape}"
        return f"Poisson(rate={r}, shape={self.shape})"


class Multinomial(Generator):
    """A multinomial table: ``n`` units spread over the cells with probabilities ``probs``.

    ``probs`` (array of the table shape, nonnegative) must sum to 1 within 1e-9.

    Parameters
    ----------
    n : int
        The number of units, >= 0.
    probs : array-like
        Cell probabilities, of the table's shape; finite, >= 0, summing to 1.
    dims, coords, margins
        As for :class:`rk.Table`.
    """

    name = "multinomial"

    def __init__(self, n: int, probs, dims=None, coords=None, margins=None):
        self.n = V.integer(n, "n", 0)
        p = np.asarray(probs, dtype=float)
        if p.ndim == 0:
            raise ValueError("probs must be an array of the table shape, got a scalar")
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError(f"probs must be finite and >= 0, got {probs!r}")
        if abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(f"probs must sum to 1, got sum {p.sum()!r}")
        self.probs = p / p.sum()
        self._setup_labels(p.shape, dims, coords, margins)

    def _values(self, rng):
        return rng.multinomial(self.n, self.probs.ravel()).reshape(self.shape)

    def _params(self):
        return {"n": self.n, "probs": self.probs.tolist()}

    def describe(self) -> str:
        """A short name with the parameters (for reports and ``repr``).

        Returns
        -------
        str
            E.g. ``Multinomial(n=100, shape=(3, 4))``.
        """
        return f"Multinomial(n={self.n}, shape={self.shape})"


class Resample(Multinomial):
    """Multinomial resampling of a real table: ``n`` units (default: its total) with the
    table's cell proportions as probabilities; dims, labels and published totals kept.

    Parameters
    ----------
    table : Table or array-like
        A table of counts with a positive total.
    n : int, optional
        The number of units (default: the table's total).
    """

    name = "resample"

    def __init__(self, table, n: int | None = None):
        if not isinstance(table, Table):
            table = Table(table)
        if table.kind != "count":
            raise ValueError("Resample needs a table of counts")
        total = int(table.values.sum())
        if total == 0:
            raise ValueError("Resample needs a table with a positive total, got an all-zero table")
        self.table = table
        super().__init__(total if n is None else n, table.values / total, dims=table.dims,
                         coords=table.coords, margins=table.margins)

    def _params(self):
        return {"n": self.n, "table": self.table.values.tolist()}

    def describe(self) -> str:
        """A short name with the parameters (for reports and ``repr``).

        Returns
        -------
        str
            E.g. ``Resample(n=100, shape=(3, 4))``.
        """
        return f"Resample(n={self.n}, shape={self.shape})"
