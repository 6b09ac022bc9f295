"""Shared fixtures: every test taking ``backend`` runs on each exact backend."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ALL_BACKENDS = ("cbc", "highs", "scip", "cpsat")

# Bytecode caches (git-ignored __pycache__/) even where PYTHONDONTWRITEBYTECODE is set:
# without them every run compiles each test module again through pytest's assertion
# rewriter (~3 CPU-s per xdist worker) and every `dlsched` subprocess compiles the package
# (~0.15 CPU-s each). Python reads the caches either way; this only lets them be written.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


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
