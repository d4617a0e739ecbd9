"""An sdcTable result read whole: the cells of ``getInfo(prob, "finalData")`` (every dim's
code, the value columns, ``sdcStatus``) with the dims' hierarchies become the same
:class:`~riskengine._formats.argus.ArgusTable` a tau-Argus table becomes, its statuses in
riskengine's vocabulary (``u`` primary, ``x`` secondary, ``z`` forced safe, ``s`` safe), so
that its pattern is audited -- and, for counts, its posterior computed -- as any other.
"""

from __future__ import annotations

import pandas as pd

from ..hierarchy import Hierarchy
from ._lines import FormatError
from .argus import ArgusTable, _assemble
from .rda import Metadata, Variable
from .sdc import read_sdc_status
from .status import from_letters

__all__ = ["read_sdc_result"]


def read_sdc_result(source, dims, hierarchies=None, value: str = "freq", total="Total",
                    counts: bool | None = None, additivity: str = "check",
                    encoding: str = "utf-8") -> ArgusTable:
    """Read an sdcTable result table (its cells, values and ``sdcStatus``).

    Parameters
    ----------
    source : str, os.PathLike or pandas.DataFrame
        The result: one row per cell (totals included), the dims' codes, the value
        columns and ``sdcStatus``.
    dims : sequence of str
        The dims' columns.
    hierarchies : dict, optional
        ``{dim: rk.Hierarchy}`` (e.g. from ``rk.formats.tofrom_hierarchies`` or
        ``rk.Hierarchy.from_levels``); a dim without one is flat (its codes, and the total
        ``total``).
    value : str, default "freq"
        The column published (``"freq"``: the counts; or a numeric variable).
    total : str, default "Total"
        The total's code of the flat dims (a hierarchy names its own).
    counts : bool, optional
        Whether ``value`` holds counts (default: ``value == "freq"``).
    additivity : {"check", "compute"}, default "check"
        Totals must add up, or are recomputed from the cells.
    encoding : str, default "utf-8"
        The CSV's encoding.

    Returns
    -------
    ArgusTable
        The table (every level), ``cells`` with ``status`` from ``sdcStatus`` and
        ``status_code`` the letter.

    Examples
    --------
    >>> import riskengine as rk
    >>> at = rk.formats.read_sdc_result(
    ...     "g,freq,sdcStatus\\nTotal,9,s\\na,1,u\\nb,3,x\\nc,5,s\\n", ["g"])
    >>> at.cells.status.tolist()
    ['primary', 'secondary', 'safe', 'safe']
    """
    dims = [str(d) for d in dims]
    frame = read_sdc_status(source, dims, encoding=encoding)
    name = str(source) if not isinstance(source, pd.DataFrame) else "<frame>"
    if value not in frame.columns:
        raise FormatError(name, None, f"no column {value!r}; the result's columns are "
                          f"{list(frame.columns)}")
    counts = (value == "freq") if counts is None else bool(counts)
    hierarchies = dict(hierarchies or {})
    unknown = set(hierarchies) - set(dims)
    if unknown:
        raise ValueError(f"hierarchies given for {sorted(unknown)}, which are not dims {dims}")
    hier, leaves, variables = {}, {}, []
    for d in dims:
        h = hierarchies.get(d)
        if h is not None:
            if not isinstance(h, Hierarchy):
                raise TypeError(f"hierarchies[{d!r}] must be an rk.Hierarchy, got "
                                f"{type(h).__name__}")
            hier[d] = h
            leaves[d] = list(h.leaves)
            tot = str(h.total)
        else:
            seen = []
            for c in frame[d].tolist():
                if c != total and c not in seen:
                    seen.append(c)
            leaves[d] = seen
            tot = total
        variables.append(Variable(name=d, start=None, width=None, missing=(),
                                  roles=frozenset({"recodeable"}), totcode=tot))
    variables.append(Variable(name=value, start=None, width=None, missing=(),
                              roles=frozenset({"frequency" if counts else "numeric"})))
    meta = Metadata(variables=tuple(variables), separator=",", kind="table", name=name)
    lines = frame.copy()
    if "line" not in lines:
        lines["line"] = range(2, len(lines) + 2)      # the CSV's lines after the header
    status_letters = lines.pop("sdcStatus").tolist()
    keep = dims + [value, "line"]
    lines = lines[keep]
    at = _assemble(meta, lines, tuple(dims), None if counts else value, counts,
                   value if counts else None, value, hier, leaves, name, additivity)
    st = dict(zip(lines["line"], from_letters(status_letters, "sdctable")))
    letters = dict(zip(lines["line"], status_letters))
    cells = at.cells.copy()
    cells["status"] = [st.get(ln, "safe") if ln > 0 else "safe" for ln in cells["line"]]
    cells["status_code"] = [letters.get(ln) for ln in cells["line"]]
    return ArgusTable(at.table, cells, meta, at.response, at.explanatory, None)
