"""Markov chain moves over count tables (R x C and I x J x K) with windows on cells and
totals.  The 3-D moves below; the 2-D sweep (:func:`sweeps_2d`) uses the same exact line
redraws with basic 2 x 2 moves, cycles through 3 or more rows and columns, single cells
and pairs of cells of a row or column.

Plain arrays in, plain arrays out.  The table is a flat C-order int64 vector ``x`` of
``I * J * K`` cells.  Cell windows: ``clo`` (first value) and ``cw`` (log-weights of the
values from there, ``-inf`` outside).  Totals (2-way ij, ik, jk, 1-way i, j, k, grand, in
that order, packed as :mod:`kernels.table_enum` packs them): ``mlo`` and ``mw`` the same
way; ``tix[c]`` lists the seven totals cell ``c`` belongs to, ``tsum`` holds their current
values.  Randomness is Numba's generator (per thread), seeded by :func:`seed`.

Move types, each leaving the target (product of every cell's and every total's window
weight) invariant:

* **2 x 2 x L blocks, exact.**  Two indices on each of two axes and the whole third axis
  (length ``L``): with every total fixed, the block is a chain ``t_l`` (its first cell on
  each line) with one sum constraint; forward filtering over ``l`` and backward sampling
  redraws it from its exact conditional law.  Every degree-4 basic move (2 x 2 x 2) is a
  special case.
* **Lifted cycles, exact along the move** (:func:`_cycle_3d`): +1 / -1 around an even
  cycle through ``m >= 3`` indices of each of two axes in one layer of the third axis and
  the opposite in another (``m = 3``: the degree-6 moves of 3 x 3 x K tables); ``x + t m``
  redrawn over ``t``.  ``m`` is drawn as ``3 +`` a geometric number of extra steps, so
  every length up to the table's has positive probability.
* **Aoki & Takemura's degree-8 and degree-10 moves, exact along the move**
  (:func:`_lifted`; patterns :data:`DEG8`, :data:`DEG10`): 3 x 3 x 4 and 3 x 3 x 5
  patterns placed on random indices of every axis in every orientation.
* **Lines, exact** (Gibbs along a direction ``m``: ``x + t m`` redrawn over ``t``), with
  ``m`` one cell, two cells of a line (+1 / -1) or a 2 x 2 pattern within a layer, every
  total moving with them: needed when the totals are windows (rounding, noise, cell
  key), where the moves above (which keep every total) cannot leave a total's value.

What the moves connect (the chain is irreducible when its moves contain a Markov basis of
the candidates' fiber; Diaconis & Sturmfels 1998, Theorem 3.1):

* **3 x 3 x K** (two axes of at most 3 levels, any K), every 2-way total exact: the unique
  minimal Markov basis of the tables with fixed 2-way margins consists of the moves of
  degree 4 (2 x 2 x 2), 6 (the lifted 3-cycles, with the two layers on the long axis
  or on a short one), from K = 4 on one type of degree 8 and from K = 5 on one of degree
  10, up to permuting the levels of each axis, exchanging the two short axes and the
  sign (Aoki & Takemura 2003, "Minimal
  basis for a connected Markov chain over 3 x 3 x K contingency tables with fixed
  two-dimensional marginals", Aust. N. Z. J. Stat. 45(2), 229-249).  The patterns below
  are those types as 4ti2's ``markov`` lists them for 3 x 3 x 4 and 3 x 3 x 5 (and
  3 x 3 x 6: the same four types; checked when this was written); every element of their
  orbits is proposed with positive probability.  The basis connects the fiber of
  nonnegative tables; cell windows that only raise a cell's lower end (``at_least``)
  shift the fiber and keep that; an upper end below what the margins allow (a fixed or
  suppressed cell, a structural zero) is not covered.
* **2 x J x K** (an axis of 2 levels), every 2-way total exact: the model is the Lawrence
  lifting of the J x K independence model, whose Graver basis -- the circuits of the
  complete bipartite graph K_{J,K}, i.e. the even cycles through ``m = 2 .. min(J, K)``
  rows and columns -- is its unique minimal Markov basis (Sturmfels 1996, "Groebner Bases
  and Convex Polytopes", Theorem 7.1; the incidence matrix of a bipartite graph is
  unimodular, so its Graver basis is its set of circuits, ch. 8).  A Graver basis
  connects every fiber with bounds ``l <= x <= u``: ``y - x`` is a conformal sum
  of Graver elements, and adding them one by one moves every cell monotonically from
  ``x_c`` to ``y_c``, inside ``[l_c, u_c]``.  So fixed cells, structural zeros and any
  cell windows without holes are covered.
* Otherwise (every axis of 3 or more levels and two of 4 or more -- a 3 x 4 x 4 table's
  minimal basis already has moves of degree 9, 4ti2 --; a 3 x 3 x K table with an upper
  bound on a cell; windows on the totals) the moves are not proven to connect every
  candidate: :mod:`riskengine.inference.gibbs3d` checks
  small candidate sets by listing them and says so in its result otherwise.

2-D tables (:func:`sweeps_2d`): the basic moves and the cycles through ``m >= 3`` rows
and columns (redrawn exactly along the move) are every circuit of K_{R,C}: the Graver
basis of two-way tables with fixed margins, which connects every fiber with cell bounds
(the argument above), structural zeros and suppressed cells included.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

NEG = -np.inf

#: Aoki & Takemura's (2003) degree-8 move of 3 x 3 x K tables (3 x 3 x 4, layers last):
#: every 2-way margin of it is 0; each layer is a 2 x 2 basic move
DEG8 = np.array([[[0, 0, 0, 0], [0, 0, 1, -1], [0, 0, -1, 1]],
                 [[-1, 1, 0, 0], [0, -1, 0, 1], [1, 0, 0, -1]],
                 [[1, -1, 0, 0], [0, 1, -1, 0], [-1, 0, 1, 0]]], np.int64)
#: the degree-10 move (3 x 3 x 5)
DEG10 = np.array([[[0, 0, 0, 1, -1], [-1, 0, 0, 0, 1], [1, 0, 0, -1, 0]],
                  [[0, -1, 0, 0, 1], [0, 0, 1, 0, -1], [0, 1, -1, 0, 0]],
                  [[0, 1, 0, -1, 0], [1, 0, -1, 0, 0], [-1, -1, 1, 1, 0]]], np.int64)


@njit
def seed(s):
    np.random.seed(s)


@njit
def _lw(lo, w, row, v):
    o = v - lo[row]
    if o < 0 or o >= w.shape[1]:
        return NEG
    return w[row, o]


@njit
def _pick(p, n):
    """Index drawn with probability proportional to ``p[:n]`` (nonnegative, sum > 0)."""
    tot = 0.0
    for i in range(n):
        tot += p[i]
    u = np.random.random() * tot
    acc = 0.0
    for i in range(n):
        acc += p[i]
        if u < acc and p[i] > 0:
            return i
    for i in range(n - 1, -1, -1):
        if p[i] > 0:
            return i
    return n - 1


@njit
def _block(x, clo, cw, ia, ib, ic, id_, L):
    """Redraw the 2 x 2 x L block with cells ia[l], ib[l] (one line), ic[l], id_[l]
    (the other line), ia[l] + ib[l], ia[l] + ic[l], ic[l] + id_[l] and sum_l ia[l] fixed."""
    P = np.empty(L, np.int64)
    Q = np.empty(L, np.int64)
    R = np.empty(L, np.int64)
    tlo = np.empty(L, np.int64)
    thi = np.empty(L, np.int64)
    S = 0
    for l in range(L):
        a, b, c, d = x[ia[l]], x[ib[l]], x[ic[l]], x[id_[l]]
        P[l], Q[l], R[l] = a + b, a + c, c + d
        tlo[l] = max(0, Q[l] - R[l])
        thi[l] = min(P[l], Q[l])
        S += a
    W = 0
    for l in range(L):
        W = max(W, thi[l] - tlo[l] + 1)
    # weights of each line's values t = tlo .. thi (linear scale, largest 1)
    wt = np.zeros((L, W))
    for l in range(L):
        m = NEG
        n = thi[l] - tlo[l] + 1
        for k in range(n):
            t = tlo[l] + k
            v = (_lw(clo, cw, ia[l], t) + _lw(clo, cw, ib[l], P[l] - t)
                 + _lw(clo, cw, ic[l], Q[l] - t) + _lw(clo, cw, id_[l], R[l] - Q[l] + t))
            wt[l, k] = v
            m = max(m, v)
        for k in range(n):
            wt[l, k] = np.exp(wt[l, k] - m) if wt[l, k] > NEG else 0.0
        for k in range(n, W):
            wt[l, k] = 0.0
    # prefix sums s_l = t_0 + .. + t_l lie in [smin_l, smax_l] and must leave room for
    # the rest: S - s_l in [rest_lo_l, rest_hi_l]
    rlo = np.zeros(L + 1, np.int64)
    rhi = np.zeros(L + 1, np.int64)
    for l in range(L - 1, -1, -1):
        rlo[l] = rlo[l + 1] + tlo[l]
        rhi[l] = rhi[l + 1] + thi[l]
    F = np.zeros((L, S + 1))
    for k in range(thi[0] - tlo[0] + 1):
        s = tlo[0] + k
        if s <= S and S - s >= rlo[1] and S - s <= rhi[1]:
            F[0, s] = wt[0, k]
    for l in range(1, L):
        mx = 0.0
        for s in range(S + 1):
            if S - s < rlo[l + 1] or S - s > rhi[l + 1]:
                continue
            acc = 0.0
            for k in range(thi[l] - tlo[l] + 1):
                prev = s - tlo[l] - k
                if prev < 0:
                    break
                acc += F[l - 1, prev] * wt[l, k]
            F[l, s] = acc
            mx = max(mx, acc)
        if mx > 0:
            for s in range(S + 1):
                F[l, s] /= mx
    if F[L - 1, S] <= 0:
        return False
    p = np.empty(W)
    s = S
    for l in range(L - 1, 0, -1):
        n = thi[l] - tlo[l] + 1
        for k in range(n):
            prev = s - tlo[l] - k
            p[k] = F[l - 1, prev] * wt[l, k] if prev >= 0 else 0.0
        k = _pick(p, n)
        t = tlo[l] + k
        x[ia[l]], x[ib[l]], x[ic[l]], x[id_[l]] = t, P[l] - t, Q[l] - t, R[l] - Q[l] + t
        s -= t
    t = s
    x[ia[0]], x[ib[0]], x[ic[0]], x[id_[0]] = t, P[0] - t, Q[0] - t, R[0] - Q[0] + t
    return True


@njit
def _line(x, cells, coefs, nc, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco):
    """Redraw ``t`` in ``x + t m`` from its exact conditional law, ``m`` the direction with
    coefficient ``coefs[i]`` on cell ``cells[i]`` (``nc`` cells); the totals (sums of cells
    with windows ``mlo`` / ``mw``, current values ``tsum``) the cells belong to move with
    them: those of cell c are ``vfac[vptr[c]:vptr[c + 1]]`` (any number per cell; ``tid``,
    ``tco``: work space for them, as long as the totals of the ``nc`` cells together)."""
    lo = -(1 << 40)
    hi = 1 << 40
    nt = 0
    for i in range(nc):
        c, g = cells[i], coefs[i]
        a = max(clo[c], 0) - x[c]                  # g t in [a, b]
        b = clo[c] + cw.shape[1] - 1 - x[c]
        if g > 0:
            lo, hi = max(lo, -((-a) // g)), min(hi, b // g)
        else:
            lo, hi = max(lo, -(b // (-g))), min(hi, (-a) // (-g))
        for k in range(vptr[c], vptr[c + 1]):
            t = vfac[k]
            found = False
            for u in range(nt):
                if tid[u] == t:
                    tco[u] += g
                    found = True
                    break
            if not found:
                tid[nt] = t
                tco[nt] = g
                nt += 1
    for u in range(nt):
        g = tco[u]
        if g == 0:
            continue
        t = tid[u]
        a = mlo[t] - tsum[t]
        b = mlo[t] + mw.shape[1] - 1 - tsum[t]
        if g > 0:
            lo, hi = max(lo, -((-a) // g)), min(hi, b // g)
        else:
            lo, hi = max(lo, -(b // (-g))), min(hi, (-a) // (-g))
    n = hi - lo + 1
    if n <= 1:
        return
    if n > p.shape[0]:
        p = np.empty(n)
    m = NEG
    for s in range(n):
        step = lo + s
        w = 0.0
        for i in range(nc):
            w += _lw(clo, cw, cells[i], x[cells[i]] + coefs[i] * step)
        for u in range(nt):
            if tco[u] != 0:
                w += _lw(mlo, mw, tid[u], tsum[tid[u]] + tco[u] * step)
        p[s] = w
        m = max(m, w)
    if m == NEG:
        return
    for s in range(n):
        p[s] = np.exp(p[s] - m) if p[s] > NEG else 0.0
    step = lo + _pick(p, n)
    if step != 0:
        for i in range(nc):
            x[cells[i]] += coefs[i] * step
        for u in range(nt):
            tsum[tid[u]] += tco[u] * step


@njit
def _csr(tix):
    """The totals of each cell as CSR (``tix``: a fixed number per cell)."""
    n, k = tix.shape
    return np.arange(n + 1) * k, tix.ravel()


@njit
def _move_line(x, clo, cw, idx, dv, n, p):
    """Redraw ``t`` in ``x + t m`` from its exact conditional law given the cell windows,
    ``m`` the move with coefficient ``dv[i]`` (+1 / -1) on cell ``idx[i]`` (``n`` cells):
    a move that keeps every total, so only the cells' weights change."""
    lo = -(1 << 40)
    hi = 1 << 40
    W = cw.shape[1]
    for i in range(n):
        c = idx[i]
        a = max(clo[c], 0) - x[c]                  # dv t in [a, b]
        b = clo[c] + W - 1 - x[c]
        if dv[i] > 0:
            lo, hi = max(lo, a), min(hi, b)
        else:
            lo, hi = max(lo, -b), min(hi, -a)
    m = hi - lo + 1
    if m <= 1:
        return
    if m > p.shape[0]:
        p = np.empty(m)
    mx = NEG
    for s in range(m):
        step = lo + s
        w = 0.0
        for i in range(n):
            w += _lw(clo, cw, idx[i], x[idx[i]] + dv[i] * step)
        p[s] = w
        mx = max(mx, w)
    if mx == NEG:
        return
    for s in range(m):
        p[s] = np.exp(p[s] - mx) if p[s] > NEG else 0.0
    step = lo + _pick(p, m)
    if step != 0:
        for i in range(n):
            x[idx[i]] += dv[i] * step


