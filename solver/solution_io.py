"""Solution files: write a decision for an instance, read one back and check it belongs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .canonical import sha256_of
from .decision import Decision, decision_from_dict
from .errors import InputError
from .files import check_plain_values, read_json_as, write_json
from .problems.base import get_problem
from .schema_check import check_against_schema

if TYPE_CHECKING:
    from .instance import Instance

FORMAT_VERSION = 1
"""The solution file format's version (docs/formats.md)."""


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
    return read_json_as(path, lambda doc: _decision_from_checked(doc, instance))


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
        As :func:`load_solution`, without the file name; also a number or nesting beyond
        the file limits (:func:`dlsched.files.check_plain_values`).
    """
    check_plain_values(doc)
    return _decision_from_checked(doc, instance)


def _decision_from_checked(doc: Any, instance: Instance) -> Decision:
    """:func:`solution_decision` of a document :func:`dlsched.files.read_json` read (its
    numbers and nesting are already checked)."""
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
