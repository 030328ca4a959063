"""Ctrl-C in ``sgmc.minimize`` (issue 33 item 6): the run goes in blocks as ``sgmc.sample``'s
(about 1/20 of it, cut to about a second each when longer), so a Ctrl-C is answered after the
block under way, and ``sgmc.Interrupted`` carries the :class:`sgmc.OptimizeResult` of the
steps done — the trace so far, and the best point among the starts and it.

A Ctrl-C is simulated as in tests/io/test_checkpoint.py: ``MemorySink.append`` raises
KeyboardInterrupt right after storing block n (the worst moment: the run has not advanced past
it, so its points are dropped), or sends a real SIGINT there (answered once the block is
stored: its points are kept).
"""

import signal

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.io import sinks

STEPS, EVERY, REPS = 20_000, 10, 3
X0 = np.array([[1.5, -1.0], [0.5, 2.0]], np.float32)  # (X0, Y0) of every replication
FIELDS = ("x", "value", "trace", "trace_steps", "best_x", "best_value", "exchanges", "replicas",
          "path", "grad_evals", "num_steps", "diverged", "diverged_step")


def f(x):
    return jnp.sum(x ** 2 - jnp.cos(3.0 * x))


def run(num_steps=STEPS):
    return sgmc.minimize(f, sgmc.gd_x_ld(0.01, 1.0), X0, num_steps, REPS, seed=3,
                         record_every=EVERY, record_path=True, init_axes="replica")


@pytest.fixture(scope="module")
def full():
    return run()


def ctrl_c():
    raise KeyboardInterrupt


def sigint():
    signal.raise_signal(signal.SIGINT)


def interrupted(monkeypatch, n, how):
    """The Interrupted raised by ``run()`` when ``how`` is called right after block n is
    stored."""
    append, calls = sinks.MemorySink.append, []

    def wrapped(sink, *args):
        append(sink, *args)
        calls.append(1)
        if len(calls) == n:
            how()

    monkeypatch.setattr(sinks.MemorySink, "append", wrapped)
    with pytest.raises(sgmc.Interrupted) as info:
        run()
    monkeypatch.undo()
    err = info.value
    assert isinstance(err, KeyboardInterrupt) and err.checkpoint is None
    assert isinstance(err.result, sgmc.OptimizeResult)
    return err


def test_interrupt_keeps_the_trace_so_far(full, monkeypatch):
    err = interrupted(monkeypatch, 3, ctrl_c)
    part = err.result
    n = part.trace.shape[1]
    # Block 3 was stored but the run had not advanced past it: two blocks' points remain.
    assert 0 < n < full.trace.shape[1] // 2 and part.num_steps == err.step == n * EVERY
    np.testing.assert_array_equal(part.trace, full.trace[:, :n])
    np.testing.assert_array_equal(part.path, full.path[:, :n])
    np.testing.assert_array_equal(part.trace_steps, full.trace_steps[:n])
    np.testing.assert_array_equal(part.x, full.path[:, n - 1])
    np.testing.assert_array_equal(part.value, full.trace[:, n - 1])
    # The best is over the start and the prefix (here a recorded point: below F(start)).
    lowest = part.trace.min(axis=1)
    assert np.all(lowest < float(f(X0[0])))
    np.testing.assert_array_equal(part.best_value, lowest)
    at = part.trace.argmin(axis=1)
    np.testing.assert_array_equal(part.best_x, part.path[np.arange(REPS), at])
    # Everything else is that of a run of the steps done.
    short = run(err.step)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(part, name), getattr(short, name), err_msg=name)
    assert part.method == short.method == "gd_x_ld" and not part.diverged.any()
    assert np.all(part.exchanges <= full.exchanges) and np.any(part.exchanges > 0)


def test_sigint_is_answered_after_the_block_and_named(full, monkeypatch):
    err = interrupted(monkeypatch, 2, sigint)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    part = err.result
    n = part.trace.shape[1]  # a real Ctrl-C comes back after block 2 is stored: it is kept
    assert 0 < n < full.trace.shape[1] and err.step == part.num_steps == n * EVERY
    np.testing.assert_array_equal(part.trace, full.trace[:, :n])
    message = str(err)
    assert message.startswith(f"minimize interrupted after step {err.step:,} of 20,000;")
    assert f"{n:,} points per replication" in message and "best_value" in message


def test_interrupt_before_any_point_keeps_the_starts(monkeypatch):
    err = interrupted(monkeypatch, 1, ctrl_c)
    part = err.result
    assert err.step == part.num_steps == 0 and "after step 0 of 20,000" in str(err)
    assert part.trace.shape == (REPS, 0) and part.path.shape == (REPS, 0, 2)
    assert part.trace_steps.shape == (0,)
    np.testing.assert_array_equal(part.x, np.broadcast_to(X0[0], (REPS, 2)))
    np.testing.assert_array_equal(part.best_x, part.x)
    np.testing.assert_allclose(part.best_value, float(f(X0[0])), rtol=1e-6)
    np.testing.assert_array_equal(part.value, part.best_value)
    np.testing.assert_array_equal(part.replicas, np.broadcast_to(X0, (REPS, 2, 2)))
    np.testing.assert_array_equal(part.exchanges, 0)
    assert not part.diverged.any() and part.diverged_step.tolist() == [-1] * REPS
