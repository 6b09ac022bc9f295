"""A cluster scheduler that calls ``dlsched.solve`` at every scheduling event.

At each event (a job arrives, a job ends) the scheduler builds a snapshot of its cluster
— the running jobs and the pending queue, as a :class:`dlsched.Instance` — and asks the
exact Horus model for a placement within a hard time limit. The fallback is chosen here,
explicitly: when the exact model returns no decision in time (or fails), the scheduler
calls the greedy heuristic and says so. ``dlsched`` itself never switches methods
silently.

Here the snapshots come from the Horus generator (one per event, seeds 0, 1, ...); a real
scheduler would fill the same fields from its cluster state.

Run: ``python examples/scheduler_loop.py [--events 3] [--time-limit 2] [--nodes 4]``
"""

from __future__ import annotations

import argparse
import sys

import dlsched
from dlsched.registry import generators


def decide(snapshot: dlsched.Instance, time_limit: float) -> tuple[dlsched.Result, str]:
    """The decision for one event: exact within ``time_limit``, else greedy (stated).

    Parameters
    ----------
    snapshot
        The cluster at the event.
    time_limit
        Seconds the exact model may use.

    Returns
    -------
    (Result, str)
        The result applied and which method produced it (with the reason for a fallback).
    """
    exact = dlsched.solve(snapshot, "exact", backend="highs", time_limit=time_limit)
    if exact.decision is not None:
        return exact, f"exact ({exact.status.value})"
    greedy = dlsched.solve(snapshot, "greedy")
    return greedy, f"greedy: fallback, exact gave {exact.status.value} {exact.message}".strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3, help="events to handle (default 3)")
    parser.add_argument("--time-limit", type=float, default=2.0,
                        help="seconds for the exact model per event (default 2)")
    parser.add_argument("--nodes", type=int, default=4, help="servers of 8 GPUs (default 4)")
    args = parser.parse_args(argv)

    build = generators()["horus"].build
    for event in range(args.events):
        snapshot = build(seed=event, nodes=args.nodes, busy=0.6)
        result, how = decide(snapshot, args.time_limit)
        report = dlsched.validate(snapshot, result.decision)  # independent check
        placed = len(result.decision.placements)
        print(f"event {event}: {len(snapshot.jobs)} pending, placed {placed} by {how}, "
              f"objective {result.objective:.4g}, {result.wall_time:.3f} s, "
              f"valid={report.ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
