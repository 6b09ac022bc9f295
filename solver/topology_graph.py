"""The topology tree as a NetworkX graph: levels, checking a user's graph, node-link form.

A cluster is a tree rooted at one ``cluster`` vertex. Going down, a path meets the levels
cluster → domain → rack → server → socket → switch → GPU in that order, each at most once;
every middle level is optional, but every GPU has a server above it and every leaf is a GPU.
A vertex names its level in the attribute ``level`` or ``kind`` (``node`` is read as
``server``). Servers carry ``cpu`` and ``ram_gb``; GPUs carry ``type``, ``mem_gb`` and
optionally ``speed`` (default 1). A link may carry ``bandwidth`` (> 0, any unit: only
ratios are compared). The graph may carry ``locality_level`` (``switch``, ``socket``,
``server``, ``rack`` or ``domain``, default ``server``): GPUs whose lowest common ancestor
is at or below it count as local peers in the simulator's SCHED² and Gavel locality models.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    import networkx as nx


class Level(IntEnum):
    """Locality level of two GPUs or servers: the level of their lowest common ancestor."""

    GPU = 0
    SWITCH = 1
    SOCKET = 2
    NODE = 3
    RACK = 4
    DOMAIN = 5
    CLUSTER = 6
    SERVER = 3  # alias of NODE: the papers' "node" is a server


#: Level name of each :class:`Level` value, as written in graphs (``kind``).
LEVEL_NAMES = ("gpu", "switch", "socket", "server", "rack", "domain", "cluster")
_BY_NAME = {name: Level(i) for i, name in enumerate(LEVEL_NAMES)} | {"node": Level.NODE}
LOCALITY_LEVELS = ("switch", "socket", "server", "rack", "domain")
_FIX_LEVEL = "levels are cluster, domain, rack, server, socket, switch, gpu (top to bottom)"


def level_of_name(name: Any) -> Level | None:
    """The :class:`Level` named ``name`` (``node`` = ``server``), or None if unknown."""
    if not isinstance(name, str):
        return None
    return _BY_NAME.get(name.strip().lower())


def _bad(message: str, where: str, fix: str) -> InputError:
    return InputError(message, field=where, fix=fix)


def _number(value: Any, vertex: str, key: str, where: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(f"vertex {vertex!r}: {key} = {value!r} is not a number", where,
                   f"give {key} as a number")
    if (value <= 0) if positive else (value < 0):
        raise _bad(f"vertex {vertex!r}: {key} = {value}", where,
                   f"{key} must be {'> 0' if positive else '>= 0'}")
    return float(value)


def check_graph(graph: nx.Graph, where: str = "cluster.graph") -> nx.DiGraph:
    """Check a topology graph and return it as a tree oriented from the root.

    Parameters
    ----------
    graph
        Any NetworkX graph (directed or not; edge directions are ignored, the tree is
        rooted at its only ``cluster`` vertex). Vertex ids become strings.
    where
        The field named in errors.

    Returns
    -------
    networkx.DiGraph
        Vertices in the input's order with ``kind`` set to the canonical level name
        (``level`` removed), edges parent → child with their attributes, graph attributes
        copied.

    Raises
    ------
    InputError
        One line naming the vertex: a cycle, a vertex not connected to the root, a
        missing or unknown level, levels out of order, a GPU without a server, a leaf that
        is not a GPU, a missing or invalid ``cpu``/``ram_gb``/``type``/``mem_gb``/``speed``/
        ``bandwidth``, parallel edges.
    """
    import networkx as nx

    if graph.is_multigraph() and any(
        graph.number_of_edges(u, v) > 1 for u, v in graph.edges()
    ):
        u, v = next((u, v) for u, v in graph.edges() if graph.number_of_edges(u, v) > 1)
        raise _bad(f"vertices {str(u)!r} and {str(v)!r} are linked twice", where,
                   "link two vertices at most once")
    names: dict[Hashable, str] = {v: str(v) for v in graph.nodes}
    if len(set(names.values())) < len(names):
        seen: set[str] = set()
        dup = ""
        for s in names.values():
            if s in seen:
                dup = s
                break
            seen.add(s)
        raise _bad(f"vertex id {dup!r} is used twice", where, "give every vertex a unique id")
    if graph.number_of_nodes() == 0:
        raise _bad("the graph has no vertices", where, "give a cluster vertex and its GPUs")
    levels: dict[str, Level] = {}
    roots = []
    for v, data in graph.nodes(data=True):
        name = names[v]
        raw = [data[k] for k in ("level", "kind") if k in data]
        if not raw:
            raise _bad(f"vertex {name!r} has no level", where,
                       "give every vertex a 'level' (or 'kind') attribute; " + _FIX_LEVEL)
        found = [level_of_name(r) for r in raw]
        if found[0] is None or (len(found) == 2 and found[0] != found[1]):
            raise _bad(f"vertex {name!r}: unknown level {raw[0]!r}"
                       if found[0] is None else f"vertex {name!r}: level and kind disagree",
                       where, _FIX_LEVEL)
        levels[name] = found[0]
        if found[0] is Level.CLUSTER:
            roots.append(name)
    if not roots:
        raise _bad("the graph has no vertex at level 'cluster'", where,
                   "add one root vertex with level 'cluster' above everything")
    if len(roots) > 1:
        raise _bad(f"vertex {roots[1]!r} is a second 'cluster' vertex (after {roots[0]!r})",
                   where, "a topology has one cluster vertex, the root")
    root = roots[0]
    undirected = nx.relabel_nodes(graph, names, copy=True).to_undirected(as_view=False)
    for u, v in undirected.edges():
        if u == v:
            raise _bad(f"vertex {u!r} is linked to itself (a cycle)", where,
                       "a topology is a tree: remove the loop")
    try:
        cycle = nx.find_cycle(undirected)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        raise _bad(f"the graph has a cycle through vertex {cycle[0][0]!r}", where,
                   "a topology is a tree: every vertex has one parent")
    parent: dict[str, str] = {}
    for u, v in nx.bfs_edges(undirected, root):
        parent[v] = u
    for v in levels:
        if v != root and v not in parent:
            raise _bad(f"vertex {v!r} is not connected to the cluster vertex {root!r}", where,
                       "link every vertex to its parent")
    for v, p in parent.items():
        if levels[v] >= levels[p]:
            raise _bad(f"vertex {v!r} ({LEVEL_NAMES[levels[v]]}) sits under {p!r} "
                       f"({LEVEL_NAMES[levels[p]]})", where, _FIX_LEVEL)
    has_child = set(parent.values())
    for v, lev in levels.items():
        if lev is not Level.GPU and v not in has_child:
            raise _bad(f"vertex {v!r} ({LEVEL_NAMES[lev]}) has no GPU under it", where,
                       "every leaf of the tree is a GPU: remove the vertex or add its GPUs")
        if lev is Level.GPU:
            up = parent[v]
            while levels[up] < Level.NODE:
                up = parent[up]
            if levels[up] is not Level.NODE:
                raise _bad(f"GPU {v!r} has no server above it", where,
                           "put every GPU under a server vertex")
    out = nx.DiGraph()
    out.graph.update(graph.graph)
    loc = out.graph.get("locality_level", "server")
    if level_of_name(loc) is None or LEVEL_NAMES[level_of_name(loc)] not in LOCALITY_LEVELS:
        raise _bad(f"locality_level = {loc!r}", where,
                   f"use one of {', '.join(LOCALITY_LEVELS)}")
    for v, data in graph.nodes(data=True):
        name = names[v]
        attrs = {k: val for k, val in data.items() if k not in ("level", "kind")}
        lev = levels[name]
        if lev is Level.NODE:
            for key in ("cpu", "ram_gb"):
                if key not in attrs:
                    raise _bad(f"server {name!r} has no {key!r} attribute", where,
                               "a server needs cpu and ram_gb")
                _number(attrs[key], name, key, where)
        elif lev is Level.GPU:
            for key in ("type", "mem_gb"):
                if key not in attrs:
                    raise _bad(f"GPU {name!r} has no {key!r} attribute", where,
                               "a GPU needs type and mem_gb (speed is optional)")
            if not isinstance(attrs["type"], str) or not attrs["type"]:
                raise _bad(f"GPU {name!r}: type = {attrs['type']!r}", where,
                           "give the GPU type as a non-empty string")
            _number(attrs["mem_gb"], name, "mem_gb", where)
            if "speed" in attrs:
                _number(attrs["speed"], name, "speed", where, positive=True)
        out.add_node(name, kind=LEVEL_NAMES[lev], **attrs)
    for u, v, data in graph.edges(data=True):
        a, b = names[u], names[v]
        if parent.get(a) == b:
            a, b = b, a
        if "bandwidth" in data:
            _number(data["bandwidth"], b, "bandwidth of the link above it", where, positive=True)
        out.add_edge(a, b, **data)
    return out


def graph_from_node_link(data: Mapping[str, Any], where: str = "cluster.graph") -> nx.DiGraph:
    """Read the node-link form (``nodes``, ``links`` or ``edges``, optional ``graph``).

    Raises InputError for a malformed document; the graph itself is not checked here
    (see :func:`check_graph`).
    """
    import networkx as nx

    if not isinstance(data, Mapping):
        raise _bad("the graph is not an object", where, "give the node-link form")
    nodes = data.get("nodes")
    links = data.get("links", data.get("edges", []))
    if not isinstance(nodes, list) or not isinstance(links, list):
        raise _bad("'nodes' and 'links' must be lists", where,
                   "give the node-link form: {nodes: [{id, level, ...}], links: "
                   "[{source, target}]}")
    g = nx.DiGraph() if data.get("directed", True) else nx.Graph()
    g.graph.update(data.get("graph") or {})
    for i, node in enumerate(nodes):
        if not isinstance(node, Mapping) or "id" not in node:
            raise _bad(f"nodes[{i}] has no id", where, "give every vertex an 'id'")
        name = str(node["id"])
        if name in g:
            raise _bad(f"vertex id {name!r} is used twice", where,
                       "give every vertex a unique id")
        g.add_node(name, **{k: v for k, v in node.items() if k != "id"})
    for i, link in enumerate(links):
        if not isinstance(link, Mapping) or "source" not in link or "target" not in link:
            raise _bad(f"links[{i}] has no source or target", where,
                       "give every link a 'source' and a 'target'")
        a, b = str(link["source"]), str(link["target"])
        for end in (a, b):
            if end not in g:
                raise _bad(f"links[{i}] names vertex {end!r}, which is not listed", where,
                           "list every vertex under 'nodes'")
        if g.has_edge(a, b) or (g.is_directed() and g.has_edge(b, a)):
            raise _bad(f"vertices {a!r} and {b!r} are linked twice", where,
                       "link two vertices at most once")
        g.add_edge(a, b, **{k: v for k, v in link.items() if k not in ("source", "target")})
    return g


def node_link(graph: nx.DiGraph) -> dict[str, Any]:
    """The node-link form of a checked tree (vertex and link order kept)."""
    out: dict[str, Any] = {"directed": True}
    if graph.graph:
        out["graph"] = dict(graph.graph)
    out["nodes"] = [{"id": v, **data} for v, data in graph.nodes(data=True)]
    out["links"] = [{"source": u, "target": v, **data} for u, v, data in graph.edges(data=True)]
    return out
