"""The old private name of :mod:`sgmc.pytree` (kept for imports inside the package)."""

from sgmc.pytree import pytree_dataclass, replace, static

__all__ = ["pytree_dataclass", "replace", "static"]
