"""The first jobs of a committed trace workload, loaded (and checked) once per process:
several test files run a shipped policy on the head of every committed trace."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from dlsched.instance import Instance
from dlsched.instance_io import load_instance

WORKLOADS = Path(__file__).resolve().parents[1] / "instances" / "workloads"


@cache
def trace_head(name: str, jobs: int = 150) -> Instance:
    """The ``jobs`` earliest-submitted jobs of ``instances/workloads/<name>`` (the file
    is read whole: schema, references and sha256 checked)."""
    workload = load_instance(WORKLOADS / name)
    return workload.replace(jobs=tuple(sorted(workload.jobs,
                                              key=lambda j: j.submit_time)[:jobs]))
