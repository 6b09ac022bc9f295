"""Exact offline optimum of an ``inference`` window (CP-SAT): batches, models, GPUs.

Given every query of the window in advance (arrival, soft and hard deadline) and the
GPUs free from time 0, choose batches (GPU, model, start, queries) maximizing Σ Q (Eq. 1).

Model (slot formulation; GPU g has slots k = 0..K_g−1 run in order):
  u[g,k,m,s]  slot k runs model m at table size s (only supported (m, s) on g's type);
              Σ_{m,s} u <= 1; used[g,k] = Σ u; used[g,k+1] <= used[g,k]
  x[q,g,k]    query q is served in slot k of g; Σ_{g,k} x[q,g,k] <= 1;
              Σ_q x[q,g,k] <= Σ_{m,s} B_s u[g,k,m,s]
  start, end  end[g,k] = start[g,k] + Σ D_{m,s,type(g)} u[g,k,m,s];
              start[g,k+1] >= end[g,k]; x[q,g,k] ⇒ start[g,k] >= arrival_q
  v[q,g,k]    scaled quality: v <= S κ_max x; for each model m, if slot k runs m:
              v <= S κ_m, and if also x[q,g,k]: v · Δ_q <= S κ_m (hard_q − end[g,k])
              (Δ_q = hard − soft > 0); for Δ_q = 0: x ⇒ end <= soft_q
  maximize Σ v.
  u[g,k,m,s] ⇒ Σ_q x[q,g,k] > the next smaller supported size (the batch runs at the
              smallest supported size that fits it, as the validator requires)
The decision left-shifts each batch (start = max(previous end, last arrival in it)),
never later than the solver's start, so the evaluated objective is >= the solver's.

Why this is exact (not a restriction):
* slots per GPU: K_g = min(n, floor((max hard − min arrival) / d_min(g))). W.l.o.g. a
  served query has Q > 0 (dropping one never lengthens a batch), so every used batch ends
  before the latest hard deadline and starts after the first arrival; batches on a GPU
  do not overlap, so at most K_g of them fit. Options ``max_batches`` lowers K_g: the
  result is then optimal only among schedules with at most that many batches per GPU,
  and the status says so (never OPTIMAL);
* scale S: the least integer with S κ_m / Δ_q integral for all m, q (2000 for the
  paper's κ ∈ {1, 0.5} and Δ = 1000 ms), so Σ v / S is Σ Q exactly and the solver's
  bound divided by S is a proven bound. When that S would exceed 10^7, S = 10^6 and the
  bound is relaxed by n / S (each v is at most one unit below its real value);
* symmetry: interchangeable GPUs (same type, slot count and free time) are ordered by
  their number of used slots: swapping their sequences makes any schedule satisfy it.
  GPUs free at different times are not interchangeable and are not ordered;
* horizon: every start lies in [0, max(last hard deadline, latest GPU free time) +
  longest batch] (a GPU busy past every hard deadline keeps its slots unused).
A heuristic schedule (the Eq. 2 policy run on the window) is given as a hint (its
sequences relabelled to satisfy the symmetry order); ``extra["hint_used"]`` says whether
CP-SAT took it (False: it did not fit the slots or could not be completed). When CP-SAT
ends without a solution (on hundreds of queries its presolve can outlast the limit) and
the hint was taken, the hint is returned as the incumbent (status feasible, the message
and ``extra["warm_start_returned"]`` say so). ``time_limit`` covers building, completing
the hint and solving; a build that outlasts it ends as ``no_solution``.

Option ``lagrange`` (iterations, default 0 = off): the Lagrangian bound U of
:mod:`.inference_lagrange` (proven for any multipliers) is computed first; Σ v <= floor(S U)
is added (valid: every solution's Σ v is at most S times its schedule's Σ Q <= S · OPT),
the reported bound is min(solver's, U), and a schedule whose Σ Q meets U is OPTIMAL.
The Lagrangian repaired schedule replaces the policy hint when it is better.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.interrupt import stopping_on_interrupt
from dlsched.problems.inference import (
    Batch,
    InferenceData,
    InferenceDecision,
    inference_data,
    query_qualities,
)
from dlsched.registry import MethodSpec, check_option_values, check_options, register_method
from dlsched.result import MethodOutput, Status
from dlsched.validate import validate

from .backend import Deadline, TimeUp
from .cpsat_backend import model_size, run_cpsat
from .inference_lagrange import lagrangian_bound
from .inference_scale import proven_optimal, quality_scale
from .inference_warm import policy_schedule
from .symmetry_hints import chained_runs, relabel_in_runs


def slot_bound(data: InferenceData, g: int) -> int:
    """K_g: how many batches with a positive-Q query fit on GPU g (see module docstring)."""
    n = data.num_queries
    t = int(data.gpu_type[g])
    d = data.delay[:, t, :]
    d_min = int(d[d >= 0].min())
    span = int(data.hard.max()) - int(data.arrival.min())
    return max(1, min(n, span // d_min))


def interchangeable(data: InferenceData, slots: list[int], gpu_free: list[int] | None,
                    g: int) -> bool:
    """GPUs g − 1 and g can swap schedules: same type, same slot count, same free time
    (GPUs free at different times are not interchangeable, so ordering them would cut
    schedules off)."""
    free = gpu_free or [0] * len(data.gpu_ids)
    return (g > 0 and data.gpu_type[g] == data.gpu_type[g - 1]
            and slots[g] == slots[g - 1] and free[g] == free[g - 1])


def build_model(data: InferenceData, slots: list[int], scale: int,
                gpu_free: list[int] | None = None, objective_cap: int | None = None,
                deadline: Deadline | None = None):
    """The CP-SAT model and its variables (see the module docstring); GPU g is free from
    ``gpu_free[g]`` (default: the first arrival). ``objective_cap``: a proven upper bound on the
    scaled objective Σ v, added as a constraint (a valid cut: it removes no schedule).
    ``deadline``: checked at every slot (:class:`TimeUp` when it has passed)."""
    deadline = deadline or Deadline(None)
    m = cp_model.CpModel()
    n, num_gpus = data.num_queries, len(data.gpu_ids)
    latest = max([int(data.hard.max())] + [int(f) for f in (gpu_free or [])])
    horizon = latest + int(data.delay[data.delay >= 0].max())
    kmax = float(data.kappa.max())
    arrival, soft, hard = data.arrival.tolist(), data.soft.tolist(), data.hard.tolist()
    u: dict[tuple[int, int, int, int], Any] = {}
    x: dict[tuple[int, int, int], Any] = {}
    v: dict[tuple[int, int, int], Any] = {}
    start: dict[tuple[int, int], Any] = {}
    end: dict[tuple[int, int], Any] = {}
    used: dict[tuple[int, int], Any] = {}
    model_on: dict[tuple[int, int, int], Any] = {}
    for g in range(num_gpus):
        t = int(data.gpu_type[g])
        options = [(mi, s) for mi in range(len(data.models))
                   for s in range(len(data.batch_sizes)) if data.delay[mi, t, s] >= 0]
        d_min = min(int(data.delay[mi, t, s]) for mi, s in options)
        for k in range(slots[g]):
            deadline.check("building the inference window model")
            start[g, k] = m.NewIntVar(0, horizon, f"start_{g}_{k}")
            end[g, k] = m.NewIntVar(0, horizon, f"end_{g}_{k}")
            for mi, s in options:
                u[g, k, mi, s] = m.NewBoolVar(f"u_{g}_{k}_{mi}_{s}")
            lits = [u[g, k, mi, s] for mi, s in options]
            used[g, k] = m.NewBoolVar(f"used_{g}_{k}")
            m.Add(sum(lits) == used[g, k])
            m.Add(end[g, k] == start[g, k] + sum(int(data.delay[mi, t, s]) * u[g, k, mi, s]
                                                 for mi, s in options))
            for mi in range(len(data.models)):
                own = [u[g, k, mi, s] for mm, s in options if mm == mi]
                if own:
                    model_on[g, k, mi] = m.NewBoolVar(f"model_{g}_{k}_{mi}")
                    m.Add(sum(own) == model_on[g, k, mi])
            if k > 0:
                m.Add(used[g, k] <= used[g, k - 1])
                m.Add(start[g, k] >= end[g, k - 1])
            else:
                m.Add(start[g, k] >= max(int(data.arrival.min()),
                                         gpu_free[g] if gpu_free else 0))
            cap = sum(data.batch_sizes[s] * u[g, k, mi, s] for mi, s in options)
            members = []
            first_start = int(data.arrival.min()) + k * d_min
            for q in range(n):
                if first_start + d_min > hard[q] or (hard[q] == soft[q]
                                                      and first_start + d_min > soft[q]):
                    continue  # this slot cannot end in time to give q any quality
                xv = m.NewBoolVar(f"x_{q}_{g}_{k}")
                x[q, g, k] = xv
                members.append(xv)
                m.AddImplication(xv, used[g, k])
                m.Add(start[g, k] >= arrival[q]).OnlyEnforceIf(xv)
                top = int(round(scale * kmax))
                vv = m.NewIntVar(0, top, f"v_{q}_{g}_{k}")
                v[q, g, k] = vv
                m.Add(vv <= top * xv)
                span = hard[q] - soft[q]
                for mi in range(len(data.models)):
                    if (g, k, mi) not in model_on:
                        continue
                    sk = scale * float(data.kappa[mi])
                    lit = model_on[g, k, mi]
                    m.Add(vv <= int(math.floor(sk + 1e-9))).OnlyEnforceIf(lit)
                    if span > 0:
                        # v · span <= S κ (hard − end), integral when the scale is exact
                        num = Fraction(sk).limit_denominator(10**9)
                        m.Add(vv * span * num.denominator
                              <= num.numerator * (hard[q] - end[g, k])).OnlyEnforceIf([lit, xv])
                    else:
                        m.Add(end[g, k] <= soft[q]).OnlyEnforceIf(xv)
            if members:
                m.Add(sum(members) <= cap)
                for mi, si in options:  # the size is the smallest supported one that fits
                    smaller = [data.batch_sizes[s2] for mm, s2 in options
                               if mm == mi and s2 < si]
                    if smaller:
                        m.Add(sum(members) >= max(smaller) + 1).OnlyEnforceIf(u[g, k, mi, si])
            else:
                m.Add(used[g, k] == 0)
    top = int(round(scale * kmax))
    total = []
    for q in range(n):
        keys = [key for key in x if key[0] == q]
        if not keys:
            continue
        if len(keys) > 1:
            m.AddAtMostOne([x[key] for key in keys])
        value = m.NewIntVar(0, top, f"value_{q}")  # Q_q scaled: at most one v is non-zero
        m.Add(value == sum(v[key] for key in keys))
        total.append(value)
    for g in range(1, num_gpus):
        if interchangeable(data, slots, gpu_free, g):
            m.Add(sum(used[g, k] for k in range(slots[g]))
                  <= sum(used[g - 1, k] for k in range(slots[g - 1])))
    if objective_cap is not None:
        m.Add(sum(total) <= objective_cap)
    m.Maximize(sum(total))
    return m, u, x, start, used


def _hint(model, data: InferenceData, hint: InferenceDecision, u, x, start, used, slots,
          gpu_free: list[int] | None = None) -> bool:
    """Hint ``hint``'s batches slot by slot; False when they do not fit the slots."""
    per_gpu: dict[int, list[Batch]] = {}
    for b in hint.batches:
        per_gpu.setdefault(data.gpu_index[b.gpu], []).append(b)
    for g, rows in per_gpu.items():
        rows.sort(key=lambda b: b.start)
        if len(rows) > slots[g]:
            return False
    # the model orders interchangeable GPUs by their batch counts: hand the busiest
    # sequences to the first GPU of each run of interchangeable ones
    twins = [(g - 1, g) for g in range(1, len(data.gpu_ids))
             if interchangeable(data, slots, gpu_free, g)]
    relabel = relabel_in_runs(chained_runs(twins), lambda g: len(per_gpu.get(g, [])))
    per_gpu = {relabel.get(g, g): rows for g, rows in per_gpu.items()}
    for g in range(len(data.gpu_ids)):
        rows = per_gpu.get(g, [])
        t = int(data.gpu_type[g])
        for k in range(slots[g]):
            b = rows[k] if k < len(rows) else None
            model.AddHint(used[g, k], b is not None)
            mi = data.model_index[b.model] if b else -1
            s = data.table_size(mi, t, len(b.queries)) if b else -1
            for (gg, kk, mm, ss), var in u.items():
                if gg == g and kk == k:
                    model.AddHint(var, mm == mi and ss == s)
            if b is not None:
                model.AddHint(start[g, k], b.start)
            members = set(b.queries) if b else set()
            for (q, gg, kk), var in x.items():
                if gg == g and kk == k:
                    model.AddHint(var, q in members)
    return True


