"""What every ``dlsched`` subcommand module shares: exit codes, the argument parser class
and the ``--option key=value`` parser."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .errors import InputError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2

class Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and one line on a usage error (its default too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def parse_option_pairs(pairs: Sequence[str]) -> dict[str, object]:
    """``key=value`` strings → dict; values parsed as JSON when they parse."""
    out: dict[str, object] = {}
    for pair in pairs:
        if "=" not in pair:
            raise InputError(f"option {pair!r} is not key=value", field="--option",
                             fix="write --option name=value")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out
