"""Numba-compiled enumerators, counters and samplers.

Plain arrays in, plain arrays out: nothing here imports xarray or riskengine.
"""
