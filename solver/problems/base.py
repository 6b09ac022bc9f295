"""The Problem interface every scheduling problem implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InputError

if TYPE_CHECKING:
    from ..decision import Decision
    from ..instance import Instance


@dataclass(frozen=True)
class Violation:
    """One reason a decision is infeasible. ``kind`` is a stable machine-readable tag."""

    kind: str
    job: str | None
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.job + ': ' if self.job else ''}{self.message}"


class Problem:
    """Base class: subclass it, set the class attributes and implement the hooks."""

    name: ClassVar[str]
    sense: ClassVar[str] = "min"  # "min" or "max"
    job_fields: ClassVar[tuple[str, ...]] = ()
    exclusive_gpus: ClassVar[bool] = False
    whole_batch: ClassVar[bool] = False  # a decision must place every pending job or none
    objective_name: ClassVar[str] = "objective"

    def parse_params(self, params: Mapping[str, Any]) -> Any:
        """Typed, validated parameters; raise InputError (field ``params.X``) when bad."""
        return params

    def check_instance(self, instance: Instance) -> None:
        """Raise InputError when the instance lacks what this problem needs."""
        self.parse_params(instance.params)
        for i, job in enumerate(instance.jobs):
            for name in self.job_fields:
                if getattr(job, name) is None:
                    raise InputError(
                        f"job {job.id!r} has no {name}",
                        field=f"jobs[{i}].{name}",
                        fix=f"problem {self.name!r} needs {name} on every job",
                    )

    def check_decision(self, instance: Instance, decision: Decision) -> list[Violation]:
        """Problem-specific feasibility rules beyond the generic ones."""
        return []

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        """The objective value of a (valid) decision, from the decision alone."""
        raise NotImplementedError


_PROBLEMS: dict[str, Problem] = {}


def register_problem(problem: Problem) -> Problem:
    """Add a problem to the registry (idempotent for the same object)."""
    _PROBLEMS[problem.name] = problem
    return problem


def get_problem(name: str, *, field: str = "problem") -> Problem:
    """The registered problem ``name``; unknown names are an InputError."""
    try:
        return _PROBLEMS[name]
    except KeyError:
        raise InputError(
            f"unknown problem {name!r}",
            field=field,
            fix=f"use one of: {', '.join(sorted(_PROBLEMS))}",
        ) from None


def problem_names() -> list[str]:
    """Names of the registered problems, sorted."""
    return sorted(_PROBLEMS)