HINT_SECONDS, HINT_SHARE = 5.0, 0.25
"""Completing the warm start takes at most this many seconds and this share of the time
left (the rest is CP-SAT's)."""


def _complete_hint(model: cp_model.CpModel, time_limit: float | None) -> bool:
    """Extend a partial hint to every variable (a solve with the hinted values fixed), so
    the search starts from the hinted schedule; a hint that does not complete is dropped
    (False)."""
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = (HINT_SECONDS if time_limit is None
                                             else min(HINT_SECONDS, HINT_SHARE * time_limit))
    solver.parameters.catch_sigint_signal = False  # as in run_cpsat
    with stopping_on_interrupt(solver.stop_search):
        code = solver.Solve(model)
    model.ClearHints()
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    for i in range(len(model.Proto().variables)):
        var = model.GetIntVarFromProtoIndex(i)
        model.AddHint(var, solver.Value(var))
    return True


def solve_window(instance: Instance, *, time_limit: float | None, seed: int = 0,
                 max_batches: int | None = None, hint: InferenceDecision | None = None,
                 workers: int = 1, gpu_free: list[int] | None = None,
                 upper: float | None = None) -> MethodOutput:
    """Build and solve the window model; the decision is re-timed to its smallest sizes.

    ``upper``: a proven upper bound on Σ Q (e.g. the Lagrangian one); it becomes the cut
    Σ v <= floor(S · upper) (valid when every v is at most S times its Q, as here), and
    the reported bound is the smaller of it and the solver's.
    """
    deadline = Deadline(time_limit)
    t0 = deadline.start
    data = inference_data(instance)
    if data.num_queries == 0:
        return MethodOutput(InferenceDecision(), Status.OPTIMAL, bound=0.0)
    slots = [slot_bound(data, g) for g in range(len(data.gpu_ids))]
    restricted = False
    if max_batches is not None:
        if max_batches < 1:
            raise InputError(f"max_batches = {max_batches}", field="options.max_batches",
                             fix="use >= 1")
        restricted = any(max_batches < k for k in slots)
        slots = [min(k, max_batches) for k in slots]
    scale, exact_scale = quality_scale(data)
    objective_cap = None
    if upper is not None and not restricted:
        objective_cap = math.floor(upper * scale + 1e-6)
    try:
        model, u, x, start, used = build_model(data, slots, scale, gpu_free, objective_cap,
                                               deadline)
    except TimeUp as exc:
        if hint is None or restricted or not _usable_warm_start(instance, data, hint,
                                                                gpu_free):
            return MethodOutput(None, Status.NO_SOLUTION, build_time=time.perf_counter() - t0,
                                message=str(exc))
        # the time ran out before CP-SAT could start: the checked warm start is the answer
        return MethodOutput(hint, Status.FEASIBLE, upper, build_time=time.perf_counter() - t0,
                            message=f"{exc}; the schedule is the warm start, unimproved",
                            extra={"warm_start_returned": True, "hint_used": False})
    hint_used = None
    if hint is not None:
        hint_used = (_hint(model, data, hint, u, x, start, used, slots, gpu_free)
                     and _complete_hint(model, deadline.remaining()))
    build = time.perf_counter() - t0
    run = run_cpsat(model, deadline.remaining(), seed, workers=workers)
    decision = bound = None
    status = run.status
    message = ""
    if status.has_solution:
        decision = _read_decision(data, run.solver, u, x, start, slots, gpu_free)
        slack = 0.0 if exact_scale else data.num_queries
        bound = (run.bound + slack) / scale
        if upper is not None and upper < bound:
            bound = upper
    elif status is Status.NO_SOLUTION and hint is not None and (hint_used or (
            not restricted and _usable_warm_start(instance, data, hint, gpu_free))):
        # CP-SAT spent the time before its search (presolve of a large slot model); the
        # warm start is a checked solution of this model (or, when the time ran out before
        # that check, of the problem: the validator passed it), so it is the incumbent
        decision, status, bound = hint, Status.FEASIBLE, None if restricted else upper
        message = ("CP-SAT found no solution in the time left; the schedule is the warm "
                   "start, unimproved")
    if (status is Status.FEASIBLE and upper is not None and not restricted
            and decision is not None
            and proven_optimal(float(query_qualities(data, decision).sum()), upper, scale,
                               exact_scale)):
        status = Status.OPTIMAL  # the schedule meets the proven upper bound
    if restricted:
        restriction = (f"at most {max_batches} batches per GPU (a restriction): the bound "
                       "holds only for such schedules")
        message = f"{message}; {restriction}" if message else restriction
        if status is Status.OPTIMAL:
            status = Status.FEASIBLE
        bound = None
    return MethodOutput(decision, status, bound, model_size(model), build, run.log, message,
                        extra={"solve_time": run.solve_time, "scale": scale,
                               "exact_scale": exact_scale, "slots": slots,
                               "hint_used": hint_used,
                               "warm_start_returned": decision is hint and hint is not None})


