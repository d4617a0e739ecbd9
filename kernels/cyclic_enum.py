"""Streaming exact enumeration of cyclic-perturbation sign vectors.

Plain arrays in, plain arrays out.  The caller (``riskengine.inference.cyclic_enumerate``)
describes the problem in *group* form: cells whose rows of the cycle matrix are
identical (same cycles, same signs) form one group; they move together, so one
integer offset per group is the whole state of the walk.

Notation (m cycles, G groups, K = largest group coverage, W = 2K + 1):

* candidate original ``T = P - sum_k e_k C_k`` for a sign vector e in {-1,0,1}^m;
  for a cell c of group g, ``T_c = P_c - o_g`` with ``o_g = sum_k coef[g, k] e_k``.
* the walk decides cycles in *reverse* order k = m-1, ..., 0 (depth d = m-1-k).
  After deciding e_k the offsets hold ``sum_{j >= k} coef e_j``, i.e. the state
  ``B_k = S_{k-1}`` that the forward mechanism saw just before cycle k.  So the
  coin probability ``q_k(e_k | S_{k-1})`` (with its blocking rule) is known at
  that depth, and the path weight is built incrementally.
* a group is *finalised* at its lowest cycle: from then on its offset is its
  final value, so its prior factor enters the weight there and its histogram
  is updated once per node, with the total leaf mass of that node's subtree.

Weights: ``F[g, o + K]`` is the group's prior factor ``prod_{c in g} pi_c(P_c - o)``
rescaled so that its maximum over o is 1, and ``Fok`` its support.  Leaf
weights are therefore <= 1 (no overflow); underflow shows as a tiny total and
is checked by the caller.

Distinct originals: several sign vectors reach the same table when the cycles
are linearly dependent.  ``zset`` lists the lattice vectors z (Cz = 0, entries in
[-2, 2], first nonzero negative); a valid leaf e is counted as a candidate only
if no ``e + z`` is inside the box and valid (lexicographically smallest valid
member of its class).  With ``key_mode`` the caller instead receives an integer
key per valid leaf (offsets of a basis of pivot groups) and deduplicates.

How the walk is made fast (the same leaves, weights and counts as the direct
walk; only the order of floating-point additions and of a few multiplications
differs, so results agree to rounding):

* **Tables instead of offsets** (``_lwalk``).  Everything cycle j contributes to
  a path (its coin q_j with the blocking rule, the support and prior factors of
  the groups finalised at j) depends only on e_j and on the offsets, before e_j,
  of the groups *in* cycle j.  Those offsets are encoded as one small integer
  state s_j (mixed radix; each offset is bounded by the group's coverage by the
  cycles above j, and a group that can reach neither its zero bound nor its
  final cycle here is left out), and the factor of every (s_j, e_j) is tabulated
  once per problem (``_lut_build``).  Deciding e_k then only shifts the states
  of the lower cycles that share a group with cycle k by fixed amounts, so a
  node costs a table load and a multiply.  Histograms are accumulated per table
  entry (``Lacc``) and spread to ``Hg`` once at the end (``_lut_spread``).
* **No per-leaf work.**  Below a node of cycle 1 with weight w1 and cycle-0
  state u, the three leaves' total mass is ``w1 * ssum[u]``, their number
  ``vc[u]``, and their histogram entries ``w1 * facz[3 u + c]``: only w1 is
  accumulated (``W0[u]``), so a leaf costs about a third of a node.
* **Straight-line bottom.**  The lowest cycles (up to seven, 2187 leaves) are
  walked by nested loops (``_lb7`` .. ``_lb1``, inlined into one function per
  depth) with their constants in registers and unsigned indices (no
  negative-index wraparound code); the general depth-first state machine, with
  its unpredictable branches, runs only above them.
* **Canonical test along the way.**  For each lattice vector z the walk follows
  the shadow path e + z and counts the decided cycles where it left the box or
  became impossible; a leaf is canonical iff no shadow is still alive, and
  below a node where none is alive the bottom loops run (every leaf canonical).
  No leaf re-walks a vector.
* **Threads**: the branches are split into many equal tasks (``tasks``), dealt
  round-robin to slots with their own accumulators (padded apart: no false sharing);
  the workers (``slots_lut``, ``slots_offsets``) claim slots from an atomic counter,
  so a thread that is held up or a slot of cheap (pruned) tasks costs no waiting, and
  the sums, taken slot by slot in a fixed order (``finish``), do not depend on the
  timing.  The threads themselves are the caller's
  (``riskengine/inference/_cyclic_threads.py`` runs the workers side by side).
* Key mode, and tables that would be too large (more than ``_LUT_LIMIT``
  entries, or more than 3^m / 4, when building them would cost more than it
  saves), use the offset-based walk (``_gwalk``): the direct implementation of
  the description above, with flat indices and a straight-line bottom of three
  cycles.  The tables are built once per problem (``prepare``); the caller keeps them for
  its next call (it walks one problem in several chunks of branches).
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import njit

NEGATIVE = 0
ANY_ZERO = 1

_LUT_LIMIT = 1 << 20      # most table entries (3 per state and cycle) for the table walk


def _internal(**kwargs):
    """``njit`` for a function called only from compiled code: no Python or C wrappers
    (less to compile)."""
    return njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, **kwargs)


_inlined = _internal(forceinline=True)   # small helpers, inlined by LLVM into their callers


@intrinsic
def _fetch_add(typingctx, arr, idx, val):
    """Atomically ``arr[idx] += val`` (int64 array); returns the previous value."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

    return types.int64(arr, types.int64, types.int64), codegen


@_inlined
def _u(i):
    """An index known to be >= 0, as unsigned: no negative-index wraparound code."""
    return np.uint64(i)


