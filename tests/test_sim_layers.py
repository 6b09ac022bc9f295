"""The simulator's modules import one way: each only from the layers below it.

``live`` owns a run's mutable state; what reads it (``view``, ``checks``) and what calls
its methods (``engine``) sit above it, so no call returns into a module that made it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SIMULATE = Path(__file__).resolve().parents[1] / "solver" / "simulate"

LAYERS = (
    ("records", "pending", "fragmentation", "live_loads"),
    ("live",),
    ("free_order",),  # an order kept on the live state, read through the view
    ("view", "checks", "caller", "prefix"),
    ("engine",),
    ("metrics",),
    ("results",),
    ("cli",),
    ("__init__",),
)
"""Bottom first; a module may import only modules of lower layers."""


def _simulate_imports(path: Path) -> set[str]:
    """Modules of ``dlsched.simulate`` that ``path`` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1:
            module = node.module
        elif node.level == 0 and (node.module or "").startswith("dlsched.simulate."):
            module = node.module.removeprefix("dlsched.simulate.")
        else:
            continue
        if module is None:  # from . import x
            found.update(alias.name for alias in node.names)
        else:
            found.add(module.split(".")[0])
    return found


def _violations(imports: dict[str, set[str]]) -> list[str]:
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    out = [f"{m}.py is in no layer of this test: add it to LAYERS" for m in imports
           if m not in rank]
    for module, targets in imports.items():
        for target in sorted(targets):
            if module in rank and target in rank and rank[target] >= rank[module]:
                out.append(f"{module} imports {target} (same or higher layer)")
    return out


def test_simulator_modules_import_only_lower_layers():
    imports = {p.stem: _simulate_imports(p) for p in SIMULATE.glob("*.py")}
    assert "live" in imports and "engine" in imports
    assert _violations(imports) == []


@pytest.mark.parametrize(("imports", "expected"), [
    ({"live": {"engine"}, "engine": {"live"}}, ["live imports engine (same or higher layer)"]),
    ({"view": {"checks"}, "checks": set()}, ["view imports checks (same or higher layer)"]),
    ({"rates": set()}, ["rates.py is in no layer of this test: add it to LAYERS"]),
])
def test_layer_check_reports_an_upward_import(imports, expected):
    assert _violations(imports) == expected


def test_import_walk_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from .records import Policy\n"
                      "def f():\n    from dlsched.simulate.engine import simulate\n"
                      "    from . import view\n    from ..jobs import Job\n")
    assert _simulate_imports(source) == {"records", "engine", "view"}
