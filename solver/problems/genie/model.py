"""GENIE's performance model for data-parallel DL tasks on a homogeneous GPU cluster.

This module holds the prediction model of the GENIE paper (seed 000, Sec. 5.1-5.2 and
Sec. 7.1) as small pure functions (the simulation metrics of Eqs. 14-16 are
``dlsched.problems.schedule_metrics``):

* a task ``t = <type, kind, w_bat, w_iter>`` (Eq. 2, with the calculation type split out),
* a placement shape ``s = <d_node, d_gpn>``: ``d_node`` distinct nodes with ``d_gpn``
  exclusive GPUs each (Eq. 3, symmetric placement),
* a platform ``P = <N, G, theta>`` (Eq. 1; the communication parameters are per model and
  live in :class:`~dlsched.problems.genie.coefficients.ModelCoefficients`),
* local batch (Eq. 6), single-GPU rate ``sPR`` (Eq. 7), communication penalty ``Comm``
  (Eq. 8), processing rate ``PR`` (Eq. 5), latency (Eq. 4), ECT classes (Eq. 9),
  cost (Eq. 10) and cost-effective ratio (Eq. 11).

The text of the paper was extracted from a PDF; where a formula had to be read, the
reading is stated in the function's docstring and in ``docs/genie-model.md``.
Units: rates in samples per second (a sample is whatever the batch counts: images,
sentences, sequences), times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .coefficients import ModelCoefficients, check_finite

__all__ = [
    "KINDS",
    "QOS_CLASSES",
    "TABLE3_MODELS",
    "Platform",
    "Shape",
    "Task",
    "cer",
    "comm",
    "cost",
    "ect",
    "ect_deadline",
    "feasible_shapes",
    "latency",
    "local_batch",
    "processing_rate",
    "single_gpu_rate",
    "solo_latency",
]

Kind = Literal["train", "infer"]
QosClass = Literal["urgent", "prior", "normal"]

KINDS: tuple[str, ...] = ("train", "infer")
"""Calculation types of a task (Sec. 5.1.1): training or (batch) inference."""

QOS_CLASSES: tuple[str, ...] = ("urgent", "prior", "normal")
"""User QoS classes of Eq. 9."""

TABLE3_MODELS: tuple[str, ...] = (
    "alexnet",
    "googlenet",
    "resnet50",
    "inception_v3",
    "rlstm",
    "seq2seq",
)
"""Keys of the six workload models of the paper's Table 3 in the shipped coefficients."""

@dataclass(frozen=True)
class Platform:
    """A homogeneous GPU cluster ``<N, G>`` with the cost weight theta of Eq. 10.

    Parameters
    ----------
    nodes : int
        Number of nodes N (>= 1).
    gpus_per_node : int
        GPUs per node G (>= 1).
    theta : float
        Weight of the node-spread term of Eq. 10 (>= 0); the paper's Fig. 10 uses 0.4.
    """

    nodes: int
    gpus_per_node: int
    theta: float = 0.4

    def __post_init__(self) -> None:
        if int(self.nodes) != self.nodes or self.nodes < 1:
            raise ValueError(f"platform.nodes = {self.nodes}: must be an integer >= 1")
        if int(self.gpus_per_node) != self.gpus_per_node or self.gpus_per_node < 1:
            raise ValueError(
                f"platform.gpus_per_node = {self.gpus_per_node}: must be an integer >= 1"
            )
        check_finite("platform.theta", self.theta)
        if self.theta < 0:
            raise ValueError(f"platform.theta = {self.theta}: must be >= 0")

    @property
    def gpus(self) -> int:
        """Total number of GPUs ``N * G``."""
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True, order=True)
class Shape:
    """A symmetric placement ``<d_node, d_gpn>`` (Eq. 3).

    Parameters
    ----------
    nodes : int
        Number of distinct nodes d_node (>= 1).
    gpus_per_node : int
        Exclusive GPUs used on each of them, d_gpn (>= 1).
    """

    nodes: int
    gpus_per_node: int

    def __post_init__(self) -> None:
        if int(self.nodes) != self.nodes or self.nodes < 1:
            raise ValueError(f"shape.nodes = {self.nodes}: must be an integer >= 1")
        if int(self.gpus_per_node) != self.gpus_per_node or self.gpus_per_node < 1:
            raise ValueError(f"shape.gpus_per_node = {self.gpus_per_node}: must be an integer >= 1")

    @property
    def gpus(self) -> int:
        """Total GPUs ``d_node * d_gpn``."""
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Task:
    """A DL task ``<type, kind, w_bat, w_iter>`` (Eq. 2).

    Parameters
    ----------
    model : str
        Task (model) type, e.g. ``"resnet50"``.
    kind : {"train", "infer"}
        Calculation type.
    batch : float
        Global batch size w_bat (> 0).
    iterations : float
        Number of iterations w_iter (> 0).
    """

    model: str
    kind: Kind
    batch: float
    iterations: float

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"task.kind = {self.kind!r}: expected one of {KINDS}")
        check_finite("task.batch", self.batch)
        check_finite("task.iterations", self.iterations)
        if self.batch <= 0:
            raise ValueError(f"task.batch = {self.batch}: must be > 0")
        if self.iterations <= 0:
            raise ValueError(f"task.iterations = {self.iterations}: must be > 0")

    @property
    def work(self) -> float:
        """Total samples to process, ``w_bat * w_iter`` (numerator of Eq. 4)."""
        return self.batch * self.iterations


