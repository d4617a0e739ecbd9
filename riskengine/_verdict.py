"""A risk policy's verdict on a release: PASS, FAIL or UNDECIDED, the rule, the cells.

The policy (:class:`riskengine.Policy`; its module gives the defaults and their reasons)
says which cells are judged (by default the sensitive ones: counts 1 and 2 and the
cells the board declares), the measure (Pr(true value) with the original at hand, else
Pr(the intruder's best guess)), the threshold, and the baseline: what the published totals
alone already disclose (a margins-only release of the same totals under the same prior).
A judged cell fails when its probability reaches the threshold and the release raises it
above the baseline; cells the totals alone disclose are listed apart.

Approximate answers say so: a Monte Carlo cell within ``mc_sigmas`` MCSE of a decision is
undecided (and so is a verdict that hangs on it), an unconverged Monte Carlo posterior
cannot pass, and an approximate likelihood's PASS is UNDECIDED (its error is not bounded).

Examples
--------
>>> import numpy as np, riskengine as rk
>>> t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2],
...                        [12, 14, 7, 2]]), dims=("v", "w"))
>>> rel = rk.CyclicPerturbation(rk.cycles.diagonal(4), 0.25, 0.25).protect(
...     t, np.random.default_rng(1))
>>> post = rk.posterior(rel)
>>> v = rk.verdict(post, truth=t, policy=rk.Policy(cells="all", baseline=None,
...                                                threshold=0.4))
>>> v.label, [c for c, value, p in v.failing], [c for c, value, p in v.small]
('FAIL', ['(0, 0)', '(1, 1)', '(2, 2)', '(3, 3)'], ['(3, 3)'])
>>> v = rk.verdict(post, truth=t)      # the default policy: small counts, margins baseline
>>> v.label, v.n_judged
('PASS', 4)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

__all__ = ["Verdict", "verdict"]

#: the verdict's labels
PASS, FAIL, UNDECIDED = "PASS", "FAIL", "UNDECIDED"


@dataclass(frozen=True)
class Verdict:
    """The outcome of a risk policy on one release.

    Built by :func:`verdict`.

    Parameters
    ----------
    passed : bool
        True when the release passes the policy (``status == "PASS"``).
    rule : str
        The policy, in words.
    measure : str
        ``"Pr(true value)"`` or ``"Pr(best guess)"``.
    threshold : float
        A judged cell fails when its probability is >= this (and above the baseline).
    failing : list, default []
        ``[(cell label, value, probability)]`` of the failing cells.
    small : list, default []
        The failing cells of value 1 or 2, as in ``failing``.
    expected : float, default 0.0
        Sum of the measure over the judged cells.
    n_cells : int, default 0
        Number of cells of the table.
    max_expected : float, optional
        The bound on ``expected`` of the policy, if any.
    reasons : list of str, default []
        Why it fails or is undecided, one line each.
    status : {"PASS", "FAIL", "UNDECIDED"}
        UNDECIDED: Monte Carlo error (or an unbounded approximation) keeps the verdict
        from being decided.
    undecided : list, default []
        ``[(cell label, value, probability)]`` of the cells within Monte Carlo error of a
        decision.
    by_baseline : list, default []
        Judged cells at or above the threshold that the totals alone already disclose.
    n_judged : int
        Number of cells judged.
    baseline : str
        What the release was compared with, in words ("" for none).
    approximate : str
        What is approximate about the posterior judged ("" for the exact posterior).
    policy : rk.Policy, optional
    cells : xarray.Dataset, optional
        Per cell: ``judged``, ``prob``, ``mcse``, ``baseline_prob`` (where computed) and
        ``state`` (0 pass, 1 fail, 2 undecided, -1 not judged).
    """

    passed: bool
    rule: str
    measure: str
    threshold: float
    failing: list = field(default_factory=list)
    small: list = field(default_factory=list)
    expected: float = 0.0
    n_cells: int = 0
    max_expected: float | None = None
    reasons: list = field(default_factory=list)
    status: str = ""
    undecided: list = field(default_factory=list)
    by_baseline: list = field(default_factory=list)
    n_judged: int = 0
    baseline: str = ""
    approximate: str = ""
    policy: object = None
    cells: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not self.status:
            object.__setattr__(self, "status", PASS if self.passed else FAIL)

    @property
    def label(self) -> str:
        return self.status

    @property
    def decided(self) -> bool:
        return self.status != UNDECIDED

    def lines(self, max_cells: int = 10) -> list:
        """The verdict as text lines: the verdict and rule, the reasons, the cells.

        Parameters
        ----------
        max_cells : int, default 10
            At most this many cells are listed per kind (the rest are counted).

        Returns
        -------
        list of str
            One line per item; ``str(verdict)`` joins them with newlines.
        """
        out = [f"VERDICT: {self.label}"
               + (" (on an approximate posterior)" if self.approximate else "")
               + f" under the policy: {self.rule}"]
        if self.baseline:
            out.append(f"  baseline: {self.baseline}")
        out += [f"  - {r}" for r in self.reasons]

        def listing(items):
            shown = ", ".join(f"{c} = {v} ({p:.3f})" for c, v, p in items[:max_cells])
            more = len(items) - max_cells
            return shown + (f" and {more} more" if more > 0 else "")
        if self.failing:
            out.append(f"  failing cells ({self.measure}): {listing(self.failing)}")
        if self.undecided:
            out.append(f"  undecided cells (within Monte Carlo error): "
                       f"{listing(self.undecided)}")
        if self.by_baseline:
            out.append(f"  disclosed by the totals alone (not the release's doing): "
                       f"{listing(self.by_baseline)}")
        if self.approximate:
            out.append(f"  approximate: {self.approximate}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _cell(ds, dims, idx) -> str:
    return "(" + ", ".join(str(ds[d].values[i]) if d in ds.coords else str(i)
                           for d, i in zip(dims, idx)) + ")"


def _policy(policy, threshold, max_expected):
    from ._policy import Policy
    if policy is None:
        policy = Policy()
    elif not isinstance(policy, Policy):
        raise TypeError(f"policy must be an rk.Policy, got {type(policy).__name__}")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(
            threshold, numbers.Real) or not 0 < float(threshold) <= 1):
        raise ValueError(f"threshold must be a probability in (0, 1], got {threshold!r}")
    if max_expected is not None and (isinstance(max_expected, bool) or not isinstance(
            max_expected, numbers.Real) or not float(max_expected) >= 0):
        raise ValueError(f"max_expected must be a number >= 0 (or None), got "
                         f"{max_expected!r}")
    return policy.with_(threshold=threshold, max_expected=max_expected)


def margins_baseline(post, truth=None, time: float | None = 60.0, progress=None):
    """``(baseline posterior or None, text)``: the posterior of a margins-only release of
    the totals of ``post``'s release (the original's totals when ``truth`` is given, else
    the published ones, taken as exact) under the same prior; None with the reason when
    there is none (no totals, a release set, subtotals, a total suppressed, no route)."""
    from .release import Release
    rel, prior = getattr(post, "release", None), getattr(post, "prior", None)
    if rel is None or not isinstance(rel, Release):
        return None, "none (a release set or a posterior without its release)"
    if not rel.margins:
        return None, "none (the release publishes no totals: nothing but the release)"
    if rel.groups or rel.subtotals:
        return None, "none (releases with subtotals: not yet)"
    if rel.kind != "count":
        return None, "none (a magnitude release: the audit judges it)"
    # the baseline is what the published totals disclose: it exists when they are the
    # original's exact totals (perturbed totals disclose less than exact ones, and an
    # excuse built on exact totals could pass a release that discloses more than them)
    perturbed = ("none (the release perturbs its totals: what they alone disclose is not "
                 "computed; every judged cell is judged as it is)")
    margins = {k: np.asarray(v, float) for k, v in rel.margins.items()}
    if any(np.isnan(v).any() for v in margins.values()):
        return None, "none (a published total is suppressed)"
    if truth is not None:
        t = np.asarray(post._values(truth), dtype=float)
        if not all(np.array_equal(margins[k], t.sum(axis=tuple(
                i for i, d in enumerate(rel.dims) if d not in k))) for k in margins):
            return None, perturbed
        text = "the original's totals"
    else:
        if not _totals_exact(rel):
            return None, perturbed
        text = "the published totals (exact under this mechanism)"
    from .mechanisms.margins_only import MarginsOnly
    if isinstance(rel.mechanism, MarginsOnly):
        return post, "the margins-only release of the same totals: the release itself"
    try:
        base = Release(None, margins={k: np.asarray(v).astype(np.int64)
                                      for k, v in margins.items()},
                       mechanism=MarginsOnly(), dims=rel.dims, coords=rel.coords)
        from .inference.resolve import posterior
        bp = posterior(base, prior, count=False, time=time, progress=progress)
    except (ValueError, MemoryError) as exc:
        msg = str(exc).splitlines()[0]
        if msg.startswith("no posterior route fits"):
            msg = "no route computes it for these totals"
        return None, f"none (the margins-only posterior: {msg[:300]})"
    return bp, (f"a margins-only release of {text}, same prior (route "
                f"{bp.attrs.get('route')}{', approximate' if not bp.exact else ''})")


def _totals_exact(rel) -> bool:
    """Whether ``rel``'s mechanism publishes its totals exactly: every total's likelihood
    window holds one value (the entry windows), or, for a mechanism without windows (cycles,
    resampling's joint model), it is additive (its totals are the cells' sums)."""
    try:
        ew = rel.mechanism.inputs(rel)["windows"]
    except (KeyError, ValueError, TypeError, NotImplementedError):
        return bool(rel.mechanism.additive)
    return all((np.isfinite(np.asarray(ew.lw[k])).sum(axis=-1) == 1).all()
               for k in rel.margins if k in ew.lw)


def _baseline_arrays(bp, values):
    """Baseline probabilities at ``values`` and their MCSE (0 for an exact baseline)."""
    pb = bp._prob_at(np.asarray(values, np.int64))
    mb = bp._mcse_at(values) if bp.chains is not None else np.zeros(pb.shape)
    return pb, mb


def verdict(post_or_summary, truth=None, threshold: float | None = None,
            max_expected: float | None = None, level: float = 0.95, policy=None,
            baseline=None, progress=None) -> Verdict:
    """The verdict of a risk policy on a posterior or its summary.

    Parameters
    ----------
    post_or_summary : rk.Posterior or xarray.Dataset
        A posterior, or its summary Dataset (``post.summary(truth)`` /
        ``post.to_dataset(truth)``, or a ``posterior.nc`` read back; a baseline computed
        before is read from its ``baseline_prob``).
    truth : table, optional
        The original table (with a posterior only; a summary carries its own ``true``
        and ``prob_exact``): the policy then judges Pr(true value), else Pr(best guess).
    threshold, max_expected : optional
        Override the policy's.
    level : float
        Credible level of the summary (a posterior only).
    policy : rk.Policy, optional
        Default ``rk.Policy()`` (see :mod:`riskengine._policy`).
    baseline : rk.Posterior or rk.Release, optional
        A named reference release (or its posterior) to judge against, instead of the
        policy's ``"margins"``.
    progress : callable(done, total), optional
        Progress of the baseline's posterior (as :func:`riskengine.posterior` takes it).

    Returns
    -------
    Verdict
        ``status`` / ``label`` (PASS, FAIL or UNDECIDED), the policy in words, the
        failing, undecided and baseline-disclosed cells, the reasons, one line each.

    Raises
    ------
    ValueError
        A bad ``threshold`` / ``max_expected``, ``truth`` with a summary, or
        probabilities that are not finite.
    """
    from ._posterior import Posterior
    from .release import Release
    pol = _policy(policy, threshold, max_expected)
    post = None
    if isinstance(post_or_summary, xr.Dataset):
        if truth is not None:
            raise ValueError("truth= is for a posterior; a summary Dataset carries its own "
                             "'true' and 'prob_exact'")
        ds = post_or_summary
    else:
        post = post_or_summary
        ds = post.summary(truth, level)
        if post.diagnostics is not None:
            for name in ("mcse_max_prob",):
                if name in post.diagnostics:
                    ds[name] = post.diagnostics[name]
            ds.attrs.update({k: v for k, v in post.diagnostics.attrs.items()
                             if isinstance(v, (int, float, str))})
    with_truth = "prob_exact" in ds and "true" in ds and pol.measure != "prob_guess"
    pvar, vvar = ("prob_exact", "true") if with_truth else ("max_prob", "mode")
    mvar = "mcse_prob_exact" if with_truth else "mcse_max_prob"
    measure = "Pr(true value)" if with_truth else "Pr(best guess)"
    dims = tuple(ds[pvar].dims)
    p = ds[pvar].transpose(*dims).values
    v = ds[vvar].transpose(*dims).values
    if not np.isfinite(p).all():
        raise ValueError(f"the posterior's {measure} has values that are not finite: no "
                         "verdict")
    monte_carlo = "converged" in ds.attrs or "rhat" in ds
    mcse = (ds[mvar].transpose(*dims).values if mvar in ds else
            np.zeros(p.shape))
    mcse = np.where(np.isfinite(mcse), mcse, 1.0)
    approx = str(ds.attrs.get("approximation", "")) if int(
        ds.attrs.get("approximate", 1 if ds.attrs.get("approximation") else 0)) else ""
    # --- the baseline -----------------------------------------------------------------
    pb = mb = None
    btext = ""
    same = False
    if baseline is not None:
        if isinstance(baseline, Release):
            from .inference.resolve import posterior as _posterior
            baseline = _posterior(baseline, getattr(post, "prior", None), count=False,
                                  progress=progress)
        if not isinstance(baseline, Posterior):
            raise TypeError(f"baseline must be an rk.Posterior or rk.Release, got "
                            f"{type(baseline).__name__}")
        if tuple(baseline.dims) != dims or baseline.shape != p.shape:
            raise ValueError(f"the baseline's table {baseline.dims} {baseline.shape} is not "
                             f"the release's {dims} {p.shape}")
        pb, mb = _baseline_arrays(baseline, v)
        btext = f"the reference release given ({baseline.attrs.get('mechanism', '?')})"
    elif pol.baseline == "margins":
        if "baseline_prob" in ds:
            pb = ds["baseline_prob"].transpose(*dims).values
            mb = (ds["baseline_mcse"].transpose(*dims).values if "baseline_mcse" in ds
                  else np.zeros(p.shape))
            btext = str(ds.attrs.get("baseline", "computed before"))
        elif post is not None:
            bp, btext = margins_baseline(post, truth, progress=progress)
            if bp is post:          # the release is its own baseline: no difference at all
                pb, mb = p.copy(), np.zeros(p.shape)
                same = True
            elif bp is not None:
                pb, mb = _baseline_arrays(bp, v)
        else:
            btext = str(ds.attrs.get("baseline", "none (not in this summary)"))
    # --- the judged cells --------------------------------------------------------------
    coords = {d: (ds[d].values.tolist() if d in ds.coords else list(range(p.shape[k])))
              for k, d in enumerate(dims)}
    published = ds["published"].transpose(*dims).values if "published" in ds else None
    judged = pol.judged(v, coords, dims, published)
    thr, s = pol.threshold, pol.mc_sigmas
    err = s * mcse
    a_true = p - err >= thr
    a_false = p + err < thr
    if pb is not None:
        d = p - pb - pol.gain
        sb = np.zeros(p.shape) if same else s * np.sqrt(mcse ** 2 + mb ** 2)
        b_true = np.where(sb > 0, d - sb > 0, d > 1e-9)
        b_false = np.where(sb > 0, d + sb <= 0, d <= 1e-9)
    else:
        b_true, b_false = np.ones(p.shape, bool), np.zeros(p.shape, bool)
    if pol.measure == "expected":
        a_true, a_false = np.zeros(p.shape, bool), np.ones(p.shape, bool)
    fail = judged & a_true & b_true
    ok = judged & (a_false | b_false)
    und = judged & ~fail & ~ok
    by_base = judged & ~a_false & b_false
    state = np.where(~judged, -1, np.where(fail, 1, np.where(und, 2, 0)))

    def items(mask):
        out = [(_cell(ds, dims, idx), int(v[idx]), float(p[idx]))
               for idx in zip(*np.nonzero(mask))]
        return sorted(out, key=lambda x: -x[2])
    failing, undecided, by_baseline = items(fail), items(und), items(by_base)
    small = [x for x in failing if x[1] in (1, 2)]
    expected = float(p[judged].sum())
    reasons = []
    n_j = int(judged.sum())
    if failing:
        reasons.append(f"{len(failing)} of {n_j} judged cells have {measure} >= {thr:g}"
                       + (" above the baseline" if pb is not None else "")
                       + (f"; {len(small)} of them are small counts (1 or 2)" if small else ""))
    exp_fail = exp_und = False
    if pol.max_expected is not None:
        e_err = s * float(np.sqrt((mcse[judged] ** 2).sum()))
        if expected - e_err > pol.max_expected:
            exp_fail = True
            reasons.append(f"expected exactly disclosed judged cells {expected:.3f} > "
                           f"{pol.max_expected:g}")
        elif expected + e_err > pol.max_expected:
            exp_und = True
            reasons.append(f"expected exactly disclosed judged cells {expected:.3f} is "
                           f"within Monte Carlo error ({e_err:.3f}) of {pol.max_expected:g}")
    if undecided:
        reasons.append(f"{len(undecided)} judged cells are within {s:g} Monte Carlo "
                       "standard errors of the threshold or the baseline: longer chains "
                       "decide them (riskengine assess --until-decided)")
    unconverged = monte_carlo and not int(ds.attrs.get("converged", 0))
    if unconverged:
        reasons.append("the Monte Carlo posterior has not converged "
                       f"({ds.attrs.get('diagnostics', '')}): no PASS on it")
    if failing or exp_fail:
        status = FAIL
    elif undecided or exp_und or unconverged:
        status = UNDECIDED
    elif approx and not monte_carlo:
        status = UNDECIDED
        reasons.append(f"the posterior's likelihood is approximate ({approx}) and its "
                       "error is not bounded: no PASS on it; an exact route decides")
    else:
        status = PASS
    cells = xr.Dataset({"judged": (dims, judged), "prob": (dims, p), "mcse": (dims, mcse),
                        "state": (dims, state)},
                       coords={d: ds[d] for d in dims if d in ds.coords})
    if pb is not None:
        cells["baseline_prob"] = (dims, pb)
        cells["baseline_mcse"] = (dims, mb)
    rule = pol.describe(measure)
    if baseline is not None and pol.measure != "expected":
        rule += (f" and exceeds by more than {pol.gain:g} what the reference release "
                 "gives")
    return Verdict(passed=status == PASS, rule=rule, measure=measure,
                   threshold=thr, failing=failing, small=small, expected=expected,
                   n_cells=int(p.size), max_expected=pol.max_expected, reasons=reasons,
                   status=status, undecided=undecided, by_baseline=by_baseline,
                   n_judged=n_j, baseline=btext, approximate=approx, policy=pol,
                   cells=cells)


def annotate(ds: xr.Dataset, v: Verdict) -> xr.Dataset:
    """``ds`` (a posterior's summary) with the verdict's policy, baseline and judged cells
    written in (attrs ``policy``, ``baseline``, ``verdict``, ``threshold``; variables
    ``judged``, ``baseline_prob``, ``baseline_mcse``), so that :func:`verdict` on the
    Dataset, a report or a file read back gives the same verdict."""
    import json
    ds.attrs["threshold"] = v.threshold
    if v.max_expected is not None:
        ds.attrs["max_expected"] = v.max_expected
    ds.attrs["policy"] = json.dumps(v.policy.to_dict())
    ds.attrs["baseline"] = v.baseline
    ds.attrs["verdict"] = v.label
    for name in ("judged", "baseline_prob", "baseline_mcse"):
        if name in v.cells:
            ds[name] = v.cells[name].astype("int8") if name == "judged" else v.cells[name]
    return ds
