"""The layers of docs/architecture.md: which folder may import which, checked on every
module, imports inside functions included."""

from __future__ import annotations

from imports_walk import module_files, runtime_imports

LAYER_IMPORTS: dict[str, set[str]] = {
    "core": set(),
    "simulate": {"core"},
    "serve": {"core"},
    "formulations": {"core"},
    "heuristics": {"core", "serve"},
    "instances": {"core", "simulate"},
    "rl": {"core", "simulate", "serve", "formulations", "heuristics", "instances"},
    "benchmarks": {"core", "simulate", "serve", "formulations", "heuristics", "instances",
                   "rl", "cli"},
    "cli": {"core", "simulate", "serve", "formulations", "heuristics", "instances", "rl",
            "benchmarks"},
}
"""Layer → the other layers its modules may import (docs/architecture.md, "Layers")."""

FACE = "dlsched"
"""The package face re-exports the API and declares the built-in providers; it is no layer."""

SUBPACKAGES = ("formulations", "heuristics", "instances", "benchmarks", "simulate", "serve",
               "rl")


def layer(module: str) -> str:
    """The layer of a ``dlsched`` module."""
    parts = module.split(".")
    last = parts[-1]
    if last in ("cli", "cli_support") or last.endswith("_cli"):
        return "cli"
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return parts[1]
    return "core"  # the top-level modules and dlsched.problems


def test_every_module_imports_only_the_layers_below_it():
    modules = module_files()
    broken = []
    for name, path in sorted(modules.items()):
        if name == FACE:
            continue
        mine = layer(name)
        for target in runtime_imports(path, name, path.name == "__init__.py"):
            allowed = LAYER_IMPORTS[mine] | {mine}
            if target in modules and target != FACE and layer(target) not in allowed:
                broken.append(f"{name} ({mine}) imports {target} ({layer(target)})")
    assert not broken, "\n".join(broken)


def test_the_rules_are_a_layering():
    # no two layers may import each other (cli and benchmarks aside: programs on top)
    for a, allowed in LAYER_IMPORTS.items():
        for b in allowed - {a}:
            assert a not in LAYER_IMPORTS[b] or {a, b} == {"benchmarks", "cli"}, (a, b)
