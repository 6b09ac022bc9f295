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


def _first_untouched(by_idle, counts: range, used: dict[int, int]) -> tuple[int, int]:
    """(count, server): the first server not in ``used`` at the first of ``counts`` that
    has one (``by_idle[c]``: servers with ``c`` idle GPUs, ascending); (-1, -1) if none."""
    for c in counts:
        for s in by_idle[c]:
            if s not in used:
                return c, s
    return -1, -1


def _packing_live(view, demand: int, taken: dict[int, int], left_total: int
                  ) -> tuple[list[int], dict[int, int]] | None:
    """:func:`packing` on the live view, with ``taken[s]`` GPUs of server ``s`` already
    given to earlier jobs of this decision (always the first idle ones, in cluster order).

    Reads only the servers it needs: by idle count, the lowest-index server at the smallest
    count that holds the demand (or at the largest count), plus the servers already touched.
    """
    if left_total < demand:
        return None
    by_idle = view.servers_by_idle()  # by_idle[c]: servers with c idle GPUs, ascending
    idle = view.idle_lists()
    top = len(by_idle) - 1
    if not taken:  # nothing given yet: the first server at the smallest count that holds it
        for c in range(demand, top + 1):
            level = by_idle[c]
            if level:
                s = level[0]
                return idle[s][:demand], {s: demand}
    local: dict[int, int] = {}
    chosen: list[int] = []
    need = demand
    while True:
        used = {s: taken.get(s, 0) + local.get(s, 0) for s in (*taken, *local)}
        # the fewest GPUs left that hold the rest; ties to the lowest index
        best_n, best_s = _first_untouched(by_idle, range(need, top + 1), used)
        for s, k in used.items():
            n = len(idle[s]) - k
            if n >= need and (best_s < 0 or (n, s) < (best_n, best_s)):
                best_n, best_s = n, s
        if best_s >= 0:
            off = used.get(best_s, 0)
            chosen.extend(idle[best_s][off:off + need])
            local[best_s] = local.get(best_s, 0) + need
            return chosen, local
        # else all that is left of the server with the most left; ties to the lowest index
        most_n, most_s = _first_untouched(by_idle, range(top, 0, -1), used)
        for s, k in used.items():
            n = len(idle[s]) - k
            if n > 0 and (most_s < 0 or n > most_n or (n == most_n and s < most_s)):
                most_n, most_s = n, s
        if most_s < 0:  # cannot happen when left_total >= demand
            return None
        off = used.get(most_s, 0)
        chosen.extend(idle[most_s][off:off + most_n])
        local[most_s] = local.get(most_s, 0) + most_n
        need -= most_n


def some_job_fits(view, *, backfill: bool = False) -> bool:
    """A sorted rule's ``can_start``: some waiting job's GPU count fits the idle GPUs."""
    low = view.min_demand()
    return low is not None and low <= view.idle_count


def _gpus_only(workload: Instance) -> bool:
    """The fast form places by idle GPUs alone: no job may have CPU or RAM shares."""
    return not any(j.cpu_per_gpu or j.ram_gb_per_gpu for j in workload.jobs)
