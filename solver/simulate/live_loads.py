"""The per-GPU and per-server loads of :class:`~.live.LiveState`: what a starting job
holds and a finishing one gives back (utilization, memory, CPU, RAM, idle GPUs and the
servers indexed by their idle count), kept apart from the event loop's bookkeeping. A
base class of ``LiveState``, whose ``__init__`` makes the lists these methods update."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any


class GpuLoads:
    """The load methods of :class:`~.live.LiveState` (its attributes, made there)."""

    __slots__ = ()  # LiveState's own slots hold them

    gpu_node: Any
    jobs_on: list[int]
    idle: list[list[int]]
    util: list[float]
    mem: list[float]
    node_cpu: list[float]
    node_ram: list[float]
    by_idle: list[list[int]]
    open_servers: list[int]
    gpu_end: list[float]
    idle_total: int
    mem_log: list[int] | None
    version: int
    _arrays: Any
    _touched: set[int]
    _touched_nodes: set[int]
    _dirty: set[int]

    def _set_idle(self, s: int, before: int, after: int) -> None:
        level = self.by_idle[before]
        del level[bisect.bisect_left(level, s)]
        bisect.insort(self.by_idle[after], s)
        if before == 0:
            bisect.insort(self.open_servers, s)
        elif after == 0:
            del self.open_servers[bisect.bisect_left(self.open_servers, s)]

    def _hold(self, gpus: Sequence[int], util: float, mem: float, cpu_per_gpu: float,
              ram_per_gpu: float, node_extra: Mapping[int, tuple[float, float]] | None) -> None:
        """A job starts on GPU indices ``gpus`` with these per-GPU loads."""
        node_of, jobs_on, all_idle = self.gpu_node, self.jobs_on, self.idle
        util_of, mem_of = self.util, self.mem
        if len(gpus) == 1:  # most jobs: no per-server bookkeeping
            g = gpus[0]
            if jobs_on[g] == 0:
                s = node_of[g]
                idle = all_idle[s]
                n = len(idle)
                del idle[bisect.bisect_left(idle, g)]
                self._set_idle(s, n, n - 1)
                self.idle_total -= 1
            jobs_on[g] += 1
        else:
            before: dict[int, int] = {}  # server -> its idle count before (servers changed)
            for g in gpus:
                if jobs_on[g] == 0:
                    s = node_of[g]
                    idle = all_idle[s]
                    if s not in before:
                        before[s] = len(idle)
                    del idle[bisect.bisect_left(idle, g)]
                jobs_on[g] += 1
            for s, n in before.items():  # one move per server in the index by idle count
                k = len(all_idle[s])
                self._set_idle(s, n, k)
                self.idle_total -= n - k
        if util:  # adding 0.0 changes no load (none is -0.0: idle loads are reset to 0.0)
            for g in gpus:
                util_of[g] += util
        if mem:
            for g in gpus:
                mem_of[g] += mem
        if self.mem_log is not None:
            self.mem_log.extend(gpus)
        if self._arrays is not None:  # (built whole on first request)
            self._touched.update(gpus)
        if cpu_per_gpu or ram_per_gpu:  # adding 0.0 changes no load
            node_cpu, node_ram = self.node_cpu, self.node_ram
            for g in gpus:
                n = node_of[g]
                node_cpu[n] += cpu_per_gpu
                node_ram[n] += ram_per_gpu
        if node_extra:
            for n, (cpu, ram) in node_extra.items():
                self.node_cpu[n] += cpu
                self.node_ram[n] += ram
            if self._arrays is not None:
                self._touched_nodes.update(node_extra)
        self.version += 1

    def _unhold(self, gpus: Sequence[int], util: float, mem: float, cpu_per_gpu: float,
                ram_per_gpu: float, node_extra: Mapping[int, tuple[float, float]] | None
                ) -> None:
        """A job on ``gpus`` finishes: the reverse of :meth:`_hold`."""
        node_of, jobs_on, all_idle = self.gpu_node, self.jobs_on, self.idle
        util_of, mem_of = self.util, self.mem
        for g in gpus:
            jobs_on[g] -= 1
        if util:  # subtracting 0.0 changes no load
            for g in gpus:
                util_of[g] -= util
        if mem:
            for g in gpus:
                mem_of[g] -= mem
        if self.mem_log is not None:
            self.mem_log.extend(gpus)
        if self._arrays is not None:
            self._touched.update(gpus)
        if cpu_per_gpu or ram_per_gpu:  # subtracting 0.0 changes no load
            node_cpu, node_ram = self.node_cpu, self.node_ram
            for g in gpus:
                n = node_of[g]
                node_cpu[n] -= cpu_per_gpu
                node_ram[n] -= ram_per_gpu
        if node_extra:
            for n, (cpu, ram) in node_extra.items():
                self.node_cpu[n] -= cpu
                self.node_ram[n] -= ram
            if self._arrays is not None:
                self._touched_nodes.update(node_extra)
        if len(gpus) == 1:
            g = gpus[0]
            if jobs_on[g] == 0:
                util_of[g] = mem_of[g] = 0.0  # no float residue on idle GPUs
                s = node_of[g]
                idle = all_idle[s]
                n = len(idle)
                bisect.insort(idle, g)
                self._set_idle(s, n, n + 1)
                self.idle_total += 1
        else:
            before: dict[int, int] = {}
            for g in gpus:
                if jobs_on[g] == 0:
                    util_of[g] = mem_of[g] = 0.0
                    s = node_of[g]
                    idle = all_idle[s]
                    if s not in before:
                        before[s] = len(idle)
                    bisect.insort(idle, g)
            for s, n in before.items():
                k = len(all_idle[s])
                self._set_idle(s, n, k)
                self.idle_total += k - n
        self.version += 1

    def _set_ends(self, gpus: Sequence[int], end: float) -> None:
        """Predicted end ``end`` of the latest job on each of ``gpus`` (exclusive GPUs: one
        end for all; 0 when idle)."""
        if len(gpus) == 1:
            g = gpus[0]
            self.gpu_end[g] = end
            self._dirty.add(self.gpu_node[g])
            return
        gpu_end = self.gpu_end
        for g in gpus:
            gpu_end[g] = end
        self._dirty.update(map(self.gpu_node.__getitem__, gpus))

