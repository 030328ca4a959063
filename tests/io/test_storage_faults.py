"""Storage faults (issue 18, items 1, 2, 3, 5, 6 and Ctrl-C): nothing sampled is lost.

* A failed write — a full disk while streaming draws or writing a checkpoint — raises
  ``sgmc.StorageError`` carrying every draw kept so far and naming the last complete
  checkpoint; streamed files are written with ordinary writes into reserved space, never
  through a memory map (a full disk then killed the process with SIGBUS).
* Folders that cannot be written are refused before anything is compiled.
* Checkpoints hold the state, not the draws: those go to a stream folder block by block,
  checksummed, so a checkpoint costs O(state + new draws); tampered, missing or misshapen
  draws are refused by ``resume`` with a ``CheckpointError`` naming the file.
* After a divergence the stream folder counts what the error holds.
* A Ctrl-C keeps the block in flight (a second one stops at once).

A disk that fills and a read-only folder are real (a 1 MiB tmpfs) when the tests run as
root, else skipped; each failure is also simulated by making the writer fail, which any CI
runs.
"""

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.io import checkpoint
from sgmc.io import sinks as _sinks
from sgmc.run import host as run_mod
from sgmc.run import programs as programs_mod

DATA = np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(20, 2)
# Blocks of 10 draws of one step: block k ends at step 10 (k + 1). Three chains: an init of
# shape (2,) is then unambiguously one point.
RUN = dict(num_steps=200, num_chains=3, seed=3, draws_per_block=10)
INIT = jnp.zeros(2)


def _loglik(theta, x):
    return -0.5 * jnp.sum((x - theta) ** 2)


def _logprior(theta):
    return -0.5 * jnp.sum(theta ** 2)


def _problem():
    return sgmc.Posterior(_loglik, _logprior, DATA)


def _sampler():
    return sgmc.sgld(1e-3, batch_size=5)


@pytest.fixture(scope="module")
def full():
    """The uninterrupted run every partial or resumed run is compared with."""
    return sgmc.sample(_problem(), _sampler(), INIT, **RUN)


def _same(a, b, n=None):
    n = b.num_draws if n is None else n
    assert a.num_draws == n
    np.testing.assert_array_equal(np.asarray(a.samples), np.asarray(b.samples)[:, :n])
    for k in b.info:
        np.testing.assert_array_equal(np.asarray(a.info[k]), np.asarray(b.info[k])[..., :n],
                                      err_msg=k)


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _mount(folder: Path, *options: str) -> None:
    """Mount a 1 MiB tmpfs on ``folder`` (skip the test where that is not possible)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs (a small or read-only disk) needs root")
    folder.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=1m", *options)),
                           "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB file system (unmounted after the test)."""
    folder = tmp_path / "tiny"
    _mount(folder)
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def read_only(tmp_path):
    """A read-only file system (unmounted after the test)."""
    folder = tmp_path / "ro"
    _mount(folder, "ro")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


# -- item 1: a full disk while streaming draws ----------------------------------------------

