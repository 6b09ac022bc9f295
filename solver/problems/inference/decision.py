"""Inference decisions: batches of queries on a GPU, their solution-file form, and Q of
every query under a decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...decision import Decision
from ...errors import InputError
from .data import InferenceData


@dataclass(frozen=True)
class Batch:
    """One batch: ``queries`` (indices) run on ``gpu`` with ``model`` over [start, end) ms."""

    gpu: str
    model: str
    start: int
    end: int
    queries: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """Solution-file form ``{gpu, model, start_ms, end_ms, queries}`` (plain ints)."""
        return {"gpu": self.gpu, "model": self.model, "start_ms": int(self.start),
                "end_ms": int(self.end), "queries": [int(q) for q in self.queries]}


@dataclass(frozen=True)
class InferenceDecision(Decision):
    """A serving schedule: the batches, in any order (no generic placements)."""

    batches: tuple[Batch, ...] = field(default=())

    def batches_to_dict(self) -> list[dict[str, Any]]:
        return [b.to_dict() for b in self.batches]

    def solution_fields(self) -> dict[str, Any]:
        """Solution-file keys: no placements, the ``batches``."""
        return {"placements": [], "batches": self.batches_to_dict()}


_BATCH_KEYS = ("gpu", "model", "start_ms", "end_ms", "queries")


def batches_from_dict(rows: Any, *, prefix: str = "batches") -> InferenceDecision:
    """InferenceDecision from a list of ``{gpu, model, start_ms, end_ms, queries}``.

    Types only (strings, integer ms, integer query indices); what the batches mean is the
    validator's job. A malformed row is a one-line InputError naming ``prefix[i].key``.
    """
    if not isinstance(rows, list | tuple):
        raise InputError(f"{type(rows).__name__} is not a list of batches", field=prefix,
                         fix="give a list of {gpu, model, start_ms, end_ms, queries}")
    out = []
    for i, r in enumerate(rows):
        where = f"{prefix}[{i}]"
        if not isinstance(r, Mapping):
            raise InputError("a batch must be an object", field=where,
                             fix="give gpu, model, start_ms, end_ms and queries")
        for key in _BATCH_KEYS:
            if key not in r:
                raise InputError("missing field", field=f"{where}.{key}",
                                 fix="give gpu, model, start_ms, end_ms and queries")
        extra = sorted(set(r) - set(_BATCH_KEYS))
        if extra:
            raise InputError(f"unknown field {extra[0]!r}", field=f"{where}.{extra[0]}",
                             fix="a batch has gpu, model, start_ms, end_ms and queries")
        for key in ("gpu", "model"):
            if type(r[key]) is not str:
                raise InputError(f"{r[key]!r} is not a string", field=f"{where}.{key}",
                                 fix=f"give the {key} id")
        for key in ("start_ms", "end_ms"):
            if type(r[key]) is not int:
                raise InputError(f"{r[key]!r} is not an integer", field=f"{where}.{key}",
                                 fix="times are integer milliseconds")
        qs = r["queries"]
        if not isinstance(qs, list | tuple):
            raise InputError(f"{qs!r} is not a list", field=f"{where}.queries",
                             fix="list the query indices")
        for k, q in enumerate(qs):
            if type(q) is not int:
                raise InputError(f"{q!r} is not an integer", field=f"{where}.queries[{k}]",
                                 fix="queries are indices into params.queries")
        out.append(Batch(r["gpu"], r["model"], r["start_ms"], r["end_ms"], tuple(qs)))
    return InferenceDecision(batches=tuple(out))


MAX_MS = 10**12
"""Largest |start|, |end| (ms) a batch may hold: the validator's ±1e12 time range."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def malformed_batch(b: Any) -> tuple[str, str]:
    """(violation kind, why) when ``b`` is not a well-typed Batch, else ("", ""): ids are
    strings, start and end integer ms within ±:data:`MAX_MS` (kind ``number``), queries a
    list of integer indices. The reason is one line."""
    if not isinstance(b, Batch):
        return "structure", f"{type(b).__name__} is not a Batch"
    for name in ("gpu", "model"):
        v = getattr(b, name)
        if not isinstance(v, str):
            return "structure", f"{name} = {_short(v)} is not an id string"
    for name in ("start", "end"):
        v = getattr(b, name)
        if not _is_int(v) or abs(int(v)) > MAX_MS:
            return "number", f"{name} = {_short(v)} is not an integer number of ms within ±10^12"
    if not isinstance(b.queries, tuple | list):
        return "structure", f"queries = {_short(b.queries)} is not a list of query indices"
    for q in b.queries:
        if not _is_int(q):
            return "structure", f"query {_short(q)} is not an integer index"
    return "", ""


def _short(v: Any) -> str:
    try:
        text = repr(v)  # repr escapes control characters: one line
    except ValueError:  # an int beyond Python's digit limit for str()
        text = f"<integer of {v.bit_length()} bits>"
    return text if len(text) <= 40 else text[:37] + "..."


def query_qualities(data: InferenceData, decision: Decision) -> np.ndarray:
    """Q of every query under ``decision`` (0 when unserved), from the batches alone."""
    q_val = np.zeros(data.num_queries)
    for b in getattr(decision, "batches", ()):
        idx = np.asarray(b.queries, dtype=np.int64)
        q_val[idx] = data.quality(b.end, idx, data.model_index[b.model])
    return q_val
