"""Idle GPUs of a GENIE snapshot as its heuristics consume them, and the shared orders.

:class:`IdleGpus` places a shape best fit (``heuristics.genie``'s module docstring);
:func:`best` is the option with the largest key; :func:`arrival_order` the tasks by
arrival, then index.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from dlsched.instance import Instance
from dlsched.method_support import free_gpus_by_server
from dlsched.problems.genie import ShapeOption
from dlsched.problems.genie.model import Shape

FEW_SERVERS = 32
"""Up to this many servers, :meth:`IdleGpus.take` sorts the servers instead of keeping
them in buckets by idle count (the same order: idle count, then index)."""


class IdleGpus:
    """Idle GPU indices per server, consumed as tasks start."""

    def __init__(self, instance: Instance) -> None:
        self._start(free_gpus_by_server(instance))

    @classmethod
    def of_free(cls, free: list[Sequence[int]]) -> IdleGpus:
        """From the idle GPU indices per server, ascending (a list the object then owns
        and changes; it replaces its entries, never changes them, so they may be tuples
        or lists shared with the caller)."""
        idle = cls.__new__(cls)
        idle._start(free)
        return idle

    @classmethod
    def of_view(cls, view: Any) -> IdleGpus:
        """From the simulator's live view (``dlsched.simulate.view.SimView``): its idle
        lists, not copied (:meth:`take` replaces entries, never changes them), and its
        servers by idle count."""
        idle = cls.__new__(cls)
        idle.free = list(view.idle_lists())
        idle._servers_with = {c: len(s) for c, s in enumerate(view.servers_by_idle()) if s}
        idle._buckets = None
        idle._at_least = None
        return idle

    def _start(self, free: list[Sequence[int]]) -> None:
        self.free = free
        # servers by idle count, so fits() costs O(GPUs per server), not O(servers)
        self._servers_with: dict[int, int] = Counter(map(len, self.free))
        self._buckets: dict[int, list[int]] | None = None  # built on the first take()
        self._at_least: list[int] | None = None

    @property
    def _bucket(self) -> dict[int, list[int]]:
        """Idle count -> servers with that many idle GPUs, ascending (kept sorted, so a
        take reads the best-fit order off them instead of sorting)."""
        if self._buckets is None:
            self._buckets = {}
            for n, f in enumerate(self.free):
                self._buckets.setdefault(len(f), []).append(n)
        return self._buckets

    def _taking(self, n: int, k: int) -> None:
        c = len(self.free[n])
        self._servers_with[c] -= 1
        self._servers_with[c - k] = self._servers_with.get(c - k, 0) + 1
        if self._buckets is not None:
            level = self._buckets[c]
            del level[bisect_left(level, n)]
            insort(self._buckets.setdefault(c - k, []), n)
        self._at_least = None

    def servers_at_least(self) -> list[int]:
        """[g] -> number of servers with at least g idle GPUs (rebuilt after a take)."""
        if self._at_least is None:
            top = max(self._servers_with, default=0)
            ge = [0] * (top + 2)
            for c, m in self._servers_with.items():
                ge[c] += m
            for c in range(top - 1, -1, -1):
                ge[c] += ge[c + 1]
            self._at_least = ge
        return self._at_least

    def total(self) -> int:
        return sum(c * m for c, m in self._servers_with.items())

    def most(self) -> int:
        return max((c for c, m in self._servers_with.items() if m), default=0)

    def fits(self, shape: Shape) -> bool:
        ge = self.servers_at_least()
        g = shape.gpus_per_node
        return (ge[g] if g < len(ge) else 0) >= shape.nodes

    def take(self, shape: Shape) -> list[int]:
        """Best-fit servers for ``shape`` (the caller checked ``fits``); their GPU indices."""
        g, nodes = shape.gpus_per_node, shape.nodes
        free, with_count = self.free, self._servers_with
        out: list[int] = []
        if len(free) <= FEW_SERVERS:
            counts = list(map(len, free))
            # a stable sort on the count keeps the servers of one count in index order
            eligible = [n for n in sorted(range(len(counts)), key=counts.__getitem__)
                        if counts[n] >= g][:nodes]
            buckets = self._buckets
            for n in eligible:  # each has at least g idle GPUs
                have = free[n]
                c = len(have)
                out += have[:g]
                free[n] = have[g:]
                with_count[c] -= 1
                with_count[c - g] = with_count.get(c - g, 0) + 1
                if buckets is not None:
                    level = buckets[c]
                    del level[bisect_left(level, n)]
                    insort(buckets.setdefault(c - g, []), n)
        else:
            buckets = self._bucket
            need = nodes
            for c in sorted(c for c, servers in buckets.items() if c >= g and servers):
                level = buckets[c]
                taken = level[:need]  # the first servers of this count, by index
                del level[:need]
                below = buckets.setdefault(c - g, [])
                for n in taken:
                    have = free[n]
                    out += have[:g]
                    free[n] = have[g:]
                    insort(below, n)
                k = len(taken)
                with_count[c] -= k
                with_count[c - g] = with_count.get(c - g, 0) + k
                need -= k
                if not need:
                    break
        self._at_least = None
        return out

    def take_on_most_idle(self, gpus: int) -> list[int]:
        """``gpus`` GPUs on the server with the most idle GPUs (ties: first server)."""
        counts = list(map(len, self.free))
        n = counts.index(max(counts))  # the first of the largest
        have = self.free[n]
        out = list(have[:gpus])
        self._taking(n, len(out))
        self.free[n] = have[gpus:]
        return out


def best(options: list[ShapeOption] | tuple[ShapeOption, ...],
         key: Callable[[ShapeOption], float]) -> ShapeOption | None:
    """The option with the largest key; ties to the earliest (fewer GPUs, then servers)."""
    top = None
    for o in options:
        if top is None or key(o) > key(top):
            top = o
    return top




def arrival_key(instance: Instance, j: int) -> tuple[float, int]:
    return instance.jobs[j].submit_time, j


def arrival_order(instance: Instance) -> list[int]:
    """Task indices by (arrival, index): a stable sort on the arrival alone."""
    submit = [job.submit_time for job in instance.jobs]
    return sorted(range(len(submit)), key=submit.__getitem__)


class MostIdle:
    """Idle GPUs per server for the model-blind methods, which only ask for the largest
    idle count and take GPUs on the first server that has it: the same answers as
    :meth:`IdleGpus.most` and :meth:`IdleGpus.take_on_most_idle`, without the counts by
    idle count that best fit needs."""

    __slots__ = ("free", "counts")

    def __init__(self, instance: Instance) -> None:
        self.free: list[tuple[int, ...]] = list(instance.idle_by_server)
        self.counts = list(map(len, self.free))

    def most(self) -> int:
        return max(self.counts, default=0)

    def take_on_most_idle(self, gpus: int) -> list[int]:
        """``gpus`` GPUs on the server with the most idle GPUs (ties: first server)."""
        counts = self.counts
        n = counts.index(max(counts))  # the first of the largest
        have = self.free[n]
        out = list(have[:gpus])
        self.free[n] = have[gpus:]
        counts[n] -= len(out)
        return out