FILL_SCRIPT = """
import json, os, sys, errno
import jax.numpy as jnp, numpy as np, sgmc
folder, mode = sys.argv[1], sys.argv[2]
if mode == "sparse":  # a file system that cannot reserve space: the disk fills mid-run
    def no_reserve(*args):
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
    os.posix_fallocate = no_reserve
X, y, _ = sgmc.models.synthetic_linear_data(100, 10, seed=0)
post, s = sgmc.models.linear_regression(X, y), sgmc.sgld(1e-4, batch_size=10)
# 2 chains x 20,000 draws x 10 float32 (1.6 MB) + statistics: more than the 1 MiB disk.
run = dict(num_steps=20_000, num_chains=2, seed=1, draws_per_block=1_000)
try:
    sgmc.sample(post, s, jnp.zeros(10), **run, stream_to=os.path.join(folder, "draws"))
    out = {"error": None}
except sgmc.StorageError as err:
    ref = sgmc.sample(post, s, jnp.zeros(10), **run)
    n = err.result.num_draws
    out = {"error": "StorageError", "step": err.step, "draws": n, "errno": err.errno,
           "message": str(err), "cause": type(err.__cause__).__name__,
           "same": bool(np.array_equal(np.asarray(err.result.samples), ref.samples[:, :n]))}
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode", ["reserved", "sparse"])
def test_full_disk_while_streaming_is_a_storage_error(tiny_disk, mode):
    """On a real 1 MiB disk (in a subprocess: the old code died of SIGBUS there). With the
    space reserved up front the error comes before any sampling; where it cannot be
    reserved, from the write that meets the full disk, with every draw before it kept."""
    done = subprocess.run([sys.executable, "-c", FILL_SCRIPT, str(tiny_disk), mode],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["error"] == "StorageError", out
    assert out["errno"] == errno.ENOSPC and out["cause"] == "OSError"
    assert "No space left on device" in out["message"] and "draws" in out["message"]
    if mode == "reserved":
        assert out["step"] == 0 and out["draws"] == 0
        assert not (tiny_disk / "draws").exists()  # no half-made stream left behind
    else:
        assert 0 < out["draws"] < 20_000 and out["step"] == out["draws"]
        assert out["same"]


def test_write_failing_mid_stream_keeps_the_draws_before(full, tmp_path, monkeypatch):
    """os.pwrite fails (ENOSPC) from the third block on: the error carries the two blocks
    written before, which the folder also holds and counts."""
    folder = tmp_path / "draws"
    append, calls = _sinks.DiskSink.append, []

    def failing_from_third(sink, *args):
        calls.append(1)
        if len(calls) == 3:
            monkeypatch.setattr(os, "pwrite", _enospc)
        return append(sink, *args)

    monkeypatch.setattr(_sinks.DiskSink, "append", failing_from_third)
    with pytest.raises(sgmc.StorageError) as info:
        sgmc.sample(_problem(), _sampler(), INIT, **RUN, stream_to=folder)
    monkeypatch.undo()
    err = info.value
    assert isinstance(err, OSError) and err.errno == errno.ENOSPC
    assert isinstance(err.__cause__, OSError) and err.checkpoint is None
    assert err.step == 20 and err.path.endswith("samples_0.npy")
    assert "samples_0.npy" in str(err) and "No space left on device" in str(err)
    assert "no checkpoint was written" in str(err)
    _same(err.result, full, 20)
    _same(sgmc.Result.load(folder), full, 20)


@pytest.mark.parametrize("where", ["stream_to", "checkpoint"])
def test_no_space_to_reserve_is_reported_before_sampling(tmp_path, monkeypatch, where):
    """The draws' files (``stream_to``, or the checkpoints' ``PATH.draws``) reserve their
    space before the first block runs."""
    path = tmp_path / ("draws" if where == "stream_to" else "run.ckpt")
    folder = path if where == "stream_to" else Path(f"{path}.draws")
    monkeypatch.setattr(os, "posix_fallocate", _enospc, raising=False)
    monkeypatch.setattr(run_mod, "host_block", _refuse_block(run_mod.host_block))
    with pytest.raises(sgmc.StorageError, match="No space left on device") as info:
        sgmc.sample(_problem(), _sampler(), INIT, **RUN, **{where: path})
    err = info.value
    assert err.step == 0 and err.result.num_draws == 0 and err.checkpoint is None
    assert err.path.startswith(str(folder))
    assert not folder.exists()  # left as it was: the run can be started again there


def _refuse_block(host_block):
    """A host_block that fails if a block was sampled (the empty template passes)."""
    def guarded(buf, drop, n_draws):
        assert n_draws == 0, "a block was sampled"
        return host_block(buf, drop, n_draws)
    return guarded


# -- item 2: checkpoint folders and checkpoint writes ----------------------------------------

class _NoCompile:
    def lower(self, *args, **kwargs):
        raise AssertionError("compiled before the storage arguments were checked")


@pytest.mark.parametrize("argument", ["checkpoint", "stream_to"])
def test_read_only_folder_is_refused_before_compiling(read_only, monkeypatch, argument):
    monkeypatch.setattr(programs_mod, "run_block", _NoCompile())
    monkeypatch.setattr(programs_mod, "run_steps", _NoCompile())
    target = read_only / ("run.ckpt" if argument == "checkpoint" else "draws")
    with pytest.raises(ValueError, match=rf"{argument}=.*cannot write in the folder "
                                         r".*Read-only file system"):
        sgmc.sample(_problem(), _sampler(), INIT, **RUN, **{argument: target})


def _refuse_files_in(folder: Path, monkeypatch) -> None:
    """Creating a file in ``folder`` fails, as in a folder without write permission."""
    import tempfile

    mkstemp = tempfile.mkstemp

    def refusing(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == folder:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
        return mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refusing)
    monkeypatch.setattr(programs_mod, "run_block", _NoCompile())
    monkeypatch.setattr(programs_mod, "run_steps", _NoCompile())


def test_unwritable_checkpoint_folder_is_refused_before_compiling(tmp_path, monkeypatch):
    """The same without root: creating a file in the folder fails."""
    _refuse_files_in(tmp_path, monkeypatch)
    with pytest.raises(ValueError, match=r"checkpoint=.*cannot write.*Permission denied"):
        sgmc.sample(_problem(), _sampler(), INIT, **RUN, checkpoint=tmp_path / "run.ckpt")


def test_resume_into_an_unwritable_folder_is_refused_before_compiling(tmp_path, monkeypatch):
    path, _ = _interrupted(tmp_path, monkeypatch, stream=False)
    _refuse_files_in(tmp_path, monkeypatch)
    with pytest.raises(ValueError, match=r"path=.*cannot write.*Permission denied"):
        sgmc.resume(path, _problem(), _sampler())


def test_failed_checkpoint_write_keeps_every_draw(full, tmp_path, monkeypatch):
    """The third checkpoint's write fails: the error carries every draw (not only those of
    the last good checkpoint), names that checkpoint, leaves no temporary file, and the
    run resumes from it to the uninterrupted run's draws."""
    path = tmp_path / "run.ckpt"
    savez, calls = np.savez, []

    def failing_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            _enospc()
        return savez(*args, **kwargs)

    monkeypatch.setattr(np, "savez", failing_third)
    with pytest.raises(sgmc.StorageError) as info:
        sgmc.sample(_problem(), _sampler(), INIT, **RUN, checkpoint=path, checkpoint_every=40)
    monkeypatch.undo()
    err = info.value
    assert err.step == 120 and err.checkpoint == str(path)  # checkpoints at 40, 80, (120)
    assert err.path == str(path) and f"writing {path} failed: No space left" in str(err)
    assert f"sgmc.resume({str(path)!r}" in str(err)
    _same(err.result, full, 120)
    assert checkpoint.read(path)[0]["t0"] == 80
    assert not list(tmp_path.glob("*.tmp"))
    _same(sgmc.resume(err.checkpoint, _problem(), _sampler()), full)


