"""Liquid's network: distances between servers and the network cost a placement pays.

Distance between servers a and b: the value of their lowest common ancestor in the
cluster's topology graph (0 on one server; a user's graph sets the racks and domains).
  - ``"paper"`` (Eq. 2): the number of servers under that ancestor: the rack's size within
    a rack, the domain's size across racks of a domain, the cluster's size across domains
    (the paper only says to avoid that case; we price it, we do not forbid).
  - ``"implementation"`` (the authors' Go code): 1 within a rack, 4 across racks of a
    domain, 40 across domains.
A cluster without any domain level is one domain (so cross-rack pairs cost 4, not 40).

Rate models (:mod:`dlsched.problems.rates`): Liquid's PS/worker network cost read as a
slowdown, ``1 + Σ_{PS p, worker w} bw_w · [p, w on different servers]`` (``"liquid"``),
with bw_w the worker container's bandwidth weight, which ``instances/derive/
liquid_bandwidth.py`` fits as (seconds one separated pair adds) / (one-server run time);
the job's ``duration`` is its one-server time, so a job alone on one server runs exactly
``duration``. ``"liquid_distance"``: the same with each separated pair weighted by the
``"implementation"`` distance (the measurements behind the fit were within one rack, so
both readings agree there).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..errors import InputError
from ..topology import Cluster, Level
from ..topology_graph import LEVEL_NAMES
from .rates import Locality, register_locality

if TYPE_CHECKING:
    from ..instance import Instance
    from ..jobs import Job
    from .rates import SpeedModel

DISTANCE_TABLES = ("paper", "implementation")
IMPLEMENTATION_DISTANCE = {"rack": 1.0, "domain": 4.0, "cluster": 40.0}


@dataclass(frozen=True)
class Group:
    """A vertex of the topology tree above the servers, or a server, with its distance value.

    ``saving`` = value(parent) - value(self): what two containers save by sharing it.
    """

    kind: str  # "node" | "rack" | "domain"
    index: int  # node, rack or domain index
    members: tuple[int, ...]  # server indices
    value: float
    saving: float


def _group_values(cluster: Cluster, distance: str
                  ) -> tuple[float, dict[Level, np.ndarray], dict[Level, dict[int, float]]]:
    """(root value, group code of every server per level, value of every group)."""
    above = (Level.RACK, Level.DOMAIN)
    codes = {lev: cluster.node_group(lev) for lev in above}
    value: dict[Level, dict[int, float]] = {}
    for lev in above:
        present, sizes = np.unique(codes[lev][codes[lev] >= 0], return_counts=True)
        if distance == "paper":
            value[lev] = {int(c): float(k) for c, k in zip(present, sizes, strict=True)}
        elif distance == "implementation":
            value[lev] = {int(c): IMPLEMENTATION_DISTANCE[LEVEL_NAMES[lev]] for c in present}
        else:
            raise ValueError(f"unknown distance table {distance!r}")
    if distance == "paper":
        root = float(cluster.num_nodes)
    else:
        root = IMPLEMENTATION_DISTANCE["cluster" if value[Level.DOMAIN] else "domain"]
    return root, codes, value


def topology_groups(cluster: Cluster, distance: str) -> tuple[float, tuple[Group, ...]]:
    """Value of the root and every group (server, rack, domain) with its saving.

    The groups are the servers and the vertices above them in the cluster's topology graph
    (racks, domains: ``Cluster.node_group``); a group's value is the distance of two
    servers whose lowest common ancestor it is. d(a, b) = root value - Σ saving over the
    groups holding both a and b.
    """
    n = cluster.num_nodes
    above = (Level.RACK, Level.DOMAIN)
    root, codes, value = _group_values(cluster, distance)

    def parent_value(server: int, below: Level) -> float:
        """Value of the lowest group above level ``below`` that holds ``server``."""
        for lev in above:
            if lev > below and codes[lev][server] >= 0:
                return value[lev][int(codes[lev][server])]
        return root

    groups = [Group("node", i, (i,), 0.0, parent_value(i, Level.NODE)) for i in range(n)]
    for lev in above:
        for c in sorted(value[lev]):
            members = tuple(int(i) for i in np.flatnonzero(codes[lev] == c))
            groups.append(Group(LEVEL_NAMES[lev], c, members, value[lev][c],
                                parent_value(members[0], lev) - value[lev][c]))
    return root, tuple(groups)


_DISTANCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def distance_matrix(cluster: Cluster, distance: str) -> np.ndarray:
    """d(a, b) for every pair of servers (the table chosen by ``distance``), read-only and
    cached per cluster (a cluster never changes)."""
    per_cluster = _DISTANCES.setdefault(cluster, {})
    if distance not in per_cluster:
        out = _distance_matrix(cluster, distance)
        out.flags.writeable = False
        per_cluster[distance] = out
    return per_cluster[distance]


def _distance_matrix(cluster: Cluster, distance: str) -> np.ndarray:
    root, codes, value = _group_values(cluster, distance)
    n = cluster.num_nodes
    out = np.full((n, n), root)
    for lev in (Level.DOMAIN, Level.RACK):  # coarse to fine: the finer common group wins
        c = codes[lev]
        vals = np.array([value[lev].get(int(x), root) for x in c])
        same = (c[:, None] == c[None, :]) & (c[:, None] >= 0)
        out = np.where(same, vals[:, None], out)
    np.fill_diagonal(out, 0.0)
    return out


# ----------------------------------------------------------------------------- rate models
class LiquidLocality(Locality):
    """Locality model ``"liquid"``: ``1 + Σ_{PS p, worker w} bw_w · d(n_p, n_w)`` with d 1
    between any two servers (module docstring)."""

    table: ClassVar[str | None] = None
    """The distance table weighting a separated pair (``None``: 1 for every pair)."""

    def __init__(self, speed: SpeedModel, workload: Instance) -> None:
        super().__init__(speed, workload)
        cluster = workload.cluster
        self._dist = (1.0 - np.eye(cluster.num_nodes) if self.table is None
                      else distance_matrix(cluster, self.table))
        for i, job in enumerate(workload.jobs):
            if not job.containers:
                raise InputError(f"job {job.id!r} has no containers",
                                 field=f"jobs[{i}].containers",
                                 fix="the liquid locality model needs PS/worker containers")

    def slowdown(self, job: Job, gpus: np.ndarray,
                 task_nodes: Mapping[str, int] | None) -> float:
        """The network slowdown; ``task_nodes`` (container id → server) is required."""
        if task_nodes is None:
            raise InputError(f"job {job.id!r} placed without containers", field="decision",
                             fix="Liquid placements list each container's server (tasks)")
        ps = [task_nodes[c.id] for c in job.containers if c.role == "ps"]
        slow = 1.0
        for c in job.containers:
            if c.role == "worker":
                n = task_nodes[c.id]
                slow += c.bandwidth * float(sum(self._dist[p, n] for p in ps))
        return slow


class LiquidDistanceLocality(LiquidLocality):
    """Locality model ``"liquid_distance"``: separated pairs weighted by the Go
    implementation's distance (1 within a rack, 4 across racks, 40 across domains)."""

    table = "implementation"


register_locality("liquid", LiquidLocality)
register_locality("liquid_distance", LiquidDistanceLocality)
