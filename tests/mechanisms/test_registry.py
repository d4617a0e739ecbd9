"""The visible registry: ``rk.routes()`` lists every mechanism x route, and a mechanism
defined anywhere (here: a toy in this test module) is picked up, with no other edit, by
``rk.routes()``, ``riskengine warmup`` and the case lists of the protocol, invariants and
command-line tests (``tests/reference/registry_cases.py``), whose checks it then passes.
The toy is registered by a fixture and removed after each test, so no other test sees it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import riskengine as rk
from riskengine.inference.cells import CellWindows, IndependentCells
from riskengine.inference.registry import COLUMNS
from riskengine.inference.resolve import plan
from riskengine.mechanisms import REGISTRY
from riskengine.protocol import Example, Inputs, Mechanism, register
from tests.reference import registry_cases
from tests.uses.test_cli_every_mechanism import files  # noqa: F401  (a fixture)


class ToyNoise(Mechanism):
    """Publishes the table exactly; one exact route over independent cells (each cell's
    one candidate is its published value)."""

    name = "toy_exact"
    routes = (IndependentCells(),)

    def _params(self) -> dict:
        return {}

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        if table is None:
            table = rk.Table(np.array([[2, 0, 1], [1, 3, 2]]), dims=("v", "w"),
                             coords={"v": ["x", "y"], "w": ["a", "b", "c"]})
        return Example(cls, table)

    def protect(self, table, rng=None):
        return rk.Release(np.asarray(table.values), mechanism=self, dims=table.dims,
                          coords=table.coords, kind="count")

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a toy_exact release publishes its table of counts")

    def inputs(self, release) -> Inputs:
        def cells():
            P = np.asarray(release.published, dtype=np.int64)
            return CellWindows(lo=P.ravel(), loglik=np.zeros((P.size, 1)),
                               row=np.arange(P.size).reshape(P.shape))
        return Inputs(cells=cells)


@pytest.fixture
def toy():
    register(ToyNoise)
    try:
        yield ToyNoise
    finally:
        REGISTRY.pop(ToyNoise.name, None)


# --- rk.routes() ------------------------------------------------------------------------


def test_routes_lists_every_mechanism_and_route():
    table = rk.routes()
    assert tuple(table.columns) == COLUMNS
    assert str(table["exact"].dtype) == "boolean" and str(table["counts"].dtype) == "boolean"
    assert sorted(set(table["mechanism"])) == sorted(REGISTRY)
    for name, cls in REGISTRY.items():
        rows = table[table["mechanism"] == name]
        assert set(rows["class"]) == {cls.__name__}
        assert rows["example"].iloc[0].startswith(cls.example().mechanism.describe())
        if not (cls.routes or cls.set_routes):     # one row: what to use instead
            assert len(rows) == 1 and rows["route"].isna().all()
            assert cls.no_route in rows["needs"].iloc[0]
            continue
        for kind, group in (("release", cls.routes), ("release set", cls.set_routes)):
            mine = rows[rows["for"] == kind]
            assert list(mine["route"]) == [r.name for r in group], (name, kind)
            # exact: an exact route on an exact likelihood (on the example); a route that
            # does not take the example is approximate where the input it reads is
            rel = cls.example().release()
            p = group and plan(rel if kind == "release" else rk.ReleaseSet([rel, rel]))

            def approx(r, p=p):
                if r.applies(p) is None:
                    return bool(r.approximation(p))
                return bool(r.reads and r.reads in p.inputs
                            and getattr(p.inputs[r.reads], "approximation", ""))
            assert list(mine["answer"]) == [
                "Monte Carlo" if not r.exact else "approximate" if approx(r)
                else "exact" for r in group], (name, kind)
            assert list(mine["exact"]) == [a == "exact" for a in mine["answer"]]
            assert list(mine["counts"]) == [r.counts for r in group]
            assert list(mine["needs"]) == [r.needs for r in group]
    routes = table[table["route"].notna()]
    assert (routes["needs"].str.len() > 0).all(), "every route says what it needs"
    # the cell key method's product routes are approximate with totals, also those that do
    # not take its 2-D example (a 1-D table and its total, a 3-D table and its margins);
    # they were listed as exact by their kind
    ck = routes[(routes["mechanism"] == "cell_key") & (routes["for"] == "release")]
    answer = dict(zip(ck["route"], ck["answer"]))
    assert [answer[r] for r in ("dp", "line", "enumerate")] == ["approximate"] * 3
    assert answer["keys"] == answer["keys-crossing"] == "exact"
    # the cost on the example: why the route does not apply, or the memory it plans
    cost = re.compile(r"^(does not apply: .+|\d[\d.e+]* (B|kB|MB|GB|TB)( \(.+\))?(; .+)?)$")
    bad = [c for c in routes["cost"] if not cost.match(c)]
    assert not bad, bad
    # a route that is not Monte Carlo applies to each example (the examples are small; the
    # first may be one for a narrower case, e.g. the cell key method's integration over the
    # keys; on the cell key example's crossing totals the exact DP's likelihood is the
    # approximate product over entries)
    exact = routes[(routes["answer"] != "Monte Carlo") & (routes["for"] == "release")]
    applies = (~exact["cost"].str.startswith("does not apply")).groupby(exact["mechanism"]).any()
    assert applies.all(), applies


def test_routes_is_a_lazy_name_of_the_namespace():
    import riskengine
    assert "routes" in riskengine.__all__
    assert riskengine._NAMES["routes"] == "riskengine.inference.registry:routes"


# --- a toy mechanism is picked up with no other edit ------------------------------------


def test_the_toy_is_in_every_case_list(toy):
    assert "toy_exact" in registry_cases.names()
    assert "toy_exact" in registry_cases.protocol_cases()
    assert registry_cases.invariant_cases()["toy_exact"] is not None
    case = registry_cases.cli_cases()["toy_exact"]
    assert case.args == () and case.shape == (2, 3) and case.text.startswith("v\\w,a,b,c\n")
    table = rk.routes()
    rows = table[table["mechanism"] == "toy_exact"]
    assert rows[["class", "for", "route"]].values.tolist() == [["ToyNoise", "release", "cells"]]
    assert bool(rows["exact"].iloc[0]) and bool(rows["counts"].iloc[0])
    assert rows["needs"].iloc[0] == IndependentCells.needs
    assert rows["cost"].iloc[0] == "192 B (6 window values of the cells)"


def test_the_toy_passes_the_protocol_tests(toy, rng):
    from tests.mechanisms import test_protocol as t
    t.test_every_registered_mechanism_has_a_case()
    case = registry_cases.protocol_case("toy_exact", rng)
    t.test_json_round_trips(case)
    t.test_protect_gives_a_release_the_mechanism_validates(case)
    t.test_true_table_is_a_candidate(case)
    t.test_route_names_resolve_and_unknown_routes_are_refused(case)
    assert rk.count_candidates(case[2]) == 1


def test_the_toy_passes_the_invariants(toy):
    from tests.properties import test_invariants as t
    t.test_every_mechanism_is_covered()
    t.test_invariants("toy_exact")               # Hypothesis draws the tables


def test_the_toy_goes_through_the_command_line(toy, files, capsys):  # noqa: F811
    from tests.uses import test_cli_every_mechanism as t
    t.test_every_registered_mechanism_has_cli_arguments()
    t.test_protect_assess_report("toy_exact", files, capsys)
    t.test_the_published_csv_is_the_release("toy_exact", files, capsys)


def test_the_toy_is_warmed_up(toy):
    from riskengine.cli.warmup import _warmup_mechanism, _warmup_tables
    ran = _warmup_mechanism(ToyNoise, _warmup_tables(), (rk.priors.Uniform(),),
                            np.random.default_rng(0))
    assert ran == {"cells"}


def test_the_toy_is_gone_after_its_tests():
    assert "toy_exact" not in REGISTRY and "toy_exact" not in registry_cases.names()
    assert "toy_exact" not in set(rk.routes()["mechanism"])