def _usable_warm_start(instance: Instance, data: InferenceData, hint: InferenceDecision,
                       gpu_free: list[int] | None) -> bool:
    """True when ``hint`` passes the validator and starts no batch before its GPU is free."""
    if not validate(instance, hint).ok:
        return False
    free = gpu_free or [0] * len(data.gpu_ids)
    return all(b.start >= free[data.gpu_index[b.gpu]] for b in hint.batches)


def _read_decision(data: InferenceData, solver, u, x, start, slots,
                   gpu_free: list[int] | None = None) -> InferenceDecision:
    members: dict[tuple[int, int], list[int]] = {}
    for (q, g, k), var in x.items():
        if solver.Value(var):
            members.setdefault((g, k), []).append(q)
    out = []
    for g in range(len(data.gpu_ids)):
        t = int(data.gpu_type[g])
        free = gpu_free[g] if gpu_free else 0
        for k in range(slots[g]):
            qs = sorted(members.get((g, k), []))
            if not qs:
                continue
            mi = next(mm for (gg, kk, mm, _s), var in u.items()
                      if gg == g and kk == k and solver.Value(var))
            d = data.duration(mi, t, len(qs))
            # left-shifted: never later than the solver's start (same duration, same order)
            s0 = max(free, max(int(data.arrival[q]) for q in qs))
            out.append(Batch(data.gpu_ids[g], data.models[mi], s0, s0 + d, tuple(qs)))
            free = s0 + d
    return InferenceDecision(batches=tuple(out))


