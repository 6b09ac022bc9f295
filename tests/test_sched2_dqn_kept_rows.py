"""``dqn``'s fast form keeps its rows across calls (:meth:`LiveQ.rows`): after any mix of
its own starts, arrivals at the queue's tail and changes of the largest idle server, the
kept rows are those built afresh bit for bit; any other change of the queue (a job leaving
that the policy did not start, a queue out of arrival order) rebuilds them. The pending
queue's count of added jobs and its tail, which that rests on, are checked here too, and
identical jobs start in arrival order on the fast form as on the snapshot method."""

from __future__ import annotations

import numpy as np
import pytest
from dqn_rows_view import RowsView

from dlsched import homogeneous_cluster
from dlsched.heuristics.sched2_dqn_policy import LiveQ, load_network, shipped_weights
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import Policy, simulate
from dlsched.simulate.pending import PendingQueue


class QueueView(RowsView):
    """A live view's queue as :meth:`LiveQ.rows` reads it: records in queue order, the
    count of added jobs, the arrival-order flag and the clock."""

    def __init__(self, workload) -> None:
        super().__init__(workload)
        self.queue: list[int] = []
        self.added = 0
        self.queue_in_arrival_order = True
        self.time = 0.0

    def add(self, record: int) -> None:
        self.queue.append(record)
        self.added += 1

    def queue_length(self) -> int:
        return len(self.queue)

    def queue_added(self) -> int:
        return self.added

    def queue_last_added(self, k: int) -> list[int]:
        return self.queue[-k:]

    def queue_by_arrival(self) -> np.ndarray:
        submit = self.workload_columns("submit_time")
        return np.array(sorted(self.queue, key=lambda r: (submit[r], self.queue.index(r))),
                        dtype=np.int64)


def _workload(seed: int, jobs: int):
    w = generate_sched2(seed=seed, jobs=jobs, servers=4, gpus_per_server=8)
    return w.replace(cluster=homogeneous_cluster(4, 8))


@pytest.mark.parametrize("seed", range(6))
def test_kept_rows_are_the_fresh_rows_after_starts_arrivals_and_other_changes(seed):
    rng = np.random.default_rng(seed)
    w = _workload(seed, 400)
    network = load_network(shipped_weights())[0]
    view = QueueView(w)
    kept, fresh = LiveQ(view, network), LiveQ(view, network)
    submit = view.workload_columns("submit_time")
    arrivals = list(np.argsort(submit, kind="stable"))  # records in arrival order
    rebuilt = 0
    for call in range(60):
        for _ in range(int(rng.choice([0, 0, 1, 1, 2, 5, 40]))):  # arrivals at the tail
            if arrivals:
                view.add(int(arrivals.pop(0)))
        if view.queue and call % 9 == 8:  # a job leaves that the policy did not start
            view.queue.pop(int(rng.integers(0, len(view.queue))))
        if not view.queue:
            continue
        view.time = float(submit[view.queue].max()) + float(rng.exponential(3000.0))
        widest = int(rng.integers(0, 9))
        before = kept.kept
        rows, n = kept.rows(view, widest)
        expected = fresh.start(view.queue_by_arrival(), view.time, widest)
        assert n == len(view.queue)
        assert np.array_equal(rows, expected)  # every column, φ last
        rebuilt += before >= 0 and kept.kept < 0 and call % 9 == 8
        # the policy's own starts: rows dropped as _picks drops them, the queue loses them
        left = n
        for _ in range(int(rng.integers(0, min(4, n) + 1))):
            pick = int(rng.integers(0, left))
            view.queue.remove(int(rows[pick, -2]))  # the RECORD column
            rows[pick:left] = rows[pick + 1:left + 1]
            left -= 1
        widest_after = int(rng.integers(0, 9))
        np.greater(rows[:left, 8], widest_after, out=rows[:left, 6])  # GPUS → WIDER
        kept.kept, kept.widest = left, widest_after
    assert rebuilt  # the foreign removals were seen
    view.queue_in_arrival_order = False  # a requeue broke the arrival order: rebuilt
    if view.queue:
        rows, n = kept.rows(view, 3)
        assert np.array_equal(rows, fresh.start(view.queue_by_arrival(), view.time, 3))


def test_pending_queue_counts_added_jobs_and_gives_its_tail():
    w = _workload(0, 200)
    queue = PendingQueue(w.jobs)
    for r in range(150):
        queue.add(r)
    for r in range(0, 140, 2):  # enough removals for a compaction
        queue.remove(r)
    assert queue.added == 150
    assert queue.last_added(3) == [147, 148, 149]
    for r in range(150, 155):
        queue.add(r)
    assert queue.added == 155
    assert queue.last_added(5) == list(range(150, 155))
    assert list(queue.records()[-5:]) == list(range(150, 155))


def test_identical_jobs_start_in_arrival_order_on_the_fast_form():
    w = generate_sched2(seed=3, jobs=60, servers=3, gpus_per_server=4, interarrival=20.0,
                        median_duration=900.0)
    w = w.replace(cluster=homogeneous_cluster(3, 4))
    twin = w.jobs[10].replace(num_gpus=2)
    jobs = list(w.jobs)
    for k in range(10, 16):  # six identical jobs: same arrival, demand, duration, model
        jobs[k] = twin.replace(id=f"twin{k}")
    w = w.replace(jobs=tuple(jobs))
    full = simulate(w, Policy("dqn"), check="full")
    fast = simulate(w, Policy("dqn"), check="fast")
    for a, b in zip(sorted(full.records, key=lambda r: r.job.id),
                    sorted(fast.records, key=lambda r: r.job.id), strict=True):
        assert (a.start, a.end, a.gpu_list) == (b.start, b.end, b.gpu_list)
    starts = {r.job.id: r.start for r in fast.records}
    twins = [starts[f"twin{k}"] for k in range(10, 16)]
    assert all(s is not None for s in twins)
    assert twins == sorted(twins)
