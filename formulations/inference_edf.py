"""Exact optimum of an ``inference`` window WITHIN the EDF-contiguous class (a DP).

The class C (a restriction, stated): sort the window's queries by (soft deadline,
arrival, index) into π. A schedule is in C when (1) every batch is a run of consecutive
queries of π, (2) every GPU runs its batches in π order, and (3) a dropped query is never
inside a batch's run. Within C, starting each batch as early as possible (its GPU free
and its queries arrived) is optimal, since Q never increases with the end time.

Dynamic programme over π: a state after the first i queries is the vector of GPU free
times; a transition drops π_i or puts π_i..π_{i+L−1} into one batch of model M on GPU g.
States with the same i are pruned by Pareto dominance (every free time <= and value >=
another's: anything the dominated one can still do, the other can do at least as well).
What is proved: the returned value is the maximum of Σ Q over C, exactly (rational
arithmetic is not needed: values are summed in float64 from the same Eq. 1 the
evaluator uses). It is NOT a bound for schedules outside C: the ``exact`` CP-SAT
method is the unrestricted model. Registered as method ``edf-dp`` (kind "heuristic"
for the full problem: it never claims optimality there).
"""

from __future__ import annotations

import time

import numpy as np

from dlsched.instance import Instance
from dlsched.problems.inference import Batch, InferenceDecision, inference_data
from dlsched.registry import MethodSpec, check_option_values, check_options, register_method
from dlsched.result import Status
from dlsched.solve import MethodOutput


def edf_order(data) -> np.ndarray:
    """π: query indices sorted by (soft, arrival, index)."""
    n = data.num_queries
    return np.lexsort((np.arange(n), data.arrival, data.soft))


class _Stopped(Exception):
    """The DP ran past its time or state limit (the reason is the message)."""


def solve_edf(instance: Instance, *, gpu_free: list[int] | None = None,
              max_states: int = 2_000_000, beam: int = 64,
              deadline: float | None = None
              ) -> tuple[InferenceDecision | None, float, dict]:
    """The class-C optimum (decision, Σ Q, stats) or, past a limit, the beam schedule.

    First a beam pass gives a schedule in C and its value LB: per layer, the 16 · ``beam``
    states of highest value are filtered for Pareto dominance and the ``beam`` best kept
    (the filter is quadratic in the layer's size; trimming first made a 200-query, 2-GPU
    window's pass 11 times faster with the same value on the windows measured). The exact
    pass then discards a state when its value plus an upper bound on what the remaining
    queries can still earn (each query alone, on the GPU free earliest, with the fastest
    batch) is below LB. ``beam = 0`` skips the first pass.

    ``deadline`` (a ``time.perf_counter()`` value) and ``max_states`` (states kept over
    all layers of one pass) stop a pass: the exact pass stopped returns the beam pass's
    schedule; the beam pass stopped (or skipped, then the exact one stopped) returns no
    decision (``None``, value -1). ``stats["complete"]`` says whether the class optimum
    was reached and ``stats["stopped"]`` why not.
    """
    lb, first = -1.0, None
    if beam:
        try:
            first, lb, _s = _dp(instance, gpu_free, max_states, beam, -1.0, deadline)
        except _Stopped as stop:
            return None, -1.0, {"complete": False, "stopped": str(stop), "beam_value": None}
    try:
        decision, value, stats = _dp(instance, gpu_free, max_states, 0, lb, deadline)
    except _Stopped as stop:
        return first, lb, {"complete": False, "stopped": f"{stop} (the beam pass's schedule)",
                           "beam_value": lb if first is not None else None}
    stats.update(complete=True, stopped=None, beam_value=lb if beam else None)
    return decision, value, stats


def edf_beam_schedule(instance: Instance, *, beam: int = 16, deadline: float | None = None
                      ) -> tuple[InferenceDecision | None, float]:
    """The beam pass alone: a schedule in C and its Σ Q, or ``(None, -1.0)`` past
    ``deadline`` (a ``time.perf_counter()`` value). A fast primal for other methods."""
    try:
        decision, value, _stats = _dp(instance, None, 2_000_000, beam, -1.0, deadline)
    except _Stopped:
        return None, -1.0
    return decision, value


