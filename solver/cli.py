"""The ``dlsched`` command line.

Exit codes: 0 success; 1 the solution is infeasible or no solution was found; 2 bad
input, or an output that cannot be written (a full disk; one line naming the file, the
field and the fix; no traceback); 3 internal error (a bug: one line "internal error: ...
(please report)"; bad input never gets there); 130 interrupted (Ctrl-C, at any moment:
one line, see :mod:`dlsched.interrupt`).
"""

from __future__ import annotations

import argparse
import copy
import errno
import math
import os
import shlex
import sys
from collections.abc import Sequence

from . import __version__, interrupt, versions
from .benchmarks import cli as benchmarks_cli
from .cli_support import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    Parser,
    parse_option_pairs,
    positive_seconds,
    seed_value,
)
from .errors import InputError
from .files import atomic_path, check_output
from .gaps import relative_gap
from .instance_io import load_instance, save_instance
from .instances import cli as instances_cli
from .problems import get_problem
from .problems.rates import interference_names, locality_names
from .registry import generators, get_method, methods_for
from .rl import cli as rl_cli
from .simulate import cli as simulate_cli
from .solution_io import load_solution, save_solution
from .solve import solve
from .validate import validate

EXIT_INTERNAL = 3
"""Exit code of an unexpected exception (a bug, never bad input)."""

DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES,
                         errno.EPERM})
"""``OSError`` numbers that mean "cannot write there" (exit 2, one line), not a bug."""


def _cmd_generate(args: argparse.Namespace) -> int:
    spec = generators()[args.problem]
    kwargs = {k: v for k, v in vars(args).items()
              if k not in ("command", "problem", "output", "func", "option_names",
                           "command_line")}
    check_output(args.output, "--output")
    for key, value in kwargs.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{value} is not a finite number",
                             field=args.option_names.get(key, key),
                             fix="use a finite number (see --help)")
    try:
        instance = spec.build(**kwargs)
    except ValueError as exc:
        raise InputError(str(exc), field="arguments", fix="see --help") from None
    sha = save_instance(instance, args.output)
    print(f"wrote {args.output}: {instance.problem}, {len(instance.jobs)} jobs, "
          f"{instance.cluster.num_nodes} servers, {instance.cluster.num_gpus} GPUs, "
          f"sha256 {sha}")
    return EXIT_OK


