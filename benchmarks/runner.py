"""Run methods × instances (× backends of exact methods × seeds) of a suite, in parallel.

Every run happens in a process of its own, forked for that run and put in a session of its
own (:func:`dlsched.benchmarks.sandbox.fork_call`), so a crash (a segfaulting solver) or a
run past its hard limit is recorded as a row — status ``crash`` or ``killed`` — and the
benchmark carries on. The forked processes are driven by a
``concurrent.futures.ProcessPoolExecutor`` (default) or by Dask workers
(``executor="dask"`` starts a local cluster, ``"dask://HOST:PORT"`` joins a scheduler;
tasks carry the compressed instance, so workers need the package but not the files).

Each finished run appends one row to the results table (CSV, or Parquet by file suffix);
a rerun skips every (instance sha256, method, backend, seed, time limit) already present,
so an interrupted benchmark resumes where it stopped. A pair the method declares it does
not take (``MethodSpec.refusal``) is not run: status ``n/a``, the reason as message.

Gap to best known (column ``gap_to_best``): :func:`dlsched.gaps.relative_gap` with the
objective sense, i.e.::

    gap_to_best = (objective − best) / max(|objective|, |best|)   for minimization
    gap_to_best = (best − objective) / max(|objective|, |best|)   for maximization

(0 when both are 0). It equals ``relative_gap(objective, best)`` whenever the run is no
better than the best known; a negative value means the run beat the best known value.
``objective`` is always the problem evaluator's value of the run's validated decision.

``load_avg`` is the 1-minute load average when the run ended: timings taken on a loaded
machine are not comparable. Peak memory (``peak_rss_mb``) is the larger of the run
process's own peak resident set and that of its child processes (CBC runs as a child of
PuLP); the forked process inherits the interpreter and the loaded libraries, so it
includes them (about 90-150 MB).
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from dlsched import interrupt
from dlsched.decision import decision_from_dict
from dlsched.errors import InputError, MethodError
from dlsched.files import locked
from dlsched.gaps import relative_gap
from dlsched.instance_io import instance_from_dict
from dlsched.problems import get_problem
from dlsched.registry import methods_for
from dlsched.solve import solve

from .library import Manifest, Offer, load_manifest, offer_best
from .profiles import NOT_TAKEN
from .results_table import COLUMNS, KEY, TableWriter, read_table, run_key
from .sandbox import fork_call

log = logging.getLogger(__name__)

FAILED = ("error", "crash", "killed")
"""Statuses beyond :class:`solver.result.Status` that the runner records for a failure."""

CPU_LIMIT = "cpu_limit"
"""Status of a run stopped at its CPU limit (``BenchSettings.cpu_limit``): no decision,
like a method that found none in its time, and not a failure of the benchmark."""


@dataclass(frozen=True)
class BenchSettings:
    """What to run and how.

    ``methods``: names (``greedy``), ``name:backend`` (``exact:highs``), or None for every
    registered method; an exact method without a backend runs on each of its backends.
    ``kill_after``: hard wall-clock limit per run in seconds (default 2 × time limit + 60).
    ``cpu_limit``: CPU seconds per run (``RLIMIT_CPU`` on the run's process and on each
    solver process it starts; a run over it is recorded as :data:`CPU_LIMIT`), None for
    none.
    """

    methods: Sequence[str] | None = None
    time_limit: float = 10.0
    seeds: Sequence[int] = (0,)
    jobs: int = 2
    executor: str = "process"
    progress: bool = True
    kill_after: float | None = None
    isolate: bool = True
    cpu_limit: float | None = None


@dataclass(frozen=True)
class Task:
    """One run, self-contained (it carries the compressed instance file)."""

    suite: str
    instance: str
    instance_sha256: str
    problem: str
    sense: str
    method: str
    kind: str
    backend: str | None
    seed: int
    time_limit: float
    kill_after: float
    payload: bytes
    best_known: float | None
    best_known_status: str | None
    isolate: bool = True
    refusal: str = ""  # why the method does not take the instance (not run: ``n/a``)
    cpu_limit: float | None = None


def gap_to_best(objective: float | None, best: float | None, sense: str) -> float | None:
    """Signed relative gap of ``objective`` to the best known ``best`` (module docstring)."""
    return relative_gap(objective, best, "min" if sense == "min" else "max")


# ---------------------------------------------------------------------- one run
def _execute(task: Task) -> dict[str, Any]:
    """Solve one task in the current process; never raises for a method's failure."""
    instance = instance_from_dict(json.loads(gzip.decompress(task.payload)))
    try:
        result = solve(instance, task.method, backend=task.backend,
                       time_limit=task.time_limit, seed=task.seed)
    except MethodError as exc:
        return {"status": "error", "message": f"MethodError: {exc}"[:500]}
    return {
        "status": result.status.value, "objective": result.objective, "bound": result.bound,
        "method_gap": result.gap, "wall_time": result.wall_time,
        "message": result.message[:500],
        "placements": result.decision.to_dict() if result.decision is not None else None,
        # what a reader compares (Problem.report_metrics), JSON text in the table
        "metrics": json.dumps(get_problem(instance.problem).report_metrics(
            instance, result.decision)) if result.decision is not None else "",
    }


