"""SCHED²'s learned job selection (Sec. III) as a method: ``dqn``.

The agent's weights are a safetensors file (default: the shipped agent,
``dlsched/heuristics/data/sched2_dqn.safetensors``; option ``weights=PATH`` for another); acting
needs numpy and safetensors only (:mod:`dlsched.heuristics.sched2_dqn_policy`). Training:
``dlsched rl train sched2`` (the ``rl`` extra).
"""

from __future__ import annotations

import os

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.heuristics.sched2_dqn_policy import (
    dqn_can_start,
    dqn_decision,
    dqn_live,
    load_network,
    shipped_weights,
)
from dlsched.heuristics.sched2_view import _gpus_only
from dlsched.instance import Instance
from dlsched.method_support import heuristic_method
from dlsched.problems.sched2 import submitted_part
from dlsched.registry import MethodSpec, register_method
from dlsched.state import ViewPolicy, register_view_policy


def dqn(instance: Instance, *, weights: str | None = None) -> Decision:
    """The agent's picks at one snapshot (:func:`.sched2_dqn_policy.dqn_decision`)."""
    if weights is not None and not isinstance(weights, str | os.PathLike):
        raise InputError(f"weights = {weights!r}"[:80], field="options.weights",
                         fix="the path of a weights file, or leave it out for the shipped agent")
    network, window = load_network(str(weights) if weights else shipped_weights())
    return dqn_decision(submitted_part(instance), network, window)


register_method(MethodSpec("sched2", "dqn", "learned", heuristic_method(dqn, ("weights",)),
                           summary="learned job selection (deep-Q, Sec. III; one per-job "
                           "Q-network for any cluster), packing placement"))
# the simulator's fast form; its start guard reads the agent's state (skips a call that waits)
register_view_policy(ViewPolicy("sched2", "dqn", dqn_live, dqn_can_start, frozenset(),
                                _gpus_only, stateful=True, guard_state=True))
