"""The paper's batch policies as methods of ``inference``: ``fixed`` and ``heuristic``.

The policies themselves are :mod:`dlsched.problems.inference.policies`; as methods they
replay the instance's query stream in the serving simulator and return its batches
(:class:`dlsched.serve.method.PolicyMethod`, which also says what ``solve`` means for
them). The learned ``pg`` is :mod:`.inference_pg`.
"""

from __future__ import annotations

from dlsched.instance import Instance
from dlsched.problems.inference.policies import (
    PAPER_ALPHA,
    PAPER_BETA,
    THRESHOLD,
    FixedPolicy,
    HeuristicPolicy,
)
from dlsched.registry import MethodSpec, register_method
from dlsched.serve.method import PolicyMethod


def make_fixed(instance: Instance, *, seed: int = 0, max_batch: int = 32,
               threshold: int = THRESHOLD) -> FixedPolicy:
    """``fixed`` (Sec. 4.1): every queued query, at most ``max_batch``."""
    return FixedPolicy(max_batch=max_batch, threshold=threshold)


def make_heuristic(instance: Instance, *, seed: int = 0, alpha: float = PAPER_ALPHA,
                   beta: float = PAPER_BETA, xi: list[float] | None = None,
                   threshold: int = THRESHOLD) -> HeuristicPolicy:
    """Eq. 2 with α, β (the paper's 0.5, 0.5) and optionally fixed ξ per GPU."""
    return HeuristicPolicy(alpha=alpha, beta=beta, xi=xi, threshold=threshold)


register_method(MethodSpec(
    "inference", "fixed", "baseline",
    PolicyMethod(make_fixed, ("max_batch", "threshold"),
                 {"max_batch": ("int", 1, None), "threshold": ("int", 1, None)}),
    summary="batch every queued query, at most 32 (Sec. 4.1), in the serving simulator"))
register_method(MethodSpec(
    "inference", "heuristic", "heuristic",
    PolicyMethod(make_heuristic, ("alpha", "beta", "xi", "threshold"),
                 {"alpha": ("float", 0, 1), "beta": ("float>", 0, None),
                  "threshold": ("int", 1, None)}),
    summary="Eq. 2 batch size, best-Q model (Sec. 3.1), in the serving simulator"))
