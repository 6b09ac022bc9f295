"""A proven upper bound on Σ Q of an ``inference`` window: Lagrangian relaxation.

Relax "each query is served at most once" with multipliers λ_q >= 0. For ANY λ >= 0,

    OPT <= L(λ) = Σ_q λ_q + Σ_g P_g(λ),

where P_g(λ) is the best value of a batch sequence on GPU g alone in which queries may be
reused across batches and a batch (start S, model m, table size s) earns the sum of the
``B_s`` largest positive terms κ_m V_q(S + D_{m,s}) − λ_q over the queries arrived by S.
Proof: a feasible schedule's Σ Q equals Σ_b Σ_{q∈b} (κ V − λ_q) + Σ_{q served} λ_q; the
first sum is at most Σ_g P_g (each GPU's batches form one such sequence; a real batch of
n <= B_s members is one of the candidates, its duration being the table entry of the
smallest supported size >= n, i.e. of some supported s with B_s >= n), the second at most
Σ_q λ_q (λ >= 0, each query served at most once).

P_g(λ) is computed EXACTLY by a backward dynamic programme over integer start times
t = t_lo .. t_end (every batch of a decision starts at an integer ms):
V(t) = max(V(t + 1), max_c w_c(t) + V(t + D_c)), V(t) = 0 for t >= t_end = max hard
deadline (a batch starting there earns no positive term, so dropping it from a sequence
never lowers the sum). t_lo = max(first arrival, GPU free time): no real batch starts
earlier. Identical GPUs (same type, same free time) share one P.

λ is improved by projected subgradient steps λ ← max(0, λ − μ L(λ) g / ‖g‖²) (g the
subgradient, 1 − how often each query is used), μ halved after :data:`STALL_ITERATIONS`
steps without a lower L; the bound reported is the smallest L(λ) seen (each one is valid).
Why not the usual Polyak step toward a known schedule's value: measured on congested
200-query, 2-GPU windows, its steps were too short, and it ended with worse bounds and,
through the repairs made from λ, worse schedules.
**Column generation** then moves λ further (:mod:`.inference_colgen`; on by default).
The best L(λ) over λ equals the value of the LP over per-GPU batch sequences (the ones the
DP above prices: max Σ_c v_c x_c with each query used at most once in total and at most
as many sequences per GPU group as it has GPUs), and subgradient steps stall above it:
measured on congested 50-query, 2-GPU windows, 0.01-0.26 above the LP value after they
stopped by themselves. So a restricted master LP over the sequences found so far (from
the first: every sequence the subgradient steps priced) is solved (one HiGHS model that
each new sequence re-solves from the last basis); its query duals are where the next λ is
priced, smoothed toward the best λ so far
(α·λ_best + (1 − α)·λ_LP, α = :data:`SMOOTHING`, which cuts the iterations several-fold)
and taken unsmoothed when the smoothed point gives no new sequence. Every priced λ is ≥ 0,
so every L(λ) is a bound by the argument above; the master LP only chooses where to price,
and it stops when the bound meets the master's value (the LP is then solved), meets a
known schedule, or at the time limit.
Float sums: the reported bound adds 1e-9 · (n + 1) to cover rounding of the sums.
A decision's batches last their delay-table entries whatever ``delay_cv`` (the noise of
simulated runs only), so the bound holds for every instance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dlsched.instance import Instance
from dlsched.problems.inference import (
    InferenceData,
    InferenceDecision,
    inference_data,
    query_qualities,
)
from dlsched.registry import BOOL, MethodSpec, check_option_values, check_options, register_method
from dlsched.result import MethodOutput, Status

from .inference_colgen import column_generation_bound
from .inference_edf import beam_pass
from .inference_improve import improve
from .inference_pricing import GpuPricer, repair_schedule, standalone_values
from .inference_scale import proven_optimal, quality_scale
from .inference_warm import policy_schedule


@dataclass
class LagrangeResult:
    """The best bound found, the λ that gave it, and how the iterations went."""

    bound: float
    lam: np.ndarray
    iterations: int
    seconds: float
    history: list[float]
    decision: InferenceDecision | None = None
    value: float = -1.0  # Σ Q of ``decision`` (-1 when none was built)
    repairs: list[tuple[float, InferenceDecision]] | None = None  # every repair, by Σ Q
    cg_iterations: int = 0  # column-generation pricing rounds
    lp_value: float | None = None  # the last master LP's value (None: not solved)


STALL_ITERATIONS = 10
"""Subgradient steps without a better bound after which the step factor μ is halved
(measured: 5 halved μ too early on congested windows; 20 was no better than 10)."""


def lagrangian_bound(data: InferenceData, *, gpu_free: list[int] | None = None,
                     lower: float = 0.0, iterations: int = 200,
                     time_limit: float | None = 30.0,
                     lam0: np.ndarray | None = None, repair_every: int = 0,
                     column_generation: bool = True, cg_iterations: int = 3000
                     ) -> LagrangeResult:
    """A valid upper bound min over the λ tried of L(λ) (module docstring).

    ``lower`` (a known feasible Σ Q) stops the iterations once the bound meets it; it
    does not affect the steps or the bound's validity.
    ``time_limit`` is wall-clock seconds (checked between iterations). With
    ``column_generation``, :func:`.inference_colgen.column_generation_bound` (at most
    ``cg_iterations`` rounds) takes the time the subgradient steps leave: they go first and stop by
    themselves once stalled (measured: 50-query, 2-GPU congested windows after ~300 steps,
    7 s; on the congested 200-query windows 1750, 2000 and 2500 of the default benchmark
    the 300 steps take ~20 s, and column generation then reaches the LP value of window
    2000, 188.396, in ~60 s in all, and takes window 1750 to 192.54 and 2500 to 194.81 in
    60 s; before the faster pricer and master of 2026-11-23 it needed 300 s to reach
    192.57 on window 1750).
    ``repair_every`` > 0: every so many iterations (and at the first), a feasible schedule
    is built from λ (:func:`repair_schedule`); the best one is returned and its Σ Q
    raises ``lower``.
    """
    t0 = time.process_time()
    wall0 = time.perf_counter()
    n = data.num_queries
    num_gpus = len(data.gpu_ids)
    free = [int(x) for x in (gpu_free or [0] * num_gpus)]
    groups: dict[tuple[int, int], int] = {}
    for g in range(num_gpus):
        key = (int(data.gpu_type[g]), free[g])
        groups[key] = groups.get(key, 0) + 1
    pricers = {key: GpuPricer(data, key[0], key[1]) for key in groups}
    # default start: λ_q = the most q can earn at all (every reduced value <= 0 there, so
    # L = Σ_q λ_q: the per-query bound, never above n · κ_max)
    lam = standalone_values(data, free) if lam0 is None else np.maximum(
        np.asarray(lam0, float), 0.0)
    best, best_lam = np.inf, lam.copy()
    mu, stall = 1.0, 0
    history = []
    it = 0
    best_dec, best_val = None, -1.0
    repairs: list[tuple[float, InferenceDecision]] = []
    priced: list[tuple[tuple[int, int], list]] = []
    for it in range(1, iterations + 1):
        if repair_every and (it - 1) % repair_every == 0:
            dec = repair_schedule(data, pricers, lam, free)
            val = float(query_qualities(data, dec).sum())
            repairs.append((val, dec))
            if val > best_val:
                best_dec, best_val = dec, val
                lower = max(lower, val)
        total = float(lam.sum())
        count = np.zeros(n)
        for key, mult in groups.items():
            val, seq = pricers[key].price(lam)
            total += mult * val
            priced.append((key, seq))
            for _s, _k, members in seq:
                count[members] += mult
        history.append(total)
        if total < best - 1e-9:
            best, best_lam, stall = total, lam.copy(), 0
        else:
            stall += 1
            if stall >= STALL_ITERATIONS:
                mu, stall = mu / 2, 0
        grad = 1.0 - count  # ∂L/∂λ_q
        # projected: at λ_q = 0 a positive gradient cannot be followed
        grad = np.where((lam <= 0) & (grad > 0), 0.0, grad)
        norm = float((grad**2).sum())
        if norm == 0 or best - lower <= 1e-9 or mu < 1e-4:
            break
        if time_limit is not None and time.perf_counter() - wall0 > time_limit:
            break
        step = mu * total / norm
        lam = np.maximum(lam - step * grad, 0.0)
    cg_rounds, lp_value = 0, None
    if column_generation and best - lower > 1e-9:
        left = None if time_limit is None else time_limit - (time.perf_counter() - wall0)
        if left is None or left > 0:
            cg = column_generation_bound(data, pricers, groups, best_lam, lower=lower,
                                         time_limit=left, iterations=cg_iterations,
                                         columns=priced)
            cg_rounds, lp_value = cg.iterations, cg.lp_value
            history.extend(cg.history)
            if cg.bound < best:
                best, best_lam = cg.bound, cg.lam
    slack = 1e-9 * (n + 1)
    repairs.sort(key=lambda r: -r[0])
    return LagrangeResult(best + slack, best_lam, it, time.process_time() - t0, history,
                          best_dec, best_val, repairs, cg_rounds, lp_value)


def _distinct(rows: list[tuple[float, InferenceDecision]]):
    """Rows with distinct values (rounded to 1e-9), in the given order."""
    seen: set[float] = set()
    for v, d in rows:
        key = round(v, 9)
        if key not in seen:
            seen.add(key)
            yield v, d


BEAM_SHARE = 0.1
"""Most of ``lagrange``'s time limit the EDF beam pass may take (it comes out of the
local search's share; the bound's share is left whole)."""


EDF_BEAM_MAX = 256
"""Widest EDF beam ``lagrange`` tries by default (widths double from ``edf_beam``).
Measured (seed-0 streams, delay CV 0): on the congested 50-query window 0-50 of g2:2 × 2.0
the beam's Σ Q was 46.711 at width 8 and 47.453 at 32 (128, 512 and 2,048 gave the same),
where the whole ``lagrange`` run (width 8, then repairs and local search, 60 s) ended at
46.931; on the congested 200-query windows 1750 and 2000 of p2:2 × 1.8, 179.4 and 163.3 at
8 (1.4 and 2.0 CPU-s with the vectorized DP), 187.3 and 181.7 at 32 (3.5 and 3.1 s), 189.8
and 182.6 at 128 (12 s), 189.9 and 183.4 at 256 (24 and 28 s)."""


def widening_beam(instance: Instance, first: int, widest: int, most: float,
                  deadline: float | None) -> tuple[InferenceDecision | None, float, int]:
    """The EDF beam pass at widths ``first``, 2·``first``, ... up to ``widest``: the best
    schedule, its Σ Q and its width (``(None, -1.0, 0)`` when not even the first finished
    by ``deadline``). Stops early once a schedule earns ``most`` (the per-query bound) or
    a width does not finish by ``deadline`` (a ``time.perf_counter()`` value), or once a
    width's beam cut no state (a wider one would return the same schedule)."""
    best, best_val, best_width = None, -1.0, 0
    width = first
    while width <= widest:
        decision, value, cut = beam_pass(instance, width, deadline)
        if decision is None:
            break
        if value > best_val:
            best, best_val, best_width = decision, value, width
        if best_val >= most - 1e-9 or not cut:
            break
        width *= 2
    return best, best_val, best_width


