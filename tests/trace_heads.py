"""Committed trace workloads, loaded (and checked) once per process, and their first jobs:
several test files replay the same committed files (an Instance is frozen, so they share
it)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from dlsched.canonical import sha256_of
from dlsched.files import read_json
from dlsched.instance import Instance
from dlsched.instance_io import instance_from_dict, load_instance
from dlsched.schema_check import check_against_schema

WORKLOADS = Path(__file__).resolve().parents[1] / "instances" / "workloads"


@cache
def committed_workload(name: str) -> Instance:
    """``instances/workloads/<name>``, read whole: schema, references and sha256 checked."""
    return load_instance(WORKLOADS / name)


@cache
def committed_doc(name: str) -> dict:
    """``instances/workloads/<name>`` as parsed JSON (within the file limits), its stated
    sha256 checked against its content; shared: callers must not change it."""
    doc = read_json(WORKLOADS / name)
    if doc.get("sha256") != sha256_of(doc):
        raise AssertionError(f"{name}: its stated sha256 is not that of its content")
    return doc


@cache
def trace_head(name: str, jobs: int = 150) -> Instance:
    """The ``jobs`` earliest-submitted jobs of ``instances/workloads/<name>`` (ties: file
    order), the rest of the file as it is.

    The whole file's stated sha256 and schema are checked; only the head is built into
    Jobs and checked as an instance (references, the problem's needs): building every job
    of the ten ITP and two Philly files cost 3.4 CPU-s, this 1.8. The files read whole
    by :func:`committed_workload` elsewhere keep the full check.
    """
    doc = committed_doc(name)
    check_against_schema(doc, "instance")
    first = sorted(doc["jobs"], key=lambda j: j.get("submit_time", 0.0))[:jobs]
    body = {k: v for k, v in doc.items() if k not in ("jobs", "sha256")}
    return instance_from_dict({**body, "jobs": first})
