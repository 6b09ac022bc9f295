"""Trace importers: ``../shared/traces/*/jobs.csv`` → simulator workloads.

Each importer selects a time window, re-bases submit times to 0, sizes a homogeneous
cluster from the window's offered load, and fills the fields the traces lack by a
seeded assignment (one ``numpy.random.default_rng(seed)`` stream, drawn in job order):

* ``model`` (hence the SCHED² locality sensitivity): the SCHED² category mix — CV 10 %
  (AlexNet, Inception3, ResNet-50, VGG16 evenly), NLP 60 % (Transformer), Speech 30 %
  (DeepSpeech);
* ``gpu_util`` (percent) and ``gpu_mem_gb`` per GPU: the Horus job classes — light
  (5-59 %) or heavy (60-100 %) with equal odds, memory a uniform share of the GPU's
  memory (5-50 % light, 30-85 % heavy), rounded to 0.1 GB;
* CPU and RAM per GPU: kept (as per-GPU shares) when the trace states them
  (columns ``cpu``, ``mem_gb``), else 0.

Cluster size (our rule, following each trace README): the offered load L = the GPU
demand inside the window (each job counted from its submit time, clipped at the
window's end, divided by the window length); GPUs = max(largest job, L / target_load),
rounded up to whole 8-GPU servers (``target_load`` 0.8 by default).

Alibaba GPU sharing: a task asking for ``gpu_milli`` < 1000 gets one GPU with
``gpu_util = gpu_milli / 10`` percent and ``gpu_mem_gb = gpu_milli / 1000 × GPU memory``;
whole-GPU tasks ask for the whole memory of each GPU. So, under the Horus problem, GPU
memory is the sharing constraint: shares on one GPU never add up to more than one GPU,
and interference follows the Horus slowdown on the summed utilization.

The full traces are read only by scripts and benchmarks; tests use the small derived
files in ``instances/workloads/`` (see ``instances/derive/trace_workloads.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.instance_io import check_instance
from dlsched.jobs import Job
from dlsched.topology import homogeneous_cluster

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
GPUS_PER_SERVER = 8
GPU_TYPE, GPU_MEM_GB = "gtx1080", 8.0  # the type with a Horus interference fit
CATEGORY_MODELS = (("alexnet", 0.025), ("inception3", 0.025), ("resnet50", 0.025),
                   ("vgg16", 0.025), ("transformer", 0.60), ("deepspeech", 0.30))
ALIBABA_DENSE_FROM = 9_936_000  # day 115: the dense part of the openb list (its README)
TRACE_DIRS = {"itp": "itp_elasticflow", "philly": "philly_dirlab_tail",
              "alibaba": "alibaba_openb_2023"}


def read_trace(name: str, root: Path | None = None) -> pd.DataFrame:
    """The normalized ``jobs.csv`` of trace ``name`` (``itp``, ``philly``, ``alibaba``)."""
    if name not in TRACE_DIRS:
        raise InputError(f"no normalized trace {name!r}", field="name",
                         fix=f"use one of: {', '.join(sorted(TRACE_DIRS))}; for a raw file "
                         "(Helios, Philly, Gavel, ...) use `dlsched import-trace FORMAT FILE`")
    path = (root or TRACES) / TRACE_DIRS[name] / "jobs.csv"
    return pd.read_csv(path, dtype={"job_id": str, "queue_or_vc": str})


def offered_load(submit: np.ndarray, duration: np.ndarray, gpus: np.ndarray,
                 start: float, end: float) -> float:
    """Average busy GPUs inside [start, end] if every job ran from its submit time."""
    if end <= start:
        return float((gpus * duration).sum()) / max(float(duration.max()), 1.0)
    busy = np.clip(submit + duration, start, end) - np.clip(submit, start, end)
    return float((busy * gpus).sum() / (end - start))


def cluster_gpus(load: float, largest: int, target_load: float = 0.8) -> int:
    """GPUs of the simulated cluster: whole servers holding max(largest job, load / target)."""
    need = max(float(largest), load / target_load)
    return max(1, math.ceil(need / GPUS_PER_SERVER)) * GPUS_PER_SERVER


def fill_fields(n: int, seed: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Seeded model, GPU utilization (%) and GPU memory (GB) for ``n`` jobs."""
    rng = np.random.default_rng(seed)
    names = [m for m, _ in CATEGORY_MODELS]
    probs = np.array([p for _, p in CATEGORY_MODELS])
    models = [names[k] for k in rng.choice(len(names), size=n, p=probs / probs.sum())]
    heavy = rng.random(n) < 0.5
    util = np.where(heavy, rng.integers(60, 101, n), rng.integers(5, 60, n)).astype(float)
    share = np.where(heavy, rng.uniform(0.30, 0.85, n), rng.uniform(0.05, 0.50, n))
    mem = np.maximum(np.round(share * GPU_MEM_GB, 1), 0.1)
    return models, util, mem


