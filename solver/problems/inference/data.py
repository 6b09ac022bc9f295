"""The inference problem's data: the paper's delay tables, the parsed parameters of an
instance (:class:`InferenceData`), the time-utility V of Eq. 1, and query windows.

What models, policies and the serving simulator share; it imports no method."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InputError

if TYPE_CHECKING:
    from ...instance import Instance

PAPER_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
PAPER_QPS: dict[str, dict[str, tuple[float | None, ...]]] = {
    # Fang, Yu, Mengshoel, Gupta, "QoS-Aware Scheduling of Heterogeneous Servers for
    # Inference in Deep Neural Networks", CIKM'17, Table 1: YOLO throughputs (queries per
    # second) on AWS g2.2xlarge and p2.xlarge for B = 1..64; "-" (None) = not measured.
    "tiny": {"g2": (25.6, 35.7, 51.9, 66.1, 73.7, 84.7, 91.2),
             "p2": (23.8, 35.7, 63.5, 90.9, 109.6, 131.1, 141.9)},
    "full": {"g2": (9.4, 9.4, 12.3, 14.7, 16.0, 16.8, None),
             "p2": (14.5, 18.9, 24.2, 28.4, 31.5, 33.9, 34.6)},
}
PAPER_KAPPA = {"full": 1.0, "tiny": 0.5}  # Sec. 4.1


def paper_models() -> dict[str, Any]:
    """Table 1 as delay tables: delay_ms = round(1000 · B / QPS) (half up), None kept."""
    out: dict[str, Any] = {}
    for model in ("full", "tiny"):
        tables = {}
        for gpu_type, qps in PAPER_QPS[model].items():
            tables[gpu_type] = {
                str(b): (None if q is None else int(math.floor(1000.0 * b / q + 0.5)))
                for b, q in zip(PAPER_BATCH_SIZES, qps, strict=True)
            }
        out[model] = {"kappa": PAPER_KAPPA[model], "delay_ms": tables}
    return out

@dataclass(frozen=True, eq=False)
class InferenceData:
    """The parsed, checked parameters of an inference instance (arrays in ms)."""

    batch_sizes: tuple[int, ...]
    models: tuple[str, ...]
    kappa: np.ndarray  # [M]
    delay: np.ndarray  # [M, T, S] int ms, -1 where unsupported
    gpu_types: tuple[str, ...]  # T types, sorted
    gpu_ids: tuple[str, ...]
    gpu_type: np.ndarray  # [G] type index of each GPU
    arrival: np.ndarray  # [N] int64 ms
    soft: np.ndarray
    hard: np.ndarray
    size: np.ndarray | None
    delay_cv: float
    bin_ms: int

    @property
    def num_queries(self) -> int:
        return int(self.arrival.size)

    @cached_property
    def model_index(self) -> dict[str, int]:
        return {m: i for i, m in enumerate(self.models)}

    @cached_property
    def gpu_index(self) -> dict[str, int]:
        return {g: i for i, g in enumerate(self.gpu_ids)}

    def table_size(self, m: int, t: int, n: int) -> int | None:
        """Index of the smallest supported batch size >= n for model m on type t."""
        for s, b in enumerate(self.batch_sizes):
            if b >= n and self.delay[m, t, s] >= 0:
                return s
        return None

    def duration(self, m: int, t: int, n: int) -> int | None:
        """Delay in ms of a batch of n queries (padded), None when it cannot run."""
        s = self.table_size(m, t, n)
        return None if s is None else int(self.delay[m, t, s])

    def max_batch(self, m: int, t: int) -> int:
        """The largest batch size model m supports on type t (0 when none)."""
        ok = [b for s, b in enumerate(self.batch_sizes) if self.delay[m, t, s] >= 0]
        return max(ok, default=0)

    def quality(self, end: np.ndarray | int, q: np.ndarray | int, m: int) -> np.ndarray:
        """Eq. 1: κ_m · V(end) for queries ``q`` ending at ``end`` (vectorized)."""
        return self.kappa[m] * utility(np.asarray(end), self.soft[q], self.hard[q])


def utility(end: np.ndarray, soft: np.ndarray, hard: np.ndarray) -> np.ndarray:
    """The time-utility V of Fig. 2: 1 until ``soft``, linear to 0 at ``hard``."""
    end = np.asarray(end, dtype=float)
    soft = np.asarray(soft, dtype=float)
    hard = np.asarray(hard, dtype=float)
    span = hard - soft
    with np.errstate(divide="ignore", invalid="ignore"):
        lin = np.where(span > 0, (hard - end) / np.where(span > 0, span, 1.0), 0.0)
    return np.where(end <= soft, 1.0, np.clip(lin, 0.0, 1.0))


def _err(message: str, field_name: str, fix: str) -> InputError:
    return InputError(message, field=f"params.{field_name}", fix=fix)


def _int_array(values: Any, name: str, n: int | None) -> np.ndarray:
    if not isinstance(values, list):
        raise _err("must be a list of integers (ms)", name, "write a JSON list")
    if n is not None and len(values) != n:
        raise _err(f"has {len(values)} entries, queries.arrival_ms has {n}", name,
                   "give one entry per query")
    for i, v in enumerate(values):
        if type(v) is not int:
            raise _err(f"entry {v!r} is not an integer", f"{name}[{i}]",
                       "times are integer milliseconds")
    return np.asarray(values, dtype=np.int64)


def parse_inference(params: Mapping[str, Any], gpu_ids: Sequence[str],
                    gpu_types_of: Sequence[str]) -> InferenceData:
    """Check ``params`` against the GPUs; every problem is a one-line InputError."""
    sizes = params.get("batch_sizes")
    if (not isinstance(sizes, list) or not sizes
            or any(type(b) is not int or b < 1 for b in sizes)
            or sorted(set(sizes)) != sizes):
        raise _err(f"{sizes!r} is not an increasing list of positive integers", "batch_sizes",
                   "e.g. [1, 2, 4, 8, 16, 32, 64]")
    models = params.get("models")
    if not isinstance(models, dict) or not models:
        raise _err("missing or empty", "models", "give at least one model with kappa and "
                   "delay_ms")
    types = tuple(sorted(set(gpu_types_of)))
    names = tuple(sorted(models))
    kappa = np.zeros(len(names))
    delay = np.full((len(names), len(types), len(sizes)), -1, dtype=np.int64)
    for m, name in enumerate(names):
        spec = models[name]
        if not isinstance(spec, dict):
            raise _err("must be an object", f"models.{name}", "give kappa and delay_ms")
        k = spec.get("kappa")
        if type(k) not in (int, float) or not 0 < k <= 1:
            raise _err(f"kappa = {k!r}", f"models.{name}.kappa", "use a number in (0, 1]")
        kappa[m] = float(k)
        tables = spec.get("delay_ms")
        if not isinstance(tables, dict):
            raise _err("missing", f"models.{name}.delay_ms",
                       "give a table per GPU type: {type: {batch size: ms or null}}")
        for t, gtype in enumerate(types):
            table = tables.get(gtype)
            where = f"models.{name}.delay_ms.{gtype}"
            if not isinstance(table, dict):
                raise _err(f"no delay table for GPU type {gtype!r}", where,
                           "give a delay table for every GPU type in the cluster")
            for s, b in enumerate(sizes):
                if str(b) not in table:
                    raise _err(f"batch size {b} is missing", f"{where}.{b}",
                               "give a delay in ms, or null if the size cannot run")
                d = table[str(b)]
                if d is None:
                    continue
                if type(d) is not int or d < 1:
                    raise _err(f"delay {d!r}", f"{where}.{b}",
                               "use a positive integer number of ms, or null")
                delay[m, t, s] = d
            extra = sorted(set(table) - {str(b) for b in sizes})
            if extra:
                raise _err(f"batch sizes {extra} are not in batch_sizes", where,
                           "list them in params.batch_sizes or remove them")
        if not (delay[m] >= 0).any(axis=1).all():
            bad = types[int(np.flatnonzero(~(delay[m] >= 0).any(axis=1))[0])]
            raise _err("runs at no batch size", f"models.{name}.delay_ms.{bad}",
                       "give at least one delay")
    cv = params.get("delay_cv", 0.0)
    if type(cv) not in (int, float) or cv < 0:
        raise _err(f"delay_cv = {cv!r}", "delay_cv", "use a number >= 0")
    bin_ms = params.get("bin_ms", 200)
    if type(bin_ms) is not int or bin_ms < 1:
        raise _err(f"bin_ms = {bin_ms!r}", "bin_ms", "use a positive integer (ms)")
    queries = params.get("queries")
    if not isinstance(queries, dict):
        raise _err("missing", "queries", "give arrival_ms, soft_ms and hard_ms lists")
    unknown = sorted(set(queries) - {"arrival_ms", "soft_ms", "hard_ms", "size"})
    if unknown:
        raise _err(f"unknown fields {unknown}", "queries", "use arrival_ms, soft_ms, hard_ms, "
                   "size")
    arrival = _int_array(queries.get("arrival_ms"), "queries.arrival_ms", None)
    n = arrival.size
    soft = _int_array(queries.get("soft_ms"), "queries.soft_ms", n)
    hard = _int_array(queries.get("hard_ms"), "queries.hard_ms", n)
    if n and (arrival < 0).any():
        i = int(np.flatnonzero(arrival < 0)[0])
        raise _err("negative arrival", f"queries.arrival_ms[{i}]", "times are >= 0 ms")
    if n > 1 and (np.diff(arrival) < 0).any():
        i = int(np.flatnonzero(np.diff(arrival) < 0)[0]) + 1
        raise _err("arrivals are not in time order", f"queries.arrival_ms[{i}]",
                   "sort the queries by arrival")
    if (hard < soft).any():
        i = int(np.flatnonzero(hard < soft)[0])
        raise _err(f"hard deadline {hard[i]} < soft deadline {soft[i]}",
                   f"queries.hard_ms[{i}]", "t_h must be >= t_s")
    size = None
    if "size" in queries:
        size = _int_array(queries["size"], "queries.size", n)
        if (size < 0).any():
            i = int(np.flatnonzero(size < 0)[0])
            raise _err("negative size", f"queries.size[{i}]", "sizes are >= 0")
    type_index = {t: i for i, t in enumerate(types)}
    return InferenceData(
        batch_sizes=tuple(sizes), models=names, kappa=kappa, delay=delay, gpu_types=types,
        gpu_ids=tuple(gpu_ids), gpu_type=np.array([type_index[t] for t in gpu_types_of]),
        arrival=arrival, soft=soft, hard=hard, size=size, delay_cv=float(cv),
        bin_ms=bin_ms)


_CACHE: dict[int, tuple[Any, InferenceData]] = {}


def inference_data(instance: Instance) -> InferenceData:
    """The parsed parameters of ``instance`` (cached per instance object)."""
    hit = _CACHE.get(id(instance))
    if hit is not None and hit[0] is instance:
        return hit[1]
    cluster = instance.cluster
    types = [g.type for node in cluster.nodes for g in node.gpus]
    ids = [g.id for node in cluster.nodes for g in node.gpus]
    data = parse_inference(instance.params, ids, types)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[id(instance)] = (instance, data)
    return data



def window(instance: Instance, lo: int, hi: int, *, name: str | None = None) -> Instance:
    """The instance restricted to queries ``lo..hi-1`` (renumbered from 0, times kept)."""
    qs = instance.params["queries"]
    params = dict(instance.params)
    params["queries"] = {k: list(v[lo:hi]) for k, v in qs.items()}
    prov = dict(instance.provenance)
    prov["window_of"] = {"sha256": instance.sha256, "queries": [lo, hi]}
    return instance.replace(params=params, provenance=prov,
                            name=name or f"{instance.name}[{lo}:{hi}]")
