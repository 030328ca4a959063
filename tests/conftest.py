import os
import sys
import warnings

# Tests run on the CPU with the default single device unless a test module says otherwise.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(__file__))  # for the shared reference helpers
warnings.filterwarnings("ignore", message="ArviZ is undergoing a major refactor")
