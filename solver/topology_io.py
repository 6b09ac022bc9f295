"""Topology files: a user's cluster graph as node-link JSON or GraphML.

The graph's rules (levels, attributes, ``bandwidth``, ``locality_level``) are those of
:mod:`dlsched.topology_graph`; ``docs/formats.md`` shows an example.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree.ElementTree import ParseError

from .errors import InputError
from .files import atomic_path, read_json, write_json
from .topology import Cluster
from .topology_graph import graph_from_node_link, node_link


def load_topology(path: str | Path) -> Cluster:
    """Read a topology graph file and build the :class:`Cluster`.

    Parameters
    ----------
    path
        ``*.json`` (node-link: ``nodes``, ``links`` or ``edges``, optional ``graph``) or
        ``*.graphml`` (``*.json.gz`` is read compressed). A JSON file may also hold
        ``{"graph": {...}}`` as an instance's ``cluster`` does.

    Returns
    -------
    Cluster
        The cluster; its :meth:`Cluster.to_dict` writes the graph.

    Raises
    ------
    InputError
        One line naming the file and the offending vertex (a cycle, a GPU without a
        server, a missing attribute, an unknown level, ...).
    """
    import networkx as nx

    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".graphml":
            try:
                graph = nx.read_graphml(path)
            except FileNotFoundError:
                raise InputError("no such file", fix="check the path") from None
            except (ParseError, nx.NetworkXError) as exc:
                raise InputError(f"not a GraphML file: {exc}",
                                 fix="write the graph with networkx.write_graphml") from None
            for key in ("node_default", "edge_default"):  # GraphML reader's bookkeeping
                graph.graph.pop(key, None)
            return Cluster.from_graph(graph, "graph")
        if not path.name.lower().endswith((".json", ".json.gz")):
            raise InputError(f"unknown topology file type {suffix!r}",
                             fix="use a .json (node-link) or .graphml file")
        doc = read_json(path)
        if isinstance(doc, dict) and "graph" in doc and "nodes" not in doc:
            doc = doc["graph"]
        return Cluster.from_graph(graph_from_node_link(doc, "graph"), "graph")
    except InputError as err:
        raise err.with_source(str(path)) from None


def save_topology(cluster: Cluster, path: str | Path) -> None:
    """Write ``cluster.graph`` as node-link JSON (``*.json``) or GraphML (``*.graphml``)."""
    import networkx as nx

    path = Path(path)
    if path.suffix.lower() == ".graphml":
        graph = cluster.graph.copy()
        for v in graph.nodes:  # GraphML has no null: leave unset attributes out
            for key in [k for k, val in graph.nodes[v].items() if val is None]:
                del graph.nodes[v][key]
        with atomic_path(path) as tmp:
            nx.write_graphml(graph, tmp)
        return
    write_json(node_link(cluster.graph), path)
