"""Reading and writing the package's JSON files (plain or gzip-compressed by their name).

Every input file goes through :func:`read_json`, which enforces the limits documented in
docs/formats.md ("Limits"): at most :data:`MAX_BYTES` of JSON text (a gzip file also at
most :data:`MAX_GZIP_RATIO` times its compressed size, decompressed in chunks and refused
as soon as it passes), nesting at most :data:`MAX_DEPTH` levels deep, no key twice in one
object, no NaN or Infinity, every number finite with magnitude at most :data:`MAX_NUMBER`
(integers at most :data:`MAX_INT`) and no subnormal float. Any
failure is an :class:`~dlsched.errors.InputError` naming the file (and the field, when
there is one); nothing else escapes.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .canonical import pretty_json
from .errors import InputError, field_path
from .interrupt import Hold, hold_interrupts, release_interrupts

MAX_BYTES = 256 * 1024 * 1024
"""Largest JSON text read (after decompression): 256 MiB."""

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted (real files nest fewer than 10 levels)."""

MAX_NUMBER = 1e100
"""Largest magnitude of any number in an input file (fields have tighter ranges in the
schemas; this bound keeps free-form places and informational values finite in sums)."""

MAX_INT = 2**53
"""Largest magnitude of an integer (every integer up to it is exact as a float)."""

MIN_NORMAL = 2.2250738585072014e-308
"""Smallest positive normal float; non-zero numbers closer to zero are rejected."""

MAX_GZIP_RATIO = 200
"""Most a gzip file may expand (decompressed / compressed size, plus 1 MiB): the package's
files expand about 20-fold; a gzip bomb is refused after a few dozen MB, not 256 MiB."""

_CHUNK = 1 << 20


T = TypeVar("T")


