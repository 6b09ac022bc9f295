"""Training and evaluating SCHED²'s DQN agent on the paper's episodes.

Episodes (Sec. IV-A: 30 training and 30 test traces of 1000 jobs): SCHED² workloads from
the seeded generator in the congested regime (``CONGESTED_INTERARRIVAL``), seeds 0-29 for
training and 1000-1029 for testing, at 68 % one-GPU jobs (60 % and 75 % by
``single_share``). Training cycles through the training episodes in a seeded order; every
``eval_every`` episodes the greedy agent plays ``eval_episodes`` test episodes and the
curve gets a row. Outputs in ``out``: ``sched2_dqn.safetensors`` (weights, with the
network's shape and the training settings as metadata), ``curve.csv``, ``curve.png`` and
``training.json`` (the command's settings, seed, CPU seconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..instance import Instance
from ..instances.sched2_gen import CONGESTED_INTERARRIVAL, generate_sched2

TRAIN_SEEDS = range(0, 30)
TEST_SEEDS = range(1000, 1030)
RULES = ("fifo", "sif", "dsif", "saf", "lrf", "spf")


@dataclass(frozen=True)
class EpisodeSpec:
    """How the episodes are drawn."""

    jobs: int = 1000
    single_share: float = 0.68
    interarrival: float = CONGESTED_INTERARRIVAL
    servers: int = 15
    gpus_per_server: int = 8

    def workloads(self, seeds) -> list[Instance]:
        return [generate_sched2(seed=s, jobs=self.jobs, single_share=self.single_share,
                                interarrival=self.interarrival, servers=self.servers,
                                gpus_per_server=self.gpus_per_server) for s in seeds]


def train(out: str | Path, *, episodes: int, seed: int = 0, spec: EpisodeSpec = EpisodeSpec(),
          train_episodes: int = 30, eval_every: int = 10, eval_episodes: int = 5,
          settings=None, progress: Callable[[dict], None] | None = None) -> dict:
    """Train the agent; returns the summary written to ``training.json``."""
    import torch

    from .dqn import DqnSettings, Trainer, evaluate_agent
    from .sched2_env import Sched2Env

    torch.set_num_threads(1)
    settings = settings or DqnSettings()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    train_set = spec.workloads(list(TRAIN_SEEDS)[:train_episodes])
    test_set = spec.workloads(list(TEST_SEEDS)[:eval_episodes])
    env, test_env = Sched2Env(train_set), Sched2Env(test_set)
    steps_per_episode = 1.3 * spec.jobs
    trainer = Trainer(env, settings, seed=seed, total_steps=int(episodes * steps_per_episode))
    order = np.random.default_rng(seed).permutation
    rows = []
    start = time.process_time()
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
            ev = evaluate_agent(trainer.agent, test_env, test_set, seed=seed)
            row.update({f"test_{k}": v for k, v in ev.items()})
        rows.append(row)
        if progress:
            progress(row)
    cpu = time.process_time() - start
    curve = pd.DataFrame(rows)
    curve.to_csv(out / "curve.csv", index=False)
    plot_curve(curve, out / "curve.png")
    summary = {"episodes": episodes, "seed": seed, "episode_spec": asdict(spec),
               "train_episodes": train_episodes, "eval_every": eval_every,
               "eval_episodes": eval_episodes, "dqn": asdict(settings), "cpu_s": round(cpu, 1),
               "torch": torch.__version__,
               "command": (f"dlsched rl train sched2 --episodes {episodes} --seed {seed} "
                           f"--single-share {spec.single_share} --jobs {spec.jobs} "
                           f"--out {out.name}")}
    trainer.agent.save(out / "sched2_dqn.safetensors", metadata={"training": summary})
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def plot_curve(curve: pd.DataFrame, path: Path) -> None:
    """Training and held-out effectiveness per episode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(curve["episode"], curve["train_effectiveness"], lw=0.8, alpha=0.6,
            label="training episode (ε-greedy)")
    if "test_effectiveness_mean" in curve:
        test = curve.dropna(subset=["test_effectiveness_mean"])
        ax.plot(test["episode"], test["test_effectiveness_mean"], marker="o",
                label="held-out episodes (greedy)")
    ax.set_xlabel("episode")
    ax.set_ylabel("mean execution effectiveness (Eq. 2)")
    ax.set_title("SCHED² DQN training")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare(weights: str | None, workloads: list[Instance],
            policies: tuple[str, ...] = ("dqn", *RULES)) -> pd.DataFrame:
    """Per policy and episode: mean effectiveness, makespan, mean JCT and mean wait, all
    through the simulator (every decision checked)."""
    from ..simulate import Policy, simulate, summary

    rows = []
    for name in policies:
        for k, w in enumerate(workloads):
            options = {"weights": weights} if name == "dqn" and weights else {}
            s = summary(simulate(w, Policy(name, options=options), record_events=False))
            rows.append({"policy": name, "episode": k,
                         "effectiveness_mean": s["effectiveness_mean"],
                         "makespan": s["makespan"], "jct_mean": s["jct_mean"],
                         "wait_mean": s["wait_mean"]})
    return pd.DataFrame(rows)
