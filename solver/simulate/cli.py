"""``dlsched simulate WORKLOAD --policy NAME [...] --out DIR``: replay a workload."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable

from ..cli_support import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    parse_option_pairs,
    positive_seconds,
    print_summary,
    seed_value,
)
from ..errors import InputError
from ..files import check_output
from ..instance import Instance
from ..instance_io import check_instance, load_instance
from ..problems import get_problem
from ..problems.rates import SpeedModel, interference_names, locality_names, supports_packed
from ..topology_io import load_topology
from .engine import Policy, SimulationError, simulate
from .results import save_results

MIN_INTERVAL = 1e-3
"""Shortest --interval, seconds (a shorter one is absorbed by the clock: t + dt == t)."""


def add_commands(subparsers) -> None:
    """Add the ``simulate`` subcommand."""
    p = subparsers.add_parser("simulate", help="event-driven replay of a workload under a policy")
    p.add_argument("workload", help="workload instance file (.json or .json.gz)")
    p.add_argument("--policy", default=None, help="a method of the workload's problem")
    p.add_argument("--backend", default=None, help="solver backend of an exact policy")
    p.add_argument("--exact-per-event", action="store_true",
                   help="use the problem's exact snapshot model ('exact') at every event")
    p.add_argument("--time-limit", type=positive_seconds, default=10.0,
                   help="seconds per policy call for exact policies (10)")
    p.add_argument("--seed", type=seed_value, default=0, help="seed of the policy")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="policy option (JSON value), repeatable")
    p.add_argument("--weights", default=None, metavar="FILE",
                   help="weights of a learned policy (dqn: default the shipped agent)")
    p.add_argument("--interval", type=positive_seconds, default=None,
                   help="also wake the policy every N seconds")
    p.add_argument("--batch-only", action="store_true",
                   help="call the policy only at the --interval wake-ups")
    p.add_argument("--locality", default="default",
                   choices=["default", "none", *locality_names()],
                   help="locality slowdown model (default: the problem's own)")
    p.add_argument("--interference", default="default",
                   choices=["default", "none", *interference_names()],
                   help="GPU-sharing interference model (default: the problem's own)")
    p.add_argument("--reference", default="default", choices=["default", "ideal", "packed"],
                   help="duration = time on an ideal or on the packed placement (default: "
                        "packed for trace-derived workloads, else ideal)")
    p.add_argument("--check", default="fast", choices=["fast", "full"],
                   help="check decisions on what they touch (fast) or fully validate "
                        "snapshots (full)")
    p.add_argument("--no-gpu-speed", action="store_true", help="ignore GPU speed attributes")
    p.add_argument("--topology", default=None, metavar="FILE",
                   help="run on this topology graph (.json node-link or .graphml) instead of "
                   "the workload's cluster (docs/formats.md)")
    p.add_argument("--format", default="csv", choices=["csv", "parquet"],
                   help="format of the per-job table")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="output directory")
    p.set_defaults(func=_cmd_simulate)


def _speed(args: argparse.Namespace, workload) -> SpeedModel:
    base = SpeedModel.for_workload(workload)
    loc = base.locality if args.locality == "default" else (
        None if args.locality == "none" else args.locality)
    inter = base.interference if args.interference == "default" else (
        None if args.interference == "none" else args.interference)
    reference = args.reference
    if reference == "default":  # the workload's reading, for the locality model chosen
        reference = base.reference if supports_packed(loc) else "ideal"
    return SpeedModel(locality=loc, interference=inter, gpu_speed=not args.no_gpu_speed,
                      reference=reference)


def _serving(args: argparse.Namespace, workload: Instance) -> int:
    from ..serve.cli import simulate_serving  # the serving simulator loads on use

    return simulate_serving(args, workload)


def _cmd_simulate(args: argparse.Namespace) -> int:
    try:
        workload = load_instance(args.workload)
        check_output(args.out, "--out", directory=True)
        simulator = get_problem(workload.problem).simulator
        if simulator not in SIMULATORS:
            raise InputError(f"problem {workload.problem!r} names simulator {simulator!r}",
                             field="problem", fix=f"use one of {sorted(SIMULATORS)}")
    except InputError as exc:
        return _bad_input(args, exc)
    return SIMULATORS[simulator](args, workload)


def _bad_input(args: argparse.Namespace, exc: InputError) -> int:
    if not exc.source and re.match(r"(jobs|cluster|running|params|time)\b", exc.field):
        exc = exc.with_source(str(args.workload))  # a field of the workload file
    print(f"dlsched simulate: {exc.one_line()}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _simulate_events(args: argparse.Namespace, workload: Instance) -> int:
    """``dlsched simulate`` with the event simulator (:func:`dlsched.simulate`)."""
    try:
        if args.topology:
            workload = check_instance(workload.replace(cluster=load_topology(args.topology)))
        if args.exact_per_event and args.policy not in (None, "exact"):
            raise InputError(f"--exact-per-event replaces the policy, got --policy {args.policy}",
                             field="--policy", fix="leave --policy out or pass --policy exact")
        if not args.exact_per_event and args.policy is None:
            raise InputError("no policy given", field="--policy",
                             fix="pass --policy NAME (dlsched methods) or --exact-per-event")
        if not workload.jobs:
            raise InputError("no jobs", field="jobs", fix="give the workload at least one job",
                             source=str(args.workload))
        if args.interval is not None and args.interval < MIN_INTERVAL:
            raise InputError(f"--interval {args.interval:g}", field="--interval",
                             fix=f"wake the policy at most every {MIN_INTERVAL:g} s")
        if args.batch_only and args.interval is None:
            raise InputError("--batch-only without --interval never calls the policy",
                             field="--batch-only", fix="add --interval SECONDS")
        method = "exact" if args.exact_per_event else args.policy
        options = parse_option_pairs(args.option)
        if args.weights is not None:
            options["weights"] = args.weights
        policy = Policy(method, backend=args.backend, seed=args.seed,
                        time_limit=args.time_limit if args.exact_per_event or args.backend
                        else None, options=options, interval=args.interval,
                        batch_only=args.batch_only)
        speed = _speed(args, workload)
        bar = None
        if not args.no_progress:
            from tqdm import tqdm
            bar = tqdm(total=len(workload.jobs), unit="job", file=sys.stderr,
                       desc=f"{policy.label} on {workload.name or args.workload}")
        try:
            run = simulate(workload, policy, speed, record_events=False, check=args.check,
                           progress=bar.update if bar is not None else None)
        finally:
            if bar is not None:
                bar.close()
        summary = save_results(run, args.out, fmt=args.format, plots=not args.no_plots)
    except InputError as exc:
        return _bad_input(args, exc)
    except SimulationError as exc:
        print(f"dlsched simulate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print_summary(summary, args.out)
    return EXIT_OK


SIMULATORS: dict[str, Callable[[argparse.Namespace, Instance], int]] = {
    "events": _simulate_events, "serving": _serving}
"""The simulators by the name a problem declares (:attr:`dlsched.problems.Problem.simulator`):
each runs the ``dlsched simulate`` command on a loaded workload and returns its exit code."""
