"""Offline exact schedules as registered exact methods of the workload problems.

``solve(workload, "offline-makespan")`` (also ``offline-wct``, ``offline-qos``,
``offline-effectiveness``) for the
``sched2`` and ``genie`` problems: the whole workload is scheduled (every job once, start ≥
submit time, GPUs exclusive, durations from the speed model of the placement's shape); the
decision is a *timed* one (placements with ``start`` and ``end``) that the one validator
checks and the problem's schedule evaluator prices (``Problem.evaluate_schedule``).

Options: ``time_unit`` (seconds per grid unit; default: chosen so the optimality claim
holds, see :mod:`.data`), ``symmetry`` and ``bounds`` (the model's symmetry-breaking and
relaxation-bound families, both on), ``num_workers`` (CP-SAT workers, 1 = reproducible),
``solver_options`` (CP-SAT parameters), ``initial_solution`` (a timed decision handed to
CP-SAT as a hint, re-timed on the model's grid and relabelled to its symmetry rules by
:func:`.warm_start.grid_hint`; default for ``offline-wct`` and ``offline-effectiveness``
on an exact grid: a serial schedule in Smith's order, ``schedule.greedy_schedule``; none
otherwise). ``offline-effectiveness`` (``sched2`` only) maximizes the mean of SCHED²'s
Eq. 2 with the integer scaling of :mod:`.effectiveness`.
``bnb_share`` (``offline-wct`` only): the part of the time limit kept for the exact branch
and bound of :mod:`.bnb`, run after CP-SAT when CP-SAT has not proved optimality: it
searches for a schedule better than CP-SAT's incumbent on the same integer data, and a
finished search proves the incumbent (or its own better schedule) optimal; 0 runs CP-SAT
alone; default :func:`default_bnb_share`. Before it, ``offline-wct`` solves the
time-indexed LP relaxation of :mod:`.lp_bound` (at most :data:`LP_SHARE` of the time
left): its bound is reported when higher, and proves the schedule optimal when it meets it.
``time_limit`` covers building and solving (``qos`` on a fine grid solves twice: the
primal and the rounded-down relaxation, which share what is left).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from ortools.sat.python import cp_model

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.gaps import is_proven_optimal
from dlsched.instance import Instance
from dlsched.problems.base import get_problem
from dlsched.registry import BOOL, MethodSpec, OptionRule, check_options, register_method
from dlsched.result import MethodOutput, Status
from dlsched.validate import evaluate

from ..backend import Deadline, TimeUp, check_exact_options
from ..cpsat_backend import CpSatRun, model_size, run_cpsat, write_proto
from .bnb import branch_and_bound
from .data import (
    OBJECTIVES,
    WEIGHT_SCALE,
    Mode,
    OfflineData,
    check_workload,
    choose_grid,
    job_modes,
    offline_data,
    rounding_loss,
)
from .effectiveness import grid_loss, real_bound
from .lp_bound import lp_bound
from .model import OfflineModel
from .schedule import greedy_schedule, left_shift, timed_decision
from .warm_start import grid_hint

METHODS = {"offline-makespan": "makespan", "offline-wct": "weighted_jct",
           "offline-qos": "qos", "offline-effectiveness": "effectiveness"}
"""Method name -> schedule objective."""
PROBLEMS = ("sched2", "genie")
"""The problems with offline methods: each gets the objectives of its
``schedule_objectives`` (``effectiveness``: ``sched2`` only)."""
OPTIONS = ("time_unit", "symmetry", "bounds", "num_workers", "solver_options",
           "initial_solution", "bnb_share")
OPTION_RULES: dict[str, OptionRule] = {
    "time_unit": ("float>", 0, None), "symmetry": BOOL, "bounds": BOOL,
    "num_workers": ("int", 0, 1024), "bnb_share": ("float", 0, 1)}
"""Values the number options may take (``num_workers`` 0: CP-SAT's all cores; null
``time_unit``/``bnb_share``: the default); ``bnb_share`` must also be below 1."""

DEFAULT_CPSAT_OPTIONS = {
    "search_branching": cp_model.CpSolver().parameters.search_branching.__class__
    .PORTFOLIO_WITH_QUICK_RESTART_SEARCH,
}
"""CP-SAT's default search with frequent restarts: on one worker it proves these
scheduling models far faster than the automatic choice (2 × 4 GPUs, 20 jobs, makespan,
seed 4: 0.25 s instead of no proof in 30 s). Not for ``effectiveness``: see
:data:`EFFECTIVENESS_CPSAT_OPTIONS`."""

EFFECTIVENESS_CPSAT_OPTIONS = {"optimize_with_core": True}
"""CP-SAT's automatic search with core-based optimization for ``effectiveness``. Measured
(2 × 4 GPUs, 10 jobs, inter-arrival 60 s, seeds 5000-5019, greedy hint, deterministic
limit 10): 18 of 20 proven in 30.6 CPU-s; the automatic search alone 17 in 35.9 CPU-s;
the restart portfolio above proves none of the hard ones (seed 5006: no proof in 25 s;
the automatic search with the hint: 0.01 s)."""


LP_SHARE = 0.1
"""Most of the time left that the time-indexed LP bound of ``offline-wct`` may take (it is
solved when CP-SAT has not proved optimality, before the branch and bound)."""


def default_bnb_share(data: OfflineData) -> float:
    """0.75 of the time for the branch and bound when jobs have few modes (at most 4 on
    average: its branching is over job × mode), else 0.25. Measured (60 s, 1 worker,
    ``offline_scale`` workloads): on 2 × 4 GPUs with 12-20 jobs every run CP-SAT proved
    took at most 9.4 s, and CP-SAT's incumbent after 15 s was the one after 30 s on every
    run the search proved, so the search starts at 15 s instead of 30 s (20 jobs, seed 2:
    34.0 CPU-s instead of 47.6; 16 jobs, seed 0: 34.3 instead of 53.0); 4 × 4 GPUs, 16 jobs
    (~10 modes a job), seed 4 needs ~35 CPU-s of CP-SAT, where the search does not finish
    in 60 s."""
    modes = sum(len(ms) for ms in data.modes) / max(1, data.num_jobs)
    return 0.75 if modes <= 4 else 0.25


def build_model(workload: Instance, objective: str, *, time_unit: float | None = None,
                round_up: bool = True, symmetry: bool = True, bounds: bool = True,
                modes: list[list[Mode]] | None = None,
                deadline: Deadline | None = None) -> OfflineModel:
    """The offline CP-SAT model of ``workload`` for ``objective`` (checks the workload).

    ``deadline``: :class:`~dlsched.formulations.backend.TimeUp` once it passes."""
    if objective not in OBJECTIVES:
        raise InputError(f"objective {objective!r}", field="objective",
                         fix=f"use one of {OBJECTIVES}")
    check_workload(workload)
    modes = modes if modes is not None else job_modes(workload, deadline=deadline)
    grid = choose_grid(workload, modes, objective, time_unit)
    data = offline_data(workload, objective, grid, modes, round_up)
    return OfflineModel(data, symmetry=symmetry, bounds=bounds, deadline=deadline)


def _bound(data: OfflineData, run: CpSatRun) -> float | None:
    """A proven bound on the real optimum, in the evaluator's units."""
    if run.bound is None:
        return None
    return _real_bound(data, run.bound)


