"""arviz, loaded when first needed (it is slow to import, and it warns about its coming
refactor on import: that warning is for arviz's users, not riskengine's)."""

from __future__ import annotations

import warnings

__all__ = ["arviz", "inference_data"]


def arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az


def inference_data(attrs: dict, draws, extra=None):
    """arviz's InferenceData with a ``posterior`` group: the table draws (DataArray
    ``(draw, *dims)`` -- one chain -- or ``(chain, draw, *dims)``) and ``extra``
    ``{name: DataArray}`` of the same leading dims (statistics of each draw)."""
    az = arviz()
    variables = {"table": draws, **(extra or {})}
    data, dims, coords = {}, {}, {}
    for name, da in variables.items():
        if "chain" not in da.dims:
            da = da.expand_dims(chain=1)
        da = da.transpose("chain", "draw", ...)
        data[name] = da.values
        dims[name] = list(da.dims[2:])
        coords.update({d: list(da.coords[d].values) for d in da.dims[2:] if d in da.coords})
    return az.from_dict(posterior=data, dims=dims, coords=coords,
                        attrs={k: str(v) for k, v in attrs.items()})
