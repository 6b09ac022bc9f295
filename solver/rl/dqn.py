"""SCHED²'s deep-Q agent: a per-job Q-network trained by DQN on the fast episode loop.

Q(s, j) = f(row_j; w): one MLP scores every candidate's row of
:func:`dlsched.heuristics.sched2_dqn_policy.q_rows` (the job's features and a pooled
summary of the cluster and the queue) and the φ row, so the same weights act on any
cluster and queue. Training (:func:`train_dqn`):

* **demonstrations** (``teacher``): episodes played by a whole-queue priority (SPF's
  order, or learned-priority's weights) — in the MDP of
  :mod:`dlsched.rl.sched2_fast_env` the teacher picks its first job, which starts or
  blocks —, fitted first with a large-margin loss plus the TD loss (DQfD), and kept in
  a second memory sampled beside the agent's own ``demo_share`` of every batch;
* **DQN**: ``envs`` episodes stepped together (one batched forward per step),
  ε-greedy, n-step returns, a target network copied every ``target_every`` updates,
  double-DQN targets, uniform replay, Huber loss, Adam;
* every ``eval_every`` training episodes the greedy agent plays the validation episodes
  and the best weights so far are kept.

Deterministic on CPU for a seed: one torch thread, deterministic algorithms, every draw
from seeded generators. Weights are safetensors (``l0`` … ``l2``), the feature list, the
window and the training summary as metadata; nothing is unpickled.
"""

from __future__ import annotations

import copy
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

from ..files import atomic_path
from ..heuristics.sched2_dqn_policy import Q_FEATURES
from ..heuristics.sched2_priority import FEATURES
from .dqn_settings import DqnSettings
from .sched2_fast_env import FastSelection, State
from .sched2_search import SPF_WEIGHTS, Episode
from .torch_adam import Adam


class JobQ(nn.Module):
    """The per-row MLP (:class:`dlsched.heuristics.sched2_dqn_policy.NumpyJobQ` in torch)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.l0 = nn.Linear(len(Q_FEATURES), hidden)
        self.l1 = nn.Linear(hidden, hidden)
        self.l2 = nn.Linear(hidden, 1)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.l0(rows))
        return self.l2(torch.relu(self.l1(x)))[..., 0]


def padded(rows: list[np.ndarray], masks: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """States' rows stacked into ``(B, longest, features)`` and their masks (padding: False)."""
    longest = max(len(r) for r in rows)
    x = np.zeros((len(rows), longest, len(Q_FEATURES)), dtype=np.float32)
    m = np.zeros((len(rows), longest), dtype=bool)
    for k, (r, mk) in enumerate(zip(rows, masks, strict=True)):
        x[k, : len(r)] = r
        m[k, : len(r)] = mk
    return torch.as_tensor(x), torch.as_tensor(m)


def teacher_weights(teacher: str | None) -> np.ndarray | None:
    """The teacher's priority weights (``SPF_WEIGHTS`` or learned-priority's), or None."""
    if teacher is None:
        return None
    if teacher == "spf":
        return SPF_WEIGHTS
    if teacher == "priority":
        from ..heuristics.sched2_priority import load_scorer, shipped_weights

        return load_scorer(shipped_weights()).weights
    raise ValueError(f"teacher {teacher!r}: use spf, priority or None")


def teacher_action(rows: np.ndarray, weights: np.ndarray) -> int:
    """The whole-queue priority's pick: its first job (ties: the oldest)."""
    return int(np.argmin(rows[:-1, : len(FEATURES)] @ weights))


class Memory:
    """Uniform replay of n-step transitions ``(state, action, return, discount, next)``."""

    def __init__(self, capacity: int) -> None:
        self.items: deque = deque(maxlen=capacity)

    def add(self, *item) -> None:
        self.items.append(item)

    def sample(self, rng: np.random.Generator, n: int) -> list[tuple]:
        return [self.items[int(k)] for k in rng.integers(len(self.items), size=n)]


