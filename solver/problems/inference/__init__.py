"""QoS-aware DNN inference serving (Fang et al., CIKM'17): batches of queries on typed GPUs.

How an inference instance maps onto the package's types
-------------------------------------------------------
* ``Instance.problem = "inference"``; ``Instance.cluster`` holds the GPUs, each with its
  ``type`` (e.g. ``g2``, ``p2``); ``Instance.jobs`` is empty.
* ``Instance.params`` carries the models, the delay tables and the query stream::

      {"batch_sizes": [1, 2, 4, 8, 16, 32, 64],
       "models": {"full": {"kappa": 1.0,
                           "delay_ms": {"g2": {"1": 106, ..., "64": null}, "p2": {...}}},
                  "tiny": {...}},
       "delay_cv": 0.0,            # optional: delay noise of simulated runs (CV)
       "bin_ms": 200,              # optional: deadline-bin width of the serving queue
       "queries": {"arrival_ms": [...], "soft_ms": [...], "hard_ms": [...],
                   "size": [...]}}  # size optional

  Times are integer milliseconds. Query ``i`` is the i-th entry of the ``queries`` arrays
  (columnar: a workload holds 10^5 - 10^6 queries). A delay table gives, for every listed
  batch size, the delay in ms of one batch of that size, or ``null`` when the model does
  not run at that size on that GPU type (g2 full at 64: out of memory in Table 1).
* A decision is an :class:`InferenceDecision`: a list of :class:`Batch` (GPU, model, start,
  end, query indices). It has no generic placements; the validator's generic part passes
  and :meth:`InferenceProblem.check_decision` checks every rule.

Batch rules: ``n = len(queries) >= 1`` runs at the smallest listed batch size ``b >= n``
that the model supports on the GPU's type (padding); its duration ``end - start`` is that
table entry, whatever ``delay_cv`` (the delay noise of simulated runs, ``dlsched simulate``:
a run's measurements, not a decision; a decision never chooses its own durations);
batches on one GPU do not overlap; every query is served at most once, and not before it
arrives.

Objective (Eq. 1, maximized): Σ over served queries of κ_M · V(t_end), V = 1 up to the
soft deadline, falling linearly to 0 at the hard deadline (a step when they coincide).
Unserved queries score 0.

The package's modules: :mod:`.data` (parameters, delay tables, V), :mod:`.decision`
(batches), :mod:`.problem` (the rules and the objective), :mod:`.policies` (the paper's
batch policies and the state they read, shared by the serving simulator, the methods
and the learned policy's training).
"""

from ..base import register_problem
from .data import (
    PAPER_BATCH_SIZES,
    PAPER_KAPPA,
    PAPER_QPS,
    InferenceData,
    inference_data,
    paper_models,
    parse_inference,
    utility,
    window,
)
from .decision import MAX_MS, Batch, InferenceDecision, batches_from_dict, query_qualities
from .problem import InferenceProblem

register_problem(InferenceProblem())

__all__ = [
    "MAX_MS", "PAPER_BATCH_SIZES", "PAPER_KAPPA", "PAPER_QPS", "Batch", "InferenceData",
    "InferenceDecision", "InferenceProblem", "batches_from_dict", "inference_data",
    "paper_models", "parse_inference", "query_qualities", "utility", "window",
]
