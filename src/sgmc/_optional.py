"""Optional dependencies, imported when first needed and quietly.

ArviZ (0.2x) warns once a day, at import, that it is being refactored (a FutureWarning that
is about ArviZ's own future API, not about anything an sgmc user did): sgmc imports it with
that one warning silenced, so that a run prints only what it means to.
"""

from __future__ import annotations

import warnings
from types import ModuleType


def arviz() -> ModuleType:
    """The ``arviz`` module (the ``diagnostics`` extra), imported without its refactor
    notice."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                                category=FutureWarning)
        import arviz as az
    return az
