"""Container loads per server for Liquid's heuristics (:class:`NodeLoads`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.problems.liquid import LiquidData


@dataclass
class NodeLoads:
    """Container loads per server: GPUs by memory level, CPU and RAM.

    ``free[l, n]`` is ``level_cap[n, l] - gpu[n, l]`` and ``room[l, n]`` its minimum over
    levels l' <= l: a container needing level l and g GPUs fits server n's GPUs iff
    ``g <= room[l, n]`` (integers: the same booleans as checking every level). Both are
    kept up to date by :meth:`add` and :meth:`remove` for the one server they touch, so
    :meth:`fits` is a few array steps over the servers, not one per level.
    """

    data: LiquidData
    gpu: np.ndarray  # [N, L] GPUs taken by containers needing >= level l
    cpu: np.ndarray  # [N]
    ram: np.ndarray  # [N]
    count: np.ndarray  # [N] containers placed
    free: np.ndarray | None = None  # [L, N] (see above); built from gpu when None
    room: np.ndarray | None = None  # [L, N]

    def __post_init__(self) -> None:
        if self.free is None or self.room is None:
            self.free = np.ascontiguousarray((self.data.level_cap - self.gpu).T)
            self.room = running_min(self.free)

    @classmethod
    def empty(cls, data: LiquidData) -> NodeLoads:
        n, levels = data.level_cap.shape
        return cls(data, np.zeros((n, levels), dtype=np.int64), np.zeros(n), np.zeros(n),
                   np.zeros(n, dtype=np.int64))

    @classmethod
    def of(cls, data: LiquidData, assign: np.ndarray) -> NodeLoads:
        loads = cls.empty(data)
        for c in np.flatnonzero(assign >= 0):
            loads.add(int(c), int(assign[c]))
        return loads

    def copy(self) -> NodeLoads:
        return NodeLoads(self.data, self.gpu.copy(), self.cpu.copy(), self.ram.copy(),
                         self.count.copy(), self.free.copy(), self.room.copy())

    def fits(self, c: int) -> np.ndarray:
        """[N] servers that can still take container ``c``."""
        d = self.data
        ok = self.room[d.c_level[c]] >= d.c_gpus[c]
        ok &= self.cpu + d.c_cpu[c] <= d.cpu_limit
        ok &= self.ram + d.c_ram[c] <= d.ram_limit
        return ok

    def fits_all(self, need: np.ndarray, cpu: float, ram: float) -> np.ndarray:
        """[N] servers that can take ``need[l]`` more GPUs needing level l or above (for
        every level), ``cpu`` and ``ram``."""
        d = self.data
        ok = self.free[0] >= need[0]
        for lev in range(1, len(need)):
            ok &= self.free[lev] >= need[lev]
        ok &= self.cpu + cpu <= d.cpu_limit
        ok &= self.ram + ram <= d.ram_limit
        return ok

    def fits_at(self, c: int, n: int) -> bool:
        """``fits(c)[n]``: the same comparisons on the same numbers, for one server."""
        d = self.data
        return bool(self.room[d.c_level[c], n] >= d.c_gpus[c]
                    and self.cpu[n] + d.c_cpu[c] <= d.cpu_limit[n]
                    and self.ram[n] + d.c_ram[c] <= d.ram_limit[n])

    def fits_all_at(self, need: Sequence[int], cpu: float, ram: float, n: int) -> bool:
        """``fits_all(need, cpu, ram)[n]`` for one server (as :meth:`fits_at`)."""
        d = self.data
        free = self.free[:, n].tolist()
        return bool(all(free[lev] >= need[lev] for lev in range(len(need)))
                    and self.cpu[n] + cpu <= d.cpu_limit[n]
                    and self.ram[n] + ram <= d.ram_limit[n])

    def add(self, c: int, n: int) -> None:
        d = self.data
        g = d.c_gpus[c]
        if g:  # no GPUs (a PS): the GPU counts, free and room stay as they are
            self.gpu[n, : d.c_level[c] + 1] += g
            self._room_of(n)
        self.cpu[n] += d.c_cpu[c]
        self.ram[n] += d.c_ram[c]
        self.count[n] += 1

    def remove(self, c: int, n: int) -> None:
        d = self.data
        g = d.c_gpus[c]
        if g:
            self.gpu[n, : d.c_level[c] + 1] -= g
            self._room_of(n)
        self.cpu[n] -= d.c_cpu[c]
        self.ram[n] -= d.c_ram[c]
        self.count[n] -= 1

    def _room_of(self, n: int) -> None:
        col = self.data.level_cap[n] - self.gpu[n]
        self.free[:, n] = col
        self.room[:, n] = np.minimum.accumulate(col)

    def fits_after(self, c: int, n: int, added: list[int]) -> bool:
        """Whether container c fits server n once the containers ``added`` are added there
        in that order, these loads unchanged (the numbers :meth:`add` then :meth:`fits`
        would compute, one server's worth)."""
        d = self.data
        gpu = self.gpu[n].tolist()  # integers: Python's are exact as int64's
        cpu, ram = self.cpu[n], self.ram[n]
        for a in added:
            g = int(d.c_gpus[a])
            for lev in range(int(d.c_level[a]) + 1):
                gpu[lev] += g
            cpu += d.c_cpu[a]
            ram += d.c_ram[a]
        cap, need = d.level_cap[n].tolist(), int(d.c_gpus[c])
        return bool(all(cap[lev] - gpu[lev] >= need for lev in range(int(d.c_level[c]) + 1))
                    and cpu + d.c_cpu[c] <= d.cpu_limit[n]
                    and ram + d.c_ram[c] <= d.ram_limit[n])

    def free_gpus(self) -> np.ndarray:
        return self.data.level_cap[:, 0] - self.gpu[:, 0]


def running_min(free: np.ndarray) -> np.ndarray:
    """``np.minimum.accumulate(free, axis=0)`` row by row (the same integers; numpy's
    accumulate along the first axis of an [L, N] array costs ~100x more at N = 2,048)."""
    room = np.empty_like(free)
    room[0] = free[0]
    for lev in range(1, len(free)):
        np.minimum(room[lev - 1], free[lev], out=room[lev])
    return room
