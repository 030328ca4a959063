"""The driver: runs any :class:`sgmc.kernel.Kernel` as compiled blocks of steps over
vectorised chains.

* :mod:`~sgmc.driver.api` — :func:`sample` and :func:`resume` (validation, start, restore);
* :mod:`~sgmc.driver.starts` — the chains' starts from ``init`` and whether the model
  convolves;
* :mod:`~sgmc.driver.stats` — the statistics each kept draw records (drift test);
* :mod:`~sgmc.driver.preflight` — before compiling: the step counter's range, the model at
  the initial points, the schedules on the run's steps;
* :mod:`~sgmc.driver.loop` — the compiled loop (one program of static length for full
  blocks, one of traced length for leftovers), randomness drawn ahead (:mod:`sgmc.rng`);
* :mod:`~sgmc.driver.plan` — how a run is cut into blocks;
* :mod:`~sgmc.driver.run` — the host loop and its sinks (memory, stream, checkpoint,
  progress), divergence and Ctrl-C;
* :mod:`~sgmc.driver.checkpoint` — a run's state to and from checkpoint arrays.
"""

from .api import resume, sample

__all__ = ["resume", "sample"]
