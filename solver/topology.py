"""Cluster topology: the cluster *is* a NetworkX tree cluster → domain → rack → server →
socket → switch → GPU (middle levels optional; see :mod:`dlsched.topology_graph`).

Builders (:func:`homogeneous_cluster`, :class:`Cluster` from :class:`NodeSpec` lists, the
instance file's ``cluster.nodes`` form) make the graph; :meth:`Cluster.from_graph`, the
instance file's ``cluster.graph`` form and :func:`dlsched.topology_io.load_topology` take a
user's graph. Every derived view (GPU → server, server → rack → domain, the locality level
of two GPUs or servers, locality groups, link bandwidths) is computed once from the graph
(each vertex's ancestors, lowest common ancestors) and cached as numpy arrays for hot paths.

Written form: a cluster keeps the form it came from. Built from ``NodeSpec`` lists or the
``nodes`` form, :meth:`Cluster.to_dict` writes the ``nodes`` form (byte-identical to before,
so instance sha256 values do not change); built from a graph, it writes ``{"graph":
<node-link>}`` (vertex and link order and every attribute kept), even when the graph could
have been written in the ``nodes`` form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError
from .topology_graph import LEVEL_NAMES, Level, check_graph, graph_from_node_link, node_link

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Cluster", "GpuSpec", "Level", "NodeSpec", "ROOT", "homogeneous_cluster"]

ROOT = "cluster"


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


def _check_specs(nodes: tuple[NodeSpec, ...]) -> None:
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


def _graph_from_specs(nodes: tuple[NodeSpec, ...]) -> nx.DiGraph:
    """The tree of a checked ``nodes`` form; socket/switch vertices are ``<server>/<name>``."""
    import networkx as nx

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
    g = nx.DiGraph()
    g.add_nodes_from(vertices.items())
    g.add_edges_from(edges)
    return g


@dataclass(frozen=True, eq=False)
class _Tree:
    """What every view is computed from: the tree's order and each vertex's ancestors."""

    node_ids: tuple[str, ...]  # servers in graph order
    gpu_ids: tuple[str, ...]  # GPUs by server (graph order), then graph order
    node_anc: np.ndarray  # [N, 7] code of each server's ancestor per Level, -1 where none
    gpu_anc: np.ndarray  # [G, 7] code of each GPU's ancestor (or itself) per Level
    vertices: tuple[tuple[str, ...], ...]  # per Level: vertex id of each code
    node_up_bw: np.ndarray  # [N, 7] smallest link bandwidth from the server up to that level
    gpu_up_bw: np.ndarray  # [G, 7] the same from the GPU


def _tree_of(g: nx.DiGraph) -> _Tree:
    """Walk every server and GPU up to the root once (a checked, oriented tree)."""
    level_of = {name: Level(i) for i, name in enumerate(LEVEL_NAMES)}
    kind = {v: level_of[k] for v, k in g.nodes(data="kind")}
    parent: dict[str, str] = {}
    bw: dict[str, float] = {}
    for u, v, d in g.edges(data=True):
        parent[v] = u
        bw[v] = float(d.get("bandwidth", np.inf))
    servers = [v for v in g.nodes if kind[v] is Level.NODE]
    index = {s: i for i, s in enumerate(servers)}
    by_server: list[list[str]] = [[] for _ in servers]
    below: dict[str, list[tuple[Level, str, float]]] = {}
    for v in g.nodes:
        if kind[v] is Level.GPU:
            chain, up, low = [], v, np.inf
            while kind[up] is not Level.NODE:
                low = min(low, bw[up])
                up = parent[up]
                chain.append((kind[up], up, low))
            by_server[index[up]].append(v)
            below[v] = chain
    codes: list[dict[str, int]] = [{} for _ in range(7)]
    codes[Level.NODE] = dict(index)
    node_anc = [[-1, -1, -1, i, -1, -1, -1] for i in range(len(servers))]
    node_up = [[np.inf] * 7 for _ in servers]
    for i, s in enumerate(servers):
        up, low = s, np.inf
        while up in parent:
            low = min(low, bw[up])
            up = parent[up]
            lev = kind[up]
            node_anc[i][lev] = codes[lev].setdefault(up, len(codes[lev]))
            node_up[i][lev] = low
    gpu_ids = tuple(v for group in by_server for v in group)
    gpu_node = [i for i, group in enumerate(by_server) for _ in group]
    codes[Level.GPU] = {v: k for k, v in enumerate(gpu_ids)}
    gpu_anc = [[k, -1, -1, *node_anc[gpu_node[k]][Level.NODE:]] for k in range(len(gpu_ids))]
    gpu_up = [[np.inf] * 7 for _ in gpu_ids]
    for k, v in enumerate(gpu_ids):
        for lev, up, low in below[v]:
            if lev < Level.NODE:
                gpu_anc[k][lev] = codes[lev].setdefault(up, len(codes[lev]))
            gpu_up[k][lev] = low
        for lev in range(Level.NODE + 1, 7):
            gpu_up[k][lev] = min(low, node_up[gpu_node[k]][lev])
    return _Tree(
        node_ids=tuple(servers), gpu_ids=gpu_ids,
        node_anc=np.array(node_anc, dtype=np.int64).reshape(-1, 7),
        gpu_anc=np.array(gpu_anc, dtype=np.int64).reshape(-1, 7),
        vertices=tuple(tuple(c) for c in codes),
        node_up_bw=np.array(node_up, dtype=float).reshape(-1, 7),
        gpu_up_bw=np.array(gpu_up, dtype=float).reshape(-1, 7),
    )


def _lca_levels(anc: np.ndarray, a: np.ndarray, b: np.ndarray, lowest: int) -> np.ndarray:
    """Level of the lowest common ancestor of rows ``a`` and ``b`` (arrays of indices)."""
    out = np.full(np.broadcast(a, b).shape, int(Level.CLUSTER), dtype=np.int64)
    for lev in range(int(Level.CLUSTER) - 1, lowest - 1, -1):
        ca, cb = anc[a, lev], anc[b, lev]
        out = np.where((ca >= 0) & (ca == cb), lev, out)
    return out


class Cluster:
    """A GPU cluster: a topology tree (``graph``) with cached array views.

    Build it with :func:`homogeneous_cluster`, ``Cluster(node_specs)``,
    :meth:`Cluster.from_dict` or :meth:`Cluster.from_graph`.

    Parameters
    ----------
    nodes
        The servers, each with its GPUs and optional rack, domain, socket and switch names.
    """

    def __init__(self, nodes: Iterable[NodeSpec]) -> None:
        import networkx as nx

        specs = tuple(nodes)
        _check_specs(specs)
        self._specs: tuple[NodeSpec, ...] | None = specs
        self.graph: nx.DiGraph = nx.freeze(_graph_from_specs(specs))
        """The topology tree (edges parent → child, frozen: the views are cached from it);
        every vertex has a ``kind``."""

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_graph(cls, graph: nx.Graph, where: str = "cluster.graph") -> Cluster:
        """Build from a NetworkX topology graph (checked; see :mod:`dlsched.topology_graph`).

        Parameters
        ----------
        graph
            A tree with one ``cluster`` vertex; vertices name their ``level`` (or ``kind``).
        where
            The field named in errors.

        Returns
        -------
        Cluster
            A cluster whose :meth:`to_dict` writes the graph (node-link form).

        Raises
        ------
        InputError
            A one-line error naming the offending vertex.
        """
        import networkx as nx

        self = cls.__new__(cls)
        self._specs = None
        self.graph = nx.freeze(check_graph(graph, where))
        return self

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cluster:
        """Build from the instance-file form: ``{"nodes": [...]}`` or ``{"graph": {...}}``."""
        if "graph" in data:
            if "nodes" in data:
                raise InputError("both cluster.nodes and cluster.graph are given",
                                 field="cluster", fix="give one of them")
            return cls.from_graph(graph_from_node_link(data["graph"]), "cluster.graph")
        if "nodes" not in data:
            raise InputError("missing field", field="cluster.nodes",
                             fix="give cluster.nodes (servers) or cluster.graph (a topology)")
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

    @property
    def from_graph_form(self) -> bool:
        """True when the cluster came from a graph (and :meth:`to_dict` writes one)."""
        return self._specs is None

    def to_dict(self) -> dict[str, Any]:
        """The instance-file form it came in: ``{"nodes": [...]}`` or ``{"graph": {...}}``.

        In the ``nodes`` form optional fields are written only when set.
        """
        if self._specs is None:
            return {"graph": node_link(self.graph)}
        out = []
        for node in self._specs:
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

    @cached_property
    def nodes(self) -> tuple[NodeSpec, ...]:
        """The servers as specs (from a graph: rack, domain, socket, switch are vertex ids)."""
        if self._specs is not None:
            return self._specs
        g, t = self.graph, self._tree
        out = []
        for i, s in enumerate(t.node_ids):
            gpus = []
            for k in self.gpus_of_node[i]:
                sock, sw = t.gpu_anc[k, Level.SOCKET], t.gpu_anc[k, Level.SWITCH]
                gid = t.gpu_ids[k]
                gpus.append(GpuSpec(
                    id=gid, type=g.nodes[gid]["type"], mem_gb=float(g.nodes[gid]["mem_gb"]),
                    speed=float(g.nodes[gid].get("speed", 1.0)),
                    socket=t.vertices[Level.SOCKET][sock] if sock >= 0 else None,
                    switch=t.vertices[Level.SWITCH][sw] if sw >= 0 else None))
            rack, dom = t.node_anc[i, Level.RACK], t.node_anc[i, Level.DOMAIN]
            out.append(NodeSpec(
                id=s, cpu=float(g.nodes[s]["cpu"]), ram_gb=float(g.nodes[s]["ram_gb"]),
                gpus=tuple(gpus), rack=t.vertices[Level.RACK][rack] if rack >= 0 else None,
                domain=t.vertices[Level.DOMAIN][dom] if dom >= 0 else None))
        return tuple(out)

    # ----------------------------------------------------------------- graph-derived views
    @cached_property
    def _tree(self) -> _Tree:
        return _tree_of(self.graph)

    @cached_property
    def node_ids(self) -> tuple[str, ...]:
        """Server ids in graph (file) order."""
        return self._tree.node_ids

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.node_ids)}

    @cached_property
    def gpu_ids(self) -> tuple[str, ...]:
        """GPU ids, server by server (servers in graph order, GPUs in graph order)."""
        return self._tree.gpu_ids

    @cached_property
    def gpu_index(self) -> dict[str, int]:
        return {g: i for i, g in enumerate(self.gpu_ids)}

    @cached_property
    def gpu_node(self) -> np.ndarray:
        """Index of the server of each GPU."""
        return self._tree.gpu_anc[:, Level.NODE].copy()

    @cached_property
    def gpus_of_node(self) -> tuple[np.ndarray, ...]:
        """GPU indices of each server, in order (contiguous ranges)."""
        ends = np.cumsum(self.node_gpu_count)
        return tuple(np.arange(e - c, e, dtype=np.int64)
                     for e, c in zip(ends, self.node_gpu_count, strict=True))

    def _gpu_attr(self, key: str, default: Any = None) -> list[Any]:
        nodes = self.graph.nodes
        return [nodes[g].get(key, default) for g in self.gpu_ids]

    @cached_property
    def gpu_mem_gb(self) -> np.ndarray:
        return np.array(self._gpu_attr("mem_gb"), dtype=float)

    @cached_property
    def gpu_speed(self) -> np.ndarray:
        return np.array(self._gpu_attr("speed", 1.0), dtype=float)

    @cached_property
    def gpu_type(self) -> tuple[str, ...]:
        return tuple(self._gpu_attr("type"))

    @cached_property
    def node_cpu(self) -> np.ndarray:
        return np.array([self.graph.nodes[n]["cpu"] for n in self.node_ids], dtype=float)

    @cached_property
    def node_ram_gb(self) -> np.ndarray:
        return np.array([self.graph.nodes[n]["ram_gb"] for n in self.node_ids], dtype=float)

    @cached_property
    def node_gpu_count(self) -> np.ndarray:
        return np.bincount(self.gpu_node, minlength=self.num_nodes).astype(np.int64)

    def node_group(self, level: Level | int) -> np.ndarray:
        """Index of each server's ancestor at ``level`` (-1 where it has none).

        Indices number the level's vertices in order of first appearance over the servers.
        """
        return self._tree.node_anc[:, int(level)]

    def level_vertices(self, level: Level | int) -> tuple[str, ...]:
        """Vertex ids at ``level``, in the order of their indices."""
        return self._tree.vertices[int(level)]

    @cached_property
    def node_rack(self) -> np.ndarray:
        """Rack index of each server, -1 where the server has no rack."""
        return self.node_group(Level.RACK).copy()

    @cached_property
    def node_domain(self) -> np.ndarray:
        """Domain index of each server, -1 where the server has no domain."""
        return self.node_group(Level.DOMAIN).copy()

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_ids)

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    def node_level(self, a: int, b: int) -> Level:
        """Locality level of servers ``a`` and ``b`` (indices): their lowest common ancestor."""
        anc = self._tree.node_anc
        return Level(int(_lca_levels(anc, np.asarray(a), np.asarray(b), int(Level.NODE))))

    @cached_property
    def node_level_matrix(self) -> np.ndarray:
        """``Level`` of every pair of servers, as an int matrix."""
        idx = np.arange(self.num_nodes)
        return _lca_levels(self._tree.node_anc, idx[:, None], idx[None, :], int(Level.NODE))

    def gpu_level(self, a: int, b: int) -> Level:
        """Locality level of GPUs ``a`` and ``b`` (indices): their lowest common ancestor."""
        return Level(int(_lca_levels(self._tree.gpu_anc, np.asarray(a), np.asarray(b), 0)))

    def gpu_group(self, level: Level | int) -> np.ndarray:
        """Per GPU, an index of its highest ancestor at or below ``level``.

        Two GPUs share the index exactly when their lowest common ancestor is at or below
        ``level``: the GPUs' locality groups. For ``Level.NODE`` it is :attr:`gpu_node`.
        """
        level = int(level)
        if level == Level.NODE:
            return self.gpu_node
        anc = self._tree.gpu_anc
        keys = {}
        out = np.empty(self.num_gpus, dtype=np.int64)
        for k in range(self.num_gpus):
            lev = next(x for x in range(level, -1, -1) if anc[k, x] >= 0)
            out[k] = keys.setdefault((lev, int(anc[k, lev])), len(keys))
        return out

    @cached_property
    def locality_level(self) -> Level:
        """The graph's ``locality_level`` (default the server): see :attr:`gpu_locality_group`."""
        name = self.graph.graph.get("locality_level", "server")
        return Level(LEVEL_NAMES.index("server" if name == "node" else str(name).lower()))

    @cached_property
    def gpu_locality_group(self) -> np.ndarray:
        """:meth:`gpu_group` at :attr:`locality_level`: which GPU peers count as local."""
        return self.gpu_group(self.locality_level)

    @cached_property
    def node_bandwidth(self) -> np.ndarray:
        """Smallest link ``bandwidth`` on the tree path between two servers (inf: no limit)."""
        t, lev = self._tree, self.node_level_matrix
        up = t.node_up_bw
        idx = np.arange(self.num_nodes)
        out = np.minimum(up[idx[:, None], lev], up[idx[None, :], lev])
        np.fill_diagonal(out, np.inf)
        return out

    def gpu_bandwidth(self, a: int, b: int) -> float:
        """Smallest link ``bandwidth`` on the tree path between GPUs ``a`` and ``b``."""
        if a == b:
            return float("inf")
        lev = int(self.gpu_level(a, b))
        up = self._tree.gpu_up_bw
        return float(min(up[a, lev], up[b, lev]))

    def nodes_per_rack(self) -> dict[int, int]:
        """Number of servers in each rack index."""
        vals, counts = np.unique(self.node_rack[self.node_rack >= 0], return_counts=True)
        return dict(zip(vals.tolist(), counts.tolist(), strict=True))

    def nodes_per_domain(self) -> dict[int, int]:
        """Number of servers in each domain index."""
        vals, counts = np.unique(self.node_domain[self.node_domain >= 0], return_counts=True)
        return dict(zip(vals.tolist(), counts.tolist(), strict=True))


MAX_GENERATED_GPUS = 1_000_000
"""Most GPUs :func:`homogeneous_cluster` builds (more is a typo, and would not fit in memory
as an instance)."""


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
    if nodes * gpus_per_node > MAX_GENERATED_GPUS:
        raise ValueError(f"nodes x gpus_per_node = {nodes * gpus_per_node} GPUs; at most "
                         f"{MAX_GENERATED_GPUS}")
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