class NStep:
    """Turns one environment's steps into n-step transitions."""

    def __init__(self, n: int, gamma: float, out: Memory) -> None:
        self.n, self.gamma, self.out = n, gamma, out
        self.pending: deque = deque()

    def push(self, state: State, action: int, reward: float, nxt: State | None) -> None:
        self.pending.append((state, action, reward))
        if nxt is None:
            while self.pending:
                self._emit(None)
        elif len(self.pending) == self.n:
            self._emit(nxt)

    def _emit(self, nxt: State | None) -> None:
        ret = sum(r * self.gamma**k for k, (_, _, r) in enumerate(self.pending))
        state, action, _ = self.pending.popleft()
        self.out.add(state, action, ret, 0.0 if nxt is None else self.gamma**self.n, nxt)


class Learner:
    """The networks, memories and update rule (module docstring)."""

    def __init__(self, train: Sequence[Episode], s: DqnSettings, seed: int) -> None:
        torch.manual_seed(seed)
        # torch.use_deterministic_algorithms(True) without its first line, which imports
        # torch._inductor.config (and torch._dynamo with it: ~1.5 CPU-s per process) to set
        # a flag for compiled graphs only; the eager operators read this switch (torch is
        # pinned; test_rl_sched2 checks are_deterministic_algorithms_enabled())
        torch._C._set_deterministic_algorithms(True, warn_only=False)
        self.train_set, self.s = list(train), s
        self.rng = np.random.default_rng(seed)
        self.net, self.target = JobQ(s.hidden), JobQ(s.hidden)
        self.target.load_state_dict(self.net.state_dict())
        self.opt = Adam(self.net.parameters(), lr=s.lr)
        self.memory, self.demos = Memory(s.buffer), Memory(s.buffer)
        self.updates = 0

    def rows(self, state: State) -> np.ndarray:
        return state.rows(self.train_set[state.episode])

    @torch.no_grad()
    def q(self, states: list[State]) -> list[np.ndarray]:
        x, m = padded([self.rows(st) for st in states], [st.mask() for st in states])
        q = self.net(x).masked_fill(~m, -np.inf).numpy()
        return [q[k, : len(st.shown) + 1] for k, st in enumerate(states)]

    def _td(self, batch: list[tuple], margin: bool) -> torch.Tensor:
        states, actions, returns, discounts, nexts = zip(*batch, strict=True)
        x, m = padded([self.rows(st) for st in states], [st.mask() for st in states])
        q_all = self.net(x)
        act = torch.as_tensor(actions)[:, None]
        q = q_all.gather(1, act)[:, 0]
        live = [k for k, n in enumerate(nexts) if n is not None]
        best = torch.zeros(len(batch))
        if live:
            with torch.no_grad():
                nx, nm = padded([self.rows(nexts[k]) for k in live],
                                [nexts[k].mask() for k in live])
                pick = self.net(nx).masked_fill(~nm, -1e9).argmax(1, keepdim=True)
                best[live] = self.target(nx).gather(1, pick)[:, 0]
        y = torch.as_tensor(returns, dtype=torch.float32) + torch.as_tensor(
            discounts, dtype=torch.float32) * best
        loss = nn.functional.smooth_l1_loss(q, y)
        if margin:
            bonus = torch.full_like(q_all, self.s.margin).scatter(1, act, 0.0)
            top = (q_all + bonus).masked_fill(~m, -1e9).max(1).values
            loss = loss + (top - q).mean()
        return loss

    def update(self, demo_only: bool = False) -> None:
        s = self.s
        n_demo = s.batch if demo_only else (round(s.batch * s.demo_share)
                                            if self.demos.items else 0)
        loss = torch.zeros(())
        if n_demo:
            loss = loss + self._td(self.demos.sample(self.rng, n_demo), margin=True)
        if s.batch - n_demo:
            loss = loss + self._td(self.memory.sample(self.rng, s.batch - n_demo), margin=False)
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), 10.0)
        self.opt.step()
        self.updates += 1
        if self.updates % s.target_every == 0:
            self.target.load_state_dict(self.net.state_dict())


def demonstrate(learner: Learner, weights: np.ndarray, episodes: Sequence[int]) -> None:
    """The teacher's transitions on the training episodes ``episodes`` (indices)."""
    s = learner.s
    for k in episodes:
        env = FastSelection(learner.train_set[k], k, s.window)
        steps, state = NStep(s.n_step, s.gamma, learner.demos), env.reset()
        while state is not None:
            a = teacher_action(learner.rows(state), weights)
            reward, nxt = env.step(state, a)
            steps.push(state, a, reward, nxt)
            state = nxt


