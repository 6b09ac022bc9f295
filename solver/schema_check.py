"""The bundled JSON Schemas (``solver/schema/*.json``), checked by ``fastjsonschema``, with
each violation turned into a one-line InputError naming the field and the fix.

The schemas are written in JSON Schema draft-04, whose ``integer`` is a JSON number without
a fraction or exponent (``2.0`` is not one; later drafts accept it). ``fastjsonschema``
compiles each schema to Python code once per process, on first use. Numbers are checked
before, by :func:`dlsched.files.check_plain_values` (finite, within range): for every file
by :func:`dlsched.files.read_json`, for a document built in Python by
:func:`dlsched.instance_io.instance_from_dict` and
:func:`dlsched.solution_io.solution_decision`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .errors import InputError, field_path

if TYPE_CHECKING:
    from fastjsonschema import JsonSchemaValueException

_FIXES = {
    "required": "add the missing field",
    "minimum": "capacities and amounts must be >= 0 (or the stated minimum)",
    "exclusiveMinimum": "the value must be greater than the stated minimum",
    "maximum": "the value must be at most the stated maximum (see docs/formats.md, Limits)",
    "exclusiveMaximum": "the value must be less than the stated maximum",
    "type": "use the type the format asks for (see docs/formats.md)",
    "additionalProperties": "remove the unknown field or check its spelling (see docs/formats.md)",
    "enum": "use one of the listed values",
    "pattern": "a sha256 is 64 lower-case hex digits",
    "minItems": "the list must not be empty",
    "maxItems": "the list is longer than the format allows",
    "minLength": "ids must not be empty",
    "maxLength": "the text is longer than the format allows (see docs/formats.md, Limits)",
}


@cache
def schema(name: str) -> dict[str, Any]:
    """The bundled JSON Schema ``name`` (``instance``, ``solution`` or ``params``)."""
    text = resources.files("dlsched").joinpath("schema", f"{name}.schema.json").read_text()
    return json.loads(text)


@cache
def checker(name: str, definition: str | None = None) -> Callable[[Any], Any]:
    """The compiled check of the bundled schema ``name`` (or of its ``definitions`` entry
    ``definition``); it raises ``fastjsonschema.JsonSchemaValueException``."""
    import fastjsonschema  # on first check: ``import dlsched`` does not load it

    root = schema(name)
    target = {**root, "$ref": f"#/definitions/{definition}"} if definition else root
    return fastjsonschema.compile(target, use_default=False, use_formats=False)


def has_definition(name: str, definition: str) -> bool:
    """True when the bundled schema ``name`` defines ``#/definitions/<definition>``."""
    return definition in schema(name).get("definitions", {})


def check_against_schema(doc: Any, name: str, *, definition: str | None = None,
                         prefix: tuple[str | int, ...] = ()) -> None:
    """Check ``doc`` against the bundled schema ``name`` (or its ``definitions`` entry
    ``definition``).

    Parameters
    ----------
    doc
        The parsed JSON document.
    name
        ``instance``, ``solution`` or ``params``.
    definition
        A definition of the schema to check against instead of the whole schema.
    prefix
        Path of ``doc`` in its file (e.g. ``("params",)``), put before the field named.

    Raises
    ------
    InputError
        The first violation found: the message says what is wrong, the field is its JSON
        path (e.g. ``jobs[3].num_gpus``), the fix says what to do.
    """
    check = checker(name, definition)
    from fastjsonschema import JsonSchemaValueException

    try:
        check(doc)
    except JsonSchemaValueException as exc:
        keyword, message, key = _explain(exc)
        # fastjsonschema names the value "data.jobs[3].num_gpus"
        path = field_path(prefix) + (exc.name or "data").removeprefix("data")
        if key is not None:
            path += f".{key}"
        raise InputError(message, field=path.lstrip(".") or "(top level)",
                         fix=_FIXES.get(keyword, "see docs/formats.md")) from None


def _explain(exc: JsonSchemaValueException) -> tuple[str, str, str | None]:
    """(keyword, one-line message, key below the reported path or None) of a violation."""
    rule, value, spec = exc.rule or "", exc.value, exc.definition or {}
    bound = exc.rule_definition
    shown = _short(value)
    if rule == "required":
        missing = next(k for k in bound if k not in value)
        return rule, "missing field", missing
    if rule == "additionalProperties":
        known = spec.get("properties", {})
        unknown = next(k for k in value if k not in known)
        return rule, f"Additional properties are not allowed ({_short(unknown)} was " \
                     "unexpected)", unknown
    if rule == "type":
        types = [spec["type"]] if isinstance(spec["type"], str) else spec["type"]
        return rule, f"{shown} is not of type {', '.join(repr(t) for t in types)}", None
    if rule in ("minimum", "maximum"):
        exclusive = bool(spec.get("exclusiveMinimum" if rule == "minimum"
                                  else "exclusiveMaximum"))
        side = "less than" if rule == "minimum" else "greater than"
        words = f"{side} or equal to" if exclusive else side
        keyword = ("exclusiveM" + rule[1:]) if exclusive else rule
        return keyword, f"{shown} is {words} the {rule} of {bound!r}", None
    messages = {
        "enum": f"{shown} is not one of {bound!r}",
        "pattern": f"{shown} does not match {bound!r}",
        "minLength": f"{shown} should be non-empty" if bound == 1 else f"{shown} is too short",
        "maxLength": f"{shown} is longer than {bound} characters",
        "minItems": f"{shown} should be non-empty" if bound == 1
        else f"has fewer than {bound} items",
        "maxItems": f"has more than {bound} items",
    }
    return rule, messages.get(rule, exc.message), None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
