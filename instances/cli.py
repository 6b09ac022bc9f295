"""Subcommand ``import-trace`` of ``dlsched``: ``dlsched import-trace FORMAT FILE -o
WORKLOAD.json.gz`` turns a raw trace into a workload."""

from __future__ import annotations

import argparse

from dlsched.cli_support import EXIT_OK, seed_value
from dlsched.files import check_output
from dlsched.instance_io import save_instance

from .trace_formats import FORMAT_NAMES, GENERIC_KEYS

FORMATS_HELP = (
    "philly: Philly cluster_job_log JSON; dirlab (= helios): DIR-LAB CSV cuts of Philly / "
    "SenseTime Helios; alibaba: openb_pod_list CSV (fractional GPUs); itp (= elasticflow): "
    "ElasticFlow raw clusterNN.csv; gavel: Gavel 10-column trace; tiresias: Tiresias "
    "simulator CSV; generic: any CSV with --columns")


def add_commands(subparsers) -> None:
    """Add the ``import-trace`` subcommand.

    Parameters
    ----------
    subparsers
        The ``add_subparsers()`` object of the ``dlsched`` parser.
    """
    p = subparsers.add_parser(
        "import-trace", help="turn a raw trace file into a simulator workload",
        description="Read a raw trace file and write a workload (instance file) for "
        "`dlsched simulate`. Prints what became of every column of the format, the rows "
        "left out and the cluster size. Formats: " + FORMATS_HELP + ".")
    p.add_argument("format", metavar="FORMAT", choices=FORMAT_NAMES,
                   help="trace format: " + ", ".join(FORMAT_NAMES))
    p.add_argument("file", metavar="FILE", help="the trace file")
    p.add_argument("-o", "--output", required=True,
                   help="workload file to write (.json or .json.gz)")
    p.add_argument("--problem", default="sched2", choices=["sched2", "horus"],
                   help="problem of the workload (default sched2; horus for GPU sharing)")
    p.add_argument("--cluster", default="auto", metavar="auto|SERVERSxGPUS",
                   help="cluster: sized from the offered load (default auto) or given, "
                   "e.g. 16x8")
    p.add_argument("--nodes", default=None, metavar="NODE_LIST",
                   help="build the cluster from an Alibaba openb_node_list CSV (default: none)")
    p.add_argument("--topology", default=None, metavar="GRAPH",
                   help="build the cluster from a topology graph file (node-link JSON or "
                   "GraphML, docs/formats.md; default: none)")
    p.add_argument("--columns", default=None, metavar="KEY=COL,...",
                   help="column mapping of the generic format; keys: "
                   + ", ".join(GENERIC_KEYS) + " (default: none)")
    p.add_argument("--skip-bad-rows", action="store_true",
                   help="skip and count malformed rows instead of stopping at the first "
                   "(default: stop)")
    p.add_argument("--timezone", default=None, metavar="TZ",
                   help="zone of date-times written without one (default: the format's "
                   "convention: America/Los_Angeles for philly, else UTC)")
    p.add_argument("--target-load", type=float, default=0.8,
                   help="offered load the auto-sized cluster aims at (default 0.8)")
    p.add_argument("--seed", type=seed_value, default=0,
                   help="seed of the filled fields: model, GPU utilization and memory "
                   "(default 0)")
    p.add_argument("--name", default=None,
                   help="workload name (default FORMAT-FILESTEM)")
    p.set_defaults(func=_cmd_import_trace)


def _cmd_import_trace(args: argparse.Namespace) -> int:
    from .trace_import import import_trace

    check_output(args.output, "--output")
    work, table, notes = import_trace(
        args.format, args.file, problem=args.problem, cluster=args.cluster, nodes=args.nodes,
        topology=args.topology, columns=args.columns, skip_bad=args.skip_bad_rows,
        tz=args.timezone, seed=args.seed, target_load=args.target_load, name=args.name)
    print(report_lines(work, table, notes))
    sha = save_instance(work, args.output)
    print(f"wrote {args.output}: {work.problem}, {len(work.jobs)} jobs, "
          f"{work.cluster.num_nodes} servers, {work.cluster.num_gpus} GPUs, sha256 {sha}")
    return EXIT_OK


def report_lines(work, table, notes: list[str]) -> str:
    """What the import did, as text: columns, rows left out, skipped rows, notes.

    Parameters
    ----------
    work
        The workload built.
    table
        The reader's :class:`~dlsched.instances.trace_reader.TraceTable`.
    notes
        Further notes of the import.

    Returns
    -------
    str
        Lines to print.
    """
    width = max(len(c) for c in table.columns)
    lines = [f"format {table.format}: {len(table.frame)} jobs read", "columns:"]
    lines += [f"  {c:<{width}}  {what}" for c, what in table.columns.items()]
    lines.append("filled by seed (docs/traces.md): model where the trace has none, "
                 "gpu_util, gpu_mem_gb" + (" (from gpu_milli for GPU shares)"
                                           if "gpu_milli" in table.frame else ""))
    for reason, n in sorted(table.excluded.items()):
        lines.append(f"left out: {n} rows: {reason}")
    if table.skipped:
        total = sum(table.skipped.values())
        where = "entries" if table.unit == "entry" else "lines"
        lines.append(f"skipped {total} malformed rows (first at {where} "
                     f"{', '.join(map(str, table.first_skipped))}):")
        lines += [f"  {n} × {reason}" for reason, n in sorted(table.skipped.items())]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)
