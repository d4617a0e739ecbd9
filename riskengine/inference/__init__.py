"""Inference routes (layer L2): what can be inferred about the original table.

Each route is a :class:`riskengine.protocol.Route`: it reads one call's
:class:`~riskengine.protocol.Plan` (the release, the prior, the budget and the plain
inputs the mechanism hands its routes), says whether it applies, estimates its memory
and time, and returns a frozen :class:`~riskengine.protocol.RouteResult`.  One resolver
(:mod:`.resolve`: ``rk.posterior``, ``rk.count_candidates``) picks and runs the route and
one labeller (:mod:`._label`) turns the result into the read-only ``rk.Posterior``.
``rk.routes()`` (:mod:`.registry`) lists every mechanism x route.

* :mod:`.table_dp` -- exact DP over the cells of a 2-D table with its totals;
* :mod:`.halves` -- exact counts and marginals by meeting in the middle (3-4 rows);
* :mod:`.enumerate_3d` -- streaming enumeration of 3-D tables with their 2-way margins;
* :mod:`.grouped` -- 2-D tables with one level of subtotals (one DP per group);
* :mod:`.line` -- 1-D tables and tables without totals;
* :mod:`.cells` -- independent cells (per-cell likelihoods);
* :mod:`.joint`, :mod:`.joint_mcmc` -- the exact joint likelihood of resampling;
* :mod:`.cyclic_structured`, :mod:`.cyclic_enumerate`, :mod:`.cyclic_gibbs` -- cyclic
  perturbation (problem in :mod:`.cyclic`, lattice helpers in :mod:`.lattice`);
* :mod:`.linked`, :mod:`.linked_gibbs` -- sets of releases of the same records;
* :mod:`.gibbs`, :mod:`.gibbs3d` -- Monte Carlo with arviz diagnostics;
* :mod:`.bounds` -- Fréchet bounds and exact cell ranges; :mod:`.sis` -- SIS counts.

Routes for tables with totals read :mod:`.windows`: what the release says about each
entry (cell or total) of the original table.  Nothing here imports a mechanism module.
"""
