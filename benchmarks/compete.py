"""Competition runner: score any solver on a suite against the library's best known values.

An entrant is an external command (any language) with placeholders ``{instance}``,
``{solution}``, ``{time_limit}`` and ``{seed}``, or a Python callable ``module:function``
(``instance -> Decision``, or anything with a ``.decision``) that runs in a subprocess
(``python -m dlsched.benchmarks.call_entrant ...``) so it can be killed like any command.

Per instance: the instance is written as plain JSON to a fresh directory, the command
starts in its own session with resource limits (address space ``--memory-limit``, CPU
time, largest file written), its stdout and stderr are captured up to a cap, and the time
limit is enforced from outside: at the limit the process group gets SIGTERM, and after
``grace`` seconds SIGKILL. After every run every process the solver started is killed —
the runner is the child subreaper, so ``setsid()`` escapes come back to it. The rules,
published in docs/competition.md:

- a process still running after the grace period is killed and scores 0 (``timeout``);
  one that exits during the grace period is scored on the solution it left, if any;
- a non-zero exit code (other than from our SIGTERM) scores 0 (``crash``);
- no solution file: 0 (``missing``); a file that is not a solution for this instance:
  0 (``garbage`` / ``wrong_instance``); a solution the validator rejects: 0
  (``infeasible``, with the first violation); a solution that cannot be scored, or any
  error of the runner on one run: 0 (``error``, with the exception) — the competition
  goes on;
- otherwise the evaluator's objective is scored against the reference R (the best of the
  library's best known value and every entrant's valid objective on the instance):
  ``score = clip(1 − gap, 0, 1)`` with ``gap = (objective − R) / max(|objective|, |R|)``
  (sign flipped for maximization). For positive objectives this is R / objective when
  minimizing and objective / R when maximizing.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shlex
import shutil
import stat
import string
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dlsched.canonical import pretty_json
from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.files import atomic_path, locked, write_bytes, write_text
from dlsched.instance import Instance
from dlsched.problems import get_problem
from dlsched.solution_io import load_solution
from dlsched.validate import validate

from .html_report import compete_page
from .isolation import RunAs, copy_back, entrant_users, private_dir, remove_tree
from .library import Manifest, Offer
from .profiles import SOLVED_TOL
from .report import frame_table
from .runner import gap_to_best, store_best
from .sandbox import SIGNAL_NOTES, Capture, Limits, become_subreaper, run_command, signal_name

SCORE_COLUMNS = ("suite", "entrant", "solver", "instance", "instance_sha256", "problem",
                 "sense", "time_limit", "outcome", "reason", "objective", "best_known",
                 "score", "wall_time", "exit_code", "finished_at")


@dataclass(frozen=True)
class Entrant:
    """A named solver: an argv template (placeholders in braces)."""

    name: str
    solver: str
    argv: tuple[str, ...]
    pythonpath: str | None = None  # for callables: the directory they are imported from


PLACEHOLDERS = ("instance", "solution", "time_limit", "seed")


def _check_placeholders(arg: str, solver: str) -> None:
    """InputError for an unknown or malformed ``{…}`` in one argument of ``solver``."""
    fix = ("use only " + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
           + "; write a literal brace as {{ or }}")
    try:
        fields = list(string.Formatter().parse(arg))
    except ValueError as exc:
        raise InputError(f"{exc} in argument {arg!r}", field="--solver", fix=fix) from None
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (
                f":{spec}" if spec else "") + "}"
            raise InputError(f"unknown placeholder {shown} in argument {arg!r}",
                             field="--solver", fix=fix)


def parse_entrant(solver: str, name: str | None = None) -> Entrant:
    """An entrant from ``--solver``: a command with placeholders, or ``module:function``.

    Placeholders are checked here, before anything runs: an unknown ``{…}`` is an
    InputError listing the valid ones; ``{{`` and ``}}`` stand for literal braces.
    """
    if re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", solver.strip()):
        argv = (sys.executable, "-m", "dlsched.benchmarks.call_entrant", "--call", solver.strip(),
                "{instance}", "{solution}", "{time_limit}", "{seed}")
        return Entrant(name or solver.strip(), solver, argv, pythonpath=os.getcwd())
    try:
        argv = tuple(shlex.split(solver))
    except ValueError as exc:
        raise InputError(f"cannot split the command: {exc}", field="--solver",
                         fix="quote the command as a shell would") from None
    if not argv:
        raise InputError("empty command", field="--solver",
                         fix='write "COMMAND {instance} {solution}" or module:function')
    for arg in argv:
        _check_placeholders(arg, solver)
    used = {f for arg in argv for _, f, _, _ in string.Formatter().parse(arg) if f}
    # the entrant runs in a folder of its own: a path written relative to where
    # `dlsched compete` was started (./my-solver, examples/solver.py) is made absolute
    argv = tuple(os.path.abspath(arg) if os.sep in arg and "{" not in arg
                 and os.path.exists(arg) else arg for arg in argv)
    if "instance" not in used or "solution" not in used:
        raise InputError(f"command {solver!r} lacks {{instance}} or {{solution}}",
                         field="--solver", fix="put {instance} and {solution} where the "
                         "files go")
    return Entrant(name or argv[0].rsplit("/", 1)[-1], solver, argv)


def safe_name(name: str) -> str:
    """A single path component for ``name``: letters, digits, ``_ . -`` only, no leading
    dot; names that had to change get a short hash, so distinct names stay distinct."""
    safe = re.sub(r"[^\w.-]+", "_", name, flags=re.ASCII).lstrip(".")[:100] or "_"
    if safe != name:
        safe += "-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return safe


def score(objective: float | None, reference: float | None, sense: str) -> float:
    """clip(1 − gap, 0, 1) with the gap of :func:`dlsched.benchmarks.runner.gap_to_best`; 0
    without an objective; 1 without a reference."""
    if objective is None or (isinstance(objective, float) and not math.isfinite(objective)):
        return 0.0
    if reference is None or (isinstance(reference, float) and math.isnan(reference)):
        return 1.0
    gap = gap_to_best(objective, reference, sense) or 0.0
    return min(1.0, max(0.0, 1.0 - gap))


def _fresh_dir(path: Path) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


def run_one(manifest: Manifest, name: str, entrant: Entrant, *, time_limit: float,
            grace: float, seed: int, workdir: Path, limits: Limits | None = None,
            instance: Instance | None = None, user: RunAs | None = None,
            cpu_limit: float | None = None) -> tuple[dict[str, Any], Decision | None]:
    """Run ``entrant`` on instance ``name``; the score row and the valid decision, if any.

    The solver runs in a private folder of its own (:func:`~.sandbox.private_dir`, outside
    ``workdir``), as ``user`` when given, with at most ``cpu_limit`` CPU seconds per
    process when given; its captured output goes to ``workdir``, and afterwards its
    regular files (the solution among them) are copied there and its folder is deleted.
    Nothing the solver does can make this raise: every outcome is a row (a solver's
    failure, or an error of the runner itself on this run, scores 0 with the reason).
    """
    limits = limits or Limits()
    rec = manifest.entries[name]
    row: dict[str, Any] = {
        "suite": manifest.suite, "entrant": entrant.name, "solver": entrant.solver,
        "instance": name, "instance_sha256": rec["sha256"], "problem": rec["problem"],
        "sense": rec["sense"], "time_limit": time_limit,
        "best_known": (rec.get("best") or {}).get("objective"), "objective": None,
        "exit_code": None, "wall_time": 0.0}
    try:
        if instance is None:
            instance = manifest.load(name)
        return _run_contained(instance, entrant, row, time_limit=time_limit, grace=grace,
                              seed=seed, workdir=workdir, limits=limits, user=user,
                              cpu_limit=cpu_limit)
    except Exception as exc:  # noqa: BLE001 - a run must never stop the competition
        row.update(outcome="error", reason=f"{type(exc).__name__}: {exc}"[:300],
                   objective=None)
        return _finish(row), None


def _run_contained(instance: Instance, entrant: Entrant, row: dict[str, Any], *,
                   time_limit: float, grace: float, seed: int, workdir: Path,
                   limits: Limits, user: RunAs | None, cpu_limit: float | None,
                   ) -> tuple[dict[str, Any], Decision | None]:
    _fresh_dir(workdir)
    text = pretty_json(instance.to_dict())
    write_text(workdir / "instance.json", text)
    private = private_dir(user)
    try:
        inst_path = private / "instance.json"
        inst_path.write_text(text, encoding="utf-8")
        inst_path.chmod(0o644)
        out = _run_in(private, instance, entrant, row, inst_path, time_limit=time_limit,
                      grace=grace, seed=seed, workdir=workdir, limits=limits, user=user,
                      cpu_limit=cpu_limit)
        copy_back(private, workdir, limits.solution_mb * 1024 * 1024,
                  skip=("instance.json", "stdout.txt", "stderr.txt"))
        return out
    finally:
        remove_tree(private)


def _run_in(private: Path, instance: Instance, entrant: Entrant, row: dict[str, Any],
            inst_path: Path, *, time_limit: float, grace: float, seed: int, workdir: Path,
            limits: Limits, user: RunAs | None, cpu_limit: float | None,
            ) -> tuple[dict[str, Any], Decision | None]:
    sol_path = private / "solution.json"
    values = {"instance": str(inst_path), "solution": str(sol_path),
              "time_limit": f"{time_limit:g}", "seed": str(seed)}
    argv = [arg.format(**values) for arg in entrant.argv]
    env = dict(os.environ)
    env.update(TMPDIR=str(private / "tmp"), HOME=str(private))
    if entrant.pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (entrant.pythonpath, env.get("PYTHONPATH")) if p)
    run = run_command(argv, cwd=private, env=env, time_limit=time_limit, grace=grace,
                      limits=limits, capture_dir=workdir, user=user, cpu_seconds=cpu_limit)
    if run.returncode is None:
        row.update(outcome="crash", reason=f"cannot start: {run.error}"[:300])
        return _finish(row), None
    row["wall_time"] = run.wall
    row["exit_code"] = run.returncode
    notes = []
    if run.leftovers:
        notes.append(f"killed {run.leftovers} leftover "
                     f"process{'es' if run.leftovers > 1 else ''}")
    cap = limits.output_kb * 1024
    for c, stream in ((run.stdout, "stdout"), (run.stderr, "stderr")):
        if c.error:
            notes.append(c.error)
        elif c.dropped:
            notes.append(f"{stream} truncated to {cap} bytes ({c.dropped} not stored)")
    row_reason, decision = _judge(instance, row, sol_path, run.stderr,
                                  timed_out=run.timed_out, killed=run.killed,
                                  time_limit=time_limit, grace=grace, limits=limits)
    row["reason"] = "; ".join(x for x in (row_reason, *notes) if x)
    return _finish(row), decision


def _judge(instance: Instance, row: dict[str, Any], sol_path: Path, err: Capture, *,
           timed_out: bool, killed: bool, time_limit: float, grace: float,
           limits: Limits) -> tuple[str, Decision | None]:
    """Set ``row["outcome"]`` (and the objective when valid); the reason and the decision."""
    code = row["exit_code"]
    if killed:
        row["outcome"] = "timeout"
        return (f"still running {grace:g} s after SIGTERM at the {time_limit:g} s limit; "
                "killed"), None
    if not timed_out and code != 0:
        tail = err.last_lines()
        if code is not None and code < 0:
            sig = signal_name(code)
            what = f"killed by {sig}" + (f" ({SIGNAL_NOTES[sig]})" if sig in SIGNAL_NOTES
                                         else "")
        else:
            what = f"exit code {code}"
        if "MemoryError" in tail or "annot allocate memory" in tail or "bad_alloc" in tail:
            what += f" (memory limit {limits.memory_mb} MiB)"
        if "File too large" in tail:
            what += f" (file-size limit {limits.solution_mb} MiB)"
        row["outcome"] = "crash"
        return what + (f": {tail}" if tail else ""), None
    try:
        st = os.lstat(sol_path)
    except OSError:
        st = None
    if st is None:
        row["outcome"] = "timeout" if timed_out else "missing"
        return (f"stopped at the {time_limit:g} s limit without a solution file" if timed_out
                else "exited without writing the solution file"), None
    if not stat.S_ISREG(st.st_mode):
        row["outcome"] = "garbage"
        return "the solution is not a regular file (a link, a directory or a device)", None
    if st.st_size > limits.solution_mb * 1024 * 1024:
        row["outcome"] = "garbage"
        return (f"solution file of {st.st_size} bytes, over the {limits.solution_mb} MiB "
                "cap"), None
    try:
        decision = load_solution(sol_path, instance)
    except InputError as exc:
        kind = "wrong_instance" if exc.field == "instance_sha256" else "garbage"
        row["outcome"] = kind
        return (exc.message if kind == "wrong_instance"
                else f"{exc.field + ': ' if exc.field else ''}{exc.message}")[:300], None
    except Exception as exc:  # noqa: BLE001 - reading a solution must not stop the run
        row["outcome"] = "garbage"
        return f"unreadable solution: {type(exc).__name__}: {exc}"[:300], None
    try:
        report = validate(instance, decision)
        if not report.ok:
            first = report.violations[0]
            more = len(report.violations) - 1
            row["outcome"] = "infeasible"
            return (str(first) + (f" (+{more} more)" if more else ""))[:300], None
        objective = float(get_problem(instance.problem).evaluate(instance, decision))
    except Exception as exc:  # noqa: BLE001 - scoring must not stop the run
        row["outcome"] = "error"
        return f"cannot score the solution: {type(exc).__name__}: {exc}"[:300], None
    if not math.isfinite(objective):
        row["outcome"] = "error"
        return f"the objective is {objective}", None
    row["objective"] = objective
    row["outcome"] = "ok"
    return ("stopped at the limit, solution kept" if timed_out else ""), decision


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    row["score"] = score(row["objective"], row["best_known"], row["sense"])
    row["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return row


def compete(manifest: Manifest, entrants: list[Entrant], output: str | Path, *,
            time_limit: float, grace: float = 2.0, seed: int = 0,
            update_best: bool = False, progress: bool = True,
            limits: Limits | None = None, run_as: str | None = "auto",
            cpu_limit: float | None = None,
            plots: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """Run every entrant on every instance (one at a time, for fair timing).

    Adds each row to ``OUTPUT/scores.csv`` as it comes, then rewrites ``leaderboard.csv``
    and ``leaderboard.md`` from the whole table; returns (the leaderboard, best-known
    update notes). Every write replaces its file atomically under a lock on ``OUTPUT``
    (:func:`dlsched.files.locked`), so two competitions into one folder keep both's rows.
    Each solver runs in a private folder outside ``OUTPUT``, as the user ``run_as`` picks
    (:func:`~.sandbox.entrant_identity`: by default, under root, an unprivileged user of
    its own), with ``cpu_limit`` CPU seconds per process when given (``RLIMIT_CPU``);
    ``OUTPUT/runs`` is readable by the runner's user only. ``OUTPUT/index.html`` has the
    profiles as images when ``plots``.
    """
    from tqdm import tqdm

    if not (0 < time_limit <= 1e6) or not (0 <= grace <= 1e6):
        raise InputError(f"time limit {time_limit}, grace {grace}", field="--time-limit",
                         fix="use a time limit > 0 and a grace >= 0")
    if cpu_limit is not None and not (0 < cpu_limit <= 1e6):
        raise InputError(f"CPU limit {cpu_limit}", field="--cpu-limit",
                         fix="use seconds > 0")
    limits = limits or Limits()
    users, shared = entrant_users(entrants, run_as)
    # absolute: an entrant runs in its own folder, where a relative {instance} would miss
    out = Path(output).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "runs").mkdir(mode=0o700, exist_ok=True)
        (out / "runs").chmod(0o700)
    except OSError as exc:
        raise InputError(f"cannot create the folder: {exc.strerror or exc}", field="--output",
                         fix="write to a writable place", source=str(out)) from None
    scores = out / "scores.csv"
    instances = {name: manifest.load(name) for name in manifest.entries}
    become_subreaper()
    offers = []
    pairs = [(e, n) for e in entrants for n in manifest.entries]
    for entrant, name in tqdm(pairs, disable=not progress, unit="run"):
        workdir = out / "runs" / safe_name(entrant.name) / safe_name(name)
        row, decision = run_one(manifest, name, entrant, time_limit=time_limit, grace=grace,
                                seed=seed, workdir=workdir, limits=limits,
                                instance=instances[name], user=users[entrant.name],
                                cpu_limit=cpu_limit)
        if entrant.name in shared:
            row["reason"] = "; ".join(x for x in (row.get("reason"), shared[entrant.name])
                                      if x)
        _add_score(out, scores, row)
        if decision is not None and update_best:
            offers.append(Offer(name, decision, row["objective"], "feasible", None,
                                f"compete:{entrant.name}"))
    notes = [f"entrant {name!r}: {why}" for name, why in shared.items()]
    notes += store_best(manifest, offers) if offers else []
    with locked(out):
        board = leaderboard(_read_scores(scores))
        with atomic_path(out / "leaderboard.csv", "--output") as tmp:
            board.to_csv(tmp, index=False)
        write_text(out / "leaderboard.md", leaderboard_markdown(board, manifest.suite,
                                                                 time_limit), "--output")
        compete_page(_read_scores(scores), board, out, suite=manifest.suite,
                     time_limit=time_limit, tol=SOLVED_TOL, plots=plots)
    return board, notes


def _read_scores(scores: Path) -> pd.DataFrame:
    if not scores.is_file() or scores.stat().st_size == 0:
        return pd.DataFrame(columns=list(SCORE_COLUMNS))
    return pd.read_csv(scores, keep_default_na=False, na_values=[""])


def _add_score(out: Path, scores: Path, row: dict[str, Any]) -> None:
    """``scores.csv`` plus ``row``, written atomically under the folder's lock."""
    with locked(out):
        if scores.is_symlink() or (scores.exists() and not scores.is_file()):
            raise InputError("is not a regular file", field="--output",
                             fix="remove it, or write the competition elsewhere",
                             source=str(scores))
        old = scores.read_bytes() if scores.is_file() else b""
        if old and not old.endswith(b"\n"):
            old += b"\n"
        text = pd.DataFrame([row], columns=list(SCORE_COLUMNS)).to_csv(
            index=False, header=not old)
        write_bytes(scores, old + text.encode("utf-8"), "--output")


