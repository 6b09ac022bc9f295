"""GENIE's Tetris baselines (``tetris-perf``, ``tetris-cer``) and their simulator fast form.

The method (``heuristics.genie``'s module docstring): each waiting task's best shape among
those that fit the idle GPUs now, by PR (Eq. 5) or CER (Eq. 11); the task whose best shape
has the most GPUs starts (ties: the earliest in arrival order), the idle GPUs shrink, and
the loop repeats until nothing fits.

**Groups.** A task's best fitting shape depends on the idle GPUs and on its shapes ranked
by the key alone (:func:`ranking`: its class's ``job_rates`` rows, which depend on model,
kind and batch only, sorted by decreasing key, ties to the earlier row). Tasks whose
rankings list the same shapes in the same order therefore have the same best fitting
shape at every step, and the plain scan over all tasks in arrival order (keep the first
task with strictly more GPUs) picks, among them, the earliest. So a step looks at one
task per group, its earliest, and takes the group with the most GPUs, ties to the
earliest of these heads: the same pick as the plain scan (``tests/test_fast_paths_
equivalence.py`` compares with it), at O(groups x shapes) per step instead of
O(queue x shapes). It matters for Tetris+Perf in the GENIE replay, whose queue grows to
thousands of tasks (``benchmarks/trace_replay.py``). A task whose keys hold a NaN (no
order) is a group of its own and scans its option table with :func:`best`.

**Fast form.** :func:`tetris_live` keeps the groups across the calls of one run
(``policy_state``, :class:`TetrisQueue`): a task joins its group when it arrives, in the
simulator's arrival order (submit time, then workload index: the order of the pending
queue, which the snapshot's stable sort on the arrival keeps), and leaves it when this
policy starts it; nothing else takes tasks out of the queue of a view policy. Each call
checks the model against the live queue (its length and its head) and rebuilds the groups
from the queue when they differ, so a call never decides on a wrong queue. The first step
of a call reads the view's servers by idle count (``servers_by_idle``) instead of copying
the idle GPUs into :class:`IdleGpus`: the same counts, the same best-fit order (idle count,
then index); in a replay that one start usually leaves no GPU idle, and only when some are
left does the loop go on with :func:`pack`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from typing import Any

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.method_support import decision_from_indices
from dlsched.problems.genie import genie_table, job_rates, parse_genie_params, platform_of
from dlsched.problems.genie.model import Shape

from .genie_idle import IdleGpus, arrival_order, best
from .genie_live import LiveSnapshot, idle_gpus_of

Ranked = list[tuple[int, int, Shape]]
"""(GPUs per server, servers, shape) of the shapes by decreasing key."""


def _ranked(rows: tuple[tuple[Shape, float, float], ...], by: str) -> Ranked | None:
    """(GPUs per server, servers, shape) of a task's ``job_rates`` rows by decreasing PR
    (``by="pr"``) or CER, ties to the earlier row: the first of these that fits is what
    :func:`best` picks among the fitting options. None when a key is NaN (no total order:
    the caller scans the options with :func:`best`)."""
    k = 1 if by == "pr" else 2
    keys = [r[k] for r in rows]
    if any(x != x for x in keys):
        return None
    # a stable sort with reverse=True keeps equal keys in their original order
    order = sorted(range(len(rows)), key=keys.__getitem__, reverse=True)
    return [(rows[i][0].gpus_per_node, rows[i][0].nodes, rows[i][0]) for i in order]


_RANKED: dict[tuple[int, str], tuple[tuple, Ranked | None]] = {}
"""(id of a class's rows, key) -> (those rows, the shared ranking), across calls."""
_SAME_ORDER: dict[tuple[tuple[int, int], ...], Ranked] = {}
"""Shapes in ranked order -> the one ranking object for every class that ranks them so."""


def ranking(rows: tuple[tuple[Shape, float, float], ...], by: str) -> Ranked | None:
    """:func:`_ranked` of a class's rows, kept per rows object; classes whose rankings list
    the same shapes in the same order get the same list object (one group)."""
    hit = _RANKED.get((id(rows), by))
    if hit is None or hit[0] is not rows:
        ranked = _ranked(rows, by)
        if ranked is not None:
            if len(_SAME_ORDER) >= 4096:
                _SAME_ORDER.clear()
            ranked = _SAME_ORDER.setdefault(tuple((g, n) for g, n, _ in ranked), ranked)
        if len(_RANKED) >= 4096:
            _RANKED.clear()
        hit = _RANKED[(id(rows), by)] = (rows, ranked)
    return hit[1]


class Group:
    """Waiting tasks (their arrival positions, increasing) that share one ranking;
    ``cursor``: the first ranked shape that may still fit in the current call."""

    __slots__ = ("ranked", "tasks", "cursor")

    def __init__(self, ranked: Ranked | None) -> None:
        self.ranked = ranked
        self.tasks: deque[int] = deque()
        self.cursor = 0


Buckets = list[tuple[int, list[tuple[Group, Shape]]]]
"""(GPUs, [(group, its best fitting shape)]) by decreasing GPUs, at one idle state."""


def _buckets(groups: list[Group], ge: list[int]) -> Buckets:
    """The groups by the GPUs of their best fitting shape when ``ge[g]`` servers hold at
    least g idle GPUs; a group with nothing fitting is left out."""
    top = len(ge)
    by: dict[int, list[tuple[Group, Shape]]] = {}
    for g in groups:
        for gpn, nodes, shape in g.ranked:  # type: ignore[union-attr]
            if (ge[gpn] if gpn < top else 0) >= nodes:
                by.setdefault(shape.gpus, []).append((g, shape))
                break
    return sorted(by.items(), key=lambda item: -item[0])


def _first_fit(ranked: Ranked, ge: list[int]) -> Shape | None:
    """The first shape of ``ranked`` that fits (``ge`` as in :func:`_buckets`)."""
    top = len(ge)
    for gpn, nodes, shape in ranked:
        if (ge[gpn] if gpn < top else 0) >= nodes:
            return shape
    return None


Pick = tuple[int, int, Group, Shape]
"""(GPUs, head position, group, shape) of the task Tetris starts next."""


def _pick(groups: Iterable[Group], fit: Callable[[Group], Shape | None]) -> Pick | None:
    """Among ``groups`` holding tasks, the one whose best fitting shape (``fit(group)``,
    None: nothing fits) has the most GPUs, ties to the earliest head."""
    pick = None
    for g in groups:
        if g.tasks:
            shape = fit(g)
            if shape is not None:
                n, head = shape.gpus, g.tasks[0]
                if pick is None or n > pick[0] or (n == pick[0] and head < pick[1]):
                    pick = (n, head, g, shape)
    return pick


def _pick_bucketed(buckets: Buckets) -> Pick | None:
    """:func:`_pick` from the groups by their best fitting shape's GPUs (decreasing)."""
    for n, entries in buckets:
        pick = None
        for g, shape in entries:
            if g.tasks and (pick is None or g.tasks[0] < pick[1]):
                pick = (n, g.tasks[0], g, shape)
        if pick is not None:
            return pick
    return None


Started = list[tuple[int, list[int], Group]]
"""(arrival position, GPU indices, its group) of the tasks started, in start order."""


def pack(groups: list[Group], idle: IdleGpus, memo: dict[tuple[int, ...], Buckets],
         holding: Collection[Group] | None = None) -> Started:
    """Tetris' loop over groups that all have a ranking. ``memo``: :func:`_buckets` of
    ``groups`` per idle state (the caller empties it when the groups change); ``holding``:
    the groups that hold tasks, when the caller knows them (few of them: looked at one by
    one)."""
    if holding is not None and 4 * len(holding) <= len(groups):
        def choose(ge: list[int]) -> Pick | None:
            return _pick(holding, lambda g: _first_fit(g.ranked, ge))  # type: ignore
    else:
        def choose(ge: list[int]) -> Pick | None:
            key = tuple(ge)
            buckets = memo.get(key)
            if buckets is None:
                buckets = memo[key] = _buckets(groups, ge)
            return _pick_bucketed(buckets)
    return _drain(idle, choose)


def _drain(idle: IdleGpus, choose: Callable[[list[int]], Pick | None]) -> Started:
    """Start the task ``choose(idle.servers_at_least())`` picks, again and again, until no
    GPU is idle or it picks none."""
    placed: Started = []
    while True:
        ge = idle.servers_at_least()
        if not ge[1]:  # no idle GPU
            break
        pick = choose(ge)
        if pick is None:
            break
        _, head, g, shape = pick
        g.tasks.popleft()
        placed.append((head, idle.take(shape), g))
    return placed


def pack_scan(groups: list[Group], idle: IdleGpus, nan_shape: Callable[[int], Shape | None]
              ) -> Started:
    """:func:`pack` when some task has no ranking (``nan_shape(position)``: its best
    fitting shape): every group's best fitting shape at every step."""
    # Idle GPUs only shrink within a call: a shape that does not fit never fits again, so
    # a group's cursor only moves forward
    for g in groups:
        g.cursor = 0
    ge: list[int] = []

    def fit(g: Group) -> Shape | None:
        rows = g.ranked
        if rows is None:
            return nan_shape(g.tasks[0])
        c, end, top = g.cursor, len(rows), len(ge)
        while c < end and not ((ge[rows[c][0]] if rows[c][0] < top else 0) >= rows[c][1]):
            c += 1
        g.cursor = c
        return rows[c][2] if c < end else None

    def choose(now: list[int]) -> Pick | None:
        ge[:] = now
        return _pick(groups, fit)
    return _drain(idle, choose)


def tetris(instance: Instance, *, by: str) -> Decision:
    """Tetris packing with the best fitting shape by PR (``by="pr"``) or CER (``"cer"``)."""
    params = parse_genie_params(instance.params)
    platform = platform_of(instance, params.theta)
    coefs = params.coefficients
    jobs = instance.jobs
    order = arrival_order(instance)  # position -> task index
    groups: dict[int, Group] = {}
    for pos, j in enumerate(order):
        ranked = ranking(job_rates(coefs[jobs[j].model], jobs[j], platform), by)
        g = groups.get(id(ranked)) if ranked is not None else None
        if g is None:
            g = Group(ranked)
            # a NaN task is a group of its own (keyed by position: no ranking id clashes
            # with it, since ids of live rankings differ from these small integers)
            groups[id(ranked) if ranked is not None else -1 - pos] = g
        g.tasks.append(pos)
    table = None

    def nan_shape(pos: int) -> Shape | None:
        nonlocal table
        table = table or genie_table(instance)
        key = (lambda o: o.rate) if by == "pr" else (lambda o: o.cer)
        o = best([o for o in table.options[order[pos]] if idle.fits(o.shape)], key)
        return None if o is None else o.shape

    idle = idle_gpus_of(instance)
    listed = list(groups.values())
    if any(g.ranked is None for g in listed):
        started = pack_scan(listed, idle, nan_shape)
    else:
        started = pack(listed, idle, {})
    placed = sorted((order[pos], gpus) for pos, gpus, _ in started)
    return decision_from_indices(instance, placed)


def tetris_perf(instance: Instance) -> Decision:
    return tetris(instance, by="pr")


def tetris_cer(instance: Instance) -> Decision:
    return tetris(instance, by="cer")


# --------------------------------------------------------------------------- fast form
class TetrisQueue:
    """The waiting tasks of one simulation run in :class:`Group` s (module docstring).

    Positions are ranks in the simulator's arrival order (submit time, then index).
    """

    def __init__(self, view: Any, by: str) -> None:
        jobs = view.workload_jobs
        self.jobs = jobs
        self.by = by
        params = parse_genie_params(view.params)
        self.platform = platform_of(view, params.theta)
        self.coefs = params.coefficients
        self.order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, i))
        self.times = [jobs[i].submit_time for i in self.order]
        self.rank = [0] * len(jobs)
        for pos, i in enumerate(self.order):
            self.rank[i] = pos
        self.arrived = 0  # positions below this one have arrived
        self.waiting = bytearray(len(jobs))  # 1 at the positions of the tasks in the groups
        self.low = 0  # no task below this position is waiting
        self.groups: dict[int, Group] = {}
        self.count = 0  # tasks in the groups
        self.nan = 0  # of which without a ranking
        self.memo: dict[tuple[int, ...], Buckets] = {}  # pack()'s, for these groups
        # _first_pick()'s, by the servers with exactly c idle GPUs (other keys than memo's)
        self.by_counts: dict[tuple[int, ...], Buckets] = {}
        self.listed: list[Group] = []  # the groups, as pack() takes them
        self.holding: dict[int, Group] = {}  # the groups that hold tasks
        # ranking per (model, kind, batch): all it depends on in one run (job_rates)
        self.ranked_of: dict[tuple[Any, ...], Ranked | None] = {}

    def _add(self, pos: int) -> None:
        job = self.jobs[self.order[pos]]
        key = (job.model, job.kind, job.batch_size)
        if key in self.ranked_of:
            ranked = self.ranked_of[key]
        else:
            ranked = self.ranked_of[key] = ranking(
                job_rates(self.coefs[job.model], job, self.platform), self.by)
        if ranked is None:
            self.nan += 1
            g = self.groups[-1 - pos] = Group(None)
            self.listed = list(self.groups.values())
            self.holding[-1 - pos] = g
        else:
            g = self.groups.get(id(ranked))
            if g is None:
                g = self.groups[id(ranked)] = Group(ranked)
                self.listed = list(self.groups.values())
                self.memo.clear()
                self.by_counts.clear()
            if not g.tasks:
                self.holding[id(ranked)] = g
        g.tasks.append(pos)
        self.waiting[pos] = 1
        self.count += 1

    def sync(self, view: Any) -> None:
        """Take in the arrivals up to the view's time; rebuild from the live queue when the
        groups do not hold what it holds (same length and head)."""
        t, times, n = view.time, self.times, len(self.times)
        a = self.arrived
        while a < n and times[a] <= t:
            self._add(a)
            a += 1
        self.arrived = a
        if self.count != view.queue_length() or self._head() is not view.head():
            self.groups.clear()
            self.holding.clear()
            self.listed = []
            self.memo.clear()
            self.by_counts.clear()
            self.count = self.nan = self.low = 0
            self.waiting = bytearray(n)
            for i in view.queue_records().tolist():
                self._add(self.rank[i])

    def _head(self) -> Any:
        # tasks arrive in position order and leave only, so the earliest waiting one is
        # never below the last one found (a rebuild starts over)
        low = self.low = self.waiting.find(1, self.low, self.arrived)
        if low < 0:
            self.low = self.arrived
            return None
        return self.jobs[self.order[low]]

    def started(self, started: Started) -> None:
        """Take the tasks :func:`pack` started out of the count and the waiting ones."""
        self.count -= len(started)
        waiting, holding = self.waiting, self.holding
        for pos, _, g in started:
            waiting[pos] = 0
            if not g.tasks:
                holding.pop(id(g.ranked), None)


