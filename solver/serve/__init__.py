"""Event-driven serving simulator for the ``inference`` problem (Fang et al., CIKM'17).

:func:`serve` replays a query stream on the instance's GPUs under a batch policy (the
paper's policies are registered methods: :func:`dlsched.serve.run.run_policy` runs one by
name); :mod:`dlsched.serve.metrics` turns the run into a per-query table, a summary and
plots. The simulator imports no method: it is given a policy object.
"""

from .engine import ServeRun, serve

__all__ = ["ServeRun", "serve"]
