"""GENIE: QoS-aware placement of elastic DL tasks with ECT constraints (seed 000, Sec. 5).

A snapshot holds a homogeneous platform ⟨N servers, G GPUs each⟩, tasks already running
(exclusive GPUs) and a queue of waiting tasks. A decision starts some waiting tasks now,
each on a symmetric shape ⟨d_node, d_gpn⟩: d_node distinct servers with d_gpn GPUs each.
The performance model (latency, processing rate, cost, CER) is ``dlsched.problems.genie.model``,
its coefficients ``genie.coefficients``, the instance parameters ``genie.params`` and the
simulator's rate model ``genie.rate``.

Instance parameters (``params``), so that an instance file is self-contained:

* ``theta`` (default 0.4): θ of Eq. 10;
* ``coefficients``: per model name, the :class:`~dlsched.problems.genie.model.ModelCoefficients`
  fields (``b_sat`` null = no plateau). Missing: the shipped defaults
  (``solver/data/genie_coefficients.json``); generators embed them in the file.

Allowed shapes of a task: every ⟨a, g⟩ with a ≤ N, g ≤ G and a·g ≤ batch_size (a local
batch of at least one sample, Eq. 6).

Objective (maximize), one number::

    F = W · K + C

K = started tasks that meet their ECT (time + Lat(t, s) ≤ deadline; an urgent task never
counts, Eq. 9), C = Σ CER(t, s) over started tasks (Eq. 11), and W the smallest power of
ten strictly greater than C_max = Σ_t max_s CER(t, s) over the waiting tasks and their
allowed shapes.

Proof that F orders decisions lexicographically by (K, C): every decision has
0 ≤ C ≤ C_max < W (CER > 0, each task starts at most once on one shape). If K_A > K_B then,
K being an integer, K_A ≥ K_B + 1 and F_A ≥ W·K_A ≥ W·K_B + W > W·K_B + C_max ≥ F_B.
If K_A = K_B then F_A − F_B = C_A − C_B. Hence F_A > F_B iff (K_A, C_A) > (K_B, C_B)
lexicographically. W depends on the instance only, and ``genie_breakdown`` reports it.

Readings (see docs/genie.md): the deadline is a job field (generators set arrival + e of
Eq. 9); a task started at a snapshot starts at its ``time``; a placement's ``start`` must be
absent or equal to that time.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ...errors import InputError
from ..base import Problem, Violation, register_problem
from . import rate  # noqa: F401  (registers the "genie" rate model)
from .coefficients import ModelCoefficients, load_default_coefficients
from .model import (
    KINDS,
    QOS_CLASSES,
    Platform,
    Shape,
    Task,
    cer,
    feasible_shapes,
    latency,
    processing_rate,
)
from .params import DEFAULT_THETA, GenieParams, parse_genie_params, platform_of, task_of

if TYPE_CHECKING:
    from ...decision import Decision
    from ...instance import Instance
    from ...jobs import Job

ECT_TOL = 1e-6
"""Seconds of slack in ``time + latency <= deadline`` (absorbs float noise only)."""


def default_params() -> dict[str, Any]:
    """The ``params`` object generators embed: θ and the shipped coefficients."""
    coefs = load_default_coefficients()
    return {
        "theta": DEFAULT_THETA,
        "coefficients": {name: coefs[name].to_dict() for name in sorted(coefs)},
    }


@dataclass(frozen=True)
class ShapeOption:
    """One allowed shape of one waiting task and what the model predicts for it."""

    shape: Shape
    latency: float
    rate: float
    cer: float
    on_time: bool


@dataclass(frozen=True)
class GenieTable:
    """Per waiting task, its allowed shapes with latency, PR, CER and ECT verdict.

    The evaluator, the exact models and the heuristics all read this one table.
    """

    params: GenieParams
    platform: Platform
    options: tuple[tuple[ShapeOption, ...], ...]  # [job] -> shapes by (gpus, nodes)
    weight: float  # W of the objective (see the module docstring)

    def option(self, j: int, shape: Shape) -> ShapeOption | None:
        if type(shape) is Shape:  # compare the two fields first: cheaper than Shape.__eq__
            nodes, gpn = shape.nodes, shape.gpus_per_node
            for opt in self.options[j]:
                s = opt.shape
                if s.nodes == nodes and s.gpus_per_node == gpn and s == shape:
                    return opt
            return None
        for opt in self.options[j]:
            if opt.shape == shape:
                return opt
        return None


_TABLES: weakref.WeakKeyDictionary[Instance, GenieTable] = weakref.WeakKeyDictionary()


def genie_table(instance: Instance) -> GenieTable:
    """Allowed shapes of every waiting task with their predictions, and the weight W.

    Cached per instance (instances are immutable; the cache holds them weakly): the method,
    the checks and the evaluator of one ``solve()`` call share one table.
    """
    hit = _TABLES.get(instance)
    if hit is None:
        hit = _TABLES[instance] = _build_table(instance)
    return hit


def _build_table(instance: Instance) -> GenieTable:
    params = parse_genie_params(instance.params)
    platform = platform_of(instance, params.theta)
    options = []
    for job in instance.jobs:
        coef = params.coefficients[job.model]
        task = task_of(job)
        t = instance.time
        rows = _predictions(coef, task, platform, job.batch_size)
        if job.qos == "urgent":  # Eq. 12: an urgent task never meets its ECT
            options.append(tuple(late for _lat, _on_time, late in rows))
        else:
            limit = job.deadline + ECT_TOL
            options.append(tuple(on_time if t + lat <= limit else late
                                 for lat, on_time, late in rows))
    c_max = sum(max(o.cer for o in row) for row in options)
    return GenieTable(params, platform, tuple(options), lexicographic_weight(c_max))


_PREDICTIONS: dict[tuple, tuple[tuple[float, ShapeOption, ShapeOption], ...]] = {}
_PREDICTIONS_MAX = 50_000
_RATES: dict[tuple, tuple[tuple[Shape, float, float], ...]] = {}


def shape_rates(coef: ModelCoefficients, task: Task, platform: Platform,
                batch: float | None) -> tuple[tuple[Shape, float, float], ...]:
    """Per feasible shape of a task: (shape, PR of Eq. 5, CER of Eq. 11).

    PR and CER depend on the task's model, kind and batch, not on its iterations, so they
    are kept per (coefficients, kind, batch, platform): a workload of thousands of tasks
    has a few dozen such classes. Latency is ``task.work / PR + nu`` (Eq. 4,
    :func:`~dlsched.problems.genie.model.latency` computes it the same way).
    """
    key = (coef, task.kind, task.batch, platform, batch)
    hit = _RATES.get(key)
    if hit is None:
        if len(_RATES) >= _PREDICTIONS_MAX:
            _RATES.clear()
        hit = _RATES[key] = tuple(
            (shape, processing_rate(coef, task, shape), cer(coef, task, shape, platform))
            for shape in feasible_shapes(platform, batch=batch))
    return hit


_BY_JOB: dict[int, tuple[Job, ModelCoefficients, Platform, tuple]] = {}


def job_rates(coef: ModelCoefficients, job: Job, platform: Platform
              ) -> tuple[tuple[Shape, float, float], ...]:
    """:func:`shape_rates` of a GENIE job's task, looked up by the job's fields; kept per
    (job, coefficients, platform) objects too (a simulator asks about the same waiting
    tasks at every call, and hashing the dataclasses of the key costs more)."""
    mine = _BY_JOB.get(id(job))
    if mine is not None and mine[0] is job and mine[1] is coef and mine[2] is platform:
        return mine[3]
    hit = _RATES.get((coef, job.kind, job.batch_size, platform, job.batch_size))
    if hit is None:
        hit = shape_rates(coef, task_of(job), platform, job.batch_size)
    if len(_BY_JOB) >= 1 << 17:
        _BY_JOB.clear()
    _BY_JOB[id(job)] = (job, coef, platform, hit)
    return hit


def _predictions(coef: ModelCoefficients, task: Task, platform: Platform,
                 batch: float | None) -> tuple[tuple[float, ShapeOption, ShapeOption], ...]:
    """Per feasible shape of a task: (latency, its option if on time, its option if late).

    Latency, processing rate and CER are pure functions of (coefficients, task, shape,
    platform), so they are cached across calls — a simulator asks about the same waiting
    tasks at every event; only the ECT verdict (Eq. 12) depends on the time. The cache is
    emptied when it grows past ``_PREDICTIONS_MAX`` task entries.
    """
    key = (coef, task, platform, batch)
    hit = _PREDICTIONS.get(key)
    if hit is None:
        if len(_PREDICTIONS) >= _PREDICTIONS_MAX:
            _PREDICTIONS.clear()
        work, nu = task.work, coef.nu
        rows = []
        for shape, rate, c in shape_rates(coef, task, platform, batch):
            lat = work / rate + nu  # latency(coef, task, shape), Eq. 4
            rows.append((lat, ShapeOption(shape, lat, rate, c, True),
                         ShapeOption(shape, lat, rate, c, False)))
        hit = _PREDICTIONS[key] = tuple(rows)
    return hit


@lru_cache(maxsize=256)
def _feasible_set(platform: Platform, batch: float | None) -> frozenset[Shape]:
    """:func:`feasible_shapes` as a set, per (platform, batch)."""
    return frozenset(feasible_shapes(platform, batch=batch))


_FEASIBLE: dict[tuple[int, int, float | None, int, int], bool] = {}


def _feasible(platform: Platform, batch: float | None, shape: Shape) -> bool:
    """``shape in _feasible_set(platform, batch)``, kept per the numbers it depends on
    (``feasible_shapes`` reads the platform's nodes and GPUs per node, not θ): a
    simulator checks every placement, and hashing the dataclasses costs more."""
    key = (platform.nodes, platform.gpus_per_node, batch, shape.nodes, shape.gpus_per_node)
    hit = _FEASIBLE.get(key)
    if hit is None:
        if len(_FEASIBLE) >= 1 << 16:
            _FEASIBLE.clear()
        hit = _FEASIBLE[key] = shape in _feasible_set(platform, batch)
    return hit


def lexicographic_weight(c_max: float) -> float:
    """The smallest power of ten strictly greater than ``c_max`` (>= 1)."""
    k = 0 if c_max < 1 else math.floor(math.log10(c_max)) + 1
    w = 10.0 ** k
    while w <= c_max:  # guard against log10 rounding at exact powers
        w *= 10.0
    return w


_NODE_OF: dict[int, tuple[Any, dict[str, int], dict[tuple[str, ...], Shape | None]]] = {}
_SHAPES_MAX = 1 << 16


def _node_of_gpu(cluster: Any) -> tuple[dict[str, int], dict[tuple[str, ...], Shape | None]]:
    """(GPU id -> server index, GPU ids -> :func:`shape_of_gpus`), kept per cluster
    object (clusters are immutable)."""
    hit = _NODE_OF.get(id(cluster))
    if hit is None or hit[0] is not cluster:
        if len(_NODE_OF) >= 64:
            _NODE_OF.clear()
        node = cluster.gpu_node.tolist()
        hit = _NODE_OF[id(cluster)] = (cluster, {g: node[i] for g, i in
                                                  cluster.gpu_index.items()}, {})
    return hit[1], hit[2]


def shape_of_gpus(instance: Instance, gpus: tuple[str, ...]) -> Shape | None:
    """The symmetric shape formed by GPU ids, or None when the servers hold unequal counts."""
    node_of, shapes = _node_of_gpu(instance.cluster)
    # a simulator checks and times every placement: the same GPU sets come back
    key = gpus if type(gpus) is tuple else tuple(gpus)
    if key in shapes:
        return shapes[key]
    per_node: dict[int, int] = {}
    for g in gpus:
        n = node_of[g]
        per_node[n] = per_node.get(n, 0) + 1
    shape = None
    if per_node and len(set(per_node.values())) == 1:
        shape = Shape(len(per_node), next(iter(per_node.values())))
    if len(shapes) >= _SHAPES_MAX:
        shapes.clear()
    shapes[key] = shape
    return shape


@dataclass(frozen=True)
class GenieBreakdown:
    """The parts of a GENIE objective."""

    on_time: int  # K: started tasks that will meet their ECT
    cer_sum: float  # C: total CER of started tasks
    started: int
    weight: float  # W

    @property
    def total(self) -> float:
        return self.weight * self.on_time + self.cer_sum


def genie_breakdown(instance: Instance, decision: Decision) -> GenieBreakdown:
    """On-time count, CER sum, started tasks and W of a (valid) decision."""
    table = genie_table(instance)
    on_time, total = 0, 0.0
    for p in decision.placements:
        j = instance.job_index[p.job]
        opt = table.option(j, shape_of_gpus(instance, p.gpus))
        on_time += opt.on_time
        total += opt.cer
    return GenieBreakdown(on_time, total, len(decision.placements), table.weight)


class GenieProblem(Problem):
    """GENIE (paper seed 000): QoS-aware elastic placement with ECT constraints.

    Jobs are elastic (no ``num_gpus``): a placement's GPUs form a symmetric shape
    ⟨servers, GPUs each⟩ with local batch >= 1; GPUs are exclusive; the objective
    (maximized) is W × on-time tasks + total CER (:func:`genie_breakdown`; module
    docstring).
    """

    name = "genie"
    sense = "max"
    exclusive_gpus = True
    default_locality = "genie"
    job_fields = ("submit_time", "model", "kind", "batch_size", "iterations", "qos",
                  "deadline")

    def parse_params(self, params: Mapping[str, Any]) -> GenieParams:
        """Parse ``params`` (theta, coefficients of the performance model).

        Parameters
        ----------
        params
            The instance's ``params`` mapping.

        Returns
        -------
        GenieParams
            The typed parameters (:func:`parse_genie_params`).
        """
        return parse_genie_params(params)

    def check_instance(self, instance: Instance) -> None:
        """The base checks, a homogeneous platform, and known models, kinds and QoS classes.

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
            A fixed ``num_gpus``, a model without coefficients, an unknown kind or QoS
            class, or a cluster that is not homogeneous (same GPU count and type).
        """
        super().check_instance(instance)
        params = parse_genie_params(instance.params)
        platform_of(instance, params.theta)
        for i, job in enumerate(instance.jobs):
            if job.num_gpus is not None:
                raise InputError(f"job {job.id!r} fixes num_gpus = {job.num_gpus}",
                                 field=f"jobs[{i}].num_gpus",
                                 fix="GENIE jobs are elastic: leave num_gpus out")
            if job.model not in params.coefficients:
                raise InputError(
                    f"job {job.id!r}: no coefficients for model {job.model!r}",
                    field=f"jobs[{i}].model",
                    fix=f"use one of {sorted(params.coefficients)} or add it under "
                        "params.coefficients")
            if job.kind not in KINDS:
                raise InputError(f"kind = {job.kind!r}", field=f"jobs[{i}].kind",
                                 fix=f"use one of {KINDS}")
            if job.qos not in QOS_CLASSES:
                raise InputError(f"qos = {job.qos!r}", field=f"jobs[{i}].qos",
                                 fix=f"use one of {QOS_CLASSES}")

    def check_decision(self, instance: Instance, decision: Decision) -> list[Violation]:
        """Snapshot placements start now and form a feasible symmetric shape.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A decision that passes the generic rules.

        Returns
        -------
        list of Violation
            ``start`` and ``shape`` violations.
        """
        out = []
        platform = platform_of(instance)
        for p in decision.placements:
            job = instance.job(p.job)
            if p.end is None and p.start is not None and abs(p.start - instance.time) > ECT_TOL:
                out.append(Violation("start", p.job, f"starts at {p.start}, not at the "
                                                     f"snapshot time {instance.time}"))
            if not p.gpus:
                continue  # the generic checker reports it
            shape = shape_of_gpus(instance, p.gpus)
            if shape is None:
                out.append(Violation("shape", p.job, "servers hold unequal GPU counts: "
                                                     "the placement is not symmetric"))
            elif not _feasible(platform, job.batch_size, shape):
                out.append(Violation(
                    "shape", p.job, f"shape <{shape.nodes}, {shape.gpus_per_node}> gives a "
                    f"local batch below 1 (batch_size {job.batch_size})"))
        return out

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        """W × on-time tasks + total CER (maximized).

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        float
            ``genie_breakdown(instance, decision).total``.
        """
        return genie_breakdown(instance, decision).total

    # the objective W × on-time + CER is lexicographic: compare on-time tasks, then CER
    report_gap = "absolute"
    report_gap_on = "on-time tasks"

    def report_metrics(self, instance: Instance, decision: Decision) -> dict[str, float]:
        """On-time tasks, total CER and started tasks (the parts of the objective).

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        dict of str to float
            ``on-time tasks`` (K), ``CER`` (total, C) and ``started tasks``.
        """
        b = genie_breakdown(instance, decision)
        return {"on-time tasks": float(b.on_time), "CER": b.cer_sum,
                "started tasks": float(b.started)}

    schedule_objectives = {"makespan": "min", "weighted_jct": "min", "qos": "max"}

    def schedule_duration(self, instance: Instance, job_id: str, gpus: tuple[str, ...]
                          ) -> float:
        """Lat(t, s) of the placement's shape (Eq. 10) / speed of its slowest GPU.

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
            Seconds; NaN when the placement is not symmetric (``check_decision``
            reports it).
        """
        shape = shape_of_gpus(instance, gpus)
        if shape is None:
            return math.nan  # not symmetric: check_decision reports the shape
        job = instance.job(job_id)
        c = instance.cluster
        speed = float(c.gpu_speed[[c.gpu_index[g] for g in gpus]].min())
        coef = parse_genie_params(instance.params).coefficients[job.model]
        return latency(coef, task_of(job), shape) / speed


register_problem(GenieProblem())
