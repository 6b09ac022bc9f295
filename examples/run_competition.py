"""Run a competition: an external solver (any program) against a built-in heuristic.

The external solver is `external_solver.py` next to this file (standard library only); it
is started once per instance with the instance and solution paths, killed at the time
limit, and its answer is checked by the independent validator and priced by the
problem's evaluator. Scores: 1 = the best value known, 0 = no valid answer
(docs/competition.md).

Run: ``python examples/run_competition.py [--instances 2] [--out DIR]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from dlsched.benchmarks.compete import compete, parse_entrant
from dlsched.benchmarks.library import load_manifest
from dlsched.benchmarks.report import frame_table

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=2,
                        help="how many Horus instances of the quick suite (default 2)")
    parser.add_argument("--time-limit", type=float, default=20.0,
                        help="seconds per run (default 20)")
    parser.add_argument("--out", default=None, help="output folder (default: a temporary one)")
    args = parser.parse_args(argv)

    manifest = load_manifest("quick")  # the suite shipped in instances/library/quick
    names = sorted(n for n in manifest.entries if n.startswith("horus-16x8"))[:args.instances]
    manifest = replace(manifest, entries={n: manifest.entries[n] for n in names})
    entrants = [
        # an external program: placeholders are filled per run
        parse_entrant(f"{sys.executable} {HERE / 'external_solver.py'} {{instance}} "
                      "{solution}", "external-first-fit"),
        # the package's own greedy heuristic, as a Python callable in a subprocess
        # the package's greedy heuristic through the dlsched command line
        parse_entrant(f"{sys.executable} -m dlsched.cli solve {{instance}} --method greedy "
                      "-o {solution}", "dlsched-greedy"),
    ]
    out = Path(args.out or tempfile.mkdtemp(prefix="compete-"))
    board, notes = compete(manifest, entrants, out, time_limit=args.time_limit,
                           progress=False)
    print(frame_table(board, ".4f"))
    for note in notes:
        print(note)
    print(f"per-run files in {out / 'runs'}; scores in {out / 'scores.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