@njit
def cycle_sweep(x, clo, cw, cptr, cidx, cdv):
    """One pass, in a random order, of the moves ``cidx[cptr[k]:cptr[k + 1]]`` with
    coefficients ``cdv`` (the fundamental cycles of the free cells, which keep every
    total), each redrawn exactly along its line (:func:`_move_line`)."""
    p = np.empty(64)
    for k in np.random.permutation(cptr.shape[0] - 1):
        a = cptr[k]
        b = cptr[k + 1]
        _move_line(x, clo, cw, cidx[a:b], cdv[a:b], b - a, p)


@njit
def _cycle_length(mmax):
    """3 plus a geometric number (1/2) of extra steps, at most ``mmax``: every length has
    positive probability, short cycles (which move most often) are the most frequent."""
    m = 3
    while m < mmax and np.random.random() < 0.5:
        m += 1
    return m


@njit
def _orientations(dims, layers, side):
    """The axes ``(o, a1, a2)`` (int64 (k, 3); both orders of ``a1``, ``a2``) with at least
    ``layers`` levels on ``o`` and ``side`` on ``a1`` and ``a2``: where a move with that
    many layers and indices fits."""
    out = np.zeros((6, 3), np.int64)
    k = 0
    for o in range(3):
        for a1 in range(3):
            a2 = 3 - o - a1
            if a1 == o or a2 == o or a2 < 0 or a2 > 2:
                continue
            if dims[o] >= layers and dims[a1] >= side and dims[a2] >= side:
                out[k, 0], out[k, 1], out[k, 2] = o, a1, a2
                k += 1
    return out[:k]


