"""The pinned instance library: suite files, their manifest, best known solutions.

A suite directory holds ``suite.json`` (the spec, see :mod:`dlsched.benchmarks.suites`),
``instances/NAME.json.gz`` (gzip-compressed instance files; the sha256 is the one of the
canonical JSON, docs/formats.md, not of the compressed bytes), ``best/NAME.json`` (the best
known solution of each instance) and ``manifest.json``: per instance its file, sha256,
problem, objective sense, provenance (generator and seed, builder, or source file), size,
and the best known objective with its status — ``optimal`` (proven: a method's bound
meets the objective) or ``feasible`` (best found, with the best bound known, if any).

The best known values change only through :func:`offer_best`, which accepts a solution
only when the independent validator passes it and the problem's evaluator reproduces its
objective, and only when it improves the objective or proves optimality.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.canonical import pretty_json
from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.files import read_json, write_bytes, write_text
from dlsched.gaps import is_proven_optimal
from dlsched.instance import Instance
from dlsched.instance_io import load_instance
from dlsched.problems import get_problem
from dlsched.problems.base import Problem
from dlsched.schema_check import check_against_schema
from dlsched.solution_io import load_solution, save_solution
from dlsched.validate import validate_decision

from .suites import MANIFEST_FILE, SuiteSpec, expand, suite_dir

log = logging.getLogger(__name__)

MANIFEST_VERSION = 1
OBJECTIVE_TOL = 1e-6
"""Relative tolerance (of max(1, |objective|)) for "the evaluator reproduces the stated
objective" and for "equal to the best known"."""


def same_value(a: float, b: float, tol: float = OBJECTIVE_TOL) -> bool:
    """True when ``a`` and ``b`` agree within ``tol`` × max(1, |a|, |b|)."""
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def better(a: float, b: float, sense: str) -> bool:
    """True when objective ``a`` is strictly better than ``b`` (beyond the tolerance)."""
    if same_value(a, b):
        return False
    return a < b if sense == "min" else a > b


@dataclass
class Manifest:
    """The manifest of one suite; ``entries`` maps instance name → record (a plain dict)."""

    suite: str
    directory: Path
    description: str = ""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def path_of(self, name: str) -> Path:
        """The instance file of ``name``."""
        return self.directory / self.entries[name]["file"]

    def load(self, name: str) -> Instance:
        """Read (and check) the instance ``name``; its sha256 must be the manifest's.

        Raises
        ------
        InputError
            The file is bad, or it is not the instance the manifest pins (swapped or
            edited: its sha256 differs).
        """
        instance = load_instance(self.path_of(name))
        pinned = self.entries[name]["sha256"]
        if instance.sha256 != pinned:
            raise InputError(f"sha256 {instance.sha256[:12]}… differs from the manifest's "
                             f"{pinned[:12]}…", field=f"instances[{name}].sha256",
                             fix="rebuild the suite (dlsched library build) or restore "
                                 "the file", source=str(self.directory / MANIFEST_FILE))
        return instance

    def best(self, name: str) -> dict[str, Any] | None:
        return self.entries[name].get("best")

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": MANIFEST_VERSION, "suite": self.suite,
                "description": self.description,
                "instances": [self.entries[k] for k in self.entries]}

    def save(self) -> None:
        path = self.directory / MANIFEST_FILE
        write_text(path, pretty_json(self.to_dict()))


def load_manifest(suite: str | Path, library: str | Path | None = None) -> Manifest:
    """Read the ``manifest.json`` of a suite (a name in the library or a directory)."""
    directory = suite_dir(suite, library)
    path = directory / MANIFEST_FILE
    if not path.exists():
        raise InputError("the suite has no manifest", field="--suite",
                         fix=f"run: dlsched library build --suite {suite}", source=str(path))
    doc = read_json(path)
    try:
        check_against_schema(doc, "manifest")
        entries: dict[str, dict[str, Any]] = {}
        for i, rec in enumerate(doc["instances"]):
            if rec["name"] in entries:
                raise InputError(f"instance {rec['name']!r} is listed twice",
                                 field=f"instances[{i}].name", fix="keep one entry per name")
            problem = get_problem(rec["problem"], field=f"instances[{i}].problem")
            if rec["sense"] != problem.sense:
                raise InputError(f"sense {rec['sense']!r}, but {problem.name} is a "
                                 f"{problem.sense}imization", field=f"instances[{i}].sense",
                                 fix=f"write {problem.sense!r}")
            entries[rec["name"]] = rec
    except InputError as exc:
        raise exc.with_source(str(path)) from None
    return Manifest(doc["suite"], directory, doc.get("description", ""), entries)


