"""Event-driven simulation of a workload under a scheduling policy.

Events are arrivals, completions and the policy's own wake-ups (a period, or a time the
policy asks for in ``Result.extra["wake_at"]``). After all events at one time are applied,
the policy decides which pending jobs start now and where; it returns a
:class:`~dlsched.decision.Decision`, which is checked before anything changes (an invalid
one stops the run with :class:`SimulationError` naming the policy and the time). Jobs are
non-preemptive: they start at the decision time and run to completion.

Who does what (calls go one way, down this list):

* ``engine`` (here) — the loop: when the policy is due, how it is called, checking its
  decision, the run's counters; it changes the state only through ``LiveState`` methods;
* ``caller`` — calls a registered method on a snapshot; ``checks`` — a decision against
  the live loads, a requeue request, the finished schedule;
* ``view`` — what a policy reads: the :class:`~.view.SimView` and snapshots;
* ``live`` — :class:`~.live.LiveState`, the one owner of everything that changes during a
  run (records, running jobs, loads, pending queue, event queue, recorded series), updated
  incrementally: the cost of an event does not grow with the queue or the cluster, except
  where a policy itself looks at them;
* ``pending`` (the queue), ``fragmentation``, ``records`` (data types), ``prefix`` (prefix
  mode), ``speed`` — parts.

Two ways to call a policy:

* a *view policy* (``dlsched.state.ViewPolicy``, e.g. FIFO of SCHED² and Horus) reads the
  read-only :class:`~.view.SimView` — FIFO looks at the queue head, packing at the servers
  with the fewest idle GPUs that fit — and declares when it cannot start anything
  (``can_start``); it is not called then;
* any other method sees a snapshot — an :class:`~dlsched.instance.Instance` at that time
  with the pending queue in arrival order and the running jobs (built lazily, with their
  remaining time at the current rate). It is not called when no pending job fits the idle
  GPUs (exclusive GPUs) or its start guard (``dlsched.state.StartGuard``: Horus greedy,
  OBP) says that it cannot start anything.

Checks (``check``). ``"fast"`` (default): each decision is checked against the live state
on the GPUs and servers it touches (``checks.check_live``: the validator's generic rules,
then the problem's own rules on the instance the policy saw). ``"full"``: the method runs
on a full snapshot (view policies are not used) and its decision goes through
``dlsched.validate.validate`` as a whole. Both give the same schedule (a test compares the
per-job tables for every policy family). At the end of every run the whole schedule is
checked once from the records alone (``checks.check_schedule``).

Container jobs (Liquid): a placement with ``tasks`` holds its GPUs and, on every server
it uses, the CPU and RAM of its containers there (a PS holds no GPU but still holds its
server's CPU and RAM). Problems whose batch is placed whole (Liquid) run in *prefix mode*
(``Policy.prefix``): the policy sees the longest prefix of the pending queue (arrival
order) that it can place — first the longest prefix whose total GPUs, CPU and RAM fit the
free totals (at most ``Policy.max_jobs`` jobs); if the policy finds no solution for it,
shorter prefixes by bisection. Feasibility is monotone in the prefix, so for an exact
method this is the longest feasible prefix; for a heuristic, the one it placed. Strict
FIFO: a job never overtakes an earlier one that does not fit.

Stepping (agents, preempting policies): ``next_batch`` (the next event time; is a decision
due?), ``view`` / ``snapshot``, ``apply``, ``end_batch``, ``result``; ``run`` is that loop.

Requeue hook (PAB; docs/simulator.md): ``extra["requeue"]`` sends running jobs back to
the queue's tail (``checks.check_requeue``; progress lost, the run kept in
``JobRecord.attempts``); ``extra["watch_at"]``: a call even with nothing pending.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..decision import Decision
from ..errors import InputError
from ..instance import Instance
from ..instance_io import check_instance, load_instance
from ..jobs import Job
from ..problems import get_problem
from ..problems.rates import BoundSpeed, SpeedModel
from ..state import start_guard, view_policy
from ..validate import validate_decision
from .caller import PolicyCaller
from .checks import check_live, check_requeue, check_schedule
from .live import WAKE_PERIOD, WAKE_POLICY, WAKE_WATCH, LiveState
from .prefix import longest_solved_prefix, prefix_bound
from .records import CHECK_MODES, Policy, SimRun, SimulationError
from .view import InstanceMaker, LazyRunning, SimView
from .view import snapshot as make_snapshot


def simulate(
    workload: Instance | str | Path,
    policy: Policy | str,
    speed: SpeedModel | None = None,
    *,
    record_events: bool = True,
    frag_samples: bool = True,
    progress: Callable[[int], None] | None = None,
    max_time: float | None = None,
    observe: Callable[[Instance], None] | None = None,
    check: str = "fast",
) -> SimRun:
    """Replay ``workload`` under ``policy``.

    Parameters
    ----------
    workload
        An Instance whose jobs carry ``submit_time`` and ``duration`` (no running jobs), or
        the path of a workload file (``load_instance``).
    policy
        A :class:`Policy` or a method name.
    speed
        Rate models; default :meth:`SpeedModel.for_workload` (the problem's models; for
        trace-derived workloads the recorded duration is the packed placement's time).
    record_events
        Keep the (time, kind, job) event list (tests; off for long traces).
    frag_samples
        Record the mean server fragmentation after each event batch.
    progress
        Called with the number of jobs completed since the last call.
    max_time
        Stop (with SimulationError) if the clock passes this time.
    observe
        Called with every snapshot before the policy sees it (to sample snapshots; an
        exception it raises ends the run and propagates). The policy then always runs on
        snapshots, called whenever some pending job's GPU count fits the idle GPUs.
    check
        ``"fast"`` (decisions checked on what they touch, view policies used) or
        ``"full"`` (snapshot methods and the full validator); module docstring.

    Returns
    -------
    SimRun
        Per-job records and time series; see ``dlsched.simulate.metrics``.

    Raises
    ------
    SimulationError
        Invalid decision, method failure, jobs left pending with nothing to wait for, or a
        schedule that fails the final check.
    InputError
        A workload file or Instance that ``load_instance`` would refuse, one that lacks what
        the speed models need, or an unknown ``check`` mode.
    """
    if isinstance(workload, Instance):
        check_instance(workload)  # built in Python: the checks a file gets on load
    else:
        workload = load_instance(workload)
    if isinstance(policy, str):
        policy = Policy(policy)
    if workload.running:
        raise InputError("a workload has no running jobs", field="running",
                         fix="give the jobs submit times instead")
    if check not in CHECK_MODES:
        raise InputError(f"check mode {check!r}", field="check", fix=f"use one of {CHECK_MODES}")
    speed = speed or SpeedModel.for_workload(workload)
    bound = speed.bind(workload)
    sim = _Engine(workload, policy, bound, record_events, frag_samples, progress, max_time,
                  observe=observe, check=check)
    return sim.run()


class _ShownJobs:
    """Job id -> the job a snapshot showed, through its index (no dict built per call)."""

    __slots__ = ("_jobs", "_index")

    def __init__(self, snapshot: Instance) -> None:
        self._jobs = snapshot.jobs
        self._index = snapshot.job_index

    def __getitem__(self, job_id: str) -> Job:
        return self._jobs[self._index[job_id]]


class _Engine:
    def __init__(self, workload: Instance, policy: Policy, bound: BoundSpeed,
                 record_events: bool, frag_samples: bool,
                 progress: Callable[[int], None] | None, max_time: float | None, *,
                 observe: Callable[[Instance], None] | None = None,
                 check: str = "fast") -> None:
        self.w = workload
        self.policy = policy
        self.caller = PolicyCaller(workload, policy)
        self.problem = get_problem(workload.problem)
        self.exclusive = self.problem.exclusive_gpus
        # problems that place a batch whole get the longest fitting prefix of the queue
        self.prefix = policy.prefix if policy.prefix is not None else self.problem.whole_batch
        if policy.max_jobs is not None and policy.max_jobs < 1:
            raise InputError(f"max_jobs = {policy.max_jobs}", field="policy.max_jobs",
                             fix="a positive number of jobs, or None")
        self.state = LiveState(workload, bound, exclusive=self.exclusive,
                               record_events=record_events)
        self._job_of = {job.id: job for job in workload.jobs}
        self.frag_samples = frag_samples
        self.progress = progress
        self.max_time = max_time
        self.observe = observe
        self.check = check
        vp = view_policy(workload.problem, policy.method)
        use_view = (vp is not None and check == "fast" and observe is None
                    and not self.caller.via_solve and not self.prefix
                    and set(policy.options) <= vp.options and vp.applies(workload))
        self.view_policy = vp if use_view else None
        guard = start_guard(workload.problem, policy.method)
        use_guard = (guard is not None and check == "fast" and observe is None
                     and not self.caller.via_solve and not self.prefix)
        self.start_guard = guard if use_guard and self.view_policy is None else None
        self._view = SimView(self.state, workload.problem, workload.params)
        self._make = InstanceMaker(workload, self.state.cluster)
        by_id, queue = self.state.by_id, self.state.queue
        self._live_pending = lambda job_id: by_id.get(job_id, -1) in queue
        self.calls = 0
        self.event_count = 0
        self.t = 0.0
        self._changed = False
        self._worth: bool | None = None
        self._done_before = 0
        self._wall = 0.0

    # ------------------------------------------------------------------ what policies see
    def _snapshot(self, t: float, jobs: tuple[Job, ...] | None = None) -> Instance:
        """The policy's view at ``t`` as an Instance (pending queue, or ``jobs``: a prefix)."""
        return make_snapshot(self.state, self.w, t, jobs, self.observe is not None, self._make)

    def snapshot(self, t: float | None = None) -> Instance:
        """The full snapshot at the current (or given) time."""
        return self._snapshot(self.t if t is None else t)

    def view(self) -> SimView:
        """The read-only live view at the current time."""
        v = self._view
        v.time = self.t
        return v

    # ------------------------------------------------------------------ deciding
    def _worth_calling(self) -> bool:
        """Whether a snapshot policy can start anything (a cheap necessary condition)."""
        st = self.state
        q = st.queue
        if not len(q):
            return False
        if self.prefix:
            return self._prefix_bound() > 0
        if self.exclusive:
            free = st.idle_total
            if free == 0:
                return False
            if q.demand and q.all_fixed() and q.min_demand() > free:
                return False
        if self.start_guard is not None:
            return bool(self.start_guard.can_start(self.view(), **self.policy.options))
        return True

    def _due(self) -> bool:
        if (vp := self.view_policy) is not None:
            if not len(self.state.queue):
                return False
            if vp.guard_state:  # PAB's and dqn's guards read their state
                return bool(vp.can_start(self.view(), policy_state=self.caller.state,
                                         **self.policy.options))
            if self.policy.options:
                return bool(vp.can_start(self.view(), **self.policy.options))
            return bool(vp.can_start(self.view()))
        return self._worth_calling()

    def _call(self, t: float, jobs: tuple[Job, ...] | None = None
              ) -> tuple[Decision, float | None, bool, Instance]:
        """One snapshot call: (decision, wake-up time, whether a solution, the snapshot)."""
        self.calls += 1
        snapshot = self._snapshot(t) if jobs is None else self._snapshot(t, jobs)
        if self.observe is not None:
            snapshot.running.materialize()  # built now: an observer may keep the snapshot
            self.observe(snapshot)
        before = self.caller.no_solution
        decision, wake = self.caller(snapshot)
        return decision, wake, self.caller.no_solution == before, snapshot

    def _prefix_bound(self) -> int:
        """Longest queue prefix whose summed GPUs, CPU and RAM fit the free totals."""
        return prefix_bound(self.state, self.policy.max_jobs)

    def _decide(self, t: float) -> None:
        """Ask the policy and apply its (checked) decision."""
        requeue, watch, wake, snap = (), None, None, None
        if self.view_policy is not None:
            self.calls += 1
            vp, caller = self.view_policy, self.caller  # a stateful one keeps it in the caller
            decision, caller.state, extra = vp.run(self.view(), caller.state, self.policy.options)
        elif not self.prefix:
            decision, wake, _, snap = self._call(t)
            extra = self.caller.last_extra
        if not self.prefix:
            requeue = tuple(extra.get("requeue", ()))
            watch = extra.get("watch_at")
        else:
            before = self.caller.no_solution
            decision, wake, found, snap = longest_solved_prefix(
                self._call, t, self.state.queue.jobs(), self._prefix_bound())
            # one event without a solution, however many prefixes were tried
            self.caller.no_solution = before + (0 if found else 1)
        self.apply(decision, snap, checked=self.caller.via_solve, requeue=requeue)
        if wake is not None and wake > t:
            self.state.wake(wake, WAKE_POLICY)
        # a watch at the current time (a zero warm-up) only after a round that changed
        # something, so a policy cannot stall the clock
        if watch is not None and (float(watch) > t or (float(watch) == t and (
                decision.placements or requeue))):
            self.state.wake(float(watch), WAKE_WATCH)

    def apply(self, decision: Decision, snapshot: Instance | None = None, *,
              checked: bool = False, requeue: tuple[str, ...] = ()) -> None:
        """Check ``decision`` (unless ``checked`` by ``solve``) and start its jobs now.

        ``snapshot`` is the instance the policy saw (None: the live queue was shown).
        ``requeue``: running jobs to move back to the pending queue first (a policy returns
        them in ``extra["requeue"]``). They are always checked (``checks.check_requeue``:
        running now, plain GPU jobs, listed once, not placed in the same decision); each
        frees its GPUs and loses its progress (it restarts from its full work when placed
        again) and goes to the tail of the queue. The placements are then checked against
        the state after the requeues (the policy saw the requeued jobs still running, so
        its placements are conservative).
        """
        t = self.t
        st = self.state
        if requeue:
            problems = check_requeue(requeue, st.by_id, st.running, st.records,
                                     {pl.job for pl in decision.placements})
            if problems:
                raise SimulationError(f"{self._where()} returned an invalid requeue: "
                                      + "; ".join(problems))
            for job_id in requeue:
                st.requeue(st.by_id[job_id], t)
        for pl in decision.placements:
            if pl.start is not None and abs(pl.start - t) > 1e-9:
                raise SimulationError(f"{self._where()}: job {pl.job} has start {pl.start}; "
                                      "jobs start at the snapshot time (non-preemptive, no "
                                      "reservations)")
        placements = decision.placements
        if not placements:
            return
        if not checked:
            if self.check == "full":
                report = validate_decision(
                    snapshot if snapshot is not None else self._snapshot(t), decision)
                problems = list(report.violations)
            else:
                problems = check_live(st, decision, self._pending_test(snapshot),
                                      self._job_lookup(snapshot), self.problem,
                                      self._problem_instance(decision, snapshot))
            if problems:
                text = "\n".join(f"  {v}" for v in problems)
                raise SimulationError(f"{self._where()} returned an invalid decision: "
                                      f"infeasible:\n{text}")
        by_id, start = st.by_id, st.start
        for pl in placements:
            start(by_id[pl.job], pl.gpus, t, pl.tasks)

    def _where(self) -> str:
        return f"policy {self.policy.label!r} at t = {self.t:g} s"

    def _pending_test(self, snapshot: Instance | None) -> Callable[[str], bool]:
        return self._live_pending if snapshot is None else snapshot.job_index.__contains__

    def _job_lookup(self, snapshot: Instance | None) -> Any:
        if snapshot is not None:
            return _ShownJobs(snapshot)
        return self._job_of

    def _problem_instance(self, decision: Decision, snapshot: Instance | None
                          ) -> Callable[[], Instance]:
        if snapshot is not None:
            return lambda: snapshot
        return partial(self._placed_instance, decision)

    def _placed_instance(self, decision: Decision) -> Instance:
        """The live state as an Instance whose jobs are the decision's placed jobs."""
        st = self.state
        all_jobs, by_id = st.jobs, st.by_id
        jobs = tuple([all_jobs[by_id[p.job]] for p in decision.placements])
        inst = self._make(jobs, LazyRunning(st, self.t, self.observe is not None), self.t)
        # seeded: a cached_property takes a lock on its first read
        inst.__dict__["job_index"] = {job.id: i for i, job in enumerate(jobs)}
        return inst

    # ------------------------------------------------------------------ stepping
    def next_batch(self) -> bool | None:
        """Apply all events of the next event time; None when the run is over.

        Returns whether the policy is due (it was woken, or jobs arrived or finished, and
        it can start something).
        """
        st = self.state
        while True:
            t = st.next_time()
            if t is None:
                return None
            if self.max_time is not None and t > self.max_time:
                raise SimulationError(f"clock passed max_time = {self.max_time:g} s")
            finished, wakes, arrived = st.step(t)
            # a time holding only stale completions (a re-rated job's earlier predicted
            # end) changes nothing: no batch (the last batch's end checks saw this state)
            if finished or wakes or arrived:
                break
        self.t = t
        self._done_before = st.done - finished
        self.event_count += finished + len(wakes) + arrived
        woke = bool(wakes)
        if woke and WAKE_PERIOD in wakes and (st.arrivals_left or len(st.queue) or st.running):
            st.wake(t + self.policy.interval, WAKE_PERIOD)
        self._changed = woke or bool(finished or arrived)
        if woke and WAKE_WATCH in wakes:  # the policy asked to look at its running jobs:
            self._worth = True  # called even with no queue (its start guard not asked)
        else:
            call = woke if self.policy.batch_only else self._changed
            self._worth = self._due() if call else None
        return bool(self._worth)

    def end_batch(self) -> None:
        """Record the time series after a batch and detect a stalled queue."""
        t = self.t
        st = self.state
        if self._changed:
            st.note(t, self.frag_samples)
        if self.progress is not None and st.done > self._done_before:
            self.progress(st.done - self._done_before)
        if (not st.running and len(st.queue) and not st.arrivals_left
                and self._stalled(self._worth)):
            ids = [st.jobs[i].id for i, _ in zip(st.queue, range(5), strict=False)]
            raise SimulationError(
                f"policy {self.policy.label!r} left {len(st.queue)} jobs pending at "
                f"t = {t:g} s with nothing running and no arrival or wake-up to come "
                f"(first: {ids}); does every job fit the cluster?")

    def result(self) -> SimRun:
        """Close the run: check the whole schedule from the records and return it."""
        st = self.state
        problems = check_schedule(st.records, st.cluster, self.exclusive)
        if problems:
            raise SimulationError("the finished schedule fails its check: "
                                  + "; ".join(problems[:5]))
        frag_t, frag = st.frag.series()
        return SimRun(
            workload=self.w, policy=self.policy, speed=st.speed.model, records=st.records,
            busy_t=np.array(st.busy_t), busy_n=np.array(st.busy_n, dtype=np.int64),
            frag_t=frag_t, frag=frag, events=st.events,
            policy_calls=self.calls, event_count=self.event_count,
            wall_time=_time.perf_counter() - self._wall,
            events_without_solution=self.caller.no_solution, check=self.check,
            requeues=st.requeues)

    def run(self) -> SimRun:
        self._wall = _time.perf_counter()
        if self.policy.interval:
            self.state.wake(self.state.first_arrival, WAKE_PERIOD)
        while True:
            due = self.next_batch()
            if due is None:
                break
            if due:
                self._decide(self.t)
            self.end_batch()
        return self.result()

    def _stalled(self, worth: bool | None) -> bool:
        """Idle cluster, no arrivals left, jobs pending: will anything ever start?

        ``worth`` is None when the policy was not due this round (a batch policy between
        wake-ups), False when no pending job could fit, True when it was called.
        """
        if self.state.wake_pending((WAKE_POLICY, WAKE_WATCH)):
            return False  # the policy asked to be woken later
        if worth is None:
            return not self.policy.interval
        return True
