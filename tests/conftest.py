import os
import sys
import warnings

# Tests run on the CPU with the default single device unless a test module says otherwise.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(__file__))  # for the shared reference helpers
warnings.filterwarnings("ignore", message="ArviZ is undergoing a major refactor")


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module. One process runs the whole
    suite, and every XLA:CPU executable keeps its JIT-compiled code mapped; a few thousand
    of them approach the kernel's limit on memory maps (vm.max_map_count, 65,530 here), and
    a compile late in the suite once crashed (SIGSEGV inside XLA). Modules share few programs,
    so little is recompiled."""
    yield
    import jax

    jax.clear_caches()
