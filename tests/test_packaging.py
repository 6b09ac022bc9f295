"""The distribution installs one import package, ``dlsched``, without import cycles, and
third-party methods register through the ``dlsched.methods`` entry-point group."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import dlsched
from dlsched.registry import get_method

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {
    "dlsched": ROOT / "solver",
    "dlsched.formulations": ROOT / "formulations",
    "dlsched.heuristics": ROOT / "heuristics",
    "dlsched.instances": ROOT / "instances",
    "dlsched.benchmarks": ROOT / "benchmarks",
}
SCRIPT_DIRS = (ROOT / "instances" / "derive",)
"""Scripts kept in the repository that derived committed data; not installed."""


def _package_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*.py") if not any(d in p.parents for d in SCRIPT_DIRS)]


def test_wheel_installs_only_dlsched(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, cwd=tmp_path,
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
        for package, folder in PACKAGE_DIRS.items() for path in _package_files(folder)
    ) if name not in names)
    assert not missing, f"not in the wheel (add the package to pyproject.toml): {missing}"
    assert not [n for n in names if n.startswith("dlsched/instances/derive")]


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in _package_files(folder):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if any(name.startswith(other + ".") or name == other
                   for other in PACKAGE_DIRS if other != package and other.startswith(package)):
                continue  # a folder of another mapping (none today)
            modules[name] = path
    return modules


def _runtime_imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Modules imported when ``module`` runs (``if TYPE_CHECKING:`` blocks are not run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_no_import_cycles():
    modules = _module_files()
    graph = {
        name: sorted(m for m in _runtime_imports(path, name, path.name == "__init__.py")
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


def test_no_library_module_imports_a_command_line_module():
    modules = _module_files()
    # command-line modules: ``cli``, ``cli_support`` and ``*_cli``; runnable scripts
    # (``python -m dlsched.benchmarks.fuzz``) are programs, not library modules
    cli_modules = {m for m in modules
                   if m.split(".")[-1] in ("cli", "cli_support") or m.endswith("_cli")}
    for name, path in modules.items():
        if name in cli_modules or 'if __name__ == "__main__"' in path.read_text("utf-8"):
            continue
        imported = _runtime_imports(path, name, path.name == "__init__.py")
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


def test_entry_point_plugin_registers_a_method(tmp_path):
    (tmp_path / "tiny_plugin.py").write_text(PLUGIN)
    dist = tmp_path / "tiny_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[dlsched.methods]\nnothing = tiny_plugin:register\n")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from dlsched import solve; from dlsched.instances.horus_gen import generate_horus;"
        "r = solve(generate_horus(seed=0, nodes=2, gpus_per_node=2, beta=2), 'plugin-nothing');"
        "print(r.status.value, len(r.decision.placements))"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True,
                         capture_output=True, text=True)
    assert out.stdout.split() == ["feasible", "0"]


def test_builtin_wiring_is_explicit():
    assert get_method("horus", "exact").run.__module__ == "dlsched.formulations.horus"
    assert dlsched.solve.__module__ == "dlsched.solve"
