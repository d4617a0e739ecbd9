"""Checkpoint plans of the forward-backward passes (kernels/checkpoints.py): every plan
holds its peak within the budget it was given whenever the least peak does, keeps the
first stage, and a budget above the least peak recomputes no more than the least-peak
plan; the peak of a plan is computed here from its definition (stored stages plus the
largest run of dropped stages, held while it is recomputed) and is at most the peak the
plan reports."""

import numpy as np
import pytest

from kernels.checkpoints import checkpoint_plan


def _peak(per, keep):
    run, runs = 0.0, 0.0
    for p, k in zip(per, keep):
        run = 0.0 if k else run + p
        runs = max(runs, run)
    return float(per[keep].sum()) + runs


@pytest.mark.parametrize("seed", range(40))
def test_plans_hold_their_budget_and_recompute_less_with_more(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(3, 12))
    per = rng.integers(1, 100, size=T).astype(float)
    stages = np.concatenate([per, [1.0]])            # the end state, never kept
    full = per.sum()
    keep0, peak0 = checkpoint_plan(stages, 0.0)
    assert keep0[0] and _peak(per, keep0) <= peak0 + 1e-9     # the reported peak bounds it
    for budget in np.linspace(peak0, full, 6):
        keep, peak = checkpoint_plan(stages, budget)
        assert keep[0]
        assert _peak(per, keep) <= peak + 1e-9
        if budget >= full:
            assert keep.all()
            continue
        assert peak <= max(budget, peak0) + 1e-9
        # dropped stages are recomputed once each: no more than the least-peak plan's
        assert per[~keep].sum() <= per[~keep0].sum() + 1e-9



def test_a_budget_above_the_least_peak_keeps_what_it_can():
    """20 equal stages of 10 states: the least peak keeps a few checkpoints and recomputes
    most stages; a budget of 150 (three quarters of them) drops only what does not fit,
    plus room for one stage recomputed at a time."""
    stages = np.concatenate([np.full(20, 10.0), [1.0]])
    keep0, peak0 = checkpoint_plan(stages, 0.0)
    assert peak0 < 100 and (~keep0).sum() >= 10
    keep, peak = checkpoint_plan(stages, 150.0)
    assert peak <= 150 and keep[0]
    assert (~keep).sum() == 6                 # 200 - 150 + one stage held while recomputed
