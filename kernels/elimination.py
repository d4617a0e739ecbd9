"""Exact sum-product over a factor graph of small discrete variables (plain NumPy).

Used for the structured exact route of cyclic perturbation: the variables are
the cycle signs, the factors are the per-group prior terms and the per-cycle
coin probabilities.  When the interaction graph is narrow (the diagonal design
is a ring), a clique tree built from one elimination order gives the partition
function and the marginal of every factor scope in two passes, in time linear
in the number of cycles.

A factor is ``(vars, table)``: ``vars`` a sorted tuple of variable ids, ``table``
an ndarray with one axis per variable (in that order).  Two semirings:

* ``"log"``: float64 log-weights; product = +, sum = log-sum-exp.
* ``"count"``: object arrays of Python ints; product = *, sum = + (exact).
"""

from __future__ import annotations

import numpy as np


def _logsumexp(a: np.ndarray, axis) -> np.ndarray:
    if a.size == 0:
        return np.full(np.delete(a.shape, axis), -np.inf)
    mx = np.max(a, axis=axis, keepdims=True)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - safe), axis=axis, keepdims=True)) + safe
    return np.squeeze(out, axis=axis)


class _Semiring:
    def __init__(self, kind: str):
        if kind not in ("log", "count"):
            raise ValueError(f"semiring must be 'log' or 'count', got {kind!r}")
        self.kind = kind

    def one(self):
        return np.array(0.0) if self.kind == "log" else np.array(1, dtype=object)

    def mul(self, a, b):
        return a + b if self.kind == "log" else a * b

    def sum(self, a, axes):
        if not axes:
            return a
        if self.kind == "log":
            return _logsumexp(a, tuple(axes))
        return a.sum(axis=tuple(axes))


def _expand(table: np.ndarray, vars_: tuple, union: tuple) -> np.ndarray:
    pos = {v: i for i, v in enumerate(vars_)}
    shape = [table.shape[pos[u]] if u in pos else 1 for u in union]
    return table.reshape(shape)


def product(factors, sr: _Semiring, sizes: dict):
    """Product of factors over the union of their scopes."""
    union = tuple(sorted(set().union(*[set(v) for v, _ in factors]))) if factors else ()
    out = np.broadcast_to(sr.one(), tuple(sizes[u] for u in union))
    out = np.array(out, dtype=object if sr.kind == "count" else float)
    for vars_, table in factors:
        out = sr.mul(out, _expand(table, vars_, union))
    return union, out


def sum_out(vars_: tuple, table: np.ndarray, drop, sr: _Semiring):
    drop = set(drop)
    axes = [i for i, v in enumerate(vars_) if v in drop]
    keep = tuple(v for v in vars_ if v not in drop)
    return keep, sr.sum(table, axes)


def elimination_order(scopes, variables) -> list:
    """Greedy min-weight order (size of the created clique, ties by fill-in)."""
    nbr = {v: set() for v in variables}
    for s in scopes:
        for a in s:
            nbr[a].update(x for x in s if x != a)
    order = []
    remaining = set(variables)
    while remaining:
        best, best_key = None, None
        for v in remaining:
            nv = nbr[v]
            fill = 0
            lst = list(nv)
            for i in range(len(lst)):
                for j in range(i + 1, len(lst)):
                    if lst[j] not in nbr[lst[i]]:
                        fill += 1
            key = (len(nv), fill, v)
            if best_key is None or key < best_key:
                best, best_key = v, key
                if len(nv) <= 1:
                    break
        order.append(best)
        nv = nbr[best]
        for a in nv:
            nbr[a].discard(best)
            nbr[a].update(x for x in nv if x != a)
        del nbr[best]
        remaining.discard(best)
    return order


def max_clique_size(scopes, variables, order=None) -> int:
    """Largest clique (number of variables) created by eliminating in ``order``."""
    order = elimination_order(scopes, variables) if order is None else order
    nbr = {v: set() for v in variables}
    for s in scopes:
        for a in s:
            nbr[a].update(x for x in s if x != a)
    width = 0
    for v in order:
        nv = nbr.pop(v)
        width = max(width, len(nv) + 1)
        for a in nv:
            nbr[a].discard(v)
            nbr[a].update(x for x in nv if x != a)
    return width


