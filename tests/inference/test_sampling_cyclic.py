"""Whole-table draws of the cyclic enumeration route (``route="enumerate"``: sampling by
subtree weights, ``riskengine/inference/cyclic_enumerate.py``, ``sample_signs``).

References:

* the route's own per-cell pmfs (the same posterior; they are tested against the brute
  force in test_cyclic.py);
* the plain-Python brute force tests/reference/cyclic.py: every sign vector, weighed by
  running the mechanism forward, tables deduplicated (whole-table and two-cell joints);
* the structured route's draws (backward sampling on the clique tree).

Statistical checks are chi-square tests at fixed seeds; bins with expected count < 5 are
pooled.  Each asserts p > P_MIN = 1e-4.  False alarms (Bonferroni / union bound): the file
runs 424 non-degenerate tests (466 calls, counted by wrapping the two helpers; cells with
a single possible value have nothing to test), so at a fresh seed the chance that any of
them fails for a correct sampler is at most 424 x 1e-4 ~ 4 %; at the fixed seeds here the
outcome is deterministic (smallest p-value 7e-4 when written).  Power: mapping the walk's
levels to the wrong cycles, flipping the signs, drawing extensions uniformly or in
proportion to mass^1.05 instead of mass each fail dozens of these tests.
"""

import functools
import itertools
import math
from collections import Counter, namedtuple

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from kernels import cyclic_enum
from riskengine import cycles
from riskengine.inference import cyclic
from riskengine.inference import cyclic_enumerate as CE
from tests.reference import cyclic as ref
from tests.reference import tables as tab

N_DRAWS = 20_000
P_MIN = 1e-4
SEED = 20240

Case = namedtuple("Case", "T C alpha beta rule prior log_prior release")

# (shape, design): "diagonal" / "staircase" (riskengine.cycles) or a number of random
# 2 x 2 moves (several of them linearly dependent: several sign vectors per table)
_DESIGNS = [((2, 3), "staircase"), ((3, 3), "diagonal"), ((3, 4), "staircase"),
            ((4, 4), "diagonal"), ((2, 4), 5), ((3, 3), 6), ((3, 4), 7), ((4, 4), 8),
            ((2, 3), 4), ((4, 3), "staircase"), ((4, 4), 6), ((3, 3), 8)]


