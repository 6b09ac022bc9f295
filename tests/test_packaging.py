"""The distribution installs one import package, ``dlsched``, without import cycles, and
third-party methods register through the ``dlsched.methods`` entry-point group."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile

import pytest
from imports_walk import (
    PACKAGE_DIRS,
    ROOT,
    module_files,
    package_files,
    runtime_imports,
)

import dlsched
from dlsched.registry import get_method


def test_wheel_installs_only_dlsched(tmp_path):
    # the wheel as `pip wheel --no-build-isolation .` builds it: pyproject's build backend
    # called in a process of its own in the source tree (what pip does, less pip's own
    # start: ~1 CPU-s); the same files
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"][
        "build-backend"]
    subprocess.run(
        [sys.executable, "-c", f"import sys; import {backend} as b; b.build_wheel(sys.argv[1])",
         str(tmp_path)],
        check=True, capture_output=True, cwd=ROOT,
    )
    (wheel,) = tmp_path.glob("dlsched-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        top = {name.split("/", 1)[0] for name in names}
        dist_info = next(n for n in top if n.endswith(".dist-info"))
        top_level = archive.read(f"{dist_info}/top_level.txt").decode().split()
    assert top_level == ["dlsched"]
    assert top == {"dlsched", dist_info}
    for needed in ("dlsched/py.typed", "dlsched/formulations/horus.py",
                   "dlsched/benchmarks/trace_replay.py", "dlsched/schema/instance.schema.json",
                   "dlsched/data/genie_coefficients.json"):
        assert needed in names
    # every module of the source folders ships (a subpackage missing from pyproject's
    # explicit ``packages`` list would be left out of the wheel silently)
    missing = sorted(name for name in (
        "/".join([*package.split("."), *path.relative_to(folder).parts])
        for package, folder in PACKAGE_DIRS.items() for path in package_files(folder)
    ) if name not in names)
    assert not missing, f"not in the wheel (add the package to pyproject.toml): {missing}"
    assert not [n for n in names if n.startswith("dlsched/instances/derive")]


def test_no_import_cycles():
    modules = module_files()
    graph = {
        name: sorted(m for m in runtime_imports(path, name, path.name == "__init__.py")
                     if m in modules and m != name)
        for name, path in modules.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2

    # The package face imports everything on purpose (the wiring); a cycle through it
    # would need a module that imports the face, which the graph also catches.
    for node in sorted(graph):
        if node not in state:
            dfs(node)


PACKAGE_NODES = ("serve", "rl", "simulate", "formulations", "heuristics", "instances",
                 "benchmarks", "problems")
"""Subpackages of ``dlsched`` that are one node each of the package graph; every other
module of ``dlsched`` is the node ``core``, except the face (``dlsched``) and the command
line (``dlsched.cli``), the wiring that imports the packages on purpose."""
KNOWN_PACKAGE_EDGES = {
    # cli_support lists the backends' names for the command line's --backend
    ("core", "formulations"),
    # problems build on the core's types (errors, decision, instance) while the core's
    # entry modules (instance_io, validate, solve, solution_io) look problems up by name:
    # two layers inside the one node "core"
    ("core", "problems"),
    # benchmarks.fuzz feeds malformed files to the command line (a benchmark program)
    ("benchmarks", "cli"),
}
"""Edges of package cycles that are not yet broken, each with the reason above it; a
cycle through any other edge fails."""


def _package_of(module: str) -> str:
    if module in ("dlsched", "dlsched.cli"):
        return "face" if module == "dlsched" else "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PACKAGE_NODES else "core"


def package_graph() -> dict[str, dict[str, list[str]]]:
    """Package -> imported package -> the module imports behind the edge (imports inside
    functions included: :func:`imports_walk.runtime_imports` walks the whole syntax tree)."""
    modules = module_files()
    graph: dict[str, dict[str, list[str]]] = {}
    for name, path in modules.items():
        src = _package_of(name)
        graph.setdefault(src, {})
        for target in runtime_imports(path, name, path.name == "__init__.py"):
            dst = _package_of(target) if target in modules else None
            if dst is not None and dst != src:
                graph[src].setdefault(dst, []).append(f"{name} -> {target}")
    return graph


def package_cycles(graph: dict[str, dict[str, list[str]]],
                   known: set[tuple[str, str]]) -> list[list[str]]:
    """Every elementary cycle of ``graph`` without a ``known`` edge (small graph: a DFS
    from each node over nodes after it in sorted order finds each cycle once)."""
    nodes = sorted(graph)
    out: list[list[str]] = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, {})):
            if (node, nxt) in known:
                continue
            if nxt == start:
                out.append([*path, start])
            elif nxt > start and nxt not in path:
                walk(start, nxt, [*path, nxt])

    for start in nodes:
        walk(start, start, [start])
    return out


def test_no_package_import_cycles():
    graph = package_graph()
    cycles = package_cycles(graph, KNOWN_PACKAGE_EDGES)
    described = [" -> ".join(c) + " (" + "; ".join(
        graph[a][b][0] for a, b in zip(c, c[1:], strict=False)) + ")" for c in cycles]
    assert not cycles, "package import cycles: " + " | ".join(described)
    for a, b in KNOWN_PACKAGE_EDGES:  # a known edge that is gone must leave the list
        assert b in graph.get(a, {}), f"{a} -> {b} no longer exists: drop it from the list"


def test_package_cycle_search_finds_a_cycle_and_honours_known_edges():
    graph = {"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}, "d": {"a": ["w"]}}
    assert package_cycles(graph, set()) == [["a", "b", "c", "a"]]
    assert package_cycles(graph, {("b", "c")}) == []


def test_no_library_module_imports_a_command_line_module():
    modules = module_files()
    # command-line modules: ``cli``, ``cli_support`` and ``*_cli``; runnable scripts
    # (``python -m dlsched.benchmarks.fuzz``) are programs, not library modules
    cli_modules = {m for m in modules
                   if m.split(".")[-1] in ("cli", "cli_support") or m.endswith("_cli")}
    for name, path in modules.items():
        if name in cli_modules or 'if __name__ == "__main__"' in path.read_text("utf-8"):
            continue
        imported = runtime_imports(path, name, path.name == "__init__.py")
        assert not (imported & cli_modules), f"{name} imports {imported & cli_modules}"


PLUGIN = '''
from dlsched.registry import MethodSpec, register_method
from dlsched.result import Status
from dlsched.result import MethodOutput
from dlsched.decision import Decision


def _nothing(instance, **kwargs):
    return MethodOutput(Decision(()), Status.FEASIBLE)


def register():
    register_method(MethodSpec("horus", "plugin-nothing", "heuristic", _nothing,
                               summary="places nothing (test plugin)"))
'''


def test_entry_point_plugin_registers_a_method(tmp_path, monkeypatch):
    (tmp_path / "tiny_plugin.py").write_text(PLUGIN)
    dist = tmp_path / "tiny_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[dlsched.methods]\nnothing = tiny_plugin:register\n")
    # in this process (a fresh interpreter spent ~0.4 CPU-s importing the package again),
    # set back to where a new process starts: the plugin's folder on the path, the
    # plugins not looked for yet and only the built-in methods registered (a plugin the
    # environment installs is loaded again into that copy, not twice into one table)
    from dlsched import registry
    from dlsched.instances.horus_gen import generate_horus
    from dlsched.solve import solve

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_METHODS", {
        key: spec for key, spec in registry._METHODS.items() if key in registry._METHOD_MODULES})
    try:
        r = solve(generate_horus(seed=0, nodes=2, gpus_per_node=2, beta=2), "plugin-nothing")
        assert registry._METHODS[("horus", "plugin-nothing")].run.__module__ == "tiny_plugin"
    finally:
        sys.modules.pop("tiny_plugin", None)
    assert (r.status.value, len(r.decision.placements)) == ("feasible", 0)


def test_builtin_wiring_is_explicit():
    assert get_method("horus", "exact").run.__module__ == "dlsched.formulations.horus"
    assert dlsched.solve.__module__ == "dlsched.solve"
