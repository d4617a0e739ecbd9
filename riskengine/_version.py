"""The package version (one place; ``riskengine.__version__``)."""

__version__ = "0.1.0"