def _peak_rss_mb() -> float:
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / 2**20  # KiB on Linux, bytes on macOS
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round(max(own, kids) * scale, 1)


def _forked_body(task: Task) -> bytes:
    """What the forked run process returns: the outcome as JSON."""
    try:
        out = _execute(task)
    except Exception as exc:  # a bug in a method: recorded, not fatal
        out = {"status": "error", "message": f"{type(exc).__name__}: {exc}"[:500]}
    out["peak_rss_mb"] = _peak_rss_mb()
    return json.dumps(out).encode()


def _run_forked(task: Task) -> dict[str, Any]:
    run = fork_call(lambda: _forked_body(task), task.kill_after, task.cpu_limit)
    cpu = None if run.cpu is None else round(run.cpu, 3)
    if run.killed:
        return {"status": "killed", "wall_time": run.wall, "cpu_time": cpu,
                "message": f"killed at the hard limit of {task.kill_after:g} s"}
    try:
        out = json.loads(run.data)
        out["cpu_time"] = cpu
        return out
    except json.JSONDecodeError:
        signalled = os.WIFSIGNALED(run.status)
        if signalled and task.cpu_limit is not None and (
                os.WTERMSIG(run.status) == signal.SIGXCPU
                or (cpu is not None and cpu >= math.ceil(task.cpu_limit))):
            return {"status": CPU_LIMIT, "wall_time": run.wall, "cpu_time": cpu,
                    "message": f"stopped at the CPU limit of {task.cpu_limit:g} s"}
        how = (f"killed by signal {os.WTERMSIG(run.status)}" if signalled
               else f"exit code {os.WEXITSTATUS(run.status)}")
        return {"status": "crash", "wall_time": run.wall, "cpu_time": cpu,
                "message": f"run process died ({how})"}


def run_task(task: Task) -> dict[str, Any] | None:
    """Run one task (in a forked process unless ``task.isolate`` is False); the outcome.

    Returns None when interrupted (nothing is recorded for that run).
    """
    try:
        with interrupt.worker_task():
            return _run_task(task)
    except KeyboardInterrupt:
        return None


def _run_task(task: Task) -> dict[str, Any]:
    if task.isolate and hasattr(os, "fork"):
        return _run_forked(task)
    if task.isolate:
        log.warning("no os.fork on this platform: runs share the worker process, so a "
                    "crash is not isolated and the hard limit is not enforced")
    try:
        out = _execute(task)
    except Exception as exc:
        out = {"status": "error", "message": f"{type(exc).__name__}: {exc}"[:500]}
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


# ---------------------------------------------------------------------- provenance
def environment() -> dict[str, Any]:
    """Versions, commit and host recorded with every row."""
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "-"

    solvers = "; ".join(f"{n} {version(n)}" for n in ("pulp", "ortools", "highspy"))
    return {"dlsched_version": version("dlsched"), "solver_versions": solvers,
            "python": platform.python_version(), "commit": _commit(),
            "host": platform.node(), "cores": os.cpu_count() or 0}


