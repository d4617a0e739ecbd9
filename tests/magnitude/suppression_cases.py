"""Suppression test cases and the CSP instance rk.suppress builds, shared by the tests of
the suppression solvers (tests/magnitude/test_suppress.py, test_csp.py).  Not references:
they build inputs, partly with riskengine itself.

* :func:`random_case` -- a random table with sensitive cells and protections of about
  30 % of their values;
* :func:`capped` -- protections no larger than what suppressing every cell could give
  (riskengine's LP audit of the fully suppressed table);
* :func:`csp_problem` -- the problem :func:`riskengine.magnitude.csp.find_pattern` builds
  (value costs, zeros never complements), by flows or by LPs.
"""

import numpy as np

import riskengine as rk
from riskengine.magnitude.csp.network import network_for
from riskengine.magnitude.csp.problem import make_problem
from riskengine.tabular import tabular_system


def random_case(rng, shape, n_sens, zeros=0.0):
    x = rng.integers(1, 40, shape).astype(float)
    x[rng.random(shape) < zeros] = 0
    sens = np.zeros(shape, bool)
    pos = rng.permutation(np.flatnonzero(x.ravel() > 0))[:n_sens]
    sens.ravel()[pos] = True
    prot = np.where(sens, np.floor(0.3 * x) + 1, 0.0)
    prot = np.minimum(prot, x)
    return x, sens, prot


def capped(x, prot, dims):
    """Protection no larger than what suppressing every cell could give (in 3-D the
    2-way margins can pin a cell whatever is suppressed)."""
    t = rk.Table(x, dims=dims)
    a = rk.audit(rk.Release(np.full(x.shape, np.nan), margins=t.totals(),
                            mechanism=rk.CellSuppression(), dims=dims))
    room = np.minimum(x - a["lower"].values, a["upper"].values - x)
    return np.minimum(prot, np.floor(room + 1e-9))


def csp_problem(x, sens, plo, phi, dims, w=None, suppress_totals=False, route="auto"):
    """The CSP instance rk.suppress builds (value costs, zeros never complements);
    ``route``: flows or LPs (:func:`riskengine.magnitude.csp.network.network_for`)."""
    system = tabular_system(dims, x.shape)
    xv = system.vector(x).astype(float)
    n_int = system.n_interior
    full = np.zeros(system.n_var, bool)
    full[:n_int] = sens.ravel()
    lo = np.zeros(system.n_var)
    hi = np.zeros(system.n_var)
    lo[:n_int], hi[:n_int] = plo.ravel(), phi.ravel()
    cand = (xv > 0) | full
    if not suppress_totals:
        cand[n_int:] = False
    w = xv if w is None else w
    return make_problem(system.A, xv, full, lo, hi, w, cand | full, system.labels(),
                        net=network_for(system.A, route))
