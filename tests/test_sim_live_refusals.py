"""``check="fast"`` refuses every invalid decision of a view policy (issue 33: the engine's
speed-ups keep every refusal). Each case swaps a problem's registered fast form for one
that returns a hand-made decision and expects the run to stop naming the broken rule:
the generic rules (pending job, once, known GPUs, demand, exclusive GPUs, GPU memory,
server CPU), the start time, and a problem's own rule (GENIE's symmetric shapes)."""

from __future__ import annotations

import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.decision import Decision, Placement
from dlsched.registry import get_method
from dlsched.simulate import SimulationError, simulate
from dlsched.state import _VIEW_POLICIES, ViewPolicy


def sched2_workload() -> Instance:
    """2 servers x 2 GPUs (8 GB each); j0 (1 GPU) and j1 (2 GPUs) at 0, j2 (1 GPU) at 10."""
    jobs = (Job(id="j0", submit_time=0.0, num_gpus=1, duration=100.0, model="a"),
            Job(id="j1", submit_time=0.0, num_gpus=2, duration=50.0, model="a"),
            Job(id="j2", submit_time=10.0, num_gpus=1, duration=30.0, model="a"))
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 2, gpu_type="gpu"),
                    jobs=jobs, params={"locality": {"a": 2.0}}, name="refusals")


def horus_workload(mem: float = 5.0, cpu: float = 0.0) -> Instance:
    """2 servers x 2 shared GPUs (8 GB, servers of 12 CPUs); h0-h2 at 0, h3 at 10."""
    jobs = tuple(Job(id=f"h{i}", submit_time=0.0 if i < 3 else 10.0, num_gpus=1 + (i == 2),
                     duration=100.0, gpu_util=30.0, gpu_mem_gb=mem, cpu_per_gpu=cpu)
                 for i in range(4))
    cluster = homogeneous_cluster(2, 2, gpu_mem_gb=8.0, cpu=12.0, ram_gb=64.0)
    return Instance(problem="horus", cluster=cluster, jobs=jobs, params={})


def scripted(monkeypatch, problem: str, decisions: list) -> None:
    """Make ``problem``'s FIFO fast form return ``decisions`` in turn (each a list of
    placements), always called."""
    get_method(problem, "fifo")  # registers the real fast form first, so ours stays
    calls = iter(decisions)

    def decide(view, **_):
        return Decision.of(next(calls, []))

    monkeypatch.setitem(_VIEW_POLICIES, (problem, "fifo"),
                        ViewPolicy(problem, "fifo", decide, lambda view, **_: True))


P = Placement
SCHED2_CASES = {
    "unknown_job": [[P("nope", ("n0/g0",))]],
    "duplicate": [[P("j0", ("n0/g0",)), P("j0", ("n0/g1",))]],
    "unknown_gpu": [[P("j0", ("n9/g9",))]],
    "demand": [[P("j0", ("n0/g0", "n0/g1"))]],
    "listed twice": [[P("j1", ("n0/g0", "n0/g0"))]],
    "shared in one decision": [[P("j0", ("n0/g0",)), P("j1", ("n0/g0", "n0/g1"))]],
    "busy": [[P("j0", ("n0/g0",))], [P("j1", ("n0/g0", "n0/g1"))]],
}
SCHED2_MATCH = {"unknown_job": r"\[unknown_job\] nope", "duplicate": r"\[duplicate\] j0",
                "unknown_gpu": r"\[unknown_gpu\] j0", "demand": r"\[demand\] j0: gets 2",
                "listed twice": r"\[demand\] j1: a GPU is listed twice",
                "shared in one decision": r"\[exclusive\] j0: GPU n0/g0 is shared",
                "busy": r"(?s)at t = 10 s.*\[exclusive\] j1: GPU n0/g0 is shared"}


@pytest.mark.parametrize("case", sorted(SCHED2_CASES))
def test_fast_check_refuses_generic_violations(monkeypatch, case):
    scripted(monkeypatch, "sched2", SCHED2_CASES[case])
    with pytest.raises(SimulationError, match=SCHED2_MATCH[case]):
        simulate(sched2_workload(), "fifo", check="fast")


def test_fast_check_refuses_a_start_in_the_future(monkeypatch):
    scripted(monkeypatch, "sched2", [[P("j0", ("n0/g0",), start=5.0)]])
    with pytest.raises(SimulationError, match="jobs start at the snapshot time"):
        simulate(sched2_workload(), "fifo", check="fast")


def test_scripted_valid_decisions_run():
    """The cases above fail for their own reason: the same script, made valid, runs."""
    with pytest.MonkeyPatch.context() as mp:
        scripted(mp, "sched2", [[P("j0", ("n0/g0",)), P("j1", ("n1/g0", "n1/g1"))],
                                [P("j2", ("n0/g1",))]])
        run = simulate(sched2_workload(), "fifo", check="fast")
    assert [r.start for r in run.records] == [0.0, 0.0, 10.0]


@pytest.mark.parametrize("decisions", [
    # one decision, two jobs on one GPU: 5 + 5 GB > 8 GB
    [[P("h0", ("n0/g0",)), P("h1", ("n0/g0",))]],
    # one job onto a GPU a running job already fills with 5 GB (the one-placement path)
    [[P("h0", ("n0/g0",))], [P("h3", ("n0/g0",))]],
], ids=["same decision", "running job"])
def test_fast_check_refuses_gpu_memory(monkeypatch, decisions):
    scripted(monkeypatch, "horus", decisions)
    with pytest.raises(SimulationError, match=r"\[gpu_memory\] h\d: GPU n0/g0 holds 10 GB"):
        simulate(horus_workload(), "fifo", check="fast")


def test_fast_check_refuses_server_cpu(monkeypatch):
    # h2 takes 2 GPUs of n0 at 8 CPUs each: 16 of the server's 12
    scripted(monkeypatch, "horus", [[P("h2", ("n0/g0", "n0/g1"))]])
    with pytest.raises(SimulationError, match=r"\[node_cpu\] node n0 uses 16 of 12"):
        simulate(horus_workload(mem=1.0, cpu=8.0), "fifo", check="fast")


def test_fast_check_runs_the_problems_own_rules(monkeypatch):
    """GENIE's symmetric-shape rule, on the instance built for the placed jobs."""
    from dlsched.instances.genie_gen import generate_genie_workload

    w = generate_genie_workload(seed=0, nodes=2, gpus_per_node=4, density=5.0, duration=4.0)
    head = min(w.jobs, key=lambda j: (j.submit_time, w.jobs.index(j)))
    scripted(monkeypatch, "genie", [[P(head.id, ("n0/g0", "n0/g1", "n1/g0"))]])
    with pytest.raises(SimulationError, match=rf"\[shape\] {head.id}: servers hold unequal"):
        simulate(w, "fifo", check="fast")
