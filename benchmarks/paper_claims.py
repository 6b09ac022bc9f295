"""The papers' headline numbers, as data: one versioned TOML file per paper.

Each ``claims/<paper>.toml`` (package data) holds ``version``, ``paper`` and a list of
``[[claim]]`` tables:

``id``
    ``<paper>.<table or figure>.<what>``, e.g. ``horus.table6.w-small.fifo``; unique.
``quote``
    The paper's sentence (or table row) that states the number, verbatim.
``source``
    The table or figure (and section) cited.
``value``
    The paper's number: a number, a list (one per setting the ``setting`` names, e.g.
    per test slot) or a table of setting -> number or [low, high] range.
``unit``
    ``relative change`` ((ours - theirs) / theirs, negative = lower), or the metric's unit.
``direction``
    What "reproduced" compares: ``lower`` / ``higher`` (the claimed policy's metric against
    the baseline's; dlsched's mean must have that sign and lie within a factor 2 of the
    paper's) or ``level`` (dlsched's value of the same metric within a factor 2).
``setting``
    The paper's stated setting, free text.
``baseline`` (optional)
    The compared policy's number when ``value`` is the claimed policy's own number (a table
    of both): the relative change is then ``(value - baseline) / baseline``.

``dlsched reproduce`` reads them: a row's cited number comes from its claim.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from dlsched.errors import InputError

PAPERS = ("horus", "genie", "liquid", "sched2", "inference")
VERSION = 1
REQUIRED = ("id", "quote", "source", "value", "unit", "direction", "setting")
OPTIONAL = ("baseline",)
DIRECTIONS = ("lower", "higher", "level")

Value = float | list[float] | dict[str, float | list[float]]


@dataclass(frozen=True)
class Claim:
    """One number a paper states (the keys are described in the module docstring)."""

    id: str
    quote: str
    source: str
    value: Value
    unit: str
    direction: str
    setting: str
    baseline: Value | None = None

    def change(self) -> float:
        """The claimed relative change of a one-number claim: ``(value - baseline) /
        baseline`` when the paper gives both numbers; for a ratio "by 2.1x" of the
        baseline over the claimed policy (unit ``ratio ...``), ``1 / value - 1`` when lower
        is better and ``value - 1`` when higher is; else ``value`` (already one)."""
        if self.baseline is None:
            if self.unit.startswith("ratio"):
                v = float(self.value)  # type: ignore[arg-type]
                return 1.0 / v - 1.0 if self.direction == "lower" else v - 1.0
            return float(self.value)  # type: ignore[arg-type]
        return (self.value - self.baseline) / self.baseline  # type: ignore[operator]


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _is_value(x: Any) -> bool:
    if _is_number(x):
        return True
    if isinstance(x, list):
        return bool(x) and all(_is_number(v) for v in x)
    if isinstance(x, dict):
        return bool(x) and all(_is_number(v) or (isinstance(v, list) and v and all(
            _is_number(u) for u in v)) for v in x.values())
    return False


def _claim(raw: dict[str, Any], paper: str, where: str) -> Claim:
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise InputError(f"claim lacks {', '.join(missing)}", field=where,
                         fix=f"give every claim the keys {', '.join(REQUIRED)}")
    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", field=where,
                         fix=f"use only {', '.join(REQUIRED + OPTIONAL)}")
    cid = raw["id"]
    if not isinstance(cid, str) or not cid.startswith(paper + "."):
        raise InputError(f"id {cid!r} does not start with {paper + '.'!r}", field=where + ".id",
                         fix="name a claim <paper>.<table or figure>.<what>")
    for key in ("quote", "source", "unit", "setting"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise InputError(f"{key} of {cid} is not a non-empty string",
                             field=f"{where}.{key}", fix="give the paper's text")
    if raw["direction"] not in DIRECTIONS:
        raise InputError(f"direction {raw['direction']!r} of {cid}",
                         field=where + ".direction", fix=f"use one of {', '.join(DIRECTIONS)}")
    for key in ("value", "baseline"):
        if key in raw and not _is_value(raw[key]):
            raise InputError(f"{key} of {cid} is not a number, a list or a table of numbers",
                             field=f"{where}.{key}", fix="write the paper's number(s)")
    return Claim(**raw)


@cache
def load(paper: str) -> dict[str, Claim]:
    """The claims of ``paper`` by id, read from the package's ``claims/<paper>.toml``.

    Raises
    ------
    InputError
        Unknown paper, or a file that breaks the schema (module docstring).
    """
    if paper not in PAPERS:
        raise InputError(f"no claims for paper {paper!r}", field="paper",
                         fix=f"use one of {', '.join(PAPERS)}")
    name = f"{paper}.toml"
    return parse(resources.files(__package__).joinpath("claims", name).read_text(
        encoding="utf-8"), paper, name)


def parse(text: str, paper: str, name: str) -> dict[str, Claim]:
    """The claims of ``paper`` in the TOML ``text`` of file ``name`` (checked, by id)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not TOML: {exc}", fix="fix the syntax", source=name) from None
    if data.get("version") != VERSION or data.get("paper") != paper:
        raise InputError(f"expected version = {VERSION} and paper = {paper!r}",
                         field="version", fix="set both at the top of the file", source=name)
    out: dict[str, Claim] = {}
    for i, raw in enumerate(data.get("claim", [])):
        try:
            claim = _claim(raw, paper, f"claim[{i}]")
        except InputError as exc:
            raise exc.with_source(name) from None
        if claim.id in out:
            raise InputError(f"duplicate id {claim.id}", field=f"claim[{i}].id",
                             fix="give each claim its own id", source=name)
        out[claim.id] = claim
    return out


def claim(cid: str) -> Claim:
    """The claim with id ``cid`` (its paper is the part before the first dot)."""
    found = load(cid.split(".", 1)[0]).get(cid)
    if found is None:
        raise InputError(f"no claim {cid!r}", field="id",
                         fix=f"add it to benchmarks/claims/{cid.split('.', 1)[0]}.toml")
    return found
