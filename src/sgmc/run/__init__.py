"""The driver: runs any :class:`sgmc.contracts.kernel.Kernel` as compiled blocks of steps over
vectorised chains.

* :mod:`~sgmc.run.api` — :func:`sample` and :func:`resume` (validation, start, restore);
* :mod:`~sgmc.run.starts` — the chains' starts from ``init`` and whether the model
  convolves;
* :mod:`~sgmc.run.stats` — the statistics each kept draw records (drift test);
* :mod:`~sgmc.run.preflight` — before compiling: the step counter's range, the model at
  the initial points, the schedules on the run's steps;
* :mod:`~sgmc.run.loop` — the compiled loop (one program of static length for full
  blocks, one of traced length for leftovers), randomness drawn ahead (:mod:`sgmc.rng`);
* :mod:`~sgmc.run.plan` — how a run is cut into blocks;
* :mod:`~sgmc.run.host` — the host loop and its sinks (memory, stream, checkpoint,
  progress), divergence and Ctrl-C;
* :mod:`~sgmc.run.snapshot` — a run's state to and from checkpoint arrays.
"""

from sgmc.run.api import resume, sample

__all__ = ["resume", "sample"]
