"""Ctrl-C at any moment of a ``dlsched`` command: exit 130 and the one line
``interrupted`` — while the package is still being imported, while a solver runs — and no
run folder left behind.

The interrupt goes to the command's whole process group, as a terminal sends it. Each run
waits until the command's own code is running (the numpy library, which the package
imports right after arming its handler, is mapped into the process) and then waits the
delay: the first ~50 ms of interpreter start-up, before any dlsched code runs, belong to
Python and are not tested. "While a solver runs" is not a delay but a state the test
waits for: a process of the solver's name under the command. The helpers are those of
:mod:`dlsched.benchmarks.interrupt_moments`, which sweeps many more moments.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from quick_cut import QUICK_TWO, quick_cut

from dlsched import interrupt
from dlsched.benchmarks.interrupt_moments import check_moment, interrupt_after

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(),
                                reason="needs /proc (Linux)")

# seconds after the command's code started (importing), then "sleep": while the solver (a
# `sleep 60`) runs, reached on any load without waiting a fixed time. Later moments (the
# suite loading, the solver starting: 0 to 1.5 s by 0.1) are swept by
# `python -m dlsched.benchmarks.interrupt_moments`, whose tiny test (test_bench_scripts)
# runs the moment 0
@pytest.mark.parametrize("when", [0.05, 0.2, "sleep"])
def test_ctrl_c_at_any_moment_is_exit_130_and_one_line(tmp_path, when):
    # the command's own temporary folder, so that other tests' solver folders (running
    # beside this one) are not counted; the solver runs as the runner's user because that
    # folder is inside pytest's private one (isolation has its own tests). A state, not a
    # moment: the suite cut to one instance loads faster
    extra = (("--library", str(quick_cut(tmp_path / "lib", QUICK_TWO[:1])))
             if when == "sleep" else ())
    row = check_moment(when, tmp_path / "run", extra)
    assert row["exit_code"] == interrupt.EXIT_INTERRUPTED, row["stderr"]
    assert row["stderr"] == "interrupted\n"
    assert row["left"] == []  # the solver's private folder was removed


def test_ctrl_c_during_a_benchmark(tmp_path):
    # the quick suite cut to one instance: the state waited for comes after less loading
    argv = ["bench", "--suite", "quick", "--methods", "exact:cbc", "--no-progress",
            "--library", str(quick_cut(tmp_path / "lib", QUICK_TWO[:1])),
            "--output", str(tmp_path / "r.csv")]
    # while a run is under way: the process the runner forks for it (named as its parent)
    code, err = interrupt_after(argv, "dlsched", tmp_path)
    assert code == interrupt.EXIT_INTERRUPTED and err == "interrupted\n", err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_library_import_leaves_sigint_alone(fresh):
    # a fresh interpreter's `import signal, dlsched` (tests/fresh_interpreter.py, whose one
    # run serves four other files too)
    assert fresh["sigint_default"] is True


def test_a_ctrl_c_while_held_is_raised_at_release_not_before():
    # sent to this thread, which holds it blocked: a process-directed SIGINT may instead
    # reach another thread of the test worker, late on a loaded machine (next test)
    held = interrupt.hold_interrupts()
    try:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(0.01)  # room for the handler to run, were SIGINT not held
    except KeyboardInterrupt:  # pragma: no cover - the failure this test is about
        interrupt.release_interrupts(held)
        pytest.fail("SIGINT raised while held")
    with pytest.raises(KeyboardInterrupt):
        interrupt.release_interrupts(held)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_another_thread_takes_while_held_is_raised_at_release():
    """The process's SIGINT taken by a thread whose mask allows it: Python runs the handler
    in the main thread all the same, which records it while held."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # started before the hold: SIGINT unblocked
    other.start()
    try:
        held = interrupt.hold_interrupts()
        try:
            signal.pthread_kill(other.ident, signal.SIGINT)
            deadline = time.monotonic() + 60
            while not held.came and time.monotonic() < deadline:
                time.sleep(0.001)  # the main thread runs Python's handlers between these
        except KeyboardInterrupt:  # pragma: no cover - the failure this test is about
            interrupt.release_interrupts(held)
            pytest.fail("SIGINT raised while held")
        assert held.came == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):
            interrupt.release_interrupts(held)
    finally:
        stop.set()
        other.join()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_pool_worker_interrupted_between_tasks_ends_its_next_task_at_its_start():
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        answer = b"no"
        try:
            interrupt.start_worker()
            os.kill(os.getpid(), signal.SIGINT)  # idle: remembered, nothing raised
            time.sleep(0.01)
            try:
                with interrupt.worker_task():
                    answer = b"task ran"
            except KeyboardInterrupt:
                answer = b"ended at start"
        finally:
            os.write(write_fd, answer)
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        assert fh.read() == b"ended at start"
    os.waitpid(pid, 0)


def test_a_ctrl_c_inside_the_import_system_is_raised_just_after_it(monkeypatch):
    # a KeyboardInterrupt raised in importlib (a module lock's callback) can leave the lock
    # taken, and the command then hangs at its next import of that module
    monkeypatch.setitem(interrupt._state, "interrupted", False)
    previous = signal.getsignal(signal.SIGALRM)
    frozen = compile("frame = sys._getframe()", "<frozen importlib._bootstrap>", "exec")
    scope = {"sys": sys}
    exec(frozen, scope)
    try:
        interrupt._raise_interrupt(signal.SIGINT, scope["frame"])  # deferred: no raise here
        assert interrupt.interrupted()
        with pytest.raises(KeyboardInterrupt):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.001)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
