"""A stand-in for the simulator's live view with the few things ``LiveRows`` reads."""

from __future__ import annotations

from dlsched.jobs import JobColumns


class RowsView:
    """The workload's jobs, their columns, params and cluster, as a live view gives them."""

    def __init__(self, workload) -> None:
        self.workload_jobs = workload.jobs
        self.workload_columns = JobColumns(workload.jobs)
        self.params = workload.params
        self.cluster = workload.cluster
