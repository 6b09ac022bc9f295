"""The pending queue of the simulator: jobs waiting to start, in arrival order.

:class:`PendingQueue` gives O(1) head, removal anywhere and membership, the pending jobs as
a tuple (cached until the queue changes) and a count of pending GPU demands (the cheap
"can anything fit" tests of the engine and of view policies).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
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

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, idx: object) -> bool:
        return idx in self._pos

    def add(self, idx: int) -> None:
        """Append job ``idx`` (arrivals come in order)."""
        self._pos[idx] = len(self._order)
        self._order.append(idx)
        self._alive.append(True)
        n = self._jobs[idx].num_gpus
        if n is not None:
            self.demand[n] += 1
        self.version += 1

    def remove(self, idx: int) -> None:
        """Take job ``idx`` out of the queue (it started)."""
        p = self._pos.pop(idx)
        self._alive[p] = False
        self._dead += 1
        n = self._jobs[idx].num_gpus
        if n is not None:
            self.demand[n] -= 1
            if not self.demand[n]:
                del self.demand[n]
        while self._head < len(self._order) and not self._alive[self._head]:
            self._head += 1
            self._dead -= 1
        if self._dead > 64 and self._dead > len(self._pos):
            self._compact()
        self.version += 1

    def _compact(self) -> None:
        keep = [i for p, i in enumerate(self._order[self._head:], self._head) if self._alive[p]]
        self._order = keep
        self._alive = [True] * len(keep)
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
            h = self._head
            order = np.fromiter(compress(self._order[h:], self._alive[h:]), dtype=np.int64,
                                count=len(self._pos))
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

    def min_demand(self) -> int | None:
        """Smallest GPU count among pending jobs with a fixed demand (None if none)."""
        return min(self.demand) if self.demand else None

    def all_fixed(self) -> bool:
        """Every pending job has a fixed GPU count."""
        return sum(self.demand.values()) == len(self._pos)


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
