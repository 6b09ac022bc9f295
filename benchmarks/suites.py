"""Suite specifications: which instances a named suite holds, as data.

A suite is a directory (``instances/library/NAME/`` for the shipped ones) whose
``suite.json`` lists entries; each entry makes one instance per seed:

``{"name": "horus-16x8", "generator": "horus", "arguments": {...}, "seeds": [0, 1]}``
    a registered generator (``dlsched generate PROBLEM``), called as
    ``build(seed=seed, **arguments)``;
``{"name": "philly-snap", "builder": "package.module:function", "arguments": {...},
"seeds": [0]}``
    any importable function with the same call convention (trace importers);
``{"name": "my-file", "file": "relative/or/absolute.json"}``
    an existing instance file, taken as it is (no seed).

Optional top-level keys: ``description``; ``best_known`` — how ``dlsched library build``
finds the best known solutions: ``{"runs": [{"method": "exact", "backend": "cbc"}, ...],
"time_limit": 60}``; ``bench`` — defaults for ``dlsched bench``: ``{"time_limit": 10,
"seeds": [0]}``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.errors import InputError
from dlsched.files import read_json_as
from dlsched.instance import Instance
from dlsched.instance_io import load_instance
from dlsched.registry import generators
from dlsched.solve import MAX_SEED

LIBRARY_ROOT = Path(__file__).resolve().parent.parent / "instances" / "library"
SPEC_FILE = "suite.json"
MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True)
class Entry:
    """One line of a suite spec: a generator, a builder function or a file."""

    name: str
    generator: str | None = None
    builder: str | None = None
    file: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)

    def instance_names(self) -> list[str]:
        """File stems of the instances this entry makes."""
        if self.file is not None:
            return [self.name]
        return [f"{self.name}-s{seed}" for seed in self.seeds]


@dataclass(frozen=True)
class BestKnownRuns:
    """How ``library build`` computes best known solutions: runs of registered methods."""

    runs: tuple[tuple[str, str | None], ...] = (("exact", None),)
    time_limit: float = 60.0


@dataclass(frozen=True)
class SuiteSpec:
    """A parsed ``suite.json`` and the directory it lives in."""

    name: str
    directory: Path
    entries: tuple[Entry, ...]
    description: str = ""
    best_known: BestKnownRuns = BestKnownRuns()
    bench_time_limit: float = 10.0
    bench_seeds: tuple[int, ...] = (0,)

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST_FILE


def suite_dir(suite: str | Path, library: str | Path | None = None) -> Path:
    """The directory of suite ``suite``: a name in the library, or a path to a directory."""
    path = Path(suite)
    if (path / SPEC_FILE).is_file() or (path / MANIFEST_FILE).is_file():
        return path
    root = Path(library) if library is not None else LIBRARY_ROOT
    candidate = root / str(suite)
    if candidate.is_dir():
        return candidate
    known = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    raise InputError(
        f"no suite {str(suite)!r}",
        field="--suite",
        fix=f"use one of: {', '.join(known) or '(none)'}, or a directory with {SPEC_FILE}",
    )


def load_spec(suite: str | Path, library: str | Path | None = None) -> SuiteSpec:
    """Read and check the ``suite.json`` of a suite."""
    directory = suite_dir(suite, library)
    path = directory / SPEC_FILE
    if not path.exists():
        raise InputError("no suite spec", fix=f"write {SPEC_FILE}", source=str(path))
    return read_json_as(path, lambda doc: _parse_spec(doc, directory))


def _parse_spec(doc: Any, directory: Path) -> SuiteSpec:
    if not isinstance(doc, dict) or not isinstance(doc.get("instances"), list):
        raise InputError("a suite spec is an object with an 'instances' list",
                         field="instances", fix="list the suite's entries under 'instances'")
    if not doc["instances"]:
        raise InputError("no instances", field="instances",
                         fix="list at least one entry under 'instances'")
    entries = []
    names: set[str] = set()
    for i, raw in enumerate(doc["instances"]):
        entry = _parse_entry(raw, f"instances[{i}]")
        for stem in entry.instance_names():
            if stem in names:
                raise InputError(f"instance name {stem!r} repeats", field=f"instances[{i}].name",
                                 fix="give every entry a unique name")
            names.add(stem)
        entries.append(entry)
    best = doc.get("best_known", {})
    bench = doc.get("bench", {})
    for key, block in (("best_known", best), ("bench", bench)):
        if not isinstance(block, dict):
            raise InputError(f"{key} must be an object", field=key,
                             fix="see docs/benchmarks.md for the suite.json format")
        limit = block.get("time_limit", 1.0)
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0:
            raise InputError(f"time_limit = {limit!r}"[:80], field=f"{key}.time_limit",
                             fix="give a finite number of seconds > 0")
    raw_runs = best.get("runs", [{"method": "exact"}])
    if not isinstance(raw_runs, list) or not all(
            isinstance(r, dict) and isinstance(r.get("method"), str)
            and isinstance(r.get("backend"), str | None) for r in raw_runs):
        raise InputError("runs must be a list of {\"method\": NAME, \"backend\": NAME}",
                         field="best_known.runs", fix="name a registered method per run")
    runs = tuple((r["method"], r.get("backend")) for r in raw_runs)
    _check_seeds(bench.get("seeds", [0]), "bench.seeds")
    return SuiteSpec(
        name=str(doc.get("name", directory.name)),
        directory=directory,
        entries=tuple(entries),
        description=str(doc.get("description", "")),
        best_known=BestKnownRuns(runs, float(best.get("time_limit", 60.0))),
        bench_time_limit=float(bench.get("time_limit", 10.0)),
        bench_seeds=tuple(int(s) for s in bench.get("seeds", [0])),
    )


def _check_seeds(seeds: Any, field: str) -> list[int]:
    """``seeds`` when it is a non-empty list of seeds (0 … MAX_SEED), else InputError."""
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED
            for s in seeds):
        raise InputError(f"seeds = {seeds!r}"[:80], field=field,
                         fix=f"give a non-empty list of integers from 0 to {MAX_SEED}")
    return seeds


def _parse_entry(raw: Any, where: str) -> Entry:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise InputError("an entry is an object with a 'name'", field=where,
                         fix="write {\"name\": ..., \"generator\": ..., \"seeds\": [...]}")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", raw["name"]):
        raise InputError(f"name {raw['name'][:40]!r}", field=f"{where}.name",
                         fix="use letters, digits, '.', '_' and '-' (no '/', not starting "
                         "with '.'): the name becomes a file name")
    kinds = [k for k in ("generator", "builder", "file") if k in raw]
    if len(kinds) != 1:
        raise InputError(f"entry {raw['name']!r} names {kinds or 'no source'}", field=where,
                         fix="give exactly one of 'generator', 'builder', 'file'")
    seeds = _check_seeds(raw.get("seeds", [0]), f"{where}.seeds")
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, dict):
        raise InputError("arguments must be an object", field=f"{where}.arguments",
                         fix="write keyword arguments as {\"name\": value}")
    return Entry(name=raw["name"], generator=raw.get("generator"), builder=raw.get("builder"),
                 file=raw.get("file"), arguments=arguments, seeds=tuple(seeds))


def _callable(entry: Entry) -> Callable[..., Instance]:
    if entry.generator is not None:
        specs = generators()
        if entry.generator not in specs:
            raise InputError(f"no generator {entry.generator!r}", field=f"{entry.name}.generator",
                             fix=f"use one of: {', '.join(specs)}")
        return specs[entry.generator].build
    module_name, _, func = str(entry.builder).partition(":")
    try:
        return getattr(importlib.import_module(module_name), func)
    except (ImportError, AttributeError):
        raise InputError(f"cannot import {entry.builder!r}", field=f"{entry.name}.builder",
                         fix="write package.module:function of an importable function") from None


def expand(spec: SuiteSpec) -> Iterator[tuple[str, Entry, int | None, Instance]]:
    """Make every instance of the suite: ``(file stem, entry, seed, instance)``, in order.

    Raises
    ------
    InputError
        An entry cannot be built; named by the suite's ``suite.json`` when no other file is.
    """
    try:
        yield from _expand(spec)
    except InputError as exc:
        if exc.source:
            raise
        raise exc.with_source(str(spec.directory / SPEC_FILE)) from None


def _expand(spec: SuiteSpec) -> Iterator[tuple[str, Entry, int | None, Instance]]:
    for entry in spec.entries:
        if entry.file is not None:
            path = Path(entry.file)
            if not path.is_absolute():
                path = spec.directory / path
            yield entry.name, entry, None, load_instance(path)
            continue
        build = _callable(entry)
        for seed in entry.seeds:
            try:
                instance = build(seed=seed, **entry.arguments)
            except (TypeError, ValueError) as exc:
                raise InputError(f"cannot build seed {seed}: {exc}",
                                 field=f"{entry.name}.arguments",
                                 fix="use the generator's keyword arguments") from None
            yield f"{entry.name}-s{seed}", entry, seed, instance
