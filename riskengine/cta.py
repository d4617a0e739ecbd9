"""Deprecated alias of :mod:`riskengine.mechanisms.cta` (controlled tabular adjustment).

``rk.cta`` and ``CTAResult`` live with their mechanism in
:mod:`riskengine.mechanisms.cta` (which also offers ``cta_stats``); the MILP is in
:mod:`riskengine.magnitude.cta_milp`.

This alias keeps old imports working for one release; import from
:mod:`riskengine.mechanisms.cta`.
"""

import importlib
import sys

# by full name: a package attribute of the same name may be a function, not the module
sys.modules[__name__] = importlib.import_module(".mechanisms.cta", __package__)
