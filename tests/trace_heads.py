"""Committed trace workloads, loaded (and checked) once per process, and their first jobs:
several test files replay the same committed files (an Instance is frozen, so they share
it)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from dlsched.instance import Instance
from dlsched.instance_io import load_instance

WORKLOADS = Path(__file__).resolve().parents[1] / "instances" / "workloads"


@cache
def committed_workload(name: str) -> Instance:
    """``instances/workloads/<name>``, read whole: schema, references and sha256 checked."""
    return load_instance(WORKLOADS / name)


@cache
def trace_head(name: str, jobs: int = 150) -> Instance:
    """The ``jobs`` earliest-submitted jobs of ``instances/workloads/<name>`` (the file
    is read whole: schema, references and sha256 checked)."""
    workload = committed_workload(name)
    return workload.replace(jobs=tuple(sorted(workload.jobs,
                                              key=lambda j: j.submit_time)[:jobs]))
