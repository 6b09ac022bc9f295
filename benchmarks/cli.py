"""Subcommands ``bench``, ``report``, ``compete`` and ``library build|verify`` of ``dlsched``.

Exit codes as in :mod:`dlsched.cli`: 0 success; 1 failures found (a run that errored,
crashed or was killed; a library file or best known solution that does not verify);
2 bad input (one line, from :class:`dlsched.errors.InputError`).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from pathlib import Path

from dlsched.cli_support import EXIT_FAILED, EXIT_OK, MAX_SEED, positive_seconds, seed_value
from dlsched.errors import InputError
from dlsched.files import check_output, write_text

REPORT_COLUMNS = ("suite", "problem", "instance", "method", "backend", "status", "objective",
                  "sense", "wall_time", "time_limit")
"""Columns a results table must have for ``dlsched report``."""

CPU_LIMIT_WALL_FACTOR = 10
"""With ``bench --cpu-limit S`` and no ``--time-limit``, each method's wall-clock limit is
at least this × S, so that on a machine under load the CPU limit binds, not the clock."""


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"seeds {text!r}", field="--seeds",
                         fix="write comma-separated integers, e.g. 0,1,2") from None
    if not seeds or not all(0 <= s <= MAX_SEED for s in seeds):
        raise InputError(f"seeds {text[:40]!r}", field="--seeds",
                         fix=f"write comma-separated integers from 0 to {MAX_SEED}, e.g. 0,1,2")
    return seeds


def _cmd_bench(args: argparse.Namespace) -> int:
    import pandas as pd

    from .library import load_manifest
    from .report import console_table
    from .results_table import read_table
    from .runner import FAILED, BenchSettings, run_bench
    from .suites import load_spec, suite_dir

    directory = suite_dir(args.suite, args.library)
    manifest = load_manifest(directory)
    spec = load_spec(directory) if (directory / "suite.json").is_file() else None
    time_limit = args.time_limit or (spec.bench_time_limit if spec else 10.0)
    if args.cpu_limit and not args.time_limit:
        # the CPU limit binds, not the clock: a busy machine gives the same table
        time_limit = max(time_limit, CPU_LIMIT_WALL_FACTOR * args.cpu_limit)
    seeds = _seeds(args.seeds) or list(spec.bench_seeds if spec else (0,))
    output = Path(args.output or f"bench-results/{manifest.suite}.csv")
    if output.is_dir():
        check_output(output, "--output")
    if args.report:
        check_output(args.report, "--report", directory=True)
    settings = BenchSettings(methods=_split(args.methods), time_limit=time_limit, seeds=seeds,
                             jobs=args.jobs, executor=args.executor,
                             progress=not args.no_progress, kill_after=args.kill_after,
                             cpu_limit=args.cpu_limit)
    start = time.perf_counter()
    rows, notes = run_bench(manifest, settings, output, update_best=args.update_best)
    elapsed = time.perf_counter() - start
    table = read_table(output)
    cpu = table.get("cpu_limit", pd.Series(float("nan"), index=table.index)).astype(float)
    table = table[(table["suite"] == manifest.suite)
                  & (table["time_limit"].astype(float) == float(time_limit))
                  & ((cpu == args.cpu_limit) if args.cpu_limit else cpu.isna())]
    print(console_table(table))
    for note in notes:
        print(note)
    print(f"\n{len(rows)} runs in {elapsed:.1f} s ({len(table)} in the table {output}); "
          f"{settings.jobs} parallel, time limit {time_limit:g} s")
    if args.report:
        from .report import write_report

        write_report(table, args.report)
        print(f"report: {Path(args.report) / 'summary.md'}")
    failed = rows[rows["status"].isin(FAILED)] if len(rows) else rows
    for _, row in failed.iterrows():
        print(f"FAILED {row['instance']} {row['method']} {row['backend']}: {row['status']} "
              f"{row['message']}")
    return EXIT_FAILED if len(failed) else EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report
    from .results_table import read_table

    path = Path(args.input)
    if not path.is_file():
        raise InputError("no such results table", field="--input",
                         fix="pass the CSV or Parquet file written by dlsched bench",
                         source=str(path))
    if not (math.isfinite(args.tol) and args.tol >= 0):
        raise InputError(f"--tol {args.tol}", field="--tol", fix="use a finite number >= 0")
    try:
        table = read_table(path)
    except InputError as exc:
        raise InputError(exc.message, field="--input", fix=exc.fix, source=str(path)) from None
    missing = [c for c in REPORT_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(f"no column {missing[0]!r}", field="--input", source=str(path),
                         fix="pass the CSV or Parquet file written by dlsched bench")
    if args.suite:
        table = table[table["suite"] == args.suite]
    if args.update_doc:
        from .report import update_doc

        try:
            changed = update_doc(table, args.update_doc, tol=args.tol)
        except (OSError, ValueError) as exc:
            raise InputError(str(exc), field="--update-doc", source=args.update_doc,
                             fix="name a markdown file with the report's begin/end markers "
                                 "(docs/benchmarks.md)") from None
        print(f"{'updated' if changed else 'unchanged'}: {args.update_doc}")
        return EXIT_OK
    out = check_output(args.output_dir or f"{path.with_suffix('')}-report", "--output-dir",
                       directory=True)
    from .report import console_table, group_reports, summarize

    summary = summarize(table, args.tol)  # once for the files, the console and the page
    groups = group_reports(table, args.tol, summary)
    write_report(table, out, tol=args.tol, plots=not args.no_plots, groups=groups)
    print(console_table(table, args.tol, summary))
    print(f"\nwrote {out / 'summary.md'}")
    if args.html:
        from .html_report import bench_page

        html_dir = check_output(args.html, "--html", directory=True)
        page = bench_page(table, html_dir, tol=args.tol, groups=groups,
                          title=f"Benchmark report: {path.name}")
        print(f"wrote {page}")
    return EXIT_OK


def _cmd_compete(args: argparse.Namespace) -> int:
    from .compete import compete, parse_entrant
    from .library import load_manifest
    from .sandbox import Limits
    from .suites import load_spec, suite_dir

    directory = suite_dir(args.suite, args.library)
    manifest = load_manifest(directory)
    names = args.name or []
    if len(names) > len(args.solver):
        raise InputError(f"{len(names)} --name for {len(args.solver)} --solver", field="--name",
                         fix="give at most one --name per --solver, in the same order")
    entrants = [parse_entrant(s, names[i] if i < len(names) else None)
                for i, s in enumerate(args.solver)]
    if len({e.name for e in entrants}) != len(entrants):
        raise InputError("two entrants share a name", field="--name",
                         fix="give each --solver its own --name")
    spec = load_spec(directory) if (directory / "suite.json").is_file() else None
    limit = args.time_limit or (spec.bench_time_limit if spec else 10.0)
    output = check_output(args.output or f"compete-results/{manifest.suite}", "--output",
                          directory=True)
    board, notes = compete(manifest, entrants, output, time_limit=limit, grace=args.grace,
                           seed=args.seed, update_best=args.update_best,
                           progress=not args.no_progress,
                           limits=Limits(args.memory_limit, args.max_solution_mb,
                                         args.max_output_kb),
                           run_as=args.run_as, cpu_limit=args.cpu_limit,
                           plots=not args.no_plots)
    from .report import frame_table

    print(frame_table(board, ".4f"))
    for note in notes:
        print(note)
    print(f"\nwrote {output / 'leaderboard.md'}, {output / 'scores.csv'} and the page "
          f"{output / 'index.html'}")
    ours = board[board["entrant"].isin({e.name for e in entrants})]
    if not (ours["valid"] > 0).any():
        print("no entrant wrote a valid solution: see the failures column and each run's "
              f"stderr.txt under {output / 'runs'}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _cmd_library_build(args: argparse.Namespace) -> int:
    from .build import build_suite

    if args.jobs < 1:
        raise InputError(f"jobs = {args.jobs}", field="--jobs", fix="use 1 or more")
    start = time.perf_counter()
    manifest = build_suite(args.suite, library=args.library, jobs=args.jobs,
                           time_limit=args.time_limit, recompute=args.recompute,
                           progress=not args.no_progress)
    counts: dict[str, int] = {}
    for rec in manifest.entries.values():
        status = (rec.get("best") or {}).get("status", "none")
        counts[status] = counts.get(status, 0) + 1
    print(f"suite {manifest.suite}: {len(manifest.entries)} instances in "
          f"{manifest.directory}; best known: "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
          + f" ({time.perf_counter() - start:.1f} s)")
    return EXIT_OK


def _cmd_library_verify(args: argparse.Namespace) -> int:
    from .library import verify
    from .suites import LIBRARY_ROOT

    if args.suite:
        suites = [args.suite]
    else:
        root = Path(args.library) if args.library else LIBRARY_ROOT
        suites = sorted(str(p.parent) for p in root.glob("*/manifest.json"))
        if not suites:
            raise InputError("no suite with a manifest", field="--library",
                             fix="build one: dlsched library build --suite NAME",
                             source=str(root))
    if args.jobs < 1:
        raise InputError(f"jobs = {args.jobs}", field="--jobs", fix="use 1 or more")
    bad = 0
    for suite in suites:
        if args.reprove:
            from .build import reprove_suite

            _, notes = reprove_suite(suite, library=args.library, jobs=args.jobs,
                                     time_limit=args.time_limit,
                                     progress=not args.no_progress)
            for line in notes:
                print(f"  {line}")
        checked, failures = verify(suite, args.library)
        print(f"{Path(suite).name}: {checked} instances, "
              + ("all verified" if not failures else f"{len(failures)} failures"))
        for line in failures:
            print(f"  FAIL {line}")
        bad += len(failures)
    return EXIT_FAILED if bad else EXIT_OK


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .claim_rows import count, json_lines, markdown
    from .reproduce import EXPERIMENTS, timed

    if args.paper not in EXPERIMENTS:
        raise InputError(f"no reproduction of {args.paper!r} yet", field="PAPER",
                         fix=f"use one of: {', '.join(EXPERIMENTS)}")
    seeds = (1 if args.quick else None) if args.seeds is None else args.seeds
    if seeds is not None and seeds < 1:
        raise InputError(f"--seeds {seeds}", field="--seeds", fix="use 1 or more")
    rows, cpu = timed(args.paper, seeds, args.quick)
    table = markdown(rows)
    if args.output:
        write_text(args.output, table + "\n", "--output")
    print(json_lines(rows) if args.json else table)
    if not args.json:
        tally = count(rows)
        print(f"\n{len(rows)} rows; {tally['reproduced']} of {tally['headline_ids']} headline "
              f"claims in direction and within 2x; {cpu:.1f} CPU-s")
    return EXIT_OK


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``bench``, ``report``, ``compete`` and ``library`` to the ``dlsched`` parser."""
    def suite_options(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument("--suite", required=required,
                       help="suite name in the library (quick, paper, ...) or a suite directory")
        p.add_argument("--library", help="library directory (default: the package's)")

    bench = subparsers.add_parser("bench", help="run methods × instances of a suite",
                                  description="Run methods × instances (× backends × seeds) "
                                  "of a suite in parallel and append one row per run.")
    suite_options(bench)
    bench.add_argument("--methods", action="append", metavar="M[,M:BACKEND...]",
                       help="methods to run (default: all registered for each problem)")
    bench.add_argument("--time-limit", type=positive_seconds,
                       help="seconds per run (suite default)")
    bench.add_argument("--seeds", help="comma-separated seeds (suite default, usually 0)")
    bench.add_argument("--jobs", type=int, default=2, help="parallel runs (2)")
    bench.add_argument("--executor", default="process",
                       help="process (default), dask (local cluster) or dask://HOST:PORT")
    bench.add_argument("--output", help="results table, .csv or .parquet "
                       "(default bench-results/SUITE.csv); existing runs are skipped")
    bench.add_argument("--cpu-limit", type=positive_seconds, metavar="SECONDS",
                       help="CPU seconds per run (RLIMIT_CPU on the run's process and each "
                       "solver process it starts): a run over it is a cpu_limit row; see "
                       "docs/benchmarks.md for tables that do not depend on the load")
    bench.add_argument("--kill-after", type=positive_seconds,
                       help="hard wall-clock limit per run (2 × time limit + 60)")
    bench.add_argument("--update-best", action="store_true",
                       help="store validated improvements as the suite's best known values")
    bench.add_argument("--report", metavar="DIR", help="also write the report to DIR")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.set_defaults(func=_cmd_bench)

    rep = subparsers.add_parser("report", help="summaries and performance profiles",
                                description="Summaries per problem and method, profiles "
                                "(PNG, CSV) and a markdown summary from a results table.")
    rep.add_argument("--input", required=True, help="results table written by bench")
    rep.add_argument("--suite", help="only this suite's rows")
    rep.add_argument("--output-dir", help="directory to write (default TABLE-report)")
    rep.add_argument("--tol", type=float, default=1e-6,
                     help="relative gap counted as reaching the best value (1e-6)")
    rep.add_argument("--no-plots", action="store_true", help="tables only")
    rep.add_argument("--html", metavar="DIR", help="also write DIR/index.html: one "
                     "self-contained page (tables, profiles, per-instance runs; sortable)")
    rep.add_argument("--update-doc", metavar="FILE", help="only rewrite the generated "
                     "section of a markdown file (between its begin/end markers) from the "
                     "table, e.g. docs/benchmarks.md")
    rep.set_defaults(func=_cmd_report)

    com = subparsers.add_parser("compete", help="score solvers on a suite (leaderboard)",
                                description="Run solvers on every instance of a suite with "
                                "a time limit enforced from outside; score and rank them.")
    suite_options(com)
    com.add_argument("--solver", action="append", required=True,
                     help='"COMMAND {instance} {solution} [{time_limit}] [{seed}]" or '
                     "module:function (repeatable)")
    com.add_argument("--name", action="append", help="entrant name per --solver")
    com.add_argument("--time-limit", type=positive_seconds,
                     help="seconds per instance (suite default)")
    com.add_argument("--grace", type=float, default=2.0,
                     help="seconds between SIGTERM and SIGKILL (2)")
    com.add_argument("--seed", type=seed_value, default=0, help="value of {seed} (0)")
    com.add_argument("--memory-limit", type=int, default=4096, metavar="MIB",
                     help="address-space limit of each solver process, MiB (4096)")
    com.add_argument("--max-solution-mb", type=int, default=16, metavar="MIB",
                     help="largest file a solver may write / solution read, MiB (16)")
    com.add_argument("--max-output-kb", type=int, default=1024, metavar="KIB",
                     help="stdout and stderr stored per run, KiB each (1024)")
    com.add_argument("--cpu-limit", type=positive_seconds, metavar="SECONDS",
                     help="CPU seconds each solver process may use (RLIMIT_CPU; default: "
                     "(time limit + grace) × CPUs + 1, a backstop behind the wall clock)")
    com.add_argument("--run-as", default="auto", metavar="USER",
                     help="who runs the solvers: auto (under root, a user id of each "
                     "entrant's own; else the runner's user), self, or a user name")
    com.add_argument("--output", help="directory (default compete-results/SUITE)")
    com.add_argument("--update-best", action="store_true",
                     help="store validated improvements as best known values")
    com.add_argument("--no-progress", action="store_true", help="no progress bar")
    com.add_argument("--no-plots", action="store_true",
                     help="the page without the profile images (tables only)")
    com.set_defaults(func=_cmd_compete)

    repro = subparsers.add_parser(
        "reproduce", help="a paper's headline comparison in its own setting",
        description="Run a paper's setting with its policies and print, per result: the "
        "paper's number (cited), dlsched's over seeds, direction and magnitude checks.")
    repro.add_argument("paper", choices=["horus", "genie", "liquid", "sched2", "inference"],
                     help="which paper")
    repro.add_argument("--quick", action="store_true",
                     help="reduced workloads: smoke rows without a verdict (seconds)")
    repro.add_argument("--seeds", type=int, default=None,
                     help="seeds per setting (default: the paper's runs, 5 for Horus, else "
                     "3; 1 with --quick)")
    repro.add_argument("--json", action="store_true", help="print the rows as JSON lines")
    repro.add_argument("-o", "--output", help="also write the markdown table to this file")
    repro.set_defaults(func=_cmd_reproduce)

    lib = subparsers.add_parser("library", help="build or verify instance suites")
    lib_sub = lib.add_subparsers(dest="library_command", required=True,
                                 parser_class=type(lib))
    build = lib_sub.add_parser("build", help="(re)build a suite from its suite.json")
    suite_options(build)
    build.add_argument("--jobs", type=int, default=2, help="parallel best-known runs (2)")
    build.add_argument("--time-limit", type=positive_seconds, help="seconds per best-known run "
                       "(the spec's)")
    build.add_argument("--recompute", action="store_true",
                       help="recompute best known values even for unchanged instances")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    build.set_defaults(func=_cmd_library_build)
    ver = lib_sub.add_parser("verify", help="check hashes and best known solutions")
    suite_options(ver, required=False)
    ver.add_argument("--reprove", action="store_true",
                     help="first re-solve every instance not proven optimal with the suite's "
                     "best-known runs, updating stale best knowns, solutions and bounds")
    ver.add_argument("--jobs", type=int, default=2, help="parallel re-solve runs (2)")
    ver.add_argument("--time-limit", type=positive_seconds,
                     help="seconds per re-solve run (the spec's)")
    ver.add_argument("--no-progress", action="store_true", help="no progress bar")
    ver.set_defaults(func=_cmd_library_verify)
    logging.getLogger("benchmarks").addHandler(logging.NullHandler())
