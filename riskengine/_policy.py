"""A review board's risk policy: which cells count, by what measure, against what
threshold and baseline, and what to do with Monte Carlo error.

The default policy, and why:

* ``cells="sensitive"``: the cells the field's rules of thumb are about -- counts 1 and 2
  (``small=2``: the minimum-frequency rule with n = 3, the most common rule at national
  offices), plus any cell the board declares (``declared``).  Zeros are not judged by
  default (a zero tells nothing about a person unless a group's attribute becomes known:
  set ``zeros=True`` where group disclosure matters).  Large cells, and cells a release
  publishes on purpose (the published cells of a suppression pattern), are not disclosures
  of a person.  Which cells are small is read from the original table when the board gives
  it, else from the intruder's best guess.
* ``measure="prob_true"``: Pr(cell = its true value | release) (without the original:
  Pr(cell = the intruder's best guess), the intruder's own confidence).
* ``threshold=0.5``: a judged cell is disclosed when the intruder is more likely right than
  wrong.
* ``baseline="margins"``: what publishing the totals alone would already tell (the
  posterior of a margins-only release of the same totals under the same prior).  A cell
  fails only when the release itself takes it past the threshold: its probability is at
  least ``threshold`` AND more than ``gain`` (default 0) above the baseline's.  Cells the
  totals alone disclose are listed apart: a board decides on the totals, not on the
  release's protection of the cells.
* Monte Carlo error: a cell within ``mc_sigmas`` (2) Monte Carlo standard errors of the
  threshold (or of the baseline) is *undecided*, and so is a verdict that depends on it;
  ``riskengine assess --until-decided`` runs longer chains.  An approximate likelihood
  (error not bounded) never passes: its PASS is *undecided*.

Examples
--------
>>> import riskengine as rk
>>> p = rk.Policy(cells="all", baseline=None, threshold=0.4)
>>> p.describe()
'every cell judged; fails when Pr(true value) >= 0.4'
>>> rk.Policy.from_dict(p.to_dict()) == p
True
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["Policy"]

CELLS = ("sensitive", "all", "hidden")
MEASURES = ("prob_true", "prob_guess", "expected")


@dataclass(frozen=True)
class Policy:
    """A risk policy (module docstring: the default and its reasoning).

    Parameters
    ----------
    cells : {"sensitive", "all", "hidden"}
        Which cells are judged: the sensitive ones (counts 1..``small``, zeros with
        ``zeros``, and ``declared``), every cell, or the cells the release hides
        (suppressed; every cell of a margins-only release) plus the declared ones.
    small : int >= 0
        Counts 1..small are sensitive (the frequency rule with n = small + 1).
    zeros : bool
        Zero cells are sensitive too (group disclosure).
    declared : tuple of tuples of labels
        Cells the board declares sensitive, each as its labels, e.g. ``(("North", "85+"),)``.
    measure : {"prob_true", "prob_guess", "expected"}
        Pr(true value) (falls back to Pr(best guess) when no original is given),
        Pr(best guess), or only the expected number of exactly disclosed judged cells
        (with ``max_expected``).
    threshold : float in (0, 1]
        A judged cell fails when its probability is >= this.
    baseline : {"margins", None}
        Judge the release against what the totals alone disclose (see the module), or not.
    gain : float >= 0
        With a baseline: the least rise over it that counts as the release's doing.
    max_expected : float >= 0, optional
        The policy also fails when the expected number of exactly disclosed judged cells
        exceeds this.
    mc_sigmas : float >= 0
        Monte Carlo error: a cell within this many MCSE of a decision is undecided.
    rule : rk.sensitivity.Frequency, optional
        The minimum-frequency rule that says which counts are sensitive, instead of
        ``small`` / ``zeros``: ``Frequency(n, zeros)`` is ``small = n - 1`` with its
        ``zeros`` (the rule ``rk.suppress`` protected the table with).
    """

    cells: str = "sensitive"
    small: int = 2
    zeros: bool = False
    declared: tuple = field(default_factory=tuple)
    measure: str = "prob_true"
    threshold: float = 0.5
    baseline: str | None = "margins"
    gain: float = 0.0
    max_expected: float | None = None
    mc_sigmas: float = 2.0
    rule: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.rule is not None:
            from .magnitude.sensitivity import Frequency
            if not isinstance(self.rule, Frequency):
                raise ValueError(f"policy rule must be the frequency rule "
                                 f"(rk.sensitivity.Frequency) of a count table, got "
                                 f"{self.rule!r}; a magnitude rule is judged by the audit "
                                 "(riskengine audit)")
            object.__setattr__(self, "small", int(self.rule.n) - 1)
            object.__setattr__(self, "zeros", bool(self.rule.zeros))
            object.__setattr__(self, "rule", None)      # small / zeros say it all
        def real(name, lo, hi=None, none=False):
            v = getattr(self, name)
            if none and v is None:
                return
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(
                    float(v)) or float(v) < lo or (hi is not None and float(v) > hi) or (
                    name == "threshold" and float(v) <= 0):
                rng = "in (0, 1]" if name == "threshold" else f">= {lo}"
                raise ValueError(f"policy {name} must be a number {rng}, got {v!r}")
            object.__setattr__(self, name, float(v))
        if self.cells not in CELLS:
            raise ValueError(f"policy cells must be one of {', '.join(CELLS)}, got "
                             f"{self.cells!r}")
        if self.measure not in MEASURES:
            raise ValueError(f"policy measure must be one of {', '.join(MEASURES)}, got "
                             f"{self.measure!r}")
        if self.baseline not in ("margins", None):
            raise ValueError(f"policy baseline must be 'margins' or None (a reference "
                             f"release: rk.verdict(..., baseline=...)), got {self.baseline!r}")
        if isinstance(self.small, bool) or not isinstance(self.small, numbers.Integral) or \
                self.small < 0:
            raise ValueError(f"policy small must be an integer >= 0 (counts 1..small are "
                             f"sensitive), got {self.small!r}")
        object.__setattr__(self, "small", int(self.small))
        if not isinstance(self.zeros, bool):
            raise ValueError(f"policy zeros must be true or false, got {self.zeros!r}")
        real("threshold", 0.0, 1.0)
        real("gain", 0.0, 1.0)
        real("max_expected", 0.0, none=True)
        real("mc_sigmas", 0.0)
        if self.measure == "expected" and self.max_expected is None:
            raise ValueError("policy measure 'expected' needs max_expected (the most exactly "
                             "disclosed cells expected that the board accepts)")
        try:
            declared = tuple(tuple(str(x) for x in (c if isinstance(c, (list, tuple))
                                                     else (c,))) for c in self.declared)
        except TypeError:
            raise ValueError(f"policy declared must be a list of cells, each a list of "
                             f"labels, got {self.declared!r}") from None
        object.__setattr__(self, "declared", declared)

    # --- forms -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The policy as plain values (TOML / JSON).

        Returns
        -------
        dict
            One entry per field (``baseline`` None written as ``"none"``).
        """
        d = asdict(self)
        d["declared"] = [list(c) for c in self.declared]
        d["baseline"] = self.baseline or "none"        # TOML has no null
        return {k: v for k, v in d.items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict, where: str = "policy") -> Policy:
        """A policy from :meth:`to_dict`'s form; an unknown key is an error naming it.

        Parameters
        ----------
        d : dict
            The fields by name (``baseline = "none"`` for None).
        where : str
            Where ``d`` came from, for the error messages.

        Returns
        -------
        Policy
        """
        if not isinstance(d, dict):
            raise ValueError(f"{where} must be a table of keys, got {type(d).__name__}")
        known = set(cls.__dataclass_fields__)
        bad = sorted(set(d) - known)
        if bad:
            raise ValueError(f"{where}: unknown key {bad[0]!r}; known: "
                             f"{', '.join(sorted(known))}")
        d = dict(d)
        if d.get("baseline") in ("none", "None", ""):
            d["baseline"] = None
        try:
            return cls(**d)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    @classmethod
    def from_toml(cls, path) -> Policy:
        """A policy from a TOML file: its ``[policy]`` table, or its top level.

        Parameters
        ----------
        path : str or Path
            The TOML file.

        Returns
        -------
        Policy
        """
        import tomllib
        with open(path, "rb") as fh:
            try:
                doc = tomllib.load(fh)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{path}: not valid TOML ({exc})") from None
        return cls.from_dict(doc.get("policy", doc), where=f"{path}")

    def with_(self, **changes) -> Policy:
        """The same policy with ``changes`` (None values ignored).

        Parameters
        ----------
        **changes
            Fields to change.

        Returns
        -------
        Policy
        """
        from dataclasses import replace
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    # --- words -----------------------------------------------------------------------
    def cells_text(self) -> str:
        """Which cells are judged, in words.

        Returns
        -------
        str
        """
        decl = (f" and {len(self.declared)} declared cell{'s' * (len(self.declared) != 1)}"
                if self.declared else "")
        if self.cells == "all":
            return "every cell judged"
        if self.cells == "hidden":
            return "the cells the release hides judged" + decl
        small = ("counts 1" if self.small == 1 else f"counts 1..{self.small}"
                 if self.small else "")
        parts = [p for p in (small, "zeros" if self.zeros else "") if p]
        return ("sensitive cells judged (" + (" and ".join(parts) or "none by size")
                + decl + ")")

    def describe(self, measure_text: str | None = None) -> str:
        """The policy in one line.

        Parameters
        ----------
        measure_text : str, optional
            The measure's name as the verdict states it (default from ``measure``).

        Returns
        -------
        str
        """
        m = measure_text or ("Pr(true value)" if self.measure == "prob_true" else
                             "Pr(best guess)")
        out = self.cells_text()
        if self.measure != "expected":
            out += f"; fails when {m} >= {self.threshold:g}"
            if self.baseline == "margins":
                out += (" and exceeds by more than " + (f"{self.gain:g}" if self.gain else
                                                        "0") + " what the totals alone give")
        if self.max_expected is not None:
            out += f"; at most {self.max_expected:g} judged cells expected exactly disclosed"
        return out

    # --- the judged cells ------------------------------------------------------------
    def judged(self, values, coords: dict, dims, published=None) -> np.ndarray:
        """Boolean mask of the cells this policy judges.

        Parameters
        ----------
        values : ndarray of int
            The cells' values the rule reads: the original table, or the intruder's best
            guess.
        coords, dims
            The table's labels (for ``declared``).
        published : ndarray or None
            The published cells (NaN: hidden; None: no cell published).

        Returns
        -------
        numpy.ndarray of bool
            True for the judged cells.
        """
        values = np.asarray(values)
        if self.cells == "all":
            mask = np.ones(values.shape, bool)
        elif self.cells == "hidden":
            mask = (np.ones(values.shape, bool) if published is None
                    else np.isnan(np.asarray(published, float)))
        else:
            mask = (values >= 1) & (values <= self.small)
            if self.zeros:
                mask |= values == 0
        for cell in self.declared:
            if len(cell) != len(dims):
                raise ValueError(f"declared cell {cell} has {len(cell)} labels; the table "
                                 f"has {len(dims)} dims {tuple(dims)}")
            idx = []
            for d, lab in zip(dims, cell):
                labels = [str(x) for x in coords[d]]
                if lab not in labels:
                    raise ValueError(f"declared cell {cell}: {lab!r} is not a label of "
                                     f"{d!r} (labels: {', '.join(labels[:10])}"
                                     f"{', ...' if len(labels) > 10 else ''})")
                idx.append(labels.index(lab))
            mask[tuple(idx)] = True
        return mask
