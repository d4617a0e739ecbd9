"""Margins only (seed 003): publish the totals, nothing of the interior.

Candidates: every nonnegative integer table with the published totals.  The posterior
under ``Uniform()`` puts equal weight on each; under ``Poisson(rate)`` the weight is
prod rate^t / t!, i.e. the (multivariate) hypergeometric law given the margins.  Every
total is an exact window, every cell a flat window up to the smallest total containing
it; routes: the exact table DP for 2-D tables with all totals, the grouped DP for 2-D
tables with one level of subtotals, the streaming enumerator for 3-D tables with every
2-way margin.  Fréchet bounds and exact ranges: ``rk.frechet_bounds``,
``rk.exact_bounds`` (:mod:`riskengine.inference.bounds`).
"""

from __future__ import annotations

import numpy as np

from ..inference import windows as win
from ..inference.bounds import exact_bounds, frechet_bounds
from ..inference.enumerate_3d import Enumerate3D
from ..inference.fiber import Fiber
from ..inference.gibbs import BlockGibbs
from ..inference.grouped import Grouped2D
from ..inference.halves import Halves
from ..inference.hypergeometric import Hypergeometric
from ..inference.sis_posterior import ImportanceSampling
from ..inference.table_dp import TableDP
from ..inference.three_by_three import ThreeByThree
from ..protocol import Example, Mechanism, register
from ..release import Release
from ..table import count_table
from ._examples import counts_3x3

__all__ = ["MarginsOnly", "exact_bounds", "frechet_bounds"]


def entry_windows(release) -> win.EntryWindows:
    """Every published total exact; every cell free up to the totals containing it.

    Parameters
    ----------
    release : rk.Release
        A margins-only release.

    Returns
    -------
    riskengine.inference.windows.EntryWindows
        Each published total's exact window (its value) and each cell's flat window
        from 0 to the smallest total containing it.

    Raises
    ------
    ValueError
        If a cell is in no published total (its value is unbounded).
    """
    return win.from_published(release, {k: win.exact(v) for k, v in release.margins.items()})


@register
class MarginsOnly(Mechanism):
    """Release only the published totals of a count table.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]])))
    >>> rk.count_candidates(rel)
    4
    """

    name = "margins_only"
    additive = True
    aliases = ("margins",)
    windows = staticmethod(entry_windows)
    routes = (Fiber(), ThreeByThree(), Halves(draws=TableDP()), TableDP(),
              Hypergeometric(count_by=TableDP()), Grouped2D(), Enumerate3D(),
              ImportanceSampling(), BlockGibbs())

    def _params(self) -> dict:
        return {}

    def describe(self) -> str:
        return "MarginsOnly()"

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts (no parameters to vary).

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Not used: the mechanism has no parameters.

        Returns
        -------
        Example
        """
        return Example(cls, counts_3x3() if table is None else table)

    def protect(self, table, rng=None):
        """The release: the table's totals, no interior (``rng`` is not used).

        Parameters
        ----------
        table : rk.Table or array_like
            The original table of counts.
        rng : numpy.random.Generator, optional
            Not used.

        Returns
        -------
        rk.Release
            ``published=None``; ``margins``: the table's totals (``table.totals()``).
        """
        table = count_table(table, self.describe())
        return Release(published=None, margins=table.totals(), mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.published is not None and not np.isnan(
                np.asarray(release.published, float)).all():
            raise ValueError("a margins-only release publishes no interior values "
                             "(published must be None)")
        if not release.margins:
            raise ValueError("a margins-only release needs its published totals (margins)")
