"""Tiny hand-built instances for tests whose expected values are computed by hand."""

from __future__ import annotations

from dlsched import Instance, Job, RunningJob, homogeneous_cluster


def horus_instance(jobs, running=(), *, nodes=1, gpus_per_node=2, mem=8.0, cpu=64.0,
                   ram=256.0, params=None, time=100.0) -> Instance:
    """A Horus snapshot from job tuples ``(id, gpus, util, mem[, cpu, ram, submit])``."""
    cluster = homogeneous_cluster(nodes, gpus_per_node, gpu_mem_gb=mem, cpu=cpu, ram_gb=ram)
    built = []
    for spec in jobs:
        job_id, gpus, util, gmem, *rest = spec
        cpu_each, ram_each, submit = (*rest, 0.0, 0.0, 0.0)[:3] if rest else (0.0, 0.0, 0.0)
        built.append(Job(id=job_id, num_gpus=gpus, gpu_util=util, gpu_mem_gb=gmem,
                         cpu_per_gpu=cpu_each, ram_gb_per_gpu=ram_each, submit_time=submit))
    return Instance(problem="horus", cluster=cluster, jobs=tuple(built),
                    params=params or {}, running=tuple(running), time=time)


def running(job_id, gpus, util, mem, cpu=0.0, ram=0.0) -> RunningJob:
    return RunningJob(job=job_id, gpus=tuple(gpus), gpu_util=util, gpu_mem_gb=mem,
                      cpu_per_gpu=cpu, ram_gb_per_gpu=ram, remaining_s=60.0)
