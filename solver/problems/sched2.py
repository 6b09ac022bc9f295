"""SCHED²: locality-aware selection of exclusive-GPU DL training jobs (Luan et al., seed 003).

Setting (Sec. III-A): N servers with M GPUs each; every job asks for a fixed number of
GPUs which it holds exclusively from start to completion; its speed depends on how its
GPUs are spread over servers (its *locality sensitivity*, Fig. 1).

Locality model (our reading of "k placements from centrated to scattered", Sec. III-B).
A job's slowdown on a placement grows linearly with the share of its GPU *peers* that sit
on another server::

    c = 1 - sum_s n_s (n_s - 1) / (n (n - 1))        (n_s GPUs of the job on server s)
    slowdown = 1 + (S - 1) * c / C_REF,   C_REF = 2/3

``S`` is the model's sensitivity: its slowdown for 4 GPUs split 2 + 2 over two servers,
where c = 2/3 (Fig. 1: VGG16 5.9, Transformer 2.7, DeepSpeech 1.6, Inception3 1.4). One
server gives c = 0 (no slowdown), one GPU per server gives c = 1. This is the same
"share of remote peers" that GENIE's Comm (Eq. 8) uses, so the two models agree in shape.
The paper's k = 4 profile of a job is :func:`locality_profile`: its slowdown when its GPUs
span the fewest possible servers, then 2x, 4x and 8x as many (capped at one GPU each).

Snapshot objective (ours; the paper scores whole schedules, not snapshots): maximize the
*effective GPUs started*, ``sum over placed jobs of num_gpus / slowdown`` — each started
job counts with the GPUs it uses, discounted by how much its placement slows it down.

Parameters (``params``): ``locality`` maps model name to S (≥ 1); models not listed use
the built-in table ``SENSITIVITY`` (paper values; ResNet-50 from the Gavel measurements,
AlexNet assumed, see docs/simulator.md); a job whose model is unknown is an input error.
``gpus_per_server`` is not a parameter: it is read from the cluster.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .base import Problem, Violation, register_problem
from .params_cache import kept_per_object

if TYPE_CHECKING:
    from ..decision import Decision
    from ..instance import Instance
    from ..jobs import Job

C_REF = 2.0 / 3.0
"""Remote-peer share of 4 GPUs split 2 + 2, where the paper measures its sensitivities."""

SENSITIVITY: dict[str, float] = {
    "vgg16": 5.9,  # Fig. 1
    "transformer": 2.7,  # Fig. 1
    "deepspeech": 1.6,  # Fig. 1
    "inception3": 1.4,  # Fig. 1
    # Not in Fig. 1. ResNet-50: Gavel's V100 ratio of 4 workers packed vs one per server,
    # median over batch sizes 1.0039 at c = 1 (solver/data/gavel_tables.json), i.e.
    # 1 + 0.0039 * 2/3 = 1.0026 at c = 2/3: practically insensitive.
    "resnet50": 1.0026,
    # AlexNet: not measured anywhere we have; assumed as sensitive as VGG16's family
    # midpoint (large fully connected layers, a high transfer/compute ratio). An assumption.
    "alexnet": 3.5,
    # a job that does not care where its GPUs are
    "insensitive": 1.0,
}


def remote_peer_share(counts: Sequence[int] | np.ndarray) -> float:
    """Share c of a job's GPU peers that sit on another server (0 for one GPU)."""
    values = counts.tolist() if isinstance(counts, np.ndarray) else list(counts)
    if all(type(v) is int for v in values) and sum(values) < _EXACT:
        # integers below 2**26: every sum and product below is exact in float64 too, and
        # int / int rounds as the float division does, so these are numpy's numbers
        n = sum(values)
        if n <= 1:
            return 0.0
        return 1.0 - sum(v * (v - 1) for v in values) / (n * (n - 1))
    array = np.asarray(values, dtype=float)
    n = array.sum()
    if n <= 1:
        return 0.0
    return float(1.0 - (array * (array - 1)).sum() / (n * (n - 1)))


_EXACT = 2**26
"""Below this many GPUs, n (n - 1) is an integer that float64 holds exactly."""


