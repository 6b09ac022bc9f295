"""Simulator fast forms of Horus ``greedy`` and ``obp`` (``dlsched.state.ViewPolicy``).

They run the snapshot methods' rounds (:func:`~dlsched.heuristics.horus.greedy_round`,
:func:`~dlsched.heuristics.horus.obp_round`) on the loads read off the simulator's live view
instead of a rebuilt snapshot: the same arrays (``SimView.loads``, what a snapshot is seeded
with), the pending jobs in queue order and their columns, so the same decision
(``tests/test_sim_fastpath.py`` compares both modes). ``greedy``'s form takes workloads
without β (``params.beta`` unset) and no ``beta`` option: its rounds never cluster, so the
solve's seed cannot matter; with β the simulator calls the snapshot method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.instance import Instance
from dlsched.jobs import Job
from dlsched.problems.horus import parse_horus_params
from dlsched.state import ClusterState, ViewPolicy, register_view_policy

from .horus import greedy_round, obp_round, some_job_may_fit


class _Pending(Sequence[Job]):
    """The pending jobs in queue order, read from the workload's when asked."""

    __slots__ = ("_records", "_jobs")

    def __init__(self, records: np.ndarray, jobs: Sequence[Job]) -> None:
        self._records = records
        self._jobs = jobs

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._jobs[r] for r in self._records[i].tolist()]
        return self._jobs[int(self._records[i])]


def _live(view: Any) -> tuple[ClusterState, _Pending]:
    """The loads as a :class:`ClusterState` (fresh copies) and the pending jobs."""
    a = view.loads()
    c = view.cluster
    util, mem = a["gpu_usage"]
    cpu, ram = a["node_usage"]
    state = ClusterState(cluster=c, free_mem=c.gpu_mem_gb - mem, util=util,
                         free_cpu=c.node_cpu - cpu, free_ram=c.node_ram_gb - ram,
                         busy=a["gpu_busy"])
    return state, _Pending(view.queue_records(), view.workload_jobs)


def _decision(view: Any, jobs: _Pending, placed: list[tuple[int, list[int]]]) -> Decision:
    """As ``decision_from_indices`` on the snapshot: GPU ids in ascending index order."""
    ids = view.cluster.gpu_ids
    return Decision.of(Placement(jobs[j].id, tuple(ids[g] for g in sorted(gpus)))
                       for j, gpus in placed)


def obp_live(view: Any) -> Decision:
    """``obp`` on the live view."""
    state, jobs = _live(view)
    return _decision(view, jobs, obp_round(state, jobs, view.queue_columns()))


def greedy_live(view: Any, *, queues: int | None = None, refill: bool = True) -> Decision:
    """``greedy`` on the live view (β unset: one buffer of the whole queue)."""
    state, jobs = _live(view)
    placed = greedy_round(state, jobs, view.queue_columns(), view.time,
                          parse_horus_params(view.params), queues=queues, refill=refill)
    return _decision(view, jobs, placed)


def _without_beta(workload: Instance) -> bool:
    return parse_horus_params(workload.params).beta is None


register_view_policy(ViewPolicy("horus", "obp", obp_live, some_job_may_fit))
register_view_policy(ViewPolicy("horus", "greedy", greedy_live, some_job_may_fit,
                                frozenset({"queues", "refill"}), applies=_without_beta))
