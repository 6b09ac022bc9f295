"""The instance file's ``cluster.nodes`` form: server and GPU specs, their rules, their tree.

A cluster written as ``nodes`` lists servers (:class:`NodeSpec`) with their GPUs
(:class:`GpuSpec`) and optional rack, domain, socket and switch names.
:func:`check_specs` applies the form's rules with errors naming ``cluster.nodes[i]``
fields; :func:`graph_from_specs` builds the topology tree that
:class:`dlsched.topology.Cluster` keeps; :func:`specs_from_dicts` and
:func:`specs_to_dicts` read and write the file form (written byte-identical to what was
read, so instance sha256 values do not change).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    import networkx as nx

ROOT = "cluster"
"""Id of the root vertex of every tree built from specs."""


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


def check_specs(nodes: tuple[NodeSpec, ...]) -> None:
    """The ``nodes`` form's rules, with errors naming ``cluster.nodes[i]`` fields."""
    seen: dict[str, str] = {ROOT: "the root vertex"}

    def claim(name: str, what: str, field: str) -> None:
        if name in seen:
            raise InputError(
                f"id {name!r} is used twice (as {seen[name]} and as {what})",
                field=field,
                fix="give every domain, rack, node and GPU a unique id "
                f"({ROOT!r} names the root)",
            )
        seen[name] = what

    if not nodes:
        raise InputError(
            "the cluster has no nodes", field="cluster.nodes", fix="list at least one node"
        )
    rack_domain: dict[str, str | None] = {}
    for i, node in enumerate(nodes):
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
    for domain in {n.domain for n in nodes if n.domain is not None}:
        claim(domain, "domain", "cluster.nodes[].domain")
    inner: dict[str, str] = {}
    switch_socket: dict[str, str | None] = {}
    for i, node in enumerate(nodes):
        for k, gpu in enumerate(node.gpus):
            if gpu.switch is not None:
                key = f"{node.id}/{gpu.switch}"
                if switch_socket.setdefault(key, gpu.socket) != gpu.socket:
                    raise InputError(
                        f"switch {gpu.switch!r} of node {node.id!r} appears under two sockets",
                        field=f"cluster.nodes[{i}].gpus[{k}].switch",
                        fix="a switch belongs to exactly one socket (or to none)",
                    )
            for label, what in ((gpu.socket, "socket"), (gpu.switch, "switch")):
                if label is None:
                    continue
                vertex, field = f"{node.id}/{label}", f"cluster.nodes[{i}].gpus[{k}].{what}"
                if vertex in seen:
                    raise InputError(
                        f"{what} vertex {vertex!r} has the id of a {seen[vertex]}",
                        field=field, fix="rename the socket/switch or the clashing id",
                    )
                if inner.setdefault(vertex, what) != what:
                    raise InputError(
                        f"{vertex!r} names both a socket and a switch", field=field,
                        fix="give sockets and switches of a server different names",
                    )


def graph_from_specs(nodes: tuple[NodeSpec, ...]) -> nx.DiGraph:
    """The tree of a checked ``nodes`` form; socket/switch vertices are ``<server>/<name>``."""
    vertices: dict[str, dict[str, Any]] = {ROOT: {"kind": "cluster"}}
    edges: dict[tuple[str, str], None] = {}
    for node in nodes:
        parent = ROOT
        for name, kind in ((node.domain, "domain"), (node.rack, "rack")):
            if name is not None:
                vertices.setdefault(name, {"kind": kind})
                edges[(parent, name)] = None
                parent = name
        vertices[node.id] = {"kind": "server", "cpu": node.cpu, "ram_gb": node.ram_gb}
        edges[(parent, node.id)] = None
        for gpu in node.gpus:
            up = node.id
            for label, kind in ((gpu.socket, "socket"), (gpu.switch, "switch")):
                if label is not None:
                    vertex = f"{node.id}/{label}"
                    vertices.setdefault(vertex, {"kind": kind})
                    edges[(up, vertex)] = None
                    up = vertex
            vertices[gpu.id] = {"kind": "gpu", "type": gpu.type, "mem_gb": gpu.mem_gb,
                                "speed": gpu.speed}
            edges[(up, gpu.id)] = None
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(vertices.items())
    g.add_edges_from(edges)
    return g


def specs_from_dicts(nodes: Iterable[Mapping[str, Any]]) -> tuple[NodeSpec, ...]:
    """The specs of the instance file's ``cluster.nodes`` entries (not yet checked)."""
    out = []
    for node in nodes:
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
        out.append(
            NodeSpec(
                id=node["id"],
                cpu=float(node["cpu"]),
                ram_gb=float(node["ram_gb"]),
                gpus=gpus,
                rack=node.get("rack"),
                domain=node.get("domain"),
            )
        )
    return tuple(out)


def specs_to_dicts(specs: Iterable[NodeSpec]) -> list[dict[str, Any]]:
    """The ``cluster.nodes`` entries of ``specs``; optional fields only when set."""
    out = []
    for node in specs:
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
    return out
