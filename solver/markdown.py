"""Markdown tables, the one way every report of the package writes them.

A table is a header line, a rule line (``|---|---|``, or ``|---:|`` for a right-aligned
column) and one line per row; cells are written with ``str`` and joined by `` | ``.
Scripts that print rows as they are measured use :func:`markdown_head` once and
:func:`markdown_row` per row; the rest build the whole :func:`markdown_table`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_RULES = {"": "---", "l": ":---", "r": "---:", "c": ":---:"}


def markdown_row(cells: Sequence[object]) -> str:
    """One table line: ``| a | b |``."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_head(header: Sequence[object], align: Sequence[str] | None = None) -> str:
    """The header line and the rule line of a table.

    Parameters
    ----------
    header
        The column names.
    align
        Per column ``""`` (none), ``"l"``, ``"r"`` or ``"c"``; default none for all.

    Raises
    ------
    ValueError
        ``align`` of another length than ``header``, or an unknown alignment.
    """
    align = [""] * len(header) if align is None else list(align)
    if len(align) != len(header) or any(a not in _RULES for a in align):
        raise ValueError(f"align {align!r} for {len(header)} columns: use one of "
                         f"{sorted(_RULES)} per column")
    return markdown_row(header) + "\n|" + "|".join(_RULES[a] for a in align) + "|"


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]],
                   align: Sequence[str] | None = None) -> str:
    """A whole markdown table (no trailing newline).

    Parameters
    ----------
    header
        The column names.
    rows
        The rows, each with as many cells as ``header``.
    align
        Per column ``""`` (none), ``"l"``, ``"r"`` or ``"c"``; default none for all.

    Raises
    ------
    ValueError
        A row with another number of cells than the header, or a bad ``align``.
    """
    lines = [markdown_head(header, align)]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} cells for {len(header)} columns")
        lines.append(markdown_row(row))
    return "\n".join(lines)
