"""Decisions: which job goes where (the solution file that carries one: :mod:`.solution_io`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class TaskPlacement:
    """Where one container (task) of a job runs: a server and that server's GPUs."""

    task: str
    node: str
    gpus: tuple[str, ...] = ()


@dataclass(frozen=True)
class Placement:
    """The GPUs a job gets (and, for container jobs, where each container runs).

    ``start`` alone: when a snapshot decision starts the job. ``start`` and ``end``: a
    *timed* placement, one entry of an offline schedule (the job holds its GPUs over
    [start, end)); a decision whose placements carry ``end`` is validated as a schedule.
    """

    job: str
    gpus: tuple[str, ...]
    tasks: tuple[TaskPlacement, ...] = ()
    start: float | None = None
    end: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"job": self.job, "gpus": list(self.gpus)}
        if self.tasks:
            out["tasks"] = [
                {"task": t.task, "node": t.node, "gpus": list(t.gpus)} for t in self.tasks
            ]
        if self.start is not None:
            out["start"] = self.start
        if self.end is not None:
            out["end"] = self.end
        return out


@dataclass(frozen=True)
class Decision:
    """The placements chosen for some of the pending jobs; the others wait."""

    placements: tuple[Placement, ...] = ()

    @classmethod
    def of(cls, placements: Iterable[Placement]) -> Decision:
        return cls(tuple(placements))

    @cached_property
    def by_job(self) -> dict[str, Placement]:
        """Placement per job id (the last one wins; the validator reports duplicates)."""
        return {p.job: p for p in self.placements}

    @property
    def placed_jobs(self) -> tuple[str, ...]:
        return tuple(p.job for p in self.placements)

    def to_dict(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.placements]

    def solution_fields(self) -> dict[str, Any]:
        """The decision's keys in a solution file (``placements``; a problem whose decisions
        carry more, e.g. inference ``batches``, overrides this)."""
        return {"placements": self.to_dict()}


def decision_from_dict(placements: Iterable[Mapping[str, Any]]) -> Decision:
    """Decision from the ``placements`` list of a solution file."""
    out = []
    for p in placements:
        tasks = tuple(
            TaskPlacement(t["task"], t["node"], tuple(t["gpus"])) for t in p.get("tasks", [])
        )
        out.append(Placement(p["job"], tuple(p["gpus"]), tasks, p.get("start"), p.get("end")))
    return Decision(tuple(out))
