import os
import shutil
import sys
import tempfile
import warnings

# Tests run on the CPU with the default single device unless a test module says otherwise.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# One XLA compilation cache on disk for the session: its processes (the xdist workers, which
# inherit this environment, and the subprocesses some tests start) compile the same block
# programs again and again — the fixture below drops the in-memory ones after every module —
# and most tests spend more time compiling than sampling. A fresh folder per session, removed
# at its end (pytest_unconfigure); a JAX_COMPILATION_CACHE_DIR already set is used as it is.
_MADE_CACHE = "JAX_COMPILATION_CACHE_DIR" not in os.environ  # (False in the workers)
if _MADE_CACHE:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="sgmc-tests-xla-")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
HERE = os.path.dirname(os.path.abspath(__file__))
# The shared reference helpers (tests/*.py) and the test folders (tests/<package>/, mirroring
# src/sgmc), whose modules a few tests import helpers from (test_checkpoint.interrupt_after).
FOLDERS = sorted(os.path.join(HERE, d) for d in os.listdir(HERE)
                 if os.path.isdir(os.path.join(HERE, d)) and not d.startswith(("_", ".")))
sys.path[:0] = [HERE, *FOLDERS]
warnings.filterwarnings("ignore", message="ArviZ is undergoing a major refactor")


import pytest  # noqa: E402

#: FILE::TEST ids of the slow tier listed in slow.txt (see its header).
SLOW = frozenset(line.rsplit(None, 1)[0] for line in open(os.path.join(HERE, "slow.txt"))
                 if line.strip() and not line.startswith("#"))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark the tests slow.txt lists as slow (ids by file name, so a test keeps its tier
    when its file moves between folders)."""
    for item in items:
        if f"{item.path.name}::{item.nodeid.split('::', 1)[1]}" in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module. One process runs the whole
    suite, and every XLA:CPU executable keeps its JIT-compiled code mapped; a few thousand
    of them approach the kernel's limit on memory maps (vm.max_map_count, 65,530 here), and
    a compile late in the suite once crashed (SIGSEGV inside XLA). Modules share few programs,
    so little is recompiled. sgmc's own cache holds the block programs it compiled (and with
    them their executables): cleared too."""
    yield
    import jax

    from sgmc.run import cache

    jax.clear_caches()
    cache.clear()


def pytest_unconfigure(config):
    """Remove the session's compilation cache (in the process that made it)."""
    if _MADE_CACHE:
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
