"""rk.reconstruct on a dask LocalCluster: one task per unit, a worker killed mid-run, a
unit that keeps failing reported by name."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
from riskengine._units import run_units

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


class _Task:
    def __init__(self, key):
        self.key = key

    def digest(self):
        return self.key


def _fails(task):
    raise ValueError(f"unit {task.key} cannot be solved")


def _census(districts, areas, seed):
    from riskengine.census import CensusPopulation
    pop = CensusPopulation(regions=1, districts=districts, areas=areas, households=(10, 25))
    df = pop.generate(np.random.default_rng(seed))
    return rk.TableSet.from_pandas(df, pop.tables(), hierarchies=pop.hierarchies())


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        yield c


def test_a_killed_worker_changes_nothing(cluster):
    ts = _census(6, 2, 21)
    serial = rk.reconstruct(ts, unit="area", level=2, prior=rk.priors.Uniform(),
                            max_candidates=2e4, monte_carlo=False)
    killed = []

    def kill_one(done, total):
        if not killed:
            nanny = next(iter(cluster.workers.values()))
            nanny.process.process.kill()          # SIGKILL: the nanny starts a new one
            killed.append(done)
    with distributed.Client(cluster) as client:
        ds = rk.reconstruct(ts, unit="area", level=2, prior=rk.priors.Uniform(),
                            max_candidates=2e4, monte_carlo=False, scheduler=client,
                            progress=kill_one)
    assert killed
    for v in ("lower", "upper", "certain", "mean", "prob_mode", "confidence"):
        np.testing.assert_array_equal(ds[v].values, serial[v].values)
    assert ds.attrs["units"] == 6


def test_a_failing_unit_is_reported_not_dropped(cluster):
    with distributed.Client(cluster) as client, \
            pytest.raises(RuntimeError, match="unit 'u2' failed after 1 retries"):
        run_units([_Task("u1"), _Task("u2")][1:], _fails, scheduler=client, retries=1)
