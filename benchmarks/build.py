"""Building a library suite: its instance files, then its best known solutions by running
the spec's exact methods through the benchmark runner."""

from __future__ import annotations

from pathlib import Path

from dlsched.errors import InputError
from dlsched.registry import methods_for

from .library import Manifest, load_manifest, offer_best, snapshot_bound_offers, write_suite_files
from .runner import BenchSettings, run_bench
from .suites import SPEC_FILE, load_spec


def _check_runs(runs, problems: set[str], source: Path) -> None:
    """Raise InputError for a best-known run that exists for none of ``problems`` (the
    runs of a suite apply to every problem that has the method; a typo applies to none)."""
    for i, (method, backend) in enumerate(runs):
        if not any(method in methods_for(p) and (backend is None
                                                 or backend in methods_for(p)[method].backends)
                   for p in problems):
            token = method if backend is None else f"{method}:{backend}"
            raise InputError(f"run {token!r} exists for none of the suite's problems "
                             f"{sorted(problems)}", field=f"best_known.runs[{i}]",
                             fix="name a method (and backend) of `dlsched methods`",
                             source=str(source))


def build_suite(suite: str | Path, *, library: str | Path | None = None, jobs: int = 1,
                time_limit: float | None = None, recompute: bool = False,
                progress: bool = True) -> Manifest:
    """(Re)build a suite from its spec: instance files, manifest, best known solutions.

    The best known solutions come from the spec's ``best_known`` runs (default: every
    backend-default ``exact`` run at 60 s), run by :func:`dlsched.benchmarks.runner.run_bench`;
    instances that already have a best known record for the same sha256 are not rerun
    unless ``recompute``. Then each problem's solver-free snapshot bound (SCHED²'s
    knapsack bound) is offered as a bound.
    """
    spec = load_spec(suite, library)
    manifest = write_suite_files(spec)
    _check_runs(spec.best_known.runs, {r["problem"] for r in manifest.entries.values()},
                spec.directory / SPEC_FILE)
    if recompute:
        for record in manifest.entries.values():
            record["best"] = None
        manifest.save()
    todo = [name for name, rec in manifest.entries.items() if rec.get("best") is None]
    if todo:
        methods = [m if b is None else f"{m}:{b}" for m, b in spec.best_known.runs]
        settings = BenchSettings(methods=methods,
                                 time_limit=time_limit or spec.best_known.time_limit,
                                 seeds=(0,), jobs=jobs, progress=progress)
        run_bench(manifest, settings, output=None, instances=todo, update_best=True,
                  strict_methods=False)
        manifest = load_manifest(spec.directory)
    offer_best(manifest, snapshot_bound_offers(manifest))
    return load_manifest(spec.directory)


def reprove_suite(suite: str | Path, *, library: str | Path | None = None, jobs: int = 1,
                  time_limit: float | None = None, progress: bool = True
                  ) -> tuple[Manifest, list[str]]:
    """Re-solve the instances of a built suite whose best known is not proven optimal.

    Each such instance is run again by the spec's ``best_known`` runs (at ``time_limit``,
    default the spec's); a better validated solution or a proof replaces a stale best
    known (with its solution file and bound), a stored bound that the new solution beats
    is dropped, and the problem's solver-free snapshot bound is offered again.

    Returns
    -------
    tuple
        The updated manifest and one line per change or refusal.
    """
    spec = load_spec(suite, library)
    manifest = load_manifest(spec.directory)
    todo = [name for name, rec in manifest.entries.items()
            if (rec.get("best") or {}).get("status") != "optimal"]
    notes: list[str] = []
    if todo:
        methods = [m if b is None else f"{m}:{b}" for m, b in spec.best_known.runs]
        settings = BenchSettings(methods=methods,
                                 time_limit=time_limit or spec.best_known.time_limit,
                                 seeds=(0,), jobs=jobs, progress=progress)
        notes += run_bench(manifest, settings, output=None, instances=todo, update_best=True,
                           strict_methods=False)[1]
        manifest = load_manifest(spec.directory)
    notes += offer_best(manifest, snapshot_bound_offers(manifest))
    return load_manifest(spec.directory), notes
