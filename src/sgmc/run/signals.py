"""Host-side helpers of the run loop (:mod:`sgmc.run.host`): deferred Ctrl-C, the progress
bar's default, ``predict`` as a static argument of the compiled programs."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading

__all__ = ["ByIdentity", "DeferredInterrupt", "want_progress"]


class DeferredInterrupt:
    """While installed, a Ctrl-C (SIGINT) sets :attr:`pending` instead of raising, so the
    loop stops after storing the block in flight; a second Ctrl-C while one is pending
    raises KeyboardInterrupt at once. Installed only in the main thread and only over
    Python's default handler (a handler of the user's, or SIG_IGN, is left alone)."""

    def __init__(self) -> None:
        self.pending = False
        self._previous = None

    def _handle(self, signum, frame) -> None:
        if self.pending:
            raise KeyboardInterrupt
        self.pending = True

    def install(self) -> None:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handle)

    def restore(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


class ByIdentity:
    """``predict`` as a static argument of the compiled programs: hashed by identity, so
    that any callable passes (an Equinox module or a partial holding arrays is not
    hashable by value)."""

    __slots__ = ("fn",)

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, draw):
        return self.fn(draw)

    # Equal wrappers of one function are one static argument: a second run with the same
    # ``predict`` reuses the compiled programs instead of compiling them again.
    def __eq__(self, other) -> bool:
        return isinstance(other, ByIdentity) and other.fn is self.fn

    def __hash__(self) -> int:
        return id(self.fn)


def want_progress(progress: bool | None) -> bool:
    if progress is not None:
        return bool(progress)
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return False
    return importlib.util.find_spec("tqdm") is not None  # an optional dependency
