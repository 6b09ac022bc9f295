"""Values of a trace file's fields: numbers and times, or a :class:`BadRow` saying why not."""

from __future__ import annotations

import math
import re
from typing import Any


class BadRow(Exception):
    """A malformed value: the column and what is wrong with it."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column = column
        self.message = message


MAX_VALUE = float(2**53)
"""Largest magnitude of a number in a trace (as in instance files: every integer up to it
is exact as a float)."""


def number(value: Any, column: str, *, minimum: float | None = None,
           integer: bool = False) -> float:
    """``value`` as a finite number.

    Parameters
    ----------
    value
        The field as read.
    column
        Its column (named in the error).
    minimum
        Smallest value allowed.
    integer
        Require a whole number.

    Returns
    -------
    float

    Raises
    ------
    BadRow
        Empty, not a number, not finite, not whole, or below ``minimum``.
    """
    text = str(value).strip() if value is not None else ""
    if text == "":
        raise BadRow(column, "empty value")
    try:
        x = float(text)
    except ValueError:
        raise BadRow(column, f"{text!r} is not a number") from None
    if not math.isfinite(x):
        raise BadRow(column, f"{text!r} is not finite")
    if abs(x) > MAX_VALUE:
        raise BadRow(column, f"{text[:30]!r} is larger in magnitude than 2**53")
    if integer and x != int(x):
        raise BadRow(column, f"{text!r} is not a whole number")
    if minimum is not None and x < minimum:
        raise BadRow(column, f"{text!r} is below {minimum:g}")
    return x


def timestamp(value: Any, column: str, tz: str) -> float:
    """Seconds: a number as is, else a date-time (ISO 8601) read in ``tz`` when it has no
    zone of its own, as seconds since the Unix epoch. Ambiguous wall-clock times (the
    hour repeated when daylight saving time ends) are read as daylight time; times that
    do not exist (skipped at its start) are moved forward.

    Parameters
    ----------
    value
        The field as read.
    column
        Its column (named in the error).
    tz
        IANA zone name for date-times without a zone.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    BadRow
        Empty, or neither a number nor a date-time.
    """
    text = str(value).strip() if value is not None else ""
    if text == "":
        raise BadRow(column, "empty time")
    try:
        seconds = (float(text) if re.fullmatch(r"[-+]?\d+(\.\d*)?", text)
                   else _datetime(text, tz))
    except (ValueError, TypeError, OverflowError):
        raise BadRow(column, f"{text!r} is not seconds or a date-time") from None
    if abs(seconds) > MAX_VALUE:
        raise BadRow(column, f"{text[:30]!r} is larger in magnitude than 2**53 seconds")
    return seconds


ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"
                          r"(Z|[+-]\d{2}:?\d{2})?")
"""The date-times a trace may hold (ISO 8601: ``2017-10-07 01:11:39``, with an optional
``T``, fraction and zone); pandas alone would also read ``1,5`` or ``May`` as a date."""


def _datetime(text: str, tz: str) -> float:
    if not ISO_DATETIME.fullmatch(text):
        raise ValueError(text)
    import pandas as pd  # on first use: `dlsched` commands start faster

    stamp = pd.Timestamp(text)
    if stamp is pd.NaT:
        raise ValueError(text)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
    return stamp.timestamp()