# --- the offset-based walk (key mode, very wide cycles) --------------------------------
#
# A group's offset is kept as its flat index into the (G, W) tables, ow[g] = g W + o + K,
# so that the prior factor and the histogram bin are one load / one add away; epw[t] is
# the same index for the group's smallest published value (capped at K + 1: beyond that
# it can never be reached).  Fs is F flattened, -1.0 outside the support.

@_inlined
def _enter(k, c, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt):
    """Apply e_k = 1 - c to the offsets; return q_k(e_k | state), 0.0 if impossible."""
    ev = 1 - c
    bad = False
    bm = 0
    for t in range(cyc_ptr[_u(k)], cyc_ptr[_u(k + 1)]):
        ut = _u(t)
        g = _u(cyc_grp[ut])
        x = ow[g] + cyc_coef[ut] * ev
        ow[g] = x
        p = epw[ut]
        bad |= x > p
        if x == p:
            bm |= bcode[ut]
    if bad:
        return 0.0
    return qt[_u(4 * c + bm)]


@_inlined
def _leave(k, c, ow, cyc_ptr, cyc_grp, cyc_coef):
    ev = 1 - c
    for t in range(cyc_ptr[_u(k)], cyc_ptr[_u(k + 1)]):
        ut = _u(t)
        ow[_u(cyc_grp[ut])] -= cyc_coef[ut] * ev


@_inlined
def _fin(k, w, ow, fin_ptr, fin_grp, Fs):
    """w times the prior factors of the groups finalised at cycle k; -1.0 if invalid."""
    for t in range(fin_ptr[_u(k)], fin_ptr[_u(k + 1)]):
        f = Fs[_u(ow[_u(fin_grp[_u(t)])])]
        if f < 0.0:
            return -1.0
        w *= f
    return w


@_inlined
def _hist(k, M, ow, fin_ptr, fin_grp, Hg):
    for t in range(fin_ptr[_u(k)], fin_ptr[_u(k + 1)]):
        Hg[_u(ow[_u(fin_grp[_u(t)])])] += M


@_inlined
def _shadow_ok(k, cz, zi, ow, zs, zsf, cyc_ptr, cyc_grp, epw, bcode, qt, fin_ptr, fin_grp, Fs):
    """Whether the shadow path e + z (its sign at cycle k is 1 - cz, in the box) is
    still possible after cycle k: its offsets there are ow + zs[zi, t], those of the
    groups finalised at k ow + zsf[zi, u]."""
    bm = 0
    for t in range(cyc_ptr[_u(k)], cyc_ptr[_u(k + 1)]):
        ut = _u(t)
        x = ow[_u(cyc_grp[ut])] + zs[_u(zi), ut]
        p = epw[ut]
        if x > p:
            return False
        if x == p:
            bm |= bcode[ut]
    if qt[_u(4 * cz + bm)] <= 0.0:
        return False
    for u in range(fin_ptr[_u(k)], fin_ptr[_u(k + 1)]):
        uu = _u(u)
        if Fs[_u(ow[_u(fin_grp[uu])] + zsf[_u(zi), uu])] < 0.0:
            return False
    return True


@_inlined
def _key(ow, ow0, pivots, key_base, K):
    key = 0
    for i in range(pivots.shape[0]):
        g = pivots[i]
        key = key * key_base + (ow[g] - ow0[g] + K)
    return key


@_inlined
def _leaves(w1, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt, fin_ptr, fin_grp, fin_coef, Fs,
            Hg):
    """The three leaves (cycle 0) below a node of weight w1, the offsets left untouched
    (a finalised group's bin is ow + fin_coef e_0).  Returns (mass, valid leaves)."""
    s1 = 0.0
    nv = 0
    a, b = cyc_ptr[0], cyc_ptr[1]
    fa, fb = fin_ptr[0], fin_ptr[1]
    for c in range(3):
        ev = 1 - c
        bad = False
        bm = 0
        for t in range(a, b):
            ut = _u(t)
            x = ow[_u(cyc_grp[ut])] + cyc_coef[ut] * ev
            p = epw[ut]
            if x > p:
                # (an early exit also keeps LLVM from vectorising this short loop with
                # gathers, which would wait for the stores to ow to retire)
                bad = True
                break
            if x == p:
                bm |= bcode[ut]
        if bad:
            continue
        q = qt[_u(4 * c + bm)]
        if q > 0.0:
            w = w1 * q
            ok = True
            for t in range(fa, fb):
                ut = _u(t)
                f = Fs[_u(ow[_u(fin_grp[ut])] + fin_coef[ut] * ev)]
                if f < 0.0:
                    ok = False
                    break
                w *= f
            if ok:
                s1 += w
                nv += 1
                for t in range(fa, fb):
                    ut = _u(t)
                    Hg[_u(ow[_u(fin_grp[ut])] + fin_coef[ut] * ev)] += w
    return s1, nv


@_internal(_nrt=False)
def _gblock3(w3, ow, ow0, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt, fin_ptr, fin_grp,
             fin_coef, Fs, K, Hg, key_mode, pivots, key_base, keys, key_pos):
    """The 27 leaves below a node at depth m - 4 (cycles k = 2, 1, 0), when none of them
    needs the canonical test.  Returns (mass, valid leaves)."""
    tot = 0.0
    nv = 0
    for c2 in range(3):
        q2 = _enter(2, c2, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt)
        if q2 > 0.0:
            w2 = _fin(2, w3 * q2, ow, fin_ptr, fin_grp, Fs)
            if w2 >= 0.0:
                s2 = 0.0
                for c1 in range(3):
                    q1 = _enter(1, c1, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt)
                    if q1 > 0.0:
                        w1 = _fin(1, w2 * q1, ow, fin_ptr, fin_grp, Fs)
                        if w1 >= 0.0 and not key_mode:
                            r = _leaves(w1, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt,
                                        fin_ptr, fin_grp, fin_coef, Fs, Hg)
                            nv += r[1]
                            _hist(1, r[0], ow, fin_ptr, fin_grp, Hg)
                            s2 += r[0]
                        elif w1 >= 0.0:
                            s1 = 0.0
                            for c0 in range(3):
                                q0 = _enter(0, c0, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode,
                                            qt)
                                if q0 > 0.0:
                                    w0 = _fin(0, w1 * q0, ow, fin_ptr, fin_grp, Fs)
                                    if w0 >= 0.0:
                                        s1 += w0
                                        _hist(0, w0, ow, fin_ptr, fin_grp, Hg)
                                        if key_mode:
                                            keys[key_pos + nv] = _key(ow, ow0, pivots,
                                                                      key_base, K)
                                        nv += 1
                                _leave(0, c0, ow, cyc_ptr, cyc_grp, cyc_coef)
                            _hist(1, s1, ow, fin_ptr, fin_grp, Hg)
                            s2 += s1
                    _leave(1, c1, ow, cyc_ptr, cyc_grp, cyc_coef)
                _hist(2, s2, ow, fin_ptr, fin_grp, Hg)
                tot += s2
        _leave(2, c2, ow, cyc_ptr, cyc_grp, cyc_coef)
    return tot, nv


