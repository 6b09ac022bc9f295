"""A Gymnasium environment for job selection: the agent picks which queued job starts next.

The dynamics are those of the simulator for exclusive-GPU problems (``dlsched.simulate``):
jobs arrive at their ``submit_time``; at every event time (an arrival or a completion) the
clock is frozen and the agent acts repeatedly — each action starts one of the first ``J``
queued jobs (by arrival) on the GPUs its placement rule chooses — until it takes φ (action
``J``) or nothing among the first ``J`` fits; then the clock moves to the next event. A job
runs exclusively on its GPUs for its run time (its solo duration times the placement's
slowdown), without preemption.

Subclasses give the placement rule and the run time (:class:`Sched2Env` for SCHED²); this
class owns the clock, the queue, the observation's layout, masking and the records, so
other problems' selection decisions can be wrapped the same way.

Masking: ``info["action_mask"]`` marks the job slots that hold a job that fits now, and φ.
φ is masked only when nothing runs and a job fits (an idle cluster never waits: the same
rule the learned policies follow inside the simulator, which cannot see future arrivals).
An invalid action (an empty slot, a job that does not fit, or a masked φ) is a no-op with
reward ``INVALID_PENALTY``; an episode is truncated after ``max_steps`` actions (default
20 × jobs). ``info["effectiveness_mean"]`` is the mean E over every job of the episode, a
job not started by the truncation counting 0.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from ..heuristics.selection_features import OBS_HIGH, selection_observation

INVALID_PENALTY = -0.1


@dataclass
class EpisodeJob:
    """One job of an episode: what the agent sees and what happened to it."""

    id: str
    submit: float
    demand: int
    duration: float  # solo run time on its ideal (packed) placement
    model: str | None
    start: float | None = None
    end: float | None = None
    gpus: tuple[int, ...] = ()
    slowdown: float = 1.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def effectiveness(self) -> float:
        """Eq. 2 of SCHED²: ideal time / (wait + actual run time)."""
        assert self.start is not None and self.end is not None
        return self.duration / ((self.start - self.submit) + (self.end - self.start))


class JobSelectionEnv(gym.Env):
    """Base environment; subclasses implement :meth:`place` and :meth:`slowdown`.

    Parameters
    ----------
    num_servers, gpus_per_server
        The cluster (identical servers, exclusive GPUs).
    window
        J, the number of queued jobs the agent can pick from.
    job_features
        Numbers per job slot in the observation (the last is the job's waiting time).
    max_steps
        Truncation after this many actions (default 20 × the episode's jobs).
    """

    metadata = {"render_modes": []}

    def __init__(self, num_servers: int, gpus_per_server: int, *, window: int = 10,
                 job_features: int = 2, max_steps: int | None = None) -> None:
        self.num_servers = num_servers
        self.gpus_per_server = gpus_per_server
        self.window = window
        self.job_features = job_features
        self.max_steps_setting = max_steps
        size = num_servers * gpus_per_server + job_features * window + 4
        self.observation_space = gym.spaces.Box(0.0, OBS_HIGH, shape=(size,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(window + 1)
        self.jobs: list[EpisodeJob] = []

    # ------------------------------------------------------------------ subclass hooks
    def episode_jobs(self, rng: np.random.Generator,
                     options: dict[str, Any] | None) -> list[EpisodeJob]:
        raise NotImplementedError

    def place(self, free: list[list[int]], job: EpisodeJob) -> list[int] | None:
        """GPU indices for ``job`` given the free GPUs per server, or None."""
        raise NotImplementedError

    def slowdown(self, job: EpisodeJob, gpus: list[int]) -> float:
        """Run time on ``gpus`` / solo duration (>= 1)."""
        raise NotImplementedError

    def job_slot_features(self, job: EpisodeJob) -> np.ndarray:
        """The first ``job_features - 1`` numbers of a queued job's slot (the last one is
        its waiting time, added here)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.jobs = sorted(self.episode_jobs(self.np_random, options),
                           key=lambda j: (j.submit, j.id))
        self.now = 0.0
        self.next_arrival = 0
        self.queue: list[int] = []
        self.running: list[tuple[float, int]] = []  # (end, job index) heap
        self.gpu_end = np.zeros(self.num_servers * self.gpus_per_server)
        self.free = [list(range(s * self.gpus_per_server, (s + 1) * self.gpus_per_server))
                     for s in range(self.num_servers)]
        self.steps = 0
        self.started = 0
        self.max_steps = self.max_steps_setting or 20 * max(1, len(self.jobs))
        if self.jobs:
            self.now = self.jobs[0].submit
        self._advance_until_choice()
        return self._observation(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.steps += 1
        mask = self.action_mask()
        reward = 0.0
        action = int(action)
        if not (0 <= action <= self.window) or not mask[action]:
            reward = INVALID_PENALTY
        elif action == self.window:
            self._advance_to_next_event()
            self._advance_until_choice()
        else:
            reward = self._start(self.queue[action])
            self._advance_until_choice()
        terminated = self.started == len(self.jobs)
        if terminated:
            self._drain()
        truncated = not terminated and self.steps >= self.max_steps
        return self._observation(), reward, terminated, truncated, self._info()

    # ------------------------------------------------------------------ dynamics
    def fits(self, j: int) -> bool:
        return self.place(self.free, self.jobs[j]) is not None

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.window + 1, dtype=bool)
        for slot, j in enumerate(self.queue[: self.window]):
            mask[slot] = self.fits(j)
        mask[self.window] = bool(self.running) or not mask[: self.window].any()
        return mask

    def _start(self, j: int) -> float:
        job = self.jobs[j]
        gpus = self.place(self.free, job)
        assert gpus is not None
        for g in gpus:
            self.free[g // self.gpus_per_server].remove(g)
        job.gpus = tuple(sorted(gpus))
        job.slowdown = self.slowdown(job, gpus)
        job.start = self.now
        job.end = self.now + job.duration * job.slowdown
        self.gpu_end[list(gpus)] = job.end
        heapq.heappush(self.running, (job.end, j))
        self.queue.remove(j)
        self.started += 1
        return job.effectiveness

    def _admit_arrivals(self) -> None:
        while (self.next_arrival < len(self.jobs)
               and self.jobs[self.next_arrival].submit <= self.now):
            self.queue.append(self.next_arrival)
            self.next_arrival += 1

    def _complete_due(self) -> None:
        while self.running and self.running[0][0] <= self.now:
            _, j = heapq.heappop(self.running)
            for g in self.jobs[j].gpus:
                self.free[g // self.gpus_per_server].append(g)
                self.free[g // self.gpus_per_server].sort()

    def _advance_to_next_event(self) -> None:
        times = []
        if self.running:
            times.append(self.running[0][0])
        if self.next_arrival < len(self.jobs):
            times.append(self.jobs[self.next_arrival].submit)
        if times:
            self.now = min(times)

    def _advance_until_choice(self) -> None:
        """Process events until the agent has a job that fits (or all jobs started)."""
        while True:
            self._complete_due()
            self._admit_arrivals()
            if self.started == len(self.jobs):
                return
            if any(self.fits(j) for j in self.queue[: self.window]):
                return
            self._advance_to_next_event()

    def _drain(self) -> None:
        while self.running:
            self.now = max(self.now, self.running[0][0])
            self._complete_due()

    # ------------------------------------------------------------------ observation
    def _observation(self) -> np.ndarray:
        shown = [self.jobs[j] for j in self.queue[: self.window]]
        rest = [(r.demand, r.duration, self.now - r.submit)
                for r in (self.jobs[j] for j in self.queue[self.window:])]
        return selection_observation(
            self.gpu_end - self.now, [self.job_slot_features(j) for j in shown],
            [self.now - j.submit for j in shown], rest, self.window, self.job_features,
            self.gpus_per_server)

    def action_masks(self) -> np.ndarray:
        """The valid actions now (sb3-contrib's ``MaskablePPO`` reads this method)."""
        return self.action_mask()

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"action_mask": self.action_mask(), "time": self.now,
                                "started": self.started, "jobs": len(self.jobs)}
        if self.jobs:
            # over every job of the episode: one not started yet (a truncated episode)
            # counts 0, so stalling never raises the score
            info["effectiveness_mean"] = float(np.mean(
                [j.effectiveness if j.start is not None else 0.0 for j in self.jobs]))
        if self.started == len(self.jobs) and self.jobs:
            info["makespan"] = max(j.end for j in self.jobs) - self.jobs[0].submit
            info["jct_mean"] = float(np.mean([j.end - j.submit for j in self.jobs]))
            info["wait_mean"] = float(np.mean([j.start - j.submit for j in self.jobs]))
        return info
