"""Serial and dask runs of rk.simulate give identical datasets (acceptance).

Skipped, with the reason, where dask.distributed is not installed
(``pip install "riskengine[dask]"``; the ``test`` extra includes it).
"""

import numpy as np
import pytest
import xarray as xr

import riskengine as rk

distributed = pytest.importorskip("distributed", reason='needs pip install "riskengine[dask]"')

GEN = rk.generators.Poisson(3.0, shape=(3, 3), dims=("v", "w"))
MECH = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.3, beta=0.3)
PRIOR = rk.priors.Poisson(3.0)


def _sim(n, **kw):
    return rk.simulate(GEN, MECH, PRIOR, n_tables=n, rng=np.random.default_rng(21), **kw)


@pytest.mark.slow
def test_serial_and_local_dask_cluster_identical():
    """scheduler="dask": a local cluster of 2 worker processes, chunks of 4 tables."""
    serial = _sim(14)
    seen = []
    dask = _sim(14, scheduler="dask", chunk=4, progress=lambda d, t: seen.append((d, t)))
    xr.testing.assert_identical(serial, dask)
    assert seen[-1] == (14, 14) and len(seen) == 4


def test_existing_cluster_by_client_and_by_address():
    """An existing cluster, passed as a Client or as its address (in-process workers here
    to keep the test fast; the worker-process path is the test above)."""
    serial = _sim(6)
    with (distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                   dashboard_address=None) as cluster,
          distributed.Client(cluster) as client):
        xr.testing.assert_identical(serial, _sim(6, scheduler=client, chunk=2))
        assert client.status == "running"          # a given client is left open
        xr.testing.assert_identical(serial, _sim(6, scheduler=cluster.scheduler_address,
                                                 chunk=5))
