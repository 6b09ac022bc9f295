"""Seeded generator of Liquid batches: the paper's Fig. 19 workloads (Sec. 7.4).

Cluster: ``nodes`` servers × 2 Tesla T4 (16 GB), 48 vCPU and 186 GB RAM each (the paper's
Alibaba Cloud cluster, Sec. 7.1), grouped into racks of ``nodes_per_rack`` servers and
domains of ``racks_per_domain`` racks (the paper gives no rack layout; these are levels of
the topology tree). Batch: ResNet-50 : Inception V3 : VGG-16 jobs = 4 : 2 : 2 per 5 servers,
in a random (seeded) queue order.

Container sizes (our choice; the paper gives none): one PS per job (0 GPUs, 2 vCPU,
8 GB RAM) and workers of 1 GPU, 4 vCPU, 16 GB RAM and a per-model GPU memory (ResNet-50
7 GB, Inception V3 6 GB, VGG-16 10 GB). Every job starts with one worker; the remaining
workers, up to ``fill`` × the free GPUs, go one at a time to random jobs below
``max_workers``. So the batch fits (the paper's 1 PS + 2 workers per job would ask for
16 GPUs per 10 and could not be placed whole). Bandwidth weight per model (the same on
every container of a job): the relative slowdown per separated PS-worker pair, fitted
from the authors' measurements by ``instances/derive/liquid_bandwidth.py``.

``busy`` > 0 first marks that share of the GPUs as held by one-GPU running jobs.
"""

from __future__ import annotations

import argparse

import numpy as np

from dlsched.instance import Instance
from dlsched.instance_io import check_instance
from dlsched.jobs import Container, Job, RunningJob
from dlsched.problems.liquid import DISTANCE_TABLES, OBJECTIVES
from dlsched.registry import GeneratorSpec, register_generator
from dlsched.topology import homogeneous_cluster

MIX_PER_5_NODES = (("resnet50", 4), ("inception3", 2), ("vgg16", 2))
BANDWIDTH = {"vgg16": 0.4783, "resnet50": 0.0788, "inception3": 0.0189}
"""From ``python instances/derive/liquid_bandwidth.py`` (4 decimals)."""
WORKER_GPU_MEM_GB = {"resnet50": 7.0, "inception3": 6.0, "vgg16": 10.0}
PS = {"cpu": 2.0, "ram_gb": 8.0}
WORKER = {"cpu": 4.0, "ram_gb": 16.0}
T4 = {"gpu_type": "t4", "gpu_mem_gb": 16.0, "cpu": 48.0, "ram_gb": 186.0}


def fig19_mix(nodes: int) -> list[str]:
    """Models of the batch for ``nodes`` servers (4 : 2 : 2 per 5, at least one job)."""
    models = [m for m, k in MIX_PER_5_NODES for _ in range(round(k * nodes / 5))]
    return models or ["resnet50"]


