"""Warm starts that obey a model's symmetry rows.

The exact models break symmetry between interchangeable resources (GPUs, servers) by
ordering them — the first of a run carries at least as much as the next. A warm start
taken from a heuristic ignores that order, so the solvers find it infeasible and drop it.
Interchangeable resources can swap what they carry without changing anything else, so
the fix is a relabelling: within each run, the members sorted by the model's order key
take the run's places in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence


def chained_runs(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Runs ``[a, b, c, ...]`` from consecutive pairs ``(a, b), (b, c), ...``."""
    nxt = dict(pairs)
    runs = []
    for head in sorted(set(nxt) - set(nxt.values())):
        run = [head]
        while run[-1] in nxt:
            run.append(nxt[run[-1]])
        runs.append(run)
    return runs


def relabel_in_runs(runs: Iterable[Sequence[int]], key: Callable[[int], Hashable], *,
                    largest_first: bool = True) -> dict[int, int]:
    """Old label -> new label: in each run the members ordered by ``key`` (largest first,
    or smallest first) take the run's places in order (ties keep their order)."""
    mapping: dict[int, int] = {}
    for run in runs:
        order = sorted(run, key=key, reverse=largest_first)
        mapping.update({old: new for new, old in zip(run, order, strict=True)})
    return mapping
