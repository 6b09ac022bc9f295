"""conftest's LONG_FIRST (the modules of the long tests run first, for a short xdist
tail) names tests that exist: a renamed or moved test fails here instead of silently
losing its place."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import LONG_FIRST, long_first_rank

TESTS = Path(__file__).resolve().parent


def test_every_long_first_entry_names_a_test_function():
    assert len(set(LONG_FIRST)) == len(LONG_FIRST)
    for entry in LONG_FIRST:
        file, _, name = entry.partition("::")
        path = TESTS / file
        assert path.is_file(), f"conftest.LONG_FIRST: {entry}: no file tests/{file}"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.name for node in tree.body
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        assert name in names, f"conftest.LONG_FIRST: {entry}: no test {name} in {file}"


def test_rank_is_the_modules_first_entry():
    first = LONG_FIRST[0].partition("::")[0]
    assert long_first_rank(f"tests/{first}::test_anything[horus]") == 0
    later = next(k for k, e in enumerate(LONG_FIRST) if e.startswith("test_compete_runner"))
    assert all(long_first_rank(f"tests/{e}") == later for e in LONG_FIRST
               if e.startswith("test_compete_runner.py::"))
    assert long_first_rank("tests/test_x.py::test_unlisted[1]") == len(LONG_FIRST)