def generate_liquid(
    *,
    seed: int = 0,
    nodes: int = 5,
    gpus_per_node: int = 2,
    nodes_per_rack: int | None = 5,
    racks_per_domain: int | None = 2,
    fill: float = 1.0,
    max_workers: int = 4,
    busy: float = 0.0,
    lam: float = 0.5,
    distance: str = "paper",
    objective: str = "paper",
) -> Instance:
    """A Liquid batch on an idle (or ``busy``) cluster of T4 servers, Fig. 19 mix."""
    if not 0.0 <= fill <= 1.0 or not 0.0 <= busy <= 1.0:
        raise ValueError("fill and busy must lie in [0, 1]")
    if max_workers < 1:
        raise ValueError("max_workers must be >= 1")
    if (nodes_per_rack is not None and nodes_per_rack < 1) or (
            racks_per_domain is not None and racks_per_domain < 1):
        raise ValueError("nodes_per_rack and racks_per_domain must be >= 1")
    arguments = dict(nodes=nodes, gpus_per_node=gpus_per_node, nodes_per_rack=nodes_per_rack,
                     racks_per_domain=racks_per_domain, fill=fill, max_workers=max_workers,
                     busy=busy, lam=lam, distance=distance, objective=objective)
    rng = np.random.default_rng(seed)
    cluster = homogeneous_cluster(nodes, gpus_per_node, nodes_per_rack=nodes_per_rack,
                                  racks_per_domain=racks_per_domain if nodes_per_rack else None,
                                  **T4)
    n_busy = round(busy * cluster.num_gpus)
    taken = np.sort(rng.choice(cluster.num_gpus, size=n_busy, replace=False))
    running = tuple(RunningJob(job=f"r{k:03d}", gpus=(cluster.gpu_ids[g],), gpu_util=100.0,
                               gpu_mem_gb=8.0, cpu_per_gpu=WORKER["cpu"],
                               ram_gb_per_gpu=WORKER["ram_gb"], remaining_s=600.0)
                    for k, g in enumerate(taken))

    models = fig19_mix(nodes)
    models = [models[k] for k in rng.permutation(len(models))]
    workers = np.ones(len(models), dtype=np.int64)
    extra = round(fill * (cluster.num_gpus - n_busy)) - len(models)
    for _ in range(max(0, extra)):
        open_jobs = np.flatnonzero(workers < max_workers)
        if not len(open_jobs):
            break
        workers[open_jobs[rng.integers(len(open_jobs))]] += 1

    jobs = []
    for j, (model, w) in enumerate(zip(models, workers, strict=True)):
        bw = BANDWIDTH[model]
        containers = [Container("ps0", "ps", 0, 0.0, bandwidth=bw, **PS)]
        containers += [Container(f"w{k}", "worker", 1, WORKER_GPU_MEM_GB[model], bandwidth=bw,
                                 **WORKER) for k in range(int(w))]
        jobs.append(Job(id=f"j{j:03d}", model=model, kind="train", num_gpus=int(w),
                        containers=tuple(containers)))
    params = {"lambda": lam, "distance": distance, "objective": objective}
    return check_instance(Instance(
        problem="liquid", cluster=cluster, jobs=tuple(jobs), params=params, running=running,
        name=f"liquid-fig19-{nodes}n-s{seed}",
        provenance={"generator": "instances.liquid_gen", "seed": seed, "arguments": arguments,
                    "source": "Liquid (TPDS 2022) Sec. 7.4 Fig. 19 mix; bandwidth fitted "
                              "from the authors' measurements (instances/derive)"},
    ))


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=5, help="servers (5, 10, 15, 20 in Fig. 19)")
    parser.add_argument("--gpus-per-node", type=int, default=2, help="T4 GPUs per server (2)")
    parser.add_argument("--nodes-per-rack", type=int, default=5, help="servers per rack (5)")
    parser.add_argument("--racks-per-domain", type=int, default=2, help="racks per domain (2)")
    parser.add_argument("--fill", type=float, default=1.0,
                        help="share of the free GPUs the batch's workers take (1.0)")
    parser.add_argument("--max-workers", type=int, default=4, help="workers per job at most (4)")
    parser.add_argument("--busy", type=float, default=0.0,
                        help="share of GPUs held by running jobs (0)")
    parser.add_argument("--lambda", dest="lam", type=float, default=0.5, help="λ of Eq. 4 (0.5)")
    parser.add_argument("--distance", default="paper", choices=DISTANCE_TABLES,
                        help="distance table between servers")
    parser.add_argument("--objective", default="paper", choices=OBJECTIVES,
                        help="score: the paper's Eqs. 4-7 or the implementation's")


register_generator(GeneratorSpec("liquid", generate_liquid, _add_arguments,
                                 "Liquid batch of PS/worker jobs (Fig. 19 mix)"))


# ----------------------------------------------------------------------------- workloads
ONE_SERVER_SECONDS = {"vgg16": 510.0, "resnet50": 203.0, "inception3": 289.0}
"""Measured seconds of 1 PS + 2 workers on one server (issue 4; the fit's reference)."""
MIX_SHARES = {m: k / sum(n for _, n in MIX_PER_5_NODES) for m, k in MIX_PER_5_NODES}