def test_two_writers_on_one_path_do_not_collide(tmp_path, monkeypatch):
    """A second process writes the same checkpoint path while the first is writing: each
    has its own temporary file (before, both used PATH.tmp and the first crashed)."""
    path = str(tmp_path / "run.ckpt")
    savez, replaced, nested = np.savez, [], []

    def racing(fh, **arrays):
        if not nested:  # while the first write is under way, the second one runs
            nested.append(1)
            checkpoint.write(path, {"writer": 2}, {"x": np.arange(3)})
        return savez(fh, **arrays)

    replace = os.replace
    monkeypatch.setattr(np, "savez", racing)
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append(a), replace(a, b)))
    checkpoint.write(path, {"writer": 1}, {"x": np.arange(5)})
    monkeypatch.undo()
    temps = [a for a in replaced if a.endswith(".tmp")]
    assert len(temps) == 2 and temps[0] != temps[1]
    assert all(Path(t).name.startswith("run.ckpt.") for t in temps)
    assert checkpoint.read(path)[0]["writer"] == 1
    assert checkpoint.read(f"{path}.prev")[0]["writer"] == 2
    assert not list(tmp_path.glob("*.tmp"))


# -- item 3: a checkpoint costs the state and the new draws ----------------------------------

def test_checkpoint_size_does_not_grow_with_the_draws(tmp_path):
    """Many draws (3 chains x 20,000 x 2 float32 + statistics: ~1.2 MB): the checkpoint
    holds the state only, the same size at every checkpoint; the draws are appended to
    PATH.draws, each block once."""
    path = tmp_path / "run.ckpt"
    run = dict(RUN, num_steps=20_000, draws_per_block=2_000)
    res = sgmc.sample(_problem(), _sampler(), INIT, **run, checkpoint=path,
                      checkpoint_every=4_000)
    prev = Path(f"{path}.prev")
    assert checkpoint.read(prev)[0]["kept"] == 16_000 and checkpoint.read(path)[0]["kept"]
    sizes = path.stat().st_size, prev.stat().st_size
    assert max(sizes) < 20_000 and abs(sizes[0] - sizes[1]) < 500, sizes
    draws = Path(f"{path}.draws")
    lines = [json.loads(x) for x in (draws / "checksums.jsonl").read_text().splitlines()]
    assert [(x["start"], x["stop"]) for x in lines] == [(a, a + 4_000)
                                                        for a in range(0, 20_000, 4_000)]
    _same(sgmc.Result.load(draws), res)
    _same(sgmc.resume(prev, _problem(), _sampler()), res)  # bitwise, from PATH.draws


