"""Slow, obviously-correct references: every brute force and independent formulation the
tests compare riskengine with, and nothing else.  Plain Python / NumPy / SciPy; none calls
the riskengine code it checks.  One module per concept:

* ``cyclic`` -- cyclic perturbation: path probability, brute force over sign vectors;
* ``tables`` -- candidate tables by enumeration (windows, 2-way margins), counts, posteriors
  over explicit tables, cell pmfs, log priors;
* ``rounding`` -- controlled rounding: definition checks, every rounding, the rounding
  probability, LP relaxation, the 3-D rounding posterior;
* ``resampling`` -- seed 001's quality interval and the bootstrap / binomial cell laws;
* ``completions`` -- integer completions of suppressed releases;
* ``intervals`` -- LP intervals of suppressed cells (and hidden totals), protection checks;
* ``suppression`` -- cheapest protecting pattern by brute force, cells a pattern fixes;
* ``cta`` -- the CTA optimum by enumerating down/up patterns;
* ``network`` -- max flow and min-cost flow as LPs;
* ``sensitivity`` -- dominance and pq rules over every coalition;
* ``contributions`` -- a magnitude table's contributions by plain loops;
* ``elimination`` -- sum-product over every joint assignment;
* ``measures`` -- chi-square and calibration bins by their formulas.

Beside them, the case generators the tests share: ``registry_cases`` -- one case per
registered mechanism, built from the example it declares of itself (the protocol,
invariants and command-line tests iterate the registry through it).
"""