@njit
def _cycle_3d(x, clo, cw, dims, strides, orients, longest, idx, dv, p):
    """One lifted-cycle move, redrawn exactly along the move: +1 / -1 around a cycle
    through ``m`` indices of two axes (``3 <= m <= longest``) in one layer of the third
    axis, the opposite in another layer (axes: a random row of ``orients``)."""
    if orients.shape[0] == 0:
        return
    k = np.random.randint(orients.shape[0])
    o, a1, a2 = orients[k, 0], orients[k, 1], orients[k, 2]
    m = _cycle_length(min(longest, dims[a1], dims[a2]))
    r = np.random.permutation(dims[a1])[:m]
    q = np.random.permutation(dims[a2])[:m]
    z = np.random.permutation(dims[o])[:2]
    n = 0
    for layer in range(2):
        sgn = 1 if layer == 0 else -1
        for u in range(m):
            base = z[layer] * strides[o] + r[u] * strides[a1]
            idx[n] = base + q[u] * strides[a2]
            dv[n] = sgn
            n += 1
            idx[n] = base + q[(u + 1) % m] * strides[a2]
            dv[n] = -sgn
            n += 1
    _move_line(x, clo, cw, idx, dv, n, p)


@njit
def _lifted(x, clo, cw, dims, strides, pat, orients, idx, dv, p):
    """One move of pattern ``pat`` (3 x 3 x L: :data:`DEG8`, :data:`DEG10`) on random
    indices -- three of each of axes ``a1``, ``a2`` and ``L`` of ``o``, the axes a random
    row of ``orients`` (both orders of ``a1``, ``a2``: the pattern and its transpose) --,
    redrawn exactly along the move."""
    if orients.shape[0] == 0:
        return
    L = pat.shape[2]
    k = np.random.randint(orients.shape[0])
    o, a1, a2 = orients[k, 0], orients[k, 1], orients[k, 2]
    r = np.random.permutation(dims[a1])[:3]
    q = np.random.permutation(dims[a2])[:3]
    z = np.random.permutation(dims[o])[:L]
    n = 0
    for u in range(3):
        for v in range(3):
            for w in range(L):
                g = pat[u, v, w]
                if g != 0:
                    idx[n] = z[w] * strides[o] + r[u] * strides[a1] + q[v] * strides[a2]
                    dv[n] = g
                    n += 1
    _move_line(x, clo, cw, idx, dv, n, p)