def test_draws_in_memory_are_views_of_one_buffer(monkeypatch):
    """A run's draws are written into arrays allocated once; the Result gets views of them
    (no concatenated copy: memory peaks at the draws' size, not twice it)."""
    sinks, init = [], _sinks.MemorySink.__init__

    def spying(self, *args, **kwargs):
        init(self, *args, **kwargs)
        sinks.append(self)

    monkeypatch.setattr(_sinks.MemorySink, "__init__", spying)
    res = sgmc.sample(_problem(), _sampler(), INIT, **RUN)
    (sink,) = sinks
    assert np.shares_memory(res.samples, sink._arrays["samples_0"])
    assert np.shares_memory(res.info["grad_evals"], sink._arrays["info_grad_evals"])
    assert np.shares_memory(res.info["step"], sink._arrays["step"])


# -- item 5: the draws a checkpoint refers to are verified ------------------------------------

def _interrupted(tmp_path, monkeypatch, stream: bool):
    """(checkpoint, draws folder) of a run stopped by Ctrl-C after 5 blocks."""
    path, folder = tmp_path / "run.ckpt", tmp_path / "draws"
    host_block, calls = run_mod.host_block, []

    def ctrl_c_at_fifth(buf, drop, n_draws):
        calls.append(n_draws)
        if calls.count(10) == 5:
            os.kill(os.getpid(), signal.SIGINT)
        return host_block(buf, drop, n_draws)

    with monkeypatch.context() as m:
        m.setattr(run_mod, "host_block", ctrl_c_at_fifth)
        with pytest.raises(sgmc.Interrupted):
            sgmc.sample(_problem(), _sampler(), INIT, **RUN, checkpoint=path,
                        stream_to=folder if stream else None)
    return path, (folder if stream else Path(f"{path}.draws"))


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "stream"])
def test_altered_draws_are_refused_naming_the_file(full, tmp_path, monkeypatch, stream):
    path, folder = _interrupted(tmp_path, monkeypatch, stream)
    counted = checkpoint.read(path)[0]["kept"]
    file = folder / "samples_0.npy"
    kept = file.read_bytes()
    data = np.load(file, mmap_mode="r+")
    data[1, counted - 1, 0] += 1  # a draw the checkpoint counts
    data.flush()
    del data
    with pytest.raises(sgmc.CheckpointError, match=r"samples_0\.npy was altered"):
        sgmc.resume(path, _problem(), _sampler())
    file.write_bytes(kept)
    _same(sgmc.resume(path, _problem(), _sampler()), full)


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "stream"])
def test_missing_or_misshapen_draws_are_refused_naming_them(tmp_path, monkeypatch, stream):
    path, folder = _interrupted(tmp_path, monkeypatch, stream)
    info = folder / "info_grad_evals.npy"
    kept = info.read_bytes()
    np.save(info, np.zeros((3, 2), np.int64))
    with pytest.raises(sgmc.CheckpointError, match=r"info_grad_evals\.npy holds an array "
                                                   r"of shape \(3, 2\)"):
        sgmc.resume(path, _problem(), _sampler())
    with pytest.raises(ValueError, match=r"info_grad_evals\.npy holds"):
        sgmc.Result.load(folder)
    info.unlink()
    with pytest.raises(sgmc.CheckpointError, match=r"info_grad_evals\.npy is missing"):
        sgmc.resume(path, _problem(), _sampler())
    info.write_bytes(kept)
    (folder / "checksums.jsonl").unlink()
    with pytest.raises(sgmc.CheckpointError, match=r"no checksums"):
        sgmc.resume(path, _problem(), _sampler())
    folder.rename(tmp_path / "elsewhere")
    with pytest.raises(sgmc.CheckpointError, match=rf"stream folder {folder} does not exist"):
        sgmc.resume(path, _problem(), _sampler())


