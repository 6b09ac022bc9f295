"""Reading and writing the package's JSON files (plain or gzip-compressed by their name)."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from .canonical import pretty_json
from .errors import InputError


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (gzip-compressed when its name ends in ``.gz``); a parse error
    becomes an InputError naming the line."""
    p = Path(path)
    try:
        if p.suffix == ".gz":
            text = gzip.decompress(p.read_bytes()).decode("utf-8")
        else:
            text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(p)) from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read: {exc}", fix="pass a UTF-8 JSON file", source=str(p)
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            field="(file)",
            fix="fix the JSON syntax",
            source=str(p),
        ) from None


def write_json(doc: Any, path: str | Path) -> None:
    """Write ``doc`` as indented JSON; gzip-compressed when the name ends in ``.gz``."""
    p = Path(path)
    text = pretty_json(doc)
    if p.suffix == ".gz":
        p.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        p.write_text(text, encoding="utf-8", newline="\n")
