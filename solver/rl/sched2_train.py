"""Episodes for SCHED²'s learners, the DQN agent's training run (``--learner dqn``) and the
comparison with the rules.

Episodes (Sec. IV-A: 30 training and 30 test traces of 1000 jobs): SCHED² workloads from
the seeded generator in the congested regime (``CONGESTED_INTERARRIVAL``), seeds 0-29 for
training and 1000-1029 for testing, at 60, 68 and 75 % one-GPU jobs; seeds 2000-2009 are
validation episodes, used to keep the best checkpoint (the test episodes are never seen
in training); or the pieces of a workload file (:func:`episodes_from_workload`). The DQN
learner itself is :mod:`dlsched.rl.dqn`; :func:`train` writes its outputs into ``out``:
``sched2_dqn.safetensors`` (weights, with the feature list, the window and the training
summary as metadata), ``curve.csv`` and ``training.json`` (the command, seed, settings,
CPU seconds).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..files import write_table, write_text
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


def train(out: str | Path, *, train_set: list[Instance], valid_set: list[Instance],
          seed: int = 0, settings=None, command: str = "",
          progress: Callable[[dict], None] | None = None) -> dict:
    """Train the DQN agent (:func:`dlsched.rl.dqn.train_dqn`, ``settings``: a
    :class:`~dlsched.rl.dqn.DqnSettings`) on ``train_set``, keeping the weights best on
    ``valid_set``; writes ``sched2_dqn.safetensors``, ``curve.csv`` and ``training.json``
    into ``out`` and returns the summary."""
    import torch

    from .dqn import DqnSettings, save_agent, train_dqn
    from .sched2_search import Episode

    settings = settings or DqnSettings()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result = train_dqn([Episode.of(w) for w in train_set], [Episode.of(w) for w in valid_set],
                       settings, seed=seed, progress=progress)
    write_table(pd.DataFrame(result.curve), out, "curve", "csv")
    summary = {"learner": "dqn (per-job Q-network, n-step double DQN, demonstrations)",
               "seed": seed, "train_workloads": [w.name for w in train_set],
               "valid_workloads": [w.name for w in valid_set], "dqn": asdict(settings),
               "best_valid_effectiveness": result.best_valid, "cpu_s": round(result.cpu_s, 1),
               "torch": torch.__version__, "numpy": np.__version__, "command": command}
    save_agent(result.net, out / "sched2_dqn.safetensors", settings.window, summary)
    write_text(out / "training.json", json.dumps(summary, indent=2) + "\n")
    return summary


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
