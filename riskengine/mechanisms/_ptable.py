"""The p-table of the cell key method: :class:`PTable` (Pr(published j | original i), the
lookup that perturbs a count by its cell key, and the file formats of tau-Argus and of the
R package ptable) and its maximum-entropy design (ptable's ``create_cnt_ptable``).

The mechanism that uses it is :class:`riskengine.CellKey` (``mechanisms/cell_key.py``).

Examples
--------
The fictional p-table of the SDC handbook; an original 3 with cell key 0.5 is published
as 3 (its interval [0.3, 0.7)).  Its row 2 is biased (an original 2 is published 2.2 on
average), which a ``UserWarning`` says; the table is used as it is.

>>> import warnings
>>> from riskengine import PTable
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     pt = PTable.from_matrix({0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2},
...                              3: {2: 0.3, 3: 0.4, 4: 0.3}})
>>> caught[0].category.__name__, "original counts 2: +0.2 " in str(caught[0].message)
('UserWarning', True)
>>> {i: round(b, 12) for i, b in pt.bias().items()}
{2: 0.2}
>>> pt.max_deviation, pt.threshold
(1, 1)
>>> int(pt.perturb(3, 0.5)), round(float(pt.prob(3, 3)), 12)
(3, 0.4)
"""

from __future__ import annotations

import math
import numbers
import warnings
from pathlib import Path

import numpy as np

from .. import _validate as V
from ._ptable_design import _design

__all__ = ["PTable"]

#: a row of a file must end within this of 1 (files hold 8 to 10 digits)
_FILE_TOL = 1e-8
#: a literal matrix's rows must sum to 1 within this
_MATRIX_TOL = 1e-12
#: a row whose expected perturbation is farther from 0 than this is biased (a file's
#: rounding: this times the row's sum of |perturbation|, for its probabilities' digits)
_BIAS_TOL = 1e-9
#: the biased rows a warning lists
_BIAS_SHOWN = 8


