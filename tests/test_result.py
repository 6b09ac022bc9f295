"""Result: keyword construction, readable summary, JSON-safe dict, one-call DataFrame."""

import json
import math

import numpy as np
import pytest

from dlsched import Decision, Placement, Result, Status, results_frame
from dlsched.result import FRAME_COLUMNS, ModelSize


def _exact() -> Result:
    return Result(
        status=Status.OPTIMAL,
        decision=Decision.of([Placement("a", ("n0/g0", "n0/g1")), Placement("b", ("n1/g0",))]),
        objective=12.5,
        bound=12.5,
        gap=0.0,
        wall_time=1.25,
        method="exact",
        backend="cbc",
        model_size=ModelSize(variables=40, integer_variables=30, constraints=25, nonzeros=90),
        build_time=0.5,
        log="cbc log",
        extra={"solve_time": 0.75, "scale": 1000, "nested": {"inf": math.inf},
               "array": np.arange(3), "np_scalar": np.float64(2.5)},
    )


def _greedy() -> Result:
    return Result(status=Status.NO_SOLUTION, decision=None, objective=None, bound=None,
                  gap=None, wall_time=0.01, method="greedy", message="nothing fits")


def test_result_is_built_by_keyword_only():
    with pytest.raises(TypeError):
        Result(Status.FEASIBLE, None, None, None, None, 0.1, "greedy")  # type: ignore[misc]


def test_summary_lines():
    text = _exact().summary()
    assert text.splitlines() == [
        "method     exact (cbc)",
        "status     optimal",
        "objective  12.5",
        "bound      12.5",
        "gap        0.0000%",
        "wall time  1.250 s",
        "model      40 variables (30 integer), 25 constraints",
    ]
    assert str(_exact()) == text
    lines = _greedy().summary().splitlines()
    assert lines[0] == "method     greedy"
    assert lines[2:5] == ["objective  -", "bound      -", "gap        -"]
    assert lines[-1] == "note       nothing fits"


def test_to_dict_is_json_safe():
    data = _exact().to_dict()
    text = json.dumps(data, allow_nan=False)  # raises on inf/nan or unknown types
    back = json.loads(text)
    assert back["status"] == "optimal" and back["backend"] == "cbc"
    assert back["objective"] == 12.5 and back["gap"] == 0.0
    assert back["model_size"] == {"variables": 40, "integer_variables": 30,
                                  "constraints": 25, "nonzeros": 90}
    assert back["decision"] == [{"job": "a", "gpus": ["n0/g0", "n0/g1"]},
                                {"job": "b", "gpus": ["n1/g0"]}]
    assert back["extra"] == {"solve_time": 0.75, "scale": 1000, "nested": {"inf": "inf"},
                             "array": [0, 1, 2], "np_scalar": 2.5}
    assert back["log"] == "cbc log"
    slim = _greedy().to_dict(decision=False, log=False)
    assert "decision" not in slim and "log" not in slim
    assert slim["model_size"] is None and slim["message"] == "nothing fits"


def test_results_frame_one_row_per_result():
    frame = results_frame([_exact(), _greedy()])
    assert list(frame.columns) == [*FRAME_COLUMNS, "extra.solve_time", "extra.scale",
                                   "extra.np_scalar"]
    assert frame["method"].tolist() == ["exact", "greedy"]
    assert frame["status"].tolist() == ["optimal", "no_solution"]
    assert frame.loc[0, "objective"] == 12.5 and math.isnan(frame.loc[1, "objective"])
    assert frame.loc[0, "placed"] == 2 and math.isnan(frame.loc[1, "placed"])
    assert frame.loc[0, "variables"] == 40
    assert frame.loc[0, "extra.solve_time"] == 0.75
    assert math.isnan(frame.loc[1, "extra.solve_time"])
    assert Result.frame([_greedy()])["message"].tolist() == ["nothing fits"]
    empty = results_frame([])
    assert list(empty.columns) == list(FRAME_COLUMNS) and len(empty) == 0


def test_solve_returns_a_result_that_round_trips(tmp_path):
    from dlsched import solve
    from factories import horus_instance

    res = solve(horus_instance([("a", 1, 10.0, 1.0)]), "greedy")
    assert json.loads(json.dumps(res.to_dict(), allow_nan=False))["method"] == "greedy"
    assert results_frame([res]).loc[0, "status"] == res.status.value