def locality_slowdown(sensitivity: float, counts: Sequence[int] | np.ndarray) -> float:
    """Slowdown (≥ 1) of a job with sensitivity S whose GPUs per server are ``counts``."""
    return 1.0 + (sensitivity - 1.0) * remote_peer_share(counts) / C_REF


def spread_counts(gpus: int, servers: int) -> list[int]:
    """GPUs per server when ``gpus`` are split as evenly as possible over ``servers``."""
    servers = max(1, min(servers, gpus))
    base, extra = divmod(gpus, servers)
    return [base + 1] * extra + [base] * (servers - extra)


def locality_profile(sensitivity: float, gpus: int, gpus_per_server: int,
                     k: int = 4) -> tuple[float, ...]:
    """The k-placement profile of Sec. III-B: slowdowns from packed to scattered.

    Placement i spans ``min(gpus, best * 2**i)`` servers (best = ceil(gpus / M)), the GPUs
    split evenly.
    """
    best = math.ceil(gpus / gpus_per_server)
    return tuple(
        locality_slowdown(sensitivity, spread_counts(gpus, min(gpus, best * 2**i)))
        for i in range(k)
    )


@dataclass(frozen=True)
class Sched2Params:
    """Parsed ``params`` of a SCHED² instance."""

    locality: Mapping[str, float]

    def sensitivity(self, model: str | None) -> float:
        return self.locality[model if model is not None else "insensitive"]


@kept_per_object
def parse_sched2_params(params: Mapping[str, Any]) -> Sched2Params:
    """Validate the ``params`` object of a SCHED² instance (kept per params object:
    :func:`~dlsched.problems.params_cache.kept_per_object`; callers only read it)."""
    for key in params:
        if key != "locality":
            raise InputError(f"unknown parameter {key!r}", field=f"params.{key}",
                             fix="SCHED² takes only 'locality'")
    table = dict(SENSITIVITY)
    given = params.get("locality", {})
    if not isinstance(given, Mapping):
        raise InputError("locality must be an object", field="params.locality",
                         fix='write {"model": sensitivity, ...}')
    for model, value in given.items():
        if not isinstance(value, int | float) or not value >= 1.0:
            raise InputError(f"sensitivity {value!r}", field=f"params.locality.{model}",
                             fix="a number >= 1 (slowdown of 4 GPUs over two servers)")
        table[model] = float(value)
    return Sched2Params(table)


SUBMIT_TOL = 1e-9
"""Seconds by which a job's submit time may exceed the snapshot time (float noise)."""


def is_submitted(instance: Instance, job: Job) -> bool:
    """True when ``job`` is in the queue at the snapshot time ``instance.time``.

    A SCHED² instance is both a workload (every job with its submit time, for the offline
    schedules and the simulator) and a snapshot at ``instance.time``: a snapshot decision
    starts only jobs submitted by then.
    """
    return job.submit_time <= instance.time + SUBMIT_TOL


def submitted_part(instance: Instance) -> Instance:
    """``instance`` with only the jobs submitted by its time (itself when all are): what a
    snapshot method may start."""
    jobs = tuple(j for j in instance.jobs if is_submitted(instance, j))
    return instance if len(jobs) == len(instance.jobs) else instance.replace(jobs=jobs)


def placement_counts(instance: Instance, gpu_ids: Sequence[str]) -> np.ndarray:
    """GPUs per locality group (only groups used) of a placement given by GPU ids: the
    server, unless the topology graph's ``locality_level`` names another level."""
    c = instance.cluster
    groups = c.gpu_locality_group[[c.gpu_index[g] for g in gpu_ids]].tolist()
    # np.unique(groups, return_counts=True)[1], counted in a dict: a placement has a few
    # GPUs, for which numpy's sort costs ~20x more
    per_group: dict[int, int] = {}
    for k in groups:
        per_group[k] = per_group.get(k, 0) + 1
    return np.array([per_group[k] for k in sorted(per_group)], dtype=np.intp)


