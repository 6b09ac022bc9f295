"""The GPUs ordered by free memory, kept up to date as jobs start and finish.

:class:`FreeMemoryOrder` is built on request (the first time a policy asks for it, through
``SimView.free_memory_order`` or ``SimView.busy_at_full_memory``); from then on
``LiveState`` logs the GPUs whose memory in use or job count changes
(``LiveState.mem_log``) and the order is patched for those GPUs only when it is read, so
an event costs O(GPUs it touches × log G) instead of a sort of the cluster. A GPU that
comes back to the free memory it had at the last read (a job started and finished on an
idle GPU meanwhile) costs no patch.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .live import LiveState


class FreeMemoryOrder:
    """Entries ``(-free, g)`` of every GPU ``g``, ascending: most free memory first, ties
    by GPU index. ``free`` is ``capacity - memory in use``, the same float a snapshot's
    ``cluster.gpu_mem_gb - gpu_usage[1]`` holds for that GPU.

    Beside it, the busy GPUs whose free memory is at least their capacity (a job holding
    no memory, or a float residue; normally none), kept from the same log: while there is
    none, on a cluster whose GPUs hold one memory size the order starts with exactly the
    idle GPUs (an idle GPU's memory in use is reset to 0.0), by index, and a reader can
    use the idle lists instead of patching the order (``busy_at_full_memory``).
    """

    __slots__ = ("_state", "_free", "_keys", "_full", "_seen")

    def __init__(self, state: LiveState) -> None:
        self._state = state
        cap, mem, jobs_on = state.mem_cap, state.mem, state.jobs_on
        self._free = [cap[g] - mem[g] for g in range(len(cap))]
        self._keys = sorted((-f, g) for g, f in enumerate(self._free))
        self._full = {g for g, f in enumerate(self._free) if jobs_on[g] and f >= cap[g]}
        self._seen = 0  # entries of the log already applied to _full
        state.mem_log = []
        state.free_order = self

    def keys(self) -> list[tuple[float, int]]:
        """The entries now (the live list: read it, do not change it or hold it across
        events)."""
        log = self._state.mem_log
        if log:
            self.busy_at_full_memory()
            cap, mem, free, keys = self._state.mem_cap, self._state.mem, self._free, self._keys
            for g in set(log):
                new = cap[g] - mem[g]
                old = free[g]
                if new != old:
                    del keys[bisect_left(keys, (-old, g))]
                    insort(keys, (-new, g))
                    free[g] = new
            log.clear()
            self._seen = 0
        return self._keys

    def busy_at_full_memory(self) -> int:
        """How many busy GPUs have free memory at least their capacity, now."""
        state = self._state
        log = state.mem_log
        seen = self._seen
        if len(log) > seen:
            cap, mem, jobs_on, full = state.mem_cap, state.mem, state.jobs_on, self._full
            for g in log[seen:] if seen else log:  # a GPU listed twice: the same answer
                if jobs_on[g] and cap[g] - mem[g] >= cap[g]:
                    full.add(g)
                elif full:
                    full.discard(g)
            self._seen = len(log)
        return len(self._full)
