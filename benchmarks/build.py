"""Building a library suite: its instance files, then its best known solutions by running
the spec's exact methods through the benchmark runner."""

from __future__ import annotations

from pathlib import Path

from .library import Manifest, load_manifest, write_suite_files
from .runner import BenchSettings, run_bench
from .suites import load_spec


def build_suite(suite: str | Path, *, library: str | Path | None = None, jobs: int = 1,
                time_limit: float | None = None, recompute: bool = False,
                progress: bool = True) -> Manifest:
    """(Re)build a suite from its spec: instance files, manifest, best known solutions.

    The best known solutions come from the spec's ``best_known`` runs (default: every
    backend-default ``exact`` run at 60 s), run by :func:`dlsched.benchmarks.runner.run_bench`;
    instances that already have a best known record for the same sha256 are not rerun
    unless ``recompute``.
    """
    spec = load_spec(suite, library)
    manifest = write_suite_files(spec)
    if recompute:
        for record in manifest.entries.values():
            record["best"] = None
        manifest.save()
    todo = [name for name, rec in manifest.entries.items() if rec.get("best") is None]
    if not todo:
        return manifest
    methods = [m if b is None else f"{m}:{b}" for m, b in spec.best_known.runs]
    settings = BenchSettings(methods=methods,
                             time_limit=time_limit or spec.best_known.time_limit,
                             seeds=(0,), jobs=jobs, progress=progress)
    run_bench(manifest, settings, output=None, instances=todo, update_best=True,
              strict_methods=False)
    return load_manifest(spec.directory)
