"""Shared fixtures: every test taking ``backend`` runs on each exact backend."""

from __future__ import annotations

import pytest

ALL_BACKENDS = ("cbc", "highs", "scip", "cpsat")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backends", default=",".join(ALL_BACKENDS),
                     help="comma-separated exact backends to test (default: all)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        chosen = [b for b in metafunc.config.getoption("--backends").split(",") if b]
        unknown = set(chosen) - set(ALL_BACKENDS)
        if unknown:
            raise pytest.UsageError(f"unknown backends {sorted(unknown)}")
        metafunc.parametrize("backend", chosen)
