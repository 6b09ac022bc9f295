"""Registries that formulations, heuristics and instance generators fill.

The core names none of them. Built-in methods and generators are known by name before
their modules are imported: ``dlsched.formulations``, ``dlsched.heuristics`` and
``dlsched.instances`` each hold a table (problem, method) → module, or generator name →
module, and hand it to :func:`declare_methods` / :func:`declare_generators` when the
package face imports them. A module is imported the first time one of its methods is
asked for (:func:`get_method`) or listed (:func:`methods_for`, :func:`generators`); on
import it registers with :func:`register_method` / :func:`register_generator`.
Third-party packages register through the entry-point group ``dlsched.methods`` (see
:func:`load_entry_points`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from .errors import InputError

ENTRY_POINT_GROUP = "dlsched.methods"


@dataclass(frozen=True)
class MethodSpec:
    """A solution method for one problem.

    ``run(instance, backend=, time_limit=, seed=, **options) -> MethodOutput``.
    ``backends`` is empty for methods that use no solver.
    """

    problem: str
    name: str
    kind: str
    """``exact`` (a model solved to proven optimality when time allows), ``bound`` (a
    proven bound with a feasible schedule, optimal only when they meet), ``heuristic``
    (a paper's algorithm), ``baseline`` (a simple rule the papers compare against) or
    ``learned`` (a trained policy)."""
    run: Callable[..., Any]
    backends: tuple[str, ...] = ()
    default_backend: str | None = None
    summary: str = ""
    export: Callable[..., None] | None = None  # (instance, path, fmt) -> writes MPS/LP
    refusal: Callable[[Any], str | None] | None = None
    """``refusal(instance)``: why the method does not take ``instance`` by design (the
    one-line reason, e.g. an offline schedule asked for a snapshot with running jobs), or
    ``None`` when it takes it; ``None`` (no hook): it takes every instance of its problem.
    The benchmark runner records such pairs as ``n/a`` with the reason instead of running
    them."""
    objective: str | None = None
    """For methods that return offline schedules (timed decisions): the problem's schedule
    objective they optimize (``Problem.schedule_objectives``); ``None``: the snapshot
    objective. ``solve`` evaluates the decision with it."""


@dataclass(frozen=True)
class GeneratorSpec:
    """A seeded instance generator: ``build(seed=..., **arguments) -> Instance``.

    ``add_arguments(parser)`` adds its command-line options.
    """

    problem: str
    build: Callable[..., Any]
    add_arguments: Callable[[Any], None]
    summary: str = ""
    name: str | None = None  # the ``dlsched generate NAME`` word; default: the problem

    @property
    def key(self) -> str:
        return self.name or self.problem


_METHODS: dict[tuple[str, str], MethodSpec] = {}
_GENERATORS: dict[str, GeneratorSpec] = {}
_METHOD_MODULES: dict[tuple[str, str], str] = {}
"""(problem, method) → the built-in module that registers it (from the declared tables)."""
_GENERATOR_MODULES: dict[str, str] = {}
"""``dlsched generate`` name → the built-in module that registers it."""
_loaded = False


def check_options(options: Mapping[str, Any], allowed: Iterable[str] = ()) -> None:
    """Raise InputError naming the options a method does not take."""
    allowed = sorted(allowed)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(f"unknown options {unknown}", field="options",
                         fix=f"this method takes {', '.join(allowed) or 'no options'}")


OptionRule = tuple[str, float | None, float | None]
"""How an option's value is checked: (kind, lowest, highest); kind is ``"int"``,
``"float"`` or ``"bool"``, bounds inclusive, ``None`` for no bound; kind ``"float>"`` is a
float strictly above its lowest (e.g. ``("float>", 0, None)``: a positive number); kinds
``"str"`` and ``"mapping"`` check the type only (bounds ``None``)."""
BOOL: OptionRule = ("bool", None, None)
"""The rule of an on/off option."""


def check_option_values(options: Mapping[str, Any], rules: Mapping[str, OptionRule],
                        nullable: Iterable[str] = ()) -> None:
    """Raise InputError naming the first option whose value breaks its rule.

    Parameters
    ----------
    options
        The method's options (names are checked by :func:`check_options`).
    rules
        Per option name: (kind, lowest, highest); options without a rule are not checked.
    nullable
        Options that may also be ``None`` (null: the method's default).
    """
    nullable = set(nullable)
    for name, value in options.items():
        if name not in rules or (value is None and name in nullable):
            continue
        kind, lo, hi = rules[name]
        if kind == "bool":
            ok, what = isinstance(value, bool), "true or false"
        elif kind in ("str", "mapping"):
            ok = isinstance(value, str if kind == "str" else Mapping)
            what = "a string" if kind == "str" else "an object (name: value)"
            what += " or null" if name in nullable else ""
        else:
            number = isinstance(value, int | float) and not isinstance(value, bool)
            ok = number and (kind != "int" or isinstance(value, int)) and (
                isinstance(value, int) or math.isfinite(value))  # ints: no float overflow
            above = kind == "float>"
            ok = ok and (lo is None or value > lo or (not above and value == lo))
            ok = ok and (hi is None or value <= hi)
            noun = "an integer" if kind == "int" else "a number"
            what = noun + (f" > {lo:g} and <= {hi:g}" if above and hi is not None
                           else f" > {lo:g}" if above
                           else f" from {lo:g} to {hi:g}" if lo is not None and hi is not None
                           else f" >= {lo:g}" if lo is not None
                           else f" <= {hi:g}" if hi is not None else "")
            what += " or null" if name in nullable else ""
        if not ok:
            raise InputError(f"{name} = {value!r}"[:80], field=f"options.{name}",
                             fix=f"use {what}")


def _declare(package: str, table: Mapping[Any, str], into: dict[Any, str]) -> None:
    for key, module in table.items():
        name = f"{package}.{module}"
        if into.setdefault(key, name) != name:
            raise ValueError(f"{key} is declared by both {into[key]} and {name}")


def declare_methods(package: str, table: Mapping[tuple[str, str], str]) -> None:
    """Declare built-in methods: ``table`` maps (problem, method) to the module of
    ``package`` (a name relative to it) whose import registers that method."""
    _declare(package, table, _METHOD_MODULES)


def declare_generators(package: str, table: Mapping[str, str]) -> None:
    """Declare built-in generators: ``table`` maps a ``dlsched generate`` name to the
    module of ``package`` (relative name) whose import registers it."""
    _declare(package, table, _GENERATOR_MODULES)


def _check_new(what: str, label: str, key: Any, registered: Mapping[Any, Any],
               declared: Mapping[Any, str]) -> None:
    # A declared name is registered by its own module only, so the answer never depends
    # on whether a plugin or that module was imported first; the module is in
    # sys.modules from the moment its import starts.
    owner = declared.get(key)
    if key in registered or (owner is not None and owner not in sys.modules):
        raise InputError(f"{what} {label} is registered twice"
                         + (f" (it is {owner}'s)" if owner else ""), field=what,
                         fix=f"give the new {what} another name")


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add a method; a (problem, name) already registered or declared by another module
    is an InputError."""
    key = (spec.problem, spec.name)
    _check_new("method", f"{spec.problem}/{spec.name}", key, _METHODS, _METHOD_MODULES)
    _METHODS[key] = spec
    return spec


def register_generator(spec: GeneratorSpec) -> GeneratorSpec:
    """Add a generator; a name already registered or declared by another module is an
    InputError."""
    _check_new("generator", spec.key, spec.key, _GENERATORS, _GENERATOR_MODULES)
    _GENERATORS[spec.key] = spec
    return spec


def load_entry_points() -> None:
    """Load third-party methods once, from the entry-point group ``dlsched.methods``.

    Each entry point names a module (importing it registers its methods) or a callable
    taking no arguments that registers them, e.g. in the plugin's ``pyproject.toml``::

        [project.entry-points."dlsched.methods"]
        mymethods = "my_package.dlsched_methods"

    A plugin that fails to load is an :class:`InputError` naming it.
    """
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points  # ~30 ms: only once plugins are looked for

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
            if callable(loaded):
                loaded()
        except Exception as exc:  # a broken plugin is reported, not hidden
            raise InputError(
                f"plugin {entry.name!r} ({entry.value}) failed to load: "
                f"{type(exc).__name__}: {exc}",
                field=f"entry point {ENTRY_POINT_GROUP}",
                fix="fix or uninstall the plugin",
            ) from None


def methods_for(problem: str) -> dict[str, MethodSpec]:
    """Every method of ``problem`` by name, sorted (imports the modules that register
    them, and the plugins)."""
    for module in sorted({m for (p, _), m in _METHOD_MODULES.items() if p == problem}):
        import_module(module)
    load_entry_points()
    return {name: spec for (p, name), spec in sorted(_METHODS.items()) if p == problem}


def get_method(problem: str, name: str) -> MethodSpec:
    """The method ``name`` of ``problem``; a built-in one imports only its own module."""
    key = (problem, name)
    if key not in _METHODS:
        if key in _METHOD_MODULES:
            import_module(_METHOD_MODULES[key])
        else:
            load_entry_points()
    if key not in _METHODS:
        raise InputError(
            f"no method {name!r} for problem {problem!r}",
            field="method",
            fix=f"use one of: {', '.join(methods_for(problem)) or '(none registered)'}",
        )
    return _METHODS[key]


def generators() -> dict[str, GeneratorSpec]:
    """Every generator by its ``dlsched generate`` name, sorted (imports them all)."""
    for module in sorted(set(_GENERATOR_MODULES.values())):
        import_module(module)
    load_entry_points()
    return dict(sorted(_GENERATORS.items()))
