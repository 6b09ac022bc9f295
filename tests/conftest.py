"""Shared fixtures: every test taking ``backend`` runs on each exact backend; ``fresh`` is
what one fresh interpreter saw (tests/fresh_interpreter.py)."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import fresh_interpreter
import pytest

ALL_BACKENDS = ("cbc", "highs", "scip", "cpsat")

# Bytecode caches (git-ignored __pycache__/) even where PYTHONDONTWRITEBYTECODE is set:
# without them every run compiles each test module again through pytest's assertion
# rewriter (~3 CPU-s per xdist worker) and every `dlsched` subprocess compiles the package
# (~0.15 CPU-s each). Python reads the caches either way; this only lets them be written.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# One BLAS / OpenMP thread per worker (and for the processes tests start), read when numpy
# and torch load, after this: with -n 2 on two cores a second thread only spins beside the
# other worker (the suite took ~7 % less CPU and ~3.5 s less wall time, measured in pairs).
# The thread count does not change a result (tests/test_sched2_dqn_live.py compares Q-values
# at two threads and one); the tests about thread counts set theirs.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the `torch` tests first (a stable sort): xdist's worksteal hands each worker a
    # contiguous share of this order and steals from a share's end
    items.sort(key=lambda item: item.get_closest_marker("torch") is None)


def pytest_runtest_logfinish() -> None:
    # What has outlived a test (imported libraries, caches, fixtures) goes to the collector's
    # permanent generation: otherwise each full collection walks it all again (measured with
    # -n 2: GC took ~7 CPU-s of a run, full collections ~5 of them; after this ~2, for
    # ~60 MB more peak memory per worker: cyclic garbage a test leaves is not collected)
    gc.freeze()


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


@pytest.fixture(scope="session")
def fresh(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict:
    """What a fresh interpreter saw at each step of tests/fresh_interpreter.py, run once
    per test session (~1.6 CPU-s): with ``-n``, the first worker to ask runs it and leaves
    the answer, under a lock, in the folder the workers' temporary folders share."""
    if worker_id == "master":
        return fresh_interpreter.run()
    answer = tmp_path_factory.getbasetemp().parent / "fresh-interpreter.json"
    with open(answer.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not answer.exists():
            answer.write_text(json.dumps(fresh_interpreter.run()), encoding="utf-8")
        return json.loads(answer.read_text(encoding="utf-8"))
