"""Training and evaluating SCHED²'s DQN agent (``--learner dqn``).

Episodes (Sec. IV-A: 30 training and 30 test traces of 1000 jobs): SCHED² workloads from
the seeded generator in the congested regime (``CONGESTED_INTERARRIVAL``), seeds 0-29 for
training and 1000-1029 for testing, at 68 % one-GPU jobs (60 % and 75 % by
``single_share``); seeds 2000-2009 are validation episodes, used to keep the best
checkpoint (the test episodes are never seen in training); or the pieces of a workload
file (:func:`episodes_from_workload`). Training first warm-starts the Q-network from
demonstrations (``pretrain_episodes`` episodes of SIF restricted to the agent's window,
DQfD-style margin loss; 0 turns it off), then cycles through the training episodes in a
seeded order; every ``eval_every`` episodes the greedy agent plays the validation
episodes, the curve gets a row, and the best weights so far are kept. Outputs in
``out``: ``sched2_dqn.safetensors`` (weights, with the network's shape and the training
settings as metadata), ``curve.csv``, ``curve.png`` and ``training.json`` (the command,
seed, CPU seconds).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..files import atomic_path, write_text
from ..heuristics.sched2 import RULES
from ..instance import Instance
from ..instances.sched2_gen import CONGESTED_INTERARRIVAL, generate_sched2

TRAIN_SEEDS = range(0, 30)
TEST_SEEDS = range(1000, 1030)
VALIDATION_SEEDS = range(2000, 2010)


@dataclass(frozen=True)
class EpisodeSpec:
    """How generated episodes are drawn (:func:`dlsched.instances.sched2_gen.generate_sched2`)."""

    jobs: int = 1000
    single_share: float = 0.68
    interarrival: float = CONGESTED_INTERARRIVAL
    servers: int = 15
    gpus_per_server: int = 8
    median_duration: float = 1800.0

    def workloads(self, seeds) -> list[Instance]:
        return [generate_sched2(seed=s, jobs=self.jobs, single_share=self.single_share,
                                interarrival=self.interarrival, servers=self.servers,
                                gpus_per_server=self.gpus_per_server,
                                median_duration=self.median_duration) for s in seeds]


SPLIT = (0.6, 0.2, 0.2)
"""Shares of a workload's episodes, in time order, for training, validation and test."""


def episodes_from_workload(workload: Instance, jobs: int) -> dict[str, list[Instance]]:
    """Cut a workload into consecutive episodes of ``jobs`` jobs (by submission time, each
    shifted to start at 0; a last shorter piece is dropped): the first 60 % train, the next
    20 % validate, the last 20 % test.

    Raises
    ------
    InputError
        Fewer than 5 episodes, or a job needing more GPUs than the cluster has.
    """
    ordered = sorted(workload.jobs, key=lambda j: (j.submit_time, j.id))
    too_big = [j.id for j in ordered if (j.num_gpus or 0) > workload.cluster.num_gpus]
    if too_big:
        raise InputError(f"job {too_big[0]!r} needs more GPUs than the cluster has",
                         field="--workload", fix="use a workload whose jobs fit the cluster")
    count = len(ordered) // jobs
    if count < 5:
        raise InputError(f"{len(ordered)} jobs make {count} episodes of {jobs}",
                         field="--jobs", fix="use fewer jobs per episode (5 episodes at least)")
    pieces = []
    for k in range(count):
        chunk = ordered[k * jobs:(k + 1) * jobs]
        t0 = chunk[0].submit_time
        pieces.append(workload.replace(
            problem="sched2", params=workload.params if workload.problem == "sched2" else {},
            running=(), time=0.0, name=f"{workload.name}-episode{k}",
            jobs=tuple(dataclasses.replace(j, submit_time=j.submit_time - t0)
                       for j in chunk)))
    train_end = round(count * SPLIT[0])
    valid_end = train_end + round(count * SPLIT[1])
    return {"train": pieces[:train_end], "valid": pieces[train_end:valid_end],
            "test": pieces[valid_end:]}


