"""The DQN learner's settings (importing this needs no torch: the CLI reads its defaults)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DqnSettings:
    """The learner's settings (defaults: the shipped agent's)."""

    episodes: int = 72
    envs: int = 8
    gamma: float = 0.97
    n_step: int = 8
    lr: float = 3e-4
    batch: int = 64
    buffer: int = 50_000
    train_every: int = 16  # transitions per gradient update
    target_every: int = 250  # updates
    eps_start: float = 0.1
    eps_end: float = 0.01
    hidden: int = 32
    teacher: str | None = "spf"  # "spf", "priority" (learned-priority's weights) or None
    demo_episodes: int = 4
    pretrain_updates: int = 2000
    margin: float = 0.1
    demo_share: float = 0.25
    window: int | None = None
    eval_every: int = 8
