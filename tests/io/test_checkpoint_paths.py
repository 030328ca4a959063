"""A checkpoint path belongs to one run (issue 33, items 1, 2 and 8).

* A second run on a path that holds a checkpoint is refused unless ``overwrite=True``; a
  checkpoint resumes only with its own run's draws (a run identity in both), so a copy of
  an older checkpoint cannot resume into a later run's draws.
* ``resume`` refuses a ``predict`` of the same shape with another body (its value at the
  checkpointed draw is stored).
* ``PATH.lock`` keeps a second live run off the path; a dead owner's lock is taken over.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from test_checkpoint import interrupt_after

import sgmc
from sgmc.io import sinks

X, Y, _ = sgmc.models.synthetic_linear_data(200, 3, seed=0)
POST = sgmc.models.linear_regression(X, Y)
SAMPLER = sgmc.sgld(1e-3, batch_size=20)
INIT = jnp.zeros(3)
RUN = dict(num_steps=2000, num_chains=2, thin=5, checkpoint_every=400)


def _sample(path, seed, **kw):
    return sgmc.sample(POST, SAMPLER, INIT, seed=seed, checkpoint=path, **RUN, **kw)


def test_a_second_run_on_a_path_is_refused_and_overwrite_binds_the_draws(tmp_path):
    """The issue's probe: run 1, a copy of its PATH.prev, run 2 on the same path, resume
    the copy. Run 2 is refused without overwrite (run 1's files untouched); with it, the
    copy no longer resumes into run 2's draws."""
    path = tmp_path / "run.ckpt"
    first = _sample(path, 1)
    shutil.copy(f"{path}.prev", tmp_path / "old.ckpt")
    before = {p: os.path.getmtime(p) for p in (path, f"{path}.prev")}
    with pytest.raises(ValueError, match=r"holds another run \(seed 1, 2,000 of 2,000 steps "
                                         r"done.*sgmc.resume.*overwrite=True"):
        _sample(path, 2)
    assert before == {p: os.path.getmtime(p) for p in before}  # nothing was touched
    again = sgmc.resume(tmp_path / "old.ckpt", POST, SAMPLER)  # run 1's draws are intact
    np.testing.assert_array_equal(again.samples, first.samples)

    second = _sample(path, 2, overwrite=True)
    assert not np.array_equal(second.samples, first.samples)
    assert len({first.meta["run_id"], second.meta["run_id"]}) == 2  # two runs, two identities
    with pytest.raises(sgmc.CheckpointError, match=r"holds the draws of another run"):
        sgmc.resume(tmp_path / "old.ckpt", POST, SAMPLER)
    # The path's own checkpoint still resumes (finished: its result at once).
    np.testing.assert_array_equal(sgmc.resume(path, POST, SAMPLER).samples, second.samples)
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        _sample(path, 2, overwrite="yes")


def test_a_stream_folder_is_bound_to_its_run(tmp_path):
    """With ``stream_to``, the draws folder carries the run identity too: a checkpoint whose
    stream folder was replaced by another run's is refused."""
    path, folder = tmp_path / "s.ckpt", tmp_path / "draws"
    _sample(path, 1, stream_to=folder)
    shutil.copy(path, tmp_path / "keep.ckpt")
    shutil.rmtree(folder)
    _sample(path, 2, stream_to=folder, overwrite=True)
    with pytest.raises(sgmc.CheckpointError, match=r"holds the draws of another run"):
        sgmc.resume(tmp_path / "keep.ckpt", POST, SAMPLER)


def test_resume_refuses_another_predict_of_the_same_shape(tmp_path, monkeypatch):
    path = tmp_path / "p.ckpt"

    def predict(theta):
        return X[:4] @ theta

    monkeypatch.setattr(sinks.MemorySink, "append", interrupt_after(3, sinks.MemorySink.append))
    with pytest.raises(sgmc.Interrupted):
        _sample(path, 1, predict=predict)
    monkeypatch.undo()
    with pytest.raises(sgmc.CheckpointError, match=r"another predict.*stored \[.*found \["):
        sgmc.resume(path, POST, SAMPLER, predict=lambda theta: 1.0 + X[:4] @ theta)
    ref = sgmc.sample(POST, SAMPLER, INIT, seed=1, predict=predict, num_steps=2000,
                      num_chains=2, thin=5)
    out = sgmc.resume(path, POST, SAMPLER, predict=predict)
    np.testing.assert_array_equal(out.predictive["mean"], ref.predictive["mean"])


def _write_lock(path, **owner):
    with open(f"{path}.lock", "w") as fh:
        json.dump(owner, fh)


def test_a_live_owner_keeps_the_path(tmp_path):
    """Another live process holds the lock (here: this test's parent, alive on this host;
    or a process on another host, which cannot be checked): refused before compiling, the
    owner named; the lock is left alone."""
    path = tmp_path / "busy.ckpt"
    _write_lock(path, pid=os.getppid(), host=socket.gethostname(), started="now")
    with pytest.raises(ValueError, match=rf"in use by another run \(process {os.getppid()} "
                                         r"on host .*Wait for it to end"):
        _sample(path, 1)
    with pytest.raises(ValueError, match="in use by another run"):
        _sample(path, 1, overwrite=True)  # overwrite does not take a live run's path
    _write_lock(path, pid=1, host="elsewhere.example")
    with pytest.raises(ValueError, match=r"another host.*delete .*busy.ckpt.lock"):
        _sample(path, 1)
    assert os.path.exists(f"{path}.lock") and not os.path.exists(path)


def test_a_dead_owner_lock_is_taken_over_and_the_lock_is_held_while_running(tmp_path,
                                                                             monkeypatch):
    path = tmp_path / "stale.ckpt"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_lock(path, pid=dead.pid, host=socket.gethostname())
    seen = []
    append = sinks.MemorySink.append

    def watch(sink, *args):
        with open(f"{path}.lock") as fh:
            seen.append(json.load(fh)["pid"])
        append(sink, *args)

    monkeypatch.setattr(sinks.MemorySink, "append", watch)
    _sample(path, 1)
    assert seen and set(seen) == {os.getpid()}  # held by this run while it ran
    assert not os.path.exists(f"{path}.lock")  # and released at its end
    # Released after an interrupted run too, and taken again by its resume.
    monkeypatch.setattr(sinks.MemorySink, "append", interrupt_after(2, append))
    with pytest.raises(sgmc.Interrupted) as stop:
        _sample(tmp_path / "int.ckpt", 1)
    monkeypatch.undo()
    assert not os.path.exists(tmp_path / "int.ckpt.lock")
    _write_lock(tmp_path / "int.ckpt", pid=os.getppid(), host=socket.gethostname())
    with pytest.raises(ValueError, match="in use by another run"):
        sgmc.resume(stop.value.checkpoint, POST, SAMPLER)
