"""Deprecated alias of :mod:`riskengine.tabular` (the tabular system T x = 0).

``riskengine.linear`` was renamed ``riskengine.tabular``; this alias keeps old imports
working for one release.  Import from :mod:`riskengine.tabular`.
"""

import sys

from . import tabular as _tabular

sys.modules[__name__] = _tabular
