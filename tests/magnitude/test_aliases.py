"""The old module paths of the magnitude wing stay importable for one release, with every
name they offered; the private solver modules are gone."""

import importlib

import pytest

import riskengine as rk

OLD = {
    "riskengine.audit": ("audit", "intervals", "protection_tol", "protection_arrays"),
    "riskengine.suppress": ("suppress", "METHODS", "COSTS"),
    "riskengine.cta": ("cta", "CTAResult", "cta_stats", "DIRECTIONS", "OBJECTIVES", "OVER",
                       "PRESERVE", "ControlledTabularAdjustment"),
    "riskengine.cta_bivariate": ("cta_bivariate", "BivariateCTAResult", "bivariate_stats"),
    "riskengine.sensitivity": ("Rule", "Dominance", "PPercent", "PQ", "Sum", "Max", "assess",
                               "cell_vector", "nk_dominance", "p_percent", "pq",
                               "protection"),
    "riskengine.contributions": ("Contributions", "contributions"),
}
NEW = {
    "riskengine.audit": "riskengine.magnitude.audit",
    "riskengine.suppress": "riskengine.mechanisms.suppression",
    "riskengine.cta": "riskengine.mechanisms.cta",
    "riskengine.cta_bivariate": "riskengine.mechanisms.cta",
    "riskengine.sensitivity": "riskengine.magnitude.sensitivity",
    "riskengine.contributions": "riskengine.magnitude.contributions",
}


@pytest.mark.parametrize("old", sorted(OLD))
def test_old_paths_offer_their_names(old):
    mod = importlib.import_module(old)
    assert mod is importlib.import_module(NEW[old])
    for name in OLD[old]:
        assert hasattr(mod, name), (old, name)


def test_public_names_unchanged():
    assert rk.suppress is importlib.import_module("riskengine.mechanisms.suppression").suppress
    assert rk.cta is importlib.import_module("riskengine.mechanisms.cta").cta
    assert rk.cta_bivariate is importlib.import_module("riskengine.mechanisms.cta").cta_bivariate
    assert rk.audit is importlib.import_module("riskengine.magnitude.audit").audit
    assert rk.sensitivity is importlib.import_module("riskengine.magnitude.sensitivity")
    assert rk.contributions is importlib.import_module(
        "riskengine.magnitude.contributions").contributions


@pytest.mark.parametrize("gone", ["riskengine._highs", "riskengine._csp", "riskengine._csp_lp",
                                  "riskengine._csp_network", "riskengine._csp_optimal"])
def test_private_solver_modules_are_gone(gone):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(gone)
