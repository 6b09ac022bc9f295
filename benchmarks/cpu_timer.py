"""A CPU-time cap that holds on a loaded machine: a POSIX timer on the process's own CPU clock.

``RLIMIT_CPU`` alone is not enough. The kernel compares it with the process's tick-sampled
user + system time (each timer tick charged to the task running at that moment), and a
process that makes a system call such as ``times()`` several hundred thousand times per
CPU-second is charged for far fewer ticks than it runs whenever it shares a core with other
runnable processes. SCIP does this when it keeps time on its CPU clock
(``timing/clocktype`` 1: about 400,000 ``times()`` calls per CPU-second). Measured on this
project's 2-core machine with two busy loops beside it, the tick-sampled time read 1.9-2.5
CPU-s after SCIP runs of 6.5-6.8 CPU-s. The same process alone read 6.86 of 6.73, and with
SCIP on its wall clock it read 3.90 of 3.87. A Python loop calling ``os.times()`` under a
2-s ``RLIMIT_CPU`` was stopped after 8.0 CPU-s, where a plain loop stopped after 1.97. So
the soft limit's SIGXCPU and the hard limit's SIGKILL, which read the same clock, came
3-4 times late. That is why SCIP ran up to 7.5 CPU-s under a 2-s cap in
``benchmarks/exact_hard.py`` and sometimes finished "optimal" past it (docs/benchmarks.md).

A timer on ``CLOCK_PROCESS_CPUTIME_ID`` is compared with the scheduler's exact run time
instead, so it fires within a few ticks of the cap however the CPU is shared. :func:`arm`
sets one to send SIGXCPU (the signal ``RLIMIT_CPU`` sends, which callers already read as
"CPU limit") and a second one, a CPU-second later, to send SIGKILL. The kernel notices
an expired timer at a timer tick that finds the process running, so on a loaded machine
it may notice both at once and the process ends by SIGKILL: the bench runner reads a
SIGKILL with the CPU used at the cap as the CPU limit too. Callers keep
``RLIMIT_CPU`` as well: POSIX timers are not inherited by ``fork`` and end at ``exec``, so a
solver run as its own process (CBC) has only the inherited rlimit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import sys

CLOCK_PROCESS_CPUTIME_ID = 2  # <time.h> on Linux
SIGEV_SIGNAL = 0


class _SigEvent(ctypes.Structure):
    # struct sigevent on Linux (glibc and musl): 64 bytes, the value, signal and
    # notification kind first
    _fields_ = [("sigev_value", ctypes.c_void_p), ("sigev_signo", ctypes.c_int),
                ("sigev_notify", ctypes.c_int), ("_pad", ctypes.c_int * 12)]


class _TimeSpec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("it_interval", _TimeSpec), ("it_value", _TimeSpec)]


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    for name in (None, ctypes.util.find_library("rt")):  # glibc < 2.34: in librt
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
        if hasattr(lib, "timer_create") and hasattr(lib, "timer_settime"):
            return lib
    return None


def available() -> bool:
    """Whether this platform has process CPU-clock timers (Linux)."""
    return _libc() is not None


def _timer(lib: ctypes.CDLL, seconds: float, signum: int) -> None:
    event = _SigEvent(sigev_value=None, sigev_signo=signum, sigev_notify=SIGEV_SIGNAL)
    timer = ctypes.c_void_p()
    if lib.timer_create(CLOCK_PROCESS_CPUTIME_ID, ctypes.byref(event), ctypes.byref(timer)):
        raise OSError(ctypes.get_errno(), "timer_create on the process CPU clock failed")
    whole = int(seconds)
    spec = _ITimerSpec(it_value=_TimeSpec(whole, int(round((seconds - whole) * 1e9))))
    if lib.timer_settime(timer, 0, ctypes.byref(spec), None):
        raise OSError(ctypes.get_errno(), "timer_settime on the process CPU clock failed")


def arm(seconds: float, kill_after: float = 1.0) -> bool:
    """Send this process SIGXCPU when it has used ``seconds`` more CPU time (all its
    threads), and SIGKILL ``kill_after`` CPU-seconds after that (for a process that
    handles or ignores SIGXCPU, as ``RLIMIT_CPU``'s hard limit one second later does).

    Parameters
    ----------
    seconds
        CPU seconds from now, > 0.
    kill_after
        CPU seconds from SIGXCPU to SIGKILL, > 0.

    Returns
    -------
    bool
        True when the timers are set; False on a platform without process CPU-clock
        timers (not Linux), where only ``RLIMIT_CPU`` caps the process.
    """
    if not (seconds > 0 and kill_after > 0):
        raise ValueError(f"CPU seconds must be > 0, not {seconds!r} and {kill_after!r}")
    lib = _libc()
    if lib is None:
        return False
    _timer(lib, seconds, signal.SIGXCPU)
    _timer(lib, seconds + kill_after, signal.SIGKILL)
    return True
