"""Cluster topology: a NetworkX tree cluster → domain → rack → node → socket → switch → GPU.

Middle levels (domain, rack, socket, switch) are optional. Servers ("nodes" in the papers)
carry ``cpu`` and ``ram_gb``; GPUs carry ``type``, ``mem_gb`` and ``speed``. Hot paths use
the cached numpy views (GPU → node, node → rack → domain) rather than the graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from .errors import InputError

ROOT = "cluster"


class Level(IntEnum):
    """Locality level of two GPUs or servers: the level of their lowest common ancestor."""

    GPU = 0
    SWITCH = 1
    SOCKET = 2
    NODE = 3
    RACK = 4
    DOMAIN = 5
    CLUSTER = 6


@dataclass(frozen=True)
class GpuSpec:
    """One GPU as written in an instance file."""

    id: str
    type: str
    mem_gb: float
    speed: float = 1.0
    socket: str | None = None
    switch: str | None = None


@dataclass(frozen=True)
class NodeSpec:
    """One server as written in an instance file."""

    id: str
    cpu: float
    ram_gb: float
    gpus: tuple[GpuSpec, ...]
    rack: str | None = None
    domain: str | None = None


class Cluster:
    """A GPU cluster as a topology tree with cached array views.

    Build it with :func:`homogeneous_cluster` or :meth:`Cluster.from_dict`.
    """

    def __init__(self, nodes: Iterable[NodeSpec]) -> None:
        self.nodes: tuple[NodeSpec, ...] = tuple(nodes)
        self._check()

    # ----------------------------------------------------------------- construction
    def _check(self) -> None:
        seen: dict[str, str] = {}

        def claim(name: str, what: str, field: str) -> None:
            if name in seen:
                raise InputError(
                    f"id {name!r} is used twice (as {seen[name]} and as {what})",
                    field=field,
                    fix="give every domain, rack, node and GPU a unique id",
                )
            seen[name] = what

        if not self.nodes:
            raise InputError(
                "the cluster has no nodes", field="cluster.nodes", fix="list at least one node"
            )
        rack_domain: dict[str, str | None] = {}
        for i, node in enumerate(self.nodes):
            where = f"cluster.nodes[{i}]"
            claim(node.id, "node", f"{where}.id")
            for value, name in ((node.cpu, "cpu"), (node.ram_gb, "ram_gb")):
                if value < 0:
                    raise InputError(
                        f"{name} = {value}", field=f"{where}.{name}", fix="capacities must be >= 0"
                    )
            if node.rack is not None:
                if node.rack in rack_domain and rack_domain[node.rack] != node.domain:
                    raise InputError(
                        f"rack {node.rack!r} appears in two domains",
                        field=f"{where}.rack",
                        fix="a rack belongs to exactly one domain",
                    )
                rack_domain[node.rack] = node.domain
            if not node.gpus:
                raise InputError(
                    "a node without GPUs",
                    field=f"{where}.gpus",
                    fix="list the node's GPUs, or leave the node out",
                )
            for k, gpu in enumerate(node.gpus):
                claim(gpu.id, "GPU", f"{where}.gpus[{k}].id")
                if gpu.mem_gb < 0:
                    raise InputError(
                        f"mem_gb = {gpu.mem_gb}",
                        field=f"{where}.gpus[{k}].mem_gb",
                        fix="capacities must be >= 0",
                    )
                if gpu.speed <= 0:
                    raise InputError(
                        f"speed = {gpu.speed}",
                        field=f"{where}.gpus[{k}].speed",
                        fix="speed must be > 0",
                    )
        for rack in rack_domain:
            claim(rack, "rack", "cluster.nodes[].rack")
        for domain in {n.domain for n in self.nodes if n.domain is not None}:
            claim(domain, "domain", "cluster.nodes[].domain")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cluster:
        """Build from the instance-file form ``{"nodes": [...]}``."""
        nodes = []
        for node in data["nodes"]:
            gpus = tuple(
                GpuSpec(
                    id=g["id"],
                    type=g["type"],
                    mem_gb=float(g["mem_gb"]),
                    speed=float(g.get("speed", 1.0)),
                    socket=g.get("socket"),
                    switch=g.get("switch"),
                )
                for g in node["gpus"]
            )
            nodes.append(
                NodeSpec(
                    id=node["id"],
                    cpu=float(node["cpu"]),
                    ram_gb=float(node["ram_gb"]),
                    gpus=gpus,
                    rack=node.get("rack"),
                    domain=node.get("domain"),
                )
            )
        return cls(nodes)

    def to_dict(self) -> dict[str, Any]:
        """The instance-file form; optional fields are written only when set."""
        out = []
        for node in self.nodes:
            entry: dict[str, Any] = {"id": node.id}
            if node.domain is not None:
                entry["domain"] = node.domain
            if node.rack is not None:
                entry["rack"] = node.rack
            entry["cpu"] = node.cpu
            entry["ram_gb"] = node.ram_gb
            gpus = []
            for g in node.gpus:
                gpu: dict[str, Any] = {"id": g.id, "type": g.type, "mem_gb": g.mem_gb}
                if g.speed != 1.0:
                    gpu["speed"] = g.speed
                if g.socket is not None:
                    gpu["socket"] = g.socket
                if g.switch is not None:
                    gpu["switch"] = g.switch
                gpus.append(gpu)
            entry["gpus"] = gpus
            out.append(entry)
        return {"nodes": out}

    # ----------------------------------------------------------------- graph view
    @cached_property
    def graph(self) -> nx.DiGraph:
        """The topology tree; every vertex has a ``kind`` attribute."""
        g = nx.DiGraph()
        g.add_node(ROOT, kind="cluster")
        for node in self.nodes:
            parent = ROOT
            if node.domain is not None:
                g.add_node(node.domain, kind="domain")
                g.add_edge(ROOT, node.domain)
                parent = node.domain
            if node.rack is not None:
                g.add_node(node.rack, kind="rack")
                g.add_edge(parent, node.rack)
                parent = node.rack
            g.add_node(node.id, kind="node", cpu=node.cpu, ram_gb=node.ram_gb)
            g.add_edge(parent, node.id)
            for gpu in node.gpus:
                up = node.id
                if gpu.socket is not None:
                    up_socket = f"{node.id}/{gpu.socket}"
                    g.add_node(up_socket, kind="socket")
                    g.add_edge(up, up_socket)
                    up = up_socket
                if gpu.switch is not None:
                    up_switch = f"{node.id}/{gpu.switch}"
                    g.add_node(up_switch, kind="switch")
                    g.add_edge(up, up_switch)
                    up = up_switch
                g.add_node(gpu.id, kind="gpu", type=gpu.type, mem_gb=gpu.mem_gb, speed=gpu.speed)
                g.add_edge(up, gpu.id)
        return g

    # ----------------------------------------------------------------- array views
    @cached_property
    def node_ids(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes)

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.node_ids)}

    @cached_property
    def gpu_ids(self) -> tuple[str, ...]:
        return tuple(g.id for n in self.nodes for g in n.gpus)

    @cached_property
    def gpu_index(self) -> dict[str, int]:
        return {g: i for i, g in enumerate(self.gpu_ids)}

    @cached_property
    def gpu_node(self) -> np.ndarray:
        """Index of the server of each GPU."""
        return np.array([i for i, n in enumerate(self.nodes) for _ in n.gpus], dtype=np.int64)

    @cached_property
    def gpus_of_node(self) -> tuple[np.ndarray, ...]:
        """GPU indices of each server, in file order."""
        out, start = [], 0
        for n in self.nodes:
            out.append(np.arange(start, start + len(n.gpus), dtype=np.int64))
            start += len(n.gpus)
        return tuple(out)

    @cached_property
    def gpu_mem_gb(self) -> np.ndarray:
        return np.array([g.mem_gb for n in self.nodes for g in n.gpus], dtype=float)

    @cached_property
    def gpu_speed(self) -> np.ndarray:
        return np.array([g.speed for n in self.nodes for g in n.gpus], dtype=float)

    @cached_property
    def gpu_type(self) -> tuple[str, ...]:
        return tuple(g.type for n in self.nodes for g in n.gpus)

    @cached_property
    def node_cpu(self) -> np.ndarray:
        return np.array([n.cpu for n in self.nodes], dtype=float)

    @cached_property
    def node_ram_gb(self) -> np.ndarray:
        return np.array([n.ram_gb for n in self.nodes], dtype=float)

    @cached_property
    def node_gpu_count(self) -> np.ndarray:
        return np.array([len(n.gpus) for n in self.nodes], dtype=np.int64)

    @cached_property
    def node_rack(self) -> np.ndarray:
        """Rack index of each server, -1 where the server has no rack."""
        return self._label_index([n.rack for n in self.nodes])

    @cached_property
    def node_domain(self) -> np.ndarray:
        """Domain index of each server, -1 where the server has no domain."""
        return self._label_index([n.domain for n in self.nodes])

    @staticmethod
    def _label_index(labels: list[str | None]) -> np.ndarray:
        codes: dict[str, int] = {}
        return np.array(
            [-1 if lab is None else codes.setdefault(lab, len(codes)) for lab in labels],
            dtype=np.int64,
        )

    @cached_property
    def _gpu_socket_switch(self) -> tuple[np.ndarray, np.ndarray]:
        sockets = [
            None if g.socket is None else f"{n.id}/{g.socket}" for n in self.nodes for g in n.gpus
        ]
        switches = [
            None if g.switch is None else f"{n.id}/{g.switch}" for n in self.nodes for g in n.gpus
        ]
        return self._label_index(sockets), self._label_index(switches)

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_ids)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    def node_level(self, a: int, b: int) -> Level:
        """Locality level of servers ``a`` and ``b`` (indices)."""
        if a == b:
            return Level.NODE
        rack = self.node_rack
        if rack[a] >= 0 and rack[a] == rack[b]:
            return Level.RACK
        dom = self.node_domain
        if dom[a] >= 0 and dom[a] == dom[b]:
            return Level.DOMAIN
        return Level.CLUSTER

    @cached_property
    def node_level_matrix(self) -> np.ndarray:
        """``Level`` of every pair of servers, as an int matrix."""
        n = self.num_nodes
        rack, dom = self.node_rack, self.node_domain
        same_rack = (rack[:, None] == rack[None, :]) & (rack[:, None] >= 0)
        same_dom = (dom[:, None] == dom[None, :]) & (dom[:, None] >= 0)
        out = np.full((n, n), int(Level.CLUSTER), dtype=np.int64)
        out[same_dom] = int(Level.DOMAIN)
        out[same_rack] = int(Level.RACK)
        np.fill_diagonal(out, int(Level.NODE))
        return out

    def gpu_level(self, a: int, b: int) -> Level:
        """Locality level of GPUs ``a`` and ``b`` (indices)."""
        if a == b:
            return Level.GPU
        node = self.gpu_node
        if node[a] != node[b]:
            return self.node_level(int(node[a]), int(node[b]))
        socket, switch = self._gpu_socket_switch
        if switch[a] >= 0 and switch[a] == switch[b]:
            return Level.SWITCH
        if socket[a] >= 0 and socket[a] == socket[b]:
            return Level.SOCKET
        return Level.NODE

    def nodes_per_rack(self) -> dict[int, int]:
        """Number of servers in each rack index."""
        vals, counts = np.unique(self.node_rack[self.node_rack >= 0], return_counts=True)
        return dict(zip(vals.tolist(), counts.tolist(), strict=True))

    def nodes_per_domain(self) -> dict[int, int]:
        """Number of servers in each domain index."""
        vals, counts = np.unique(self.node_domain[self.node_domain >= 0], return_counts=True)
        return dict(zip(vals.tolist(), counts.tolist(), strict=True))


def homogeneous_cluster(
    nodes: int,
    gpus_per_node: int,
    *,
    gpu_type: str = "gtx1080",
    gpu_mem_gb: float = 8.0,
    cpu: float = 32.0,
    ram_gb: float = 256.0,
    nodes_per_rack: int | None = None,
    racks_per_domain: int | None = None,
    sockets_per_node: int | None = None,
) -> Cluster:
    """A cluster of identical servers, optionally grouped into racks and domains.

    Ids are ``n000``, ``n000/g0``, racks ``r00``, domains ``d0``; the zero padding grows
    with the count so ids sort in creation order.
    """
    if nodes < 1 or gpus_per_node < 1:
        raise ValueError("nodes and gpus_per_node must be >= 1")
    width = len(str(nodes - 1))
    specs = []
    for i in range(nodes):
        node_id = f"n{i:0{width}d}"
        rack = domain = None
        if nodes_per_rack:
            r = i // nodes_per_rack
            rack = f"r{r:0{width}d}"
            if racks_per_domain:
                domain = f"d{r // racks_per_domain}"
        gpus = tuple(
            GpuSpec(
                id=f"{node_id}/g{k}",
                type=gpu_type,
                mem_gb=gpu_mem_gb,
                socket=None
                if not sockets_per_node
                else f"s{k * sockets_per_node // gpus_per_node}",
            )
            for k in range(gpus_per_node)
        )
        specs.append(
            NodeSpec(id=node_id, cpu=cpu, ram_gb=ram_gb, gpus=gpus, rack=rack, domain=domain)
        )
    return Cluster(specs)