def write_instance_gz(instance: Instance, path: Path) -> str:
    """Write ``instance`` as gzip-compressed JSON with a fixed header; returns its sha256.

    The file form inside is the one of ``save_instance``; ``mtime=0`` keeps the bytes
    independent of when the file was written.
    """
    doc = instance.to_dict()
    data = pretty_json(doc).encode("utf-8")
    write_bytes(path, gzip.compress(data, compresslevel=9, mtime=0))
    return doc["sha256"]


def _source(entry: Any, seed: int | None) -> dict[str, Any]:
    if entry.generator is not None:
        return {"generator": entry.generator, "arguments": dict(entry.arguments), "seed": seed}
    if entry.builder is not None:
        return {"builder": entry.builder, "arguments": dict(entry.arguments), "seed": seed}
    return {"file": entry.file}


def _size(instance: Instance) -> dict[str, int]:
    return {"nodes": instance.cluster.num_nodes, "gpus": instance.cluster.num_gpus,
            "jobs": len(instance.jobs), "running": len(instance.running)}


def write_suite_files(spec: SuiteSpec) -> Manifest:
    """Generate every instance of ``spec`` into its directory and write the manifest.

    Best known records of instances whose sha256 is unchanged are kept; the others start
    empty. Instance and best-solution files of instances no longer in the spec are
    deleted: the build owns ``instances/`` and ``best/``.
    """
    old: dict[str, dict[str, Any]] = {}
    if spec.manifest_path.is_file():
        old = load_manifest(spec.directory).entries
    (spec.directory / "instances").mkdir(parents=True, exist_ok=True)
    manifest = Manifest(spec.name, spec.directory, spec.description)
    for stem, entry, seed, instance in expand(spec):
        rel = f"instances/{stem}.json.gz"
        sha = write_instance_gz(instance, spec.directory / rel)
        problem = get_problem(instance.problem)
        record: dict[str, Any] = {
            "name": stem, "file": rel, "sha256": sha, "problem": instance.problem,
            "sense": problem.sense, "source": _source(entry, seed), "size": _size(instance),
            "best": None,
        }
        previous = old.get(stem)
        if previous is not None and previous.get("sha256") == sha:
            record["best"] = previous.get("best")
        manifest.entries[stem] = record
        log.info("wrote %s (%s)", rel, sha[:12])
    for pattern, suffix in (("instances/*.json.gz", ".json.gz"), ("best/*.json", ".json")):
        for path in spec.directory.glob(pattern):
            if path.name.removesuffix(suffix) not in manifest.entries:
                log.info("removed %s (no longer in the spec)", path)
                path.unlink()
    manifest.save()
    return manifest


@dataclass(frozen=True)
class Offer:
    """A candidate best known solution: a decision and where it came from."""

    name: str
    decision: Decision | None
    objective: float | None
    status: str
    bound: float | None
    method: str
    backend: str | None = None
    seed: int | None = None


