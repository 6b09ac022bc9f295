"""What a simulation is asked to do and what it leaves: the policy, per-job records, the run.

Plain data shared by every simulator module (the engine fills them, ``metrics`` and
``results`` read them); nothing here imports another simulator module except the speed
model's type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..decision import TaskPlacement
from ..instance import Instance
from ..jobs import Job
from ..problems.rates import SpeedModel

CHECK_MODES = ("fast", "full")


class SimulationError(RuntimeError):
    """A run cannot go on: an invalid decision, a method error, or a stalled queue."""


@dataclass(frozen=True)
class Policy:
    """A registered method used as a per-event policy.

    Parameters
    ----------
    method
        Method name registered for the workload's problem (``dlsched methods``).
    backend, time_limit
        For exact methods: the solver and its per-event time limit in seconds.
    seed
        Passed to the method.
    options
        Method options, passed through.
    via_solve
        Call through :func:`dlsched.solve.solve` (status, objective, bound per event);
        exact methods always are. Otherwise the method runs directly and its decision
        is checked by the simulator.
    interval
        Also wake the policy every ``interval`` seconds (batch policies, e.g. a GA that
        plans every N seconds).
    batch_only
        Call the policy only at wake-ups (arrivals and completions just queue/free).
    prefix
        Prefix mode (``dlsched.simulate.engine``); ``None``: on for problems placed whole
        (Liquid).
    max_jobs
        In prefix mode, show the policy at most this many pending jobs.
    """

    method: str
    backend: str | None = None
    time_limit: float | None = None
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    via_solve: bool = False
    interval: float | None = None
    batch_only: bool = False
    prefix: bool | None = None
    max_jobs: int | None = None

    @property
    def label(self) -> str:
        return self.method + (f"[{self.backend}]" if self.backend else "")


@dataclass(slots=True)  # slots: the engine sets ~10 fields per start
class JobRecord:
    """What happened to one job (``gpus``: GPU indices in the cluster, once started)."""

    job: Job
    work: float
    start: float | None = None
    end: float | None = None
    nodes: int = 0
    locality_slowdown: float = 1.0
    base_rate: float = 1.0
    rate: float = 1.0
    work_left: float = 0.0
    last_t: float = 0.0
    version: int = 0
    pred_end: float = 0.0
    tasks: tuple[TaskPlacement, ...] = ()
    node_extra: dict[int, tuple[float, float]] | None = None
    gpu_list: tuple[int, ...] = ()
    attempts: list[tuple[float, float, tuple[int, ...]]] = field(default_factory=list)
    """Earlier runs ended by a requeue: (start, requeue time, GPU indices); their progress
    is lost (the job restarts from its full work)."""
    _gpus: tuple[tuple[int, ...], np.ndarray | None] | None = field(default=None, repr=False,
                                                             compare=False)

    @property
    def gpus(self) -> np.ndarray | None:
        """GPU indices (int64) of the current or last run (``gpu_list`` as an array); None
        while the job has not started. Built on first read (a start costs no array); a
        value set holds until the job starts again."""
        cached = self._gpus
        if cached is not None and cached[0] is self.gpu_list:
            return cached[1]
        if self.start is None:
            return None
        self._gpus = (self.gpu_list, np.array(self.gpu_list, dtype=np.int64))
        return self._gpus[1]

    @gpus.setter
    def gpus(self, value: np.ndarray | None) -> None:
        self._gpus = (self.gpu_list, value)


@dataclass
class SimRun:
    """Raw outcome of :func:`~dlsched.simulate.simulate`; ``dlsched.simulate.metrics`` turns
    it into tables."""

    workload: Instance
    policy: Policy
    speed: SpeedModel
    records: list[JobRecord]
    busy_t: np.ndarray  # times at which the number of busy GPUs changed
    busy_n: np.ndarray  # busy GPUs from busy_t[i] on
    frag_t: np.ndarray  # sample times of the mean server fragmentation (SCHED² Eq. 1)
    frag: np.ndarray
    events: list[tuple[float, str, str]]  # (time, kind, job) when recorded
    policy_calls: int
    event_count: int
    wall_time: float
    events_without_solution: int = 0
    check: str = "fast"
    requeues: int = 0  # running jobs a policy moved back to the queue (JobRecord.attempts)

    def __repr__(self) -> str:
        """One line: what ran and how much, not the arrays (``metrics`` has the tables)."""
        done = sum(1 for r in self.records if r.end is not None)
        return (f"SimRun(workload={self.workload.name!r}, policy={self.policy.method!r}, "
                f"jobs={len(self.records)}, finished={done}, events={self.event_count}, "
                f"policy_calls={self.policy_calls}, wall_time={self.wall_time:.3f}s)")