def _real_bound(data: OfflineData, model_bound: float) -> float:
    """A proven bound of the integer model (its objective units) in the evaluator's units."""
    jobs = data.workload.jobs
    u = data.grid.unit
    if data.objective == "effectiveness":
        loss = 0.0 if data.grid.exact else _effectiveness_loss(data)
        return real_bound(model_bound, len(jobs), loss)
    if data.objective == "qos":
        met = math.floor((model_bound + data.horizon) / (data.horizon + 1) + 1e-9)
        return 100.0 * min(max(met, 0), len(jobs)) / len(jobs)
    raw = math.ceil(model_bound - 1e-6)  # the objective is integral
    loss = 0 if data.grid.exact else rounding_loss(data.objective, list(data.weights),
                                                   data.num_jobs)
    if data.objective == "makespan":
        return (raw - loss) * u - min(j.submit_time for j in jobs)
    return (raw - loss) * u / WEIGHT_SCALE - sum(j.weight * j.submit_time for j in jobs)


def _effectiveness_loss(data: OfflineData) -> float:
    """:func:`.effectiveness.grid_loss` of the data's grid (Σ E, not the mean)."""
    return grid_loss([min(m.duration for m in ms) for ms in data.modes], data.grid.unit)


def _rounding_loss(data: OfflineData) -> float:
    """Worst loss of the objective from the grid (seconds; Σ E for ``effectiveness``)."""
    if data.grid.exact:
        return 0.0
    if data.objective == "effectiveness":
        return _effectiveness_loss(data)
    loss = rounding_loss(data.objective, list(data.weights), data.num_jobs) * data.grid.unit
    return loss / (WEIGHT_SCALE if data.objective == "weighted_jct" else 1)


