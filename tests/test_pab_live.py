"""PAB's fast form on the simulator's live view (``heuristics/horus_pab_live.py``) makes
the decisions of the snapshot method: call by call (the same decision, requeues and watch
at every call of a run driven by the snapshot method), whole runs (``check="fast"``, the
fast form and its start guard, against ``check="full"``, the snapshot method at every
call), and its vectorized serial round against the snapshot's walk on random loads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.errors import InputError
from dlsched.heuristics.horus import _plan
from dlsched.heuristics.horus_pab_live import _first_fit, pab_live
from dlsched.heuristics.horus_pab_round import place
from dlsched.jobs import JobColumns
from dlsched.simulate import Policy, SpeedModel, job_table, simulate
from dlsched.simulate.engine import _Engine
from dlsched.state import ClusterState, view_policy

LINEAR = SpeedModel(interference="horus-linear")


def workload(seed: int, n: int = 70, nodes: int = 3, per: int = 4, cpu: float = 0.0,
             no_gpu: bool = False) -> Instance:
    """Random Horus jobs dense enough to queue and to co-locate busy jobs (requeues)."""
    rng = np.random.default_rng(seed)
    jobs = tuple(
        Job(id=f"p{i:03d}", submit_time=float(np.round(rng.exponential(8.0) * i, 3)),
            num_gpus=0 if no_gpu and i % 17 == 5 else int(rng.choice([1, 1, 1, 2, 3, 4])),
            duration=float(rng.integers(40, 500)), gpu_util=float(rng.integers(60, 101)),
            gpu_mem_gb=float(rng.integers(1, 5)), cpu_per_gpu=cpu * float(rng.integers(0, 3)),
            ram_gb_per_gpu=cpu)
        for i in range(n))
    cluster = homogeneous_cluster(nodes, per, gpu_mem_gb=8.0, cpu=10.0, ram_gb=64.0)
    return Instance(problem="horus", cluster=cluster, jobs=jobs, params={})


CASES = [
    (0, {}, 0.0), (1, {"warmup_s": 30.0}, 0.0), (2, {"warmup_s": 0.0}, 0.0),
    (3, {"threshold": 0.8}, 0.0), (4, {"serial": False}, 0.0),
    (5, {"serial": False, "warmup_s": 20.0, "threshold": 0.7}, 0.0),
    (6, {"threshold": 0.8}, 2.0), (7, {"serial": False}, 2.0), (8, {"threshold": 0.9}, 0.0),
]


def test_the_fast_form_is_registered_with_the_requeue_hook():
    from dlsched.registry import get_method

    get_method("horus", "pab")  # imports the method's module, as the simulator does
    vp = view_policy("horus", "pab")
    assert vp is not None and vp.stateful and vp.hooks and vp.guard_state
    assert vp.options == {"warmup_s", "threshold", "serial"}


@pytest.mark.parametrize("seed,options,cpu", CASES)
def test_every_call_decides_as_the_snapshot_method(seed, options, cpu):
    """A run driven by the snapshot method (check="full"); at each call the fast form,
    given the live view and its own state, returns the decision, requeues and watch the
    snapshot method returned."""
    w = workload(seed, cpu=cpu)
    eng = _Engine(w, Policy("pab", options=options), LINEAR.bind(w), False, False, None,
                  None, check="full")
    applied: list = []
    apply = eng.apply

    def record(decision, *args, **kwargs):
        applied.append((decision, tuple(kwargs.get("requeue", ()))))
        return apply(decision, *args, **kwargs)

    eng.apply = record
    memory, calls, placed, requeued = None, 0, 0, 0
    while (due := eng.next_batch()) is not None:
        if due:
            decision, memory, extra = pab_live(eng.view(), policy_state=memory, **options)
            eng._decide(eng.t)
            want, want_requeue = applied[-1]
            snap_extra = eng.caller.last_extra
            assert decision == want, f"t = {eng.t}"
            assert tuple(extra["requeue"]) == want_requeue
            assert extra.get("watch_at") == snap_extra.get("watch_at")
            calls += 1
            placed += len(decision.placements)
            requeued += len(want_requeue)
        eng.end_batch()
    assert calls > 50 and placed >= len(w.jobs)
    assert requeued > 0  # the requeue path (blocked GPUs, idle-only jobs) is exercised


@pytest.mark.parametrize("seed,options,cpu", CASES)
def test_fast_and_full_runs_give_the_same_schedule(seed, options, cpu):
    w = workload(seed, cpu=cpu)
    fast = simulate(w, Policy("pab", options=options), LINEAR)
    full = simulate(w, Policy("pab", options=options), LINEAR, check="full")
    pd.testing.assert_frame_equal(job_table(fast), job_table(full), check_exact=True)
    attempts = {r.job.id: r.attempts for r in full.records}
    assert {r.job.id: r.attempts for r in fast.records} == attempts
    assert fast.requeues == full.requeues > 0
    # the fast form's guard skips only serial rounds with a probe open and none due: each
    # would have asked again for the watch the simulator holds (one wake-up event each)
    skipped = full.policy_calls - fast.policy_calls
    assert full.event_count - fast.event_count == skipped
    if options.get("serial", True) and options.get("warmup_s", 60.0) > 0:
        assert skipped > 0
    else:  # probes are judged at once, or rounds place while probes are open
        assert skipped == 0


def test_jobs_asking_no_gpus_are_refused_before_either_form_runs():
    # num_gpus = 0 is outside the instance schema (at least 1): a workload built in
    # Python gets the file's refusal, naming the job, so neither form ever sees one
    w = workload(9, n=30, no_gpu=True)
    for check in ("fast", "full"):
        with pytest.raises(InputError) as info:
            simulate(w, "pab", LINEAR, check=check)
        assert info.value.field.endswith(".num_gpus")


@pytest.mark.parametrize("seed", range(40))
def test_the_serial_round_equals_the_walk(seed):
    """_first_fit (numpy steps) against the snapshot's walk (``place``, serial) on random
    loads: free memory with ties, busy GPUs, requeued jobs, blocked GPUs."""
    rng = np.random.default_rng(seed)
    nodes, per = int(rng.integers(1, 5)), int(rng.choice([1, 2, 4, 8]))
    cluster = homogeneous_cluster(nodes, per, gpu_mem_gb=8.0)
    g = nodes * per
    used = rng.integers(0, 9, g).astype(float) * rng.choice([0.0, 1.0], g)
    busy = used > 0
    jobs = [Job(id=f"j{i}", submit_time=0.0, num_gpus=int(rng.integers(1, per + 2)),
                duration=10.0, gpu_util=10.0, gpu_mem_gb=float(rng.integers(0, 8)))
            for i in range(int(rng.integers(1, 12)))]
    columns = JobColumns(jobs)
    waiting = rng.random(len(jobs)) < 0.4 if seed % 3 else None
    blocked = rng.random(g) < 0.2 if seed % 4 == 0 else None
    if blocked is not None:
        busy |= blocked  # the GPUs of a job requeued now are held
    state = ClusterState(cluster=cluster, free_mem=cluster.gpu_mem_gb - used,
                         util=np.zeros(g), free_cpu=cluster.node_cpu.copy(),
                         free_ram=cluster.node_ram_gb.copy(), busy=busy)
    mem, need, _, _ = _plan(columns)
    got = _first_fit(state.free_mem.copy(), busy.copy(), mem, need, waiting, blocked)
    want, _ = place(state, jobs, columns, waiting, True, lambda job_id: None,
                    lambda: (lambda gpu: []), blocked)
    assert (got is None and want == []) or [got] == want


def _zero_memory_workload(seed: int) -> Instance:
    """``workload`` with every fourth job holding no GPU memory: busy GPUs then show
    their whole memory free (``SimView.busy_at_full_memory`` counts them)."""
    w = workload(seed, n=90, nodes=2, per=4)
    jobs = tuple(job if i % 4 else job.replace(gpu_mem_gb=0.0)
                 for i, job in enumerate(w.jobs))
    return w.replace(jobs=jobs)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_live_reads_pab_relies_on_equal_a_recount(seed):
    """At every batch of a co-locating PAB run (re-rates, requeues, jobs holding no
    memory): the busy GPUs at full free memory and the free-memory order (read at some
    batches only, so the log spans several) equal a count and a sort of the live lists;
    each GPU's predicted end is the latest of its jobs'; and no batch is without an
    event (times holding only stale completions are passed over)."""
    w = _zero_memory_workload(seed)
    eng = _Engine(w, Policy("pab"), LINEAR.bind(w), False, True, None, None)
    st = eng.state
    cap = st.mem_cap
    batches, full_seen, orders, shared = 0, 0, 0, 0
    while True:
        events = eng.event_count
        due = eng.next_batch()
        if due is None:
            break
        assert eng.event_count > events
        if due:
            eng._decide(eng.t)
        eng.end_batch()
        batches += 1
        view = eng.view()
        free = [cap[g] - st.mem[g] for g in range(st.num_gpus)]
        full = sum(1 for g in range(st.num_gpus) if st.jobs_on[g] and free[g] >= cap[g])
        assert view.busy_at_full_memory() == full
        full_seen += full > 0
        if batches % 3 == 0:
            assert list(view.free_memory_order()) == sorted((-f, g) for g, f in enumerate(free))
            orders += 1
        for g in range(st.num_gpus):
            ends = [st.records[i].pred_end for i in st.on_gpu[g]]
            assert st.gpu_end[g] == (max(ends) if ends else 0.0)
            shared += len(ends) > 1
    run = eng.result()
    assert run.requeues > 0 and full_seen > 0 and orders > 20 and shared > 0
