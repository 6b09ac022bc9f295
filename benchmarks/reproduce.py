"""``dlsched reproduce PAPER``: each paper's headline claims, in its own stated setting.

For every claim the paper makes (cited by table or figure, kept as data with its quote in
``benchmarks/claims/<paper>.toml``: :mod:`dlsched.benchmarks.paper_claims`), the
experiment runs the paper's stated setting over several seeds in the simulator (or on
snapshots) and reports dlsched's number next to the paper's (a row:
:mod:`dlsched.benchmarks.claim_rows`): ``headline`` rows in the stated setting,
``sensitivity`` rows under the other reading of what the paper leaves open, ``ablation``
rows that change one modelling choice where a headline misses, and ``beyond`` rows that
measure the paper's winner and its best baseline against a proven optimum. ``--quick``
shrinks every workload; its rows are ``smoke`` rows without a verdict.

One module per paper: ``reproduce_horus``, ``reproduce_genie``, ``reproduce_liquid``,
``reproduce_sched2``, ``reproduce_inference``; the readings are in ``docs/reproduce.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .claim_rows import Row, as_smoke
from .reproduce_genie import genie
from .reproduce_horus import horus
from .reproduce_inference import inference
from .reproduce_liquid import liquid
from .reproduce_sched2 import sched2

EXPERIMENTS: dict[str, Callable[[int, bool], list[Row]]] = {
    "horus": horus, "genie": genie, "liquid": liquid, "sched2": sched2,
    "inference": inference}
SEEDS = {"horus": 5, "genie": 3, "liquid": 3, "sched2": 3, "inference": 3}
"""Seeds of a full run: the paper's runs where it states them (Horus: five; GENIE: three)."""


def reproduce(paper: str, *, seeds: int | None = None, quick: bool = False) -> list[Row]:
    """One paper's rows; ``quick`` shrinks every workload and marks the rows ``smoke``."""
    rows = EXPERIMENTS[paper](SEEDS[paper] if seeds is None else seeds, quick)
    return as_smoke(rows) if quick else rows


def timed(paper: str, seeds: int | None, quick: bool) -> tuple[list[Row], float]:
    """:func:`reproduce` and its CPU seconds (this process)."""
    start = time.process_time()
    rows = reproduce(paper, seeds=seeds, quick=quick)
    return rows, time.process_time() - start