def generate_liquid_workload(
    seed: int = 0,
    nodes: int = 10,
    gpus_per_node: int = 2,
    jobs: int = 100,
    mean_interarrival_s: float = 120.0,
    *,
    max_workers: int = 2,
    max_scale: int = 10,
    nodes_per_rack: int | None = 5,
    racks_per_domain: int | None = 2,
    lam: float = 0.5,
    distance: str = "paper",
    objective: str = "paper",
) -> Instance:
    """A Liquid workload for ``dlsched simulate``: jobs with submit times and durations.

    Cluster and containers as :func:`generate_liquid`. Per job (seeded): model by the Fig. 19
    shares (ResNet-50 1/2, Inception V3 1/4, VGG-16 1/4); 1 to ``max_workers`` workers
    (uniform) plus one PS; exponential inter-arrival times with mean
    ``mean_interarrival_s`` (first job at 0); ``duration`` = the model's measured one-server
    time for 1 PS + 2 workers (VGG-16 510 s, ResNet-50 203 s, Inception V3 289 s) × a
    uniform integer in [1, ``max_scale``] (a number of such runs; our choice). The duration
    does not depend on the worker count (our choice: the job's work is fixed). Times are
    rounded to 3 decimals, durations to 1.
    """
    if jobs < 1 or mean_interarrival_s <= 0 or max_workers < 1 or max_scale < 1:
        raise ValueError("jobs, mean_interarrival_s, max_workers and max_scale must be positive")
    if max_workers > nodes * gpus_per_node:
        raise ValueError("max_workers exceeds the cluster's GPUs: some jobs could never run")
    arguments = dict(nodes=nodes, gpus_per_node=gpus_per_node, jobs=jobs,
                     mean_interarrival_s=mean_interarrival_s, max_workers=max_workers,
                     max_scale=max_scale, nodes_per_rack=nodes_per_rack,
                     racks_per_domain=racks_per_domain, lam=lam, distance=distance,
                     objective=objective)
    rng = np.random.default_rng(seed)
    cluster = homogeneous_cluster(nodes, gpus_per_node, nodes_per_rack=nodes_per_rack,
                                  racks_per_domain=racks_per_domain if nodes_per_rack else None,
                                  **T4)
    names = sorted(MIX_SHARES)
    models = rng.choice(len(names), size=jobs, p=[MIX_SHARES[m] for m in names])
    workers = rng.integers(1, max_workers + 1, size=jobs)
    scale = rng.integers(1, max_scale + 1, size=jobs)
    gaps = rng.exponential(mean_interarrival_s, size=jobs)
    submit = np.round(np.concatenate([[0.0], np.cumsum(gaps[1:])]), 3)
    out = []
    for j in range(jobs):
        model = names[int(models[j])]
        bw = BANDWIDTH[model]
        containers = [Container("ps0", "ps", 0, 0.0, bandwidth=bw, **PS)]
        containers += [Container(f"w{k}", "worker", 1, WORKER_GPU_MEM_GB[model], bandwidth=bw,
                                 **WORKER) for k in range(int(workers[j]))]
        out.append(Job(id=f"j{j:04d}", submit_time=float(submit[j]), num_gpus=int(workers[j]),
                       duration=round(ONE_SERVER_SECONDS[model] * int(scale[j]), 1),
                       model=model, kind="train", containers=tuple(containers)))
    params = {"lambda": lam, "distance": distance, "objective": objective}
    return check_instance(Instance(
        problem="liquid", cluster=cluster, jobs=tuple(out), params=params,
        name=f"liquid-workload-{nodes}n-{jobs}j-s{seed}",
        provenance={"generator": "instances.liquid_gen.generate_liquid_workload", "seed": seed,
                    "arguments": arguments,
                    "source": "Liquid (TPDS 2022) Fig. 19 mix; one-server times and bandwidth "
                              "from the authors' measurements (issue 4)"},
    ))


LIQUID_PRESETS = ("fig18", "fig19")


