"""Release sets (several tables of the same microdata): the linked route against the
definitions (tests/reference/release_set.py), on random small structures: a table with a
region split in two next to the table with the region whole, a sub-table, a 1-D table
of the same records; random published totals; the cell key method (keyed: the same records
count once), random rounding and noise (every publication counts); flat and Poisson
priors.  Tolerance: 1e-9 on every probability (both sides are exact sums in floating
point) and on the log evidence."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from tests.reference import cell_key as ref_ck
from tests.reference import noise as ref_noise
from tests.reference import release_set as ref

PTAB = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {1: 0.2, 2: 0.6, 3: 0.2},
        3: {2: 0.25, 3: 0.5, 4: 0.25}}


def _structure(rng):
    """Finest dims r (3 categories) x c (1 or 2); the tables of the set, each as
    (labels per dim, reference maps)."""
    C = int(rng.integers(1, 3))
    r_fine = ["r0", "r1", "r2"]
    c_lab = [f"c{j}" for j in range(C)]
    tables = [  # the region split, the region whole (r0 + r1 = "G")
        ({"r": r_fine, "c": c_lab}, {0: [0, 1, 2], 1: list(range(C))}),
        ({"r": ["G", "r2"], "c": c_lab}, {0: [0, 0, 1], 1: list(range(C))}),
    ]
    extra = rng.integers(0, 3)
    if extra == 1:   # a sub-table: the split region's parts only
        tables.append(({"r": ["r0", "r1"], "c": c_lab}, {0: [0, 1, -1], 1: list(range(C))}))
    elif extra == 2:  # a 1-D table of the same records (c summed)
        tables.append(({"r": r_fine}, {0: [0, 1, 2]}))
    if rng.random() < 0.3:
        tables = tables[1:] + tables[:1]
    return (3, C), tables


def _totals(rng, nd):
    options = [(0,), (1,), ()] if nd == 2 else [()]
    return [k for k in options if rng.random() < 0.6]


def _sample_published(rng, mech, numbers_list):
    """Published values: keyed noise draws once per cell set, others per publication."""
    drawn = {}
    out = []
    for numbers in numbers_list:
        pubs = []
        for cells, orig in numbers:
            if isinstance(mech, rk.CellKey):
                if cells not in drawn:
                    top = max(PTAB)
                    r = min(orig, top)
                    ys = sorted(PTAB[r])
                    y = int(rng.choice(ys, p=[PTAB[r][v] for v in ys])) + orig - r
                    drawn[cells] = y
                pubs.append(drawn[cells])
            elif isinstance(mech, rk.RandomRounding):
                B = mech.base
                pubs.append(int(orig - orig % B + (B if rng.random() < (orig % B) / B else 0)))
            else:
                q = np.exp(-1 / mech.scale)
                k = int(rng.geometric(1 - q) - rng.geometric(1 - q))
                pubs.append(orig + k)
        out.append(pubs)
    return out


def _case(seed, kind):
    rng = np.random.default_rng(seed)
    shape, tables = _structure(rng)
    x = rng.integers(0, 3, shape)
    if kind == "cellkey":
        mech = rk.CellKey.from_matrix(PTAB)

        def loglik(a, y):
            p = ref_ck.prob(PTAB, a, y)
            return np.log(p) if p > 0 else -np.inf
    elif kind == "rounding":
        mech = rk.RandomRounding(int(rng.integers(2, 4)))
        loglik = ref_noise.rounding_loglik(mech.base)
    else:
        mech = rk.NoisyCounts("geometric", scale=float(rng.uniform(0.5, 1.2)), clip=False)
        loglik = ref_noise.Noise("geometric", mech.scale, False).loglik
    specs, numbers_list = [], []
    for labels, maps in tables:
        dims = tuple(labels)
        tshape = tuple(len(labels[d]) for d in dims)
        spec = {"maps": maps, "shape": tshape, "totals": _totals(rng, len(dims))}
        vals = ref.aggregate(x, spec)
        specs.append((labels, spec))
        numbers_list.append(ref.published_numbers(shape, spec, vals))
    pubs = _sample_published(rng, mech, numbers_list)
    releases, numbers = [], []
    for (labels, spec), nums, pub in zip(specs, numbers_list, pubs):
        dims = tuple(labels)
        k = int(np.prod(spec["shape"]))
        cells = np.array(pub[:k]).reshape(spec["shape"])
        margins, at = {}, k
        for keep in spec["totals"]:
            size = int(np.prod([spec["shape"][a] for a in keep]))
            margins[tuple(dims[a] for a in keep)] = np.array(pub[at:at + size]).reshape(
                tuple(spec["shape"][a] for a in keep))
            at += size
        releases.append(rk.Release(cells, margins=margins, mechanism=mech, dims=dims,
                                   coords={d: labels[d] for d in dims}))
        numbers += [(c, y) for (c, _), y in zip(nums, pub)]
    return rng, mech, releases, numbers, loglik, shape


def _check(seed, kind, prior_kind):
    rng, mech, releases, numbers, loglik, _ = _case(seed, kind)
    rset = rk.ReleaseSet(releases, groups={"r": {"G": ["r0", "r1"]}})
    assert rset.dims == ("r", "c")[:len(rset.dims)] and rset.coords["r"] == ["r0", "r1", "r2"]
    n = int(np.prod(rset.shape))
    # every finest cell is published alone (the split table): no original lies more than
    # the mechanism's reach above its published value (cell key: 1, rounding: B - 1);
    # noise has unbounded support: the flat prior's box is the brute force's box
    top = max(y for c, y in numbers if len(c) == 1)
    hi = top + (1 if kind == "cellkey" else mech.base - 1) if kind != "noise" else 5
    if prior_kind == "flat":
        prior = rk.priors.Flat(0, hi)

        def log_prior(T):
            return np.zeros(T.shape[0])
    else:
        rate = float(rng.uniform(0.5, 3))
        prior = rk.priors.Poisson(rate)
        from scipy import stats

        def log_prior(T):
            return stats.poisson.logpmf(T, rate).sum(axis=1)
    keyed = isinstance(mech, rk.CellKey)
    try:
        want, log_z, sums = ref.posterior(numbers, keyed, loglik, n, hi, log_prior)
    except FloatingPointError:
        pytest.skip("no table in the box")
    # the route's own definitions (for the cell key method: the product over entries,
    # labelled; the exact set route is tests/mechanisms/test_cell_key_crossing.py's)
    if not np.isfinite(log_z):
        with pytest.raises(ValueError):
            rk.posterior(rset, prior, route="linked-dp")
        return
    post = rk.posterior(rset, prior, route="linked-dp")
    assert post.attrs["route"] == "linked-dp"
    got = np.zeros((n, hi + 1))
    start = post.start.reshape(n)
    probs = post.probs.reshape(n, -1)
    for c in range(n):
        for w in range(probs.shape[1]):
            v = start[c] + w
            if probs[c, w] > 0:
                assert v <= hi, (c, v)
                got[c, v] = probs[c, w]
    np.testing.assert_allclose(got, want, atol=1e-9)
    if prior_kind == "poisson":
        # Poisson weights are normalised: the evidence is comparable
        assert post.log_evidence == pytest.approx(log_z, abs=1e-9)
    # every published number's posterior: its cells' sum
    for rel, part in zip(releases, post.releases):
        assert part.dims == rel.dims and part.coords == rel.coords
        np.testing.assert_allclose(part.probs.sum(-1), 1.0, atol=1e-12)
    e_of = {}
    for e in rset.entries:
        e_of.setdefault(frozenset(e.cells.tolist()), e)
    for cells, m in sums.items():
        e = e_of[cells]
        part = post.releases[e.release]
        block = part if e.keep == rset.releases[e.release].dims else part.totals[e.keep]
        for v, pr in m.items():
            i = v - int(block.start[e.index])
            have = block.probs[e.index][i] if 0 <= i < block.probs.shape[-1] else 0.0
            assert have == pytest.approx(pr, abs=1e-9)
    return post


@pytest.mark.parametrize("seed", [seed if seed < 10 else pytest.param(seed, marks=pytest.mark.slow)
                                  for seed in range(40)])
@pytest.mark.parametrize("kind", ["cellkey", "rounding", "noise"])
def test_sets_equal_the_definitions(seed, kind):
    _check(1000 * seed + 7, kind, "flat" if kind == "noise" or seed % 2 else "poisson")


@pytest.mark.slow
def test_exact_draws_follow_the_posterior():
    post = None
    for seed in range(20):
        _, _, releases, _, _, shape = _case(seed, "rounding")
        if len(releases[0].dims) == 2 and shape[1] == 2:
            post = rk.posterior(rk.ReleaseSet(releases, groups={"r": {"G": ["r0", "r1"]}}),
                                rk.priors.Flat(0, 12))
            break
    assert post is not None
    d = post.sample(4000, np.random.default_rng(1))
    assert d.dims == ("draw", "r", "c")
    pmf = post.pmf
    values = pmf["value"].values
    for idx in np.ndindex(post.shape):
        vals = d.values[(slice(None),) + idx]
        emp = np.array([(vals == v).mean() for v in values])
        want = pmf.values[idx]
        se = np.sqrt(want * (1 - want) / 4000)
        assert (np.abs(emp - want) <= 4.5 * se + 1e-12).all()
    # same generator state, same draws
    a = post.sample(50, np.random.default_rng(5)).values
    b = post.sample(50, np.random.default_rng(5)).values
    assert np.array_equal(a, b)


def test_differencing_uses_the_whole_region():
    """A region and one of its two parts published without perturbation (a p-table that
    keeps every count) pin the other part by difference, which no single table shows."""
    rr = rk.CellKey.from_matrix({0: {0: 1.0}, 1: {1: 1.0}})
    whole = rk.Release(np.array([7]), margins={}, mechanism=rr, dims=("r",),
                       coords={"r": ["G"]})
    part = rk.Release(np.array([5]), margins={}, mechanism=rr, dims=("r",),
                      coords={"r": ["r0"]})
    post = rk.posterior(rk.ReleaseSet([whole, part], groups={"r": {"G": ["r0", "r1"]}}),
                        rk.priors.Uniform())
    assert post.coords["r"] == ["r0", "r1"]
    np.testing.assert_allclose(post.prob(np.array([5, 2])).values, [1.0, 1.0])


def test_cell_key_same_records_count_once_and_must_agree():
    ck = rk.CellKey.from_matrix(PTAB)
    a = rk.Release(np.array([2, 3]), margins={}, mechanism=ck, dims=("r",),
                   coords={"r": ["x", "y"]})
    b = rk.Release(np.array([2]), margins={}, mechanism=ck, dims=("r",), coords={"r": ["x"]})
    one = rk.posterior(a, rk.priors.Flat(0, 8))
    both = rk.posterior(rk.ReleaseSet([a, b]), rk.priors.Flat(0, 8))
    np.testing.assert_allclose(both.pmf.values, one.pmf.values, atol=1e-12)
    c = rk.Release(np.array([3]), margins={}, mechanism=ck, dims=("r",), coords={"r": ["x"]})
    with pytest.raises(ValueError, match="not from one run with one set of record keys"):
        rk.posterior(rk.ReleaseSet([a, c]), rk.priors.Flat(0, 8))


def test_random_rounding_repeats_average_away():
    """The same cell rounded independently twice says more than once."""
    rr = rk.RandomRounding(5)
    a = rk.Release(np.array([5]), margins={}, mechanism=rr, dims=("r",), coords={"r": ["x"]})
    b = rk.Release(np.array([10]), margins={}, mechanism=rr, dims=("r",), coords={"r": ["x"]})
    one = rk.posterior(a, rk.priors.Flat(0, 20))
    both = rk.posterior(rk.ReleaseSet([a, b]), rk.priors.Flat(0, 20))
    # alone: 1..9 possible; with both: 6..9 only (rounded to 5 and to 10)
    assert one.pmf.sel(value=3).item() > 0
    assert both.start.item() == 6 and both.pmf.sel(value=slice(6, 9)).sum().item() == \
        pytest.approx(1.0)


@pytest.mark.parametrize("kind", ["cellkey", "rounding"])
@pytest.mark.parametrize("scale", [300, pytest.param(40_000, marks=pytest.mark.slow)])
def test_realistic_counts(kind, scale):
    """A region of hundreds (and of tens of thousands) and its two parts: every original
    within the mechanism's reach, brute force over the two free cells."""
    rng = np.random.default_rng(scale)
    x = rng.integers(scale // 2, scale, 2)
    if kind == "cellkey":
        mech = rk.CellKey(D=3, V=1.5)
        pt = mech.ptable

        def loglik(a, y):
            p = float(pt.prob(y, a))
            return np.log(p) if p > 0 else -np.inf
        reach = 3
    else:
        mech = rk.RandomRounding(10)
        loglik = ref_noise.rounding_loglik(10)
        reach = 9
    pub = [int(v) for v in (x + rng.integers(-2, 3, 2))]     # any published values in reach
    g = int(x.sum()) + int(rng.integers(-2, 3))
    if kind == "rounding":
        pub = [v - v % 10 for v in pub]
        g = g - g % 10
    split = rk.Release(np.array(pub), margins={}, mechanism=mech, dims=("r",),
                       coords={"r": ["r0", "r1"]})
    whole = rk.Release(np.array([g]), margins={}, mechanism=mech, dims=("r",),
                       coords={"r": ["G"]})
    rset = rk.ReleaseSet([split, whole], groups={"r": {"G": ["r0", "r1"]}})
    numbers = [(frozenset([0]), pub[0]), (frozenset([1]), pub[1]), (frozenset([0, 1]), g)]
    lo = [max(0, v - reach) for v in pub]
    hi = max(pub) + reach
    rate = float(scale) * 0.75
    from scipy import stats

    def log_prior(T):
        return stats.poisson.logpmf(T, rate).sum(axis=1)
    try:
        want, log_z, _ = ref.posterior(numbers, kind == "cellkey", loglik, 2, hi, log_prior, lo)
    except FloatingPointError:
        pytest.skip("no table")
    post = rk.posterior(rset, rk.priors.Poisson(rate))
    for c in range(2):
        for v in range(lo[c], hi + 1):
            got = post.prob(np.array([v, v])).values[c]
            assert got == pytest.approx(want[c, v], abs=1e-9)
    assert post.log_evidence == pytest.approx(log_z, abs=1e-7)


def test_progress_reports_every_step_of_the_linked_route():
    """The sum-product runs step by step (the kernel yields, it calls nothing back): the
    caller's progress sees every forward and backward step, ending at the total, and the
    posterior is the one computed without progress."""
    rr = rk.RandomRounding(3)
    whole = rk.Release(np.array([[9, 3], [6, 6]]), margins={}, mechanism=rr,
                       dims=("region", "age"), coords={"region": ["N", "S"]})
    split = rk.Release(np.array([[6, 3], [3, 0]]), margins={}, mechanism=rr,
                       dims=("region", "age"), coords={"region": ["N1", "N2"]})
    both = rk.ReleaseSet([whole, split], groups={"region": {"N": ["N1", "N2"]}})
    seen = []
    post = rk.posterior(both, rk.priors.Flat(0, 20), route="linked-dp",
                        progress=lambda done, total: seen.append((done, total)))
    total = 2 * 6                          # 3 x 2 finest cells, forward and backward
    assert seen == [(k, total) for k in range(1, total + 1)]
    quiet = rk.posterior(both, rk.priors.Flat(0, 20), route="linked-dp")
    np.testing.assert_array_equal(post.probs, quiet.probs)
