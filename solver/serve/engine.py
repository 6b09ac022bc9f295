"""The serving loop: queries arrive, wait in deadline bins, and run in batches on GPUs.

Model (Sec. 2-3 of Fang et al., CIKM'17), at integer-millisecond resolution:

* Query ``i`` arrives at ``arrival[i]`` and enters bin ``soft[i] // bin_ms`` (Δt = 200 ms by
  default). The queue hands out queries by (bin, arrival order): lowest bin first, FIFO
  inside a bin (Fig. 3).
* A decision is taken only when a GPU is free (Fig. 4): at its free time, or at the next
  arrival when the queue is empty. Several free GPUs are served in GPU order.
* Before a decision, queries at the head of the queue whose hard deadline has passed
  (``hard <= now``: any batch would give them Q = 0) are dropped.
* The policy chooses a batch size B (0 = wait until the next arrival or GPU completion)
  and, after the engine has taken the first ``n = min(B, queued)`` queries, a model. The
  batch runs for the delay-table entry of the smallest supported size >= n; with
  ``noise_cv > 0`` the delay is multiplied by ``max(0.05, 1 + cv · N(0, 1))`` (seeded),
  the paper's normal fit around Table 1.
* Queries still queued at the end of the stream are served on: the run ends when the
  queue is empty and no query is left to arrive.

Everything is deterministic for a seed. The loop touches each query a constant number of
times (one heap push, one pop); per-query results are filled from the batches at the end.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from ..instance import Instance
from ..problems.inference import Batch, InferenceData, InferenceDecision, inference_data
from ..problems.inference.policies import BatchPolicy, ServeState


@dataclass
class ServeRun:
    """A finished run: the batches, per-query outcome arrays and run statistics."""

    instance: Instance
    data: InferenceData
    policy: str
    seed: int
    noise_cv: float
    batches: list[Batch]
    q_batch: np.ndarray  # [N] index of the serving batch, -1 if not served
    dropped: np.ndarray  # [N] bool: dropped past its hard deadline
    events: list[tuple] | None
    cpu_seconds: float
    decisions: int

    def decision(self) -> InferenceDecision:
        """The run's schedule as a decision for the validator."""
        return InferenceDecision(batches=tuple(self.batches))


def serve(instance: Instance, policy: BatchPolicy, *, seed: int = 0, noise_cv: float | None = None,
          record_events: bool = False) -> ServeRun:
    """Simulate ``policy`` on the instance's query stream.

    Parameters
    ----------
    instance
        An ``inference`` instance.
    policy
        A :class:`~dlsched.problems.inference.policies.BatchPolicy`; the registered serving
        policies (``dlsched methods``) make them (:func:`dlsched.serve.run.run_policy`).
    seed
        Seed of the delay noise (the only random draw).
    noise_cv
        Coefficient of variation of batch delays; ``None`` takes ``params.delay_cv`` (0 in
        the shipped instances: delays exactly as in the table).
    record_events
        Keep the event sequence (``arrive``/``drop``/``dispatch``/``wait``) for tests.
    """
    data = inference_data(instance)
    cv = data.delay_cv if noise_cv is None else float(noise_cv)
    if cv < 0:
        raise ValueError("noise_cv must be >= 0")
    cpu0 = time.process_time()
    n_q = data.num_queries
    arrival = data.arrival.tolist()
    hard = data.hard.tolist()
    bins = (data.soft // data.bin_ms).tolist()
    num_gpus = len(data.gpu_ids)
    gpu_type = data.gpu_type.tolist()
    delay = data.delay.tolist()  # [M][T][S]
    sizes = data.batch_sizes
    st = ServeState(data=data, gpu_free=[0] * num_gpus, arrivals=arrival)
    policy.reset(st)
    rng = np.random.default_rng(seed)
    noise: list[float] = []
    heap = st.heap
    bin_count = st.bin_count
    push, pop = heapq.heappush, heapq.heappop
    events: list[tuple] | None = [] if record_events else None
    batches: list[Batch] = []
    dropped: list[int] = []
    gpu_free = st.gpu_free
    decisions = 0
    wake = [0] * num_gpus  # earliest time each GPU may act (free time or wait wake-up)
    if n_q:
        first = arrival[0]
        for g in range(num_gpus):
            wake[g] = first
    ptr = 0
    clock = 0
    while True:
        if ptr >= n_q and not heap:
            break
        g = min(range(num_gpus), key=wake.__getitem__)
        t = wake[g] if wake[g] > clock else clock  # time never runs backwards
        if not heap and ptr < n_q and arrival[ptr] > t:
            t = arrival[ptr]
        st.now = clock = t
        while ptr < n_q and arrival[ptr] <= t:  # admit arrivals
            b = bins[ptr]
            push(heap, b * n_q + ptr)
            bin_count[b] = bin_count.get(b, 0) + 1
            if events is not None:
                events.append(("arrive", arrival[ptr], ptr))
            ptr += 1
        st.next_arrival = ptr
        while heap and hard[heap[0] % n_q] <= t:  # drop expired heads
            key = pop(heap)
            q = key % n_q
            b = bins[q]
            bin_count[b] -= 1
            dropped.append(q)
            if events is not None:
                events.append(("drop", t, q))
        if not heap:
            wake[g] = arrival[ptr] if ptr < n_q else t
            if ptr >= n_q:
                break
            continue
        decisions += 1
        size = policy.size(st, g)
        if size <= 0:
            later = [w for h, w in enumerate(gpu_free) if h != g and w > t]
            if ptr < n_q:
                later.append(arrival[ptr])
            wake[g] = min(later) if later else t + 10
            if events is not None:
                events.append(("wait", t, g))
            continue
        n = min(size, len(heap))
        chosen = []
        for _ in range(n):
            key = pop(heap)
            q = key % n_q
            bin_count[bins[q]] -= 1
            chosen.append(q)
        m = policy.model(st, g, chosen, size)
        row = delay[m][gpu_type[g]]
        d = -1
        for s, bsize in enumerate(sizes):
            if bsize >= n and row[s] >= 0:
                d = row[s]
                break
        if d < 0:
            raise ValueError(f"policy {policy.label} chose {n} queries for model "
                             f"{data.models[m]} on GPU {data.gpu_ids[g]}: no such batch size")
        if cv > 0:
            if not noise:
                noise = rng.standard_normal(4096).tolist()
                noise.reverse()
            d = max(1, int(round(d * max(0.05, 1.0 + cv * noise.pop()))))
        end = t + d
        batches.append(Batch(data.gpu_ids[g], data.models[m], t, end, tuple(chosen)))
        gpu_free[g] = end
        wake[g] = end
        if events is not None:
            events.append(("dispatch", t, data.gpu_ids[g], data.models[m], tuple(chosen), end))
    q_batch = np.full(n_q, -1, dtype=np.int64)
    for k, b in enumerate(batches):
        q_batch[list(b.queries)] = k
    drop = np.zeros(n_q, dtype=bool)
    drop[dropped] = True
    return ServeRun(instance=instance, data=data, policy=policy.label, seed=seed, noise_cv=cv,
                    batches=batches, q_batch=q_batch, dropped=drop, events=events,
                    cpu_seconds=time.process_time() - cpu0, decisions=decisions)