@_internal(_nrt=False)
def _gwalk(prefix, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt, fin_ptr, fin_grp, fin_coef, Fs,
           K, zT, zs, zsf, Hg, key_mode, pivots, key_base, keys, key_start,
           ow0, ow, choice, alive, wbefore, mass, zlive, nlive):
    """Depth-first walk of one task (its first choices fixed by prefix).

    Returns (total leaf mass, number of valid sign vectors, number of canonical
    valid sign vectors, number of keys written).  Hg (G W, flat) is accumulated in place.
    The canonical test follows the shadows e + z as ``_lwalk`` does (``_shadow_ok``).
    """
    m = cyc_ptr.shape[0] - 1
    s = prefix.shape[0]
    nz = zT.shape[1]
    # the bottom three cycles go to _gblock3 when they are below the forced prefix
    dblock = m - 4 if m - 3 >= s else -2
    for g in range(ow.shape[0]):
        ow[g] = ow0[g]
    for j in range(m):
        choice[j] = -1
    for zi in range(nz):
        zlive[0, zi] = zi
    nlive[0] = nz
    wbefore[0] = 1.0
    total = 0.0
    nvalid = 0
    ncanon = 0
    nkeys = 0
    if dblock == -1 and nz == 0:
        # m == 3, no prefix: the whole walk is one block below the root
        r = _gblock3(1.0, ow, ow0, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt, fin_ptr, fin_grp,
                     fin_coef, Fs, K, Hg, key_mode, pivots, key_base, keys, key_start)
        return r[0], r[1], r[1], r[1] if key_mode else 0
    d = 0
    while d >= 0:
        k = m - 1 - d
        c = choice[d]
        if c >= 0:
            # leave the node (d, c): histogram its finalised groups, pass mass up
            if alive[d]:
                M = mass[d]
                _hist(k, M, ow, fin_ptr, fin_grp, Hg)
                if d > 0:
                    mass[d - 1] += M
                else:
                    total += M
            _leave(k, c, ow, cyc_ptr, cyc_grp, cyc_coef)
        if d < s:
            c = prefix[d] if c == -1 else 3
        else:
            c = c + 1
        if c > 2:
            choice[d] = -1
            d -= 1
            continue
        choice[d] = c
        ev = 1 - c
        q = _enter(k, c, ow, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt)
        w = -1.0
        if q > 0.0:
            w = _fin(k, wbefore[d] * q, ow, fin_ptr, fin_grp, Fs)
        ok = w >= 0.0
        alive[d] = ok
        if not ok:
            continue
        nzero = 0
        for i in range(nlive[d]):
            zi = zlive[d, i]
            ez = ev + zT[k, zi]
            if -1 <= ez <= 1 and _shadow_ok(k, 1 - ez, zi, ow, zs, zsf, cyc_ptr, cyc_grp, epw,
                                            bcode, qt, fin_ptr, fin_grp, Fs):
                zlive[d + 1, nzero] = zi
                nzero += 1
        nlive[d + 1] = nzero
        if d == dblock and nzero == 0:
            r = _gblock3(w, ow, ow0, cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt, fin_ptr,
                         fin_grp, fin_coef, Fs, K, Hg, key_mode, pivots, key_base, keys,
                         key_start + nkeys)
            mass[d] = r[0]
            nvalid += r[1]
            ncanon += r[1]
            if key_mode:
                nkeys += r[1]
            continue
        if d == m - 1:
            mass[d] = w
            nvalid += 1
            if nzero == 0:
                ncanon += 1
            if key_mode:
                keys[key_start + nkeys] = _key(ow, ow0, pivots, key_base, K)
                nkeys += 1
        else:
            mass[d] = 0.0
            wbefore[d + 1] = w
            d += 1
            choice[d] = -1
    return total, nvalid, ncanon, nkeys


# --- the table-driven walk ------------------------------------------------------------
#
# For each cycle j let S_j be its groups (entries t = cyc_ptr[j] .. cyc_ptr[j+1]-1).
# Before e_j is decided, the offset of the group of entry t lies in [-A_t, A_t], with
# A_t its coverage by the cycles above j; the state of cycle j is the mixed-radix
# number s_j = sum_t (off + A_t) * stride_t (< N_j), over the entries that matter here
# (stride_t = 0 for a group neither finalised at j nor able to reach its smallest
# published value: its offset changes nothing at j).  Tabulated per (s_j, c), c = 1 - e_j,
# at idx = base_j + 3 s_j + c:
#   fac[idx] = q_j * prod F (the groups finalised at j), or -1.0 if the child is impossible;
#   facz[idx] = the same with 0.0 for impossible;
# and per state, at vbase_j + s_j: vc (number of possible children) and ssum (sum of facz).
# Deciding e_k moves s_j (j < k) by e_k * D[k -> j] (tr_* lists; dmat[8 k + j] for the
# bottom cycles).  Node masses are accumulated per entry in Lacc.

