"""Simulator fast forms (view policies) of SCHED²'s DSIF and SAF, and what the learned
policies' fast forms share: the workload's jobs as arrays, read once per run.

Each returns exactly the decision of its snapshot method (:func:`.sched2.select`) on the
same state; ``tests/test_sim_fastpath.py`` compares them. Packing is
:func:`.sched2_view._packing_live` (the live view's idle GPUs by count); the queue is read as
record indices and sorted or scored with numpy, with no snapshot built.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.heuristics.sched2_view import MAX_DELAYS, _packing_live
from dlsched.problems.sched2 import locality_slowdown, parse_sched2_params


class JobArrays:
    """Per-job numbers of a run's workload by record index (built at a run's first call).

    ``gpus``, ``duration``, ``submit`` (the simulator's read-only workload columns),
    ``sensitivity`` (float64), ``ids``,
    ``per_server`` = the largest server's GPU count, and ``shapes`` (the distinct
    (demand, sensitivity) pairs) with ``shape_key`` (each job's index into it).
    """

    def __init__(self, view: Any) -> None:
        jobs = view.workload_jobs
        params = parse_sched2_params(view.params)
        columns = view.workload_columns
        self.gpus = columns("num_gpus")
        self.duration = columns("duration")
        self.submit = columns("submit_time")
        self.sensitivity = np.array([params.sensitivity(j.model) for j in jobs])
        self.ids = [j.id for j in jobs]
        self.per_server = int(view.cluster.node_gpu_count.max())
        # SAF's groups: one key per distinct (demand, sensitivity)
        shapes = sorted({(int(j.num_gpus), s) for j, s in zip(jobs, self.sensitivity.tolist(),
                                                                strict=True)})
        self.shapes = shapes
        code = {shape: k for k, shape in enumerate(shapes)}
        self.shape_key = np.array([code[(int(j.num_gpus), s)] for j, s in zip(
            jobs, self.sensitivity.tolist(), strict=True)], dtype=np.int64)
        # SAF's slowdown of a sensitivity on GPUs per server (a pure function: memoized)
        self.slowdowns: dict[tuple[float, tuple[int, ...]], float] = {}


class Placer:
    """Packing placements of one decision on the live view, GPUs taken as jobs are placed."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.taken: dict[int, int] = {}
        self.left_total = view.idle_count
        self.placed: list[Placement] = []

    def place(self, demand: int) -> tuple[list[int], dict[int, int]] | None:
        """(GPU indices, GPUs per server) of the packing placement, or None."""
        return _packing_live(self.view, demand, self.taken, self.left_total)

    def take(self, job_id: str, got: tuple[list[int], dict[int, int]]) -> None:
        gpus, local = got
        for s, k in local.items():
            self.taken[s] = self.taken.get(s, 0) + k
        self.left_total -= len(gpus)
        ids = self.view.cluster.gpu_ids
        self.placed.append(Placement(job_id, tuple(ids[g] for g in gpus)))

    def decision(self) -> Decision:
        return Decision.of(self.placed)


def dsif_live(view: Any, *, policy_state: tuple[JobArrays, dict[str, int]] | None = None,
              backfill: bool = False) -> tuple[Decision, tuple[JobArrays, dict[str, int]]]:
    """``dsif`` on the live view; the state carries the delay counts (as the snapshot
    method's ``policy_state``) and the job arrays."""
    arrays, delays = policy_state if policy_state is not None else (JobArrays(view), {})
    queue = view.queue_records()
    # (ideal time, arrival, queue position), as select() sorts (lexsort is stable)
    order = queue[np.lexsort((arrays.submit[queue], arrays.duration[queue]))]
    placer = Placer(view)
    ids = arrays.ids
    for r in order.tolist():
        demand = int(arrays.gpus[r])
        got = placer.place(demand)
        if got is None:
            if backfill:
                continue
            break
        job_id = ids[r]
        if (len(got[1]) > math.ceil(demand / arrays.per_server)
                and delays.get(job_id, 0) < MAX_DELAYS):
            delays[job_id] = delays.get(job_id, 0) + 1
            continue
        placer.take(job_id, got)
        delays.pop(job_id, None)  # started: it is no longer counted
    return placer.decision(), (arrays, delays)


def saf_live(view: Any, *, policy_state: JobArrays | None = None, backfill: bool = False
             ) -> tuple[Decision, JobArrays]:
    """``saf`` on the live view (``backfill`` changes nothing: SAF ranks only jobs that
    fit). Each round scores every remaining job at once: its ideal time times the
    slowdown of its demand's packing placement, one slowdown per (demand, sensitivity)."""
    arrays = policy_state if policy_state is not None else JobArrays(view)
    queue = view.queue_records()
    placer = Placer(view)
    duration = arrays.duration[queue]
    submit = arrays.submit[queue]
    group = arrays.shape_key[queue]
    left = np.bincount(group, minlength=len(arrays.shapes))  # queued jobs of each group
    alive = np.ones(len(queue), dtype=bool)
    memo = arrays.slowdowns
    while True:
        slow = np.zeros(len(left))
        fits = np.zeros(len(left), dtype=bool)
        got_of: dict[int, tuple[list[int], dict[int, int]] | None] = {}
        for g in np.flatnonzero(left).tolist():
            d, sens = arrays.shapes[g]
            if d not in got_of:
                got_of[d] = placer.place(d)
            got = got_of[d]
            if got is not None:
                local = got[1]
                spans = tuple(local[s] for s in sorted(local))
                if (sens, spans) not in memo:
                    memo[sens, spans] = locality_slowdown(sens, np.array(spans, dtype=np.int64))
                slow[g] = memo[sens, spans]
                fits[g] = True
        ranked = np.flatnonzero(alive & fits[group])  # in queue order
        if not len(ranked):
            break
        # the smallest (actual, arrival, queue position)
        actual = duration[ranked] * slow[group[ranked]]
        cand = ranked[actual == actual.min()]
        k = int(cand[submit[cand] == submit[cand].min()][0])  # cand is in queue order
        alive[k] = False
        left[group[k]] -= 1
        placer.take(arrays.ids[int(queue[k])],
                    got_of[arrays.shapes[group[k]][0]])  # type: ignore[arg-type]
    return placer.decision(), arrays

