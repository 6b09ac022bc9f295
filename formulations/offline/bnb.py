"""Exact branch and bound for the offline weighted-completion-time schedule.

It works on the same integer data as the CP-SAT model (:class:`.data.OfflineData`: releases,
per-mode durations, per-server GPU counts) and minimizes ``Σ w_j end_j``, the CP-SAT
objective, so a complete search proves the same optimum (on an exact grid: the real one).

**Branching** (serial schedule generation in start order). A node is a partial schedule
whose jobs were placed in non-decreasing start order; the state that matters for the rest
is the last start ``t`` and, per server, the free times of its GPUs (every later job
starts at or after ``t``, so GPUs free by then are interchangeable). A child places one
unscheduled job j in one mode at its earliest start ``EST ≥ max(r_j, t)`` where the
mode's GPUs are free on each server. Every optimal schedule σ* with the least sum of
starts is generated: sorted by (start, index), each job's earliest start is never later
than in σ* (jobs placed before it start and end no later, so they occupy less of its
interval) and not earlier (that would give an optimal schedule with a smaller sum of
starts).

**Dominance rules** (each keeps σ*'s path, so the search stays complete):

* *active*: job j is not placed next if another job k (some mode) can end by j's start,
  ``ECT_k ≤ EST_j``: putting k there ends it earlier and frees its later slot, and no
  later job starts before ``EST_j``; σ* would not be optimal-with-least-starts.
* *ties*: a job starting exactly at ``t`` comes after the previous job only with a larger
  index (σ*'s order is by (start, index)).
* *symmetric children*: two children of the same job with the same start and the same
  state up to permuting interchangeable servers have the same best completion; one is kept.
* *memo*: a node B is dropped when an earlier node A scheduled the same jobs with
  ``cost_A ≤ cost_B``, ``t_A ≤ t_B`` (equal: previous index of A ≤ B's) and GPU free
  times (servers of a class sorted, clipped at ``t_B``) componentwise no later: every
  completion of B is a completion of A, which was searched before.

**Bounds** on the cost of the unscheduled set U (a node is cut when ``cost + bound`` is
more than the incumbent − 1: objectives are integers):

* *individual*: ``Σ w_j ECT_j`` (each job's earliest end in the current state).
* *ranks* (equal weights): the k-th smallest end of any completion is at least the k-th
  smallest ECT and at least the k-th completion of SRPT on one machine whose speed is the
  number of free GPUs at each time, with job sizes = least GPU-seconds and each job
  available from its earliest start (SRPT completes at least as many jobs as any
  preemptive schedule by every time; every real schedule is one); the bound is the sum
  over k of the larger of the two.
* *barrier* (equal weights): a job b that uses every GPU in every mode runs alone, so each
  other job j ends by b's start τ or starts after ``τ + p_b``. For τ in an interval
  [a, a'), a bound is ``a + p_b + Σ_j (ECT_j if ECT_j ≤ a else max(ECT_j, a + p_b + p_j))``
  plus, when the jobs counted before b need more GPU-seconds than the free GPUs offer in
  [t, a'), the fractional-knapsack cost of moving that excess after b; the least over a
  grid of intervals covering [EST_b, ∞) bounds the cost.

The search is depth first (children by earliest end) and stops at its time limit; only a
finished search proves anything.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from operator import le

from .data import OfflineData

MEMO_STATES = 24
"""Most states kept per set of scheduled jobs for the memo rule (the latest ones)."""
MEMO_SETS = 500_000
"""Most sets of scheduled jobs the memo rule remembers (bounds its memory)."""
MAX_JOBS = 200
"""Largest workload the search takes (recursion depth = jobs)."""


@dataclass
class BnbResult:
    """Outcome of :func:`branch_and_bound`.

    ``value``: the best objective found below the cutoff (None: none found);
    ``picks``: job index -> (start in grid units, mode index) of that schedule;
    ``complete``: the search finished, so ``min(value, cutoff)`` is the optimum;
    ``nodes``: nodes visited.
    """

    value: int | None
    picks: dict[int, tuple[int, int]] = field(default_factory=dict)
    complete: bool = False
    nodes: int = 0


class _TimeUp(Exception):
    pass


class _Search:
    """One branch-and-bound run (state in attributes, recursion in :meth:`node`)."""

    def __init__(self, data: OfflineData, cutoff: int | None, time_limit: float | None
                 ) -> None:
        d = data
        self.n = d.num_jobs
        self.rel = d.release
        self.w = d.weights
        self.modes = [[(tuple((s, k) for s, k in enumerate(m.counts) if k), dur)
                       for m, dur in zip(d.modes[j], d.durations[j], strict=True)]
                      for j in range(self.n)]
        total = sum(d.capacity)
        self.energy = [min(m.gpus * dur for m, dur in zip(d.modes[j], d.durations[j],
                                                           strict=True))
                       for j in range(self.n)]
        self.minp = [min(d.durations[j]) for j in range(self.n)]
        self.barrier = [all(m.gpus == total for m in d.modes[j]) for j in range(self.n)]
        # the distinct GPU needs of all modes: a node computes, once per need, when its
        # GPUs are free (many jobs share needs)
        needs = sorted({need for ms in self.modes for need, _dur in ms})
        self.needs = needs
        need_id = {need: i for i, need in enumerate(needs)}
        self.mode_needs = [[(need_id[need], dur) for need, dur in ms] for ms in self.modes]
        self.equal_w = len(set(self.w)) == 1
        self.classes = [g for g in d.server_classes()]
        self.one_class = self.classes == [list(range(len(d.capacity)))]
        self.capacity = d.capacity
        self.best = cutoff
        self.best_picks: dict[int, tuple[int, int]] = {}
        self.found = False
        self.nodes = 0
        self.memo: dict[int, list] = {}
        self.stop = None if time_limit is None else time.perf_counter() + time_limit

    # ------------------------------------------------------------------ helpers
    def canon(self, free: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
        """Free times with the servers of each interchangeable class sorted."""
        if not self.classes:
            return free
        if self.one_class:
            return tuple(sorted(free))
        out = list(free)
        for group in self.classes:
            for s, v in zip(group, sorted(free[s] for s in group), strict=True):
                out[s] = v
        return tuple(out)

    def srpt_ends(self, steps: list[int], t: int, est: dict[int, int]) -> list[float]:
        """Completion times of SRPT on one machine of speed = GPUs free (sorted), each job
        available from its earliest start ``est``."""
        jobs = sorted((s, self.energy[j]) for j, s in est.items())
        ns, nj = len(steps), len(jobs)
        now, si, ji = t, 0, 0
        while si < ns and steps[si] <= now:
            si += 1
        heap: list[float] = []
        out: list[float] = []
        while ji < nj or heap:
            if not heap and jobs[ji][0] > now:
                now = jobs[ji][0]
                while si < ns and steps[si] <= now:
                    si += 1
            while ji < nj and jobs[ji][0] <= now:
                heapq.heappush(heap, jobs[ji][1])
                ji += 1
            if si == 0:  # no GPU free yet: wait for the first
                now = steps[0]
                while si < ns and steps[si] <= now:
                    si += 1
                continue
            nxt = jobs[ji][0] if ji < nj else None
            if si < ns and (nxt is None or steps[si] < nxt):
                nxt = steps[si]
            fin = now + heap[0] / si
            if nxt is None or fin <= nxt:
                heapq.heappop(heap)
                out.append(fin)
                now = fin
            else:
                heapq.heapreplace(heap, heap[0] - (nxt - now) * si)
                now = nxt
            while si < ns and steps[si] <= now:
                si += 1
        return out

    @staticmethod
    def gpu_seconds(steps: list[int], t: int, tau: int) -> int:
        """GPU time free in [t, tau]."""
        return sum(tau - (x if x > t else t) for x in steps if x < tau)

    def barrier_bound(self, steps: list[int], t: int, b: int, ect: dict[int, int],
                      est_b: int, unsched: list[int]) -> float:
        """Least cost of U when barrier job b splits it (see the module docstring)."""
        pb, minp, energy = self.minp[b], self.minp, self.energy
        others = sorted((ect[j], j) for j in unsched if j != b)
        pts = sorted({est_b} | {e for e, _ in others if e > est_b})
        need = sum(energy[j] for _, j in others)
        lo = hi = pts[-1]
        while self.gpu_seconds(steps, t, hi) < need:
            hi += max(1, hi - t)
        pts = sorted(set(pts) | {lo + (hi - lo) * k // 8 for k in range(1, 9)})
        best = None
        p = 0  # others[:p] can end by a
        ends_before = 0
        before = 0
        for i, a in enumerate(pts):
            while p < len(others) and others[p][0] <= a:
                ends_before += others[p][0]
                before += energy[others[p][1]]
                p += 1
            v = float(a + pb + ends_before)
            base = a + pb
            for e, j in others[p:]:
                x = base + minp[j]
                v += x if x > e else e
            if best is not None and v >= best:
                continue
            if i + 1 < len(pts) and before > 0:
                room = self.gpu_seconds(steps, t, pts[i + 1])
                if before > room:
                    excess = before - room
                    for ratio, en in sorted(((base + minp[j] - e) / energy[j], energy[j])
                                            for e, j in others[:p] if energy[j] > 0):
                        take = min(en, excess)
                        v += ratio * take
                        excess -= take
                        if excess <= 0:
                            break
            best = v if best is None or v < best else best
        return best

    # ------------------------------------------------------------------ search
    def node(self, free: tuple[tuple[int, ...], ...], t: int, last: int, unsched: list[int],
             cost: int, mask: int, picks: dict[int, tuple[int, int]]) -> None:
        self.nodes += 1
        # every node: one node of a 50-job workload takes milliseconds, so checking every
        # 128th overran a 1 s limit by 0.4 s
        if self.stop is not None and time.perf_counter() > self.stop:
            raise _TimeUp
        if not unsched:
            if self.best is None or cost < self.best:
                self.best, self.best_picks, self.found = cost, dict(picks), True
            return
        rel, w, modes = self.rel, self.w, self.modes
        ready = []  # per need: when its GPUs are free
        for need in self.needs:
            e = t
            for s, k in need:
                f = free[s][k - 1]
                if f > e:
                    e = f
            ready.append(e)
        # earliest start / end of every unscheduled job in every mode, and the two least
        # earliest ends (the active rule needs them)
        info: dict[int, list[tuple[int, int]]] = {}
        ect: dict[int, int] = {}
        est_min: dict[int, int] = {}
        individual = 0
        first, m1, m2 = -1, None, None
        for j in unsched:
            lo = rel[j] if rel[j] > t else t
            lst = []
            e_min = c_min = None
            for i, dur in self.mode_needs[j]:
                e = ready[i]
                if e < lo:
                    e = lo
                lst.append((e, e + dur))
                if c_min is None or e + dur < c_min:
                    c_min = e + dur
                if e_min is None or e < e_min:
                    e_min = e
            info[j] = lst
            ect[j] = c_min
            est_min[j] = e_min
            individual += w[j] * c_min
            if m1 is None or c_min < m1:
                first, m1, m2 = j, c_min, m1
            elif m2 is None or c_min < m2:
                m2 = c_min
        limit = None if self.best is None else self.best - 1 + 1e-3
        if limit is not None and cost + individual > limit:
            return
        # memo dominance (the list keeps only states no other one there dominates)
        canon = tuple(x for f in self.canon(tuple(tuple([x if x > t else t for x in f])
                                                  for f in free)) for x in f)
        front = self.memo.get(mask)
        if front is None:
            front = []
            if len(self.memo) < MEMO_SETS:  # beyond that, new sets are not remembered
                self.memo[mask] = front
        keep = []
        for entry in front:
            ta, la, fa, ca = entry
            if ca <= cost and (ta < t or (ta == t and la <= last)) and all(map(le, fa, canon)):
                return
            if not (cost <= ca and (t < ta or (t == ta and last <= la))
                    and all(map(le, canon, fa))):
                keep.append(entry)
        keep.append((t, last, canon, cost))
        if mask in self.memo:
            self.memo[mask] = keep[-MEMO_STATES:]
        if self.equal_w:
            steps = sorted(x for f in free for x in f)
            ind = sorted(ect.values())
            fl = self.srpt_ends(steps, t, est_min)
            rest = float(sum(a if a > b else b for a, b in zip(ind, fl, strict=True)))
            for b in unsched:
                if self.barrier[b] and (limit is None or cost + w[0] * rest <= limit):
                    rest = max(rest, self.barrier_bound(steps, t, b, ect, est_min[b], unsched))
            if limit is not None and cost + w[0] * rest > limit:
                return
        children = []
        sigs = set()
        canon_of = self.canon
        for j in unsched:
            other = m2 if j == first else m1
            for k, ((est, end), (need, _)) in enumerate(zip(info[j], modes[j], strict=True)):
                if other is not None and est >= other:
                    continue  # active rule
                if est == t and j < last:
                    continue  # ties in index order
                nf = [[x if x > est else est for x in f] for f in free]
                for s, c in need:
                    f = nf[s]
                    f[:c] = [end] * c
                    f.sort()
                state = tuple(map(tuple, nf))
                sig = (j, est, canon_of(state))
                if sig in sigs:
                    continue
                sigs.add(sig)
                children.append((end, j, k, est, state))
        children.sort()
        for end, j, k, est, state in children:
            picks[j] = (est, k)
            self.node(state, est, j, [i for i in unsched if i != j],
                      cost + w[j] * end, mask | (1 << j), picks)
            del picks[j]


def branch_and_bound(data: OfflineData, cutoff: int | None = None,
                     time_limit: float | None = None) -> BnbResult:
    """Search for a schedule of ``data`` with objective ``Σ w_j end_j`` below ``cutoff``.

    Parameters
    ----------
    data
        The integer data (``weighted_jct``, rounded up: the primal).
    cutoff
        Only schedules with a smaller objective are of interest (an incumbent's value);
        None: any.
    time_limit
        Seconds; the search stops unfinished when they run out.

    Returns
    -------
    BnbResult
        The best schedule found and whether the search finished (then the best of it and
        the cutoff is optimal for ``data``).
    """
    if data.objective != "weighted_jct":
        raise ValueError("the branch and bound minimizes weighted completion times only")
    if data.num_jobs > MAX_JOBS:
        return BnbResult(None)
    search = _Search(data, cutoff, time_limit)
    t0 = min(data.release)
    free = tuple(tuple([t0] * c) for c in data.capacity)
    try:
        search.node(free, t0, -1, list(range(data.num_jobs)), 0, 0, {})
        complete = True
    except _TimeUp:
        complete = False
    value = search.best if search.found else None
    return BnbResult(value, search.best_picks if search.found else {}, complete, search.nodes)
