"""PAB, Performance-aware Bin Packing: the Horus paper's third baseline (Sec. 5).

The paper: "PAB schedules DL jobs based on [...] detected iteration slowdown. The scheduler
measures the difference in average steps per second versus the previous state. After new
job placement, if performance drops by 50 percent, the job is simply re-queued. We allow a
warm-up period between 0-60s so all DL jobs achieve stable resource patterns." and "PAB
incurs additional scheduling waiting time in order to profile scheduled job's stable
performance, this results in a total of n jobs multiply by T_wait".

Our reading, as a simulator policy (it needs the simulator's requeue hook: a method returns
``extra["requeue"]``, the running jobs to move back to the queue, and ``extra["watch_at"]``,
a time to be called again even with nothing pending; ``dlsched.simulate.engine``):

* **Placement**: the bin packing of OBP (jobs in queue order; any GPU whose free memory
  holds the job; the least-loaded, i.e. most free memory, first; each server's CPU/RAM
  respected). One job per round when ``serial`` (default): the next placement waits until
  the last placed job's warm-up has passed, so n jobs cost n x T_wait as the paper says.
* **Probe**: after ``warmup_s`` seconds (default 60 s: the warm-up is there "so all DL
  jobs achieve stable resource patterns", so it lasts to the end of the stated 0-60 s;
  docs/horus.md, "Readings audited against the text")
  the placed job's speed (its rate over its solo rate, which the simulator exposes as
  ``RunningJob.extra["rate_factor"]``) and that of every job it joined on its GPUs are
  compared with their speed before the placement (the new job: 1.0). If any of them fell
  to ``threshold`` (0.5) or less of it, the new job is requeued: its GPUs are freed and
  the warm-up's progress is lost (the simulator restarts it from its full work).
* A requeued job is placed only on idle GPUs afterwards (our choice: it guarantees that a
  job is requeued at most once, so the policy cannot loop).

State between rounds (``policy_state``): the open probes and the requeued jobs that still
wait (a job requeued again is added again).

The simulator runs the same round on its live view (``horus_pab_live``, registered here);
the two share the round's parts (``horus_pab_round``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from dlsched.instance import Instance
from dlsched.method_support import decision_from_indices, heuristic_method
from dlsched.registry import BOOL, MethodSpec, register_method
from dlsched.result import MethodOutput, Status
from dlsched.state import ClusterState, ViewPolicy, register_view_policy

from .horus_pab_live import can_start, pab_live
from .horus_pab_round import blocked_gpus, check_settings, judge, place


def _factors(instance: Instance) -> Mapping[str, float]:
    """Current speed of every running job relative to its solo speed (1.0 if unknown).

    In the simulator (running jobs that answer ``rate_factor`` per job) it is read job by
    job when asked, instead of building every running job.
    """
    if hasattr(instance.running, "rate_factor"):
        return _RunningFactors(instance.running)
    return {r.job: float(r.extra.get("rate_factor", 1.0)) for r in instance.running}


class _RunningFactors(Mapping[str, float]):
    """Job id -> rate factor of the running jobs, each read once, when asked."""

    def __init__(self, running: Any) -> None:
        self._running = running
        self._seen: dict[str, float | None] = {}

    def _get(self, job_id: str) -> float | None:
        if job_id not in self._seen:
            self._seen[job_id] = self._running.rate_factor(job_id)
        return self._seen[job_id]

    def __contains__(self, job_id: object) -> bool:
        return isinstance(job_id, str) and self._get(job_id) is not None

    def __getitem__(self, job_id: str) -> float:
        value = self._get(job_id)
        if value is None:
            raise KeyError(job_id)
        return value

    def __iter__(self) -> Iterator[str]:
        return (r.job for r in self._running)

    def __len__(self) -> int:
        return len(self._running)


def _holders(instance: Instance) -> Callable[[int], list[str]]:
    """GPU index -> ids of the running jobs on it (the simulator answers per GPU)."""
    jobs_on = getattr(instance.running, "jobs_on", None)
    if jobs_on is not None:
        return lambda g: list(jobs_on(g))
    ids = instance.cluster.gpu_index
    table: dict[int, list[str]] = {}
    for r in instance.running:
        for g in r.gpus:
            table.setdefault(ids[g], []).append(r.job)
    return lambda g: list(table.get(g, ()))


def pab(instance: Instance, *, warmup_s: float = 60.0, threshold: float = 0.5,
        serial: bool = True, policy_state: dict[str, Any] | None = None) -> MethodOutput:
    """One PAB round: judge the probes whose warm-up is over, then place (module docstring).

    Parameters
    ----------
    instance
        The snapshot (pending queue, running jobs with their ``rate_factor``).
    warmup_s
        Seconds between a placement and its performance check (T_wait).
    threshold
        Requeue when a job's speed falls to this share of its speed before the placement.
    serial
        Place one job per round and none while a probe is open.
    policy_state
        What the previous round returned (open probes, requeued jobs).

    Returns
    -------
    MethodOutput
        The decision; ``extra``: ``requeue`` (job ids), ``watch_at`` (next probe time),
        ``policy_state``.
    """
    check_settings(warmup_s, threshold)
    state_in = policy_state or {}
    probes: dict[str, list] = {k: list(v) for k, v in state_in.get("probes", {}).items()}
    requeued: set[str] = set(state_in.get("requeued", ()))
    t = instance.time
    factors: list[Mapping[str, float]] = []  # read the running jobs once, and only if needed

    def factor(job_id: str) -> float | None:
        if not factors:
            factors.append(_factors(instance))
        return factors[0].get(job_id)

    requeue = judge(probes, t, factor, threshold)
    requeued.update(requeue)
    placed: list[tuple[int, list[int]]] = []
    if not (serial and probes):
        state = ClusterState.of(instance)
        blocked = None
        if requeue:
            blocked = blocked_gpus(len(state.busy), requeue, instance.running,
                                   instance.cluster.gpu_index)
        index = instance.job_index
        rows = [index[job_id] for job_id in requeued if job_id in index]
        waiting = None
        if rows:
            waiting = np.zeros(len(instance.jobs), dtype=bool)
            waiting[rows] = True
        placed, opened = place(state, instance.jobs, instance.job_columns, waiting, serial,
                               factor, lambda: _holders(instance), blocked)
        for job_id, before in opened.items():
            probes[job_id] = [t + warmup_s, before]
    decision = decision_from_indices(instance, placed)
    # a requeued job matters only while it waits: once placed it is on idle GPUs, and if
    # it is requeued again it is added again. So the jobs placed now leave the list (they
    # do not wait at the next round); the list is asked only about waiting jobs, so what
    # it keeps beyond them changes no decision. Unchanged, it is passed on as it came.
    placed_ids = {p.job for p in decision.placements}
    kept = state_in.get("requeued", ())
    if requeue or not placed_ids.isdisjoint(requeued) or not isinstance(kept, list):
        kept = sorted(requeued - placed_ids)
    extra: dict[str, Any] = {
        "requeue": requeue,
        "policy_state": {"probes": probes, "requeued": kept},
    }
    if probes:
        extra["watch_at"] = min(p[0] for p in probes.values())
    return MethodOutput(decision=decision, status=Status.FEASIBLE, extra=extra)


register_method(MethodSpec(
    "horus", "pab", "baseline",
    heuristic_method(pab, ("warmup_s", "threshold", "serial", "policy_state"),
                     {"warmup_s": ("float", 0, None), "threshold": ("float>", 0, 1),
                      "serial": BOOL, "policy_state": ("mapping", None, None)},
                     ("policy_state",)),
    summary="Performance-aware Bin Packing: OBP packing, requeue a job whose placement "
            "halves a job's speed after a warm-up (simulator policy)"))


# the simulator's fast form (in this module: the simulator looks it up after importing the
# method's module)
register_view_policy(ViewPolicy("horus", "pab", pab_live, can_start,
                                frozenset({"warmup_s", "threshold", "serial"}),
                                stateful=True, hooks=True, guard_state=True))
