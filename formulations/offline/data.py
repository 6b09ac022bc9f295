"""The data of an offline schedule model: every job's modes and the integer time grid.

A *mode* of a job is one placement shape (how many of its GPUs sit on each server) with
the run time the problem's rate model gives it (``dlsched.problems.rates``, the simulator's
too: locality slowdown, slowest GPU's speed, GENIE latency). Fixed-demand jobs may split
their GPUs over servers in every way; elastic GENIE jobs take the symmetric shapes ⟨a, g⟩
on every set of a servers with a·g ≤ batch.

Time grid (CP-SAT needs integers). With unit u, the *primal* data round every release and
duration **up** (a primal schedule stays feasible with the real, shorter durations) and the
*relaxation* data round them **down** (every real schedule, starts floored, is feasible
there). Two ways to keep the optimality claim:

* **exact grid**: when every release, duration and deadline is a whole number of units,
  some optimal schedule of the real problem has all its times on the grid (an active
  schedule's times are sums of releases and durations), so the primal optimum *is* the
  real optimum. The unit is u = 1/L s with L the least common multiple of the values'
  denominators: SCHED² data are rationals with small denominators (releases with one
  decimal, durations = whole seconds × 1 + (S − 1)·(3/2)·c with c = k / (n(n − 1)) and S
  with a few decimals), e.g. L = 70 when the splits of 8-GPU jobs over 2 servers meet
  releases in tenths. A value counts as p/q when it matches to 1e-9 relative (far below
  the proof tolerance); L is capped at :data:`MAX_DENOMINATOR`. A coarse grid matters:
  CP-SAT's search proves much faster when event times coincide on a coarse grid than
  on a fine one (2 × 4 GPUs, 20 jobs, makespan: 0.4 s at 1 s, no proof in 30 s at
  0.1 ms with the same search).
* **fine grid**: otherwise u is chosen so small that the proven worst rounding loss, which
  :func:`rounding_loss` gives in units, is at most half the optimality tolerance
  (:data:`dlsched.gaps.OPTIMALITY_GAP` of a trivial lower bound, or
  :data:`dlsched.gaps.OPTIMALITY_ABS`). The loss: from any real schedule, with jobs ranked
  0..n-1 by start, ``S'_j = ceil(s_j/u) + rank_j`` is feasible for the rounded-up
  durations (two jobs that did not overlap still do not, so every set of jobs running
  together in the new schedule also ran together in the real one) and ends before
  ``e_j/u + rank_j + 2``. So the primal's proven bound, less that loss, bounds the real
  optimum, and one solve both schedules and proves. CP-SAT's search does not depend on
  the size of the numbers much: its scheduling reasoning works on intervals.
  ``effectiveness`` has its own loss (:func:`.effectiveness.grid_loss`) and unit
  (:func:`.effectiveness.fine_unit`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dlsched.errors import InputError
from dlsched.gaps import OPTIMALITY_ABS, OPTIMALITY_GAP
from dlsched.instance import Instance
from dlsched.problems.rates import SpeedModel

from ..backend import Deadline
from .effectiveness import fine_unit, gains

OBJECTIVES = ("makespan", "weighted_jct", "qos", "effectiveness")
WEIGHT_SCALE = 1000
"""Job weights are multiplied by this for CP-SAT; weights with more decimals are refused."""
MAX_DENOMINATOR = 10_000
"""Largest L of an exact grid of 1/L seconds."""
MAX_MODES = 20_000
"""Most placement shapes (modes) the offline model takes over all jobs: it is for small
workloads, and enumerating more would take longer than any sensible time limit."""
MAX_HORIZON = 2**53
"""Most grid units the schedule's horizon may span (CP-SAT's 64-bit integers; a finer
``time_unit`` would overflow them)."""


@dataclass(frozen=True)
class Mode:
    """One placement shape of a job: GPUs per server, and its real run time in seconds."""

    counts: tuple[int, ...]
    duration: float

    @property
    def gpus(self) -> int:
        return sum(self.counts)


def _count_compositions(n: int, caps: list[int]) -> int:
    """How many ways there are to put n GPUs on servers with the given capacities."""
    ways = [1] + [0] * n
    for cap in caps:
        ways = [sum(ways[left - k] for k in range(min(left, cap) + 1)) for left in range(n + 1)]
    return ways[n]


def _compositions(n: int, caps: list[int]) -> list[tuple[int, ...]]:
    """All ways to put n GPUs on servers with the given capacities."""
    out: list[tuple[int, ...]] = []

    def rec(i: int, left: int, acc: list[int]) -> None:
        if i == len(caps):
            if left == 0:
                out.append(tuple(acc))
            return
        for k in range(min(left, caps[i]) + 1):
            rec(i + 1, left - k, [*acc, k])

    rec(0, n, [])
    return out


def check_workload(workload: Instance) -> None:
    """Raise InputError when the offline model cannot represent the workload exactly.

    It models GPUs only: no running jobs, servers whose GPUs share one speed, and per-GPU
    memory and per-server CPU/RAM that can never bind.
    """
    if workload.running:
        raise InputError(f"{len(workload.running)} running jobs", field="running",
                         fix="offline schedules take a whole workload (no running jobs); "
                             "use a snapshot method for snapshots")
    c = workload.cluster
    if not workload.jobs:
        raise InputError("no jobs", field="jobs", fix="give the workload at least one job")
    for n, gpus in enumerate(c.gpus_of_node):
        if len(gpus) and np.ptp(c.gpu_speed[gpus]) > 0:
            raise InputError(f"server {c.node_ids[n]!r} mixes GPU speeds",
                             field=f"cluster.nodes[{n}]",
                             fix="offline schedules need one GPU speed per server")
    cpu = max(j.cpu_per_gpu for j in workload.jobs)
    ram = max(j.ram_gb_per_gpu for j in workload.jobs)
    mem = max(j.gpu_mem_gb or 0.0 for j in workload.jobs)
    full = c.node_gpu_count
    if (np.any(cpu * full > c.node_cpu + 1e-9) or np.any(ram * full > c.node_ram_gb + 1e-9)
            or (c.num_gpus and mem > c.gpu_mem_gb.min() + 1e-9)):
        raise InputError("server CPU/RAM or GPU memory could bind", field="jobs",
                         fix="offline schedules model GPUs only: use jobs whose CPU, RAM and "
                             "GPU memory fit any full server")
    for i, job in enumerate(workload.jobs):
        if abs(job.weight * WEIGHT_SCALE - round(job.weight * WEIGHT_SCALE)) > 1e-9:
            raise InputError(f"weight {job.weight} has more than 3 decimals",
                             field=f"jobs[{i}].weight",
                             fix=f"round it (CP-SAT weights are scaled by {WEIGHT_SCALE})")


def job_modes(workload: Instance, speed: SpeedModel | None = None,
              deadline: Deadline | None = None) -> list[list[Mode]]:
    """The modes of every job, with durations from the speed model (default: the problem's).

    ``deadline``: :class:`~dlsched.formulations.backend.TimeUp` once it passes (checked
    per job)."""
    speed = speed or SpeedModel.default_for(workload.problem)
    bound = speed.bind(workload)
    cluster = workload.cluster
    caps = cluster.node_gpu_count.tolist()
    def shapes_of(job) -> int:
        if job.num_gpus is not None:
            return _count_compositions(job.num_gpus, caps)
        limit = min(job.batch_size or cluster.num_gpus, cluster.num_gpus)
        return sum(math.comb(sum(c >= g for c in caps), a)
                   for g in range(1, max(caps) + 1)
                   for a in range(1, cluster.num_nodes + 1) if a * g <= limit)

    total = sum(shapes_of(job) for job in workload.jobs)
    if total > MAX_MODES:
        raise InputError(
            f"{len(workload.jobs)} jobs on {cluster.num_nodes} servers have {total} placement "
            f"shapes, more than the offline model's {MAX_MODES}", field="jobs",
            fix="offline schedules are for small workloads (e.g. up to 20 jobs on 2-4 "
                "servers); use a policy in the simulator for larger ones")
    out = []
    for i, job in enumerate(workload.jobs):
        if deadline is not None:
            deadline.check("computing the jobs' placement modes")
        if job.num_gpus is not None:
            shapes = _compositions(job.num_gpus, caps)
        else:
            limit = min(job.batch_size or cluster.num_gpus, cluster.num_gpus)
            shapes = []
            for a in range(1, cluster.num_nodes + 1):
                for g in range(1, max(caps) + 1):
                    if a * g > limit:
                        continue
                    for servers in itertools.combinations(range(cluster.num_nodes), a):
                        if all(caps[s] >= g for s in servers):
                            counts = [0] * cluster.num_nodes
                            for s in servers:
                                counts[s] = g
                            shapes.append(tuple(counts))
        modes = []
        work = bound.work(job)
        for counts in shapes:
            gpus = np.concatenate([cluster.gpus_of_node[s][:k] for s, k in enumerate(counts) if k])
            rate, _ = bound.base_rate(job, gpus)
            modes.append(Mode(counts, work / rate))
        if not modes:
            raise InputError(f"job {job.id!r} fits no server combination of this cluster",
                             field=f"jobs[{i}]", fix="ask for at most the cluster's GPUs")
        out.append(modes)
    return out


def rounding_loss(objective: str, weights: list[int], n_jobs: int) -> int:
    """Worst loss (in grid units, times the integer weights for ``weighted_jct``) of
    rounding a real schedule up onto the grid (see the module docstring)."""
    if objective == "weighted_jct":
        return sum(w * (k + 2) for k, w in enumerate(sorted(weights)))
    return n_jobs + 1


@dataclass(frozen=True)
class TimeGrid:
    """Seconds per CP time unit and whether the data lie exactly on the grid."""

    unit: float
    exact: bool

    def up(self, x: float) -> int:
        return math.ceil(x / self.unit - 1e-6)

    def down(self, x: float) -> int:
        return math.floor(x / self.unit + 1e-6)


def _denominator(v: float) -> int | None:
    """q when ``v`` is p/q (q ≤ MAX_DENOMINATOR) to 1e-9 relative, else None."""
    q = Fraction(v).limit_denominator(MAX_DENOMINATOR).denominator
    return q if abs(v * q - round(v * q)) <= 1e-9 * max(1.0, abs(v * q)) else None


def _exact_unit(values: list[float]) -> float | None:
    """1/L for the least common multiple L of the values' denominators (None: too fine)."""
    lcm = 1
    for v in values:
        q = _denominator(v)
        if q is None:
            return None
        lcm = math.lcm(lcm, q)
        if lcm > MAX_DENOMINATOR:
            return None
    return 1.0 / lcm


def _on_grid(values: list[float], unit: float) -> bool:
    return all(abs(v / unit - round(v / unit)) <= 1e-9 * max(1.0, abs(v / unit))
               for v in values)


def choose_grid(workload: Instance, modes: list[list[Mode]], objective: str,
                time_unit: float | None = None) -> TimeGrid:
    """The time grid: ``time_unit`` when given, else exact if possible, else fine enough."""
    jobs = workload.jobs
    values = [j.submit_time for j in jobs] + [m.duration for ms in modes for m in ms]
    values += [j.deadline for j in jobs if j.deadline is not None]
    if time_unit is not None:
        if not time_unit > 0 or not math.isfinite(max(values, default=0.0) / time_unit):
            raise InputError(f"time_unit = {time_unit}", field="options.time_unit",
                             fix="seconds > 0, coarse enough for the workload's times")
        return TimeGrid(float(time_unit), _on_grid(values, time_unit))
    unit = _exact_unit(values)
    if unit is not None:
        return TimeGrid(unit, True)
    dmin = [min(m.duration for m in ms) for ms in modes]
    if objective == "effectiveness":
        return TimeGrid(fine_unit(dmin), False)
    if objective == "weighted_jct":
        trivial = sum(j.weight * d for j, d in zip(jobs, dmin, strict=True))
    else:
        first = min(j.submit_time for j in jobs)
        trivial = max(j.submit_time + d for j, d in zip(jobs, dmin, strict=True)) - first
    allowed = 0.5 * max(OPTIMALITY_ABS, OPTIMALITY_GAP * trivial)
    weights = [round(j.weight * WEIGHT_SCALE) for j in jobs]
    loss = rounding_loss(objective, weights, len(jobs))
    per_unit = loss / WEIGHT_SCALE if objective == "weighted_jct" else loss
    unit = 10.0 ** math.floor(math.log10(allowed / per_unit))
    return TimeGrid(unit, False)


@dataclass(frozen=True)
class OfflineData:
    """Integer data of one offline model (``round_up``: primal; else the relaxation)."""

    workload: Instance
    objective: str
    modes: tuple[tuple[Mode, ...], ...]
    grid: TimeGrid
    round_up: bool
    release: tuple[int, ...]
    durations: tuple[tuple[int, ...], ...]
    deadline: tuple[int | None, ...]
    """floor(deadline / unit) for jobs that can be on time; None for the others."""
    can_meet: tuple[tuple[bool, ...], ...]
    """Per job and mode: can the job end by its deadline in that mode at all (real data:
    submit + duration ≤ deadline)? Decided exactly, so no grid rounding can blur it."""
    weights: tuple[int, ...]
    horizon: int
    capacity: tuple[int, ...]
    """GPUs of each server."""
    gains: tuple[int, ...] = ()
    """``effectiveness`` only: K_j = ⌊SCALE · work_j / u⌋ − 1 per job (:mod:`.effectiveness`)."""

    @property
    def num_jobs(self) -> int:
        return len(self.release)

    @property
    def num_servers(self) -> int:
        return len(self.capacity)

    def server_classes(self) -> list[list[int]]:
        """Groups of interchangeable servers (same GPU count, types and speeds)."""
        c = self.workload.cluster
        groups: dict[tuple, list[int]] = {}
        for n, gpus in enumerate(c.gpus_of_node):
            key = (len(gpus), tuple(c.gpu_type[g] for g in gpus),
                   tuple(float(c.gpu_speed[g]) for g in gpus))
            groups.setdefault(key, []).append(n)
        return [g for g in groups.values() if len(g) > 1]

    def identical_jobs(self) -> list[list[int]]:
        """Groups of interchangeable jobs (same release, modes, weight, deadline and gain)."""
        groups: dict[tuple, list[int]] = {}
        for j in range(self.num_jobs):
            key = (self.release[j], tuple(m.counts for m in self.modes[j]), self.durations[j],
                   self.weights[j], self.deadline[j], self.gains[j] if self.gains else None)
            groups.setdefault(key, []).append(j)
        return [g for g in groups.values() if len(g) > 1]


def offline_data(workload: Instance, objective: str, grid: TimeGrid,
                 modes: list[list[Mode]], round_up: bool = True) -> OfflineData:
    """Round the workload onto ``grid`` (up for the primal, down for the relaxation)."""
    rnd = grid.up if round_up else grid.down
    jobs = workload.jobs
    release = tuple(rnd(j.submit_time) for j in jobs)
    durations = tuple(tuple(max(1 if round_up else 0, rnd(m.duration)) for m in ms)
                      for ms in modes)
    deadline = tuple(grid.down(j.deadline) if j.deadline is not None
                     and j.deadline > j.submit_time else None for j in jobs)
    horizon = max(release) + sum(max(d) for d in durations) + 1
    if horizon > MAX_HORIZON:
        raise InputError(f"the horizon spans {horizon:.3g} units of {grid.unit:g} s",
                         field="options.time_unit",
                         fix="use a coarser time_unit (at most 2^53 units), or leave it out")
    can_meet = tuple(tuple(j.deadline is not None and j.submit_time + m.duration
                           <= j.deadline + 1e-9 for m in ms) for j, ms in zip(jobs, modes,
                                                                           strict=True))
    return OfflineData(
        workload=workload, objective=objective, modes=tuple(tuple(m) for m in modes),
        grid=grid, round_up=round_up, release=release, durations=durations,
        deadline=deadline, can_meet=can_meet,
        weights=tuple(round(j.weight * WEIGHT_SCALE) for j in jobs),
        horizon=horizon, capacity=tuple(workload.cluster.node_gpu_count.tolist()),
        gains=gains(workload, grid.unit) if objective == "effectiveness" else ())