def _at_least(counts: tuple[int, ...]) -> list[int]:
    """[g] -> servers with at least g idle GPUs, from the servers with exactly c idle
    (``counts[c]``); one entry longer than ``counts`` (its last: 0)."""
    ge = [0] * (len(counts) + 1)
    for c in range(len(counts) - 1, -1, -1):
        ge[c] = ge[c + 1] + counts[c]
    return ge


def _first_pick(queue: TetrisQueue, by_idle: Any) -> Pick | None:
    """The pick of :func:`pack`'s first step, read off the view's servers by idle count
    (``by_idle[c]``: those with c idle GPUs) without building :class:`IdleGpus`."""
    # (pack() scans the holding groups when few hold tasks: the same pick; here the
    # buckets are kept per state across calls, and cheaper to read)
    counts = tuple(map(len, by_idle))
    buckets = queue.by_counts.get(counts)
    if buckets is None:
        if len(queue.by_counts) >= 4096:
            queue.by_counts.clear()
        buckets = queue.by_counts[counts] = _buckets(queue.listed, _at_least(counts))
    return _pick_bucketed(buckets)


def tetris_live(view: Any, *, by: str, policy_state: TetrisQueue | None = None
                ) -> tuple[Decision, TetrisQueue]:
    """:func:`tetris` on the simulator's live view, the groups kept in ``policy_state``."""
    queue = policy_state if policy_state is not None else TetrisQueue(view, by)
    queue.sync(view)
    if queue.nan:
        # NaN keys scan their option table, which needs the snapshot; the groups no
        # longer know which tasks started: the next call rebuilds them from the queue
        decision = tetris(LiveSnapshot(view), by=by)
        queue.count = -1
        return decision, queue
    # The first step reads the live index of servers by idle count (in a replay the one
    # start of a call usually fills the cluster); IdleGpus only when GPUs are left after it
    by_idle = view.servers_by_idle()
    pick = _first_pick(queue, by_idle) if view.idle_count else None
    if pick is None:
        return Decision(), queue
    _, head, g, shape = pick
    g.tasks.popleft()
    gpn, need = shape.gpus_per_node, shape.nodes
    servers: list[int] = []  # best fit: by idle count, then index (IdleGpus.take)
    for level in by_idle[gpn:]:
        if level:
            servers += level[:need - len(servers)]
            if len(servers) == need:
                break
    lists = view.idle_lists()
    gpus = [x for n in servers for x in lists[n][:gpn]]
    started: Started = [(head, gpus, g)]
    if view.idle_count > len(gpus):
        free = list(lists)  # IdleGpus replaces entries, never changes the live lists
        for n in servers:
            free[n] = lists[n][gpn:]
        started += pack(queue.listed, IdleGpus.of_free(free), queue.memo,
                        queue.holding.values())
    queue.started(started)
    ids, jobs, order = view.cluster.gpu_ids.__getitem__, queue.jobs, queue.order
    if len(started) == 1:
        gpus.sort()
        return Decision((Placement(jobs[order[head]].id, tuple(map(ids, gpus))),)), queue
    started.sort(key=lambda item: item[0])
    return Decision.of(Placement(jobs[order[pos]].id, tuple(map(ids, sorted(gpus))))
                       for pos, gpus, _ in started), queue


def live_tetris(name: str, by: str) -> Callable[..., tuple[Decision, TetrisQueue]]:
    """:func:`tetris_live` as a stateful view policy's ``decide``; an input error names
    the policy and the time, as the simulator's policy caller does."""
    def decide(view: Any, *, policy_state: TetrisQueue | None = None
               ) -> tuple[Decision, TetrisQueue]:
        try:
            return tetris_live(view, by=by, policy_state=policy_state)
        except InputError as exc:
            raise InputError(f"policy {name!r} at t = {view.time:g} s: {exc.message}",
                             field=exc.field, fix=exc.fix) from None

    decide.__doc__ = f"``{name}`` on the simulator's live view (module docstring)."
    return decide
