"""GENIE's performance model for data-parallel DL tasks on a homogeneous GPU cluster.

This module holds the prediction model of the GENIE paper (seed 000, Sec. 5.1-5.2 and
Sec. 7.1) as small pure functions, plus the simulation metrics of Eqs. 14-16:

* a task ``t = <type, kind, w_bat, w_iter>`` (Eq. 2, with the calculation type split out),
* a placement shape ``s = <d_node, d_gpn>``: ``d_node`` distinct nodes with ``d_gpn``
  exclusive GPUs each (Eq. 3, symmetric placement),
* a platform ``P = <N, G, theta>`` (Eq. 1; the communication parameters are per model and
  live in :class:`ModelCoefficients`),
* local batch (Eq. 6), single-GPU rate ``sPR`` (Eq. 7), communication penalty ``Comm``
  (Eq. 8), processing rate ``PR`` (Eq. 5), latency (Eq. 4), ECT classes (Eq. 9),
  cost (Eq. 10) and cost-effective ratio (Eq. 11).

The text of the paper was extracted from a PDF; where a formula had to be read, the
reading is stated in the function's docstring and in ``docs/genie-model.md``.
Units: rates in samples per second (a sample is whatever the batch counts: images,
sentences, sequences), times in seconds.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "KINDS",
    "QOS_CLASSES",
    "TABLE3_MODELS",
    "ModelCoefficients",
    "Platform",
    "Shape",
    "Task",
    "average_normalized_latency",
    "cer",
    "comm",
    "cost",
    "ect",
    "ect_deadline",
    "feasible_shapes",
    "latency",
    "load_default_coefficients",
    "local_batch",
    "makespan",
    "normalized_latency",
    "processing_rate",
    "qos_guarantee_pct",
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

_COEFFICIENT_FILE = "genie_coefficients.json"


def _check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} = {value!r}: must be a finite number")


@dataclass(frozen=True)
class ModelCoefficients:
    """Prediction-model coefficients of one task type on one platform.

    Parameters
    ----------
    k0, k1, k2 : float
        Coefficients of the quadratic single-GPU training rate of Eq. 7,
        ``q(b) = k0 + k1*b + k2*b**2`` (samples/s, ``b`` the local batch size).
    gamma : float
        Communication coefficient gamma of Eq. 8, in GPU-equivalents lost to
        synchronization (0 = no communication cost).
    lam : float
        Balance factor lambda of Eq. 8: the weight of a same-node peer relative to a
        peer on another node (``lam <= 1`` means intra-node links are cheaper).
    nu : float
        Constant start-up overhead of Eq. 4, in seconds.
    b_min : float
        Smallest local batch at which the quadratic is trusted (usually the smallest
        profiled batch). Below it the rate is taken proportional to the batch,
        ``q(b_min) * b / b_min``: an iteration never gets shorter than at ``b_min``.
        0 means the quadratic is used down to every positive batch.
    b_sat : float
        Largest local batch at which the quadratic is trusted (usually the largest
        profiled batch). The rate plateaus at ``min(b_sat, vertex)``, where ``vertex``
        is the batch of the quadratic's maximum when ``k2 < 0``.
    infer_speedup : float
        Ratio of the inference rate to the training rate at the same local batch.

    Raises
    ------
    ValueError
        If a coefficient is not finite, a parameter is out of range, or
        ``gamma * max(1, lam) >= 2`` (then some multi-GPU placement would have a
        non-positive processing rate in Eq. 5).
    """

    k0: float
    k1: float
    k2: float
    gamma: float = 0.0
    lam: float = 1.0
    nu: float = 0.0
    b_min: float = 0.0
    b_sat: float = math.inf
    infer_speedup: float = 1.0

    def __post_init__(self) -> None:
        for name in ("k0", "k1", "k2", "gamma", "lam", "nu", "b_min", "infer_speedup"):
            _check_finite(name, getattr(self, name))
        if self.gamma < 0:
            raise ValueError(f"gamma = {self.gamma}: must be >= 0")
        if self.lam < 0:
            raise ValueError(f"lam = {self.lam}: must be >= 0")
        if self.gamma * max(1.0, self.lam) >= 2.0:
            raise ValueError(
                f"gamma = {self.gamma}, lam = {self.lam}: gamma * max(1, lam) must be < 2, "
                "otherwise a 2-GPU placement has a non-positive processing rate (Eq. 5)"
            )
        if self.nu < 0:
            raise ValueError(f"nu = {self.nu}: must be >= 0")
        if self.b_min < 0:
            raise ValueError(f"b_min = {self.b_min}: must be >= 0")
        if not self.b_sat > self.b_min:
            raise ValueError(f"b_sat = {self.b_sat}: must be > b_min = {self.b_min}")
        if self.infer_speedup <= 0:
            raise ValueError(f"infer_speedup = {self.infer_speedup}: must be > 0")
        if not self._positive_on_trusted_range():
            raise ValueError(
                f"k0 = {self.k0}, k1 = {self.k1}, k2 = {self.k2}: the single-GPU rate must be "
                f"positive for every local batch in ({self.b_min}, {self.saturation_batch}]"
            )

    def _positive_on_trusted_range(self) -> bool:
        lo, hi = self.b_min, self.saturation_batch
        # Just above lo (the ramp below b_min is positive iff q(b_min) is).
        if lo > 0:
            if self.quadratic(lo) <= 0:
                return False
        elif self.k0 < 0 or (self.k0 == 0 and self.k1 <= 0):
            return False
        if math.isfinite(hi) and self.quadratic(hi) <= 0:
            return False
        if self.k2 > 0:  # convex: the minimum may sit at the vertex
            vertex = -self.k1 / (2.0 * self.k2)
            if lo < vertex < hi and self.quadratic(vertex) <= 0:
                return False
        elif not math.isfinite(hi) and self.k2 == 0 and self.k1 < 0:
            return False
        return True

    @property
    def saturation_batch(self) -> float:
        """Local batch beyond which the single-GPU rate stays flat (``inf`` if never)."""
        vertex = -self.k1 / (2.0 * self.k2) if self.k2 < 0 else math.inf
        return max(min(self.b_sat, vertex), self.b_min)

    def quadratic(self, b: float) -> float:
        """The bare polynomial of Eq. 7 at ``b``, without the plateau and ramp."""
        return self.k0 + self.k1 * b + self.k2 * b * b

    def replace(self, **changes: Any) -> ModelCoefficients:
        """Return a copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, float]:
        """Field values as a JSON-ready mapping (``inf`` written as ``None``)."""
        out: dict[str, Any] = dataclasses.asdict(self)
        if math.isinf(out["b_sat"]):
            out["b_sat"] = None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCoefficients:
        """Build from :meth:`to_dict` output; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown coefficient field(s) {sorted(unknown)}: expected {sorted(known)}"
            )
        values = dict(data)
        if values.get("b_sat", math.inf) is None:
            values["b_sat"] = math.inf
        return cls(**{k: float(v) for k, v in values.items()})


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
        _check_finite("platform.theta", self.theta)
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
        _check_finite("task.batch", self.batch)
        _check_finite("task.iterations", self.iterations)
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
    and is always counted as missed (see :func:`qos_guarantee_pct`), as the paper says.
    """
    _check_finite("arrival", arrival)
    return arrival + ect(qos_class, solo)


