"""Decisions (which job goes where) and the solution file that carries one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .canonical import sha256_of
from .errors import InputError
from .files import read_json, write_json
from .schema_check import check_against_schema

if TYPE_CHECKING:
    from .instance import Instance

FORMAT_VERSION = 1


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


def solution_to_dict(instance: Instance, decision: Decision, **meta: Any) -> dict[str, Any]:
    """Solution file form: the decision, the instance's sha256 and optional metadata."""
    doc: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "instance_sha256": instance.sha256,
        "problem": instance.problem,
        **decision.solution_fields(),
    }
    doc.update({k: v for k, v in meta.items() if v is not None})
    doc["sha256"] = sha256_of(doc)
    return doc


def save_solution(instance: Instance, decision: Decision, path: str | Path, **meta: Any) -> None:
    """Write a solution file for ``instance`` (meta: method, backend, status, objective, bound);
    gzip-compressed when the name ends in ``.gz``."""
    write_json(solution_to_dict(instance, decision, **meta), path)


def load_solution(path: str | Path, instance: Instance) -> Decision:
    """Read a solution file and check that it was written for ``instance``.

    Parameters
    ----------
    path
        A solution file (format: docs/formats.md), gzip-compressed when the name ends in
        ``.gz``.
    instance
        The instance the solution must have been written for.

    Returns
    -------
    Decision
        The decision it carries: placements, or the problem's own form (an inference
        solution's batches), read by the instance's problem.

    Raises
    ------
    InputError
        The file breaks the schema, names another instance or problem, or carries a field
        its problem does not read; the one-line message names the file and the field.
    """
    doc = read_json(path)
    try:
        return solution_decision(doc, instance)
    except InputError as exc:
        raise exc.with_source(str(path)) from None


def solution_decision(doc: Any, instance: Instance) -> Decision:
    """The decision of a solution document (already parsed) for ``instance``.

    Checks the schema, the instance's sha256 and the problem, then lets the problem read
    its decision (:meth:`Problem.decision_from_solution`; placements by default).

    Parameters
    ----------
    doc
        The parsed solution document.
    instance
        The instance it must have been written for.

    Returns
    -------
    Decision
        The decision the document carries.

    Raises
    ------
    InputError
        As :func:`load_solution`, without the file name.
    """
    from .problems.base import get_problem

    check_against_schema(doc, "solution")
    if doc["instance_sha256"] != instance.sha256:
        raise InputError(
            f"written for instance {doc['instance_sha256'][:12]}…, "
            f"not for this one ({instance.sha256[:12]}…)",
            field="instance_sha256",
            fix="pass the instance this solution was made for",
        )
    if "problem" in doc and doc["problem"] != instance.problem:
        raise InputError(
            f"a {doc['problem']!r} solution for a {instance.problem!r} instance",
            field="problem",
            fix="pass the instance this solution was made for",
        )
    decision = get_problem(instance.problem).decision_from_solution(doc)
    if decision is not None:
        return decision
    if "batches" in doc:
        raise InputError(
            f"problem {instance.problem!r} decisions have no batches",
            field="batches",
            fix="only inference solutions carry batches: list placements",
        )
    return decision_from_dict(doc["placements"])