def _cmd_solve(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    if args.output:
        check_output(args.output, "--output")
    result = solve(instance, args.method, backend=args.backend, time_limit=args.time_limit,
                   seed=args.seed, **parse_option_pairs(args.option))
    print(result.summary())
    if result.status.value == "invalid_input":
        print(f"error: {args.instance}: {result.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if result.decision is None:
        return EXIT_FAILED
    if args.output:
        save_solution(instance, result.decision, args.output, method=result.method,
                      backend=result.backend, status=result.status.value,
                      objective=result.objective, bound=result.bound)
        print(f"wrote {args.output}")
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    decision = load_solution(args.solution, instance)
    report = validate(instance, decision)
    print(report)
    return EXIT_OK if report.ok else EXIT_FAILED


def _cmd_evaluate(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    decision = load_solution(args.solution, instance)
    report = validate(instance, decision)
    if not report.ok:
        print(report)
        return EXIT_FAILED
    problem = get_problem(instance.problem)
    print(f"{problem.evaluate(instance, decision):.10g}")
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    spec = get_method(instance.problem, args.method)
    if spec.export is None:
        raise InputError(f"method {args.method!r} has no model to export", field="--method",
                         fix="export an exact method")
    check_output(args.output, "--output")
    try:
        with atomic_path(args.output, "--output") as tmp:
            spec.export(instance, tmp, args.format)
    except InputError as exc:  # a model's own needs of the instance: name the file
        if exc.source or exc.field.startswith("-"):
            raise
        raise exc.with_source(str(args.instance)) from None
    print(f"wrote {args.output}")
    return EXIT_OK


def _cmd_methods(args: argparse.Namespace) -> int:
    from .problems import problem_names

    problems = problem_names()
    if args.problem is not None:
        get_problem(args.problem, field="problem")  # an unknown one: named with the known
        problems = [args.problem]
    rows = [(problem, name, spec.kind, ", ".join(spec.backends) or "-", spec.summary)
            for problem in problems for name, spec in methods_for(problem).items()]
    header = ("problem", "method", "kind", "backends", "summary")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True))
              + "  " + row[4])
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    """Generate a Horus snapshot, solve it exactly and greedily, print both and the gap."""
    try:
        instance = generators()["horus"].build(seed=args.seed, nodes=args.nodes, beta=15,
                                              busy=args.busy)
    except ValueError as exc:
        raise InputError(str(exc), field="--nodes/--busy", fix="see dlsched demo --help") from None
    print(f"instance {instance.name}: {instance.cluster.num_gpus} GPUs "
          f"({int(instance.gpu_busy.sum())} busy), {len(instance.jobs)} pending jobs\n")
    exact = solve(instance, "exact", backend=args.backend, time_limit=args.time_limit)
    greedy = solve(instance, "greedy", seed=args.seed)
    for result in (exact, greedy):
        print(result.summary(), end="\n\n")
    if exact.status.value == "optimal" and greedy.objective is not None:
        gap = relative_gap(greedy.objective, exact.objective, "min")
        print(f"gap of greedy to the proven optimum: {100 * gap:.3f} % (dlsched.relative_gap:"
              " |greedy − optimum| / max(|greedy|, |optimum|))")
    else:
        print(f"no proven optimum (exact status: {exact.status.value}); no gap reported")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="dlsched", description="Schedule deep-learning jobs on GPU "
                     "clusters: exact models, heuristics, and the gap between them.")
    parser.add_argument("--version", action="version", version=f"dlsched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    gen = sub.add_parser("generate", help="write a seeded instance file")
    gen_sub = gen.add_subparsers(dest="problem", required=True, parser_class=Parser)
    for name, spec in generators().items():
        p = gen_sub.add_parser(name, help=spec.summary, description=spec.summary)
        spec.add_arguments(p)
        p.add_argument("--seed", type=seed_value, default=0, help="random seed (default 0)")
        p.add_argument("-o", "--output", required=True, help="instance file to write")
        p.set_defaults(func=_cmd_generate, option_names={
            a.dest: max(a.option_strings, key=len) for a in p._actions if a.option_strings})

    sol = sub.add_parser("solve", help="solve an instance with a method")
    sol.add_argument("instance", help="instance file (JSON)")
    sol.add_argument("--method", default="exact", help="see `dlsched methods` (exact)")
    sol.add_argument("--backend", choices=["cbc", "highs", "scip", "cpsat"],
                     help="solver for exact methods (default: the method's own)")
    sol.add_argument("--time-limit", type=positive_seconds, default=60.0, help="seconds (60)")
    sol.add_argument("--seed", type=seed_value, default=0, help="seed (0)")
    sol.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                     help="method-specific option (repeatable)")
    sol.add_argument("-o", "--output", help="solution file to write")
    sol.set_defaults(func=_cmd_solve)

    for name, func, text in (("validate", _cmd_validate, "check a solution independently"),
                             ("evaluate", _cmd_evaluate, "print a solution's objective")):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("instance", help="instance file")
        p.add_argument("solution", help="solution file")
        p.set_defaults(func=func)

    exp = sub.add_parser("export", help="write the exact model (MPS/LP, or CP-SAT proto text)")
    exp.add_argument("instance", help="instance file")
    exp.add_argument("--format", choices=["mps", "lp", "proto"], default="mps",
                     help="mps or lp (PuLP models), proto (CP-SAT model proto as text)")
    exp.add_argument("--method", default="exact", help="exact method to export (exact)")
    exp.add_argument("-o", "--output", required=True, help="file to write")
    exp.set_defaults(func=_cmd_export)

    demo = sub.add_parser("demo", help="Horus: exact vs greedy on one generated snapshot")
    demo.add_argument("--nodes", type=int, default=32, help="servers of 8 GPUs (32)")
    demo.add_argument("--busy", type=float, default=0.95, help="busy GPU share (0.95)")
    demo.add_argument("--backend", choices=["cbc", "highs", "scip", "cpsat"], default="cbc",
                      help="solver of the exact model")
    demo.add_argument("--time-limit", type=positive_seconds, default=60.0,
                      help="seconds for the exact model")
    demo.add_argument("--seed", type=seed_value, default=1, help="seed of the snapshot")
    demo.set_defaults(func=_cmd_demo)

    met = sub.add_parser("methods", help="list problems, methods and backends")
    met.add_argument("problem", nargs="?", help="only this problem's methods (default: all)")
    met.set_defaults(func=_cmd_methods)

    simulate_cli.add_commands(sub)
    benchmarks_cli.add_commands(sub)
    rl_cli.add_commands(sub)
    instances_cli.add_commands(sub)
    versions.add_commands(sub)
    return parser


