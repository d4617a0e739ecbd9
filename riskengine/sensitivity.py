"""Deprecated alias of :mod:`riskengine.magnitude.sensitivity` (linear sensitivity measures).

``riskengine.sensitivity`` moved to :mod:`riskengine.magnitude.sensitivity` (still
``rk.sensitivity``).

This alias keeps old imports working for one release; import from
:mod:`riskengine.magnitude.sensitivity`.
"""

import importlib
import sys

# by full name: a package attribute of the same name may be a function, not the module
sys.modules[__name__] = importlib.import_module(".magnitude.sensitivity", __package__)