def run_exact(instance: Instance, *, backend: str | None = "cpsat",
              time_limit: float | None = 60.0, seed: int = 0, **options) -> MethodOutput:
    """The registered ``exact`` method.

    Options: ``max_batches``; ``hint`` (a serving policy name, default ``heuristic``, null:
    none; its schedule warm-starts the solver); ``workers``; ``gpu_free`` (per GPU, in
    cluster order, the ms from which it is free, for a window that follows another as in
    the ``exact-window`` oracle; default all 0); ``lagrange`` (default 0: off): that many
    subgradient iterations of the Lagrangian bound (:mod:`.inference_lagrange`, at most a third of
    the time limit) first; its bound caps the objective (a valid cut), is reported when
    smaller than the solver's, and proves optimal a schedule that meets it; its repaired
    schedule is the warm start when better than the policy's.
    """
    check_options(options, ("max_batches", "hint", "workers", "lagrange", "gpu_free"))
    check_option_values(options, {"workers": ("int", 0, 1024), "max_batches": ("int", 1, None),
                                  "lagrange": ("int", 0, None), "hint": ("str", None, None)},
                        ("max_batches", "lagrange", "hint"))
    deadline = Deadline(time_limit)
    hint_name = options.get("hint", "heuristic")
    hint = None
    data = inference_data(instance)
    gpu_free = _gpu_free(options.get("gpu_free"), len(data.gpu_ids))
    if hint_name:
        hint = policy_schedule(instance, hint_name)
    upper = None
    iterations = int(options.get("lagrange", 0) or 0)
    if iterations and data.num_queries:
        hint_val = -1.0 if hint is None else float(query_qualities(data, hint).sum())
        share = None if time_limit is None else min(time_limit / 3, deadline.remaining())
        lag = lagrangian_bound(data, gpu_free=gpu_free, lower=max(hint_val, 0.0),
                               iterations=iterations, time_limit=share, repair_every=10)
        upper = lag.bound
        if lag.decision is not None and lag.value > hint_val:
            hint = lag.decision
    return solve_window(instance, time_limit=deadline.remaining(), seed=seed,
                        max_batches=options.get("max_batches"), hint=hint,
                        workers=int(options.get("workers", 1)), gpu_free=gpu_free,
                        upper=upper)


def _gpu_free(value: object, num_gpus: int) -> list[int] | None:
    """Option ``gpu_free`` checked: ``None``, or one integer ms >= 0 per GPU."""
    if value is None:
        return None
    if (not isinstance(value, list | tuple) or len(value) != num_gpus
            or any(type(v) is not int or v < 0 for v in value)):
        raise InputError(f"gpu_free = {value!r}"[:80], field="options.gpu_free",
                         fix=f"give {num_gpus} integers >= 0 (ms), one per GPU in cluster order")
    return list(value)


register_method(MethodSpec(
    problem="inference", name="exact", kind="exact", run=run_exact, backends=("cpsat",),
    default_backend="cpsat",
    summary="offline window optimum: slot model, CP-SAT (Σ Q exact at the chosen scale)",
))

