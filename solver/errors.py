"""Errors raised on bad input: each names the file, the field and the fix."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input: malformed file, missing or invalid field, unknown id.

    Parameters
    ----------
    message
        What is wrong.
    field
        Dotted path of the offending field, e.g. ``cluster.nodes[3].cpu``.
    fix
        What the user should do about it.
    source
        The file the input came from, when known.
    """

    def __init__(
        self, message: str, *, field: str = "", fix: str = "", source: str | None = None
    ) -> None:
        self.message = message
        self.field = field
        self.fix = fix
        self.source = source
        super().__init__(self.one_line())

    def with_source(self, source: str) -> InputError:
        """Return the same error, attributed to ``source`` (a file path)."""
        return InputError(self.message, field=self.field, fix=self.fix, source=source)

    def one_line(self) -> str:
        """The message as one line: ``FILE: FIELD: what is wrong (fix)``."""
        parts = [p for p in (self.source, self.field) if p]
        text = ": ".join([*parts, self.message])
        text = f"{text} ({self.fix})" if self.fix else text
        return text.translate(_ESCAPES)  # ids from a file may hold newlines: keep one line


_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(32), 127)} | {10: "\\n", 13: "\\r", 9: "\\t"}


def field_path(parts: list[str | int] | tuple[str | int, ...]) -> str:
    """Format a JSON path as ``a.b[3].c``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class MethodError(RuntimeError):
    """A method returned a decision the independent validator rejects (a bug, never hidden)."""
