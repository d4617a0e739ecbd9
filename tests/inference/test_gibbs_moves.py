"""Do the Gibbs chains' moves reach every candidate?  (issue 26 item 6)

References, all from definitions: every candidate table listed by brute force
(``tests/reference/tables.py``: every nonnegative table with the published margins, cell
by cell, and the structural zeros), its exact posterior from those lists (prior times
likelihood, normalised), and the parts a move set splits the list into, with every move
written out as a vector (``tests/reference/markov_moves.py``).  The moves of degree 8
and 10 are Aoki & Takemura's (2003) for 3 x 3 x K tables; that they are needed is shown
here, not assumed: the fiber of each one's positive part holds exactly its positive and
negative parts (a fiber of two tables: only that move joins them), and the fibers the
chain is run on are split by the earlier move set (blocks and degree-6 moves).

Tolerances: a table's frequency among the kept draws within 0.25 of its exact posterior
probability (relative) plus 0.02 (3 x 4 000 draws: the standard error of a frequency is
below 0.01 at the effective sizes these chains reach).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import riskengine as rk
from kernels import gibbs as kg
from riskengine.inference import gibbs3d
from riskengine.inference.gibbs import ConvergenceWarning
from tests.reference import markov_moves as mm
from tests.reference import tables as tab

DIMS = ("a", "b", "c")
DEG8 = mm.pattern(mm.AT_DEG8_LAYERS)
DEG10 = mm.pattern(mm.AT_DEG10_LAYERS)


def _layers(x):
    """A table from its layers ``[k][i][j]``."""
    return np.transpose(np.asarray(x, np.int64), (1, 2, 0))


def _fiber(x, zeros=None):
    """Every nonnegative table with the 2-way margins of ``x`` (0 where ``zeros``)."""
    out = tab.tables_with_2way_margins(x.sum(2), x.sum(1), x.sum(0))
    if zeros is not None:
        out = [t for t in out if (t[zeros] == 0).all()]
    return [np.asarray(t, np.int64) for t in out]


def _old_moves(shape):
    """The move set before the degree-8 / degree-10 moves: blocks (with them every
    degree-4 move) and the degree-6 lifted 3-cycles."""
    return mm.lifted_cycles(shape, (2, 3))


def _moves(shape):
    """The chain's move set: lifted cycles of every length, Aoki & Takemura's moves."""
    return (mm.lifted_cycles(shape, range(2, max(shape) + 1)) | mm.orbit(DEG8, shape)
            | mm.orbit(DEG10, shape))


def _run(rel, prior, **kw):
    return rk.posterior(rel, prior, route="gibbs", memory=4e9, mcmc=rk.MonteCarlo(**kw))


@pytest.mark.parametrize("pat", [DEG8, DEG10], ids=["degree 8", "degree 10"])
def test_the_higher_moves_are_indispensable_and_the_kernel_has_them(pat):
    """Each pattern keeps every 2-way margin, its positive part's fiber is exactly its
    two parts (so no other move set without it connects that fiber), and the kernel's
    pattern has the same orbit (every placement, transpose and sign) as the reference's."""
    shape = pat.shape
    for axis in range(3):
        assert not pat.sum(axis).any()
    plus, minus = np.maximum(pat, 0), np.maximum(-pat, 0)
    fiber = {t.tobytes() for t in _fiber(plus)}
    assert fiber == {plus.tobytes(), minus.tobytes()}
    kernel = kg.DEG8 if pat.shape[2] == 4 else kg.DEG10
    assert mm.orbit(kernel, shape) == mm.orbit(pat, shape)


