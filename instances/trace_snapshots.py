"""Snapshots of real-trace workloads at busy moments, for the instance library.

A committed trace workload (``instances/workloads/``) is replayed in the simulator under a
simple policy; the snapshot the policy would see at the ``seed``-th moment (counting
from 0) when at least ``pending`` jobs wait after ``after`` seconds becomes the instance:
its running jobs (with their remaining times) and the first ``pending`` jobs of the queue.
The workload's seeded fields (GPU utilization and memory) make it a Horus or SCHED²
snapshot; the provenance names the trace file, the policy and the moment.
"""

from __future__ import annotations

from importlib import resources

from dlsched.instance import Instance
from dlsched.instance_io import check_instance, load_instance
from dlsched.simulate import simulate


class _Captured(Exception):
    def __init__(self, snapshot: Instance) -> None:
        super().__init__("captured")
        self.snapshot = snapshot


def trace_snapshot(*, seed: int = 0, workload: str, problem: str = "horus",
                   policy: str = "fifo", pending: int = 15, after: float = 0.0,
                   params: dict | None = None) -> Instance:
    """The ``seed``-th busy snapshot of the committed workload file ``workload``.

    Raises ValueError when the replay never has ``pending`` jobs waiting.
    """
    path = resources.files("dlsched.instances").joinpath("workloads", workload)
    with resources.as_file(path) as file:
        source = load_instance(file)
    source = source.replace(problem=problem, params=params or {})
    seen = 0

    def observe(snapshot: Instance) -> None:
        nonlocal seen
        if snapshot.time >= after and len(snapshot.jobs) >= pending:
            if seen == seed:
                raise _Captured(snapshot)
            seen += 1

    try:
        simulate(source, policy, record_events=False, frag_samples=False, observe=observe)
    except _Captured as got:
        snap = got.snapshot
    else:
        raise ValueError(f"{workload}: never {pending} jobs waiting after {after:g} s "
                         f"(moment {seed}) under {policy}")
    return check_instance(Instance(
        problem=problem, cluster=snap.cluster, jobs=snap.jobs[:pending], params=params or {},
        running=snap.running, time=round(snap.time, 3),
        name=f"{workload.split('.')[0]}-{policy}-{pending}-m{seed}",
        provenance={"generator": "instances.trace_snapshots", "seed": seed,
                    "source": f"instances/workloads/{workload} (see its README)",
                    "arguments": {"workload": workload, "problem": problem,
                                  "policy": policy, "pending": pending, "after": after}}))