def workload_from_frame(df: pd.DataFrame, *, name: str, source: str, problem: str = "sched2",
                        seed: int = 0, target_load: float = 0.8, start: float | None = None,
                        end: float | None = None, arguments: dict | None = None) -> Instance:
    """Turn trace rows (the common columns) into a workload of ``problem``.

    ``start``/``end`` delimit the window used for the load (default: first and last submit).
    """
    if problem not in ("sched2", "horus"):
        raise ValueError("problem must be 'sched2' or 'horus'")
    df = df.sort_values(["submit_time_s"], kind="stable").reset_index(drop=True)
    submit = df["submit_time_s"].to_numpy(dtype=float)
    t0 = float(submit.min()) if start is None else float(start)
    t1 = float(submit.max()) if end is None else float(end)
    duration = df["duration_s"].to_numpy(dtype=float)
    gpus = df["num_gpus"].to_numpy(dtype=np.int64)
    sharing = "gpu_milli" in df and problem == "horus"
    share = (df["gpu_milli"].to_numpy(dtype=float) / 1000.0) if sharing else np.ones(len(df))
    load = offered_load(submit, duration, gpus * share, t0, t1)
    total = cluster_gpus(load, int(gpus.max()), target_load)
    models, util, mem = fill_fields(len(df), seed)
    if sharing:
        util = np.round(share * 100.0, 1)
        mem = np.round(share * GPU_MEM_GB, 3)
    cpu = df["cpu"].fillna(0).to_numpy(dtype=float) if "cpu" in df else np.zeros(len(df))
    ram = df["mem_gb"].fillna(0).to_numpy(dtype=float) if "mem_gb" in df else np.zeros(len(df))
    jobs = []
    for i, row in enumerate(df.itertuples(index=False)):
        jobs.append(Job(
            id=str(row.job_id), submit_time=float(submit[i] - t0), num_gpus=int(gpus[i]),
            duration=float(duration[i]), model=models[i], kind="train",
            gpu_util=float(util[i]), gpu_mem_gb=float(mem[i]),
            cpu_per_gpu=round(float(cpu[i]) / int(gpus[i]), 3),
            ram_gb_per_gpu=round(float(ram[i]) / int(gpus[i]), 3)))
    servers = total // GPUS_PER_SERVER
    cpu_cap = max(96.0, float(max((j.cpu_per_gpu for j in jobs), default=0.0)) * 8)
    ram_cap = max(384.0, float(max((j.ram_gb_per_gpu for j in jobs), default=0.0)) * 8)
    cluster = homogeneous_cluster(servers, GPUS_PER_SERVER, gpu_type=GPU_TYPE,
                                  gpu_mem_gb=GPU_MEM_GB, cpu=cpu_cap, ram_gb=ram_cap)
    provenance = {"generator": "instances.traces", "seed": seed, "source": source,
                  "arguments": {**(arguments or {}), "target_load": target_load,
                                "offered_load_gpus": round(load, 2), "problem": problem}}
    return check_instance(Instance(problem=problem, cluster=cluster, jobs=tuple(jobs),
                                   params={}, name=name, provenance=provenance))


def itp_workload(cluster: str, *, days: tuple[float, float] | None = None, seed: int = 0,
                 problem: str = "sched2", target_load: float = 0.8,
                 root: Path | None = None) -> Instance:
    """One ITP cluster (``cluster01`` .. ``cluster10``), optionally a window of days."""
    df = read_trace("itp", root)
    df = df[df["queue_or_vc"] == cluster]
    start = end = None
    if days is not None:
        start, end = days[0] * 86400.0, days[1] * 86400.0
        df = df[(df["submit_time_s"] >= start) & (df["submit_time_s"] < end)]
    if df.empty:
        raise ValueError(f"no ITP jobs for {cluster} in {days}")
    label = f"itp-{cluster}" + (f"-d{days[0]:g}-{days[1]:g}" if days else "")
    return workload_from_frame(df, name=label, source="Microsoft ITP (ElasticFlow), MIT",
                               problem=problem, seed=seed, target_load=target_load,
                               start=start, end=end,
                               arguments={"trace": "itp_elasticflow", "cluster": cluster,
                                          "days": list(days) if days else None})


def itp_workloads(*, seed: int = 0, target_load: float = 0.8, problem: str = "sched2",
                  root: Path | None = None) -> dict[str, Instance]:
    """All ten ITP clusters, whole trace, each sized from its own load."""
    names = sorted(read_trace("itp", root)["queue_or_vc"].unique())
    return {c: itp_workload(c, seed=seed, target_load=target_load, problem=problem, root=root)
            for c in names}


def philly_workload(*, days: tuple[float, float] | None = None, seed: int = 0,
                    problem: str = "sched2", target_load: float = 0.8,
                    root: Path | None = None) -> Instance:
    """The Philly tail (DIR-LAB cut), optionally a window of days."""
    df = read_trace("philly", root)
    start = end = None
    if days is not None:
        start, end = days[0] * 86400.0, days[1] * 86400.0
        df = df[(df["submit_time_s"] >= start) & (df["submit_time_s"] < end)]
    label = "philly-tail" + (f"-d{days[0]:g}-{days[1]:g}" if days else "")
    return workload_from_frame(df, name=label, problem=problem, seed=seed,
                               target_load=target_load, start=start, end=end,
                               source="Microsoft Philly 2017 via DIR-LAB cut, CC BY 4.0",
                               arguments={"trace": "philly_dirlab_tail",
                                          "days": list(days) if days else None})


def alibaba_workload(*, seed: int = 0, target_load: float = 0.8, limit: int | None = None,
                     root: Path | None = None) -> Instance:
    """The Alibaba GPU-sharing tasks of the dense window (Horus problem, fractional GPUs)."""
    df = read_trace("alibaba", root)
    df = df[df["submit_time_s"] >= ALIBABA_DENSE_FROM]
    if limit is not None:
        df = df.iloc[:limit]
    return workload_from_frame(df, name="alibaba-openb-dense" + (f"-{limit}" if limit else ""),
                               problem="horus", seed=seed, target_load=target_load,
                               source="Alibaba cluster-trace-gpu-v2023 (openb), cite FGD ATC'23",
                               arguments={"trace": "alibaba_openb_2023", "limit": limit,
                                          "from_s": ALIBABA_DENSE_FROM})