class CliqueTree:
    """Clique tree from an elimination order; Shafer-Shenoy message passing.

    ``calibrate()`` returns the log partition function (log semiring) or the
    exact sum (count semiring); with the log semiring, ``marginal(scope)`` then
    gives the normalised log marginal over any scope contained in a clique
    (every factor scope is).
    """

    def __init__(self, factors, sizes: dict, semiring: str = "log", order=None):
        self.sr = _Semiring(semiring)
        self.sizes = dict(sizes)
        variables = sorted(self.sizes)
        scopes = [v for v, _ in factors]
        self.order = elimination_order(scopes, variables) if order is None else list(order)
        rank = {v: i for i, v in enumerate(self.order)}
        nbr = {v: set() for v in variables}
        for s in scopes:
            for a in s:
                nbr[a].update(x for x in s if x != a)
        self.clique = {}   # elimination var -> clique vars (sorted tuple)
        self.sep = {}      # elimination var -> separator to parent
        for v in self.order:
            nv = nbr.pop(v)
            self.clique[v] = tuple(sorted(nv | {v}))
            self.sep[v] = tuple(sorted(nv))
            for a in nv:
                nbr[a].discard(v)
                nbr[a].update(x for x in nv if x != a)
        self.parent = {}
        self.children = {v: [] for v in self.order}
        for v in self.order:
            if self.sep[v]:
                p = min(self.sep[v], key=rank.__getitem__)
                self.parent[v] = p
                self.children[p].append(v)
            else:
                self.parent[v] = None
        self.assigned = {v: [] for v in self.order}
        self.constant = []
        for f in factors:
            vars_ = f[0]
            if not vars_:
                self.constant.append(f)
                continue
            self.assigned[min(vars_, key=rank.__getitem__)].append(f)
        self.up = {}
        self.down = {}

    def _psi(self, v, exclude_child=None, with_down=False):
        fs = list(self.assigned[v])
        fs += [self.up[c] for c in self.children[v] if c != exclude_child]
        if with_down and self.parent[v] is not None:
            fs.append(self.down[v])
        fs.append((self.clique[v], np.array(np.broadcast_to(
            self.sr.one(), tuple(self.sizes[u] for u in self.clique[v])),
            dtype=object if self.sr.kind == "count" else float)))
        return product(fs, self.sr, self.sizes)

    def calibrate(self, downward: bool = True):
        total = self.sr.one()
        for v in self.order:
            vars_, t = self._psi(v)
            keep, msg = sum_out(vars_, t, [x for x in vars_ if x not in self.sep[v]], self.sr)
            self.up[v] = (keep, msg)
            if self.parent[v] is None:
                total = self.sr.mul(total, msg)
        for _vars, t in self.constant:
            total = self.sr.mul(total, t)
        self.total = total
        if downward and self.sr.kind == "log":
            for v in reversed(self.order):
                for c in self.children[v]:
                    vars_, t = self._psi(v, exclude_child=c, with_down=True)
                    drop = [x for x in vars_ if x not in self.sep[c]]
                    self.down[c] = sum_out(vars_, t, drop, self.sr)
        return total

    def clique_belief(self, v):
        cache = self.__dict__.setdefault("_beliefs", {})
        if v not in cache:
            vars_, t = self._psi(v, with_down=True)
            cache[v] = (vars_, t - self._component_log_z(v))
        return cache[v]

    def _component_log_z(self, v):
        r = v
        while self.parent[r] is not None:
            r = self.parent[r]
        return float(self.up[r][1])

    def sample(self, n: int, rng) -> dict:
        """``n`` joint draws of every variable from the calibrated distribution (log
        semiring; the upward pass must have run): variables in reverse elimination order,
        each from its clique's potential given the separator's draws.  Returns
        ``{variable: int64 (n,) state index}``."""
        if self.sr.kind != "log":
            raise ValueError("sampling needs the log semiring")
        out = {}
        for v in reversed(self.order):
            vars_, t = self._psi(v)
            sep = [u for u in vars_ if u != v]
            t = np.moveaxis(t, vars_.index(v), -1)          # (*sep in vars_ order, v)
            idx = tuple(out[u] for u in vars_ if u != v)
            lt = t[idx] if sep else np.broadcast_to(t, (n, t.shape[-1]))
            lt = lt - lt.max(axis=-1, keepdims=True)
            p = np.exp(lt)
            cdf = np.cumsum(p, axis=-1)
            u = rng.random(n) * cdf[:, -1]
            # the smallest j with cdf[j] > u: a state of probability 0 is never picked
            # (u = 0, or u on a flat stretch); u rounded up to the total takes the last
            # state of positive probability
            j = (cdf <= u[:, None]).sum(axis=-1)
            last = p.shape[-1] - 1 - np.argmax(p[:, ::-1] > 0, axis=-1)
            out[v] = np.minimum(j, last)
        return out

    def marginal(self, scope: tuple):
        """Normalised log marginal over ``scope`` (sorted tuple)."""
        s = set(scope)
        best = None
        for v in self.order:
            if s <= set(self.clique[v]) and (
                    best is None or len(self.clique[v]) < len(self.clique[best])):
                best = v
        if best is None:
            raise ValueError(f"scope {scope} is not contained in any clique")
        vars_, t = self.clique_belief(best)
        return sum_out(vars_, t, [x for x in vars_ if x not in s], self.sr)
