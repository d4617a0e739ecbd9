"""The field's file formats, read and written (``rk.formats``): tau-Argus (``.rda``
metadata, ``.tab`` tables, ``.hst`` apriori files, ``.asc`` microdata, ``.arb`` batch
files, JJ files; ``.hrc`` hierarchies are :meth:`riskengine.Hierarchy.from_hrc`'s) and
sdcTable / sdcHierarchies / SSBtools (to-from hierarchies with signs, positional code
rules, ``sdcStatus`` result tables).  One module per format; every malformed line is a
:class:`FormatError` naming the file, the line, the value and the rule.

>>> import riskengine as rk
>>> meta = rk.formats.read_rda('Size "99"\\n  <RECODEABLE>\\n  <TOTCODE> "Total"\\n'
...                            'Sales\\n  <NUMERIC>\\n', kind="table")
>>> [v.name for v in meta.explanatory], [v.name for v in meta.numeric]
(['Size'], ['Sales'])
"""

from ._lines import FormatError
from .arb import Batch, Command, read_arb, write_arb
from .argus import ArgusTable, read_argus
from .asc import read_asc, write_asc
from .hst import read_hst, write_hst
from .jj import JJ, read_jj, write_jj
from .rda import Metadata, Variable, read_rda, write_rda
from .sdc import (
                  hierarchies_to_tofrom,
                  hierarchy_from_len,
                  read_sdc_status,
                  read_tofrom,
                  tofrom_hierarchies,
                  write_sdc_status,
)
from .sdc_result import read_sdc_result
from .status import STATUSES, TAUARGUS_CODES, from_letters, to_letters
from .tab import read_tab, write_tab

__all__ = [
                  "JJ",
                  "STATUSES",
                  "TAUARGUS_CODES",
                  "ArgusTable",
                  "Batch",
                  "Command",
                  "FormatError",
                  "Metadata",
                  "Variable",
                  "from_letters",
                  "hierarchies_to_tofrom",
                  "hierarchy_from_len",
                  "read_arb",
                  "read_argus",
                  "read_asc",
                  "read_hst",
                  "read_jj",
                  "read_rda",
                  "read_sdc_result",
                  "read_sdc_status",
                  "read_tab",
                  "read_tofrom",
                  "to_letters",
                  "tofrom_hierarchies",
                  "write_arb",
                  "write_asc",
                  "write_hst",
                  "write_jj",
                  "write_rda",
                  "write_sdc_status",
                  "write_tab",
]
