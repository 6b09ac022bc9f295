"""The one entry point: ``solve(instance, method=..., backend=..., time_limit=..., seed=...)``."""

from __future__ import annotations

import math
import time

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None  # type: ignore[assignment]
from pathlib import Path
from typing import Any

from .errors import InputError, MethodError
from .gaps import is_proven_optimal, relative_gap
from .instance import Instance
from .instance_io import check_instance, load_instance
from .problems import get_problem
from .registry import MethodSpec, get_method
from .result import MethodOutput, Result, Status
from .validate import validate_decision

# A result is called optimal only when the method proved it and
# dlsched.gaps.is_proven_optimal(objective, bound) holds (the tolerances live there).


MAX_SEED = 2**31 - 1
"""Largest seed (every backend's seed parameter is a 32-bit integer)."""

OPTION_FAILURES = (TypeError, ValueError, OverflowError, MemoryError, IndexError, KeyError,
                   AttributeError)
"""What a method raises on an option value of the wrong type or range that it does not
check itself; with options given, :func:`run_method` reports it as bad input."""


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of its children it waited for: the
    difference over a call is that call's CPU time, a solver subprocess's included."""
    own = time.process_time()
    if resource is None:  # pragma: no cover - not POSIX
        return own
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


def run_method(spec: MethodSpec, instance: Instance, *, backend: str | None,
               time_limit: float | None, seed: int, options: dict[str, Any],
               given: dict[str, Any] | None = None) -> MethodOutput:
    """``spec.run`` with ``options``; an :data:`OPTION_FAILURES` error it raises while the
    user gave options (``given``, default ``options``) becomes an InputError naming them."""
    try:
        return spec.run(instance, backend=backend, time_limit=time_limit, seed=seed,
                        **options)
    except OPTION_FAILURES as exc:
        given = options if given is None else given
        if not given or isinstance(exc, InputError):
            raise
        text = " ".join(str(exc).split())[:160]
        raise InputError(f"method {spec.name!r} failed on its options {sorted(given)}: "
                         f"{type(exc).__name__}: {text}", field="options",
                         fix="check the option values (types and ranges) the method takes"
                         ) from None


def solve(
    instance: Instance | str | Path,
    method: str = "exact",
    *,
    backend: str | None = None,
    time_limit: float | None = 60.0,
    seed: int = 0,
    **options: Any,
) -> Result:
    """Solve ``instance`` with a registered method and check the answer independently.

    Parameters
    ----------
    instance
        An :class:`Instance` or the path of an instance file.
    method
        A method registered for the instance's problem (``dlsched methods`` lists them).
    backend
        For exact methods: ``cbc``, ``highs``, ``scip`` or ``cpsat`` (default: the
        method's own).
    time_limit
        Wall-clock seconds for the whole call: exact methods build their model and give
        the solver what is left (``None``: no limit).
    seed
        Seed for randomized methods and solvers.
    options
        Method-specific options, passed through. Every exact method also takes
        ``num_workers`` (solver threads, default 1: reproducible), ``solver_options``
        (a dict of the solver's own parameters) and ``initial_solution`` (a
        :class:`Decision`, e.g. a heuristic's, handed to the solver as a warm start).

    Returns
    -------
    Result
        Decision, objective (from the problem's evaluator), bound, gap, status, times.

    Raises
    ------
    InputError
        Unknown method or backend, an unreadable instance file, or an instance built in
        Python that a file with the same content would fail (unknown problem, GPU or job
        field missing: the same one-line message as :func:`load_instance`).
    MethodError
        The method returned a decision that fails validation.
    """
    if isinstance(instance, Instance):
        check_instance(instance)  # built in Python: the checks a file gets on load
    else:
        instance = load_instance(instance)
    spec = get_method(instance.problem, method)
    if spec.backends:
        backend = backend or spec.default_backend
        if backend not in spec.backends:
            raise InputError(
                f"method {method!r} has no backend {backend!r}",
                field="backend",
                fix=f"use one of: {', '.join(spec.backends)}",
            )
    elif backend is not None:
        raise InputError(
            f"method {method!r} uses no solver backend",
            field="backend",
            fix="leave the backend out for heuristics",
        )
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise InputError(f"time_limit = {time_limit}", field="time_limit",
                         fix="use a finite number of seconds > 0")

    start, cpu_start = time.perf_counter(), cpu_seconds()
    try:
        out = run_method(spec, instance, backend=backend, time_limit=time_limit, seed=seed,
                         options=options)
    except InputError as exc:
        return Result(
            status=Status.INVALID_INPUT,
            decision=None,
            objective=None,
            bound=None,
            gap=None,
            wall_time=time.perf_counter() - start,
            cpu_time=cpu_seconds() - cpu_start,
            method=method,
            backend=backend,
            message=exc.one_line(),
        )
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    return _finish(instance, out, method, backend, wall, spec.objective, cpu)


def _finish(
    instance: Instance, out: MethodOutput, method: str, backend: str | None, wall: float,
    schedule_objective: str | None = None, cpu: float | None = None,
) -> Result:
    objective = gap = None
    status = out.status
    message = out.message
    if out.decision is not None:
        report = validate_decision(instance, out.decision)
        if not report.ok:
            raise MethodError(
                f"method {method!r} (backend {backend}) returned an infeasible "
                f"decision for {instance.name or instance.sha256[:12]}: {report}"
            )
        problem = get_problem(instance.problem)
        objective = (problem.evaluate(instance, out.decision) if schedule_objective is None
                     else problem.evaluate_schedule(instance, out.decision, schedule_objective))
        gap = relative_gap(objective, out.bound)
        if status is Status.OPTIMAL and not is_proven_optimal(objective, out.bound):
            status = Status.FEASIBLE
            message = (message + " " if message else "") + (
                f"solver reported optimal but the gap is {gap}; reported as feasible"
            )
        if status not in (Status.OPTIMAL, Status.FEASIBLE):
            status = Status.FEASIBLE
    elif status.has_solution:
        raise MethodError(f"method {method!r} claims {status.value} without a decision")
    return Result(
        status=status,
        decision=out.decision,
        objective=objective,
        bound=out.bound,
        gap=gap,
        wall_time=wall,
        cpu_time=cpu,
        method=method,
        backend=backend,
        model_size=out.model_size,
        build_time=out.build_time,
        message=message,
        log=out.log,
        extra=out.extra,
    )
