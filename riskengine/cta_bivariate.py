"""Deprecated alias of :mod:`riskengine.mechanisms.cta` (bivariate CTA).

``rk.cta_bivariate`` and ``BivariateCTAResult`` live with their mechanism in
:mod:`riskengine.mechanisms.cta` (which also offers ``bivariate_stats``); the
alternating LPs are in :mod:`riskengine.magnitude.cta_bivariate`.

This alias keeps old imports working for one release; import from
:mod:`riskengine.mechanisms.cta`.
"""

import importlib
import sys

# by full name: a package attribute of the same name may be a function, not the module
sys.modules[__name__] = importlib.import_module(".mechanisms.cta", __package__)
