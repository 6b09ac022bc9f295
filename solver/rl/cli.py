"""``dlsched rl train PROBLEM ...`` and ``dlsched rl evaluate PROBLEM ...``.

Trainers are listed in :data:`TRAINERS`: problem name → its command module, which provides
``add_train_arguments(parser)``, ``add_evaluate_arguments(parser)``, ``train_command(args)``
and ``evaluate_command(args)`` (each returning an exit code; torch is imported only when
they run). Add a problem with one line.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType

from ..cli_support import EXIT_BAD_INPUT, Parser
from ..errors import InputError
from . import inference_cli, sched2_cli

TRAINERS: dict[str, ModuleType] = {
    "inference": inference_cli,
    "sched2": sched2_cli,
}


def _module(problem: str) -> ModuleType:
    return TRAINERS[problem]


def add_commands(subparsers) -> None:
    """Add ``rl train PROBLEM`` and ``rl evaluate PROBLEM``."""
    rl = subparsers.add_parser("rl", help="train or evaluate a learned scheduler")
    rl_sub = rl.add_subparsers(dest="rl_command", required=True, parser_class=Parser)
    for verb, text in (("train", "train a learned policy (needs the rl extra: torch)"),
                       ("evaluate", "run a trained policy on workloads")):
        p = rl_sub.add_parser(verb, help=text, description=text)
        probs = p.add_subparsers(dest="problem", required=True, parser_class=Parser)
        for problem in TRAINERS:
            sp = probs.add_parser(problem, help=f"{verb} for problem {problem}")
            mod = _module(problem)
            getattr(mod, f"add_{verb}_arguments")(sp)
            sp.set_defaults(func=_run, rl_verb=verb)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(getattr(_module(args.problem), f"{args.rl_verb}_command")(args))
    except InputError as exc:
        print(f"dlsched rl {args.rl_verb}: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
