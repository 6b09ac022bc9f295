"""Free capacity of a snapshot, updated as a method places jobs one by one.

Heuristics use it to stay feasible; the validator computes loads on its own from the
decision (see ``dlsched.validate``) and trusts none of this.

Also the registry of *view policies*: fast forms of methods that read the simulator's
live state (``dlsched.simulate.view.SimView``) instead of a rebuilt snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .instance import Instance
from .jobs import Job
from .topology import Cluster

EPS = 1e-9
_UNLIMITED = int(np.iinfo(np.int64).max)  # room of a server for a job without CPU/RAM needs


@dataclass
class ClusterState:
    """Mutable free resources: per-GPU memory and utilization, per-server CPU and RAM.

    Built from a snapshot (:meth:`of`) or, by a simulator fast form, from the same loads
    read off the live state.
    """

    cluster: Cluster
    free_mem: np.ndarray
    util: np.ndarray
    free_cpu: np.ndarray
    free_ram: np.ndarray
    busy: np.ndarray  # GPU holds a running or newly placed job

    @classmethod
    def of(cls, instance: Instance) -> ClusterState:
        util, mem = instance.gpu_usage
        cpu, ram = instance.node_usage
        c = instance.cluster
        return cls(
            cluster=c,
            free_mem=c.gpu_mem_gb - mem,
            util=util.copy(),
            free_cpu=c.node_cpu - cpu,
            free_ram=c.node_ram_gb - ram,
            busy=instance.gpu_busy.copy(),
        )

    # ------------------------------------------------------------ plain jobs
    def gpu_fits(self, job: Job) -> np.ndarray:
        """GPUs whose free memory takes one share of ``job`` (boolean mask)."""
        return self.free_mem >= (job.gpu_mem_gb or 0.0) - EPS

    def node_room(self, job: Job) -> np.ndarray:
        """How many of ``job``'s GPUs each server's free CPU and RAM can take."""
        room = np.full(self.cluster.num_nodes, _UNLIMITED, dtype=np.int64)
        for free, need in ((self.free_cpu, job.cpu_per_gpu), (self.free_ram, job.ram_gb_per_gpu)):
            if need > 0:
                room = np.minimum(room, np.floor((free + EPS) / need).astype(np.int64))
        return room

    def place(self, job: Job, gpus: Sequence[int]) -> None:
        """Record ``job`` on GPU indices ``gpus`` (the caller checked that it fits)."""
        gpus = np.asarray(gpus, dtype=np.int64)
        node_of = self.cluster.gpu_node
        self.free_mem[gpus] -= job.gpu_mem_gb or 0.0
        self.util[gpus] += job.gpu_util or 0.0
        self.busy[gpus] = True
        # subtracting 0 changes nothing (and ufunc.at is slow): only jobs with shares
        if job.cpu_per_gpu:
            np.subtract.at(self.free_cpu, node_of[gpus], job.cpu_per_gpu)
        if job.ram_gb_per_gpu:
            np.subtract.at(self.free_ram, node_of[gpus], job.ram_gb_per_gpu)


# ---------------------------------------------------------------------- view policies
@dataclass(frozen=True)
class ViewPolicy:
    """A method's fast form for the simulator: it reads the live view, not a snapshot.

    ``decide(view, **options) -> Decision`` must return exactly the decision the
    registered method returns on the snapshot of the same state (the simulator's
    ``check="full"`` mode runs the snapshot method instead, and tests compare the two).
    ``can_start(view, **options) -> bool`` is a cheap necessary condition for starting
    anything; when it is False the simulator does not call the policy. ``options`` lists
    the method options the fast form accepts; with any other option the simulator uses the
    snapshot method, and so it does for a workload that ``applies(workload)`` refuses (a
    fast form that models less than the method, e.g. no node CPU or RAM). The view
    (``dlsched.simulate.view.SimView``) is read-only. A ``stateful`` fast form carries
    something across the calls of one run (DSIF's delay counts, a learned policy's arrays
    of the workload's jobs): ``decide`` also gets ``policy_state=`` (None at the first
    call, then what it returned last) and returns ``(decision, policy_state)``. A ``hooks``
    fast form (stateful too: PAB) returns ``(decision, policy_state, extra)``, ``extra``
    holding the simulator's requeue hook (``requeue``, ``watch_at``) as a snapshot
    method's result would. A stateful fast form with ``guard_state`` (PAB, ``dqn``) gets
    ``policy_state=`` in ``can_start`` too, to skip a call that would change nothing (PAB:
    nothing but a repeated watch; ``dqn``: one it proves would start nothing).
    """

    problem: str
    method: str
    decide: Callable[..., Any]
    can_start: Callable[..., bool]
    options: frozenset[str] = frozenset()
    applies: Callable[[Instance], bool] = lambda workload: True
    stateful: bool = False
    hooks: bool = False
    guard_state: bool = False

    def run(self, view: Any, state: Any, options: dict[str, Any]
            ) -> tuple[Any, Any, dict[str, Any]]:
        """``(decision, state for the next call, extra)`` of one call (``state``: the last
        one; ``extra``: the requeue hook's, empty unless ``hooks``)."""
        if self.hooks:
            return self.decide(view, policy_state=state, **options)
        if self.stateful:
            return (*self.decide(view, policy_state=state, **options), _NO_EXTRA)
        return self.decide(view, **options), state, _NO_EXTRA


_NO_EXTRA: dict[str, Any] = {}  # read only
_VIEW_POLICIES: dict[tuple[str, str], ViewPolicy] = {}


def register_view_policy(policy: ViewPolicy) -> ViewPolicy:
    """Register the fast form of method ``policy.method`` of ``policy.problem``."""
    _VIEW_POLICIES[(policy.problem, policy.method)] = policy
    return policy


def view_policy(problem: str, method: str) -> ViewPolicy | None:
    """The registered fast form of a method, or None."""
    return _VIEW_POLICIES.get((problem, method))


@dataclass(frozen=True)
class StartGuard:
    """A cheap necessary condition for a snapshot method to start anything.

    ``can_start(view, **options) -> bool`` reads the simulator's live view
    (``dlsched.simulate.view.SimView``); when it is False the method, called on a snapshot
    of that state with any valid ``options``, would start nothing, and the simulator does
    not call it (in ``check="fast"`` mode; ``"full"`` always calls, and tests compare the
    two). Only for stateless methods: a call that starts nothing must change nothing.
    """

    problem: str
    method: str
    can_start: Callable[..., bool]


_START_GUARDS: dict[tuple[str, str], StartGuard] = {}


def register_start_guard(guard: StartGuard) -> StartGuard:
    """Register the start guard of method ``guard.method`` of ``guard.problem``."""
    _START_GUARDS[(guard.problem, guard.method)] = guard
    return guard


def start_guard(problem: str, method: str) -> StartGuard | None:
    """The registered start guard of a method, or None."""
    return _START_GUARDS.get((problem, method))
