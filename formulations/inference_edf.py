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
from dlsched.problems.inference import Batch, InferenceDecision, inference_data, utility
from dlsched.registry import MethodSpec, check_option_values, check_options, register_method
from dlsched.result import MethodOutput, Status


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
            first, lb, _states, _cut = _dp(instance, gpu_free, max_states, beam, -1.0,
                                           deadline)
        except _Stopped as stop:
            return None, -1.0, {"complete": False, "stopped": str(stop), "beam_value": None}
    try:
        decision, value, states, _cut = _dp(instance, gpu_free, max_states, 0, lb, deadline)
    except _Stopped as stop:
        return first, lb, {"complete": False, "stopped": f"{stop} (the beam pass's schedule)",
                           "beam_value": lb if first is not None else None}
    return decision, value, {"states": states, "complete": True, "stopped": None,
                             "beam_value": lb if beam else None}


def edf_beam_schedule(instance: Instance, *, beam: int = 16, deadline: float | None = None
                      ) -> tuple[InferenceDecision | None, float]:
    """The beam pass alone: a schedule in C and its Σ Q, or ``(None, -1.0)`` past
    ``deadline`` (a ``time.perf_counter()`` value). A fast primal for other methods."""
    decision, value, _cut = beam_pass(instance, beam, deadline)
    return decision, value


def beam_pass(instance: Instance, beam: int, deadline: float | None
              ) -> tuple[InferenceDecision | None, float, bool]:
    """:func:`edf_beam_schedule` and whether its beam cut a state: when it cut none (no
    layer had more states than it keeps), the pass is the exact one and any wider beam
    returns the same schedule."""
    try:
        decision, value, _states, cut = _dp(instance, None, 2_000_000, beam, -1.0, deadline)
    except _Stopped:
        return None, -1.0, True
    return decision, value, cut


GAIN_CELLS = 1 << 21
"""Most (state, batch length, member) cells of batch values computed at once (memory)."""


class _Layer:
    """The states after the first i queries of π, as arrays: GPU free times ``free``
    [k, G], value, and how each was reached (parent layer and row, and the action
    ``act``: -1s for a drop, else GPU, model, length, start, end, the GPU's free time)."""

    def __init__(self, free, value, parent_layer, parent_row, act) -> None:
        self.free, self.value = free, value
        self.parent_layer, self.parent_row, self.act = parent_layer, parent_row, act

    def take(self, rows: np.ndarray) -> _Layer:
        return _Layer(self.free[rows], self.value[rows], self.parent_layer[rows],
                      self.parent_row[rows], self.act[rows])


