"""The GPUs ordered by free memory, kept up to date as jobs start and finish.

:class:`FreeMemoryOrder` is built on request (the first time a policy asks for it, through
``SimView.free_memory_order``); from then on ``LiveState`` logs the GPUs whose memory in
use changes (``LiveState.mem_log``) and the order is patched for those GPUs only when it
is read, so an event costs O(GPUs it touches × log G) instead of a sort of the cluster.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .live import LiveState


class FreeMemoryOrder:
    """Entries ``(-free, g)`` of every GPU ``g``, ascending: most free memory first, ties
    by GPU index. ``free`` is ``capacity - memory in use``, the same float a snapshot's
    ``cluster.gpu_mem_gb - gpu_usage[1]`` holds for that GPU."""

    __slots__ = ("_state", "_free", "_keys")

    def __init__(self, state: LiveState) -> None:
        self._state = state
        cap, mem = state.mem_cap, state.mem
        self._free = [cap[g] - mem[g] for g in range(len(cap))]
        self._keys = sorted((-f, g) for g, f in enumerate(self._free))
        state.mem_log = []
        state.free_order = self

    def keys(self) -> list[tuple[float, int]]:
        """The entries now (the live list: read it, do not change it or hold it across
        events)."""
        log = self._state.mem_log
        if log:
            cap, mem, free, keys = self._state.mem_cap, self._state.mem, self._free, self._keys
            for g in set(log):
                new = cap[g] - mem[g]
                old = free[g]
                if new != old:
                    del keys[bisect_left(keys, (-old, g))]
                    insort(keys, (-new, g))
                    free[g] = new
            log.clear()
        return self._keys
