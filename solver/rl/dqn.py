"""SCHED²'s deep-Q agent: the shared-weight Q-network (Eqs. 3-5, Fig. 6) and DQN training
with a target network, ε-greedy exploration, prioritized replay and optional double DQN.

Training is deterministic on CPU for a seed (one torch thread, deterministic algorithms,
every draw from seeded generators). Weights are saved with safetensors (no pickle), with
the network's shape and the training settings as metadata.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from ..errors import InputError
from ..files import atomic_path, unique_keys


@dataclass(frozen=True)
class NetShape:
    """Sizes of the Q-network: N servers × M GPUs, J job slots of ``job_features``."""

    servers: int
    gpus_per_server: int
    window: int
    job_features: int
    server_hidden: int = 16
    job_hidden: int = 64
    hidden: int = 128


class QNetwork(nn.Module):
    """F_i = f(S_i; w_shared) per server, G = f(J_1..J_J, Stat; w_1),
    A = f(f(concat(F_1..F_N, G); w_2); w_3) with J + 1 outputs."""

    def __init__(self, shape: NetShape) -> None:
        super().__init__()
        self.shape = shape
        m, h = shape.gpus_per_server, shape.server_hidden
        self.server = nn.Sequential(nn.Linear(m, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        jobs_in = shape.window * shape.job_features + 4
        self.jobs = nn.Sequential(nn.Linear(jobs_in, shape.job_hidden), nn.ReLU())
        self.head = nn.Sequential(
            nn.Linear(shape.servers * h + shape.job_hidden, shape.hidden), nn.ReLU(),
            nn.Linear(shape.hidden, shape.window + 1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        s = self.shape
        gpus = s.servers * s.gpus_per_server
        per_server = self.server(obs[:, :gpus].reshape(-1, s.servers, s.gpus_per_server))
        embedding = torch.cat([per_server.flatten(1), self.jobs(obs[:, gpus:])], dim=1)
        return self.head(embedding)


def masked_argmax(q: np.ndarray, mask: np.ndarray) -> int:
    """The best valid action (ties: the lowest index)."""
    return int(np.argmax(np.where(mask, q, -np.inf)))


class Agent:
    """A trained (or training) Q-network that acts greedily on masked Q-values."""

    def __init__(self, net: QNetwork) -> None:
        self.net = net

    @torch.no_grad()
    def q_values(self, obs: np.ndarray) -> np.ndarray:
        return self.net(torch.as_tensor(obs, dtype=torch.float32)[None])[0].numpy()

    def act(self, obs: np.ndarray, mask: np.ndarray) -> int:
        return masked_argmax(self.q_values(obs), mask)

    def save(self, path: str | Path, metadata: dict[str, Any] | None = None) -> None:
        meta = {"shape": json.dumps(asdict(self.net.shape))}
        meta.update({k: json.dumps(v) for k, v in (metadata or {}).items()})
        with atomic_path(path) as tmp:
            save_file({k: v.contiguous() for k, v in self.net.state_dict().items()}, str(tmp),
                      metadata=meta)

    @classmethod
    def load(cls, path: str | Path) -> Agent:
        """Load weights saved by :meth:`save` (safetensors; never pickle)."""
        from safetensors import SafetensorError, safe_open

        p = Path(path)
        if not p.is_file():
            raise InputError("no such weights file", fix="train with `dlsched rl train "
                             "sched2` or use the shipped weights", source=str(p))
        try:
            with safe_open(str(p), framework="pt") as handle:
                meta = handle.metadata() or {}
            shape = NetShape(**json.loads(meta["shape"], object_pairs_hook=unique_keys))
            net = QNetwork(shape)
            net.load_state_dict(load_file(str(p)))
        except (KeyError, ValueError, TypeError, RuntimeError, OSError, SafetensorError) as exc:
            raise InputError(f"not a dlsched Q-network: {type(exc).__name__}: {exc}",
                             fix="pass a file written by `dlsched rl train sched2`",
                             source=str(p)) from None
        net.eval()
        return cls(net)

    @staticmethod
    def metadata(path: str | Path) -> dict[str, Any]:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            meta = handle.metadata() or {}
        return {k: json.loads(v, object_pairs_hook=unique_keys) for k, v in meta.items()}


# ----------------------------------------------------------------------------- training
@dataclass(frozen=True)
class DqnSettings:
    """DQN hyper-parameters (defaults: ours, sized for CPU training in minutes)."""

    gamma: float = 0.9  # 0.99 learned to wait too often in our trials (docs/rl.md)
    lr: float = 5e-4
    batch: int = 64
    buffer: int = 100_000
    learning_starts: int = 2_000
    train_every: int = 4
    target_every: int = 1_000
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_fraction: float = 0.4  # of all training steps
    priority_alpha: float = 0.6
    priority_beta: float = 0.4  # annealed to 1 over training
    double: bool = True
    server_hidden: int = 16
    job_hidden: int = 64
    hidden: int = 128


class PrioritizedReplay:
    """Proportional prioritized replay (Schaul et al.) over fixed-size numpy arrays."""

    def __init__(self, capacity: int, obs_size: int, actions: int, alpha: float,
                 rng: np.random.Generator) -> None:
        self.capacity, self.alpha, self.rng = capacity, alpha, rng
        self.obs = np.zeros((capacity, obs_size), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_size), dtype=np.float32)
        self.action = np.zeros(capacity, dtype=np.int64)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=np.float32)
        self.next_mask = np.zeros((capacity, actions), dtype=bool)
        self.mask = np.zeros((capacity, actions), dtype=bool)
        self.priority = np.zeros(capacity, dtype=np.float64)
        self.size = self.pos = 0

    def add(self, obs, action, reward, next_obs, done, next_mask, mask=None) -> None:
        i = self.pos
        if mask is not None:
            self.mask[i] = mask
        self.obs[i], self.action[i], self.reward[i] = obs, action, reward
        self.next_obs[i], self.done[i], self.next_mask[i] = next_obs, done, next_mask
        self.priority[i] = self.priority[: self.size].max() if self.size else 1.0
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
        p = self.priority[: self.size] ** self.alpha
        p /= p.sum()
        idx = self.rng.choice(self.size, size=n, p=p)
        weights = (self.size * p[idx]) ** (-beta)
        return idx, (weights / weights.max()).astype(np.float32)

    def update(self, idx: np.ndarray, errors: np.ndarray) -> None:
        self.priority[idx] = np.abs(errors) + 1e-4


class Trainer:
    """DQN on an environment with ``info["action_mask"]`` (e.g. :class:`Sched2Env`)."""

    def __init__(self, env, settings: DqnSettings, seed: int, total_steps: int) -> None:
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
        self.env, self.s, self.total = env, settings, max(1, total_steps)
        self.rng = np.random.default_rng(seed)
        shape = NetShape(env.num_servers, env.gpus_per_server, env.window, env.job_features,
                         settings.server_hidden, settings.job_hidden, settings.hidden)
        self.net, self.target = QNetwork(shape), QNetwork(shape)
        self.target.load_state_dict(self.net.state_dict())
        self.opt = torch.optim.Adam(self.net.parameters(), lr=settings.lr)
        size = env.observation_space.shape[0]
        self.replay = PrioritizedReplay(settings.buffer, size, env.window + 1,
                                        settings.priority_alpha, self.rng)
        self.steps = 0
        self.losses: list[float] = []

    @property
    def agent(self) -> Agent:
        return Agent(self.net)

    def epsilon(self) -> float:
        frac = min(1.0, self.steps / (self.s.eps_fraction * self.total))
        return self.s.eps_start + frac * (self.s.eps_end - self.s.eps_start)

    def act(self, obs: np.ndarray, mask: np.ndarray) -> int:
        if self.rng.random() < self.epsilon():
            return int(self.rng.choice(np.flatnonzero(mask)))
        return self.agent.act(obs, mask)

    def episode(self, seed: int, options: dict | None = None) -> dict[str, float]:
        """One training episode; returns its return and metrics."""
        obs, info = self.env.reset(seed=seed, options=options)
        total = 0.0
        while True:
            mask = info["action_mask"]
            a = self.act(obs, mask)
            nxt, r, term, trunc, info = self.env.step(a)
            self.replay.add(obs, a, r, nxt, float(term), info["action_mask"], mask)
            obs, total = nxt, total + r
            self.steps += 1
            if self.steps >= self.s.learning_starts and self.steps % self.s.train_every == 0:
                self.learn()
            if self.steps % self.s.target_every == 0:
                self.target.load_state_dict(self.net.state_dict())
            if term or trunc:
                break
        return {"return": total, "effectiveness_mean": info.get("effectiveness_mean", 0.0),
                "steps": self.steps, "epsilon": self.epsilon()}

    def pretrain(self, demos: PrioritizedReplay, updates: int, margin: float = 0.8) -> None:
        """Warm start from demonstrations (DQfD-style): TD loss plus a large-margin loss
        that makes the demonstrated action's Q-value exceed every other valid action's by
        ``margin``. The demonstrations stay out of the training replay."""
        for k in range(updates):
            self.learn(replay=demos, margin=margin)
            if (k + 1) % self.s.target_every == 0:
                self.target.load_state_dict(self.net.state_dict())
        self.target.load_state_dict(self.net.state_dict())

    def learn(self, replay: PrioritizedReplay | None = None, margin: float = 0.0) -> None:
        s = self.s
        beta = s.priority_beta + (1 - s.priority_beta) * min(1.0, self.steps / self.total)
        rp = replay or self.replay
        idx, w = rp.sample(s.batch, beta)
        obs = torch.as_tensor(rp.obs[idx])
        nxt = torch.as_tensor(rp.next_obs[idx])
        mask = torch.as_tensor(rp.next_mask[idx])
        q = self.net(obs).gather(1, torch.as_tensor(rp.action[idx])[:, None])[:, 0]
        with torch.no_grad():
            target_q = self.target(nxt).masked_fill(~mask, -1e9)
            if s.double:
                pick = self.net(nxt).masked_fill(~mask, -1e9).argmax(1, keepdim=True)
                best = target_q.gather(1, pick)[:, 0]
            else:
                best = target_q.max(1).values
            best = torch.where(mask.any(1), best, torch.zeros_like(best))
            y = torch.as_tensor(rp.reward[idx]) + s.gamma * (1 - torch.as_tensor(
                rp.done[idx])) * best
        err = q - y
        loss = (torch.as_tensor(w) * nn.functional.smooth_l1_loss(q, y, reduction="none")).mean()
        if margin > 0:
            valid = torch.as_tensor(rp.mask[idx])
            act = torch.as_tensor(rp.action[idx])
            q_all = self.net(obs)
            bonus = torch.full_like(q_all, margin).scatter(1, act[:, None], 0.0)
            best = (q_all + bonus).masked_fill(~valid, -1e9).max(1).values
            loss = loss + (best - q_all.gather(1, act[:, None])[:, 0]).mean()
        self.opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), 10.0)
        self.opt.step()
        rp.update(idx, err.detach().numpy())
        self.losses.append(float(loss.detach()))


def demonstrations(env, workloads, choose, capacity: int, rng: np.random.Generator
                   ) -> PrioritizedReplay:
    """Transitions of a rule playing the environment: ``choose(env, mask) -> action``."""
    demos = PrioritizedReplay(capacity, env.observation_space.shape[0], env.window + 1, 0.6, rng)
    for w in workloads:
        obs, info = env.reset(seed=0, options={"workload": w})
        while demos.size < capacity:
            mask = info["action_mask"]
            a = choose(env, mask)
            nxt, r, term, trunc, info = env.step(a)
            demos.add(obs, a, r, nxt, float(term), info["action_mask"], mask)
            obs = nxt
            if term or trunc:
                break
    return demos


def shortest_ideal_first(env, mask: np.ndarray) -> int:
    """SIF within the window: the visible job of least solo duration that fits, else φ."""
    slots = [k for k in range(env.window) if mask[k]]
    if not slots:
        return env.window
    return min(slots, key=lambda k: (env.jobs[env.queue[k]].duration, k))


def evaluate_agent(agent: Agent, env, workloads, seed: int = 0) -> dict[str, float]:
    """Greedy episodes on ``workloads``: mean effectiveness, makespan, JCT and wait."""
    rows = []
    for w in workloads:
        obs, info = env.reset(seed=seed, options={"workload": w})
        while True:
            obs, _, term, trunc, info = env.step(agent.act(obs, info["action_mask"]))
            if term or trunc:
                break
        rows.append(info)
    keys = ("effectiveness_mean", "makespan", "jct_mean", "wait_mean")
    return {k: float(np.mean([r.get(k, np.nan) for r in rows])) for k in keys}
