"""Ctrl-C and a CP-SAT or SCIP search in this process.

CP-SAT installs a SIGINT handler of its own for each solve unless told not to
(``catch_sigint_signal``): a Ctrl-C during the search then became an ordinary "feasible"
result, and after the solve the process had no working handler left, so the next Ctrl-C
killed it with no clean-up. dlsched turns that off and stops the search itself
(:func:`dlsched.interrupt.stopping_on_interrupt`): Python's handler runs as usual, at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from ortools.sat.python import cp_model

from dlsched import interrupt, solve
from dlsched.formulations.cpsat_backend import run_cpsat
from dlsched.instances.horus_gen import generate_horus
from dlsched.result import Status

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX")


def _ctrl_c_to_this_thread(after: float) -> threading.Timer:
    main = threading.main_thread().ident
    timer = threading.Timer(after, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    return timer


def test_a_ctrl_c_after_a_cpsat_solve_still_raises_keyboard_interrupt():
    model = cp_model.CpModel()
    x = model.new_int_var(0, 10, "x")
    model.maximize(x)
    handler = signal.getsignal(signal.SIGINT)
    run = run_cpsat(model, time_limit=10)
    assert run.status is Status.OPTIMAL and run.objective == 10
    assert signal.getsignal(signal.SIGINT) is handler
    with pytest.raises(KeyboardInterrupt):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(5)  # the handler raises well before this ends


# not `backend`: conftest gives that name every backend, and HiGHS holds the
# interpreter's lock (docs/architecture.md); CBC runs as a process of its own
@pytest.mark.parametrize("solver", ["cpsat", "scip"])
def test_a_ctrl_c_during_a_search_stops_it_and_raises(solver):
    # a small full Horus snapshot neither proves for many seconds (docs/horus.md); SCIP
    # runs in this process without the interpreter's lock
    instance = generate_horus(seed=0, nodes=16, beta=15, busy=0.9)
    start = time.monotonic()
    timer = _ctrl_c_to_this_thread(0.3)
    with pytest.raises(KeyboardInterrupt):
        solve(instance, "exact", backend=solver, time_limit=60, form="pairs")
        time.sleep(60)  # proven before the Ctrl-C came: it is raised here instead
    timer.join()
    # the solvers' own handlers made this a "feasible" result; without a stop CP-SAT ran
    # to 60 s, and SCIP holding the lock let the Ctrl-C wait as long
    assert time.monotonic() - start < 30
    # the next solve is not interrupted: any solve to its proof shows it; 3 servers prove
    # in ~0.1 CPU-s on both solvers (4 servers, before: 0.6 on SCIP, 0.2 on CP-SAT)
    after = solve(generate_horus(seed=1, nodes=3), "exact", backend=solver)
    assert after.status is Status.OPTIMAL


def test_the_watcher_calls_stop_on_sigint_and_leaves_the_handler_and_wakeup_fd():
    stops = []
    handler = signal.getsignal(signal.SIGINT)
    with (pytest.raises(KeyboardInterrupt),
          interrupt.stopping_on_interrupt(lambda: stops.append(1))):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        time.sleep(5)
    assert stops == [1]
    assert signal.getsignal(signal.SIGINT) is handler
    assert signal.set_wakeup_fd(-1) == -1  # none left set


def test_the_watcher_leaves_another_wakeup_fd_alone_and_calls_nothing_without_sigint():
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = signal.set_wakeup_fd(write_end)
    try:
        stops = []
        with interrupt.stopping_on_interrupt(lambda: stops.append(1)):
            pass
        assert signal.set_wakeup_fd(write_end) == write_end
        assert stops == []
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)
