"""Shared tiny GENIE instances (no tests here) with a toy model worked out by hand.

Toy model: sPR(b) = 10 samples/s for every local batch (k0 = 10, k1 = k2 = 0),
γ = 0.5, λ = 0.5, ν = 0. A task of batch 4 and 100 iterations has work 400 samples.
On a 2 × 2 platform with θ = 0.4 (N·G = 4, Cost = n/4 + 0.4·a/2):

| shape | Comm (Eq. 8)                  | PR      | Lat = 400/PR | Cost | CER = PR/Cost |
|-------|-------------------------------|---------|--------------|------|---------------|
| ⟨1,1⟩ | 0                             | 10      | 40           | 0.45 | 22.222        |
| ⟨1,2⟩ | λγ = 0.25                     | 17.5    | 22.857       | 0.70 | 25.0          |
| ⟨2,1⟩ | γ = 0.5                       | 15      | 26.667       | 0.90 | 16.667        |
| ⟨2,2⟩ | γ(1·2 + λ·1)/3 = 0.41667      | 35.8333 | 11.163       | 1.40 | 25.595        |
"""

from __future__ import annotations

from dlsched import Instance, Job, RunningJob, homogeneous_cluster

TOY = {"k0": 10.0, "k1": 0.0, "k2": 0.0, "gamma": 0.5, "lam": 0.5, "nu": 0.0,
       "b_min": 0.0, "b_sat": None, "infer_speedup": 1.0}


def toy_job(job_id: str, *, qos: str = "normal", deadline: float = 1000.0,
            batch: int = 4, iterations: int = 100, submit: float = 0.0,
            kind: str = "train", model: str = "toy") -> Job:
    return Job(id=job_id, submit_time=submit, model=model, kind=kind, batch_size=batch,
               iterations=iterations, qos=qos, deadline=deadline)


def toy_instance(jobs, *, busy=(), nodes: int = 2, gpus_per_node: int = 2,
                 time: float = 0.0, theta: float = 0.4, extra_models=None) -> Instance:
    """A GENIE snapshot on the toy model; ``busy`` lists GPU ids held by running tasks."""
    cluster = homogeneous_cluster(nodes, gpus_per_node, gpu_type="k80", gpu_mem_gb=12.0)
    coefficients = {"toy": dict(TOY)}
    coefficients.update(extra_models or {})
    running = tuple(RunningJob(job=f"r{i}", gpus=(g,), remaining_s=10.0)
                    for i, g in enumerate(busy))
    return Instance(problem="genie", cluster=cluster, jobs=tuple(jobs),
                    params={"theta": theta, "coefficients": coefficients},
                    running=running, time=time)
