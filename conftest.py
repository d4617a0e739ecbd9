"""pytest configuration shared by the whole repository (tests/ and the doctests of
riskengine/); its presence also puts the repository root on ``sys.path``."""