def read_json_as(path: str | Path, parse: Callable[[Any], T]) -> T:
    """``parse`` applied to the JSON file at ``path``; an :class:`InputError` it raises
    names the file (:func:`read_json`'s errors already do)."""
    doc = read_json(path)
    try:
        return parse(doc)
    except InputError as exc:
        raise exc.with_source(str(path)) from None


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (gzip-compressed when its name ends in ``.gz``) within the limits.

    Raises
    ------
    InputError
        The file cannot be read, is too large, is not UTF-8 JSON, nests too deeply, or
        holds a number that is not finite or out of range (named by its field path).
    """
    p = Path(path)
    text = _read_text(p)
    try:
        # NaN, Infinity and overflowing literals (1e400) parse to non-finite floats here;
        # check_plain_values then refuses them, naming the field.
        doc = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise InputError(f"key {exc.key!r} appears twice in one object", field="(file)",
                         fix="keep one value per key (JSON readers disagree on which wins)",
                         source=str(p)) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            field="(file)",
            fix="fix the JSON syntax",
            source=str(p),
        ) from None
    except RecursionError:
        raise InputError(
            f"nested more than {MAX_DEPTH} levels deep",
            field="(file)",
            fix="this is not a dlsched file; check what was written to it",
            source=str(p),
        ) from None
    except (ValueError, MemoryError) as exc:  # e.g. an integer with more than 4,300 digits
        raise InputError(
            f"cannot parse: {str(exc)[:120]}", field="(file)", fix="fix the JSON",
            source=str(p),
        ) from None
    try:
        check_plain_values(doc)
    except InputError as exc:
        raise exc.with_source(str(p)) from None
    return doc


class DuplicateKey(ValueError):
    """A JSON object names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` ``object_pairs_hook``: the object as a dict; :class:`DuplicateKey` when a
    key appears twice."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return out


def _read_gzip(p: Path, compressed: int) -> bytearray:
    """The decompressed bytes, read in chunks and refused once past the cap."""
    cap = min(MAX_BYTES, MAX_GZIP_RATIO * compressed + _CHUNK)
    data = bytearray()
    with gzip.open(p, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            data += chunk
            if len(data) > cap:
                raise InputError(
                    f"decompresses to more than {cap} bytes ({MAX_GZIP_RATIO} times its "
                    f"size, at most {MAX_BYTES})", field="(file)",
                    fix="a gzip bomb? decompress it yourself and pass the JSON",
                    source=str(p))
    return data


def _read_text(p: Path) -> str:
    try:
        info = p.stat()
        if stat.S_ISDIR(info.st_mode) or not (stat.S_ISREG(info.st_mode)
                                              or stat.S_ISFIFO(info.st_mode)):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device or socket"
            raise InputError(f"{kind}, not a file", field="(file)",
                             fix="pass a JSON file", source=str(p))
        size = info.st_size
        if size > MAX_BYTES:
            raise InputError(
                f"{size} bytes, more than the {MAX_BYTES} bytes dlsched reads", field="(file)",
                fix="split the file, or check what was written to it",
                source=str(p),
            )
        if p.name.endswith(".gz"):
            data = _read_gzip(p, size)
        else:
            with p.open("rb") as fh:  # bounded: a FIFO's size is unknown beforehand
                data = fh.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                raise InputError(
                    f"more than the {MAX_BYTES} bytes dlsched reads", field="(file)",
                    fix="split the file, or check what was written to it", source=str(p),
                )
        return data.decode("utf-8")
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(p)) from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise InputError(
            f"cannot read: {str(exc)[:160]}", field="(file)", fix="pass a UTF-8 JSON file",
            source=str(p),
        ) from None


def _bad_number(value: Any) -> str | None:
    """Why ``value`` (a parsed JSON scalar) is refused, or None when it is fine."""
    t = type(value)
    if t is float:
        if not math.isfinite(value):
            return f"{value} is not a finite number (JSON has no NaN or Infinity)"
        if abs(value) > MAX_NUMBER:
            return f"{value!r} is larger in magnitude than {MAX_NUMBER:g}"
        if value != 0.0 and abs(value) < MIN_NORMAL:
            return f"{value!r} is too close to zero (a subnormal float)"
    elif t is int and abs(value) > MAX_INT:
        return f"integer {str(value)[:30]}{'…' if len(str(value)) > 30 else ''} is larger " \
               f"in magnitude than 2**53"
    return None


def check_plain_values(doc: Any) -> None:
    """Raise InputError (field = the JSON path) for nesting deeper than :data:`MAX_DEPTH`
    or a number outside the limits; fast and iterative (no recursion)."""
    stack: list[tuple[Any, int]] = [(doc, 1)] if type(doc) in (dict, list) else []
    bad = False
    while stack and not bad:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            bad = True
            break
        for v in node.values() if type(node) is dict else node:
            t = type(v)
            if t is float:
                if not -MAX_NUMBER <= v <= MAX_NUMBER or (
                        v != 0.0 and -MIN_NORMAL < v < MIN_NORMAL):
                    bad = True
                    break
            elif t is int:
                if not -MAX_INT <= v <= MAX_INT:
                    bad = True
                    break
            elif t is dict or t is list:
                stack.append((v, depth + 1))
    if not bad:
        if type(doc) in (float, int) and _bad_number(doc):
            raise InputError(_bad_number(doc) or "", field="(top level)",
                             fix="a dlsched file is a JSON object")
        return
    path, why = _locate(doc)
    raise InputError(
        why,
        field=field_path(path) or "(top level)",
        fix="use a finite number in the documented range" if "deep" not in why
        else "this is not a dlsched file; check what was written to it",
    )


def _locate(doc: Any) -> tuple[list[str | int], str]:
    """Path and reason of the first value (in document order) that
    :func:`check_plain_values` refuses."""
    path: list[str | int] = []
    stack = [iter(doc.items() if type(doc) is dict else enumerate(doc))]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if path:
                path.pop()
            continue
        key, v = step
        if type(v) in (dict, list):
            if len(stack) >= MAX_DEPTH:
                return [*path, key], f"nested more than {MAX_DEPTH} levels deep"
            path.append(key)
            stack.append(iter(v.items() if type(v) is dict else enumerate(v)))
        else:
            why = _bad_number(v)
            if why:
                return [*path, key], why
    return [], "unexpected value"


TABLE_FORMATS = ("csv", "parquet")
"""Formats of the per-job / per-query tables a run writes."""


def write_table(frame: Any, directory: Path, stem: str, fmt: str) -> Path:
    """Write a pandas DataFrame as ``directory/stem.fmt`` (csv or parquet, no index),
    atomically (:func:`atomic_path`).

    Raises
    ------
    ValueError
        ``fmt`` is not one of :data:`TABLE_FORMATS`.
    InputError
        The file cannot be written (disk full, not writable), naming it.
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"fmt must be one of {TABLE_FORMATS}, not {fmt!r}")
    path = directory / f"{stem}.{fmt}"
    with atomic_path(path) as tmp:
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
    return path


# ---------------------------------------------------------------------- writing files
@contextlib.contextmanager
def atomic_path(path: str | Path, option: str = "(output)") -> Iterator[Path]:
    """A temporary file beside ``path`` to write; on success it replaces ``path``.

    The temporary file is in the same folder (so the rename is atomic), keeps the name's
    suffix (writers that pick a format by suffix still do), is flushed to disk and then
    renamed over ``path`` (``os.replace``); on any failure, an interrupt included, it is
    removed. A reader, or a write that fails half-way (full disk, Ctrl-C, a crash), sees
    the old file or none, never a truncated one. The file gets the permissions a plain
    ``open(path, "w")`` would leave it with (an existing file's own, else 0666 less the
    process's umask).

    Parameters
    ----------
    path
        The file to write.
    option
        The command-line option (or ``(output)``) named in the error.

    Yields
    ------
    Path
        The temporary path to write to.

    Raises
    ------
    InputError
        The file cannot be written (no such directory, not writable, disk full, ...): one
        line naming ``path``.
    """
    p = Path(path)
    tmp: Path | None = None
    # Ctrl-C is held while the temporary file is made and its name kept: a KeyboardInterrupt
    # between the two would leave a file nobody removes
    held: Hold | None = hold_interrupts()
    try:
        try:
            fd, name = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:80]}.",
                                        suffix=f".tmp{''.join(p.suffixes[-2:])}")
            os.close(fd)
        except OSError as exc:
            raise _write_error(exc, p, option) from None
        tmp = Path(name)
        done, held = held, None
        release_interrupts(done)  # a Ctrl-C that came meanwhile is raised here
        yield tmp
        _sync_and_replace(tmp, p)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise _write_error(exc, p, option) from None
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise
    finally:
        if held is not None:
            release_interrupts(held)


def _umask() -> int:
    mask = os.umask(0o022)  # reading the mask means setting it: done once, at import
    os.umask(mask)
    return mask


_UMASK = _umask()


def _sync_and_replace(tmp: Path, path: Path) -> None:
    try:  # an existing file keeps its mode, as open(path, "w") keeps it
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o666 & ~_UMASK
    os.chmod(tmp, mode)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # the rename itself reaches the disk
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _write_error(exc: OSError, path: Path, option: str) -> InputError:
    return InputError(f"cannot write: {exc.strerror or exc}", field=option,
                      fix="free disk space, or write to a writable place",
                      source=str(path))


def write_bytes(path: str | Path, data: bytes, option: str = "(output)") -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_path`; InputError on failure)."""
    with atomic_path(path, option) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text(path: str | Path, text: str, option: str = "(output)") -> None:
    """Write UTF-8 ``text`` (``\\n`` line ends) to ``path`` atomically (:func:`write_bytes`)."""
    write_bytes(path, text.encode("utf-8"), option)


@contextlib.contextmanager
def locked(directory: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (``flock`` on the folder itself) while
    reading, changing and rewriting a file in it, so that concurrent writers (two
    ``dlsched bench`` runs into one table) take turns and none loses another's rows.

    Advisory: only writers that take the lock wait for each other. Without ``fcntl``
    (Windows) it does nothing.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def check_output(path: str | Path, option: str, *, directory: bool = False) -> Path:
    """Check, before any work, that an output named on the command line can be written.

    Parameters
    ----------
    path
        The file (or, with ``directory``, the directory) to write.
    option
        The command-line option that named it, e.g. ``-o``; the error's field.
    directory
        ``path`` is a directory that exists or that the writer will create (with its
        parents); nothing is created here.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        ``path`` is an existing directory (a file was asked for) or file (a directory was
        asked for), its directory does not exist, or it is not writable.
    """
    p = Path(path)
    if directory:
        if p.exists() and not p.is_dir():
            raise InputError("exists and is not a directory", field=option,
                             fix="name a directory", source=str(p))
        target = next(a for a in (p, *p.absolute().parents) if a.exists())
        if not target.is_dir():
            raise InputError(f"{str(target)!r} is a file, not a directory", field=option,
                             fix="name a directory that can be created", source=str(p))
    else:
        if p.is_dir():
            raise InputError("is a directory", field=option, fix="name a file to write",
                             source=str(p))
        if not p.parent.is_dir():
            raise InputError(f"directory {str(p.parent)!r} does not exist", field=option,
                             fix="create it first, or write elsewhere", source=str(p))
        target = p if p.exists() else p.parent
    if not os.access(target, os.W_OK):
        raise InputError("not writable", field=option, fix="write somewhere you may write",
                         source=str(p))
    return p


def write_json(doc: Any, path: str | Path, option: str = "(output)") -> None:
    """Write ``doc`` as indented JSON, atomically; gzip-compressed when the name ends in
    ``.gz``.

    Raises
    ------
    InputError
        The file cannot be written (no such directory, a directory, disk full, ...).
    """
    p = Path(path)
    text = pretty_json(doc)
    data = text.encode("utf-8")
    write_bytes(p, gzip.compress(data, mtime=0) if p.name.endswith(".gz") else data, option)
