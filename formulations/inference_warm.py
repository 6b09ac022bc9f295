"""The warm start of the ``inference`` models: a serving policy's schedule of the window.

The policy is named (option ``hint``) and run through the method registry, so the models
import neither the serving simulator nor a policy module.
"""

from __future__ import annotations

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.problems.inference import InferenceDecision
from dlsched.problems.inference.policies import SERVING_POLICIES
from dlsched.registry import get_method


def policy_schedule(instance: Instance, name: str) -> InferenceDecision:
    """The batches the serving policy ``name`` runs on ``instance`` (seed 0).

    Parameters
    ----------
    instance
        An ``inference`` window.
    name
        One of :data:`~dlsched.problems.inference.policies.SERVING_POLICIES`.

    Returns
    -------
    InferenceDecision
        The policy's schedule.

    Raises
    ------
    InputError
        ``name`` is not a serving policy (field ``options.hint``).
    """
    if name not in SERVING_POLICIES:
        raise InputError(f"hint = {name!r}"[:80], field="options.hint",
                         fix=f"use one of {', '.join(SERVING_POLICIES)}, or null for none")
    decision = get_method("inference", name).run(instance, seed=0).decision
    assert isinstance(decision, InferenceDecision)  # a serving policy always returns batches
    return decision
