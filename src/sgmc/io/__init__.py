"""Persistence: one name for each thing a run writes or reads.

* :mod:`~sgmc.io.serial` — pytrees to and from JSON specs and flat arrays;
* :mod:`~sgmc.io.store` — the draw sinks (memory, a stream folder) and reading a folder back;
* :mod:`~sgmc.io.checkpoint` — the checkpoint file: write atomically, load, verify.
"""

from sgmc.io import checkpoint, serial, store

__all__ = ["checkpoint", "serial", "store"]