# ------------------------------------------------------------------- snapshot bound
def _packed_counts(demand: int, idle_per_group: np.ndarray) -> list[int] | None:
    """GPUs per group when ``demand`` fills the groups with the most idle GPUs first."""
    counts, left = [], demand
    for idle in sorted(idle_per_group.tolist(), reverse=True):
        if left == 0:
            break
        take = min(idle, left)
        if take > 0:
            counts.append(take)
            left -= take
    return counts if left == 0 else None


def effective_gpus_bound(instance: Instance) -> float:
    """An upper bound on the effective GPUs (the SCHED² objective) of any valid decision.

    The snapshot relaxed to a knapsack: each submitted job j is worth at most ``v_j =
    num_gpus / s_j``, ``s_j`` the smallest locality slowdown any placement on the idle GPUs
    can give it, and the started jobs' GPUs fit in the idle GPUs (memory, CPU and the other
    jobs' placements relaxed). ``s_j`` comes from filling the locality groups with the most
    idle GPUs first: the slowdown falls as Σ n_s² grows (:func:`remote_peer_share`), and a
    convex sum under per-group caps is largest when the largest groups are filled first.
    The knapsack is solved exactly by dynamic programming over idle GPU counts.

    Parameters
    ----------
    instance
        A SCHED² snapshot.

    Returns
    -------
    float
        The optimum of the knapsack relaxation (0 when no submitted job fits on the idle
        GPUs).
    """
    params = parse_sched2_params(instance.params)
    cluster = instance.cluster
    idle_gpus = ~instance.gpu_busy
    groups = cluster.gpu_locality_group[idle_gpus]
    idle_per_group = np.unique(groups, return_counts=True)[1] if groups.size else np.zeros(0)
    capacity = int(idle_gpus.sum())
    best = np.zeros(capacity + 1)  # best[c]: most value with at most c GPUs
    for job in submitted_part(instance).jobs:
        need = int(job.num_gpus)
        counts = _packed_counts(need, idle_per_group) if need <= capacity else None
        if counts is None:
            continue
        value = need / locality_slowdown(params.sensitivity(job.model), counts)
        best[need:] = np.maximum(best[need:], best[:capacity + 1 - need] + value)
    return float(best[capacity])


