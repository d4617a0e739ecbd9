"""Deprecated alias of :mod:`riskengine.magnitude.contributions` (magnitude tables from microdata).

``riskengine.contributions`` moved to :mod:`riskengine.magnitude.contributions`
(``rk.contributions`` and ``rk.Contributions`` are unchanged).

This alias keeps old imports working for one release; import from
:mod:`riskengine.magnitude.contributions`.
"""

import importlib
import sys

# by full name: a package attribute of the same name may be a function, not the module
sys.modules[__name__] = importlib.import_module(".magnitude.contributions", __package__)