# -- item 6: after a divergence, the stream holds what the error holds ------------------------

def test_divergence_with_a_stream_counts_only_the_finite_draws(tmp_path):
    X, y, _ = sgmc.models.synthetic_linear_data(500, 2, correlation=0.5, seed=3)
    post = sgmc.models.linear_regression(X, y)
    jump = sgmc.schedules.from_function(lambda t: jnp.where(t < 300, 2e-4, 1.0))
    folder = tmp_path / "draws"
    with pytest.raises(sgmc.DivergenceError) as info:
        sgmc.sample(post, sgmc.sgld(jump, batch_size=20), jnp.zeros(2), num_steps=1000,
                    num_chains=3, thin=2, seed=9, draws_per_block=100, stream_to=folder)
    err = info.value
    assert 300 < err.step < 400 and err.result.num_draws < 200  # mid-block
    loaded = sgmc.Result.load(folder)
    assert loaded.num_draws == err.result.num_draws
    assert np.isfinite(loaded.samples).all()
    np.testing.assert_array_equal(loaded.samples, err.result.samples)


# -- Ctrl-C: the block in flight is kept ------------------------------------------------------

def _ctrl_c_during(block: int, times: int = 1):
    """A host_block that delivers ``times`` SIGINTs as block ``block`` (1-based) returns:
    as a Ctrl-C pressed while that block's compiled call ran, which Python handles once
    the call returns."""
    host_block, seen = run_mod.host_block, []

    def signalling(buf, drop, n_draws):
        if n_draws:
            seen.append(1)
            if len(seen) == block:
                for _ in range(times):
                    os.kill(os.getpid(), signal.SIGINT)
        return host_block(buf, drop, n_draws)

    return signalling


def test_ctrl_c_keeps_the_block_in_flight(full, tmp_path, monkeypatch):
    path = tmp_path / "run.ckpt"
    monkeypatch.setattr(run_mod, "host_block", _ctrl_c_during(3))
    with pytest.raises(sgmc.Interrupted) as info:
        sgmc.sample(_problem(), _sampler(), INIT, **RUN, checkpoint=path)
    monkeypatch.undo()
    err = info.value
    assert err.step == 30 and err.checkpoint == str(path)  # the end of block 3
    _same(err.result, full, 30)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    _same(sgmc.resume(path, _problem(), _sampler()), full)


def test_a_second_ctrl_c_stops_at_once(full, monkeypatch):
    monkeypatch.setattr(run_mod, "host_block", _ctrl_c_during(3, times=2))
    with pytest.raises(sgmc.Interrupted) as info:
        sgmc.sample(_problem(), _sampler(), INIT, **RUN)
    assert info.value.step == 20  # block 3 was not stored: the draws before it are kept
    _same(info.value.result, full, 20)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
