"""The helpers shared by formulations and heuristics (dlsched.method_support)."""

import pytest

from dlsched import Decision, InputError, Placement, Status
from dlsched.method_support import decision_from_indices, free_gpus_by_server, heuristic_method
from dlsched.result import MethodOutput
from factories import horus_instance, running


def _snapshot():
    # 2 servers x 2 GPUs; a running job holds n0/g1 and n1/g0
    return horus_instance([("a", 1, 10.0, 1.0), ("b", 2, 10.0, 1.0)],
                          [running("r", ("n0/g1", "n1/g0"), 20.0, 1.0)], nodes=2)


def test_free_gpus_by_server_lists_idle_indices_per_server():
    assert free_gpus_by_server(_snapshot()) == [[0], [3]]
    assert free_gpus_by_server(horus_instance([("a", 1, 1.0, 1.0)], nodes=2)) == [[0, 1], [2, 3]]


def test_decision_from_indices_keeps_order_and_sorts_gpus():
    decision = decision_from_indices(_snapshot(), [(1, [3, 0]), (0, [2])])
    assert decision == Decision((Placement("b", ("n0/g0", "n1/g1")), Placement("a", ("n1/g0",))))


def test_heuristic_method_wraps_decisions_and_checks_options():
    seen = {}

    def fn(instance, *, seed=None, width=1):
        seen.update(seed=seed, width=width)
        return Decision()

    run = heuristic_method(fn, ("width",))
    out = run(_snapshot(), backend=None, time_limit=None, seed=7, width=3)
    assert out.status is Status.FEASIBLE and out.decision == Decision()
    assert seen == {"seed": 7, "width": 3}
    with pytest.raises(InputError, match="unknown options"):
        run(_snapshot(), seed=0, depth=2)

    no_seed = heuristic_method(
        lambda instance: MethodOutput(decision=None, status=Status.NO_SOLUTION))
    out = no_seed(_snapshot(), seed=5)  # the seed is not passed to a function without it
    assert out.status is Status.NO_SOLUTION and out.decision is None