def _hint(model: OfflineModel, decision: Decision) -> None:
    """Warm start from a timed decision: each job's mode and start, made a schedule of the
    model's own grid and symmetry rules (:func:`.warm_start.grid_hint`)."""
    v = model.vars
    for j, (k, start) in grid_hint(model.data, decision).items():
        for i, x in enumerate(v.mode[j]):
            model.model.AddHint(x, int(i == k))
        model.model.AddHint(v.start[j], start)


def solve_schedule(workload: Instance, objective: str, *, time_limit: float | None,
                   seed: int = 0, time_unit: float | None = None, symmetry: bool = True,
                   bounds: bool = True, num_workers: int = 1,
                   solver_options: dict | None = None,
                   initial_solution: Decision | None = None,
                   bnb_share: float | None = None) -> MethodOutput:
    """Optimal offline schedule of ``workload`` for ``objective`` (see the module docstring).

    Returns
    -------
    MethodOutput
        A timed decision, the model's claim (OPTIMAL when CP-SAT proved every model it
        ran, or the branch and bound finished) and a proven bound on the real optimum in
        the evaluator's units.
    """
    deadline = Deadline(time_limit)
    if bnb_share is not None and not 0.0 <= float(bnb_share) < 1.0:
        raise InputError(f"bnb_share = {bnb_share}", field="options.bnb_share",
                         fix="a fraction of the time limit in [0, 1)")
    defaults = (EFFECTIVENESS_CPSAT_OPTIONS if objective == "effectiveness"
                else DEFAULT_CPSAT_OPTIONS)
    options = {**defaults, **(solver_options or {})}
    try:
        model = build_model(workload, objective, time_unit=time_unit,
                            symmetry=bool(symmetry), bounds=bool(bounds), deadline=deadline)
        data = model.data
        if (initial_solution is None and objective in ("weighted_jct", "effectiveness")
                and data.grid.exact):
            # warm start for the sum objectives: a serial schedule in Smith's order.
            # Measured (2 x 4 GPUs, 20 jobs, 60 s): seed 0 ends at 33,665 instead of
            # 36,551 without it, seeds 1-3 prove as fast; on the fine-grid seed 4 CP-SAT
            # never left the hinted schedule (43,855) while unhinted it proves 31,402 in
            # 7 s; for makespan it misled the search.
            initial_solution = timed_decision(workload, greedy_schedule(
                workload, [list(ms) for ms in data.modes], deadline))
        if initial_solution is not None:
            _hint(model, initial_solution)
    except TimeUp as exc:  # every stage shares the one deadline: building keeps it too
        return MethodOutput(None, Status.NO_SOLUTION, message=str(exc),
                            build_time=time.perf_counter() - deadline.start)
    share = 0.0 if objective != "weighted_jct" else (
        default_bnb_share(data) if bnb_share is None else float(bnb_share))
    build = time.perf_counter() - deadline.start
    two = objective == "qos" and not data.grid.exact
    left = deadline.remaining()
    if left is not None:
        left = left / 2 if two else left * (1.0 - share)
    run = run_cpsat(model.model, left, seed, int(num_workers), options)
    extra = {"time_unit": data.grid.unit, "exact_grid": data.grid.exact,
             "solve_time": run.solve_time, "horizon_units": data.horizon,
             ("rounding_loss_E" if objective == "effectiveness" else "rounding_loss_s"):
             _rounding_loss(data)}
    status, bound, picks = run.status, _bound(data, run), None
    if run.status.has_solution:
        v = model.vars
        picks = []
        for j in range(data.num_jobs):
            k = next(k for k, x in enumerate(v.mode[j]) if run.solver.Value(x))
            picks.append((run.solver.Value(v.start[j]) * data.grid.unit, j, data.modes[j][k]))
    lp = None
    unproven = run.status in (Status.FEASIBLE, Status.NO_SOLUTION)
    if objective == "weighted_jct" and unproven:
        left = deadline.remaining()
        lp = lp_bound(workload, [list(ms) for ms in data.modes],
                      time_limit=None if left is None else LP_SHARE * left, deadline=deadline)
        extra["lp_bound"] = lp
    if share > 0 and unproven:
        cutoff = None if run.objective is None else round(run.objective)
        search = branch_and_bound(data, cutoff, deadline.remaining())
        extra.update(bnb_nodes=search.nodes, bnb_complete=search.complete)
        if search.value is not None:
            picks = [(start * data.grid.unit, j, data.modes[j][k])
                     for j, (start, k) in search.picks.items()]
            status = Status.FEASIBLE
        if search.complete:
            best = search.value if search.value is not None else cutoff
            if best is None:
                raise RuntimeError("the branch and bound found no schedule (a bug)")
            status, bound = Status.OPTIMAL, _real_bound(data, best)
    if picks is None:
        return MethodOutput(None, status, None, model_size(model.model), build, run.log,
                            extra=extra)
    decision = timed_decision(workload, left_shift(workload, picks))
    if lp is not None and status is not Status.OPTIMAL:
        bound = lp if bound is None else max(bound, lp)
        if is_proven_optimal(evaluate(workload, decision, objective), bound):
            status = Status.OPTIMAL
    if two:
        try:
            relax = build_model(workload, objective, time_unit=data.grid.unit,
                                round_up=False, symmetry=bool(symmetry), bounds=bool(bounds),
                                modes=[list(ms) for ms in data.modes], deadline=deadline)
        except TimeUp:
            return MethodOutput(decision, Status.FEASIBLE, None, model_size(model.model),
                                build, run.log, "time limit reached while building the "
                                "rounded-down relaxation", extra=extra)
        rrun = run_cpsat(relax.model, deadline.remaining(), seed, int(num_workers), options)
        extra["relaxation_solve_time"] = rrun.solve_time
        if rrun.status is Status.INFEASIBLE:
            raise RuntimeError("the rounded-down relaxation is infeasible (a bug)")
        bound = _bound(relax.data, rrun) if rrun.status.has_solution else None
        if rrun.status is not Status.OPTIMAL:
            status = Status.FEASIBLE
    return MethodOutput(decision, status, bound, model_size(model.model), build, run.log,
                        extra=extra)


