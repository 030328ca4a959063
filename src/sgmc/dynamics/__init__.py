"""Dynamics: how the state moves given a gradient estimate (the dynamics axis)."""

from .base import StepParams
from .langevin import Langevin, LangevinState
from .nosehoover import NoseHoover, NoseHooverState
from .psgld import PSGLD, PSGLDState
from .underdamped import INIT_MOMENTA, INTEGRATORS, Underdamped, UnderdampedState

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
