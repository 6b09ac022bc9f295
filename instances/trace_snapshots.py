"""Snapshots of workloads at busy moments, for the instance library.

A workload — a committed trace (``instances/workloads/``) or one made by a seeded
generator — is replayed in the simulator under a simple policy; the snapshot the policy
would see at the ``moment``-th time (counting from 0) when at least ``pending`` jobs wait
after ``after`` seconds becomes the instance: its running jobs (with their remaining
times) and the first ``pending`` jobs of the queue, every one of them submitted by the
snapshot time. The workload's seeded fields (GPU utilization and memory) make a trace a
Horus or SCHED² snapshot; the provenance names the workload, the policy and the moment.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from dlsched.instance import Instance
from dlsched.instance_io import check_instance, load_instance
from dlsched.registry import generators
from dlsched.simulate import simulate


class _Captured(Exception):
    def __init__(self, snapshot: Instance) -> None:
        super().__init__("captured")
        self.snapshot = snapshot


def _busy_snapshot(source: Instance, *, label: str, policy: str, pending: int, after: float,
                   moment: int, free: int = 0) -> Instance:
    """The replay's snapshot at the ``moment``-th time ≥ ``after`` with ``pending`` jobs
    waiting and ``free`` GPUs idle."""
    seen = 0

    def observe(snapshot: Instance) -> None:
        nonlocal seen
        idle = snapshot.cluster.num_gpus - sum(len(r.gpus) for r in snapshot.running)
        if snapshot.time >= after and len(snapshot.jobs) >= pending and idle >= free:
            if seen == moment:
                raise _Captured(snapshot)
            seen += 1

    try:
        simulate(source, policy, record_events=False, frag_samples=False, observe=observe)
    except _Captured as got:
        return got.snapshot
    raise ValueError(f"{label}: never {pending} jobs waiting and {free} GPUs idle after "
                     f"{after:g} s (moment {moment}) under {policy}")


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
    snap = _busy_snapshot(source, label=workload, policy=policy, pending=pending, after=after,
                          moment=seed)
    return check_instance(Instance(
        problem=problem, cluster=snap.cluster, jobs=snap.jobs[:pending], params=params or {},
        running=snap.running, time=round(snap.time, 3),
        name=f"{workload.split('.')[0]}-{policy}-{pending}-m{seed}",
        provenance={"generator": "instances.trace_snapshots", "seed": seed,
                    "source": f"instances/workloads/{workload} (see its README)",
                    "arguments": {"workload": workload, "problem": problem,
                                  "policy": policy, "pending": pending, "after": after}}))


def generated_snapshot(*, seed: int = 0, generator: str, arguments: dict[str, Any] | None = None,
                       policy: str = "fifo", pending: int = 12, free: int = 0,
                       after: float = 0.0, moment: int = 0) -> Instance:
    """A busy snapshot of the workload that generator ``generator`` makes with ``seed``.

    The workload (``arguments`` and ``seed`` passed to the generator) is replayed under
    ``policy``; the ``moment``-th time after ``after`` seconds with at least ``pending``
    jobs waiting and at least ``free`` GPUs idle (a choice to make) is cut: the jobs
    running then (remaining times) and the first ``pending`` jobs of the queue, all
    submitted by then. The snapshot keeps the workload's problem
    and parameters.

    Raises ValueError when the replay never has such a moment.
    """
    arguments = dict(arguments or {})
    source = generators()[generator].build(seed=seed, **arguments)
    snap = _busy_snapshot(source, label=f"{generator} seed {seed}", policy=policy,
                          pending=pending, after=after, moment=moment, free=free)
    return check_instance(Instance(
        problem=source.problem, cluster=snap.cluster, jobs=snap.jobs[:pending],
        params=source.params, running=snap.running, time=round(snap.time, 3),
        name=f"{source.name}-{policy}-{pending}-t{round(snap.time)}",
        provenance={"generator": "instances.trace_snapshots", "seed": seed,
                    "source": f"generator {generator!r}, cut from its replay",
                    "arguments": {"generator": generator, "arguments": arguments,
                                  "policy": policy, "pending": pending, "free": free,
                                  "after": after, "moment": moment}}))