class Sched2Problem(Problem):
    """SCHED² (paper seed 001): start pending jobs on exclusive GPUs, locality-aware.

    Jobs need ``num_gpus`` and ``duration``; GPUs are exclusive; the snapshot objective
    (maximized) is the effective GPUs started, Σ num_gpus / locality slowdown.
    """

    name = "sched2"
    sense = "max"
    job_fields = ("num_gpus", "duration")
    exclusive_gpus = True
    default_locality = "sched2"

    def parse_params(self, params: Mapping[str, Any]) -> Sched2Params:
        """Parse ``params`` (per-model locality sensitivities).

        Parameters
        ----------
        params
            The instance's ``params`` mapping.

        Returns
        -------
        Sched2Params
            The typed parameters (:func:`parse_sched2_params`).
        """
        return parse_sched2_params(params)

    def check_instance(self, instance: Instance) -> None:
        """The base checks, a known locality sensitivity per model and durations > 0.

        Parameters
        ----------
        instance
            The instance being loaded.

        Returns
        -------
        None

        Raises
        ------
        InputError
            A job's model has no sensitivity or its duration is not positive.
        """
        super().check_instance(instance)
        p = self.parse_params(instance.params)
        for i, job in enumerate(instance.jobs):
            if job.model is not None and job.model not in p.locality:
                raise InputError(
                    f"job {job.id!r} has model {job.model!r} with no locality sensitivity",
                    field=f"jobs[{i}].model",
                    fix=f"add it to params.locality or use one of {sorted(p.locality)}",
                )
            if job.duration is not None and job.duration <= 0:
                raise InputError(f"duration = {job.duration}", field=f"jobs[{i}].duration",
                                 fix="a solo run time > 0 seconds")

    def check_decision(self, instance: Instance, decision: Decision) -> list[Violation]:
        """A snapshot placement starts at the snapshot time, and only a submitted job.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A decision that passes the generic rules.

        Returns
        -------
        list of Violation
            One ``start`` violation per untimed placement starting at another time, one
            ``release`` violation per job started before its submit time.
        """
        out = []
        for p in decision.placements:
            if p.end is not None:
                continue  # a timed placement of a schedule: the validator's schedule rules
            job = instance.job(p.job)
            if not is_submitted(instance, job):
                out.append(Violation("release", p.job, f"submitted at {job.submit_time:g}, "
                                     f"after the snapshot time {instance.time:g}"))
            if p.start is not None and abs(p.start - instance.time) > 1e-9:
                out.append(Violation("start", p.job, f"start {p.start} is not the snapshot "
                                                     f"time {instance.time}"))
        return out

    def snapshot_bound(self, instance: Instance) -> float:
        """The knapsack bound of :func:`effective_gpus_bound`.

        Parameters
        ----------
        instance
            The snapshot.

        Returns
        -------
        float
            An upper bound on the effective GPUs any valid decision starts.
        """
        return effective_gpus_bound(instance)

    schedule_objectives = {"makespan": "min", "weighted_jct": "min", "qos": "max",
                           "effectiveness": "max"}

    def evaluate_schedule(self, instance: Instance, decision: Decision, objective: str
                          ) -> float:
        """The base objectives, and ``effectiveness``: the mean over jobs of Eq. 2,
        ``E = duration / (end − submit)`` (ideal run time over time in the system, the
        simulator's ``effectiveness`` column).

        Parameters
        ----------
        instance
            The workload.
        decision
            A valid timed decision.
        objective
            One of :attr:`schedule_objectives`.

        Returns
        -------
        float
            The objective value (mean E is a fraction, 1 = no wait and no slowdown).
        """
        if objective != "effectiveness":
            return super().evaluate_schedule(instance, decision, objective)
        ends = {p.job: float(p.end) for p in decision.placements}
        return float(np.mean([float(j.duration) / (ends[j.id] - j.submit_time)
                              for j in instance.jobs]))

    def schedule_duration(self, instance: Instance, job_id: str, gpus: tuple[str, ...]
                          ) -> float:
        """``duration`` × locality slowdown of the placement / speed of its slowest GPU.

        Parameters
        ----------
        instance
            The workload (jobs with submit times).
        job_id
            The job's id.
        gpus
            The GPU ids of the placement.

        Returns
        -------
        float
            Seconds.
        """
        p = self.parse_params(instance.params)
        job = instance.job(job_id)
        c = instance.cluster
        speed = float(c.gpu_speed[[c.gpu_index[g] for g in gpus]].min())
        slow = locality_slowdown(p.sensitivity(job.model), placement_counts(instance, gpus))
        return float(job.duration) * slow / speed

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        """Effective GPUs started (maximized).

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        float
            Σ over placements of num_gpus / locality slowdown of the placement.
        """
        p = self.parse_params(instance.params)
        total = 0.0
        for pl in decision.placements:
            job = instance.job(pl.job)
            total += job.num_gpus / locality_slowdown(
                p.sensitivity(job.model), placement_counts(instance, pl.gpus))
        return total

    def report_metrics(self, instance: Instance, decision: Decision) -> dict[str, float]:
        """Execution effectiveness and makespan of the jobs a decision starts.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        dict of str to float
            ``effective GPUs`` (the objective), ``GPUs started``, ``execution
            effectiveness`` (effective / started GPUs, 1 = no locality slowdown; NaN when
            nothing starts) and ``longest started job s`` (the largest duration ×
            locality slowdown among the started jobs: how long after the snapshot the last
            of them ends; 0 when nothing starts; not a makespan of the workload).
        """
        p = self.parse_params(instance.params)
        effective = started = longest = 0.0
        for pl in decision.placements:
            job = instance.job(pl.job)
            slow = locality_slowdown(p.sensitivity(job.model),
                                     placement_counts(instance, pl.gpus))
            effective += job.num_gpus / slow
            started += job.num_gpus
            longest = max(longest, float(job.duration) * slow)
        return {"effective GPUs": effective, "GPUs started": started,
                "execution effectiveness": effective / started if started else math.nan,
                "longest started job s": longest}


register_problem(Sched2Problem())
