"""The lock of a checkpoint path: one run at a time writes a checkpoint.

A run that writes checkpoints to ``PATH`` holds ``PATH.lock`` for as long as it runs: a
file created with ``O_EXCL`` (so of two processes that start at once exactly one gets it)
holding the owner's process id, host name and run identity as JSON. A second run on the
same path — a second process, a thread, a notebook cell run twice — is refused while the
first one lives, instead of both writing checkpoints whose last writer wins.

A lock whose owner is gone (a run killed by ``kill -9``, a machine that rebooted) is
*stale*: on the same host the owner's pid is asked whether it lives (``os.kill(pid, 0)``)
and a dead owner's lock is taken over. A lock written on another host cannot be checked
from here (a shared file system): it is refused with the owner named, and the message says
to delete the file if that run is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator

from sgmc.io.checkpoint import occupant

__all__ = ["LockedError", "RunLock", "claim", "lock_path"]

#: A lock file that cannot be parsed (its owner is writing it this instant) counts as held
#: for this long after its last change, then as stale.
UNREADABLE_GRACE = 60.0


class LockedError(ValueError):
    """The checkpoint path is in use by another live run (the message names it)."""


def lock_path(path: str) -> str:
    return f"{path}.lock"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
    except OSError:
        return True  # cannot tell: assume it lives
    return True


class RunLock:
    """``PATH.lock``, held by this run from :meth:`acquire` to :meth:`release` (or the end
    of a ``with`` block)."""

    def __init__(self, path: str, run: str = "") -> None:
        self.path = lock_path(os.fspath(path))
        self.checkpoint = os.fspath(path)
        self.token = {"pid": os.getpid(), "host": socket.gethostname(), "run": run,
                      "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                      "id": uuid.uuid4().hex}
        self.held = False

    def acquire(self) -> RunLock:
        """Take the lock, taking over a stale one (its owner is dead, on this host).

        Raises:
            LockedError: another live run holds it, or one on another host (whose life
                cannot be checked from here).
        """
        for _ in range(3):  # a stale lock removed by us (or by another) is retried
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                owner = self._owner()
                if owner is not None and not self._stale(owner):
                    raise LockedError(self._refusal(owner)) from None
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.path)
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(self.token, fh)
                fh.flush()
                os.fsync(fh.fileno())
            self.held = True
            return self
        raise LockedError(f"checkpoint={self.checkpoint!r}: could not take its lock "
                          f"{self.path} (other runs keep taking it)")

    def _owner(self) -> dict | None:
        """The lock's content; {} while unreadable but fresh; None if it vanished or is
        unreadable and old (stale)."""
        try:
            with open(self.path) as fh:
                owner = json.load(fh)
            if not isinstance(owner, dict):
                raise ValueError
            return owner
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            try:
                age = time.time() - os.path.getmtime(self.path)
            except OSError:
                return None
            return {} if age < UNREADABLE_GRACE else None

    def _stale(self, owner: dict) -> bool:
        if not owner:
            return False  # being written right now
        if owner.get("host") != self.token["host"]:
            return False  # cannot be checked from here
        try:
            pid = int(owner.get("pid"))
        except (TypeError, ValueError):
            return True
        return not _alive(pid)

    def _refusal(self, owner: dict) -> str:
        if not owner:
            return (f"checkpoint={self.checkpoint!r} is being claimed by another run right "
                    f"now ({self.path}); wait, or choose another path")
        where = f"process {owner.get('pid')} on host {owner.get('host')!r}"
        since = f", started {owner['started']}" if owner.get("started") else ""
        other = owner.get("host") != self.token["host"]
        gone = (f"; it runs on another host, so its life cannot be checked from here: if "
                f"that run has ended, delete {self.path}" if other else
                f"; if that process is not an sgmc run, delete {self.path}")
        return (f"checkpoint={self.checkpoint!r} is in use by another run ({where}{since}): "
                f"two runs writing one checkpoint path would overwrite each other's "
                f"checkpoints and draws. Wait for it to end, or choose another path{gone}")

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        if not self.held:
            return
        self.held = False
        try:
            with open(self.path) as fh:
                mine = json.load(fh).get("id") == self.token["id"]
        except (OSError, ValueError, AttributeError):
            mine = False
        if mine:
            with contextlib.suppress(OSError):
                os.remove(self.path)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextlib.contextmanager
def claim(checkpoint: str | None, overwrite: bool = False, run: str = "",
          resuming: bool = False) -> Iterator[None]:
    """Hold the checkpoint path for the run in the ``with`` block: its lock
    (:class:`sgmc.io.lock.RunLock`: refused while another live run holds it) and, for a new
    run (not ``resuming``), the path itself: a checkpoint of another run there (``PATH``,
    ``PATH.prev``, draws in ``PATH.draws``) is refused unless ``overwrite``, which removes
    its checkpoints (``PATH.draws`` is rewritten by this run, unless it streams elsewhere;
    it stays bound to the old run, whose checkpoints are gone).

    Raises:
        ValueError: the path is in use, or holds another run and ``overwrite`` is False.
    """
    if checkpoint is None:
        yield
        return
    with RunLock(checkpoint, run):
        if not resuming:
            found, about = occupant(checkpoint)
            if found and not overwrite:
                raise ValueError(
                    f"checkpoint={checkpoint!r} holds another run "
                    f"({about or 'no readable checkpoint'}; "
                    f"{', '.join(found)}): a new run there would destroy its draws. Continue "
                    f"it with sgmc.resume({checkpoint!r}, problem, sampler), pass "
                    "overwrite=True to replace it, or choose another path")
            for path in (checkpoint, f"{checkpoint}.prev"):
                if overwrite and path in found:
                    os.remove(path)  # (its draws folder is rewritten as this run starts)
        yield
