"""Couplings: how several replicas of a sampler interact (the coupling axis).

:func:`replica_exchange` stacks K replicas of any sampler at a temperature ladder and swaps
adjacent pairs with the bias-corrected Metropolis rule of reSGLD / VR-reSGLD; the swap test's
energies come from :func:`minibatch_energy`, :func:`cv_energy` or :func:`exact_energy`.
With ``rule=greedy_rule(...)`` the same coupling is the GD×LD / SGD×SGLD optimiser.
"""

from .energy import (
           CVEnergy,
           ExactEnergy,
           MinibatchEnergy,
           cv_energy,
           exact_energy,
           minibatch_energy,
)
from .replica import (
           GreedyRule,
           ReplicaExchange,
           ReplicaState,
           geometric_ladder,
           greedy_rule,
           log_swap_ratio,
           replica_exchange,
           round_trips,
)
from .rules import ExchangeRule

__all__ = ["CVEnergy", "ExactEnergy", "ExchangeRule", "GreedyRule", "MinibatchEnergy",
           "ReplicaExchange", "ReplicaState", "cv_energy", "exact_energy", "geometric_ladder",
           "greedy_rule", "log_swap_ratio", "minibatch_energy", "replica_exchange",
           "round_trips"]
