"""Long runs: checkpoints (atomic, verified), resume after a kill or Ctrl-C, streaming draws.

The standard every test here holds a resumed run to: its draws and every per-draw statistic
are *bitwise* those of the same run made without interruption (the PRNG keys are derived
from the seed and step number, so nothing but the stored state can make them differ).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from checkpoint_run import EVERY, INIT, RUN, problem, sampler
from sgmc.io import checkpoint
from sgmc.io import sinks as _sinks

HERE = Path(__file__).resolve().parent.parent  # tests/: the helper scripts


@pytest.fixture(scope="module")
def full():
    """The uninterrupted run (no checkpoint) every resumed run must equal."""
    return sgmc.sample(problem(), sampler(), INIT, **RUN)


def assert_same(a: sgmc.Result, b: sgmc.Result) -> None:
    np.testing.assert_array_equal(np.asarray(a.samples), np.asarray(b.samples))
    assert sorted(a.info) == sorted(b.info)
    for k in a.info:
        np.testing.assert_array_equal(np.asarray(a.info[k]), np.asarray(b.info[k]), err_msg=k)
    assert a.meta["grad_evals_total"] == b.meta["grad_evals_total"]


def test_resume_after_the_process_is_killed(full, tmp_path):
    path = tmp_path / "run.ckpt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE), str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(HERE / "checkpoint_run.py"), str(path)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        while not path.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # no chance to clean up: as a crash or an OOM kill
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert path.exists(), proc.stderr.read().decode()[-2000:]
    header, _ = checkpoint.read(path)
    done = header["t0"]
    assert 0 < done < RUN["num_steps"], f"the kill came too late to test anything ({done})"
    resumed = sgmc.resume(path, problem(), sampler())
    assert_same(resumed, full)
    assert resumed.num_draws == (RUN["num_steps"] - RUN["burn_in"]) // RUN["thin"]


def interrupt_after(n, append):
    """A sink ``append`` that raises KeyboardInterrupt (as Ctrl-C would) right after storing
    block n — the worst moment: the draws are stored but the run has not advanced."""
    calls = []

    def wrapped(sink, *args):
        append(sink, *args)
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt

    return wrapped


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "stream"])
def test_ctrl_c_keeps_every_draw_and_resumes(full, tmp_path, monkeypatch, stream):
    path = tmp_path / "run.ckpt"
    sink_cls = _sinks.DiskSink if stream else _sinks.MemorySink
    monkeypatch.setattr(sink_cls, "append", interrupt_after(3, sink_cls.append))
    folder = tmp_path / "draws" if stream else None
    with pytest.raises(sgmc.Interrupted) as info:
        sgmc.sample(problem(), sampler(), INIT, **RUN, checkpoint=path,
                    checkpoint_every=EVERY, stream_to=folder)
    monkeypatch.undo()
    err = info.value
    assert isinstance(err, KeyboardInterrupt) and err.checkpoint == str(path)
    part = err.result
    # The third block's draws were stored when the interrupt came, but the run had not
    # advanced past it: they are dropped (and will be made again on resume).
    n = part.num_draws
    assert 0 < n < full.num_draws and part.info["step"][-1] <= err.step
    np.testing.assert_array_equal(np.asarray(part.samples), full.samples[:, :n])
    np.testing.assert_array_equal(np.asarray(part.info["grad_evals"]),
                                  full.info["grad_evals"][:, :n])
    resumed = sgmc.resume(path, problem(), sampler())
    assert_same(resumed, full)
    if stream:
        assert isinstance(resumed.samples, np.memmap)
        assert_same(sgmc.Result.load(folder), full)


def test_streaming_matches_memory_and_loads_lazily(full, tmp_path):
    folder = tmp_path / "draws"
    res = sgmc.sample(problem(), sampler(), INIT, **RUN, stream_to=folder)
    assert_same(res, full)
    assert isinstance(res.samples, np.memmap)  # draws live on disk, not in host memory
    loaded = sgmc.Result.load(folder)
    assert isinstance(loaded.samples, np.memmap)
    assert_same(loaded, full)
    assert loaded.meta["num_steps"] == RUN["num_steps"]
    with pytest.raises(ValueError, match="new or empty folder"):
        sgmc.sample(problem(), sampler(), INIT, **RUN, stream_to=folder)


def test_finished_run_checkpoint_and_damaged_files(full, tmp_path):
    path = tmp_path / "run.ckpt"
    res = sgmc.sample(problem(), sampler(), INIT, **RUN, checkpoint=path,
                      checkpoint_every=10 * EVERY)
    assert_same(res, full)
    prev = Path(f"{path}.prev")
    assert path.exists() and prev.exists()
    # A finished run's checkpoint gives its result without sampling again.
    assert_same(sgmc.resume(path, problem(), sampler()), full)

    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # truncated, as by a full disk
    with pytest.raises(sgmc.CheckpointError, match=r"not a readable.*previous checkpoint"):
        sgmc.resume(path, problem(), sampler())
    assert_same(sgmc.resume(prev, problem(), sampler()), full)  # still usable

    # Corrupted content with an intact archive: the checksums catch it.
    header, arrays = checkpoint.read(prev)
    arrays["state/0"] = arrays["state/0"] + 1
    np.savez(path, header=np.asarray(__import__("json").dumps(header)), **arrays)
    with pytest.raises(sgmc.CheckpointError, match="corrupted"):
        sgmc.resume(path, problem(), sampler())


def test_resume_refuses_other_files_and_other_runs(tmp_path):
    small = dict(RUN, num_steps=300, burn_in=0, thin=1)
    path = tmp_path / "run.ckpt"
    res = sgmc.sample(problem(), sampler(), INIT, **small, checkpoint=path)
    with pytest.raises(sgmc.CheckpointError, match="different problem"):
        sgmc.resume(path, problem(shift=1.0), sampler())
    with pytest.raises(sgmc.CheckpointError, match="different sampler"):
        sgmc.resume(path, problem(), sampler(step_size=1e-3))
    res.save(tmp_path / "result.npz")
    with pytest.raises(sgmc.CheckpointError, match="not an sgmc checkpoint"):
        sgmc.resume(tmp_path / "result.npz", problem(), sampler())
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(sgmc.CheckpointError, match="not a readable"):
        sgmc.resume(tmp_path / "notes.txt", problem(), sampler())
    with pytest.raises(sgmc.CheckpointError, match="no checkpoint"):
        sgmc.resume(tmp_path / "missing.ckpt", problem(), sampler())


def test_storage_arguments_are_checked_before_compiling(tmp_path):
    post, s = problem(), sampler()
    with pytest.raises(ValueError, match="checkpoint_every needs checkpoint"):
        sgmc.sample(post, s, INIT, num_steps=10, checkpoint_every=5)
    with pytest.raises(ValueError, match="checkpoint_every must"):
        sgmc.sample(post, s, INIT, num_steps=10, checkpoint=tmp_path / "c", checkpoint_every=0)
    with pytest.raises(ValueError, match="does not exist"):
        sgmc.sample(post, s, INIT, num_steps=10, checkpoint=tmp_path / "no" / "c")
    with pytest.raises(ValueError, match="is a folder"):
        sgmc.sample(post, s, INIT, num_steps=10, checkpoint=tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(ValueError, match="new or empty folder"):
        sgmc.sample(post, s, INIT, num_steps=10, stream_to=tmp_path / "full")


def test_checkpoints_of_pytree_positions(tmp_path):
    """Dict positions round-trip; namedtuples (their class cannot be restored without
    running code) resume given ``like=`` a template of their structure, and say so
    without it."""
    from collections import namedtuple

    X, y, _ = sgmc.models.synthetic_linear_data(200, 2, seed=1)
    data = {"x": X, "y": y}

    def get(p, k):  # the model reads dict and namedtuple positions alike
        return p[k] if isinstance(p, dict) else getattr(p, k)

    post = sgmc.Posterior(
        lambda p, d: -0.5 * (d["y"] - d["x"] @ get(p, "w") - get(p, "b")) ** 2,
        lambda p: -0.5 * (jnp.sum(get(p, "w") ** 2) + get(p, "b") ** 2), data)
    s = sgmc.sgld(1e-4, batch_size=10)
    init = {"w": jnp.zeros(2), "b": jnp.zeros(())}
    run = dict(num_steps=400, num_chains=2, thin=3, seed=2)
    ref = sgmc.sample(post, s, init, **run)
    path = tmp_path / "c"
    sgmc.sample(post, s, init, **run, checkpoint=path, checkpoint_every=100)
    header, _ = checkpoint.read(f"{path}.prev")  # an intermediate checkpoint
    assert 0 < header["t0"] < run["num_steps"]
    out = sgmc.resume(f"{path}.prev", post, s)
    for k in ("w", "b"):
        np.testing.assert_array_equal(out.samples[k], ref.samples[k])
    Point = namedtuple("Point", "w b")
    point = Point(jnp.zeros(2), jnp.zeros(()))
    ref = sgmc.sample(post, s, point, **run)
    sgmc.sample(post, s, point, **run, checkpoint=tmp_path / "d", checkpoint_every=100)
    with pytest.raises(checkpoint.CheckpointError, match=r"namedtuple.*pass like=init"):
        sgmc.resume(tmp_path / "d.prev", post, s)
    out = sgmc.resume(tmp_path / "d.prev", post, s, like=point)
    assert isinstance(out.samples, Point)
    np.testing.assert_array_equal(out.samples.w, ref.samples.w)


def test_replica_exchange_run_resumes_bitwise(tmp_path):
    """A VR-reSGLD run carries more state (energy anchors, σ̂², swap counters, replica
    labels): an intermediate checkpoint resumes to the uninterrupted run's draws and swaps."""
    data = sgmc.models.synthetic_mixture_data(500, seed=0)
    post = sgmc.models.mixture_posterior(data)
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=20), [25.0, 1000.0],
                               energy=sgmc.cv_energy(period=5), output="all")
    run = dict(num_steps=600, num_chains=2, thin=2, seed=4)
    ref = sgmc.sample(post, rx, jnp.zeros(1), **run)
    path = tmp_path / "rx.ckpt"
    sgmc.sample(post, rx, jnp.zeros(1), **run, checkpoint=path, checkpoint_every=150)
    header, _ = checkpoint.read(f"{path}.prev")
    assert 0 < header["t0"] < run["num_steps"]
    out = sgmc.resume(f"{path}.prev", post, rx)
    assert_same(out, ref)
    assert out.info["swaps"].sum() > 0  # the resumed part includes swaps
