"""The trained SCHED² agent as a simulator policy (``dqn``), acting with numpy only.

At a snapshot the agent sees what :class:`~dlsched.rl.sched2_env.Sched2Env` shows it —
per-GPU remaining times, the first J queued jobs, statistics of the rest — and picks jobs
one at a time with the clock frozen (each pick placed by packing and removed from the free
GPUs and the queue) until it picks φ or nothing among the first J fits; an idle cluster
never waits while a job fits (the environment's masking rule). A job it starts within one
call counts on its GPUs for its solo duration × the SCHED² locality slowdown of the
placement (the environment's run time for generated workloads; a snapshot does not say
whether the workload is trace-derived, where the simulator reads durations as packed).
The Q-network's weights are read from a safetensors file with ``safetensors.numpy`` and
evaluated in numpy, so acting needs neither torch nor pickle; training (``dlsched rl train
sched2``) needs the ``rl`` extra.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.files import unique_keys
from dlsched.heuristics.sched2 import ServerRoom
from dlsched.heuristics.selection_features import (
    PROFILE_PLACEMENTS,
    sched2_slot_features,
    selection_observation,
)
from dlsched.heuristics.weights import read_safetensors
from dlsched.instance import Instance
from dlsched.problems.sched2 import locality_slowdown, parse_sched2_params

SHIPPED = "data/sched2_dqn.safetensors"
"""The shipped agent, relative to the ``dlsched.heuristics`` package."""


class NumpyQNetwork:
    """The forward pass of :class:`dlsched.rl.dqn.QNetwork` in numpy."""

    def __init__(self, tensors: dict[str, np.ndarray], shape: dict[str, int]) -> None:
        self.t = {k: v.astype(np.float64) for k, v in tensors.items()}
        self.shape = shape

    def _linear(self, name: str, x: np.ndarray) -> np.ndarray:
        return x @ self.t[f"{name}.weight"].T + self.t[f"{name}.bias"]

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        s = self.shape
        gpus = s["servers"] * s["gpus_per_server"]
        x = obs[:gpus].reshape(s["servers"], s["gpus_per_server"])
        x = np.maximum(self._linear("server.0", x), 0)
        x = np.maximum(self._linear("server.2", x), 0)
        g = np.maximum(self._linear("jobs.0", obs[gpus:]), 0)
        e = np.concatenate([x.ravel(), g])
        h = np.maximum(self._linear("head.0", e), 0)
        return self._linear("head.2", h)


@cache
def load_network(path: str) -> NumpyQNetwork:
    """Weights saved by ``dlsched rl train sched2`` (safetensors, metadata ``shape``)."""
    tensors, meta = read_safetensors(path, "dlsched rl train sched2 --learner dqn")
    try:
        return NumpyQNetwork(tensors, json.loads(meta["shape"], object_pairs_hook=unique_keys))
    except (KeyError, ValueError) as exc:
        raise InputError(f"not a dlsched Q-network: {type(exc).__name__}: {exc}",
                         field="weights", fix="pass a file written by `dlsched rl train "
                         "sched2 --learner dqn`", source=str(path)) from None


def shipped_weights() -> str:
    """Path of the shipped agent's weights."""
    return str(resources.files("dlsched.heuristics").joinpath(SHIPPED))


def observation(instance: Instance, gpu_end: np.ndarray, queue: list[int], window: int,
                gpus_per_server: int) -> np.ndarray:
    """The environment's observation of a snapshot (``queue``: pending job indices)."""
    now = instance.time
    params = parse_sched2_params(instance.params)
    shown = [instance.jobs[j] for j in queue[:window]]
    slots = [sched2_slot_features(params.sensitivity(job.model), int(job.num_gpus),
                                  float(job.duration), gpus_per_server) for job in shown]
    rest = [(int(r.num_gpus), float(r.duration), now - r.submit_time)
            for r in (instance.jobs[j] for j in queue[window:])]
    return selection_observation(gpu_end - now, slots, [now - j.submit_time for j in shown],
                                 rest, window, PROFILE_PLACEMENTS + 2, gpus_per_server)


def dqn_decision(instance: Instance, network: NumpyQNetwork) -> Decision:
    """The agent's picks at one snapshot (module docstring)."""
    cluster = instance.cluster
    m = int(cluster.node_gpu_count.max())
    window = network.shape["window"]
    if (cluster.num_nodes, m) != (network.shape["servers"], network.shape["gpus_per_server"]):
        raise InputError(
            f"the agent was trained on {network.shape['servers']} x "
            f"{network.shape['gpus_per_server']} GPUs, the workload has "
            f"{cluster.num_nodes} x {m}", field="weights",
            fix="train one for this cluster (`dlsched rl train sched2 --learner dqn --servers "
            "S --gpus-per-server M`) or use the size-agnostic `learned-priority`")
    room = ServerRoom(instance)
    gpu_end = np.full(cluster.num_gpus, instance.time)
    for r in instance.running:
        idx = [cluster.gpu_index[g] for g in r.gpus]
        gpu_end[idx] = instance.time + (r.remaining_s or 0.0)
    queue = sorted(range(len(instance.jobs)),
                   key=lambda j: (instance.jobs[j].submit_time, j))
    idle = not instance.running
    params = parse_sched2_params(instance.params)
    placements = []
    while True:
        fits = np.zeros(window + 1, dtype=bool)
        for slot, j in enumerate(queue[:window]):
            fits[slot] = room.place(instance.jobs[j]) is not None
        if not fits[:window].any():
            break
        fits[window] = not idle
        q = network(observation(instance, gpu_end, queue, window, m))
        action = int(np.argmax(np.where(fits, q, -np.inf)))
        if action == window:
            break
        j = queue.pop(action)
        job = instance.jobs[j]
        gpus = room.place(job)
        room.take(job, gpus)
        counts = np.unique(cluster.gpu_node[gpus], return_counts=True)[1]
        slow = locality_slowdown(params.sensitivity(job.model), counts)
        gpu_end[gpus] = instance.time + float(job.duration) * slow
        idle = False
        placements.append(Placement(job.id, tuple(cluster.gpu_ids[g] for g in sorted(gpus))))
    return Decision(tuple(placements))
