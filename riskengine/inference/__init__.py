"""Inference routes (layer L2): what can be inferred about the original table.

Each route is a :class:`riskengine.mechanisms._base.Route`: it says whether it applies to
a release, estimates its memory, and returns a labelled ``rk.Posterior`` (labelled in
one place, :mod:`._label`).  Mechanisms list the routes that fit their likelihood:

* :mod:`.table_dp` -- exact DP over the cells of a 2-D table with its totals;
* :mod:`.enumerate_3d` -- streaming enumeration of 3-D tables with their 2-way margins;
* :mod:`.grouped` -- 2-D tables with one level of subtotals (one DP per group);
* :mod:`.cells` -- independent cells (per-cell likelihoods);
* :mod:`.cyclic_structured`, :mod:`.cyclic_enumerate` -- cyclic perturbation
  (problem in :mod:`.cyclic`, lattice helpers in :mod:`.lattice`);
* :mod:`.bounds` -- Fréchet bounds and exact cell ranges.

Routes for tables with totals take :mod:`.windows`: what the release says about each
entry (cell or total) of the original table.  Nothing here imports a mechanism module.
"""