# fibers found by a random search over the patterns' positive parts plus sparse tables,
# kept when the earlier move set splits them (checked below from the definitions)
FIBERS = [
    ("3x3x4 needs degree 8", _layers(
        [[[1, 0, 0], [0, 0, 2], [2, 0, 1]], [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
         [[0, 1, 1], [0, 0, 0], [1, 0, 1]], [[0, 0, 1], [0, 1, 0], [0, 0, 0]]])),
    ("3x3x5 needs degree 8", _layers(
        [[[1, 0, 0], [0, 0, 1], [1, 0, 0]], [[0, 0, 0], [1, 0, 0], [1, 1, 0]],
         [[0, 1, 0], [0, 0, 0], [0, 0, 2]], [[1, 1, 1], [0, 1, 0], [0, 0, 0]],
         [[0, 1, 1], [1, 0, 0], [0, 0, 0]]])),
    ("3x3x5 needs degree 10", _layers(
        [[[1, 0, 1], [0, 0, 0], [0, 1, 1]], [[0, 0, 0], [0, 0, 1], [1, 0, 0]],
         [[0, 1, 1], [0, 1, 1], [0, 1, 2]], [[1, 0, 1], [0, 0, 0], [1, 1, 1]],
         [[1, 1, 0], [1, 0, 0], [0, 0, 0]]])),
]


@pytest.mark.parametrize("x", [f[1] for f in FIBERS], ids=[f[0] for f in FIBERS])
def test_the_chain_reaches_every_table_of_fibers_that_need_degree_8_or_10(x):
    shape = x.shape
    fiber = _fiber(x)
    old = mm.part_labels(fiber, shape, _old_moves(shape))
    assert old.max() >= 1                              # the earlier moves split it
    assert mm.parts(fiber, shape, _moves(shape)) == 1  # the chain's moves do not
    rel = rk.MarginsOnly().protect(rk.Table(x, dims=DIMS))
    prior = rk.priors.Poisson(1.0)
    exact = tab.posterior_weights(fiber, tab.poisson_log_prior(1.0))
    post = _run(rel, prior, chains=3, warmup=100, draws=4000)
    assert post.attrs["converged"] == 1, post.attrs["diagnostics"]
    assert post.attrs["moves"].startswith("the moves connect every candidate (proven)")
    assert "Aoki & Takemura" in post.attrs["moves"]
    draws = post.chains.reshape((-1,) + shape).astype(np.int64)
    keys = [t.tobytes() for t in draws]
    assert set(keys) == {t.tobytes() for t in fiber}
    for ch in post.chains:                             # every chain crosses every part
        assert {t.astype(np.int64).tobytes() for t in ch} == set(keys)
    for t, p in zip(fiber, exact):
        freq = keys.count(t.tobytes()) / len(keys)
        assert abs(freq - p) < 0.25 * p + 0.02, (t.tolist(), freq, p)
    # the earlier move set: chains started in each of its parts never leave them
    ew = rel.mechanism.inputs(rel)["windows"].with_prior(prior, rel.coords).trimmed()
    starts = [fiber[int(np.nonzero(old == k)[0][0])] for k in range(int(old.max()) + 1)]
    stuck = gibbs3d.chains(ew, len(starts), 10, 300, np.random.default_rng(0), higher=False,
                           starts=starts)
    where = {t.tobytes(): k for t, k in zip(fiber, old)}
    for k, ch in enumerate(stuck):
        assert {where[t.astype(np.int64).tobytes()] for t in ch} == {k}


# a degree-7 element of the Graver basis of 3 x 3 x 3 tables (4ti2's graver), no move of
# the chain: with structural zeros off its support the chain cannot join its tables
GRAVER7 = _layers([[[1, 0, -1], [0, 0, 0], [-1, 0, 1]],
                   [[-1, 0, 1], [1, -1, 0], [0, 1, -1]],
                   [[0, 0, 0], [-1, 1, 0], [1, -1, 0]]])


def _structural_zero_release():
    """Suppression of the cells of GRAVER7's support, published zeros elsewhere, every
    margin of twice its positive part."""
    x = 2 * np.maximum(GRAVER7, 0)
    zeros = GRAVER7 == 0
    t = rk.Table(x, dims=DIMS)
    rel = rk.Release(np.where(zeros, 0.0, np.nan), margins=t.totals(),
                     mechanism=rk.CellSuppression(), dims=DIMS, kind="count")
    return x, zeros, rel


def test_a_structural_zero_fiber_the_moves_split_is_reported():
    """Three candidates (2 g+, g+ + g-, 2 g-), each its own part for the moves: the route
    lists them, starts chains in different parts, and its result says the moves do not
    connect them (not converged, a warning, attrs["moves"])."""
    x, zeros, rel = _structural_zero_release()
    fiber = _fiber(x, zeros)
    assert len(fiber) == 3
    assert mm.parts(fiber, x.shape, _moves(x.shape)) == 3
    assert len(fiber) == rk.count_candidates(rel, route="enumerate")
    with pytest.warns(ConvergenceWarning, match="do not connect the candidate tables"):
        post = _run(rel, rk.priors.Uniform(), chains=3, warmup=20, draws=200)
    assert post.attrs["converged"] == 0
    assert post.attrs["move_parts"] == 3
    assert "do NOT connect" in post.attrs["moves"] and "3 parts" in post.attrs["moves"]
    assert "not proven to reach every candidate" in post.attrs["approximation"]
    firsts = {ch[0].astype(np.int64).tobytes() for ch in post.chains}
    assert len(firsts) == 3                            # one chain in each part
    for ch in post.chains:                             # and none leaves it
        assert all(np.array_equal(t, ch[0]) for t in ch)


def test_too_many_to_list_the_dispersed_starts_still_catch_it(monkeypatch):
    """The same release with listing turned off (as for a candidate set too large to
    list): the result says nothing is proven or checked, and chains from dispersed
    vertices of the polytope (per-cell extremes) land in different parts: not converged."""
    monkeypatch.setattr(gibbs3d, "CHECK_LIMIT", 0)
    _, _, rel = _structural_zero_release()
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        post = _run(rel, rk.priors.Uniform(), chains=3, warmup=20, draws=200)
    assert "not proven" in post.attrs["moves"] and "not checked" in post.attrs["moves"]
    assert "move_parts" not in post.attrs
    assert post.attrs["converged"] == 0
    assert len({ch[0].astype(np.int64).tobytes() for ch in post.chains}) >= 2


def _ew(rel, prior=None):
    prior = prior or rk.priors.Uniform()
    return rel.mechanism.inputs(rel)["windows"].with_prior(prior, rel.coords).trimmed()


def test_what_each_release_is_told():
    """The proof or the check each kind of release gets (attrs["moves"])."""
    rng = np.random.default_rng(2)
    t = rk.Table(rng.poisson(2.0, size=(3, 3, 4)), dims=DIMS)
    c = gibbs3d.connectivity(_ew(rk.MarginsOnly().protect(t)))
    assert c.proven and "Aoki & Takemura" in c.text and c.parts is None
    # a lower bound shifts the fiber: still proven; a fixed cell (upper bound) is not
    c = gibbs3d.connectivity(_ew(rk.MarginsOnly().protect(t),
                                 rk.priors.Uniform().at_least([(0, 0, 0)], 1)))
    if t.values[0, 0, 0] >= 1:
        assert c.proven and c.parts is None
    x = t.values
    pub = np.where(rng.random(x.shape) < 0.5, np.nan, x)
    rel = rk.Release(pub, margins=t.totals(), mechanism=rk.CellSuppression(), dims=DIMS,
                     kind="count")
    c = gibbs3d.connectivity(_ew(rel))
    assert c.parts is not None and "checked" in c.text          # listed and checked
    # one axis of 2 levels: the Graver basis covers suppression
    t2 = rk.Table(rng.poisson(2.0, size=(2, 3, 4)), dims=DIMS)
    pub = np.where(rng.random(t2.shape) < 0.5, np.nan, t2.values)
    rel = rk.Release(pub, margins=t2.totals(), mechanism=rk.CellSuppression(), dims=DIMS,
                     kind="count")
    c = gibbs3d.connectivity(_ew(rel))
    assert c.proven and c.parts is None and "Graver" in c.text
    # two axes of 4 levels: nothing proven; few candidates are listed
    t4 = rk.Table(rng.poisson(0.5, size=(4, 4, 3)), dims=DIMS)
    c = gibbs3d.connectivity(_ew(rk.MarginsOnly().protect(t4)))
    assert "two axes of 4 or more levels" in c.text
    # totals that are windows: nothing proven, nothing listed
    rel = rk.ControlledRounding(3, method="optimal").protect(
        rk.Table(rng.poisson(4.0, size=(2, 2, 3)), dims=DIMS), rng)
    c = gibbs3d.connectivity(_ew(rel))
    assert not c.proven and c.parts is None and "window, not a number" in c.text


def test_components_agree_with_the_reference_on_random_fibers():
    """The route's check (differences of pairs of tables) against the reference's
    breadth-first search over every move written out: 3 x 3 x 3 tables on GRAVER7's
    support plus random cells (structural zeros elsewhere), split or not, and the fibers
    above (no zeros)."""
    rng = np.random.default_rng(11)
    shape = (3, 3, 3)
    moves = _moves(shape)
    kinds = set()
    for _ in range(16):
        support = (GRAVER7 != 0) | (rng.random(shape) < 0.25)
        x = np.maximum(GRAVER7, 0) * int(rng.integers(1, 3)) + \
            np.where(support, rng.poisson(0.7, size=shape), 0)
        fiber = _fiber(x, ~support)
        want = mm.part_labels(fiber, shape, moves)
        got = gibbs3d.components(np.array([t.ravel() for t in fiber]), shape)
        # the same partition (the labels may be numbered differently)
        pairs = {(int(a), int(b)) for a, b in zip(want, got)}
        assert len(pairs) == len(set(want.tolist())) == len(set(got.tolist()))
        kinds.add(len(pairs) > 1)
    assert kinds == {True, False}
    for _, x in FIBERS:
        fiber = _fiber(x)
        got = gibbs3d.components(np.array([t.ravel() for t in fiber]), x.shape)
        assert not got.any()
    listed = gibbs3d.list_candidates(_ew(rk.MarginsOnly().protect(
        rk.Table(np.maximum(DEG8, 0), dims=DIMS))))
    assert {t.tobytes() for t in listed} == {np.maximum(DEG8, 0).ravel().tobytes(),
                                             np.maximum(-DEG8, 0).ravel().tobytes()}


# --- 2-D ----------------------------------------------------------------------------------

def test_2d_chain_crosses_a_suppression_pattern_of_three_rows(monkeypatch):
    """A 3 x 3 table whose candidates differ by a 6-cycle (structural zeros off the
    cycle): neither the basic moves (each meets a zero) nor a redraw of two rows joins
    them -- without the cycles every chain stays on its start --; the cycles do.  Every
    candidate visited, as often as the exact posterior says (brute force over every table
    with the windows)."""
    P = np.eye(3, dtype=np.int64)
    S = np.roll(P, 1, axis=1)
    x = 2 * P
    zeros = (P + S) == 0
    rel = rk.Release(np.where(zeros, 0.0, np.nan), margins={("v",): x.sum(1), ("w",): x.sum(0),
                                                            (): int(x.sum())},
                     mechanism=rk.CellSuppression(), dims=("v", "w"), kind="count")
    hi = np.where(zeros, 0, 2)
    fiber = tab.tables_with_windows(np.zeros((3, 3), int), hi,
                                    [(v, v) for v in x.sum(1)], [(v, v) for v in x.sum(0)],
                                    (int(x.sum()), int(x.sum())))
    fiber = [np.asarray(t, np.int64) for t in fiber]
    assert {t.tobytes() for t in fiber} == {(2 * P).tobytes(), (P + S).tobytes(),
                                            (2 * S).tobytes()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = rk.posterior(rel, rk.priors.Uniform(), route="gibbs",
                            mcmc=rk.MonteCarlo(chains=3, warmup=50, draws=2000))
    assert post.attrs["moves"].startswith("the moves connect every candidate (proven)")
    keys = [t.astype(np.int64).tobytes() for t in post.chains.reshape(-1, 3, 3)]
    assert set(keys) == {t.tobytes() for t in fiber}
    for t in fiber:
        assert abs(keys.count(t.tobytes()) / len(keys) - 1 / 3) < 0.25 / 3 + 0.02
    from riskengine.inference import gibbs

    class NoCycles:                       # the kernels, with the 2-D sweeps' cycles off
        def __getattr__(self, name):      # (random ones and the fundamental ones alike)
            return getattr(kg, name)

        @staticmethod
        def sweeps_2d(*args):
            return kg.sweeps_2d(*args, False)

        @staticmethod
        def cycle_sweep(*args):
            return None

    monkeypatch.setattr(gibbs, "moves", NoCycles())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        stuck = rk.posterior(rel, rk.priors.Uniform(), route="gibbs",
                             mcmc=rk.MonteCarlo(chains=3, warmup=20, draws=300))
    for ch in stuck.chains:
        assert len({t.astype(np.int64).tobytes() for t in ch}) == 1


def test_2d_chain_mixes_on_a_suppressed_table():
    """A 10 x 10 table with 28 cells suppressed (Frequency(3)) under Poisson(4): the
    chains redraw the fundamental cycles of the hidden cells every sweep (without them
    they never moved: R-hat 2e7), converge and agree with the exact DP within 5 MCSE."""
    t = rk.Table(np.random.default_rng(1).poisson(4, size=(10, 10)))
    rel = rk.suppress(t, rk.sensitivity.Frequency(3))
    hidden = np.isnan(rel.published)
    assert hidden.sum() == 28
    post = rk.posterior(rel, rk.priors.Poisson(4.0), route="gibbs")
    assert post.attrs["converged"] == 1
    exact = rk.posterior(rel, rk.priors.Poisson(4.0), route="dp")
    d = np.abs(post.mean().values - exact.mean().values)
    assert np.all(d <= 5 * post.diagnostics["mcse_mean"].values + 1e-9)