@_internal()
def _lut_build(cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K, fin_ptr, fin_grp, rule, qt, limit):
    """The tables above; ``ok`` is False when they would exceed ``limit`` entries."""
    m = cyc_ptr.shape[0] - 1
    G = pmin.shape[0]
    nt = cyc_grp.shape[0]
    A = np.zeros(nt, np.int64)
    stride = np.zeros(nt, np.int64)
    N = np.zeros(m, np.int64)
    cov = np.zeros(G, np.int64)
    isfin = np.zeros(G, np.bool_)
    total = 0
    ok = True
    for j in range(m - 1, -1, -1):
        for u in range(fin_ptr[j], fin_ptr[j + 1]):
            isfin[fin_grp[u]] = True
        n = 1
        for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
            g = cyc_grp[t]
            A[t] = cov[g]
            if not isfin[g] and A[t] + abs(cyc_coef[t]) < pmin[g]:
                # never at or below zero here, and no prior factor: not part of the state
                continue
            stride[t] = n
            n *= 2 * A[t] + 1
            if n > limit:
                ok = False
                break
        if not ok:
            break
        N[j] = n
        total += 3 * n
        if total > limit:
            ok = False
            break
        for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
            cov[cyc_grp[t]] += abs(cyc_coef[t])
    base = np.zeros(m + 1, np.int64)
    vbase = np.zeros(m + 1, np.int64)
    sinit = np.zeros(m, np.int64)
    if not ok:
        return (ok, A, stride, base, vbase, sinit, np.zeros(0), np.zeros(0),
                np.zeros(0, np.int64), np.zeros(0), np.zeros(m + 1, np.int64),
                np.zeros(0, np.int64),
                np.zeros(0, np.int64), np.zeros(0, np.int64))
    for j in range(m):
        base[j + 1] = base[j] + 3 * N[j]
        vbase[j + 1] = vbase[j] + N[j]
        for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
            sinit[j] += A[t] * stride[t]
    # fin group -> its entry in the cycle where it is finalised
    fin_ent = np.zeros(fin_grp.shape[0], np.int64)
    for j in range(m):
        for u in range(fin_ptr[j], fin_ptr[j + 1]):
            for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
                if cyc_grp[t] == fin_grp[u]:
                    fin_ent[u] = t
    nent = base[m]
    fac = np.empty(nent)
    facz = np.empty(nent)
    vc = np.zeros(vbase[m], np.int64)
    x = np.zeros(nt, np.int64)
    for j in range(m):
        a, b = cyc_ptr[j], cyc_ptr[j + 1]
        for s in range(N[j]):
            for c in range(3):
                ev = 1 - c
                bad = False
                bu = False
                bd = False
                for t in range(a, b):
                    o = 0
                    if stride[t] > 0:
                        o = (s // stride[t]) % (2 * A[t] + 1) - A[t]
                    xv = o + cyc_coef[t] * ev
                    x[t] = xv
                    p = pmin[cyc_grp[t]]
                    if xv > p:
                        bad = True
                    elif xv == p:
                        if rule == ANY_ZERO:
                            bu = True
                            bd = True
                        elif cyc_coef[t] < 0:
                            bu = True
                        else:
                            bd = True
                w = -1.0
                if not bad:
                    q = qt[4 * c + (2 if bu else 0) + (1 if bd else 0)]
                    if q > 0.0:
                        w = q
                        for u in range(fin_ptr[j], fin_ptr[j + 1]):
                            g = fin_grp[u]
                            i = x[fin_ent[u]] + K
                            if not Fok[g, i]:
                                w = -1.0
                                break
                            w *= F[g, i]
                idx = base[j] + 3 * s + c
                fac[idx] = w
                if w >= 0.0:
                    facz[idx] = w
                    vc[vbase[j] + s] += 1
                else:
                    facz[idx] = 0.0
    # transitions k -> j (j < k): s_j += e_k * D
    gc = np.zeros(G, np.int64)
    tr_ptr = np.zeros(m + 1, np.int64)
    cnt = 0
    for k in range(m):
        for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
            gc[cyc_grp[t]] = cyc_coef[t]
        for j in range(k):
            D = 0
            for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
                D += gc[cyc_grp[t]] * stride[t]
            if D != 0:
                cnt += 1
        for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
            gc[cyc_grp[t]] = 0
    tr_lvl = np.zeros(cnt, np.int64)
    tr_d = np.zeros(cnt, np.int64)
    dmat = np.zeros(64, np.int64)   # dmat[8 k + j] = D[k -> j] for j < k < 8 (bottom blocks)
    p = 0
    for k in range(m):
        for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
            gc[cyc_grp[t]] = cyc_coef[t]
        for j in range(k):
            D = 0
            for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
                D += gc[cyc_grp[t]] * stride[t]
            if D != 0:
                tr_lvl[p] = j
                tr_d[p] = D
                p += 1
            if k < 8:
                dmat[8 * k + j] = D
        tr_ptr[k + 1] = p
        for t in range(cyc_ptr[k], cyc_ptr[k + 1]):
            gc[cyc_grp[t]] = 0
    ssum = np.zeros(vbase[m])
    for j in range(m):
        for st in range(N[j]):
            i = base[j] + 3 * st
            ssum[vbase[j] + st] = facz[i] + facz[i + 1] + facz[i + 2]
    return ok, A, stride, base, vbase, sinit, fac, facz, vc, ssum, tr_ptr, tr_lvl, tr_d, dmat


@_internal()
def _lut_spread(Lsum, cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp, A, stride, base, K, H):
    """Histogram of the node masses accumulated per table entry: H[g, o + K] += mass."""
    m = cyc_ptr.shape[0] - 1
    for j in range(m):
        for u in range(fin_ptr[j], fin_ptr[j + 1]):
            g = fin_grp[u]
            te = -1
            for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
                if cyc_grp[t] == g:
                    te = t
            R = 2 * A[te] + 1
            for idx in range(base[j], base[j + 1]):
                M = Lsum[idx]
                if M != 0.0:
                    r = idx - base[j]
                    s = r // 3
                    c = r - 3 * s
                    o = (s // stride[te]) % R - A[te]
                    H[g, o + cyc_coef[te] * (1 - c) + K] += M


# The bottom blocks: _lbL walks cycles L-1 .. 0 below a node of weight w whose lower
# states are s_{L-1} .. s_0, when none of its leaves needs the canonical test.  Each
# returns (subtree mass, number of valid leaves) and accumulates Lacc / W0.  C is a
# tuple of constants: C[k] = base_k (k <= 7) and C[8 + k (k - 1) / 2 + j] = D[k -> j]
# (1 <= k <= 6, j < k), so that everything stays in registers.

@_inlined
def _lb1(w, s0, vc, ssum, W0):
    """Cycle 0: the three leaves.  Mass w * ssum[s0], vc[s0] valid leaves; their
    histogram entries w * facz[3 s0 + c] are accumulated as W0[s0] += w."""
    u = _u(s0)
    W0[u] += w
    return w * ssum[u], vc[u]


@_inlined
def _lb2(w, s1, s0, C, fac, vc, ssum, Lacc, W0):
    tot = 0.0
    nv = 0
    for c in range(3):
        i = _u(C[1] + 3 * s1 + c)
        f = fac[i]
        if f >= 0.0:
            ev = 1 - c
            r = _lb1(w * f, s0 + ev * C[8], vc, ssum, W0)
            Lacc[i] += r[0]
            tot += r[0]
            nv += r[1]
    return tot, nv


@_inlined
def _lb3(w, s2, s1, s0, C, fac, vc, ssum, Lacc, W0):
    tot = 0.0
    nv = 0
    for c in range(3):
        i = _u(C[2] + 3 * s2 + c)
        f = fac[i]
        if f >= 0.0:
            ev = 1 - c
            r = _lb2(w * f, s1 + ev * C[10], s0 + ev * C[9], C, fac, vc, ssum, Lacc, W0)
            Lacc[i] += r[0]
            tot += r[0]
            nv += r[1]
    return tot, nv


@_inlined
def _lb4(w, s3, s2, s1, s0, C, fac, vc, ssum, Lacc, W0):
    tot = 0.0
    nv = 0
    for c in range(3):
        i = _u(C[3] + 3 * s3 + c)
        f = fac[i]
        if f >= 0.0:
            ev = 1 - c
            r = _lb3(w * f, s2 + ev * C[13], s1 + ev * C[12], s0 + ev * C[11], C, fac, vc,
                     ssum, Lacc, W0)
            Lacc[i] += r[0]
            tot += r[0]
            nv += r[1]
    return tot, nv


@_inlined
def _lb5(w, s4, s3, s2, s1, s0, C, fac, vc, ssum, Lacc, W0):
    tot = 0.0
    nv = 0
    for c in range(3):
        i = _u(C[4] + 3 * s4 + c)
        f = fac[i]
        if f >= 0.0:
            ev = 1 - c
            r = _lb4(w * f, s3 + ev * C[17], s2 + ev * C[16], s1 + ev * C[15],
                     s0 + ev * C[14], C, fac, vc, ssum, Lacc, W0)
            Lacc[i] += r[0]
            tot += r[0]
            nv += r[1]
    return tot, nv


@_inlined
def _lb6(w, s5, s4, s3, s2, s1, s0, C, fac, vc, ssum, Lacc, W0):
    tot = 0.0
    nv = 0
    for c in range(3):
        i = _u(C[5] + 3 * s5 + c)
        f = fac[i]
        if f >= 0.0:
            ev = 1 - c
            r = _lb5(w * f, s4 + ev * C[22], s3 + ev * C[21], s2 + ev * C[20],
                     s1 + ev * C[19], s0 + ev * C[18], C, fac, vc, ssum, Lacc, W0)
            Lacc[i] += r[0]
            tot += r[0]
            nv += r[1]
    return tot, nv


@_inlined
def _lb7(w, s6, s5, s4, s3, s2, s1, s0, C, fac, vc, ssum, Lacc, W0):
    tot = 0.0
    nv = 0
    for c in range(3):
        i = _u(C[6] + 3 * s6 + c)
        f = fac[i]
        if f >= 0.0:
            ev = 1 - c
            r = _lb6(w * f, s5 + ev * C[28], s4 + ev * C[27], s3 + ev * C[26],
                     s2 + ev * C[25], s1 + ev * C[24], s0 + ev * C[23], C, fac, vc, ssum,
                     Lacc, W0)
            Lacc[i] += r[0]
            tot += r[0]
            nv += r[1]
    return tot, nv


# Compiled entry points of the blocks, called by the walk (inlining them into it would
# leave the hot loops short of registers).

@_internal(_nrt=False)
def _blk7(w, sv, C, fac, vc, ssum, Lacc, W0):
    return _lb7(w, sv[6], sv[5], sv[4], sv[3], sv[2], sv[1], sv[0], C, fac, vc, ssum, Lacc, W0)


@_internal(_nrt=False)
def _blk6(w, sv, C, fac, vc, ssum, Lacc, W0):
    return _lb6(w, sv[5], sv[4], sv[3], sv[2], sv[1], sv[0], C, fac, vc, ssum, Lacc, W0)


@_internal(_nrt=False)
def _blk5(w, sv, C, fac, vc, ssum, Lacc, W0):
    return _lb5(w, sv[4], sv[3], sv[2], sv[1], sv[0], C, fac, vc, ssum, Lacc, W0)


@_internal(_nrt=False)
def _blk4(w, sv, C, fac, vc, ssum, Lacc, W0):
    return _lb4(w, sv[3], sv[2], sv[1], sv[0], C, fac, vc, ssum, Lacc, W0)


@_internal(_nrt=False)
def _blk3(w, sv, C, fac, vc, ssum, Lacc, W0):
    return _lb3(w, sv[2], sv[1], sv[0], C, fac, vc, ssum, Lacc, W0)


@_internal(_nrt=False)
def _blk2(w, sv, C, fac, vc, ssum, Lacc, W0):
    return _lb2(w, sv[1], sv[0], C, fac, vc, ssum, Lacc, W0)


@_internal(_nrt=False)
def _lwalk(prefix, base, sinit, fac, vc, ssum, tr_ptr, tr_lvl, tr_d, dmat, Lacc, W0,
           sv, choice, alive, ent, wbefore, mass, zT, zsh, zlive, nlive):
    """Depth-first walk of one task (its first choices fixed by prefix) on the tables.

    Returns (total leaf mass, number of valid sign vectors, number of canonical
    valid sign vectors); node masses go to Lacc / W0.

    The canonical test runs alongside: for each lattice vector z the walk follows the
    shadow path e + z: when cycle k is decided, the shadow's state of cycle k is the
    walk's plus ``zsh[k, zi]`` (the states are linear in the offsets, and the cycles
    above k are all decided), and its sign is e_k + ``zT[k, zi]``.  A shadow dies
    where it leaves the box or becomes impossible; ``zlive[d, :nlive[d]]`` lists the
    shadows alive above depth d.  A leaf is canonical iff no shadow is alive there,
    and when none is alive at a node, every leaf below is canonical.
    """
    m = base.shape[0] - 1
    s = prefix.shape[0]
    nz = zT.shape[1]
    for j in range(m):
        sv[j] = sinit[j]
        choice[j] = -1
    for zi in range(nz):
        zlive[0, zi] = zi
    nlive[0] = nz
    wbefore[0] = 1.0
    total = 0.0
    nvalid = 0
    ncanon = 0
    # the bottom blocks' constants (see _lb1 .. _lb7)
    C = (base[0], base[min(1, m)], base[min(2, m)], base[min(3, m)], base[min(4, m)],
         base[min(5, m)], base[min(6, m)], base[min(7, m)],
         dmat[8], dmat[16], dmat[17], dmat[24], dmat[25], dmat[26],
         dmat[32], dmat[33], dmat[34], dmat[35], dmat[40], dmat[41], dmat[42], dmat[43],
         dmat[44], dmat[48], dmat[49], dmat[50], dmat[51], dmat[52], dmat[53])
    d = 0
    while d >= 0:
        k = m - 1 - d
        c = choice[d]
        if c >= 0:
            # leave the node (d, c): its mass to its table entry and to its parent
            if alive[d]:
                M = mass[d]
                Lacc[ent[d]] += M
                if d > 0:
                    mass[d - 1] += M
                else:
                    total += M
            ev = 1 - c
            for p in range(tr_ptr[k], tr_ptr[k + 1]):
                sv[tr_lvl[p]] -= ev * tr_d[p]
        if d < s:
            c = prefix[d] if c == -1 else 3
        else:
            c = c + 1
        if c > 2:
            choice[d] = -1
            d -= 1
            continue
        choice[d] = c
        ev = 1 - c
        for p in range(tr_ptr[k], tr_ptr[k + 1]):
            sv[tr_lvl[p]] += ev * tr_d[p]
        idx = base[k] + 3 * sv[k] + c
        f = fac[idx]
        ok = f >= 0.0
        alive[d] = ok
        if not ok:
            continue
        nzero = 0
        if nlive[d] > 0:
            bk = base[k] + 3 * sv[k] + 1
            for i in range(nlive[d]):
                zi = zlive[d, i]
                ez = ev + zT[k, zi]
                # the shadow's state here is the walk's, shifted by zsh[k, zi]
                if -1 <= ez <= 1 and fac[bk + 3 * zsh[k, zi] - ez] >= 0.0:
                    zlive[d + 1, nzero] = zi
                    nzero += 1
        nlive[d + 1] = nzero
        ent[d] = idx
        w = wbefore[d] * f
        if k <= 7 and k >= 1 and nzero == 0 and d + 1 >= s:
            # cycles k-1 .. 0 in straight-line loops
            if k == 7:
                r = _blk7(w, sv, C, fac, vc, ssum, Lacc, W0)
            elif k == 6:
                r = _blk6(w, sv, C, fac, vc, ssum, Lacc, W0)
            elif k == 5:
                r = _blk5(w, sv, C, fac, vc, ssum, Lacc, W0)
            elif k == 4:
                r = _blk4(w, sv, C, fac, vc, ssum, Lacc, W0)
            elif k == 3:
                r = _blk3(w, sv, C, fac, vc, ssum, Lacc, W0)
            elif k == 2:
                r = _blk2(w, sv, C, fac, vc, ssum, Lacc, W0)
            else:
                r = _lb1(w, sv[0], vc, ssum, W0)
            mass[d] = r[0]
            nvalid += r[1]
            ncanon += r[1]
            continue
        if d == m - 1:
            mass[d] = w
            nvalid += 1
            if nzero == 0:
                ncanon += 1
        else:
            mass[d] = 0.0
            wbefore[d + 1] = w
            d += 1
            choice[d] = -1
    return total, nvalid, ncanon


# --- the problem's tables, and what a thread driver runs ---------------------------------

@njit
def _prepare(cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K, fin_ptr, fin_grp, rule, alpha, beta,
             gamma, limit):
    """Everything the walks need that depends on the problem only (not on the branches)."""
    m = cyc_ptr.shape[0] - 1
    G = pmin.shape[0]
    W = F.shape[1]
    nt = cyc_grp.shape[0]
    epw = np.empty(nt, np.int64)
    bcode = np.zeros(nt, np.int64)
    for t in range(nt):
        g = cyc_grp[t]
        epw[t] = g * W + min(pmin[g], K + 1) + K
        if rule == ANY_ZERO:
            bcode[t] = 3
        elif cyc_coef[t] < 0:
            bcode[t] = 2          # at its minimum, this group blocks e = +1
        else:
            bcode[t] = 1          # ... and here e = -1
    qt = np.zeros(12)             # qt[4 c + 2 blocked_up + blocked_down]
    for c in range(3):
        for bm in range(4):
            bu = (bm & 2) != 0
            bd = (bm & 1) != 0
            if c == 0:
                q = 0.0 if bu else alpha
            elif c == 2:
                q = 0.0 if bd else beta
            else:
                q = gamma
                if bu:
                    q += alpha
                if bd:
                    q += beta
            qt[4 * c + bm] = q
    fin_coef = np.zeros(fin_grp.shape[0], np.int64)   # a group's coefficient where finalised
    for j in range(m):
        for u in range(fin_ptr[j], fin_ptr[j + 1]):
            for t in range(cyc_ptr[j], cyc_ptr[j + 1]):
                if cyc_grp[t] == fin_grp[u]:
                    fin_coef[u] = cyc_coef[t]
    Fs = np.empty(G * W)          # F, flat, with -1.0 outside the support
    ow0 = np.empty(G, np.int64)   # flat index of offset 0
    for g in range(G):
        ow0[g] = g * W + K
        for i in range(W):
            Fs[g * W + i] = F[g, i] if Fok[g, i] else -1.0
    lut = _lut_build(cyc_ptr, cyc_grp, cyc_coef, pmin, F, Fok, K, fin_ptr, fin_grp, rule, qt,
                     limit)
    return (epw, bcode, qt, fin_coef, Fs, ow0) + lut


#: the problem in group form (see the module docstring), as the walks take it
Problem = namedtuple("Problem", "cyc_ptr cyc_grp cyc_coef pmin F Fok K fin_ptr fin_grp rule "
                                "alpha beta gamma")
#: what the walk does about distinct tables: lattice vectors of the canonical test, or
#: (``key_mode``) one integer key per valid leaf written to ``keys`` from ``key_starts``
Canon = namedtuple("Canon", "zset key_mode pivots key_base keys key_starts")


class Tables(NamedTuple):
    """What :func:`prepare` builds once per problem (``_prepare`` and ``_lut_build``) for
    every walk over its branches; the kernels take the arrays one by one."""

    # the offset walk (``_gwalk``), per entry t of a cycle / finalised group u / group g
    epw: np.ndarray        # flat index of the offset at which the entry's group reaches 0
    bcode: np.ndarray      # which coin its group blocks there (1: e = -1, 2: e = +1, 3: both)
    qt: np.ndarray         # coin table, qt[4 c + 2 blocked_up + blocked_down]
    fin_coef: np.ndarray   # the finalised group's coefficient in its last cycle
    Fs: np.ndarray         # F, flat, -1.0 outside the support
    ow0: np.ndarray        # flat index of offset 0 of each group
    # the table walk (``_lwalk``; see "the table-driven walk" above)
    lut: bool              # the tables fit the limit: walk on them (else on offsets)
    A: np.ndarray          # coverage of each entry's group by the cycles above
    stride: np.ndarray     # mixed-radix stride of each entry in its cycle's state (0: left out)
    base: np.ndarray       # first table index of each cycle (base[m]: number of entries)
    vbase: np.ndarray      # first per-state index of each cycle
    sinit: np.ndarray      # each cycle's state at all offsets 0
    fac: np.ndarray        # factor of (state, choice), -1.0 if impossible
    facz: np.ndarray       # the same with 0.0 for impossible
    vc: np.ndarray         # possible children per state
    ssum: np.ndarray       # sum of facz per state
    tr_ptr: np.ndarray     # state shifts k -> j (j < k): CSR pointers per k,
    tr_lvl: np.ndarray     # ... the lower cycle j,
    tr_d: np.ndarray       # ... and the shift D[k -> j]
    dmat: np.ndarray       # dmat[8 k + j] = D[k -> j] for the bottom cycles (k < 8)


def lut_limit(m: int, key_mode: bool) -> int:
    """Largest table walk (entries) worth building for m cycles; 0: walk on offsets.  An
    entry costs about as much as walking a few leaves the other way, so at most 3^m / 4
    and never more than ``_LUT_LIMIT``; key mode always walks on offsets."""
    return 0 if key_mode else min(_LUT_LIMIT, max(4096, 3 ** m // 4))


def prepare(pb: Problem, limit: int) -> Tables:
    """The tables of a problem that every walk over its branches uses."""
    return Tables(*_prepare(pb.cyc_ptr, pb.cyc_grp, pb.cyc_coef, pb.pmin, pb.F, pb.Fok,
                            pb.K, pb.fin_ptr, pb.fin_grp, pb.rule, pb.alpha, pb.beta,
                            pb.gamma, limit))


@njit
def tasks(prefixes, m, key_mode):
    """Split the branches into equal tasks (extra forced levels, keeping >= 8 free levels
    below); keys are written per branch, so key mode keeps one task per branch."""
    nb_ = prefixes.shape[0]
    s = prefixes.shape[1]
    extra = 0
    if not key_mode:
        while nb_ * 3 ** extra < 96 and s + extra + 8 <= m:
            extra += 1
    sub = 3 ** extra
    tprefix = np.empty((nb_ * sub, s + extra), np.int64)
    for b in range(nb_):
        for j in range(sub):
            t = b * sub + j
            for i in range(s):
                tprefix[t, i] = prefixes[b, i]
            r = j
            for i in range(extra - 1, -1, -1):
                tprefix[t, s + i] = r % 3
                r //= 3
    return tprefix, sub


@njit
def zshift(zset, tr_ptr, tr_lvl, tr_d, cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp, G):
    """Where the shadow paths e + z stand relative to e (the canonical test).

    zT[k, zi] = z_k.  Tables walk: zsh[k, zi] = sum_{i > k} z_i D[i -> k], the shift of
    the state of cycle k.  Offset walk: zs[zi, t] = sum_{i >= k} z_i coef[g, i] for the
    entry t (group g) of cycle k, and zsf[zi, u] the same for the finalised group u."""
    m = cyc_ptr.shape[0] - 1
    nz = zset.shape[0]
    nt = cyc_grp.shape[0]
    zT = np.zeros((m, nz), np.int64)
    zsh = np.zeros((m, nz), np.int64)
    zs = np.zeros((nz, nt), np.int64)
    zsf = np.zeros((nz, fin_grp.shape[0]), np.int64)
    acc = np.zeros(G, np.int64)
    for zi in range(nz):
        acc[:] = 0
        for i in range(m - 1, -1, -1):
            zT[i, zi] = zset[zi, i]
            for p in range(tr_ptr[i], tr_ptr[i + 1]):
                zsh[tr_lvl[p], zi] += zset[zi, i] * tr_d[p]
            for t in range(cyc_ptr[i], cyc_ptr[i + 1]):
                acc[cyc_grp[t]] += zset[zi, i] * cyc_coef[t]
            for t in range(cyc_ptr[i], cyc_ptr[i + 1]):
                zs[zi, t] = acc[cyc_grp[t]]
            for u in range(fin_ptr[i], fin_ptr[i + 1]):
                zsf[zi, u] = acc[fin_grp[u]]
    return zT, zsh, zs, zsf


@njit
def slots_lut(counter, S, m, tprefix, Lt, W0t, tres, base, sinit, fac, vc, ssum, tr_ptr,
               tr_lvl, tr_d, dmat, zT, zsh):
    """One worker of the table walk (run on several threads at once, GIL released): claim
    slots until none is left, walk their tasks."""
    nz = zT.shape[1]
    ntask = tprefix.shape[0]
    sv = np.zeros(m, np.int64)
    choice = np.full(m, -1, np.int64)
    alive = np.zeros(m, np.bool_)
    ent = np.zeros(m, np.int64)
    wbefore = np.ones(m + 1)
    mass = np.zeros(m)
    zlive = np.zeros((m + 1, nz), np.int64)
    nlive = np.zeros(m + 1, np.int64)
    sl = _fetch_add(counter, 0, 1)
    while sl < S:
        for t in range(sl, ntask, S):
            r3 = _lwalk(tprefix[t], base, sinit, fac, vc, ssum, tr_ptr, tr_lvl, tr_d, dmat,
                        Lt[sl], W0t[sl], sv, choice, alive, ent, wbefore, mass, zT, zsh, zlive,
                        nlive)
            tres[t, 0] = r3[0]
            tres[t, 1] = r3[1]
            tres[t, 2] = r3[2]
        sl = _fetch_add(counter, 0, 1)


@njit
def slots_offsets(counter, S, tprefix, sub, cyc_ptr, cyc_grp, cyc_coef, G, K, fin_ptr,
                   fin_grp, zT, zs, zsf, key_mode, pivots, key_base, keys, key_starts, Ht, tres,
                   epw, bcode, qt, fin_coef, Fs, ow0):
    """One worker of the offset walk (as :func:`slots_lut`)."""
    m = cyc_ptr.shape[0] - 1
    nz = zT.shape[1]
    ntask = tprefix.shape[0]
    ow = np.zeros(G, np.int64)
    choice = np.full(m, -1, np.int64)
    alive = np.zeros(m, np.bool_)
    wbefore = np.ones(m + 1)
    mass = np.zeros(m)
    zlive = np.zeros((m + 1, nz), np.int64)
    nlive = np.zeros(m + 1, np.int64)
    sl = _fetch_add(counter, 0, 1)
    while sl < S:
        for t in range(sl, ntask, S):
            r4 = _gwalk(tprefix[t], cyc_ptr, cyc_grp, cyc_coef, epw, bcode, qt, fin_ptr,
                        fin_grp, fin_coef, Fs, K, zT, zs, zsf, Ht[sl], key_mode, pivots,
                        key_base, keys, key_starts[t // sub], ow0, ow, choice, alive, wbefore,
                        mass, zlive, nlive)
            tres[t, 0] = r4[0]
            tres[t, 1] = r4[1]
            tres[t, 2] = r4[2]
        sl = _fetch_add(counter, 0, 1)


@njit
def finish(nb_, sub, tres, Ht, Lt, W0t, G, W, K, cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp,
           lut, A, stride, base, facz):
    """Sum the slots (in a fixed order) and the tasks of each branch."""
    m = cyc_ptr.shape[0] - 1
    S = Ht.shape[0]
    H = np.zeros((G, W))
    for p in range(S):
        for g in range(G):
            for i in range(W):
                H[g, i] += Ht[p, g * W + i]
    if lut:
        nent = base[m]
        n0 = (base[1] - base[0]) // 3
        Lsum = np.zeros(nent)
        for p in range(S):
            for i in range(nent):
                Lsum[i] += Lt[p, i]
            for u in range(n0):       # the leaves: W0[u] * facz[3 u + c] (cycle 0: base 0)
                for c in range(3):
                    Lsum[3 * u + c] += W0t[p, u] * facz[3 * u + c]
        _lut_spread(Lsum, cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp, A, stride, base, K, H)
    tot = np.zeros(nb_)
    nvalid = np.zeros(nb_, np.int64)
    ncanon = np.zeros(nb_, np.int64)
    for t in range(tres.shape[0]):
        b = t // sub
        tot[b] += tres[t, 0]
        nvalid[b] += np.int64(tres[t, 1])
        ncanon[b] += np.int64(tres[t, 2])
    return H, tot, nvalid, ncanon
