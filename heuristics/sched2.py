"""SCHED² baselines: the packing placement of Fig. 2 and the job-selection rules of Sec. IV-A.

Packing (Fig. 2): take the server with the *fewest* free GPUs that still holds the whole
remaining demand; if none does, take *all* free GPUs of the server with the *most* free
GPUs and repeat for the rest. Ties go to the server listed first. GPUs inside a server are
taken in cluster order.

Selection rules (one job at a time, each placed by packing, until one does not fit):
``fifo`` queue order (a snapshot's queue is in submission order); ``sif`` shortest ideal
time (``duration``) first; ``dsif`` like SIF, but a job whose packing placement spans more
servers than its best locality (ceil(num_gpus / GPUs per server)) is delayed — skipped this
round — at most 3 times (the count is carried across rounds in ``policy_state``, which the
simulator hands back); ``saf`` shortest actual time first, actual = duration × locality
slowdown of the job's packing placement on the current free GPUs (the oracle of the paper),
recomputed after every placement; ``lrf`` fewest GPUs first; ``spf`` smallest num_gpus ×
duration.

Our readings: ties break by arrival, then queue position; a rule stops at the first job
(in its order) that does not fit into the free GPUs — it does not backfill — unless
``backfill=True``; SAF only ranks jobs that fit (an unplaceable job has no actual time),
so it never blocks; ``window=J`` restricts every rule to the J oldest pending jobs (the RL
agent of the paper sees J = 10).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.jobs import Job
from dlsched.method_support import fifo_can_start, heuristic_method
from dlsched.problems.sched2 import locality_slowdown, parse_sched2_params, submitted_part
from dlsched.registry import BOOL, MethodSpec, register_method
from dlsched.result import MethodOutput, Status
from dlsched.state import ViewPolicy, register_view_policy

from .sched2_live import dsif_live, saf_live
from .sched2_view import MAX_DELAYS, STATIC_KEYS, _gpus_only, _packing_live, some_job_fits


def packing(free: list[list[int]], demand: int, counts: np.ndarray | None = None
            ) -> list[int] | None:
    """GPU indices chosen by the packing policy of Fig. 2, or None if ``demand`` > free.

    ``counts`` (optional, int64) is how many of each server's free GPUs may be used (the
    first ones of ``free[s]``): ``[len(f) for f in free]`` by default, fewer where a job's
    CPU or RAM share does not fit them all (:class:`ServerRoom`).
    """
    if counts is None:
        counts = np.fromiter(map(len, free), dtype=np.int64, count=len(free))
    if demand > 0 and int(counts.max(initial=0)) >= demand:
        # one server holds the job: the loop's first step, without its copy of counts
        s = int(np.argmin(np.where(counts >= demand, counts, _NEVER)))
        return free[s][:demand]
    if int(counts.sum()) < demand:
        return None
    chosen: list[int] = []
    need = demand
    left = counts.copy()
    never = _NEVER
    while need > 0:
        fits = left >= need
        if fits.any():
            # fewest free GPUs that hold the rest; argmin's first hit = the lowest index
            s = int(np.argmin(np.where(fits, left, never)))
            off = int(counts[s] - left[s])
            chosen += free[s][off:off + need]
            left[s] -= need
            need = 0
        else:
            s = int(np.argmax(left))  # most free GPUs; the first hit = the lowest index
            off = int(counts[s] - left[s])
            chosen += free[s][off:off + int(left[s])]
            need -= int(left[s])
            left[s] = 0
    return chosen


_NEVER = np.iinfo(np.int64).max


class ServerRoom:
    """What is left on each server while one decision is built: idle GPUs (cluster order),
    CPU and RAM. On a server, a job may take at most the idle GPUs whose CPU and RAM shares
    (``cpu_per_gpu``, ``ram_gb_per_gpu`` each) still fit there, so every placement keeps
    the nodes' limits that the validator checks."""

    def __init__(self, instance: Instance) -> None:
        self.free = instance.idle_lists()  # = free_gpus_by_server(instance)
        self.counts = instance.idle_counts.astype(np.int64)  # a copy: take() changes it
        cpu_used, ram_used = instance.node_usage
        self.cpu = instance.cluster.node_cpu - cpu_used
        self.ram = instance.cluster.node_ram_gb - ram_used
        self.node_of = instance.cluster.gpu_node

    def usable(self, job: Job) -> np.ndarray:
        """GPUs per server that ``job`` may take now (read-only: do not change it)."""
        counts = self.counts
        for need, left in ((job.cpu_per_gpu, self.cpu), (job.ram_gb_per_gpu, self.ram)):
            if need > 0:
                # a hair below what the validator allows (+1e-6), so a fit is never refused
                counts = np.minimum(counts, np.floor((left + 1e-9) / need).clip(0).astype(np.int64))
        return counts

    def place(self, job: Job) -> list[int] | None:
        """The packing placement of ``job`` within what is left, or None."""
        return packing(self.free, int(job.num_gpus), self.usable(job))

    def take(self, job: Job, gpus: list[int]) -> None:
        """Give ``gpus`` (and their CPU and RAM shares) to ``job``."""
        for g in gpus:
            s = self.node_of[g]
            self.free[s].remove(g)
            self.counts[s] -= 1
            self.cpu[s] -= job.cpu_per_gpu
            self.ram[s] -= job.ram_gb_per_gpu