def _commit() -> str:
    """The git commit of the package's source tree, when it is a checkout (read-only)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


# ---------------------------------------------------------------------- planning
def plan(manifest: Manifest, settings: BenchSettings, instances: Iterable[str] | None = None,
         strict_methods: bool = True) -> list[Task]:
    """The tasks of a benchmark: instances × methods × backends × seeds, in a fixed order.

    Raises InputError when a named method exists for none of the suite's problems (with
    ``strict_methods``) or names an unknown backend.
    """
    names = list(instances) if instances is not None else list(manifest.entries)
    kill_after = settings.kill_after or 2 * settings.time_limit + 60
    tasks: list[Task] = []
    used: set[str] = set()
    for name in names:
        rec = manifest.entries[name]
        specs = methods_for(rec["problem"])
        payload = manifest.path_of(name).read_bytes()
        if not manifest.path_of(name).name.endswith(".gz"):
            payload = gzip.compress(payload, mtime=0)
        best = rec.get("best") or {}
        instance = None  # read only for a method that may refuse it
        for method, backend in _expand_methods(specs, settings.methods, used, strict_methods):
            if (hook := specs[method].refusal) is not None and instance is None:
                instance = instance_from_dict(json.loads(gzip.decompress(payload)))
            refusal = (hook(instance) or "")[:500] if hook is not None else ""
            for seed in settings.seeds:
                tasks.append(Task(
                    suite=manifest.suite, instance=name, instance_sha256=rec["sha256"],
                    problem=rec["problem"], sense=rec["sense"], method=method,
                    kind=specs[method].kind, backend=backend, seed=int(seed),
                    time_limit=float(settings.time_limit), kill_after=float(kill_after),
                    payload=payload, best_known=best.get("objective"),
                    best_known_status=best.get("status"), isolate=settings.isolate,
                    refusal=refusal, cpu_limit=settings.cpu_limit))
    if settings.methods is not None and strict_methods:
        missing = [m for m in settings.methods if m not in used]
        if missing:
            problems = sorted({r["problem"] for r in manifest.entries.values()})
            raise InputError(f"methods {missing} exist for none of the suite's problems "
                             f"{problems}", field="--methods",
                             fix="see `dlsched methods`; write NAME or NAME:BACKEND")
    return tasks


def _expand_methods(specs: dict, wanted: Sequence[str] | None, used: set[str],
                    strict: bool = True) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    tokens = list(specs) if wanted is None else list(wanted)
    for token in tokens:
        name, _, backend = token.partition(":")
        spec = specs.get(name)
        if spec is None or (backend and not strict and backend not in spec.backends):
            continue
        used.add(token)
        if backend:
            if backend not in spec.backends:
                raise InputError(f"method {name!r} has no backend {backend!r}",
                                 field="--methods", fix=f"use one of: {', '.join(spec.backends)}")
            out.append((name, backend))
        elif spec.backends:
            out.extend((name, b) for b in spec.backends)
        else:
            out.append((name, None))
    return out


def _row(task: Task, outcome: dict[str, Any], env: dict[str, Any], parallel: int) -> dict:
    objective = outcome.get("objective")
    row = {
        "suite": task.suite, "instance": task.instance, "instance_sha256": task.instance_sha256,
        "problem": task.problem, "sense": task.sense, "method": task.method,
        "kind": task.kind,
        "backend": task.backend or "", "seed": task.seed, "time_limit": task.time_limit,
        "cpu_limit": task.cpu_limit,
        "status": outcome.get("status"), "objective": objective, "bound": outcome.get("bound"),
        "method_gap": outcome.get("method_gap"), "best_known": task.best_known,
        "best_known_status": task.best_known_status,
        "gap_to_best": gap_to_best(objective, task.best_known, task.sense),
        "wall_time": outcome.get("wall_time"), "cpu_time": outcome.get("cpu_time"),
        "peak_rss_mb": outcome.get("peak_rss_mb"),
        "metrics": outcome.get("metrics", ""), "message": outcome.get("message", ""),
        "parallel": parallel,
        "load_avg": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    row.update(env)
    return row


# ---------------------------------------------------------------------- driver
def run_bench(manifest: Manifest, settings: BenchSettings, output: str | Path | None, *,
              instances: Iterable[str] | None = None, update_best: bool = False,
              strict_methods: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """Run a benchmark; returns (the rows of this call's runs, best-known update notes).

    Rows already in ``output`` for the same key are skipped (resume). With
    ``update_best``, solutions that beat the library's best known values (checked by the
    validator and the evaluator) are stored in the suite.
    """
    if settings.jobs < 1:
        raise InputError(f"jobs = {settings.jobs}", field="--jobs", fix="use 1 or more")
    if settings.executor not in ("process", "dask") and not settings.executor.startswith(
            "dask://"):  # before anything runs, and before importing dask (~0.3 CPU-s)
        raise InputError(f"executor {settings.executor!r}", field="--executor",
                         fix="use process, dask, or dask://HOST:PORT")
    if settings.time_limit <= 0:
        raise InputError(f"time limit = {settings.time_limit}", field="--time-limit",
                         fix="use seconds > 0")
    if settings.cpu_limit is not None and (
            not settings.cpu_limit > 0 or not settings.isolate or not hasattr(os, "fork")):
        raise InputError(f"CPU limit {settings.cpu_limit} (runs isolated: "
                         f"{settings.isolate and hasattr(os, 'fork')})", field="--cpu-limit",
                         fix="use seconds > 0, with runs in processes of their own (POSIX)")
    tasks = plan(manifest, settings, instances, strict_methods)
    path = Path(output) if output is not None else None
    if path is not None:
        done = {run_key(r) for _, r in read_table(path).iterrows()}
        skipped = [t for t in tasks if run_key(_task_key(t)) in done]
        tasks = [t for t in tasks if run_key(_task_key(t)) not in done]
        if skipped:
            log.info("resuming: %d runs already in %s", len(skipped), path)
    env = environment()
    writer = TableWriter(path)
    for task in (t for t in tasks if t.refusal):  # declared by the method: not run
        writer.add(_row(task, {"status": NOT_TAKEN, "message": task.refusal}, env, settings.jobs))
    tasks = [t for t in tasks if not t.refusal]
    offers: list[Offer] = []
    for task, outcome in _outcomes(tasks, settings):
        row = _row(task, outcome, env, settings.jobs)
        writer.add(row)
        if update_best and (outcome.get("placements") is not None or row["bound"] is not None):
            placements = outcome.get("placements")
            offers.append(Offer(task.instance,
                                decision_from_dict(placements) if placements is not None
                                else None, row["objective"], row["status"], row["bound"],
                                task.method, task.backend, task.seed))
    notes: list[str] = []
    if update_best and offers:
        notes = store_best(manifest, offers)
    return pd.DataFrame(writer.rows, columns=list(COLUMNS)), notes


def store_best(manifest: Manifest, offers: list[Offer]) -> list[str]:
    """:func:`~.library.offer_best` on the suite's manifest as it is on disk now, under a
    lock on the suite's folder: two benchmarks or competitions that improve best known
    values of one suite at the same time keep both's improvements (each reads the
    manifest the other may have just written, never its own copy from its start)."""
    with locked(manifest.directory):
        current = load_manifest(manifest.directory)
        return offer_best(current, sorted(offers, key=lambda o: _offer_rank(o, current)))


def _offer_rank(offer: Offer, manifest: Manifest) -> tuple:
    sense = manifest.entries[offer.name]["sense"]
    value = offer.objective if offer.objective is not None else float("inf")
    if sense == "max" and offer.objective is not None:
        value = -value
    return (offer.name, value, offer.status != "optimal")


def _task_key(task: Task) -> dict[str, Any]:
    return {k: getattr(task, k) for k in KEY}


def _outcomes(tasks: list[Task], settings: BenchSettings):
    """Yield (task, outcome) as runs finish, with a progress bar."""
    from tqdm import tqdm

    bar = tqdm(total=len(tasks), disable=not settings.progress or not tasks, unit="run",
               dynamic_ncols=True)
    try:
        if settings.executor == "process":
            if settings.jobs == 1:
                for task in tasks:
                    outcome = run_task(task)
                    if outcome is None:
                        raise KeyboardInterrupt
                    bar.update()
                    yield task, outcome
                return
            with ProcessPoolExecutor(max_workers=settings.jobs,
                                     initializer=interrupt.start_worker) as pool:
                futures: dict[Any, Task] = {}
                try:
                    held = interrupt.hold_interrupts()  # the first submit forks the workers
                    try:
                        futures.update((pool.submit(run_task, t), t) for t in tasks)
                    finally:
                        interrupt.release_interrupts(held)  # a Ctrl-C meanwhile: raised here
                    for fut in as_completed(futures):
                        try:
                            outcome = fut.result()
                        except BrokenProcessPool:
                            raise RuntimeError("a benchmark worker process died; rerun the "
                                               "same command to resume") from None
                        if outcome is None:
                            raise KeyboardInterrupt
                        bar.update()
                        yield futures[fut], outcome
                except BaseException:
                    for fut in futures:
                        fut.cancel()
                    raise
            return
        yield from _dask_outcomes(tasks, settings, bar)
    finally:
        bar.close()


def _dask_outcomes(tasks: list[Task], settings: BenchSettings, bar):
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("dask.distributed is not installed", field="--executor",
                         fix='pip install "dask[distributed]"') from None
    executor = settings.executor
    if executor == "dask":
        cluster = LocalCluster(n_workers=settings.jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    elif executor.startswith("dask://"):
        cluster = None
        address = executor.removeprefix("dask://")
        try:
            client = Client(address if "://" in address else "tcp://" + address)
        except OSError as exc:  # no scheduler there (dask raises OSError on a timeout)
            raise InputError(f"cannot reach the dask scheduler: {exc}"[:200],
                             field="--executor", fix="start the scheduler, or check HOST:PORT"
                             ) from None
    else:
        raise InputError(f"executor {executor!r}", field="--executor",
                         fix="use process, dask, or dask://HOST:PORT")
    try:
        futures = client.map(run_task, tasks, pure=False)
        index = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for fut in dask_completed(futures):
            outcome = fut.result()
            if outcome is None:
                raise KeyboardInterrupt
            bar.update()
            yield index[fut.key], outcome
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

