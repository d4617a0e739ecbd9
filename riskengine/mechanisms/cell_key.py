"""The cell key method for tables of counts (Eurostat's 2021 census recommendation;
tau-Argus 4.2, the R packages cellKey and ptable).

Every record carries a record key, uniform on [0, 1), drawn once and kept with the
microdata.  A cell's key is the fractional part of the sum of its records' keys, so the
same records give the same key in every table.  A p-table (:class:`PTable`) gives, for
each original count i (every count from its top row on shares that row), a partition of
[0, 1) into intervals, one per published value, of lengths Pr(published | i); a cell is
published as the value whose interval holds its key.  Totals are cells too, each
perturbed by its own key: the table does not add up.  The p-table is public (it travels
in the release); the keys are secret.

Keys are held on a grid of 2^-52 (a float key is rounded down to it): sums of keys
modulo 1 are then exact integer sums, so a cell's key does not depend on how its records
are added up (records, cells of a total, or the cells of another table).

Likelihood of a published table given the original (DESIGN.md): the product over the
published cells and totals of Pr(published - original | original), the keys being
unknown to the intruder and uniform.  Entries that hold the same records (the column
totals of a table with one row) are one cell with one key and count once.  For a cell
alone the product is exact; for a total and its cells it is an approximation, named in
the posterior's ``attrs["approximation"]``: any proper subset of the keys of a total and
its cells is independent and uniform, but the total's key is the fractional part of the
sum of its cells' keys.  Every entry's window holds the originals within the p-table's
largest perturbations of its published value; the routes are the table DP (2-D with every
total), the 3-D enumerator and the line route (1-D tables, tables without totals), and
the number of candidates is finite.

Examples
--------
The fictional p-table of the SDC handbook: a published 2 under a flat prior on 1..3.

>>> import numpy as np, riskengine as rk
>>> ck = rk.CellKey.from_matrix({0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2},
...                              3: {2: 0.3, 3: 0.4, 4: 0.3}})
>>> rel = rk.Release(np.array([2]), margins={}, mechanism=ck, dims=("v",))
>>> post = rk.posterior(rel, rk.priors.Flat(1, 3))
>>> [round(float(post.prob(np.array([x])).item()), 4) for x in (1, 2, 3)]
[0.3125, 0.5, 0.1875]
"""

from __future__ import annotations

import functools
import math
import numbers
from pathlib import Path

import numpy as np
from scipy.optimize import linprog, minimize

from .. import _validate as V
from ..inference import windows as win
from ..inference.enumerate_3d import Enumerate3D
from ..inference.gibbs import BlockGibbs
from ..inference.line import Line
from ..inference.linked import LinkedDP
from ..inference.linked_gibbs import LinkedGibbs
from ..inference.table_dp import TableDP
from ..release import Release
from ..table import Table, aligned, count_table
from ._base import Mechanism, register

__all__ = ["CellKey", "PTable"]

#: keys are integers in units of 2^-_BITS; sums wrap modulo 2^64, a multiple of 2^_BITS
_BITS = 52
_SCALE = float(2 ** _BITS)
_MASK = np.uint64(2 ** _BITS - 1)
#: smallest probability of a designed p-table's entry (as the ptable package)
_EPS = 1e-8
#: a row of a file must end within this of 1 (files hold 8 to 10 digits)
_FILE_TOL = 1e-8
#: a literal matrix's rows must sum to 1 within this
_MATRIX_TOL = 1e-12
_APPROX = ("the cell key likelihood multiplies each published entry's p-table probability "
           "as if the entries' keys were independent; a total's key is the fractional part "
           "of the sum of its cells' keys, so the keys of a total and of all its cells are "
           "tied (any proper subset of them is independent and uniform)")


# --- the p-table ----------------------------------------------------------------------------


