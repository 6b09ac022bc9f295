"""The process sandbox of ``compete`` and the benchmark runner: one run, one process tree.

A run happens in a process of its own session — a command (:func:`run_command`, the
competition's entrants) or a function in a forked copy of this interpreter
(:func:`fork_call`, the benchmark runner's methods) — under a wall-clock limit enforced
from outside. When the limit passes, the run's session and every process it started are
killed (:func:`kill_tree`); a command also runs under resource limits (:class:`Limits`),
its output is captured up to a cap, and every process it leaves behind is killed after it
exits. As the child subreaper (:func:`become_subreaper`, Linux), this process gets back
the orphans of a run, ``setsid()`` escapes included, so they can be found and killed.
The process tree is read with psutil. A command may run as another user
(:class:`~.isolation.RunAs`) and under a CPU-time limit of the caller's choosing; a forked
function too under a CPU-time limit (the benchmark's ``--cpu-limit``).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import math
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from dlsched import interrupt
from dlsched.errors import InputError

from . import cpu_timer
from .isolation import RunAs

PR_SET_CHILD_SUBREAPER = 36
SIGNAL_NOTES = {"SIGXCPU": "CPU-time limit", "SIGXFSZ": "file-size limit",
                "SIGKILL": "killed (memory exhausted, or by the runner)"}


@dataclass(frozen=True)
class Limits:
    """What one solver run may use (see docs/competition.md, "Containment").

    Parameters
    ----------
    memory_mb
        Address-space limit (``RLIMIT_AS``) of every process of the solver, in MiB.
    solution_mb
        Largest file the solver may write (``RLIMIT_FSIZE``) and largest solution read.
    output_kb
        stdout and stderr kept per run (the rest is counted, not stored), in KiB.
    """

    memory_mb: int = 4096
    solution_mb: int = 16
    output_kb: int = 1024

    def __post_init__(self) -> None:
        for name in ("memory_mb", "solution_mb", "output_kb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**40:
                raise InputError(f"{name} = {value!r}", field=f"--{name.replace('_', '-')}",
                                 fix="a positive whole number")


def become_subreaper() -> bool:
    """Make this process the child subreaper (Linux): orphans of the runs, ``setsid()``
    escapes included, are re-parented to it instead of to init, so they can be found and
    killed. True when it worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants() -> set[int]:
    """The pids of this process's descendants (children, their children, ...)."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def kill_tree(session: int, before: set[int]) -> int:
    """SIGKILL every process of a run: this process's descendants that were not there
    ``before`` the run (orphans come back here when we are the subreaper) and every
    process in the run's ``session``; reap them; returns how many were killed."""
    me = os.getpid()
    killed: set[int] = set()
    for _ in range(200):
        victims = {p.pid: p for p in psutil.Process(me).children(recursive=True)
                   if p.pid not in before}
        victims.update((p.pid, p) for p in psutil.process_iter()
                       if p.pid != me and _session_of(p.pid) == session)
        alive = set()
        for pid, proc in victims.items():
            with contextlib.suppress(psutil.Error):
                if proc.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                    proc.kill()
                    alive.add(pid)
        killed |= alive
        for pid in victims:  # reap the ones that are our children (zombies included)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        if not alive:
            break
        time.sleep(0.01)
    return len(killed)


def signal_name(code: int) -> str:
    """The name of the signal that ended a process with return code ``code`` (< 0)."""
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# ---------------------------------------------------------------------- a command
def cpu_limit(time_limit: float, grace: float) -> int:
    """CPU seconds per solver process: (limit + grace) × CPUs + 1, so that a multi-threaded
    solver is stopped by the wall clock, never by this; it stops spinning processes that
    would escape the wall clock."""
    return math.ceil((time_limit + grace) * (os.cpu_count() or 1)) + 1


