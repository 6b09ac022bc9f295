"""SCHED² on the simulator's live view: the packing placement, the start guards and the
constants the rules' fast forms share (:mod:`.sched2`, :mod:`.sched2_live`, the learned
policies' fast forms). A module of its own so that those import it, not each other.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

from dlsched.instance import Instance
from dlsched.jobs import Job

MAX_DELAYS = 3  # DSIF: times a job may be skipped for a placement worse than its best

STATIC_KEYS: dict[str, Callable[[Job], tuple]] = {
    "sif": attrgetter("duration", "submit_time"),
    "dsif": attrgetter("duration", "submit_time"),
    "lrf": attrgetter("num_gpus", "submit_time"),
    "spf": lambda job: (job.num_gpus * job.duration, job.submit_time),
}
"""The static rules' sort keys before the queue position (a job's key never changes)."""


def _packing_live(view, demand: int, taken: dict[int, int], left_total: int
                  ) -> tuple[list[int], dict[int, int]] | None:
    """:func:`packing` on the live view, with ``taken[s]`` GPUs of server ``s`` already
    given to earlier jobs of this decision (always the first idle ones, in cluster order).

    Reads only the servers it needs: by idle count, the lowest-index server at the smallest
    count that holds the demand (or at the largest count), plus the servers already touched.
    """
    if left_total < demand:
        return None
    local: dict[int, int] = {}
    chosen: list[int] = []
    need = demand

    def left(s: int) -> int:
        return view.idle_on(s) - taken.get(s, 0) - local.get(s, 0)

    def grab(s: int, k: int) -> None:
        off = taken.get(s, 0) + local.get(s, 0)
        chosen.extend(view.idle_gpus(s)[off:off + k])
        local[s] = local.get(s, 0) + k

    top = view.max_idle
    while need > 0:
        skip = set(taken) | set(local)
        best: tuple[int, int] | None = None
        for c in range(need, top + 1):
            s = view.first_server_with_idle(c, skip)
            if s is not None:
                best = (c, s)
                break
        for s in skip:
            n = left(s)
            if n >= need and (best is None or (n, s) < best):
                best = (n, s)
        if best is not None:
            grab(best[1], need)
            need = 0
            break
        most: tuple[int, int] | None = None
        for c in range(top, 0, -1):
            s = view.first_server_with_idle(c, skip)
            if s is not None:
                most = (c, -s)
                break
        for s in skip:
            n = left(s)
            if n > 0 and (most is None or (n, -s) > most):
                most = (n, -s)
        if most is None:  # cannot happen when left_total >= demand
            return None
        grab(-most[1], most[0])
        need -= most[0]
    return chosen, local


def some_job_fits(view, *, backfill: bool = False) -> bool:
    """A sorted rule's ``can_start``: some waiting job's GPU count fits the idle GPUs."""
    low = view.min_demand()
    return low is not None and low <= view.idle_count


def _gpus_only(workload: Instance) -> bool:
    """The fast form places by idle GPUs alone: no job may have CPU or RAM shares."""
    return not any(j.cpu_per_gpu or j.ram_gb_per_gpu for j in workload.jobs)
