"""JSON Schema enforcement that turns schema errors into one-line InputErrors."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from .errors import InputError, field_path

_FIXES = {
    "required": "add the missing field",
    "minimum": "capacities and amounts must be >= 0 (or the stated minimum)",
    "exclusiveMinimum": "the value must be greater than the stated minimum",
    "type": "use the type the format asks for (see docs/formats.md)",
    "additionalProperties": "remove the unknown field or check its spelling (see docs/formats.md)",
    "enum": "use one of the listed values",
    "const": "this dlsched reads format_version 1",
    "pattern": "a sha256 is 64 lower-case hex digits",
    "minItems": "the list must not be empty",
    "minLength": "ids must not be empty",
}


@cache
def schema(name: str) -> dict[str, Any]:
    """The bundled JSON Schema ``name`` (``instance`` or ``solution``)."""
    text = resources.files("dlsched").joinpath("schema", f"{name}.schema.json").read_text()
    return json.loads(text)


def check_against_schema(doc: Any, name: str) -> None:
    """Raise InputError for the first (deepest-path) schema violation of ``doc``."""
    validator = jsonschema.Draft202012Validator(schema(name))
    errors = sorted(validator.iter_errors(doc), key=lambda e: (list(e.path), e.validator))
    if not errors:
        return
    err = jsonschema.exceptions.best_match(errors)
    path = list(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else ""
        path = [*path, missing]
        message = "missing field"
    else:
        message = err.message
    raise InputError(
        message,
        field=field_path(path) or "(top level)",
        fix=_FIXES.get(str(err.validator), "see docs/formats.md"),
    )
