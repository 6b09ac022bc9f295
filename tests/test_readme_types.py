"""The README's Python snippets pass ``mypy --strict`` against the package's own types
(issue 31, item 3): what a user's type checker says about the documented API."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dlsched.files import locked

ROOT = Path(__file__).resolve().parents[1]
# mypy's incremental cache, kept between runs (mypy writes a .gitignore into it): it
# rechecks what changed (a module's hash or the options), so a warm run gives the same
# messages in ~0.2 CPU-s instead of ~3.6 (the analysis of dlsched, numpy and pandas)
CACHE = ROOT / ".mypy_cache" / "readme-snippets"

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def _snippets() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def _link_tree(dest: Path) -> Path:
    """The installed layout (``dlsched``, ``dlsched.formulations``, ...) as links to the
    repository's folders, from pyproject's ``package-dir``: what `pip install .` or
    setuptools' strict editable mode gives mypy (the default editable install is an import
    hook, which mypy cannot follow)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    for name, folder in sorted(mapping.items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*name.split("."))
        if "." not in name:  # the root package: its own folder, its files linked
            target.mkdir(parents=True)
            for child in (ROOT / folder).iterdir():
                if child.name != "__pycache__":
                    (target / child.name).symlink_to(child)
        else:
            assert not target.exists(), f"{name} clashes with a module of its parent"
            target.symlink_to(ROOT / folder, target_is_directory=True)
    return dest


def _mypy(files: list[Path], tree: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-error-summary", "--cache-dir", str(cache), *map(str, files)],
        capture_output=True, text=True, env=env, cwd=files[0].parent, check=False)


# passing a result's optional decision unguarded, the README's former line: an error mypy
# must find through dlsched's annotations (so the check of the snippets is not empty)
UNGUARDED = ("from dlsched import load_instance, solve, validate\n"
             "instance = load_instance('snapshot.json')\n"
             "result = solve(instance, method='greedy')\n"
             "assert validate(instance, result.decision).ok\n")


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> tuple[list[Path], Path, subprocess.CompletedProcess[str]]:
    """One mypy run (a process, the package's analysis done once) over the README's
    snippets and the unguarded file: the snippets' paths, the unguarded one's, the run."""
    root = tmp_path_factory.mktemp("mypy")
    snippets = _snippets()
    assert snippets, "the README has no ```python block"
    src = root / "src"
    src.mkdir()
    files = []
    for i, code in enumerate(snippets):
        path = src / f"readme_snippet_{i}.py"
        path.write_text(code, encoding="utf-8")
        files.append(path)
    unguarded = src / "unguarded.py"
    unguarded.write_text(UNGUARDED, encoding="utf-8")
    tree = _link_tree(root / "site")
    CACHE.parent.mkdir(exist_ok=True)
    with locked(CACHE.parent):  # one mypy at a time on the cache (xdist workers, sessions)
        run = _mypy([*files, unguarded], tree, CACHE)
        if run.returncode not in (0, 1):  # 2: mypy failed; a damaged cache is not a verdict
            shutil.rmtree(CACHE, ignore_errors=True)
            run = _mypy([*files, unguarded], tree, CACHE)
    return files, unguarded, run


def _errors_in(run: subprocess.CompletedProcess[str], path: Path) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith(path.name + ":")]


def test_readme_python_snippets_pass_mypy_strict(checked):
    files, unguarded, run = checked
    assert run.returncode in (0, 1), run.stdout + run.stderr  # 2: mypy itself failed
    assert [line for line in run.stdout.splitlines()
            if not line.startswith(unguarded.name + ":")] == [], run.stdout + run.stderr
    assert all(_errors_in(run, f) == [] for f in files)


def test_mypy_sees_the_package_types(checked):
    _, unguarded, run = checked
    assert run.returncode == 1, run.stdout + run.stderr
    errors = _errors_in(run, unguarded)
    assert any('has incompatible type "Decision | None"; expected "Decision"' in line
               for line in errors), run.stdout
