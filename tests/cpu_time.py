"""CPU seconds of this process and the children it waited for: what a time-limit test
measures, so that its verdict does not depend on how busy the machine is."""

from __future__ import annotations

import resource
import time


def cpu_seconds() -> float:
    """This process's CPU seconds (all threads) plus those of its reaped children.

    A method that keeps its wall-clock limit uses at most that much CPU, on an idle or a
    loaded machine alike; one that runs a stage past the limit burns CPU past it, and a
    test on CPU seconds still catches it.
    """
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