def _dp(instance: Instance, gpu_free, max_states: int, beam: int, lb: float,
        deadline: float | None):
    data = inference_data(instance)
    n, num_gpus = data.num_queries, len(data.gpu_ids)
    pi = edf_order(data)
    arr = data.arrival[pi].astype(np.int64)
    soft = data.soft[pi].astype(float)
    hard = data.hard[pi].astype(float)
    span = hard - soft
    types = data.gpu_type.tolist()
    # per (model, type): durations for L = 1..Lmax (padded to the smallest supported size)
    dur: dict[tuple[int, int], np.ndarray] = {}
    for m in range(len(data.models)):
        for t in set(types):
            lmax = data.max_batch(m, t)
            if lmax:
                dur[m, t] = np.array([data.duration(m, t, L) for L in range(1, lmax + 1)])
    # identical GPUs: canonical order of free times within each type group
    groups: dict[int, list[int]] = {}
    for g, t in enumerate(types):
        groups.setdefault(t, []).append(g)

    def canon(free: tuple[int, ...]) -> tuple[int, ...]:
        out = list(free)
        for members in groups.values():
            vals = sorted(out[g] for g in members)
            for g, v in zip(members, vals, strict=True):
                out[g] = v
        return tuple(out)

    start_free = tuple(int(x) for x in (gpu_free or [0] * num_gpus))
    d_fast = min(int(d.min()) for d in dur.values())
    kmax = float(data.kappa.max())

    def upper(i: int, free: tuple[int, ...]) -> float:
        """What queries π_i.. can still earn at most (each alone, earliest GPU, fastest)."""
        if i >= n:
            return 0.0
        e = np.maximum(min(free), arr[i:]) + d_fast
        with np.errstate(divide="ignore", invalid="ignore"):
            lin = np.where(span[i:] > 0, (hard[i:] - e) / np.where(span[i:] > 0, span[i:], 1),
                           0.0)
        return kmax * float(np.where(e <= soft[i:], 1.0, np.clip(lin, 0.0, 1.0)).sum())

    # layer[i]: dict free-vector -> (value, parent key, action)
    layers: list[dict] = [dict() for _ in range(n + 1)]
    layers[0][canon(start_free)] = (0.0, None, None)
    explored = 0
    for i in range(n):
        layer = layers[i]
        if beam and len(layer) > 16 * beam:
            layer = {k: layer[k] for k in sorted(layer, key=lambda k: -layer[k][0])[:16 * beam]}
        layer = _pareto(layer, deadline)
        if lb >= 0:
            layer = {k: v for k, v in layer.items() if v[0] + upper(i, k) >= lb - 1e-9}
        if beam and len(layer) > beam:
            top = sorted(layer, key=lambda k: -layer[k][0])[:beam]
            layer = {k: layer[k] for k in top}
        layers[i] = layer
        explored += len(layer)
        if explored > max_states:
            raise _Stopped(f"state limit: more than {max_states} DP states")
        _check_clock(deadline)
        cummax = np.maximum.accumulate(arr[i:])
        for k, (free, (val, _p, _a)) in enumerate(layer.items()):
            if k % 256 == 255:
                _check_clock(deadline)
            # drop π_i
            _offer(layers[i + 1], free, val, (i, free), ("drop",))
            seen_gpu: set[tuple[int, int]] = set()
            for g in range(num_gpus):
                t = types[g]
                if (t, free[g]) in seen_gpu:
                    continue  # an identical GPU free at the same time: same options
                seen_gpu.add((t, free[g]))
                for (m, tt), d in dur.items():
                    if tt != t:
                        continue
                    lmax = min(d.size, n - i)
                    starts = np.maximum(free[g], cummax[:lmax])
                    ends = starts + d[:lmax]  # end of a batch of L = 1..lmax
                    e = ends[:, None].astype(float)
                    s_ = soft[i:i + lmax][None, :]
                    h_ = hard[i:i + lmax][None, :]
                    sp = span[i:i + lmax][None, :]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        lin = np.where(sp > 0, (h_ - e) / np.where(sp > 0, sp, 1.0), 0.0)
                    v = np.where(e <= s_, 1.0, np.clip(lin, 0.0, 1.0))
                    v = np.tril(v)  # row L-1 counts queries 0..L-1
                    gains = data.kappa[m] * v.sum(axis=1)
                    for L in range(1, lmax + 1):
                        nf = list(free)
                        nf[g] = int(ends[L - 1])
                        _offer(layers[i + L], canon(tuple(nf)), val + float(gains[L - 1]),
                               (i, free), ("batch", g, m, L, int(starts[L - 1]),
                                           int(ends[L - 1]), free[g]))
        layers[i] = layer
    final = _pareto(layers[n], deadline)
    best_key = max(final, key=lambda k: final[k][0])
    best_val = final[best_key][0]
    # walk back
    batches: list[Batch] = []
    key, i = best_key, n
    while i > 0:
        _val, parent, action = layers[i][key]
        pi_i, pkey = parent
        if action[0] == "batch":
            _, g, m, L, s0, e0, was_free = action
            batches.append((Batch(data.gpu_ids[g], data.models[m], s0, e0,
                                  tuple(int(q) for q in pi[pi_i:pi_i + L])), was_free))
        key, i = pkey, pi_i
    batches.reverse()
    # states keep identical GPUs' free times sorted: replay in π order to name the GPU
    decision = InferenceDecision(batches=tuple(_relabel(batches, data, start_free)))
    return decision, best_val, {"states": explored}


