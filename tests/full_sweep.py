"""Suite size vs full sweep: ``DLSCHED_FULL=1 pytest tests/...`` runs the sweeps that the
test suite samples (more mutants, seeds or instances) at their full size
(docs/benchmarks.md, "Full sweeps"); the verdict of each check is the same at either size."""

from __future__ import annotations

import os

FULL = os.environ.get("DLSCHED_FULL") == "1"


def sweep(suite: int, full: int) -> int:
    """How many (mutants, seeds, instances): ``suite`` in the test suite, ``full`` with
    ``DLSCHED_FULL=1``."""
    return full if FULL else suite
