import numpy as np
import pytest

import riskengine as rk


def _post():
    probs = np.array([[[0.1, 0.2, 0.4, 0.3], [0.0, 0.0, 1.0, 0.0]]])
    return rk.Posterior(start=np.array([[3, 0]]), probs=probs, dims=("a", "b"),
                        coords={"a": ["x"], "b": ["p", "q"]}, published=np.array([[5, 2]]),
                        n_candidates=7, log_evidence=-1.0)


def test_summaries_by_hand():
    p = _post()
    assert p.mode().values.tolist() == [[5, 2]]
    assert p.mean().values[0, 0] == pytest.approx(3 * 0.1 + 4 * 0.2 + 5 * 0.4 + 6 * 0.3)
    assert p.max_prob().values.tolist() == [[0.4, 1.0]]
    iv = p.interval(0.8)   # tails 0.1: cdf 0.1, 0.3, 0.7, 1.0
    assert iv["lower"].values.tolist() == [[3, 2]] and iv["upper"].values.tolist() == [[6, 2]]
    assert p.prob_published().values.tolist() == [[0.4, 1.0]]
    assert p.prob_exact(np.array([[6, 1]])).values.tolist() == [[0.3, 0.0]]
    assert p.prob_exact(np.array([[99, 2]])).values.tolist() == [[0.0, 1.0]]
    pmf = p.pmf
    assert pmf.dims == ("a", "b", "value")
    assert pmf.sel(a="x", b="p", value=4).item() == 0.2
    assert np.allclose(pmf.sum("value"), 1.0)
    df = p.risk_table(truth=np.array([[5, 2]]))
    assert list(df["prob_exact"]) == [0.4, 1.0]
    assert p.expected_exact_disclosures(np.array([[5, 2]])) == pytest.approx(1.4)


def test_truth_shape_is_checked():
    with pytest.raises(ValueError, match="shape"):
        _post().prob_exact(np.array([1, 2]))
    with pytest.raises(ValueError, match="nonnegative"):
        _post().prob_exact(np.array([[-1, 2]]))


def test_a_posterior_is_read_only():
    """Built once by rk.posterior: attributes cannot be assigned, attrs / totals are
    read-only mappings and the arrays are not writeable."""
    import numpy as np
    import pytest

    import riskengine as rk
    rel = rk.MarginsOnly().protect(rk.Table(np.array([[1, 2], [3, 4]]), dims=("v", "w")))
    post = rk.posterior(rel)
    with pytest.raises(AttributeError, match="read-only"):
        post.n_candidates = 3
    with pytest.raises(AttributeError, match="read-only"):
        post.attrs = {}
    with pytest.raises(TypeError):
        post.attrs["route"] = "other"
    with pytest.raises(TypeError):
        post.totals[("v",)] = None
    with pytest.raises(ValueError):
        post.probs[0, 0, 0] = 0.5
    with pytest.raises(ValueError):
        post.start[0, 0] = 7
    assert post.exact and post.attrs["route"] in {r.name for r in rel.mechanism.routes}
