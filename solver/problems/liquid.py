"""Liquid: network-efficient placement of PS and worker containers (Gu et al., TPDS 2022).

A job is a set of containers (parameter servers and workers, ``Job.containers``), each with
its GPUs (exclusive: a GPU holds one container and no running job), GPU memory per GPU,
CPU, RAM and bandwidth. A decision puts every container of every pending job on one
server (the batch is placed whole: Sec. 5.3 calls a plan with an unplaced container
invalid; a batch that cannot fit is infeasible).

Distance d between servers (``params.distance``: ``"paper"``, Eq. 2, or ``"implementation"``,
the authors' Go code): :mod:`dlsched.problems.liquid_network`.

Objectives (all minimized; PS-PS and worker-worker pairs cost nothing):
  - ``objective="paper"`` (Eqs. 4-7): sum over jobs of Score = λ·Cost + (1-λ)·ΣFitness_n,
        Cost      = (1 / (P·W)) Σ_{PS p, worker w} bw_w · d(node_p, node_w)
        Fitness_n = -(ReqGPU_{j,n} + UsedGPU_n) / TotalGPU_n  for each server n the job uses.
    Our readings: Eq. 5 is missing from the text and Table 1 names numps and numw, so Cost
    is the mean over the job's P·W PS-worker pairs; a pair is weighted by the worker's
    bandwidth (Sec. 5.3: jobs differ in bandwidth sensitivity); UsedGPU_n counts the GPUs
    running jobs hold before the round (so the batch's score does not depend on an order
    and is linear in the assignment).
  - ``objective="implementation"``: Σ_{PS-worker pairs} bw_w · d + (L + N_jn) / N_tasks, with
    L = Σ_tasks s·(1 + UsedGPU_n + GPUs_task) / TotalGPU_n (s = +1 for a PS, -1 for a worker)
    and N_jn the number of distinct (job, server) pairs; N_tasks counts the batch's tasks.
    The Go code's defects are not copied: one batch-wide count (no per-job counter reset),
    a task's own GPUs counted once, UsedGPU_n from before the round.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..decision import Decision
from ..errors import InputError
from ..instance import Instance
from ..jobs import Container
from .base import Problem, Violation, register_problem
from .liquid_assign import (  # noqa: F401 - assign_gpus and decision_from_assignment live here
    EPS,
    assign_gpus,
    assignment_from_decision,
    decision_from_assignment,
)
from .liquid_network import DISTANCE_TABLES, distance_matrix

OBJECTIVES = ("paper", "implementation")


@dataclass(frozen=True)
class LiquidParams:
    """Parameters of a Liquid instance: λ of Eq. 4, the distance table and the objective."""

    lam: float = 0.5
    distance: str = "paper"
    objective: str = "paper"


def parse_liquid_params(params: Mapping[str, Any]) -> LiquidParams:
    """Validate the ``params`` object of a Liquid instance (keys lambda, distance, objective)."""
    known = {"lambda", "distance", "objective"}
    for key in params:
        if key not in known:
            raise InputError(f"unknown parameter {key!r}", field=f"params.{key}",
                             fix=f"use only {', '.join(sorted(known))}")
    lam = params.get("lambda", 0.5)
    if isinstance(lam, bool) or not isinstance(lam, int | float) or not 0.0 <= lam <= 1.0:
        raise InputError(f"lambda = {lam!r}", field="params.lambda", fix="a number in [0, 1]")
    distance = params.get("distance", "paper")
    if distance not in DISTANCE_TABLES:
        raise InputError(f"distance = {distance!r}", field="params.distance",
                         fix=f"use one of {DISTANCE_TABLES}")
    objective = params.get("objective", "paper")
    if objective not in OBJECTIVES:
        raise InputError(f"objective = {objective!r}", field="params.objective",
                         fix=f"use one of {OBJECTIVES}")
    return LiquidParams(float(lam), distance, objective)


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True, eq=False)
class LiquidData:
    """Arrays over the batch's containers and the servers, shared by models and heuristics.

    Containers are numbered job by job in file order. The objective of an assignment
    ``a`` (container → server index) is
        Σ_pairs pair_coef · D[a_p, a_w] + Σ_c lin[c, a_c] + Σ_{distinct (job, n)} node_coef[n].
    """

    instance: Instance
    params: LiquidParams
    containers: tuple[Container, ...]
    c_job: np.ndarray  # [C] job index
    c_ps: np.ndarray  # [C] True for a parameter server
    c_gpus: np.ndarray  # [C]
    c_mem: np.ndarray  # [C] GPU memory per GPU
    c_cpu: np.ndarray
    c_ram: np.ndarray
    job_slices: tuple[slice, ...]
    pair_p: np.ndarray  # [K] PS container of each PS-worker pair
    pair_w: np.ndarray  # [K] worker container
    pair_bw: np.ndarray  # [K] bandwidth weight (the worker's)
    pair_coef: np.ndarray  # [K] objective coefficient per unit distance
    dist: np.ndarray  # [N, N]
    node_coef: np.ndarray  # [N] per distinct (job, server) pair
    used_gpus: np.ndarray  # [N] GPUs running jobs hold
    total_gpus: np.ndarray  # [N]
    free_cpu: np.ndarray  # [N]
    free_ram: np.ndarray  # [N]
    levels: np.ndarray  # [L] GPU-memory levels (ascending, levels[0] = 0)
    c_level: np.ndarray  # [C] index of the container's level
    level_cap: np.ndarray  # [N, L] free GPUs with memory >= level

    @property
    def num_containers(self) -> int:
        return len(self.containers)

    @property
    def num_nodes(self) -> int:
        return self.instance.cluster.num_nodes

    @cached_property
    def lin(self) -> np.ndarray:
        """[C, N] the per-container term of container c on server n (read-only)."""
        out = self._lin(self.c_gpus[:, None], self.c_ps[:, None], self.used_gpus[None, :],
                        self.total_gpus[None, :])
        out.flags.writeable = False
        return out

    def lin_rows(self, rows: slice) -> np.ndarray:
        """``lin[rows]``, computed for those rows only unless :attr:`lin` is built (the
        same floats: the formula is elementwise)."""
        if "lin" in self.__dict__:
            return self.lin[rows]
        return self._lin(self.c_gpus[rows, None], self.c_ps[rows, None],
                         self.used_gpus[None, :], self.total_gpus[None, :])

    def _lin(self, gpus: np.ndarray, ps: np.ndarray, used: np.ndarray,
             total: np.ndarray) -> np.ndarray:
        """The per-container term, elementwise over the broadcast arguments (module
        docstring: -(1-λ)·ReqGPU/TotalGPU, or the implementation's s·(1 + UsedGPU +
        GPUs)/TotalGPU/N_tasks)."""
        p = self.params
        if p.objective == "paper":
            return -(1.0 - p.lam) * gpus / total
        sign = np.where(ps, 1.0, -1.0)
        return sign * (1.0 + used + gpus) / total / max(1, self.num_containers)

    @cached_property
    def job_pair_ranges(self) -> tuple[slice, ...]:
        """Per job, its PS-worker pairs: pairs are numbered job by job, PS by PS (so
        ``pair_p`` never decreases), and job j's are the range of those whose PS is one of
        its containers."""
        starts = [sl.start for sl in self.job_slices] + [self.num_containers]
        ends = np.searchsorted(self.pair_p, starts).tolist()
        return tuple(slice(a, b) for a, b in zip(ends[:-1], ends[1:], strict=True))

    @cached_property
    def job_pairs(self) -> tuple[np.ndarray, ...]:
        """Per job, the indices of its PS-worker pairs (ascending)."""
        return tuple(np.arange(k.start, k.stop) for k in self.job_pair_ranges)

    @cached_property
    def job_pair_terms(self) -> tuple[tuple[np.ndarray, ...], ...]:
        """Per job: its pairs' coefficients, PS and worker as indices within the job, and
        ``arange`` over its containers (what pricing one job's plan reads)."""
        out = []
        for sl, k in zip(self.job_slices, self.job_pair_ranges, strict=True):
            out.append((self.pair_coef[k], self.pair_p[k] - sl.start, self.pair_w[k] - sl.start,
                        np.arange(sl.stop - sl.start)))
        return tuple(out)

    @cached_property
    def pairs_as_ps(self) -> tuple[np.ndarray, ...]:
        """Per container, the (ascending) indices of the pairs it is the PS of."""
        return self._pairs_by(self.pair_p)

    @cached_property
    def pairs_as_worker(self) -> tuple[np.ndarray, ...]:
        """Per container, the (ascending) indices of the pairs it is the worker of."""
        return self._pairs_by(self.pair_w)

    def _pairs_by(self, side: np.ndarray) -> tuple[np.ndarray, ...]:
        order = np.argsort(side, kind="stable")
        ends = np.cumsum(np.bincount(side, minlength=self.num_containers)).tolist()
        return tuple(order[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True))

    @cached_property
    def job_needs(self) -> tuple[tuple[np.ndarray, float, float], ...]:
        """Per job: (GPUs it needs at each memory level or above, its CPU, its RAM)."""
        out = []
        levels, gpus = self.c_level.tolist(), self.c_gpus.tolist()
        for sl in self.job_slices:
            need = [0] * self.level_cap.shape[1]  # integers: exact, as int64's
            for c in range(sl.start, sl.stop):
                for lev in range(levels[c] + 1):
                    need[lev] += gpus[c]
            out.append((np.array(need, dtype=np.int64), self.c_cpu[sl].sum(),
                        self.c_ram[sl].sum()))
        return tuple(out)

    @cached_property
    def cpu_limit(self) -> np.ndarray:
        """[N] ``free_cpu + EPS``: a server takes CPU up to it (computed once)."""
        return self.free_cpu + EPS

    @cached_property
    def ram_limit(self) -> np.ndarray:
        """[N] ``free_ram + EPS``."""
        return self.free_ram + EPS

    @cached_property
    def alone_fits(self) -> np.ndarray:
        """[C, N] True where a container fits on an otherwise idle (this round) server."""
        need = self.c_gpus[:, None] <= self.level_cap[:, self.c_level].T
        cpu = self.free_cpu[None, :] >= self.c_cpu[:, None] - EPS
        ram = self.free_ram[None, :] >= self.c_ram[:, None] - EPS
        return need & cpu & ram

    def pair_rows(self, k: np.ndarray, servers: np.ndarray) -> np.ndarray:
        """[N] ``pair_coef[k] @ dist[servers]``: pair i's coefficient times the distance
        from ``servers[i]`` to every server, summed over the pairs. One pair is the product
        itself (the matmul's one term, the same floats), without the matmul's ~20 µs."""
        if len(k) == 1:
            return self.pair_coef[k[0]] * self.dist[servers[0]]
        return self.pair_coef[k] @ self.dist[servers]

    def score(self, assign: np.ndarray) -> float:
        """The objective of a complete assignment (container → server index)."""
        return float(sum(self.score_parts(assign)))

    def score_parts(self, assign: np.ndarray) -> tuple[float, float, float]:
        """(network term, per-container term, per-(job, server) term), already weighted."""
        assign = np.asarray(assign, dtype=np.int64)
        net = float(self.pair_coef @ self.dist[assign[self.pair_p], assign[self.pair_w]])
        lin = float(self._lin(self.c_gpus, self.c_ps, self.used_gpus[assign],
                              self.total_gpus[assign]).sum())  # lin[c, assign[c]]
        keys = np.unique(self.c_job * self.num_nodes + assign)
        nodes = float(self.node_coef[keys % self.num_nodes].sum())
        return net, lin, nodes


_DATA: weakref.WeakKeyDictionary[Instance, LiquidData] = weakref.WeakKeyDictionary()


def liquid_data(instance: Instance) -> LiquidData:
    """The arrays of a Liquid instance, built once per instance (instances are immutable;
    the cache holds them weakly) and read-only: a method, the checks and the evaluator of
    one ``solve()`` call share them."""
    hit = _DATA.get(instance)
    if hit is None:
        hit = _build_data(instance)
        for value in vars(hit).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        _DATA[instance] = hit
    return hit


def _build_data(instance: Instance) -> LiquidData:
    """Build the arrays of a Liquid instance."""
    p = parse_liquid_params(instance.params)
    cluster = instance.cluster
    containers, c_job, slices, start = [], [], [], 0
    for j, job in enumerate(instance.jobs):
        containers.extend(job.containers)
        c_job.extend([j] * len(job.containers))
        slices.append(slice(start, start + len(job.containers)))
        start += len(job.containers)
    c_job_arr = np.array(c_job, dtype=np.int64)
    c_ps = np.array([c.role == "ps" for c in containers], dtype=bool)
    c_gpus = np.array([c.gpus for c in containers], dtype=np.int64)
    c_mem = np.array([c.gpu_mem_gb for c in containers], dtype=float)
    c_cpu = np.array([c.cpu for c in containers], dtype=float)
    c_ram = np.array([c.ram_gb for c in containers], dtype=float)
    c_bw = np.array([c.bandwidth for c in containers], dtype=float)

    pair_p, pair_w, pair_coef = [], [], []
    is_ps = c_ps.tolist()
    for sl in slices:
        ps = [c for c in range(sl.start, sl.stop) if is_ps[c]]
        workers = [c for c in range(sl.start, sl.stop) if not is_ps[c]]
        scale = 1.0
        if p.objective == "paper" and len(ps) and len(workers):
            scale = p.lam / (len(ps) * len(workers))
        for a in ps:
            for b in workers:
                pair_p.append(a)
                pair_w.append(b)
                pair_coef.append(scale * c_bw[b])
    pair_p_arr = np.array(pair_p, dtype=np.int64)
    pair_w_arr = np.array(pair_w, dtype=np.int64)

    busy = instance.gpu_busy
    node_of = cluster.gpu_node
    used = np.bincount(node_of, weights=busy.astype(float), minlength=cluster.num_nodes)
    total = cluster.node_gpu_count.astype(float)
    n_tasks = max(1, len(containers))
    # the per-container term lin[c, n] is built on demand (LiquidData.lin, lin_rows)
    if p.objective == "paper":
        node_coef = -(1.0 - p.lam) * used / total
    else:
        node_coef = np.full(cluster.num_nodes, 1.0 / n_tasks)

    cpu_used, ram_used = instance.node_usage
    levels = np.unique(np.concatenate([[0.0], c_mem[c_gpus > 0]]))
    c_level = np.where(c_gpus > 0, np.searchsorted(levels, c_mem), 0).astype(np.int64)
    gpu_mem = cluster.gpu_mem_gb
    idle, columns, idle_count = ~busy, [], None
    for lev in levels:  # free GPUs per server with memory >= the level
        enough = gpu_mem >= lev - EPS
        if enough.all():  # every GPU: the same weights as idle's (a common case, counted once)
            if idle_count is None:
                idle_count = np.bincount(node_of, weights=idle.astype(float),
                                         minlength=cluster.num_nodes)
            columns.append(idle_count)
        else:
            columns.append(np.bincount(node_of, weights=(enough & idle).astype(float),
                                       minlength=cluster.num_nodes))
    level_cap = np.stack(columns, axis=1).astype(np.int64)
    return LiquidData(
        instance=instance, params=p, containers=tuple(containers), c_job=c_job_arr, c_ps=c_ps,
        c_gpus=c_gpus, c_mem=c_mem, c_cpu=c_cpu, c_ram=c_ram, job_slices=tuple(slices),
        pair_p=pair_p_arr, pair_w=pair_w_arr, pair_bw=c_bw[pair_w_arr] if pair_w else
        np.zeros(0), pair_coef=np.array(pair_coef, dtype=float),
        dist=distance_matrix(cluster, p.distance), node_coef=node_coef,
        used_gpus=used, total_gpus=total, free_cpu=cluster.node_cpu - cpu_used,
        free_ram=cluster.node_ram_gb - ram_used, levels=levels, c_level=c_level,
        level_cap=level_cap)


# ----------------------------------------------------------------------------- objective
@dataclass(frozen=True)
class LiquidBreakdown:
    """The parts of a Liquid objective (weighted as they enter the total).

    ``network``: λ·ΣCost (paper) or Σ bw·d (implementation); ``per_container``: the part
    of (1-λ)·ΣFitness from requested GPUs (paper) or L / N_tasks (implementation);
    ``per_job_node``: the UsedGPU part of (1-λ)·ΣFitness (paper) or N_jn / N_tasks.
    ``network_distance`` is Σ bw·d over PS-worker pairs, unweighted by λ or pair counts.
    """

    network: float
    per_container: float
    per_job_node: float
    network_distance: float
    job_nodes: int

    @property
    def total(self) -> float:
        return self.network + self.per_container + self.per_job_node


def liquid_breakdown(instance: Instance, decision: Decision) -> LiquidBreakdown:
    """The objective's parts for a decision that places every job."""
    data = liquid_data(instance)
    assign = assignment_from_decision(data, decision)
    net, lin, nodes = data.score_parts(assign)
    raw = float(data.pair_bw @ data.dist[assign[data.pair_p], assign[data.pair_w]]) \
        if len(data.pair_p) else 0.0
    pairs = len(np.unique(data.c_job * data.num_nodes + assign))
    return LiquidBreakdown(net, lin, nodes, raw, pairs)


class LiquidProblem(Problem):
    """Liquid (paper seed 003): place a batch of PS/worker container jobs, all or none.

    Jobs are lists of containers (GPUs, GPU memory, CPU, RAM, bandwidth); GPUs are
    exclusive; a decision places the whole batch; the objective (minimized) is the score
    of Eqs. 4-7 (:func:`liquid_breakdown`).
    """

    name = "liquid"
    sense = "min"
    job_fields = ()
    exclusive_gpus = True
    whole_batch = True
    default_locality = "liquid"

    def parse_params(self, params: Mapping[str, Any]) -> LiquidParams:
        """Parse ``params`` (``lambda`` of Eq. 4, the distance table, the objective).

        Parameters
        ----------
        params
            The instance's ``params`` mapping.

        Returns
        -------
        LiquidParams
            The typed parameters (:func:`parse_liquid_params`).
        """
        return parse_liquid_params(params)

    def check_instance(self, instance: Instance) -> None:
        """The base checks, and containers with a known role and demands >= 0 on every job.

        Parameters
        ----------
        instance
            The instance being loaded.

        Returns
        -------
        None

        Raises
        ------
        InputError
            A job without containers, an unknown role or a negative demand.
        """
        super().check_instance(instance)
        for i, job in enumerate(instance.jobs):
            if not job.containers:
                raise InputError(f"job {job.id!r} has no containers", field=f"jobs[{i}].containers",
                                 fix="list the job's PS and worker containers")
            for k, c in enumerate(job.containers):
                where = f"jobs[{i}].containers[{k}]"
                if c.role not in ("ps", "worker"):
                    raise InputError(f"role = {c.role!r}", field=f"{where}.role",
                                     fix='use "ps" or "worker"')
                if c.gpus < 0 or min(c.gpu_mem_gb, c.cpu, c.ram_gb, c.bandwidth) < 0:
                    raise InputError("a negative demand", field=where,
                                     fix="gpus, gpu_mem_gb, cpu, ram_gb, bandwidth are >= 0")

    def check_decision(self, instance: Instance, decision: Decision) -> list[Violation]:
        """The batch is placed whole.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A decision that passes the generic rules.

        Returns
        -------
        list of Violation
            One ``unplaced`` violation per pending job the decision leaves out.
        """
        placed = set(decision.placed_jobs)
        return [Violation("unplaced", j.id, "a Liquid batch is placed whole")
                for j in instance.jobs if j.id not in placed]

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        """The score of Eqs. 4-7 (or the implementation's cost; minimized).

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        float
            ``liquid_breakdown(instance, decision).total``.
        """
        return liquid_breakdown(instance, decision).total

    # the score mixes a network cost with negative fitness terms and crosses zero
    report_gap = "absolute"

    def report_metrics(self, instance: Instance, decision: Decision) -> dict[str, float]:
        """Network cost (Σ bandwidth × distance of PS-worker pairs) and the score's parts.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        dict of str to float
            ``network cost``, ``score: network``, ``score: GPU fit``, ``score: job-servers``
            (the weighted terms that add up to the objective) and ``job-server pairs``.
        """
        b = liquid_breakdown(instance, decision)
        return {"network cost": b.network_distance, "score: network": b.network,
                "score: GPU fit": b.per_container, "score: job-servers": b.per_job_node,
                "job-server pairs": float(b.job_nodes)}


register_problem(LiquidProblem())
