"""The package's modules and the imports each runs, read from the source (no import)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {
    "dlsched": ROOT / "solver",
    "dlsched.formulations": ROOT / "formulations",
    "dlsched.heuristics": ROOT / "heuristics",
    "dlsched.instances": ROOT / "instances",
    "dlsched.benchmarks": ROOT / "benchmarks",
}
"""Import name → the repository folder it is installed from (pyproject's package-dir)."""
SCRIPT_DIRS = (ROOT / "instances" / "derive",)
"""Scripts kept in the repository that derived committed data; not installed."""


def package_files(folder: Path) -> list[Path]:
    """The installed ``.py`` files under ``folder`` (the scripts of SCRIPT_DIRS left out)."""
    return [p for p in folder.rglob("*.py") if not any(d in p.parents for d in SCRIPT_DIRS)]


def module_files() -> dict[str, Path]:
    """Every module of the installed package → its source file."""
    modules: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in package_files(folder):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if any(name.startswith(other + ".") or name == other
                   for other in PACKAGE_DIRS if other != package and other.startswith(package)):
                continue  # a folder of another mapping (none today)
            modules[name] = path
    return modules


def runtime_imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Modules imported when ``module`` runs, inside functions too (``if TYPE_CHECKING:``
    blocks are not run)."""
    # the sources do not change during a test session: several tests walk every module
    return set(_runtime_imports(path, module, is_package))


@cache
def _runtime_imports(path: Path, module: str, is_package: bool) -> frozenset[str]:
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
        # an import is a statement: only statements (and the handlers and match cases
        # that hold them) are walked into, not expressions (most of a tree's nodes)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                visit(child)

    visit(tree)
    return frozenset(found)
