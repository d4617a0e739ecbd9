"""Validators: return the cleaned value or raise, quoting the bad value and the rule."""

from __future__ import annotations

import numbers

import numpy as np


def _where(a: np.ndarray, mask: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"{idx if a.ndim else '()'}"


def count_array(x, name: str = "counts", allow_nan: bool = False,
                signed: bool = False) -> np.ndarray:
    """Nonnegative integer counts as int64 (or float64 with NaN when ``allow_nan``);
    ``signed``: negative integers allowed (published noisy counts)."""
    a = np.asarray(x)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    if np.iscomplexobj(a):
        raise TypeError(f"{name} must be real, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.integer) or a.dtype == bool:
        # exact: no detour through float64 (counts up to 2^62 stay exact)
        ai = a.astype(np.int64) if a.dtype != np.uint64 else a
        if a.dtype == np.uint64 and (a >= 2 ** 62).any():
            raise ValueError(f"{name} too large for exact int64 arithmetic (max {a.max()})")
        neg = (ai < 0) & (not signed)
        if neg.any():
            raise ValueError(f"{name} must be nonnegative counts, got {int(ai[neg][0])} "
                             f"at index {_where(ai, neg)}")
        if (np.abs(ai) >= 2 ** 62).any():
            raise ValueError(f"{name} too large for exact int64 arithmetic (max {int(ai.max())})")
        return np.array(ai, dtype=np.int64)
    af = a.astype(float)
    nan = np.isnan(af)
    if nan.any() and not allow_nan:
        raise ValueError(f"{name} must not contain NaN (at index {_where(af, nan)})")
    bad = np.isinf(af)
    if bad.any():
        raise ValueError(f"{name} must be finite, got {af[bad][0]} at index {_where(af, bad)}")
    known = ~nan
    neg = known & (np.where(known, af, 0) < 0) & (not signed)
    if neg.any():
        raise ValueError(f"{name} must be nonnegative counts, got {af[neg][0]:g} "
                         f"at index {_where(af, neg)}")
    frac = known & (np.where(known, af, 0) != np.round(np.where(known, af, 0)))
    if frac.any():
        raise ValueError(f"{name} must be integer counts, got {af[frac][0]!r} "
                         f"at index {_where(af, frac)}")
    if nan.any():
        return af
    if np.abs(af).max(initial=0) >= 2.0 ** 53:
        raise ValueError(f"{name} given as floats must be below 2^53 to be exact integers "
                         f"(max {af.max():g}); give integer counts")
    return af.astype(np.int64)


def magnitude_array(x, name: str = "values", allow_nan: bool = False) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    af = a.astype(float)
    nan = np.isnan(af)
    if nan.any() and not allow_nan:
        raise ValueError(f"{name} must not contain NaN (at index {_where(af, nan)})")
    if np.isinf(af).any():
        raise ValueError(f"{name} must be finite")
    neg = ~nan & (np.where(nan, 0, af) < 0)
    if neg.any():
        raise ValueError(f"{name} must be nonnegative, got {af[neg][0]:g} at index {_where(af, neg)}")
    return af


def probability(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not (0.0 <= x <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {name}={x!r}")
    return x


def choice(x, name: str, options) -> str:
    if x not in options:
        raise ValueError(f"unknown {name} {x!r}; known: {', '.join(map(repr, options))}")
    return x


def integer(x, name: str, minimum: int | None = None) -> int:
    if isinstance(x, (bool, np.bool_)):           # True is no count of anything
        raise TypeError(f"{name} must be an integer, got {x!r}")
    if not isinstance(x, numbers.Integral):
        if isinstance(x, numbers.Real) and float(x).is_integer():
            x = int(x)
        else:
            raise TypeError(f"{name} must be an integer, got {x!r}")
    x = int(x)
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {name}={x}")
    return x


def additivity_tol(*arrays) -> float:
    """Tolerance for 'adds up' checks: exact for integers, scaled to magnitudes for floats."""
    scale = max((float(np.nanmax(np.abs(a))) if np.size(a) else 0.0) for a in arrays)
    if all(np.issubdtype(np.asarray(a).dtype, np.integer) for a in arrays):
        return 0.0
    return 1e-9 * max(scale, 1.0) * max(1, max(np.size(a) for a in arrays))
