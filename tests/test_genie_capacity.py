"""GENIE ``capacity`` counts running tasks against their model type's share, in a snapshot
and in the simulator ("Each model type can only access its own allocated resources",
GENIE Sec. 7.1): a type whose share its running tasks hold starts nothing.

Hand-worked case: 1 server x 4 GPUs, two model types (``toy``, ``other``) -> 2 GPUs each.
Toy model (tests/genie_factories.py): a batch-4, 100-iteration task runs 400 samples; on
<1,2> (two GPUs of one server) PR = 17.5 samples/s, latency 400 / 17.5 = 22.857 s.
"""

from __future__ import annotations

import pytest

from dlsched import RunningJob, solve
from dlsched.simulate import Policy, simulate
from genie_factories import TOY, toy_instance, toy_job

OTHER = {"other": dict(TOY)}
LAT_2 = 400 / 17.5  # <1,2>: PR = 10 * 2 * (1 - 0.25)


def _snapshot(running_model: str | None):
    """Pending: toy task ``a`` and other task ``b``; running: a task holding n0/g0-g1,
    of model ``running_model`` (None: without ``extra.model``)."""
    inst = toy_instance([toy_job("a"), toy_job("b", model="other")], nodes=1,
                        gpus_per_node=4, extra_models=OTHER)
    extra = {} if running_model is None else {"model": running_model}
    held = RunningJob(job="r", gpus=("n0/g0", "n0/g1"), remaining_s=10.0, extra=extra)
    return inst.replace(running=(held,))


def _started(inst, **options):
    return {p.job: len(p.gpus) for p in solve(inst, "capacity", **options).decision.placements}


@pytest.mark.parametrize("options", [{}, {"request": 1}])
def test_a_type_whose_share_its_running_tasks_hold_starts_nothing(options):
    # toy's 2 GPUs are held by its running task: a waits; other's share is free: b starts
    # on the 2 idle GPUs (default: all idle GPUs of the server, within the share)
    want_b = 1 if options else 2
    assert _started(_snapshot("toy"), **options) == {"b": want_b}
    assert _started(_snapshot("other"), **options) == {"a": want_b}
    # a running task of no known type holds no share: a takes what its share and the
    # idle GPUs allow (both idle GPUs by default, leaving b none; one with request=1)
    assert _started(_snapshot(None), **options) == ({"a": 1, "b": 1} if options else {"a": 2})


def _workload():
    """a0 (toy) at 0 s, a1 (toy) at 1 s, b0 (other) at 2 s, on the 4-GPU server."""
    inst = toy_instance([toy_job("a0"), toy_job("a1", submit=1.0),
                         toy_job("b0", model="other", submit=2.0)],
                        nodes=1, gpus_per_node=4, extra_models=OTHER)
    return inst.replace(jobs=tuple(j.replace(deadline=1e6) for j in inst.jobs))


@pytest.mark.parametrize("check", ["fast", "full"])
def test_in_the_simulator_the_running_tasks_count(check):
    run = simulate(_workload(), Policy("capacity"), check=check, record_events=False)
    rec = {r.job.id: r for r in run.records}
    # a0 takes toy's whole share (2 GPUs) at 0 s; a1 waits for it although 2 GPUs are
    # idle (counting no running task, it started at 1 s); b0 takes other's share at 2 s
    assert (rec["a0"].start, len(rec["a0"].gpu_list)) == (0.0, 2)
    assert rec["a0"].end == pytest.approx(LAT_2)
    assert rec["a1"].start == pytest.approx(LAT_2)
    assert (rec["b0"].start, len(rec["b0"].gpu_list)) == (2.0, 2)


def test_the_simulators_snapshot_shows_each_running_tasks_model():
    shown = []

    def observe(snap):
        shown.extend((r.job, r.extra.get("model")) for r in snap.running)

    simulate(_workload(), Policy("capacity"), observe=observe, record_events=False)
    assert ("a0", "toy") in shown and ("b0", "other") in shown
    assert all(model is not None for _, model in shown)
