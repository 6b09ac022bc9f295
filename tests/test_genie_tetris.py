"""GENIE's fast Tetris and idle-GPU helpers give what their plain forms give.

* Tetris over groups of equal rankings against the plain scan over every task's option
  table, on snapshots with many waiting tasks of few classes (groups of several tasks);
* the stateful fast form when its groups are thrown away at every call (it rebuilds them
  from the live queue): the same schedule as when it keeps them;
* ``IdleGpus.take`` with and without its buckets by idle count (more than ``FEW_SERVERS``
  servers), and ``MostIdle`` against ``IdleGpus``.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest

import dlsched.heuristics.genie  # noqa: F401  (registers the methods)
from dlsched.heuristics.genie_idle import FEW_SERVERS, IdleGpus, MostIdle, best
from dlsched.heuristics.genie_tetris import tetris
from dlsched.instances.genie_gen import generate_genie, generate_genie_workload
from dlsched.method_support import decision_from_indices
from dlsched.problems.genie import genie_table
from dlsched.problems.genie.model import Shape
from dlsched.simulate import Policy, job_table, simulate
from dlsched.state import view_policy


def _plain_tetris(instance, by):
    table = genie_table(instance)
    idle = IdleGpus(instance)
    key = (lambda o: o.rate) if by == "pr" else (lambda o: o.cer)
    remaining = sorted(range(len(instance.jobs)), key=lambda j: (instance.jobs[j].submit_time, j))
    placed = []
    while remaining and idle.total() > 0:
        pick = None
        for j in remaining:  # the first task with strictly more GPUs wins
            opt = best([o for o in table.options[j] if idle.fits(o.shape)], key)
            if opt is not None and (pick is None or opt.shape.gpus > pick[1].gpus):
                pick = (j, opt.shape)
        if pick is None:
            break
        remaining.remove(pick[0])
        placed.append((pick[0], idle.take(pick[1])))
    placed.sort()
    return decision_from_indices(instance, placed)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("by", ["pr", "cer"])
def test_grouped_tetris_matches_the_plain_scan_with_many_tasks_per_class(seed, by):
    inst = generate_genie(seed=seed, snapshot=True, nodes=8, gpus_per_node=4, waiting=80)
    classes = {(j.model, j.kind, j.batch_size) for j in inst.jobs}
    assert len(classes) < len(inst.jobs)  # some group holds several tasks
    got = tetris(inst, by=by)
    assert got == _plain_tetris(inst, by)
    assert got.placements


def test_tetris_fast_form_rebuilding_its_groups_at_every_call_changes_nothing():
    w = generate_genie_workload(seed=3, nodes=2, gpus_per_node=4, density=30.0, duration=3.0)
    keep = job_table(simulate(w, Policy("tetris-perf"), check="fast", record_events=False))
    vp = view_policy("genie", "tetris-perf")
    decide = vp.decide
    calls = []

    def forgetful(view, *, policy_state=None):
        if policy_state is not None:
            policy_state.count = -1  # disagrees with the live queue: rebuilt from it
        calls.append(1)
        return decide(view, policy_state=policy_state)

    object.__setattr__(vp, "decide", forgetful)
    try:
        rebuilt = job_table(simulate(w, Policy("tetris-perf"), check="fast",
                                     record_events=False))
    finally:
        object.__setattr__(vp, "decide", decide)
    assert len(calls) > 10
    pd.testing.assert_frame_equal(keep, rebuilt, check_exact=True)
    assert (keep["start"] > keep["submit"]).any()  # a queue formed


def _random_free(rng: random.Random, servers: int, per: int) -> list[list[int]]:
    free = []
    for n in range(servers):
        gpus = list(range(n * per, (n + 1) * per))
        free.append(sorted(rng.sample(gpus, rng.randint(0, per))))
    return free


@pytest.mark.parametrize("servers", [5, FEW_SERVERS + 8])
def test_idle_take_is_best_fit_by_idle_count_then_server(servers):
    rng = random.Random(servers)
    for _ in range(30):
        free = _random_free(rng, servers, 4)
        idle, ref = IdleGpus.of_free([list(f) for f in free]), [list(f) for f in free]
        for _step in range(6):
            shape = Shape(rng.randint(1, 3), rng.randint(1, 4))
            if not idle.fits(shape):
                continue
            g = shape.gpus_per_node
            chosen = sorted((len(f), n) for n, f in enumerate(ref) if len(f) >= g)
            want = []
            for _c, n in chosen[: shape.nodes]:
                want += ref[n][:g]
                del ref[n][:g]
            assert idle.take(shape) == want
            assert idle.free == ref


def test_most_idle_answers_as_idle_gpus():
    rng = random.Random(7)
    inst = generate_genie(seed=1, snapshot=True, nodes=6, gpus_per_node=4)
    assert 0 < IdleGpus(inst).total() < inst.cluster.num_gpus  # some GPUs idle, some busy
    for _ in range(20):
        a, b = IdleGpus(inst), MostIdle(inst)
        while a.most() > 0:
            assert a.most() == b.most()
            k = rng.randint(1, a.most())
            assert sorted(a.take_on_most_idle(k)) == sorted(b.take_on_most_idle(k))
        assert b.most() == 0
