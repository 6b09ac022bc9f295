"""Who runs a competition's solver, and where: entrants cannot see each other.

Each run gets a private folder outside the output tree (:func:`private_dir`), deleted after
the run (:func:`remove_tree`) once its regular files are copied back (:func:`copy_back`).
Run as root, the runner starts each entrant as an unprivileged user of its own
(:func:`entrant_identity`), after checking that this user can run the entrant's program
(:func:`unusable_path`). docs/competition.md ("Isolation") says what is and is not
isolated.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched import interrupt
from dlsched.errors import InputError
from dlsched.files import write_bytes

ENTRANT_UID_BASE, ENTRANT_UID_SPAN = 1_900_000_000, 100_000_000
"""Run as root, each entrant gets a user and group id of its own in this range (a hash of
its name): no file of the runner or of another entrant is its own."""


@dataclass(frozen=True)
class RunAs:
    """The user and group a solver runs as (set in the child before it starts)."""

    uid: int
    gid: int


def entrant_identity(name: str, run_as: str | None = "auto") -> RunAs | None:
    """Who runs entrant ``name``: None (the runner's own user) or another user.

    ``run_as``: ``"auto"`` — when the runner is root, a user and group id of the entrant's
    own (:data:`ENTRANT_UID_BASE` + a hash of its name; no account needed), else the
    runner's user; ``"self"`` or None — the runner's user; any other value — that user's
    name (the runner must be root).
    """
    if run_as in (None, "self"):
        return None
    if run_as == "auto":
        if os.geteuid() != 0:
            return None
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
        uid = ENTRANT_UID_BASE + int.from_bytes(digest[:8], "big") % ENTRANT_UID_SPAN
        return RunAs(uid, uid)
    if os.geteuid() != 0:
        raise InputError(f"cannot run entrants as {run_as!r}: the runner is not root",
                         field="--run-as", fix="run as root, or leave --run-as out")
    try:
        entry = pwd.getpwnam(run_as)
    except KeyError:
        raise InputError(f"no user {run_as!r}", field="--run-as",
                         fix="name an existing user, or use auto or self") from None
    if entry.pw_uid == 0:
        raise InputError("entrants may not run as root", field="--run-as",
                         fix="name an unprivileged user, or use auto")
    return RunAs(entry.pw_uid, entry.pw_gid)


def unusable_path(argv: Sequence[str], user: RunAs, path_env: str | None = None) -> str | None:
    """The first file of a command that ``user`` cannot use, or None when it can.

    Checked as that user (in a forked child that switches to it): the program, found on
    ``path_env`` (default ``$PATH``), and the interpreter of its ``#!`` line, if any, must
    be executable, and every other argument that
    names an existing file (a script) readable. Arguments with placeholders (``{...}``)
    are skipped. An interpreter installed in a folder only its owner may enter
    (``/root/.pyenv``) is the usual reason.
    """
    program = shutil.which(argv[0], path=path_env) or argv[0]
    wanted = [(program, os.X_OK)] + [(a, os.R_OK) for a in argv[1:]
                                     if "{" not in a and os.sep in a and os.path.isfile(a)]
    read_fd, write_fd = os.pipe()
    held = interrupt.hold_interrupts()  # the child ends on its own, never interrupted
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            bad = next((p for p, mode in wanted if not os.access(p, mode)), "")
            interpreter = _interpreter(program) if not bad else None
            if interpreter and not os.access(interpreter, os.X_OK):
                bad = interpreter
            os.write(write_fd, ("checked:" + bad).encode("utf-8", "surrogateescape"))
        finally:
            os._exit(0)
    os.close(write_fd)
    interrupt.release_interrupts(held)
    with os.fdopen(read_fd, "rb") as fh:
        answer = fh.read().decode("utf-8", "surrogateescape")
    os.waitpid(pid, 0)
    if not answer.startswith("checked:"):  # could not switch to the user at all
        return program
    return answer.removeprefix("checked:") or None


def _interpreter(program: str) -> str | None:
    """The interpreter named on a script's ``#!`` line, if any."""
    try:
        with open(program, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    return words[0].decode("utf-8", "surrogateescape") if words else None


def private_dir(user: RunAs | None) -> Path:
    """A fresh folder (mode 0700) in the system's temporary folder, outside any output
    tree, with a ``tmp`` folder inside (the solver's ``TMPDIR``); owned by ``user`` when
    given, so that only that user (and root) may enter it."""
    path = Path(tempfile.mkdtemp(prefix="dlsched-run-"))
    (path / "tmp").mkdir(mode=0o700)
    if user is not None:
        for p in (path, path / "tmp"):
            os.chown(p, user.uid, user.gid)
    return path


def remove_tree(path: Path) -> None:
    """Delete a solver's folder whatever it did to it (modes, links); never follows a link
    out of it."""
    if os.geteuid() != 0:  # a folder the solver made unreadable: give it back to us
        for dirpath, dirnames, _ in os.walk(path):
            for d in dirnames:
                full = os.path.join(dirpath, d)
                if not os.path.islink(full):
                    with contextlib.suppress(OSError):
                        os.chmod(full, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def copy_back(source: Path, target: Path, max_bytes: int, skip: Sequence[str] = (),
              max_files: int = 100) -> None:
    """Copy the regular files at the top of ``source`` (the solver's folder) into
    ``target``, each at most ``max_bytes``; links, folders, devices and the names in
    ``skip`` are left out."""
    with os.scandir(source) as entries:
        names = sorted(e.name for e in entries)
    for name in [n for n in names if n not in skip][:max_files]:
        try:
            fd = os.open(source / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                continue
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(max_bytes + 1)
        finally:
            os.close(fd)
        if len(data) <= max_bytes:
            write_bytes(target / name, data)


def entrant_users(entrants: Sequence[Any], run_as: str | None,
                ) -> tuple[dict[str, RunAs | None], dict[str, str]]:
    """Who runs each entrant (by its ``name``; its ``argv`` is checked), and why an entrant
    that ``auto`` would have run as a user of its own runs as the runner's user: that user
    cannot use its program or script (the caller states the reason in each of the
    entrant's rows and in its notes, never silently)."""
    users: dict[str, RunAs | None] = {}
    shared: dict[str, str] = {}
    for e in entrants:
        user = entrant_identity(e.name, run_as)
        if user is not None and run_as == "auto":
            path_env = os.environ.get("PATH")
            bad = unusable_path(e.argv, user, path_env)
            if bad is not None:
                shared[e.name] = (f"not isolated: user id {user.uid} cannot use {bad}, so it "
                                  "ran as the runner's user (install it where every user "
                                  "may read it)")
                user = None
        users[e.name] = user
    return users, shared