def run_lagrange(instance: Instance, *, backend=None, time_limit: float | None = 60.0,
                 seed: int = 0, **options) -> MethodOutput:
    """Registered method ``lagrange``: a proven upper bound and a good schedule.

    The bound: :func:`lagrangian_bound` (``iterations``, default 300, at most
    ``bound_share`` = 0.5 of the time limit). The schedule: the best of the hint
    policy's (``hint``, default ``heuristic``; empty/None: none), the EDF beam pass of
    :mod:`.inference_edf` (:func:`widening_beam`: ``edf_beam`` states per layer first,
    default 8, 0: none, then twice as many while time is left and the last width's beam
    cut a state, up to ``edf_beam_max``, default :data:`EDF_BEAM_MAX`, never below
    ``edf_beam``; at most :data:`BEAM_SHARE` of
    the time limit, skipped when the policy's schedule already gives every query the most
    it can earn) and the best Lagrangian repair (every ``repair_every`` = 10 iterations),
    then improved by the skeleton local search of :mod:`.inference_improve` in the time
    left (``improve``: default True), restarted from up to three more repairs when it
    stops early. OPTIMAL only when the schedule meets the bound (:func:`proven_optimal`).
    With ``time_limit=None`` the bound runs its ``iterations`` and each local search runs
    to a local optimum: the result then depends on the instance and options only
    (reproducible); under a time limit it depends on the machine's speed, like CP-SAT's.
    """
    check_options(options, ("iterations", "repair_every", "hint", "improve", "bound_share",
                            "edf_beam", "edf_beam_max"))
    check_option_values(options, {"iterations": ("int", 1, None),
                                  "repair_every": ("int", 1, None),
                                  "bound_share": ("float>", 0, 1), "edf_beam": ("int", 0, None),
                                  "edf_beam_max": ("int", 1, None),
                                  "improve": BOOL,
                                  "hint": ("str", None, None)}, ("hint",))
    data = inference_data(instance)
    t0 = time.perf_counter()
    if data.num_queries == 0:
        return MethodOutput(InferenceDecision(), Status.OPTIMAL, bound=0.0)
    iterations = int(options.get("iterations", 300))
    repair_every = int(options.get("repair_every", 10))
    share = float(options.get("bound_share", 0.5))
    edf_beam = int(options.get("edf_beam", 8))
    edf_beam_max = max(int(options.get("edf_beam_max", EDF_BEAM_MAX)), edf_beam)
    hint_name = options.get("hint", "heuristic")
    cand, cand_val, source = None, -1.0, ""
    if hint_name:
        cand = policy_schedule(instance, hint_name)
        cand_val, source = float(query_qualities(data, cand).sum()), f"policy {hint_name}"
    most = float(standalone_values(data, [0] * len(data.gpu_ids)).sum())
    if edf_beam and cand_val < most - 1e-9:  # else every query earns its most already
        deadline = None if time_limit is None else t0 + BEAM_SHARE * time_limit
        beam_decision, beam_val, width = widening_beam(instance, edf_beam, edf_beam_max,
                                                       most, deadline)
        if beam_decision is not None and beam_val > cand_val:
            cand, cand_val = beam_decision, beam_val
            source = f"the EDF beam pass ({width} states per layer)"
    budget = None if time_limit is None else share * time_limit
    res = lagrangian_bound(data, lower=max(cand_val, 0.0), iterations=iterations,
                           time_limit=budget, repair_every=repair_every)
    if res.decision is not None and res.value > cand_val:
        cand, cand_val, source = res.decision, res.value, "Lagrangian repair"
    scale, exact_scale = quality_scale(data)
    improved_from = cand_val
    if options.get("improve", True) and cand is not None:
        # local search from several starts (the best schedule so far, then the next best
        # distinct repairs), each given an equal share of the time left
        starts = [cand] + [d for v, d in _distinct(res.repairs or []) if v < cand_val][:3]
        for i, start in enumerate(starts):
            if proven_optimal(cand_val, res.bound, scale, exact_scale):
                break
            left = (None if time_limit is None
                    else (time_limit - (time.perf_counter() - t0)) / (len(starts) - i))
            if left is not None and left <= 0:
                break
            better, value = improve(data, start, time_limit=left)
            if value > cand_val + 1e-9:
                cand, cand_val = better, value
                source = f"{source if i == 0 else 'a Lagrangian repair'} + local search"
    optimal = proven_optimal(cand_val, res.bound, scale, exact_scale)
    return MethodOutput(cand, Status.OPTIMAL if optimal else Status.FEASIBLE, res.bound,
                        build_time=time.perf_counter() - t0,
                        message=f"schedule from {source}; bound: Lagrangian relaxation",
                        extra={"iterations": res.iterations, "bound_cpu_seconds": res.seconds,
                               "lagrange_bound": res.bound, "repair_value": res.value,
                               "before_local_search": improved_from})


register_method(MethodSpec(
    problem="inference", name="lagrange", kind="bound", run=run_lagrange,
    summary="Lagrangian upper bound (proven) + repaired schedule; optimal only if they meet",
))
