"""Calling a registered method as the simulator's policy, on a snapshot.

The method runs directly (``dlsched.solve.run_method``) or, for exact methods and
``Policy.via_solve``, through :func:`dlsched.solve.solve`. A method error becomes a
:class:`~.records.SimulationError` naming the policy and the time; an error in the policy's
own settings stays an :class:`~dlsched.errors.InputError`.
"""

from __future__ import annotations

from typing import Any

from ..decision import Decision
from ..errors import InputError, MethodError
from ..instance import Instance
from ..registry import get_method
from ..result import Status
from ..solve import run_method, solve
from .records import Policy, SimulationError


class PolicyCaller:
    """Calls the registered method on a snapshot (the checks are the engine's).

    ``no_solution`` counts the calls that returned no decision; ``last_extra`` is the
    ``extra`` of the last result (the requeue hook reads it); a ``policy_state`` the method
    returns in ``extra`` is passed back to it on the next call.
    """

    def __init__(self, workload: Instance, policy: Policy) -> None:
        self.policy = policy
        spec = get_method(workload.problem, policy.method)
        if policy.backend is not None and policy.backend not in spec.backends:
            raise InputError(
                f"method {policy.method!r} has no backend {policy.backend!r}",
                field="backend",
                fix=f"use one of: {', '.join(spec.backends)}" if spec.backends
                else "leave the backend out: this method uses no solver")
        check = getattr(spec.run, "check_options", None)
        if check is not None:  # before the run, and for the fast forms that skip spec.run
            check(dict(policy.options))
        self.spec = spec
        self.via_solve = policy.via_solve or spec.kind in ("exact", "bound")
        self.state: Any = None
        self.no_solution = 0
        self.last_extra: dict[str, Any] = {}

    def __call__(self, snapshot: Instance) -> tuple[Decision, float | None]:
        p = self.policy
        options = dict(p.options)
        if self.state is not None:
            options["policy_state"] = self.state
        where = f"policy {p.label!r} at t = {snapshot.time:g} s"
        try:
            if self.via_solve:
                result = solve(snapshot, p.method, backend=p.backend, time_limit=p.time_limit,
                               seed=p.seed, **options)
                if result.status is Status.INVALID_INPUT:
                    raise SimulationError(f"{where}: invalid input: {result.message}")
                extra = result.extra
                decision = result.decision
                if decision is None:
                    self.no_solution += 1
                    decision = Decision()
            else:
                out = run_method(self.spec, snapshot, backend=p.backend,
                                 time_limit=p.time_limit, seed=p.seed, options=options,
                                 given=dict(p.options))
                extra = out.extra
                decision = out.decision if out.decision is not None else Decision()
                if out.decision is None:
                    self.no_solution += 1
        except MethodError as exc:
            raise SimulationError(f"{where}: {exc}") from None
        except InputError as exc:
            if exc.source or exc.field.split(".")[0] in ("options", "backend", "time_limit"):
                # the policy's own settings or a file it reads (weights): bad input
                raise InputError(f"{where}: {exc.message}", field=exc.field, fix=exc.fix,
                                 source=exc.source) from None
            raise SimulationError(f"{where}: {exc.one_line()}") from None
        if "policy_state" in extra:
            self.state = extra["policy_state"]
        self.last_extra = extra
        wake = extra.get("wake_at")
        return decision, (float(wake) if wake is not None else None)
