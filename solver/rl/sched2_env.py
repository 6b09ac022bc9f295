"""SCHED²'s job-selection environment (Sec. III of the paper), registered as
``dlsched/Sched2-v0``.

Setting: N servers × M GPUs, exclusive GPUs, the packing placement of Fig. 2
(``dlsched.heuristics.sched2.packing``), run times from the simulator's rate model for the
workload (``SpeedModel.for_workload(...).bind(...).base_rate``: the SCHED² locality
slowdown of the chosen placement). The agent chooses which of the first J queued jobs
starts (or φ); see :mod:`dlsched.rl.selection_env` for the clock and the masking.

Observation (Table I, NM + (k + 2)J + 4 numbers, all in [0, ~2]):

- per GPU, the remaining time of the job on it, ``time_feature`` (log scale, 1 min → 1
  week onto [0, 1]);
- per job slot (the first J queued jobs by arrival; empty slots are zeros): the k = 4
  profile — our reading of "the k measured performance numbers": the job's run time under
  the k placements from packed to scattered (solo duration × the slowdowns of
  ``dlsched.problems.sched2.locality_profile``), each as ``time_feature`` —, the GPU
  demand / M, the waiting time (``time_feature``);
- statistics of the other queued jobs: count / 100, mean demand / M, mean solo duration
  and mean wait (``time_feature``).

Reward: the started job's execution effectiveness E = T_ideal / (T_wait + T_actual)
(Eq. 2); φ earns 0; an invalid action ``INVALID_PENALTY``.

Episodes: ``reset(options={"workload": instance})`` plays that workload; otherwise the
environment draws one of its ``workloads`` with its seeded generator, or, when it has
none, generates a fresh SCHED² workload with the ``generator`` keyword arguments and a
seed drawn from its generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..heuristics.sched2 import packing
from ..heuristics.selection_features import PROFILE_PLACEMENTS, sched2_slot_features
from ..instance import Instance
from ..instances.sched2_gen import generate_sched2
from ..problems.rates import SpeedModel
from ..problems.sched2 import SENSITIVITY, parse_sched2_params
from .selection_env import EpisodeJob, JobSelectionEnv

ENV_ID = "dlsched/Sched2-v0"


class Sched2Env(JobSelectionEnv):
    """SCHED² job selection (module docstring).

    Parameters
    ----------
    workloads
        SCHED² workloads to draw episodes from (all on the same cluster shape).
    num_servers, gpus_per_server
        The cluster when ``workloads`` is empty (15 × 8, the paper's).
    window
        J (10 in the paper).
    generator
        Keyword arguments of ``generate_sched2`` for fresh episodes (e.g. ``jobs``,
        ``interarrival``, ``single_share``).
    """

    def __init__(self, workloads: Sequence[Instance] = (), *, num_servers: int = 15,
                 gpus_per_server: int = 8, window: int = 10,
                 generator: dict[str, Any] | None = None,
                 max_steps: int | None = None) -> None:
        self.workloads = tuple(workloads)
        if self.workloads:
            first = self.workloads[0].cluster
            num_servers, gpus_per_server = first.num_nodes, int(first.node_gpu_count[0])
            for w in self.workloads:
                if w.problem != "sched2":
                    raise ValueError(f"workload {w.name!r} is not a SCHED² workload")
                if (w.cluster.num_nodes, int(w.cluster.node_gpu_count.max())) != (
                        num_servers, gpus_per_server) or len(set(w.cluster.node_gpu_count)) != 1:
                    raise ValueError("every workload must use the same N x M cluster")
        self.generator = dict(generator or {})
        super().__init__(num_servers, gpus_per_server, window=window,
                         job_features=PROFILE_PLACEMENTS + 2, max_steps=max_steps)
        self.workload: Instance | None = None

    # ------------------------------------------------------------------ hooks
    def episode_jobs(self, rng: np.random.Generator,
                     options: dict[str, Any] | None) -> list[EpisodeJob]:
        if options and options.get("workload") is not None:
            workload = options["workload"]
        elif self.workloads:
            workload = self.workloads[int(rng.integers(len(self.workloads)))]
        else:
            kwargs = {"servers": self.num_servers, "gpus_per_server": self.gpus_per_server,
                      **self.generator}
            workload = generate_sched2(seed=int(rng.integers(2**31)), **kwargs)
        self.workload = workload
        self.speed = SpeedModel.for_workload(workload).bind(workload)
        self.params = parse_sched2_params(workload.params)
        out = []
        for job in workload.jobs:
            sens = self.params.locality.get(job.model or "insensitive", SENSITIVITY["insensitive"])
            features = sched2_slot_features(sens, int(job.num_gpus), float(job.duration),
                                            self.gpus_per_server)
            out.append(EpisodeJob(job.id, float(job.submit_time), int(job.num_gpus),
                                  float(job.duration), job.model,
                                  extra={"job": job, "features": features}))
        return out

    def place(self, free: list[list[int]], job: EpisodeJob) -> list[int] | None:
        return packing(free, job.demand)

    def slowdown(self, job: EpisodeJob, gpus: list[int]) -> float:
        rate, _ = self.speed.base_rate(job.extra["job"], np.asarray(sorted(gpus)))
        return 1.0 / rate

    def job_slot_features(self, job: EpisodeJob) -> np.ndarray:
        return job.extra["features"]


def register() -> None:
    """Register ``dlsched/Sched2-v0`` with Gymnasium (idempotent)."""
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="dlsched.rl.sched2_env:Sched2Env")
