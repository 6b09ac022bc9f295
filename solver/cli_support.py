"""What every ``dlsched`` subcommand module shares: exit codes, the argument parser class
and the ``--option key=value`` parser."""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence

from .errors import InputError
from .files import DuplicateKey, unique_keys
from .solve import MAX_SEED

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2

def default_text(value: object) -> str:
    """How a default value is written in help texts.

    Parameters
    ----------
    value
        The default.

    Returns
    -------
    str
        ``60.0`` → ``"60"``, a list → comma-separated, else ``str(value)``.
    """
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def has_default(action: argparse.Action) -> bool:
    """Whether an option has a default worth stating.

    Parameters
    ----------
    action
        An argparse action.

    Returns
    -------
    bool
        False for ``None``, ``False`` (an off flag), suppressed and empty defaults.
    """
    d = action.default
    return not (d is None or d is False or d is argparse.SUPPRESS
                or (isinstance(d, (list, tuple, str)) and len(d) == 0))


class DefaultsFormatter(argparse.HelpFormatter):
    """Help formatter that states every option's default.

    A help text that already says ``default`` is left alone; one that gives the default
    in parentheses, ``(60)``, becomes ``(default 60)``; otherwise ``(default: VALUE)`` is
    appended.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not has_default(action) or "default" in text or "%(default)" in text:
            return text
        value = default_text(action.default)
        pattern = re.compile(r"\((" + re.escape(value) + r")([);])")
        if pattern.search(text):
            return pattern.sub(lambda m: f"(default {m.group(1)}{m.group(2)}", text, count=1)
        return f"{text} (default: {value.replace('%', '%%')})".strip()


class Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and one line on a usage error (its default too),
    and whose help states every option's default (:class:`DefaultsFormatter`)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        text = " ".join(message.split())  # one line: no usage block, the fix is --help
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


def positive_seconds(text: str) -> float:
    """argparse ``type=`` of a time option: a finite number of seconds > 0.

    Raises
    ------
    argparse.ArgumentTypeError
        ``text`` is not a number, or is NaN, infinite, zero or negative.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: use a finite number of seconds > 0")
    return value


def seed_value(text: str) -> int:
    """argparse ``type=`` of a ``--seed`` option: an integer from 0 to :data:`MAX_SEED`.

    Raises
    ------
    argparse.ArgumentTypeError
        ``text`` is not an integer in that range.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value}: use a seed from 0 to {MAX_SEED}")
    return value


def print_summary(summary: dict[str, float], out_dir: object) -> None:
    """Print a run's summary as a two-column table and where its results went."""
    width = max(len(k) for k in summary)
    print(f"{'metric':<{width}}  value")
    for key, value in summary.items():
        print(f"{key:<{width}}  {value:.6g}")
    print(f"results written to {out_dir}")


def parse_option_pairs(pairs: Sequence[str]) -> dict[str, object]:
    """``key=value`` strings → dict; values parsed as JSON when they parse."""
    out: dict[str, object] = {}
    for pair in pairs:
        if "=" not in pair:
            raise InputError(f"option {pair!r} is not key=value", field="--option",
                             fix="write --option name=value")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value, parse_constant=_no_constant, parse_float=_finite,
                                  object_pairs_hook=unique_keys)
        except json.JSONDecodeError:
            out[key] = value
        except DuplicateKey as exc:
            raise InputError(f"option {key} names {exc.key!r} twice", field=f"--option {key}",
                             fix="keep one value per key") from None
        except ValueError:  # NaN, Infinity, or a number too large for a float (1e400)
            raise InputError(f"option {key}={value[:40]} holds a number that is not finite",
                             field=f"--option {key}", fix="use finite numbers") from None
    return out


def _no_constant(name: str) -> object:
    raise ValueError(name)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def parse_backends(text: str) -> tuple[str, ...]:
    """``"cbc,scip"`` (or space-separated) → ("cbc", "scip"), for an argparse ``type=``;
    unknown names or an empty list are an :class:`argparse.ArgumentTypeError`."""
    from dlsched.formulations.backend import BACKENDS

    out = tuple(b for b in text.replace(" ", ",").split(",") if b)
    bad = [b for b in out if b not in BACKENDS]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"unknown backends {bad} (use {','.join(BACKENDS)})")
    return out
