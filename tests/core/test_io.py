import numpy as np
import pytest
import xarray as xr

import riskengine as rk


def test_csv_long_and_wide_agree(tmp_path):
    long = tmp_path / "t.csv"
    long.write_text("v,w,count\na,x,1\na,y,2\nb,x,3\nb,y,4\n")
    wide = tmp_path / "w.csv"
    wide.write_text("v\\w,x,y\na,1,2\nb,3,4\n")
    t1, t2 = rk.read_table(long), rk.read_table(wide)
    assert t1 == t2
    assert t1.dims == ("v", "w") and t1.coords == {"v": ["a", "b"], "w": ["x", "y"]}


def test_csv_errors_name_the_problem(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("v,w,count\na,x,1\na,y,2\nb,x,3\n")
    with pytest.raises(ValueError, match="missing"):
        rk.read_table(p)
    p.write_text("v,w,count\na,x,1\na,x,2\n")
    with pytest.raises(ValueError, match="more than once"):
        rk.read_table(p)
    p.write_text("v,w,count\na,x,1\na,y,-2\nb,x,3\nb,y,1\n")
    with pytest.raises(ValueError, match="nonnegative"):
        rk.read_table(p)
    p.write_text("v,w,count\na,x,1\na,y,zz\n")
    with pytest.raises(ValueError, match="'zz' is not a number"):
        rk.read_table(p)
    with pytest.raises(FileNotFoundError):
        rk.read_table(tmp_path / "nope.csv")


def test_netcdf_round_trip(tmp_path):
    da = xr.DataArray(np.array([[1, 2], [3, 4]]), dims=("v", "w"),
                      coords={"v": ["a", "b"], "w": ["x", "y"]}, name="count")
    p = tmp_path / "t.nc"
    da.to_dataset().to_netcdf(p, engine="scipy")
    t = rk.read_table(p)
    assert t.values.tolist() == [[1, 2], [3, 4]] and t.coords["w"] == ["x", "y"]


def test_release_save_is_atomic_and_loads(tmp_path):
    rel = rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=rk.CyclicPerturbation(
        rk.cycles.diagonal(3), alpha=0.2, beta=0.2))
    p = tmp_path / "out" / "rel.json"
    rel.save(p)
    assert rk.Release.load(p) == rel
    assert [x.name for x in p.parent.iterdir()] == ["rel.json"]   # no temp files left


def test_tidy_writes_the_decimals_of_decimal_sums(rng=None):
    """Sums of one- and two-decimal numbers, computed in floats, come back as the exact
    decimal sum (computed with Decimal); integers and NaN are left as they are."""
    from decimal import Decimal

    from riskengine._io import tidy
    rng = np.random.default_rng(42)
    for decimals in (1, 2):
        parts = np.round(rng.uniform(0, 5000, size=(200, 7)), decimals)
        sums = parts.sum(axis=1)
        exact = [float(sum(Decimal(f"{x:.{decimals}f}") for x in row)) for row in parts]
        assert (sums != exact).any()            # the float noise this is about
        assert tidy(sums).tolist() == exact
    assert tidy(np.array([3, 4])).dtype.kind == "i"
    assert np.isnan(tidy([np.nan, 1.0])[0])


def test_a_pandas_crosstab_with_the_row_name_in_the_corner_reads_as_wide(tmp_path):
    """pandas writes a crosstab with the row dim's name in the corner cell (the column
    dim's name is lost): read as wide, dims (that name, "column"); a long table whose
    labels are all numbers stays long."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"region": ["A", "A", "B", "B", "C"], "age": ["y", "o", "y", "o", "y"]})
    pd.crosstab(df.region, df.age).to_csv(tmp_path / "ct.csv")
    t = rk.read_table(tmp_path / "ct.csv")
    assert t.dims == ("region", "column")
    assert t.coords == {"region": ["A", "B", "C"], "column": ["o", "y"]}
    assert t.values.tolist() == [[1, 1], [1, 1], [0, 1]]
    (tmp_path / "long.csv").write_text("year,age,count\n2020,30,5\n2020,40,6\n2021,30,7\n"
                                       "2021,40,8\n")
    t = rk.read_table(tmp_path / "long.csv")
    assert t.dims == ("year", "age") and t.values.tolist() == [[5, 6], [7, 8]]
