"""The registry's test cases: one per registered mechanism, built from the example the
mechanism declares (:meth:`riskengine.protocol.Mechanism.example`).

The protocol test (``tests/mechanisms/test_protocol.py``), the invariants
(``tests/properties/test_invariants.py``) and the command-line test
(``tests/uses/test_cli_every_mechanism.py``) take their cases from here, and these are
read from the registry when they are asked for: a mechanism registered anywhere (a test
module's toy included, ``tests/mechanisms/test_registry.py``) is covered with no edit.

* :func:`names` -- every registered mechanism (every mechanism module loaded);
* :func:`protocol_case` -- ``(mechanism, table, release)`` of the mechanism's own example;
* :func:`invariant_case` -- ``(table, rng) -> release`` with parameters drawn from ``rng``
  (None for a mechanism without an inference route);
* :func:`cli_case` -- the input CSV and the ``riskengine protect`` arguments;
* the ``*_cases()`` functions: the same for every registered mechanism.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from riskengine.mechanisms import load
from riskengine.protocol import REGISTRY


def names() -> list:
    """Every registered mechanism's name, sorted (every mechanism module loaded first)."""
    load()
    return sorted(REGISTRY)


def _cls(name: str):
    if name not in names():
        raise KeyError(f"no mechanism registered as {name!r}; registered: {', '.join(names())}")
    return REGISTRY[name]


# --- the protocol ---------------------------------------------------------------------


def protocol_case(name: str, rng: np.random.Generator) -> tuple:
    """``(mechanism, table, release)``: the mechanism's own example, protected with ``rng``."""
    ex = _cls(name).example()
    return ex.mechanism, ex.table, ex.release(rng)


def protocol_cases() -> dict:
    """name -> ``rng -> (mechanism, table, release)``, for every registered mechanism."""
    return {n: (lambda rng, n=n: protocol_case(n, rng)) for n in names()}


# --- the invariants -------------------------------------------------------------------


def invariant_case(name: str) -> Callable | None:
    """``(table, rng) -> release``: the mechanism with parameters drawn from ``rng`` (its
    ``example(table, rng)``) protecting a small labelled 2-D table; None when the
    mechanism has no inference route (no posterior to check)."""
    cls = _cls(name)
    if not cls.routes:
        return None

    def release(table, rng):
        return cls.example(table, rng).release(rng)

    return release


def invariant_cases() -> dict:
    """name -> :func:`invariant_case`, for every registered mechanism."""
    return {n: invariant_case(n) for n in names()}


# --- the command line -----------------------------------------------------------------


@dataclass(frozen=True)
class CliCase:
    """How ``riskengine protect`` makes a release of a mechanism's own example."""

    table: str       #: the input CSV's file name
    text: str        #: its content (a wide CSV: ``v\\w`` corner, labels, numbers)
    args: tuple      #: protect's arguments after ``--mechanism NAME``
    inputs: tuple    #: the protect inputs among ``args`` (the agency's data, not parameters)
    shape: tuple     #: the table's shape


def table_csv(table) -> str:
    """A 2-D ``rk.Table`` as the wide CSV ``riskengine protect`` reads (the corner cell
    ``d0\\d1`` names the dims)."""
    if len(table.dims) != 2:
        raise ValueError(f"the command-line case writes 2-D tables as wide CSVs; this example "
                         f"has dims {table.dims}: give the mechanism a 2-D example")
    d0, d1 = table.dims
    values = np.asarray(table.values)

    def cell(x):
        return str(int(x)) if table.kind == "count" else repr(float(x))

    lines = [",".join([f"{d0}\\{d1}", *map(str, table.coords[d1])])]
    lines += [",".join([str(lab), *map(cell, row)]) for lab, row in zip(table.coords[d0], values)]
    return "\n".join(lines) + "\n"


def cli_case(name: str) -> CliCase:
    """The mechanism's own example as a command-line case (its table written as a CSV, its
    parameters and protect inputs as ``--param KEY=VALUE``)."""
    ex = _cls(name).example()
    return CliCase(table=f"{name}-table.csv", text=table_csv(ex.table),
                   args=tuple(ex.cli_params()), inputs=tuple(ex.inputs),
                   shape=tuple(ex.table.shape))


def cli_cases() -> dict:
    """name -> :func:`cli_case`, for every registered mechanism."""
    return {n: cli_case(n) for n in names()}
