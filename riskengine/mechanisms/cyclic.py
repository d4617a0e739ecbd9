"""Cyclic perturbation (Duncan & Roehrig, seed 003): protect, likelihood, exact inference.

Public parameters: cycles C_1..C_m (entries in {-1, 0, +1}, every published
margin zero), alpha, beta, gamma = 1 - alpha - beta, and the zero rule.

Protect: for k = 1..m in order draw A (alpha), B (beta) or C (gamma); A adds C_k,
B subtracts it, C does nothing; a blocked move leaves the table as it is.
``rule="negative"`` blocks a move that would make a cell negative;
``rule="any_zero"`` blocks both moves while any cell in the support of C_k is 0.

Likelihood: Pr(P | T) = sum over effective sign vectors e with
T + sum_k e_k C_k = P of prod_k q_k(e_k | S_{k-1}), with S_0 = T,
q(+1) = alpha [not blocked up], q(-1) = beta [not blocked down],
q(0) = gamma + alpha [blocked up] + beta [blocked down].  Linearly dependent
cycle sets reach one T by several e: all of them count.

Inference routes:

``"structured"``
    exact sum-product over the cycle signs on a clique tree (log space); linear
    in the number of cycles when the cycle-interaction graph is narrow (the
    diagonal design is a ring).
``"enumerate"``
    Numba streaming enumeration of all 3^m sign vectors with pruning
    (``kernels.cyclic_enum``), parallel over top-level branches.
``"gibbs"``
    Monte Carlo: single-sign Gibbs over the cycle signs with arviz diagnostics
    (:mod:`riskengine.inference.cyclic_gibbs`).
``"auto"``
    structured when the largest clique has <= 9 cycles, else enumeration when
    m <= 24, else the Monte Carlo route.

Both routes live in :mod:`riskengine.inference` (``cyclic_structured``,
``cyclic_enumerate``); they read the cycles and the coin from the release's mechanism.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .. import _validate as V
from .. import cycles as _cycles
from ..data.seeds import S003
from ..inference.cyclic import point_mass
from ..inference.cyclic_enumerate import CyclicEnumerate, enumerate_signs
from ..inference.cyclic_gibbs import CyclicGibbs
from ..inference.cyclic_structured import MAX_WIDTH, CyclicStructured, structured
from ..release import Release
from ..table import Table, count_table
from ..protocol import Example, Mechanism, register

__all__ = ["CyclicPerturbation"]

RULES = ("negative", "any_zero")


@register
class CyclicPerturbation(Mechanism):
    """Cyclic perturbation with a public cycle set and a three-sided coin.

    Parameters
    ----------
    cycles : array-like, shape (m, *table_shape)
        Entries in {-1, 0, +1}; every published margin of every cycle must be 0.
    alpha, beta : float
        Probabilities of adding (A) and subtracting (B) each cycle;
        gamma = 1 - alpha - beta.
    rule : {"negative", "any_zero"}
        Zero rule (see module docstring).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]),
    ...              dims=("v", "w"))
    >>> mech = rk.CyclicPerturbation(rk.cycles.diagonal(4), alpha=0.25, beta=0.25)
    >>> rel = mech.protect(t, rng=np.random.default_rng(1))
    >>> bool((rel.published.sum(axis=1) == t.values.sum(axis=1)).all())
    True
    """

    name = "cyclic"
    routes = (CyclicStructured(), CyclicEnumerate(), CyclicGibbs())
    #: seed 003's example: the diagonal design (n x n), alpha = beta = 1/4
    config_defaults: ClassVar[dict] = {"alpha": 0.25, "beta": 0.25}

    def __init__(self, cycles, alpha: float, beta: float, rule: str = "negative"):
        c = _cycles.entries(cycles)
        self.cycles = c
        self.cycles.setflags(write=False)
        self.alpha = V.probability(alpha, "alpha")
        self.beta = V.probability(beta, "beta")
        if self.alpha + self.beta > 1.0 + 1e-12:
            raise ValueError(f"alpha + beta must be <= 1, got alpha={self.alpha}, beta={self.beta}")
        self.gamma = max(0.0, 1.0 - self.alpha - self.beta)
        self.rule = V.choice(rule, "rule", RULES)

    @property
    def m(self) -> int:
        return self.cycles.shape[0]

    def _params(self) -> dict:
        return {"cycles": self.cycles.tolist(), "alpha": self.alpha, "beta": self.beta,
                "rule": self.rule}

    def describe(self) -> str:
        return (f"CyclicPerturbation(m={self.m}, alpha={self.alpha:g}, beta={self.beta:g}, "
                f"rule={self.rule!r})")

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """Seed 003's 4 x 4 table with the diagonal cycles and alpha = beta = 1/4; on
        another 2-D table the diagonal design (square) or the staircase; ``rng``: the
        staircase, alpha = 0.3, beta = 0.2 and a random zero rule.

        Parameters
        ----------
        table : rk.Table, optional
            A 2-D table (default: seed 003's 4 x 4 table); ``ValueError`` otherwise.
        rng : numpy.random.Generator, optional
            Draw the zero rule with it (and use the parameters above); None: seed 003's.

        Returns
        -------
        Example
            With the parameter ``design`` (a name of ``rk.cycles.DESIGNS``) for the cycles.
        """
        if table is None:
            table = Table(S003.ORIGINAL_2D, dims=("v", "w"),
                          coords={"v": [f"v_{i}" for i in range(1, 5)],
                                  "w": [f"w_{j}" for j in range(1, 5)]})
        if len(table.shape) != 2:
            raise ValueError(f"the cyclic example takes 2-D tables, got shape {table.shape}")
        if rng is not None:
            params = {"design": "staircase", "alpha": 0.3, "beta": 0.2,
                      "rule": str(rng.choice(RULES))}
        else:
            square = table.shape[0] == table.shape[1]
            params = {"design": "diagonal" if square else "staircase",
                      "alpha": S003.ALPHA, "beta": S003.BETA}
        return Example(cls, table, params)

    # --- protect ------------------------------------------------------------------
    def _blocked(self, state: np.ndarray, k: int):
        c = self.cycles[k]
        if self.rule == "any_zero":
            z = bool(np.any(state[c != 0] == 0))
            return z, z
        return bool(np.any(state[c < 0] == 0)), bool(np.any(state[c > 0] == 0))

    def protect(self, table, rng: np.random.Generator):
        """Perturb ``table`` (an rk.Table of counts) and return the Release.

        Parameters
        ----------
        table : rk.Table or array_like
            The original table of counts, of the cycles' table shape; every cycle keeps
            its published margins.
        rng : numpy.random.Generator
            The only source of randomness: one uniform draw per cycle, in order.

        Returns
        -------
        rk.Release
            The perturbed table in ``published`` and the table's totals (unchanged) in
            ``margins``.
        """
        table = count_table(table, self.describe())
        self._check_shape(table.shape, table.dims, table.margins)
        state = self._simulate(table.values, self._rng(rng))
        return Release(published=state, margins=table.totals(), mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def _simulate(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The perturbed table (no validation): one uniform draw per cycle, in order."""
        state = np.array(values, dtype=np.int64)
        u = rng.random(self.m)
        for k in range(self.m):
            bu, bd = self._blocked(state, k)
            if u[k] < self.alpha:
                if not bu:
                    state += self.cycles[k]
            elif u[k] < self.alpha + self.beta and not bd:
                state -= self.cycles[k]
        return state

    # --- validation ---------------------------------------------------------------
    def _check_shape(self, shape, dims, margins):
        if tuple(self.cycles.shape[1:]) != tuple(shape):
            raise ValueError(f"cycles must have shape (m, {', '.join(map(str, shape))}) to "
                             f"match the table, got {self.cycles.shape}")
        _cycles.keeps_margins(self.cycles, dims, margins)

    def validate_release(self, release) -> None:
        if release.kind != "count":
            raise ValueError("a cyclic-perturbation release must hold counts")
        if release.published is None:
            raise ValueError("a cyclic-perturbation release publishes the perturbed table "
                             "(published is None)")
        if np.isnan(np.asarray(release.published, dtype=float)).any():
            raise ValueError("a cyclic-perturbation release has no suppressed (NaN) cells")
        self._check_shape(release.shape, release.dims, release.structure or None)
        if release.groups:
            # the published subtotals are kept by every candidate only if every cycle
            # keeps them: then they are used (every candidate agrees with them)
            system = release.system()
            for k, c in enumerate(self.cycles):
                v = system.vector(c)
                for b in system.blocks:
                    if b.grouped is not None and np.any(v[b.slice] != 0):
                        raise ValueError(f"cycle {k} breaks the published subtotals "
                                         f"{b.label}: every cycle must keep every published "
                                         "total and subtotal")

    # --- likelihood -----------------------------------------------------------------
    def likelihood(self, release, original) -> float:
        """Pr(release | original): the sum over every sign vector that maps original to
        the published table of its path probability (0 when none does).

        Parameters
        ----------
        release : rk.Release
            A release of this mechanism.
        original : rk.Table or array_like of int
            A candidate original table, of the release's shape.

        Returns
        -------
        float
            Pr(release | original).

        Raises
        ------
        ValueError
            If ``original`` does not have the release's shape.
        """
        t = original.values if isinstance(original, Table) else V.count_array(original, "original")
        if t.shape != release.shape:
            raise ValueError(f"original has shape {t.shape}, the release {release.shape}")
        pb = point_mass(self, release, t)
        if pb.empty:
            return 0.0
        try:
            res = (structured(pb, count=False) if pb.width() <= MAX_WIDTH
                   else enumerate_signs(pb, count=False))
        except ValueError:           # no sign vector reaches the published table
            return 0.0
        return float(np.exp(res["log_evidence"])) if res["log_evidence"] > -np.inf else 0.0

    @classmethod
    def from_config(cls, spec: dict, shape=None, dims=None):
        """Parameters as in the constructor, or ``design`` (a name of ``rk.cycles.DESIGNS``,
        default ``"diagonal"``) instead of ``cycles``, built for the table's ``shape``;
        ``alpha`` and ``beta`` default to seed 003's 1/4.

        Parameters
        ----------
        spec : dict
            Parameter name -> value: ``cycles`` or ``design``, ``alpha``, ``beta``,
            ``rule``.
        shape : tuple, optional
            The table's shape, needed to build a ``design``.
        dims : tuple, optional
            Not used (accepted as for every mechanism).

        Returns
        -------
        CyclicPerturbation

        Raises
        ------
        ValueError
            On an unknown parameter, both ``design`` and ``cycles``, or a ``design``
            without ``shape``.
        """
        spec = dict(spec)
        valid = [*cls.parameters(), "design"]
        bad = [k for k in spec if k not in valid]
        if bad:
            raise ValueError(f"unknown parameter {bad[0]!r} for mechanism {cls.name!r}; valid: "
                             f"{', '.join(valid)}")
        design = spec.pop("design", None if "cycles" in spec else "diagonal")
        if design is not None:
            if "cycles" in spec:
                raise ValueError("give the cyclic mechanism either 'design' or 'cycles', "
                                 "not both")
            if shape is None:
                raise ValueError(f"design {design!r} is built for a table: its shape is needed")
            spec["cycles"] = _cycles.design(design, shape)
        return super().from_config(spec)
