"""Figure plumbing shared by the experiments: re-exported from :mod:`sgmc.plots` (one place
for the backend rule and the way figures are saved)."""

from __future__ import annotations

from sgmc.plots import pyplot, save

__all__ = ["pyplot", "save"]