def _servers(gpus: list[int], node_of: np.ndarray) -> np.ndarray:
    per_node = np.bincount(node_of[gpus])  # = np.unique(..., return_counts=True)[1]
    return per_node[per_node > 0]


def _start_in_order(ordered: list[Job], room: ServerRoom, per_server: int, *, backfill: bool,
                    delays: dict[str, int] | None) -> list[tuple[Job, list[int]]]:
    """Start ``ordered`` jobs one at a time, each by packing, until one does not fit (or,
    with ``backfill``, skipping it); ``delays`` (DSIF) skips a job whose placement spans
    more servers than its best locality, at most :data:`MAX_DELAYS` times, counting."""
    placed: list[tuple[Job, list[int]]] = []
    for job in ordered:
        gpus = room.place(job)
        if gpus is None:
            if backfill:
                continue
            break
        best = math.ceil(job.num_gpus / per_server)
        if (delays is not None and len(_servers(gpus, room.node_of)) > best
                and delays.get(job.id, 0) < MAX_DELAYS):
            delays[job.id] = delays.get(job.id, 0) + 1
            continue
        room.take(job, gpus)
        placed.append((job, gpus))
    return placed


def _decision(instance: Instance, placed: list[tuple[Job, list[int]]]) -> Decision:
    ids = instance.cluster.gpu_ids
    return Decision.of(Placement(job.id, tuple(ids[g] for g in gpus)) for job, gpus in placed)


def start_in_order(instance: Instance, order: list[int], *, backfill: bool = False) -> Decision:
    """The decision of starting ``instance.jobs[i]`` for ``i`` in ``order``, each placed by
    packing, until one does not fit (with ``backfill``: skipping the ones that do not).

    Parameters
    ----------
    instance
        The snapshot.
    order
        Indices into ``instance.jobs``, in the order to try them.
    backfill
        Skip a job that does not fit instead of stopping.

    Returns
    -------
    Decision
        The started jobs' placements.
    """
    placed = _start_in_order([instance.jobs[i] for i in order], ServerRoom(instance),
                             int(instance.cluster.node_gpu_count.max()), backfill=backfill,
                             delays=None)
    return _decision(instance, placed)


def select(instance: Instance, rule: str, *, backfill: bool = False, window: int | None = None,
           policy_state: dict[str, int] | None = None) -> tuple[Decision, dict[str, int]]:
    """Run selection rule ``rule`` with packing placement on a snapshot.

    Returns the decision and the DSIF delay counts of the jobs still pending.
    """
    jobs = list(enumerate(instance.jobs))
    if window is not None:
        jobs = sorted(jobs, key=lambda ij: (ij[1].submit_time, ij[0]))[:window]
    params = parse_sched2_params(instance.params)
    node_of = instance.cluster.gpu_node
    per_server = int(instance.cluster.node_gpu_count.max())
    room = ServerRoom(instance)
    delays = dict(policy_state or {})
    placed: list[tuple[Job, list[int]]] = []

    if rule == "fifo" or rule in STATIC_KEYS:
        # the queue is in submission order, so FIFO needs no sort; ``jobs`` is in queue
        # order (with a window, in (arrival, position) order), so a stable sort on
        # (key, arrival) breaks the last ties
        queue = [job for _, job in jobs]
        ordered = queue if rule == "fifo" else sorted(queue, key=STATIC_KEYS[rule])
        placed = _start_in_order(ordered, room, per_server,
                                 backfill=backfill, delays=delays if rule == "dsif" else None)
    elif rule == "saf":
        remaining = dict(jobs)
        while remaining:
            best_key, best_pick = None, None
            # packing depends only on the demand and the per-GPU CPU and RAM shares
            by_shape: dict[tuple[int, float, float], list[int] | None] = {}
            spans: dict[tuple[int, float, float], np.ndarray] = {}  # and so do its spans
            slowdown: dict[tuple[tuple[int, float, float], float], float] = {}
            for i, job in remaining.items():
                shape = (job.num_gpus, job.cpu_per_gpu, job.ram_gb_per_gpu)
                if shape not in by_shape:
                    by_shape[shape] = room.place(job)
                gpus = by_shape[shape]
                if gpus is None:
                    continue
                sens = params.sensitivity(job.model)
                key_s = (shape, sens)
                if key_s not in slowdown:
                    if shape not in spans:
                        spans[shape] = _servers(gpus, node_of)
                    slowdown[key_s] = locality_slowdown(sens, spans[shape])
                actual = job.duration * slowdown[key_s]
                key = (actual, job.submit_time, i)
                if best_key is None or key < best_key:
                    best_key, best_pick = key, (i, gpus)
            if best_pick is None:
                break
            i, gpus = best_pick
            room.take(remaining[i], gpus)
            placed.append((remaining.pop(i), gpus))
    else:
        raise InputError(f"unknown rule {rule!r}", field="rule", fix=f"use {RULES}")
    decision = _decision(instance, placed)
    if not delays:
        return decision, delays
    started = {job.id for job, _ in placed}
    pending = instance.job_index
    return decision, {k: v for k, v in delays.items() if k in pending and k not in started}


