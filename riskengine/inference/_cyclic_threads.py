"""The thread driver of the cyclic enumeration walk (``kernels.cyclic_enum``).

The kernels take plain arrays and return plain arrays; this module holds the Python
policy around them: how many threads walk, how many slots the tasks are dealt to (and
their accumulators), when a walk is too small to be worth threads, and the thread pool
that runs the two slot-claiming workers side by side.  Its caller is
:mod:`riskengine.inference.cyclic_enumerate`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from kernels import cyclic_enum
from kernels._jit import SERIAL_BELOW

__all__ = ["walk"]


def walk(prefixes, pb: cyclic_enum.Problem, canon: cyclic_enum.Canon,
         tab: cyclic_enum.Tables) -> tuple:
    """Walk every branch in ``prefixes`` (one row of forced first choices each), in parallel,
    with the tables ``tab = cyclic_enum.prepare(pb, limit)``.

    Choices are 0, 1, 2 for e = +1, 0, -1.  Returns (Hg summed over branches, per-branch
    total mass, per-branch valid counts, per-branch canonical counts).

    The compiled parts are small on purpose (compile time): this wrapper splits the
    branches into tasks, lets ``nth`` workers walk them (``cyclic_enum.slots_lut`` /
    ``cyclic_enum.slots_offsets``, on threads) and ``cyclic_enum.finish`` sum up.

    Threads: the tasks are dealt round-robin to S slots (task t to slot t % S), each with
    its own accumulators, rows padded apart (no false sharing).  The threads claim whole
    slots as they go (an atomic counter): a thread that is held up, or a slot of cheap
    tasks, costs no waiting; and as every slot is walked in a fixed order and the slots
    are summed in a fixed order, the result does not depend on the timing.
    """
    m = pb.cyc_ptr.shape[0] - 1
    G, W = pb.F.shape
    lut, base, vbase = tab.lut, tab.base, tab.vbase
    nent = int(base[m]) if lut else 1
    n0 = int(vbase[1]) if lut else 1
    tprefix, sub = cyclic_enum.tasks(prefixes, m, canon.key_mode)
    ntask = tprefix.shape[0]
    nth = max(1, min(numba.get_num_threads(), ntask))
    S = min(ntask, 32)
    while S > nth and S * (G * W + nent + n0 + 48) > (1 << 23):
        S -= 1
    Ht = np.zeros((S, G * W + 16))
    Lt = np.zeros((S, nent + 16))
    W0t = np.zeros((S, n0 + 16))
    tres = np.zeros((ntask, 3))
    counter = np.zeros(16, np.int64)
    zT, zsh, zs, zsf = cyclic_enum.zshift(canon.zset, tab.tr_ptr, tab.tr_lvl, tab.tr_d,
                                          pb.cyc_ptr, pb.cyc_grp, pb.cyc_coef, pb.fin_ptr,
                                          pb.fin_grp, G)
    if float(3 ** min(m, 40)) < SERIAL_BELOW:
        nth = 1
    if lut:
        _on_threads(nth, cyclic_enum.slots_lut,
                    (counter, S, m, tprefix, Lt, W0t, tres, base, tab.sinit, tab.fac, tab.vc,
                     tab.ssum, tab.tr_ptr, tab.tr_lvl, tab.tr_d, tab.dmat, zT, zsh))
    else:
        _on_threads(nth, cyclic_enum.slots_offsets,
                    (counter, S, tprefix, sub, pb.cyc_ptr, pb.cyc_grp, pb.cyc_coef, G, pb.K,
                     pb.fin_ptr, pb.fin_grp, zT, zs, zsf, canon.key_mode, canon.pivots,
                     canon.key_base, canon.keys, canon.key_starts, Ht, tres, tab.epw,
                     tab.bcode, tab.qt, tab.fin_coef, tab.Fs, tab.ow0))
    return cyclic_enum.finish(prefixes.shape[0], sub, tres, Ht, Lt, W0t, G, W, pb.K,
                              pb.cyc_ptr, pb.cyc_grp, pb.cyc_coef, pb.fin_ptr, pb.fin_grp,
                              lut, tab.A, tab.stride, base, tab.facz)


def _on_threads(nth: int, worker, args) -> None:
    """``nth`` copies of a slot-claiming worker side by side (the kernels release the GIL);
    compiling a plain kernel for this is several seconds faster than a ``prange`` loop.
    The workers are plain (serial) kernels: these threads enter no numba parallel region,
    so they are safe under every threading layer, ``workqueue`` included (which is not
    threadsafe: tests/inference/test_threading_layers.py)."""
    if nth <= 1:
        worker(*args)
        return
    with ThreadPoolExecutor(nth) as ex:
        for f in [ex.submit(worker, *args) for _ in range(nth)]:
            f.result()
