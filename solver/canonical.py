"""Canonical JSON text and its sha256: the identity of an instance or solution file."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(doc: Any) -> str:
    """Compact JSON with sorted keys, ASCII only, no NaN: the same bytes on every platform."""
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def sha256_of(doc: dict[str, Any]) -> str:
    """sha256 of the canonical form of ``doc`` without its ``sha256`` key."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(body).encode("ascii")).hexdigest()


def pretty_json(doc: Any) -> str:
    """The form written to files: sorted keys, two-space indent, trailing newline."""
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