@njit
def nblocks_per_sweep(dims):
    """The 2 x 2 x L blocks one sweep of :func:`sweeps` redraws."""
    nb = 0
    for f in range(3):
        nb += (dims[(f + 1) % 3] // 2) * (dims[(f + 2) % 3] // 2)
    return nb


@njit
def sweeps(x, dims, clo, cw, mlo, mw, tix, tsum, n, keep, out, sites, six, thin=1):
    """``n`` times ``thin`` sweeps of the chain from ``x`` (modified in place); after each
    ``thin`` sweeps, if ``keep``, the table is copied into ``out[k]``.  A sweep: every
    pairing of two axes (random pairs of indices on each) redrawn as 2 x 2 x L blocks along
    the third; ``six`` 1: as many lifted 3-cycles (degree 6) as blocks, ``six`` 2: lifted
    cycles of every length (as many as blocks, at least an eighth of the cells) and
    degree-8 / degree-10 moves (half as many as cells in 3 x 3 x K tables, where they
    belong to the proven basis and one given placement is one of a few hundred; as many as
    blocks elsewhere), 0: neither; and if ``sites`` every cell once in random order
    (alone, with a partner on each of its lines, in a 2 x 2 pattern).
    Returns False if a block had no completion (the state left the support)."""
    I, J, K = dims[0], dims[1], dims[2]
    strides = np.array([J * K, K, 1], np.int64)
    ncell = I * J * K
    vptr, vfac = _csr(tix)
    p = np.empty(64)
    cells = np.zeros(4, np.int64)
    coefs = np.zeros(4, np.int64)
    tid = np.zeros(28, np.int64)
    tco = np.zeros(28, np.int64)
    nbuf = max(20, 4 * max(I, max(J, K)))
    midx = np.zeros(nbuf, np.int64)
    mdv = np.zeros(nbuf, np.int64)
    longest = 3 if six == 1 else nbuf
    o_cyc = _orientations(dims, 2, 3)
    o_8 = _orientations(dims, DEG8.shape[2], 3)
    o_10 = _orientations(dims, DEG10.shape[2], 3)
    nb = max(nblocks_per_sweep(dims), 1)
    # the degree-8 / 10 moves belong to a proven basis where two axes have at most 3
    # levels (3 x 3 x K): there, half as many as cells (one given placement is one of a
    # few hundred); elsewhere as many as blocks, like the cycles beyond degree 6
    small = I + J + K - max(I, max(J, K)) - min(I, min(J, K)) <= 3   # the middle axis
    ncyc = nb if six == 1 else max(nb, ncell // 8)
    nlift = max(nb, ncell // 2) if small else nb
    for it in range(n * thin):
        for f in range(3):                    # the free axis
            a1 = (f + 1) % 3
            a2 = (f + 2) % 3
            if dims[a1] < 2 or dims[a2] < 2:
                continue
            L = dims[f]
            pa = np.random.permutation(dims[a1])
            pb = np.random.permutation(dims[a2])
            ia = np.empty(L, np.int64)
            ib = np.empty(L, np.int64)
            ic = np.empty(L, np.int64)
            id_ = np.empty(L, np.int64)
            for u in range(dims[a1] // 2):
                p1, p2 = pa[2 * u], pa[2 * u + 1]
                for v in range(dims[a2] // 2):
                    q1, q2 = pb[2 * v], pb[2 * v + 1]
                    for l in range(L):
                        off = l * strides[f]
                        ia[l] = off + p1 * strides[a1] + q1 * strides[a2]
                        ib[l] = off + p1 * strides[a1] + q2 * strides[a2]
                        ic[l] = off + p2 * strides[a1] + q1 * strides[a2]
                        id_[l] = off + p2 * strides[a1] + q2 * strides[a2]
                    if not _block(x, clo, cw, ia, ib, ic, id_, L):
                        return False
        for _ in range(ncyc if six > 0 else 0):
            _cycle_3d(x, clo, cw, dims, strides, o_cyc, longest, midx, mdv, p)
        for _ in range(nlift if six > 1 else 0):
            if o_10.shape[0] == 0 or (o_8.shape[0] > 0 and np.random.random() < 0.5):
                _lifted(x, clo, cw, dims, strides, DEG8, o_8, midx, mdv, p)
            else:
                _lifted(x, clo, cw, dims, strides, DEG10, o_10, midx, mdv, p)
        if sites:
            # totals that are windows move: every cell alone, with a partner on each of
            # its lines, and 2 x 2 patterns within a layer (each line redrawn exactly)
            for c in np.random.permutation(ncell):
                cells[0] = c
                coefs[0] = 1
                _line(x, cells, coefs, 1, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
                ci = np.array([c // strides[0], (c // strides[1]) % dims[1], c % dims[2]])
                for a in range(3):
                    if dims[a] < 2:
                        continue
                    o = np.random.randint(dims[a] - 1)
                    if o >= ci[a]:
                        o += 1
                    cells[1] = c + (o - ci[a]) * strides[a]
                    coefs[1] = -1
                    _line(x, cells, coefs, 2, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
                f = np.random.randint(3)
                a1 = (f + 1) % 3
                a2 = (f + 2) % 3
                if dims[a1] >= 2 and dims[a2] >= 2:
                    o1 = np.random.randint(dims[a1] - 1)
                    if o1 >= ci[a1]:
                        o1 += 1
                    o2 = np.random.randint(dims[a2] - 1)
                    if o2 >= ci[a2]:
                        o2 += 1
                    d1 = (o1 - ci[a1]) * strides[a1]
                    d2 = (o2 - ci[a2]) * strides[a2]
                    cells[1], cells[2], cells[3] = c + d1, c + d2, c + d1 + d2
                    coefs[1], coefs[2], coefs[3] = -1, -1, 1
                    _line(x, cells, coefs, 4, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
        if keep and (it + 1) % thin == 0:
            out[it // thin, :] = x
    return True


@njit
def _random_cycle(R, C, mmax, midx, mdv):
    """A random cycle through ``m >= 3`` rows and columns (+1 at (r_u, q_u), -1 at (r_u,
    q_u+1), ``m`` as in :func:`_cycle_length`) written into ``midx`` / ``mdv``; returns
    its number of cells ``2 m``."""
    m = _cycle_length(mmax)
    rr = np.random.permutation(R)[:m]
    qq = np.random.permutation(C)[:m]
    for u in range(m):
        midx[2 * u] = rr[u] * C + qq[u]
        mdv[2 * u] = 1
        midx[2 * u + 1] = rr[u] * C + qq[(u + 1) % m]
        mdv[2 * u + 1] = -1
    return 2 * m


@njit
def _random_basic(R, C, idx, dv):
    """A random basic move (+1 -1 / -1 +1 on two rows and two columns) written into
    ``idx`` / ``dv`` (4 cells)."""
    i1 = np.random.randint(R)
    i2 = np.random.randint(R - 1)
    if i2 >= i1:
        i2 += 1
    j1 = np.random.randint(C)
    j2 = np.random.randint(C - 1)
    if j2 >= j1:
        j2 += 1
    idx[0], idx[1] = i1 * C + j1, i1 * C + j2
    idx[2], idx[3] = i2 * C + j1, i2 * C + j2
    dv[0], dv[1], dv[2], dv[3] = 1, -1, -1, 1


@njit
def sweeps_2d(x, dims, clo, cw, mlo, mw, tix, tsum, n, keep, out, sites, cycles=True):
    """``n`` sweeps over an R x C table (flat C order; totals rows, columns, grand: three
    per cell in ``tix``).  A sweep: R * C basic moves (+1 -1 / -1 +1 on two random rows and
    two random columns, redrawn exactly along the move); if ``cycles``, R * C / 4 cycles
    through ``m >= 3`` random rows and columns (+1 at (r_u, q_u), -1 at (r_u, q_u+1), ``m``
    as in :func:`_cycle_length`), each redrawn exactly along the move: with the basic moves
    every circuit of K_{R,C}; and if ``sites`` (totals that are windows) every cell alone
    and with a random partner in its row and in its column."""
    R, C = dims[0], dims[1]
    ncell = R * C
    vptr, vfac = _csr(tix)
    p = np.empty(64)
    cells = np.zeros(4, np.int64)
    coefs = np.zeros(4, np.int64)
    tid = np.zeros(12, np.int64)
    tco = np.zeros(12, np.int64)
    mmax = min(R, C)
    midx = np.zeros(2 * mmax, np.int64)
    mdv = np.zeros(2 * mmax, np.int64)
    for it in range(n):
        if cycles and mmax >= 3:
            for _ in range(max(1, ncell // 4)):
                m2 = _random_cycle(R, C, mmax, midx, mdv)
                _move_line(x, clo, cw, midx, mdv, m2, p)
        if R >= 2 and C >= 2:
            for _ in range(ncell):
                _random_basic(R, C, cells, coefs)
                _line(x, cells, coefs, 4, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
        if sites:
            for c in np.random.permutation(ncell):
                cells[0] = c
                coefs[0] = 1
                _line(x, cells, coefs, 1, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
                i, j = c // C, c % C
                coefs[1] = -1
                if C >= 2:
                    o = np.random.randint(C - 1)
                    cells[1] = i * C + (o + 1 if o >= j else o)
                    _line(x, cells, coefs, 2, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
                if R >= 2:
                    o = np.random.randint(R - 1)
                    cells[1] = (o + 1 if o >= i else o) * C + j
                    _line(x, cells, coefs, 2, clo, cw, vptr, vfac, mlo, mw, tsum, p, tid, tco)
        if keep:
            out[it, :] = x
    return True


#: log-weight given to each impossible factor while a cyclic chain climbs into the support
#: (a state of positive weight never moves to one with such a factor: e^-1e6 is 0)
_PENALTY = -1e6


@njit
def _cyclic_logw(e, o, cyc_ptr, cyc_grp, cyc_coef, pmin, logF, K, alpha, beta, gamma,
                 any_zero, v):
    """Log-weight of sign vector ``e`` of a cyclic release in group form: the prior factors
    of the group offsets ``o`` plus the path's coin probabilities with the blocking rule
    (impossible factors count ``_PENALTY`` each)."""
    G = pmin.shape[0]
    W = logF.shape[1]
    w = 0.0
    for g in range(G):
        i = o[g] + K
        f = logF[g, i] if 0 <= i < W else NEG
        w += f if f > NEG else _PENALTY
        v[g] = pmin[g] - o[g]                 # the group's smallest cell before cycle 0
    for k in range(cyc_ptr.shape[0] - 1):
        bu = False
        bd = False
        for p in range(cyc_ptr[k], cyc_ptr[k + 1]):
            if v[cyc_grp[p]] <= 0:
                if any_zero:
                    bu = True
                    bd = True
                elif cyc_coef[p] < 0:
                    bu = True
                else:
                    bd = True
        ek = e[k]
        if ek == 1:
            q = 0.0 if bu else alpha
        elif ek == -1:
            q = 0.0 if bd else beta
        else:
            q = gamma + (alpha if bu else 0.0) + (beta if bd else 0.0)
        w += np.log(q) if q > 0 else _PENALTY
        if ek != 0:
            for p in range(cyc_ptr[k], cyc_ptr[k + 1]):
                v[cyc_grp[p]] += cyc_coef[p] * ek
    return w


@njit
def cyclic_sweeps(e, o, cyc_ptr, cyc_grp, cyc_coef, pmin, logF, K, alpha, beta, gamma,
                  any_zero, n, keep, out):
    """``n`` sweeps of single-sign Gibbs updates over the sign vector ``e`` (each ``e_k``
    redrawn from its exact conditional over -1, 0, +1 given the others, cycles in random
    order); ``o`` the group offsets of ``e`` (both updated in place); after each sweep, if
    ``keep``, ``e`` is copied into ``out[sweep]``.  Returns the final log-weight."""
    m = cyc_ptr.shape[0] - 1
    v = np.empty(pmin.shape[0], np.int64)
    lw = np.empty(3)
    for it in range(n):
        for k in np.random.permutation(m):
            mx = NEG
            for s in range(3):
                val = s - 1
                for p in range(cyc_ptr[k], cyc_ptr[k + 1]):
                    o[cyc_grp[p]] += cyc_coef[p] * (val - e[k])
                e[k] = val
                lw[s] = _cyclic_logw(e, o, cyc_ptr, cyc_grp, cyc_coef, pmin, logF, K, alpha,
                                     beta, gamma, any_zero, v)
                mx = max(mx, lw[s])
            for s in range(3):
                lw[s] = np.exp(lw[s] - mx)
            val = _pick(lw, 3) - 1
            for p in range(cyc_ptr[k], cyc_ptr[k + 1]):
                o[cyc_grp[p]] += cyc_coef[p] * (val - e[k])
            e[k] = val
        if keep:
            out[it, :] = e
    return _cyclic_logw(e, o, cyc_ptr, cyc_grp, cyc_coef, pmin, logF, K, alpha, beta, gamma,
                        any_zero, v)


# --- exact redraws along long lines of a log-concave target --------------------------------
#: lines with at most this many values are redrawn by listing them (:func:`_move_line`)
SHORT_LINE = 48


@njit
def _f_line(x, clo, cw, idx, dv, n, step):
    """Log-weight of ``x + step m`` over the cells of the move ``m``."""
    w = 0.0
    for i in range(n):
        w += _lw(clo, cw, idx[i], x[idx[i]] + dv[i] * step)
    return w


@njit
def _concave_step(x, clo, cw, idx, dv, n, lo, hi):
    """A step ``t`` in ``[lo, hi]`` drawn exactly from the law proportional to
    ``exp(f(t))``, ``f`` (:func:`_f_line`) concave and finite on ``[lo, hi]``, by rejection
    in O(log(hi - lo)) evaluations of ``f``: the mode ``M`` by bisection on the sign of
    ``f(t + 1) - f(t)``; ``[aL, bR]``, the values within 1 nat of ``f(M)`` (bisection on
    each side: every value between them is, by concavity); an envelope flat at ``f(M)``
    there and, beyond, the extension of the chord from ``M`` to the first value outside
    (``a = aL - 1``, ``b = bR + 1``): for ``t < a`` the chord slopes of a concave ``f``
    decrease, so ``f(t) <= f(a) - s (a - t)`` with ``s = (f(M) - f(a)) / (M - a) > 0``, a
    truncated geometric tail (the same on the right).  The envelope's mass is at most about
    three times the middle's, where every value weighs at least ``e^-1`` of it: a draw is
    accepted with probability above 1 / (3 e).  Returns ``lo - 1`` if 1000 proposals were
    all rejected (the caller then lists the line)."""
    # the mode: the first t with f(t + 1) - f(t) < 0 (hi if none)
    a_, b_ = lo, hi
    while a_ < b_:
        mid = (a_ + b_) // 2
        if _f_line(x, clo, cw, idx, dv, n, mid + 1) - _f_line(x, clo, cw, idx, dv, n, mid) < 0:
            b_ = mid
        else:
            a_ = mid + 1
    M = a_
    fM = _f_line(x, clo, cw, idx, dv, n, M)
    cut = fM - 1.0
    # aL: the smallest t in [lo, M] with f(t) >= cut (f increasing there)
    a_, b_ = lo, M
    while a_ < b_:
        mid = (a_ + b_) // 2
        if _f_line(x, clo, cw, idx, dv, n, mid) >= cut:
            b_ = mid
        else:
            a_ = mid + 1
    aL = a_
    # bR: the largest t in [M, hi] with f(t) >= cut
    a_, b_ = M, hi
    while a_ < b_:
        mid = (a_ + b_ + 1) // 2
        if _f_line(x, clo, cw, idx, dv, n, mid) >= cut:
            a_ = mid
        else:
            b_ = mid - 1
    bR = a_
    massM = float(bR - aL + 1)
    # left tail t = a - g, g = 0 .. a - lo, envelope f(a) - sL g (relative to fM)
    massL = 0.0
    sL = 0.0
    fa = 0.0
    a = aL - 1
    if a >= lo:
        fa = _f_line(x, clo, cw, idx, dv, n, a) - fM
        sL = -fa / (M - a)
        NL = a - lo + 1
        massL = np.exp(fa) * (-np.expm1(-sL * NL)) / (-np.expm1(-sL))
    massR = 0.0
    sR = 0.0
    fb = 0.0
    b = bR + 1
    if b <= hi:
        fb = _f_line(x, clo, cw, idx, dv, n, b) - fM
        sR = -fb / (b - M)
        NR = hi - b + 1
        massR = np.exp(fb) * (-np.expm1(-sR * NR)) / (-np.expm1(-sR))
    total = massM + massL + massR
    for _ in range(1000):
        u = np.random.random() * total
        if u < massM:
            t = aL + min(int(np.random.random() * (bR - aL + 1)), bR - aL)
            env = 0.0
        elif u < massM + massL:
            # truncated geometric on 0 .. NL - 1 with ratio exp(-sL), by inversion
            v = np.random.random()
            g = int(np.floor(np.log1p(v * np.expm1(-sL * (a - lo + 1))) / (-sL)))
            g = min(max(g, 0), a - lo)
            t = a - g
            env = fa - sL * g
        else:
            v = np.random.random()
            g = int(np.floor(np.log1p(v * np.expm1(-sR * (hi - b + 1))) / (-sR)))
            g = min(max(g, 0), hi - b)
            t = b + g
            env = fb - sR * g
        ft = _f_line(x, clo, cw, idx, dv, n, t) - fM
        if np.log(np.random.random()) < ft - env:
            return t
    return lo - 1


@njit
def _move_line_concave(x, clo, cw, cn, idx, dv, n, p):
    """:func:`_move_line` for a log-concave target (every cell's log-weights finite and
    concave on ``clo[c] .. clo[c] + cn[c] - 1``, ``-inf`` padding after): lines longer than
    :data:`SHORT_LINE` redrawn by :func:`_concave_step`."""
    lo = -(1 << 40)
    hi = 1 << 40
    for i in range(n):
        c = idx[i]
        a = clo[c] - x[c]
        b = clo[c] + cn[c] - 1 - x[c]
        if dv[i] > 0:
            lo, hi = max(lo, a), min(hi, b)
        else:
            lo, hi = max(lo, -b), min(hi, -a)
    if hi - lo + 1 <= SHORT_LINE:
        _move_line(x, clo, cw, idx, dv, n, p)
        return
    step = _concave_step(x, clo, cw, idx, dv, n, lo, hi)
    if step < lo:
        _move_line(x, clo, cw, idx, dv, n, p)
        return
    if step != 0:
        for i in range(n):
            x[idx[i]] += dv[i] * step


@njit
def sweeps_2d_concave(x, dims, clo, cw, cn, n, keep, out, cptr, cidx, cdv):
    """:func:`sweeps_2d` for every total exact and every cell's log-weights concave on an
    interval (margins only, suppression under a log-concave prior; ``cn`` the number of
    finite values of each cell's window, from ``clo``): the basic moves and
    the cycles (every circuit of K_{R,C}, which connect every such fiber), each line
    redrawn exactly by :func:`_move_line_concave` in O(log(length)) evaluations; and
    first, in a random order, the moves ``cidx[cptr[k]:cptr[k + 1]]`` with coefficients
    ``cdv`` (the fundamental cycles of the free cells: a lattice basis of the fiber, which
    moves the cells a suppression pattern leaves free as often as random circuits
    rarely would)."""
    R, C = dims[0], dims[1]
    ncell = R * C
    p = np.empty(64)
    mmax = min(R, C)
    nb = cptr.shape[0] - 1
    longest = 2
    for k in range(nb):
        longest = max(longest, cptr[k + 1] - cptr[k])
    midx = np.zeros(max(2 * max(mmax, 2), longest), np.int64)
    mdv = np.zeros(max(2 * max(mmax, 2), longest), np.int64)
    for it in range(n):
        for k in np.random.permutation(nb):
            m = cptr[k + 1] - cptr[k]
            for u in range(m):
                midx[u] = cidx[cptr[k] + u]
                mdv[u] = cdv[cptr[k] + u]
            _move_line_concave(x, clo, cw, cn, midx, mdv, m, p)
        if mmax >= 3:
            for _ in range(max(1, ncell // 4)):
                m2 = _random_cycle(R, C, mmax, midx, mdv)
                _move_line_concave(x, clo, cw, cn, midx, mdv, m2, p)
        if R >= 2 and C >= 2:
            for _ in range(ncell):
                _random_basic(R, C, midx, mdv)
                _move_line_concave(x, clo, cw, cn, midx, mdv, 4, p)
        if keep:
            out[it, :] = x
    return True
