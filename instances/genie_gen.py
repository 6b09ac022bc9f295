"""Seeded GENIE workloads (Table 3 of seed 000) and snapshots sampled from them.

Workload (an Instance of problem "genie", ``time`` 0, no running task, every job with its
``submit_time``): Poisson arrivals at ``density`` tasks per hour over ``duration`` hours
(exponential inter-arrival times); per task, uniformly, one of the six Table-3 models, the
calculation type (``p_train`` training, 50 % by Table 3), the QoS class (5 % urgent,
35 % prior, 60 % normal, Table 3), the global batch size (uniform over ``BATCH_SIZES``)
and the iterations (uniform integer in [iter_min, iter_max]). The deadline is
arrival + e of Eq. 9 on the instance's own coefficients. Table 3 as extracted gives no
batch or iteration ranges: ours (16-256 in powers of two, 500-5000 iterations) are our
choice, sized so that a task's one-GPU latency ranges from 10 s to 11 h (mean
0.7 h with the shipped coefficients), and the 4 × 4 platform is loaded but not
flooded at 5-20 tasks/hour.

Preset ``paper`` (the Sec. 7 setting, ``PRESETS``): 5000-50000 iterations, everything else
as above. The paper gives no iteration range either; it says that DL tasks' response
latency ranges "from a couple of hours to weeks" (Sec. 7.1, Metrics) and that the
makespans of its 24-hour runs on the 4 × 4 K80 cluster range "from dozens to hundreds of
hours" (Sec. 7.2.4, Fig. 16). Ten times the default range puts the median one-GPU latency
at 3.6 h (mean 7 h, up to ~110 h) and the makespans under SWAF and the six baselines at
63-144 h at 5 tasks/hour and 267-862 h at 20 tasks/hour (seed 0, measured, see
docs/genie.md). Explicit ``iter_min`` / ``iter_max`` override the preset.

Snapshot (sampled, not simulated): a workload, a time t = the arrival of some task i, the
``waiting`` tasks that arrived last up to t as the queue (oldest first), and earlier tasks,
most recent first, running on random allowed shapes on random servers until ``busy`` of
the GPUs are taken; a running task's remaining time is uniform in (0, its latency].
Running tasks carry their model, kind and QoS class in ``extra``.

Platform: the paper's cluster (Sec. 7.1, Table 1): 4 servers × 4 K80 GPUs (12 GB per
GPU), 20 CPU cores, 64 GB RAM per server; larger platforms (16-128 GPUs, Sec. 7.3) by
``nodes`` and ``gpus_per_node``. Every float is rounded to 3 decimals and every draw comes
from one ``numpy.random.default_rng(seed)``: same arguments, same bytes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlsched.instance import Instance
from dlsched.instance_io import check_instance
from dlsched.jobs import Job, RunningJob
from dlsched.problems.genie import default_params, parse_genie_params, task_of
from dlsched.problems.genie.model import QOS_CLASSES, TABLE3_MODELS, Shape, ect_deadline, latency
from dlsched.problems.genie.model import solo_latency as model_solo_latency
from dlsched.registry import GeneratorSpec, register_generator
from dlsched.topology import homogeneous_cluster

BATCH_SIZES: tuple[int, ...] = (16, 32, 64, 128, 256)
QOS_MIX: tuple[float, float, float] = (0.05, 0.35, 0.60)  # urgent, prior, normal (Table 3)
GPU_TYPE, GPU_MEM_GB, NODE_CPU, NODE_RAM_GB = "k80", 12.0, 20.0, 64.0
ITER_MIN, ITER_MAX = 500, 5000
# task-length readings by name (module docstring); values override the defaults above
PRESETS: dict[str, dict[str, int]] = {"paper": {"iter_min": 5000, "iter_max": 50000}}


MAX_TASKS = 1e6
"""Most tasks a generated workload may expect (density × duration): bigger is a typo."""


def generate_genie_workload(
    *,
    seed: int = 0,
    nodes: int = 4,
    gpus_per_node: int = 4,
    density: float = 10.0,
    duration: float = 24.0,
    p_train: float = 0.5,
    qos_mix: Sequence[float] = QOS_MIX,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    iter_min: int | None = None,
    iter_max: int | None = None,
    theta: float = 0.4,
    preset: str | None = None,
) -> Instance:
    """A GENIE workload: Poisson arrivals of Table-3 tasks (see the module docstring).

    Parameters
    ----------
    density
        Arrivals per hour (the paper uses 5, 10, 20).
    duration
        Hours of arrivals (the paper uses 24).
    qos_mix
        Shares of urgent, prior and normal tasks (sum 1).
    iter_min, iter_max
        Iteration range (uniform integer); None: the preset's, else 500 and 5000.
    preset
        ``"paper"`` for the Sec. 7 task lengths (module docstring), or None.

    Raises
    ------
    ValueError
        On an out-of-range argument.
    """
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}: use one of {', '.join(PRESETS)}")
    chosen = PRESETS[preset] if preset else {}
    iter_min = chosen.get("iter_min", ITER_MIN) if iter_min is None else iter_min
    iter_max = chosen.get("iter_max", ITER_MAX) if iter_max is None else iter_max
    if density <= 0 or duration <= 0:
        raise ValueError("density and duration must be > 0")
    if density * duration > MAX_TASKS:
        raise ValueError(f"density x duration = {density * duration:g} expected tasks; at most "
                         f"{MAX_TASKS:g}")
    if not 0.0 <= p_train <= 1.0:
        raise ValueError("p_train must lie in [0, 1]")
    mix = np.asarray(qos_mix, dtype=float)
    if mix.shape != (3,) or (mix < 0).any() or abs(mix.sum() - 1.0) > 1e-9:
        raise ValueError("qos_mix must be three shares >= 0 summing to 1")
    if not 1 <= iter_min <= iter_max:
        raise ValueError("need 1 <= iter_min <= iter_max")
    if not batch_sizes or min(batch_sizes) < 1:
        raise ValueError("batch sizes must be integers >= 1")
    arguments = dict(nodes=nodes, gpus_per_node=gpus_per_node, density=density,
                     duration=duration, p_train=p_train, qos_mix=[float(x) for x in mix],
                     batch_sizes=[int(b) for b in batch_sizes], iter_min=iter_min,
                     iter_max=iter_max, theta=theta)
    if preset:  # absent otherwise: files made without a preset keep their bytes
        arguments["preset"] = preset
    rng = np.random.default_rng(seed)
    params = default_params()
    params["theta"] = float(theta)
    coefs = parse_genie_params(params).coefficients
    horizon = duration * 3600.0
    jobs = []
    t = 0.0
    while True:
        t += float(rng.exponential(3600.0 / density))
        if t > horizon:
            break
        submit = round(t, 3)
        model = TABLE3_MODELS[int(rng.integers(len(TABLE3_MODELS)))]
        kind = "train" if rng.random() < p_train else "infer"
        qos = QOS_CLASSES[int(rng.choice(3, p=mix))]
        batch = int(batch_sizes[int(rng.integers(len(batch_sizes)))])
        iterations = int(rng.integers(iter_min, iter_max + 1))
        job = Job(id=f"t{len(jobs):04d}", submit_time=submit, model=model, kind=kind,
                  batch_size=batch, iterations=iterations, qos=qos, deadline=0.0)
        solo = model_solo_latency(coefs[model], task_of(job))
        jobs.append(job.replace(deadline=round(ect_deadline(submit, qos, solo), 3)))
    cluster = homogeneous_cluster(nodes, gpus_per_node, gpu_type=GPU_TYPE,
                                  gpu_mem_gb=GPU_MEM_GB, cpu=NODE_CPU, ram_gb=NODE_RAM_GB)
    return check_instance(Instance(
        problem="genie", cluster=cluster, jobs=tuple(jobs), params=params, time=0.0,
        name=f"genie-workload-{nodes}x{gpus_per_node}-d{density:g}-h{duration:g}-s{seed}"
             + (f"-{preset}" if preset else ""),
        provenance={"generator": "instances.genie_gen", "seed": seed, "arguments": arguments,
                    "source": "synthetic, GENIE Table 3 (seed 000 Sec. 7.1)"},
    ))


def genie_snapshot(workload: Instance, *, seed: int = 0, waiting: int = 15,
                   busy: float = 0.5) -> Instance:
    """A snapshot sampled from a workload (see the module docstring).

    Raises
    ------
    ValueError
        If the workload has fewer than ``waiting`` tasks or ``busy`` is outside [0, 1].
    """
    if not 0.0 <= busy <= 1.0:
        raise ValueError("busy must lie in [0, 1]")
    jobs = sorted(workload.jobs, key=lambda j: (j.submit_time, j.id))
    if waiting < 1 or len(jobs) < waiting:
        raise ValueError(f"need 1 <= waiting <= {len(jobs)} (the workload's tasks)")
    rng = np.random.default_rng(seed)
    last = int(rng.integers(waiting - 1, len(jobs)))
    now = jobs[last].submit_time
    queue = tuple(jobs[last - waiting + 1: last + 1])
    params = parse_genie_params(workload.params)
    cluster = workload.cluster
    free = [list(g) for g in cluster.gpus_of_node]
    gpn = len(free[0])
    target = round(busy * cluster.num_gpus)
    taken = 0
    running = []
    for job in reversed(jobs[: last - waiting + 1]):
        left = target - taken
        if left <= 0:
            break
        counts = sorted((len(f) for f in free), reverse=True)
        shapes = [Shape(a, g) for a in range(1, len(free) + 1) for g in range(1, gpn + 1)
                  if a * g <= min(left, job.batch_size) and counts[a - 1] >= g]
        if not shapes:
            continue
        shape = shapes[int(rng.integers(len(shapes)))]
        eligible = [n for n, f in enumerate(free) if len(f) >= shape.gpus_per_node]
        nodes = sorted(rng.choice(eligible, size=shape.nodes, replace=False).tolist())
        gpus = []
        for n in nodes:
            gpus.extend(free[n][: shape.gpus_per_node])
            del free[n][: shape.gpus_per_node]
        taken += shape.gpus
        lat = latency(params.coefficients[job.model], task_of(job), shape)
        remaining = round(float(rng.uniform(0.0, lat)), 3) or 0.001
        running.append(RunningJob(
            job=job.id, gpus=tuple(cluster.gpu_ids[g] for g in sorted(gpus)),
            remaining_s=remaining, extra={"model": job.model, "kind": job.kind,
                                          "qos": job.qos}))
    provenance = dict(workload.provenance)
    provenance["snapshot"] = {"seed": seed, "waiting": waiting, "busy": busy,
                              "task": jobs[last].id}
    return check_instance(Instance(
        problem="genie", cluster=cluster, jobs=queue, params=dict(workload.params),
        running=tuple(running), time=now,
        name=f"{workload.name.replace('workload', 'snapshot')}-w{waiting}-b{busy:g}",
        provenance=provenance,
    ))


def generate_genie(*, seed: int = 0, snapshot: bool = False, waiting: int | None = None,
                   busy: float | None = None, **workload: Any) -> Instance:
    """The CLI's build function: a workload, or (``snapshot`` / ``waiting`` given) a snapshot.

    A snapshot with ``waiting`` None draws 10-20 waiting tasks; ``busy`` None draws a busy
    share in [0.25, 0.75] (both from the seed).
    """
    base = generate_genie_workload(seed=seed, **workload)
    if not snapshot and waiting is None and busy is None:
        return base
    rng = np.random.default_rng([seed, 1])
    if waiting is None:
        waiting = int(rng.integers(10, 21))
    if busy is None:
        busy = round(float(rng.uniform(0.25, 0.75)), 3)
    return genie_snapshot(base, seed=seed, waiting=waiting, busy=busy)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=4, help="servers (4)")
    parser.add_argument("--gpus-per-node", type=int, default=4, help="GPUs per server (4)")
    parser.add_argument("--density", type=float, default=10.0, help="tasks per hour (10)")
    parser.add_argument("--duration", type=float, default=24.0, help="hours of arrivals (24)")
    parser.add_argument("--p-train", type=float, default=0.5, help="training share (0.5)")
    parser.add_argument("--iter-min", type=int, default=None,
                        help=f"fewest iterations ({ITER_MIN}; preset paper: "
                             f"{PRESETS['paper']['iter_min']})")
    parser.add_argument("--iter-max", type=int, default=None,
                        help=f"most iterations ({ITER_MAX}; preset paper: "
                             f"{PRESETS['paper']['iter_max']})")
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="paper: the Sec. 7 task lengths (makespans of dozens to "
                             "hundreds of hours on 4 x 4 K80)")
    parser.add_argument("--theta", type=float, default=0.4, help="θ of Eq. 10 (0.4)")
    parser.add_argument("--snapshot", action="store_true",
                        help="write a snapshot sampled from the workload instead")
    parser.add_argument("--waiting", type=int, default=None,
                        help="snapshot: waiting tasks (default: 10-20 from the seed)")
    parser.add_argument("--busy", type=float, default=None,
                        help="snapshot: busy GPU share (default: 0.25-0.75 from the seed)")


register_generator(GeneratorSpec("genie", generate_genie, _add_arguments,
                                 "GENIE workload (Table 3) or a snapshot sampled from one"))
