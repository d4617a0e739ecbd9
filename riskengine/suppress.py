"""Deprecated alias of :mod:`riskengine.mechanisms.suppression` (cell suppression).

``rk.suppress`` lives with its mechanism in :mod:`riskengine.mechanisms.suppression`
(which also offers ``METHODS`` and ``COSTS``); the solvers are in
:mod:`riskengine.magnitude.csp`.

This alias keeps old imports working for one release; import from
:mod:`riskengine.mechanisms.suppression`.
"""

import importlib
import sys

# by full name: a package attribute of the same name may be a function, not the module
sys.modules[__name__] = importlib.import_module(".mechanisms.suppression", __package__)
