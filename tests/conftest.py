"""Shared fixtures: every test taking ``backend`` runs on each exact backend."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

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


def readable_dir() -> Path:
    """A fresh folder in the system's temporary folder that every user may read (0755).

    Under root, ``compete`` runs each entrant as an unprivileged user of its own, who
    cannot enter pytest's temporary folders (0700): entrant scripts live here instead.
    """
    path = Path(tempfile.mkdtemp(prefix="dlsched-test-entrants-"))
    path.chmod(0o755)
    return path


@pytest.fixture
def entrant_dir():
    """:func:`readable_dir`, removed after the test."""
    path = readable_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
