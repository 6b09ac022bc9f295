"""Competition runner: score any solver on a suite against the library's best known values.

An entrant is an external command (any language) with placeholders ``{instance}``,
``{solution}``, ``{time_limit}`` and ``{seed}``, or a Python callable ``module:function``
(``instance -> Decision``, or anything with a ``.decision``) that runs in a subprocess
(``python -m dlsched.benchmarks.compete --call ...``) so it can be killed like any command.

Per instance: the instance is written as plain JSON to a fresh directory, the command
starts in its own session, and the time limit is enforced from outside: at the limit the
process group gets SIGTERM, and after ``grace`` seconds SIGKILL. The rules, published in
docs/competition.md:

- a process still running after the grace period is killed and scores 0 (``timeout``);
  one that exits during the grace period is scored on the solution it left, if any;
- a non-zero exit code (other than from our SIGTERM) scores 0 (``crash``);
- no solution file: 0 (``missing``); a file that is not a solution for this instance:
  0 (``garbage`` / ``wrong_instance``); a solution the validator rejects: 0
  (``infeasible``, with the first violation);
- otherwise the evaluator's objective is scored against the reference R (the best of the
  library's best known value and every entrant's valid objective on the instance):
  ``score = clip(1 − gap, 0, 1)`` with ``gap = (objective − R) / max(|objective|, |R|)``
  (sign flipped for maximization). For positive objectives this is R / objective when
  minimizing and objective / R when maximizing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dlsched.canonical import pretty_json
from dlsched.decision import Decision, load_solution, save_solution
from dlsched.errors import InputError
from dlsched.instance_io import load_instance
from dlsched.problems import get_problem
from dlsched.validate import validate

from .library import Manifest, Offer, offer_best
from .report import markdown_table
from .runner import gap_to_best

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


def parse_entrant(solver: str, name: str | None = None) -> Entrant:
    """An entrant from ``--solver``: a command with placeholders, or ``module:function``."""
    if re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", solver.strip()):
        argv = (sys.executable, "-m", "dlsched.benchmarks.compete", "--call", solver.strip(),
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
    joined = " ".join(argv)
    if "{instance}" not in joined or "{solution}" not in joined:
        raise InputError(f"command {solver!r} lacks {{instance}} or {{solution}}",
                         field="--solver", fix="put {instance} and {solution} where the "
                         "files go")
    return Entrant(name or argv[0].rsplit("/", 1)[-1], solver, argv)


def score(objective: float | None, reference: float | None, sense: str) -> float:
    """clip(1 − gap, 0, 1) with the gap of :func:`dlsched.benchmarks.runner.gap_to_best`; 0
    without an objective; 1 without a reference."""
    if objective is None or (isinstance(objective, float) and math.isnan(objective)):
        return 0.0
    if reference is None or (isinstance(reference, float) and math.isnan(reference)):
        return 1.0
    gap = gap_to_best(objective, reference, sense) or 0.0
    return min(1.0, max(0.0, 1.0 - gap))


def _terminate(proc: subprocess.Popen, grace: float) -> bool:
    """SIGTERM the process group, SIGKILL after ``grace`` s; True when it had to be killed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
        return False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def _last_line(path: Path) -> str:
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def run_one(manifest: Manifest, name: str, entrant: Entrant, *, time_limit: float,
            grace: float, seed: int, workdir: Path) -> tuple[dict[str, Any], Decision | None]:
    """Run ``entrant`` on instance ``name``; the score row and the valid decision, if any."""
    rec = manifest.entries[name]
    instance = manifest.load(name)
    workdir.mkdir(parents=True, exist_ok=True)
    inst_path, sol_path = workdir / "instance.json", workdir / "solution.json"
    inst_path.write_text(pretty_json(instance.to_dict()), encoding="utf-8")
    sol_path.unlink(missing_ok=True)
    values = {"instance": str(inst_path), "solution": str(sol_path),
              "time_limit": f"{time_limit:g}", "seed": str(seed)}
    argv = [arg.format(**values) if "{" in arg else arg for arg in entrant.argv]
    row: dict[str, Any] = {
        "suite": manifest.suite, "entrant": entrant.name, "solver": entrant.solver,
        "instance": name, "instance_sha256": rec["sha256"], "problem": rec["problem"],
        "sense": rec["sense"], "time_limit": time_limit,
        "best_known": (rec.get("best") or {}).get("objective"), "objective": None,
        "exit_code": None}
    env = None
    if entrant.pythonpath is not None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (entrant.pythonpath, env.get("PYTHONPATH")) if p)
    start = time.perf_counter()
    timed_out = killed = False
    with open(workdir / "stdout.txt", "wb") as out, open(workdir / "stderr.txt", "wb") as err:
        try:
            proc = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=err, env=env,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            row.update(outcome="crash", reason=f"cannot start: {exc}", wall_time=0.0)
            return _finish(row), None
        try:
            proc.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            killed = _terminate(proc, grace)
        except BaseException:
            _terminate(proc, 0.0)
            raise
    row["wall_time"] = time.perf_counter() - start
    row["exit_code"] = proc.returncode
    if killed:
        row.update(outcome="timeout", reason=f"still running {grace:g} s after SIGTERM at "
                   f"the {time_limit:g} s limit; killed")
        return _finish(row), None
    if not timed_out and proc.returncode != 0:
        tail = _last_line(workdir / "stderr.txt")
        row.update(outcome="crash", reason=f"exit code {proc.returncode}"
                   + (f": {tail}" if tail else ""))
        return _finish(row), None
    if not sol_path.is_file():
        if timed_out:
            row.update(outcome="timeout", reason=f"stopped at the {time_limit:g} s limit "
                       "without a solution file")
        else:
            row.update(outcome="missing", reason="exited without writing the solution file")
        return _finish(row), None
    try:
        decision = load_solution(sol_path, instance)
    except InputError as exc:
        kind = "wrong_instance" if exc.field == "instance_sha256" else "garbage"
        row.update(outcome=kind, reason=exc.message if kind == "wrong_instance"
                   else f"{exc.field + ': ' if exc.field else ''}{exc.message}")
        return _finish(row), None
    except (KeyError, TypeError, ValueError) as exc:
        row.update(outcome="garbage", reason=f"unreadable solution: {exc}"[:200])
        return _finish(row), None
    report = validate(instance, decision)
    if not report.ok:
        first = report.violations[0]
        more = len(report.violations) - 1
        row.update(outcome="infeasible", reason=str(first) + (f" (+{more} more)" if more else ""))
        return _finish(row), None
    row["objective"] = get_problem(instance.problem).evaluate(instance, decision)
    row.update(outcome="ok", reason="stopped at the limit, solution kept" if timed_out else "")
    return _finish(row), decision


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    row["score"] = score(row["objective"], row["best_known"], row["sense"])
    row["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return row


def compete(manifest: Manifest, entrants: list[Entrant], output: str | Path, *,
            time_limit: float, grace: float = 2.0, seed: int = 0,
            update_best: bool = False, progress: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """Run every entrant on every instance (one at a time, for fair timing).

    Appends rows to ``OUTPUT/scores.csv``, rewrites ``leaderboard.csv`` and
    ``leaderboard.md``; returns (the leaderboard, best-known update notes).
    """
    from tqdm import tqdm

    if time_limit <= 0 or grace < 0:
        raise InputError(f"time limit {time_limit}, grace {grace}", field="--time-limit",
                         fix="use a time limit > 0 and a grace >= 0")
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    rows, offers = [], []
    pairs = [(e, n) for e in entrants for n in manifest.entries]
    for entrant, name in tqdm(pairs, disable=not progress, unit="run"):
        safe = re.sub(r"[^\w.-]+", "_", entrant.name)
        row, decision = run_one(manifest, name, entrant, time_limit=time_limit, grace=grace,
                                seed=seed, workdir=out / "runs" / safe / name)
        rows.append(row)
        frame = pd.DataFrame([row], columns=list(SCORE_COLUMNS))
        scores = out / "scores.csv"
        frame.to_csv(scores, mode="a", header=not scores.is_file(), index=False)
        if decision is not None and update_best:
            offers.append(Offer(name, decision, row["objective"], "feasible", None,
                                f"compete:{entrant.name}"))
    notes = offer_best(manifest, offers) if offers else []
    board = leaderboard(pd.read_csv(out / "scores.csv", keep_default_na=False,
                                    na_values=[""]))
    board.to_csv(out / "leaderboard.csv", index=False)
    (out / "leaderboard.md").write_text(leaderboard_markdown(board, manifest.suite, time_limit),
                                        encoding="utf-8")
    return board, notes


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
            + markdown_table(board, ".4f") + "\n")


# ---------------------------------------------------------------------- callable entrants
def _call_main(argv: list[str]) -> int:
    """``python -m dlsched.benchmarks.compete --call module:function INSTANCE SOLUTION LIMIT SEED``.
    """
    parser = argparse.ArgumentParser(prog="python -m dlsched.benchmarks.compete")
    parser.add_argument("--call", required=True)
    parser.add_argument("instance")
    parser.add_argument("solution")
    parser.add_argument("time_limit", type=float)
    parser.add_argument("seed", type=int, nargs="?", default=0)
    args = parser.parse_args(argv)
    module_name, _, func_name = args.call.partition(":")
    func = getattr(importlib.import_module(module_name), func_name)
    instance = load_instance(args.instance)
    params = inspect.signature(func).parameters
    kwargs = {k: v for k, v in (("time_limit", args.time_limit), ("seed", args.seed))
              if k in params}
    out = func(instance, **kwargs)
    decision = out if isinstance(out, Decision) else getattr(out, "decision", None)
    if decision is None:
        print(f"{args.call} returned no decision", file=sys.stderr)
        return 3
    save_solution(instance, decision, args.solution, method=args.call)
    return 0


if __name__ == "__main__":
    sys.exit(_call_main(sys.argv[1:]))
