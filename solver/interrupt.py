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
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_INTERRUPTED = 130
"""Exit code of an interrupted command (128 + SIGINT, as shells report it)."""

MESSAGE = "interrupted"
"""The one line an interrupted command writes to stderr."""

_state = {"interrupted": False}


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


def _raise_interrupt(signum: int, frame: object) -> None:
    _state["interrupted"] = True
    raise KeyboardInterrupt


def arm() -> None:
    """From now on SIGINT raises ``KeyboardInterrupt`` and is remembered
    (:func:`interrupted`); called by the command's ``main`` before it does any work.
    Left alone where SIGINT is ignored (a command started in the background)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _raise_interrupt)


def interrupted() -> bool:
    """Whether SIGINT arrived since :func:`arm`."""
    return _state["interrupted"]


guard_startup()  # on the package's first import, before anything heavy loads
