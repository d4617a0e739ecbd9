"""Controlled rounding to base B (seeds 003, 004): protect, likelihood, exact inference.

Every interior cell and every published total goes to one of its two adjacent
multiples of B (multiples stay: zero-restricted), and the rounded table adds up.

Protect (2-D tables with all totals; 3-D tables with every 2-way and 1-way margin and
the grand total: Ernst's plane stacking or a MILP, see ``_rounding3d``; hierarchical
tables and table sets: a MILP over every level and table at once, which also decides
whether a controlled rounding exists, see ``_rounding_sets``):

``"unbiased"``
    Cox (1987): on the table extended by its totals (totals negated, so every row
    and column sums to zero), repeatedly take an alternating cycle of
    nonmultiples, compute how far it can move up (d+) and down (d-) before an
    entry reaches a multiple, and move up with probability d-/(d+ + d-), down
    otherwise.  Each entry's expectation is its original value.
``"optimal"``
    Cox & Ernst (1982): the transportation formulation solved with HiGHS
    (``scipy.optimize.milp``), minimising the total absolute distortion of the
    interior cells; integral by total unimodularity (the LP bound is attained).

Inference for a rounded release R: candidates are all nonnegative integer
tables that add up and whose every interior cell and every published total is
within B - 1 of its published value (a multiple of B can only have come from
itself).  Likelihoods: ``"feasible"`` (constant on that set: seed 003's
set-valued analysis) or ``"unbiased"`` (product over every entry, totals
included, of its marginal rounding probability: t rounds up with probability
(t mod B)/B).  The joint law of Cox's procedure is path-dependent; the
``"unbiased"`` likelihood is its product-of-marginals approximation.
Every entry is a window of 2B - 1 values around its published one; routes: the exact
2-D table DP, and for 3-D releases the streaming enumerator.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as V
from .._budget import fmt_number
from ..inference import windows as win
from ..inference.enumerate_3d import Enumerate3D
from ..inference.gibbs import BlockGibbs
from ..inference.linked import LinkedDP
from ..inference.linked_gibbs import LinkedGibbs
from ..inference.table_dp import TableDP
from ..protocol import Example, Mechanism, register
from ..release import Release
from ..table import count_table
from ._cox import cox_unbiased, extended, optimal
from ._examples import counts_3x3
from ._rounding3d import protect_3d

__all__ = ["ControlledRounding"]

METHODS = ("unbiased", "optimal")
LIKELIHOODS = ("feasible", "unbiased")

_UNBIASED_NOTE = ("likelihood = product of per-entry marginal rounding probabilities; Cox's "
                  "procedure's joint law is path-dependent")


def log_round_prob(t, R, B):
    """log Pr(t rounds to R) under unbiased rounding: up with probability (t mod B)/B."""
    t = np.asarray(t)
    rem = np.mod(t, B)
    p = np.where(rem == 0, (R == t).astype(float),
                 np.where(R == t - rem + B, rem / B, np.where(R == t - rem, 1 - rem / B, 0.0)))
    with np.errstate(divide="ignore"):
        return np.log(p)


def entry_windows(release) -> win.EntryWindows:
    """Every interior cell and published total: the 2B - 1 values within B - 1 of its
    published multiple, flat (``"feasible"``) or weighted by the marginal rounding
    probability (``"unbiased"``).

    Parameters
    ----------
    release : rk.Release
        A controlled-rounding release (its mechanism's ``base`` and ``likelihood`` are
        read).

    Returns
    -------
    riskengine.inference.windows.EntryWindows
        The windows of the interior and of every published total; ``approximation``
        names the product-of-marginals likelihood when it is ``"unbiased"``.
    """
    mech = release.mechanism
    B = mech.base
    loglik = (lambda v, p: log_round_prob(v, p, B)) if mech.likelihood == "unbiased" else None
    lo, lw = {}, {}
    for keep, val in [(release.dims, release.published), *release.margins.items()]:
        lo[keep], lw[keep] = win.around(val, B, loglik)
    return win.EntryWindows(release.dims, release.shape, lo, lw,
                            _UNBIASED_NOTE if mech.likelihood == "unbiased" else "")


def check_multiples(release, B: int, why: str = "") -> None:
    """Every published cell and total is a multiple of the rounding base ``B`` (else an
    error naming the first value that is not, with ``why``)."""
    for name, arr in [("published", release.published)] + [
            (f"margin {k}", v) for k, v in release.margins.items()]:
        a = np.atleast_1d(np.asarray(arr))
        bad = a % B != 0
        if bad.any():
            raise ValueError(f"{name} value {int(a[bad][0])} is not a multiple of the "
                             f"rounding base {B}{why}")


@register
class ControlledRounding(Mechanism):
    """Controlled rounding of a count table to base ``base``.

    Parameters
    ----------
    base : int >= 2
        The rounding base B: every cell and total is published as a multiple of it.
    method : {"unbiased", "optimal"}
        Protection procedure (Cox 1987 random rounding; Cox-Ernst optimal rounding).
    zero_restricted : bool
        Multiples of the base (zeros included) stay as they are.  Only ``True`` is
        implemented.
    likelihood : {"feasible", "unbiased"}
        Likelihood used for inference (see module docstring).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> t = rk.Table(np.array([[37, 3, 30], [1, 16, 23]]), dims=("v", "w"))
    >>> rel = rk.ControlledRounding(base=5).protect(t, np.random.default_rng(0))
    >>> bool((rel.published % 5 == 0).all())
    True

    A 3-D table (every 2-way and 1-way margin and the grand total rounded too):

    >>> x = np.array([[[4, 1], [2, 5]], [[1, 1], [7, 2]]])
    >>> rel = rk.ControlledRounding(3, method="optimal").protect(rk.Table(x, dims=("i", "j", "k")))
    >>> rel.published.tolist()
    [[[3, 0], [3, 6]], [[3, 0], [6, 3]]]
    >>> rk.count_candidates(rel)
    6551
    """

    name = "controlled_rounding"
    additive = True
    aliases = ("rounding",)
    windows = staticmethod(entry_windows)
    # every route refuses a base whose windows alone exceed the memory budget first
    routes = (TableDP(), Enumerate3D(), BlockGibbs())
    # a hierarchical table's or a table set's rounding: a product over its published cells
    # (each within B - 1 of its value), over the finest cells
    set_routes = (LinkedDP(), LinkedGibbs())

    def __init__(self, base: int, method: str = "unbiased", zero_restricted: bool = True,
                 likelihood: str = "feasible"):
        self.base = V.integer(base, "base", 2)
        if self.base >= 2 ** 62:        # counts are exact int64 (rk.Table, rk.Release)
            raise ValueError(f"base must be below 2**62 (counts and their roundings are "
                             f"exact 64-bit integers), got base={fmt_number(self.base)}")
        self.method = V.choice(method, "method", METHODS)
        if zero_restricted is not True:
            raise ValueError("zero_restricted=False (multiples may move to a neighbouring "
                             "multiple) is not implemented; use zero_restricted=True")
        self.zero_restricted = True
        self.likelihood = V.choice(likelihood, "likelihood", LIKELIHOODS)

    def _params(self) -> dict:
        return {"base": self.base, "method": self.method, "zero_restricted": True,
                "likelihood": self.likelihood}

    def window_cost(self, release) -> tuple:
        """The memory of the entry windows the base sets (checked before they are made).

        Parameters
        ----------
        release : rk.Release
            A controlled-rounding release.

        Returns
        -------
        tuple
            ``(what, bytes, detail)`` (:func:`riskengine.inference.windows.around_cost`).
        """
        return win.around_cost(release, self.base, type(self).__name__)

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts rounded to base 3; ``rng``: base 2 or 3,
        the optimal method and either likelihood.

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Draw the base (2 or 3) and the likelihood with it; None: base 3 and the
            defaults.

        Returns
        -------
        Example
        """
        table = counts_3x3() if table is None else table
        params = {"base": 3} if rng is None else {
            "base": int(rng.integers(2, 4)), "method": "optimal",
            "likelihood": str(rng.choice(LIKELIHOODS))}
        return Example(cls, table, params)

    # --- protect -------------------------------------------------------------------
    def protect(self, table, rng: np.random.Generator | None = None):
        from ..table_set import is_structure
        if is_structure(table):          # hierarchies or a table set: one MILP, every level
            from ._rounding_sets import protect_structure
            return protect_structure(self, table, rng)
        table = count_table(table, self.describe())
        if table.ndim == 3:
            return protect_3d(self, table, rng)
        if table.ndim != 2:
            raise ValueError(f"controlled rounding is implemented for 2-D and 3-D tables with "
                             f"all totals; got a {table.ndim}-D table")
        if set(table.margins) != {(table.dims[0],), (table.dims[1],), ()}:
            raise ValueError("controlled rounding needs every total of the 2-D table published")
        M = extended(table.values)
        if self.method == "unbiased":
            Mr = cox_unbiased(M, self.base, self._rng(rng))
        else:
            Mr = optimal(M, self.base)
        r, c = table.shape
        d0, d1 = table.dims
        return Release(published=Mr[:r, :c], margins={(d0,): -Mr[:r, c], (d1,): -Mr[r, :c],
                                                       (): Mr[r, c]},
                       mechanism=self, dims=table.dims, coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a controlled-rounding release publishes a rounded count table")
        pub = np.asarray(release.published, dtype=float)
        if np.isnan(pub).any():
            raise ValueError("a controlled-rounding release has no suppressed (NaN) cells")
        check_multiples(release, self.base, ": a controlled rounding publishes multiples")