def _offer(layer: dict, free: tuple[int, ...], val: float, parent, action) -> None:
    old = layer.get(free)
    if old is None or val > old[0] + 1e-12:
        layer[free] = (val, parent, action)


def _check_clock(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise _Stopped("time limit")


def _pareto(layer: dict, deadline: float | None) -> dict:
    """Drop states dominated by another (all free times <= and value >=)."""
    if len(layer) <= 1:
        return layer
    keys = list(layer)
    f = np.array(keys, dtype=np.int64)
    v = np.array([layer[k][0] for k in keys])
    order = np.lexsort((-v, f.sum(axis=1)))
    kept: list[int] = []
    for n, idx in enumerate(order):
        if n % 256 == 255:
            _check_clock(deadline)
        if kept:
            kf, kv = f[kept], v[kept]
            if np.any(np.all(kf <= f[idx], axis=1) & (kv >= v[idx] - 1e-12)):
                continue
        kept.append(int(idx))
    return {keys[i]: layer[keys[i]] for i in kept}


def _relabel(batches, data, start_free) -> list[Batch]:
    """Name each batch's GPU: replayed in π order, a GPU of the batch's type whose free
    time is the one the DP used (one exists: the DP tracked each group's free times)."""
    free = list(start_free)
    out = []
    for b, was_free in batches:
        t = int(data.gpu_type[data.gpu_index[b.gpu]])
        g = min(g for g in range(len(data.gpu_ids))
                if int(data.gpu_type[g]) == t and free[g] == was_free)
        free[g] = b.end
        out.append(Batch(data.gpu_ids[g], b.model, b.start, b.end, b.queries))
    return out


def run_edf(instance: Instance, *, backend=None, time_limit=None, seed: int = 0,
            **options) -> MethodOutput:
    """Registered method ``edf-dp``: the class-C optimum (never claimed optimal overall).

    Options: ``max_states`` (default 2,000,000 per pass). ``time_limit`` covers both
    passes; past either limit the beam schedule is returned (status ``feasible``, the
    message says the class optimum was not reached), or no decision when even the beam
    pass did not finish (status ``no_solution``).
    """
    check_options(options, ("max_states",))
    check_option_values(options, {"max_states": ("int", 1, None)})
    max_states = int(options.get("max_states", 2_000_000))
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    decision, value, stats = solve_edf(instance, max_states=max_states, deadline=deadline)
    seconds = time.perf_counter() - t0
    extra = {"class_optimum": value if stats["complete"] else None, **stats}
    if decision is None:
        return MethodOutput(None, Status.NO_SOLUTION, None, build_time=seconds,
                            message=f"no schedule: {stats['stopped']} in the beam pass",
                            extra=extra)
    message = ("optimal within the EDF-contiguous class (not overall)" if stats["complete"]
               else f"stopped at the {stats['stopped']}: the class optimum was not reached")
    return MethodOutput(decision, Status.FEASIBLE, None, build_time=seconds,
                        message=message, extra=extra)


register_method(MethodSpec(
    problem="inference", name="edf-dp", kind="heuristic", run=run_edf,
    summary="DP optimum within EDF-contiguous batch schedules (a restricted class)",
))
