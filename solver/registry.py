"""Registries that formulations, heuristics and instance generators fill.

``solver`` names none of them: it imports the plugin packages listed in ``PLUGINS`` on
first use, and each plugin module registers what it provides.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InputError

PLUGINS = ("formulations", "heuristics", "instances")


@dataclass(frozen=True)
class MethodSpec:
    """A solution method for one problem.

    ``run(instance, backend=, time_limit=, seed=, **options) -> MethodOutput``.
    ``backends`` is empty for methods that use no solver.
    """

    problem: str
    name: str
    kind: str  # "exact" | "heuristic" | "baseline"
    run: Callable[..., Any]
    backends: tuple[str, ...] = ()
    default_backend: str | None = None
    summary: str = ""
    export: Callable[..., None] | None = None  # (instance, path, fmt) -> writes MPS/LP


@dataclass(frozen=True)
class GeneratorSpec:
    """A seeded instance generator: ``build(seed=..., **arguments) -> Instance``.

    ``add_arguments(parser)`` adds its command-line options.
    """

    problem: str
    build: Callable[..., Any]
    add_arguments: Callable[[Any], None]
    summary: str = ""


_METHODS: dict[tuple[str, str], MethodSpec] = {}
_GENERATORS: dict[str, GeneratorSpec] = {}
_loaded = False


def check_options(options: Mapping[str, Any], allowed: Iterable[str] = ()) -> None:
    """Raise InputError naming the options a method does not take."""
    allowed = sorted(allowed)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(f"unknown options {unknown}", field="options",
                         fix=f"this method takes {', '.join(allowed) or 'no options'}")


def register_method(spec: MethodSpec) -> MethodSpec:
    _METHODS[(spec.problem, spec.name)] = spec
    return spec


def register_generator(spec: GeneratorSpec) -> GeneratorSpec:
    _GENERATORS[spec.problem] = spec
    return spec


def load_plugins() -> None:
    """Import the plugin packages once, so that they register their methods."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in PLUGINS:
        importlib.import_module(name)


def methods_for(problem: str) -> dict[str, MethodSpec]:
    load_plugins()
    return {name: spec for (p, name), spec in sorted(_METHODS.items()) if p == problem}


def get_method(problem: str, name: str) -> MethodSpec:
    methods = methods_for(problem)
    if name not in methods:
        raise InputError(
            f"no method {name!r} for problem {problem!r}",
            field="method",
            fix=f"use one of: {', '.join(methods) or '(none registered)'}",
        )
    return methods[name]


def generators() -> dict[str, GeneratorSpec]:
    load_plugins()
    return dict(sorted(_GENERATORS.items()))
