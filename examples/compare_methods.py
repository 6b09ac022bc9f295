"""Compare exact models on two back ends and heuristics on a suite, with profiles.

For an OR researcher: every run goes through the same runner as ``dlsched bench`` (each
decision checked by the independent validator, objective from the problem's evaluator),
and the report gives per-method counts, gaps in the form the problem declares, the
problem's own metrics, and Dolan-Moré time and gap profiles (PNG + CSV).

Run: ``python examples/compare_methods.py [--instances 3] [--time-limit 5] [--out DIR]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from dlsched.benchmarks.library import load_manifest
from dlsched.benchmarks.report import console_table, write_report
from dlsched.benchmarks.runner import BenchSettings, run_bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=3,
                        help="how many Horus instances of the quick suite (default 3)")
    parser.add_argument("--time-limit", type=float, default=5.0,
                        help="seconds per run (default 5)")
    parser.add_argument("--out", default=None, help="output folder (default: a temporary one)")
    args = parser.parse_args(argv)

    manifest = load_manifest("quick")
    names = sorted(n for n in manifest.entries if n.startswith("horus-16x8"))[:args.instances]
    manifest = replace(manifest, entries={n: manifest.entries[n] for n in names})
    settings = BenchSettings(
        # the exact model on two back ends, a heuristic and a baseline rule
        methods=["exact:cbc", "exact:highs", "greedy", "obp"],
        time_limit=args.time_limit, seeds=[0], jobs=1, progress=False)
    out = Path(args.out or tempfile.mkdtemp(prefix="compare-"))
    rows, _ = run_bench(manifest, settings, out / "results.csv")
    print(console_table(rows))
    write_report(rows, out / "report")
    print(f"\nreport with time and gap profiles: {out / 'report' / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
