"""Random (unrestricted) rounding to base B: every cell and every total on its own.

Protect: each interior cell and each total of the table's structure goes to one of its
two adjacent multiples of B independently, up with probability (x mod B) / B (multiples
stay: the rounding is unbiased).  The released totals are rounded totals of the original,
not sums of the rounded cells: the table does not add up.

Likelihood (exact, DESIGN.md): the product over the published cells and totals of those
probabilities.  Every entry is a window of 2B - 1 original values around its published
multiple with that log-probability; routes: the table DP (2-D with every total), the
3-D enumerator (every 2-way margin), and the line route (:class:`Line`: 1-D tables, with
or without their total, by a chain over the running sum; tables of any shape that publish
no total, whose cells are then independent).  The line route serves the noisy counts of
:mod:`.noise` too.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[3, 7], [12, 1]]), dims=("v", "w"))
>>> rel = rk.RandomRounding(5).protect(t, np.random.default_rng(0))
>>> bool((rel.published % 5 == 0).all()), rel.margins[()] % 5 == 0
(True, np.True_)
"""

from __future__ import annotations

import numpy as np

from .. import _validate as V
from .._budget import fmt_number
from ..inference import windows as win
from ..inference.enumerate_3d import Enumerate3D
from ..inference.gibbs import BlockGibbs
from ..inference.line import Line
from ..inference.linked import LinkedDP
from ..inference.linked_gibbs import LinkedGibbs
from ..inference.table_dp import TableDP
from ..protocol import Example, Mechanism, register
from ..release import Release
from ..table import count_table
from ._examples import counts_3x3
from .rounding import check_multiples, log_round_prob

__all__ = ["RandomRounding"]


def round_randomly(x, B: int, rng: np.random.Generator) -> np.ndarray:
    """Each entry of ``x`` to a multiple of B, up with probability (x mod B) / B."""
    x = np.asarray(x, dtype=np.int64)
    rem = np.mod(x, B)
    up = rng.random(x.shape) < rem / B
    return x - rem + np.where(up, B, 0)


def entry_windows(release) -> win.EntryWindows:
    """Every published cell and total: its 2B - 1 possible originals with the exact log
    probability of rounding to the published multiple.

    Parameters
    ----------
    release : rk.Release
        A random-rounding release (its mechanism's ``base`` is read).

    Returns
    -------
    riskengine.inference.windows.EntryWindows
        The windows of the interior and of every published total (hard ends: the
        likelihood is zero past them).
    """
    B = release.mechanism.base
    lo, lw = {}, {}
    for keep, val in [(release.dims, release.published), *release.margins.items()]:
        lo[keep], lw[keep] = win.around(val, B, lambda v, p: log_round_prob(v, p, B))
    # every window is the whole of its entry's likelihood: no end is cut
    return win.EntryWindows(release.dims, release.shape, lo, lw, cut={})


# --- 1-D tables: a chain over the running sum of the cells -----------------------------


@register
class RandomRounding(Mechanism):
    """Unrestricted random rounding of every cell and every total to base ``base``.

    Parameters
    ----------
    base : int >= 2
        The rounding base B: every cell and total is published as a multiple of it.
    """

    name = "random_rounding"
    additive = False            # rounded totals are not the sums of the rounded cells
    aliases = ("randomrounding",)
    windows = staticmethod(entry_windows)
    # every route refuses a base whose windows alone exceed the memory budget first
    set_routes = (LinkedDP(), LinkedGibbs())
    routes = (TableDP(), Enumerate3D(), Line(), BlockGibbs())

    def __init__(self, base: int):
        if isinstance(base, bool):
            raise TypeError(f"base must be an integer, got base={base!r}")
        self.base = V.integer(base, "base", 2)
        if self.base >= 2 ** 62:        # counts are exact int64 (rk.Table, rk.Release)
            raise ValueError(f"base must be below 2**62 (counts and their roundings are "
                             f"exact 64-bit integers), got base={fmt_number(self.base)}")

    def _params(self) -> dict:
        return {"base": self.base}

    def window_cost(self, release) -> tuple:
        """The memory of the entry windows the base sets (checked before they are made).

        Parameters
        ----------
        release : rk.Release
            A random-rounding release.

        Returns
        -------
        tuple
            ``(what, bytes, detail)`` (:func:`riskengine.inference.windows.around_cost`).
        """
        return win.around_cost(release, self.base, type(self).__name__)

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts rounded to base 3; ``rng``: base 2 to 4.

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Draw the base from 2 to 4 with it; None: base 3.

        Returns
        -------
        Example
        """
        table = counts_3x3() if table is None else table
        return Example(cls, table, {"base": 3 if rng is None else int(rng.integers(2, 5))})

    def protect(self, table, rng: np.random.Generator):
        """Round every cell and every published total of ``table`` independently.

        Parameters
        ----------
        table : rk.Table, rk.TableSet or array_like
            The original table of counts (a hierarchical table or a TableSet: every
            published cell of every level and table, each once; an rk.TableSetRelease).
        rng : numpy.random.Generator
            The only source of randomness (same state, same release).

        Returns
        -------
        rk.Release
            The rounded cells in ``published`` and the rounded totals in ``margins``.
        """
        from ..table_set import is_structure, protect_each_cell
        if is_structure(table):         # every cell of every level / table, once
            return protect_each_cell(table, self, rng)
        table = count_table(table, self.describe())
        rng = self._rng(rng)
        B = self.base
        cells = round_randomly(table.values, B, rng)
        margins = {k: round_randomly(v, B, rng) for k, v in table.totals().items()}
        return Release(published=cells, margins=margins, mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a random-rounding release publishes a rounded count table")
        if np.isnan(np.asarray(release.published, dtype=float)).any():
            raise ValueError("a random-rounding release has no suppressed (NaN) cells")
        check_multiples(release, self.base)
        if release.groups:
            raise ValueError("random-rounding releases with subtotals are not supported")