def leaderboard(scores: pd.DataFrame) -> pd.DataFrame:
    """Rank entrants by total score, rescored against the best objective seen per instance.

    The latest row per (entrant, instance, time limit) counts.
    """
    if scores.empty:
        return pd.DataFrame(columns=["rank", "entrant", "instances", "valid", "total score",
                                     "mean score", "failures"])
    latest = scores.drop_duplicates(["entrant", "instance", "time_limit"], keep="last").copy()
    refs = {}
    for name, group in latest.groupby("instance"):
        sense = group["sense"].iloc[0]
        values = pd.concat([group["objective"], group["best_known"]]).dropna().astype(float)
        refs[name] = (None if values.empty
                      else float(values.min() if sense == "min" else values.max()))
    latest["score"] = [score(None if pd.isna(r.objective) else float(r.objective),
                             refs[r.instance], r.sense) for r in latest.itertuples()]
    out = []
    for entrant, group in latest.groupby("entrant"):
        bad = group[group["outcome"] != "ok"]["outcome"].value_counts()
        out.append({"entrant": entrant, "instances": len(group),
                    "valid": int((group["outcome"] == "ok").sum()),
                    "total score": round(float(group["score"].sum()), 6),
                    "mean score": round(float(group["score"].mean()), 6),
                    "failures": ", ".join(f"{k} {v}" for k, v in sorted(bad.items())) or "-"})
    board = pd.DataFrame(out).sort_values(["total score", "entrant"], ascending=[False, True])
    board.insert(0, "rank", range(1, len(board) + 1))
    return board.reset_index(drop=True)


def leaderboard_markdown(board: pd.DataFrame, suite: str, time_limit: float) -> str:
    return (f"# Leaderboard · suite {suite} · time limit {time_limit:g} s\n\n"
            "Score per instance: clip(1 − gap to the best known objective, 0, 1); 0 for "
            "invalid, missing, timeout or crash (docs/competition.md).\n\n"
            + frame_table(board, ".4f") + "\n")
