"""Deprecated alias of :mod:`riskengine.magnitude.audit` (the LP interval audit).

``riskengine.audit`` moved to :mod:`riskengine.magnitude.audit` (``rk.audit``, the
Dataset) and :mod:`riskengine.magnitude.intervals` (the LP engine); the new module also
offers ``intervals`` and ``protection_tol``.

This alias keeps old imports working for one release; import from
:mod:`riskengine.magnitude.audit`.
"""

import importlib
import sys

# by full name: a package attribute of the same name may be a function, not the module
sys.modules[__name__] = importlib.import_module(".magnitude.audit", __package__)
