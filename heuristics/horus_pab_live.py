"""PAB's fast form for the simulator: the round of :func:`~.horus_pab.pab` on the live view.

It reads what the snapshot method reads, off the simulator's live view instead of a rebuilt
snapshot (``dlsched.state.ViewPolicy``): the loads (``SimView.loads``, the arrays a
snapshot is seeded with), the pending jobs in queue order and their columns, and the
running jobs' rate factors and GPUs (``SimView.running``). Its state (the open probes, the
requeued jobs that wait) is kept in place between calls, and it returns the simulator's
requeue hook (``requeue``, ``watch_at``) as the snapshot method does: the same decisions,
requeues and watches (``tests/test_pab_live.py`` compares the two, call by call and whole
runs). Its start guard (:func:`can_start`) skips only the calls that would change nothing.

The default round (``serial``: at most one placement) on a queue without CPU or RAM
shares: the first job in queue order whose share fits the free memory of ``num_gpus``
usable GPUs (idle GPUs only for a requeued job; never the GPUs of a job requeued in this
round) is the one the snapshot's walk places, on the usable GPUs with the most free
memory (ties: lower index). On a cluster whose GPUs all hold the same memory it is read
off the view's free-memory order and idle lists (:func:`_first_fit_live`), else made in a
few numpy steps on the loads (:func:`_first_fit`). Other rounds run the snapshot's walk
(:func:`~.horus_pab_round.place`) on the same loads. ``horus_pab`` registers it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.state import EPS, ClusterState

from .horus import _plan, _top_k
from .horus_live import Pending
from .horus_pab_round import blocked_gpus, check_settings, judge, place, speeds_before


class _Memory:
    """What the fast form keeps between calls: the open probes (as the snapshot method's
    ``policy_state``) and the requeued jobs that wait, as ids and as a mask over the
    workload's records (``flags``); and, per record, each job's share of GPU memory minus
    EPS and GPU count (``horus._plan``'s numbers, read for the whole workload once)."""

    __slots__ = ("probes", "requeued", "flags", "waiting", "record_of", "mem", "need",
                 "shares", "no_gpus", "plain", "low_l", "need_l", "counts", "cap", "gpus")

    def __init__(self, view: Any) -> None:
        self.probes: dict[str, list] = {}
        self.requeued: set[str] = set()
        columns = view.workload_columns
        self.flags = np.zeros(len(view.workload_jobs), dtype=bool)
        self.record_of: dict[str, int] = {}  # job id -> record (else at the first requeue)
        self.mem = columns("gpu_mem_gb", 0.0) - EPS
        self.need = columns("num_gpus")
        # some job has CPU or RAM shares (its queue's rounds take the snapshot's walk)
        self.shares = bool(((columns("cpu_per_gpu", 0.0) > 0)
                            | (columns("ram_gb_per_gpu", 0.0) > 0)).any())
        self.no_gpus = not bool((self.need >= 1).all())  # some job asks no GPUs (or None)
        self.waiting: set[int] = set()  # the records of ``flags``
        # the serial round's queue walk (:func:`_first_fit_live`) applies: no shares, every
        # job asks GPUs, one memory size, servers in GPU index order (module docstring)
        c = view.cluster
        cap = c.gpu_mem_gb
        self.plain = (not self.shares and not self.no_gpus and len(cap) > 0
                      and bool((cap == cap[0]).all())
                      and bool((np.diff(c.gpu_node) >= 0).all()))
        self.cap = float(cap[0]) if len(cap) else 0.0
        self.gpus = len(cap)
        if self.plain:
            self.record_of = {job.id: r for r, job in enumerate(view.workload_jobs)}
            self.low_l: list[float] = self.mem.tolist()
            self.need_l: list[int] = self.need.astype(np.int64).tolist()
            self.counts = sorted(set(self.need_l))


def pab_live(view: Any, *, warmup_s: float = 60.0, threshold: float = 0.5,
             serial: bool = True, policy_state: _Memory | None = None
             ) -> tuple[Decision, _Memory, dict[str, Any]]:
    """``pab`` on the live view: ``(decision, state for the next call, extra)`` with
    ``extra`` the requeue hook (``requeue``, ``watch_at``); module docstring."""
    check_settings(warmup_s, threshold)
    memory = _Memory(view) if policy_state is None else policy_state
    probes = memory.probes
    t = view.time
    running = view.running()  # read per job or GPU, never built whole here
    requeue = judge(probes, t, running.rate_factor, threshold) if probes else []
    if requeue:
        if not memory.record_of:
            memory.record_of = {job.id: r for r, job in enumerate(view.workload_jobs)}
        memory.requeued.update(requeue)
        rows = [memory.record_of[job_id] for job_id in requeue]
        memory.flags[rows] = True
        memory.waiting.update(rows)
    decision = _NOTHING
    if not (serial and probes):
        opened = None  # the probes the walk recorded (else: recorded below)
        if serial and memory.plain:
            found = _first_fit_live(view, memory, _held(running, requeue) if requeue else None)
            placed = [] if found is None else [found]
        else:
            records = view.queue_records()
            at, opened = _round(view, records, memory, requeue, serial, running)
            placed = [(int(records[j]), gpus) for j, gpus in at]
            for job_id, before in opened.items():
                probes[job_id] = [t + warmup_s, before]
        if placed:
            jobs, ids = view.workload_jobs, view.cluster.gpu_ids
            factor, jobs_on = running.rate_factor, running.jobs_on
            out = []
            for r, gpus in placed:
                job_id = jobs[r].id
                if opened is None:  # one placement: the speeds before, of the jobs joined
                    others = set(jobs_on(gpus[0])) if len(gpus) == 1 else {
                        o for g in gpus for o in jobs_on(g)}
                    probes[job_id] = [t + warmup_s, speeds_before(others, factor)]
                # GPU ids in ascending index order, as a snapshot's decision has them
                out.append(Placement(job_id, (ids[gpus[0]],) if len(gpus) == 1 else
                                     tuple(ids[g] for g in sorted(gpus))))
            decision = Decision(tuple(out))
            waiting = memory.waiting  # the records of the requeued jobs (same jobs)
            rows = [r for r, _ in placed if r in waiting] if waiting else None
            if rows:
                memory.flags[rows] = False
                waiting.difference_update(rows)
                memory.requeued.difference_update(jobs[r].id for r in rows)
    if not probes:
        return decision, memory, {"requeue": requeue}
    if len(probes) == 1:
        for check_at, _ in probes.values():
            return decision, memory, {"requeue": requeue, "watch_at": check_at}
    return decision, memory, {"requeue": requeue,
                              "watch_at": min(p[0] for p in probes.values())}


_NOTHING = Decision()  # frozen: one for every call that places nothing


def _round(view: Any, records: np.ndarray, memory: _Memory, requeue: list[str],
           serial: bool, running: Any
           ) -> tuple[list[tuple[int, list[int]]], dict[str, dict[str, float]]]:
    """The placements of one round (queue positions, GPU indices) and the probes they
    open (``pab``'s ``place``)."""
    if not len(records):
        return [], {}
    waiting = memory.flags[records] if memory.requeued else None
    c = view.cluster
    blocked = blocked_gpus(c.num_gpus, requeue, running, {}) if requeue else None
    a = view.loads(copy=False)  # read only: the walk below gets copies
    busy = a["gpu_busy"]
    free = c.gpu_mem_gb - a["gpu_usage"][1]  # a new array
    need = memory.need[records]
    columns = view.queue_columns() if memory.shares or not serial else None
    if (not serial or (columns is not None and _plan(columns)[3])
            or (memory.no_gpus and not (need >= 1).all())):
        # the walk: with server room to respect, or a job asking no GPUs (it fails the
        # walk, and its failed shape then rules out the later jobs asking as much memory)
        columns = view.queue_columns() if columns is None else columns
        cpu, ram = a["node_usage"]
        state = ClusterState(cluster=c, free_mem=free, util=a["gpu_usage"][0].copy(),
                             free_cpu=c.node_cpu - cpu, free_ram=c.node_ram_gb - ram,
                             busy=busy.copy())

        def holders() -> Any:
            return lambda g: list(running.jobs_on(g))

        return place(state, Pending(records, view.workload_jobs), columns, waiting, serial,
                     running.rate_factor, holders, blocked)
    found = _first_fit(free, busy, memory.mem[records], need, waiting, blocked)
    if found is None:
        return [], {}
    j, chosen = found
    return [found], _opened(view, (int(records[j]), chosen), running)


def _opened(view: Any, found: tuple[int, list[int]], running: Any
            ) -> dict[str, dict[str, float]]:
    """The probe a placement ``(record, GPU indices)`` opens (``place``'s record)."""
    r, chosen = found
    others = {o for g in chosen for o in running.jobs_on(g)}
    return {view.workload_jobs[r].id: speeds_before(others, running.rate_factor)}


def _held(running: Any, jobs: list[str]) -> set[int]:
    """The GPUs of running ``jobs`` (``blocked_gpus`` as a set)."""
    out: set[int] = set()
    for job_id in jobs:
        out.update(running.gpus_of(job_id) or ())
    return out


_SCAN = 32  # queue entries tried one by one before the rest is tested in numpy


def _first_fit_live(view: Any, memory: _Memory, blocked: set[int] | None = None
                    ) -> tuple[int, list[int]] | None:
    """:func:`_first_fit` on the view's orders instead of arrays: ``(record, GPU
    indices)`` of the first job in queue order that finds GPUs, or None. ``blocked``: the
    GPUs of the jobs requeued in this round (held by them still, so never idle).

    ``memory.plain`` holds: one memory size C on every GPU, every job asks GPUs, no CPU
    or RAM shares, servers in GPU index order. Then a job that does not wait finds GPUs
    exactly when the ``num_gpus``-th largest free memory (``SimView.free_memory_order``)
    is at least its share minus EPS, and takes the GPUs that head that order (the most
    free memory, ties by index: ``_take``'s choice); a requeued job that waits finds them
    when ``num_gpus`` GPUs are idle and C is at least its share minus EPS (an idle GPU's
    free memory is C: its memory in use is reset to 0.0), and takes the idle GPUs of
    lowest index (all tie at C). While no busy GPU has C free
    (``SimView.busy_at_full_memory``) the order starts with exactly the idle GPUs, by
    index (the blocked GPUs are busy: not among them), so for ``num_gpus`` at most the
    idle count the two cases take the same GPUs and the order is not read.
    ``tests/test_horus_fast_paths.py`` compares it with :func:`_first_fit` on random
    loads.
    """
    head = view.head()
    if head is None:
        return None
    idle = view.idle_count
    # the order's leading entries known to be the idle GPUs (none to know when none idle)
    top = idle if idle and not view.busy_at_full_memory() else 0
    gpus = memory.gpus - len(blocked) if blocked else memory.gpus
    keys = None  # the order (without the blocked GPUs), read only when needed
    cap = memory.cap
    waiting = memory.waiting
    need_l, low_l = memory.need_l, memory.low_l
    r = memory.record_of[head.id]  # the head first: most rounds place it (no queue array)
    n = need_l[r]
    if n <= gpus:
        if waiting and r in waiting or n <= top:
            if n <= idle and cap >= low_l[r]:
                return r, _lowest_idle(view, n)
        else:
            keys = _order(view, memory, blocked)
            if -keys[n - 1][0] >= low_l[r]:
                return r, [g for _, g in keys[:n]]
    records = view.queue_records()
    if waiting and idle < memory.counts[0]:  # no requeued job finds idle GPUs: the others
        records = records[~memory.flags[records]]
        waiting = None
    for r in records[:_SCAN].tolist():
        n = need_l[r]
        if n > gpus:
            continue
        if waiting and r in waiting or n <= top:
            if n <= idle and cap >= low_l[r]:
                return r, _lowest_idle(view, n)
        else:
            if keys is None:
                keys = _order(view, memory, blocked)
            if -keys[n - 1][0] >= low_l[r]:
                return r, [g for _, g in keys[:n]]
    if len(records) <= _SCAN:
        return None
    rest = records[_SCAN:]
    lut = np.full(gpus + 2, -np.inf)  # entry n: the n-th largest free memory (-inf past)
    for n in memory.counts:
        if n <= top:
            lut[n] = cap
        elif n <= gpus:
            if keys is None:
                keys = _order(view, memory, blocked)
            lut[n] = -keys[n - 1][0]
    need = np.minimum(memory.need[rest], gpus + 1).astype(np.int64)
    low = memory.mem[rest]
    ok = lut[need] >= low
    if waiting:
        ok = np.where(memory.flags[rest], (need <= idle) & (cap >= low), ok)
    h = int(ok.argmax())
    if not ok[h]:
        return None
    r = int(rest[h])
    n = need_l[r]
    if waiting and r in waiting or n <= top:
        return r, _lowest_idle(view, n)
    return r, [g for _, g in keys[:n]]  # type: ignore[index]


def _order(view: Any, memory: _Memory, blocked: set[int] | None
           ) -> list[tuple[float, int]]:
    """The free-memory order without the ``blocked`` GPUs, as far as a job can ask."""
    keys = view.free_memory_order()
    if not blocked:
        return keys
    return [k for k in keys[:memory.counts[-1] + len(blocked)] if k[1] not in blocked]


def _lowest_idle(view: Any, n: int) -> list[int]:
    """The ``n`` idle GPUs of lowest index (``n`` at most the idle count; servers hold
    ascending ranges of GPU indices)."""
    out: list[int] = []
    lists = view.idle_lists()
    for s in view.open_servers():
        out.extend(lists[s][:n - len(out)])
        if len(out) == n:
            break
    return out


def _first_fit(free: np.ndarray, busy: np.ndarray, mem: np.ndarray, need: np.ndarray,
               waiting: np.ndarray | None, blocked: np.ndarray | None
               ) -> tuple[int, list[int]] | None:
    """The serial round without CPU or RAM shares: ``(queue position, GPU indices)`` of
    the first job that finds GPUs, or None.

    ``free``: free memory per GPU; ``mem``: each job's share minus EPS, ``need``: its GPU
    count (``horus._plan``'s numbers); ``waiting``: the requeued jobs (idle GPUs only);
    ``blocked``: GPUs nobody may take; every job asks at least one GPU. Without server
    room to respect, the walk finds GPUs for a job exactly when ``need`` usable GPUs have
    ``free >= mem``, and takes the usable ones with the most free memory (ties: lower
    index).
    """
    head_waits = waiting is not None and bool(waiting[0])
    fits = _usable(free, busy, mem[0], head_waits, blocked)
    if np.count_nonzero(fits) >= need[0]:  # the head fits (half of the rounds of a trace)
        return 0, _take(free, fits, int(need[0]), blocked is None and not head_waits)
    most = int(need.max())
    ok = _enough(free if blocked is None else free[~blocked], mem, need, most)
    if waiting is not None:
        idle = ~busy if blocked is None else ~busy & ~blocked
        ok = np.where(waiting, _enough(free[idle], mem, need, most), ok)
    j = int(ok.argmax())
    if not ok[j]:
        return None
    waits = waiting is not None and bool(waiting[j])
    fits = _usable(free, busy, mem[j], waits, blocked)
    return j, _take(free, fits, int(need[j]), blocked is None and not waits)


def _enough(values: np.ndarray, mem: np.ndarray, need: np.ndarray, most: int
            ) -> np.ndarray:
    """Per job: at least ``need`` of ``values`` are ``>= mem`` (``most``: the largest
    ``need``). Only the ``most`` largest values can tell: no full sort."""
    if len(values) == 0:
        return np.zeros(len(mem), dtype=bool)
    if most == 1:
        return values.max() >= mem
    if most < len(values):
        values = np.partition(values, len(values) - most)[len(values) - most:]
    top = np.sort(values)
    return len(top) - top.searchsorted(mem) >= need


def _usable(free: np.ndarray, busy: np.ndarray, mem: float, idle_only: bool,
            blocked: np.ndarray | None) -> np.ndarray:
    """The GPUs a job may take: its share fits (``mem``: minus EPS), idle ones only for a
    requeued job, none blocked."""
    fits = free >= mem
    if idle_only:
        fits &= ~busy
    if blocked is not None:
        fits &= ~blocked
    return fits


def _take(free: np.ndarray, fits: np.ndarray, k: int, everywhere: bool) -> list[int]:
    """The ``k`` GPUs of ``fits`` with the most free memory, ties by index (``fits`` holds
    at least ``k``; ``everywhere``: any ``k`` GPUs with the most free memory are in it)."""
    if everywhere:
        return [int(free.argmax())] if k == 1 else _top_k(-free, None, k)
    candidates = np.flatnonzero(fits)
    if k == 1:  # argmax: the first of the largest
        return [int(candidates[free[candidates].argmax()])]
    return _top_k(-free[candidates], candidates, k)


def can_start(view: Any, *, policy_state: _Memory | None = None, serial: bool = True,
              **options: Any) -> bool:
    """PAB's start guard: False only for a serial round with a probe open and none due.

    Such a call judges nothing, places nothing and returns its state unchanged; what it
    would add is a watch at the time of the open probe, which the simulator already holds
    (the call that opened the probe asked for it). So the schedule is the same with fewer
    calls and without those repeated wake-ups.
    """
    if policy_state is None or not serial or not policy_state.probes:
        return True
    t = view.time + EPS
    return any(p[0] <= t for p in policy_state.probes.values())

