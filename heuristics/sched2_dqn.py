"""SCHED²'s learned job selection (Sec. III) as a method: ``dqn``.

The agent's weights are a safetensors file (default: the shipped agent,
``dlsched/rl/data/sched2_dqn.safetensors``; option ``weights=PATH`` for another); acting
needs numpy and safetensors only (:mod:`dlsched.rl.sched2_policy`). Training:
``dlsched rl train sched2`` (the ``rl`` extra).
"""

from __future__ import annotations

from dlsched.decision import Decision
from dlsched.instance import Instance
from dlsched.method_support import heuristic_method
from dlsched.registry import MethodSpec, register_method
from dlsched.rl.sched2_policy import dqn_decision, load_network, shipped_weights


def dqn(instance: Instance, *, weights: str | None = None) -> Decision:
    """The agent's picks at one snapshot (see :func:`dlsched.rl.sched2_policy.dqn_decision`)."""
    return dqn_decision(instance, load_network(weights or shipped_weights()))


register_method(MethodSpec("sched2", "dqn", "heuristic", heuristic_method(dqn, ("weights",)),
                           summary="learned job selection (DQN, Sec. III), packing placement"))