RULES = ("fifo", "sif", "dsif", "saf", "lrf", "spf")
_SUMMARY = {
    "fifo": "arrival order, packing placement",
    "sif": "shortest ideal time first, packing placement",
    "dsif": "SIF, delaying a job up to 3 times when it cannot get its best locality",
    "saf": "shortest actual (locality-slowed) time first, packing placement",
    "lrf": "fewest GPUs first, packing placement",
    "spf": "smallest GPUs x ideal time first, packing placement",
}


def _method(rule: str):
    def run_rule(instance: Instance, **options) -> MethodOutput:
        decision, delays = select(submitted_part(instance), rule, **options)
        extra = {"policy_state": delays} if rule == "dsif" else {}
        return MethodOutput(decision, Status.FEASIBLE, extra=extra)

    return heuristic_method(run_rule, ("backfill", "window", "policy_state"),
                            {"backfill": BOOL, "window": ("int", 1, None),
                             "policy_state": ("mapping", None, None)},
                            ("window", "policy_state"))


for _rule in RULES:
    register_method(MethodSpec("sched2", _rule, "heuristic" if _rule in ("dsif", "saf")
                               else "baseline", _method(_rule), summary=_SUMMARY[_rule]))


# ---------------------------------------------------------------------- simulator fast form
def _start_live(view, ordered: Iterable[Job], backfill: bool) -> Decision:
    """:func:`_start_in_order` (no delays) with packing on the live view."""
    taken: dict[int, int] = {}
    left_total = view.idle_count
    ids = view.cluster.gpu_ids
    placed = []
    for job in ordered:
        got = _packing_live(view, job.num_gpus, taken, left_total)
        if got is None:
            if backfill:
                continue
            break
        gpus, local = got
        for s, k in local.items():
            taken[s] = taken.get(s, 0) + k
        left_total -= len(gpus)
        placed.append(Placement(job.id, tuple(ids[g] for g in gpus)))
    return Decision.of(placed)


def fifo_live(view, *, backfill: bool = False) -> Decision:
    """``fifo`` with packing on the simulator's live view (same decision as on a snapshot)."""
    return _start_live(view, view.queue(), backfill)


def _sorted_live(rule: str):
    key = STATIC_KEYS[rule]
    name = ("sched2", rule)

    def decide(view, *, backfill: bool = False) -> Decision:
        # the queue kept in the rule's order (the keys are static): no sort per call
        jobs = view.workload_jobs
        return _start_live(view, map(jobs.__getitem__, view.queue_sorted(name, key)),
                           backfill)

    decide.__doc__ = f"``{rule}`` with packing on the live view (same decision as on a snapshot)."
    return decide


register_view_policy(ViewPolicy("sched2", "fifo", fifo_live, fifo_can_start,
                                frozenset({"backfill"}), _gpus_only))
for _rule in ("sif", "lrf", "spf"):
    register_view_policy(ViewPolicy("sched2", _rule, _sorted_live(_rule), some_job_fits,
                                    frozenset({"backfill"}), _gpus_only))
for _rule, _decide in (("dsif", dsif_live), ("saf", saf_live)):  # stateful fast forms
    register_view_policy(ViewPolicy("sched2", _rule, _decide, some_job_fits,
                                    frozenset({"backfill"}), _gpus_only, stateful=True))