class PTable:
    """Transition probabilities of the cell key method: Pr(published j | original i).

    Row ``i`` (``i = 0 .. top``) lists its published values ``j`` in lookup order and the
    upper ends ``ub`` of their intervals on [0, 1) (the last is 1); an original count
    above ``top`` uses the top row shifted: published ``x + (j - top)``.  Build one with
    :meth:`design`, :meth:`read`, :meth:`from_matrix` or :meth:`from_dict`.

    Rules every p-table obeys (an error names the row and the rule): row 0 publishes 0
    with probability 1 (an empty cell has no records, so no key), no published value is
    negative, every row's probabilities are >= 0 and sum to 1.
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
        """Expected perturbation of each row."""
        return np.array([p @ (j - min(i, self.top)) for i, (j, p)
                         in enumerate(zip(self._j, self.probs))])

    def variance(self) -> np.ndarray:
        """Variance of the perturbation of each row."""
        m = self.mean()
        return np.array([p @ (j - min(i, self.top) - m[i]) ** 2 for i, (j, p)
                         in enumerate(zip(self._j, self.probs))])

    def matrix(self) -> np.ndarray:
        """Dense transition matrix: ``M[i, j]`` for i = 0..top, j = 0..largest value."""
        M = np.zeros((self.top + 1, int(max(a.max() for a in self._j)) + 1))
        for i, (j, p) in enumerate(zip(self._j, self.probs)):
            M[i, j] = p
        return M

    def prob(self, published, original) -> np.ndarray:
        """Pr(published | original), broadcast over arrays."""
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
        """Published values of counts ``original`` with cell keys ``key`` (floats in
        [0, 1)): the value whose interval holds the key (the first upper end above it)."""
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
        if self.params and "D" in self.params:
            p = self.params
            return (f"D={p['D']}, V={p['V']}, js={p['js']}"
                    + (f", pstay={p['pstay']}" if p.get("pstay") is not None else ""))
        return (f"{self.source or 'p-table'}: rows 0..{self.top}, perturbations "
                f"{self.vmin}..{self.vmax}, js={self.threshold}")

    # --- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain lists (JSON): ``j`` and ``ub`` per row, ``source``, ``params``."""
        return {"j": [a.tolist() for a in self._j], "ub": [a.tolist() for a in self._ub],
                "source": self.source, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict) -> PTable:
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
        """The p-table as a DataFrame with the ptable package's columns: i, j, p, v,
        p_int_lb, p_int_ub."""
        import pandas as pd
        rows = []
        for i, (j, u) in enumerate(zip(self._j, self._ub)):
            lb = np.concatenate([[0.0], u[:-1]])
            for a, b, c in zip(j.tolist(), lb.tolist(), u.tolist()):
                rows.append((i, a, c - b, a - i, b, c))
        return pd.DataFrame(rows, columns=["i", "j", "p", "v", "p_int_lb", "p_int_ub"])

    def write(self, path, format: str = "tauargus") -> None:
        """Write the p-table: ``"tauargus"`` (``i;j;p;v;p_int_ub``, as tau-Argus reads it)
        or ``"ptable"`` (the ptable package's columns, comma-separated, with type 'all')."""
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
        """A p-table from ``M[i][j] = Pr(published j | original i)``, i = 0..top (the last
        row applies to every larger count): a 2-D array, or ``{i: {j: p}}``.  Rows must
        sum to 1 within 1e-12."""
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
        return cls(j, ub, source)

    @classmethod
    def read(cls, path) -> PTable:
        """Read a p-table file: tau-Argus's format (``;``-separated ``i;j;p;v;p_int_ub``,
        a header line of names, rows grouped by i = 0..top; the ptable package's
        ``pt_export`` writes it) or the ptable package's table (``i, j, p, v, p_int_lb,
        p_int_ub, type``; ``,`` or ``;``).  The interval bounds are what the lookup uses;
        without them, the cumulated ``p``."""
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
        return cls(j, ub, f"file {path.name}")

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
        """
        D = _integer(D, "D", 1)
        js = _integer(js, "js", 0)
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


# --- the maximum-entropy design (ptable's construction) ----------------------------------------


@functools.lru_cache(maxsize=64)
def _design(D: int, V: float, js: int, pstay, mono: bool, exact: bool) -> tuple:
    top = D if js == 0 else D + js + 1
    rows = [(np.array([0]), np.array([1.0]))]
    for i in range(1, top + 1):
        j = np.arange(max(i - D, 0), i + D + 1)
        j = j[~((j >= 1) & (j <= js))]
        v = (j - i).astype(float)
        lb = np.full(v.size, _EPS)
        stay = v == 0
        if pstay is not None and stay.any():
            lb[stay] = pstay

        def retry(p, stay=stay, v=v):  # the package's loop: lower pstay's bound by 0.05
            if pstay is None or not stay.any() or p is None:
                return exact and p is None and pstay is not None and stay.any()
            return not exact and p @ (v * v) < V - 5e-4

        p = _max_entropy_row(v, V, lb, mono, exact)
        tries = 0
        while retry(p) and tries < 20:
            lb[stay] = max(lb[stay][0] - 0.05, _EPS)
            tries += 1
            p = _max_entropy_row(v, V, lb, mono, exact)
        if p is None:
            lo, hi = _variance_range(v, mono)
            rise = " and probabilities rising up to the original" if mono else ""
            hint = ("" if not exact or V < lo else
                    "; variance='at_most' gives the ptable package's rows, whose variance may "
                    "fall short of V")
            raise ValueError(f"no p-table row for original {i} has variance "
                             f"{'' if exact else 'at most '}V={V:g}: with perturbations "
                             f"{int(v.min())}..{int(v.max())} (|v| <= D={D}, published >= 0"
                             f"{f', no published 1..{js}' if js else ''}), mean 0{rise} a "
                             f"row's variance lies in [{lo:.6g}, {hi:.6g}]{hint}")
        keep = p > 0
        rows.append((j[keep], p[keep]))
    return tuple(rows)


def _constraints(v, mono, V=None, exact=True):
    """``(A_eq, b_eq, A_ub, b_ub)``: sum 1, mean 0 and (``exact``) variance V; the
    monotone rise up to v = 0 and (not ``exact``) variance <= V.  ``V=None``: no
    variance constraint."""
    n = v.size
    A_eq, b_eq = [np.ones(n), v], [1.0, 0.0]
    A_ub, b_ub = [], []
    if V is not None:
        (A_eq if exact else A_ub).append(v * v)
        (b_eq if exact else b_ub).append(V)
    z = np.flatnonzero(v == 0)
    if mono and z.size and z[0] > 0:
        for k in range(z[0]):               # p[k] - p[k + 1] <= 0 below the original
            row = np.zeros(n)
            row[k], row[k + 1] = 1.0, -1.0
            A_ub.append(row)
            b_ub.append(0.0)
    return (np.array(A_eq), np.array(b_eq), np.array(A_ub).reshape(-1, n) if A_ub else None,
            np.array(b_ub) if b_ub else None)


def _variance_range(v, mono) -> tuple:
    A_eq, b_eq, A_ub, b_ub = _constraints(v, mono)
    out = []
    for sign in (1.0, -1.0):
        r = linprog(sign * v * v, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, 1),
                    method="highs")
        out.append(float(v * v @ r.x) if r.status == 0 else math.nan)
    return tuple(out)


def _max_entropy_row(v, V, lb, mono, exact):
    """Probabilities on the perturbations ``v`` maximising the entropy subject to sum 1,
    mean 0, variance V (``exact``) or at most V, ``p >= lb`` and (``mono``) the rise up to
    v = 0; ``None`` when no row meets them.  Entries the constraints force to 0 (with
    ``lb`` relaxed to 0) are 0."""
    n = v.size
    A_eq, b_eq, A_ub, b_ub = _constraints(v, mono, V, exact)
    # entries some feasible row (bounds relaxed to 0) uses: the rest are forced to 0
    use = np.zeros(n, bool)
    for k in range(n):
        c = np.zeros(n)
        c[k] = -1.0
        r = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, 1),
                    method="highs")
        if r.status != 0:
            return None
        use[k] = r.x[k] > 1e-12
    lbu = np.where(use, lb, 0.0)
    ubu = np.where(use, 1.0, 0.0)
    start = linprog(np.zeros(n), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                    bounds=list(zip(lbu, ubu)), method="highs")
    if start.status != 0:
        return None
    idx = np.flatnonzero(use)
    Ae, Au = A_eq[:, idx], None if A_ub is None else A_ub[:, idx]
    cons = [{"type": "eq", "fun": lambda q: Ae @ q - b_eq, "jac": lambda q: Ae}]
    if Au is not None:
        cons.append({"type": "ineq", "fun": lambda q: b_ub - Au @ q, "jac": lambda q: -Au})

    def negent(q):
        return float(q @ np.log(np.maximum(q, 1e-300)))

    def grad(q):
        return np.log(np.maximum(q, 1e-300)) + 1.0

    res = minimize(negent, start.x[idx], jac=grad, method="SLSQP", constraints=cons,
                   bounds=list(zip(lbu[idx], ubu[idx])),
                   options={"ftol": 1e-15, "maxiter": 3000})
    q = np.clip(res.x, lbu[idx], 1.0)
    # the last bits of the equality constraints: the least-norm correction of the entries
    # off their lower bounds
    free = q > lbu[idx] + 1e-10
    if free.any():
        Af = Ae[:, free]
        q[free] += Af.T @ np.linalg.lstsq(Af @ Af.T, b_eq - Ae @ q, rcond=None)[0]
    ok = np.abs(Ae @ q - b_eq).max() <= 1e-9 and (q >= lbu[idx] - 1e-15).all()
    if Au is not None:
        ok &= bool((Au @ q - b_ub).max() <= 1e-9)
    if not ok:
        raise RuntimeError(f"the maximum-entropy row on perturbations {v.tolist()} did not "
                           f"converge ({res.message})")
    p = np.zeros(n)
    p[idx] = q
    return p


# --- keys -------------------------------------------------------------------------------------


def _units(keys, what: str) -> np.ndarray:
    """Keys in [0, 1) as integers in units of 2^-52 (rounded down)."""
    k = np.asarray(keys)
    if k.dtype == object or not np.issubdtype(k.dtype, np.number) or np.iscomplexobj(k):
        raise TypeError(f"{what} must be numbers in [0, 1), got dtype {k.dtype}")
    k = k.astype(float)
    bad = ~np.isfinite(k) | (k < 0) | (k >= 1)
    if bad.any():
        raise ValueError(f"{what} must lie in [0, 1), got {float(k[bad][0])!r}")
    return np.floor(k * _SCALE).astype(np.uint64)


def _columns(data) -> dict:
    if isinstance(data, dict):
        return {str(c): np.asarray(v) for c, v in data.items()}
    if hasattr(data, "columns") and hasattr(data, "__getitem__"):  # pandas.DataFrame
        return {str(c): np.asarray(data[c]) for c in data.columns}
    raise TypeError(f"records must be a pandas.DataFrame or a dict of columns, got "
                    f"{type(data).__name__}")


def entry_windows(release) -> win.EntryWindows:
    """Every published cell and total: the originals within the p-table's perturbations of
    its published value, with log Pr(published | original).  An entry holding the same
    records as an earlier one (a size-1 dim summed away) gets weight 1 on the same window:
    it is the same cell with the same key."""
    pt = release.mechanism.ptable
    W = pt.vmax - pt.vmin + 1
    lo, lw, seen = {}, {}, {}
    approx = False
    for keep, val in [(release.dims, release.published), *release.margins.items()]:
        y = np.asarray(val, dtype=np.int64)
        canon = tuple(d for d in keep if release.shape[release.dims.index(d)] > 1)
        first = np.maximum(y - pt.vmax, 0)
        x = first[..., None] + np.arange(W)
        ll = pt._loglik(y[..., None], x)
        if canon in seen:
            ll = np.where(np.isfinite(ll), 0.0, -np.inf)
        else:
            seen[canon] = keep
            approx |= keep != release.dims
        lo[keep], lw[keep] = first, ll
    return win.EntryWindows(release.dims, release.shape, lo, lw, _APPROX if approx else "")


@register
class CellKey(Mechanism):
    """The cell key method on a table of counts and every published total.

    Parameters
    ----------
    ptable : PTable, str or path, dict, 2-D array, optional
        The p-table: a :class:`PTable`, a file (tau-Argus or the ptable package,
        :meth:`PTable.read`), ``{i: {j: p}}`` or a matrix (:meth:`PTable.from_matrix`), or
        a :meth:`PTable.to_dict` description.
    D, V, js, pstay, mono, variance
        Instead of ``ptable``: design one by maximum entropy (:meth:`PTable.design`).
    """

    name = "cell_key"
    additive = False              # every total has its own key: the table does not add up
    aliases = ("cellkey", "ckm")
    keyed = True                  # the same records give the same key in every table
    path_parameters = ("ptable",)
    windows = staticmethod(entry_windows)
    set_routes = (LinkedDP(), LinkedGibbs())
    routes = (TableDP(entry_windows), Enumerate3D(entry_windows), Line(entry_windows),
              BlockGibbs(entry_windows))

    def __init__(self, ptable=None, D=None, V=None, js=0, pstay=None, mono=True,
                 variance="exact"):
        if ptable is None:
            if D is None or V is None:
                raise ValueError("CellKey needs a p-table: ptable=... (a PTable, a file, a "
                                 "matrix) or the design parameters D and V (js, pstay)")
            ptable = PTable.design(D, V, js, pstay, mono, variance)
        else:
            if D is not None or V is not None or js != 0 or pstay is not None or not mono \
                    or variance != "exact":
                raise ValueError("give either ptable=... or the design parameters D, V, js, "
                                 "pstay, mono, not both")
            if isinstance(ptable, (str, Path)):
                ptable = PTable.read(ptable)
            elif isinstance(ptable, dict) and "ub" in ptable:
                ptable = PTable.from_dict(ptable)
            elif not isinstance(ptable, PTable):
                ptable = PTable.from_matrix(ptable)
        self.ptable = ptable

    @classmethod
    def from_matrix(cls, matrix) -> CellKey:
        """The cell key method with the literal p-table ``matrix`` (:meth:`PTable.from_matrix`)."""
        return cls(ptable=PTable.from_matrix(matrix))

    @classmethod
    def design(cls, D, V, js=0, pstay=None, mono=True, variance="exact") -> CellKey:
        """The cell key method with ptable's maximum-entropy p-table (:meth:`PTable.design`)."""
        return cls(D=D, V=V, js=js, pstay=pstay, mono=mono, variance=variance)

    def _params(self) -> dict:
        return {"ptable": self.ptable.to_dict()}

    def describe(self) -> str:
        return f"CellKey({self.ptable.describe()})"

    # --- protection ----------------------------------------------------------------------
    @staticmethod
    def record_keys(n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` record keys, uniform on [0, 1) (on the 2^-52 grid the keys are held on)."""
        n = V.integer(n, "n", 0)
        return Mechanism._rng(rng).integers(0, 2 ** _BITS, n).astype(float) / _SCALE

    @staticmethod
    def tabulate(records, dims, record_key: str = "record_key", categories: dict | None = None,
                 margins=None) -> tuple:
        """``(table, keys)`` from microdata: the counts of each cell and each cell's key (the
        fractional part of the sum of its records' keys; 0 for an empty cell).

        ``records``: a DataFrame or dict of columns, one row per record; ``dims``: the
        columns that classify a record; ``categories``: ``{dim: [labels in order]}``
        (default: the sorted labels of the data); ``margins``: the published totals, as
        in :class:`~riskengine.Table`."""
        cols = _columns(records)
        dims = (dims,) if isinstance(dims, str) else tuple(str(d) for d in dims)
        if not dims or len(set(dims)) != len(dims):
            raise ValueError(f"dims must name one or more distinct columns, got {dims}")
        missing = [c for c in (*dims, record_key) if c not in cols]
        if missing:
            raise ValueError(f"unknown columns {missing}; the records have columns "
                             f"{sorted(cols)}")
        units = _units(cols[record_key], f"record keys (column {record_key!r})")
        if units.ndim != 1:
            raise ValueError(f"column {record_key!r} must be 1-D, got shape {units.shape}")
        categories = dict(categories or {})
        codes, labels = [], {}
        for d in dims:
            col = np.asarray(cols[d], dtype=object)
            if col.shape != units.shape:
                raise ValueError(f"column {d!r} has {col.size} rows, column {record_key!r} "
                                 f"has {units.size}")
            if d in categories:
                order = list(categories[d])
            else:
                try:
                    order = sorted(set(col.tolist()))
                except TypeError:
                    raise TypeError(f"labels of column {d!r} cannot be sorted (mixed types); "
                                    "give their order in categories=") from None
            pos = {lab: k for k, lab in enumerate(order)}
            try:
                codes.append(np.fromiter((pos[x] for x in col.tolist()), np.int64, col.size))
            except KeyError as exc:
                raise ValueError(f"column {d!r} holds {exc.args[0]!r}, which is not among its "
                                 f"categories {order}") from None
            labels[d] = order
        shape = tuple(len(labels[d]) for d in dims)
        if any(s == 0 for s in shape):
            raise ValueError(f"every dim needs at least one category, got shape {shape}")
        flat = np.ravel_multi_index(tuple(codes), shape)
        counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
        acc = np.zeros(int(np.prod(shape)), dtype=np.uint64)
        np.add.at(acc, flat, units)                      # wraps modulo 2^64
        keys = (acc & _MASK).astype(float).reshape(shape) / _SCALE
        return Table(counts, dims=dims, coords=labels, margins=margins), keys

    def protect(self, table, rng: np.random.Generator | None = None, keys=None):
        """Perturb every cell and every published total of ``table`` by its cell key.

        ``keys``: each cell's key in [0, 1) (an array of the table's shape, or a labelled
        DataArray), e.g. from :meth:`tabulate`; an empty cell's key is 0 whatever is
        given (it has no records).  Without ``keys``, each nonempty cell's key is drawn
        from ``rng`` (uniform, as the fractional part of a sum of uniform record keys
        is).  A total's key is the fractional part of the sum of its cells' keys."""
        table = count_table(table, self.describe())
        if keys is None:
            rng = self._rng(rng)
            units = rng.integers(0, 2 ** _BITS, table.shape).astype(np.uint64)
        else:
            units = _units(aligned(keys, table.dims, table.coords, "keys"), "keys")
        units = np.where(table.values > 0, units, np.uint64(0))
        pt = self.ptable
        cells = pt.perturb(table.values, units.astype(float) / _SCALE)
        margins = {}
        for keep, val in table.totals().items():
            axes = tuple(k for k, d in enumerate(table.dims) if d not in keep)
            u = np.asarray(units.sum(axis=axes, dtype=np.uint64)) & _MASK
            margins[keep] = pt.perturb(val, u.astype(float) / _SCALE)
        return Release(published=cells, margins=margins, mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def protect_records(self, records, dims, record_key: str = "record_key",
                        categories: dict | None = None, margins=None):
        """The release of the table of ``records`` (:meth:`tabulate`): the same records give
        the same perturbation in every table they are tabulated into."""
        table, keys = self.tabulate(records, dims, record_key, categories, margins)
        return self.protect(table, keys=keys)

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a cell-key release publishes a perturbed count table")
        if np.isnan(np.asarray(release.published, dtype=float)).any():
            raise ValueError("a cell-key release has no suppressed (NaN) cells")
        if release.groups:
            raise ValueError("cell-key releases with subtotals are not supported")
        blocks = [(release.dims, np.asarray(release.published)), *release.margins.items()]
        seen = {}
        for keep, val in blocks:
            what = "published" if keep == release.dims else f"margin {keep}"
            canon = tuple(d for d in keep if release.shape[release.dims.index(d)] > 1)
            y = np.asarray(val, dtype=np.int64)
            if canon in seen:
                k0, y0 = seen[canon]
                if not np.array_equal(y0.ravel(), y.ravel()):
                    other = "published" if k0 == release.dims else f"margin {k0}"
                    raise ValueError(
                        f"{what} holds the same records as {other} (the dims summed between "
                        f"them have one category), so the same cell keys and published values;"
                        f" got {y.ravel().tolist()} and {y0.ravel().tolist()}")
                continue
            seen[canon] = (keep, y)
        ew = entry_windows(release)
        for keep, lw in ew.lw.items():
            dead = ~np.isfinite(lw).any(axis=-1)
            if dead.any():
                what = "published" if keep == release.dims else f"margin {keep}"
                at = tuple(int(i) for i in np.argwhere(np.atleast_1d(dead))[0])
                y = np.atleast_1d(np.asarray(release.published if keep == release.dims
                                             else release.margins[keep]))[at]
                raise ValueError(f"{what} value {int(y)} at {at} cannot come from any original "
                                 f"count under this p-table ({self.ptable.describe()})")