def offer_best(manifest: Manifest, offers: Iterable[Offer], *, save: bool = True) -> list[str]:
    """Update best known records from ``offers``; returns one line per change or refusal.

    A decision is accepted only when it passes the validator and the evaluator reproduces
    its stated objective, and only when it improves the best known objective or proves
    it optimal. A bound is kept when it is tighter than the stored one and does not cut
    off the best known objective; a stored bound that a validated solution beats was
    wrong and is dropped.
    """
    notes: list[str] = []
    instances: dict[str, Instance] = {}
    changed = False
    for offer in offers:
        rec = manifest.entries.get(offer.name)
        if rec is None:
            continue
        if offer.name not in instances:
            instances[offer.name] = manifest.load(offer.name)
        instance = instances[offer.name]
        sense = rec["sense"]
        best = rec.get("best")
        who = offer.method + (f"/{offer.backend}" if offer.backend else "")
        if offer.decision is not None:
            report = validate_decision(instance, offer.decision)  # loaded: checked
            if not report.ok:
                notes.append(f"{offer.name}: refused {who}: {report}")
                continue
            value = get_problem(instance.problem).evaluate(instance, offer.decision)
            if offer.objective is not None and not same_value(value, offer.objective):
                notes.append(f"{offer.name}: refused {who}: stated objective "
                             f"{offer.objective!r}, evaluator {value!r}")
                continue
            proven = offer.status == "optimal" and is_proven_optimal(value, offer.bound)
            if best is None or better(value, best["objective"], sense) or (
                    proven and best["status"] != "optimal"
                    and same_value(value, best["objective"])):
                bound = offer.bound
                stored = best.get("bound") if best is not None else None
                if stored is not None and better(value, stored, sense):
                    notes.append(f"{offer.name}: stored bound {stored!r} cuts off {value!r} "
                                 f"from {who}: it was wrong; dropped")
                    stored = None
                if stored is not None and (bound is None or _tighter(stored, bound, sense)):
                    bound = stored
                if bound is not None and better(value, bound, sense):
                    notes.append(f"{offer.name}: bound {bound!r} cuts off {value!r}; dropped")
                    bound = None
                proven = proven or is_proven_optimal(value, bound)
                best = {"objective": value, "status": "optimal" if proven else "feasible",
                        "bound": bound, "solution": f"best/{offer.name}.json",
                        "method": offer.method, "backend": offer.backend, "seed": offer.seed}
                (manifest.directory / "best").mkdir(exist_ok=True)
                save_solution(instance, offer.decision, manifest.directory / best["solution"],
                              method=offer.method, backend=offer.backend,
                              status=best["status"], objective=value, bound=bound)
                rec["best"] = best
                changed = True
                notes.append(f"{offer.name}: best known {value:.10g} ({best['status']}) "
                             f"from {who}")
                continue
        if best is not None and offer.bound is not None and best["status"] != "optimal" \
                and _tighter(offer.bound, best.get("bound"), sense):
            if better(best["objective"], offer.bound, sense):
                notes.append(f"{offer.name}: bound {offer.bound!r} from {who} cuts off the "
                             f"best known {best['objective']!r}; ignored")
                continue
            best["bound"] = offer.bound
            if is_proven_optimal(best["objective"], offer.bound):
                best["status"] = "optimal"
            changed = True
            notes.append(f"{offer.name}: bound {offer.bound:.10g} from {who}")
    if changed and save:
        manifest.save()
    return notes


def snapshot_bound_offers(manifest: Manifest) -> list[Offer]:
    """A bound-only offer per instance whose problem has a solver-free bound
    (:meth:`dlsched.problems.base.Problem.snapshot_bound`)."""
    offers = []
    for name, rec in manifest.entries.items():
        problem = get_problem(rec["problem"])
        if type(problem).snapshot_bound is Problem.snapshot_bound:
            continue
        bound = problem.snapshot_bound(manifest.load(name))
        if bound is not None:
            offers.append(Offer(name, None, None, "feasible", bound, "snapshot-bound"))
    return offers


def _tighter(a: float, b: float | None, sense: str) -> bool:
    """True when bound ``a`` is tighter than ``b`` (higher lower bound for minimization)."""
    if b is None:
        return True
    if same_value(a, b):
        return False
    return a > b if sense == "min" else a < b


def verify(suite: str | Path, library: str | Path | None = None) -> tuple[int, list[str]]:
    """Check every file of a suite against its sha256 and every best known solution.

    Returns ``(instances checked, failures)``; each failure is one line naming the
    instance and what is wrong.
    """
    manifest = load_manifest(suite, library)
    failures: list[str] = []
    for name, rec in manifest.entries.items():
        try:
            instance = manifest.load(name)  # its sha256 must be the manifest's
        except InputError as exc:
            failures.append(f"{name}: {exc.one_line()}")
            continue
        if instance.problem != rec["problem"]:
            failures.append(f"{name}: problem {instance.problem!r}, manifest {rec['problem']!r}")
        best = rec.get("best")
        if best is None:
            continue
        failures.extend(f"{name}: {text}" for text in _check_best(manifest, instance, best))
    return len(manifest.entries), failures


def _check_best(manifest: Manifest, instance: Instance, best: Mapping[str, Any]) -> list[str]:
    try:
        decision = load_solution(manifest.directory / best["solution"], instance)
    except InputError as exc:
        return [exc.one_line()]
    report = validate_decision(instance, decision)  # manifest.load checked it
    if not report.ok:
        return [f"stored best solution is infeasible: {report}"]
    value = get_problem(instance.problem).evaluate(instance, decision)
    out = []
    if not same_value(value, best["objective"]):
        out.append(f"stored best solution evaluates to {value!r}, manifest says "
                   f"{best['objective']!r}")
    sense = get_problem(instance.problem).sense
    bound = best.get("bound")
    if bound is not None and better(value, bound, sense):
        out.append(f"bound {bound!r} cuts off the stored solution's {value!r}")
    if best.get("status") == "optimal" and not is_proven_optimal(value, bound):
        out.append(f"status optimal without a proving bound (bound {bound!r})")
    return out
