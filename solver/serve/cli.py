"""``dlsched simulate W --policy fixed|heuristic|pg|exact-window`` with the serving simulator.

Called by ``dlsched.simulate.cli`` for a problem whose ``simulator`` is ``"serving"``
(``inference``); it reads the same arguments (``--policy``, ``--seed``, ``--option``,
``--time-limit``, ``--format``, ``--no-plots``, ``--out``). Options: ``noise_cv=X`` (delay
noise; default the workload's ``delay_cv``), the policy method's options (``alpha``,
``beta``, ``max_batch``, ``weights``, ...: ``dlsched methods``), and for
``exact-window``: ``window=N`` queries per window (200).

``exact-window`` is an offline oracle: the stream is cut into consecutive windows of N
queries, each solved by the exact model with the GPUs free when the previous window's
batches end; queries a window leaves unserved are dropped. Each window gets
``--time-limit`` seconds; its status (optimal or not) is counted in the summary.
"""

from __future__ import annotations

import argparse
import sys

from ..cli_support import EXIT_BAD_INPUT, EXIT_OK, parse_option_pairs, print_summary
from ..errors import InputError
from ..instance import Instance
from .metrics import save_serving_results
from .run import POLICIES, run_policy


def simulate_serving(args: argparse.Namespace, workload: Instance) -> int:
    """The ``dlsched simulate`` command with the serving simulator."""
    try:
        if args.policy is None:
            raise InputError("no policy given", field="--policy",
                             fix=f"pass --policy {'|'.join(POLICIES)}")
        run, extra = run_policy(workload, args.policy, parse_option_pairs(args.option),
                                seed=args.seed, time_limit=args.time_limit)
        summary = save_serving_results(run, args.out, fmt=args.format, plots=not args.no_plots)
        summary.update(extra)
    except InputError as exc:
        print(f"dlsched simulate: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print_summary(summary, args.out)
    return EXIT_OK

