"""A risk policy's verdict on a release: PASS or FAIL, the rule, the cells that fail.

The policy (a review board's rule, stated with the verdict):

* no cell is disclosed with probability ``threshold`` or more -- with the original table
  at hand, Pr(cell = its true value | release); without it, Pr(cell = the intruder's best
  guess | release), the confidence an intruder would have;
* small counts (true value, or best guess, 1 or 2) are listed apart among the failing
  cells: their disclosure is the one the rules of thumb of the field are about;
* optionally, the expected number of exactly disclosed cells (the sum of those
  probabilities) is at most ``max_expected``.

A Monte Carlo posterior that has not converged cannot PASS: its verdict is FAIL with the
diagnostics as the reason.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2],
...                        [12, 14, 7, 2]]), dims=("v", "w"))
>>> rel = rk.CyclicPerturbation(rk.cycles.diagonal(4), 0.25, 0.25).protect(
...     t, np.random.default_rng(1))
>>> v = rk.verdict(rk.posterior(rel), truth=t, threshold=0.4)
>>> v.label, [c for c, value, p in v.failing], [c for c, value, p in v.small]
('FAIL', ['(0, 0)', '(1, 1)', '(2, 2)', '(3, 3)'], ['(3, 3)'])
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

__all__ = ["Verdict", "verdict"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of a risk policy on one release.

    Built by :func:`verdict`.

    Parameters
    ----------
    passed : bool
        True when the release passes the policy.
    rule : str
        The policy, in words.
    measure : str
        ``"Pr(true value)"`` or ``"Pr(best guess)"``.
    threshold : float
        A cell fails when its probability is >= this.
    failing : list, default []
        ``[(cell label, value, probability)]`` of the failing cells.
    small : list, default []
        The failing cells of value 1 or 2, as in ``failing``.
    expected : float, default 0.0
        Sum of the measure over the cells.
    n_cells : int, default 0
        Number of cells judged.
    max_expected : float, optional
        The bound on ``expected`` of the policy, if any.
    reasons : list of str, default []
        Why it fails, one line each.
    """

    passed: bool
    rule: str                            #: the policy, in words
    measure: str                         #: "Pr(true value)" or "Pr(best guess)"
    threshold: float
    failing: list = field(default_factory=list)   #: [(cell label, value, probability)]
    small: list = field(default_factory=list)     #: the failing cells of value 1 or 2
    expected: float = 0.0                #: sum of the measure over the cells
    n_cells: int = 0
    max_expected: float | None = None
    reasons: list = field(default_factory=list)   #: why it fails, one line each

    @property
    def label(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def lines(self, max_cells: int = 10) -> list:
        """The verdict as text lines: the verdict and rule, the reasons, the failing cells.

        Parameters
        ----------
        max_cells : int, default 10
            At most this many failing cells are listed (the rest are counted).

        Returns
        -------
        list of str
            One line per item; ``str(verdict)`` joins them with newlines.
        """
        out = [f"VERDICT: {self.label} under the rule: {self.rule}"]
        out += [f"  - {r}" for r in self.reasons]
        if self.failing:
            shown = ", ".join(f"{c} = {v} ({p:.3f})" for c, v, p in self.failing[:max_cells])
            more = len(self.failing) - max_cells
            out.append(f"  cells with {self.measure} >= {self.threshold:g}: {shown}"
                       + (f" and {more} more" if more > 0 else ""))
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _cell(ds, dims, idx) -> str:
    return "(" + ", ".join(str(ds[d].values[i]) if d in ds.coords else str(i)
                           for d, i in zip(dims, idx)) + ")"


def verdict(post_or_summary, truth=None, threshold: float = 0.5,
            max_expected: float | None = None, level: float = 0.95) -> Verdict:
    """The verdict of the risk policy (module docstring) on a posterior or its summary.

    Parameters
    ----------
    post_or_summary : rk.Posterior or xarray.Dataset
        A posterior, or its summary Dataset (``post.summary(truth)`` /
        ``post.to_dataset(truth)``, or a ``posterior.nc`` read back).
    truth : table, optional
        The original table (with a posterior only; a summary carries its own ``true``
        and ``prob_exact``): the policy then judges Pr(true value), else Pr(best guess).
    threshold : float in (0, 1]
        A cell fails when its probability is >= this.
    max_expected : float >= 0, optional
        The policy also fails when the expected number of exactly disclosed cells
        exceeds this.
    level : float
        Credible level of the summary (a posterior only).

    Returns
    -------
    Verdict
        ``passed`` / ``label`` (PASS or FAIL), the rule in words, the failing cells (the
        small counts apart) and the reasons, one line each (``lines()``).

    Raises
    ------
    ValueError
        A bad ``threshold`` / ``max_expected``, ``truth`` with a summary, or
        probabilities that are not finite.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or \
            not 0 < float(threshold) <= 1:
        raise ValueError(f"threshold must be a probability in (0, 1], got {threshold!r}")
    if max_expected is not None and (isinstance(max_expected, bool) or not isinstance(
            max_expected, numbers.Real) or not float(max_expected) >= 0):
        raise ValueError(f"max_expected must be a number >= 0 (or None), got "
                         f"{max_expected!r}")
    if isinstance(post_or_summary, xr.Dataset):
        if truth is not None:
            raise ValueError("truth= is for a posterior; a summary Dataset carries its own "
                             "'true' and 'prob_exact'")
        ds = post_or_summary
    else:
        ds = post_or_summary.summary(truth, level)
    with_truth = "prob_exact" in ds and "true" in ds
    pvar, vvar = ("prob_exact", "true") if with_truth else ("max_prob", "mode")
    measure = "Pr(true value)" if with_truth else "Pr(best guess)"
    dims = tuple(ds[pvar].dims)
    p = ds[pvar].transpose(*dims).values
    v = ds[vvar].transpose(*dims).values
    if not np.isfinite(p).all():
        raise ValueError(f"the posterior's {measure} has values that are not finite: no "
                         "verdict")
    thr = float(threshold)
    failing, small = [], []
    for idx in zip(*np.nonzero(p >= thr)):
        item = (_cell(ds, dims, idx), int(v[idx]), float(p[idx]))
        failing.append(item)
        if int(v[idx]) in (1, 2):
            small.append(item)
    failing.sort(key=lambda x: -x[2])
    small.sort(key=lambda x: -x[2])
    expected = float(p.sum())
    reasons = []
    if failing:
        reasons.append(f"{len(failing)} of {p.size} cells have {measure} >= {thr:g}"
                       + (f"; {len(small)} of them are small counts (1 or 2)" if small else ""))
    if max_expected is not None and expected > float(max_expected):
        reasons.append(f"expected exactly disclosed cells {expected:.3f} > {max_expected:g}")
    # a Monte Carlo posterior carries "converged" (1/0); posterior.nc files of earlier
    # versions mark it with "approximate" = 1
    monte_carlo = "converged" in ds.attrs or bool(int(ds.attrs.get("approximate", 0)))
    if monte_carlo and not int(ds.attrs.get("converged", 0)):
        reasons.append("the Monte Carlo posterior has not converged "
                       f"({ds.attrs.get('diagnostics', '')}): no PASS on it")
    subject = ("the original cell's true value" if with_truth else
               "the intruder's best guess (no original table given)")
    rule = (f"no cell has probability >= {thr:g} of {subject}"
            + (f", and at most {max_expected:g} cells are expected to be exactly disclosed"
               if max_expected is not None else ""))
    return Verdict(passed=not reasons, rule=rule, measure=measure, threshold=thr,
                   failing=failing, small=small, expected=expected, n_cells=int(p.size),
                   max_expected=None if max_expected is None else float(max_expected),
                   reasons=reasons)
