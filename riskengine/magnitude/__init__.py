"""The magnitude-table wing (layer L2): solvers over the tabular system ``T x = 0``.

Magnitude tables (sales, employment, ...) are protected by suppressing cells or by
adjusting them; these modules hold the mathematics, on plain vectors over every cell
of the tabular system (:mod:`riskengine.tabular`: interior, totals, subtotals):

* :mod:`.contributions` -- a magnitude table with each cell's sorted respondent
  contributions (``rk.contributions``);
* :mod:`.sensitivity` -- the linear sensitivity measures and the protection each cell
  needs (``rk.sensitivity``); :mod:`.protection` reads ``sensitive`` / ``protection``
  inputs for suppression and the audit alike;
* :mod:`.intervals` -- the LP interval engine (the feasible interval of every
  suppressed cell) and :mod:`.audit`, the audit Dataset built on it (``rk.audit``);
* :mod:`.csp` -- the complementary suppression problem: :func:`.csp.find_pattern`
  returns the pattern as vectors (``rk.suppress`` builds the release);
* :mod:`.cta_milp`, :mod:`.cta_bivariate` -- controlled tabular adjustment as a MILP,
  and its bivariate alternating LPs (``rk.cta``, ``rk.cta_bivariate`` build the release);
* :mod:`._highs` -- persistent HiGHS models shared by the LP solvers.

The user-facing functions live with their mechanisms (:mod:`riskengine.mechanisms`):
mechanism -> solver is the only direction; nothing here imports a mechanism, the
count-table inference or the uses.  Nothing is re-exported here (several functions
share their module's name, and a re-export would hide the module).
"""