class PTable:
    """Transition probabilities of the cell key method: Pr(published j | original i).

    Row ``i`` (``i = 0 .. top``) lists its published values ``j`` in lookup order and the
    upper ends ``ub`` of their intervals on [0, 1) (the last is 1); an original count
    above ``top`` uses the top row shifted: published ``x + (j - top)``.  Build one with
    :meth:`design`, :meth:`read`, :meth:`from_matrix` or :meth:`from_dict`.

    Rules every p-table obeys (an error names the row and the rule): row 0 publishes 0
    with probability 1 (an empty cell has no records, so no key), no published value is
    negative, every row's probabilities are >= 0 and sum to 1.

    Parameters
    ----------
    j : sequence of 1-D int arrays
        Per row i = 0 .. top, the published values in lookup order (zero-probability
        entries left out).
    ub : sequence of 1-D float arrays
        Per row, the upper ends of the published values' intervals on [0, 1), rising, the
        last 1 (the same lengths as ``j``).
    source : str
        Where the p-table came from, for :meth:`describe` (a file name, ``"matrix"``).
    params : dict, optional
        The design parameters of a designed p-table (``D``, ``V``, ``js``, ``pstay``,
        ``mono``), or None.

    Attributes
    ----------
    top : int
        The last row; every larger original count uses it, shifted.
    vmin, vmax : int
        The smallest and largest perturbation (published - original) of any row.

    Notes
    -----
    The constructor takes rows already checked (it is what the class methods build);
    from user data, use :meth:`from_matrix`, :meth:`from_dict`, :meth:`read` or
    :meth:`design`, which check every rule.
    """

    def __init__(self, j, ub, source: str = "", params: dict | None = None):
        self._j = [np.asarray(a, dtype=np.int64) for a in j]
        self._ub = [np.asarray(a, dtype=float) for a in ub]
        self.source = str(source)
        self.params = dict(params) if params else None
        for a in (*self._j, *self._ub):
            a.setflags(write=False)
        self.top = len(self._j) - 1
        v = [jj - min(i, self.top) for i, jj in enumerate(self._j)]
        self.vmin = int(min(a.min() for a in v))
        self.vmax = int(max(a.max() for a in v))
        W = self.vmax - self.vmin + 1
        lp = np.full((self.top + 1, W), -np.inf)
        with np.errstate(divide="ignore"):
            for i, (vi, p) in enumerate(zip(v, self.probs)):
                lp[i, vi - self.vmin] = np.log(p)
        lp.setflags(write=False)
        self._logp = lp

    # --- views ---------------------------------------------------------------------------
    @property
    def j(self) -> list:
        """Per row, the published values in lookup order."""
        return list(self._j)

    @property
    def ub(self) -> list:
        """Per row, the upper ends of the intervals (cumulative probabilities)."""
        return list(self._ub)

    @property
    def probs(self) -> list:
        """Per row, Pr(published j | original i) (the lengths of the intervals)."""
        return [np.diff(u, prepend=0.0) for u in self._ub]

    @property
    def max_deviation(self) -> int:
        """D: the largest |published - original|."""
        return max(-self.vmin, self.vmax)

    @property
    def threshold(self) -> int:
        """js: no positive count up to js is ever published."""
        return min((int(a[a > 0].min()) for a in self._j if (a > 0).any()), default=1) - 1

    def mean(self) -> np.ndarray:
        """Expected perturbation of each row.

        Returns
        -------
        numpy.ndarray
            ``m[i]`` = E[published - i | original i], i = 0 .. top.
        """
        return np.array([p @ (j - min(i, self.top)) for i, (j, p)
                         in enumerate(zip(self._j, self.probs))])

    def bias(self, tol: float = _BIAS_TOL) -> dict:
        """The rows whose expected perturbation is not 0: the handbook asks a p-table to
        be unbiased, E[published - original | original] = 0 for every count.

        Parameters
        ----------
        tol : float, default 1e-9
            Expected perturbations within ``tol`` of 0 count as 0.

        Returns
        -------
        dict
            ``{original count i: E[published - i | i]}`` for every biased row (row
            ``top`` stands for every count from ``top`` on); empty when unbiased.

        Examples
        --------
        >>> pt = PTable.from_matrix({0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {1: 0.5, 3: 0.5}})
        >>> pt.bias()
        {}
        """
        m = self.mean()
        return {i: float(m[i]) for i in range(m.size) if abs(m[i]) > tol}

    def _warn_if_biased(self, tol: float, stacklevel: int = 2, relative: bool = False):
        """A ``UserWarning`` naming the biased rows and their biases (not an error: biased
        p-tables exist; their releases are analysed all the same).  ``relative``: the
        tolerance is ``tol`` times each row's sum of |perturbation| (a file's digits)."""
        m = self.mean()
        if relative:
            lim = np.array([tol * max(1.0, float(np.abs(j - min(i, self.top)).sum()))
                            for i, j in enumerate(self._j)])
        else:
            lim = np.full(m.size, tol)
        bad = [i for i in range(m.size) if abs(m[i]) > lim[i]]
        if not bad:
            return
        shown = ", ".join(f"{i}{' and above' if i == self.top else ''}: {m[i]:+.6g}"
                          for i in bad[:_BIAS_SHOWN])
        more = f" (and {len(bad) - _BIAS_SHOWN} more rows)" if len(bad) > _BIAS_SHOWN else ""
        warnings.warn(
            f"the p-table ({self.source or 'p-table'}) is biased: the expected perturbation "
            f"E[published - original | original] is not 0 for the original counts {shown}"
            f"{more} (tolerance {tol:g}); the SDC handbook asks a p-table to be unbiased "
            "(PTable.design makes one); a biased p-table is used as it is",
            UserWarning, stacklevel=stacklevel)

    def variance(self) -> np.ndarray:
        """Variance of the perturbation of each row.

        Returns
        -------
        numpy.ndarray
            ``v[i]`` = Var[published - i | original i], i = 0 .. top.
        """
        m = self.mean()
        return np.array([p @ (j - min(i, self.top) - m[i]) ** 2 for i, (j, p)
                         in enumerate(zip(self._j, self.probs))])

    def matrix(self) -> np.ndarray:
        """Dense transition matrix.

        Returns
        -------
        numpy.ndarray
            ``M[i, j]`` = Pr(published j | original i) for i = 0..top, j = 0..largest
            published value.
        """
        M = np.zeros((self.top + 1, int(max(a.max() for a in self._j)) + 1))
        for i, (j, p) in enumerate(zip(self._j, self.probs)):
            M[i, j] = p
        return M

    def prob(self, published, original) -> np.ndarray:
        """Pr(published | original), broadcast over arrays.

        Parameters
        ----------
        published, original : int or array_like of int
            Published and original counts (broadcast together).

        Returns
        -------
        numpy.ndarray
            The probabilities, of the broadcast shape; 0 where ``published`` cannot come
            from ``original`` (and for a negative original).
        """
        y, x = np.broadcast_arrays(np.asarray(published, dtype=np.int64),
                                   np.asarray(original, dtype=np.int64))
        return np.exp(self._loglik(y, x))

    def _loglik(self, y, x) -> np.ndarray:
        v = y - x
        ok = (v >= self.vmin) & (v <= self.vmax) & (x >= 0)
        r = np.clip(x, 0, self.top)
        return np.where(ok, self._logp[r, np.clip(v - self.vmin, 0, self._logp.shape[1] - 1)],
                        -np.inf)

    def perturb(self, original, key) -> np.ndarray:
        """Published values of counts ``original`` with cell keys ``key``: the value whose
        interval holds the key (the first upper end above it).

        Parameters
        ----------
        original : int or array_like of int
            Original counts (>= 0).
        key : float or array_like of float
            Cell keys in [0, 1), broadcast to the shape of ``original``.

        Returns
        -------
        numpy.ndarray
            The published counts (int64), of the shape of ``original``.
        """
        x = np.asarray(original, dtype=np.int64)
        u = np.broadcast_to(np.asarray(key, dtype=float), x.shape)
        r = np.minimum(x, self.top)
        out = np.empty_like(x)
        for row in np.unique(r):
            m = r == row
            b = np.searchsorted(self._ub[row], u[m], side="right")
            out[m] = x[m] + self._j[row][np.minimum(b, self._j[row].size - 1)] - row
        return out

    def __eq__(self, other):
        return isinstance(other, PTable) and self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self) -> str:
        return f"PTable({self.describe()})"

    def describe(self) -> str:
        """The p-table in one line: its design parameters, or its source, rows,
        perturbations and threshold.

        Returns
        -------
        str
        """
        if self.params and "D" in self.params:
            p = self.params
            return (f"D={p['D']}, V={p['V']}, js={p['js']}"
                    + (f", pstay={p['pstay']}" if p.get("pstay") is not None else ""))
        return (f"{self.source or 'p-table'}: rows 0..{self.top}, perturbations "
                f"{self.vmin}..{self.vmax}, js={self.threshold}")

    # --- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The p-table as plain lists (JSON), read back by :meth:`from_dict`.

        Returns
        -------
        dict
            ``j`` and ``ub`` per row (lists), ``source``, ``params``.
        """
        return {"j": [a.tolist() for a in self._j], "ub": [a.tolist() for a in self._ub],
                "source": self.source, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict) -> PTable:
        """The p-table that :meth:`to_dict` described, checked.

        Parameters
        ----------
        d : dict
            ``j`` and ``ub`` per row; optional ``source`` and ``params``.

        Returns
        -------
        PTable

        Raises
        ------
        ValueError
            If ``j`` or ``ub`` is missing, their numbers of rows differ, or a row breaks a
            rule of every p-table (the message names the row and the rule).
        """
        if not isinstance(d, dict) or "j" not in d or "ub" not in d:
            raise ValueError(f"a p-table description needs 'j' and 'ub' per row, got {d!r}")
        if len(d["j"]) != len(d["ub"]):
            raise ValueError(f"a p-table description has {len(d['j'])} rows of 'j' but "
                             f"{len(d['ub'])} of 'ub'")
        rows = [(np.asarray(j), np.diff(np.asarray(u, dtype=float), prepend=0.0))
                for j, u in zip(d["j"], d["ub"])]
        j, ub = _checked(rows, "p-table", _MATRIX_TOL, [np.asarray(u, dtype=float)
                                                        for u in d["ub"]])
        return cls(j, ub, d.get("source", ""), d.get("params"))

    def frame(self):
        """The p-table as a DataFrame with the ptable package's columns.

        Returns
        -------
        pandas.DataFrame
            One row per (original i, published j): columns i, j, p, v (= j - i),
            p_int_lb, p_int_ub (the interval of the lookup).
        """
        import pandas as pd
        rows = []
        for i, (j, u) in enumerate(zip(self._j, self._ub)):
            lb = np.concatenate([[0.0], u[:-1]])
            for a, b, c in zip(j.tolist(), lb.tolist(), u.tolist()):
                rows.append((i, a, c - b, a - i, b, c))
        return pd.DataFrame(rows, columns=["i", "j", "p", "v", "p_int_lb", "p_int_ub"])

    def write(self, path, format: str = "tauargus") -> None:
        """Write the p-table to a file that :meth:`read` (and tau-Argus or ptable) reads.

        Parameters
        ----------
        path : str or Path
            The file to write (replaced if it exists).
        format : {"tauargus", "ptable"}
            ``"tauargus"``: ``i;j;p;v;p_int_ub``, as tau-Argus reads it; ``"ptable"``: the
            ptable package's columns, comma-separated, with type 'all'.
        """
        V.choice(format, "format", ("tauargus", "ptable"))
        f = self.frame()
        if format == "tauargus":
            f = f[["i", "j", "p", "v", "p_int_ub"]]
            text = "i;j;p;v;p_int_ub\n" + "".join(
                f"{a};{b};{c!r};{d};{e!r}\n" for a, b, c, d, e in f.itertuples(index=False))
        else:
            text = "i,j,p,v,p_int_lb,p_int_ub,type\n" + "".join(
                f"{a},{b},{c!r},{d},{e!r},{g!r},all\n"
                for a, b, c, d, e, g in f.itertuples(index=False))
        Path(path).write_text(text)

    # --- constructors ----------------------------------------------------------------------
    @classmethod
    def from_matrix(cls, matrix, source: str = "matrix") -> PTable:
        """A p-table from its transition matrix.

        Parameters
        ----------
        matrix : 2-D array_like or dict
            ``M[i][j] = Pr(published j | original i)``, i = 0..top (the last row applies
            to every larger count): a 2-D array, or ``{i: {j: p}}``.  Rows must sum to 1
            within 1e-12.
        source : str
            Where it came from, for :meth:`describe`.

        Returns
        -------
        PTable

        Warns
        -----
        UserWarning
            If a row's expected perturbation is not 0 (beyond 1e-9): a biased p-table,
            named with its counts and biases (:meth:`bias`).

        Raises
        ------
        TypeError
            If the matrix does not hold real numbers (or a dict row is not a dict).
        ValueError
            If the rows are not 0, 1, ..., top, or a row breaks a rule of every p-table.
        """
        if isinstance(matrix, dict):
            keys = sorted(matrix)
            if keys != list(range(len(keys))):
                raise ValueError(f"the rows of a p-table must be the original counts 0, 1, ..., "
                                 f"top without gaps, got {keys}")
            rows = []
            for i in keys:
                r = matrix[i]
                if not isinstance(r, dict):
                    raise TypeError(f"row {i} of a p-table dict must be a dict {{published: "
                                    f"probability}}, got {type(r).__name__}")
                js = sorted(r)
                rows.append((np.asarray(js), np.asarray([r[j] for j in js], dtype=float)))
        else:
            M = np.asarray(matrix)
            if M.ndim != 2 or M.size == 0:
                raise ValueError(f"a p-table matrix must be 2-D (rows: original counts, "
                                 f"columns: published counts), got shape {M.shape}")
            if not np.issubdtype(M.dtype, np.number) or np.iscomplexobj(M):
                raise TypeError(f"a p-table matrix must hold real probabilities, got dtype "
                                f"{M.dtype}")
            M = M.astype(float)
            rows = [(np.flatnonzero(m != 0), m[m != 0]) for m in M]
            for i, m in enumerate(M):        # errors should name negative entries too
                if (m < 0).any():
                    rows[i] = (np.arange(m.size), m)
        j, ub = _checked(rows, "p-table matrix", _MATRIX_TOL)
        out = cls(j, ub, source)
        out._warn_if_biased(_BIAS_TOL, stacklevel=3)
        return out

    @classmethod
    def read(cls, path) -> PTable:
        """Read a p-table file.

        Parameters
        ----------
        path : str or Path
            tau-Argus's format (``;``-separated ``i;j;p;v;p_int_ub``, a header line of
            names, rows grouped by i = 0..top; the ptable package's ``pt_export`` writes
            it) or the ptable package's table (``i, j, p, v, p_int_lb, p_int_ub, type``;
            ``,`` or ``;``).  The interval bounds are what the lookup uses; without them,
            the cumulated ``p``.

        Returns
        -------
        PTable
            With source ``"file NAME"``.

        Warns
        -----
        UserWarning
            If a row's expected perturbation is not 0 (beyond 1e-8 times the row's sum of
            |perturbation|: the file's digits): a biased p-table (:meth:`bias`).

        Raises
        ------
        FileNotFoundError
            If there is no file at ``path``.
        ValueError
            If a line is not a p-table row (the message names the file and line), or a
            row breaks a rule of every p-table.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no p-table file at {str(path)!r}")
        lines = [ln.strip() for ln in path.read_text().splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("#")]
        if len(lines) < 2:
            raise ValueError(f"{path.name}: a p-table file needs a header line and at least "
                             "one row")
        sep = ";" if ";" in lines[0] else "," if "," in lines[0] else None
        names = [c.strip().strip('"').strip("'").lower() for c in lines[0].split(sep)]
        col = {n: k for k, n in enumerate(names)}
        if not ({"i", "j"} <= set(col)):       # tau-Argus reads by position
            col = {"i": 0, "j": 1, "p": 2, "v": 3, "p_int_ub": 4}
        ubname = next((n for n in ("p_int_ub", "p_ij_ub", "p_ub", "ub") if n in col), None)
        if ubname is None and "p" not in col:
            raise ValueError(f"{path.name}: a p-table file needs a column of probabilities "
                             f"(p) or of interval upper bounds (p_int_ub); columns: {names}")
        rows, ubs, cur = [], [], None
        for n, ln in enumerate(lines[1:], start=2):
            f = [c.strip().strip('"') for c in ln.split(sep)]
            where = f"{path.name} line {n}"
            if len(f) < len(names) and len(f) <= max(col.values()):
                raise ValueError(f"{where}: {len(f)} fields, expected {len(names)}: {ln!r}")
            try:
                i, j = _int_field(f[col["i"]]), _int_field(f[col["j"]])
                p = float(f[col["p"]]) if "p" in col else None
                ub = float(f[col[ubname]]) if ubname else None
                lb = float(f[col["p_int_lb"]]) if "p_int_lb" in col else None
                v = _int_field(f[col["v"]]) if "v" in col else None
            except ValueError:
                raise ValueError(f"{where}: not a p-table row (i, j integers; p, bounds "
                                 f"numbers): {ln!r}") from None
            if "type" in col and f[col["type"]].lower() not in ("all", ""):
                raise ValueError(f"{where}: rows of type {f[col['type']]!r} belong to a "
                                 "p-table for magnitudes; the cell key method for counts "
                                 "needs type 'all'")
            if i != cur:
                if i != len(rows):
                    raise ValueError(f"{where}: rows must run over the original counts 0, 1, "
                                     f"... in order, each once; got i={i} after "
                                     f"{'no row' if cur is None else f'i={cur}'}")
                rows.append([])
                ubs.append([])
                cur = i
            if v is not None and v != j - i:
                raise ValueError(f"{where}: v={v} but j - i = {j - i} (v is the perturbation "
                                 "published - original)")
            prev = ubs[-1][-1] if ubs[-1] else 0.0
            if ub is None:
                ub = prev + p
            if lb is not None and abs(lb - prev) > 1e-9:
                raise ValueError(f"{where}: interval [{lb}, {ub}) does not start where the "
                                 f"previous one of row {i} ends ({prev})")
            if p is not None and abs(p - (ub - prev)) > 1e-6:
                raise ValueError(f"{where}: p={p} but its interval [{prev}, {ub}) has length "
                                 f"{ub - prev}")
            rows[-1].append(j)
            ubs[-1].append(ub)
        ub_arrays = [np.asarray(u) for u in ubs]
        for i, u in enumerate(ub_arrays):
            if abs(u[-1] - 1.0) <= _FILE_TOL:
                u[-1] = 1.0                # the file's rounding: the last interval ends at 1
        prs = [(np.asarray(j), np.diff(u, prepend=0.0)) for j, u in zip(rows, ub_arrays)]
        j, ub = _checked(prs, path.name, _FILE_TOL, ub_arrays)
        out = cls(j, ub, f"file {path.name}")
        out._warn_if_biased(_FILE_TOL, stacklevel=3, relative=True)
        return out

    @classmethod
    def design(cls, D: int, V: float, js: int = 0, pstay: float | None = None,
               mono: bool = True, variance: str = "exact") -> PTable:
        """The ptable package's maximum-entropy p-table (``create_cnt_ptable``).

        Rows i = 0 .. top, top = D when js = 0, else D + js + 1 (the top row applies to
        every larger count); row 0 keeps 0.  Row i publishes j in max(i - D, 0) .. i + D
        except 1..js (so no count 1..js is published, and none is kept), with the
        probabilities that maximise the entropy subject to: sum 1, mean perturbation 0,
        perturbation variance V, every probability >= 1e-8, the probability of keeping i
        >= ``pstay``, and with ``mono``, probabilities rising from the lowest published
        value up to i.  Solved row by row with SLSQP from a feasible point (HiGHS).

        ``variance="exact"``: every row has variance V; where no row can (V too small or
        too large for the row's support) it is an error giving the range, and ``pstay`` is
        lowered by steps of 0.05 (up to 20 times) while no row meets the rest with it.
        ``variance="at_most"``: the package's own problem, variance <= V; rows whose
        maximum-entropy variance falls short of V (which the package reports as a
        violation to be fixed by another V) are kept, listed in ``params["short_rows"]``
        as ``[i, variance]``, and ``pstay`` is lowered, as the package does, while a row's
        variance falls short of V by more than 5e-4.  Wherever the package's rows reach V
        the two agree (the optimum is unique).  Perturbations that no row meeting the
        constraints can use (their probability is forced to 0) are left out.

        Parameters
        ----------
        D : int
            The largest perturbation |published - original| (>= 1).
        V : float
            The perturbation variance (> 0).
        js : int
            No positive count up to ``js`` is published (>= 0).
        pstay : float, optional
            Lower bound of the probability of keeping the original count, in (0, 1).
        mono : bool
            Probabilities rise from the lowest published value up to the original.
        variance : {"exact", "at_most"}
            Every row has variance V, or at most V (the package's problem).

        Returns
        -------
        PTable
            With ``params`` holding the design (and, for ``"at_most"``, ``short_rows``).

        Raises
        ------
        ValueError
            If a parameter is out of its range, or (``"exact"``) no row meets V; the
            message gives the variance range the row allows.
        """
        D = _integer(D, "D", 1)
        js = _integer(js, "js", 0)
        if D > MAX_DESIGN or js > MAX_DESIGN:
            raise ValueError(f"a designed p-table has D + js + 1 rows of up to 2 D + 1 values, "
                             f"each a maximum-entropy program: D={D}, js={js} is beyond the "
                             f"{MAX_DESIGN} this designs (published p-tables have D in the "
                             "tens); give the p-table itself (PTable.from_matrix, a file)")
        if isinstance(V, bool) or not isinstance(V, numbers.Real) or not math.isfinite(V) \
                or V <= 0:
            raise ValueError(f"V (the perturbation variance) must be a finite number > 0, "
                             f"got V={V!r}")
        if pstay is not None:
            if isinstance(pstay, bool) or not isinstance(pstay, numbers.Real) or \
                    not 0 < float(pstay) < 1:
                raise ValueError(f"pstay must be a probability strictly between 0 and 1 (or "
                                 f"None), got pstay={pstay!r}")
            pstay = float(pstay)
        if not isinstance(mono, bool):
            raise TypeError(f"mono must be True or False, got {mono!r}")
        V_ = float(V)
        variance = _choice(variance, "variance", ("exact", "at_most"))
        rows = _design(D, V_, js, pstay, mono, variance == "exact")
        j = [r[0] for r in rows]
        ub = [_cumulative(r[1]) for r in rows]
        params = {"D": D, "V": V_, "js": js, "pstay": pstay, "mono": mono}
        if variance == "at_most":
            params["variance"] = variance
            params["short_rows"] = [[i, float(p @ (jj - i) ** 2)] for i, (jj, p)
                                    in enumerate(rows) if i and p @ (jj - i) ** 2 < V_ - 1e-9]
        return cls(j, ub, "designed (maximum entropy, as ptable's create_cnt_ptable)", params)


