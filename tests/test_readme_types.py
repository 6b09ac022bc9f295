"""The README's Python snippets pass ``mypy --strict`` against the package's own types
(issue 31, item 3): what a user's type checker says about the documented API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, Path]:
    """The link tree and one mypy cache for both tests: the second reads the package's and
    the standard library's analysis from the first's cache (the verdicts are mypy's)."""
    root = tmp_path_factory.mktemp("mypy")
    return _link_tree(root / "site"), root / "cache"


def test_readme_python_snippets_pass_mypy_strict(tmp_path, site):
    snippets = _snippets()
    assert snippets, "the README has no ```python block"
    files = []
    for i, code in enumerate(snippets):
        path = tmp_path / f"readme_snippet_{i}.py"
        path.write_text(code, encoding="utf-8")
        files.append(path)
    run = _mypy(files, *site)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mypy_sees_the_package_types(tmp_path, site):
    # the check above is not empty: passing a result's optional decision unguarded, the
    # README's former line, is an error mypy finds through dlsched's annotations
    path = tmp_path / "unguarded.py"
    path.write_text("from dlsched import load_instance, solve, validate\n"
                    "instance = load_instance('snapshot.json')\n"
                    "result = solve(instance, method='greedy')\n"
                    "assert validate(instance, result.decision).ok\n", encoding="utf-8")
    run = _mypy([path], *site)
    assert run.returncode == 1
    assert 'has incompatible type "Decision | None"; expected "Decision"' in run.stdout
