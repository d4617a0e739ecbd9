"""Controlled tabular adjustment (seeds 000, 002): the mechanism's public description.

CTA replaces the value of every sensitive cell by a *safe* value, at least its
protection level away from the original (down or up), and adjusts the other
cells, totals included, within their capacities so that the table adds up; the
adjustments are chosen by a MILP (``rk.cta``).

**What is public.**  Following the publish-the-mechanism principle, a release
states the method and every choice that does not derive from confidential
data: the sensitivity rule (as a policy, e.g. ``"PPercent(p=15)"``), the
objective (``"abs"`` / ``"relative"``), the quality constraints (``preserve`` and
the set of cells they are taken ``over``, the bound ``epsilon`` on ``|L(y)|``)
and how the directions were chosen (``"milp"`` / ``"ordering"``).  *Not* public:
which cells are sensitive, their protection levels (they are functions of the
respondents' contributions) and the capacities (functions of the confidential
cell values, or of measurement-error estimates): publishing them would tell an
intruder which cells moved and by at least how much.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as V
from . import Mechanism, register

OBJECTIVES = ("abs", "relative")
DIRECTIONS = ("milp", "ordering")
_DIRECTIONS_RELEASE = DIRECTIONS + ("given",)
PRESERVE = ("mean", "variance")
OVER = ("interior", "sensitive", "all")


@register
class ControlledTabularAdjustment(Mechanism):
    """Controlled tabular adjustment with its public parameters.

    Parameters
    ----------
    rule : str, optional
        The sensitivity rule that defined the sensitive cells (a description).
    objective : {"abs", "relative"}
    preserve : sequence of {"mean", "variance"}
    over : {"interior", "sensitive", "all"}
        The cells over which ``preserve`` holds (``"custom"`` when a mask was used).
    directions : {"milp", "ordering", "given"}
    epsilon : float
        Bound on ``|L(y)|`` when ``"variance"`` is preserved.

    Examples
    --------
    >>> import riskengine as rk
    >>> m = rk.ControlledTabularAdjustment(rule="PPercent(p=15)", preserve=["mean"])
    >>> rk.mechanisms.mechanism_from_dict(m.to_dict()).to_dict() == m.to_dict()
    True
    """

    name = "cta"
    additive = True

    def __init__(self, rule: str | None = None, objective: str = "abs", preserve=(),
                 over: str = "interior", directions: str = "milp", epsilon: float = 0.0):
        self.rule = None if rule is None else str(rule)
        self.objective = V.choice(objective, "objective", OBJECTIVES)
        if isinstance(preserve, str):
            preserve = (preserve,)
        self.preserve = tuple(V.choice(p, "preserve", PRESERVE) for p in preserve)
        self.over = V.choice(over, "over", OVER + ("custom",))
        self.directions = V.choice(directions, "directions", _DIRECTIONS_RELEASE)
        eps = float(epsilon)
        if not (np.isfinite(eps) and eps >= 0):
            raise ValueError(f"epsilon must be a finite number >= 0, got epsilon={epsilon!r}")
        self.epsilon = eps

    def _params(self) -> dict:
        return {"rule": self.rule, "objective": self.objective, "preserve": list(self.preserve),
                "over": self.over, "directions": self.directions, "epsilon": self.epsilon}

    def protect(self, table, rng=None, *, sensitive, protection, capacity, upper=None):
        """The adjusted release (``rng`` is not used: CTA is deterministic)."""
        from ..cta import cta
        if self.over == "custom":
            raise ValueError("over='custom' describes a release; protect with rk.cta(over=mask)")
        if self.directions == "given":
            raise ValueError("directions='given' describes a release; protect with "
                             "rk.cta(directions=array)")
        return cta(table, sensitive, protection, capacity, objective=self.objective,
                   preserve=self.preserve, over=self.over, directions=self.directions,
                   epsilon=self.epsilon, upper=upper, rule=self.rule).release

    def validate_release(self, release) -> None:
        if release.published is None or np.isnan(np.asarray(release.published, float)).any():
            raise ValueError("a CTA release publishes every interior cell (no NaN, not None)")