# --------------------------------------------------------------------------- Eqs. 14-16


def _as_1d(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: at least one task is needed")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} holds a non-finite value at index {int(np.argmin(np.isfinite(arr)))}"
        )
    return arr


def _same_length(**arrays: np.ndarray) -> None:
    lengths = {k: v.size for k, v in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"arrays differ in length: {lengths}")


def qos_guarantee_pct(arrival: ArrayLike, finish: ArrayLike, deadline: ArrayLike) -> float:
    """QoS-guarantee percentage (Eq. 14), in percent.

    A task counts as met when ``finish <= deadline`` and its deadline lies after its
    arrival; a deadline equal to the arrival is an urgent task (e = 0), always missed.
    """
    arr = _as_1d("arrival", arrival)
    fin = _as_1d("finish", finish)
    dl = _as_1d("deadline", deadline)
    _same_length(arrival=arr, finish=fin, deadline=dl)
    met = (fin <= dl) & (dl > arr)
    return 100.0 * float(np.count_nonzero(met)) / met.size


def normalized_latency(start: ArrayLike, finish: ArrayLike, solo: ArrayLike) -> np.ndarray:
    """Normalized latency ``L_wall / Lat(t, <1,1>)`` of each task (Eq. 16).

    Reading: ``L_wall`` is "the walltime of the task under a selected placement during
    runtime", so ``finish - start`` (waiting excluded). Pass arrivals as ``start`` for
    the waiting-inclusive variant.
    """
    st = _as_1d("start", start)
    fin = _as_1d("finish", finish)
    so = _as_1d("solo", solo)
    _same_length(start=st, finish=fin, solo=so)
    if np.any(fin < st):
        i = int(np.argmax(fin < st))
        raise ValueError(f"task {i}: finish = {fin[i]} < start = {st[i]}")
    if np.any(so <= 0):
        i = int(np.argmax(so <= 0))
        raise ValueError(f"task {i}: solo latency = {so[i]}: must be > 0")
    return (fin - st) / so


def average_normalized_latency(start: ArrayLike, finish: ArrayLike, solo: ArrayLike) -> float:
    """Average normalized latency (Eq. 15): the mean of :func:`normalized_latency`."""
    return float(np.mean(normalized_latency(start, finish, solo)))


def makespan(arrival: ArrayLike, finish: ArrayLike) -> float:
    """Makespan: last completion minus first arrival (our reading of the paper's M)."""
    arr = _as_1d("arrival", arrival)
    fin = _as_1d("finish", finish)
    _same_length(arrival=arr, finish=fin)
    return float(fin.max() - arr.min())


# --------------------------------------------------------------------------- defaults


def _iter_models(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    models = data.get("models")
    if not isinstance(models, Mapping):
        raise ValueError(f"{_COEFFICIENT_FILE}: missing object 'models'")
    yield from models.items()


def load_default_coefficients() -> dict[str, ModelCoefficients]:
    """Shipped coefficients of the six Table-3 models (``solver/data/genie_coefficients.json``).

    Returns
    -------
    dict[str, ModelCoefficients]
        Keyed by :data:`TABLE3_MODELS` names. Where each number comes from is recorded
        in the JSON file and in ``docs/genie-model.md``.
    """
    text = (resources.files("dlsched") / "data" / _COEFFICIENT_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    out: dict[str, ModelCoefficients] = {}
    for name, entry in _iter_models(data):
        try:
            out[name] = ModelCoefficients.from_dict(entry["coefficients"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{_COEFFICIENT_FILE}: model {name!r}: {exc}") from exc
    return out
