"""Helpers shared by the formulations and heuristics: free GPUs, decisions, method wrappers.

Each was once written separately in several method modules; they live here once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .decision import Decision, Placement
from .instance import Instance
from .registry import OptionRule, check_option_values, check_options
from .result import MethodOutput, Status


def free_gpus_by_server(instance: Instance) -> list[list[int]]:
    """Indices of the idle GPUs of each server, in cluster order.

    Parameters
    ----------
    instance
        The snapshot; GPUs held by its running jobs are busy.

    Returns
    -------
    list of list of int
        Per server (cluster order), its idle GPU indices in ascending order.
    """
    return list(map(list, instance.idle_by_server))


def decision_from_indices(
    instance: Instance, placed: Iterable[tuple[int, Iterable[int]]]
) -> Decision:
    """The decision that gives job ``j`` (an index into ``instance.jobs``) the GPU indices.

    Parameters
    ----------
    instance
        The snapshot the indices refer to.
    placed
        ``(job index, GPU indices)`` pairs, in the order the placements should appear.

    Returns
    -------
    Decision
        One :class:`Placement` per pair, its GPU ids in ascending index order.
    """
    ids = instance.cluster.gpu_ids
    return Decision.of(
        Placement(instance.jobs[j].id, tuple(ids[g] for g in sorted(gpus))) for j, gpus in placed
    )


def heuristic_method(
    fn: Callable[..., Decision | MethodOutput], allowed: Iterable[str] = (),
    rules: Mapping[str, OptionRule] | None = None, nullable: Iterable[str] = (),
) -> Callable[..., MethodOutput]:
    """Wrap ``fn(instance, **options)`` as a registered method's ``run``.

    Parameters
    ----------
    fn
        Returns a :class:`Decision` (reported as a feasible result) or a full
        :class:`~dlsched.solve.MethodOutput`.
    allowed
        The options ``fn`` accepts; any other option is an ``InputError``. When ``fn``
        has a parameter named ``seed``, it also receives ``seed=`` (the solve's seed).
    rules, nullable
        Checks of the options' values (:func:`~dlsched.registry.check_option_values`).

    Returns
    -------
    callable
        ``run(instance, *, backend=None, time_limit=None, seed=0, **options)``; its
        attribute ``check_options(options)`` runs the option checks alone (the simulator's
        fast forms, which do not call ``run``, use it).
    """
    allowed = tuple(a for a in allowed if a != "seed")  # the seed is solve's, not an option
    takes_seed = "seed" in inspect.signature(fn).parameters
    rules, nullable = dict(rules or {}), tuple(nullable)

    def check(options: Mapping[str, Any]) -> None:
        check_options(options, allowed)
        check_option_values(options, rules, nullable)

    def run(instance: Instance, *, backend: str | None = None, time_limit: float | None = None,
            seed: int = 0, **options: Any) -> MethodOutput:
        check(options)
        if takes_seed:
            options["seed"] = seed
        out = fn(instance, **options)
        if isinstance(out, MethodOutput):
            return out
        return MethodOutput(decision=out, status=Status.FEASIBLE)

    run.check_options = check  # type: ignore[attr-defined]
    return run


def fifo_can_start(view, *, backfill: bool = False) -> bool:
    """A FIFO view policy's ``can_start``: the head's GPU count fits the idle GPUs (with
    ``backfill``: any waiting job's)."""
    head = view.head()
    if head is None:
        return False
    if backfill:
        low = view.min_demand()
        return low is not None and low <= view.idle_count
    return head.num_gpus <= view.idle_count
