"""Every route family that runs on threads or in numba's parallel regions, under each of
numba's threading layers (``NUMBA_THREADING_LAYER``: ``omp``, ``tbb``, ``workqueue``).

``workqueue`` (numba's fallback on a machine without OpenMP or TBB) is not threadsafe: a
parallel region entered from two Python threads at once aborts the process (SIGABRT,
"Concurrent access has been detected"), which the 2-D Gibbs chains did (each chain's
block redraw calls the table DP's parallel kernels).  The layer is chosen when the first
parallel kernel runs, once a process: each layer runs in its own subprocess, all cases in
one (:data:`CASES`), and must exit 0 with the same answers as the default layer's run --
the reference here is the same library under the default layer; every case is itself
tested against brute force in its own test file (test_gibbs, test_gibbs3d, test_cyclic,
test_table_dp, test_halves, test_resampling_joint).  Chains' draws and integer counts
must be equal; probabilities equal to 1e-12 (the kernels chunk their work the same way
whatever the threads, so they agree to the last bit where this was written).  A layer
that cannot load here (``tbb`` without the TBB library) is skipped with numba's reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

#: run in a fresh interpreter; prints one JSON line: {"unavailable": why} when the layer
#: cannot load, else {"layer": the layer numba took, case: answer, ...}
CASES = r'''
import json, sys, warnings
import numpy as np
import numba


@numba.njit(parallel=True)
def _probe(n):
    s = 0.0
    for i in numba.prange(n):
        s += i
    return s


try:
    _probe(4)
except Exception as e:                          # no such layer on this machine
    print(json.dumps({"unavailable": str(e).splitlines()[0]}))
    sys.exit(0)
warnings.simplefilter("ignore")
import riskengine as rk
from riskengine.inference import halves
from riskengine.inference import table_dp as dp

out = {"layer": numba.threading_layer()}
rng = np.random.default_rng(3)
# chains on four threads at once (each 2-D chain calls the table DP's parallel kernels)
mc = rk.MonteCarlo(chains=4, warmup=10, draws=60, workers=4)
rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(3.0, size=(4, 3)), dims=("a", "b")))
out["gibbs 2-D"] = rk.posterior(rel, route="gibbs", mcmc=mc).chains.tolist()
rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(2.0, size=(3, 3, 2)),
                                        dims=("a", "b", "c")))
out["gibbs 3-D"] = rk.posterior(rel, route="gibbs", mcmc=mc).chains.tolist()
# the cyclic walk on threads (12 cycles: 3^12 branches, above the serial threshold)
mech = rk.CyclicPerturbation(rk.cycles.diagonal(12), alpha=0.25, beta=0.25)
rel = mech.protect(rk.Table(rng.poisson(2.0, size=(12, 12))), rng)
post = rk.posterior(rel, rk.priors.Uniform(), route="enumerate")
out["cyclic threads"] = [post.probs.tolist(), post.n_candidates]
# the table DP's parallel kernels (enough states for several threads)
rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(5.0, size=(5, 4)), dims=("a", "b")))
post = rk.posterior(rel, rk.priors.Poisson(5.0), route="dp")
out["table DP"] = [post.probs.tolist(), post.n_candidates]
# halves: De Loera & Sturmfels' 4 x 4 margins (test_halves.py)
R, C = [220, 215, 93, 64], [108, 286, 71, 127]
rel = rk.Release(None, margins={("v",): R, ("w",): C, (): sum(R)},
                 mechanism=rk.MarginsOnly(), dims=("v", "w"))
win = dp.release_windows(rel, None).trimmed()
out["halves"] = str(halves.count(win.cell_lo, win.cell_lw, win.row_lo, win.col_lo))
# multinomial boxes: the bootstrap's and the binomial perturbation's joint likelihoods
rel = rk.Bootstrap(2, 2.0).protect(rk.Table(np.array([[3, 1, 2], [0, 2, 4]]),
                                            dims=("a", "b")), np.random.default_rng(4))
post = rk.posterior(rel, rk.priors.Poisson(2.0))
out["multinomial box"] = [post.attrs["route"], post.probs.tolist()]
rel = rk.BinomialPerturbation(2.0).protect(rk.Table(np.array([[2, 1], [4, 3]]),
                                                    dims=("a", "b")), np.random.default_rng(5))
post = rk.posterior(rel, rk.priors.Poisson(2.0))
out["binomial box"] = [post.attrs["route"], post.probs.tolist()]
print(json.dumps(out))
'''


def _run(layer: str | None) -> dict:
    """The cases' answers in a subprocess under ``layer`` (None: numba's default)."""
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    if layer is not None:
        env["NUMBA_THREADING_LAYER"] = layer
    proc = subprocess.run([sys.executable, "-c", CASES], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, (
        f"layer {layer}: exit code {proc.returncode} (-6: SIGABRT)\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def default_answers():
    out = _run(None)
    assert "unavailable" not in out, out
    return out


def _same(a, b, path="") -> None:
    """``a == b`` for ints and strings, to 1e-12 for floats, through nested lists."""
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        if a and not isinstance(a[0], (list, str)):
            np.testing.assert_allclose(np.asarray(b, float), np.asarray(a, float),
                                       rtol=1e-12, atol=1e-15, err_msg=path)
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


@pytest.mark.parametrize("layer", ["workqueue", pytest.param("omp", marks=pytest.mark.slow),
                                   pytest.param("tbb", marks=pytest.mark.slow)])
def test_every_threaded_route_runs_under_the_layer(layer, default_answers):
    got = _run(layer)
    if "unavailable" in got:
        pytest.skip(f"numba's {layer} threading layer does not load here: "
                    f"{got['unavailable']}")
    assert got.pop("layer") == layer
    want = {k: v for k, v in default_answers.items() if k != "layer"}
    assert set(got) == set(want)
    for case, answer in want.items():
        if case.startswith("gibbs"):            # whole tables: equal draws
            assert np.array_equal(np.asarray(got[case]), np.asarray(answer)), case
        else:
            _same(answer, got[case], case)
    assert got["multinomial box"][0] == "joint" and got["binomial box"][0] == "joint"