# --------------------------------------------------------------------------- Eqs. 4-8


def local_batch(batch: float, shape: Shape) -> float:
    """Local batch size on each GPU, ``w_bat / (d_node * d_gpn)`` (Eq. 6).

    The division is exact (a fractional local batch is allowed); callers who want whole
    local batches filter shapes with :func:`feasible_shapes`.
    """
    if batch <= 0:
        raise ValueError(f"batch = {batch}: must be > 0")
    return batch / shape.gpus


def single_gpu_rate(coef: ModelCoefficients, b: float, kind: Kind = "train") -> float:
    """Processing rate sPR of one GPU at local batch ``b`` (Eq. 7), in samples/s.

    Reading: the paper fits ``q(b) = k0 + k1*b + k2*b**2`` over its profiled batches and
    observes that the rate "increases at first and then plateaus" (Observation 1). We
    evaluate ``q`` on ``[b_min, b_sat*]`` with ``b_sat* = coef.saturation_batch`` (the
    vertex of ``q`` or the largest trusted batch), keep it flat above ``b_sat*``, and take
    it proportional to ``b`` below ``b_min`` (an iteration is never shorter than at
    ``b_min``). Inference multiplies the result by ``coef.infer_speedup``.

    Raises
    ------
    ValueError
        If ``b <= 0``, ``kind`` is unknown, or the coefficients give a rate <= 0 at ``b``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind = {kind!r}: expected one of {KINDS}")
    if not b > 0:
        raise ValueError(f"local batch = {b}: must be > 0")
    b_eff = min(b, coef.saturation_batch)
    if coef.b_min > 0 and b_eff < coef.b_min:
        rate = coef.quadratic(coef.b_min) * b_eff / coef.b_min
    else:
        rate = coef.quadratic(b_eff)
    if not rate > 0:
        raise ValueError(
            f"single-GPU rate at local batch {b} is {rate}: the coefficients must give a "
            "positive rate (check k0, k1, k2 and b_min)"
        )
    return rate * coef.infer_speedup if kind == "infer" else rate


def comm(coef: ModelCoefficients, shape: Shape, kind: Kind = "train") -> float:
    """Communication penalty Comm(s) of Eq. 8, in GPU-equivalents.

    ``0`` for inference and for one GPU; otherwise, with ``a = d_node``, ``g = d_gpn``::

        Comm = gamma * ((a - 1) * g + lam * (g - 1)) / (a * g - 1)

    Reading: the extracted text labels the second case ``d_node, d_gpn > 1``; taken
    literally, the shapes ``<1, g>`` and ``<a, 1>`` would have no case at all. The text
    below the equation derives the fraction for *any* GPU of *any* placement (peers on
    other nodes weigh 1, peers on the same node weigh lam, divided by the a*g - 1 peers),
    so we apply it to every placement with more than one GPU. It gives the paper's two
    situations: within one node (``a = 1``) ``Comm = lam * gamma``; one GPU on each of
    ``a`` nodes ``Comm = gamma``; mixed shapes lie in between.
    """
    if kind not in KINDS:
        raise ValueError(f"kind = {kind!r}: expected one of {KINDS}")
    n = shape.gpus
    if kind == "infer" or n == 1:
        return 0.0
    a, g = shape.nodes, shape.gpus_per_node
    return coef.gamma * ((a - 1) * g + coef.lam * (g - 1)) / (n - 1)


def processing_rate(coef: ModelCoefficients, task: Task, shape: Shape) -> float:
    """Processing rate ``PR(t, s) = (d_node*d_gpn - Comm(s)) * sPR(b)`` (Eq. 5), samples/s."""
    b = local_batch(task.batch, shape)
    return (shape.gpus - comm(coef, shape, task.kind)) * single_gpu_rate(coef, b, task.kind)


def latency(coef: ModelCoefficients, task: Task, shape: Shape) -> float:
    """Response latency ``Lat(t, s) = w_bat * w_iter / PR(t, s) + nu`` (Eq. 4), seconds."""
    return task.work / processing_rate(coef, task, shape) + coef.nu


def solo_latency(coef: ModelCoefficients, task: Task) -> float:
    """Baseline latency on one GPU, ``Lat(t, <1, 1>)`` (used by Eqs. 9 and 16)."""
    return latency(coef, task, Shape(1, 1))


# --------------------------------------------------------------------------- Eqs. 9-11


def _check_fits(platform: Platform, shape: Shape) -> None:
    if shape.nodes > platform.nodes or shape.gpus_per_node > platform.gpus_per_node:
        raise ValueError(
            f"shape <{shape.nodes}, {shape.gpus_per_node}> does not fit platform "
            f"<{platform.nodes}, {platform.gpus_per_node}>"
        )


def cost(platform: Platform, shape: Shape) -> float:
    """Placement cost ``d_node*d_gpn / (N*G) + theta * d_node / N`` (Eq. 10).

    Raises
    ------
    ValueError
        If the shape does not fit the platform.
    """
    _check_fits(platform, shape)
    return shape.gpus / platform.gpus + platform.theta * shape.nodes / platform.nodes


def cer(coef: ModelCoefficients, task: Task, shape: Shape, platform: Platform) -> float:
    """Cost-effective ratio ``CER(t, s) = PR(t, s) / Cost(s)`` (Eq. 11)."""
    return processing_rate(coef, task, shape) / cost(platform, shape)


def feasible_shapes(
    platform: Platform, max_gpus: int | None = None, batch: float | None = None
) -> list[Shape]:
    """All symmetric shapes that fit the platform, by total GPUs then nodes.

    Reading: Sec. 5.3 writes ``d_node < N, d_gpn < G``; we read the bounds as ``<=``
    (the full node and the full cluster are placements the paper uses, e.g. 1N4G).

    Parameters
    ----------
    platform : Platform
        The cluster.
    max_gpus : int, optional
        Keep shapes with at most this many GPUs.
    batch : float, optional
        Global batch; keep shapes whose local batch is at least 1 (``gpus <= batch``).
    """
    limit = platform.gpus if max_gpus is None else int(max_gpus)
    if batch is not None:
        limit = min(limit, math.floor(batch))
    shapes = [
        Shape(a, g)
        for a in range(1, platform.nodes + 1)
        for g in range(1, platform.gpus_per_node + 1)
        if a * g <= limit
    ]
    return sorted(shapes, key=lambda s: (s.gpus, s.nodes))


def ect(qos_class: QosClass, solo: float) -> float:
    """Relative expected completion time e of Eq. 9.

    ``0`` for urgent, ``Lat(t, <1,1>)`` for prior, ``2 * Lat(t, <1,1>)`` for normal;
    ``solo`` is that single-GPU latency (see :func:`solo_latency`).
    """
    if qos_class not in QOS_CLASSES:
        raise ValueError(f"qos_class = {qos_class!r}: expected one of {QOS_CLASSES}")
    if not solo > 0:
        raise ValueError(f"solo latency = {solo}: must be > 0")
    return {"urgent": 0.0, "prior": 1.0, "normal": 2.0}[qos_class] * solo


def ect_deadline(arrival: float, qos_class: QosClass, solo: float) -> float:
    """Absolute deadline ``arrival + e`` of a task (our reading of Eqs. 9 and 12).

    Eq. 9 gives e relative to the task (a multiple of its solo latency) while Eq. 12
    compares it with ``t_curr + l``, an absolute time; we read the deadline as the
    arrival time plus e. An urgent task's deadline is its arrival: it can never be met
    and is always counted as missed (see
    :func:`dlsched.problems.schedule_metrics.qos_guarantee_pct`), as the paper says.
    """
    check_finite("arrival", arrival)
    return arrival + ect(qos_class, solo)
