"""Tiny hand-checkable inference instances for the tests (times in ms)."""

from __future__ import annotations

from dlsched.instances.inference_gen import inference_instance

# Small tables that make hand computation easy: sizes 1, 2, 4.
P2 = {"full": {"1": 100, "2": 150, "4": 200}, "tiny": {"1": 40, "2": 60, "4": 80}}
G2 = {"full": {"1": 200, "2": 300, "4": None}, "tiny": {"1": 80, "2": 120, "4": 160}}


def models(with_g2: bool = True) -> dict:
    out = {}
    for m, kappa in (("full", 1.0), ("tiny", 0.5)):
        tables = {"p2": P2[m]}
        if with_g2:
            tables["g2"] = G2[m]
        out[m] = {"kappa": kappa, "delay_ms": tables}
    return out


def tiny_instance(queries, gpus=("p2",), *, delay_cv: float = 0.0):
    """``queries`` = [(arrival, soft, hard), ...] sorted by arrival."""
    arrival = [q[0] for q in queries]
    soft = [q[1] for q in queries]
    hard = [q[2] for q in queries]
    inst = inference_instance(arrival=arrival, soft=soft, hard=hard, gpu_types=list(gpus),
                              name="tiny", provenance={}, models=models(), delay_cv=delay_cv,
                              batch_sizes=(1, 2, 4))
    return inst
