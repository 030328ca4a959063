"""Couplings: how several replicas of a sampler interact (the coupling axis).

:func:`replica_exchange` stacks K replicas of any sampler at a temperature ladder and, after
every dynamics step, lets an exchange rule (:class:`ExchangeRule`,
:mod:`sgmc.kernels.coupling.rules`)
permute their positions. The default rule, :func:`metropolis_rule`, is the bias-corrected
Metropolis swap of reSGLD / VR-reSGLD, whose energies come from :func:`minibatch_energy`,
:func:`cv_energy` or :func:`exact_energy`. With ``rule=greedy_rule(...)`` the same coupling is
the GD×LD / SGD×SGLD optimiser.
"""

from sgmc.contracts.replica import ReplicaBase
from sgmc.kernels.coupling.energy import (
           CVEnergy,
           ExactEnergy,
           MinibatchEnergy,
           cv_energy,
           exact_energy,
           minibatch_energy,
)
from sgmc.kernels.coupling.ladder import geometric_ladder, replica_exchange, round_trips
from sgmc.kernels.coupling.replica import ReplicaExchange, ReplicaState
from sgmc.kernels.coupling.rules import (
           Exchange,
           ExchangeContext,
           ExchangeRule,
           GreedyRule,
           MetropolisRule,
           Rule,
           greedy_rule,
           log_swap_ratio,
           metropolis_rule,
           pair_permutation,
)

__all__ = ["CVEnergy", "ExactEnergy", "Exchange", "ExchangeContext", "ExchangeRule",
           "GreedyRule", "MetropolisRule", "MinibatchEnergy", "ReplicaBase", "ReplicaExchange",
           "ReplicaState", "Rule", "cv_energy", "exact_energy", "geometric_ladder",
           "greedy_rule", "log_swap_ratio", "metropolis_rule", "minibatch_energy",
           "pair_permutation", "replica_exchange", "round_trips"]
