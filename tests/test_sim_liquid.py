"""Liquid (PS/worker container jobs) in the event-driven simulator."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.instances.liquid_gen import generate_liquid_workload
from dlsched.jobs import Container
from dlsched.problems.rates import BoundSpeed
from dlsched.simulate import Policy, SimulationError, SpeedModel, simulate

EXACT = Policy("exact", backend="cbc", time_limit=30)


def _job(jid: str, t: float, duration: float, bw: float, ps_cpu: float, w_cpus: list[float]
         ) -> Job:
    containers = [Container("ps", "ps", 0, 0.0, ps_cpu, 4.0, bw)]
    containers += [Container(f"w{k}", "worker", 1, 4.0, c, 8.0, bw) for k, c in enumerate(w_cpus)]
    return Job(id=jid, submit_time=t, num_gpus=len(w_cpus), duration=duration, model="vgg16",
               containers=tuple(containers))


def tiny() -> Instance:
    """2 servers × 1 GPU, 8 CPU each (see the test below for the hand-computed trace)."""
    cluster = homogeneous_cluster(2, 1, gpu_type="t4", gpu_mem_gb=16.0, cpu=8.0, ram_gb=64.0)
    jobs = (_job("A", 0.0, 100.0, 0.5, 2.0, [4.0, 4.0]),
            _job("B", 10.0, 50.0, 0.2, 6.0, [4.0]),
            _job("C", 20.0, 30.0, 0.3, 1.0, [4.0]),
            _job("D", 160.0, 10.0, 0.1, 1.0, [1.0]))
    return Instance(problem="liquid", cluster=cluster, jobs=jobs, params={})


@pytest.mark.parametrize("policy, d_end, d_slow", [(Policy("bestfit"), 221.0, 1.1),
                                                   (EXACT, 220.0, 1.0)],
                         ids=["bestfit", "exact-cbc"])
def test_tiny_workload_by_hand(policy, d_end, d_slow):
    # t=0: A's two 1-GPU workers need both servers; its PS joins one of them, so exactly one
    #   PS-worker pair is separated: slowdown 1 + 0.5·1 = 1.5, A ends at 0 + 100·1.5 = 150.
    # t=10, 20: B and C arrive, no free GPU: nothing starts.
    # t=150: queue [B, C] fits the free totals (2 GPUs; CPU 10 + 5 <= 16) but not the
    #   servers: B's PS (6 CPU) shares a server with no worker (6 + 4 > 8), and two workers
    #   need both GPUs. The prefix [B] fits: its PS and worker are apart, slowdown
    #   1 + 0.2·1 = 1.2, B ends at 150 + 50·1.2 = 210.
    # t=160: D arrives; queue [C, D]. The one free GPU is on B's PS server (6 CPU used):
    #   C's worker (4 CPU) does not fit; D must not overtake C (FIFO prefix).
    # t=210: both servers free; C (1 + 4 CPU) and D (1 + 1 CPU) each fit on one server.
    #   exact: no separated pair, C ends at 210 + 30 = 240, D at 210 + 10 = 220.
    #   bestfit (no look-ahead, containers C-PS, C-W, D-PS, D-W; ties to the lowest server):
    #   C-PS and C-W on server 0; D-PS ties (no worker placed yet, no running GPUs: every
    #   term is 0) and goes to server 0 (6 CPU <= 8); D-W must take server 1's GPU:
    #   one separated pair, slowdown 1 + 0.1·1 = 1.1, D ends at 210 + 10·1.1 = 221.
    cpu_at_160 = []

    def observe(snapshot: Instance) -> None:
        if snapshot.time == 160.0:
            cpu_at_160.append(sorted(snapshot.node_usage[0].tolist()))

    run = simulate(tiny(), policy, observe=observe)
    got = {r.job.id: (r.start, r.end, r.locality_slowdown) for r in run.records}
    assert got["A"] == pytest.approx((0.0, 150.0, 1.5))
    assert got["B"] == pytest.approx((150.0, 210.0, 1.2))
    assert got["C"] == pytest.approx((210.0, 240.0, 1.0))
    assert got["D"] == pytest.approx((210.0, d_end, d_slow))
    # B's worker server holds 4 CPU, its PS server 6 CPU (the PS holds CPU without a GPU)
    assert cpu_at_160 == [[4.0, 6.0]]
    assert run.events_without_solution == 1  # t=160: not even [C] could be placed


def test_liquid_distance_model_weights_pairs_by_implementation_distance():
    # 4 servers, racks {0, 1} and {2, 3}, no domain level (one domain): the implementation
    # distance is 1 within a rack and 4 across racks. PS on 0, workers on 1 and 2, bw 0.1:
    #   liquid:          1 + 0.1·(1 + 1) = 1.2   (separated pairs, unweighted)
    #   liquid_distance: 1 + 0.1·(1 + 4) = 1.5
    cluster = homogeneous_cluster(4, 1, gpu_type="t4", gpu_mem_gb=16.0, nodes_per_rack=2)
    job = _job("j", 0.0, 10.0, 0.1, 1.0, [1.0, 1.0])
    w = Instance(problem="liquid", cluster=cluster, jobs=(job,), params={})
    where = {"ps": 0, "w0": 1, "w1": 2}
    gpus = np.array([1, 2])
    assert BoundSpeed(SpeedModel(locality="liquid"), w).base_rate(job, gpus, where) == \
        pytest.approx((1 / 1.2, 1.2))
    assert BoundSpeed(SpeedModel(locality="liquid_distance"), w).base_rate(job, gpus, where) \
        == pytest.approx((1 / 1.5, 1.5))
    assert SpeedModel.default_for("liquid").locality == "liquid"


def _check_run(run, workload: Instance) -> None:
    """Independent checks from the records: arrival, completion, slowdown, capacities."""
    cluster = workload.cluster
    recs = run.records
    assert all(r.start is not None and r.end is not None for r in recs)
    assert len({r.job.id for r in recs}) == len(workload.jobs)
    for r in recs:
        assert r.start >= r.job.submit_time - 1e-9
        where = {tp.task: tp.node for tp in r.tasks}
        assert set(where) == {c.id for c in r.job.containers}
        ps = [where[c.id] for c in r.job.containers if c.role == "ps"]
        slow = 1.0 + sum(c.bandwidth * sum(p != where[c.id] for p in ps)
                         for c in r.job.containers if c.role == "worker")
        assert r.end - r.start == pytest.approx(r.job.duration * slow)
    for t in sorted({r.start for r in recs}):
        live = [r for r in recs if r.start <= t < r.end]
        gpus = [g for r in live for tp in r.tasks for g in tp.gpus]
        assert len(gpus) == len(set(gpus))  # exclusive GPUs
        cpu = dict.fromkeys(cluster.node_ids, 0.0)
        ram = dict.fromkeys(cluster.node_ids, 0.0)
        for r in live:
            by_id = {c.id: c for c in r.job.containers}
            for tp in r.tasks:
                cpu[tp.node] += by_id[tp.task].cpu
                ram[tp.node] += by_id[tp.task].ram_gb
        for n, node in enumerate(cluster.node_ids):
            assert cpu[node] <= cluster.node_cpu[n] + 1e-9
            assert ram[node] <= cluster.node_ram_gb[n] + 1e-9
    done = [e for e in run.events if e[1] == "complete"]
    assert sorted(e[2] for e in done) == sorted(j.id for j in workload.jobs)


# conservation is the simulator's, not the GA's: 4 generations per batch suffice
GGA_BATCH = Policy("gga", interval=60.0, batch_only=True, options={"max_generations": 4})


# the exact model on seed 0 only and the GA on seeds 0 and 2: a line-arc trace of the
# library found no arc of the exact model's seeds 1-2 or the GA's seed 1 that the same
# policy's kept seeds did not reach (those three runs cost ~0.45 CPU-s, CBC's included)
@pytest.mark.parametrize("policy,seed", [
    pytest.param(policy, seed, id=f"{seed}-{name}")
    for name, policy, seeds in (("bestfit", Policy("bestfit"), (0, 1, 2)),
                                ("gga-batch", GGA_BATCH, (0, 2)), ("exact-cbc", EXACT, (0,)))
    for seed in seeds])
def test_conservation_on_random_workloads(policy, seed):
    w = generate_liquid_workload(seed, nodes=3, gpus_per_node=2, jobs=10,
                                 mean_interarrival_s=60.0, max_workers=3, max_scale=2)
    run = simulate(w, policy)
    _check_run(run, w)


def test_max_jobs_limits_the_batch_and_prefix_can_be_switched_off():
    w = generate_liquid_workload(3, nodes=3, gpus_per_node=2, jobs=8, mean_interarrival_s=5.0)
    sizes = []
    run = simulate(w, Policy("bestfit", max_jobs=1), observe=lambda s: sizes.append(len(s.jobs)))
    _check_run(run, w)
    assert max(sizes) == 1
    # without prefix mode the whole queue is offered; this one never fits at once
    with pytest.raises(SimulationError):
        simulate(tiny(), Policy("bestfit", prefix=False))


def test_workload_generator_is_deterministic():
    def text(seed: int) -> str:
        return json.dumps(generate_liquid_workload(seed, jobs=20).to_dict(), sort_keys=True)

    assert text(4) == text(4)
    assert text(4) != text(5)
    w = generate_liquid_workload(4, jobs=20)
    assert w.problem == "liquid" and not w.running
    assert all(j.duration > 0 and j.containers for j in w.jobs)
    assert [j.submit_time for j in w.jobs] == sorted(j.submit_time for j in w.jobs)
