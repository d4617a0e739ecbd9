"""The small tables the mechanisms' examples share (:meth:`riskengine.protocol.Mechanism.example`).

A 3 x 3 table of small counts (one zero): every exact route answers in well under a
second, and the command line reads it as the CSV ``v\\w,a,b,c / x,3,0,2 / ...``.
"""

from __future__ import annotations

import numpy as np

from ..table import Table

#: the shared example: rows x, y, z of dim v; columns a, b, c of dim w
COUNTS_3X3 = ((3, 0, 2), (1, 4, 1), (2, 2, 5))


def counts_3x3() -> Table:
    """:data:`COUNTS_3X3` as a labelled table (dims v, w)."""
    return Table(np.array(COUNTS_3X3), dims=("v", "w"),
                 coords={"v": ["x", "y", "z"], "w": ["a", "b", "c"]})


def smallest_cell(table) -> np.ndarray:
    """A mask of the first cell holding the table's smallest value (a sensitive cell)."""
    values = np.asarray(table.values)
    mask = np.zeros(values.size, bool)
    mask[int(np.argmin(values))] = True
    return mask.reshape(values.shape)