def export_model(objective: str):
    """The registry ``export`` hook: the CP-SAT model proto as text (fmt cpsat/proto/txt)."""

    def export(instance: Instance, path: str | Path, fmt: str) -> None:
        if fmt not in ("cpsat", "proto", "txt"):
            raise InputError(f"format {fmt!r}", field="--format",
                             fix="offline schedules are CP-SAT models: use proto (text)")
        write_proto(build_model(instance, objective).model, path, "proto")

    return export


def _runner(objective: str):
    def run(instance: Instance, *, backend: str | None = None,
            time_limit: float | None = 60.0, seed: int = 0, **options) -> MethodOutput:
        check_options(options, OPTIONS)
        check_exact_options(options, OPTION_RULES, ("time_unit", "bnb_share"))
        return solve_schedule(instance, objective, time_limit=time_limit, seed=seed,
                              **options)

    return run


def refusal(instance: Instance) -> str | None:
    """Why the offline model does not take ``instance`` (running jobs, mixed GPU speeds,
    binding CPU/RAM/memory, more placement shapes than it holds), or None."""
    try:
        check_workload(instance)
        job_modes(instance)
    except InputError as exc:
        return str(exc)
    return None


_SUMMARY = {"makespan": "offline schedule of the whole workload: min makespan",
            "effectiveness": "offline schedule of the whole workload: max mean "
                             "effectiveness E (SCHED² Eq. 2)",
            "weighted_jct": "offline schedule of the whole workload: min weighted JCT",
            "qos": "offline schedule: max % of jobs by deadline, then min makespan"}

for _problem in PROBLEMS:
    for _name, _objective in METHODS.items():
        if _objective not in get_problem(_problem).schedule_objectives:
            continue
        register_method(MethodSpec(
            problem=_problem, name=_name, kind="exact", run=_runner(_objective),
            backends=("cpsat",), default_backend="cpsat", summary=_SUMMARY[_objective],
            export=export_model(_objective), objective=_objective, refusal=refusal))
