import os
import sys
import warnings

# Tests run on the CPU with the default single device unless a test module says otherwise.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
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
