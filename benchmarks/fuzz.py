"""Fuzzing the command line with mutated instance, solution, workload, manifest and trace files.

``python -m dlsched.benchmarks.fuzz [--mutants 10000] [--seed 0]`` builds small seed files
of every problem (a snapshot and a valid solution per problem, with start times where the
problem has them, and two workloads), mutates them — values swapped for NaN, ±Infinity,
1e400, subnormals, huge integers, negative amounts, wrong types, deep nesting, unknown or
missing keys, duplicated or emptied lists; truncated, bit-flipped, non-UTF-8 or corrupted
gzip text — and runs each mutant through the ``dlsched`` entry point (``solve`` +
``validate`` + ``evaluate`` for snapshots, ``validate`` + ``evaluate`` for solutions,
``simulate`` for workloads, ``library verify`` for a suite manifest, ``import-trace`` for
a file of every trace format: :mod:`.fuzz_files`). It counts, per mutant:

- ``internal``: exit 3 (an unexpected exception reached the top-level guard) or an
  exception escaping ``main`` — must be 0;
- ``bad_exit``: an exit code outside 0/1/2;
- ``multiline``: more than one line on stderr;
- ``accepted_invalid``: exit 0 for a mutant that breaks a rule of the format (the
  mutation's label says so, e.g. a NaN, a negative capacity, a wrong type, an unknown key);
- ``unnamed``: an exit-2 line that does not name the file and a field.

The tests (tests/test_fuzz.py) drive the same :func:`mutate` and :func:`run_mutant` with
Hypothesis. The last line printed is one JSON object with the counts.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import io
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fuzz_files
from .fuzz_seeds import Seed, make_seeds


# ------------------------------------------------------------------------- mutations
class Chooser:
    """Where a mutation's choices come from: ``random.Random`` here, Hypothesis in tests."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.integer(0, len(options) - 1)]


NONNEG = {"cpu", "ram_gb", "mem_gb", "gpu_util", "gpu_mem_gb", "cpu_per_gpu", "ram_gb_per_gpu",
          "remaining_s", "time", "duration", "num_gpus", "weight", "gpus", "bandwidth",
          "batch_size", "iterations", "speed", "w_mem", "w_util", "theta", "lambda", "queues",
          "beta", "unplaced_penalty", "gamma", "lam", "nu", "b_min", "b_sat", "infer_speedup",
          "format_version"}
"""Keys whose value may not be negative, wherever they appear (outside provenance)."""

NULLABLE = {"beta", "unplaced_penalty", "b_sat", "seed", "objective", "bound", "backend",
            "linear"}
FREE = ("provenance",)
"""Top-level keys whose content is free-form (anything goes there)."""

# text tokens that json.dumps cannot write; injected through a marker string
TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-320", "-4.9e-324",
          "123456789012345678901234567890", "1" * 5000, "1e308", "-1e101"]
TOKEN_VALUES: list[Any] = [-1, -1e-9, 0, 0.5, 3, 1e-300, 1e12, 1e15, 2**53, True, False, None,
                           "x", "", "n0/g0", [], {}, [1, 2], {"a": 1}, "🚀\u0000\n"]


