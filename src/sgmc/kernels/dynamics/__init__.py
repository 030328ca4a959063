"""Dynamics: how the state moves given a gradient estimate (the dynamics axis)."""

from sgmc.contracts.integrator import StepParams
from sgmc.kernels.dynamics.langevin import Langevin, LangevinState
from sgmc.kernels.dynamics.nosehoover import NoseHoover, NoseHooverState
from sgmc.kernels.dynamics.psgld import PSGLD, PSGLDState
from sgmc.kernels.dynamics.underdamped import (
           INIT_MOMENTA,
           INTEGRATORS,
           Underdamped,
           UnderdampedState,
)

__all__ = [
           "INIT_MOMENTA",
           "INTEGRATORS",
           "PSGLD",
           "Langevin",
           "LangevinState",
           "NoseHoover",
           "NoseHooverState",
           "PSGLDState",
           "StepParams",
           "Underdamped",
           "UnderdampedState",
]
