"""Cluster topology: the cluster *is* a NetworkX tree cluster → domain → rack → server →
socket → switch → GPU (middle levels optional; see :mod:`dlsched.topology_graph`).

Builders (:func:`homogeneous_cluster`, :class:`Cluster` from :class:`NodeSpec` lists, the
instance file's ``cluster.nodes`` form: :mod:`dlsched.topology_specs`) make the graph;
:meth:`Cluster.from_graph`, the instance file's ``cluster.graph`` form and
:func:`dlsched.topology_io.load_topology` take a user's graph. Every derived view (GPU →
server, server → rack → domain, the locality level of two GPUs or servers, locality
groups, link bandwidths) is computed once from the graph (each vertex's ancestors, lowest
common ancestors) and cached as numpy arrays for hot paths.

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
from .topology_specs import (
    ROOT,
    GpuSpec,
    NodeSpec,
    check_specs,
    graph_from_specs,
    specs_from_dicts,
    specs_to_dicts,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Cluster", "GpuSpec", "Level", "NodeSpec", "ROOT", "homogeneous_cluster"]


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
        check_specs(specs)
        self._specs: tuple[NodeSpec, ...] | None = specs
        self.graph: nx.DiGraph = nx.freeze(graph_from_specs(specs))
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
        return cls(specs_from_dicts(data["nodes"]))

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
        return {"nodes": specs_to_dicts(self._specs)}

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
