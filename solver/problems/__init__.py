"""Problem definitions: what a valid decision is and what it costs, independent of any model.

A problem declares the job fields it needs, whether GPUs are exclusive, its objective
sense, its own extra feasibility rules and its evaluator. Formulations and heuristics
read these definitions; none of them is trusted to check itself.
"""

from __future__ import annotations

from ..errors import InputError
from .base import Problem, Violation

_PROBLEMS: dict[str, Problem] = {}


def register_problem(problem: Problem) -> Problem:
    """Add a problem to the registry (idempotent for the same object)."""
    _PROBLEMS[problem.name] = problem
    return problem


def get_problem(name: str, *, field: str = "problem") -> Problem:
    """The registered problem ``name``; unknown names are an InputError."""
    _load_builtin()
    try:
        return _PROBLEMS[name]
    except KeyError:
        raise InputError(
            f"unknown problem {name!r}",
            field=field,
            fix=f"use one of: {', '.join(sorted(_PROBLEMS))}",
        ) from None


def problem_names() -> list[str]:
    _load_builtin()
    return sorted(_PROBLEMS)


_loaded = False


def _load_builtin() -> None:
    """Import every problem module of this package once (each registers itself)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


__all__ = ["Problem", "Violation", "get_problem", "problem_names", "register_problem"]
