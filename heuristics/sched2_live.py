"""Simulator fast forms (view policies) of SCHED²'s DSIF and SAF, and what the learned
policies' fast forms share: the workload's jobs as arrays, read once per run.

Each returns exactly the decision of its snapshot method (:func:`.sched2.select`) on the
same state; ``tests/test_sim_fastpath.py`` compares them. Packing is
:func:`.sched2_view._packing_live` (the live view's idle GPUs by count); the queue is read in
the orders the view keeps (DSIF: by ideal time; SAF: by group, then ideal time), with no
snapshot built and no sort per call.
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.heuristics.sched2_view import MAX_DELAYS, STATIC_KEYS, _packing_live
from dlsched.problems.sched2 import locality_slowdown, parse_sched2_params


class JobArrays:
    """Per-job numbers of a run's workload by record index (built at a run's first call).

    ``gpus``, ``duration``, ``submit`` (the simulator's read-only workload columns),
    ``sensitivity`` (float64), ``ids``,
    and ``per_server`` = the largest server's GPU count.
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
    # (ideal time, arrival, queue position), as select() sorts; kept sorted by the view
    order = view.queue_sorted(("sched2", "dsif"), STATIC_KEYS["dsif"])
    placer = Placer(view)
    ids = arrays.ids
    for r in order:
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


class SafState:
    """What SAF's fast form keeps across one run: the job arrays, the jobs' groups
    (demand, sensitivity) and the memoized slowdowns."""

    def __init__(self, view: Any) -> None:
        self.arrays = JobArrays(view)
        params = parse_sched2_params(view.params)
        self.group = lambda job: (int(job.num_gpus), params.sensitivity(job.model))
        # SAF's slowdown of a sensitivity on GPUs per server (a pure function: memoized)
        self.slowdowns: dict[tuple[float, tuple[int, ...]], float] = {}


_SAF_KEY = attrgetter("duration", "submit_time")


def saf_live(view: Any, *, policy_state: SafState | None = None, backfill: bool = False
             ) -> tuple[Decision, SafState]:
    """``saf`` on the live view (``backfill`` changes nothing: SAF ranks only jobs that
    fit). Jobs of one (demand, sensitivity) group share their packing placement and its
    slowdown, so a group's best job is among its shortest: the view keeps each group's
    queue sorted by (ideal time, arrival, queue position), and a round looks at each
    group's head (and at the jobs after it whose actual time rounds to the same value)."""
    state = policy_state if policy_state is not None else SafState(view)
    groups = view.queue_groups(("sched2", "saf"), state.group, _SAF_KEY)
    memo = state.slowdowns
    ids = state.arrays.ids
    placer = Placer(view)
    taken: set[int] = set()  # record indices started by this decision
    while True:
        best: tuple | None = None
        got_of: dict[int, tuple[list[int], dict[int, int]] | None] = {}
        spans_of: dict[int, tuple[int, ...]] = {}
        for (d, sens), index in groups.items():
            order, keys = index.order, index.keys
            n = len(order)
            p = 0
            while p < n and order[p] in taken:
                p += 1
            if p == n:
                continue
            if d in got_of:
                got = got_of[d]
            else:
                got = got_of[d] = placer.place(d)
                if got is not None:
                    local = got[1]
                    spans_of[d] = tuple(local[s] for s in sorted(local))
            if got is None:
                continue
            spans = spans_of[d]
            slow = memo.get((sens, spans))
            if slow is None:
                slow = memo[sens, spans] = locality_slowdown(sens, np.array(spans,
                                                                          dtype=np.int64))
            # the smallest (actual, arrival, queue position) of the group: actual times
            # grow with the ideal time, but two may round to the same product
            _, submit, seq = k = keys[p]
            actual = k[0] * slow
            cand = (actual, submit, seq, order[p], d)
            for q in range(p + 1, n):
                _, submit, seq = k = keys[q]
                if k[0] * slow != actual:
                    break
                if (submit, seq) < cand[1:3] and order[q] not in taken:
                    cand = (actual, submit, seq, order[q], d)
            if best is None or cand < best:
                best = cand
        if best is None:
            break
        r = best[3]
        taken.add(r)
        placer.take(ids[r], got_of[best[4]])  # type: ignore[arg-type]
    return placer.decision(), state
