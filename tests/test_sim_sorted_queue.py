"""The orders the simulator's pending queue keeps for view policies (``records``,
``sorted_by``, ``grouped_by``) against a fresh sort of the queue, through arrivals, starts
and requeues; and the learned priority's fast form against its snapshot method when scores
overflow."""

from __future__ import annotations

import random
from operator import attrgetter

import numpy as np
import pytest

from dlsched import Job
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import Policy, job_table, simulate
from dlsched.simulate.pending import PendingQueue


def _jobs(n: int, seed: int) -> tuple[Job, ...]:
    rng = random.Random(seed)
    # few distinct values, so that ties (broken by queue position) are common
    return tuple(Job(id=f"j{i}", submit_time=float(i // 3), num_gpus=rng.choice([1, 2, 4]),
                     duration=float(rng.choice([10, 20, 30]))) for i in range(n))


def _key(job: Job) -> tuple:
    return (job.duration, job.num_gpus)


def _expected(queue: PendingQueue, jobs: tuple[Job, ...]) -> list[int]:
    pending = list(queue)  # queue order
    return sorted(pending, key=lambda i: (*_key(jobs[i]), pending.index(i)))


@pytest.mark.parametrize("seed,n,steps", [(0, 60, 400), (1, 60, 400), (2, 400, 1500)])
def test_sorted_and_grouped_orders_follow_the_queue(seed, n, steps, monkeypatch):
    compacted = []
    compact = PendingQueue._compact
    monkeypatch.setattr(PendingQueue, "_compact",
                        lambda self: (compacted.append(1), compact(self))[1])
    jobs = _jobs(n, seed)
    queue = PendingQueue(jobs)
    rng = random.Random(seed)
    arrived = 0
    for step in range(steps):
        if step == 5:  # registered late: starts from the jobs already queued
            queue.sorted_by("k", _key)
            queue.grouped_by("g", attrgetter("num_gpus"), _key)
        pending = list(queue)
        move = rng.random()
        if arrived < len(jobs) and (move < 0.45 or not pending):
            queue.add(arrived)  # arrival
            arrived += 1
        elif pending and move < 0.9:
            # a start; the head waits long (tombstones pile up behind it, then compaction)
            queue.remove(rng.choice(pending[1:] if len(pending) > 1 and move > 0.46
                                    else pending))
        elif pending:
            idx = rng.choice(pending)  # a requeue: out, then back at the tail
            queue.remove(idx)
            queue.add(idx)
        pending = list(queue)
        assert queue.records().tolist() == pending  # the array mirror of the queue
        by_arrival = sorted(pending, key=lambda i: jobs[i].submit_time)  # stable
        assert not queue.in_arrival_order or by_arrival == pending
        if step < 5:
            continue
        want = _expected(queue, jobs)
        assert queue.sorted_by("k", _key).order == want
        groups = queue.grouped_by("g", attrgetter("num_gpus"), _key)
        assert all(index.order for index in groups.values())  # no empty group listed
        for gpus, index in groups.items():
            assert index.order == [i for i in want if jobs[i].num_gpus == gpus]
            assert [k[:2] for k in index.keys] == [_key(jobs[i]) for i in index.order]
        assert sorted(groups) == sorted({jobs[i].num_gpus for i in queue})
    assert compacted or n < 100  # the long run compacts the queue's order list


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_learned_priority_fast_equals_full_when_scores_overflow(monkeypatch):
    # weights so large that some scores overflow to +-inf (and inf - inf to nan): the fast
    # form's argmin walk must fall back to the snapshot method's lexsort order
    from dlsched.heuristics import sched2_priority as sp

    overflowed = []

    class Huge(sp.PriorityScorer):
        def scores(self, features):
            out = super().scores(features)
            overflowed.append(not np.isfinite(out).all())
            return out

    huge = Huge(np.where(np.arange(len(sp.FEATURES)) % 2, 1e308, -1e308))
    monkeypatch.setattr(sp, "load_scorer", lambda path: huge)
    w = generate_sched2(seed=3, jobs=120, servers=4, gpus_per_server=8, interarrival=25.0,
                        median_duration=600.0)
    fast = job_table(simulate(w, Policy("learned-priority"), check="fast"))
    full = job_table(simulate(w, Policy("learned-priority"), check="full"))
    assert any(overflowed) and fast.equals(full)
    assert fast["end"].notna().all()
