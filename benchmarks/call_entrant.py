"""Run a Python callable entrant of ``dlsched compete`` in its own process.

``python -m dlsched.benchmarks.call_entrant --call module:function INSTANCE SOLUTION LIMIT
[SEED]`` imports ``module``, calls ``function(instance, [time_limit=], [seed=])`` and saves
the decision it returns (or its ``.decision``) as SOLUTION. The competition runner starts
it like any entrant command, so it is limited and killed like one; it imports only what it
needs (no pandas), because its start-up counts against the entrant's time limit.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys

from dlsched.decision import Decision
from dlsched.instance_io import load_instance
from dlsched.solution_io import save_solution


def main(argv: list[str]) -> int:
    """Run the callable named by ``--call`` on INSTANCE; 0 when SOLUTION was written."""
    parser = argparse.ArgumentParser(prog="python -m dlsched.benchmarks.call_entrant")
    parser.add_argument("--call", required=True, help="module:function")
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
    sys.exit(main(sys.argv[1:]))
