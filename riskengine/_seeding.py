"""Reproducible randomness: one root entropy, independent streams by index.

Every use that runs many protections (``rk.compare``, ``rk.simulate``, the Monte Carlo
chains) draws one 128-bit root entropy from the user's generator and derives the
generator of each unit of work from it and the unit's index, so results depend on the
seed only, never on the order in which work runs or on the scheduler.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

__all__ = ["derived_rng", "release_seed", "root_entropy"]


def root_entropy(rng: np.random.Generator) -> int:
    """A 128-bit entropy drawn from ``rng``: the root of every derived seed."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {type(rng).__name__}")
    hi, lo = (int(x) for x in rng.integers(0, 2 ** 63, size=2, dtype=np.int64))
    return (hi << 64) | lo


def derived_rng(entropy: int, *key: int) -> np.random.Generator:
    """The generator of index ``key`` under ``entropy`` (independent of execution order)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=key)))


def release_seed(release, *extra) -> int:
    """A 64-bit seed from a release and ``extra`` (a prior, settings): the same inputs give
    the same Monte Carlo answer on every run and machine."""
    if hasattr(release, "to_dict"):
        what = release.to_dict()
    else:                              # a table set's release: its cells by label
        what = {"cells": release.system.labels(),
                "values": np.asarray(release.cell_vector(), float).tolist(),
                "mechanism": release.mechanism.describe()}
    text = json.dumps(what, sort_keys=True, default=str) + "".join(repr(x) for x in extra)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
