"""Seeded generator of Horus snapshots: a partly busy cluster and β pending jobs.

Job classes follow the paper's testbed (Sec. 5): short (≤ 800 s) or long (> 800 s, up to
2 h), light (< 60 % GPU utilization) or heavy (≥ 60 %), 1-8 GPUs with most jobs on one
GPU (over half of production jobs use one GPU, Sec. 5). GPU memory per share is drawn
in proportion to utilization class. All draws come from one ``numpy.random.Generator``
(PCG64) and are rounded to fixed decimals, so the same arguments give the same bytes on
every platform.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from dlsched.instance import Instance
from dlsched.instance_io import check_instance
from dlsched.jobs import Job, RunningJob
from dlsched.registry import GeneratorSpec, register_generator
from dlsched.topology import homogeneous_cluster

GPU_MEMORY_GB = {"gtx1080": 8.0, "rtx2080": 8.0}
GPU_COUNTS = (1, 2, 4, 8)
GPU_COUNT_WEIGHTS = (0.6, 0.15, 0.15, 0.1)


def _draw_job(rng: np.random.Generator, job_id: str, gpu_mem: float, max_gpus: int,
              p_long: float, p_heavy: float, submit: float) -> Job:
    counts = [c for c in GPU_COUNTS if c <= max_gpus]
    weights = np.array(GPU_COUNT_WEIGHTS[: len(counts)])
    num_gpus = int(counts[rng.choice(len(counts), p=weights / weights.sum())])
    long_job = rng.random() < p_long
    heavy = rng.random() < p_heavy
    duration = int(rng.integers(801, 7201) if long_job else rng.integers(180, 801))
    util = int(rng.integers(60, 101) if heavy else rng.integers(5, 60))
    lo, hi = (0.3, 0.85) if heavy else (0.05, 0.5)
    mem = round(float(rng.uniform(lo, hi)) * gpu_mem, 1)
    return Job(
        id=job_id, submit_time=submit, num_gpus=num_gpus, duration=float(duration),
        gpu_util=float(util), gpu_mem_gb=max(mem, 0.1),
        cpu_per_gpu=float(rng.choice([2, 4])), ram_gb_per_gpu=float(rng.choice([8, 16])),
        model="synthetic", kind="train",
    )


def generate_horus(
    *,
    seed: int = 0,
    nodes: int = 128,
    gpus_per_node: int = 8,
    gpu_type: str = "gtx1080",
    busy: float = 0.5,
    beta: int = 15,
    p_long: float = 0.5,
    p_heavy: float = 0.5,
    cpu: float = 64.0,
    ram_gb: float = 512.0,
    cost_model: str = "paper",
    queues: int = 3,
) -> Instance:
    """A Horus snapshot at t = 3600 s: ``busy`` of the GPUs run jobs, β jobs wait."""
    if not 0.0 <= busy <= 1.0:
        raise ValueError("busy must lie in [0, 1]")
    if gpu_type not in GPU_MEMORY_GB:
        raise ValueError(f"gpu_type must be one of {sorted(GPU_MEMORY_GB)}")
    arguments = dict(nodes=nodes, gpus_per_node=gpus_per_node, gpu_type=gpu_type, busy=busy,
                     beta=beta, p_long=p_long, p_heavy=p_heavy, cpu=cpu, ram_gb=ram_gb,
                     cost_model=cost_model, queues=queues)
    rng = np.random.default_rng(seed)
    gpu_mem = GPU_MEMORY_GB[gpu_type]
    cluster = homogeneous_cluster(nodes, gpus_per_node, gpu_type=gpu_type, gpu_mem_gb=gpu_mem,
                                  cpu=cpu, ram_gb=ram_gb)
    now = 3600.0

    # running jobs: fill whole jobs into random free slots until `busy` of the GPUs are taken
    free = [list(g) for g in cluster.gpus_of_node]
    free_cpu = [cpu] * nodes
    free_ram = [ram_gb] * nodes
    target = round(busy * cluster.num_gpus)
    taken = 0
    running = []
    while taken < target:
        largest_block = max(len(f) for f in free)
        job = _draw_job(rng, f"r{len(running):04d}", gpu_mem,
                        min(largest_block, target - taken), p_long, p_heavy, 0.0)
        options = [n for n in range(nodes) if len(free[n]) >= job.num_gpus]
        node = options[int(rng.integers(len(options)))]
        gpus = [free[node].pop(0) for _ in range(job.num_gpus)]
        taken += job.num_gpus
        # a running job never holds more CPU/RAM than its server has left
        cpu_each = min(job.cpu_per_gpu, free_cpu[node] // job.num_gpus)
        ram_each = min(job.ram_gb_per_gpu, free_ram[node] // job.num_gpus)
        free_cpu[node] -= cpu_each * job.num_gpus
        free_ram[node] -= ram_each * job.num_gpus
        running.append(RunningJob(
            job=job.id, gpus=tuple(cluster.gpu_ids[g] for g in gpus), gpu_util=job.gpu_util,
            gpu_mem_gb=job.gpu_mem_gb, cpu_per_gpu=cpu_each, ram_gb_per_gpu=ram_each,
            remaining_s=float(rng.integers(1, int(job.duration) + 1))))

    submits = np.sort(rng.integers(0, int(now), size=beta))
    jobs = tuple(
        _draw_job(rng, f"j{i:03d}", gpu_mem, gpus_per_node, p_long, p_heavy, float(submits[i]))
        for i in range(beta))
    params: dict[str, Any] = {"w_mem": 1.0, "w_util": 1.0, "cost_model": cost_model,
                              "beta": beta, "queues": queues}
    return check_instance(Instance(
        problem="horus", cluster=cluster, jobs=jobs, params=params, running=tuple(running),
        time=now, name=f"horus-{nodes}x{gpus_per_node}-b{beta}-busy{busy:g}-s{seed}",
        provenance={"generator": "instances.horus_gen", "seed": seed, "arguments": arguments,
                    "source": "synthetic, job classes of Horus Sec. 5"},
    ))


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=128, help="servers (default 128)")
    parser.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per server (8)")
    parser.add_argument("--gpu-type", default="gtx1080", choices=sorted(GPU_MEMORY_GB),
                        help="GPU type of every server")
    parser.add_argument("--busy", type=float, default=0.5,
                        help="fraction of GPUs already running a job (0.5)")
    parser.add_argument("--beta", type=int, default=15, help="pending jobs this round (15)")
    parser.add_argument("--p-long", type=float, default=0.5, help="share of long jobs (0.5)")
    parser.add_argument("--p-heavy", type=float, default=0.5, help="share of heavy jobs (0.5)")
    parser.add_argument("--cost-model", default="paper", choices=["paper", "colocation"],
                        help="placement cost: the paper's, or with co-location")


register_generator(GeneratorSpec("horus", generate_horus, _add_arguments,
                                 "Horus snapshot: partly busy cluster, β pending jobs"))


# ----------------------------------------------------------------------------- workloads
WORKLOAD_PRESETS: dict[str, dict[str, Any]] = {
    # Our readings of Sec. 5 (the paper gives only "job type distributions between 3 minutes
    # to 2 hours following DL job sizes derived from production systems", and that W-Small
    # has "a higher proportion of short and small jobs"): shares of long (> 800 s) and heavy
    # (>= 60 % utilization) jobs and GPU-count weights for 1/2/4 GPUs; the job counts are
    # chosen so that FIFO's makespan on the testbed lands near Table 6's FIFO row
    # (267 min W-Small, 307 min W-Large) with all jobs submitted at t = 0.
    "w-small": {"jobs": 76, "p_long": 0.3, "p_heavy": 0.4, "gpu_weights": (0.7, 0.2, 0.1)},
    "w-large": {"jobs": 29, "p_long": 0.7, "p_heavy": 0.6, "gpu_weights": (0.5, 0.25, 0.25)},
}
CLUSTER_PRESETS: dict[str, dict[str, Any]] = {
    # the paper's testbed: 3 servers x 4 RTX 2080, Ryzen 1920X (12 cores, 24 threads), 128 GB
    "testbed": {"nodes": 3, "gpus_per_node": 4, "gpu_type": "rtx2080", "cpu": 24.0,
                "ram_gb": 128.0},
    # the paper's simulation: 128 servers x 8 GPUs, 128 cores, 512 GB
    "simulation": {"nodes": 128, "gpus_per_node": 8, "gpu_type": "gtx1080", "cpu": 128.0,
                   "ram_gb": 512.0},
}


def generate_horus_workload(
    *,
    seed: int = 0,
    preset: str = "w-small",
    cluster: str = "testbed",
    arrivals: str = "batch",
    mean_interarrival_s: float = 60.0,
    jobs: int | None = None,
    p_long: float | None = None,
) -> Instance:
    """A Horus workload for the simulator: jobs with submit times on a preset cluster.

    Parameters
    ----------
    seed
        Seed of every draw.
    preset
        ``"w-small"`` or ``"w-large"`` (see ``WORKLOAD_PRESETS`` for our readings).
    cluster
        ``"testbed"`` (3 x 4 RTX 2080) or ``"simulation"`` (128 x 8).
    arrivals
        ``"batch"`` (every job at t = 0) or ``"poisson"`` (exponential gaps with mean
        ``mean_interarrival_s``, first job at 0).
    mean_interarrival_s
        Mean gap of Poisson arrivals, seconds.
    jobs
        Number of jobs (default: the preset's).
    p_long
        Share of long (> 800 s) jobs (default: the preset's).

    Returns
    -------
    Instance
        A ``horus`` workload (no running jobs; jobs carry ``submit_time`` and ``duration``).
    """
    if preset not in WORKLOAD_PRESETS:
        raise ValueError(f"preset must be one of {sorted(WORKLOAD_PRESETS)}")
    if cluster not in CLUSTER_PRESETS:
        raise ValueError(f"cluster must be one of {sorted(CLUSTER_PRESETS)}")
    if arrivals not in ("batch", "poisson"):
        raise ValueError("arrivals must be 'batch' or 'poisson'")
    if mean_interarrival_s <= 0:
        raise ValueError("mean_interarrival_s must be > 0")
    if p_long is not None and not 0.0 <= p_long <= 1.0:
        raise ValueError("p_long must lie in [0, 1]")
    spec = WORKLOAD_PRESETS[preset]
    long_share = spec["p_long"] if p_long is None else p_long
    shape = CLUSTER_PRESETS[cluster]
    count = spec["jobs"] if jobs is None else jobs
    if count < 1:
        raise ValueError("jobs must be >= 1")
    arguments = dict(preset=preset, cluster=cluster, arrivals=arrivals,
                     mean_interarrival_s=mean_interarrival_s, jobs=count, p_long=long_share)
    rng = np.random.default_rng(seed)
    gpu_mem = GPU_MEMORY_GB[shape["gpu_type"]]
    topology = homogeneous_cluster(shape["nodes"], shape["gpus_per_node"],
                                   gpu_type=shape["gpu_type"], gpu_mem_gb=gpu_mem,
                                   cpu=shape["cpu"], ram_gb=shape["ram_gb"])
    if arrivals == "batch":
        submits = np.zeros(count)
    else:
        gaps = rng.exponential(mean_interarrival_s, size=count)
        submits = np.round(np.concatenate([[0.0], np.cumsum(gaps[1:])]), 3)
    weights = np.array(spec["gpu_weights"], dtype=float)
    out = []
    for i in range(count):
        job = _draw_job(rng, f"j{i:04d}", gpu_mem, 1, long_share, spec["p_heavy"],
                        float(submits[i]))
        gpus = int((1, 2, 4)[rng.choice(3, p=weights / weights.sum())])
        out.append(job.replace(num_gpus=min(gpus, shape["gpus_per_node"])))
    params: dict[str, Any] = {"w_mem": 1.0, "w_util": 1.0, "cost_model": "paper", "beta": 15,
                              "queues": 3}
    return check_instance(Instance(
        problem="horus", cluster=topology, jobs=tuple(out), params=params,
        name=f"horus-{preset}-{cluster}-{arrivals}-s{seed}",
        provenance={"generator": "instances.horus_gen.generate_horus_workload", "seed": seed,
                    "arguments": arguments,
                    "source": "synthetic; our readings of Horus Sec. 5 (W-Small, W-Large)"},
    ))


def _add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="w-small", choices=sorted(WORKLOAD_PRESETS),
                        help="workload mix (default w-small)")
    parser.add_argument("--cluster", default="testbed", choices=sorted(CLUSTER_PRESETS),
                        help="testbed = 3 x 4 RTX 2080; simulation = 128 x 8 (default testbed)")
    parser.add_argument("--arrivals", default="batch", choices=["batch", "poisson"],
                        help="all jobs at t = 0, or Poisson arrivals (default batch)")
    parser.add_argument("--mean-interarrival-s", type=float, default=60.0,
                        help="mean gap of Poisson arrivals, seconds (default 60)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="number of jobs (default: the preset's)")
    parser.add_argument("--p-long", type=float, default=None,
                        help="share of long (> 800 s) jobs (default: the preset's)")


register_generator(GeneratorSpec("horus", generate_horus_workload, _add_workload_arguments,
                                 "Horus workload: W-Small / W-Large on the testbed or the "
                                 "128 x 8 simulation cluster", name="horus-workload"))
