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


# The tests that take longest (CPU seconds, or waiting on processes they start), longest
# first, as "FILE::FUNCTION". Their modules run before the others, whole and in their own
# order (a module's fixtures are then built once, as before), in the order of their first
# entry here: under xdist (`pytest -n 2`) no worker starts a long test as its last one
# while the other worker has nothing left, so the suite's tail is short tests. Only the
# order changes, never what runs. tests/test_test_order.py fails when an entry names no
# test any more; an unlisted slow test only costs wall time.
LONG_FIRST = (
    "test_reproduce.py::test_reproduce_quick_json_rows_are_smoke",
    "test_bench_scripts.py::test_sched2_rl_tiny",
    "test_report_page.py::test_report_html_page_renders_every_table_and_profile",
    "test_inference_pg_bench.py::test_tiny_run_prints_tables_and_the_target_figures",
    "test_readme_types.py::test_readme_python_snippets_pass_mypy_strict",
    "test_compete_runner.py::test_the_docs_commands_run_from_the_repository_root_with_the_"
    "default_output",
    "test_compete_runner.py::test_bad_solvers_score_zero_with_reasons",
    "test_interrupt.py::test_ctrl_c_at_any_moment_is_exit_130_and_one_line",
    "test_interrupt.py::test_ctrl_c_during_a_benchmark",
    "test_examples.py::test_scheduler_loop_states_its_fallback",
    "test_examples.py::test_compare_methods_writes_profiles",
    "test_examples.py::test_competition_with_an_external_solver",
    "test_examples.py::test_maskable_ppo_trains_on_the_registered_environment",
    "test_inference_exact.py::test_exact_returns_its_warm_start_when_cp_sat_finds_nothing_in_"
    "time",
    "test_inference_exact.py::test_lagrange_without_time_limit_is_reproducible",
    "test_work_limits.py::test_a_work_limit_gives_the_same_answer_every_time",
    "test_inference_pg.py::test_training_gives_the_same_tensors_on_a_machine_without_avx",
    "test_report_page.py::test_compete_writes_a_page_with_the_leaderboard",
    "test_horus_patterns.py::test_patterns_match_brute_force",
    "test_compete_runner.py::test_callable_entrant_runs_in_a_subprocess",
    "test_hostile.py::test_hostile_solver",
    "test_fuzz.py::test_instance_mutants",
    "test_offline_exact.py::test_genie_workload_matches_brute_force",
    "test_offline_exact.py::test_branch_and_bound_proves_genie_on_a_fine_grid",
)
_LONG_RANK: dict[str, int] = {}
for _rank, _entry in enumerate(LONG_FIRST):
    _LONG_RANK.setdefault(_entry.partition("::")[0], _rank)


def long_first_rank(nodeid: str) -> int:
    """The place of a test's module (from its pytest node id) in :data:`LONG_FIRST`: the
    rank of the module's first entry; after them all when none of its tests is listed."""
    return _LONG_RANK.get(nodeid.partition("::")[0].rsplit("/", 1)[-1], len(LONG_FIRST))


@pytest.hookimpl(trylast=True)  # after pytest's own reordering and -k / -m selection
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # a stable sort: the tests of a module keep their order, the unlisted modules theirs
    # (and xdist workers, each sorting the same collection, agree on it)
    items.sort(key=lambda item: long_first_rank(item.nodeid))