def train(out: str | Path, *, episodes: int, train_set: list[Instance],
          valid_set: list[Instance], seed: int = 0, window: int = 30, eval_every: int = 10,
          pretrain_episodes: int = 5, pretrain_updates: int = 3000, settings=None,
          command: str = "", progress: Callable[[dict], None] | None = None) -> dict:
    """Train the DQN agent on ``train_set``, keeping the checkpoint best on ``valid_set``;
    returns the summary written to ``training.json``."""
    import copy

    import torch

    from .dqn import DqnSettings, Trainer, demonstrations, evaluate_agent, shortest_ideal_first
    from .sched2_env import Sched2Env

    torch.set_num_threads(1)
    settings = settings or DqnSettings(eps_start=0.1 if pretrain_episodes else 1.0)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env, valid_env = Sched2Env(train_set, window=window), Sched2Env(valid_set, window=window)
    steps_per_episode = 1.3 * max(len(w.jobs) for w in train_set)
    trainer = Trainer(env, settings, seed=seed, total_steps=int(episodes * steps_per_episode))
    order = np.random.default_rng(seed).permutation
    rows = []
    start = time.process_time()
    if pretrain_episodes:
        demos = demonstrations(Sched2Env(train_set, window=window),
                               train_set[:pretrain_episodes], shortest_ideal_first,
                               int(pretrain_episodes * steps_per_episode * 1.5),
                               np.random.default_rng(seed))
        trainer.pretrain(demos, pretrain_updates)
    best_value = evaluate_agent(trainer.agent, valid_env, valid_set, seed=seed)[
        "effectiveness_mean"]
    best_state = copy.deepcopy(trainer.net.state_dict())
    rows.append({"episode": 0, "cpu_s": time.process_time() - start,
                 "valid_effectiveness_mean": best_value})
    queue: list[int] = []
    for e in range(episodes):
        if not queue:
            queue = [int(k) for k in order(len(train_set))]
        w = train_set[queue.pop(0)]
        m = trainer.episode(seed=seed + e, options={"workload": w})
        row = {"episode": e + 1, "train_effectiveness": m["effectiveness_mean"],
               "epsilon": m["epsilon"], "steps": m["steps"],
               "cpu_s": time.process_time() - start}
        if (e + 1) % eval_every == 0 or e + 1 == episodes:
            ev = evaluate_agent(trainer.agent, valid_env, valid_set, seed=seed)
            row.update({f"valid_{k}": v for k, v in ev.items()})
            if ev["effectiveness_mean"] > best_value:
                best_value = ev["effectiveness_mean"]
                best_state = copy.deepcopy(trainer.net.state_dict())
        rows.append(row)
        if progress:
            progress(row)
    cpu = time.process_time() - start
    curve = pd.DataFrame(rows)
    with atomic_path(out / "curve.csv") as tmp:
        curve.to_csv(tmp, index=False)
    plot_curve(curve, out / "curve.png")
    summary = {"learner": "dqn", "episodes": episodes, "seed": seed,
               "train_workloads": [w.name for w in train_set],
               "valid_workloads": [w.name for w in valid_set], "window": window,
               "eval_every": eval_every, "pretrain_episodes": pretrain_episodes,
               "pretrain_updates": pretrain_updates, "dqn": asdict(settings),
               "best_valid_effectiveness": best_value, "cpu_s": round(cpu, 1),
               "torch": torch.__version__, "command": command}
    trainer.net.load_state_dict(best_state)
    trainer.agent.save(out / "sched2_dqn.safetensors", metadata={"training": summary})
    write_text(out / "training.json", json.dumps(summary, indent=2) + "\n")
    return summary


def plot_curve(curve: pd.DataFrame, path: Path) -> None:
    """Training and held-out effectiveness per episode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(curve["episode"], curve["train_effectiveness"], lw=0.8, alpha=0.6,
            label="training episode (ε-greedy)")
    if "valid_effectiveness_mean" in curve:
        valid = curve.dropna(subset=["valid_effectiveness_mean"])
        ax.plot(valid["episode"], valid["valid_effectiveness_mean"], marker="o",
                label="validation episodes (greedy)")
    ax.set_xlabel("episode")
    ax.set_ylabel("mean execution effectiveness (Eq. 2)")
    ax.set_title("SCHED² DQN training")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)


def compare(method: str, weights: str | None, workloads: list[Instance],
            rules: tuple[str, ...] = RULES) -> pd.DataFrame:
    """Per policy (the learned ``method``, then ``rules``) and episode: mean
    effectiveness, makespan, mean JCT and mean wait, all through the simulator (every
    decision checked)."""
    from ..simulate import Policy, simulate, summary

    rows = []
    for name in (method, *rules):
        for k, w in enumerate(workloads):
            options = {"weights": weights} if name == method and weights else {}
            s = summary(simulate(w, Policy(name, options=options), record_events=False))
            rows.append({"policy": name, "episode": k,
                         "effectiveness_mean": s["effectiveness_mean"],
                         "makespan": s["makespan"], "jct_mean": s["jct_mean"],
                         "wait_mean": s["wait_mean"]})
    return pd.DataFrame(rows)
