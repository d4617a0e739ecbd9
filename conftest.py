"""pytest configuration shared by the whole repository."""

# The deprecated alias modules replace themselves in sys.modules by the module they
# alias; pytest's doctest collection would import them under a second name.  Their
# doctests run where the code lives.
collect_ignore = ["riskengine/linear.py", "riskengine/audit.py", "riskengine/suppress.py",
                  "riskengine/cta.py", "riskengine/cta_bivariate.py",
                  "riskengine/sensitivity.py", "riskengine/contributions.py"]