def greedy_effectiveness(net: JobQ, episodes: Sequence[Episode], window: int | None) -> float:
    """Mean E of the greedy agent over ``episodes`` (played together, batched)."""
    envs = [FastSelection(e, k, window) for k, e in enumerate(episodes)]
    states = {k: env.reset() for k, env in enumerate(envs)}
    with torch.no_grad():
        while any(st is not None for st in states.values()):
            live = [k for k, st in states.items() if st is not None]
            x, m = padded([states[k].rows(episodes[k]) for k in live],
                          [states[k].mask() for k in live])
            picks = net(x).masked_fill(~m, -np.inf).argmax(1).tolist()
            for k, a in zip(live, picks, strict=True):
                states[k] = envs[k].step(states[k], a)[1]
    return float(np.mean([env.effectiveness() for env in envs]))


@dataclass
class DqnResult:
    """The kept network, the validation curve, the CPU time and the best validation E."""

    net: JobQ
    curve: list[dict]
    cpu_s: float
    best_valid: float


def train_dqn(train: Sequence[Episode], valid: Sequence[Episode], s: DqnSettings,
              seed: int = 0, progress: Callable[[dict], None] | None = None) -> DqnResult:
    """The agent best on ``valid`` after DQN on ``train`` (module docstring)."""
    torch.set_num_threads(1)
    c0 = time.process_time()
    learner = Learner(train, s, seed)
    teacher = teacher_weights(s.teacher)
    if teacher is not None and s.demo_episodes:
        demonstrate(learner, teacher, range(min(s.demo_episodes, len(train))))
        for _ in range(s.pretrain_updates):
            learner.update(demo_only=True)
        learner.target.load_state_dict(learner.net.state_dict())
    curve: list[dict] = []

    def evaluate(episode: int) -> None:
        value = greedy_effectiveness(learner.net, valid, s.window)
        if not curve or value > best[0]:
            best[:] = [value, copy.deepcopy(learner.net.state_dict())]
        row = {"episode": episode, "valid_E": value, "updates": learner.updates,
               "cpu_s": time.process_time() - c0}
        curve.append(row)
        if progress is not None:
            progress(row)

    best: list = [0.0, None]
    evaluate(0)
    order: list[int] = []
    started = finished = steps = 0
    envs: dict[int, tuple[FastSelection, NStep, State | None]] = {}

    def open_env(slot: int) -> None:
        nonlocal started, order
        if started >= s.episodes:
            envs.pop(slot, None)
            return
        if not order:
            order = [int(k) for k in learner.rng.permutation(len(train))]
        k = order.pop(0)
        env = FastSelection(train[k], k, s.window)
        envs[slot] = (env, NStep(s.n_step, s.gamma, learner.memory), env.reset())
        started += 1

    for slot in range(s.envs):
        open_env(slot)
    while envs:
        eps = s.eps_start + (s.eps_end - s.eps_start) * min(1.0, finished / max(1, s.episodes))
        slots = [k for k in sorted(envs) if envs[k][2] is not None]
        qs = learner.q([envs[k][2] for k in slots]) if slots else []
        for slot, q in zip(slots, qs, strict=True):
            env, nstep, state = envs[slot]
            allowed = np.flatnonzero(np.isfinite(q))
            a = (int(learner.rng.choice(allowed)) if learner.rng.random() < eps
                 else int(np.argmax(q)))
            reward, nxt = env.step(state, a)
            nstep.push(state, a, reward, nxt)
            envs[slot] = (env, nstep, nxt)
            steps += 1
            if steps % s.train_every == 0 and len(learner.memory.items) >= s.batch:
                learner.update()
        for slot in [k for k in sorted(envs) if envs[k][2] is None]:
            finished += 1
            open_env(slot)
            if finished % s.eval_every == 0 or finished == s.episodes:
                evaluate(finished)
    learner.net.load_state_dict(best[1])
    return DqnResult(learner.net, curve, time.process_time() - c0, best[0])


def save_agent(net: JobQ, path: str | Path, window: int | None, summary: dict) -> None:
    """Weights with the feature list, the window and the training summary as metadata."""
    with atomic_path(path) as tmp:
        save_file({k: v.detach().contiguous() for k, v in net.state_dict().items()}, str(tmp),
                  metadata={"features": json.dumps(list(Q_FEATURES)),
                            "window": json.dumps(window), "training": json.dumps(summary)})

