"""The ``inference`` problem: what a valid batch schedule is and what it is worth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...decision import Decision
from ...errors import InputError
from ..base import Problem, Violation
from .data import inference_data
from .decision import InferenceDecision, batches_from_dict, malformed_batch, query_qualities

if TYPE_CHECKING:
    from ...instance import Instance


class InferenceProblem(Problem):
    """Batch serving of inference queries; maximize Σ Q (Eq. 1)."""

    name = "inference"
    sense = "max"
    simulator = "serving"

    def check_instance(self, instance: Instance) -> None:
        if instance.jobs:
            raise InputError("inference instances keep their queries in params.queries",
                             field="jobs", fix="leave jobs empty")
        inference_data(instance)

    def decision_from_solution(self, doc: Mapping[str, Any]) -> InferenceDecision:
        """The batches of an inference solution document (``placements`` must be empty)."""
        if doc.get("placements"):
            raise InputError("an inference solution lists batches, not placements",
                             field="placements", fix="leave placements empty, list batches")
        if "batches" not in doc:
            raise InputError("missing field", field="batches",
                             fix="an inference solution lists its batches "
                                 "(gpu, model, start_ms, end_ms, queries)")
        return batches_from_dict(doc["batches"])

    def check_decision(self, instance: Instance, decision: Decision) -> list[Violation]:
        data = inference_data(instance)
        out: list[Violation] = []
        if decision.placements:
            out.append(Violation("structure", None,
                                 "an inference decision lists batches, not placements"))
        batches = getattr(decision, "batches", ())
        if not isinstance(batches, tuple | list):
            return [*out, Violation("structure", None, f"batches is a "
                                    f"{type(batches).__name__}, not a list of batches")]
        served = np.full(data.num_queries, -1, dtype=np.int64)
        per_gpu: dict[int, list[tuple[int, int, int]]] = {}
        for k, b in enumerate(batches):
            tag = f"batch {k}"
            kind, bad = malformed_batch(b)
            if bad:
                out.append(Violation(kind, tag, bad))
                continue
            g = data.gpu_index.get(b.gpu)
            m = data.model_index.get(b.model)
            if g is None or m is None:
                out.append(Violation("unknown_gpu" if g is None else "unknown_model", tag,
                                     f"unknown {'GPU' if g is None else 'model'} "
                                     f"{b.gpu if g is None else b.model!r}"))
                continue
            n = len(b.queries)
            if n == 0:
                out.append(Violation("empty_batch", tag, "serves no query"))
                continue
            t = int(data.gpu_type[g])
            d = data.duration(m, t, n)
            if d is None:
                out.append(Violation("batch_size", tag, f"{n} queries exceed the largest "
                                     f"size {b.model} runs on {data.gpu_types[t]}"))
                continue
            # the instance's duration, whatever delay_cv: noise belongs to simulated runs,
            # and a solution's claim of a shorter batch is never believed (issue 32, item 5)
            if b.end - b.start != d:
                out.append(Violation("duration", tag, f"lasts {b.end - b.start} ms, the delay "
                                     f"table says {d} ms"))
            for q in b.queries:
                if not 0 <= q < data.num_queries:
                    out.append(Violation("unknown_query", tag, f"no query {q}"))
                    continue
                if served[q] >= 0:
                    out.append(Violation("duplicate", tag,
                                         f"query {q} already served by batch {served[q]}"))
                served[q] = k
                if data.arrival[q] > b.start:
                    out.append(Violation("release", tag, f"starts at {b.start} ms before query "
                                         f"{q} arrives ({data.arrival[q]} ms)"))
            per_gpu.setdefault(g, []).append((b.start, b.end, k))
        for g, rows in per_gpu.items():
            rows.sort()
            for (_s0, e0, k0), (s1, _e1, k1) in zip(rows, rows[1:], strict=False):
                if s1 < e0:
                    out.append(Violation("overlap", f"batch {k1}", f"starts at {s1} ms on GPU "
                                         f"{data.gpu_ids[g]} while batch {k0} runs until {e0}"))
        return out

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        data = inference_data(instance)
        return float(query_qualities(data, decision).sum())
