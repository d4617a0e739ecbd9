"""Blocked Gibbs sampling with exact block updates: the Monte Carlo route for 2-D tables.

Where the exact table DP does not fit, the posterior over original tables is sampled by a
Markov chain whose every step redraws a block of rows exactly: given all other rows, the
rows of the block form a small table whose cells, row totals, column sums (the column
totals' windows shifted by what the other rows hold) and grand total keep their windows
and log-weights; the table DP draws it from its exact conditional distribution (forward
filtering, backward sampling: :func:`riskengine.inference.table_dp.sample`).  A sweep
pairs the rows at random and redraws every pair (a lone last row joins the previous
pair), so every two rows meet with positive probability: the chain contains every move of
two rows, among them the basic moves that connect the tables with fixed margins
(Diaconis & Sturmfels 1998), and with windows on the totals (rounding, noise) it also moves
the totals -- moves that keep the margins alone cannot (a rounding window leaves them
free).  Irreducibility on bounded windows is not proven in general; the tests compare
with exact enumeration on small tables.

Several chains (default 4) start from dispersed tables: the constrained mode of the
weights and random vertices of the same polytope (:meth:`EntryWindows.mode` with random
gains).  Diagnostics through arviz: rank-normalised split R-hat, bulk and tail ESS and
the Monte Carlo standard error of every cell's mean and of its probability at the
posterior mode; a warning (and ``attrs["converged"] = 0``) when R-hat > 1.01 or ESS < 400
anywhere.  Reproducible: the chains' generator is seeded from the release, the prior and
the settings.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from .._seeding import release_seed
from ..mechanisms._base import Cost, Route
from . import _label, gibbs3d
from . import table_dp as dp

__all__ = ["ESS_MIN", "RHAT_MAX", "BlockGibbs", "ConvergenceWarning"]

#: thresholds of the convergence warning (Vehtari et al. 2021)
RHAT_MAX = 1.01
ESS_MIN = 400


class ConvergenceWarning(UserWarning):
    """A Monte Carlo posterior whose diagnostics say it has not converged."""


def _block(win: dp.Windows, x: np.ndarray, rows, transpose: bool = False) -> dp.Windows:
    """The windows of ``rows`` given the other rows of ``x`` (``transpose``: with the
    block's rows as the DP's columns, so that its state is the block's few partial row
    sums instead of a vector over every column)."""
    other = np.ones(x.shape[0], bool)
    other[rows] = False
    rest = x[other].sum(axis=0)
    if transpose:
        return dp.Windows(win.cell_lo[rows].T, win.cell_lw[rows].transpose(1, 0, 2),
                          win.col_lo - rest, win.col_lw, win.row_lo[rows], win.row_lw[rows],
                          int(win.grand_lo - rest.sum()), win.grand_lw)
    return dp.Windows(win.cell_lo[rows], win.cell_lw[rows], win.row_lo[rows],
                      win.row_lw[rows], win.col_lo - rest, win.col_lw,
                      int(win.grand_lo - rest.sum()), win.grand_lw)


def _orientation(win: dp.Windows, x: np.ndarray, rows) -> bool:
    """Whether the block DP stores fewer states transposed (measured on one block)."""
    plain = dp.states(_block(win, x, rows))[1]
    trans = dp.states(_block(win, x, rows, transpose=True))[1]
    return bool(trans < plain)


def _weight(win: dp.Windows, x: np.ndarray) -> float:
    """Log-weight of table ``x`` under the windows (-inf outside)."""
    def at(lo, lw, v):
        j = np.asarray(v) - lo
        W = lw.shape[-1]
        if np.any(j < 0) or np.any(j >= W):
            return -np.inf
        return float(np.take_along_axis(lw, j[..., None], axis=-1).sum())
    return (at(win.cell_lo, win.cell_lw, x) + at(win.row_lo, win.row_lw, x.sum(1))
            + at(win.col_lo, win.col_lw, x.sum(0))
            + at(np.array(win.grand_lo), win.grand_lw, x.sum()))


class BlockGibbs(Route):
    """Blocked Gibbs sampler over 2-D tables with totals (rows redrawn in pairs by the
    table DP) and 3-D tables with every 2-way margin (:mod:`.gibbs3d`).
    ``windows(release) -> EntryWindows`` describes the mechanism."""

    name = "gibbs"
    exact = False

    def __init__(self, windows, chains: int = 4, warmup: int = 300, draws: int = 1000,
                 seed: int | None = None):
        self._windows = windows
        self.chains, self.warmup, self.draws = chains, warmup, draws
        #: extra entropy for the chains' generator (None: the release, prior and settings
        #: alone decide it; repeated runs with different seeds measure the Monte Carlo
        #: error)
        self.seed = seed

    def applies(self, release, prior):
        if release.kind != "count" or len(release.dims) not in (2, 3) or release.groups:
            return "the Gibbs route covers 2-D and 3-D count tables without subtotals"
        if len(release.dims) == 3:
            return gibbs3d.applies(release)
        d0, d1 = release.dims
        missing = [k for k in ((d0,), (d1,), ()) if k not in release.margins]
        if missing:
            return (f"the Gibbs route needs every total of the 2-D table published; missing "
                    f"{missing}")
        if release.shape[0] < 2 and release.shape[1] < 2:
            return "a 1 x 1 table needs no sampler"
        return None

    def estimate(self, release, prior, what="posterior"):
        cells = int(np.prod(release.shape, dtype=np.int64))
        n = self.chains * self.draws
        return Cost(float(8 * (n * cells * 2 + 64 * cells * 200) + 50e6),
                    f"{self.chains} chains x {self.draws} draws of "
                    f"{' x '.join(map(str, release.shape))} tables")

    def _windows_for(self, release, prior):
        """Tilted DP windows with the rows along the longer dim (pairs of the shorter
        rows are small DPs) and the entry windows they come from."""
        ew = self._windows(release).with_prior(prior, release.coords).trimmed()
        if ew is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        flip = release.shape[0] < release.shape[1]
        e = ew.transposed() if flip else ew
        tilt = e.tilted()
        return e, dp.from_entries(tilt), flip

    def run(self, release, prior, *, count=True, progress=None, memory):
        if len(release.dims) == 3:
            return self._run_3d(release, prior, progress)
        ew, win, flip = self._windows_for(release, prior)
        r, c = win.cell_lo.shape
        rng = self._rng(release, prior)
        starts = [ew.mode()] + [ew.mode(rng) for _ in range(self.chains - 1)]
        total = self.chains * (self.warmup + self.draws)
        out = np.zeros((self.chains, self.draws, r, c), np.int64)
        done = 0
        transpose = None
        for ch, x0 in enumerate(starts):
            x = np.rint(x0).astype(np.int64)
            if transpose is None:
                transpose = _orientation(win, x, np.arange(min(2, r)))
            for it in range(self.warmup + self.draws):
                perm = rng.permutation(r)
                blocks = [perm[k:k + 2] for k in range(0, r - 1, 2)]
                if r % 2 and r > 1:
                    blocks[-1] = perm[r - 3:]        # the lone row joins the last pair
                if r == 1:
                    blocks = [perm]
                for rows in blocks:
                    rows = np.sort(rows)
                    try:
                        t = dp.sample(_block(win, x, rows, transpose), 1, rng,
                                      max_states=memory / 8)[0]
                        x[rows] = t.T if transpose else t
                    except ValueError:
                        raise ValueError(
                            f"Gibbs chain {ch}: rows {rows.tolist()} have no completion "
                            "given the other rows (the starting table lies outside the "
                            "windows' support there); no Monte Carlo answer") from None
                if it >= self.warmup:
                    out[ch, it - self.warmup] = x
                done += 1
                if progress is not None and done % 50 == 0:
                    progress(done, total)
            if not np.isfinite(_weight(win, x)):
                raise RuntimeError(f"internal error: Gibbs chain {ch} left the support")
        if flip:
            out = np.swapaxes(out, 2, 3)
        return self._posterior(release, prior, out)

    def _rng(self, release, prior):
        settings = (self.chains, self.warmup, self.draws) + \
            (() if self.seed is None else (self.seed,))
        return np.random.default_rng(release_seed(release, prior, settings))

    def _run_3d(self, release, prior, progress):
        ew = self._windows(release).with_prior(prior, release.coords).trimmed()
        if ew is None:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        out = gibbs3d.chains(ew, self.chains, self.warmup, self.draws,
                             self._rng(release, prior), progress)
        return self._posterior(release, prior, out)

    def _posterior(self, release, prior, draws):
        chains, n = draws.shape[:2]
        shape = draws.shape[2:]
        lo = draws.min(axis=(0, 1))
        W = int((draws.max(axis=(0, 1)) - lo).max()) + 1
        flat = draws.reshape((chains * n,) + shape) - lo
        probs = np.zeros(shape + (W,))
        for w in range(W):
            probs[..., w] = (flat == w).mean(axis=0)
        diag = diagnostics(draws, lo, probs, release.dims, release.coords)
        post = _label.label(release, prior, route=self.name, start=lo, probs=probs,
                            log_evidence=np.nan, n_candidates=None,
                            approximation=(f"Monte Carlo: blocked Gibbs, {chains} chains x "
                                           f"{n} draws"),
                            sampler=_replay(draws))
        post.attrs["n_candidates_note"] = ("not counted by the Monte Carlo route (draws "
                                           "visit candidates, they do not count them)")
        post.attrs["approximate"] = 1
        post.diagnostics = diag
        post.chains = draws
        bad = diag.attrs["max_rhat"] > RHAT_MAX or diag.attrs["min_ess_bulk"] < ESS_MIN \
            or diag.attrs["min_ess_tail"] < ESS_MIN
        post.attrs["converged"] = int(not bad)
        post.attrs["diagnostics"] = (f"max R-hat {diag.attrs['max_rhat']:.4f}, min bulk ESS "
                                     f"{diag.attrs['min_ess_bulk']:.0f}, min tail ESS "
                                     f"{diag.attrs['min_ess_tail']:.0f}")
        if bad:
            warnings.warn(f"the Monte Carlo posterior has not converged by the usual rules "
                          f"(R-hat <= {RHAT_MAX}, ESS >= {ESS_MIN}): "
                          f"{post.attrs['diagnostics']}", ConvergenceWarning, stacklevel=2)
        return post



def _replay(draws):
    """Whole-table draws of a Monte Carlo posterior: ``n`` of the chains' kept draws,
    taken without replacement by ``rng`` (in chain order), at most as many as were kept."""
    flat = draws.reshape((-1,) + draws.shape[2:])

    def draw(n, rng):
        if n > len(flat):
            raise ValueError(f"the Gibbs route kept {len(flat)} draws ({draws.shape[0]} "
                             f"chains x {draws.shape[1]}); asked for {n}")
        return flat[np.sort(rng.choice(len(flat), n, replace=False))].copy()
    return draw


def diagnostics(draws: np.ndarray, lo: np.ndarray, probs: np.ndarray, dims, coords):
    """arviz's rank-normalised R-hat, bulk / tail ESS and MCSE of every cell's mean and of
    its probability at the posterior mode, from draws ``(chain, draw, *shape)``."""
    from .. import _arviz
    az = _arviz.arviz()
    mode = lo + probs.argmax(axis=-1)
    at_mode = (draws == mode).astype(float)
    ds = xr.Dataset({"value": (("chain", "draw", *dims), draws.astype(float)),
                     "at_mode": (("chain", "draw", *dims), at_mode)},
                    coords={d: coords[d] for d in dims})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # constant cells: 0 / 0
        rhat = az.rhat(ds)["value"].values
        ess_b = az.ess(ds, method="bulk")["value"].values
        ess_t = az.ess(ds, method="tail")["value"].values
        mc = az.mcse(ds)
        mcse, mcse_p = mc["value"].values, mc["at_mode"].values
    const = draws.min(axis=(0, 1)) == draws.max(axis=(0, 1))
    n = draws.shape[0] * draws.shape[1]
    # a cell that varies but gets no finite diagnostic (chains each stuck on a different
    # value: zero within-chain variance) has not converged: R-hat inf, ESS 0, MCSE inf
    rhat = np.where(const, 1.0, np.where(np.isnan(rhat), np.inf, rhat))
    ess_b = np.where(const, n, np.nan_to_num(ess_b, nan=0.0))
    ess_t = np.where(const, n, np.nan_to_num(ess_t, nan=0.0))
    mcse = np.where(const, 0.0, np.where(np.isnan(mcse), np.inf, mcse))
    mcse_p = np.where(const, 0.0, np.where(np.isnan(mcse_p), np.inf, mcse_p))
    c = {d: coords[d] for d in dims}
    out = xr.Dataset({"rhat": (dims, rhat), "ess_bulk": (dims, ess_b),
                      "ess_tail": (dims, ess_t), "mcse_mean": (dims, mcse),
                      "mcse_max_prob": (dims, mcse_p)}, coords=c)
    out.attrs.update(max_rhat=float(np.max(rhat)), min_ess_bulk=float(np.min(ess_b)),
                     min_ess_tail=float(np.min(ess_t)), chains=int(draws.shape[0]),
                     draws=int(draws.shape[1]))
    return out
