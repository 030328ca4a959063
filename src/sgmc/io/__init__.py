"""Persistence: one name for each thing a run writes or reads.

* :mod:`~sgmc.io.serial` — pytrees to and from JSON specs and flat arrays;
* :mod:`~sgmc.io.sinks` — where kept draws go while a run runs: memory, or a draws folder;
* :mod:`~sgmc.io.folder` — the draws folder (``stream_to=``): its layout, reading it back,
  verifying its checksums;
* :mod:`~sgmc.io.checkpoint` — the checkpoint file: write atomically, load, verify;
* :mod:`~sgmc.io.lock` — one live run per checkpoint path (``PATH.lock``).

Nothing here imports :mod:`sgmc.result`: readers and sinks return plain pieces (draws,
info, meta) and :class:`sgmc.Result` builds itself from them.
"""

from sgmc.io import checkpoint, folder, lock, serial, sinks

__all__ = ["checkpoint", "folder", "lock", "serial", "sinks"]
