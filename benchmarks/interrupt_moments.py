"""Ctrl-C at many moments of ``dlsched compete``: exit 130, the one line ``interrupted``,
and no solver folder left behind, wherever the command was.

Each run starts ``dlsched compete --suite quick`` (the package's suite, a solver that
sleeps 60 s, so the command is still running at the last moment) in a session of its own,
waits until the command's own code runs (the numpy library, which the package imports
right after arming its handler, is mapped into the process), then waits the moment's
delay — or, for the moment ``sleep``, until a process named ``sleep`` runs under it (a
state, reached on any load) — and sends SIGINT to the whole process group, as a terminal
does. The test suite runs a few moments (tests/test_interrupt.py); this sweeps many more:
importing, loading the suite, starting the solver, the solver running.

    python -m dlsched.benchmarks.interrupt_moments [--moments 0,0.1,...,1.5,sleep]

The table has one row per moment; the last line is one JSON object: the moments run, the
failures (moment, exit code, stderr), ``ok`` and the load. Exit 0 when every moment is ok.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dlsched.interrupt import EXIT_INTERRUPTED

DEFAULT_MOMENTS = ",".join([f"{k / 10:g}" for k in range(16)] + ["sleep"])


def started(pid: int) -> bool:
    """Whether the command's own code runs: numpy (imported right after the package arms
    its Ctrl-C handler) is mapped into process ``pid``."""
    try:
        return "numpy" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def descendant_named(pid: int, name: str) -> bool:
    """Whether a process named ``name`` (its ``comm``) descends from ``pid``."""
    todo, seen = [pid], set()
    while todo:
        parent = todo.pop()
        seen.add(parent)
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            for child in children:
                try:
                    if Path(f"/proc/{child}/comm").read_text().strip() == name:
                        return True
                except OSError:
                    continue
                if child not in seen:
                    todo.append(child)
    return False


def _sigint_as_from_a_terminal() -> None:
    # in the child before exec: started from a process that ignores SIGINT (nohup, `&` in a
    # shell without job control), the command would inherit the ignoring and keep it
    # (dlsched.interrupt honours an ignored SIGINT), and the Ctrl-C sent would be lost
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_after(argv: list[str], when: float | str, cwd: Path,
                    tmpdir: Path | None = None) -> tuple[int, str]:
    """Run ``dlsched ARGV`` in ``cwd`` (``TMPDIR`` = ``tmpdir`` when given); once its code
    runs, wait ``when`` seconds, or until a process named ``when`` runs under it, then
    Ctrl-C its process group: its exit code and stderr. AssertionError when the command
    ended before a process named ``when`` ran."""
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env.pop("DLSCHED_TRACEBACK", None)
    command = bin_dir / "dlsched"
    start = [str(command)] if command.exists() else [sys.executable, "-m", "dlsched.cli"]
    proc = subprocess.Popen([*start, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not started(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        if isinstance(when, str):
            while (not descendant_named(proc.pid, when) and proc.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.01)
            assert proc.poll() is None, f"the command ended before {when} ran"
        else:
            time.sleep(when)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def compete_argv(out: Path) -> list[str]:
    """``dlsched compete`` on the quick suite with a solver that sleeps 60 s, as the
    runner's own user (its temporary folder is the caller's), writing to ``out``."""
    return ["compete", "--suite", "quick", "--no-progress", "--time-limit", "60",
            "--run-as", "self", "--solver", '/bin/sh -c "sleep 60" {instance} {solution}',
            "--output", str(out)]


def check_moment(when: float | str, workdir: Path, extra: tuple[str, ...] = ()) -> dict:
    """Ctrl-C ``dlsched compete`` (:func:`compete_argv` plus ``extra``) at ``when``, in
    ``workdir``; the row: exit code, stderr, solver folders left, ``ok``."""
    tmpdir = workdir / "tmp"
    tmpdir.mkdir(parents=True)
    code, err = interrupt_after([*compete_argv(workdir / "out"), *extra], when, workdir,
                                tmpdir)
    left = sorted(p.name for p in tmpdir.glob("dlsched-run-*"))
    return {"moment": when, "exit_code": code, "stderr": err, "left": left,
            "ok": code == EXIT_INTERRUPTED and err == "interrupted\n" and not left}


def _moment(text: str) -> float | str:
    if text == "sleep":
        return text
    value = float(text)
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"moment {text!r}: seconds from 0 to 60, or sleep")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moments", default=DEFAULT_MOMENTS,
                        help="comma-separated seconds after the command's code started, or "
                        "'sleep' (while the solver runs); default 0 to 1.5 by 0.1, and sleep")
    args = parser.parse_args(argv)
    try:
        moments = [_moment(m.strip()) for m in args.moments.split(",") if m.strip()]
    except (ValueError, argparse.ArgumentTypeError) as exc:
        parser.error(str(exc))
    if not moments:
        parser.error("--moments: name at least one moment")
    rows = []
    print("| moment | exit code | stderr | solver folders left | ok |")
    print("|---|---|---|---|---|")
    for when in moments:
        with tempfile.TemporaryDirectory(prefix="dlsched-interrupt-") as tmp:
            row = check_moment(when, Path(tmp))
        rows.append(row)
        shown = when if isinstance(when, str) else f"{when:g}"
        print(f"| {shown} | {row['exit_code']} | {row['stderr'].strip()[:60]!r} | "
              f"{len(row['left'])} | {'yes' if row['ok'] else 'NO'} |")
    failures = [{k: r[k] for k in ("moment", "exit_code", "stderr")} for r in rows
                if not r["ok"]]
    print(json.dumps({"moments": [r["moment"] for r in rows], "failures": failures,
                      "ok": not failures, "loadavg_1m": round(os.getloadavg()[0], 2)}))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
