"""JSON Schema enforcement that turns schema errors into one-line InputErrors.

The bundled schemas use a small subset of JSON Schema 2020-12 (``type``, ``enum``,
``const``, ``minimum``/``maximum`` and their exclusive forms, ``minLength``/``maxLength``,
``pattern``, ``minItems``/``maxItems``, ``items``, ``properties``, ``required``,
``additionalProperties``, ``$ref`` to ``#/$defs/...``). :func:`compile_schema` turns such a
schema into nested Python closures once, so a 15,000-job workload is checked in tens of
milliseconds instead of seconds; tests check that it agrees with the ``jsonschema``
reference implementation. It is stricter in two ways: numbers must be finite, and an
``integer`` must be a JSON integer (``2.0`` is not one).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from .errors import InputError, field_path

_FIXES = {
    "required": "add the missing field",
    "minimum": "capacities and amounts must be >= 0 (or the stated minimum)",
    "exclusiveMinimum": "the value must be greater than the stated minimum",
    "maximum": "the value must be at most the stated maximum (see docs/formats.md, Limits)",
    "exclusiveMaximum": "the value must be less than the stated maximum",
    "type": "use the type the format asks for (see docs/formats.md)",
    "additionalProperties": "remove the unknown field or check its spelling (see docs/formats.md)",
    "enum": "use one of the listed values",
    "const": "this dlsched reads format_version 1",
    "pattern": "a sha256 is 64 lower-case hex digits",
    "minItems": "the list must not be empty",
    "maxItems": "the list is longer than the format allows",
    "minLength": "ids must not be empty",
    "maxLength": "the text is longer than the format allows (see docs/formats.md, Limits)",
    "finite": "use a finite number (JSON has no NaN or Infinity)",
}

Check = Callable[[Any], None]


class SchemaFailure(Exception):
    """One violation: the keyword, the message, and the path (built while unwinding)."""

    def __init__(self, keyword: str, message: str) -> None:
        super().__init__(message)
        self.keyword = keyword
        self.message = message
        self.path: list[str | int] = []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, ref: str) -> Check:
        if ref not in self.refs:
            if not ref.startswith("#/$defs/"):
                raise ValueError(f"unsupported $ref {ref!r}")
            holder: list[Check] = []
            self.refs[ref] = lambda v: holder[0](v)  # placeholder for recursive refs
            compiled = self.compile(self.root["$defs"][ref.removeprefix("#/$defs/")])
            holder.append(compiled)
            self.refs[ref] = compiled
        return self.refs[ref]

    def compile(self, s: dict[str, Any]) -> Check:  # noqa: C901 - one branch per keyword
        known = {"$schema", "$id", "title", "description", "$defs", "$comment", "type", "enum",
                 "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                 "minLength", "maxLength", "pattern", "minItems", "maxItems", "items",
                 "properties", "required", "additionalProperties", "$ref", "anyOf", "oneOf",
                 "allOf", "not"}
        unknown = set(s) - known
        if unknown:
            raise ValueError(f"unsupported schema keywords {sorted(unknown)}")
        fast = self._plain_number(s)
        if fast is not None:
            return fast
        checks: list[Check] = []
        if "$ref" in s:
            checks.append(self.ref(s["$ref"]))
        if "type" in s:
            names = [s["type"]] if isinstance(s["type"], str) else list(s["type"])
            tests = [_TYPES[n] for n in names]
            label = ", ".join(repr(n) for n in names)

            def type_check(v: Any, tests: list = tests, label: str = label) -> None:
                for t in tests:
                    if t(v):
                        return
                raise SchemaFailure("type", f"{_short(v)} is not of type {label}")

            checks.append(type_check)
        if "const" in s:
            const = s["const"]

            def const_check(v: Any, const: Any = const) -> None:
                if type(v) is not type(const) or v != const:
                    raise SchemaFailure("const", f"{const!r} was expected")

            checks.append(const_check)
        if "enum" in s:
            options = list(s["enum"])

            def enum_check(v: Any, options: list = options) -> None:
                if not any(type(v) is type(o) and v == o for o in options):
                    raise SchemaFailure("enum", f"{_short(v)} is not one of {options!r}")

            checks.append(enum_check)
        checks.extend(self._numeric(s))
        checks.extend(self._string(s))
        if any(k in s for k in ("items", "minItems", "maxItems")):
            checks.append(self._array(s))
        if any(k in s for k in ("properties", "required", "additionalProperties")):
            checks.append(self._object(s))
        checks.extend(self._combinators(s))
        if len(checks) == 1:
            return checks[0]

        def all_of(v: Any, checks: list[Check] = checks) -> None:
            for c in checks:
                c(v)

        return all_of

    def _combinators(self, s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        for sub in s.get("allOf", []):
            out.append(self.compile(sub))
        for key in ("anyOf", "oneOf"):
            if key not in s:
                continue
            options = [self.compile(sub) for sub in s[key]]

            def some(v: Any, options: list[Check] = options, key: str = key) -> None:
                passed, first = 0, None
                for option in options:
                    try:
                        option(v)
                        passed += 1
                    except SchemaFailure as exc:
                        first = first or exc
                if passed == 0:
                    raise first or SchemaFailure(key, "matches none of the allowed forms")
                if key == "oneOf" and passed > 1:
                    raise SchemaFailure(key, f"{_short(v)} matches more than one allowed form")

            out.append(some)
        if "not" in s:
            negated = self.compile(s["not"])

            def not_(v: Any) -> None:
                try:
                    negated(v)
                except SchemaFailure:
                    return
                raise SchemaFailure("not", f"{_short(v)} is not allowed here")

            out.append(not_)
        return out

    @staticmethod
    def _plain_number(s: dict[str, Any]) -> Check | None:
        """One closure for the common ``{"type": "number"|"integer", bounds...}``."""
        bound_keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        if s.get("type") not in ("number", "integer") or set(s) - {"type", *bound_keys}:
            return None
        integer = s["type"] == "integer"
        lo, hi = s.get("minimum", -math.inf), s.get("maximum", math.inf)
        xlo, xhi = s.get("exclusiveMinimum", -math.inf), s.get("exclusiveMaximum", math.inf)

        def number(v: Any) -> None:
            t = type(v)
            if t is float:
                if integer:
                    raise SchemaFailure("type", f"{_short(v)} is not of type 'integer'")
                if v != v or v in (math.inf, -math.inf):
                    raise SchemaFailure("finite", f"{v} is not a finite number")
            elif t is not int:
                raise SchemaFailure("type", f"{_short(v)} is not of type {s['type']!r}")
            if lo <= v <= hi and xlo < v < xhi:
                return
            for key, ok, words in (
                    ("minimum", v >= lo, "is less than the minimum of"),
                    ("maximum", v <= hi, "is greater than the maximum of"),
                    ("exclusiveMinimum", v > xlo, "is less than or equal to the minimum of"),
                    ("exclusiveMaximum", v < xhi, "is greater than or equal to the maximum of")):
                if not ok:
                    raise SchemaFailure(key, f"{_short(v)} {words} {s[key]!r}")

        return number

    @staticmethod
    def _numeric(s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []

        def is_num(v: Any) -> bool:
            return type(v) is int or type(v) is float

        def finite(v: Any) -> None:
            if type(v) is float and not math.isfinite(v):
                raise SchemaFailure("finite", f"{v} is not a finite number")

        if any(k in s for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")) \
                or s.get("type") in ("number", "integer") \
                or (isinstance(s.get("type"), list) and "number" in s["type"]):
            out.append(finite)
        bounds = (
            ("minimum", lambda v, b: v >= b, "is less than the minimum of"),
            ("maximum", lambda v, b: v <= b, "is greater than the maximum of"),
            ("exclusiveMinimum", lambda v, b: v > b, "is less than or equal to the minimum of"),
            ("exclusiveMaximum", lambda v, b: v < b,
             "is greater than or equal to the maximum of"),
        )
        for key, ok, words in bounds:
            if key in s:
                bound = s[key]

                def bound_check(v: Any, bound: Any = bound, ok: Any = ok, words: str = words,
                                key: str = key) -> None:
                    if is_num(v) and not ok(v, bound):
                        raise SchemaFailure(key, f"{_short(v)} {words} {bound!r}")

                out.append(bound_check)
        return out

    @staticmethod
    def _string(s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        lo, hi = s.get("minLength"), s.get("maxLength")
        if lo is not None or hi is not None:
            def length(v: Any, lo: int | None = lo, hi: int | None = hi) -> None:
                if type(v) is str:
                    if lo is not None and len(v) < lo:
                        raise SchemaFailure("minLength", f"{_short(v)} should be non-empty"
                                            if lo == 1 else f"{_short(v)} is too short")
                    if hi is not None and len(v) > hi:
                        raise SchemaFailure("maxLength",
                                            f"{_short(v)} is longer than {hi} characters")
            out.append(length)
        if "pattern" in s:
            rx = re.compile(s["pattern"])

            def pattern(v: Any, rx: re.Pattern = rx) -> None:
                if type(v) is str and not rx.search(v):
                    raise SchemaFailure("pattern", f"{_short(v)} does not match {rx.pattern!r}")

            out.append(pattern)
        return out

    def _array(self, s: dict[str, Any]) -> Check:
        item = self.compile(s["items"]) if "items" in s else None
        lo, hi = s.get("minItems"), s.get("maxItems")

        def array(v: Any) -> None:
            if type(v) is not list:
                return
            if lo is not None and len(v) < lo:
                raise SchemaFailure("minItems", f"{_short(v)} should be non-empty"
                                    if lo == 1 else f"has fewer than {lo} items")
            if hi is not None and len(v) > hi:
                raise SchemaFailure("maxItems", f"has more than {hi} items")
            if item is not None:
                for i, x in enumerate(v):
                    try:
                        item(x)
                    except SchemaFailure as exc:
                        exc.path.insert(0, i)
                        raise

        return array

    def _object(self, s: dict[str, Any]) -> Check:
        props = {k: self.compile(v) for k, v in s.get("properties", {}).items()}
        required = list(s.get("required", []))
        extra = s.get("additionalProperties", True)
        extra_check = self.compile(extra) if isinstance(extra, dict) else None
        closed = extra is False

        def obj(v: Any) -> None:
            if type(v) is not dict:
                return
            if closed:
                unknown = [k for k in v if k not in props]
                if unknown:
                    exc = SchemaFailure("additionalProperties",
                                        f"Additional properties are not allowed "
                                        f"({_short(unknown[0])} was unexpected)")
                    exc.path.append(unknown[0])
                    raise exc
            for key in required:
                if key not in v:
                    exc = SchemaFailure("required", "missing field")
                    exc.path.append(key)
                    raise exc
            for key, x in v.items():
                check = props.get(key, extra_check)
                if check is None:
                    continue
                try:
                    check(x)
                except SchemaFailure as exc:
                    exc.path.insert(0, key)
                    raise

        return obj


def compile_schema(doc: dict[str, Any], pointer: str | None = None) -> Check:
    """A checker for the schema ``doc`` (or for its ``#/$defs/NAME`` when ``pointer`` is
    that reference); it raises :class:`SchemaFailure` at the first violation."""
    compiler = _Compiler(doc)
    return compiler.ref(pointer) if pointer else compiler.compile(doc)


@cache
def schema(name: str) -> dict[str, Any]:
    """The bundled JSON Schema ``name`` (``instance``, ``solution`` or ``params``)."""
    text = resources.files("dlsched").joinpath("schema", f"{name}.schema.json").read_text()
    return json.loads(text)


@cache
def _checker(name: str, pointer: str | None) -> Check:
    return compile_schema(schema(name), pointer)


def has_definition(name: str, definition: str) -> bool:
    """True when the bundled schema ``name`` defines ``#/$defs/<definition>``."""
    return definition in schema(name).get("$defs", {})


def check_against_schema(doc: Any, name: str, *, definition: str | None = None,
                         prefix: tuple[str | int, ...] = ()) -> None:
    """Raise InputError for the first violation of ``doc`` against the bundled schema
    ``name`` (or its ``$defs`` entry ``definition``), the field named by its path below
    ``prefix``."""
    check = _checker(name, f"#/$defs/{definition}" if definition else None)
    try:
        check(doc)
    except SchemaFailure as exc:
        raise InputError(
            exc.message,
            field=field_path([*prefix, *exc.path]) or "(top level)",
            fix=_FIXES.get(exc.keyword, "see docs/formats.md"),
        ) from None