def _category(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def _paths(doc: Any) -> list[tuple[Any, ...]]:
    """Every path in ``doc`` (keys and indexes), root excluded, in document order."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        node, path = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, value in reversed(items):
            out.append((*path, key))
            if isinstance(value, dict | list):
                stack.append((value, (*path, key)))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _free(path: tuple[Any, ...]) -> bool:
    return bool(path) and path[0] in FREE


def _last_key(path: tuple[Any, ...]) -> str | None:
    for key in reversed(path):
        if isinstance(key, str):
            return key
    return None


@dataclass
class Mutant:
    """A mutated file: its bytes, whether it must be refused, and what was done."""

    data: bytes
    must_reject: bool
    description: str
    gz: bool = False
    keep_sha: bool = True


MARK = "\u2063MUTANT\u2063"


def _dump(doc: Any, token: str | None = None) -> bytes:
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if token is not None:
        text = text.replace(json.dumps(MARK, ensure_ascii=False), token)
    return text.encode("utf-8")


OPS = ("token", "value", "value", "delete", "unknown_key", "duplicate", "empty", "nest",
       "deep_text", "truncate", "flip", "bad_utf8", "gzip", "negate")
"""The kinds of damage :func:`mutate` picks from (``value`` twice: twice as likely)."""


def mutate(seed: Seed, ch: Chooser) -> Mutant:
    """One mutant of ``seed`` with choices from ``ch``."""
    if seed.kind == "trace-csv":
        return Mutant(*fuzz_files.mutate_csv(seed.csv, ch))
    doc = copy.deepcopy(seed.doc)
    keep_sha = True
    if seed.kind in ("instance", "workload") and ch.integer(0, 4) > 0:
        doc.pop("sha256", None)  # so that the loader checks everything, not just the sum
        keep_sha = False
    elif seed.kind == "solution":
        doc.pop("sha256", None)
    op = ch.choice(OPS)
    paths = _paths(doc)
    path = ch.choice(paths)
    parent_path, key = path[:-1], path[-1]
    parent = _get(doc, parent_path)
    old = parent[key]
    free = _free(path) or not fuzz_files.checked_path(seed.kind, path)
    gz = False
    if op == "token":
        token = ch.choice(TOKENS)
        if isinstance(old, dict | list) and old:
            # put it inside the container instead of replacing the container
            sub = ch.choice(list(old.keys()) if isinstance(old, dict) else list(range(len(old))))
            parent, key, path = old, sub, (*path, sub)
        parent[key] = MARK
        data = _dump(doc, token)
        return Mutant(data, True, f"{_fmt(path)} = {token[:20]}", keep_sha=keep_sha)
    if op in ("value", "negate"):
        new = (-abs(old) - 1 if isinstance(old, int | float) and not isinstance(old, bool)
               else -1) if op == "negate" else ch.choice(TOKEN_VALUES)
        parent[key] = new
        name = _last_key(path)
        under_map = len(path) >= 2 and path[-2] in ("node_cpu", "node_ram_gb", "locality")
        reject = False
        special = fuzz_files.value_must_reject(seed.kind, path, old, new)
        if special is not None:
            return Mutant(_dump(doc), special and not free, f"{_fmt(path)} = {new!r}"[:80])
        if not free and _category(old) != _category(new) and not (
                new is None and (name in NULLABLE or path[-3:-2] == ("delay_ms",))):  # B absent
            reject = True
        if (not free and isinstance(new, int | float) and not isinstance(new, bool) and new < 0
                and (name in NONNEG or under_map) and isinstance(old, int | float)):
            reject = True
        return Mutant(_dump(doc), reject, f"{_fmt(path)} = {new!r}"[:80], keep_sha=keep_sha)
    if op == "delete":
        del parent[key]
        required_top = {"instance": {"format_version", "problem", "params", "cluster", "jobs"},
                        "workload": {"format_version", "problem", "params", "cluster", "jobs"},
                        "solution": {"format_version", "instance_sha256", "placements"},
                        "manifest": {"format_version", "suite", "instances"}}
        reject = len(path) == 1 and key in required_top.get(seed.kind, ())
        return Mutant(_dump(doc), reject, f"delete {_fmt(path)}", keep_sha=keep_sha)
    if op == "unknown_key":
        target = old if isinstance(old, dict) else parent if isinstance(parent, dict) else doc
        where = path if isinstance(old, dict) else parent_path if isinstance(parent, dict) else ()
        if isinstance(target, list):  # a Philly trace: a list of job objects
            target, where = target[0], (0,)
        target["zz_unknown"] = 1
        # maps whose keys are names (a new name is allowed, or ignored when unused); a
        # trace's unknown keys are dropped, as documented
        reject = not _free(where) and not (where and where[-1] == "locality") and (
            "delay_ms" not in where) and fuzz_files.checked_path(seed.kind, (*where, "x")) \
            and seed.kind != "trace-json"
        return Mutant(_dump(doc), reject, f"{_fmt(where)}.zz_unknown = 1", keep_sha=keep_sha)
    if op in ("duplicate", "empty"):
        target, where = (old, path) if isinstance(old, list) else (parent, parent_path)
        if not isinstance(target, list):
            name = next(k for k in ("jobs", "placements", "instances", None)
                        if k is None or isinstance(doc, list) or k in doc)
            target, where = (doc, ()) if isinstance(doc, list) else (doc[name], (name,))
        if op == "empty":
            target.clear()
            return Mutant(_dump(doc), False, f"empty {_fmt(where)}", keep_sha=keep_sha)
        if target:
            target.append(copy.deepcopy(target[ch.integer(0, len(target) - 1)]))
        lists = ("jobs", "nodes", "placements", "gpus", "instances")
        reject = bool(target) and (
            (seed.kind == "trace-json" and where == ()) or (
                seed.kind != "trace-json" and not _free(where) and bool(where)
                and isinstance(where[-1], str) and where[-1] in lists))
        return Mutant(_dump(doc), reject, f"duplicate in {_fmt(where)}", keep_sha=keep_sha)
    if op == "nest":
        depth = ch.choice([3, 65, 70, 200])
        new: Any = 1
        for _ in range(depth):
            new = [new]
        parent[key] = new
        return Mutant(_dump(doc), depth >= 64 or not free,
                      f"{_fmt(path)} nested {depth} deep", keep_sha=keep_sha)
    text = _dump(doc)
    if op == "deep_text":
        depth = ch.choice([900, 2000, 5000, 100_000])
        where = ch.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])
        parent[key] = MARK
        return Mutant(_dump(doc, where), True, f"{_fmt(path)} nested {depth} deep (text)",
                      keep_sha=keep_sha)
    if op == "truncate":
        cut = ch.integer(0, len(text) - 1)
        data = text[:cut]
        return Mutant(data, not _parses(data, type(doc)), f"truncated at byte {cut}",
                      keep_sha=keep_sha)
    if op == "flip":
        pos = ch.integer(0, len(text) - 1)
        data = text[:pos] + bytes([text[pos] ^ (1 << ch.integer(0, 7))]) + text[pos + 1:]
        return Mutant(data, not _parses(data, type(doc)), f"bit flipped at byte {pos}",
                      keep_sha=keep_sha)
    if op == "bad_utf8":
        pos = ch.integer(0, len(text) - 1)
        data = text[:pos] + b"\xff\xfe" + text[pos:]
        return Mutant(data, True, f"invalid UTF-8 at byte {pos}", keep_sha=keep_sha)
    # gzip: a compressed file, sometimes corrupted or cut short
    packed = gzip.compress(text, mtime=0)
    how = ch.choice(["ok", "cut", "corrupt"])
    if how == "cut":
        packed = packed[: ch.integer(0, len(packed) - 1)]
    elif how == "corrupt":
        pos = ch.integer(10, len(packed) - 9)
        packed = packed[:pos] + bytes([packed[pos] ^ 0xFF]) + packed[pos + 1:]
    gz = True
    return Mutant(packed, how != "ok", f"gzip {how}", gz=gz, keep_sha=keep_sha)


def _parses(data: bytes, kind: type = dict) -> bool:
    """True when ``data`` is JSON (no NaN or Infinity, no key twice) of type ``kind``."""
    from dlsched.files import unique_keys

    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant,
                         object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, kind)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _fmt(path: tuple[Any, ...]) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".") or "."


# ---------------------------------------------------------------------------- running
@dataclass
class Outcome:
    """What the command line did with one mutant."""

    seed: str
    description: str
    must_reject: bool
    codes: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    from dlsched.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # noqa: BLE001 - exactly what we are looking for
            return -1, out.getvalue(), f"escaped: {type(exc).__name__}: {exc}"
    return code, out.getvalue(), err.getvalue()


def _judge(argv: list[str], code: int, err: str, files: list[str], outcome: Outcome) -> None:
    outcome.codes.append(code)
    cmd = argv[0]
    lines = [x for x in err.splitlines() if x.strip()]
    if code == -1 or code == 3:
        outcome.problems.append(f"internal: {cmd}: {err.strip()[:300]}")
    elif code not in (0, 1, 2):
        outcome.problems.append(f"bad_exit: {cmd}: exit {code}")
    if len(lines) > 1:
        outcome.problems.append(f"multiline: {cmd}: {len(lines)} lines: {lines[0][:120]}")
    if code == 2 and lines:
        line = lines[0]
        named = any(re.search(re.escape(f) + r": [^ ]+: ", line) for f in files)
        if not named:
            outcome.problems.append(f"unnamed: {cmd}: {line[:200]}")


def run_mutant(seed: Seed, mutant: Mutant, workdir: Path) -> Outcome:
    """Write ``mutant`` and run the command line on it; the counts go into the Outcome."""
    from dlsched.canonical import pretty_json

    outcome = Outcome(seed.name, mutant.description, mutant.must_reject)
    workdir.mkdir(parents=True, exist_ok=True)
    if seed.kind in ("manifest", "trace-json", "trace-csv"):
        if seed.kind == "manifest":
            suite = workdir / "suite"
            if not (suite / "suite.json").is_file():
                fuzz_files.build_manifest_suite(suite)
            argv, code, err = fuzz_files.run_manifest(suite, mutant.data, _run_cli)
            files = [str(suite / "manifest.json")]
        else:
            fmt = "philly" if seed.csv is None else seed.csv.fmt
            path = workdir / ("trace.json.gz" if mutant.gz else "trace.json"
                              if seed.csv is None else "trace.csv")
            path.write_bytes(mutant.data)
            extra = () if seed.csv is None else seed.csv.extra
            argv, code, err = fuzz_files.run_trace(fmt, path, extra, _run_cli)
            files = [str(path)]
        _judge(argv, code, err if code != 1 else "", files, outcome)
        if mutant.must_reject and code == 0:
            outcome.problems.append("accepted_invalid: " + mutant.description)
        return outcome
    suffix = ".json.gz" if mutant.gz else ".json"
    target = workdir / f"mutant{suffix}"
    target.write_bytes(mutant.data)
    if seed.kind == "solution":
        inst = workdir / "instance.json"
        inst.write_text(pretty_json(seed.instance_doc), encoding="utf-8")
        first = None
        for cmd in ("validate", "evaluate"):
            argv = [cmd, str(inst), str(target)]
            code, _, err = _run_cli(argv)
            _judge(argv, code, err, [str(target), str(inst)], outcome)
            first = code if first is None else first
        if mutant.must_reject and 0 in outcome.codes:
            outcome.problems.append("accepted_invalid: " + mutant.description)
        return outcome
    if seed.kind == "workload":
        out = workdir / "sim"
        argv = ["simulate", str(target), "--policy", seed.policy, "--no-plots", "--no-progress",
                "--out", str(out)]
        code, _, err = _run_cli(argv)
        _judge(argv, code, err, [str(target)], outcome)
        if mutant.must_reject and code == 0:
            outcome.problems.append("accepted_invalid: " + mutant.description)
        shutil.rmtree(out, ignore_errors=True)
        return outcome
    sol = workdir / "solution.json"
    sol.unlink(missing_ok=True)
    argv = ["solve", str(target), "--method", seed.method, "--time-limit", "5", "-o", str(sol)]
    code, _, err = _run_cli(argv)
    _judge(argv, code, err, [str(target)], outcome)
    if mutant.must_reject and code != 2:
        outcome.problems.append(f"accepted_invalid: solve exit {code}: " + mutant.description)
    if code == 0 and sol.is_file():
        for cmd in ("validate", "evaluate"):
            argv = [cmd, str(target), str(sol)]
            code2, _, err2 = _run_cli(argv)
            _judge(argv, code2, err2, [str(target), str(sol)], outcome)
            if code2 != 0:  # a method's own decision must pass the validator
                outcome.problems.append(f"method_invalid: {cmd} exit {code2}: {err2[:150]}")
    return outcome


# ------------------------------------------------------------------------------- main
def run(mutants: int, seed: int = 0, progress: Callable[[int], None] | None = None,
        problems: Sequence[str] | None = None) -> tuple[Counter, list[Outcome]]:
    """Run ``mutants`` mutants (round-robin over the seeds of ``problems``, default all);
    the counts and the failures."""
    seeds = [s for s in make_seeds() if not problems or s.problem in problems]
    if not seeds:
        raise SystemExit(f"no seed files for problems {problems}")
    rng = random.Random(seed)
    counts: Counter = Counter()
    failures: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="dlsched-fuzz-") as tmp:
        for i in range(mutants):
            s = seeds[i % len(seeds)]
            mutant = mutate(s, Chooser(rng))
            outcome = run_mutant(s, mutant, Path(tmp) / "m")
            counts["mutants"] += 1
            counts[f"kind_{s.kind}"] += 1
            counts[f"problem_{s.problem}"] += 1
            counts["must_reject"] += mutant.must_reject
            for code in outcome.codes:
                counts[f"exit_{code}"] += 1
            kinds = {p.split(":", 1)[0] for p in outcome.problems}
            for kind in kinds:
                counts[kind] += 1
            if outcome.problems:
                failures.append(outcome)
            if progress:
                progress(i)
    return counts, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlsched.benchmarks.fuzz",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=10_000, help="how many (10000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument("--show", type=int, default=20, help="failures printed (20)")
    parser.add_argument("--problem", action="append", help="only these problems (repeatable)")
    args = parser.parse_args(argv)
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    counts, failures = run(args.mutants, args.seed, problems=args.problem)
    for f in failures[: args.show]:
        print(f"FAIL {f.seed}: {f.description}: {'; '.join(f.problems)[:400]}")
    keys = ["mutants", "must_reject", "internal", "bad_exit", "multiline", "accepted_invalid",
            "unnamed", "method_invalid"]
    figures = {k: int(counts.get(k, 0)) for k in keys}
    figures["exit_codes"] = {k.removeprefix("exit_"): v for k, v in sorted(counts.items())
                             if k.startswith("exit_")}
    figures["by_kind"] = {k.removeprefix("kind_"): v for k, v in sorted(counts.items())
                          if k.startswith("kind_")}
    figures["by_problem"] = {k.removeprefix("problem_"): v for k, v in sorted(counts.items())
                             if k.startswith("problem_")}
    figures["cpu_s"] = round(time.process_time() - start_cpu, 1)
    figures["wall_s"] = round(time.perf_counter() - start_wall, 1)
    print(f"{'count':<18}value")
    for k in keys:
        print(f"{k:<18}{figures[k]}")
    print(json.dumps(figures, sort_keys=True))
    bad = sum(figures[k] for k in keys[2:])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
