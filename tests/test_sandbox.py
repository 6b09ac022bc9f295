"""The process sandbox shared by compete and the benchmark runner."""

from __future__ import annotations

import os
import subprocess
import time

import psutil
import pytest

from dlsched.benchmarks.sandbox import Limits, descendants, fork_call, kill_tree, run_command

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_fork_call_returns_what_the_work_returns():
    run = fork_call(lambda: b"x" * 200_000, kill_after=30.0)
    assert not run.killed and run.data == b"x" * 200_000 and run.status == 0


def test_fork_call_kills_the_run_and_the_processes_it_started(tmp_path):
    marker = tmp_path / "pid"

    def hang() -> bytes:
        child = subprocess.Popen(["sleep", "60"])
        marker.write_text(str(child.pid))
        time.sleep(60)
        return b""

    # processes of earlier tests in this worker (e.g. a browser's helpers re-parented to it
    # as a subreaper) are not this run's
    before = descendants()
    # killed at any limit; the check needs the child started (the marker written) first:
    # a short limit, longer ones only when a busy machine did not get that far
    for limit in (0.2, 1.0, 5.0):
        start = time.monotonic()
        run = fork_call(hang, kill_after=limit)
        assert run.killed and run.data == b""
        assert time.monotonic() - start < limit + 10
        if marker.exists():
            break
    assert _gone(int(marker.read_text()))
    assert descendants() - before == set()


def test_fork_call_reports_a_crash_as_no_data():
    run = fork_call(lambda: os.kill(os.getpid(), 9) or b"never", kill_after=30.0)
    assert not run.killed and run.data == b""
    assert os.WIFSIGNALED(run.status) and os.WTERMSIG(run.status) == 9


def test_kill_tree_kills_a_session_and_new_descendants():
    before = descendants()
    escaped = subprocess.Popen(["sleep", "60"], start_new_session=True)
    assert kill_tree(escaped.pid, before) == 1
    assert _gone(escaped.pid)  # killed and reaped by kill_tree
    assert descendants() == before


def test_run_command_captures_and_limits_the_time(tmp_path):
    # a shell (no interpreter to start) that writes both streams, then never ends: timed
    # out at any limit; the check needs the lines written first: a short limit, longer
    # ones only when a busy machine did not get that far
    for limit in (0.2, 1.0, 5.0):
        run = run_command(["/bin/sh", "-c", "echo out; echo err >&2; exec sleep 60"],
                          cwd=tmp_path, env=None, time_limit=limit, grace=0.1,
                          limits=Limits())
        assert run.timed_out and run.returncode is not None
        if run.stderr.last_lines():
            break
    assert (tmp_path / "stdout.txt").read_text() == "out\n"
    assert run.stderr.last_lines() == "err"


def test_run_command_that_cannot_start(tmp_path):
    run = run_command([str(tmp_path / "missing")], cwd=tmp_path, env=None, time_limit=1.0,
                      grace=0.5, limits=Limits())
    assert run.returncode is None and "missing" in run.error