def _case(i) -> Case:
    """Deterministic random case number i: small counts (zeros, blocked moves), random
    alpha / beta (some with gamma = 0, some with no additions), both rules, Uniform and
    Poisson (scalar or per-cell rate) priors."""
    rng = np.random.default_rng(7000 + i)
    shape, design = _DESIGNS[i % len(_DESIGNS)]
    if design == "diagonal":
        C = cycles.diagonal(shape[0])
    elif design == "staircase":
        C = cycles.staircase(*shape)
    else:
        C = cycles.elementary_moves(shape, design, rng)
    lam = [1.0, 3.0, 6.0][(i + i // 12) % 3]
    T = rng.poisson(lam, size=shape)
    ab = rng.dirichlet([2.0, 2.0, 2.0])
    alpha, beta = float(ab[0]), float(ab[1])
    if i % 5 == 3:
        alpha, beta = 0.5, 0.5                  # gamma = 0
    if i % 7 == 5:
        alpha = 0.0                             # no additions
    rule = ("negative", "any_zero")[i % 2]
    kind = i % 3
    if kind == 0:
        prior, lp = rk.priors.Uniform(), tab.uniform_log_prior
    elif kind == 1:
        rate = float(rng.uniform(1.0, 5.0))
        prior, lp = rk.priors.Poisson(rate), tab.poisson_log_prior(rate)
    else:
        rate = rng.uniform(1.0, 5.0, size=shape)
        prior, lp = rk.priors.Poisson(rate), tab.poisson_log_prior(rate)
    mech = rk.CyclicPerturbation(C, alpha=alpha, beta=beta, rule=rule)
    rel = mech.protect(rk.Table(T), np.random.default_rng(i))
    return Case(T, C, alpha, beta, rule, prior, lp, rel)


#: cases whose posterior has at least two candidate tables (something to sample; 3, 9
#: are single-candidate); 2 to 790 candidates, zeros in the table in 0, 6, 7, 10, 14, 17
CASES = [0, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17]


def _brute(c: Case) -> dict:
    return ref.cyclic_brute(c.release.published, c.C, c.alpha, c.beta, c.rule,
                            c.log_prior)[0]


@functools.cache
def _run(i):
    """(case, enumeration posterior, its draws at SEED, brute-force posterior dict)."""
    c = _case(i)
    post = rk.posterior(c.release, c.prior, route="enumerate")
    draws = post.sample(N_DRAWS, np.random.default_rng(SEED)).values
    brute = _brute(c)
    assert len(brute) >= 2
    return c, post, draws, brute


# --- chi-square helpers ------------------------------------------------------------------

def _gof_p(obs, expected) -> float:
    """Chi-square goodness-of-fit p-value of counts ``obs`` against ``expected`` (same
    total).  Bins with expected < 5 are pooled into one bin (merged into the smallest other
    bin if the pool is still < 5); draws in a bin of zero probability fail outright."""
    obs = np.asarray(obs, float)
    expected = np.asarray(expected, float)
    assert obs[expected <= 0].sum() == 0, "draws where the exact posterior has no mass"
    big = expected >= 5
    o, e = list(obs[big]), list(expected[big])
    po, pe = obs[~big].sum(), expected[~big].sum()
    if pe > 0:
        if pe >= 5 or not e:
            o.append(po)
            e.append(pe)
        else:
            k = int(np.argmin(e))
            o[k] += po
            e[k] += pe
    if len(e) < 2:
        return 1.0
    o, e = np.array(o), np.array(e)
    return float(stats.chi2.sf(((o - e) ** 2 / e).sum(), len(e) - 1))


def _two_sample_p(a, b) -> float:
    """Chi-square test that two samples of integers come from one distribution (2 x k
    contingency table; values with an expected count < 5 in either sample pooled)."""
    vals = np.union1d(a, b)
    ca = np.array([np.sum(a == v) for v in vals], float)
    cb = np.array([np.sum(b == v) for v in vals], float)
    na, nb = ca.sum(), cb.sum()
    col = ca + cb
    small = col * min(na, nb) / (na + nb) < 5
    if small.any():
        ca = np.append(ca[~small], ca[small].sum())
        cb = np.append(cb[~small], cb[small].sum())
        col = ca + cb
        if col[-1] * min(na, nb) / (na + nb) < 5 and len(col) > 1:   # still small: merge
            k = int(np.argmin(col[:-1]))
            ca[k] += ca[-1]
            cb[k] += cb[-1]
            ca, cb = ca[:-1], cb[:-1]
    if len(ca) < 2:
        return 1.0
    return float(stats.chi2_contingency(np.stack([ca, cb]), correction=False).pvalue)


def _cell_pmf(post, cell):
    """(values, probabilities) of one cell's exact posterior pmf."""
    p = post.probs[cell]
    return post.start[cell] + np.arange(p.size), p


def _table_counts(draws, keys):
    cnt = Counter(d.tobytes() for d in draws)
    assert set(cnt) <= set(keys), "a draw that is not a candidate table"
    return np.array([cnt.get(k, 0) for k in keys], float)


# --- the tests --------------------------------------------------------------------------

@pytest.mark.parametrize("i", CASES)
def test_cells_match_the_posterior_pmfs(i):
    """(a) each cell's draws against the route's exact per-cell pmf."""
    _, post, draws, _ = _run(i)
    for cell in np.ndindex(post.shape):
        vals, p = _cell_pmf(post, cell)
        x = draws[(slice(None),) + cell]
        assert x.min() >= vals[0] and x.max() <= vals[-1], cell
        obs = np.bincount(x - vals[0], minlength=vals.size)
        assert _gof_p(obs, N_DRAWS * p) > P_MIN, cell


@pytest.mark.parametrize("i", CASES)
def test_two_cell_joint_matches_brute_force(i):
    """(b) the joint of the two most uncertain cells against the brute-force joint."""
    _, post, draws, brute = _run(i)
    sd = post.sd().values.ravel()
    a, b = (np.unravel_index(int(k), post.shape) for k in np.argsort(-sd, kind="stable")[:2])
    joint = Counter()
    for t, p in brute.values():
        joint[(int(t[a]), int(t[b]))] += p
    keys = list(joint)
    seen = Counter(zip(draws[(slice(None),) + a].tolist(), draws[(slice(None),) + b].tolist()))
    assert set(seen) <= set(keys)
    obs = [seen.get(k, 0) for k in keys]
    assert _gof_p(obs, [N_DRAWS * joint[k] for k in keys]) > P_MIN


@pytest.mark.parametrize("i", CASES)
def test_every_draw_is_a_candidate_and_tables_match_brute_force(i):
    """(c) every draw has positive brute-force weight (it reproduces the published table
    under the mechanism's rules); whole-table frequencies match the brute force."""
    c, _, draws, brute = _run(i)
    keys = list(brute)
    obs = _table_counts(draws, keys)
    assert _gof_p(obs, [N_DRAWS * brute[k][1] for k in keys]) > P_MIN
    # the draws keep what the release publishes: every row and column total
    P = np.asarray(c.release.published)
    assert np.array_equal(draws.sum(axis=1), np.broadcast_to(P.sum(axis=0), draws.sum(1).shape))
    assert np.array_equal(draws.sum(axis=2), np.broadcast_to(P.sum(axis=1), draws.sum(2).shape))


@pytest.mark.parametrize("i", CASES[:4])
def test_same_seed_same_draws(i):
    """(d) the draws depend only on the generator's state."""
    _, post, draws, _ = _run(i)
    again = post.sample(N_DRAWS, np.random.default_rng(SEED)).values
    assert np.array_equal(draws, again)
    c = _case(i)
    fresh = rk.posterior(c.release, c.prior, route="enumerate")
    assert np.array_equal(fresh.sample(500, np.random.default_rng(1)).values,
                          fresh.sample(500, np.random.default_rng(1)).values)
    assert post.sample(1, np.random.default_rng(0)).shape == (1,) + post.shape


@pytest.mark.parametrize("i", CASES)
def test_enumerate_and_structured_draws_agree(i):
    """(e) two-sample chi-square per cell: enumeration draws vs the structured route's."""
    c, _, draws, _ = _run(i)
    other = rk.posterior(c.release, c.prior, route="structured").sample(
        N_DRAWS, np.random.default_rng(SEED + 1)).values
    for cell in np.ndindex(draws.shape[1:]):
        sl = (slice(None),) + cell
        assert _two_sample_p(draws[sl], other[sl]) > P_MIN, cell


def _brute_sign_weights(c: Case, m: int) -> np.ndarray:
    """Weight of every sign vector (path probability x prior), in the walk's order: base-3
    digits c_0 .. c_{m-1}, first most significant, c_d the choice for cycle m-1-d,
    e = 1 - c."""
    P = np.asarray(c.release.published, np.int64)
    out = np.zeros(3 ** m)
    for j, ch in enumerate(itertools.product(range(3), repeat=m)):
        e = np.array([1 - x for x in ch][::-1])
        T = P - np.tensordot(e, c.C, axes=1)
        if T.min() < 0:
            continue
        lp = c.log_prior(T)
        if lp > -math.inf:
            out[j] = ref.cyclic_path_probability(T, e, c.C, c.alpha, c.beta, c.rule) * \
                math.exp(lp)
    return out


@pytest.mark.parametrize("offsets", [False, True], ids=["tables", "offsets"])
@pytest.mark.parametrize("i", [2, 5, 7])
def test_walk_weighs_full_sign_vectors_like_the_mechanism(i, offsets):
    """The sampler's last level walks complete sign vectors: their masses, with the
    posterior's weight reference, are the forward mechanism's path probability x prior
    (both kernels: table walk and offset walk)."""
    c = _case(i)
    pb = cyclic.build(c.release.mechanism, c.release, c.prior)
    ref_w = CE.enumerate_signs(pb, count=False)["weight_ref"]
    kp = CE._weights(pb, ref_w)
    tables = cyclic_enum.prepare(kp, 0 if offsets else cyclic_enum._LUT_LIMIT)
    assert bool(tables[6]) is not offsets
    got = CE._branch_masses(np.zeros((1, 0), np.int64), pb.m, kp, tables)[0]
    want = _brute_sign_weights(c, pb.m)
    assert np.array_equal(got > 0, want > 0)
    np.testing.assert_allclose(got / got.sum(), want / want.sum(), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("i", [5, 7, 11])
def test_many_small_blocks_and_the_offset_walk(i, monkeypatch):
    """At most 27 branches per walk: the sampler goes down one or two levels at a time
    and walks each level in pieces (prefixes of every length); the offset walk instead
    of the tables.  Whole tables against the brute force."""
    monkeypatch.setattr(CE, "_SAMPLE_ROWS", 27)
    monkeypatch.setattr(cyclic_enum, "lut_limit", lambda m, key_mode: 0)
    c = _case(i)
    brute = _brute(c)
    post = rk.posterior(c.release, c.prior, route="enumerate")
    n = 5000
    draws = post.sample(n, np.random.default_rng(SEED + 2)).values
    keys = list(brute)
    assert _gof_p(_table_counts(draws, keys), [n * brute[k][1] for k in keys]) > P_MIN


def test_more_cycles_than_one_block():
    """14 cycles: the first block (3^11 branches) leaves three levels to later blocks;
    cells against the posterior pmfs, and against the structured route's draws."""
    rng = np.random.default_rng(5)
    T = rng.poisson(2.0, size=(2, 14))
    C = cycles.staircase(2, 14)
    mech = rk.CyclicPerturbation(C, alpha=0.3, beta=0.2)
    rel = mech.protect(rk.Table(T), rng)
    prior = rk.priors.Poisson(2.0)
    post = rk.posterior(rel, prior, route="enumerate", count=False)
    n = 10_000
    draws = post.sample(n, np.random.default_rng(SEED + 3)).values
    other = rk.posterior(rel, prior, route="structured", count=False).sample(
        n, np.random.default_rng(SEED + 4)).values
    for cell in np.ndindex(post.shape):
        vals, p = _cell_pmf(post, cell)
        x = draws[(slice(None),) + cell]
        assert x.min() >= vals[0] and x.max() <= vals[-1], cell
        assert _gof_p(np.bincount(x - vals[0], minlength=vals.size), n * p) > P_MIN, cell
        assert _two_sample_p(x, other[(slice(None),) + cell]) > P_MIN, cell


def test_draws_under_the_fallback_weight_reference():
    """A prior far from the data (Poisson(0.001), counts near 100): relative to each
    group's maximum every weight underflows and the enumeration uses the published table's
    factors; the sampler uses the same reference and its draws follow the cell pmfs."""
    rng = np.random.default_rng(0)
    T = rng.poisson(100, size=(7, 7))
    mech = rk.CyclicPerturbation(cycles.diagonal(7), alpha=0.25, beta=0.25)
    rel = mech.protect(rk.Table(T), rng)
    prior = rk.priors.Poisson(0.001)
    pb = cyclic.build(mech, rel, prior)
    res = CE.enumerate_signs(pb, count=False)
    assert np.array_equal(res["weight_ref"], pb.logF[:, pb.K])   # the fallback reference
    post = rk.posterior(rel, prior, route="enumerate")
    n = 10_000
    draws = post.sample(n, np.random.default_rng(SEED + 5)).values
    for cell in np.ndindex(post.shape):
        vals, p = _cell_pmf(post, cell)
        x = draws[(slice(None),) + cell]
        assert x.min() >= vals[0] and x.max() <= vals[-1], cell
        assert _gof_p(np.bincount(x - vals[0], minlength=vals.size), n * p) > P_MIN, cell