#: the largest D (and js) :meth:`PTable.design` designs
MAX_DESIGN = 1000


def _choice(x, name: str, options) -> str:
    return V.choice(x, name, options)


def _integer(x, name: str, minimum: int) -> int:
    if isinstance(x, bool):
        raise TypeError(f"{name} must be an integer, got {name}={x!r}")
    return V.integer(x, name, minimum)


def _int_field(text: str) -> int:
    x = float(text)
    if not x.is_integer():
        raise ValueError(text)
    return int(x)


def _cumulative(p) -> np.ndarray:
    u = np.cumsum(np.asarray(p, dtype=float))
    u[-1] = 1.0
    return u


def _checked(rows, what: str, tol: float, ub=None):
    """Validate rows ``[(j, p), ...]`` (i = 0..top); returns ``(j, ub)`` per row with
    zero-probability entries left out.  ``ub``: the rows' given upper bounds (files) or
    None (cumulated from ``p``)."""
    if not rows:
        raise ValueError(f"{what}: a p-table needs at least row 0")
    top = len(rows) - 1
    out_j, out_ub = [], []
    for i, (j, p) in enumerate(rows):
        name = f"{what}: row {i} (original {i}{' and above' if i == top else ''})"
        j = np.asarray(j)
        p = np.asarray(p, dtype=float)
        if j.size == 0:
            raise ValueError(f"{name} is empty")
        if not np.issubdtype(j.dtype, np.integer):
            if not np.all(np.equal(np.mod(j.astype(float), 1), 0)):
                raise ValueError(f"{name}: published values must be integers, got "
                                 f"{j.tolist()}")
            j = j.astype(np.int64)
        if len(set(j.tolist())) != j.size:
            raise ValueError(f"{name} lists a published value twice: {j.tolist()}")
        if (j < 0).any():
            k = int(np.argmax(j < 0))
            raise ValueError(f"{name} publishes {int(j[k])} with probability {p[k]:g}: no "
                             "published value may be negative")
        if not np.all(np.isfinite(p)):
            raise ValueError(f"{name} has a probability that is not finite: {p.tolist()}")
        if (p < 0).any():
            k = int(np.argmax(p < 0))
            raise ValueError(f"{name} has probability {p[k]:g} for published {int(j[k])}: "
                             "probabilities must be >= 0")
        total = float(p.sum()) if ub is None else float(ub[i][-1])
        if abs(total - 1.0) > tol:
            raise ValueError(f"{name} sums to {total!r}: each row's probabilities must sum "
                             f"to 1 (within {tol:g})")
        if ub is not None and (np.diff(ub[i]) < 0).any():
            raise ValueError(f"{name}: the interval upper bounds must not decrease, got "
                             f"{ub[i].tolist()}")
        keep = p > 0
        if i == 0 and (j[keep].tolist() != [0]):
            raise ValueError(f"{name} must publish 0 with probability 1 (an empty cell has no "
                             f"records, so no key, and stays empty), got "
                             f"{dict(zip(j[keep].tolist(), p[keep].tolist()))}")
        u = _cumulative(p) if ub is None else np.asarray(ub[i], dtype=float)
        out_j.append(j[keep].astype(np.int64))
        out_ub.append(u[keep])
        out_ub[-1][-1] = 1.0
    return out_j, out_ub
