"""A pytest plugin: each test's CPU seconds (its process and the children it reaped),
what the suite's cost is judged by on a shared machine, where wall times mean little.

    PYTHONPATH=tests CPU_DURATIONS=/tmp/cpu .venv/bin/pytest -q -n 2 -p cpu_durations
    sort -rn /tmp/cpu.gw* | head -40

Each process writes ``$CPU_DURATIONS.<worker>`` (``main`` without xdist): a first line
``#TOTAL self=S children=C`` (the process's own CPU seconds, collection included), then one
line per test: total, own and children's CPU seconds, wall seconds, the test id
(tab-separated). A test whose wall far exceeds its CPU is waiting, not working.
"""

from __future__ import annotations

import os
import resource
import time

import pytest

_rows: list[tuple[float, float, float, str]] = []


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    before, started = _cpu(), time.perf_counter()
    yield
    after, wall = _cpu(), time.perf_counter() - started
    _rows.append((after[0] - before[0], after[1] - before[1], wall, item.nodeid))


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("CPU_DURATIONS")
    if not out:
        return
    own, children = _cpu()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{out}.{worker}", "w", encoding="utf-8") as f:
        f.write(f"#TOTAL self={own:.2f} children={children:.2f}\n")
        for mine, theirs, wall, nodeid in _rows:
            f.write(f"{mine + theirs:.3f}\t{mine:.3f}\t{theirs:.3f}\t{wall:.3f}\t{nodeid}\n")
