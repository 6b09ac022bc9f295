"""Ctrl-C in the ``dlsched`` command: exit 130 with one line, at any moment.

Python turns SIGINT into ``KeyboardInterrupt`` wherever the program is; in the first
second — while the package and its libraries are imported — that is a traceback of
dozens of lines, or an ``ImportError`` when the interrupt lands inside an extension's
import. So, when this process *is* the ``dlsched`` command (never when the package is
imported as a library), the package's first import installs :func:`_stop_at_startup`,
which writes ``interrupted`` and exits 130 without running any more Python code; once the
command's own ``main`` runs, :func:`arm` replaces it by a handler that raises
``KeyboardInterrupt`` (so files are closed and temporary files removed on the way out)
and remembers that the user interrupted, so that an error the interrupt caused further
down (an ``ImportError``, a wrapped exception) is reported as the interrupt too.

Worker processes a command forks (a benchmark's process pool) get the same SIGINT from the
terminal. They are forked with SIGINT held (:func:`hold_interrupts`), so none arrives while
Python sets up the child (an exception there is a traceback the user would see); their
first code, :func:`start_worker`, then lets it in:
within a task (:func:`worker_task`) it raises ``KeyboardInterrupt``, so the task cleans up
what it started; between tasks it is remembered and every later task ends at its start
(the worker stays up: a pool that lost a worker is a broken pool, not an interrupted one).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

EXIT_INTERRUPTED = 130
"""Exit code of an interrupted command (128 + SIGINT, as shells report it)."""

MESSAGE = "interrupted"
"""The one line an interrupted command writes to stderr."""

_state = {"interrupted": False, "in_task": False}


def is_command_line() -> bool:
    """Whether this process was started as the ``dlsched`` command (the console script,
    ``python -m dlsched.cli``)."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if any(os.path.basename(a) == "dlsched" for a in argv[:2]):
        return True
    return any(a == "-m" and b in ("dlsched", "dlsched.cli")
               for a, b in zip(argv, argv[1:], strict=False))


def _stop_at_startup(signum: int, frame: object) -> None:
    os.write(2, (MESSAGE + "\n").encode())
    os._exit(EXIT_INTERRUPTED)


def guard_startup() -> None:
    """Exit 130 with one line on SIGINT from now on, if this process is the command and
    SIGINT still has Python's default handler (called first thing by the package)."""
    if is_command_line() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _stop_at_startup)


def _raise_interrupt(signum: int, frame: Any) -> None:
    _state["interrupted"] = True
    _raise_outside_imports(frame, _raise_interrupt)


def _raise_outside_imports(frame: Any, handler: Callable[[int, Any], None]) -> None:
    """Raise ``KeyboardInterrupt``, or, inside importlib, call ``handler`` again in 10 ms:
    raised in a module lock's callback it can leave the lock taken, and the next import
    of that module then waits forever."""
    if _in_import_system(frame) and hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    raise KeyboardInterrupt


def _in_import_system(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def arm() -> None:
    """From now on SIGINT raises ``KeyboardInterrupt`` and is remembered
    (:func:`interrupted`); called by the command's ``main`` before it does any work.
    Left alone where SIGINT is ignored (a command started in the background)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise_interrupt)


class Hold(NamedTuple):
    """What :func:`hold_interrupts` changed, for :func:`release_interrupts`."""

    mask: set[signal.Signals] | None
    handler: Callable[[int, Any], Any] | None
    came: list[int]


def hold_interrupts() -> Hold:
    """Hold SIGINT until :func:`release_interrupts`: blocked in this thread (POSIX; a process
    forked meanwhile starts with it blocked) and, in the main thread, recorded instead of
    handled (the process's SIGINT may reach another thread, whose mask allows it, and
    Python runs the handler in the main thread all the same)."""
    mask = None
    if hasattr(signal, "pthread_sigmask"):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handler, came = None, []
    if threading.current_thread() is threading.main_thread():
        current = signal.getsignal(signal.SIGINT)
        if callable(current):
            handler = current
            signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    return Hold(mask, handler, came)


def release_interrupts(held: Hold) -> None:
    """Undo :func:`hold_interrupts`; a Ctrl-C that came meanwhile is handled now (by the
    handler in place before: ``KeyboardInterrupt`` raised here)."""
    if held.handler is not None:
        signal.signal(signal.SIGINT, held.handler)
    if held.mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held.mask)
    if held.came and held.handler is not None:
        held.handler(signal.SIGINT, None)


def start_worker() -> None:
    """First code of a worker process forked while SIGINT was held (a pool's
    ``initializer``): from now on SIGINT raises ``KeyboardInterrupt`` within a task
    (:func:`worker_task`) and ends every later task at its start; left ignored where
    ignored."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _worker_interrupt)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def worker_task() -> Iterator[None]:
    """A worker's task runs inside: SIGINT raises ``KeyboardInterrupt`` there, and at
    its start when one came earlier."""
    if _state["interrupted"]:
        raise KeyboardInterrupt
    _state["in_task"] = True
    try:
        yield
    finally:
        _state["in_task"] = False


def _worker_interrupt(signum: int, frame: Any) -> None:
    _state["interrupted"] = True
    if _state["in_task"]:
        _raise_outside_imports(frame, _worker_interrupt)


@contextlib.contextmanager
def stopping_on_interrupt(stop: Callable[[], None]) -> Iterator[None]:
    """Inside, a SIGINT also calls ``stop`` (from a watcher thread), so that native code
    which runs without the interpreter (a CP-SAT search: ``CpSolver.stop_search``) ends at
    once instead of at its time limit; Python's own handler still runs when that code
    returns (``KeyboardInterrupt``, or whatever handler SIGINT has).

    It listens on :func:`signal.set_wakeup_fd`, so it works only in the main thread, where
    SIGINT has a Python handler and no other wakeup fd is set (an asyncio loop's); elsewhere
    the block runs as it is and SIGINT takes effect when the native code returns.
    """
    if (threading.current_thread() is not threading.main_thread()
            or not callable(signal.getsignal(signal.SIGINT))):
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    if previous != -1:  # someone else's: put back, and run without a watcher
        signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)
        yield
        return
    watcher = threading.Thread(target=_watch, args=(read_end, stop), daemon=True,
                               name="dlsched-interrupt-watcher")
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(-1)
        os.write(write_end, bytes([_WATCH_END]))
        watcher.join()
        os.close(read_end)
        os.close(write_end)


_WATCH_END = 0
"""The byte that ends a watcher (no signal has number 0)."""


def _watch(read_end: int, stop: Callable[[], None]) -> None:
    while True:
        came = os.read(read_end, 64)
        if signal.SIGINT in came:
            stop()
        if not came or _WATCH_END in came:
            return


def interrupted() -> bool:
    """Whether SIGINT arrived since :func:`arm`."""
    return _state["interrupted"]


guard_startup()  # on the package's first import, before anything heavy loads
