"""The training and validation episodes of the ``pg`` policy, and the run's settings.

Episodes (Sec. 4.1): 10-minute slices of the generated stream from 9 h to 12 h, one per
seed (see :mod:`dlsched.rl.inference_train` for the whole method). ``gpus`` names one
cluster or several separated by ``;`` (e.g. ``p2:1;g2:5,p2:5``), each with its arrival
``scale`` (one value for all, or one per cluster); episode i is on cluster i mod C at peak
rate ``peak_qps[(i // C) mod P]``, so every cluster meets every peak rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..instance import Instance


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (recorded with the weights)."""

    gpus: str = "p2:1"
    scale: float | tuple[float, ...] = 1.0
    peak_qps: float | tuple[float, ...] = 24.0
    episodes: int = 6
    episode_minutes: float = 10.0
    val_episodes: int = 3
    iterations: int = 60
    rollouts: int = 4
    bc_epochs: int = 30
    dagger: int = 2
    batch_size: int = 256
    lr: float = 3e-3
    pg_lr: float = 1e-4
    gamma: float = 0.97
    entropy: float = 0.001
    reward: str = "batch"
    window: int = 1000
    eval_every: int = 5
    teachers: str = "benchmark"
    teacher_alpha: float = 0.5
    teacher_beta: float = 0.5
    max_cpu_seconds: float = 1500.0
    seed: int = 0


def _positive_numbers(text: str, sep: str, field: str, fix: str
                      ) -> float | tuple[float, ...]:
    """One number > 0, or a ``sep``-separated list of them (a tuple)."""
    try:
        values = tuple(float(v) for v in text.split(sep))
    except ValueError:
        values = ()
    if not values or not all(np.isfinite(v) and v > 0 for v in values):
        raise InputError(f"{text!r} is not a positive number or {sep!r} list of them",
                         field=field, fix=fix)
    return values[0] if len(values) == 1 else values


def parse_peak_qps(text: str) -> float | tuple[float, ...]:
    """``--peak-qps``: one rate (a float, as before) or a comma list (a tuple, cycled over
    the episodes); every value must be a number > 0."""
    return _positive_numbers(text, ",", "--peak-qps", "e.g. --peak-qps 30 or --peak-qps 24,30,36")


def parse_scale(text: str) -> float | tuple[float, ...]:
    """``--scale``: one arrival multiplier, or a ``;`` list, one per ``--gpus`` cluster."""
    return _positive_numbers(text, ";", "--scale", "e.g. --scale 1 or --scale '1;8'")


def clusters(cfg: TrainConfig) -> list[tuple[str, float]]:
    """The (GPUs, arrival scale) of each cluster the episodes cycle over."""
    names = [g.strip() for g in cfg.gpus.split(";")]
    scales = (tuple(float(v) for v in cfg.scale) if isinstance(cfg.scale, tuple | list)
              else (float(cfg.scale),))
    if len(scales) == 1:
        scales = scales * len(names)
    if len(scales) != len(names) or not all(names):
        raise InputError(f"{len(names)} clusters in --gpus {cfg.gpus!r} but {len(scales)} "
                         "scales", field="--scale",
                         fix="give one --scale for all clusters or one per cluster, ';'-separated")
    return list(zip(names, scales, strict=True))


def cluster_key(inst: Instance) -> tuple[str, float]:
    """The (GPUs, scale) an episode was generated for."""
    args = inst.provenance["arguments"]
    return str(args["gpus"]), float(args["scale"])


def peaks(cfg: TrainConfig) -> tuple[float, ...]:
    """The peak rates cycled over the episodes (one value: every episode at it)."""
    if isinstance(cfg.peak_qps, tuple | list):
        return tuple(float(v) for v in cfg.peak_qps)
    return (float(cfg.peak_qps),)


def _episodes(cfg: TrainConfig, count: int, seed0: int) -> list[Instance]:
    from ..instances.inference_gen import generate_inference

    span = 3.0 - cfg.episode_minutes / 60.0
    rates = peaks(cfg)
    where = clusters(cfg)
    out = []
    for i in range(count):
        start = 9.0 + span * (i + 0.5) / count
        gpus, scale = where[i % len(where)]
        out.append(generate_inference(seed=seed0 + i + 7919 * cfg.seed, gpus=gpus,
                                      start_hour=start, hours=cfg.episode_minutes / 60.0,
                                      peak_qps=rates[(i // len(where)) % len(rates)],
                                      scale=scale))
    return out


def training_episodes(cfg: TrainConfig) -> list[Instance]:
    """The training episodes: 10-minute slices starting in 9-12 h, seeds 1000 + i."""
    return _episodes(cfg, cfg.episodes, 1000)


def validation_episodes(cfg: TrainConfig) -> list[Instance]:
    """The checkpoint-selection episodes: slices of 9-12 h, seeds 5000 + i (disjoint from
    the training episodes and from the benchmark's 12-24 h test slots)."""
    return _episodes(cfg, cfg.val_episodes, 5000)


def tuning_episodes(gpus: str, scale: float) -> list[Instance]:
    """The episodes ``inference_paper --tune`` tunes the heuristic on (3 × 10 min of one
    cluster)."""
    return training_episodes(TrainConfig(gpus=gpus, scale=scale, episodes=3,
                                         episode_minutes=10.0))
