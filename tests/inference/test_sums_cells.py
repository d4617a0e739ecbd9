"""The sums route's posterior of every published cell (``post.releases[0]``, dim
``cell``): a suppressed subtotal's pmf equals a brute force over the finest cells."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import poisson

import riskengine as rk


@pytest.mark.parametrize("seed", range(5))
def test_every_published_cell_pmf_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    geo = rk.Hierarchy({"N": ["N1", "N2"], "S": ["S1"]})
    vals = rng.poisson(1.5, (3, 2))
    t = rk.Table(vals, dims=("geo", "sex"), coords={"geo": ["N1", "N2", "S1"],
                                                    "sex": ["F", "M"]},
                 hierarchies={"geo": geo})
    ts = rk.TableSet(t)
    s = ts.system
    x = ts.values.copy()
    # hide two districts' cells of one sex and their region's subtotal of that sex
    hide = [s.find(geo="N1", sex="F"), s.find(geo="N2", sex="F"), s.find(geo="N", sex="F"),
            s.find(geo="N1", sex="M"), s.find(geo="N2", sex="M")]
    x[hide] = np.nan
    rel = rk.TableSetRelease(ts, x, rk.CellSuppression())
    post = rk.posterior(rel, rk.priors.Poisson(2.0))
    cells = post.releases[0]
    M = s.M.toarray()
    pub = np.flatnonzero(~np.isnan(x))
    unk = np.flatnonzero(np.isnan(x[: s.n_interior]))
    hi = int(np.nanmax(x))
    hist, z = {}, 0.0
    for combo in itertools.product(range(hi + 1), repeat=unk.size):
        f = np.nan_to_num(x[: s.n_interior]).copy()
        f[unk] = combo
        full = M @ f
        if not np.allclose(full[pub], x[pub]):
            continue
        w = float(np.prod(poisson.pmf(f, 2.0)))
        z += w
        for j in hide:
            hist.setdefault(j, {}).setdefault(int(full[j]), 0.0)
            hist[j][int(full[j])] += w
    order = list(np.flatnonzero(s.published))
    for j in hide:
        k = order.index(j)
        got = cells.pmf.isel(cell=k)
        for v, w in hist[j].items():
            assert float(got.sel(value=v)) == pytest.approx(w / z, abs=1e-12)
        assert float(got.sum()) == pytest.approx(1.0)
