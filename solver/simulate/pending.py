"""The pending queue of the simulator: jobs waiting to start, in arrival order.

:class:`PendingQueue` gives O(1) head, removal anywhere and membership, the pending jobs as
a tuple (cached until the queue changes), a count of pending GPU demands (the cheap
"can anything fit" tests of the engine and of view policies) and, on request, the queue
kept sorted by a static per-job key (:meth:`PendingQueue.sorted_by`: a rule that orders
jobs by a fixed key reads its order without sorting the queue at every call).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from itertools import compress
from operator import attrgetter

import numpy as np

from ..jobs import Job, JobColumns

_job_id = attrgetter("id")


class PendingQueue:
    """Pending jobs (workload record indices) in arrival order.

    Removal anywhere is O(1) (a tombstone); the head pointer skips tombstones, and the
    order list is compacted when tombstones outnumber live entries.
    """

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._jobs = jobs
        self._order: list[int] = []
        self._alive: list[bool] = []
        self._pos: dict[int, int] = {}
        self._head = 0
        self._dead = 0
        self.demand: Counter[int] = Counter()
        self.version = 0
        self._cache: tuple[int, tuple[Job, ...]] | None = None
        self._index: tuple[int, dict[str, int]] | None = None
        self._records: tuple[int, np.ndarray] | None = None
        self.workload_columns = JobColumns(jobs)  # of every job, built when first asked
        self._columns: tuple[int, QueueColumns] | None = None
        self._added = 0  # jobs ever added: a job's number orders it within the queue
        self._seq: dict[int, int] = {}
        self._sorted: dict[Hashable, SortedIndex | GroupedIndex] = {}
        # _order and _alive as arrays too (a run's records() in two numpy steps)
        self._order_np = np.zeros(64, dtype=np.int64)
        self._alive_np = np.zeros(64, dtype=bool)
        self._last_submit = -np.inf
        self.in_arrival_order = True
        """Queue order is (submit time, queue position) order: no job was added after a
        later-submitted one (a requeue can break it)."""

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, idx: object) -> bool:
        return idx in self._pos

    def add(self, idx: int) -> None:
        """Append job ``idx`` (arrivals come in order)."""
        order = self._order
        p = self._pos[idx] = len(order)
        order.append(idx)
        self._alive.append(True)
        if p == len(self._order_np):
            self._order_np = np.concatenate([self._order_np, np.zeros(p, dtype=np.int64)])
            self._alive_np = np.concatenate([self._alive_np, np.zeros(p, dtype=bool)])
        self._order_np[p] = idx
        self._alive_np[p] = True
        job = self._jobs[idx]
        submit = job.submit_time
        if submit < self._last_submit:
            self.in_arrival_order = False
        self._last_submit = submit
        added = self._added = self._added + 1
        self._seq[idx] = added
        if self._sorted:
            for index in self._sorted.values():
                index.add(idx, added)
        n = job.num_gpus
        if n is not None:
            demand = self.demand
            demand[n] = demand.get(n, 0) + 1
        self.version += 1

    def remove(self, idx: int) -> None:
        """Take job ``idx`` out of the queue (it started)."""
        p = self._pos.pop(idx)
        alive = self._alive
        alive[p] = False
        self._alive_np[p] = False
        seq = self._seq.pop(idx)
        if self._sorted:
            for index in self._sorted.values():
                index.remove(idx, seq)
        n = self._jobs[idx].num_gpus
        if n is not None:
            demand = self.demand
            left = demand[n] - 1
            if left:
                demand[n] = left
            else:
                del demand[n]
        dead = self._dead + 1
        head, end = self._head, len(self._order)
        while head < end and not alive[head]:
            head += 1
            dead -= 1
        self._head, self._dead = head, dead
        if dead > 64 and dead > len(self._pos):
            self._compact()
        self.version += 1

    def _compact(self) -> None:
        keep = [i for p, i in enumerate(self._order[self._head:], self._head) if self._alive[p]]
        self._order = keep
        self._alive = [True] * len(keep)
        self._order_np[:len(keep)] = keep
        self._alive_np[:len(keep)] = True
        self._alive_np[len(keep):] = False
        self._pos = {i: p for p, i in enumerate(keep)}
        self._head = self._dead = 0

    def head(self) -> int | None:
        """Index of the oldest pending job, or None."""
        return self._order[self._head] if self._head < len(self._order) else None

    def __iter__(self) -> Iterator[int]:
        order, alive = self._order, self._alive
        for p in range(self._head, len(order)):
            if alive[p]:
                yield order[p]

    def jobs(self) -> tuple[Job, ...]:
        """The pending jobs in arrival order (cached until the queue changes)."""
        if self._cache is None or self._cache[0] != self.version:
            h = self._head
            self._cache = (self.version, tuple(map(
                self._jobs.__getitem__, compress(self._order[h:], self._alive[h:]))))
        return self._cache[1]

    def records(self) -> np.ndarray:
        """The pending jobs' record indices in arrival order (int64; cached until the queue
        changes; read-only)."""
        if self._records is None or self._records[0] != self.version:
            h, e = self._head, len(self._order)
            if self._dead:
                order = self._order_np[h:e][self._alive_np[h:e]]
            else:  # no tombstone past the head: a plain copy
                order = self._order_np[h:e].copy()
            order.flags.writeable = False
            self._records = (self.version, order)
        return self._records[1]

    def job_index(self) -> dict[str, int]:
        """Job id -> position in :meth:`jobs` (cached until the queue changes; read-only)."""
        if self._index is None or self._index[0] != self.version:
            jobs = self.jobs()
            self._index = (self.version, dict(zip(map(_job_id, jobs), range(len(jobs)),
                                                  strict=True)))
        return self._index[1]

    def columns(self) -> QueueColumns:
        """Numeric fields of :meth:`jobs` as arrays (cached until the queue changes)."""
        if self._columns is None or self._columns[0] != self.version:
            self._columns = (self.version, QueueColumns(self.workload_columns, self.records()))
        return self._columns[1]

    def sorted_by(self, name: Hashable, key: Callable[[Job], tuple]) -> SortedIndex:
        """The pending jobs ordered by ``(*key(job), queue position)``.

        ``key`` must depend on the job alone (it is computed once per job); ``name``
        identifies the order (a later call with the same name returns the same index,
        kept up to date as jobs come and go, and ignores ``key``). The index is live:
        read it, do not change it or hold it across changes of the queue.
        """
        index = self._sorted.get(name)
        if index is None:
            index = self._register(name, SortedIndex(self._jobs, key))
        return index  # type: ignore[return-value]

    def grouped_by(self, name: Hashable, group: Callable[[Job], Hashable],
                   key: Callable[[Job], tuple]) -> dict[Hashable, SortedIndex]:
        """The pending jobs split by ``group(job)``, each group a :meth:`sorted_by` index
        (no empty group is listed). Same rules as :meth:`sorted_by`."""
        index = self._sorted.get(name)
        if index is None:
            index = self._register(name, GroupedIndex(self._jobs, group, key))
        return index.groups  # type: ignore[union-attr]

    def _register(self, name: Hashable, index: SortedIndex | GroupedIndex
                  ) -> SortedIndex | GroupedIndex:
        seq = self._seq
        for idx in self:
            index.add(idx, seq[idx])
        self._sorted[name] = index
        return index

    @property
    def added(self) -> int:
        """Jobs ever added (arrivals and requeues)."""
        return self._added

    def last_added(self, k: int) -> list[int]:
        """The ``k`` jobs added last, in order (``k`` ≥ 1; valid while all of them wait)."""
        return self._order[-k:]

    def min_demand(self) -> int | None:
        """Smallest GPU count among pending jobs with a fixed demand (None if none)."""
        return min(self.demand) if self.demand else None

    def all_fixed(self) -> bool:
        """Every pending job has a fixed GPU count."""
        return sum(self.demand.values()) == len(self._pos)


class SortedIndex:
    """Record indices (``order``) sorted by their entries ``(*key(job), seq)`` (``keys``;
    ``seq`` orders jobs by queue position), kept sorted by bisection as jobs come and go.
    Read ``order`` and ``keys``; do not change them."""

    __slots__ = ("_jobs", "_key", "keys", "order", "_of")

    def __init__(self, jobs: Sequence[Job], key: Callable[[Job], tuple]) -> None:
        self._jobs = jobs
        self._key = key
        self.keys: list[tuple] = []
        self.order: list[int] = []
        self._of: dict[int, tuple] = {}  # record index -> its key, computed once

    def add(self, idx: int, seq: int) -> None:
        k = self._of.get(idx)
        if k is None:
            k = self._of[idx] = self._key(self._jobs[idx])
        entry = (*k, seq)
        at = bisect_left(self.keys, entry)
        self.keys.insert(at, entry)
        self.order.insert(at, idx)

    def remove(self, idx: int, seq: int) -> None:
        at = bisect_left(self.keys, (*self._of[idx], seq))
        del self.keys[at]
        del self.order[at]


class GroupedIndex:
    """One :class:`SortedIndex` per value of ``group(job)`` (``groups``; no empty one)."""

    __slots__ = ("_jobs", "_group", "_key", "groups", "_of")

    def __init__(self, jobs: Sequence[Job], group: Callable[[Job], Hashable],
                 key: Callable[[Job], tuple]) -> None:
        self._jobs = jobs
        self._group = group
        self._key = key
        self.groups: dict[Hashable, SortedIndex] = {}
        self._of: dict[int, Hashable] = {}  # record index -> its group, computed once

    def add(self, idx: int, seq: int) -> None:
        g = self._of.get(idx)
        if g is None:
            g = self._of[idx] = self._group(self._jobs[idx])
        index = self.groups.get(g)
        if index is None:
            index = self.groups[g] = SortedIndex(self._jobs, self._key)
        index.add(idx, seq)

    def remove(self, idx: int, seq: int) -> None:
        g = self._of[idx]
        index = self.groups[g]
        index.remove(idx, seq)
        if not index.order:
            del self.groups[g]


class QueueColumns(JobColumns):
    """:class:`~dlsched.jobs.JobColumns` of the pending jobs, gathered from the columns of
    the whole workload (``index``: the pending jobs' workload indices in queue order)."""

    def __init__(self, whole: JobColumns, index: np.ndarray) -> None:
        super().__init__(())
        self._whole = whole
        self._index = index

    def __call__(self, name: str, fill: float = float("nan")) -> np.ndarray:
        key = (name, fill)
        column = self._built.get(key)
        if column is None:
            column = self._whole(name, fill)[self._index]
            column.flags.writeable = False
            self._built[key] = column
        return column
