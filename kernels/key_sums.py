"""Exact densities of fractional sums of cell keys, on the grid of a p-table's intervals.

The cell key method publishes each cell and each total by the interval its key falls in;
a cell's key is uniform on [0, 1) (0 for an empty cell) and a total's key is the
fractional part of the sum of its cells' keys.  When every interval end of the p-table is
a multiple of 1/N, the density of a fractional partial sum of keys, each restricted to
one of those intervals, is a polynomial on each grid segment [k/N, (k+1)/N): convolving
it with a key uniform on [a/N, b/N) takes differences of its antiderivative shifted by
whole segments.  A measure on the circle is held as

* ``A``: the mass at exactly 0 (no key yet: every cell so far empty), and
* ``P[..., k, j]``: the coefficient of ``t**j`` of the density on segment ``k``, in the
  segment's local coordinate ``t = N x - k`` in [0, 1).

A function on the circle (a backward message) is held as ``P`` alone; its value at 0 is
the limit from the right, ``P[..., 0, 0]`` (the intervals are closed on the left).  Every
operation is exact polynomial algebra on these coefficients: nothing is sampled or
discretised.  Plain arrays in, plain arrays out;
the leading axes are a batch.
"""

from __future__ import annotations

import numpy as np

__all__ = ["antiderivative", "grow", "indicator", "inner", "mass", "shift_difference"]


def grow(P: np.ndarray, degree: int) -> np.ndarray:
    """``P`` with room for coefficients up to ``degree`` (zeros appended)."""
    D = P.shape[-1]
    if D > degree:
        return P
    pad = [(0, 0)] * (P.ndim - 1) + [(0, degree + 1 - D)]
    return np.pad(P, pad)


def antiderivative(P: np.ndarray) -> tuple:
    """``(C, M, Q)``: the antiderivative of the density ``P`` from 0, at every segment's
    start ``C[..., k]``, the total mass ``M[...]``, and its polynomial part on each segment
    ``Q[..., k, j]`` (degree one higher: ``Q[..., k, j + 1] = P[..., k, j] / (N (j + 1))``)."""
    N, D = P.shape[-2], P.shape[-1]
    Q = np.zeros(P.shape[:-1] + (D + 1,))
    Q[..., 1:] = P / (N * np.arange(1, D + 1))
    seg = Q.sum(axis=-1)                                    # the mass of each segment
    C = np.cumsum(seg, axis=-1) - seg
    return C, seg.sum(axis=-1), Q


def shift_difference(P: np.ndarray, A, s1, s2) -> np.ndarray:
    """``H(x - s1/N) - H(x - s2/N)``, ``H`` the antiderivative of the density ``P`` plus the
    mass ``A`` at 0 (a step at 0), periodic with a jump of the total mass per turn;
    ``s1 < s2`` whole segments (arrays broadcast against the batch).

    With ``(s1, s2) = (a, b)``: the density of the measure's point plus a key uniform on
    ``[a/N, b/N)`` (times ``(b - a)/N``, the key's probability of landing there).  With
    ``(s1, s2) = (-b, -a)`` and ``A = 0`` on a function ``G``: ``x -> integral over
    [a/N, b/N) of G(x + k) dk``, the backward message one key earlier.

    Parameters
    ----------
    P : ndarray, shape (..., N, D)
        The density's coefficients.
    A : float or ndarray, shape (...)
        The mass (or value) at 0.
    s1, s2 : int or ndarray of int, broadcast to the batch shape (...)
        The two shifts, in segments, with ``s1 < s2 <= s1 + N``.

    Returns
    -------
    ndarray, shape (..., N, D + 1)
        The coefficients of the result (one degree higher).
    """
    N = P.shape[-2]
    batch = P.shape[:-2]
    C, M, Q = antiderivative(P)
    A = np.broadcast_to(np.asarray(A, dtype=float), batch)
    s1 = np.broadcast_to(np.asarray(s1, dtype=np.int64), batch)
    s2 = np.broadcast_to(np.asarray(s2, dtype=np.int64), batch)
    k = np.arange(N)
    out = np.zeros(batch + (N, Q.shape[-1]))
    for s, sign in ((s1, 1.0), (s2, -1.0)):
        q = k - s[..., None]                                # (..., N) unwrapped segments
        turns = np.floor_divide(q, N)
        r = q - turns * N
        idx = np.broadcast_to(r, batch + (N,))
        Cq = np.take_along_axis(C, idx, axis=-1)
        Qq = np.take_along_axis(Q, idx[..., None], axis=-2)
        # the step at 0 counts once per turn from the segment holding 0 on
        base = Cq + (M + A)[..., None] * turns + A[..., None] * 1.0
        out += sign * Qq
        out[..., 0] += sign * base
    return out


def indicator(N: int, a, b, batch=()) -> np.ndarray:
    """The indicator function of ``[a/N, b/N)`` as a function on the circle.  ``a``, ``b``
    broadcast to ``batch``; ``a == b`` (or ``a < 0``): the zero function.

    Parameters
    ----------
    N : int
        Segments of the grid.
    a, b : int or ndarray of int
        The interval's ends in segments, ``0 <= a <= b <= N``.
    batch : tuple of int
        The batch shape.

    Returns
    -------
    ndarray, shape (*batch, N, 1)
    """
    a = np.broadcast_to(np.asarray(a, dtype=np.int64), batch)
    b = np.broadcast_to(np.asarray(b, dtype=np.int64), batch)
    k = np.arange(N)
    on = (k >= a[..., None]) & (k < b[..., None]) & (a[..., None] >= 0)
    return on[..., None].astype(float)


def mass(P: np.ndarray, A, a=None, b=None) -> np.ndarray:
    """The measure's mass (the point at 0 and the density), on ``[a/N, b/N)`` when given.

    Parameters
    ----------
    P : ndarray, shape (..., N, D)
    A : float or ndarray, shape (...)
    a, b : int or ndarray of int, optional
        Segment range (``a < 0`` or ``a == b``: nothing).

    Returns
    -------
    ndarray, shape (...)
    """
    N, D = P.shape[-2], P.shape[-1]
    seg = (P / (N * np.arange(1, D + 1))).sum(axis=-1)
    A = np.broadcast_to(np.asarray(A, dtype=float), P.shape[:-2])
    if a is None:
        return seg.sum(axis=-1) + A
    a = np.broadcast_to(np.asarray(a, dtype=np.int64), P.shape[:-2])
    b = np.broadcast_to(np.asarray(b, dtype=np.int64), P.shape[:-2])
    k = np.arange(N)
    on = (k >= a[..., None]) & (k < b[..., None]) & (a[..., None] >= 0)
    return (seg * on).sum(axis=-1) + A * ((a == 0) & (b > 0))


def inner(P: np.ndarray, A, G: np.ndarray) -> np.ndarray:
    """The integral of the function ``G`` against the measure ``(P, A)``:
    ``A G(0) + sum_k integral_0^1 P_k(t) G_k(t) dt / N`` (``G(0)``: from the right).

    Parameters
    ----------
    P : ndarray, shape (..., N, D1)
    A : float or ndarray, shape (...)
    G : ndarray, shape (..., N, D2)

    Returns
    -------
    ndarray, shape (...)
    """
    N = P.shape[-2]
    d1, d2 = P.shape[-1], G.shape[-1]
    H = 1.0 / (np.arange(d1)[:, None] + np.arange(d2)[None, :] + 1.0)
    body = np.einsum("...ki,ij,...kj->...", P, H, G) / N
    return body + np.asarray(A, dtype=float) * G[..., 0, 0]
