"""SCHED²'s job selection one pick at a time on the fast episode loop (the DQN's episodes).

The dynamics are :func:`dlsched.rl.sched2_search.play`'s (exclusive GPUs, packing on idle
counts, run time = ideal time × the SCHED² locality slowdown of the placement), which
reproduce the simulator's schedule; here the agent picks one job at a time. At a decision
the candidates are the queued jobs (or the ``window`` oldest) and φ. A candidate that fits
(the cluster has as many idle GPUs as it needs; packing may span servers) starts; one that
does not fit, or φ, waits for the next arrival or completion: picking a job the agent
would start next if it fitted blocks the jobs behind it, as the selection rules' loop does
(it starts jobs in its order until one does not fit). So every priority rule is one
greedy policy of this MDP; always picking a job that fits is backfilling, which measures
worse here (docs/rl.md). φ is not offered while nothing runs (then every job fits: an idle
cluster never waits). Time moves on by itself when no candidate fits. Reward: the started
job's execution effectiveness E (Eq. 2); waiting earns 0. The sum of an episode's rewards
is the number of jobs × its mean E.

A decision state is a :class:`State` (the queue's job indices, the clock and the idle
GPUs per server): small enough to keep in a replay memory, and enough to recompute the
rows of :func:`dlsched.heuristics.sched2_dqn_policy.q_rows` at any time.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..heuristics.sched2_dqn_policy import q_rows
from ..problems.sched2 import locality_slowdown
from .sched2_search import Episode, _packing


@dataclass(frozen=True)
class State:
    """A decision: ``shown`` (candidate job indices, oldest first), the clock, the idle
    GPUs per server, the queue's length and whether anything runs."""

    episode: int
    shown: np.ndarray
    now: float
    idle: np.ndarray
    queued: int
    running: bool

    def rows(self, episode: Episode) -> np.ndarray:
        """The Q-network's rows (one per candidate, then φ)."""
        s = self.shown
        return q_rows(episode.gpus[s].astype(float), episode.duration[s],
                      self.now - episode.submit[s], episode.sensitivity[s], self.idle,
                      episode.servers * episode.gpus_per_server, self.queued)

    def mask(self) -> np.ndarray:
        """Which rows may be picked: every candidate, and φ while a job runs."""
        return np.append(np.ones(len(self.shown), dtype=bool), self.running)

    def fits(self, episode: Episode) -> np.ndarray:
        """Which candidates would start if picked."""
        return episode.gpus[self.shown] <= self.idle.sum()


class FastSelection:
    """One episode played one pick at a time (module docstring).

    ``reset()`` returns the first :class:`State` (None when the episode has no decision);
    ``step(state, k)`` picks candidate ``k`` (``k == len(state.shown)``: φ) and returns
    ``(reward, next state or None when the episode is over)``.
    """

    def __init__(self, episode: Episode, index: int = 0, window: int | None = None) -> None:
        self.episode, self.index, self.window = episode, index, window

    def reset(self) -> State | None:
        e = self.episode
        self.total = e.servers * e.gpus_per_server
        self.idle = np.full(e.servers, e.gpus_per_server, dtype=np.int64)
        self.start = np.full(len(e.submit), np.nan)
        self.end = np.full(len(e.submit), np.nan)
        self.events: list[tuple[float, int, int, dict[int, int] | None]] = [
            (float(t), 1, i, None) for i, t in enumerate(e.submit)]
        heapq.heapify(self.events)
        self.queue: list[int] = []
        self.now = 0.0
        return self._advance()

    def _state(self) -> State | None:
        if not self.queue:
            return None
        shown = np.array(self.queue[: self.window], dtype=np.int64)
        if not (self.episode.gpus[shown] <= self.idle.sum()).any():
            return None
        return State(self.index, shown, self.now, self.idle.copy(), len(self.queue),
                     bool(self.idle.sum() < self.total))

    def _advance(self) -> State | None:
        """Process events until a decision exists (or none are left)."""
        while self.events:
            self.now = self.events[0][0]
            while self.events and self.events[0][0] == self.now:
                _, kind, i, taken = heapq.heappop(self.events)
                if kind == 1:
                    self.queue.append(i)
                else:
                    for s, k in taken.items():
                        self.idle[s] += k
            state = self._state()
            if state is not None:
                return state
        return None

    def step(self, state: State, k: int) -> tuple[float, State | None]:
        if k == len(state.shown) and not state.running:
            raise ValueError("φ while nothing runs: the mask forbids it")
        e = self.episode
        taken = None if k == len(state.shown) else _packing(self.idle, int(e.gpus[state.shown[k]]))
        if taken is None:
            return 0.0, self._advance()
        i = int(state.shown[k])
        for s, n in taken.items():
            self.idle[s] -= n
        slowdown = locality_slowdown(e.sensitivity[i], np.array(list(taken.values())))
        self.start[i] = self.now
        self.end[i] = self.now + e.duration[i] * slowdown / e.reference[i]
        heapq.heappush(self.events, (self.end[i], 0, i, taken))
        self.queue.remove(i)
        reward = float(e.duration[i] / (self.end[i] - e.submit[i]))
        state = self._state()
        return reward, state if state is not None else self._advance()

    def effectiveness(self) -> float:
        """Mean E of the finished episode."""
        return float(np.mean(self.episode.duration / (self.end - self.episode.submit)))