def _dp(instance: Instance, gpu_free, max_states: int, beam: int, lb: float,
        deadline: float | None):
    """One pass: its schedule, Σ Q, the states kept over all layers, and whether the
    beam (0: none) cut a state (:func:`_select`)."""
    data = inference_data(instance)
    n, num_gpus = data.num_queries, len(data.gpu_ids)
    pi = edf_order(data)
    arr = data.arrival[pi].astype(np.int64)
    soft = data.soft[pi].astype(float)
    hard = data.hard[pi].astype(float)
    types = data.gpu_type.tolist()
    # per (GPU, model): durations for L = 1..Lmax (padded to the smallest supported size)
    options: list[tuple[int, int, np.ndarray]] = []
    for g, t in enumerate(types):
        for m in range(len(data.models)):
            lmax = data.max_batch(m, t)
            if lmax:
                options.append((g, m, np.array([data.duration(m, t, L)
                                                for L in range(1, lmax + 1)], dtype=np.int64)))
    # identical GPUs: canonical order of free times within each type group
    groups: dict[int, list[int]] = {}
    for g, t in enumerate(types):
        groups.setdefault(t, []).append(g)
    twins = [np.array(members) for members in groups.values() if len(members) > 1]

    def canon(free: np.ndarray) -> np.ndarray:
        for members in twins:
            free[..., members] = np.sort(free[..., members], axis=-1)
        return free

    d_fast = min(int(d.min()) for _g, _m, d in options)
    kmax = float(data.kappa.max())

    def upper(i: int, free: np.ndarray) -> np.ndarray:
        """What queries π_i.. can still earn at most (each alone, earliest GPU, fastest)."""
        if i >= n:
            return np.zeros(len(free))
        e = np.maximum(free.min(axis=1)[:, None], arr[None, i:]) + d_fast
        return kmax * utility(e, soft[i:], hard[i:]).sum(axis=1)

    start_free = tuple(int(x) for x in (gpu_free or [0] * num_gpus))
    pools: list[list[_Layer]] = [[] for _ in range(n + 1)]
    pools[0].append(_Layer(canon(np.array([start_free], dtype=np.int64)), np.zeros(1),
                           np.full(1, -1), np.full(1, -1), np.full((1, 6), -1)))
    layers: list[_Layer | None] = [None] * (n + 1)
    explored, cut = 0, False
    for i in range(n + 1):
        _check_clock(deadline)
        layer, cut_here = _select(_merge(pools[i]), beam, lb, upper, i, deadline)
        cut = cut or cut_here
        pools[i] = []
        layers[i] = layer
        explored += len(layer.value)
        if explored > max_states:
            raise _Stopped(f"state limit: more than {max_states} DP states")
        if i == n:
            break
        k = len(layer.value)
        rows = np.arange(k)
        here = np.full(k, i)
        pools[i + 1].append(_Layer(layer.free, layer.value, here, rows, np.full((k, 6), -1)))
        cummax = np.maximum.accumulate(arr[i:])
        for g, m, d in options:
            lmax = min(d.size, n - i)
            starts = np.maximum(layer.free[:, g][:, None], cummax[None, :lmax])  # [k, L]
            ends = starts + d[None, :lmax]
            gains = np.empty((k, lmax))
            first_l = np.tri(lmax, dtype=bool)  # row L-1 counts queries 0..L-1
            chunk = max(1, GAIN_CELLS // (lmax * lmax))
            for c in range(0, k, chunk):
                _check_clock(deadline)
                v = utility(ends[c:c + chunk, :, None], soft[i:i + lmax], hard[i:i + lmax])
                gains[c:c + chunk] = data.kappa[m] * np.where(first_l, v, 0.0).sum(axis=2)
            free = np.repeat(layer.free[None], lmax, axis=0)  # [L, k, G]
            free[:, :, g] = ends.T
            free = canon(free)
            act = np.empty((lmax, k, 6), dtype=np.int64)  # [L, k, action]
            act[..., :2] = g, m
            act[..., 2] = np.arange(1, lmax + 1)[:, None]
            act[..., 3], act[..., 4], act[..., 5] = starts.T, ends.T, layer.free[:, g]
            for L in range(1, lmax + 1):
                pools[i + L].append(_Layer(free[L - 1], layer.value + gains[:, L - 1], here,
                                           rows, act[L - 1]))
    final = layers[n]
    r = int(np.argmax(final.value))
    best_val = float(final.value[r])
    # walk back
    batches: list[tuple[Batch, int]] = []
    i = n
    while i > 0:
        layer = layers[i]
        g, m, L, s0, e0, was_free = (int(x) for x in layer.act[r])
        pl, r = int(layer.parent_layer[r]), int(layer.parent_row[r])
        if g >= 0:
            batches.append((Batch(data.gpu_ids[g], data.models[m], s0, e0,
                                  tuple(int(q) for q in pi[pl:pl + L])), was_free))
        i = pl
    batches.reverse()
    # states keep identical GPUs' free times sorted: replay in π order to name the GPU
    decision = InferenceDecision(batches=tuple(_relabel(batches, data, start_free)))
    return decision, best_val, explored, cut


def _merge(pool: list[_Layer]) -> _Layer:
    """One layer from the candidates offered to it: the best value per free-time vector."""
    layer = _Layer(*(np.concatenate([getattr(p, f) for p in pool])
                     for f in ("free", "value", "parent_layer", "parent_row", "act")))
    free = layer.free
    order = np.lexsort((-layer.value,) + tuple(free[:, c] for c in range(free.shape[1] - 1,
                                                                           -1, -1)))
    free = free[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = np.any(free[1:] != free[:-1], axis=1)
    return layer.take(order[first])


def _select(layer: _Layer, beam: int, lb: float, upper, i: int,
            deadline: float | None) -> tuple[_Layer, bool]:
    """The states kept: above the bound test (``lb`` >= 0), not dominated (every free time
    <= and value >= another's: anything the dominated one can still do, the other can do
    at least as well), and with a beam only the ``beam`` of highest value (of the
    16 · ``beam`` highest before the dominance filter). Equal values: GPUs free earlier
    (by the sum of free times) first. Also whether the beam may have cut a state (more
    than 16 · ``beam`` candidates, or ``beam`` kept): a wider beam keeps the same states
    where it did not."""
    order = np.lexsort((layer.free.sum(axis=1), -layer.value))
    cut = bool(beam) and len(order) > 16 * beam
    if beam:
        order = order[:16 * beam]
    layer = layer.take(order)
    if lb >= 0:
        layer = layer.take(np.flatnonzero(layer.value + upper(i, layer.free) >= lb - 1e-9))
    kept = _undominated(layer.free, beam, deadline)
    return layer.take(kept), cut or (bool(beam) and len(kept) >= beam)


PARETO_BLOCK = 256


def _undominated(free: np.ndarray, most: int, deadline: float | None) -> np.ndarray:
    """Rows (in order of falling value, distinct) that no earlier row dominates (every free
    time <=); stops after ``most`` (0: all). Dominance is transitive, so comparing a row
    with every earlier row of its block and the kept rows of earlier blocks suffices."""
    kept = np.empty(0, dtype=np.int64)
    for lo in range(0, len(free), PARETO_BLOCK):
        _check_clock(deadline)
        block = free[lo:lo + PARETO_BLOCK]
        b = len(block)
        inner = np.all(block[None, :, :] <= block[:, None, :], axis=2)  # [row, earlier]
        dominated = (inner & np.tri(b, k=-1, dtype=bool)).any(axis=1)
        if kept.size:
            dominated |= np.all(free[kept][None, :, :] <= block[:, None, :], axis=2).any(axis=1)
        kept = np.concatenate([kept, lo + np.flatnonzero(~dominated)])
        if most and kept.size >= most:
            return kept[:most]
    return kept


def _check_clock(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise _Stopped("time limit")


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