def generate_liquid_preset(*, seed: int = 0, preset: str = "fig19", nodes: int = 20,
                           jobs: int | None = None, lam: float = 0.5,
                           distance: str = "paper", objective: str = "paper") -> Instance:
    """The workloads of the paper's Sec. 7.4 for the simulator.

    Parameters
    ----------
    seed
        Seed of the queue order (and, for ``fig18``, of the arrivals).
    preset
        ``"fig19"`` (batch scenario): the exact 4 : 2 : 2 ResNet-50 : Inception V3 :
        VGG-16 mix per 5 servers, every job 1 PS + 2 workers, all submitted at t = 0 (so
        jobs queue: 16 workers per 10 GPUs), duration = the model's measured one-server
        time for 1 PS + 2 workers. ``"fig18"`` (immediate scenario, "jobs appear one by
        one with long time intervals"): ``jobs`` jobs (default 4 per server) of the same
        mix and shape with exponential gaps of mean 1.5 x the mean duration (our reading:
        few jobs overlap, so a job's run time depends on its own placement).
    nodes
        Servers of 2 T4 GPUs (racks of 5, domains of 2 racks).
    jobs
        ``fig18`` only: number of jobs.
    lam, distance, objective
        The problem's parameters.

    Returns
    -------
    Instance
        A ``liquid`` workload.
    """
    if preset not in LIQUID_PRESETS:
        raise ValueError(f"preset must be one of {LIQUID_PRESETS}")
    if nodes < 1:
        raise ValueError("nodes must be >= 1")
    rng = np.random.default_rng(seed)
    cluster = homogeneous_cluster(nodes, 2, nodes_per_rack=5, racks_per_domain=2, **T4)
    if preset == "fig19":
        models = fig19_mix(nodes)
        models = [models[k] for k in rng.permutation(len(models))]
        submit = np.zeros(len(models))
    else:
        count = 4 * nodes if jobs is None else jobs
        if count < 1:
            raise ValueError("jobs must be >= 1")
        names = sorted(MIX_SHARES)
        models = [names[int(k)] for k in
                  rng.choice(len(names), size=count, p=[MIX_SHARES[m] for m in names])]
        mean = sum(MIX_SHARES[m] * ONE_SERVER_SECONDS[m] for m in names)
        gaps = rng.exponential(1.5 * mean, size=count)
        submit = np.round(np.concatenate([[0.0], np.cumsum(gaps[1:])]), 3)
    out = []
    for j, model in enumerate(models):
        bw = BANDWIDTH[model]
        containers = [Container("ps0", "ps", 0, 0.0, bandwidth=bw, **PS)]
        containers += [Container(f"w{k}", "worker", 1, WORKER_GPU_MEM_GB[model], bandwidth=bw,
                                 **WORKER) for k in range(2)]
        out.append(Job(id=f"j{j:04d}", submit_time=float(submit[j]), num_gpus=2,
                       duration=ONE_SERVER_SECONDS[model], model=model, kind="train",
                       containers=tuple(containers)))
    arguments = dict(preset=preset, nodes=nodes, jobs=len(out), lam=lam, distance=distance,
                     objective=objective)
    return check_instance(Instance(
        problem="liquid", cluster=cluster, jobs=tuple(out),
        params={"lambda": lam, "distance": distance, "objective": objective},
        name=f"liquid-{preset}-{nodes}n-s{seed}",
        provenance={"generator": "instances.liquid_gen.generate_liquid_preset", "seed": seed,
                    "arguments": arguments,
                    "source": "Liquid (TPDS 2022) Sec. 7.4, Figs. 18-19; one-server times "
                              "and bandwidth from the authors' measurements"},
    ))


def _add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="fig19", choices=LIQUID_PRESETS,
                        help="fig19: batch at t = 0; fig18: spaced arrivals (default fig19)")
    parser.add_argument("--nodes", type=int, default=20, help="servers of 2 T4 GPUs (20)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="fig18 only: number of jobs (default 4 per server)")
    parser.add_argument("--lambda", dest="lam", type=float, default=0.5, help="λ of Eq. 4 (0.5)")
    parser.add_argument("--distance", default="paper", choices=DISTANCE_TABLES,
                        help="distance table (default paper)")
    parser.add_argument("--objective", default="paper", choices=OBJECTIVES,
                        help="objective (default paper)")


register_generator(GeneratorSpec("liquid", generate_liquid_preset, _add_workload_arguments,
                                 "Liquid workload of Sec. 7.4 (Fig. 18 or Fig. 19 preset)",
                                 name="liquid-workload"))