def _limits_preexec(limits: Limits, cpu_seconds: int):  # noqa: ANN202 - a closure
    def apply() -> None:
        mib = 1024 * 1024
        for which, value in ((resource.RLIMIT_AS, limits.memory_mb * mib),
                             (resource.RLIMIT_FSIZE, limits.solution_mb * mib),
                             (resource.RLIMIT_CORE, 0)):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, value))
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    return apply


class Capture(threading.Thread):
    """Drain one pipe into a file, storing at most ``cap`` bytes (the rest is counted) and
    keeping the last 4 KiB for the crash reason."""

    def __init__(self, fd: int, path: Path, cap: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.path, self.cap = fd, path, cap
        self.dropped = 0
        self.tail = b""
        self.error = ""

    def run(self) -> None:
        try:
            self._drain()
        except OSError as exc:  # e.g. a full disk: keep draining, store nothing more
            self.error = f"cannot write {self.path.name}: {exc.strerror or exc}"
            for chunk in self._chunks():
                self.dropped += len(chunk)
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def _chunks(self) -> Iterator[bytes]:
        """What the pipe delivers until it closes, keeping the last 4 KiB in ``tail``."""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.tail = (self.tail + chunk)[-4096:]
            yield chunk

    def _drain(self) -> None:
        kept = 0
        with open(self.path, "wb") as out:
            for chunk in self._chunks():
                room = self.cap - kept
                if room > 0:
                    out.write(chunk[:room])
                    kept += min(room, len(chunk))
                self.dropped += max(0, len(chunk) - max(room, 0))
            if self.dropped:
                out.write(f"\n[dlsched compete: {self.dropped} more bytes not stored; the cap "
                          f"is {self.cap} bytes]\n".encode())

    def last_lines(self, n: int = 3) -> str:
        """The last ``n`` non-blank lines, joined by `` | `` (at most 300 characters)."""
        lines = [x.strip() for x in self.tail.decode("utf-8", "replace").splitlines()
                 if x.strip()]
        return " | ".join(lines[-n:])[-300:]


def terminate(proc: subprocess.Popen, grace: float) -> bool:
    """SIGTERM the process group, SIGKILL after ``grace`` s; True when it had to be killed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
        return False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


@dataclass
class CommandRun:
    """How a :func:`run_command` ended: ``returncode`` (None: it could not start, see
    ``error``), ``timed_out`` (still running at the limit), ``killed`` (still running
    after the grace period), ``leftovers`` (processes killed after it), the captured
    ``stdout`` and ``stderr``."""

    returncode: int | None
    wall: float
    timed_out: bool = False
    killed: bool = False
    leftovers: int = 0
    stdout: Capture | None = None
    stderr: Capture | None = None
    error: str = ""


def run_command(argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None,
                time_limit: float, grace: float, limits: Limits,
                capture_dir: Path | None = None, user: RunAs | None = None,
                cpu_seconds: float | None = None) -> CommandRun:
    """Run ``argv`` in ``cwd`` in a session of its own under ``limits``, its stdout and
    stderr captured to ``stdout.txt`` and ``stderr.txt`` in ``capture_dir`` (default
    ``cwd``); at ``time_limit`` its process group gets SIGTERM, ``grace`` seconds later
    SIGKILL; afterwards every process it started is killed.

    ``user``: run as that user and group (no supplementary groups; the runner must be
    root). ``cpu_seconds``: the CPU time each of its processes may use (``RLIMIT_CPU``:
    SIGXCPU at that many seconds, SIGKILL one second later); default :func:`cpu_limit`,
    a backstop behind the wall clock.
    """
    capture_dir = cwd if capture_dir is None else capture_dir
    cpu = cpu_limit(time_limit, grace) if cpu_seconds is None else max(1, math.ceil(cpu_seconds))
    who = {} if user is None else {"user": user.uid, "group": user.gid, "extra_groups": []}
    before = descendants()
    cap = limits.output_kb * 1024
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            list(argv), cwd=cwd, stdout=out_w, stderr=err_w, env=env,
            stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True,
            preexec_fn=_limits_preexec(limits, cpu), **who)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return CommandRun(None, time.perf_counter() - start, error=str(exc))
    os.close(out_w)
    os.close(err_w)
    run = CommandRun(None, 0.0, stdout=Capture(out_r, capture_dir / "stdout.txt", cap),
                     stderr=Capture(err_r, capture_dir / "stderr.txt", cap))
    run.stdout.start()
    run.stderr.start()
    try:
        proc.wait(timeout=time_limit)
    except subprocess.TimeoutExpired:
        run.timed_out = True
        run.killed = terminate(proc, grace)
    finally:
        if proc.returncode is None:  # interrupted (e.g. KeyboardInterrupt)
            terminate(proc, 0.0)
        run.leftovers = kill_tree(proc.pid, before)
        run.stdout.join(timeout=2.0)
        run.stderr.join(timeout=2.0)
    run.wall = time.perf_counter() - start
    run.returncode = proc.returncode
    return run


# ---------------------------------------------------------------------- a function
@dataclass(frozen=True)
class Forked:
    """How a :func:`fork_call` ended: the bytes ``work`` returned (b"" when it died first),
    the ``os.waitpid`` status, the wall time, whether it was killed at the limit, and the
    CPU seconds of the run's process and the processes it waited for (None when they
    could not be read)."""

    data: bytes
    status: int
    wall: float
    killed: bool
    cpu: float | None = None


def _child(work: Callable[[], bytes], fd: int, cpu_seconds: float | None) -> None:
    """Body of the forked process: its own session, no output, ``work()`` to ``fd``."""
    try:
        os.setsid()
        if cpu_seconds is not None:  # counted from 0: a forked process starts with none
            cpu = max(1, math.ceil(cpu_seconds))
            # the rlimit for the processes it starts (CBC); the timer for this one, which
            # the rlimit alone may let run several times longer on a loaded machine
            # (cpu_timer's docstring)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            cpu_timer.arm(max(cpu - time.process_time(), 1e-3))
        faulthandler.disable()  # its report would go to the closed stderr anyway
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held by fork_call
        view = memoryview(work())
        while view:
            view = view[os.write(fd, view):]
    finally:
        os._exit(0)


def fork_call(work: Callable[[], bytes], kill_after: float,
              cpu_seconds: float | None = None) -> Forked:
    """Run ``work`` in a forked copy of this process (a session of its own, stdout and
    stderr to /dev/null) and return what it returned; at ``kill_after`` seconds (or when
    interrupted) the run and every process it started are killed. With ``cpu_seconds``,
    the run's process and each process it starts may use that much CPU time
    (``RLIMIT_CPU``, whole seconds rounded up: SIGXCPU, then SIGKILL a second later; for
    the run's own process also a timer on its exact CPU clock, :mod:`.cpu_timer`, which
    holds where the rlimit's tick-sampled clock runs slow on a loaded machine)."""
    before = descendants()
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    # Ctrl-C held across the fork: the child sets up its own session and handler first
    held = interrupt.hold_interrupts()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(read_fd)
        _child(work, write_fd, cpu_seconds)
    os.close(write_fd)
    chunks: list[bytes] = []
    killed = False
    try:
        interrupt.release_interrupts(held)  # a Ctrl-C meanwhile: raised here, the run killed
        deadline = time.monotonic() + kill_after
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed = True
                break
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if ready:
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    except BaseException:
        killed = True
        raise
    finally:
        if killed:  # the whole session: a solver the run started (CBC) goes too
            kill_tree(pid, before)
        os.close(read_fd)
        status, cpu = 0, None
        with contextlib.suppress(ChildProcessError):  # kill_tree may have reaped it
            _, status, usage = os.wait4(pid, 0)
            cpu = usage.ru_utime + usage.ru_stime
    return Forked(b"".join(chunks), status, time.perf_counter() - start, killed, cpu)