_cached: tuple[tuple[object, ...], argparse.ArgumentParser] | None = None


def _parser_inputs() -> tuple[object, ...]:
    """What :func:`build_parser` reads that can change in a process: the registered
    generators (each adds a parser and its options), locality and interference models
    (``simulate`` choices) and learned-policy trainers (``rl`` parsers)."""
    return (tuple(generators().items()), locality_names(), interference_names(),
            tuple(rl_cli.TRAINERS.items()))


def _parser() -> argparse.ArgumentParser:
    """:func:`build_parser`, built once per process and again when its inputs changed.

    Building it makes ~30 parsers and ~100 gettext look-ups (~12 ms), as much as many a
    command's work when ``main`` is called in-process (tests, notebooks). ``parse_args``
    leaves a parser as it was, so one serves every call; :func:`main` copies the mutable
    defaults it hands to a command. No lock: two threads building at once each get a
    whole parser, and a fork never inherits a held lock.
    """
    global _cached
    inputs = _parser_inputs()
    cached = _cached
    if cached is None or cached[0] != inputs:
        cached = (inputs, build_parser())
        _cached = cached
    return cached[1]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dlsched`` console command."""
    if argv is None:  # the command itself (not a test calling main): see dlsched.interrupt
        interrupt.arm()
    try:
        args = _parser().parse_args(argv)
        for key, value in vars(args).items():  # a command may change them; not the parser's
            if isinstance(value, (list, dict, set)):
                setattr(args, key, copy.copy(value))
        args.command_line = shlex.join(["dlsched", *(sys.argv[1:] if argv is None else argv)])
        code = int(args.func(args))
        # an interrupt that something swallowed (a method's try, an ImportError it caused)
        return _interrupted() if interrupt.interrupted() else code
    except KeyboardInterrupt:
        return _interrupted()
    except InputError as exc:
        if interrupt.interrupted():
            return _interrupted()
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        if interrupt.interrupted():
            return _interrupted()
        if exc.errno not in DISK_ERRORS:
            return _internal(exc)
        # a full or read-only disk that a write helper did not name: one line, exit 2
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug, not bad input: one line, exit 3 (see EXIT_INTERNAL)
        if interrupt.interrupted():  # e.g. an ImportError the interrupt caused
            return _interrupted()
        return _internal(exc)


def _internal(exc: Exception) -> int:
    """One line for a bug (exit 3), or the traceback with DLSCHED_TRACEBACK set."""
    if os.environ.get("DLSCHED_TRACEBACK"):
        raise exc
    text = " ".join(str(exc).split())[:300]
    print(f"internal error: {type(exc).__name__}: {text} (please report; set "
          "DLSCHED_TRACEBACK=1 for the traceback)", file=sys.stderr)
    return EXIT_INTERNAL


def _interrupted() -> int:
    print(interrupt.MESSAGE, file=sys.stderr)
    return interrupt.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
